//! A file's bytes, memory-mapped read-only (never copied), and the maps `deps` keeps until the
//! process exits.
//!
//! Why keep them: `deps` reads every object of the closure twice, once to analyse it (on all
//! cores, [`crate::deps::analyze_file`]) and once for the lookup model
//! ([`crate::attribute::lookups`]). Unmapping a file while another thread of the process runs
//! costs a TLB shootdown (an inter-processor interrupt to every CPU the process runs on), and
//! mapping it again costs its page faults again: measured on libLLVM-15's closure, 17 of 49
//! munmaps were the analysis's maps dropped while another thread ran, and `perf record` put
//! ~9% of the samples in unmapping and re-faulting. A kept map is found again by
//! [`MappedFile::open`] when the file's identity (device, inode, size, modification time) is
//! unchanged, so a file rewritten since is mapped afresh.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::ElfError;

/// A file's bytes, memory-mapped read-only (never copied).
pub struct MappedFile {
    path: PathBuf,
    map: Option<Arc<memmap2::Mmap>>,
}

/// What tells two versions of a file apart: device, inode, size, modification time (ns).
type Identity = (u64, u64, u64, i64, i64);

/// The maps [`MappedFile::open_kept`] made, by path, alive until the process exits.
static KEPT: Mutex<Vec<(PathBuf, Identity, Arc<memmap2::Mmap>)>> = Mutex::new(Vec::new());

fn identity(meta: &std::fs::Metadata) -> Identity {
    (
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
    )
}

impl MappedFile {
    /// Opens and maps `path`, classifying the usual ways a path is not a readable file. A map
    /// kept by [`MappedFile::open_kept`] of the same, unchanged file is shared instead.
    pub fn open(path: &Path) -> Result<MappedFile, ElfError> {
        Self::open_as(path, false)
    }

    /// [`MappedFile::open`], and the map is kept until the process exits (for files that
    /// will be read again: the objects `deps` analyses).
    pub fn open_kept(path: &Path) -> Result<MappedFile, ElfError> {
        Self::open_as(path, true)
    }

    fn open_as(path: &Path, keep: bool) -> Result<MappedFile, ElfError> {
        let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ElfError::NotFound {
                path: path.to_path_buf(),
            },
            _ => ElfError::Io {
                path: path.to_path_buf(),
                source: e,
            },
        })?;
        if meta.is_dir() {
            return Err(ElfError::IsDirectory {
                path: path.to_path_buf(),
            });
        }
        if !meta.is_file() {
            return Err(ElfError::NotRegular {
                path: path.to_path_buf(),
            });
        }
        let id = identity(&meta);
        if let Some(map) = kept(path, id) {
            return Ok(MappedFile {
                path: path.to_path_buf(),
                map: Some(map),
            });
        }
        let file = std::fs::File::open(path).map_err(|e| ElfError::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        if meta.len() == 0 {
            return Ok(MappedFile {
                path: path.to_path_buf(),
                map: None,
            });
        }
        // SAFETY: the map is read-only and private to us. If another process truncates the
        // file while we read it we may get SIGBUS; that is the same contract readelf and ld.so
        // live with, and libraries on a running system are replaced by rename, not truncated.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| ElfError::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        let map = Arc::new(map);
        if keep {
            // The identity read before mapping: a file changed in between is not found again
            // (its next open compares a newer identity), so nothing stale is shared.
            if let Ok(mut k) = KEPT.lock() {
                k.push((path.to_path_buf(), id, Arc::clone(&map)));
            }
        }
        Ok(MappedFile {
            path: path.to_path_buf(),
            map: Some(map),
        })
    }

    pub fn bytes(&self) -> &[u8] {
        self.map.as_deref().map_or(&[], |m| &m[..])
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The kept map of `path` if the file is still the one that was mapped.
fn kept(path: &Path, id: Identity) -> Option<Arc<memmap2::Mmap>> {
    let k = KEPT.lock().ok()?;
    k.iter()
        .rev()
        .find(|(p, i, _)| p == path && *i == id)
        .map(|(_, _, m)| Arc::clone(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kept map is shared while the file is unchanged, and a rewritten file is read afresh.
    #[test]
    fn kept_maps_are_shared_until_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"first").unwrap();
        let a = MappedFile::open_kept(&p).unwrap();
        let b = MappedFile::open(&p).unwrap();
        assert_eq!(a.bytes().as_ptr(), b.bytes().as_ptr(), "shared map");
        // A new file at the same path (a new inode, as a rename or a rebuild makes).
        let q = dir.path().join("g");
        std::fs::write(&q, b"second!").unwrap();
        std::fs::rename(&q, &p).unwrap();
        let c = MappedFile::open(&p).unwrap();
        assert_eq!(c.bytes(), b"second!");
        assert_eq!(a.bytes(), b"first", "the kept map still reads its own file");
    }
}
