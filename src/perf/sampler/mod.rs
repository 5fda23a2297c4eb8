//! The sampling half of the `perf` stage: call chains of one process tree, sampled on every
//! CPU, saved as a [`Recording`] that can be replayed and symbolized without root.
//!
//! In: a [`SamplerConfig`] and the pid of the tree's root (normally a child blocked before its
//! `exec`, so nothing of the target is missed). Out: a [`Recording`] of the samples, forks,
//! exits, execs and executable mappings of the root and of every descendant it forks while
//! the sampler runs, and [`symbolize()`] to turn its frames into names.
//!
//! # Why system-wide, and how the tree is kept
//!
//! A child's perf events are detached in `do_exit()` before its address space is torn down
//! (DESIGN.md, "What we measured"): per-task sampling, even with `inherit`, never sees a
//! child's `exit_mmap`, the largest single slice of a fork-heavy loop. So the default scope,
//! [`Scope::SystemWide`], opens one event per online CPU for every task (`pid = -1`, which
//! needs root, CAP_PERFMON or `perf_event_paranoid <= 0`) and keeps only the samples of the
//! tree: the root, plus every task whose `PERF_RECORD_FORK` names a tree member as its
//! parent (threads have `pid == ppid` and are members already). Members stay members after
//! they exit, because the samples of their teardown still carry their pid. The records of the
//! CPUs arrive in separate ring buffers, so a child's first sample can be read before the
//! fork that made it a member: records of unknown pids wait one drain round before they are
//! dropped, and every round is processed in time order (`collect.rs`).
//!
//! [`Scope::PerTask`] is what `perf record -p` does: one event per CPU for the root with
//! `inherit` (the kernel refuses `mmap` of an inherited event opened with `cpu = -1`). It
//! needs less privilege and cannot see exit teardown; [`Recording::notes`] says so.
//!
//! # What the kernel is asked for
//!
//! `perf_event_open` through perf-event2's `Builder` (it has every attribute needed) and its
//! ring buffer; records are parsed by perf-event-data (re-exported as `perf_event::data`),
//! except the 24-byte `sample_id` trailer of non-sample records (pid, tid, time, cpu), which
//! perf-event2's `Record::parse_record` parses but does not return: we read it by hand
//! (`collect::trailer`). Settings: hardware cycles where the PMU has them, else cpu-clock
//! (these VMs have no PMU); frequency mode; sample type IP | TID | TIME | CPU | PERIOD |
//! CALLCHAIN with user and kernel chains (`sample_max_stack` = [`SamplerConfig::callchain_max`]);
//! MMAP2, COMM (with the exec flag) and FORK/EXIT records with `sample_id_all`; idle
//! excluded; and `clockid = CLOCK_MONOTONIC`, so every time in a [`Recording`] is comparable
//! with `clock_gettime(CLOCK_MONOTONIC)` in the target.
//!
//! cpu-clock in frequency mode is really a fixed period: the kernel turns `sample_freq` into
//! `NSEC_PER_SEC / freq` for hrtimer events (`perf_swevent_init_hrtimer`), so each cpu-clock
//! sample stands for exactly its period in nanoseconds ([`Sample::weight_ns`]).
//!
//! # Draining
//!
//! A thread owned by the [`Sampler`] reads every ring buffer each
//! [`SamplerConfig::drain_interval`] (an empty ring buffer costs two loads); callers may also
//! call [`Sampler::drain`]. It polls on a timer rather than `poll(2)`-ing the fds because a
//! timer needs no extra dependency and bounds the latency of the tree bookkeeping too. With
//! the default 512 pages (2 MiB) per CPU and a 10 ms interval, a ring overflows only above
//! about 200 MB/s of records per CPU; lost records are counted in [`Recording::lost`].

mod collect;
mod maps;
mod open;

use std::io;
use std::time::Duration;

use nix::errno::Errno;

pub use crate::symbolize::samples::{symbolize, Frame, FrameKind, SymbolizedStack, Symbolizer};
pub use maps::{parse_proc_maps, read_proc_maps, MapRange};
pub use open::Sampler;

use super::error::Refusal;
use super::{paranoid_hint, read_paranoid_level};
pub use crate::record::samples::{MmapEvent, Recording, Sample, Scope, TaskEvent, TaskKind};

