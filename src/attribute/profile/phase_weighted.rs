//! Phase-weighted category shares of the sampled exec runs: one account of where the time goes.
//!
//! The sampler slows the target where no sample shows it: a sampled run's own kernel-exec
//! phase reads ~207 µs of task-clock for rustc --version where the unsampled phase reads
//! ~132 µs, and a `perf record -a -g` beside a plain profile moves that phase from 116–133 to
//! 165–261 µs. Pooled shares (a category's samples over all samples) weight each phase by how
//! long it ran *under the sampler*, so the sampler's cost inside execve inflates `exec:
//! kernel` and the category disagrees with the phase it belongs to.
//!
//! The estimator here post-stratifies by phase: a phase's samples tell its *composition*, the
//! unsampled per-object runs (same boundaries, same counters) tell its *weight*:
//!
//! share(c) = Σ_s (c's samples in s / s's samples) × (s's CPU / Σ CPU), µs = share × CPU.
//!
//! The strata are the spans of the per-object runs ("relocation: libc.so.6", ...), "threads
//! and children" (their CPU counted apart), and one stratum for the process's CPU outside
//! every span ([`OUTSIDE`]: the exit path after the last stop and gaps between spans, whose
//! weight is the run's total less its spans) into which "after the exit stop", "other" and any
//! sampled span the measured runs do not have fall. A stratum's weight is the median of its
//! CPU over the measured runs. A stratum with CPU but no samples takes the composition of its
//! phase kind's samples (the other objects of that phase); with none there either it is left
//! out and the others are scaled to the whole CPU (another phase's composition would put,
//! say, `exec: kernel` into `main to exit`); the report names both kinds and their CPU. The 95% interval is one bootstrap: sampled runs and measured runs are
//! each drawn with replacement, the same formula applied, and the interval widened to hold
//! the point.

use std::collections::{BTreeMap, HashMap};

use super::aggregate::{corrected, ns, per_stop_ns};
use crate::attribute::breakdown::{
    breakdown_in_windows, Breakdown, PhaseCell, PhaseRow, SpanInfo, Unit, Window,
    MIN_UNITS_FOR_INTERVAL,
};
use crate::attribute::categories::Category;
use crate::record::{Instrumentation, Run};
use crate::stats::median;
use crate::symbolize::samples::SymbolizedStack;

/// The stratum of the CPU outside every span of a run.
pub const OUTSIDE: &str = "outside every phase";
/// The stratum of the threads' and children's CPU (the sampled runs' label for them too).
pub const CHILDREN: &str = "threads and children";

/// Where a stratum's composition came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Composition {
    /// Its own samples.
    Own,
    /// No sample of its own: the samples of its phase kind (every object of that phase).
    Phase,
    /// No sample of its phase either: left out of the shares (the other strata's times are
    /// scaled to the whole CPU); a composition borrowed from other phases would put, say,
    /// `exec: kernel` into `main to exit`.
    LeftOut,
}

/// One stratum of the phase-weighted shares (JSON `profile.breakdown_weights`).
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseWeight {
    /// The span label ("kernel exec", "relocation: libc.so.6"), [`CHILDREN`] or [`OUTSIDE`].
    pub span: String,
    /// Its CPU per exec in the measured (unsampled) runs, median over them.
    pub cpu_ns: f64,
    /// The sampled runs' samples in it (instrumentation left out).
    pub samples: u64,
    pub composition: Composition,
}

/// The label a sampled run gives a segment (see `sampled.rs`): the phase, and the object's
/// file name for a per-object phase.
pub fn span_label(phase: crate::record::Phase, object: Option<&str>) -> String {
    match object {
        Some(o) => format!("{}: {}", phase.label(), o.rsplit('/').next().unwrap_or(o)),
        None => phase.label().to_string(),
    }
}

/// Each measured (per-object, unsampled) run's CPU per stratum, and each stratum's phase kind.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MeasuredStrata {
    pub kinds: BTreeMap<String, String>,
    pub runs: Vec<BTreeMap<String, f64>>,
    /// Whether [`OUTSIDE`]'s CPU came from uninstrumented runs (the per-object runs' own
    /// counters stop at the exit stop, so they cannot see the exit path after it).
    pub outside_from_reference: bool,
    /// The median exit teardown after the counters stop ([`Run::exit_uncounted_ns`]) that
    /// [`OUTSIDE`]'s CPU includes; None when no run measured it.
    pub exit_uncounted_ns: Option<f64>,
    /// Whether [`OUTSIDE`]'s CPU is the runs' exit measured by the scheduler
    /// ([`Run::exit_ns`]) rather than a difference of totals.
    pub exit_measured: bool,
}

