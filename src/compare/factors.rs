//! The factors, each BASE → HEAD → Δ: objects added and removed (the rule that found each and
//! who needs it), relocations by class per object, start-up lookups and hash-table probes,
//! lazy PLT slots, initializers, VMAs, file bytes mapped, the measured phases, and the
//! category shares when both documents were sampled.
//!
//! In: two [`Document`]s (their `deps` and `profile` sections). Out: [`Factors`]. Objects are
//! matched by the name they were asked for (DT_NEEDED), the target by being the target, so a
//! library found in another directory under `--head-env LD_LIBRARY_PATH=…` is the same object
//! with a new path.

use std::collections::BTreeMap;

use crate::deps::{Closure, Object};
use crate::report::Document;

/// One figure BASE → HEAD.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub name: String,
    pub base: Option<f64>,
    pub head: Option<f64>,
    /// head − base when both exist.
    pub delta: Option<f64>,
}

impl Row {
    pub fn new(name: &str, base: Option<f64>, head: Option<f64>) -> Row {
        Row {
            name: name.into(),
            base,
            head,
            delta: match (base, head) {
                (Some(b), Some(h)) => Some(h - b),
                _ => None,
            },
        }
    }
}

/// An object only one side loads.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectChange {
    /// The name it was asked for (DT_NEEDED).
    pub name: String,
    pub path: String,
    /// The rule that found it ("ld.so.cache", "RUNPATH of app", …).
    pub found_by: String,
    /// The objects whose DT_NEEDED names it (basenames).
    pub needed_by: Vec<String>,
    pub relocations: u64,
    pub vmas: u64,
    pub file_bytes: u64,
}

/// Per-object figures BASE → HEAD (None: the side does not load it).
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectRow {
    pub name: String,
    pub base_path: Option<String>,
    pub head_path: Option<String>,
    /// relative, symbolic, plt, irelative, tls, copy, other, total, startup_lookups,
    /// probes, lazy_plt, initializers, vmas, file_bytes.
    pub rows: Vec<Row>,
    /// An object loaded after `main` on both sides whose change is within noise
    /// ([`super::after_main::objects`]); always false for start-up objects.
    pub within_noise: bool,
}

/// All factors.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Factors {
    /// Totals over the closure (the static model of each side).
    pub totals: Vec<Row>,
    pub objects_added: Vec<ObjectChange>,
    pub objects_removed: Vec<ObjectChange>,
    /// Only objects where some figure differs (or that one side lacks).
    pub objects: Vec<ObjectRow>,
    /// Measured CPU per phase (median ns; per object where the phase is per object).
    pub phases: Vec<Row>,
    /// Category shares of the sampled CPU, in % (when both were sampled).
    pub categories: Vec<Row>,
    /// The loader after `main`: ld.so's CPU after `main` (median ns), then per object loaded
    /// after `main` whose figures differ or that one side lacks ([`super::after_main`]).
    pub after_main_cpu: Option<Row>,
    pub after_main: Vec<ObjectRow>,
    /// Why a group is missing ("BASE has no deps section", …).
    pub notes: Vec<String>,
}

const TARGET: &str = "(target)";

fn key(c: &Closure, i: usize) -> String {
    if i == 0 {
        TARGET.into()
    } else {
        c.objects[i].name.clone()
    }
}

fn short(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

fn probes_of(doc: &Document) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    if let Some(d) = &doc.deps {
        if let Some(l) = &d.lookups {
            for o in &l.objects {
                out.insert(o.path.clone(), o.probes);
            }
        }
    }
    out
}

fn object_figures(o: &Object, probes: Option<u64>) -> Vec<(&'static str, f64)> {
    let r = &o.info.relocations;
    let c = &r.by_class;
    let mut v = vec![
        ("relative relocations", c.relative as f64),
        ("symbolic relocations", c.symbolic as f64),
        ("PLT relocations", c.plt as f64),
        ("IRELATIVE relocations", c.irelative as f64),
        ("TLS relocations", c.tls as f64),
        ("COPY relocations", c.copy as f64),
        ("other relocations", c.other as f64),
        ("relocations", r.total as f64),
        ("start-up lookups", r.startup_lookups as f64),
    ];
    if let Some(p) = probes {
        v.push(("hash-table probes", p as f64));
    }
    v.extend([
        ("lazy PLT slots", r.lazy_deferred as f64),
        ("initializers", o.info.initializers.total as f64),
        ("VMAs", o.info.vmas.len() as f64),
        ("file bytes", o.info.file_size as f64),
    ]);
    v
}

