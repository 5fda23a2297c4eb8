//! Where a profile's counted figures come from: perf's own counters, or, for an unprivileged
//! user, the kernel's per-task accounts in /proc (the `perf` module chooses and documents
//! why). Plain data, so a report can be written from a saved recording.

use std::collections::BTreeMap;

/// Where the values of one counter come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// perf_event_open counting user and kernel mode.
    Perf,
    /// perf_event_open with `exclude_kernel`: user mode only.
    PerfUserMode,
    /// `/proc/PID/task/PID/schedstat`: the thread's run time in ns.
    ProcSchedstat,
    /// `/proc/PID/task/PID/stat`: `min_flt` and `maj_flt`.
    ProcStat,
}

impl Source {
    /// How the report names it.
    pub fn describe(self) -> &'static str {
        match self {
            Source::Perf => "perf (user and kernel mode)",
            Source::PerfUserMode => "perf, user mode only (exclude_kernel)",
            Source::ProcSchedstat => {
                "/proc/PID/task/PID/schedstat (the thread's exact run time, read at each ptrace stop)"
            }
            Source::ProcStat => "/proc/PID/task/PID/stat (minflt + majflt, read at each ptrace stop)",
        }
    }
}

/// Why perf may not count the kernel's share, and what is therefore missing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fallback {
    /// `kernel.perf_event_paranoid`, if readable.
    pub paranoid: Option<i32>,
    /// The errno of the refusal ("EACCES", "EPERM", "ENOSYS").
    pub refusal: String,
    /// The figures that are not available, in words.
    pub missing: Vec<String>,
    /// The setting that would give them.
    pub fix: String,
}

/// Where a profile's figures come from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counting {
    /// perf's event name -> source, for the counters that are counted.
    pub sources: BTreeMap<String, Source>,
    /// Set when perf refused to count the kernel's share and the figures come from /proc.
    pub fallback: Option<Fallback>,
}

impl Counting {
    /// The header lines of a report: where CPU time and faults come from and, in the
    /// fallback, what is not available and which setting would give it. Empty when every
    /// figure is perf's own.
    pub fn header_lines(&self) -> Vec<String> {
        let Some(f) = &self.fallback else {
            return Vec::new();
        };
        let mut by_source: BTreeMap<&'static str, Vec<&str>> = BTreeMap::new();
        for (name, src) in &self.sources {
            by_source
                .entry(src.describe())
                .or_default()
                .push(name.as_str());
        }
        let sources: Vec<String> = by_source
            .into_iter()
            .map(|(src, names)| format!("{} from {src}", names.join(", ")))
            .collect();
        vec![
            format!(
                "counting: unprivileged (perf_event_open refused the kernel's share: {}); {}",
                f.refusal,
                sources.join("; ")
            ),
            format!(
                "not available unprivileged: {}; {}",
                f.missing.join(", "),
                f.fix
            ),
        ]
    }

    /// How the CPU time is measured, for the report's "figures:" line.
    pub fn cpu_source(&self) -> &'static str {
        match self.sources.get("task-clock") {
            Some(Source::ProcSchedstat) => "(run time from /proc/PID/task/PID/schedstat)",
            _ => "(task-clock)",
        }
    }
}
