//! What-if: predictions of HEAD's start-up CPU under a change not made, from the unit costs
//! [`super::unit_costs`] fitted in this run: dropping each added library, BIND_NOW (or lazy
//! binding when HEAD binds at start-up), `-z pack-relative-relocs`, and `-Bsymbolic` /
//! `-fvisibility=hidden` for the objects whose lookups their own definitions answer.
//!
//! In: the two sides' per-object counts and the fitted [`Costs`]. Out: [`WhatIf`]s, each a
//! prediction (never measured) with the arithmetic that makes it, and ([`intervals`]) its 95%
//! interval: the same arithmetic on each bootstrap resample's unit costs.

use super::attribution::WhatIf;
use super::inputs::Side;
use super::text::num;
use super::unit_costs::{init_x, reloc_x, Costs};
use crate::attribute::fixes::relr_saving_ns;
use crate::stats::predict;

fn us(ns: f64) -> String {
    format!("{:+.1} µs", ns / 1e3)
}

/// Hash-table probes per start-up lookup of `o`'s: its own average, else the scope's length.
fn probes_per_lookup(o: &super::attribution::ObjectInputs, scope: usize) -> f64 {
    if o.lookups > 0 && o.probes > 0 {
        o.probes as f64 / o.lookups as f64
    } else {
        scope as f64
    }
}

/// ns per start-up lookup of `o`'s: the lookup's own cost plus its probes at `o`'s average.
fn per_lookup(c: &Costs, o: &super::attribution::ObjectInputs, scope: usize) -> Option<f64> {
    let f = c.reloc.as_ref()?;
    Some(f.coef[2] + f.coef[3] * probes_per_lookup(o, scope))
}

/// Predictions beyond this many times the largest count of probes the fit saw in one object
/// say so: the unit costs were fitted on objects far smaller, and a per-probe cost fitted
/// where probes and relative relocations go together can be several times off (measured
/// with examples/bind-now: BIND_NOW predicted +2.0–2.2 ms from a BASE-only run, +0.27–0.45
/// ms measured; docs/compare.md, "The BIND_NOW prediction").
pub const EXTRAPOLATION: f64 = 10.0;

/// ", extrapolated: …" when one object's new probes exceed [`EXTRAPOLATION`] × the most
/// probes any object of either side had (what the fit saw); empty otherwise.
fn extrapolated(sides: [&Side; 2], new_probes: f64) -> String {
    let seen = sides
        .iter()
        .flat_map(|s| s.objects.iter().map(|o| o.1.probes))
        .max()
        .unwrap_or(0) as f64;
    if seen > 0.0 && new_probes > EXTRAPOLATION * seen {
        format!(
            "; extrapolated: {} new probes in one object, {:.0}× the most the fit saw in any object ({}), so the per-probe cost may be far off",
            num(new_probes.round()),
            new_probes / seen,
            num(seen)
        )
    } else {
        String::new()
    }
}

