//! Aggregation: recorded runs into the phase statistics of the profile section (pure, so
//! it is tested on recordings).
//!
//! In: the [`Run`]s of each kind, glibc's own account, the counters this machine offers.
//! Out: a [`ProfileSection`]: phase medians with intervals, the cost per ptrace stop (a
//! least-squares slope over runs with different stop counts) and the totals.

use super::*;

pub(super) fn ns(s: &Snapshot) -> Option<f64> {
    s.task_clock_ns.map(|v| v as f64)
}

/// Aggregates runs into phase statistics (pure: tested on recorded runs).
pub fn aggregate(
    cfg: &ProfileConfig,
    detail: Detail,
    raw: Vec<Run>,
    ld_debug: Option<LdDebugStatistics>,
    counters: BTreeMap<String, crate::perf::Availability>,
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
                let raw_v: f64 = segs.iter().filter_map(|s| ns(&s.counters)).sum();
                raw_cpu.push(raw_v);
                // A segment that ran (raw > 0) but that the per-stop correction takes to zero
                // (a slope inflated by a loaded moment) was not measured as zero: it is left
                // out, and a phase with no run left has no CPU figure rather than 0.
                if v > 0.0 || raw_v <= 0.0 {
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
            agreement,
            agreement_raw,
            agreement_coarse,
        },
        ld_debug,
        prediction: None,
        followed: Vec::new(),
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
        cpu_features_note: None,
        folded: Vec::new(),
    }
}

/// Least-squares slope of y on x; None without two distinct x values.
pub(super) fn slope(points: &[(f64, f64)]) -> Option<f64> {
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
