//! The `profile` command's pipeline: runs (interleaved per-object, coarse and uninstrumented),
//! glibc's own account (LD_DEBUG=statistics) from a separate run, the static prediction from
//! `deps`, and the aggregation into a [`ProfileSection`] of the JSON document.
//!
//! Why three kinds of run: per-object breakpoints cost ptrace stops, which show up in the
//! target's kernel time. The coarse runs have a handful of stops; the uninstrumented runs have
//! none and are the `perf stat`-style reference the phases must add up to (within 10%). The
//! report shows all three totals and the cost per stop, instead of silently subtracting.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::attribute::stats::{summarize, Summary};
use crate::perf::{machine_counting, Snapshot};
use crate::record::{Detail, Instrumentation, Phase, Run};
use crate::trace::follow::ExecImage;
use crate::trace::launch::{Command, Ending};
use crate::trace::startup::{run_once, run_uninstrumented, RunError, RunOptions};

mod aggregate;
pub mod cpu_features;
mod ld_debug;
pub mod phase_weighted;
mod sampled;

pub use aggregate::{aggregate, corrected, cpu_per_exec, left_out, lost, per_stop_ns, phase_cpu};
use ld_debug::ld_debug_statistics;
pub use ld_debug::parse_ld_debug;
pub(crate) use sampled::{sampled_runs, SampledRuns};

/// What `profile` was asked to do.
#[derive(Debug, Clone)]
pub struct ProfileConfig {
    pub command: Command,
    pub runs: usize,
    pub warmup: usize,
    pub timeout: Option<Duration>,
    pub debug_roots: Vec<PathBuf>,
    /// Also run without ptrace to measure the instrumentation's cost (default on).
    pub reference: bool,
    /// Gather LD_DEBUG=statistics in a separate run (default on).
    pub ld_debug: bool,
    /// Sampled runs for the category breakdown (separate from the measured runs).
    pub sample: Option<crate::perf::SamplerConfig>,
    pub sample_runs: usize,
    /// Show the target's output in every run (`--show-output`); otherwise only the first
    /// measured run's output is shown and the rest discarded (hyperfine's convention).
    pub show_output: bool,
    /// Follow the exec chain to the program that finally runs (off with `--no-follow`).
    pub follow: bool,
    /// The exec chain, once discovered ([`with_chain`]); `command.follow` is then its plan.
    pub chain: Option<Vec<ExecImage>>,
}

impl ProfileConfig {
    /// The command of every run but the first measured one: its output is not shown (unless
    /// `--show-output`) and its standard input is /dev/null, so the first measured run (whose
    /// output is shown) reads ldcost's standard input whole, however many runs come first.
    pub fn later_command(&self) -> Command {
        Command {
            quiet: self.command.quiet || !self.show_output,
            no_stdin: true,
            ..self.command.clone()
        }
    }
}

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

/// Runs of one kind left out of the statistics, and why ([`aggregate::lost`]).
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
    pub counters: BTreeMap<String, crate::perf::Availability>,
    /// Where each counted figure comes from, and, when perf refused to count the kernel's
    /// share (an unprivileged user), what is missing and the setting that would give it.
    pub counting: crate::perf::Counting,
    pub phases: Vec<PhaseStat>,
    pub total_task_clock_ns: Option<Summary>,
    pub total_wall_ns: Option<Summary>,
    pub overhead: Overhead,
    pub ld_debug: Option<LdDebugStatistics>,
    pub prediction: Option<Prediction>,
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
    pub folded: Vec<crate::attribute::FoldedStack>,
    /// Every run, raw.
    pub raw: Vec<Run>,
}

