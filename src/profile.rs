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

use serde::{Deserialize, Serialize};

use crate::attribute::stats::{summarize, Summary};
use crate::perf::{machine_support, Snapshot};
use crate::record::{Detail, Instrumentation, Phase, Run};
use crate::trace::launch::{Command, Ending};
use crate::trace::startup::{run_once, run_uninstrumented, RunError, RunOptions};

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
}

/// One phase (and object) over the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// glibc's own account of the same start-up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    #[serde(default)]
    pub bindings: BTreeMap<String, u64>,
}

pub use crate::attribute::link_cost::Prediction;

/// The instrumentation's cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    pub uninstrumented_ns: Option<Summary>,
    pub coarse_ns: Option<Summary>,
    pub per_object_ns: Option<Summary>,
    pub per_object_stops: f64,
    /// CPU cost of one ptrace stop to the target: slope of total task-clock against the
    /// number of stops over all runs (least squares).
    pub ns_per_stop: Option<f64>,
    /// Sum of the corrected per-object phases / uninstrumented total (1.0 = agreement).
    pub agreement: Option<f64>,
    /// Sum of the phases before correction / uninstrumented total.
    pub agreement_raw: Option<f64>,
    /// Boundaries-only runs (a few stops, no correction) / uninstrumented total.
    pub agreement_coarse: Option<f64>,
}

/// The `profile` section of the JSON document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileSection {
    pub argv: Vec<String>,
    pub detail: Detail,
    pub runs: usize,
    pub warmup: usize,
    /// Counter -> "available" or why not.
    pub counters: BTreeMap<String, String>,
    pub phases: Vec<PhaseStat>,
    pub total_task_clock_ns: Option<Summary>,
    pub total_wall_ns: Option<Summary>,
    pub overhead: Overhead,
    pub ld_debug: Option<LdDebugStatistics>,
    pub prediction: Option<Prediction>,
    /// How the measured runs ended (the target's exit status or signal).
    pub endings: Vec<Ending>,
    /// CPU time of threads and child processes, counted apart (median over runs).
    pub children_task_clock_ns: Option<Summary>,
    /// The kernel's tick-sampled user and kernel CPU time of the whole process (medians).
    pub user_ns: Option<Summary>,
    pub kernel_ns: Option<Summary>,
    /// The sampled runs' category breakdown, or why there is none.
    #[serde(default)]
    pub breakdown: Option<crate::attribute::breakdown::Breakdown>,
    #[serde(default)]
    pub breakdown_error: Option<String>,
    /// The sampled stacks, for --folded/--flamegraph (not in the JSON).
    #[serde(skip)]
    pub folded: Vec<crate::attribute::FoldedStack>,
    /// Every run, raw.
    pub raw: Vec<Run>,
}

/// Runs everything and aggregates.
pub fn profile(cfg: &ProfileConfig) -> Result<ProfileSection, RunError> {
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
    let mut detail = Detail::Static;
    for _ in 0..cfg.warmup {
        interrupted()?;
        let (_, d) = run_once(&cfg.command, &coarse)?;
        detail = d;
    }
    let mut raw = Vec::new();
    for _ in 0..cfg.runs.max(1) {
        interrupted()?;
        let (r, d) = run_once(&cfg.command, &per_obj)?;
        detail = d;
        raw.push(r);
        if cfg.reference {
            interrupted()?;
            raw.push(run_once(&cfg.command, &coarse)?.0);
            interrupted()?;
            raw.push(run_uninstrumented(&cfg.command, cfg.timeout)?);
        }
        if crate::trace::interrupted() || raw.iter().any(|r| r.ending == Ending::TimedOut) {
            break;
        }
    }
    let ld_debug = if cfg.ld_debug && detail != Detail::Static {
        ld_debug_statistics(&cfg.command, cfg.timeout)
    } else {
        None
    };
    let counters = machine_support()
        .into_iter()
        .map(|(c, a)| {
            (
                c.perf_name().to_string(),
                if a.is_available() {
                    "available".to_string()
                } else {
                    format!("{a:?}")
                },
            )
        })
        .collect();
    // CPU per exec (the target and its threads and children), without ptrace: what the
    // sampled shares are scaled to.
    let cpu: Vec<f64> = raw
        .iter()
        .filter(|r| r.instrumentation == Instrumentation::None)
        .filter_map(|r| {
            let own = ns(&r.total)?;
            Some(own + r.children.as_ref().and_then(ns).unwrap_or(0.0))
        })
        .collect();
    let mut section = aggregate(cfg, detail, raw, ld_debug, counters);
    if let Some(sc) = &cfg.sample {
        let measured = summarize(&cpu)
            .or(section.total_task_clock_ns.clone())
            .map(|s| s.median);
        match sampled_runs(cfg, sc, &coarse, measured) {
            Ok((b, f)) => {
                section.breakdown = Some(b);
                section.folded = f;
            }
            Err(e) => section.breakdown_error = Some(e),
        }
    }
    Ok(section)
}

