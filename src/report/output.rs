//! The one writer of every file ldcost writes: reports, graphs, saved documents, the
//! experiment's files. In: the bytes and a path (`-`: standard output). Out: the file,
//! complete, or the old file as it was and a [`ReportError::Write`] naming the path.
//!
//! - A regular file (or a new one) is written to a temporary file in the same directory (a
//!   fresh, unpredictable name, mode 0600 while incomplete), flushed, fsync'ed and renamed
//!   over the target only when complete: a full disk, a write error or an interrupt leaves the
//!   old file byte for byte and no partial file (the temporary file is on the list
//!   of [`crate::cleanup`], removed on SIGINT/SIGTERM).
//! - A symbolic link is followed to its final target; the temporary file is written beside
//!   that target and renamed there, so the link stays a link. A link the kernel's
//!   `protected_symlinks` would not let ldcost follow (in a sticky, world-writable directory
//!   such as /tmp, owned neither by ldcost's user nor by the directory's owner) is refused,
//!   whatever the sysctl says: a link planted in /tmp must not lead a root run into replacing
//!   the file it names.
//! - Anything that is not a regular file (a device such as /dev/null or /dev/full, a pipe, a
//!   terminal) and what /dev/stdout, /dev/stderr, /dev/fd/N and /proc name (standard output
//!   may be a regular file the shell opened) is written in place, appended, every byte
//!   checked. A closed pipe is not an error: its reader had what it wanted.
//! - A new file gets 0644 less the umask; a file replaced keeps its permission bits within
//!   0644 (a 0666 or 0755 file becomes 0644, a 0600 file stays 0600; set-id, sticky, group-
//!   and other-write and execute bits dropped) and, when root replaces it, its owner. No
//!   output is ever more open than 0644.
//!
//! [`check_outputs`] refuses, before anything runs, an output that names an input (the target
//! program, a document read) or a file another output names.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::ReportError;

/// How many symbolic links a path may go through (the kernel's limit, `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// Writes `bytes` to `path` as the module docs say; `-` is standard output.
pub fn write_bytes(bytes: &[u8], path: &Path) -> Result<(), ReportError> {
    let res = if path == Path::new("-") {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes).and_then(|_| out.flush())
    } else if in_place(path) {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .and_then(|mut f| f.write_all(bytes).and_then(|_| f.flush()))
    } else {
        replace(bytes, path)
    };
    match res {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(source) => Err(ReportError::Write {
            path: path.to_path_buf(),
            source,
        }),
        Ok(()) => Ok(()),
    }
}

/// Whether `path` is written in place rather than replaced (see the module docs).
fn in_place(path: &Path) -> bool {
    let names_a_descriptor = path.starts_with("/proc")
        || path.starts_with("/dev/fd")
        || path == Path::new("/dev/stdout")
        || path == Path::new("/dev/stderr");
    names_a_descriptor || std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// The temporary file, fsync'ed, renamed over `path`'s final target.
fn replace(bytes: &[u8], path: &Path) -> std::io::Result<()> {
    let target = final_target(path)?;
    let old = std::fs::metadata(&target).ok();
    if old.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(std::io::Error::from_raw_os_error(nix::libc::EISDIR));
    }
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    let tmp_path = tmp.path().to_path_buf();
    crate::cleanup::writing(&tmp_path);
    let res = fill(&mut tmp, bytes, old.as_ref())
        .and_then(|()| tmp.persist(&target).map(drop).map_err(|e| e.error));
    crate::cleanup::written(&tmp_path);
    if res.is_ok() {
        // The rename itself reaches the disk with the directory; a file system that cannot
        // sync a directory has the file complete anyway.
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    res
}

/// Writes the temporary file to its end, gives it its final mode and syncs it.
fn fill(
    tmp: &mut tempfile::NamedTempFile,
    bytes: &[u8],
    old: Option<&std::fs::Metadata>,
) -> std::io::Result<()> {
    // Through the file itself: tempfile's own `Write` wraps each error with the temporary
    // name, which would hide the errno (and the hint it selects) and name a file the user
    // never asked for.
    let f = tmp.as_file_mut();
    f.write_all(bytes)?;
    f.flush()?;
    let f = tmp.as_file();
    let mode = match old {
        Some(m) => m.mode() & 0o644,
        None => 0o644 & !umask(),
    };
    f.set_permissions(std::fs::Permissions::from_mode(mode))?;
    if let Some(m) = old {
        if nix::unistd::geteuid().is_root() && (m.uid(), m.gid()) != (0, 0) {
            // Best effort: the file stays its owner's; failing that, it is root's as
            // a newly created one would be.
            let _ = std::os::unix::fs::fchown(f, Some(m.uid()), Some(m.gid()));
        }
    }
    // ENOSPC and EIO of delayed allocation show here, before the rename, not never.
    f.sync_all()
}

/// ldcost's umask, read without changing it (`umask(2)` cannot read it without setting it,
/// which would race with the other threads creating files).
fn umask() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022)
}

