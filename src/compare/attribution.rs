//! Attribution of the start-up CPU delta to its factors, in time, with unit costs measured in
//! this very run.
//!
//! In: two [`Document`]s (their `deps` closure and lookup model: the counts per object; their
//! per-object `profile` runs: the CPU of each object's relocation and initializers, and of
//! ld.so's search and mapping, read by [`super::inputs`]) and the verdict's measured start-up
//! delta. Out: an [`Attribution`]: the unit costs fitted across the objects of both builds,
//! each with a 95% bootstrap interval over the runs ([`super::unit_costs`]); then each
//! object's change of counts × those unit costs, summed into parts and an explained total,
//! and the share of the measured delta it explains; and the what-if predictions of
//! [`super::whatif`] from the same unit costs.
//!
//! Why fitted, never constants: a probe costs what it costs on this machine, with these hash
//! tables and this cache; the same run that shows the delta measures it. Each term is rounded
//! to whole ns, so the parts add up to the explained total exactly.

use std::collections::BTreeMap;

use super::fit::LinearFit;
use super::inputs::{median_of, side, Side};
use super::unit_costs::{
    bootstrap, costs, init_x, instrumented_delta, keys, reloc_x, share_interval, Bootstrap,
    Regressors, INIT_UNITS, RELOC_UNITS,
};
use crate::report::Document;
use crate::stats::interval95;

/// One factor's change in one object, priced.
#[derive(Debug, Clone, PartialEq)]
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
#[derive(Debug, Clone, PartialEq)]
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
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub factor: String,
    /// Σ items' ns.
    pub ns: f64,
    /// The measured change of the phase group (sum of the items' measured changes).
    pub measured_ns: Option<f64>,
    pub items: Vec<Item>,
}

/// A fitted unit cost.
#[derive(Debug, Clone, PartialEq)]
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
#[derive(Debug, Clone, PartialEq)]
pub struct FitInfo {
    pub fit: String,
    /// "t = a·object + b·relative + c·lookups + d·probes, a..d ≥ 0".
    pub model: String,
    /// Points: objects × builds (relocation, initializers) or runs (search & mapping).
    pub points: usize,
    pub r_squared: Option<f64>,
}

/// The counts behind one object's unit-cost inputs, per side (from the `deps` section).
#[derive(Debug, Clone, PartialEq)]
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
    /// What the what-if predictions count, decided as `profile`'s fixes decide it (lazy slots,
    /// RELR candidates, whether the user builds it); not in the document.
    pub facts: crate::attribute::fixes::Facts,
}

/// A test fixture: object `name` of `side` at `/x/NAME`, every count zero, nothing measured.
#[cfg(test)]
pub(crate) fn object_inputs(side: &str, name: &str) -> ObjectInputs {
    ObjectInputs {
        side: side.into(),
        object: name.into(),
        path: format!("/x/{name}"),
        relative: 0,
        symbolic: 0,
        plt: 0,
        lazy_plt: 0,
        lookups: 0,
        probes: 0,
        self_answered: 0,
        relr: 0,
        initializers: 0,
        relocation_ns: None,
        initializers_ns: None,
        facts: crate::attribute::fixes::Facts {
            user_built: true,
            ..Default::default()
        },
    }
}

/// A prediction from the unit costs (never measured).
#[derive(Debug, Clone, PartialEq)]
pub struct WhatIf {
    pub change: String,
    /// Predicted change of HEAD's start-up CPU, ns (negative: faster). None: not predicted.
    pub predicted_ns: Option<f64>,
    /// The prediction is a bound (at most this much), not an estimate.
    pub bound: bool,
    /// 95% percentile-bootstrap interval of the prediction: the same arithmetic on each
    /// resample's refitted unit costs (None: not predicted in every resample).
    pub ci95_ns: Option<(f64, f64)>,
    pub basis: String,
}

/// The whole attribution.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attribution {
    /// The verdict's start-up CPU change, median HEAD − median BASE (ns), from its
    /// boundaries-only runs.
    pub measured_delta_ns: Option<f64>,
    /// The start-up CPU change on the runs the unit costs are fitted on (the per-object runs,
    /// less their stops), median HEAD − median BASE: what the attribution explains. The two
    /// kinds of run differ in how much the instrumentation slows the heavy phases, so
    /// explaining the boundaries-only change with per-object unit costs mixed two
    /// measurements (docs/compare.md, "Attribution").
    pub instrumented_delta_ns: Option<f64>,
    /// Σ parts' ns.
    pub explained_ns: f64,
    /// 95% bootstrap interval of the explained total (runs resampled, unit costs refitted).
    pub explained_ci95_ns: Option<(f64, f64)>,
    /// instrumented_delta_ns − explained_ns.
    pub unexplained_ns: Option<f64>,
    /// explained / instrumented delta, when the verdict's change is significant.
    pub explained_share: Option<f64>,
    /// 95% bootstrap interval of the share: each resample's explained total over the change
    /// of the same resampled runs.
    pub explained_share_ci95: Option<(f64, f64)>,
    pub parts: Vec<Part>,
    pub unit_costs: Vec<UnitCost>,
    pub fits: Vec<FitInfo>,
    pub inputs: Vec<ObjectInputs>,
    pub what_if: Vec<WhatIf>,
    pub notes: Vec<String>,
    /// The per-object runs' start-up change as counted, before the stops' correction
    /// (Σ phases' median Δ); [`reconcile`] relates it to the verdict's.
    pub counted_delta_ns: Option<f64>,
    pub reconciliation: Option<Reconciliation>,
}