/// The predictions for HEAD.
pub(crate) fn what_if(sides: [&Side; 2], c: &Costs, added: &[String]) -> Vec<WhatIf> {
    let h = sides[1];
    let mut out = Vec::new();
    let scope = h.objects.len();
    for name in added {
        let Some(o) = h.get(name) else { continue };
        let mut ns = 0.0;
        let mut parts = Vec::new();
        if let Some(f) = &c.reloc {
            let v = predict(&reloc_x(o), &f.coef);
            ns += v;
            parts.push(format!("relocation {}", us(-v)));
        }
        if let Some(f) = &c.init {
            let v = predict(&init_x(o), &f.coef);
            ns += v;
            parts.push(format!("initializers {}", us(-v)));
        }
        if let Some(f) = &c.mapping {
            ns += f.coef[1];
            parts.push(format!("search & mapping {}", us(-f.coef[1])));
        }
        out.push(WhatIf {
            change: format!("without {name}"),
            predicted_ns: Some(-ns.round()),
            bound: false,
                ci95_ns: None,
            basis: format!(
                "{} (its own {} relative relocations, {} lookups, {} probes, {} initializers; lookups other objects make into it would go on to the next object)",
                parts.join(", "),
                num(o.relative as f64),
                num(o.lookups as f64),
                num(o.probes as f64),
                o.initializers
            ),
        });
    }
    if c.reloc.is_some() {
        let lazy: u64 = h.objects.iter().map(|o| o.1.facts.lazy).sum();
        let sum = |pick: &dyn Fn(&super::attribution::ObjectInputs) -> u64| -> f64 {
            h.objects
                .iter()
                .map(|(_, o)| pick(o) as f64 * per_lookup(c, o, scope).unwrap_or(0.0))
                .sum()
        };
        // Which slots each binding prediction counts is decided by profile's fixes
        // (`fixes::facts`): only slots ld.so really leaves lazy, never ld.so's own, never
        // those of an object marked BIND_NOW.
        if lazy > 0 {
            let ns = sum(&|o| o.facts.lazy);
            let most = h
                .objects
                .iter()
                .map(|(_, o)| o.facts.lazy as f64 * probes_per_lookup(o, scope))
                .fold(0.0, f64::max);
            out.push(WhatIf {
                change: "LD_BIND_NOW=1 or -z now".into(),
                predicted_ns: Some(ns.round()),
                bound: false,
                ci95_ns: None,
                basis: format!(
                    "{} lazy PLT slots become start-up lookups, each priced at its object's probes per lookup (later first calls no longer bind){}",
                    num(lazy as f64),
                    extrapolated(sides, most)
                ),
            });
        } else {
            let unless_env: u64 = h.objects.iter().map(|o| o.1.facts.lazy_unless_env).sum();
            let linked: u64 = h.objects.iter().map(|o| o.1.facts.linked_now).sum();
            let (n, ns, how) = if unless_env > 0 {
                (
                    unless_env,
                    sum(&|o| o.facts.lazy_unless_env),
                    "without LD_BIND_NOW, the PLT slots of the objects not linked -z now (ld.so's excepted)",
                )
            } else {
                (
                    linked,
                    sum(&|o| o.facts.linked_now),
                    "the PLT slots of the objects linked -z now (ld.so's excepted), relinked lazily,",
                )
            };
            if n > 0 {
                out.push(WhatIf {
                    change: "lazy binding (without -z now / LD_BIND_NOW)".into(),
                    predicted_ns: Some(-ns.round()),
                    bound: false,
                    ci95_ns: None,
                    basis: format!(
                        "{} PLT slots bound at start-up would bind on their first call instead: {how} (paid then, by every forked child that calls one first)",
                        num(n as f64)
                    ),
                });
            }
        }
        // The objects profile's fixes name for packing; each priced for what RELR removes.
        let relr: Vec<(&str, u64)> = h
            .objects
            .iter()
            .filter(|o| o.1.facts.relr_candidate > 0)
            .map(|(k, o)| (k.as_str(), o.facts.relr_candidate))
            .collect();
        let unpacked: u64 = relr.iter().map(|r| r.1).sum();
        if let Some(f) = &c.reloc {
            if unpacked > 0 {
                let system: Vec<&str> = h
                    .objects
                    .iter()
                    .filter(|o| o.1.facts.relr_candidate > 0 && !o.1.facts.user_built)
                    .map(|o| o.0.as_str())
                    .collect();
                out.push(WhatIf {
                    change: "-z pack-relative-relocs".into(),
                    predicted_ns: Some(-relr_saving_ns(unpacked, f.coef[1]).round()),
                    bound: false,
                    ci95_ns: None,
                    basis: format!(
                        "{} relative relocations in RELA ({}) × {:.1} ns × {:.2}: RELR removes reading their {} bytes of 24-byte entries (that share of the cost, measured on a library built both ways) and keeps the 8-byte pointer writes and their page faults{}",
                        num(unpacked as f64),
                        relr.iter()
                            .map(|(k, n)| format!("{k} {}", num(*n as f64)))
                            .collect::<Vec<_>>()
                            .join(", "),
                        f.coef[1],
                        crate::attribute::fixes::RELR_REMOVED_SHARE,
                        num(unpacked as f64 * 24.0),
                        if system.is_empty() {
                            String::new()
                        } else {
                            format!(
                                "; {} rebuilt only by the distribution",
                                system.join(", ")
                            )
                        }
                    ),
                });
            }
        }
        let mut own: Vec<(f64, String, u64)> = h
            .objects
            .iter()
            .skip(1)
            .filter(|o| o.1.self_answered > 0 && o.1.facts.user_built)
            .map(|(k, o)| {
                (
                    o.self_answered as f64 * per_lookup(c, o, scope).unwrap_or(0.0),
                    k.clone(),
                    o.self_answered,
                )
            })
            .collect();
        own.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (ns, k, n) in own.into_iter().take(3) {
            out.push(WhatIf {
                change: format!("-Bsymbolic or -fvisibility=hidden on {k}"),
                predicted_ns: Some(-ns.round()),
                bound: false,
                ci95_ns: None,
                basis: format!(
                    "{} start-up lookups {k} answers itself would be bound at link time (relative relocations instead)",
                    num(n as f64)
                ),
            });
        }
    }
    unpriced(&mut out, c);
    out
}