/// The sampled exec runs (boundaries only, so each sample falls into a phase by time), sorted
/// into categories per run.
fn sampled_runs(
    cfg: &ProfileConfig,
    sc: &crate::perf::SamplerConfig,
    coarse: &RunOptions,
    measured_cpu_ns: Option<f64>,
) -> Result<
    (
        crate::attribute::breakdown::Breakdown,
        Vec<crate::attribute::FoldedStack>,
    ),
    String,
> {
    use crate::attribute::breakdown::{Span, Unit};
    let mut symbolizer = crate::perf::sampler::Symbolizer::new(&cfg.debug_roots);
    let (mut stacks, mut units, mut recordings) = (Vec::new(), Vec::new(), Vec::new());
    let mut sampled_cpu = Vec::new();
    // The deadline and the memory budget hold for the whole sampled phase: each run gets
    // what the runs before it left.
    let started = std::time::Instant::now();
    let mut used_bytes = 0u64;
    let mut cut_short = None;
    let planned = cfg.sample_runs.max(1);
    for i in 0..planned {
        if crate::trace::interrupted() {
            return Err("interrupted".into());
        }
        let mut sc = sc.clone();
        if let Some(d) = sc.deadline {
            match d.checked_sub(started.elapsed()) {
                Some(left) if !left.is_zero() => sc.deadline = Some(left),
                _ => {
                    cut_short = Some(format!(
                        "sampling stopped after {i} of {planned} sampled runs: the deadline of \
                         {:.1} s (--sample-deadline) passed",
                        d.as_secs_f64()
                    ));
                    break;
                }
            }
        }
        if let Some(b) = sc.budget_bytes {
            match b.checked_sub(used_bytes) {
                Some(left) if left > 0 => sc.budget_bytes = Some(left),
                _ => {
                    cut_short = Some(format!(
                        "sampling stopped after {i} of {planned} sampled runs: the memory \
                         budget (--sample-budget) was reached"
                    ));
                    break;
                }
            }
        }
        let opts = RunOptions {
            sample: Some(sc),
            ..coarse.clone()
        };
        let (run, _) = run_once(&cfg.command, &opts).map_err(|e| e.to_string())?;
        let rec = match run.sampled {
            Some(Ok(r)) => r,
            Some(Err(e)) => return Err(e),
            None => return Err("the sampler did not run".into()),
        };
        if let Some(t) = ns(&run.total) {
            sampled_cpu.push(t + run.children.as_ref().and_then(ns).unwrap_or(0.0));
        }
        let mut phases: Vec<Span> = run
            .segments
            .iter()
            .filter_map(|s| {
                let (a, b) = s.span_ns?;
                Some(Span {
                    label: match &s.object {
                        Some(o) => {
                            format!("{}: {}", s.phase.label(), o.rsplit('/').next().unwrap_or(o))
                        }
                        None => s.phase.label().to_string(),
                    },
                    start_ns: a,
                    end_ns: b,
                })
            })
            .collect();
        let (Some(first), Some(last)) = (phases.first().cloned(), phases.last().cloned()) else {
            continue;
        };
        // The address space is torn down after the exit stop.
        let end = last.end_ns + 50_000_000;
        phases.push(Span {
            label: "after the exit stop".into(),
            start_ns: last.end_ns,
            end_ns: end,
        });
        units.push(Unit {
            start_ns: first.start_ns,
            end_ns: end,
            per_unit: 1.0,
            phases,
            main_pid: rec.root_pid,
        });
        stacks.extend(symbolizer.symbolize(&rec, &rec.maps_at_start));
        used_bytes += rec.approx_bytes();
        let stopped = rec.stopped.is_some();
        recordings.push(rec);
        if stopped && i + 1 < planned {
            cut_short = Some(format!(
                "sampling stopped after {} of {planned} sampled runs (deadline or budget)",
                i + 1
            ));
            break;
        }
    }
    // Units must not overlap: each ends where the next begins at the latest.
    units.sort_by_key(|u| u.start_ns);
    for i in 1..units.len() {
        let next = units[i].start_ns;
        if units[i - 1].end_ns >= next {
            units[i - 1].end_ns = next - 1;
        }
    }
    let (mut b, folded) = crate::attribute::breakdown::breakdown(
        "exec",
        &stacks,
        &units,
        "threads and children",
        false,
    );
    b.notes = crate::attribute::breakdown::recording_notes(&recordings.iter().collect::<Vec<_>>());
    b.notes.extend(symbolizer.problems().iter().cloned());
    let dropped: u64 = recordings.iter().map(|r| r.dropped_budget).sum();
    if dropped > 0 && recordings.len() > 1 {
        b.notes.push(format!(
            "{dropped} samples dropped: budget (all sampled runs)"
        ));
    }
    let own: u64 = recordings.iter().map(|r| r.dropped_own).sum();
    if own > 0 {
        b.notes.push(format!(
            "{own} samples of ldcost itself were dropped (system-wide events see it)"
        ));
    }
    b.notes.extend(cut_short);
    if let Some(m) = measured_cpu_ns {
        crate::attribute::breakdown::scale_to_measured(&mut b, m);
        let s = summarize(&sampled_cpu).map(|s| s.median).unwrap_or(0.0);
        b.notes.push(format!(
            "µs per exec = share × the CPU per run without ptrace or sampling ({:.1} µs); the sampled runs took {:.1} µs",
            m / 1e3,
            s / 1e3
        ));
    }
    Ok((b, folded))
}