/// How the start-up deltas of one report relate, every figure rounded to 0.1 µs (in ns) so
/// the line adds up exactly as printed: `verdict = counted + stops_correction + between_runs`
/// and `per_object = counted + stops_correction = Σ by_factor + unexplained`.
#[derive(Debug, Clone, PartialEq)]
pub struct Reconciliation {
    /// The verdict's start-up CPU change (median HEAD − median BASE) and its runs.
    pub verdict_ns: f64,
    pub verdict_source: String,
    /// Σ phases' median Δ in the per-object runs, as counted.
    pub counted_ns: f64,
    /// The change the stops' correction makes to that.
    pub stops_correction_ns: f64,
    /// The per-object runs' change less their stops: what the attribution explains.
    pub per_object_ns: f64,
    /// verdict − per-object: how the two kinds of run (or the median of sums and the sum of
    /// medians) differ.
    pub between_runs_ns: f64,
    /// (factor, explained ns), in the attribution's order.
    pub by_factor: Vec<(String, f64)>,
    pub explained_ns: f64,
    pub unexplained_ns: f64,
}

/// Rounds ns to 0.1 µs, as the reports print them (a zero without a sign: "+0.0", never
/// "-0.0").
fn r100(ns: f64) -> f64 {
    let v = (ns / 100.0).round() * 100.0;
    if v == 0.0 {
        0.0
    } else {
        v
    }
}

/// The reconciliation of the verdict's start-up change (None: a figure is missing).
pub fn reconcile(a: &Attribution, verdict_source: &str) -> Option<Reconciliation> {
    let verdict_ns = r100(a.measured_delta_ns?);
    let counted_ns = r100(a.counted_delta_ns?);
    let per_object_ns = r100(a.instrumented_delta_ns?);
    let stops_correction_ns = per_object_ns - counted_ns;
    // A part that priced no object attributes nothing: listing it as "+0.0 µs" names a factor
    // the attribution above never shows.
    let by_factor: Vec<(String, f64)> = a
        .parts
        .iter()
        .filter(|p| !p.items.is_empty())
        .map(|p| (p.factor.clone(), r100(p.ns)))
        .collect();
    // + 0.0: an empty f64 sum is −0.0, which would print as "-0.0 µs".
    let explained_ns: f64 = by_factor.iter().map(|f| f.1).sum::<f64>() + 0.0;
    Some(Reconciliation {
        verdict_ns,
        verdict_source: verdict_source.to_string(),
        counted_ns,
        stops_correction_ns,
        per_object_ns,
        between_runs_ns: verdict_ns - per_object_ns,
        explained_ns,
        unexplained_ns: per_object_ns - explained_ns,
        by_factor,
    })
}

/// The initializers of an object one build loads and the other does not, measured on the
/// side that loads it: their change BASE → HEAD as one term at the object's own measured CPU
/// ([`crate::attribute::fixes::initializers_cpu`], as `profile`'s fixes price an object that
/// leaves the closure), `pick` the runs of a resample. A fitted cost per initializer is an
/// average over objects whose constructors do unrelated work: it prices a library whose
/// constructor spins for milliseconds like one whose constructor returns at once. None for an
/// object both builds load (its count's change is priced by the fit) or whose initializers no
/// run measured.
pub(crate) fn one_sided_initializers(
    sides: [&Side; 2],
    key: &str,
    pick: [Option<&[usize]>; 2],
) -> Option<Term> {
    let (i, o, sign) = match (sides[0].get(key), sides[1].get(key)) {
        (Some(o), None) => (0, o, -1.0),
        (None, Some(o)) => (1, o, 1.0),
        _ => return None,
    };
    let ns = crate::attribute::fixes::initializers_cpu(&sides[i].init, key, pick[i])?;
    // An object measured running initializers the static model did not count (DT_INIT
    // alone) is one.
    let n = o.initializers.max(1) as f64;
    Some(Term {
        factor: "initializers at this object's measured CPU".into(),
        base: if i == 0 { n } else { 0.0 },
        head: if i == 1 { n } else { 0.0 },
        delta: sign * n,
        unit_ns: ns / n,
        ns: (sign * ns).round(),
    })
}