/// `path` with its symbolic links followed to the last one's target (which may not exist),
/// refusing a link `protected_symlinks` would refuse (module docs).
fn final_target(path: &Path) -> std::io::Result<PathBuf> {
    let me = nix::unistd::geteuid().as_raw();
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let m = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(p),
            Err(e) => return Err(e),
        };
        if !m.file_type().is_symlink() {
            return Ok(p);
        }
        let parent = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let d = std::fs::metadata(&parent)?;
        let shared = d.mode() & 0o1002 == 0o1002;
        if shared && m.uid() != me && m.uid() != d.uid() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                RefusedLink(m.uid()),
            ));
        }
        p = parent.join(std::fs::read_link(&p)?);
    }
    Err(std::io::Error::from_raw_os_error(nix::libc::ELOOP))
}

/// The refusal of a link `protected_symlinks` would refuse: its owner's uid.
#[derive(Debug)]
pub(crate) struct RefusedLink(pub(crate) u32);

impl std::fmt::Display for RefusedLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "not following a symbolic link owned by uid {} in a sticky, world-writable directory",
            self.0
        )
    }
}

impl std::error::Error for RefusedLink {}

/// Whether a write failed because its path goes through a link ldcost refuses to follow
/// (module docs), which wants its own hint.
pub fn is_refused_link(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|i| i.is::<RefusedLink>())
}

/// What identifies the file a path names, for [`check_outputs`].
#[derive(PartialEq)]
enum Key {
    Stdout,
    Inode(u64, u64),
    Path(PathBuf),
}

/// `None` for what several options may well name at once (/dev/null, a terminal).
fn key(p: &Path) -> Option<Key> {
    if p == Path::new("-") {
        return Some(Key::Stdout);
    }
    match std::fs::metadata(p) {
        Ok(m) if m.is_file() || m.is_dir() => Some(Key::Inode(m.dev(), m.ino())),
        Ok(_) => None,
        Err(_) => {
            let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
            let dir = abs
                .parent()
                .and_then(|d| std::fs::canonicalize(d).ok())
                .unwrap_or_default();
            Some(Key::Path(dir.join(abs.file_name().unwrap_or_default())))
        }
    }
}

