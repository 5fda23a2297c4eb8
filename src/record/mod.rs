//! The recording of live runs: everything `profile` captured, serialisable, so statistics and
//! reports can be recomputed (and tested) without root or the target.
//!
//! A run is a sequence of phase segments, each with its wall time and the perf counter deltas
//! of the target over that segment. Phases are cut at ptrace stops (breakpoints); the
//! taxonomy is documented in docs/taxonomy.md.

pub mod after_main;
pub mod counters;
pub mod counting;
pub mod footprint;
pub mod fork;
pub mod samples;

use serde::{Deserialize, Serialize};

use counters::Snapshot;

/// How the target ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case", tag = "how", content = "value")]
pub enum Ending {
    Exited(i32),
    Killed(i32),
    TimedOut,
}

impl Ending {
    pub fn describe(&self) -> String {
        match self {
            Ending::Exited(0) => "exited with status 0".into(),
            Ending::Exited(c) => format!("exited with status {c}"),
            Ending::Killed(s) => format!(
                "killed by signal {} ({})",
                s,
                nix::sys::signal::Signal::try_from(*s)
                    .map(|s| s.as_str())
                    .unwrap_or("?")
            ),
            Ending::TimedOut => "killed by ldcost after --timeout".into(),
        }
    }
}

/// The phases of start-up, in the order they happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// From execve to the first instruction of ld.so (or of a static program): the whole
    /// system call, counters zeroed at its syscall-enter stop (see [`ExecAccount`]; recordings
    /// without one counted from enable-on-exec, after the old image was gone).
    KernelExec,
    /// glibc's CPU feature detection (`init_cpu_features` and its cache-info detection, cpuid
    /// in loops), cut where breakpoints can: in ld.so (with its debug symbols) from the entry
    /// of `init_cpu_features` to its return, inside "ld.so start, search and mapping"; in a
    /// static program from the return of `__tunables_init` to the entry of
    /// `_dl_relocate_static_pie` (the code between is `init_cpu_features` inlined into
    /// `__libc_start_main`), inside "entry to main". Absent when the symbols are not there
    /// ([`Run::cpu_features`] says why).
    CpuFeatures,
    /// ld.so's own start-up and its object search and mapping, up to the first relocation
    /// (with ld.so debug symbols) or until r_debug says RT_CONSISTENT (without).
    LdsoMapping,
    /// `_dl_map_object` for one DT_NEEDED entry or preload (with ld.so's debug symbols, in
    /// per-object runs): the search for the object and, when it is not loaded yet, its
    /// mapping (`_dl_map_object_from_fd`), charged to the object it returns. Cut out of
    /// [`Phase::LdsoMapping`]'s window, never counted in it too: the two together are ld.so's
    /// start, search and mapping.
    ObjectMapping,
    /// `_dl_relocate_object` for one object (relative, symbolic and eager PLT relocations,
    /// symbol lookups, RELRO).
    Relocation,
    /// Relocation and initializers together, when ld.so's internals are not visible.
    RelocationAndInit,
    /// `call_init` for one object: DT_INIT and DT_INIT_ARRAY entries.
    Initializers,
    /// The rest of ld.so between those (TLS set-up, version checks, audit, bookkeeping).
    LdsoOther,
    /// From the program's entry point to main: libc start-up, the executable's constructors.
    EntryToMain,
    /// From main to exit (the program's own work and its exit).
    MainToExit,
}

impl Phase {
    pub fn label(self) -> &'static str {
        match self {
            Phase::KernelExec => "kernel exec",
            Phase::CpuFeatures => "CPU feature detection",
            Phase::LdsoMapping => "ld.so start, search and mapping",
            Phase::ObjectMapping => "search and mapping",
            Phase::Relocation => "relocation",
            Phase::RelocationAndInit => "relocation + initializers",
            Phase::Initializers => "initializers",
            Phase::LdsoOther => "ld.so other",
            Phase::EntryToMain => "entry to main",
            Phase::MainToExit => "main to exit",
        }
    }
}

/// How much of ld.so could be seen (stated in every report).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "level")]
pub enum Detail {
    /// ld.so's internal symbols from its build-id debug file: per-object relocation and
    /// initializer phases.
    DebugSymbols { debug_file: String },
    /// Only what every glibc exports (_dl_debug_state / _r_debug, AT_ENTRY): mapping vs the
    /// rest of ld.so.
    Exported { why: String },
    /// A static program: no ld.so.
    Static,
}

/// One segment of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    pub phase: Phase,
    /// The object a relocation or initializer segment belongs to (ld.so's l_name; the
    /// executable's path for the main map).
    pub object: Option<String>,
    /// Wall time during which the target ran (ldcost's own work at stops is left out).
    pub wall_ns: u64,
    pub counters: Snapshot,
    /// ptrace stops charged to this segment: the one that ends it, and the single-step over
    /// a persistent breakpoint that started it.
    pub stops: u64,
    /// CLOCK_MONOTONIC (ns) at its start and end: the stops that bound it. Samples taken with
    /// the same clock fall into the segment by time.
    #[serde(default)]
    pub span_ns: Option<(u64, u64)>,
}

