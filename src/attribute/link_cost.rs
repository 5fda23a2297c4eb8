//! The static link-cost model of a closure: totals, and a short reading of what dominates.
//!
//! In: a [`Closure`]. Out: [`Totals`] and a list of sentences. The model is Drepper's (How To
//! Write Shared Libraries, section 1.5): start-up relocation costs O(R + n·r) for R relative
//! relocations, r symbolic ones and n objects in the lookup scope, because each symbol lookup
//! probes the objects of the scope in order until one defines the symbol. Relative relocations
//! are cheap (an addition each); lookups are the expensive part; PLT slots bound lazily are
//! paid later, on first call, and in every forked child that calls them first (seed 001).

use crate::deps::Closure;
use crate::elf::reloc::ClassCounts;

/// Totals over the closure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    pub objects: u64,
    pub missing: u64,
    pub file_bytes: u64,
    pub vmas: u64,
    pub relocations: ClassCounts,
    pub relocations_total: u64,
    pub startup_lookups: u64,
    pub cache_hits: u64,
    pub lazy_deferred: u64,
    pub initializers: u64,
}

pub fn totals(c: &Closure) -> Totals {
    let mut t = Totals {
        objects: c.objects.len() as u64,
        missing: c.missing.len() as u64,
        ..Totals::default()
    };
    for o in &c.objects {
        let r = &o.info.relocations;
        t.file_bytes = t.file_bytes.saturating_add(o.info.file_size);
        t.vmas = t.vmas.saturating_add(o.info.vmas.len() as u64);
        t.relocations.merge(&r.by_class);
        t.relocations_total = t.relocations_total.saturating_add(r.total);
        t.startup_lookups = t.startup_lookups.saturating_add(r.startup_lookups);
        t.cache_hits = t.cache_hits.saturating_add(r.cache_hits);
        t.lazy_deferred = t.lazy_deferred.saturating_add(r.lazy_deferred);
        t.initializers = t.initializers.saturating_add(o.info.initializers.total);
    }
    t
}

fn pct(part: u64, whole: u64) -> u64 {
    (part * 100 + whole / 2).checked_div(whole).unwrap_or(0)
}

fn name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The plain-language reading, most important first.
/// The Reading line on unused direct dependencies, when there are any.
pub fn unused_reading(c: &Closure, unused: &[crate::deps::UnusedDependency]) -> Option<String> {
    let first = unused.first()?;
    let removed = crate::deps::removed_by_dropping_all(c, unused);
    let objects: std::collections::BTreeSet<&str> =
        unused.iter().map(|u| u.object.as_str()).collect();
    Some(format!(
        "{} DT_NEEDED entr{} of {} object{} bind{} no symbol (as `ldd -u -r` reports), e.g. {} in {}; dropping {} (link with -Wl,--as-needed, or drop the -l flag) {}.",
        unused.len(),
        if unused.len() == 1 { "y" } else { "ies" },
        objects.len(),
        if objects.len() == 1 { "" } else { "s" },
        if unused.len() == 1 { "s" } else { "" },
        first.needed,
        first.object,
        if unused.len() == 1 { "it" } else { "them" },
        match removed.len() {
            0 => "removes nothing from the closure (each is still needed by another object)"
                .to_string(),
            1 => format!("takes {} out of the closure", removed[0]),
            n => format!("takes {n} objects out of the closure ({})", removed.join(", ")),
        },
    ))
}

