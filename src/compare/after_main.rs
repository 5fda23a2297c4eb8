//! The loader after `main`, BASE → HEAD: per object loaded after `main` its mapping,
//! relocation and initializers CPU, its initializers' threads' CPU (µs, medians), its
//! relocations and lookups, lazy binds; an object loaded on one side only is "added" or
//! "removed" (no path on the other side), as the start-up objects are.
//!
//! In: the two documents' `profile.after_main` ([`crate::attribute::after_main`]). Objects are
//! matched by file name (a library found in another directory on one side is the same
//! object), in HEAD's load order, then BASE's removed ones. A side that measured nothing says
//! why in the notes, and has no figures (never 0).

use super::factors::{ObjectRow, Row};
use crate::attribute::after_main::{AfterMainSection, ObjectRow as Loaded, Seen};
use crate::report::Document;

/// The two documents with their figures after `main` read with one residue per stop
/// ([`crate::attribute::profile::residue`]), estimated over both sides' rounds: each side's
/// profile took out its own, or none where its rounds did not resolve one, and two sides read
/// differently would show ldcost's stops as a change in every library. Both sides' runs are
/// taken in turns, so one estimate holds for both. The static model of each object (its
/// relocations, lookups, scope) is kept as the document has it.
pub fn with_common_residue(base: &Document, head: &Document) -> (Document, Document) {
    let (mut b, mut h) = (base.clone(), head.clone());
    let (Some(pb), Some(ph)) = (&base.profile, &head.profile) else {
        return (b, h);
    };
    let both: Vec<crate::record::Run> = pb.raw.iter().chain(&ph.raw).cloned().collect();
    let common = crate::attribute::profile::residue::estimate(&both);
    for d in [&mut b, &mut h] {
        if let Some(p) = d.profile.as_mut() {
            read_with(p, common);
        }
    }
    (b, h)
}

/// A profile's section after `main` read again from its runs less `residue` (none: as
/// recorded), keeping the objects' static model.
fn read_with(
    p: &mut crate::report::schema::profile::ProfileSection,
    residue: Option<crate::attribute::profile::residue::Residue>,
) {
    let had: Option<crate::attribute::profile::residue::Residue> =
        p.overhead.residue.map(Into::into);
    if had == residue {
        return;
    }
    let runs = match &residue {
        Some(r) => crate::attribute::profile::residue::apply(&p.raw, r),
        None => p.raw.clone(),
    };
    let mut s = crate::attribute::after_main::section(&runs, &p.detail);
    if let Some(old) = p.after_main.take() {
        let old: AfterMainSection = old.into();
        for o in &mut s.objects {
            if let Some(k) = old.objects.iter().find(|k| k.object == o.object) {
                o.model = k.model;
                o.scope = k.scope.clone();
            }
        }
    }
    p.after_main = Some(s.into());
    p.overhead.residue = residue.map(Into::into);
}

fn short(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

fn section(doc: &Document) -> Option<AfterMainSection> {
    doc.profile.as_ref().map(|p| p.section().after_main)
}

/// µs with one decimal, from a median in ns.
fn us(s: &Option<crate::attribute::stats::Summary>) -> Option<f64> {
    s.as_ref().map(|s| (s.median / 100.0).round() / 10.0)
}

fn figures(o: &Loaded) -> Vec<(&'static str, Option<f64>)> {
    vec![
        ("search and mapping µs", us(&o.mapping_ns)),
        ("relocation µs", us(&o.relocation_ns)),
        ("initializers µs", us(&o.initializers_ns)),
        ("threads started", Some(o.threads as f64)),
        ("threads' CPU by the end µs", us(&o.threads_cpu_total_ns)),
        ("relocations", o.model.map(|m| m.total as f64)),
        ("symbol lookups", o.model.map(|m| m.lookups as f64)),
        ("lazy binds", o.lazy_binds.as_ref().map(|s| s.median)),
    ]
}

/// Whether an object loaded on both sides changed within noise: the same counts (threads,
/// relocations, lookups, lazy binds) and, for each time, the two sides' 95% intervals of the
/// median overlapping (a time one side lacks is a change).
fn within_noise(b: &Loaded, h: &Loaded) -> bool {
    type Time = for<'a> fn(&'a Loaded) -> &'a Option<crate::attribute::stats::Summary>;
    let times: [Time; 4] = [
        |o| &o.mapping_ns,
        |o| &o.relocation_ns,
        |o| &o.initializers_ns,
        |o| &o.threads_cpu_total_ns,
    ];
    let overlap = times.iter().all(|t| match (t(b), t(h)) {
        (None, None) => true,
        (Some(x), Some(y)) => x.ci95.0 <= y.ci95.1 && y.ci95.0 <= x.ci95.1,
        _ => false,
    });
    let counts = |o: &Loaded| {
        (
            o.threads,
            o.model.map(|m| (m.total, m.lookups)),
            o.lazy_binds.as_ref().map(|s| s.median),
        )
    };
    overlap && counts(b) == counts(h)
}

