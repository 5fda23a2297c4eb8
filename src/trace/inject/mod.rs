//! The fork probe: code injected into a stopped target that forks it N times at native speed.
//!
//! In: a ptrace-stopped thread (at a breakpoint, rip rewound) and what to run. Out: one
//! [`ProbeRecord`] per iteration, read back from the target's memory, with every register
//! (general, x87/SSE/AVX state) and every byte of the target as they were.
//!
//! How (the sequence gdb's `call` uses, minus the stack):
//! 1. Save the registers (PTRACE_GETREGS) and the extended state (PTRACE_GETREGSET
//!    NT_X86_XSTATE).
//! 2. mmap one shared anonymous region by *remote syscalls*: rip is pointed at a `syscall`
//!    instruction (the first one found in the vDSO, later the probe's own) and the thread is
//!    single-stepped over it, so no byte of the target is changed. It holds the probe (code,
//!    parameters, strings, scratch) and after it the records, pre-faulted (MAP_POPULATE):
//!    shared, fork copies no page-table entry of it and the parent's writes never fault.
//! 3. Block every signal in the thread and set SIGCHLD to SIG_DFL for the loop (a handler of
//!    the target's must not reap our children), turn off PTRACE_O_TRACEFORK/VFORK/CLONE (the
//!    children must not stop), start the probe and wait for its int3.
//! 4. Read the records, undo 3, munmap the region, put back the registers.
//!
//! The probes' source is in probes/*.s (AT&T syntax), assembled into this binary with
//! `global_asm!`; the bytes we inject are our own copy of that code (position independent:
//! only rip-relative references inside the probe). A test assembles the same files with GNU as
//! and compares the bytes, and checks the parameter offsets against [`ProbeParams`].
//!
//! Here: the probe's code and the types of its interface (parameters, records, requests,
//! errors). `remote`: registers, memory and syscalls of the tracee; `image`: the probe's
//! page and stack; `run`: one loop, steps 1 to 4.

mod image;
mod remote;
mod run;

use nix::unistd::Pid;

pub use crate::record::fork::{ProbeRecord, ProbeResult, Rusage, Spawn};
pub use remote::{vdso_clock_gettime, vdso_syscall, Memory, Remote, SavedState};
pub use run::{run_probe, trace_options_without_children};

std::arch::global_asm!(
    concat!(
        include_str!("../../../probes/params.s"),
        include_str!("../../../probes/probe_fork.s"),
        include_str!("../../../probes/probe_vfork.s"),
        include_str!("../../../probes/probe_spawn.s"),
    ),
    options(att_syntax)
);

extern "C" {
    static ldcost_probe_fork: u8;
    static ldcost_probe_fork_end: u8;
    static ldcost_probe_vfork: u8;
    static ldcost_probe_vfork_end: u8;
    static ldcost_probe_spawn: u8;
    static ldcost_probe_spawn_end: u8;
}

impl Spawn {
    /// The probe's machine code (our own copy, see the module docs) and its source file.
    pub fn probe(self) -> (&'static [u8], &'static str) {
        // SAFETY: the symbols are labels of global_asm! above, start before end, in .text.
        unsafe {
            let (a, b, src) = match self {
                Spawn::Fork => (
                    &raw const ldcost_probe_fork,
                    &raw const ldcost_probe_fork_end,
                    "probes/probe_fork.s",
                ),
                Spawn::Vfork => (
                    &raw const ldcost_probe_vfork,
                    &raw const ldcost_probe_vfork_end,
                    "probes/probe_vfork.s",
                ),
                Spawn::PosixSpawn => (
                    &raw const ldcost_probe_spawn,
                    &raw const ldcost_probe_spawn_end,
                    "probes/probe_spawn.s",
                ),
            };
            (
                std::slice::from_raw_parts(a, (b as usize) - (a as usize)),
                src,
            )
        }
    }
}

/// Offset of the probe's entry point (0 holds the `syscall; int3` stub).
pub const PROBE_ENTRY: u64 = 4;

/// The parameter block (probes/params.s, `P_*`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbeParams {
    pub n: u64,
    pub action: u64,
    pub exit_fn: u64,
    pub exit_alt: u64,
    pub path: u64,
    pub argv: u64,
    pub envp: u64,
    pub records: u64,
    pub spawn_fn: u64,
    pub code: u64,
    pub clock_fn: u64,
    pub done: u64,
    pub error: i64,
    pub t_start: u64,
    pub t_end: u64,
    pub ru_start: Rusage,
    pub sigmask: u64,
    pub pdeath: u64,
    pub ppid: u64,
    pub attr: u64,
    pub fork_fn: u64,
    pub devnull: u64,
    pub flags: u64,
    pub ru_end: Rusage,
}

/// `P_FLAGS` bit 0: the lean fork loop (fork and wait4 only; see probes/probe_fork.s).
pub const FLAG_LEAN: u64 = 1;

/// What the child does (`P_ACTION`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChildAction {
    /// exit_group(code), as `_exit()`.
    RawExit,
    /// Call this `exit` (the address in the target's GOT slot: lazily bound or not), and for
    /// odd iterations `alt` if given (libc's own `exit`: the lazy-binding A/B).
    CallExit { func: u64, alt: Option<u64> },
    /// execve(path, argv, envp).
    Exec {
        path: Vec<u8>,
        argv: Vec<Vec<u8>>,
        envp: Vec<Vec<u8>>,
    },
}

