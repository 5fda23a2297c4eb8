//! The unit costs of the attribution, fitted on this run's own measurements: the models,
//! their non-negative least-squares fits across the objects of both builds, and the bootstrap
//! over the runs that gives each unit cost (and the explained total) its 95% interval.
//!
//! In: both [`Side`]s. Out: [`Costs`] (relocation ≈ per object + per relative relocation +
//! per lookup + per probe; initializers ≈ per object with initializers + per initializer;
//! search & mapping ≈ fixed + per object, across the runs of both builds), and for the
//! intervals a [`Bootstrap`] of [`RESAMPLES`] refits on resampled runs. Pricing each object's
//! change with them is [`super::attribution`]'s; predictions from them are [`super::whatif`]'s.

use std::collections::BTreeMap;

use super::attribution::ObjectInputs;
use super::fit::{nnls, predict, LinearFit};
use super::inputs::{median_of, Side};

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
pub(crate) fn total_of(sides: [&Side; 2], c: &Costs) -> f64 {
    let mut t = 0.0;
    for k in keys(sides) {
        let (ob, oh) = (sides[0].get(&k), sides[1].get(&k));
        for (fit, x) in [(&c.reloc, reloc_x as Regressors), (&c.init, init_x)] {
            if let Some(f) = fit {
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

/// Each unit cost's values over the resamples, keyed by (fit, coefficient index), and the
/// explained total of each resample.
pub(crate) struct Bootstrap {
    pub draws: BTreeMap<(String, usize), Vec<f64>>,
    pub totals: Vec<f64>,
}

/// Resamples each side's runs [`RESAMPLES`] times, refitting the unit costs each time.
pub(crate) fn bootstrap(sides: [&Side; 2], differ: bool) -> Bootstrap {
    let [b, h] = sides;
    let mut next = crate::attribute::stats::draws();
    let mut draws: BTreeMap<(String, usize), Vec<f64>> = BTreeMap::new();
    let mut totals = Vec::new();
    for _ in 0..RESAMPLES {
        let pb: Vec<usize> = (0..b.reloc.len())
            .map(|_| (next() % b.reloc.len() as u64) as usize)
            .collect();
        let ph: Vec<usize> = (0..h.reloc.len())
            .map(|_| (next() % h.reloc.len() as u64) as usize)
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
        totals.push(total_of(sides, &r));
    }
    Bootstrap { draws, totals }
}