/// One object's item of a part: `own`, when given, is its whole account (the measured
/// initializers of [`one_sided_initializers`]); else each count's change × the fitted unit
/// cost.
#[allow(clippy::too_many_arguments)]
fn item(
    key: &str,
    sides: [&Side; 2],
    fit: &LinearFit,
    x: Regressors,
    units: &[&str],
    runs: [&[BTreeMap<String, f64>]; 2],
    own: Option<Term>,
) -> Item {
    let (ob, oh) = (sides[0].get(key), sides[1].get(key));
    let zero = vec![0.0; units.len()];
    let xb = ob.map_or(zero.clone(), x);
    let xh = oh.map_or(zero, x);
    let by_fit = own.is_none();
    let mut terms: Vec<Term> = own.into_iter().collect();
    for j in (0..units.len()).filter(|_| by_fit) {
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
    let Bootstrap {
        mut draws,
        mut totals,
        deltas,
        what_if: mut what_if_draws,
    } = bootstrap(sides, differ, added);
    let share_ci95 = share_interval(&totals, &deltas);
    // The per-object runs' own change, resampled: a share of a change whose interval holds 0
    // swings through ± hundreds of percent (113% [−786%, 930%] on `ls` with LD_BIND_NOW=1).
    let delta_ci95 = interval95(&mut deltas.iter().flatten().copied().collect::<Vec<f64>>());
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
        let own = |k: &str| {
            (name == "initializers")
                .then(|| one_sided_initializers(sides, k, [None, None]))
                .flatten()
        };
        let mut items: Vec<Item> = all_keys
            .iter()
            .map(|k| item(k, sides, f, x, units, runs, own(k)))
            .filter(|i| !i.terms.is_empty())
            .collect();
        items.sort_by(|p, q| q.ns.abs().total_cmp(&p.ns.abs()));
        let measured: Vec<f64> = all_keys
            .iter()
            .filter_map(|k| item(k, sides, f, x, units, runs, None).measured_ns)
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
                crate::stats::median(&v)
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
    a.instrumented_delta_ns = instrumented_delta(sides, [None, None]);
    a.counted_delta_ns =
        super::unit_costs::phase_delta([&b.startup_raw, &h.startup_raw], [None, None]);
    match (measured, a.instrumented_delta_ns) {
        (Some((_, sig)), Some(m)) => {
            a.unexplained_ns = Some(m - a.explained_ns);
            let noise = delta_ci95.filter(|&(lo, hi)| lo <= 0.0 && 0.0 <= hi);
            if let (true, Some((lo, hi))) = (sig, noise) {
                a.notes.push(format!(
                    "explained share: not stated, the per-object runs' start-up change ({}, 95% [{:+.1}, {:+.1}] µs) is within their noise, though the verdict's runs' is significant",
                    super::explain::sus(m),
                    lo / 1e3,
                    hi / 1e3
                ));
            } else if sig && m != 0.0 {
                a.explained_share = Some(a.explained_ns / m);
                a.explained_share_ci95 = share_ci95;
            } else {
                a.notes.push(
                    "explained share: not stated, the start-up change is not significant".into(),
                );
            }
        }
        _ => a
            .notes
            .push("explained share: start-up CPU was not measured on both sides".into()),
    }
    a.what_if = super::whatif::what_if(sides, &c, added);
    super::whatif::intervals(&mut a.what_if, &mut what_if_draws, totals.len());
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(factor: &str, ns: f64, items: usize) -> Part {
        let item = Item {
            object: "libx.so".into(),
            change: "changed".into(),
            ns,
            measured_ns: None,
            terms: vec![],
        };
        Part {
            factor: factor.into(),
            ns,
            measured_ns: None,
            items: vec![item; items],
        }
    }

    /// The reconciliation lists the parts that priced an object, and adds up without them;
    /// with none, its explained total is a plain zero ("+0.0 µs", never "-0.0 µs").
    #[test]
    fn the_reconciliation_lists_only_parts_that_priced_an_object() {
        let mut a = Attribution {
            measured_delta_ns: Some(26_300.0),
            instrumented_delta_ns: Some(18_500.0),
            counted_delta_ns: Some(17_100.0),
            parts: vec![
                part("relocation", 17_600.0, 3),
                part("initializers", 0.0, 0),
            ],
            ..Default::default()
        };
        let r = reconcile(&a, "boundaries-only runs").unwrap();
        assert_eq!(r.by_factor, [("relocation".to_string(), 17_600.0)]);
        assert_eq!((r.explained_ns, r.unexplained_ns), (17_600.0, 900.0));
        assert_eq!(r.verdict_ns, r.per_object_ns + r.between_runs_ns);
        a.parts = vec![part("relocation", 0.0, 0)];
        let r = reconcile(&a, "boundaries-only runs").unwrap();
        assert!(r.by_factor.is_empty());
        assert!(r.explained_ns == 0.0 && r.explained_ns.is_sign_positive());
        assert!(crate::compare::explain::reconciliation(&r.into()).contains("explained +0.0 µs,"),);
    }
}
