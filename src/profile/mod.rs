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

use crate::attribute::stats::summarize;
use crate::perf::machine_counting;
use crate::record::{Detail, Instrumentation, Run};
use crate::trace::follow::ExecImage;
use crate::trace::launch::{Command, Ending};
use crate::trace::startup::{run_once, run_uninstrumented, RunError, RunOptions};

mod ld_debug;
mod sampled;

pub use crate::attribute::profile::{
    aggregate, cpu_features, cpu_per_exec, lost, phase_weighted, LdDebugStatistics, LeftOut,
    Overhead, PhaseStat, ProfileSection,
};
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
    /// `--bind-now-runs`: per-object runs with LD_BIND_NOW=1 that price `-z now` (default 0:
    /// each is one more run of the target, which a user counting runs does not expect).
    pub bind_now_runs: usize,
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
    /// The target's command line as the document writes it (`argv`).
    pub fn argv(&self) -> Vec<String> {
        let mut argv = vec![self.command.program.display().to_string()];
        argv.extend(
            self.command
                .args
                .iter()
                .map(|a| a.to_string_lossy().into_owned()),
        );
        argv
    }

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
    let bind_now = RunOptions {
        instrumentation: Instrumentation::PerObjectBindNow,
        ..per_obj.clone()
    };
    let later = cfg.later_command();
    let later_bind_now = Command {
        env: [later.env.clone(), vec![("LD_BIND_NOW".into(), "1".into())]].concat(),
        ..later.clone()
    };
    let bind_now_runs = bind_now_runs(cfg);
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
        let exited = matches!(r.ending, Ending::Exited(_));
        raw.push(r);
        // Only where the relocation of each object is cut (ld.so's debug symbols), and only
        // after a measured run that ended by itself: a target killed from outside or past
        // --timeout is not run once more for a price.
        if i < bind_now_runs && exited && matches!(detail, Detail::DebugSymbols { .. }) {
            interrupted()?;
            let what = format!("LD_BIND_NOW=1 {}/{bind_now_runs}", i + 1);
            raw.push(step(what, &later_bind_now, &mut || {
                Ok(run_once(&later_bind_now, &bind_now)?.0)
            })?);
        }
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
    let mut section = aggregate(cfg.argv(), cfg.warmup, detail, raw, ld_debug, counters);
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
    let total = cfg.warmup
        + cfg.runs.max(1) * per_round
        + bind_now_runs(cfg)
        + usize::from(cfg.ld_debug)
        + sampled;
    crate::progress::Bar::new("ldcost profile", total as u64, "runs")
}

/// Per-object runs with LD_BIND_NOW=1 (`--bind-now-runs`, at most [`BIND_NOW_RUNS`], one
/// after each of the first measured runs): what binding the lazy PLT slots at start-up costs this program, the
/// `-z now` fix's price. None when the target's environment binds now already.
fn bind_now_runs(cfg: &ProfileConfig) -> usize {
    let set = |v: &str| !v.is_empty();
    let already = cfg
        .command
        .env
        .iter()
        .any(|(k, v)| k == "LD_BIND_NOW" && set(v))
        || (!cfg.command.env_remove.iter().any(|k| k == "LD_BIND_NOW")
            && std::env::var("LD_BIND_NOW").is_ok_and(|v| set(&v)));
    if already {
        0
    } else {
        cfg.bind_now_runs.min(cfg.runs).min(BIND_NOW_RUNS)
    }
}

/// At most this many LD_BIND_NOW=1 runs: the price is a difference of medians, and each run
/// costs as much as a measured one.
pub const BIND_NOW_RUNS: usize = 5;

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
