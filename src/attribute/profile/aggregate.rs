//! Aggregation: recorded runs into the phase statistics of the profile section (pure, so
//! it is tested on recordings).
//!
//! In: the [`Run`]s of each kind, glibc's own account, the counters this machine offers.
//! Out: a [`ProfileSection`]: phase medians with intervals, each run's segments less the cost
//! of their ptrace stops ([`per_stop_ns`]), and the totals.
//!
//! The cost of a stop is measured in the run it corrects: each breakpoint stop of a per-object
//! run is replayed once with no work between ([`crate::trace::stopcost`]), and the run's
//! correction is the median replay, bounded by the run's own evidence: no stop can have cost
//! more than the run's cheapest segment per stop (a segment is its stops plus work ≥ 0). So
//! no segment is corrected below zero, whatever the machine's load did between runs. The
//! least-squares slope of total CPU over stop count across run kinds (what this used to
//! apply) is kept in the JSON for comparison (`ns_per_stop_slope`): it mixes moments, and a
//! loaded one inflated it past small segments (a relocation row read 0.0 ms once).

use super::*;
use crate::attribute::stats::summarize;
use crate::record::counters::Snapshot;

pub(crate) fn ns(s: &Snapshot) -> Option<f64> {
    s.task_clock_ns.map(|v| v as f64)
}

