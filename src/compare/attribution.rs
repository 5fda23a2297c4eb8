//! Attribution of the start-up CPU delta to its factors, in time, with unit costs measured in
//! this very run.
//!
//! In: two [`Document`]s (their `deps` closure and lookup model: the counts per object; their
//! per-object `profile` runs: the CPU of each object's relocation and initializers, and of
//! ld.so's search and mapping) and the verdict's measured start-up delta. Out: an
//! [`Attribution`]: unit costs fitted by non-negative least squares across the objects of
//! both builds (relocation ≈ per object + per relative relocation + per lookup + per probe;
//! initializers ≈ per object with initializers + per initializer; search & mapping ≈ fixed +
//! per object, across the runs of both builds), each with a 95% bootstrap interval over the
//! runs; then each object's change of counts × those unit costs, summed into parts and an
//! explained total, and the share of the measured delta it explains.
//!
//! Why fitted, never constants: a probe costs what it costs on this machine, with these hash
//! tables and this cache; the same run that shows the delta measures it. Each term is rounded
//! to whole ns, so the parts add up to the explained total exactly.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::fit::{interval95, nnls, predict, LinearFit};
use crate::record::{Instrumentation, Phase};
use crate::report::Document;

/// Bootstrap resamples of the runs for the unit costs' intervals.
pub const RESAMPLES: usize = 200;

/// One factor's change in one object, priced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Term {
    /// "object", "relative relocations", "lookups", "probes", "initializers", "objects".
    pub factor: String,
    pub base: f64,
    pub head: f64,
    pub delta: f64,
    /// The fitted unit cost (ns per unit).
    pub unit_ns: f64,
    /// delta × unit_ns, rounded to whole ns.
    pub ns: f64,
}

/// One object's (or the loader's) share of a part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub object: String,
    /// "added", "removed" or "changed".
    pub change: String,
    /// Σ terms' ns.
    pub ns: f64,
    /// The measured change of this object's phase (median HEAD − median BASE, an absent
    /// side counting 0), for comparison with the model's account.
    pub measured_ns: Option<f64>,
    pub terms: Vec<Term>,
}

/// A phase group: "relocation", "initializers", "search & mapping".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub factor: String,
    /// Σ items' ns.
    pub ns: f64,
    /// The measured change of the phase group (sum of the items' measured changes).
    pub measured_ns: Option<f64>,
    pub items: Vec<Item>,
}

/// A fitted unit cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitCost {
    /// The fit it comes from ("relocation", "initializers", "search & mapping").
    pub fit: String,
    /// "per relative relocation", "per probe", …
    pub unit: String,
    pub ns: f64,
    /// 95% percentile-bootstrap interval over the runs.
    pub ci95_ns: Option<(f64, f64)>,
}

/// How a fit was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitInfo {
    pub fit: String,
    /// "t = a·object + b·relative + c·lookups + d·probes, a..d ≥ 0".
    pub model: String,
    /// Points: objects × builds (relocation, initializers) or runs (search & mapping).
    pub points: usize,
    pub r_squared: Option<f64>,
}

/// The counts behind one object's unit-cost inputs, per side (from the `deps` section).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectInputs {
    /// "base" or "head".
    pub side: String,
    pub object: String,
    pub path: String,
    pub relative: u64,
    pub symbolic: u64,
    pub plt: u64,
    pub lazy_plt: u64,
    pub lookups: u64,
    pub probes: u64,
    /// Start-up lookups this object's own definitions answer (what -Bsymbolic saves).
    pub self_answered: u64,
    pub relr: u64,
    pub initializers: u64,
    /// Median CPU of its relocation / initializers over the per-object runs (None: not seen).
    pub relocation_ns: Option<f64>,
    pub initializers_ns: Option<f64>,
}

/// A prediction from the unit costs (never measured).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhatIf {
    pub change: String,
    /// Predicted change of HEAD's start-up CPU, ns (negative: faster). None: not predicted.
    pub predicted_ns: Option<f64>,
    /// The prediction is a bound (at most this much), not an estimate.
    #[serde(default)]
    pub bound: bool,
    pub basis: String,
}

/// The whole attribution.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// The verdict's start-up CPU change, median HEAD − median BASE (ns).
    pub measured_delta_ns: Option<f64>,
    /// Σ parts' ns.
    pub explained_ns: f64,
    /// 95% bootstrap interval of the explained total (runs resampled, unit costs refitted).
    pub explained_ci95_ns: Option<(f64, f64)>,
    pub unexplained_ns: Option<f64>,
    /// explained / measured, when the change is significant.
    pub explained_share: Option<f64>,
    pub parts: Vec<Part>,
    pub unit_costs: Vec<UnitCost>,
    pub fits: Vec<FitInfo>,
    pub inputs: Vec<ObjectInputs>,
    pub what_if: Vec<WhatIf>,
    pub notes: Vec<String>,
}

