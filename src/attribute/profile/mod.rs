//! The `profile` section's analysis: recorded runs into phase statistics, the cost of the
//! instrumentation, the runs left out and why, the sampled shares weighted by phase, the CPU
//! feature note. Pure: it reads recorded runs ([`crate::record`]) only, so every figure can be
//! recomputed from a saved recording without the target; the `profile` driver runs the target
//! and hands its recording here.

use std::collections::BTreeMap;
use std::path::Path;

use crate::attribute::stats::Summary;
use crate::attribute::FoldedStack;
use crate::record::counters::Availability;
use crate::record::counting::Counting;
use crate::record::{Detail, Ending, ExecImage, Instrumentation, Phase, Run};

mod aggregate;
pub mod cpu_features;
pub mod phase_weighted;
pub mod residue;

pub(crate) use aggregate::ns;
pub use aggregate::{aggregate, corrected, cpu_per_exec, left_out, lost, per_stop_ns, phase_cpu};

/// One phase (and object) over the runs.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseStat {
    pub phase: Phase,
    pub object: Option<String>,
    /// CPU time of the target in this phase (task-clock), nanoseconds, minus the measured
    /// cost of the ptrace stops charged to it ([`Overhead::ns_per_stop`]).
    pub task_clock_ns: Option<Summary>,
    /// The same before that correction.
    pub task_clock_raw_ns: Option<Summary>,
    pub wall_ns: Option<Summary>,
    pub page_faults: Option<Summary>,
    /// Median share of the run's total task-clock.
    pub share: f64,
    /// The phase is over 5% of the total and its CPU interval is wider than ±3% of its
    /// median ([`PhaseStat::interval_is_wide`]); false in documents written before it existed.
    pub wide_interval: bool,
}

impl PhaseStat {
    /// Phases at or under this share are never flagged.
    pub const WIDE_MIN_SHARE: f64 = 0.05;
    /// How far from the median (either end of the 95% interval) before a phase is flagged.
    pub const WIDE_HALF_WIDTH: f64 = 0.03;

    /// Whether the report flags this phase: over 5% of the total, and its 95% interval of the
    /// CPU time reaches more than 3% below or above its median (more runs narrow it).
    pub fn interval_is_wide(&self) -> bool {
        let Some(s) = &self.task_clock_ns else {
            return false;
        };
        let (m, h) = (s.median, Self::WIDE_HALF_WIDTH);
        self.share > Self::WIDE_MIN_SHARE
            && m > 0.0
            && (s.ci95.0 < m * (1.0 - h) || s.ci95.1 > m * (1.0 + h))
    }
}

/// Runs of one kind left out of the statistics, and why ([`lost`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    pub instrumentation: Instrumentation,
    /// "killed by SIGKILL" or "timed out".
    pub why: String,
    pub count: usize,
    /// How many runs of that kind there were.
    pub of: usize,
}

impl LeftOut {
    /// "2 of 5 uninstrumented runs timed out: left out".
    pub fn describe(&self) -> String {
        let kind = match self.instrumentation {
            Instrumentation::None => "uninstrumented",
            Instrumentation::Coarse => "boundaries-only",
            Instrumentation::PerObject => "measured",
            Instrumentation::PerObjectBindNow => "LD_BIND_NOW=1",
        };
        let s = if self.of == 1 { "" } else { "s" };
        format!(
            "{} of {} {kind} run{s} {}: left out",
            self.count, self.of, self.why
        )
    }
}

/// glibc's own account of the same start-up.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LdDebugStatistics {
    pub startup_cycles: Option<u64>,
    pub relocation_cycles: Option<u64>,
    pub load_cycles: Option<u64>,
    pub relocations: Option<u64>,
    pub relocations_from_cache: Option<u64>,
    pub relative_relocations: Option<u64>,
    pub final_relocations: Option<u64>,
    /// Successful symbol bindings per referencing object during start-up (LD_DEBUG=bindings
    /// lines before the first "calling init"): the lookups glibc performed for that object,
    /// less cache hits and failed weak lookups, plus ld.so's own (vDSO, malloc) lookups.
    pub bindings: BTreeMap<String, u64>,
}

pub use crate::attribute::link_cost::Prediction;