/// The strata of the per-object runs in `raw`: each span's task-clock less its stops (as the
/// phase table corrects them), its threads' and children's ([`CHILDREN`]), and [`OUTSIDE`]:
/// the median uninstrumented run's own CPU less this run's corrected spans when `raw` has
/// uninstrumented runs (they count the exit path after the exit stop), else the run's own
/// total less its spans' raw task-clock (zero when its counters stop at the exit stop); but
/// when the run measured its exit by the scheduler ([`Run::exit_ns`]), that exit.
pub fn measured_strata(raw: &[Run]) -> MeasuredStrata {
    let mut m = MeasuredStrata::default();
    let plain: Vec<f64> = raw
        .iter()
        .filter(|r| r.instrumentation == Instrumentation::None)
        .filter_map(|r| ns(&r.total))
        .collect();
    let plain = median(&plain);
    m.outside_from_reference = plain.is_some();
    m.exit_measured = raw
        .iter()
        .any(|r| r.instrumentation == Instrumentation::PerObject && r.exit_ns.is_some());
    m.exit_uncounted_ns = median(
        &raw.iter()
            .filter(|r| r.instrumentation == Instrumentation::PerObject)
            .filter_map(|r| r.exit_uncounted_ns.map(|e| e as f64))
            .collect::<Vec<_>>(),
    );
    for r in raw
        .iter()
        .filter(|r| r.instrumentation == Instrumentation::PerObject)
    {
        let per_stop = per_stop_ns(r, None).unwrap_or(0.0);
        let mut w: BTreeMap<String, f64> = BTreeMap::new();
        let (mut spans_raw, mut spans) = (0.0, 0.0);
        for s in &r.segments {
            let (Some(v), Some(raw_v)) = (corrected(s, per_stop), ns(&s.counters)) else {
                continue;
            };
            let label = span_label(s.phase, s.object.as_deref());
            m.kinds
                .entry(label.clone())
                .or_insert_with(|| s.phase.label().to_string());
            *w.entry(label).or_insert(0.0) += v;
            spans_raw += raw_v;
            spans += v;
        }
        // The exit measured by the scheduler is this stratum: its samples are the exit's, and a
        // difference between the runs without ptrace and the spans is no stratum's (the scaling
        // to the CPU per exec spreads it over all). Else, as before it was measured, that
        // difference.
        let outside = match (r.exit_ns, plain, ns(&r.total)) {
            (Some(e), _, _) => Some(e as f64),
            (None, Some(u), _) => Some(u - spans),
            (None, None, Some(t)) => Some(t - spans_raw),
            (None, None, None) => None,
        };
        if let Some(o) = outside {
            w.insert(OUTSIDE.into(), o.max(0.0));
        }
        // The inherited counters' excess over the exit stop holds the target's own exit as far
        // as its counter saw it: that part is in the exit above.
        let counted_exit = match (r.exit_ns, r.exit_uncounted_ns) {
            (Some(e), Some(u)) => e.saturating_sub(u) as f64,
            _ => 0.0,
        };
        w.insert(
            CHILDREN.into(),
            (r.children.as_ref().and_then(ns).unwrap_or(0.0) - counted_exit).max(0.0),
        );
        m.runs.push(w);
    }
    m.kinds.insert(OUTSIDE.into(), OUTSIDE.into());
    m.kinds.insert(CHILDREN.into(), CHILDREN.into());
    m
}

/// One sampled run's samples: (stratum, category) -> count, the strata already mapped
/// ([`stratum_of`]).
pub type UnitCounts = BTreeMap<(String, Category), u64>;

/// Each sampled run's samples by stratum and category, classified as the pooled breakdown
/// classifies them: the same function ([`breakdown_in_windows`], with the same windows) over
/// that run alone.
pub fn unit_counts(
    stacks: &[SymbolizedStack],
    units: &[Unit],
    spans: &HashMap<String, SpanInfo>,
    kinds: &BTreeMap<String, String>,
    windows: &[Window],
) -> Vec<UnitCounts> {
    units
        .iter()
        .map(|u| {
            let (one, _) = breakdown_in_windows(
                "exec",
                stacks,
                std::slice::from_ref(u),
                CHILDREN,
                false,
                spans,
                windows,
            );
            let mut c = UnitCounts::new();
            for row in &one.phase_table {
                let s = stratum_of(&row.span, kinds);
                for cell in &row.categories {
                    *c.entry((s.clone(), cell.category)).or_insert(0) += cell.samples;
                }
            }
            c
        })
        .collect()
}