/// Aggregates runs into phase statistics (pure: tested on recorded runs). `argv` is the
/// target's command line as the document writes it; `warmup` the runs left out before.
pub fn aggregate(
    argv: Vec<String>,
    warmup: usize,
    detail: Detail,
    raw: Vec<Run>,
    ld_debug: Option<LdDebugStatistics>,
    counters: BTreeMap<String, Availability>,
) -> ProfileSection {
    let left_out = left_out(&raw);
    // The windows after `main` less what their stops cost beyond the replays: every figure
    // of a per-object run below is read from these copies; `raw` stays the recording.
    let residue = super::residue::estimate(&raw);
    let adjusted = residue.as_ref().map(|r| super::residue::apply(&raw, r));
    let runs = adjusted.as_deref().unwrap_or(&raw);
    let kept = |r: &&Run| r.instrumentation == Instrumentation::PerObject && lost(r).is_none();
    let measured: Vec<&Run> = runs.iter().filter(kept).collect();
    // The same runs as recorded, for the figures before any correction.
    let recorded: Vec<&Run> = raw.iter().filter(kept).collect();
    let totals = |inst: Instrumentation| -> Vec<f64> {
        raw.iter()
            .filter(|r| r.instrumentation == inst && lost(r).is_none())
            .filter_map(|r| ns(&r.total))
            .collect()
    };
    let per_object_ns = summarize(&totals(Instrumentation::PerObject));
    let uninstrumented_ns = summarize(&totals(Instrumentation::None));
    let coarse_ns = summarize(&totals(Instrumentation::Coarse));
    let stops: Vec<f64> = measured.iter().map(|r| r.stops as f64).collect();
    let per_object_stops = summarize(&stops).map_or(0.0, |s| s.median);
    // The cross-run slope of total task-clock over stops (per-object, boundaries only, none):
    // shown beside the in-run figure, and the fallback for recordings without replays.
    let points: Vec<(f64, f64)> = raw
        .iter()
        .filter(|r| lost(r).is_none())
        .filter_map(|r| ns(&r.total).map(|t| (r.stops as f64, t)))
        .collect();
    let ns_per_stop_slope = slope(&points).map(|c| c.max(0.0));
    // Each run's own cost per stop (see the module doc), in the order of `measured`.
    let per_run: Vec<Option<f64>> = measured
        .iter()
        .map(|r| per_stop_ns(r, ns_per_stop_slope))
        .collect();
    let ns_per_stop =
        summarize(&per_run.iter().flatten().copied().collect::<Vec<_>>()).map(|s| s.median);
    let corrected_in = |i: usize| {
        let c = per_run[i].unwrap_or(0.0);
        move |s: &crate::record::Segment| corrected(s, c)
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
        for (i, r) in measured.iter().enumerate() {
            let corrected = corrected_in(i);
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
                let raw_v: f64 = recorded[i]
                    .segments
                    .iter()
                    .filter(|s| s.phase == phase && s.object == object)
                    .filter_map(|s| ns(&s.counters))
                    .sum();
                raw_cpu.push(raw_v);
                // A phase with no run left ([`phase_cpu`]) has no CPU figure rather than 0.
                if let Some(v) = phase_cpu(v, raw_v) {
                    cpu.push(v);
                    if run_total > 0.0 {
                        shares.push(v / run_total);
                    }
                }
            }
            wall.push(segs.iter().map(|s| s.wall_ns as f64).sum());
            pf.push(
                segs.iter()
                    .map(|s| s.counters.page_faults.unwrap_or(0) as f64)
                    .sum(),
            );
        }
        let mut stat = PhaseStat {
            phase,
            object,
            task_clock_ns: summarize(&cpu),
            task_clock_raw_ns: summarize(&raw_cpu),
            wall_ns: summarize(&wall),
            page_faults: summarize(&pf),
            share: summarize(&shares).map_or(0.0, |s| s.median),
            wide_interval: false,
        };
        stat.wide_interval = stat.interval_is_wide();
        phases.push(stat);
    }
    let ratio = |a: Option<f64>, b: &Option<Summary>| match (a, b) {
        (Some(a), Some(b)) if b.median > 0.0 => Some(a / b.median),
        _ => None,
    };
    let sum_corrected: Vec<f64> = measured
        .iter()
        .enumerate()
        .map(|(i, r)| r.segments.iter().filter_map(corrected_in(i)).sum())
        .collect();
    let sum_raw: Vec<f64> = recorded
        .iter()
        .map(|r| r.segments.iter().filter_map(|s| ns(&s.counters)).sum())
        .collect();
    let agreement = ratio(
        summarize(&sum_corrected).map(|s| s.median),
        &uninstrumented_ns,
    );
    let agreement_raw = ratio(summarize(&sum_raw).map(|s| s.median), &uninstrumented_ns);
    let agreement_coarse = ratio(coarse_ns.as_ref().map(|s| s.median), &uninstrumented_ns);
    let after_main = crate::attribute::after_main::section(runs, &detail);
    ProfileSection {
        argv,
        detail,
        after_main,
        runs: measured.len(),
        warmup,
        counters,
        counting: Default::default(),
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
            ns_per_stop_slope,
            residue,
            agreement,
            agreement_raw,
            agreement_coarse,
        },
        ld_debug,
        prediction: None,
        followed: Vec::new(),
        pinned_cpu: None,
        // Every measured run's ending, the ones left out too (the report says why).
        endings: raw
            .iter()
            .filter(|r| r.instrumentation == Instrumentation::PerObject)
            .map(|r| r.ending)
            .collect(),
        left_out,
        children_task_clock_ns: summarize(
            &measured
                .iter()
                .filter_map(|r| r.children.as_ref().and_then(ns))
                .collect::<Vec<_>>(),
        ),
        exit_uncounted_ns: summarize(
            &measured
                .iter()
                .filter_map(|r| r.exit_uncounted_ns.map(|e| e as f64))
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
        breakdown_weights: Vec::new(),
        cpu_features_note: None,
        folded: Vec::new(),
    }
}

/// Why run `r` is left out of the statistics, or None when it counts. A run that did not
/// end as the program ends it measured less than the program's work: killed by SIGKILL
/// (which only comes from outside: a program cannot catch it, and does not raise it to end)
/// or, for a reference run, by `--timeout` (its total stops at the kill). A per-object run
/// cut by `--timeout` keeps the phases it completed: each is whole, cut at its own stops
/// (the run's ending says where it stopped, and the exit code is 9).
pub fn lost(r: &Run) -> Option<&'static str> {
    match r.ending {
        Ending::Killed(9) => Some("killed by SIGKILL"),
        Ending::TimedOut if r.instrumentation != Instrumentation::PerObject => Some("timed out"),
        _ => None,
    }
}