/// A loop to run.
#[derive(Debug, Clone)]
pub struct ProbeRequest {
    pub spawn: Spawn,
    pub iterations: u64,
    pub action: ChildAction,
    /// libc's fork() (None: the raw syscall), posix_spawn() (required for PosixSpawn).
    pub fork_fn: Option<u64>,
    pub spawn_fn: Option<u64>,
    /// The vDSO's clock_gettime (None: the syscall).
    pub clock_fn: Option<u64>,
    pub exit_code: u64,
    /// Fork only: the lean loop (fork and wait4, as the seed forktest: no clock read, no
    /// rusage per iteration; the records hold only pid and status). For the rates.
    pub lean: bool,
}

/// Errors of injection. The target is killed by the caller on any of them (its state is not
/// known to be intact).
#[derive(Debug, thiserror::Error)]
pub enum InjectError {
    #[error("ptrace {what} on pid {pid}: {errno}")]
    Ptrace {
        what: &'static str,
        pid: i32,
        errno: nix::Error,
    },
    #[error("remote {what} in pid {pid} failed: {errno}")]
    RemoteSyscall {
        what: &'static str,
        pid: i32,
        errno: nix::Error,
    },
    #[error("/proc/{pid}/mem: {source}")]
    Memory { pid: i32, source: std::io::Error },
    #[error("the target (pid {pid}) {what} while the probe ran")]
    Lost { pid: i32, what: String },
    #[error("the probe in pid {pid} stopped at {rip:#x} with {signal} (not its own int3)")]
    Crashed { pid: i32, rip: u64, signal: String },
    #[error("interrupted")]
    Interrupted,
}

/// The probe (or a remote syscall) stopped with a signal that is not its own int3.
fn crashed(pid: Pid, signal: &str) -> InjectError {
    let rip = nix::sys::ptrace::getregs(pid).map(|r| r.rip).unwrap_or(0);
    InjectError::Crashed {
        pid: pid.as_raw(),
        rip,
        signal: signal.into(),
    }
}

fn perr(what: &'static str, pid: Pid) -> impl Fn(nix::Error) -> InjectError {
    move |errno| InjectError::Ptrace {
        what,
        pid: pid.as_raw(),
        errno,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `.set NAME, VALUE` lines of probes/params.s.
    fn layout() -> std::collections::HashMap<String, usize> {
        include_str!("../../../probes/params.s")
            .lines()
            .filter_map(|l| {
                let rest = l.trim().strip_prefix(".set")?;
                let mut it = rest.split('#').next()?.split(',');
                let name = it.next()?.trim().to_string();
                let value = it.next()?.trim().parse().ok()?;
                Some((name, value))
            })
            .collect()
    }

    #[test]
    fn params_layout_matches_the_assembly() {
        let l = layout();
        use std::mem::offset_of;
        let p = [
            ("P_N", offset_of!(ProbeParams, n)),
            ("P_ACTION", offset_of!(ProbeParams, action)),
            ("P_EXIT_FN", offset_of!(ProbeParams, exit_fn)),
            ("P_EXIT_ALT", offset_of!(ProbeParams, exit_alt)),
            ("P_PATH", offset_of!(ProbeParams, path)),
            ("P_ARGV", offset_of!(ProbeParams, argv)),
            ("P_ENVP", offset_of!(ProbeParams, envp)),
            ("P_RECORDS", offset_of!(ProbeParams, records)),
            ("P_SPAWN_FN", offset_of!(ProbeParams, spawn_fn)),
            ("P_CODE", offset_of!(ProbeParams, code)),
            ("P_CLOCK_FN", offset_of!(ProbeParams, clock_fn)),
            ("P_DONE", offset_of!(ProbeParams, done)),
            ("P_ERROR", offset_of!(ProbeParams, error)),
            ("P_T_START", offset_of!(ProbeParams, t_start)),
            ("P_T_END", offset_of!(ProbeParams, t_end)),
            ("P_RU_START", offset_of!(ProbeParams, ru_start)),
            ("P_SIGMASK", offset_of!(ProbeParams, sigmask)),
            ("P_PDEATH", offset_of!(ProbeParams, pdeath)),
            ("P_PPID", offset_of!(ProbeParams, ppid)),
            ("P_ATTR", offset_of!(ProbeParams, attr)),
            ("P_FORK_FN", offset_of!(ProbeParams, fork_fn)),
            ("P_DEVNULL", offset_of!(ProbeParams, devnull)),
            ("P_FLAGS", offset_of!(ProbeParams, flags)),
            ("P_RU_END", offset_of!(ProbeParams, ru_end)),
            ("P_SIZE", std::mem::size_of::<ProbeParams>()),
            ("R_T0", offset_of!(ProbeRecord, t0)),
            ("R_T1", offset_of!(ProbeRecord, t1)),
            ("R_T2", offset_of!(ProbeRecord, t2)),
            ("R_PID", offset_of!(ProbeRecord, pid)),
            ("R_STATUS", offset_of!(ProbeRecord, status)),
            ("R_CHILD_RU", offset_of!(ProbeRecord, child)),
            ("R_PARENT_RU", offset_of!(ProbeRecord, parent)),
            ("R_SIZE", std::mem::size_of::<ProbeRecord>()),
        ];
        for (name, off) in p {
            assert_eq!(l.get(name), Some(&off), "{name} in probes/params.s");
        }
        assert_eq!(l.len(), p.len(), "params.s has a field the struct lacks");
        assert_eq!(std::mem::size_of::<Rusage>(), 144);
    }

    #[test]
    fn probes_start_with_the_syscall_stub() {
        for s in [Spawn::Fork, Spawn::Vfork, Spawn::PosixSpawn] {
            let (code, _) = s.probe();
            assert_eq!(&code[..4], &[0x0f, 0x05, 0xcc, 0x90], "{s:?}");
            assert!(
                code.len() > 100 && code.len() < 1024,
                "{s:?}: {}",
                code.len()
            );
        }
    }
}
