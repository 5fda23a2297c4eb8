//! Where functions are in a live tracee, from the symbol tables of the objects it maps.
//!
//! In: a pid, its executable and its AT_ENTRY. Out: run-time addresses: the breakpoint that
//! marks `main` (or `__libc_start_main`, whose first argument is main), any function by name
//! (the executable first, then libc, then every other object), the executable's GOT slot for
//! `exit`, and how much of ld.so is visible ([`ldso_detail`]: with debug symbols, each
//! object's relocation and initializers; without, only the r_debug protocol).
//!
//! Symbol tables are read once per file ([`symbols_of`]) and reused by every later run of the
//! same file: reading them takes milliseconds of ldcost's CPU (tens of thousands of names
//! sorted), and in every run that work fell at the exec stop, just before the target ran, so
//! the target's own memory-bound work (faults, exit teardown, its short functions) ran with
//! caches ldcost had just filled with symbol names (a trivial static program's
//! CPU-feature share read 62% against 81% in `perf record` of a shell loop; see
//! docs/taxonomy.md, "What the sampled runs' launcher does to the target").

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use nix::unistd::Pid;

use super::process::mapped_base;
use crate::record::Detail;
use crate::symbolize::{ObjectSymbols, SymbolizeError};
use crate::trace::breakpoint::Breakpoints;

/// A file as it is now: the same path, debug roots, inode and modification time mean the
/// same symbols.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileKey {
    path: PathBuf,
    roots: Vec<PathBuf>,
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
}

impl FileKey {
    fn of(path: &Path, roots: &[PathBuf]) -> Option<FileKey> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some(FileKey {
            path: path.to_path_buf(),
            roots: roots.to_vec(),
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
        })
    }
}

/// The most files whose symbols are kept (the executable, ld.so, libc and a few more).
const KEPT: usize = 16;

thread_local! {
    /// Symbols read so far, oldest first; runs happen on one thread.
    static SYMBOLS: RefCell<Vec<(FileKey, Rc<ObjectSymbols>)>> = const { RefCell::new(Vec::new()) };
    /// Executables' ELF entry points (e_entry), read so far.
    static ENTRIES: RefCell<Vec<(FileKey, u64)>> = const { RefCell::new(Vec::new()) };
}

/// Keeps `value` under `key`, forgetting the oldest entry beyond [`KEPT`].
fn keep<T: Clone>(cache: &RefCell<Vec<(FileKey, T)>>, key: FileKey, value: &T) {
    let mut c = cache.borrow_mut();
    c.retain(|(k, _)| k.path != key.path || k.roots != key.roots);
    if c.len() >= KEPT {
        c.remove(0);
    }
    c.push((key, value.clone()));
}

/// The symbols of the object at `path` (see [`ObjectSymbols::load`]), read once per file and
/// shared by later calls while the file is unchanged.
pub(in crate::trace) fn symbols_of(
    path: &Path,
    debug_roots: &[PathBuf],
) -> Result<Rc<ObjectSymbols>, SymbolizeError> {
    let Some(key) = FileKey::of(path, debug_roots) else {
        return ObjectSymbols::load(path, debug_roots).map(Rc::new);
    };
    let hit = SYMBOLS.with(|c| {
        c.borrow()
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, s)| s.clone())
    });
    if let Some(s) = hit {
        return Ok(s);
    }
    let s = Rc::new(ObjectSymbols::load(path, debug_roots)?);
    SYMBOLS.with(|c| keep(c, key, &s));
    Ok(s)
}

/// Breakpoint tag: `__libc_start_main` (rdi holds main's address).
pub(in crate::trace) const TAG_LIBC_START_MAIN: u32 = 7;
/// Breakpoint tag: `main`.
pub(in crate::trace) const TAG_MAIN: u32 = 8;

/// The detail level ld.so allows, and its symbols.
pub fn ldso_detail(interp: &Path, debug_roots: &[PathBuf]) -> (Detail, Option<Rc<ObjectSymbols>>) {
    match symbols_of(interp, debug_roots) {
        Ok(syms) => {
            if syms.lookup("_dl_relocate_object").is_some() && syms.lookup("call_init").is_some() {
                let df = syms
                    .debug_file()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| interp.display().to_string());
                (Detail::DebugSymbols { debug_file: df }, Some(syms))
            } else {
                (
                    Detail::Exported {
                        why: format!(
                            "no debug symbols for {} (install libc6-dbg, or the debug file matching its build-id)",
                            interp.display()
                        ),
                    },
                    Some(syms),
                )
            }
        }
        Err(e) => (
            Detail::Exported {
                why: format!("cannot read ld.so's symbols: {e}"),
            },
            None,
        ),
    }
}

/// Plants the breakpoint that marks main: at `main` itself when the executable's symbol table
/// has it, else at `__libc_start_main` (whose first argument is main).
pub(in crate::trace) fn plant_main(
    pid: Pid,
    exe: &Path,
    at_entry: u64,
    libc: Option<(u64, String)>,
    bps: &mut Breakpoints,
) {
    if let Some((addr, tag)) = main_target(exe, at_entry, libc) {
        let _ = bps.insert(pid, addr, tag, false);
    }
}