/// How to sample. `Default` is 1000 Hz, system-wide, 127 frames, 512 pages per CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplerConfig {
    /// Samples per second of CPU time (at most `kernel.perf_event_max_sample_rate`).
    pub frequency_hz: u64,
    pub scope: Scope,
    /// The deepest call chain kept (kernel and user frames together; at most
    /// `kernel.perf_event_max_stack`, 127 by default).
    pub callchain_max: u16,
    /// Ring buffer size per CPU in pages (rounded up to a power of two). Halved until the
    /// kernel accepts it when `perf_event_mlock_kb` is too small for an unprivileged user.
    pub buffer_pages: usize,
    /// How often the background thread reads the ring buffers.
    pub drain_interval: Duration,
    /// Use hardware cycles when the PMU has them (else, and when false, cpu-clock).
    pub prefer_cycles: bool,
    /// Stop sampling (disable the events) this long after [`Sampler::start`]; what is
    /// recorded stays, and [`Recording::stopped`] says why. None: no deadline.
    pub deadline: Option<Duration>,
    /// The memory sampling may use, in bytes: the ring buffers (shrunk to at most half of
    /// it) and the records kept. When the kept records reach it, sampling stops and the
    /// samples still read are counted in [`Recording::dropped_budget`]. None: no budget.
    pub budget_bytes: Option<u64>,
}

impl Default for SamplerConfig {
    fn default() -> Self {
        SamplerConfig {
            frequency_hz: 1000,
            scope: Scope::SystemWide,
            callchain_max: 127,
            buffer_pages: 512,
            drain_interval: Duration::from_millis(10),
            prefer_cycles: true,
            deadline: None,
            budget_bytes: None,
        }
    }
}

impl Recording {
    /// About how many bytes the kept records take in memory (what the budget counts).
    pub fn approx_bytes(&self) -> u64 {
        let samples: u64 = self.samples.iter().map(collect::sample_bytes).sum();
        samples
            + (self.tasks.len() * std::mem::size_of::<TaskEvent>()) as u64
            + self
                .mmaps
                .iter()
                .map(|m| (std::mem::size_of::<MmapEvent>() + m.path.len()) as u64)
                .sum::<u64>()
    }
}

/// Errors of the sampler.
#[derive(Debug, thiserror::Error)]
pub enum SamplerError {
    /// EACCES/EPERM opening an event for all tasks of a CPU.
    #[error(
        "system-wide sampling was refused (perf_event_open for all tasks on CPU {cpu}: \
         {errno:?}); without it the exit teardown of the target's processes (exit_mmap) is \
         not visible"
    )]
    SystemWideDenied {
        cpu: u32,
        errno: Errno,
        paranoid: Option<i32>,
        privileged: bool,
    },
    /// EACCES/EPERM opening a per-task event, even for user mode only.
    #[error("the kernel refused to sample process {pid} (perf_event_open: {:?})", refusal.errno)]
    Denied { pid: i32, refusal: Refusal },
    #[error("perf_event_open is not available on this system (ENOSYS)")]
    NoPerfEvents,
    #[error("cannot sample process {pid}: it does not exist (perf_event_open: ESRCH)")]
    NoSuchProcess { pid: i32 },
    #[error("cannot open the {event} sampling event on CPU {cpu}: {source}")]
    Open {
        event: String,
        cpu: u32,
        #[source]
        source: io::Error,
    },
    #[error("cannot map the ring buffer of CPU {cpu} ({pages} pages): {source}")]
    RingBuffer {
        cpu: u32,
        pages: usize,
        #[source]
        source: io::Error,
    },
    #[error("cannot list the online CPUs ({path}): {source}")]
    Cpus {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("cannot {action} the sampling event of CPU {cpu}: {source}")]
    Control {
        action: &'static str,
        cpu: u32,
        #[source]
        source: io::Error,
    },
    #[error("the ring-buffer drain thread panicked; the recording is lost")]
    DrainThread,
}

impl SamplerError {
    /// Whether the kernel refused for lack of privilege (the caller may fall back to
    /// [`Scope::PerTask`]).
    pub fn is_denied(&self) -> bool {
        matches!(
            self,
            SamplerError::SystemWideDenied { .. } | SamplerError::Denied { .. }
        )
    }

    /// What the user can do about it, shown on the line after the error.
    pub fn hint(&self) -> Option<String> {
        match self {
            SamplerError::SystemWideDenied {
                paranoid,
                privileged,
                ..
            } => Some(system_wide_hint(*paranoid, *privileged)),
            SamplerError::Denied { refusal, .. } => Some(refusal.hint()),
            SamplerError::NoPerfEvents => Some(paranoid_hint(Errno::ENOSYS, None, false)),
            SamplerError::NoSuchProcess { .. } => Some(
                "start the sampler while the target is stopped (before its exec), not after it \
                 exited"
                    .into(),
            ),
            SamplerError::RingBuffer { .. } => Some(
                "raise `kernel.perf_event_mlock_kb` or run as root, or ask for fewer \
                 buffer pages"
                    .into(),
            ),
            SamplerError::Open { .. } => Some(format!(
                "compare with `perf record -a -g -F 1000 true`; perf_event_paranoid is {}",
                read_paranoid_level().map_or("unknown".into(), |l| l.to_string())
            )),
            SamplerError::Cpus { .. }
            | SamplerError::Control { .. }
            | SamplerError::DrainThread => None,
        }
    }

