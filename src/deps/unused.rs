//! Unused direct dependencies: the DT_NEEDED entries of an object that none of its symbol
//! references binds to, with `ldd -u -r`'s semantics.
//!
//! In: a resolved [`Closure`]. Out: [`UnusedDependency`] entries, each with what dropping it
//! would take out of the closure.
//!
//! glibc marks an object used when a symbol lookup finds its definition (`elf/dl-lookup.c`
//! `_dl_lookup_symbol_x` sets the defining map's `l_used`); under `LD_DEBUG=unused` (what
//! `ldd -u` sets) `elf/rtld.c` relocates the main object and prints each DT_NEEDED entry whose
//! object is not marked. `ldd -r` adds LD_BIND_NOW, so every PLT slot is looked up too. Here
//! each object's lookups are its start-up lookup keys plus the PLT slots left to lazy binding
//! (both found while `deps` counted its relocations), each walked through the global scope in
//! load order to the object that defines it, by ld.so's own hash tables
//! ([`crate::elf::symbols::SymbolIndex`]), as the lookup model walks them. Relocations
//! against local, hidden and protected symbols bind inside their object without a lookup and
//! mark nothing. A DT_NEEDED entry naming the interpreter is never reported: the kernel maps
//! it whatever the entry says, so dropping the entry removes nothing.

use std::path::{Path, PathBuf};

use super::{Closure, FoundBy};
use crate::elf::symbols::{name_hash, startup_lookup_keys, symbol_names, SymbolIndex};
use crate::elf::MappedFile;

/// One DT_NEEDED entry no symbol reference of its object binds to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnusedDependency {
    /// Name of the object that has the DT_NEEDED entry (as the tables name it: the file name).
    pub object: String,
    pub object_path: PathBuf,
    /// The DT_NEEDED string.
    pub needed: String,
    /// Where it resolved.
    pub needed_path: Option<PathBuf>,
    /// Objects that leave the closure if this entry is dropped (it and those only it pulls
    /// in), by name.
    pub removes: Vec<String>,
}

/// The unused direct dependencies of every object of `closure`, in load order and, within an
/// object, in DT_NEEDED order. Objects that cannot be read again contribute nothing.
pub fn unused_direct(closure: &Closure) -> Vec<UnusedDependency> {
    let objects: Vec<usize> = (0..closure.objects.len()).collect();
    unused_of(closure, &objects)
}

/// [`unused_direct`] for the target alone (`ldd -u -r TARGET`'s list): what a tree scan
/// reports per file, without walking the lookups of every library again.
pub fn unused_direct_of_target(closure: &Closure) -> Vec<UnusedDependency> {
    unused_of(closure, &[0])
}

