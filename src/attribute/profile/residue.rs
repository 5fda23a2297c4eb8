//! What a ptrace stop after `main` costs the target beyond its replay, and the windows after
//! `main` less it.
//!
//! In: the recorded runs. Out: the residue per stop ([`estimate`]), and copies of the
//! per-object runs whose windows after `main` (each `dlopen`, each loaded object's mapping,
//! relocation and initializers, each `dlclose` and finalizer) and whose main-to-exit segment
//! are less that residue for every stop inside them ([`apply`]).
//!
//! Why: a replayed stop ([`crate::trace::stopcost`]) is the trap and the resume with nothing
//! between. A real stop after `main` also has ldcost's work between them (reading the
//! link_map, planting and removing breakpoints in the target's text), and the target's work
//! after the resume runs on caches and a pipeline that work disturbed. At start-up a run has
//! tens of stops and this is within the runs' noise; a program that loads a hundred libraries
//! after `main` takes a thousand stops, and there it is most of the windows' figures.
//!
//! How: from the runs themselves, round by round (each round runs a per-object run and a
//! boundaries-only one in turns, so the load of the moment falls on both): the per-object
//! run's CPU less the boundaries-only run's (a few stops, none after `main`), over the
//! difference of their stops, is what each stop cost the target that round; less that run's
//! replayed cost, the round's residue. Its median over the rounds is taken out, only when the
//! median's 95% interval is above zero (a difference within the noise is not a
//! measurement), and in each run never more than its cheapest window after `main` per stop,
//! the rule the replays follow at start-up: no window is corrected below zero, whatever the
//! machine's load did. The runs without ptrace are not used, so they stay an independent
//! check of the result.

use crate::attribute::stats::summarize;
use crate::record::after_main::Cost;
use crate::record::{Instrumentation, Phase, Run};

use super::aggregate::ns;
use super::aggregate::stop_bound;
use super::{lost, per_stop_ns};

/// Fewer stops than this between the two kinds do not resolve a cost per stop.
const MIN_STOPS: f64 = 100.0;
/// Fewer runs of a kind than this give no interval to judge the difference by.
const MIN_RUNS: usize = 3;

/// The residue per stop and the interval it was judged by (ns).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Residue {
    /// The point estimate, taken out of the windows after `main`.
    pub ns_per_stop: f64,
    /// The 95% interval of that median over the rounds: its low end (above zero, or there
    /// is no residue).
    pub low_ns: f64,
    /// Its high end.
    pub high_ns: f64,
    /// The replayed cost it is beyond (the median over the rounds' per-object runs).
    pub replay_ns: f64,
}

/// The residue per stop of these runs (see the module doc); None when it is not resolved:
/// fewer than [`MIN_RUNS`] rounds with a per-object and a boundaries-only run, too few stops
/// more in the per-object runs, or an interval that reaches zero.
pub fn estimate(raw: &[Run]) -> Option<Residue> {
    let usable = |r: &Run| lost(r).is_none() && ns(&r.total).is_some();
    // Each round runs a per-object run, then a boundaries-only one, in turns: paired by
    // round, the load of that moment falls on both.
    let mut pending: Option<&Run> = None;
    let mut per_round: Vec<f64> = Vec::new();
    let mut replays: Vec<f64> = Vec::new();
    for r in raw {
        match r.instrumentation {
            Instrumentation::PerObject => pending = Some(r).filter(|r| usable(r)),
            Instrumentation::Coarse => {
                let Some(po) = pending.take() else { continue };
                if !usable(r) {
                    continue;
                }
                let more = po.stops as f64 - r.stops as f64;
                let (Some(a), Some(b), Some(replay)) =
                    (ns(&po.total), ns(&r.total), per_stop_ns(po, None))
                else {
                    continue;
                };
                if more < MIN_STOPS {
                    continue;
                }
                per_round.push((a - b) / more - replay);
                replays.push(replay);
            }
            _ => {}
        }
    }
    if per_round.len() < MIN_RUNS {
        return None;
    }
    let s = summarize(&per_round)?;
    let r = Residue {
        ns_per_stop: s.median,
        low_ns: s.ci95.0,
        high_ns: s.ci95.1,
        replay_ns: crate::stats::median(&replays)?,
    };
    (r.low_ns > 0.0 && r.ns_per_stop > 0.0).then_some(r)
}