/// Whether a run had per-object breakpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Instrumentation {
    /// No ptrace at all: counters only (the reference for the instrumentation's cost).
    None,
    /// Breakpoints at phase boundaries only (exec, mapping done, entry, main, exit).
    Coarse,
    /// Plus a breakpoint pair around every object's relocation and initializers.
    PerObject,
    /// A per-object run with LD_BIND_NOW=1 added to the environment: every lazily bound PLT
    /// slot is bound in its object's relocation, so each object's relocation here less its
    /// relocation in the per-object runs is what `-z now` would cost it at start-up. Kept
    /// out of every statistic but that price.
    PerObjectBindNow,
}

/// Where a run's kernel-exec phase starts counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExecStart {
    /// At the execve syscall-enter stop: the whole system call is counted.
    SyscallEntry,
    /// Enable-on-exec: only the part of execve after `begin_new_exec` released the old image.
    EnableOnExec,
}

/// The image the target's execve released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OldImage {
    /// The launched child shared ldcost's address space until exec (CLONE_VM, as
    /// posix_spawn/vfork): the exec dropped a reference, nothing was torn down.
    SharedWithLauncher,
    /// The child was a fork of ldcost: the exec tore down a copy of ldcost's image, inside the
    /// target's execve.
    ForkOfLauncher,
}

/// How a run's execve was launched and counted: stated under the phase table and in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecAccount {
    pub counted_from: ExecStart,
    pub old_image: OldImage,
}

impl ExecAccount {
    /// How runs are launched and counted now.
    pub const CURRENT: ExecAccount = ExecAccount {
        counted_from: ExecStart::SyscallEntry,
        old_image: OldImage::SharedWithLauncher,
    };

    /// One sentence for the report.
    pub fn describe(&self) -> String {
        let from = match self.counted_from {
            ExecStart::SyscallEntry => "the whole execve, from its entry to the first instruction",
            ExecStart::EnableOnExec => {
                "only the end of execve (counters enabled on exec, after the old image was released)"
            }
        };
        let old = match self.old_image {
            OldImage::SharedWithLauncher => {
                "the target was launched sharing ldcost's address space (CLONE_VM, as posix_spawn), so its exec tore down no launcher image"
            }
            OldImage::ForkOfLauncher => {
                "the target was a fork of ldcost, so its exec includes tearing down that copy of ldcost's image"
            }
        };
        format!("kernel exec: {from}; {old}")
    }
}

/// One run of the target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub instrumentation: Instrumentation,
    pub segments: Vec<Segment>,
    /// Counters over the whole process (what `perf stat` would show); for a traced run, up to
    /// its exit stop (PTRACE_EVENT_EXIT), where its last phase ends. A traced run takes a few
    /// first-touch faults fewer than an untraced one: the text pages ldcost writes breakpoints
    /// into are brought in by the tracer's `PTRACE_POKEDATA`, not by the target.
    pub total: Snapshot,
    pub wall_ns: u64,
    pub ending: Ending,
    /// Number of ptrace stops the instrumentation caused.
    pub stops: u64,
    /// Counters of the target's threads (other than the first) and child processes, counted
    /// apart (inherited counters minus the target's own); not in the phases.
    #[serde(default)]
    pub children: Option<Snapshot>,
    /// The kernel's user/kernel split of the whole process's CPU time, in ns: exact in sum,
    /// tick-sampled in ratio (task-clock cannot be split on this kernel: it ignores
    /// exclude_user/exclude_kernel). None for runs shorter than one tick.
    #[serde(default)]
    pub user_kernel_ns: Option<(u64, u64)>,
    /// How the execve was launched and counted (None: a recording from before this was
    /// recorded, counted from enable-on-exec in a fork of ldcost).
    #[serde(default)]
    pub exec: Option<ExecAccount>,
    /// A sampled run's recording (or why sampling failed); saved apart, not in the JSON.
    #[serde(skip)]
    pub sampled: Option<Result<samples::Recording, String>>,
    /// Where the CPU-feature detection phase was cut in this run, or why it was not.
    #[serde(default)]
    pub cpu_features: Option<CpuFeatureCut>,
    /// Per-object runs: what each breakpoint stop, replayed once with no work between, cost
    /// the target (task-clock ns), in order; left out of the segments' counters. The per-stop
    /// correction of this run's segments ([`crate::trace::stopcost`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop_costs_ns: Vec<u64>,
    /// Traced runs: text pages not yet in the target's page table when ldcost first wrote a
    /// breakpoint into them. ldcost's write brought them in, so the target takes fewer
    /// first-touch faults than untraced (no perf event counts them for anyone). None for
    /// untraced runs, older recordings, or when `/proc/PID/pagemap` could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakpoint_pages: Option<u64>,
    /// Traced runs: the target's own CPU after its exit stop, in ns, by the scheduler
    /// (`/proc/PID/schedstat` at the exit stop and at the zombie, before it is reaped): its
    /// exit, whether its counters saw it or not. None as for `exit_uncounted_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_ns: Option<u64>,
    /// Traced runs: the target's CPU after its exit stop that its per-task counters did not
    /// count, in ns: its own thread's CPU by the scheduler (`/proc/PID/schedstat`) from the
    /// exit stop to its death (read at the zombie, before it is reaped) less the task-clock
    /// its counter added over the same span. That is the exit teardown on kernels whose
    /// `do_exit` stops a task's perf events before it frees the address space (6.18 here:
    /// ~40-130 µs for a trivial dynamic program), ~0 elsewhere. None for untraced runs, older
    /// recordings, a run whose death was not seen as a zombie, or without schedstat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_uncounted_ns: Option<u64>,
    /// How many times the target entered a group-stop (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU)
    /// and stayed stopped until SIGCONT, as it does untraced; the stopped time is in no
    /// phase's CPU, and in the wall time of the phase it stopped in. 0 (not written) when it
    /// never stopped, and in untraced runs, which are not watched.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub group_stops: u64,
    /// The loader after `main` (dlopen, dlclose, lazy binding): per-object runs only; None
    /// for other runs and older recordings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_main: Option<after_main::AfterMain>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Where a run's CPU-feature detection phase ([`Phase::CpuFeatures`]) was cut, or why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "how", content = "where")]