/// The stratum a sampled span label falls in: its own when the measured runs have it, else
/// [`OUTSIDE`] ("after the exit stop", "other", a span the measured runs lack).
pub fn stratum_of(label: &str, kinds: &BTreeMap<String, String>) -> String {
    if kinds.contains_key(label) {
        label.to_string()
    } else {
        OUTSIDE.to_string()
    }
}

/// The per-stratum weights of some measured runs: the median over the runs that have it.
fn median_weights(runs: &[&BTreeMap<String, f64>]) -> BTreeMap<String, f64> {
    let mut by: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in runs {
        for (k, v) in r.iter() {
            by.entry(k.as_str()).or_default().push(*v);
        }
    }
    by.into_iter()
        .filter_map(|(k, v)| median(&v).map(|m| (k.to_string(), m)))
        .collect()
}

/// Per stratum, where its composition came from and, when borrowed, that composition
/// (category -> fraction).
type Sources = BTreeMap<String, (Composition, BTreeMap<Category, f64>)>;

/// The estimate from pooled counts and weights: per category its share, and per stratum its
/// composition's source.
fn estimate(
    counts: &BTreeMap<(String, Category), u64>,
    kinds: &BTreeMap<String, String>,
    weights: &BTreeMap<String, f64>,
) -> (BTreeMap<Category, f64>, Sources) {
    let mut by_stratum: BTreeMap<&str, BTreeMap<Category, u64>> = BTreeMap::new();
    let mut by_kind: BTreeMap<&str, BTreeMap<Category, u64>> = BTreeMap::new();
    for ((s, c), n) in counts {
        *by_stratum.entry(s).or_default().entry(*c).or_insert(0) += n;
        let k = kinds.get(s).map_or(s.as_str(), String::as_str);
        *by_kind.entry(k).or_default().entry(*c).or_insert(0) += n;
    }
    let mut shares: BTreeMap<Category, f64> = BTreeMap::new();
    let mut how = BTreeMap::new();
    let mut used: Vec<(&BTreeMap<Category, u64>, f64)> = Vec::new();
    for (s, &w) in weights {
        if w <= 0.0 {
            continue;
        }
        let kind = kinds.get(s).map_or(s.as_str(), String::as_str);
        let (comp, source) = match (by_stratum.get(s.as_str()), by_kind.get(kind)) {
            (Some(c), _) => (Some(c), Composition::Own),
            (None, Some(c)) => (Some(c), Composition::Phase),
            (None, None) => (None, Composition::LeftOut),
        };
        let n: u64 = comp.map_or(0, |c| c.values().sum());
        let borrowed = match comp {
            Some(c) if source == Composition::Phase && n > 0 => {
                c.iter().map(|(c, k)| (*c, *k as f64 / n as f64)).collect()
            }
            _ => BTreeMap::new(),
        };
        how.insert(s.clone(), (source, borrowed));
        if let Some(c) = comp.filter(|_| n > 0) {
            used.push((c, w));
        }
    }
    let total_w: f64 = used.iter().map(|u| u.1).sum();
    if total_w <= 0.0 {
        return (shares, how);
    }
    for (comp, w) in used {
        let n: u64 = comp.values().sum();
        for (c, k) in comp {
            *shares.entry(*c).or_insert(0.0) += *k as f64 / n as f64 * w / total_w;
        }
    }
    (shares, how)
}

fn pooled(units: &[&UnitCounts]) -> BTreeMap<(String, Category), u64> {
    let mut p = BTreeMap::new();
    for u in units {
        for (k, n) in u.iter() {
            *p.entry(k.clone()).or_insert(0) += n;
        }
    }
    p
}

/// The phase-weighted shares with their intervals, and the strata.
#[derive(Debug, Clone, PartialEq)]
pub struct Weighted {
    pub shares: BTreeMap<Category, (f64, Option<(f64, f64)>)>,
    pub strata: Vec<PhaseWeight>,
    /// The composition each stratum with no sample of its own borrowed (category -> fraction).
    pub borrowed: BTreeMap<String, BTreeMap<Category, f64>>,
    /// Each stratum's phase (as [`MeasuredStrata::kinds`]).
    pub kinds: BTreeMap<String, String>,
    /// As [`MeasuredStrata::outside_from_reference`].
    pub outside_from_reference: bool,
    /// As [`MeasuredStrata::exit_uncounted_ns`].
    pub exit_uncounted_ns: Option<f64>,
    /// As [`MeasuredStrata::exit_measured`].
    pub exit_measured: bool,
}