/// ld.so's CPU after `main` per exec on each side (median ns), when both measured it.
pub fn loader_cpu(base: &Document, head: &Document) -> Option<Row> {
    let (b, h) = (section(base)?, section(head)?);
    let v = |s: &AfterMainSection| match s.seen {
        Seen::NotAvailable(_) => None,
        _ => s.loader_cpu_ns.as_ref().map(|x| x.median),
    };
    Some(Row::new("ld.so's CPU after main", v(&b), v(&h)))
}

/// Per object loaded after `main` on either side: the rows that differ, every row of an
/// object one side lacks; an object on both sides whose change is within noise is marked so
/// ([`within_noise`]), for the reports to count rather than list. Why a side has none goes to
/// `notes`.
pub fn objects(base: &Document, head: &Document, notes: &mut Vec<String>) -> Vec<ObjectRow> {
    let (Some(b), Some(h)) = (section(base), section(head)) else {
        return Vec::new();
    };
    let mut measured = true;
    for (side, s) in [("BASE", &b), ("HEAD", &h)] {
        if let Seen::NotAvailable(why) = &s.seen {
            notes.push(format!("loaded after main: {side} not available ({why})"));
            measured = false;
        }
    }
    if !measured {
        return Vec::new();
    }
    let mut order: Vec<&str> = h.objects.iter().map(|o| short(&o.object)).collect();
    for o in &b.objects {
        if !order.contains(&short(&o.object)) {
            order.push(short(&o.object));
        }
    }
    let mut out = Vec::new();
    for name in order {
        let ob = b.objects.iter().find(|o| short(&o.object) == name);
        let oh = h.objects.iter().find(|o| short(&o.object) == name);
        let (fb, fh) = (ob.map(figures), oh.map(figures));
        let names: Vec<&str> = fh
            .as_ref()
            .or(fb.as_ref())
            .map(|v| v.iter().map(|x| x.0).collect())
            .unwrap_or_default();
        let get = |v: &Option<Vec<(&str, Option<f64>)>>, n: &str| {
            v.as_ref()
                .and_then(|v| v.iter().find(|x| x.0 == n).and_then(|x| x.1))
        };
        let rows: Vec<Row> = names
            .iter()
            .map(|n| Row::new(n, get(&fb, n), get(&fh, n)))
            .filter(|r| r.base.is_some() || r.head.is_some())
            .collect();
        let noise = match (ob, oh) {
            (Some(b), Some(h)) => within_noise(b, h),
            _ => false,
        };
        out.push(ObjectRow {
            name: name.to_string(),
            base_path: ob.map(|o| o.object.clone()),
            head_path: oh.map(|o| o.object.clone()),
            rows,
            within_noise: noise,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribute::after_main::tests::three_runs;
    use crate::record::Detail;

    fn doc(runs: Vec<crate::record::Run>) -> Document {
        let p = crate::attribute::profile::aggregate(
            vec!["/usr/bin/prog".into()],
            0,
            Detail::DebugSymbols {
                debug_file: "ld.debug".into(),
            },
            runs,
            None,
            Default::default(),
        );
        let mut d = Document::empty("/usr/bin/prog");
        d.profile = Some(p.into());
        d
    }

    /// HEAD stops loading libC.so (removed) and starts a new library (added); libB.so's
    /// initializers change; libA.so's figures are the same: listed, within noise.
    #[test]
    fn added_removed_and_changed_objects() {
        let base = doc(three_runs());
        let mut runs = three_runs();
        for r in &mut runs {
            let a = r.after_main.as_mut().unwrap();
            a.opens.retain(|o| o.file.as_deref() != Some("libC.so"));
            a.opens[0].objects[1].initializers.as_mut().unwrap().cpu_ns += 5_000;
            a.opens.push(crate::attribute::after_main::tests::open(
                "libD.so",
                0x2,
                70,
                40_000,
                vec![crate::attribute::after_main::tests::object(
                    "/t/libD.so",
                    1,
                    2,
                    3,
                    40_000,
                )],
            ));
        }
        let head = doc(runs);
        let mut notes = Vec::new();
        let rows = objects(&base, &head, &mut notes);
        assert!(notes.is_empty(), "{notes:?}");
        let names: Vec<(&str, bool, bool, bool)> = rows
            .iter()
            .map(|o| {
                (
                    o.name.as_str(),
                    o.base_path.is_some(),
                    o.head_path.is_some(),
                    o.within_noise,
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("libA.so", true, true, true),
                ("libB.so", true, true, false),
                ("libD.so", false, true, false),
                ("libC.so", true, false, false)
            ]
        );
        let init = rows[1]
            .rows
            .iter()
            .find(|r| r.name == "initializers µs")
            .unwrap();
        assert_eq!(
            (init.base, init.head, init.delta),
            (Some(0.6), Some(5.6), Some(5.0))
        );
        assert!(loader_cpu(&base, &head).unwrap().delta.is_some());
    }

    #[test]
    fn a_side_without_it_is_said_never_zero() {
        let base = doc(three_runs());
        let head = doc(vec![crate::attribute::after_main::tests::run(1_000, None)]);
        let mut notes = Vec::new();
        assert!(objects(&base, &head, &mut notes).is_empty());
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].starts_with("loaded after main: HEAD not available ("),
            "{notes:?}"
        );
        let row = loader_cpu(&base, &head).unwrap();
        assert_eq!((row.head, row.delta), (None, None));
    }

    /// The verdict's "libraries loaded after main": a change from the per-object runs when
    /// both sides measured it, "none" when neither called dlopen, "not measured (why)".
    #[test]
    fn the_verdict_s_figure_is_measured_none_or_not_measured() {
        let find = |b: &Document, h: &Document| {
            super::super::verdict::verdict(b, h)
                .metrics
                .into_iter()
                .find(|m| m.key == "after_main_libraries")
                .expect("the figure is listed")
        };
        let base = doc(three_runs());
        let m = find(&base, &base);
        let c = m.change.expect("measured on both sides");
        assert_eq!(
            (c.base_n, c.base_median),
            (3, (2_000 + 14 + 200 + 22) as f64)
        );
        assert!(!m.judged);
        let none = doc(vec![crate::attribute::after_main::tests::run(
            1_000,
            Some(crate::attribute::after_main::tests::record(
                Vec::new(),
                Vec::new(),
                Vec::new(),
            )),
        )]);
        let m = find(&none, &none);
        assert_eq!(
            m.missing.as_deref(),
            Some("none (no dlopen after main on either side)")
        );
        let old = doc(vec![crate::attribute::after_main::tests::run(1_000, None)]);
        let m = find(&base, &old);
        assert!(m.change.is_none());
        assert!(
            m.missing
                .as_deref()
                .unwrap()
                .starts_with("not measured (HEAD: "),
            "{m:?}"
        );
    }

    /// With the stops after `main` taken out at a residue, the own work is read from the
    /// runs as the profile read them: each run's main → exit less the residue for its stops
    /// after `main`, its ld.so CPU less the residue for the stops inside those windows.
    #[test]
    fn own_work_follows_the_residue_the_profile_took_out() {
        let mut runs = three_runs();
        for r in &mut runs {
            if let Some(a) = r.after_main.as_mut() {
                a.stops = 10;
            }
            // Replays that cost nothing: main → exit may lose the whole residue.
            r.stop_costs_ns = vec![0; 3];
            for s in &mut r.segments {
                if s.phase == crate::record::Phase::MainToExit {
                    s.stops = 10;
                }
            }
        }
        let plain = doc(runs.clone());
        let mut with = doc(runs.clone());
        with.profile.as_mut().unwrap().overhead.residue =
            Some(crate::report::schema::profile::Residue {
                ns_per_stop: 1.0,
                low_ns: 0.5,
                high_ns: 1.5,
                replay_ns: 0.0,
            });
        let own = |d: &Document| crate::compare::verdict::run_figures(d).unwrap().main_cpu;
        let (a, b) = (own(&plain), own(&with));
        assert_eq!(a.len(), b.len());
        let measured = runs
            .iter()
            .filter(|r| r.instrumentation == crate::record::Instrumentation::PerObject);
        for ((x, y), r) in a.iter().zip(&b).zip(measured) {
            let am = r.after_main.as_ref().unwrap();
            // The run's residue: never more than its cheapest window per stop.
            let mut costs: Vec<&crate::record::after_main::Cost> = Vec::new();
            for o in &am.opens {
                costs.push(&o.cost);
                for l in &o.objects {
                    costs.extend(
                        [&l.mapping, &l.relocation, &l.initializers]
                            .into_iter()
                            .flatten(),
                    );
                }
            }
            for c in &am.closes {
                costs.push(&c.cost);
                costs.extend(c.finalizers.iter().map(|(_, f)| f));
            }
            let per = costs
                .iter()
                .filter(|c| c.stops > 0)
                .map(|c| c.cpu_ns as f64 / c.stops as f64)
                .fold(1.0, f64::min);
            let less = |stops: u64| (per * stops as f64).round();
            // ld.so's CPU after main: the top-level calls and the dlcloses.
            let loader: f64 = am
                .opens
                .iter()
                .filter(|o| o.parent.is_none())
                .map(|o| less(o.cost.stops))
                .chain(am.closes.iter().map(|c| less(c.cost.stops)))
                .sum();
            assert_eq!(y - x, loader - less(10), "{a:?} {b:?} (per stop {per})");
        }
    }

    /// Two sides whose own rounds resolve different residues (or none) are read with one,
    /// estimated over both sides' rounds: the same per-stop correction on both sides.
    #[test]
    fn both_sides_are_read_with_one_residue() {
        use crate::attribute::profile::residue::{apply, estimate, tests::kinds};
        let (quiet, noisy) = (kinds(100_000), kinds(12_000_000));
        assert!(estimate(&quiet).is_some() && estimate(&noisy).is_none());
        let (base, head) = (doc(quiet.clone()), doc(noisy.clone()));
        let (b, h) = with_common_residue(&base, &head);
        let both: Vec<_> = quiet.iter().chain(&noisy).cloned().collect();
        let common = estimate(&both).expect("resolved over both sides");
        let got = |d: &Document| d.profile.as_ref().unwrap().overhead.residue.map(Into::into);
        assert_eq!(got(&b), Some(common));
        assert_eq!(got(&h), Some(common));
        // HEAD's figures after main are its runs less that residue.
        let want = crate::attribute::after_main::section(
            &apply(&noisy, &common),
            &head.profile.as_ref().unwrap().detail,
        );
        let s = section(&h).unwrap();
        assert_eq!(s.objects[0].mapping_ns, want.objects[0].mapping_ns);
        assert_ne!(
            s.objects[0].mapping_ns,
            section(&head).unwrap().objects[0].mapping_ns,
            "HEAD alone took out no residue"
        );
    }
}