/// The instrumentation's cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Overhead {
    pub uninstrumented_ns: Option<Summary>,
    pub coarse_ns: Option<Summary>,
    pub per_object_ns: Option<Summary>,
    pub per_object_stops: f64,
    /// CPU cost of one ptrace stop to the target, as the per-object runs are corrected: the
    /// median over runs of each run's own figure (its replayed stops, bounded by its cheapest
    /// segment per stop: [`per_stop_ns`]).
    pub ns_per_stop: Option<f64>,
    /// The slope of total task-clock against stops across all runs (least squares): shown for
    /// comparison, applied only to recordings without replayed stops.
    pub ns_per_stop_slope: Option<f64>,
    /// What each stop after `main` cost the target beyond its replay, taken out of the windows
    /// after `main` and the main-to-exit segment ([`residue`]); None when the runs do not
    /// resolve it (nothing taken out).
    pub residue: Option<residue::Residue>,
    /// Sum of the corrected per-object phases / uninstrumented total (1.0 = agreement).
    pub agreement: Option<f64>,
    /// Sum of the phases before correction / uninstrumented total.
    pub agreement_raw: Option<f64>,
    /// Boundaries-only runs (a few stops, no correction) / uninstrumented total.
    pub agreement_coarse: Option<f64>,
}

/// The `profile` section of the JSON document.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileSection {
    pub argv: Vec<String>,
    pub detail: Detail,
    pub runs: usize,
    pub warmup: usize,
    /// Counter -> `"available"` or `{"unavailable": why}`.
    pub counters: BTreeMap<String, Availability>,
    /// Where each counted figure comes from, and, when perf refused to count the kernel's
    /// share (an unprivileged user), what is missing and the setting that would give it.
    pub counting: Counting,
    pub phases: Vec<PhaseStat>,
    pub total_task_clock_ns: Option<Summary>,
    pub total_wall_ns: Option<Summary>,
    pub overhead: Overhead,
    pub ld_debug: Option<LdDebugStatistics>,
    pub prediction: Option<Prediction>,
    /// The loader after `main`: the objects `dlopen` loaded, the calls, lazy binding, and
    /// ld.so's CPU after `main` ([`crate::attribute::after_main`]), or why not measured.
    pub after_main: crate::attribute::after_main::AfterMainSection,
    /// How the measured runs ended (the target's exit status or signal).
    pub endings: Vec<Ending>,
    /// Runs left out of the statistics because they did not end as the program ends them
    /// (killed by SIGKILL, or a reference run by `--timeout`), by kind and reason; empty when
    /// every run counts.
    pub left_out: Vec<LeftOut>,
    /// CPU time of threads and child processes, counted apart (median over runs).
    pub children_task_clock_ns: Option<Summary>,
    /// The target's exit teardown that its per-task counters do not see (median over the
    /// measured runs of [`crate::record::Run::exit_uncounted_ns`]): in the CPU per exec the
    /// category shares are scaled to, not in the phases. None when no run measured it.
    pub exit_uncounted_ns: Option<Summary>,
    /// The kernel's tick-sampled user and kernel CPU time of the whole process (medians).
    pub user_ns: Option<Summary>,
    pub kernel_ns: Option<Summary>,
    /// The sampled runs' category breakdown, or why there is none.
    pub breakdown: Option<crate::attribute::breakdown::Breakdown>,
    pub breakdown_error: Option<String>,
    /// The strata the breakdown's shares are weighted by: each phase's CPU in the measured
    /// runs and where its composition came from ([`phase_weighted`]); empty when the shares
    /// are pooled (no breakdown, or a document written before the weighting).
    pub breakdown_weights: Vec<phase_weighted::PhaseWeight>,
    /// CPU feature detection: its phase and category when significant, why its phase was not
    /// cut, and on a virtual machine that each `cpuid` is a hypervisor exit
    /// ([`cpu_features::note`]).
    pub cpu_features_note: Option<String>,
    /// The exec chain followed to the measured program: the target as given first, the
    /// measured image last (one image when the target execs nothing); empty with
    /// `--no-follow`.
    pub followed: Vec<ExecImage>,
    /// The CPU the exec runs' tracer and target shared ([`crate::trace::pin`]): `Some(Some(n))`,
    /// written as `n`; `Some(None)`, written as `null`, when they were not pinned (`--no-pin`,
    /// or the kernel refused the mask); `None` in documents written before the field existed
    /// (not written back).
    pub pinned_cpu: Option<Option<usize>>,
    /// The sampled stacks, for --folded/--flamegraph (not in the JSON).
    pub folded: Vec<FoldedStack>,
    /// Every run, raw.
    pub raw: Vec<Run>,
}

impl ProfileSection {
    /// The executable that was measured when an exec chain was followed (the final image's,
    /// as /proc/PID/exe names it, which is also the name of its per-object rows), which `deps`
    /// and the cross-checks must describe; `None` when nothing was followed (one image, or
    /// `--no-follow`): the target as given is what ran.
    pub fn measured_exe(&self) -> Option<&Path> {
        match self.followed.as_slice() {
            [_, .., last] => Some(Path::new(&last.exe)),
            _ => None,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
