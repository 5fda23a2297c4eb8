//! Where each start-up symbol lookup is answered, and how many objects it probes on the way:
//! the `n·r` term of Drepper's model, made concrete.
//!
//! In: a [`Closure`]. Out: [`LookupModel`]. Every lookup (cache hits excluded) walks the global
//! scope in load order until an object exports the name ([`crate::elf::symbols`]); a lookup
//! no object answers (an undefined weak symbol such as `__gmon_start__`) probes them all.
//! Checked against glibc's own `LD_DEBUG=bindings` ("binding file A to B: symbol S") in
//! tests/oracle.rs.

use std::collections::BTreeMap;
use std::path::Path;

use crate::deps::Closure;
use crate::elf::symbols::{name_hash, startup_lookup_keys, symbol_names, SymbolIndex};
use crate::elf::MappedFile;

/// One object's lookups.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ObjectLookups {
    pub path: String,
    pub lookups: u64,
    /// Objects probed in all (a probe is one hash-table test).
    pub probes: u64,
    /// Lookups no object answers.
    pub unresolved: u64,
    /// Where its lookups were answered: path -> count.
    pub resolved_in: BTreeMap<String, u64>,
}

/// The closure's lookup model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LookupModel {
    pub lookups: u64,
    pub probes: u64,
    pub unresolved: u64,
    /// Which object answers how many lookups.
    pub answered_by: BTreeMap<String, u64>,
    pub objects: Vec<ObjectLookups>,
    /// (referencing object, symbol) -> answering object, for the oracle test.
    pub bindings: Vec<(String, String, Option<String>)>,
}

/// Resolves every start-up lookup of the closure. Objects that cannot be read again are
/// skipped (they were readable a moment ago in `deps::resolve`). `bindings` stays empty: see
/// [`model_with_bindings`].
pub fn model(c: &Closure) -> LookupModel {
    build(c, false)
}

/// [`model`] with every lookup's (referencing object, symbol, answering object) in `bindings`,
/// for the oracle test against `LD_DEBUG=bindings` (three strings per lookup: not for the CLI).
/// Every lookup walks the scope here (no walk is remembered), so it is also the reference
/// the faster [`model`] is checked against.
pub fn model_with_bindings(c: &Closure) -> LookupModel {
    build(c, true)
}

/// One object's lookups and, if asked, its bindings.
type ObjectResult = (ObjectLookups, Vec<(String, String, Option<String>)>);

fn build(c: &Closure, with_bindings: bool) -> LookupModel {
    // ld.so's own way: each object's hash table, probed in scope order.
    let files: Vec<(String, MappedFile, bool)> = c
        .objects
        .iter()
        .filter(|o| o.in_scope)
        .filter_map(|o| {
            let f = MappedFile::open(Path::new(&o.path)).ok()?;
            Some((o.path.clone(), f, o.info.kind.is_executable()))
        })
        .collect();
    let scope: Vec<(&str, SymbolIndex, bool)> = files
        .iter()
        .filter_map(|(p, f, exe)| {
            let ix = SymbolIndex::new(f.bytes(), f.path(), *exe).ok()?;
            Some((p.as_str(), ix, *exe))
        })
        .collect();
    // Objects are independent: share them out over the cores (a large closure such as
    // rustc's spends most of `deps` here), and put the results back in closure order.
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8)
        .min(c.objects.len().max(1));
    let results: Vec<Option<ObjectResult>> = if threads <= 1 {
        c.objects
            .iter()
            .map(|o| object_lookups(o, &files, &scope, with_bindings))
            .collect()
    } else {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut slots: Vec<Option<ObjectResult>> = (0..c.objects.len()).map(|_| None).collect();
        let done: Vec<Vec<(usize, Option<ObjectResult>)>> = std::thread::scope(|s| {
            let work = || {
                let mut mine = Vec::new();
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(o) = c.objects.get(i) else { break };
                    mine.push((i, object_lookups(o, &files, &scope, with_bindings)));
                }
                mine
            };
            // Each worker takes objects until none is left: a thread the system refuses
            // (ulimit -v, -u) is only parallelism lost, and with none started this thread
            // does them all.
            let workers: Vec<_> = (0..threads)
                .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, work).ok())
                .collect();
            if workers.is_empty() {
                return vec![work()];
            }
            // A worker that panicked lost its objects; they are left out as unreadable ones are.
            workers.into_iter().filter_map(|w| w.join().ok()).collect()
        });
        for (i, r) in done.into_iter().flatten() {
            slots[i] = r;
        }
        slots
    };
    let mut m = LookupModel::default();
    for (ol, bindings) in results.into_iter().flatten() {
        m.lookups += ol.lookups;
        m.probes += ol.probes;
        m.unresolved += ol.unresolved;
        for (p, n) in &ol.resolved_in {
            *m.answered_by.entry(p.clone()).or_default() += n;
        }
        m.objects.push(ol);
        m.bindings.extend(bindings);
    }
    m
}

