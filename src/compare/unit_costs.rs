//! The unit costs of the attribution, fitted on this run's own measurements: the models,
//! their non-negative least-squares fits across the objects of both builds, and the bootstrap
//! over the runs that gives each unit cost (and the explained total) its 95% interval.
//!
//! In: both [`Side`]s. Out: [`Costs`] (relocation ≈ per object + per relative relocation +
//! per lookup + per probe; initializers ≈ per object with initializers + per initializer;
//! search & mapping ≈ fixed + per object, across the runs of both builds), and for the
//! intervals a [`Bootstrap`] of [`RESAMPLES`] refits on resampled runs: each unit cost's, the
//! explained total's, the explained share's (the total over the same resample's change of
//! start-up CPU) and each what-if prediction's. Pricing each object's
//! change with them is [`super::attribution`]'s; predictions from them are [`super::whatif`]'s.

use std::collections::BTreeMap;

use super::attribution::ObjectInputs;
use super::fit::{nnls, LinearFit};
use super::inputs::{median_of, Side};
use crate::stats::{interval95, predict};

/// Bootstrap resamples of the runs for the unit costs' intervals.
pub const RESAMPLES: usize = 200;

/// The regressors of one model for one object's inputs.
pub(crate) type Regressors = fn(&ObjectInputs) -> Vec<f64>;

pub(crate) const RELOC_UNITS: [&str; 4] = ["object", "relative relocations", "lookups", "probes"];
pub(crate) fn reloc_x(o: &ObjectInputs) -> Vec<f64> {
    vec![1.0, o.relative as f64, o.lookups as f64, o.probes as f64]
}
pub(crate) const INIT_UNITS: [&str; 2] = ["object with initializers", "initializers"];
pub(crate) fn init_x(o: &ObjectInputs) -> Vec<f64> {
    vec![(o.initializers > 0) as u8 as f64, o.initializers as f64]
}

/// Fits one per-object model on the medians of both sides (runs picked by `pick`).
fn fit_objects(
    sides: [&Side; 2],
    runs: [&[BTreeMap<String, f64>]; 2],
    pick: [Option<&[usize]>; 2],
    x: Regressors,
) -> Option<LinearFit> {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for i in 0..2 {
        for (k, o) in &sides[i].objects {
            if let Some(m) = median_of(runs[i], k, pick[i]) {
                xs.push(x(o));
                ys.push(m);
            }
        }
    }
    nnls(&xs, &ys, &[])
}

/// Fits search & mapping CPU = fixed + per object × objects over the runs of both sides.
fn fit_mapping(sides: [&Side; 2], pick: [Option<&[usize]>; 2]) -> Option<LinearFit> {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for i in 0..2 {
        let n = sides[i].objects.len() as f64;
        let all: Vec<usize> = (0..sides[i].mapping.len()).collect();
        for &r in pick[i].unwrap_or(&all) {
            if let Some(v) = sides[i].mapping[r] {
                xs.push(vec![1.0, n]);
                ys.push(v);
            }
        }
    }
    nnls(&xs, &ys, &[0])
}

/// The unit costs of one resample (or of the data itself, `pick` None).
pub(crate) struct Costs {
    pub reloc: Option<LinearFit>,
    pub init: Option<LinearFit>,
    pub mapping: Option<LinearFit>,
}

pub(crate) fn costs(sides: [&Side; 2], pick: [Option<&[usize]>; 2], objects_differ: bool) -> Costs {
    Costs {
        reloc: fit_objects(sides, [&sides[0].reloc, &sides[1].reloc], pick, reloc_x),
        init: fit_objects(sides, [&sides[0].init, &sides[1].init], pick, init_x),
        mapping: if objects_differ {
            fit_mapping(sides, pick)
        } else {
            None
        },
    }
}

/// The keys of both sides: HEAD's load order, then BASE's removed objects.
pub(crate) fn keys(sides: [&Side; 2]) -> Vec<String> {
    let mut k: Vec<String> = sides[1].objects.iter().map(|o| o.0.clone()).collect();
    for (b, _) in &sides[0].objects {
        if !k.contains(b) {
            k.push(b.clone());
        }
    }
    k
}

/// Σ over objects of the model's change (unrounded), for the bootstrap of the total.
/// An object one build loads has its initializers priced at their own measured CPU (in the
/// same runs, `pick`), as the attribution's item is.
pub(crate) fn total_of(sides: [&Side; 2], c: &Costs, pick: [Option<&[usize]>; 2]) -> f64 {
    let mut t = 0.0;
    for k in keys(sides) {
        let (ob, oh) = (sides[0].get(&k), sides[1].get(&k));
        for (fit, x, init) in [
            (&c.reloc, reloc_x as Regressors, false),
            (&c.init, init_x, true),
        ] {
            let own = (init && fit.is_some())
                .then(|| super::attribution::one_sided_initializers(sides, &k, pick))
                .flatten();
            if let Some(own) = own {
                t += own.ns;
            } else if let Some(f) = fit {
                t += oh.map_or(0.0, |o| predict(&x(o), &f.coef))
                    - ob.map_or(0.0, |o| predict(&x(o), &f.coef));
            }
        }
    }
    if let Some(f) = &c.mapping {
        t += f.coef[1] * (sides[1].objects.len() as f64 - sides[0].objects.len() as f64);
    }
    t
}