fn change_of(c: &Closure, i: usize) -> ObjectChange {
    let o = &c.objects[i];
    let needed_by = c
        .objects
        .iter()
        .filter(|p| p.needed.iter().any(|e| e.object == Some(i)))
        .map(|p| short(&p.path).to_string())
        .collect();
    ObjectChange {
        name: o.name.clone(),
        path: o.path.clone(),
        found_by: o.found_by.label(),
        needed_by,
        relocations: o.info.relocations.total,
        vmas: o.info.vmas.len() as u64,
        file_bytes: o.info.file_size,
    }
}

/// Computes the factors.
pub fn factors(base: &Document, head: &Document) -> Factors {
    let mut f = Factors::default();
    match (&base.deps, &head.deps) {
        (Some(b), Some(h)) => {
            let (tb, th) = (&b.totals, &h.totals);
            let pr = |d: &crate::report::DepsSection| d.lookups.as_ref().map(|l| l.probes as f64);
            let rows: [(&str, u64, u64); 14] = [
                ("objects", tb.objects, th.objects),
                ("missing libraries", tb.missing, th.missing),
                (
                    "relative relocations",
                    tb.relocations.relative,
                    th.relocations.relative,
                ),
                (
                    "symbolic relocations",
                    tb.relocations.symbolic,
                    th.relocations.symbolic,
                ),
                ("PLT relocations", tb.relocations.plt, th.relocations.plt),
                (
                    "IRELATIVE relocations",
                    tb.relocations.irelative,
                    th.relocations.irelative,
                ),
                ("TLS relocations", tb.relocations.tls, th.relocations.tls),
                ("relocations", tb.relocations_total, th.relocations_total),
                ("start-up lookups", tb.startup_lookups, th.startup_lookups),
                ("lookup cache hits", tb.cache_hits, th.cache_hits),
                ("lazy PLT slots", tb.lazy_deferred, th.lazy_deferred),
                ("initializers", tb.initializers, th.initializers),
                ("VMAs", tb.vmas, th.vmas),
                ("file bytes mapped", tb.file_bytes, th.file_bytes),
            ];
            for (name, x, y) in rows {
                f.totals
                    .push(Row::new(name, Some(x as f64), Some(y as f64)));
                if name == "start-up lookups" {
                    f.totals.push(Row::new("hash-table probes", pr(b), pr(h)));
                }
            }
            let (cb, ch) = (&b.closure(), &h.closure());
            let mb: BTreeMap<String, usize> =
                (0..cb.objects.len()).map(|i| (key(cb, i), i)).collect();
            let mh: BTreeMap<String, usize> =
                (0..ch.objects.len()).map(|i| (key(ch, i), i)).collect();
            let (pb, ph) = (probes_of(base), probes_of(head));
            for (k, &i) in &mh {
                if !mb.contains_key(k) {
                    f.objects_added.push(change_of(ch, i));
                }
            }
            for (k, &i) in &mb {
                if !mh.contains_key(k) {
                    f.objects_removed.push(change_of(cb, i));
                }
            }
            // Per object, in HEAD's load order, then BASE's removed ones.
            let mut order: Vec<String> = (0..ch.objects.len()).map(|i| key(ch, i)).collect();
            order.extend(
                (0..cb.objects.len())
                    .map(|i| key(cb, i))
                    .filter(|k| !mh.contains_key(k)),
            );
            for k in order {
                let ob = mb.get(&k).map(|&i| &cb.objects[i]);
                let oh = mh.get(&k).map(|&i| &ch.objects[i]);
                let fb = ob.map(|o| object_figures(o, pb.get(&o.path).copied()));
                let fh = oh.map(|o| object_figures(o, ph.get(&o.path).copied()));
                let names: Vec<&str> = fh
                    .as_ref()
                    .or(fb.as_ref())
                    .map(|v| v.iter().map(|x| x.0).collect())
                    .unwrap_or_default();
                let get = |v: &Option<Vec<(&str, f64)>>, n: &str| {
                    v.as_ref()
                        .and_then(|v| v.iter().find(|x| x.0 == n).map(|x| x.1))
                };
                let rows: Vec<Row> = names
                    .iter()
                    .map(|n| Row::new(n, get(&fb, n), get(&fh, n)))
                    .collect();
                let differs = ob.is_none()
                    || oh.is_none()
                    || rows.iter().any(|r| r.delta.is_some_and(|d| d != 0.0));
                if differs {
                    f.objects.push(ObjectRow {
                        name: k.clone(),
                        base_path: ob.map(|o| o.path.clone()),
                        head_path: oh.map(|o| o.path.clone()),
                        rows,
                        within_noise: false,
                    });
                }
            }
        }
        (b, h) => f.notes.push(format!(
            "no static factors: {} no deps section",
            match (b.is_none(), h.is_none()) {
                (true, true) => "neither document has a",
                (true, false) => "BASE has",
                _ => "HEAD has",
            }
        )),
    }
    f.phases = phases(base, head);
    f.categories = categories(base, head, &mut f.notes);
    f.after_main_cpu = super::after_main::loader_cpu(base, head);
    f.after_main = super::after_main::objects(base, head, &mut f.notes);
    f
}