/// The phase-weighted shares of `units` (one per sampled run) by `measured`'s CPU; intervals
/// from [`MIN_UNITS_FOR_INTERVAL`] sampled runs with samples on.
pub fn weighted(units: &[UnitCounts], measured: &MeasuredStrata) -> Weighted {
    let all_units: Vec<&UnitCounts> = units.iter().collect();
    let all_runs: Vec<&BTreeMap<String, f64>> = measured.runs.iter().collect();
    let counts = pooled(&all_units);
    let weights = median_weights(&all_runs);
    let (point, how) = estimate(&counts, &measured.kinds, &weights);
    let with_samples = units.iter().filter(|u| u.values().any(|n| *n > 0)).count();
    let mut draws: BTreeMap<Category, Vec<f64>> = BTreeMap::new();
    if with_samples >= MIN_UNITS_FOR_INTERVAL && !all_runs.is_empty() {
        let mut next = crate::stats::draws();
        for _ in 0..RESAMPLES {
            let u: Vec<&UnitCounts> = (0..units.len())
                .map(|_| &units[crate::stats::pick(&mut next, units.len())])
                .collect();
            let r: Vec<&BTreeMap<String, f64>> = (0..all_runs.len())
                .map(|_| all_runs[crate::stats::pick(&mut next, all_runs.len())])
                .collect();
            let (s, _) = estimate(&pooled(&u), &measured.kinds, &median_weights(&r));
            for c in point.keys() {
                draws
                    .entry(*c)
                    .or_default()
                    .push(s.get(c).copied().unwrap_or(0.0));
            }
        }
    }
    let shares = point
        .iter()
        .map(|(c, &p)| {
            let ci = draws
                .get_mut(c)
                .map(|v| crate::stats::interval95_around(v, p));
            (*c, (p, ci))
        })
        .collect();
    let strata = weights
        .iter()
        .map(|(s, &w)| PhaseWeight {
            span: s.clone(),
            cpu_ns: w,
            samples: counts
                .iter()
                .filter(|((k, _), _)| k == s)
                .map(|(_, n)| n)
                .sum(),
            composition: how.get(s).map_or(Composition::Own, |h| h.0),
        })
        .collect();
    let borrowed = how
        .into_iter()
        .filter(|(_, h)| h.0 == Composition::Phase)
        .map(|(k, h)| (k, h.1))
        .collect();
    Weighted {
        shares,
        strata,
        borrowed,
        kinds: measured.kinds.clone(),
        outside_from_reference: measured.outside_from_reference,
        exit_uncounted_ns: measured.exit_uncounted_ns,
        exit_measured: measured.exit_measured,
    }
}

/// Resamples of the bootstrap (as the pooled breakdown's).
const RESAMPLES: usize = 2000;