pub fn summary(
    c: &Closure,
    lookups: Option<&crate::attribute::lookups::LookupModel>,
) -> Vec<String> {
    let t = totals(c);
    let mut out = Vec::new();
    let main = &c.objects[0];
    if c.objects.len() == 1 && main.info.interpreter.is_none() {
        out.push(format!(
            "{} is {}: no ld.so, no libraries; start-up relocation is {} relocation(s) applied by the program itself.",
            name(&main.path),
            main.info.kind.label(),
            t.relocations_total
        ));
        return out;
    }
    out.push(format!(
        "{} objects in the lookup scope; at start-up ld.so applies {} relative relocations and performs {} symbol lookups ({} answered by its one-entry cache); {} PLT slots are left to lazy binding.",
        t.objects, t.relocations.relative, t.startup_lookups, t.cache_hits, t.lazy_deferred
    ));
    if t.startup_lookups > 0 {
        if let Some(top) = c
            .objects
            .iter()
            .max_by_key(|o| o.info.relocations.startup_lookups)
        {
            let n = top.info.relocations.startup_lookups;
            out.push(format!(
                "{}% of start-up symbol lookups come from {} ({} of {}).",
                pct(n, t.startup_lookups),
                name(&top.path),
                n,
                t.startup_lookups
            ));
        }
    }
    // A dynamic program alone (`deps --object-only`): its libraries are not in the scope, so
    // every lookup "finds no definition" there; an average of probes over a scope of one
    // object says nothing (for /bin/ls it read "0.6 objects probed on average" beside "16 find no
    // definition and probe every object").
    let object_only = c.objects.len() == 1 && main.info.interpreter.is_some();
    if let Some(m) = lookups.filter(|m| m.lookups > 0 && object_only) {
        out.push(format!(
            "Where the {} start-up lookups are answered is not modelled: --object-only leaves the libraries out of the lookup scope.",
            m.lookups
        ));
    } else if let Some(m) = lookups.filter(|m| m.lookups > 0) {
        out.push(format!(
            "Each start-up lookup probes {:.1} objects on average ({} hash-table probes for {} lookups, the n·r of Drepper's model){}.",
            m.probes as f64 / m.lookups as f64,
            m.probes,
            m.lookups,
            if m.unresolved > 0 {
                format!("; {} find no definition (undefined weak symbols) and probe the whole scope", m.unresolved)
            } else {
                String::new()
            }
        ));
        if let Some((top, n)) = m.answered_by.iter().max_by_key(|(_, n)| **n) {
            out.push(format!(
                "{}% of lookups are answered by {} ({} of {}).",
                pct(*n, m.lookups),
                name(top),
                n,
                m.lookups
            ));
        }
    }
    if t.relocations.relative > 0 {
        if let Some(top) = c
            .objects
            .iter()
            .max_by_key(|o| o.info.relocations.by_class.relative)
        {
            let n = top.info.relocations.by_class.relative;
            out.push(format!(
                "{}% of relative relocations are in {} ({} of {}): cheap each, but they touch and dirty its data pages.",
                pct(n, t.relocations.relative),
                name(&top.path),
                n,
                t.relocations.relative
            ));
        }
    }
    if let Some(pos) = c
        .objects
        .iter()
        .position(|o| o.info.soname.as_deref() == Some("libc.so.6"))
    {
        if pos > 1 {
            out.push(format!(
                "{} objects are searched before libc.so.6 for each lookup of a libc symbol (it is #{} in the scope).",
                pos,
                pos + 1
            ));
        }
    }
    if t.lazy_deferred > 0 && !c.bind_now_env {
        out.push(format!(
            "With LD_BIND_NOW=1 the {} lazy PLT slots would become start-up lookups ({}x the lookups).",
            t.lazy_deferred,
            format_ratio(t.startup_lookups + t.lazy_deferred, t.startup_lookups)
        ));
    }
    let textrel: Vec<&str> = c
        .objects
        .iter()
        .filter(|o| o.info.flags.textrel)
        .map(|o| name(&o.path))
        .collect();
    if !textrel.is_empty() {
        out.push(format!(
            "TEXTREL in {}: ld.so must make text writable to relocate it, and those pages stop being shared.",
            textrel.join(", ")
        ));
    }
    out.push(format!(
        "The closure maps {} VMAs and runs {} initializers; every fork() duplicates each VMA and copies the page tables behind them.",
        t.vmas, t.initializers
    ));
    if !c.missing.is_empty() {
        out.push(format!(
            "{} needed librar{} not found: the program would not start.",
            c.missing.len(),
            if c.missing.len() == 1 {
                "y is"
            } else {
                "ies are"
            }
        ));
    }
    out
}

fn format_ratio(a: u64, b: u64) -> String {
    if b == 0 {
        "∞".into()
    } else {
        format!("{:.1}", a as f64 / b as f64)
    }
}

/// ld.so's lookups that are not relocations, glibc 2.35+ on x86-64: the five vDSO symbols
/// (setup_vdso_pointers), malloc/calloc/realloc/free (__rtld_malloc_init_real) and
/// __libc_early_init. Checked against LD_DEBUG=statistics in tests/oracle.rs.
pub const RTLD_INTERNAL_LOOKUPS: u64 = 10;

/// What `deps` predicted, for the cross-check.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prediction {
    pub objects: u64,
    /// Start-up symbol lookups not answered by the cache, plus ld.so's own 10 (docs/taxonomy.md).
    pub lookups: u64,
    pub cache_hits: u64,
    /// Sum of DT_RELACOUNT (what LD_DEBUG=statistics calls relative relocations).
    pub relacount: u64,
    pub relative_total: u64,
    pub lazy_deferred: u64,
    /// Per object: start-up lookups and relocations (path -> (lookups, total)).
    pub per_object: std::collections::BTreeMap<String, (u64, u64)>,
}

/// What `deps` predicts glibc's LD_DEBUG=statistics will say, and per object.
pub fn prediction(c: &Closure) -> Prediction {
    let t = totals(c);
    let mut per_object = std::collections::BTreeMap::new();
    for o in &c.objects {
        let r = &o.info.relocations;
        per_object.insert(o.path.clone(), (r.startup_lookups, r.total));
    }
    Prediction {
        objects: t.objects,
        lookups: t.startup_lookups - t.cache_hits + RTLD_INTERNAL_LOOKUPS,
        cache_hits: t.cache_hits,
        relacount: c.objects.iter().map(|o| o.info.relocations.relacount).sum(),
        relative_total: t.relocations.relative,
        lazy_deferred: t.lazy_deferred,
        per_object,
    }
}