/// Phase key: "relocation: libfoo.so.1", the target's own as "(target)".
fn phase_medians(doc: &Document) -> Vec<(String, f64)> {
    let Some(p) = &doc.profile else {
        return Vec::new();
    };
    let closure = doc.deps.as_ref().map(|d| d.closure());
    let names = closure
        .as_ref()
        .map(|c| super::objects::Names::new(c, |i| key(c, i)));
    let target = p.argv.first().cloned().unwrap_or_default();
    p.phases
        .iter()
        .filter_map(|s| {
            let v = s.task_clock_ns.as_ref()?.median;
            let label = match &s.object {
                None => s.phase.label().to_string(),
                Some(o) => {
                    let k = if *o == target || *o == doc.target {
                        TARGET.to_string()
                    } else {
                        names
                            .as_ref()
                            .and_then(|n| n.key(o))
                            .unwrap_or_else(|| short(o).to_string())
                    };
                    format!("{}: {k}", s.phase.label())
                }
            };
            Some((label, v))
        })
        .collect()
}

fn phases(base: &Document, head: &Document) -> Vec<Row> {
    let (b, h) = (phase_medians(base), phase_medians(head));
    let mut names: Vec<String> = h.iter().map(|x| x.0.clone()).collect();
    for (n, _) in &b {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    let get = |v: &[(String, f64)], n: &str| v.iter().find(|x| x.0 == n).map(|x| x.1);
    names
        .iter()
        .map(|n| Row::new(n, get(&b, n), get(&h, n)))
        .collect()
}

fn categories(base: &Document, head: &Document, notes: &mut Vec<String>) -> Vec<Row> {
    let bd = |d: &Document| d.profile.as_ref().and_then(|p| p.breakdown.clone());
    match (bd(base), bd(head)) {
        (Some(b), Some(h)) => {
            let mut names: Vec<String> = h.categories.iter().map(|c| c.label.clone()).collect();
            for c in &b.categories {
                if !names.contains(&c.label) {
                    names.push(c.label.clone());
                }
            }
            let get = |x: &crate::report::schema::breakdown::Breakdown, n: &str| {
                Some(
                    x.categories
                        .iter()
                        .find(|c| c.label == n)
                        .map_or(0.0, |c| c.share * 100.0),
                )
            };
            names
                .iter()
                .map(|n| Row::new(n, get(&b, n), get(&h, n)))
                .collect()
        }
        (None, None) => Vec::new(),
        _ => {
            notes.push("category shares: only one document was sampled (--sample)".into());
            Vec::new()
        }
    }
}