pub enum CpuFeatureCut {
    /// Between two breakpoints, named (`"ld.so init_cpu_features.constprop.0 entry to return"`).
    Cut(String),
    /// Not cut, though the program runs glibc's detection: why (no symbols, the breakpoint
    /// never reached).
    NotCut(String),
    /// Nothing to cut: no glibc CPU-feature code found (a static program of another libc or
    /// stripped).
    Absent(String),
}

impl Run {
    /// Sum of one phase's segments in this run (all objects), as (wall, counters).
    pub fn phase_sum(&self, phase: Phase) -> Option<(u64, Snapshot)> {
        let mut found = false;
        let mut wall = 0;
        let mut c = Snapshot::default();
        for s in self.segments.iter().filter(|s| s.phase == phase) {
            if found {
                c.add(&s.counters);
            } else {
                c = s.counters.clone();
            }
            found = true;
            wall += s.wall_ns;
        }
        found.then_some((wall, c))
    }
}

/// The machine a document was recorded on: `diff` refuses to compare documents from two
/// machines (unless `--force`), because their times are not comparable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// `uname -r`.
    pub kernel_release: String,
    /// The first "model name" of /proc/cpuinfo.
    pub cpu_model: String,
    /// gnu_get_libc_version() of the C library ldcost runs on (the system's glibc).
    pub glibc: String,
    /// FNV-1a 64 of the host name, in hex: tells two hosts apart without naming them.
    pub hostname_digest: String,
}

impl Machine {
    /// This machine. A figure that cannot be read is "unknown".
    pub fn current() -> Machine {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".into())
        };
        let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".into());
        // SAFETY: gnu_get_libc_version returns a pointer to a static NUL-terminated string.
        let glibc = unsafe {
            let p = nix::libc::gnu_get_libc_version();
            if p.is_null() {
                "unknown".to_string()
            } else {
                std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        Machine {
            kernel_release: read("/proc/sys/kernel/osrelease"),
            cpu_model,
            glibc,
            hostname_digest: hostname_digest(&read("/proc/sys/kernel/hostname")),
        }
    }

    /// What differs between two machines, one phrase per field ("kernel 6.1 vs 6.18").
    pub fn differences(&self, other: &Machine) -> Vec<String> {
        let mut out = Vec::new();
        let mut cmp = |what: &str, a: &str, b: &str| {
            if a != b {
                out.push(format!("{what} {a} vs {b}"));
            }
        };
        cmp("kernel", &self.kernel_release, &other.kernel_release);
        cmp("CPU", &self.cpu_model, &other.cpu_model);
        cmp("glibc", &self.glibc, &other.glibc);
        cmp("host digest", &self.hostname_digest, &other.hostname_digest);
        out
    }
}

/// FNV-1a, 64 bits, as 16 hex digits.
pub fn hostname_digest(name: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// One image of an exec chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecImage {
    /// The file as the execve that loaded it named it (AT_EXECFN; what `strace -e
    /// trace=execve` shows as its first argument).
    pub path: String,
    /// For a `#!` script: its interpreter line, as the script's first line has it after `#!`
    /// (`/usr/bin/env bash`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<String>,
    /// The executable the kernel loaded (/proc/PID/exe): the interpreter's for a script.
    pub exe: String,
}

/// The chain as the report's header names it: `./wrap (#!/bin/sh) → /usr/bin/env → /tmp/fx`
/// (a script's interpreter is the next image, or the measured one).
pub fn describe_chain(chain: &[ExecImage]) -> String {
    chain
        .iter()
        .map(|i| match &i.interpreter {
            Some(interp) => format!("{} (#!{interp})", i.path),
            None => i.path.clone(),
        })
        .collect::<Vec<_>>()
        .join(" → ")
}