/// Where main is marked: `main` itself when the executable's symbol table has it, or where
/// its `_start` loads it (stripped; [`TAG_MAIN`] both), else `__libc_start_main` ([`TAG_LIBC_START_MAIN`]: its first argument is
/// main), in the executable or in libc.
pub(in crate::trace) fn main_target(
    exe: &Path,
    at_entry: u64,
    libc: Option<(u64, String)>,
) -> Option<(u64, u32)> {
    let exe_syms = symbols_of(exe, &[]).ok()?;
    let bias = exe_bias(exe, at_entry);
    if let Some(m) = exe_syms.lookup("main") {
        return Some((bias.wrapping_add(m.value), TAG_MAIN));
    }
    // Stripped: main from _start's code, sparing a stop at __libc_start_main.
    if let Some(m) = super::start::main_from_start(exe) {
        return Some((bias.wrapping_add(m), TAG_MAIN));
    }
    if let Some(s) = exe_syms.lookup("__libc_start_main") {
        return Some((bias.wrapping_add(s.value), TAG_LIBC_START_MAIN));
    }
    let (base, path) = libc?;
    let ls = symbols_of(Path::new(&path), &[]).ok()?;
    let s = ls.lookup("__libc_start_main")?;
    Some((base + s.value, TAG_LIBC_START_MAIN))
}

/// The load bias of the executable (AT_ENTRY minus its e_entry).
pub(in crate::trace) fn exe_bias(exe: &Path, at_entry: u64) -> u64 {
    let read = || {
        crate::deps::analyze_file(exe, true)
            .map(|i| i.entry)
            .unwrap_or(0)
    };
    let e = match FileKey::of(exe, &[]) {
        Some(key) => {
            let hit = ENTRIES.with(|c| c.borrow().iter().find(|(k, _)| *k == key).map(|p| p.1));
            hit.unwrap_or_else(|| {
                let e = read();
                ENTRIES.with(|c| keep(c, key, &e));
                e
            })
        }
        None => read(),
    };
    at_entry.wrapping_sub(e)
}

/// A function's address in the target: the executable's symbols, then libc's, then every
/// other mapped object's.
pub(in crate::trace) fn find_function(
    pid: Pid,
    exe: &Path,
    at_entry: u64,
    name: &str,
) -> Option<u64> {
    if let Ok(s) = symbols_of(exe, &[]) {
        if let Some(sym) = s.lookup(name).filter(|s| s.value != 0) {
            return Some(exe_bias(exe, at_entry).wrapping_add(sym.value));
        }
    }
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let mut paths: Vec<String> = Vec::new();
    for l in maps.lines() {
        let path = l.split_whitespace().nth(5).unwrap_or("");
        if path.starts_with('/') && !paths.iter().any(|p| p == path) {
            paths.push(path.to_string());
        }
    }
    // libc first: `exit`, `fork`, `posix_spawn` must be libc's, not a same-named symbol of
    // some other library.
    paths.sort_by_key(|p| !p.contains("/libc.so"));
    let exe_canon = std::fs::canonicalize(exe).ok();
    for p in paths {
        if std::fs::canonicalize(&p).ok() == exe_canon {
            continue;
        }
        let Ok(s) = symbols_of(Path::new(&p), &[]) else {
            continue;
        };
        let Some(sym) = s.lookup(name).filter(|s| s.value != 0) else {
            continue;
        };
        let (base, _) = mapped_base(pid, |m| m == p)?;
        return Some(base + sym.value);
    }
    None
}

/// The executable's GOT slot for `exit` (a JUMP_SLOT or GLOB_DAT relocation), run-time address.
pub(in crate::trace) fn exit_got_slot(exe: &Path, bias: u64) -> Option<u64> {
    let bytes = std::fs::read(exe).ok()?;
    let elf = goblin::elf::Elf::parse(&bytes).ok()?;
    let name_of = |r: &goblin::elf::Reloc| {
        elf.dynsyms
            .get(r.r_sym)
            .and_then(|s| elf.dynstrtab.get_at(s.st_name))
    };
    elf.pltrelocs
        .iter()
        .chain(elf.dynrelas.iter())
        .find(|r| r.r_sym != 0 && name_of(r) == Some("exit"))
        .map(|r| bias.wrapping_add(r.r_offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy of /bin/true in a fresh directory (an ELF file with symbols we may rewrite),
    /// removed with the returned guard.
    fn copy_of_true() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("true");
        std::fs::copy("/bin/true", &p).unwrap();
        (dir, p)
    }

    #[test]
    fn symbols_are_read_once_per_unchanged_file() {
        let (_dir, p) = copy_of_true();
        let a = symbols_of(&p, &[]).unwrap();
        let b = symbols_of(&p, &[]).unwrap();
        assert!(Rc::ptr_eq(&a, &b), "the second run read the symbols again");
        // Another file, or other debug roots, are other entries.
        let c = symbols_of(&p, &[PathBuf::from("/nonexistent")]).unwrap();
        assert!(!Rc::ptr_eq(&a, &c));
    }

    #[test]
    fn a_changed_file_is_read_again() {
        let (_dir, p) = copy_of_true();
        let a = symbols_of(&p, &[]).unwrap();
        // Replaced by another file (a new inode), as a rebuild does.
        let tmp = p.with_extension("new");
        std::fs::copy("/bin/true", &tmp).unwrap();
        std::fs::rename(&tmp, &p).unwrap();
        let b = symbols_of(&p, &[]).unwrap();
        assert!(!Rc::ptr_eq(&a, &b), "a replaced file kept its old symbols");
    }

    #[test]
    fn at_most_kept_files_are_held() {
        let (_dir, p) = copy_of_true();
        for i in 0..KEPT + 3 {
            let roots = [PathBuf::from(format!("/nonexistent/{i}"))];
            symbols_of(&p, &roots).unwrap();
        }
        assert_eq!(SYMBOLS.with(|c| c.borrow().len()), KEPT);
    }
}
