//! The /proc files and memory of a stopped tracee.
//!
//! In: a pid (the tracee is stopped, or at least alive). Out: its auxiliary vector, where an
//! object is mapped, its executable's path, the thread group of a task, and the object name a
//! `struct link_map *` in rdi points at. Nothing here fails loudly: the process may be gone by
//! the time a file is read, and every caller has a fallback.

use std::path::{Path, PathBuf};

use nix::sys::ptrace;
use nix::unistd::Pid;

use crate::trace::breakpoint::{read_cstring, read_u64};

/// AT_BASE: ld.so's load address (0 for a static program).
pub(in crate::trace) const AT_BASE: u64 = 7;
/// AT_ENTRY: the program's entry point, run-time address.
pub(in crate::trace) const AT_ENTRY: u64 = 9;

/// Reads AT_* values from /proc/PID/auxv.
pub(in crate::trace) fn auxv(pid: Pid) -> std::collections::HashMap<u64, u64> {
    let mut m = std::collections::HashMap::new();
    if let Ok(b) = std::fs::read(format!("/proc/{pid}/auxv")) {
        for c in b.chunks_exact(16) {
            let k = u64::from_le_bytes(c[..8].try_into().unwrap_or([0; 8]));
            let v = u64::from_le_bytes(c[8..].try_into().unwrap_or([0; 8]));
            if k == 0 {
                break;
            }
            m.insert(k, v);
        }
    }
    m
}

/// The lowest mapping address of `path` in the tracee (its load base for a library whose first
/// PT_LOAD has vaddr 0), and the path exactly as /proc/PID/maps names it.
pub(in crate::trace) fn mapped_base(
    pid: Pid,
    pred: impl Fn(&str) -> bool,
) -> Option<(u64, String)> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    for l in maps.lines() {
        let mut f = l.split_whitespace();
        let range = f.next()?;
        let path = f.nth(4).unwrap_or("");
        if !path.is_empty() && pred(path) {
            let start = u64::from_str_radix(range.split('-').next()?, 16).ok()?;
            return Some((start, path.to_string()));
        }
    }
    None
}

/// Where libc is mapped ([`mapped_base`] of the first libc.so / libc-X.Y.so map).
pub(in crate::trace) fn libc_base(pid: Pid) -> Option<(u64, String)> {
    mapped_base(pid, |p| p.contains("/libc.so") || p.contains("/libc-"))
}

/// The executable the tracee runs (/proc/PID/exe), or `fallback` when it cannot be read.
pub(in crate::trace) fn exe_path(pid: Pid, fallback: &Path) -> PathBuf {
    std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_else(|_| fallback.to_path_buf())
}

/// The thread group (process) a task belongs to, from /proc/TID/status.
pub(in crate::trace) fn thread_group(tid: Pid) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The name the main map goes by in the report: the path as given when it is what runs,
/// else (a #! script) the interpreter as the script names it, else the real executable.
pub(in crate::trace) fn main_map_name(program: &Path, exe: &Path) -> PathBuf {
    let canon = |p: &Path| std::fs::canonicalize(p).ok();
    let real = canon(exe);
    if canon(program) == real {
        return program.to_path_buf();
    }
    let mut head = [0u8; 256];
    let n = std::fs::File::open(program)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .unwrap_or(0);
    {
        if let Some(rest) = head[..n].strip_prefix(b"#!") {
            let line = rest.split(|&b| b == b'\n').next().unwrap_or(&[]);
            let text = String::from_utf8_lossy(line);
            if let Some(interp) = text.split_whitespace().next() {
                if canon(Path::new(interp)) == real {
                    return PathBuf::from(interp);
                }
            }
        }
    }
    exe.to_path_buf()
}

/// The object name of the link_map a function returned (rax), as [`link_map_name`] reads it.
pub(in crate::trace) fn returned_map_name(pid: Pid, exe: &Path) -> Option<String> {
    let r = ptrace::getregs(pid).ok()?;
    if r.rax == 0 {
        return None;
    }
    let name = read_u64(pid, r.rax + 8).and_then(|p| read_cstring(pid, p))?;
    Some(if name.is_empty() {
        exe.display().to_string()
    } else {
        name
    })
}

/// The C string a function's second argument (rsi) points to.
pub(in crate::trace) fn second_arg_string(pid: Pid) -> Option<String> {
    let r = ptrace::getregs(pid).ok()?;
    read_cstring(pid, r.rsi)
}

/// The object name of the link_map in rdi (`l_name` at offset 8; "" is the executable).
pub(in crate::trace) fn link_map_name(pid: Pid, exe: &Path) -> String {
    let name = ptrace::getregs(pid)
        .ok()
        .and_then(|r| read_u64(pid, r.rdi + 8))
        .and_then(|p| read_cstring(pid, p))
        .unwrap_or_default();
    if name.is_empty() {
        exe.display().to_string()
    } else {
        name
    }
}
