//! One side's inputs to the attribution of [`super::attribution`]: per object, the counts
//! that price it (relocations by class, start-up lookups and probes, initializers, from the
//! document's `deps` section) and, per per-object run, the CPU of its relocation and
//! initializers and of ld.so's search and mapping (from the `profile` section's raw runs).
//!
//! In: one [`Document`]. Out: a [`Side`], or the reason the document cannot be attributed
//! (no `deps`, no `profile`, no per-object phases). The CPU of a phase has ldcost's own stops
//! subtracted (the run's replayed cost per stop), as the profile's breakdown does. Objects are
//! keyed by soname, the target by "(target)", so BASE and HEAD match by name even when they
//! live in different directories.

use std::collections::BTreeMap;

use super::attribution::ObjectInputs;
use crate::record::{Instrumentation, Phase};
use crate::report::Document;

/// One side's per-object counts and per-run measurements.
pub(crate) struct Side {
    /// Objects in load order: (key, inputs).
    pub objects: Vec<(String, ObjectInputs)>,
    /// Per-object run → key → CPU ns.
    pub reloc: Vec<BTreeMap<String, f64>>,
    pub init: Vec<BTreeMap<String, f64>>,
    /// Per-object run → search & mapping CPU ns.
    pub mapping: Vec<Option<f64>>,
    /// Per-object run → phase ("relocation: libc.so.6", "kernel exec", …) → CPU ns less its
    /// stops, every phase from execve to main: the change the attribution explains is
    /// measured on these same runs, phase by phase as the model is, not on the verdict's
    /// boundaries-only runs (see [`super::attribution::Attribution::instrumented_delta_ns`]).
    pub startup: Vec<BTreeMap<String, f64>>,
    /// The same phases as counted, before the stops' correction (the reconciliation's
    /// "per-object phases as counted").
    pub startup_raw: Vec<BTreeMap<String, f64>>,
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
    let c = &deps.closure();
    let lk: BTreeMap<&str, &crate::report::schema::deps::ObjectLookups> = deps
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
        let facts = crate::attribute::fixes::facts(c, i);
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
                lazy_plt: facts.lazy,
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
                facts,
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
    let names = super::objects::Names::new(c, |i| objects[i].0.clone());
    let key_of = |path: &str| -> Option<String> {
        if target_names.contains(&path) {
            return Some("(target)".into());
        }
        by_path
            .get(path)
            .cloned()
            .or_else(|| names.key(path))
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
    let (mut reloc, mut init, mut mapping, mut startup) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut startup_raws = Vec::new();
    for r in prof
        .raw
        .iter()
        .filter(|r| r.instrumentation == Instrumentation::PerObject)
        .filter(|r| crate::attribute::profile::lost(r).is_none())
    {
        let per_stop = crate::attribute::profile::per_stop_ns(r, fallback).unwrap_or(0.0);
        let (mut rl, mut it) = (BTreeMap::new(), BTreeMap::new());
        let mut map = None;
        let mut start = BTreeMap::new();
        let mut start_raw: BTreeMap<String, f64> = BTreeMap::new();
        for s in &r.segments {
            let (Some(t), Some(ns)) = (
                s.counters.task_clock_ns,
                crate::attribute::profile::corrected(s, per_stop),
            ) else {
                continue;
            };
            if s.phase != Phase::MainToExit {
                let obj = s
                    .object
                    .as_deref()
                    .map(|o| key_of(o).unwrap_or_else(|| short(o).to_string()));
                let k = match obj {
                    Some(o) => format!("{}: {o}", s.phase.label()),
                    None => s.phase.label().to_string(),
                };
                *start_raw.entry(k.clone()).or_insert(0.0) += t as f64;
                *start.entry(k).or_insert(0.0) += ns;
            }
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
                (Phase::LdsoMapping | Phase::ObjectMapping, _) => *map.get_or_insert(0.0) += ns,
                _ => {}
            }
        }
        // As the phase table's medians: a phase the replayed stops correct to zero though it
        // counted CPU is left out of that run, not counted at 0.
        start.retain(|k, v| {
            crate::attribute::profile::phase_cpu(*v, start_raw.get(k).copied().unwrap_or(0.0))
                .is_some()
        });
        start_raw.retain(|k, _| start.contains_key(k));
        reloc.push(rl);
        init.push(it);
        mapping.push(map);
        startup.push(start);
        startup_raws.push(start_raw);
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
        startup,
        startup_raw: startup_raws,
    };
    for i in 0..s.objects.len() {
        let k = s.objects[i].0.clone();
        s.objects[i].1.relocation_ns = median_of(&s.reloc, &k, None);
        s.objects[i].1.initializers_ns = median_of(&s.init, &k, None);
    }
    Ok(s)
}

/// Median over the runs (or the resampled `pick` of them) of one object's figure: the
/// function `profile`'s fixes read their objects' figures with.
pub(crate) use crate::attribute::fixes::object_median as median_of;