/// Stops between runs once ldcost has been asked to.
fn interrupted() -> Result<(), RunError> {
    if crate::trace::interrupted() {
        Err(RunError::Trace(
            crate::trace::launch::TraceError::Interrupted,
        ))
    } else {
        Ok(())
    }
}

fn ns(s: &Snapshot) -> Option<f64> {
    s.task_clock_ns.map(|v| v as f64)
}

/// Aggregates runs into phase statistics (pure: tested on recorded runs).
pub fn aggregate(
    cfg: &ProfileConfig,
    detail: Detail,
    raw: Vec<Run>,
    ld_debug: Option<LdDebugStatistics>,
    counters: BTreeMap<String, String>,
) -> ProfileSection {
    let measured: Vec<&Run> = raw
        .iter()
        .filter(|r| r.instrumentation == Instrumentation::PerObject)
        .collect();
    let totals = |inst: Instrumentation| -> Vec<f64> {
        raw.iter()
            .filter(|r| r.instrumentation == inst)
            .filter_map(|r| ns(&r.total))
            .collect()
    };
    let per_object_ns = summarize(&totals(Instrumentation::PerObject));
    let uninstrumented_ns = summarize(&totals(Instrumentation::None));
    let coarse_ns = summarize(&totals(Instrumentation::Coarse));
    let stops: Vec<f64> = measured.iter().map(|r| r.stops as f64).collect();
    let per_object_stops = summarize(&stops).map_or(0.0, |s| s.median);
    // The cost of one ptrace stop, as the target's CPU time sees it: the slope of a least
    // squares fit of total task-clock against stops over every run (per-object, boundaries
    // only, none), never negative (on a noisy machine the fit can come out below zero).
    let points: Vec<(f64, f64)> = raw
        .iter()
        .filter_map(|r| ns(&r.total).map(|t| (r.stops as f64, t)))
        .collect();
    let ns_per_stop = slope(&points).map(|c| c.max(0.0));
    let c = ns_per_stop.unwrap_or(0.0);
    let corrected = |s: &crate::record::Segment| -> Option<f64> {
        ns(&s.counters).map(|v| (v - s.stops as f64 * c).max(0.0))
    };
    // Phase keys in first-seen order.
    let mut keys: Vec<(Phase, Option<String>)> = Vec::new();
    for r in &measured {
        for s in &r.segments {
            let k = (s.phase, s.object.clone());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    let mut phases = Vec::new();
    for (phase, object) in keys {
        let (mut cpu, mut raw_cpu, mut wall, mut pf, mut shares) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for r in &measured {
            let segs: Vec<_> = r
                .segments
                .iter()
                .filter(|s| s.phase == phase && s.object == object)
                .collect();
            if segs.is_empty() {
                continue;
            }
            let run_total: f64 = r.segments.iter().filter_map(corrected).sum();
            if segs.iter().all(|s| s.counters.task_clock_ns.is_some()) {
                let v: f64 = segs.iter().filter_map(|s| corrected(s)).sum();
                cpu.push(v);
                raw_cpu.push(segs.iter().filter_map(|s| ns(&s.counters)).sum());
                if run_total > 0.0 {
                    shares.push(v / run_total);
                }
            }
            wall.push(segs.iter().map(|s| s.wall_ns as f64).sum());
            pf.push(
                segs.iter()
                    .map(|s| s.counters.page_faults.unwrap_or(0) as f64)
                    .sum(),
            );
        }
        phases.push(PhaseStat {
            phase,
            object,
            task_clock_ns: summarize(&cpu),
            task_clock_raw_ns: summarize(&raw_cpu),
            wall_ns: summarize(&wall),
            page_faults: summarize(&pf),
            share: summarize(&shares).map_or(0.0, |s| s.median),
        });
    }
    let ratio = |a: Option<f64>, b: &Option<Summary>| match (a, b) {
        (Some(a), Some(b)) if b.median > 0.0 => Some(a / b.median),
        _ => None,
    };
    let sum_corrected: Vec<f64> = measured
        .iter()
        .map(|r| r.segments.iter().filter_map(corrected).sum())
        .collect();
    let sum_raw: Vec<f64> = measured
        .iter()
        .map(|r| r.segments.iter().filter_map(|s| ns(&s.counters)).sum())
        .collect();
    let agreement = ratio(
        summarize(&sum_corrected).map(|s| s.median),
        &uninstrumented_ns,
    );
    let agreement_raw = ratio(summarize(&sum_raw).map(|s| s.median), &uninstrumented_ns);
    let agreement_coarse = ratio(coarse_ns.as_ref().map(|s| s.median), &uninstrumented_ns);
    let mut argv = vec![cfg.command.program.display().to_string()];
    argv.extend(
        cfg.command
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned()),
    );
    ProfileSection {
        argv,
        detail,
        runs: measured.len(),
        warmup: cfg.warmup,
        counters,
        phases,
        total_task_clock_ns: summarize(&sum_corrected),
        total_wall_ns: summarize(
            &measured
                .iter()
                .map(|r| r.wall_ns as f64)
                .collect::<Vec<_>>(),
        ),
        overhead: Overhead {
            uninstrumented_ns,
            coarse_ns,
            per_object_ns,
            per_object_stops,
            ns_per_stop,
            agreement,
            agreement_raw,
            agreement_coarse,
        },
        ld_debug,
        prediction: None,
        endings: measured.iter().map(|r| r.ending).collect(),
        children_task_clock_ns: summarize(
            &measured
                .iter()
                .filter_map(|r| r.children.as_ref().and_then(ns))
                .collect::<Vec<_>>(),
        ),
        user_ns: summarize(
            &measured
                .iter()
                .filter_map(|r| r.user_kernel_ns.map(|u| u.0 as f64))
                .collect::<Vec<_>>(),
        ),
        kernel_ns: summarize(
            &measured
                .iter()
                .filter_map(|r| r.user_kernel_ns.map(|u| u.1 as f64))
                .collect::<Vec<_>>(),
        ),
        raw,
        breakdown: None,
        breakdown_error: None,
        folded: Vec::new(),
    }
}

/// Least-squares slope of y on x; None without two distinct x values.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// Parses the text LD_DEBUG=statistics writes.
pub fn parse_ld_debug(text: &str) -> LdDebugStatistics {
    let mut s = LdDebugStatistics::default();
    let mut in_startup = true;
    for line in text.lines() {
        let l = line.split_once(':').map(|(_, r)| r).unwrap_or(line).trim();
        if l.starts_with("calling init:") {
            in_startup = false;
        }
        if let Some(rest) = l.strip_prefix("binding file ") {
            if in_startup {
                if let Some((file, _)) = rest.split_once(" [") {
                    *s.bindings.entry(file.to_string()).or_default() += 1;
                }
            }
            continue;
        }
        let Some((k, v)) = l.split_once(": ") else {
            continue;
        };
        let first = v.split_whitespace().next().unwrap_or("");
        let Ok(n) = first.parse::<u64>() else {
            continue;
        };
        match k.trim() {
            "total startup time in dynamic loader" => s.startup_cycles = Some(n),
            "time needed for relocation" => s.relocation_cycles = Some(n),
            "time needed to load objects" => s.load_cycles = Some(n),
            "number of relocations" => s.relocations = Some(n),
            "number of relocations from cache" => s.relocations_from_cache = Some(n),
            "number of relative relocations" => s.relative_relocations = Some(n),
            "final number of relocations" => s.final_relocations = Some(n),
            _ => {}
        }
    }
    s
}

/// glibc's account from two separate runs, written to files (the target's stderr stays its own):
/// LD_DEBUG=statistics for the cycle counts (printing bindings would inflate them), then
/// LD_DEBUG=bindings,libs for the per-object bindings.
fn ld_debug_statistics(cmd: &Command, timeout: Option<Duration>) -> Option<LdDebugStatistics> {
    let stats = ld_debug_run(cmd, "statistics", timeout)?;
    let mut s = parse_ld_debug(&stats);
    s.relocations?;
    if let Some(b) = ld_debug_run(cmd, "bindings,libs", timeout) {
        s.bindings = parse_ld_debug(&b).bindings;
    }
    Some(s)
}

fn ld_debug_run(cmd: &Command, what: &str, timeout: Option<Duration>) -> Option<String> {
    let dir = std::env::temp_dir().join(format!("ldcost-lddebug-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let out = dir.join("debug");
    let mut c = std::process::Command::new(&cmd.program);
    c.args(&cmd.args)
        .env("LD_DEBUG", what)
        .env("LD_DEBUG_OUTPUT", &out)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    for (k, v) in &cmd.env {
        c.env(k, v);
    }
    for k in &cmd.env_remove {
        c.env_remove(k);
    }
    // The same --timeout as the measured runs; and ldcost's own SIGINT stops the wait.
    let mut pid = 0;
    let ok = match c.spawn() {
        Ok(mut child) => {
            pid = child.id();
            let start = std::time::Instant::now();
            loop {
                match child.try_wait() {
                    Ok(Some(_)) => break true,
                    Ok(None)
                        if timeout.is_none_or(|t| start.elapsed() < t)
                            && !crate::trace::interrupted() =>
                    {
                        std::thread::sleep(Duration::from_millis(1))
                    }
                    _ => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break false;
                    }
                }
            }
        }
        Err(_) => false,
    };
    // ld.so appends .PID: the target's own file, not those of its children or of programs
    // it execs.
    let text = std::fs::read_to_string(format!("{}.{pid}", out.display())).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    ok.then_some(text)
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
mod tests {
    use super::*;

    #[test]
    fn slope_of_a_line() {
        let pts = [(0.0, 10.0), (10.0, 30.0), (20.0, 50.0)];
        assert!((slope(&pts).unwrap() - 2.0).abs() < 1e-9);
        assert!(slope(&[(1.0, 2.0), (1.0, 3.0)]).is_none());
    }

    #[test]
    fn parses_ld_debug_statistics() {
        let t = "      4081:\t\n      4081:\truntime linker statistics:\n      4081:\t  total startup time in dynamic loader: 242716 cycles\n      4081:\t            time needed for relocation: 42480 cycles (17.5%)\n      4081:\t                 number of relocations: 333\n      4081:\t      number of relocations from cache: 7\n      4081:\t        number of relative relocations: 267\n      4081:\t           time needed to load objects: 60311 cycles (24.8%)\n";
        let s = parse_ld_debug(t);
        assert_eq!(s.startup_cycles, Some(242716));
        assert_eq!(s.relocation_cycles, Some(42480));
        assert_eq!(s.relocations, Some(333));
        assert_eq!(s.relocations_from_cache, Some(7));
        assert_eq!(s.relative_relocations, Some(267));
        assert_eq!(s.load_cycles, Some(60311));
    }

    #[test]
    fn counts_startup_bindings_per_object() {
        let t = "  7:\tbinding file /bin/ls [0] to /lib/x86_64-linux-gnu/libc.so.6 [0]: normal symbol `free' [GLIBC_2.2.5]\n\
                 7:\tbinding file /bin/ls [0] to /lib/x86_64-linux-gnu/libc.so.6 [0]: normal symbol `malloc'\n\
                 7:\tbinding file linux-vdso.so.1 [0] to linux-vdso.so.1 [0]: normal symbol `__vdso_time'\n\
                 7:\tcalling init: /lib/x86_64-linux-gnu/libc.so.6\n\
                 7:\tbinding file /bin/ls [0] to /lib/x86_64-linux-gnu/libc.so.6 [0]: normal symbol `exit'\n";
        let s = parse_ld_debug(t);
        assert_eq!(s.bindings.get("/bin/ls"), Some(&2));
        assert_eq!(s.bindings.get("linux-vdso.so.1"), Some(&1));
    }
}