/// A prediction priced by a unit the fit could not tell apart (left at 0 ns: the objects'
/// lookups or relative relocations do not vary enough apart from the rest to separate its
/// cost) is not a prediction of zero: it says "not predicted", and why.
fn unpriced(out: &mut [WhatIf], c: &Costs) {
    let Some(f) = &c.reloc else { return };
    let lookup_unknown = f.coef[2] <= 0.0 && f.coef[3] <= 0.0;
    let relative_unknown = f.coef[1] <= 0.0;
    for w in out.iter_mut() {
        let by_lookups = w.change.starts_with("LD_BIND_NOW")
            || w.change.starts_with("lazy binding")
            || w.change.starts_with("-Bsymbolic");
        let by_relatives = w.change.starts_with("-z pack-relative-relocs");
        let unit = match () {
            _ if by_lookups && lookup_unknown => "a lookup and a probe",
            _ if by_relatives && relative_unknown => "a relative relocation",
            _ => continue,
        };
        w.predicted_ns = None;
        w.ci95_ns = None;
        w.basis = format!(
            "this run's fit leaves the cost of {unit} at 0 ns, unidentified: its objects' counts do not vary enough apart from each other to separate it; {}",
            w.basis
        );
    }
}

/// Gives each prediction its 95% percentile interval from `draws` (its values over the
/// bootstrap's `resamples` refits, keyed by `change`); a prediction some resample did not make
/// (a fit that failed there) gets none rather than an interval over a subset.
pub(crate) fn intervals(
    out: &mut [WhatIf],
    draws: &mut std::collections::BTreeMap<String, Vec<f64>>,
    resamples: usize,
) {
    for w in out.iter_mut().filter(|w| w.predicted_ns.is_some()) {
        w.ci95_ns = draws
            .get_mut(&w.change)
            .filter(|v| v.len() == resamples)
            .and_then(|v| crate::stats::interval95(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::attribution::ObjectInputs;
    use crate::compare::fit::LinearFit;
    use std::collections::BTreeSet;

    fn object(name: &str, lookups: u64, probes: u64, lazy_plt: u64) -> (String, ObjectInputs) {
        let o = ObjectInputs {
            symbolic: lookups,
            plt: lazy_plt,
            lazy_plt,
            lookups,
            probes,
            ..crate::compare::attribution::object_inputs("base", name)
        };
        let o = ObjectInputs {
            facts: crate::attribute::fixes::Facts {
                lazy: lazy_plt,
                ..o.facts
            },
            ..o
        };
        (name.into(), o)
    }

    fn side(app_lazy: u64) -> Side {
        Side {
            objects: vec![
                object("(target)", 5, 143, app_lazy),
                object("libc.so.6", 64, 1798, 0),
            ],
            reloc: Vec::new(),
            init: Vec::new(),
            mapping: Vec::new(),
            startup: Vec::new(),
            startup_raw: Vec::new(),
        }
    }

    fn bind_now(app_lazy: u64) -> WhatIf {
        let costs = Costs {
            reloc: Some(LinearFit {
                coef: vec![3000.0, 0.0, 0.0, 24.0],
                r_squared: None,
                points: 4,
            }),
            init: None,
            mapping: None,
        };
        let s = side(app_lazy);
        what_if([&s, &s], &costs, &[])
            .into_iter()
            .find(|w| w.change.starts_with("LD_BIND_NOW"))
            .expect("a BIND_NOW prediction")
    }

    /// examples/bind-now's counts on BASE alone: the target's 3,207 lazy slots at 28.6 probes
    /// per lookup are 91,700 new probes, 51× libc's 1,798, the most the fit saw.
    #[test]
    fn a_prediction_far_past_the_fitted_counts_says_it_is_extrapolated() {
        let w = bind_now(3207);
        // 3,207 × (143 / 5) probes × 24 ns.
        assert_eq!(w.predicted_ns, Some((3207.0 * 28.6 * 24.0_f64).round()));
        assert!(
            w.basis
                .contains("extrapolated: 91,720 new probes in one object, 51×"),
            "{}",
            w.basis
        );
        assert!(w.basis.contains("(1,798)"), "{}", w.basis);
        // 10 slots: 286 probes, within what the fit saw.
        let w = bind_now(10);
        assert!(!w.basis.contains("extrapolated"), "{}", w.basis);
    }

    /// Each prediction gets the 2.5th and 97.5th percentiles of its own draws (by `change`),
    /// the rank arithmetic of `interval95` on 200 values: the 6th and 196th smallest.
    #[test]
    fn each_prediction_gets_the_percentiles_of_its_own_draws() {
        let w = |change: &str, ns: Option<f64>| WhatIf {
            change: change.into(),
            predicted_ns: ns,
            bound: false,
            ci95_ns: None,
            basis: String::new(),
        };
        let mut out = vec![
            w("without a", Some(-100.0)),
            w("-z now", Some(50.0)),
            w("short", Some(1.0)),
            w("none", None),
        ];
        let mut draws = std::collections::BTreeMap::new();
        draws.insert(
            "without a".to_string(),
            (1..=200).rev().map(|i| -(i as f64)).collect::<Vec<_>>(),
        );
        draws.insert(
            "-z now".to_string(),
            (1..=200).map(|i| 1000.0 + i as f64).collect(),
        );
        draws.insert("short".to_string(), vec![1.0; 199]);
        draws.insert("none".to_string(), vec![1.0; 200]);
        intervals(&mut out, &mut draws, 200);
        assert_eq!(out[0].ci95_ns, Some((-195.0, -5.0)));
        assert_eq!(out[1].ci95_ns, Some((1006.0, 1196.0)));
        assert_eq!(out[2].ci95_ns, None, "199 of 200 resamples: no interval");
        assert_eq!(out[3].ci95_ns, None, "not predicted: no interval");
    }

    fn fitted() -> Costs {
        Costs {
            reloc: Some(LinearFit {
                coef: vec![3000.0, 40.0, 100.0, 10.0],
                r_squared: None,
                points: 4,
            }),
            init: None,
            mapping: None,
        }
    }

    /// A closure as the resolver makes it: the program and a library the user builds (lazy,
    /// 10 and 20 slots), a library linked -z now (30 slots), libc in the system directory
    /// (40 lazy slots, 5,000 relative relocations) and ld.so, whose 4 JUMP_SLOTs the ELF
    /// reading is made to count as deferred to show they are never counted. Under
    /// `bind_now_env` the reading defers none, as it does under LD_BIND_NOW.
    fn closure(bind_now_env: bool) -> crate::deps::Closure {
        use crate::deps::{FoundBy, Object};
        let exe = std::env::current_exe().unwrap();
        let info = crate::deps::analyze_file(&exe, true).expect("the test binary is ELF");
        let rows: [(&str, FoundBy, bool, u64, u64); 5] = [
            ("/home/u/prog", FoundBy::Target, false, 10, 0),
            (
                "/home/u/lib/libuser.so",
                FoundBy::Runpath {
                    of: "/home/u/prog".into(),
                },
                false,
                20,
                2000,
            ),
            (
                "/home/u/lib/libnow.so",
                FoundBy::Runpath {
                    of: "/home/u/prog".into(),
                },
                true,
                30,
                0,
            ),
            (
                "/lib/x86_64-linux-gnu/libc.so.6",
                FoundBy::LdSoCache,
                false,
                40,
                5000,
            ),
            (
                "/lib64/ld-linux-x86-64.so.2",
                FoundBy::Interpreter,
                false,
                4,
                3000,
            ),
        ];
        let objects = rows
            .into_iter()
            .enumerate()
            .map(|(i, (path, found_by, now, plt, relative))| {
                let mut info = info.clone();
                info.flags.bind_now = now;
                let r = &mut info.relocations;
                r.by_class.plt = plt;
                r.by_class.relative = relative;
                r.relr = 0;
                r.lazy_deferred = if now || bind_now_env { 0 } else { plt };
                Object {
                    name: path.rsplit('/').next().unwrap().into(),
                    path: path.into(),
                    found_by,
                    loaded_by: (i > 0).then_some(0),
                    depth: (i > 0) as u32,
                    needed: Vec::new(),
                    in_scope: true,
                    info,
                }
            })
            .collect();
        crate::deps::Closure {
            rules: crate::deps::SearchRules::built_in("/lib64/ld-linux-x86-64.so.2"),
            objects,
            missing: Vec::new(),
            ld_library_path: None,
            bind_now_env,
        }
    }

    /// A side read from `closure(bind_now_env)` as [`crate::compare::inputs::side`] reads
    /// one: its facts from `fixes::facts`, every object answering 10 of its own 10 lookups.
    fn side_of(bind_now_env: bool) -> Side {
        let c = closure(bind_now_env);
        let objects = (0..c.objects.len())
            .map(|i| {
                let name = c.objects[i].name.clone();
                let facts = crate::attribute::fixes::facts(&c, i);
                let o = ObjectInputs {
                    lookups: 10,
                    probes: 30,
                    self_answered: 10,
                    lazy_plt: facts.lazy,
                    facts,
                    ..crate::compare::attribution::object_inputs("head", &name)
                };
                (name, o)
            })
            .collect();
        Side {
            objects,
            reloc: Vec::new(),
            init: Vec::new(),
            mapping: Vec::new(),
            startup: Vec::new(),
            startup_raw: Vec::new(),
        }
    }

    fn find<'a>(w: &'a [WhatIf], prefix: &str) -> Option<&'a WhatIf> {
        w.iter().find(|w| w.change.starts_with(prefix))
    }

    /// A fit that leaves the lookup's cost at 0 ns does not predict a binding change of 0 µs.
    #[test]
    fn a_unit_the_fit_left_at_zero_prices_nothing() {
        let s = side_of(false);
        let mut c = fitted();
        c.reloc.as_mut().unwrap().coef = vec![3000.0, 40.0, 0.0, 0.0];
        let w = what_if([&s, &s], &c, &[]);
        let b = find(&w, "LD_BIND_NOW=1").expect("a BIND_NOW line");
        assert_eq!(b.predicted_ns, None, "{b:?}");
        assert!(b.basis.contains("unidentified"), "{}", b.basis);
        // The relative relocations' unit is known: RELR stays priced.
        let r = find(&w, "-z pack-relative-relocs").expect("a RELR line");
        assert!(r.predicted_ns.is_some_and(|ns| ns < 0.0), "{r:?}");
    }

    /// -z now binds the 70 slots of the program, libuser and libc: not libnow's 30 (bound
    /// already), not ld.so's 4. Each at 100 ns + 3 probes × 10 ns.
    #[test]
    fn bind_now_counts_neither_bind_now_objects_nor_ld_so() {
        let s = side_of(false);
        let w = what_if([&s, &s], &fitted(), &[]);
        let b = find(&w, "LD_BIND_NOW=1").expect("a BIND_NOW prediction");
        assert_eq!(b.predicted_ns, Some(70.0 * 130.0), "{b:?}");
        assert!(b.basis.starts_with("70 lazy PLT slots"), "{}", b.basis);
        assert!(find(&w, "lazy binding").is_none());
    }

    /// Under LD_BIND_NOW, dropping it defers the same 70 slots: the 30 of the object linked
    /// -z now stay bound at start-up, ld.so's are never lazy.
    #[test]
    fn lazy_binding_under_ld_bind_now_counts_only_slots_that_would_be_lazy() {
        let s = side_of(true);
        let w = what_if([&s, &s], &fitted(), &[]);
        assert!(find(&w, "LD_BIND_NOW=1").is_none());
        let l = find(&w, "lazy binding").expect("a lazy-binding prediction");
        assert_eq!(l.predicted_ns, Some(-70.0 * 130.0), "{l:?}");
        assert!(l.basis.starts_with("70 PLT slots"), "{}", l.basis);
    }

    /// Without LD_BIND_NOW and with no slot lazy (the other objects' slots taken away),
    /// lazy binding is relinking the objects linked -z now: libnow's 30 slots.
    #[test]
    fn lazy_binding_without_the_environment_counts_the_objects_linked_now() {
        let mut s = side_of(false);
        for o in &mut s.objects {
            o.1.facts.lazy = 0;
            o.1.facts.lazy_unless_env = 0;
        }
        let w = what_if([&s, &s], &fitted(), &[]);
        let l = find(&w, "lazy binding").expect("a lazy-binding prediction");
        assert_eq!(l.predicted_ns, Some(-30.0 * 130.0), "{l:?}");
    }

    /// RELR: libuser's 2,000 and libc's 5,000 relative relocations (ld.so's 3,000 never, the
    /// program's none: under the threshold), each at RELR_REMOVED_SHARE of the fitted 40 ns.
    #[test]
    fn relr_is_priced_for_what_it_removes() {
        let s = side_of(false);
        let w = what_if([&s, &s], &fitted(), &[]);
        let r = find(&w, "-z pack-relative-relocs").expect("a RELR prediction");
        assert_eq!(
            r.predicted_ns,
            Some(-(7000.0 * 40.0 * crate::attribute::fixes::RELR_REMOVED_SHARE)),
            "{r:?}"
        );
        assert!(
            r.basis.contains("libuser.so 2,000, libc.so.6 5,000"),
            "{}",
            r.basis
        );
        assert!(r
            .basis
            .contains("libc.so.6 rebuilt only by the distribution"));
    }

    /// -Bsymbolic only for libraries the user builds: libuser and libnow, never libc (a
    /// system directory) nor ld.so.
    #[test]
    fn no_bsymbolic_for_system_libraries() {
        let s = side_of(false);
        let w = what_if([&s, &s], &fitted(), &[]);
        let on: BTreeSet<&str> = w
            .iter()
            .filter_map(|w| {
                w.change
                    .strip_prefix("-Bsymbolic or -fvisibility=hidden on ")
            })
            .collect();
        assert_eq!(on, BTreeSet::from(["libuser.so", "libnow.so"]));
    }
}
