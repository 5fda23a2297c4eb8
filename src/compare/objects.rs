//! Which object of a side's static model (its `deps` closure) a measured row names.
//!
//! In: the closure and each object's key (the target as "(target)", the others by name).
//! Out: the key of a path as a per-object row gives it. A row names the file the process
//! mapped (/proc/PID/exe for the program, a link map's path for a library), which is not
//! always the path the model was resolved from: a symlink (`/usr/bin/python3` →
//! `python3.11`), a wrapper that execs the program from another directory. So a row
//! matches by its path, then by the path with symlinks resolved, then by the build-id of
//! the file it names, and the same object keeps one key on both sides whatever each side's
//! launcher.

use std::collections::BTreeMap;

use crate::deps::Closure;

/// The keys of one closure's objects by path, resolved path and build-id.
pub(crate) struct Names {
    by_path: BTreeMap<String, String>,
    by_build_id: BTreeMap<String, String>,
}

impl Names {
    /// `key(i)`: the key of the closure's i-th object.
    pub(crate) fn new(c: &Closure, key: impl Fn(usize) -> String) -> Names {
        let mut by_path = BTreeMap::new();
        let mut by_build_id = BTreeMap::new();
        for (i, o) in c.objects.iter().enumerate() {
            let k = key(i);
            by_path.insert(o.path.clone(), k.clone());
            if let Ok(p) = std::fs::canonicalize(&o.path) {
                by_path
                    .entry(p.display().to_string())
                    .or_insert_with(|| k.clone());
            }
            if let Some(id) = &o.info.build_id {
                by_build_id.entry(id.clone()).or_insert(k);
            }
        }
        Names {
            by_path,
            by_build_id,
        }
    }

    /// The key of the object at `path`, if it is one of the closure's.
    pub(crate) fn key(&self, path: &str) -> Option<String> {
        if let Some(k) = self.by_path.get(path) {
            return Some(k.clone());
        }
        if let Some(k) = std::fs::canonicalize(path)
            .ok()
            .and_then(|p| self.by_path.get(&p.display().to_string()))
        {
            return Some(k.clone());
        }
        build_id(path).and_then(|id| self.by_build_id.get(&id).cloned())
    }
}

/// The GNU build-id of the ELF file at `path` (None: unreadable, not ELF, or none).
fn build_id(path: &str) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    crate::elf::analyze(&bytes, std::path::Path::new(path), false)
        .ok()?
        .build_id
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A symlink to the program and a copy of it in another directory are the program.
    #[test]
    fn a_row_matches_by_path_resolved_path_and_build_id() {
        let exe = std::fs::canonicalize("/proc/self/exe").expect("own exe");
        let Ok(c) = crate::deps::resolve(&exe, &crate::deps::ResolveOptions::from_env()) else {
            return crate::test_skip::skip(
                "a_row_matches_by_path_resolved_path_and_build_id",
                "the test binary's closure does not resolve here",
            );
        };
        let names = Names::new(&c, |i| {
            if i == 0 {
                "(target)".into()
            } else {
                c.objects[i].name.clone()
            }
        });
        let dir = tempfile::tempdir().expect("tempdir");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&exe, &link).expect("symlink");
        let copy = dir.path().join("copy");
        std::fs::copy(&exe, &copy).expect("copy");
        // Only a file with a build-id can be told by it.
        let with_id = c.objects[0].info.build_id.is_some();
        for p in [&exe, &link, &copy]
            .into_iter()
            .take(if with_id { 3 } else { 2 })
        {
            assert_eq!(
                names.key(&p.display().to_string()).as_deref(),
                Some("(target)"),
                "{}",
                p.display()
            );
        }
        // A file that is no object of the closure names none.
        let other = dir.path().join("other");
        std::fs::write(&other, b"not an object").expect("write");
        assert_eq!(names.key(&other.display().to_string()), None);
    }
}