/// The configuration with its exec chain discovered (one run of its own, see
/// [`crate::trace::follow`]) and the runs' plan set, unless `--no-follow` or already done.
pub fn with_chain(cfg: &ProfileConfig) -> Result<ProfileConfig, RunError> {
    let mut out = cfg.clone();
    if cfg.follow && cfg.chain.is_none() {
        // Not a run of the document: its output is never shown (not even --show-output), and
        // it reads no input (the first measured run reads ldcost's).
        let quiet = Command {
            quiet: true,
            no_stdin: true,
            ..cfg.command.clone()
        };
        let chain = crate::trace::follow::discover(&quiet, cfg.timeout)?;
        out.command.follow = crate::trace::follow::plan(&chain);
        out.chain = Some(chain);
    }
    Ok(out)
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

/// Runs everything and aggregates (following the exec chain first, unless `--no-follow`).
pub fn profile(cfg: &ProfileConfig) -> Result<ProfileSection, RunError> {
    let cfg = &with_chain(cfg)?;
    let per_obj = RunOptions {
        instrumentation: Instrumentation::PerObject,
        timeout: cfg.timeout,
        debug_roots: cfg.debug_roots.clone(),
        sample: None,
    };
    let coarse = RunOptions {
        instrumentation: Instrumentation::Coarse,
        ..per_obj.clone()
    };
    let later = cfg.later_command();
    let bar = run_bar(cfg);
    // Each run: its kind on the bar, the bar cleared while the target's output is shown.
    let step = |what: String, cmd: &Command, f: &mut dyn FnMut() -> Result<Run, RunError>| {
        bar.step(what);
        let r = bar.around(!cmd.quiet, f);
        bar.inc();
        r
    };
    let mut detail = Detail::Static;
    let runs = cfg.runs.max(1);
    for w in 0..cfg.warmup {
        interrupted()?;
        let what = format!("warm-up {}/{}", w + 1, cfg.warmup);
        step(what, &later, &mut || {
            let (r, d) = run_once(&later, &coarse)?;
            detail = d;
            Ok(r)
        })?;
    }
    let mut raw = Vec::new();
    for i in 0..runs {
        interrupted()?;
        // The target's output is shown once: the first measured run's.
        let first = if i == 0 { &cfg.command } else { &later };
        let r = step(format!("measured {}/{runs}", i + 1), first, &mut || {
            let (r, d) = run_once(first, &per_obj)?;
            detail = d;
            Ok(r)
        })?;
        raw.push(r);
        if cfg.reference {
            interrupted()?;
            let what = format!("reference {}/{runs} (boundaries)", i + 1);
            raw.push(step(
                what,
                &later,
                &mut || Ok(run_once(&later, &coarse)?.0),
            )?);
            interrupted()?;
            let what = format!("reference {}/{runs} (no ptrace)", i + 1);
            raw.push(step(what, &later, &mut || {
                run_uninstrumented(&later, cfg.timeout)
            })?);
        }
        // A measured run past --timeout ends the measurement (the next would time out too);
        // a reference run past it is left out and counted (aggregate::lost).
        let measured_timed_out = raw.iter().any(|r| {
            r.ending == Ending::TimedOut && r.instrumentation == Instrumentation::PerObject
        });
        if crate::trace::interrupted() || measured_timed_out {
            break;
        }
    }
    let ld_debug = if cfg.ld_debug && detail != Detail::Static {
        bar.step("LD_DEBUG=statistics");
        let s = ld_debug_statistics(&cfg.command, cfg.timeout);
        bar.inc();
        s
    } else {
        None
    };
    let (counting, _) = machine_counting();
    let counters = counter_support();
    // CPU per exec without ptrace (the target, its threads and children, and the exit teardown
    // no counter sees): what the sampled shares are scaled to.
    let cpu = cpu_per_exec(&raw);
    let mut section = aggregate(cfg, detail, raw, ld_debug, counters);
    section.counting = counting;
    section.followed = cfg.chain.clone().unwrap_or_default();
    section.pinned_cpu = Some(crate::trace::pin::cpu());
    if let Some(sc) = &cfg.sample {
        let measured = summarize(&cpu)
            .or(section.total_task_clock_ns.clone())
            .map(|s| s.median);
        // The sampled runs carry the measured runs' per-object boundaries, so every sample
        // falls in the same phases (and objects) as the phase table's.
        match sampled_runs(cfg, sc, &per_obj, measured, &section.raw, &bar) {
            Ok((b, f, w)) => {
                section.breakdown = Some(b);
                section.folded = f;
                section.breakdown_weights = w;
            }
            Err(e) => section.breakdown_error = Some(e),
        }
    }
    let vm = crate::trace::startup::virtual_machine();
    section.cpu_features_note = cpu_features::note(&section, vm.as_deref());
    Ok(section)
}

/// `profile`'s bar: every run it will start (warm-up, measured, reference, LD_DEBUG, sampled).
fn run_bar(cfg: &ProfileConfig) -> crate::progress::Bar {
    let per_round = if cfg.reference { 3 } else { 1 };
    let sampled = if cfg.sample.is_some() {
        cfg.sample_runs.max(1)
    } else {
        0
    };
    let total = cfg.warmup + cfg.runs.max(1) * per_round + usize::from(cfg.ld_debug) + sampled;
    crate::progress::Bar::new("ldcost profile", total as u64, "runs")
}

/// Stops between runs once ldcost has been asked to (profile's and compare's run loops).
pub(crate) fn interrupted() -> Result<(), RunError> {
    if crate::trace::interrupted() {
        Err(RunError::Trace(
            crate::trace::launch::TraceError::Interrupted,
        ))
    } else {
        Ok(())
    }
}

/// What this machine can count, by perf's event name: "available" (from perf, or from /proc
/// for an unprivileged user) or why not (the document's `counters`).
pub fn counter_support() -> BTreeMap<String, crate::perf::Availability> {
    machine_counting()
        .1
        .into_iter()
        .map(|(c, a)| (c.perf_name().to_string(), a))
        .collect()
}

/// Finds `name` in $PATH like execvp (a name with a slash is used as is).
pub fn which(name: &Path) -> PathBuf {
    if name.as_os_str().to_string_lossy().contains('/') {
        return name.to_path_buf();
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&paths) {
            let p = d.join(name);
            if p.is_file() {
                return p;
            }
        }
    }
    name.to_path_buf()
}

#[cfg(test)]
pub(crate) mod tests;