/// The change of start-up CPU in the per-object runs (`pick`: a resample of them, None: all):
/// Σ over the phases from execve to main of median HEAD − median BASE (a phase one side lacks,
/// an added object's, counting 0 there). What the attribution explains, measured on the runs
/// its unit costs are fitted on and by the same estimator (the median of each phase, as each
/// object's fit point is): the remainder is then what the model does not price, not the
/// difference between two kinds of run. None when a side has no counted phase.
pub(crate) fn instrumented_delta(sides: [&Side; 2], pick: [Option<&[usize]>; 2]) -> Option<f64> {
    phase_delta([&sides[0].startup, &sides[1].startup], pick)
}

/// Σ over the phases of (median HEAD − median BASE), an absent side counting 0.
pub(crate) fn phase_delta(
    runs: [&[BTreeMap<String, f64>]; 2],
    pick: [Option<&[usize]>; 2],
) -> Option<f64> {
    let mut phases: Vec<&String> = runs
        .iter()
        .flat_map(|s| s.iter().flat_map(|r| r.keys()))
        .collect();
    phases.sort();
    phases.dedup();
    if runs.iter().any(|s| s.iter().all(|r| r.is_empty())) {
        return None;
    }
    let mut d = 0.0;
    for k in phases {
        let h = median_of(runs[1], k, pick[1]).unwrap_or(0.0);
        let b = median_of(runs[0], k, pick[0]).unwrap_or(0.0);
        d += h - b;
    }
    Some(d)
}

/// The explained share's 95% interval: each resample's explained total over the change of the
/// same resampled runs (numerator and denominator move together); None unless every resample
/// has a non-zero change (percentiles over a subset would not mean what they say).
pub(crate) fn share_interval(totals: &[f64], deltas: &[Option<f64>]) -> Option<(f64, f64)> {
    let mut shares: Vec<f64> = totals
        .iter()
        .zip(deltas)
        .filter_map(|(t, d)| d.filter(|d| *d != 0.0).map(|d| t / d))
        .collect();
    if shares.len() != totals.len() {
        return None;
    }
    interval95(&mut shares)
}

/// Each unit cost's values over the resamples, keyed by (fit, coefficient index), and the
/// explained total of each resample, with the change of start-up CPU on the same resampled
/// runs, and each what-if prediction's values (keyed by its `change`).
pub(crate) struct Bootstrap {
    pub draws: BTreeMap<(String, usize), Vec<f64>>,
    pub totals: Vec<f64>,
    pub deltas: Vec<Option<f64>>,
    pub what_if: BTreeMap<String, Vec<f64>>,
}

