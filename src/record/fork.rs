//! The fork probe's recording: what one `--fork` run captured, as plain data — each loop's
//! per-iteration records (clock readings, the parent's and the child's rusage, the child's
//! status), where the probe ran, how `exit` was bound, the fault kinds counted over a loop of
//! their own, and the sampled loop's recording. The probe writes [`ProbeRecord`] and
//! [`Rusage`] into the target's memory in this exact layout (`repr(C)`, probes/params.s).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::footprint::Footprint;
use super::samples::Recording;
use super::Ending;

/// How the probe creates each child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Spawn {
    Fork,
    Vfork,
    PosixSpawn,
}

impl Spawn {
    pub fn label(self) -> &'static str {
        match self {
            Spawn::Fork => "fork",
            Spawn::Vfork => "vfork",
            Spawn::PosixSpawn => "posix_spawn",
        }
    }
}

/// `struct rusage` as the kernel writes it (x86-64).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rusage {
    pub utime: [i64; 2],
    pub stime: [i64; 2],
    pub maxrss: i64,
    pub ixrss: i64,
    pub idrss: i64,
    pub isrss: i64,
    pub minflt: i64,
    pub majflt: i64,
    pub nswap: i64,
    pub inblock: i64,
    pub oublock: i64,
    pub msgsnd: i64,
    pub msgrcv: i64,
    pub nsignals: i64,
    pub nvcsw: i64,
    pub nivcsw: i64,
}

impl Rusage {
    pub fn user_ns(&self) -> u64 {
        (self.utime[0] as u64) * 1_000_000_000 + (self.utime[1] as u64) * 1000
    }
    pub fn sys_ns(&self) -> u64 {
        (self.stime[0] as u64) * 1_000_000_000 + (self.stime[1] as u64) * 1000
    }
}

/// One iteration (probes/params.s, `R_*`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProbeRecord {
    pub t0: u64,
    pub t1: u64,
    pub t2: u64,
    pub pid: u64,
    pub status: u64,
    pub _pad: u64,
    pub child: Rusage,
    pub parent: Rusage,
}

/// What one probe run gave.
#[derive(Debug, Clone)]
pub struct ProbeResult {
    pub records: Vec<ProbeRecord>,
    pub ru_start: Rusage,
    /// getrusage(RUSAGE_THREAD) after the loop (after `t_end`; the fork probe only, else
    /// all zero).
    pub ru_end: Rusage,
    pub t_start: u64,
    pub t_end: u64,
    /// -errno of the first failure (the loop stopped there).
    pub error: Option<i64>,
    /// Bytes of the probe page (VMAs the children inherit from us: 1).
    pub page_bytes: u64,
}

/// Where the probe is injected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum At {
    /// The program's entry point: ld.so is done, the program's own start-up has not begun.
    Entry,
    /// `main`.
    Main,
    /// libc's `exit`, when the program calls it (or returns from main): the largest footprint.
    Exit,
    /// The first call of this function (the executable's symbols, then each loaded object's).
    Symbol(String),
}

impl At {
    pub fn label(&self) -> String {
        match self {
            At::Entry => "entry".into(),
            At::Main => "main".into(),
            At::Exit => "exit".into(),
            At::Symbol(s) => s.clone(),
        }
    }
}

/// What each child does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildSpec {
    /// `_exit(0)`, as the seed forktime.
    RawExit,
    /// libc `exit(0)`, as the seed forktest: atexit handlers, stdio flush, and `exit` bound
    /// lazily in every child if the parent never called it.
    Exit,
    /// execve of a program (seed 003's matrix).
    Exec(PathBuf),
}

impl ChildSpec {
    pub fn label(&self) -> String {
        match self {
            ChildSpec::RawExit => "_exit".into(),
            ChildSpec::Exit => "exit".into(),
            ChildSpec::Exec(p) => format!("exec:{}", p.display()),
        }
    }
}

/// How the children's `exit` is reached.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ExitBinding {
    /// Through the executable's GOT slot, still pointing into its PLT: every child binds it.
    Lazy { got: u64 },
    /// Through the GOT slot, already bound (the parent called exit before, or BIND_NOW).
    Bound { got: u64 },
    /// No GOT slot for exit in the executable: libc's exit called directly.
    Direct,
    /// A static executable's own exit.
    Static,
}

/// Faults counted over a span.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultKinds {
    pub all: u64,
    /// Writes to a present page: copy-on-write.
    pub cow: u64,
    /// Not present, in the target's file-backed VMAs; None when not counted (no ranges, or
    /// the kernel refused the filter).
    pub file: Option<u64>,
}

impl FaultKinds {
    /// Faults on pages that were not present (file-backed or new anonymous).
    pub fn not_present(&self) -> u64 {
        self.all.saturating_sub(self.cow)
    }
}

/// One fork run.
#[derive(Debug, Clone)]
pub struct ForkRun {
    pub at: At,
    pub at_address: u64,
    pub spawn: Spawn,
    pub child: ChildSpec,
    pub exit_binding: Option<ExitBinding>,
    /// libc's fork() was called (false: the raw fork syscall).
    pub libc_fork: bool,
    /// The vDSO's clock_gettime timed the loop (false: the syscall).
    pub vdso_clock: bool,
    pub footprint: Option<Footprint>,
    pub footprint_error: Option<String>,
    pub main: ProbeResult,
    /// The lean loop the rates come from (fork only; see `ProbeRequest::lean` in the probe).
    pub rate: Option<ProbeResult>,
    /// Page faults by kind over a loop of their own (no perf event touches the measured
    /// loop): (the parent's, the children's, forks), or why not.
    pub faults: Result<(FaultKinds, FaultKinds, u64), String>,
    /// The sampled loop and its recording, or why there is none.
    pub sampled: Option<Result<(ProbeResult, Recording), String>>,
    /// The interleaved A/B loop (even iterations through the GOT, odd direct).
    pub lazy_ab: Option<ProbeResult>,
    /// The fork/vfork A/B: rounds of a fork loop then a vfork loop of the same stopped image,
    /// every child doing `_exit` (a vfork child may do nothing else): what creating the child
    /// without copying the image would save a program that forks only to exec.
    pub spawn_ab: Vec<(ProbeResult, ProbeResult)>,
    pub ending: Ending,
    pub pid: i32,
}