/// One object's start-up lookups walked through `scope`. A symbol looked up again (one lookup
/// per relocation that names it, less the one-entry cache's hits) walks the same objects and
/// stops at the same one, so each distinct (symbol, class) is walked once, remembered by
/// symbol index (no hashing of names), and counted as often as ld.so looks it up.
fn object_lookups(
    o: &crate::deps::Object,
    files: &[(String, MappedFile, bool)],
    scope: &[(&str, SymbolIndex, bool)],
    with_bindings: bool,
) -> Option<ObjectResult> {
    // In scope: mapped already (a second map costs the faults again, and unmapping in a
    // threaded process costs a TLB shootdown per map).
    let own;
    let f = match files.iter().find(|(p, _, _)| *p == o.path) {
        Some((_, f, _)) => f,
        None => {
            own = MappedFile::open(Path::new(&o.path)).ok()?;
            &own
        }
    };
    let mut ol = ObjectLookups {
        path: o.path.clone(),
        ..ObjectLookups::default()
    };
    // The keys found while `deps` counted the relocations, or, for a closure read back from
    // JSON, the tables read again.
    let found = match &o.info.lookup_keys {
        Some(keys) => symbol_names(f.bytes(), f.path())
            .ok()?
            .map(|names| (std::borrow::Cow::Borrowed(keys.as_slice()), names)),
        None => startup_lookup_keys(f.bytes(), f.path(), o.info.relocations.lazy)
            .ok()?
            .map(|(keys, names)| (std::borrow::Cow::Owned(keys), names)),
    };
    let Some((keys, names)) = found else {
        return Some((ol, Vec::new()));
    };
    // walked[sym * 3 + class]: (answering scope index + 1, or 0 for none; probes + 1), the
    // second 0 meaning "not walked yet".
    // Written, not calloc'ed: zeroed pages read first and written later take a copy-on-write
    // fault each, with a TLB shootdown across the threads.
    let mut walked: Vec<(u32, u32)> = Vec::new();
    walked.resize(names.len().saturating_mul(3), (0, 0));
    let mut answered: Vec<u64> = vec![0; scope.len()];
    let mut bindings = Vec::new();
    for &(sym, class) in keys.iter() {
        let slot = (sym as usize) * 3 + (class as usize).min(2);
        // With bindings (the oracle test's reference), every lookup walks: the test then
        // checks that remembering walks changes no count.
        let (answer, probes) = match walked.get(slot) {
            Some(&(a, p)) if p > 0 && !with_bindings => (a, p - 1),
            _ => {
                let Some(name) = names.name(sym) else {
                    continue;
                };
                let mut probes = 0u32;
                let mut answer = 0u32;
                let hash = name_hash(name);
                for (i, (_, ix, executable)) in scope.iter().enumerate() {
                    // COPY lookups skip the executable (it holds the copy being filled).
                    if class == 2 && *executable {
                        continue;
                    }
                    probes += 1;
                    if ix.defines_hashed(name, hash, class) {
                        answer = i as u32 + 1;
                        break;
                    }
                }
                if let Some(w) = walked.get_mut(slot) {
                    *w = (answer, probes + 1);
                }
                (answer, probes)
            }
        };
        ol.lookups += 1;
        ol.probes += u64::from(probes);
        match (answer as usize).checked_sub(1) {
            Some(i) => answered[i] += 1,
            None => ol.unresolved += 1,
        }
        if with_bindings {
            let name = names.name(sym).unwrap_or_default();
            let to = (answer as usize)
                .checked_sub(1)
                .map(|i| scope[i].0.to_string());
            bindings.push((o.path.clone(), name.to_string(), to));
        }
    }
    for (i, n) in answered.into_iter().enumerate() {
        if n > 0 {
            *ol.resolved_in.entry(scope[i].0.to_string()).or_default() += n;
        }
    }
    Some((ol, bindings))
}

/// One object's lookups walked through an explicit scope, as ld.so walks a `dlopen`ed
/// object's: `scope` lists (path, is the executable) in search order, the global scope's
/// objects then the local scope's. An object in both is listed twice: ld.so probes it again
/// in the second list when the first did not answer. None when the object's file cannot be
/// read; scope objects that cannot be read are left out (they answer nothing).
pub fn in_scope(o: &crate::deps::Object, scope: &[(String, bool)]) -> Option<ObjectLookups> {
    let mut files: Vec<(String, MappedFile, bool)> = Vec::new();
    for (p, exe) in scope {
        if files.iter().any(|(q, _, _)| q == p) {
            continue;
        }
        if let Ok(f) = MappedFile::open(Path::new(p)) {
            files.push((p.clone(), f, *exe));
        }
    }
    let indexes: Vec<(&str, SymbolIndex, bool)> = scope
        .iter()
        .filter_map(|(p, _)| {
            let (p, f, exe) = files.iter().find(|(q, _, _)| q == p)?;
            let ix = SymbolIndex::new(f.bytes(), f.path(), *exe).ok()?;
            Some((p.as_str(), ix, *exe))
        })
        .collect();
    object_lookups(o, &files, &indexes, false).map(|(ol, _)| ol)
}