/// Resamples each side's runs [`RESAMPLES`] times, refitting the unit costs each time.
pub(crate) fn bootstrap(sides: [&Side; 2], differ: bool, added: &[String]) -> Bootstrap {
    let [b, h] = sides;
    let mut next = crate::stats::draws();
    let mut draws: BTreeMap<(String, usize), Vec<f64>> = BTreeMap::new();
    let (mut totals, mut deltas) = (Vec::new(), Vec::new());
    let mut what_if: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for _ in 0..RESAMPLES {
        let pb: Vec<usize> = (0..b.reloc.len())
            .map(|_| crate::stats::pick(&mut next, b.reloc.len()))
            .collect();
        let ph: Vec<usize> = (0..h.reloc.len())
            .map(|_| crate::stats::pick(&mut next, h.reloc.len()))
            .collect();
        let r = costs(sides, [Some(&pb), Some(&ph)], differ);
        for (name, f) in [
            ("relocation", &r.reloc),
            ("initializers", &r.init),
            ("search & mapping", &r.mapping),
        ] {
            if let Some(f) = f {
                for (j, v) in f.coef.iter().enumerate() {
                    draws.entry((name.into(), j)).or_default().push(*v);
                }
            }
        }
        totals.push(total_of(sides, &r, [Some(&pb), Some(&ph)]));
        deltas.push(instrumented_delta(sides, [Some(&pb), Some(&ph)]));
        for w in super::whatif::what_if(sides, &r, added) {
            if let Some(ns) = w.predicted_ns {
                what_if.entry(w.change).or_default().push(ns);
            }
        }
    }
    Bootstrap {
        draws,
        totals,
        deltas,
        what_if,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(name: &str) -> (String, ObjectInputs) {
        (
            name.into(),
            crate::compare::attribution::object_inputs("x", name),
        )
    }

    /// `reloc`: per run, (object, its relocation ns); the start-up phases are the same.
    fn side(objects: &[&str], reloc: &[Vec<(&str, f64)>]) -> Side {
        let runs: Vec<BTreeMap<String, f64>> = reloc
            .iter()
            .map(|r| r.iter().map(|(k, v)| (k.to_string(), *v)).collect())
            .collect();
        Side {
            objects: objects.iter().map(|o| object(o)).collect(),
            startup: runs
                .iter()
                .map(|r| {
                    let mut m: BTreeMap<String, f64> = r
                        .iter()
                        .map(|(k, v)| (format!("relocation: {k}"), *v))
                        .collect();
                    m.insert("kernel exec".into(), 90_000.0);
                    m
                })
                .collect(),
            startup_raw: Vec::new(),
            init: vec![BTreeMap::new(); runs.len()],
            mapping: vec![None; runs.len()],
            reloc: runs,
        }
    }

    /// BASE: the program alone, 1,000 ns of relocation every run. HEAD adds libx.so, whose
    /// relocation takes 1,000 ns in half its runs and 4,000 in the other half. Only "per
    /// object" is identifiable (every other count is 0), so the fit is the mean of the three
    /// medians: (1,000 + 1,000 + m) / 3, m libx's median: 2,500 on the data, so "without
    /// libx.so" is −1,500 ns, and the start-up change in these runs is m = 2,500 ns, of which
    /// the model explains 1,500 (60%). A resample of HEAD's ten runs has m = 1,000 (six or
    /// more fast runs), 2,500 (five) or 4,000 (four or fewer), each far more likely than
    /// 2.5%: the prediction's interval is [−(2,000 + 4,000) / 3, −(2,000 + 1,000) / 3] and the
    /// share's [(2,000 + 4,000) / (3 · 4,000), (2,000 + 1,000) / (3 · 1,000)] = [50%, 100%].
    #[test]
    fn what_if_and_share_intervals_come_from_the_same_arithmetic_per_resample() {
        let base = side(&["(target)"], &vec![vec![("(target)", 1000.0)]; 10]);
        let head_runs: Vec<Vec<(&str, f64)>> = (0..10)
            .map(|i| vec![("(target)", 1000.0), ("libx.so", [1000.0, 4000.0][i % 2])])
            .collect();
        let head = side(&["(target)", "libx.so"], &head_runs);
        let sides = [&base, &head];
        let added = vec!["libx.so".to_string()];
        assert_eq!(instrumented_delta(sides, [None, None]), Some(2500.0));
        let c = costs(sides, [None, None], true);
        assert!((total_of(sides, &c, [None, None]) - 1500.0).abs() < 1e-6);
        let mut w = super::super::whatif::what_if(sides, &c, &added);
        assert_eq!(w[0].change, "without libx.so");
        assert_eq!(w[0].predicted_ns, Some(-1500.0));
        let Bootstrap {
            totals,
            deltas,
            what_if: mut draws,
            ..
        } = bootstrap(sides, true, &added);
        super::super::whatif::intervals(&mut w, &mut draws, totals.len());
        assert_eq!(w[0].ci95_ns, Some((-2000.0, -1000.0)));
        let (lo, hi) = share_interval(&totals, &deltas).expect("a share interval");
        assert!(
            (lo - 0.5).abs() < 1e-12 && (hi - 1.0).abs() < 1e-12,
            "{lo} {hi}"
        );
        // A resample without a change has no share: no interval over the rest.
        let mut d = deltas.clone();
        d[0] = Some(0.0);
        assert_eq!(share_interval(&totals, &d), None);
    }

    /// The change the model explains is Σ of each phase's median change, an added object's
    /// phase counting 0 on BASE: here (5,000 − 1,000) + 4,000, where the median of HEAD's run
    /// totals (96,000, 95,010, 99,000 with the kernel's 90,000) less BASE's 91,000 would be
    /// 5,000.
    #[test]
    fn the_instrumented_change_sums_the_phase_medians() {
        let base = side(&["(target)"], &vec![vec![("(target)", 1000.0)]; 3]);
        let head_runs: Vec<Vec<(&str, f64)>> =
            [(5000.0, 1000.0), (1010.0, 4000.0), (5000.0, 4000.0)]
                .iter()
                .map(|&(t, x)| vec![("(target)", t), ("libx.so", x)])
                .collect();
        let head = side(&["(target)", "libx.so"], &head_runs);
        assert_eq!(
            instrumented_delta([&base, &head], [None, None]),
            Some(8000.0)
        );
        // A resample: HEAD's runs 1, 1 and 0 (medians 1,010 and 4,000).
        assert_eq!(
            instrumented_delta([&base, &head], [None, Some(&[1, 1, 0][..])]),
            Some(4010.0)
        );
    }
}