/// The windows of one run after `main`, whatever their kind.
fn windows(a: &mut crate::record::after_main::AfterMain) -> Vec<&mut Cost> {
    let mut out: Vec<&mut Cost> = Vec::new();
    for o in &mut a.opens {
        out.push(&mut o.cost);
        for l in &mut o.objects {
            out.extend(
                [&mut l.mapping, &mut l.relocation, &mut l.initializers]
                    .into_iter()
                    .flatten(),
            );
        }
    }
    for c in &mut a.closes {
        out.push(&mut c.cost);
        out.extend(c.finalizers.iter_mut().map(|(_, f)| f));
    }
    out
}

/// The residue one run's windows take: `residue`, never more than its cheapest window after
/// `main` per stop (so none goes below zero).
fn in_run(r: &mut Run, residue: f64) -> f64 {
    let Some(a) = r.after_main.as_mut() else {
        return 0.0;
    };
    windows(a)
        .iter()
        .filter(|c| c.stops > 0)
        .map(|c| c.cpu_ns as f64 / c.stops as f64)
        .fold(residue, f64::min)
        .max(0.0)
}

/// Copies of `raw` with each per-object run's windows after `main`, and its main-to-exit
/// segment, less `residue` per stop inside them (bounded per run, see the module doc). Other
/// runs are copied as they are.
pub fn apply(raw: &[Run], residue: &Residue) -> Vec<Run> {
    raw.iter()
        .map(|r| {
            let mut r = r.clone();
            if r.instrumentation != Instrumentation::PerObject {
                return r;
            }
            let per = in_run(&mut r, residue.ns_per_stop);
            let Some(a) = r.after_main.as_mut() else {
                return r;
            };
            let after = a.stops;
            for c in windows(a) {
                c.cpu_ns = c
                    .cpu_ns
                    .saturating_sub((per * c.stops as f64).round() as u64);
            }
            // The program's own time after `main` holds every stop after `main` (the
            // lazy binds' too): the same per stop comes out of it, but never below the run's
            // replayed cost of its stops as recorded ([`per_stop_ns`], bounded by the run's
            // cheapest segment per stop). Below it the bound would read lower on the copy and
            // correct every phase before `main` less than the recording does, which `compare`
            // reads; and main-to-exit would go below zero. Without replays the fallback is
            // not known here: the bound itself is kept.
            let floor = per_stop_ns(&r, None).or_else(|| stop_bound(&r));
            for s in r
                .segments
                .iter_mut()
                .filter(|s| s.phase == Phase::MainToExit)
            {
                let stops = s.stops;
                if let Some(t) = s.counters.task_clock_ns.as_mut() {
                    let n = after.min(stops) as f64;
                    let keep = floor.map_or(0, |b| least_at(b, stops)).min(*t);
                    *t = t.saturating_sub((per * n).round() as u64).max(keep);
                }
            }
            r
        })
        .collect()
}

/// The least whole `t` with `t / stops` at or above `per_stop` as [`stop_bound`] computes it
/// (in f64), so the bound reads no lower on the copy. 0 for a segment without stops.
fn least_at(per_stop: f64, stops: u64) -> u64 {
    if stops == 0 {
        return 0;
    }
    let mut t = (per_stop * stops as f64).ceil().max(0.0) as u64;
    while (t as f64) / (stops as f64) < per_stop {
        t += 1;
    }
    t
}

#[cfg(test)]
#[path = "residue_tests.rs"]
pub(crate) mod tests;