/// Whether the write at the end of a run can happen, tried now: an output written in place
/// must exist (a path under /proc is never created); a replaced one needs a temporary file
/// in its final target's directory, made and removed here as [`write_bytes`] will make it.
fn probe(path: &Path) -> std::io::Result<()> {
    if in_place(path) {
        return std::fs::metadata(path).map(drop);
    }
    let target = final_target(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    tempfile::Builder::new()
        .prefix(".ldcost-probe-")
        .tempfile_in(dir)
        .map(drop)
        // tempfile names its own file ("… at path /dir/.ldcost-probe-XXXX"); the user named
        // the output, which the error names: the system's words are kept, the probe's path cut.
        .map_err(|e| {
            let text = e.to_string();
            let why = text
                .rsplit_once(" at path ")
                .map_or(text.as_str(), |(why, _)| why)
                .to_string();
            std::io::Error::new(
                e.kind(),
                format!("no file can be created in {}: {why}", dir.display()),
            )
        })
}

/// Refuses (exit 2) an output that names one of `inputs` or the file another output names:
/// `outputs` are (option, path), `inputs` (what it is, path).
pub fn check_outputs(
    inputs: &[(&str, &Path)],
    outputs: &[(&str, &Path)],
) -> Result<(), ReportError> {
    for (i, (opt, path)) in outputs.iter().enumerate() {
        // A directory that is not there fails the write at the end of the run: say so before
        // the run, in the user's words, rather than after it through the temporary file's name.
        if path.as_os_str() != "-" {
            let dir = path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let problem = match std::fs::metadata(dir) {
                Ok(m) if m.is_dir() => None,
                Ok(_) => Some(std::io::Error::new(
                    std::io::ErrorKind::NotADirectory,
                    format!("{} is not a directory", dir.display()),
                )),
                Err(e) => Some(std::io::Error::new(
                    e.kind(),
                    format!("its directory {}: {e}", dir.display()),
                )),
            };
            // A directory is never replaced by a report: refused now, not after the run.
            let problem = problem.or_else(|| {
                std::fs::metadata(path)
                    .is_ok_and(|m| m.is_dir())
                    .then(|| std::io::Error::from_raw_os_error(nix::libc::EISDIR))
            });
            if let Some(source) = problem.or_else(|| probe(path).err()) {
                return Err(ReportError::Write {
                    path: path.to_path_buf(),
                    source,
                });
            }
        }
        let Some(k) = key(path) else { continue };
        if let Some((what, _)) = inputs.iter().find(|(_, p)| key(p).as_ref() == Some(&k)) {
            return Err(ReportError::Clash {
                what: format!("{opt} {} names {what} itself", path.display()),
            });
        }
        if let Some((other, _)) = outputs[..i]
            .iter()
            .find(|(_, p)| key(p).as_ref() == Some(&k))
        {
            return Err(ReportError::Clash {
                what: format!("{other} and {opt} both name {}", path.display()),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().mode() & 0o7777
    }

    #[test]
    fn a_new_file_is_complete_and_at_most_0644() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        write_bytes(b"{}\n", &p).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"{}\n");
        assert_eq!(mode(&p), 0o644 & !umask());
        // Nothing else in the directory: the temporary file was renamed.
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_replaced_file_keeps_its_mode() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        std::fs::write(&p, b"old").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_bytes(b"new", &p).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"new");
        assert_eq!(mode(&p), 0o640);
    }

    #[test]
    fn a_replaced_file_is_never_more_open_than_0644() {
        let d = tempfile::tempdir().unwrap();
        for (before, after) in [
            (0o666, 0o644),
            (0o777, 0o644),
            (0o620, 0o600),
            (0o4755, 0o644),
        ] {
            let p = d.path().join("r.json");
            std::fs::write(&p, b"old").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(before)).unwrap();
            write_bytes(b"new", &p).unwrap();
            assert_eq!(std::fs::read(&p).unwrap(), b"new");
            assert_eq!(mode(&p), after, "{before:o}");
        }
    }

    #[test]
    fn a_link_stays_a_link_and_its_target_is_replaced() {
        let d = tempfile::tempdir().unwrap();
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let real = sub.join("real.json");
        std::fs::write(&real, b"old").unwrap();
        let link = d.path().join("latest.json");
        std::os::unix::fs::symlink("sub/real.json", &link).unwrap();
        write_bytes(b"new", &link).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(&sub).unwrap().count(), 1);
    }

    #[test]
    fn an_output_that_cannot_be_written_is_refused_before_the_run() {
        // /proc creates no file, not even for root: refused now, not after the run.
        let p = Path::new("/proc/ldcost-no-such-output.json");
        match check_outputs(&[], &[("--json", p)]) {
            Err(ReportError::Write { path, source }) => {
                assert_eq!(path, p);
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("{other:?}"),
        }
        // A writable directory passes, and the probe leaves nothing in it.
        let d = tempfile::tempdir().unwrap();
        let ok = d.path().join("r.json");
        check_outputs(&[], &[("--json", &ok)]).unwrap();
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
        // Existing outputs written in place pass.
        check_outputs(&[], &[("--json", Path::new("/dev/null"))]).unwrap();
    }

    #[test]
    fn a_directory_is_a_write_error_naming_it() {
        let d = tempfile::tempdir().unwrap();
        let e = write_bytes(b"x", d.path()).unwrap_err();
        assert!(
            e.to_string().contains(&d.path().display().to_string()),
            "{e}"
        );
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }

    #[test]
    fn dev_full_is_a_write_error() {
        let e = write_bytes(b"x", Path::new("/dev/full")).unwrap_err();
        match e {
            ReportError::Write { source, .. } => {
                assert_eq!(source.raw_os_error(), Some(nix::libc::ENOSPC))
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn clashes_are_found_by_file_not_by_spelling() {
        let d = tempfile::tempdir().unwrap();
        let t = d.path().join("t");
        std::fs::write(&t, b"").unwrap();
        let dotted = d.path().join(".").join("t");
        let e = check_outputs(&[("the target", &t)], &[("--json", &dotted)]).unwrap_err();
        assert!(e.to_string().contains("names the target itself"), "{e}");
        let new = d.path().join("new.json");
        let also = d
            .path()
            .join("..")
            .join(d.path().file_name().unwrap())
            .join("new.json");
        let e = check_outputs(&[], &[("--json", &new), ("--folded", &also)]).unwrap_err();
        assert!(
            e.to_string().contains("--json and --folded both name"),
            "{e}"
        );
        let dash = Path::new("-");
        assert!(check_outputs(&[], &[("--json", dash), ("--folded", dash)]).is_err());
        let null = Path::new("/dev/null");
        check_outputs(
            &[("the target", &t)],
            &[("--json", null), ("--folded", null)],
        )
        .unwrap();
        check_outputs(&[("the target", &t)], &[("--json", &new)]).unwrap();
    }
}