/// Puts the phase-weighted shares in `b`: each category's share, interval and time per exec
/// (share × `cpu_ns`), the exec-kernel parts in proportion to their category, the phase
/// table's cells as each stratum's composition × its weight; and the notes that say so.
pub fn apply(b: &mut Breakdown, w: &Weighted, cpu_ns: f64, measured_runs: usize) {
    let pooled_ek = b
        .categories
        .iter()
        .find(|c| c.category == Category::ExecKernel)
        .map(|c| c.share);
    for c in &mut b.categories {
        let (s, ci) = w.shares.get(&c.category).copied().unwrap_or((0.0, None));
        c.share = s;
        c.share_ci95 = ci;
        c.ns_per_exec_or_fork = Some(crate::attribute::breakdown::Estimate {
            value: s * cpu_ns,
            ci95: ci.map(|(lo, hi)| (lo * cpu_ns, hi * cpu_ns)),
        });
    }
    b.categories
        .sort_by(|x, y| y.share.total_cmp(&x.share).then(y.samples.cmp(&x.samples)));
    if let (Some(p), Some((s, _))) = (pooled_ek, w.shares.get(&Category::ExecKernel)) {
        for part in &mut b.exec_kernel_parts {
            part.share = if p > 0.0 { part.share / p * s } else { 0.0 };
            part.ns_per_exec_or_fork = part.share * cpu_ns;
        }
    }
    let total_w: f64 = w
        .strata
        .iter()
        .filter(|s| s.composition != Composition::LeftOut)
        .filter(|s| s.samples > 0 || s.composition == Composition::Phase)
        .map(|s| s.cpu_ns.max(0.0))
        .sum();
    let kinds: BTreeMap<String, String> = w
        .strata
        .iter()
        .map(|s| (s.span.clone(), s.span.clone()))
        .collect();
    // Rows: each sampled span's cells are its samples over its stratum's samples × the
    // stratum's weight (spans sharing the outside stratum split it by their samples).
    for row in &mut b.phase_table {
        let stratum = stratum_of(&row.span, &kinds);
        let Some(st) = w.strata.iter().find(|s| s.span == stratum) else {
            continue;
        };
        let frac = if st.samples > 0 && total_w > 0.0 {
            st.cpu_ns.max(0.0) / total_w / st.samples as f64
        } else {
            0.0
        };
        for c in &mut row.categories {
            c.share = c.samples as f64 * frac;
            c.ns_per_exec_or_fork = c.share * cpu_ns;
        }
        row.share = row.categories.iter().map(|c| c.share).sum();
        row.ns_per_exec_or_fork = row.categories.iter().map(|c| c.ns_per_exec_or_fork).sum();
    }
    // Strata with CPU and no sample of their own: a row of their borrowed composition (no
    // samples), so the rows still add up to the categories.
    for (span, comp) in &w.borrowed {
        let Some(st) = w.strata.iter().find(|s| &s.span == span) else {
            continue;
        };
        if st.cpu_ns <= 0.0 || total_w <= 0.0 {
            continue;
        }
        let phase = w.kinds.get(span).cloned().unwrap_or_else(|| span.clone());
        let object = span
            .strip_prefix(phase.as_str())
            .and_then(|o| o.strip_prefix(": "))
            .map(str::to_string);
        let mut cells: Vec<PhaseCell> = comp
            .iter()
            .map(|(c, f)| {
                let share = f * st.cpu_ns / total_w;
                PhaseCell {
                    category: *c,
                    samples: 0,
                    share,
                    ns_per_exec_or_fork: share * cpu_ns,
                }
            })
            .collect();
        cells.sort_by(|a, b| b.share.total_cmp(&a.share));
        b.phase_table.push(PhaseRow {
            span: span.clone(),
            phase,
            object,
            samples: 0,
            share: cells.iter().map(|c| c.share).sum(),
            ns_per_exec_or_fork: cells.iter().map(|c| c.ns_per_exec_or_fork).sum(),
            categories: cells,
        });
    }
    let of = |c: Composition| -> (Vec<&str>, f64) {
        let v: Vec<&PhaseWeight> = w
            .strata
            .iter()
            .filter(|s| s.composition == c && s.cpu_ns > 0.0)
            .collect();
        (
            v.iter().map(|s| s.span.as_str()).collect(),
            v.iter().map(|s| s.cpu_ns).sum(),
        )
    };
    let (names, ns) = of(Composition::Phase);
    if !names.is_empty() {
        b.notes.push(format!(
            "{} span{} with no sample of {} own ({:.1} µs of the measured CPU) took the composition of the other objects' samples in the same phase, in rows of no samples: {}",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            if names.len() == 1 { "its" } else { "their" },
            ns / 1e3,
            names.join(", ")
        ));
    }
    let (names, ns) = of(Composition::LeftOut);
    if !names.is_empty() {
        b.notes.push(format!(
            "{} phase{} with no sample at all ({:.1} µs of the measured CPU) left out of the shares, the other phases' times scaled to the whole CPU (more sampled runs: --sample-runs): {}",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            ns / 1e3,
            names.join(", ")
        ));
    }
    b.notes.push(format!(
        "shares are phase-weighted: each phase's samples give its composition, weighted by the phase's CPU in the {measured_runs} measured runs without the sampler (the sampler slows some phases, execve most, in ways no sample shows)"
    ));
    let (n, cpu) = w
        .strata
        .iter()
        .find(|s| s.span == OUTSIDE)
        .map_or((0, 0.0), |s| (s.samples, s.cpu_ns));
    if n > 0 {
        b.notes.push(if let (true, Some(e)) = (w.exit_measured, w.exit_uncounted_ns) {
            format!(
                "{n} samples after the exit stop or between phases stand for the CPU outside every phase ({:.1} µs: the target's own CPU after its exit stop, by the scheduler; {:.1} µs of it after its counters stopped)",
                cpu / 1e3,
                e / 1e3
            )
        } else if cpu > 0.0 {
            format!(
                "{n} samples after the exit stop or between phases stand for the CPU outside every phase ({:.1} µs: {})",
                cpu / 1e3,
                if w.outside_from_reference {
                    "the runs without ptrace less the measured phases"
                } else {
                    "the measured runs' totals less their phases"
                }
            )
        } else {
            format!(
                "{n} samples after the exit stop or between phases are left out: the measured runs put no CPU outside their phases ({})",
                if w.outside_from_reference {
                    "the runs without ptrace took no more than the phases"
                } else {
                    "their counters stop at the exit stop; the reference runs, without --no-reference, measure the exit after it"
                }
            )
        });
    }
}

#[cfg(test)]
#[path = "phase_weighted_tests.rs"]
mod tests;