    /// Classifies a failed `perf_event_open`.
    fn from_open(scope: Scope, pid: i32, cpu: u32, event: &str, source: io::Error) -> Self {
        if let Some(r) = Refusal::of(&source) {
            return match scope {
                Scope::SystemWide => SamplerError::SystemWideDenied {
                    cpu,
                    errno: r.errno,
                    paranoid: r.paranoid,
                    privileged: r.privileged,
                },
                Scope::PerTask => SamplerError::Denied { pid, refusal: r },
            };
        }
        match source.raw_os_error().map(Errno::from_raw) {
            Some(Errno::ENOSYS) => SamplerError::NoPerfEvents,
            Some(Errno::ESRCH) => SamplerError::NoSuchProcess { pid },
            _ => SamplerError::Open {
                event: event.to_string(),
                cpu,
                source,
            },
        }
    }
}

/// The hint for a refused system-wide event: which setting, and what the fallback loses.
pub fn system_wide_hint(paranoid: Option<i32>, privileged: bool) -> String {
    const LOSS: &str = "otherwise use per-task sampling, which does not see the exit \
         teardown (measure it from timestamps instead)";
    if privileged {
        return format!(
            "we have CAP_PERFMON/CAP_SYS_ADMIN, so the refusal comes from a container's \
             seccomp profile or an LSM policy (docker: `--security-opt seccomp=unconfined`); \
             {LOSS}"
        );
    }
    let level = paranoid.map_or_else(|| "unknown".to_string(), |l| l.to_string());
    format!(
        "sampling every task of a CPU needs root, CAP_PERFMON or kernel.perf_event_paranoid \
         <= 0 (it is {level}): run as root or `sudo sysctl kernel.perf_event_paranoid=0`; {LOSS}"
    )
}

/// The note a report prints for a per-task recording.
pub const PER_TASK_NOTE: &str = "per-task sampling: the exit teardown of the target's \
     processes (exit_mmap, page-table freeing) is not visible, because the kernel detaches a \
     task's events before tearing down its address space";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_wide_refusal_names_the_setting_and_the_loss() {
        let e = SamplerError::SystemWideDenied {
            cpu: 0,
            errno: Errno::EACCES,
            paranoid: Some(2),
            privileged: false,
        };
        let msg = e.to_string();
        assert!(msg.contains("EACCES") && msg.contains("exit_mmap"), "{msg}");
        let h = e.hint().unwrap();
        assert!(
            h.contains("(it is 2)") && h.contains("perf_event_paranoid=0"),
            "{h}"
        );
        assert!(h.contains("per-task"), "{h}");
        assert!(e.is_denied());
        let h = system_wide_hint(Some(-1), true);
        assert!(h.contains("seccomp") && !h.contains("sysctl"), "{h}");
    }

    #[test]
    fn open_errors_are_classified() {
        let io = |e: Errno| io::Error::from_raw_os_error(e as i32);
        assert!(matches!(
            SamplerError::from_open(Scope::SystemWide, 5, 1, "cpu-clock", io(Errno::EPERM)),
            SamplerError::SystemWideDenied { cpu: 1, .. }
        ));
        assert!(matches!(
            SamplerError::from_open(Scope::PerTask, 5, 1, "cpu-clock", io(Errno::EACCES)),
            SamplerError::Denied { pid: 5, .. }
        ));
        assert!(matches!(
            SamplerError::from_open(Scope::PerTask, 5, 0, "cpu-clock", io(Errno::ESRCH)),
            SamplerError::NoSuchProcess { pid: 5 }
        ));
        let e = SamplerError::from_open(Scope::PerTask, 5, 0, "cpu-clock", io(Errno::EINVAL));
        assert!(matches!(e, SamplerError::Open { .. }) && !e.is_denied());
    }

    #[test]
    fn tree_pids_come_from_forks_and_start_maps() {
        let mut r = Recording::empty(10, Scope::SystemWide, 1000, "cpu-clock");
        r.maps_at_start.insert(12, Vec::new());
        for (kind, pid) in [
            (TaskKind::Fork, 11),
            (TaskKind::Exit, 99),
            (TaskKind::Fork, 11),
        ] {
            r.tasks.push(TaskEvent {
                time_ns: 1,
                kind,
                pid,
                tid: pid,
                ppid: Some(10),
                ptid: Some(10),
                comm: None,
            });
        }
        assert_eq!(r.tree_pids(), vec![10, 11, 12]);
    }
}