/// One side's per-object counts and per-run measurements.
pub(crate) struct Side {
    /// Objects in load order: (key, inputs).
    pub objects: Vec<(String, ObjectInputs)>,
    /// Per-object run → key → CPU ns.
    pub reloc: Vec<BTreeMap<String, f64>>,
    pub init: Vec<BTreeMap<String, f64>>,
    /// Per-object run → search & mapping CPU ns.
    pub mapping: Vec<Option<f64>>,
}

impl Side {
    pub fn get(&self, key: &str) -> Option<&ObjectInputs> {
        self.objects.iter().find(|o| o.0 == key).map(|o| &o.1)
    }
}

fn short(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// Reads one side; None (with the reason) when it lacks what the attribution needs.
pub(crate) fn side(doc: &Document, which: &str) -> Result<Side, String> {
    let deps = doc
        .deps
        .as_ref()
        .ok_or_else(|| format!("{which} has no deps section"))?;
    let prof = doc
        .profile
        .as_ref()
        .ok_or_else(|| format!("{which} has no profile section"))?;
    let c = &deps.closure;
    let lk: BTreeMap<&str, &crate::attribute::lookups::ObjectLookups> = deps
        .lookups
        .iter()
        .flat_map(|l| l.objects.iter().map(|o| (o.path.as_str(), o)))
        .collect();
    let mut by_path: BTreeMap<String, String> = BTreeMap::new();
    let mut objects = Vec::new();
    for (i, o) in c.objects.iter().enumerate() {
        let key = if i == 0 {
            "(target)".to_string()
        } else {
            o.name.clone()
        };
        by_path.insert(o.path.clone(), key.clone());
        if let Ok(p) = std::fs::canonicalize(&o.path) {
            by_path.insert(p.display().to_string(), key.clone());
        }
        let r = &o.info.relocations;
        let l = lk.get(o.path.as_str());
        objects.push((
            key,
            ObjectInputs {
                side: which.to_lowercase(),
                object: if i == 0 {
                    short(&o.path).into()
                } else {
                    o.name.clone()
                },
                path: o.path.clone(),
                relative: r.by_class.relative,
                symbolic: r.by_class.symbolic,
                plt: r.by_class.plt,
                lazy_plt: r.lazy_deferred,
                lookups: l.map_or(r.startup_lookups.saturating_sub(r.cache_hits), |l| {
                    l.lookups
                }),
                probes: l.map_or(0, |l| l.probes),
                self_answered: l
                    .and_then(|l| l.resolved_in.get(&o.path).copied())
                    .unwrap_or(0),
                relr: r.relr,
                initializers: o.info.initializers.total,
                relocation_ns: None,
                initializers_ns: None,
            },
        ));
    }
    let target_names: Vec<&str> = prof
        .argv
        .first()
        .map(|s| s.as_str())
        .into_iter()
        .chain([doc.target.as_str()])
        .collect();
    let key_of = |path: &str| -> Option<String> {
        if target_names.contains(&path) {
            return Some("(target)".into());
        }
        by_path
            .get(path)
            .cloned()
            .or_else(|| {
                std::fs::canonicalize(path)
                    .ok()
                    .and_then(|p| by_path.get(&p.display().to_string()).cloned())
            })
            .or_else(|| {
                c.objects
                    .iter()
                    .position(|o| short(&o.path) == short(path))
                    .map(|i| objects[i].0.clone())
            })
    };
    // Older documents have no replayed stops: their document-wide figure.
    let fallback = prof
        .overhead
        .ns_per_stop_slope
        .or(prof.overhead.ns_per_stop);
    let (mut reloc, mut init, mut mapping) = (Vec::new(), Vec::new(), Vec::new());
    for r in prof
        .raw
        .iter()
        .filter(|r| r.instrumentation == Instrumentation::PerObject)
    {
        let per_stop = crate::profile::per_stop_ns(r, fallback).unwrap_or(0.0);
        let (mut rl, mut it) = (BTreeMap::new(), BTreeMap::new());
        let mut map = None;
        for s in &r.segments {
            let Some(t) = s.counters.task_clock_ns else {
                continue;
            };
            let ns = (t as f64 - s.stops as f64 * per_stop).max(0.0);
            match (s.phase, &s.object) {
                (Phase::Relocation, Some(o)) => {
                    if let Some(k) = key_of(o) {
                        *rl.entry(k).or_insert(0.0) += ns;
                    }
                }
                (Phase::Initializers, Some(o)) => {
                    if let Some(k) = key_of(o) {
                        *it.entry(k).or_insert(0.0) += ns;
                    }
                }
                (Phase::LdsoMapping, _) => *map.get_or_insert(0.0) += ns,
                _ => {}
            }
        }
        reloc.push(rl);
        init.push(it);
        mapping.push(map);
    }
    if reloc.iter().all(|m| m.is_empty()) {
        return Err(format!(
            "{which} has no per-object relocation phases (ld.so's debug symbols, libc6-dbg, were not found)"
        ));
    }
    let mut s = Side {
        objects,
        reloc,
        init,
        mapping,
    };
    for i in 0..s.objects.len() {
        let k = s.objects[i].0.clone();
        s.objects[i].1.relocation_ns = median_of(&s.reloc, &k, None);
        s.objects[i].1.initializers_ns = median_of(&s.init, &k, None);
    }
    Ok(s)
}

/// Median over the runs (or the resampled `pick` of them) of one object's figure.
pub(crate) fn median_of(
    runs: &[BTreeMap<String, f64>],
    key: &str,
    pick: Option<&[usize]>,
) -> Option<f64> {
    let v: Vec<f64> = match pick {
        Some(p) => p
            .iter()
            .filter_map(|&i| runs[i].get(key).copied())
            .collect(),
        None => runs.iter().filter_map(|r| r.get(key).copied()).collect(),
    };
    (!v.is_empty()).then(|| super::stats::median(&v))
}

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

fn item(
    key: &str,
    sides: [&Side; 2],
    fit: &LinearFit,
    x: Regressors,
    units: &[&str],
    runs: [&[BTreeMap<String, f64>]; 2],
) -> Item {
    let (ob, oh) = (sides[0].get(key), sides[1].get(key));
    let zero = vec![0.0; units.len()];
    let xb = ob.map_or(zero.clone(), x);
    let xh = oh.map_or(zero, x);
    let mut terms = Vec::new();
    for j in 0..units.len() {
        let d = xh[j] - xb[j];
        if d != 0.0 && fit.coef[j] > 0.0 {
            terms.push(Term {
                factor: units[j].into(),
                base: xb[j],
                head: xh[j],
                delta: d,
                unit_ns: fit.coef[j],
                ns: (d * fit.coef[j]).round(),
            });
        }
    }
    let mb = ob.and_then(|_| median_of(runs[0], key, None));
    let mh = oh.and_then(|_| median_of(runs[1], key, None));
    let measured = match (mb, mh) {
        (None, None) => None,
        (b, h) => Some(h.unwrap_or(0.0) - b.unwrap_or(0.0)),
    };
    Item {
        object: oh.or(ob).map_or(key.to_string(), |o| o.object.clone()),
        change: match (ob, oh) {
            (None, _) => "added",
            (_, None) => "removed",
            _ => "changed",
        }
        .into(),
        ns: terms.iter().map(|t| t.ns).sum(),
        measured_ns: measured,
        terms,
    }
}

/// Σ over objects of the model's change (unrounded), for the bootstrap of the total.
fn total_of(sides: [&Side; 2], c: &Costs) -> f64 {
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

/// Computes the attribution of `measured_delta_ns` (None: no start-up change measured) and
/// says whether it is significant (the share is only stated then).
pub fn attribute(
    base: &Document,
    head: &Document,
    measured: Option<(f64, bool)>,
    added: &[String],
) -> Attribution {
    let mut a = Attribution {
        measured_delta_ns: measured.map(|m| m.0),
        ..Default::default()
    };
    let (b, h) = match (side(base, "BASE"), side(head, "HEAD")) {
        (Ok(b), Ok(h)) => (b, h),
        (Err(e), _) | (_, Err(e)) => {
            a.notes.push(format!("no attribution: {e}"));
            return a;
        }
    };
    let sides = [&b, &h];
    let differ = b.objects.len() != h.objects.len();
    let c = costs(sides, [None, None], differ);
    // Bootstrap: resample each side's runs, refit, collect unit costs and the total.
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
    a.explained_ci95_ns = interval95(&mut totals);
    let all_keys = keys(sides);
    let mut fits = vec![
        (
            "relocation",
            &c.reloc,
            &RELOC_UNITS[..],
            reloc_x as Regressors,
            [&b.reloc[..], &h.reloc[..]],
        ),
        (
            "initializers",
            &c.init,
            &INIT_UNITS[..],
            init_x,
            [&b.init[..], &h.init[..]],
        ),
    ];
    for (name, fit, units, x, runs) in fits.drain(..) {
        let Some(f) = fit else {
            a.notes
                .push(format!("{name}: no fit (too few measured objects)"));
            continue;
        };
        a.fits.push(FitInfo {
            fit: name.into(),
            model: format!(
                "t = {}, each ≥ 0 (non-negative least squares over objects × builds, medians of the runs)",
                units.iter().map(|u| format!("c·{u}")).collect::<Vec<_>>().join(" + ")
            ),
            points: f.points,
            r_squared: f.r_squared,
        });
        for (j, u) in units.iter().enumerate() {
            if f.coef[j] > 0.0 {
                a.unit_costs.push(UnitCost {
                    fit: name.into(),
                    unit: format!("per {}", u.trim_end_matches('s')),
                    ns: f.coef[j],
                    ci95_ns: draws
                        .get_mut(&(name.to_string(), j))
                        .and_then(|v| interval95(v)),
                });
            }
        }
        let mut items: Vec<Item> = all_keys
            .iter()
            .map(|k| item(k, sides, f, x, units, runs))
            .filter(|i| !i.terms.is_empty())
            .collect();
        items.sort_by(|p, q| q.ns.abs().total_cmp(&p.ns.abs()));
        let measured: Vec<f64> = all_keys
            .iter()
            .filter_map(|k| item(k, sides, f, x, units, runs).measured_ns)
            .collect();
        a.parts.push(Part {
            factor: name.into(),
            ns: items.iter().map(|i| i.ns).sum(),
            measured_ns: (!measured.is_empty()).then(|| measured.iter().sum()),
            items,
        });
    }
    let (nb, nh) = (b.objects.len() as f64, h.objects.len() as f64);
    match &c.mapping {
        Some(f) => {
            a.fits.push(FitInfo {
                fit: "search & mapping".into(),
                model: "t = fixed + c·objects, c ≥ 0 (least squares over the runs of both builds)".into(),
                points: f.points,
                r_squared: f.r_squared,
            });
            let mut ci = draws.get_mut(&("search & mapping".to_string(), 1usize));
            a.unit_costs.push(UnitCost {
                fit: "search & mapping".into(),
                unit: "per object".into(),
                ns: f.coef[1],
                ci95_ns: ci.as_mut().and_then(|v| interval95(v)),
            });
            let med = |s: &Side| {
                let v: Vec<f64> = s.mapping.iter().flatten().copied().collect();
                (!v.is_empty()).then(|| super::stats::median(&v))
            };
            let term = Term {
                factor: "objects".into(),
                base: nb,
                head: nh,
                delta: nh - nb,
                unit_ns: f.coef[1],
                ns: ((nh - nb) * f.coef[1]).round(),
            };
            let measured = match (med(&b), med(&h)) {
                (Some(x), Some(y)) => Some(y - x),
                _ => None,
            };
            let ns = term.ns;
            if f.coef[1] > 0.0 {
                a.parts.push(Part {
                    factor: "search & mapping".into(),
                    ns,
                    measured_ns: measured,
                    items: vec![Item {
                        object: if added.is_empty() {
                            "objects".into()
                        } else {
                            added.join(", ")
                        },
                        change: if nh > nb { "added" } else { "removed" }.into(),
                        ns,
                        measured_ns: measured,
                        terms: vec![term],
                    }],
                });
            }
        }
        None if differ => a.notes.push("search & mapping: no fit".into()),
        None => a.notes.push(
            "search & mapping: both builds load the same number of objects, so its change is not attributed (it stays in the unexplained remainder)".into(),
        ),
    }
    a.parts.sort_by(|p, q| q.ns.abs().total_cmp(&p.ns.abs()));
    a.explained_ns = a.parts.iter().map(|p| p.ns).sum();
    a.inputs = b
        .objects
        .iter()
        .chain(&h.objects)
        .map(|o| o.1.clone())
        .collect();
    match measured {
        Some((m, sig)) => {
            a.unexplained_ns = Some(m - a.explained_ns);
            if sig && m != 0.0 {
                a.explained_share = Some(a.explained_ns / m);
            } else {
                a.notes.push(
                    "explained share: not stated, the start-up change is not significant".into(),
                );
            }
        }
        None => a
            .notes
            .push("explained share: start-up CPU was not measured on both sides".into()),
    }
    a.what_if = super::whatif::what_if(sides, &c, added);
    a
}