/// The runs left out ([`lost`]), counted by kind and reason, in the order first met.
pub fn left_out(raw: &[Run]) -> Vec<LeftOut> {
    let mut out: Vec<LeftOut> = Vec::new();
    for r in raw {
        let Some(why) = lost(r) else { continue };
        match out
            .iter_mut()
            .find(|l| l.instrumentation == r.instrumentation && l.why == why)
        {
            Some(l) => l.count += 1,
            None => out.push(LeftOut {
                instrumentation: r.instrumentation,
                why: why.into(),
                count: 1,
                of: raw
                    .iter()
                    .filter(|o| o.instrumentation == r.instrumentation)
                    .count(),
            }),
        }
    }
    out
}

/// The CPU cost of one ptrace stop to run `r`, as its segments are corrected: the median of
/// its replayed stops ([`Run::stop_costs_ns`]; else `fallback`, the cross-run slope of a
/// recording made before replays), never more than its cheapest segment per stop (so no
/// segment goes below zero). None when there is neither a replay nor a fallback.
pub fn per_stop_ns(r: &Run, fallback: Option<f64>) -> Option<f64> {
    // The median is robust to the one replay a signal or a preemption inflated.
    let replays: Vec<f64> = r.stop_costs_ns.iter().map(|&c| c as f64).collect();
    let measured = crate::stats::median(&replays).or(fallback)?;
    Some(stop_bound(r).map_or(measured, |b| measured.min(b)).max(0.0))
}

/// The run's cheapest segment per stop: no stop is taken out at more than this, so no segment
/// is corrected below zero. None when no counted segment has a stop.
pub(crate) fn stop_bound(r: &Run) -> Option<f64> {
    r.segments
        .iter()
        .filter(|s| s.stops > 0)
        .filter_map(|s| ns(&s.counters).map(|v| v / s.stops as f64))
        .reduce(f64::min)
}

/// A segment's task-clock less its stops at `per_stop` ns each (None: not counted).
pub fn corrected(s: &crate::record::Segment, per_stop: f64) -> Option<f64> {
    ns(&s.counters).map(|v| (v - s.stops as f64 * per_stop).max(0.0))
}

/// A phase's CPU in one run for its median: `corrected` when the stops' correction left some,
/// or when the counters saw none either; None when the correction took counted CPU to zero
/// (the bound of [`corrected`] makes a run's cheapest segment per stop exactly zero when the
/// replays cost more): its work is below what a stop resolves, not measured as zero, and the
/// run is left out of that phase. The phase table and `compare`'s start-up change both use it.
pub fn phase_cpu(corrected: f64, raw: f64) -> Option<f64> {
    (corrected > 0.0 || raw <= 0.0).then_some(corrected)
}

/// Least-squares slope of y on x; None without two distinct x values.
pub(super) fn slope(points: &[(f64, f64)]) -> Option<f64> {
    crate::stats::line(points).map(|(_, slope)| slope)
}

/// The CPU per exec that sampled shares are scaled to, one figure per run without ptrace: the
/// target's task-clock with its threads' and children's, plus the median exit teardown the
/// per-object runs' counters missed ([`Run::exit_uncounted_ns`], 6.18 stops a task's events
/// before its exit frees its memory). `profile` and `compare` both scale by it.
pub fn cpu_per_exec(raw: &[Run]) -> Vec<f64> {
    let exits: Vec<f64> = raw
        .iter()
        .filter(|r| r.instrumentation == Instrumentation::PerObject && lost(r).is_none())
        .filter_map(|r| r.exit_uncounted_ns.map(|e| e as f64))
        .collect();
    let exit = crate::stats::median(&exits).unwrap_or(0.0);
    raw.iter()
        .filter(|r| r.instrumentation == Instrumentation::None && lost(r).is_none())
        .filter_map(|r| {
            Some(ns(&r.total)? + r.children.as_ref().and_then(ns).unwrap_or(0.0) + exit)
        })
        .collect()
}
