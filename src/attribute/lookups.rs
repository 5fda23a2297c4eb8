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

use serde::{Deserialize, Serialize};

use crate::deps::Closure;
use crate::elf::symbols::{startup_lookups, SymbolIndex};
use crate::elf::MappedFile;

/// One object's lookups.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LookupModel {
    pub lookups: u64,
    pub probes: u64,
    pub unresolved: u64,
    /// Which object answers how many lookups.
    pub answered_by: BTreeMap<String, u64>,
    pub objects: Vec<ObjectLookups>,
    /// (referencing object, symbol) -> answering object, for the oracle test.
    #[serde(skip)]
    pub bindings: Vec<(String, String, Option<String>)>,
}

/// Resolves every start-up lookup of the closure. Objects that cannot be read again are
/// skipped (they were readable a moment ago in `deps::resolve`).
pub fn model(c: &Closure) -> LookupModel {
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
    let mut m = LookupModel::default();
    for o in &c.objects {
        let Ok(f) = MappedFile::open(Path::new(&o.path)) else {
            continue;
        };
        let Ok(list) = startup_lookups(f.bytes(), f.path(), o.info.relocations.lazy) else {
            continue;
        };
        let mut ol = ObjectLookups {
            path: o.path.clone(),
            ..ObjectLookups::default()
        };
        for l in list {
            ol.lookups += 1;
            let mut answer = None;
            let mut probes = 0u64;
            for (path, ix, executable) in &scope {
                // COPY lookups skip the executable (it holds the copy being filled).
                if l.class == 2 && *executable {
                    continue;
                }
                probes += 1;
                if ix.defines(&l.name, l.class) {
                    answer = Some(path.to_string());
                    break;
                }
            }
            ol.probes += probes;
            match &answer {
                Some(p) => *ol.resolved_in.entry(p.clone()).or_default() += 1,
                None => ol.unresolved += 1,
            }
            m.bindings.push((o.path.clone(), l.name, answer));
        }
        m.lookups += ol.lookups;
        m.probes += ol.probes;
        m.unresolved += ol.unresolved;
        for (p, n) in &ol.resolved_in {
            *m.answered_by.entry(p.clone()).or_default() += n;
        }
        m.objects.push(ol);
    }
    m
}
