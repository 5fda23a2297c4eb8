//! Where functions are in a live tracee, from the symbol tables of the objects it maps.
//!
//! In: a pid, its executable and its AT_ENTRY. Out: run-time addresses: the breakpoint that
//! marks `main` (or `__libc_start_main`, whose first argument is main), any function by name
//! (the executable first, then libc, then every other object), the executable's GOT slot for
//! `exit`, and how much of ld.so is visible ([`ldso_detail`]: with debug symbols, each
//! object's relocation and initializers; without, only the r_debug protocol).

use std::path::{Path, PathBuf};

use nix::unistd::Pid;

use super::process::mapped_base;
use crate::record::Detail;
use crate::symbolize::ObjectSymbols;
use crate::trace::breakpoint::Breakpoints;

/// Breakpoint tag: `__libc_start_main` (rdi holds main's address).
pub(in crate::trace) const TAG_LIBC_START_MAIN: u32 = 7;
/// Breakpoint tag: `main`.
pub(in crate::trace) const TAG_MAIN: u32 = 8;

/// The detail level ld.so allows, and its symbols.
pub fn ldso_detail(interp: &Path, debug_roots: &[PathBuf]) -> (Detail, Option<ObjectSymbols>) {
    match ObjectSymbols::load(interp, debug_roots) {
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
    let exe_syms = ObjectSymbols::load(exe, &[]).ok()?;
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
    let ls = ObjectSymbols::load(Path::new(&path), &[]).ok()?;
    let s = ls.lookup("__libc_start_main")?;
    Some((base + s.value, TAG_LIBC_START_MAIN))
}

/// The load bias of the executable (AT_ENTRY minus its e_entry).
pub(in crate::trace) fn exe_bias(exe: &Path, at_entry: u64) -> u64 {
    let e = crate::deps::analyze_file(exe, true)
        .map(|i| i.entry)
        .unwrap_or(0);
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
    if let Ok(s) = ObjectSymbols::load(exe, &[]) {
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
        let Ok(s) = ObjectSymbols::load(Path::new(&p), &[]) else {
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