/// The table name of an object: its file name.
pub(crate) fn table_name(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

fn unused_of(c: &Closure, which: &[usize]) -> Vec<UnusedDependency> {
    let candidates: Vec<usize> = which
        .iter()
        .copied()
        .filter(|&i| {
            c.objects.get(i).is_some_and(|o| {
                o.needed
                    .iter()
                    .any(|e| e.object.is_some_and(|k| !is_interp(c, k)))
            })
        })
        .collect();
    if candidates.is_empty() {
        return Vec::new();
    }
    // The scope: in-scope objects in load order, each with its hash table.
    let files: Vec<(usize, MappedFile)> = c
        .objects
        .iter()
        .enumerate()
        .filter(|(_, o)| o.in_scope)
        .filter_map(|(i, o)| Some((i, MappedFile::open(Path::new(&o.path)).ok()?)))
        .collect();
    let scope: Vec<(usize, SymbolIndex, bool)> = files
        .iter()
        .filter_map(|(i, f)| {
            let exe = c.objects[*i].info.kind.is_executable();
            Some((*i, SymbolIndex::new(f.bytes(), f.path(), exe).ok()?, exe))
        })
        .collect();
    let mut out = Vec::new();
    for i in candidates {
        let Some(used) = used_by(c, i, &files, &scope) else {
            continue;
        };
        let o = &c.objects[i];
        let mut seen: Vec<usize> = Vec::new();
        for (e_idx, e) in o.needed.iter().enumerate() {
            let Some(k) = e.object else { continue };
            if k == i || is_interp(c, k) || used[k] || seen.contains(&k) {
                continue;
            }
            seen.push(k);
            out.push(UnusedDependency {
                object: table_name(&o.path),
                object_path: PathBuf::from(&o.path),
                needed: e.name.clone(),
                needed_path: Some(PathBuf::from(&c.objects[k].path)),
                removes: removed_without(c, i, e_idx)
                    .into_iter()
                    .map(|r| table_name(&c.objects[r].path))
                    .collect(),
            });
        }
    }
    out
}

/// Whether object `k` is the program interpreter (mapped by the kernel whatever names it).
fn is_interp(c: &Closure, k: usize) -> bool {
    let Some(o) = c.objects.get(k) else {
        return false;
    };
    o.found_by == FoundBy::Interpreter
        || c.objects[0]
            .info
            .interpreter
            .as_deref()
            .is_some_and(|p| p == o.path)
        || (c.objects[0].info.interpreter.is_none() && o.path == c.rules.interpreter)
}

/// Which objects (by closure index) answer at least one of object `i`'s lookups, with every
/// PLT slot bound at start-up. None when the object cannot be read again.
fn used_by(
    c: &Closure,
    i: usize,
    files: &[(usize, MappedFile)],
    scope: &[(usize, SymbolIndex, bool)],
) -> Option<Vec<bool>> {
    let o = &c.objects[i];
    let own;
    let f = match files.iter().find(|(j, _)| *j == i) {
        Some((_, f)) => f,
        None => {
            own = MappedFile::open(Path::new(&o.path)).ok()?;
            &own
        }
    };
    // The keys found while counting relocations; for a closure read back from JSON, the
    // tables read again with every PLT slot bound eagerly.
    let (keys, names) = match (&o.info.lookup_keys, &o.info.deferred_keys) {
        (Some(k), Some(d)) => {
            let names = symbol_names(f.bytes(), f.path()).ok()??;
            let all: Vec<(u32, u8)> = k.iter().chain(d.iter()).copied().collect();
            (all, names)
        }
        _ => startup_lookup_keys(f.bytes(), f.path(), false).ok()??,
    };
    let mut used = vec![false; c.objects.len()];
    // One walk per distinct (symbol, class): the same lookup stops at the same object.
    let mut walked = vec![false; names.len().saturating_mul(3)];
    for (sym, class) in keys {
        let slot = (sym as usize) * 3 + (class as usize).min(2);
        match walked.get_mut(slot) {
            Some(w) if !*w => *w = true,
            _ => continue,
        }
        let Some(name) = names.name(sym) else {
            continue;
        };
        let hash = name_hash(name);
        for (k, ix, executable) in scope {
            // COPY lookups skip the executable (it holds the copy being filled).
            if class == 2 && *executable {
                continue;
            }
            if ix.defines_hashed(name, hash, class) {
                used[*k] = true;
                break;
            }
        }
    }
    Some(used)
}

/// The objects that leave the closure when object `i`'s DT_NEEDED entry `entry` is dropped:
/// those no longer reachable from the target through the other entries. The interpreter
/// stays (the kernel maps it).
fn removed_without(c: &Closure, i: usize, entry: usize) -> Vec<usize> {
    removed_dropping(c, |x, j| x == i && j == entry)
}

/// The objects that leave the closure when every entry of `unused` is dropped at once, by
/// name: more than the entries' own `removes` together when one unused library is needed
/// only by another (libcrypto by libssl, both unused by the program).
pub fn removed_by_dropping_all(c: &Closure, unused: &[UnusedDependency]) -> Vec<String> {
    removed_dropping(c, |x, j| {
        let o = &c.objects[x];
        unused
            .iter()
            .any(|u| u.object_path.as_os_str() == o.path.as_str() && u.needed == o.needed[j].name)
    })
    .into_iter()
    .map(|r| table_name(&c.objects[r].path))
    .collect()
}

/// The objects no longer reachable from the target when the entries `dropped(object,
/// entry)` says are left out. The interpreter stays (the kernel maps it).
fn removed_dropping(c: &Closure, dropped: impl Fn(usize, usize) -> bool) -> Vec<usize> {
    let n = c.objects.len();
    let mut reached: Vec<bool> = (0..n).map(|k| is_interp(c, k)).collect();
    let mut stack = vec![0usize];
    reached[0] = true;
    while let Some(x) = stack.pop() {
        for (j, e) in c.objects[x].needed.iter().enumerate() {
            if dropped(x, j) {
                continue;
            }
            if let Some(k) = e.object {
                if k < n && !reached[k] {
                    reached[k] = true;
                    stack.push(k);
                }
            }
        }
    }
    (0..n).filter(|&k| !reached[k]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deps::{Edge, Object, SearchRules};
    use crate::elf::ObjectInfo;

    fn info() -> ObjectInfo {
        let exe = std::env::current_exe().expect("test binary");
        crate::deps::analyze_file(&exe, true).expect("analyse the test binary")
    }

    fn obj(path: &str, needed: &[(&str, Option<usize>)]) -> Object {
        Object {
            path: path.into(),
            name: path.into(),
            found_by: FoundBy::DefaultPath,
            loaded_by: None,
            depth: 0,
            needed: needed
                .iter()
                .map(|(n, o)| Edge {
                    name: n.to_string(),
                    object: *o,
                    first: true,
                })
                .collect(),
            in_scope: true,
            info: info(),
        }
    }

    /// a -> {b, c}, b -> {d}, c -> {d, e}: dropping a's entry for b removes b only (d stays
    /// through c); dropping c's entry for e removes e; dropping a's entry for c removes c and
    /// e, not d.
    #[test]
    fn removal_follows_the_other_edges() {
        let c = Closure {
            rules: SearchRules::built_in("/nonexistent/ld.so"),
            objects: vec![
                obj("/x/a", &[("b", Some(1)), ("c", Some(2))]),
                obj("/x/b", &[("d", Some(3))]),
                obj("/x/c", &[("d", Some(3)), ("e", Some(4))]),
                obj("/x/d", &[]),
                obj("/x/e", &[]),
            ],
            missing: Vec::new(),
            ld_library_path: None,
            bind_now_env: false,
        };
        assert_eq!(removed_without(&c, 0, 0), vec![1]);
        assert_eq!(removed_without(&c, 2, 1), vec![4]);
        assert_eq!(removed_without(&c, 0, 1), vec![2, 4]);
        assert_eq!(removed_without(&c, 1, 0), Vec::<usize>::new());
        // Dropping a's entries for b and c at once: b, c, d (no longer reached by either)
        // and e go, though neither entry alone takes d.
        let dep = |object: &str, needed: &str| UnusedDependency {
            object: table_name(object),
            object_path: PathBuf::from(object),
            needed: needed.into(),
            needed_path: None,
            removes: Vec::new(),
        };
        assert_eq!(
            removed_by_dropping_all(&c, &[dep("/x/a", "b"), dep("/x/a", "c")]),
            vec!["b", "c", "d", "e"]
        );
        assert_eq!(
            removed_by_dropping_all(&c, &[dep("/x/b", "d")]),
            Vec::<String>::new()
        );
    }

    /// The interpreter is never removed, and never reported.
    #[test]
    fn the_interpreter_stays() {
        let mut interp = obj("/x/ld.so", &[]);
        interp.found_by = FoundBy::Interpreter;
        let c = Closure {
            rules: SearchRules::built_in("/x/ld.so"),
            objects: vec![obj("/x/a", &[("ld.so", Some(1))]), interp],
            missing: Vec::new(),
            ld_library_path: None,
            bind_now_env: false,
        };
        assert!(removed_without(&c, 0, 0).is_empty());
        assert!(is_interp(&c, 1));
        assert!(!is_interp(&c, 0));
    }

    #[test]
    fn table_names_are_file_names() {
        assert_eq!(table_name("/usr/lib/libm.so.6"), "libm.so.6");
        assert_eq!(table_name("ls"), "ls");
    }
}
