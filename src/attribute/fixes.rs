//! Fixes: changes to how a program is built or run, each priced from one run's own unit costs.
//!
//! In: the profile's measured section, the fork section when `--fork` ran, and the static
//! closure ([`crate::deps::Closure`]) of the program that was measured. Out: [`Fix`]es ranked
//! by predicted saving. A pure function of what a saved document holds, so `report` of the
//! document gives the same fixes as the `profile` run that wrote it.

use std::collections::BTreeMap;

use crate::attribute::fork_cost::ForkSection;
use crate::attribute::lookups::LookupModel;
use crate::attribute::profile::ProfileSection;
use crate::deps::{Closure, FoundBy, UnusedDependency};
use crate::record::{Instrumentation, Phase};
use crate::stats::{interval95, median, nnls, Singular};

/// What kind of change a fix is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FixKind {
    /// A DT_NEEDED entry nothing of its object binds to (`ldd -u -r`'s semantics).
    UnusedDependency,
    /// Bind at start-up (`-z now`, `LD_BIND_NOW=1`) what is now bound lazily.
    BindNow,
    /// Bind lazily (drop `-z now`) what is now bound at start-up.
    LazyBinding,
    /// `-Wl,-z,pack-relative-relocs` (DT_RELR).
    PackRelativeRelocs,
    /// Lookups an object answers itself (`-fvisibility=hidden`, `-Bsymbolic`, protected).
    SelfBinding,
    /// Initializers over 5% of the whole.
    Constructor,
    /// fork then exec of a large image, against vfork/posix_spawn.
    Spawn,
}

/// Which population a saving is per.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FixSide {
    /// Per exec (the CPU per exec is the whole).
    Exec,
    /// Per fork (the CPU per fork is the whole).
    Fork,
}

/// One predicted fix.
#[derive(Debug, Clone, PartialEq)]
pub struct Fix {
    pub kind: FixKind,
    pub side: FixSide,
    /// The objects it concerns, by the names the tables use.
    pub objects: Vec<String>,
    /// Predicted saving in nanoseconds per exec or per fork; negative when the change costs.
    pub saving_ns: f64,
    /// 95% interval of the saving, when the unit costs have one.
    pub ci95_ns: Option<(f64, f64)>,
    /// The saving over the whole (CPU per exec, or per fork), as a fraction.
    pub share: f64,
    /// The exact change: the linker flag, the environment variable, the code change.
    pub change: String,
    /// Why, in one clause: the counts and unit costs the saving is made of.
    pub reason: String,
    /// When it does not apply, or applies only in part (a system library the user cannot
    /// rebuild); None when it applies as stated.
    pub caveat: Option<String>,
}

/// Bootstrap resamples of the per-object runs for each saving's interval.
pub const RESAMPLES: usize = 200;

/// Initializers over this share of the CPU per exec are named as a fix.
pub const CONSTRUCTOR_SHARE: f64 = 0.05;

/// Relative relocations still in DT_RELA from which packing them is named as a fix: below a
/// few pages of entries the saving is within any run's noise.
pub const RELR_MIN_RELATIVE: u64 = 1000;

/// The part of an object's relocation CPU per relative relocation, as `profile` measures it,
/// that DT_RELR removes: reading its 24-byte Elf64_Rela entry (and faulting in the entries'
/// pages), not the 8-byte pointer write and the faults of the pages written, which it keeps.
/// Not a share of bytes (24/32 would say 75%). Measured on a library built both ways
/// (`benches/fixes.rs`, 40,003 entries) as the saving `compare` measures (its start-up CPU
/// in six runs, the library's relocation phase in three) over the library's relocation as
/// BEFORE's `profile` measures it: 16%, 32%, 39%, 40%, 46%, 46%, 59%, 60% and 74% in nine runs
/// on a shared machine; this is their median. The share is not the
/// object's but the caches': the entries cost what reading them from memory costs, and how
/// much of them the work between two starts evicts is the machine's state (the least share
/// came with the least load, `compare`'s BEFORE relocation of the library 184 µs against 219
/// to 498 µs in the other runs). No figure of one build separates reading an entry from
/// writing its pointer, so the prediction's interval carries the whole measured range
/// ([`RELR_REMOVED_SHARE_RANGE`]). Two other ratios differ for a reason: `compare`'s own
/// (saving over its BEFORE) divides by a relocation measured with the other build's runs
/// between, which find the entries out of the CPU caches; `profile` rounds of each build back
/// to back (before less after over before) measure the saving with the entries left cached by
/// the run before. A program's start meets its entries after other work, as `compare` runs
/// it, while `profile`'s per-object runs follow runs of the same program: so the saving is
/// `compare`'s and the unit it is a share of `profile`'s.
pub const RELR_REMOVED_SHARE: f64 = 0.46;

/// The lowest and highest of the measured shares [`RELR_REMOVED_SHARE`] is the median of:
/// the DT_RELR prediction's interval spans them.
pub const RELR_REMOVED_SHARE_RANGE: (f64, f64) = (0.16, 0.74);

/// What [`fixes`] reads: all of it held by a saved `profile --json` document.
#[derive(Debug, Clone, Copy, Default)]
pub struct Inputs<'a> {
    pub profile: Option<&'a ProfileSection>,
    pub fork: Option<&'a ForkSection>,
    pub closure: Option<&'a Closure>,
    pub lookups: Option<&'a LookupModel>,
    /// The closure's unused direct dependencies ([`crate::deps::unused_direct`]).
    pub unused: &'a [UnusedDependency],
}

/// Each per-object run's CPU (less ldcost's stops), by closure index.
#[derive(Debug, Clone, Default)]
struct Runs {
    reloc: Vec<BTreeMap<usize, f64>>,
    init: Vec<BTreeMap<usize, f64>>,
    /// Each object's own search and mapping ([`Phase::ObjectMapping`]), where measured.
    map_of: Vec<BTreeMap<usize, f64>>,
    /// ld.so's start, search and mapping: its own part and every object's together.
    mapping: Vec<Option<f64>>,
    /// Each object's relocation in the LD_BIND_NOW=1 runs ([`Instrumentation::PerObjectBindNow`]).
    reloc_now: Vec<BTreeMap<usize, f64>>,
    /// The object whose search and mapping came first in each run, where measured.
    first_mapped: Vec<Option<usize>>,
}

/// Unit costs of one resample of the runs (or of all of them).
#[derive(Debug, Clone)]
struct Units {
    /// Relocation CPU per object ≈ a·object + b·relative + c·lookup + d·probe: [a, b, c, d];
    /// None when the fit failed.
    reloc: Option<Vec<f64>>,
    /// Each object's median relocation and initializers CPU.
    reloc_of: Vec<Option<f64>>,
    init_of: Vec<Option<f64>>,
    /// ld.so's search and mapping per object it maps (the median phase over the objects it
    /// maps: all but the program and ld.so, which the kernel maps): ld.so's own start-up is
    /// in it, so it is an upper bound, used only where an object's own is not measured.
    mapping_per_object: Option<f64>,
    /// Each object's median search and mapping, measured between `_dl_map_object`'s entry
    /// and return (per-object runs with ld.so's debug symbols).
    mapping_of: Vec<Option<f64>>,
    /// Each object's median relocation in the LD_BIND_NOW=1 runs.
    reloc_now_of: Vec<Option<f64>>,
    /// The object ld.so searched and mapped first (the most runs' first), where measured.
    first_mapped: Option<usize>,
}

fn short(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// The closure index of a segment's object: its path, or failing that its file name.
fn index_of(c: &Closure, argv0: Option<&str>, object: &str) -> Option<usize> {
    if let Some(i) = c.objects.iter().position(|o| o.path == object) {
        return Some(i);
    }
    if argv0 == Some(object) {
        return Some(0);
    }
    c.objects
        .iter()
        .position(|o| short(&o.path) == short(object))
}

fn runs(p: &ProfileSection, c: &Closure) -> Runs {
    let fallback = p.overhead.ns_per_stop_slope.or(p.overhead.ns_per_stop);
    let argv0 = p.argv.first().map(|s| s.as_str());
    let mut out = Runs::default();
    for r in p
        .raw
        .iter()
        .filter(|r| r.instrumentation == Instrumentation::PerObjectBindNow)
        .filter(|r| crate::attribute::profile::lost(r).is_none())
    {
        let per_stop = crate::attribute::profile::per_stop_ns(r, fallback).unwrap_or(0.0);
        let mut rl = BTreeMap::new();
        for s in r.segments.iter().filter(|s| s.phase == Phase::Relocation) {
            let obj = s.object.as_deref().and_then(|o| index_of(c, argv0, o));
            if let (Some(i), Some(ns)) = (obj, crate::attribute::profile::corrected(s, per_stop)) {
                *rl.entry(i).or_insert(0.0) += ns;
            }
        }
        out.reloc_now.push(rl);
    }
    for r in p
        .raw
        .iter()
        .filter(|r| r.instrumentation == Instrumentation::PerObject)
        .filter(|r| crate::attribute::profile::lost(r).is_none())
    {
        let per_stop = crate::attribute::profile::per_stop_ns(r, fallback).unwrap_or(0.0);
        let (mut rl, mut it, mut mo) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
        let mut map = None;
        let mut first = None;
        for s in &r.segments {
            let Some(ns) = crate::attribute::profile::corrected(s, per_stop) else {
                continue;
            };
            let obj = s.object.as_deref().and_then(|o| index_of(c, argv0, o));
            match (s.phase, obj) {
                (Phase::Relocation, Some(i)) => *rl.entry(i).or_insert(0.0) += ns,
                (Phase::Initializers, Some(i)) => *it.entry(i).or_insert(0.0) += ns,
                (Phase::ObjectMapping, Some(i)) => {
                    first.get_or_insert(i);
                    *mo.entry(i).or_insert(0.0) += ns;
                    *map.get_or_insert(0.0) += ns
                }
                (Phase::LdsoMapping | Phase::ObjectMapping, _) => *map.get_or_insert(0.0) += ns,
                _ => {}
            }
        }
        out.reloc.push(rl);
        out.init.push(it);
        out.map_of.push(mo);
        out.mapping.push(map);
        out.first_mapped.push(first);
    }
    out
}

/// One object's counts that the relocation fit prices.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Counts {
    relative: f64,
    lookups: f64,
    probes: f64,
}

fn counts(c: &Closure, lk: Option<&LookupModel>) -> Vec<Counts> {
    c.objects
        .iter()
        .map(|o| {
            let r = &o.info.relocations;
            let l = lk.and_then(|m| m.objects.iter().find(|l| l.path == o.path));
            Counts {
                relative: r.by_class.relative as f64,
                lookups: l.map_or(r.startup_lookups.saturating_sub(r.cache_hits), |l| {
                    l.lookups
                }) as f64,
                probes: l.map_or(0, |l| l.probes) as f64,
            }
        })
        .collect()
}

fn reloc_row(k: &Counts) -> Vec<f64> {
    vec![1.0, k.relative, k.lookups, k.probes]
}

/// One object's figure over the per-object runs: the median of the runs in `pick` (all when
/// None) that measured it. Runs are keyed by closure index here, by object name in
/// `compare`'s attribution; both read an object's figures through this one function.
pub fn object_median<K, Q>(
    runs: &[BTreeMap<K, f64>],
    key: &Q,
    pick: Option<&[usize]>,
) -> Option<f64>
where
    K: std::borrow::Borrow<Q> + Ord,
    Q: Ord + ?Sized,
{
    let v: Vec<f64> = match pick {
        Some(p) => p
            .iter()
            .filter_map(|&r| runs[r].get(key).copied())
            .collect(),
        None => runs.iter().filter_map(|r| r.get(key).copied()).collect(),
    };
    median(&v)
}

/// What one object's initializers cost each exec that loads it, as a change that adds or
/// removes the object is priced (here, dropping an unused dependency; in `compare`, an
/// object one build loads and the other does not): their own measured CPU over the
/// per-object runs. A count of initializers says nothing of what they do (one constructor
/// spins for milliseconds, the next returns at once), so no per-initializer average stands
/// in for an object that was measured. None: the runs never saw them run.
pub fn initializers_cpu<K, Q>(
    init_runs: &[BTreeMap<K, f64>],
    key: &Q,
    pick: Option<&[usize]>,
) -> Option<f64>
where
    K: std::borrow::Borrow<Q> + Ord,
    Q: Ord + ?Sized,
{
    object_median(init_runs, key, pick)
}

/// Relocation CPU fitted across this run's objects with the non-negative least squares
/// `compare` uses: unit costs below zero are collinearity artefacts, never savings.
fn fit_reloc(counts: &[Counts], reloc_of: &[Option<f64>]) -> Option<Vec<f64>> {
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for (k, m) in counts.iter().zip(reloc_of) {
        if let Some(m) = m {
            x.push(reloc_row(k));
            y.push(*m);
        }
    }
    if x.is_empty() {
        return None;
    }
    nnls(&x, &y, &[], Singular::PivotAtMostOfDiagonal(1e-9))
}

/// The unit costs of the runs `pick` picks (all when None), and of the LD_BIND_NOW=1 runs
/// `pick_now` picks (all when None).
fn units(
    runs: &Runs,
    counts: &[Counts],
    pick: Option<&[usize]>,
    pick_now: Option<&[usize]>,
) -> Units {
    let n = counts.len();
    let reloc_now_of = (0..n)
        .map(|i| object_median(&runs.reloc_now, &i, pick_now))
        .collect();
    let reloc_of: Vec<Option<f64>> = (0..n)
        .map(|i| object_median(&runs.reloc, &i, pick))
        .collect();
    let init_of = (0..n)
        .map(|i| initializers_cpu(&runs.init, &i, pick))
        .collect();
    let mapping_of = (0..n)
        .map(|i| object_median(&runs.map_of, &i, pick))
        .collect();
    let maps: Vec<f64> = match pick {
        Some(p) => p.iter().filter_map(|&r| runs.mapping[r]).collect(),
        None => runs.mapping.iter().flatten().copied().collect(),
    };
    let mapped = n.saturating_sub(2);
    let firsts: Vec<usize> = match pick {
        Some(p) => p.iter().filter_map(|&r| runs.first_mapped[r]).collect(),
        None => runs.first_mapped.iter().flatten().copied().collect(),
    };
    let first_mapped = (0..n).max_by_key(|i| firsts.iter().filter(|f| *f == i).count());
    let first_mapped = first_mapped.filter(|i| firsts.contains(i));
    Units {
        reloc: fit_reloc(counts, &reloc_of),
        reloc_of,
        init_of,
        mapping_per_object: median(&maps)
            .filter(|_| mapped > 0)
            .map(|m| m / mapped as f64),
        mapping_of,
        reloc_now_of,
        first_mapped,
    }
}

/// An interval widened by factors on its ends: the end nearer zero times `spread.0`, the one
/// farther from zero times `spread.1` (a cost's interval lies below zero, a saving's above).
fn widen((lo, hi): (f64, f64), spread: (f64, f64)) -> (f64, f64) {
    if hi <= 0.0 {
        (lo * spread.1, hi * spread.0)
    } else if lo >= 0.0 {
        (lo * spread.0, hi * spread.1)
    } else {
        (lo * spread.1, hi * spread.1)
    }
}

/// Whether each closure object is the interpreter (ld.so, mapped by the kernel).
fn interp_of(c: &Closure) -> Vec<bool> {
    (0..c.objects.len()).map(|i| is_interp(c, i)).collect()
}

/// Whether removing `gone` leaves the first object ld.so maps, `i`, behind an object ld.so
/// still maps: then `i`'s first-mapping start is not saved but moves to that object.
fn moves_first(un: &Units, gone: &[usize], interp: &[bool], i: usize) -> bool {
    un.first_mapped == Some(i)
        && (0..un.mapping_of.len())
            .any(|j| !gone.contains(&j) && !interp[j] && un.mapping_of[j].is_some())
}

/// What dropping object `i` (one of `gone`) saves of search and mapping: its own, measured,
/// except for the object ld.so maps first. That one runs ld.so's mapping code cold (it
/// measures about twice the next one's), and without it the next object mapped takes that
/// start on: what vanishes is a mapping like the others', priced at their median (the first
/// object's own when that is less). None: not measured.
fn mapping_removed(un: &Units, gone: &[usize], interp: &[bool], i: usize) -> Option<f64> {
    let own = un.mapping_of[i]?;
    if !moves_first(un, gone, interp, i) {
        return Some(own);
    }
    let others: Vec<f64> = (0..un.mapping_of.len())
        .filter(|&j| j != i && !interp[j])
        .filter_map(|j| un.mapping_of[j])
        .collect();
    Some(median(&others).map_or(own, |m| m.min(own)))
}

/// Prices one fix from one set of unit costs; None when they cannot.
type Pricer<'a> = Box<dyn Fn(&Units) -> Option<f64> + 'a>;

/// A fix before pricing: everything but the saving, and how to price it.
struct Candidate<'a> {
    fix: Fix,
    price: Pricer<'a>,
    /// Factors on the resampled interval's low and high ends for a spread the per-object
    /// runs do not sample (a unit measured elsewhere, known only as a range).
    spread: (f64, f64),
}

/// The fixes of one profile, most saving first (see [`fixes_of`]): the lookups model and the
/// unused direct dependencies are derived from the closure, as `profile` and `report` both
/// need them, so the two cannot rank different fixes for one document.
pub fn fixes(
    profile: Option<&ProfileSection>,
    fork: Option<&ForkSection>,
    closure: Option<&Closure>,
) -> Vec<Fix> {
    let lookups = closure.map(crate::attribute::lookups::model);
    let unused = closure.map(crate::deps::unused_direct).unwrap_or_default();
    fixes_of(&Inputs {
        profile,
        fork,
        closure,
        lookups: lookups.as_ref(),
        unused: &unused,
    })
}

/// The fixes of one profile, most saving first. Exec-side fixes need the profile's per-object
/// runs and the closure; fork-side ones the fork section. Each saving is priced from this
/// run's own figures and its 95% interval from [`RESAMPLES`] resamples of the per-object runs
/// (fork-side savings from the fork loop's own intervals).
pub fn fixes_of(inp: &Inputs) -> Vec<Fix> {
    let mut out = Vec::new();
    if let (Some(p), Some(c)) = (inp.profile, inp.closure) {
        if !c.objects.is_empty() {
            out.extend(exec_fixes(inp, p, c));
        }
    }
    match (inp.fork, inp.closure) {
        (Some(f), Some(c)) => out.extend(fork_fixes(inp, f, c)),
        // Without the closure (`--fork --no-exec`) fork then exec is still priced: it needs
        // the fork/vfork A/B alone.
        (Some(f), None) => out.extend(
            whole_fork(f)
                .filter(|w| *w > 0.0)
                .and_then(|w| spawn_fix(f, w)),
        ),
        _ => {}
    }
    // Dropping an unused dependency removes everything of the objects it takes with it, their
    // constructors and relocations included: a fix naming only such objects is inside that
    // saving, and listing both would let a reader add one saving to itself.
    let gone: std::collections::BTreeSet<(bool, String)> = out
        .iter()
        .filter(|f| f.kind == FixKind::UnusedDependency)
        .flat_map(|f| {
            f.objects
                .iter()
                .map(move |o| (f.side == FixSide::Fork, short(o).to_string()))
        })
        .collect();
    out.retain(|f| {
        f.kind == FixKind::UnusedDependency
            || f.objects.is_empty()
            || !f
                .objects
                .iter()
                .all(|o| gone.contains(&(f.side == FixSide::Fork, short(o).to_string())))
    });
    out.sort_by(rank);
    out
}

/// The order fixes are listed in: savings before trade-offs (changes that cost here and pay
/// elsewhere), changes the user can make before changes to system libraries, then the
/// largest saving first.
pub fn rank(a: &Fix, b: &Fix) -> std::cmp::Ordering {
    let trade_off = |f: &Fix| f.saving_ns < 0.0;
    trade_off(a)
        .cmp(&trade_off(b))
        .then(
            a.changes_a_system_library()
                .cmp(&b.changes_a_system_library()),
        )
        .then(
            b.saving_ns
                .partial_cmp(&a.saving_ns)
                .unwrap_or(std::cmp::Ordering::Equal),
        )
        .then(a.kind.cmp(&b.kind))
}

/// The caveat's words for a change to a library the user does not build.
pub const SYSTEM_LIBRARY: &str = "a system library: rebuilt only by its distribution";

impl Fix {
    /// Whether the change is to a library of the system's (its caveat says so): such a fix
    /// ranks after every change the user can make, whatever it saves, since a reader acts on
    /// the first lines.
    pub fn changes_a_system_library(&self) -> bool {
        self.caveat
            .as_deref()
            .is_some_and(|c| c.contains(SYSTEM_LIBRARY))
    }
}

/// The CPU per exec, exit teardown included, as the summary states it (the phases' medians
/// plus the exit): a fix's share is of the same whole the report's summary shows, so the two
/// percentages a reader compares are of one number.
fn whole_exec(p: &ProfileSection) -> Option<f64> {
    crate::attribute::summary::summary(Some(p), None)
        .exec
        .map(|e| e.cpu_ns)
}

/// The CPU per fork: the parent's and the child's.
fn whole_fork(f: &ForkSection) -> Option<f64> {
    Some(f.per_fork.parent_cpu_ns.as_ref()?.median + f.per_fork.child_cpu_ns.as_ref()?.median)
}

fn us(ns: f64) -> String {
    format!("{:.1} µs", ns / 1000.0)
}

/// Whether an object lives where the system's libraries do (ld.so's default directories, the
/// directories ld.so.cache named, the interpreter): not rebuilt by the user.
fn is_system(c: &Closure, i: usize) -> bool {
    let o = &c.objects[i];
    if matches!(
        o.found_by,
        FoundBy::LdSoCache | FoundBy::DefaultPath | FoundBy::Interpreter
    ) {
        return true;
    }
    let dir = o.path.rsplit_once('/').map_or("", |d| d.0);
    c.rules.system_dirs.iter().any(|d| d == dir)
        || c.objects.iter().any(|x| {
            x.found_by == FoundBy::LdSoCache && x.path.rsplit_once('/').map(|d| d.0) == Some(dir)
        })
}

fn is_interp(c: &Closure, i: usize) -> bool {
    c.objects[i].found_by == FoundBy::Interpreter
}

/// PLT slots ld.so really leaves lazy in an object: its JUMP_SLOTs unless it or the
/// environment binds now, never ld.so's own.
fn lazy_slots(c: &Closure, i: usize) -> u64 {
    if c.bind_now_env {
        return 0;
    }
    lazy_unless_env(c, i)
}

/// PLT slots ld.so would leave lazy in an object were LD_BIND_NOW not set: none in ld.so
/// (it relocates itself at once) nor in an object marked BIND_NOW (DT_BIND_NOW, DF_BIND_NOW,
/// DF_1_NOW); otherwise its JUMP_SLOTs. Under LD_BIND_NOW the ELF reading counts none as
/// deferred, so the JUMP_SLOT class count stands for them.
fn lazy_unless_env(c: &Closure, i: usize) -> u64 {
    let o = &c.objects[i];
    if is_interp(c, i) || o.info.flags.bind_now {
        return 0;
    }
    if c.bind_now_env {
        o.info.relocations.by_class.plt
    } else {
        o.info.relocations.lazy_deferred
    }
}

/// What a prediction needs to know of one object beyond its counts, decided here for
/// `profile`'s fixes and `compare`'s what-ifs alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Facts {
    /// PLT slots ld.so leaves lazy in this run (what `-z now` would bind at start-up).
    pub lazy: u64,
    /// PLT slots ld.so would leave lazy were LD_BIND_NOW not set (what dropping it defers).
    pub lazy_unless_env: u64,
    /// PLT slots bound at start-up because the object is linked `-z now` (what relinking it
    /// lazily defers); never ld.so's, and none under LD_BIND_NOW, which binds them anyway.
    pub linked_now: u64,
    /// Relative relocations still in RELA for which packing is named (at least
    /// [`RELR_MIN_RELATIVE`], never ld.so's); 0 otherwise.
    pub relr_candidate: u64,
    /// Whether the user builds it: neither a system library nor ld.so, so a link-time
    /// change to it (`-Bsymbolic`, `-fvisibility=hidden`) is theirs to make.
    pub user_built: bool,
}

/// [`Facts`] of the closure's object `i`.
pub fn facts(c: &Closure, i: usize) -> Facts {
    let o = &c.objects[i];
    let r = &o.info.relocations;
    let unpacked = r.by_class.relative.saturating_sub(r.relr);
    Facts {
        lazy: lazy_slots(c, i),
        lazy_unless_env: lazy_unless_env(c, i),
        linked_now: if !is_interp(c, i) && !c.bind_now_env && o.info.flags.bind_now {
            r.by_class.plt
        } else {
            0
        },
        relr_candidate: if unpacked < RELR_MIN_RELATIVE || is_interp(c, i) {
            0
        } else {
            unpacked
        },
        user_built: !is_system(c, i) && !is_interp(c, i),
    }
}

/// What packing `unpacked` relative relocations into DT_RELR saves at `per_relative_ns` (a
/// fitted cost per relative relocation): the [`RELR_REMOVED_SHARE`] of it that reading the
/// RELA entries costs; the pointer writes and their page faults are kept.
pub fn relr_saving_ns(unpacked: u64, per_relative_ns: f64) -> f64 {
    unpacked as f64 * per_relative_ns * RELR_REMOVED_SHARE
}

/// Probes per lookup of an object in the lookup model, or over the whole model.
fn probes_per_lookup(k: &Counts, all: &[Counts]) -> f64 {
    if k.lookups > 0.0 {
        return k.probes / k.lookups;
    }
    let (l, p) = all
        .iter()
        .fold((0.0, 0.0), |(l, p), k| (l + k.lookups, p + k.probes));
    if l > 0.0 {
        p / l
    } else {
        1.0
    }
}

fn exec_fixes(inp: &Inputs, p: &ProfileSection, c: &Closure) -> Vec<Fix> {
    let Some(whole) = whole_exec(p).filter(|w| *w > 0.0) else {
        return Vec::new();
    };
    let runs = runs(p, c);
    if runs.reloc.iter().all(|m| m.is_empty()) {
        return Vec::new();
    }
    let cnt = counts(c, inp.lookups);
    let full = units(&runs, &cnt, None, None);
    let mut cands: Vec<Candidate> = Vec::new();
    let name = |i: usize| short(&c.objects[i].path).to_string();
    let system_caveat = |objs: &[usize]| -> Option<String> {
        let sys: Vec<String> = objs
            .iter()
            .filter(|&&i| is_system(c, i))
            .map(|&i| name(i))
            .collect();
        (!sys.is_empty()).then(|| {
            format!(
                "{} {} {SYSTEM_LIBRARY}",
                sys.join(", "),
                if sys.len() == 1 { "is" } else { "are" }
            )
        })
    };
    let unit_text = |u: &Units| -> String {
        match &u.reloc {
            Some(f) => format!(
                "this run's fit: {:.0} ns per relative relocation, {:.0} ns per lookup, {:.0} ns per probe",
                f[1], f[2], f[3]
            ),
            None => "no relocation fit".into(),
        }
    };

    // 1. Unused direct dependencies: what leaves the closure with each (or with all of one
    // object's at once, where only that removes more).
    for u in &grouped(c, inp.unused) {
        let gone = removed(c, u);
        if gone.is_empty() {
            continue;
        }
        // The scope gets shorter: every lookup answered behind a removed object (or by no
        // object) probes one object fewer per removed object before its answer.
        let pos = |path: &str| c.objects.iter().position(|o| o.path == path);
        let mut probes_saved = 0.0;
        if let Some(m) = inp.lookups {
            for l in &m.objects {
                if pos(&l.path).is_some_and(|i| gone.contains(&i)) {
                    continue;
                }
                for (ans, n) in &l.resolved_in {
                    if let Some(a) = pos(ans) {
                        probes_saved += *n as f64 * gone.iter().filter(|&&g| g < a).count() as f64;
                    }
                }
                probes_saved += l.unresolved as f64 * gone.len() as f64;
            }
        }
        // Each removed object's own search and mapping where the runs measured it; else
        // ld.so's whole phase over the objects it maps, an upper bound.
        let own_mapping = gone.iter().all(|&i| full.mapping_of[i].is_some());
        let g = gone.clone();
        let interp = interp_of(c);
        let price: Pricer = Box::new(move |un: &Units| {
            let mut t = 0.0;
            for &i in &g {
                t += un.reloc_of[i].unwrap_or(0.0) + un.init_of[i].unwrap_or(0.0);
                t += match own_mapping {
                    true => mapping_removed(un, &g, &interp, i)?,
                    false => un.mapping_per_object?,
                };
            }
            t += probes_saved * un.reloc.as_ref().map_or(0.0, |f| f[3]);
            Some(t)
        });
        let removed = gone.iter().map(|&i| name(i)).collect::<Vec<_>>().join(", ");
        cands.push(Candidate {
            fix: Fix {
                kind: FixKind::UnusedDependency,
                side: FixSide::Exec,
                objects: gone.iter().map(|&i| name(i)).collect(),
                saving_ns: 0.0,
                ci95_ns: None,
                share: 0.0,
                change: format!(
                    "link {} with -Wl,--as-needed, or drop {}",
                    u.object,
                    drop_flags(&u.needed)
                ),
                reason: format!(
                    "{} needs {} but binds no symbol to {}: dropping {} removes {} ({} object{}: their measured relocation and initializers, {}{})",
                    u.object,
                    u.needed,
                    if u.needed.contains(", ") { "them" } else { "it" },
                    if u.needed.contains(", ") { "them all" } else { "it" },
                    removed,
                    gone.len(),
                    if gone.len() == 1 { "" } else { "s" },
                    if own_mapping {
                        format!(
                            "and their measured search and mapping ({}){}",
                            gone.iter()
                                .map(|&i| format!("{} {}", name(i), us(full.mapping_of[i].unwrap_or(0.0))))
                                .collect::<Vec<_>>()
                                .join(", "),
                            match gone.iter().find(|&&i| moves_first(&full, &gone, &interp_of(c), i)) {
                                Some(&i) => format!(
                                    "; {} is mapped first, whose mapping runs ld.so's code cold: that start moves to the next object mapped, so {} is priced at the other objects' median, {}",
                                    name(i),
                                    name(i),
                                    us(mapping_removed(&full, &gone, &interp_of(c), i).unwrap_or(0.0))
                                ),
                                None => String::new(),
                            }
                        )
                    } else {
                        format!(
                            "{} of ld.so's search and mapping each",
                            full.mapping_per_object.map_or("nothing".into(), us)
                        )
                    },
                    if probes_saved > 0.0 {
                        format!(", and {probes_saved:.0} probes of the other objects' lookups")
                    } else {
                        String::new()
                    }
                ),
                caveat: Some(if own_mapping {
                    "the exit teardown of the mappings is not priced".into()
                } else {
                    "without ld.so's debug symbols each object's mapping is not measured: priced as ld.so's search-and-mapping phase over the objects it maps, its own start-up included (an upper bound); the exit teardown of the mappings is not priced".into()
                }),
            },
            price,
            spread: (1.0, 1.0),
        });
    }

    // 2a. -z now: every lazy slot becomes a start-up lookup. Relinking an object with
    // `-z now` binds that object's slots only, so each object the user builds is its own
    // fix, priced on its own slots: the program's relink leaves libc's lazy.
    let lazy: Vec<(usize, u64)> = (0..c.objects.len())
        .map(|i| (i, lazy_slots(c, i)))
        .filter(|(_, n)| *n > 0)
        .collect();
    if !lazy.is_empty() {
        let total: u64 = lazy.iter().map(|l| l.1).sum();
        // Measured where the LD_BIND_NOW=1 runs were made: the relocation there less here of
        // the object with the most lazy slots, per slot. One object's difference: an object
        // with a few slots (libc's dozen) would add the noise of its whole relocation phase
        // for a saving inside it. The fit's lookup price only without those runs: few
        // start-up lookups in objects of like size leave it unidentified (priced at zero,
        // and then not shown).
        let (most, most_slots) = lazy.iter().copied().max_by_key(|l| l.1).unwrap_or(lazy[0]);
        let measured = full.reloc_now_of[most].is_some() && full.reloc_of[most].is_some();
        let how = if measured {
            format!(
                "measured: {}'s relocation in per-object runs with LD_BIND_NOW=1 less its relocation without, over its {most_slots} slots, for each",
                name(most)
            )
        } else {
            format!("each priced at {}", unit_text(&full))
        };
        let child = inp
            .fork
            .and_then(|f| f.lazy_binding.as_ref())
            .and_then(|l| l.cost_ns);
        // A system library's relink is its distribution's: its slots are a fix of their own
        // only where no object the user builds has any, and then as LD_BIND_NOW=1, the one
        // change a user can make that binds them (it binds every object's).
        type Slots = Vec<(usize, u64)>;
        let (system, own): (Slots, Slots) = lazy.iter().partition(|&&(i, _)| is_system(c, i));
        let env_only = own.is_empty();
        let groups: Vec<Vec<(usize, u64)>> = match env_only {
            true => vec![system],
            false => own.into_iter().map(|l| vec![l]).collect(),
        };
        let per_all: Vec<(f64, f64)> = lazy
            .iter()
            .map(|&(i, n)| (n as f64, probes_per_lookup(&cnt[i], &cnt)))
            .collect();
        let all_ns = if measured {
            full.reloc_now_of[most]
                .zip(full.reloc_of[most])
                .map(|(a, b)| (a - b) / most_slots as f64 * total as f64)
        } else {
            full.reloc.as_ref().map(|f| {
                per_all
                    .iter()
                    .map(|(n, pp)| n * (f[2] + pp * f[3]))
                    .sum::<f64>()
            })
        };
        for group in groups {
            let n: u64 = group.iter().map(|g| g.1).sum();
            let per: Vec<(f64, f64)> = group
                .iter()
                .map(|&(i, n)| (n as f64, probes_per_lookup(&cnt[i], &cnt)))
                .collect();
            let price: Pricer = Box::new(move |un: &Units| {
                if measured {
                    let per_slot =
                        (un.reloc_now_of[most]? - un.reloc_of[most]?) / most_slots as f64;
                    return Some(-per_slot * n as f64);
                }
                let f = un.reloc.as_ref()?;
                Some(
                    -per.iter()
                        .map(|(n, pp)| n * (f[2] + pp * f[3]))
                        .sum::<f64>(),
                )
            });
            let idx: Vec<usize> = group.iter().map(|g| g.0).collect();
            let names = idx.iter().map(|&i| name(i)).collect::<Vec<_>>();
            let mut caveat = vec![match child {
                Some(ns) => format!(
                    "worth it only when forked children call lazily bound functions: each such first call costs a child {} (measured)",
                    us(ns)
                ),
                None => "worth it only when forked children call lazily bound functions (measured by --fork --child exit)".into(),
            }];
            if env_only {
                caveat.push(format!(
                    "{} {}: relinking with -Wl,-z,now is the distribution's",
                    names.join(", "),
                    if names.len() == 1 {
                        "is a system library"
                    } else {
                        "are system libraries"
                    }
                ));
            }
            cands.push(Candidate {
                fix: Fix {
                    kind: FixKind::BindNow,
                    side: FixSide::Exec,
                    objects: names.clone(),
                    saving_ns: 0.0,
                    ci95_ns: None,
                    share: 0.0,
                    change: match env_only {
                        true => "run with LD_BIND_NOW=1".into(),
                        false => format!("link {} with -Wl,-z,now", names.join(", ")),
                    },
                    reason: format!(
                        "a cost at start-up: {n} lazily bound PLT slots of {} become start-up lookups, {how}; LD_BIND_NOW=1 would bind every object's, {total} ({}){}",
                        if group.len() == 1 {
                            names[0].clone()
                        } else {
                            group
                                .iter()
                                .map(|&(i, n)| format!("{} ({n})", name(i)))
                                .collect::<Vec<_>>()
                                .join(", ")
                        },
                        lazy.iter()
                            .map(|&(i, n)| format!("{} {n}", name(i)))
                            .collect::<Vec<_>>()
                            .join(", "),
                        match all_ns {
                            Some(ns) if !env_only => format!(", costing {}", us(ns)),
                            _ => String::new(),
                        },
                    ),
                    caveat: Some(caveat.join("; ")),
                },
                price,
                spread: (1.0, 1.0),
            });
        }
    }

    // 2b. Dropping -z now: the PLT slots of objects bound at start-up become lazy.
    let now: Vec<(usize, u64)> = (0..c.objects.len())
        .map(|i| (i, facts(c, i).linked_now))
        .filter(|(_, n)| *n > 0)
        .collect();
    for &(i, n) in &now {
        let pp = probes_per_lookup(&cnt[i], &cnt);
        let price: Pricer = Box::new(move |un: &Units| {
            let f = un.reloc.as_ref()?;
            Some(n as f64 * (f[2] + pp * f[3]))
        });
        let child = inp
            .fork
            .and_then(|f| f.lazy_binding.as_ref())
            .and_then(|l| l.cost_ns);
        let mut caveat = vec![
            "the GOT no longer becomes read-only after start-up (full RELRO is lost)".to_string(),
            match child {
                Some(ns) => format!(
                    "each function a forked child calls first then costs it {} (measured)",
                    us(ns)
                ),
                None => "each function a forked child calls first then costs it a lookup".into(),
            },
        ];
        caveat.extend(system_caveat(&[i]));
        cands.push(Candidate {
            fix: Fix {
                kind: FixKind::LazyBinding,
                side: FixSide::Exec,
                objects: vec![name(i)],
                saving_ns: 0.0,
                ci95_ns: None,
                share: 0.0,
                change: format!("link {} without -z now (-Wl,-z,lazy)", name(i)),
                reason: format!(
                    "{} is linked BIND_NOW: its {n} PLT slots are bound at start-up at {:.1} probes per lookup; {}",
                    name(i),
                    pp,
                    unit_text(&full)
                ),
                caveat: Some(caveat.join("; ")),
            },
            price,
            spread: (1.0, 1.0),
        });
    }

    // 3. DT_RELR for objects with many relative relocations still in RELA.
    for (i, o) in c.objects.iter().enumerate() {
        let r = &o.info.relocations;
        let unpacked = r.by_class.relative.saturating_sub(r.relr);
        if facts(c, i).relr_candidate == 0 {
            continue;
        }
        // On the object's own relocation CPU per relative relocation (the share is one of
        // that), the fit's per-relative cost only where the object's own was not measured.
        let relative = r.by_class.relative;
        let price: Pricer = Box::new(move |un: &Units| {
            let per = match un.reloc_of[i] {
                Some(own) if relative > 0 => own / relative as f64,
                _ => un.reloc.as_ref()?[1],
            };
            Some(relr_saving_ns(unpacked, per))
        });
        let own_per = full.reloc_of[i].filter(|_| r.by_class.relative > 0);
        cands.push(Candidate {
            fix: Fix {
                kind: FixKind::PackRelativeRelocs,
                side: FixSide::Exec,
                objects: vec![name(i)],
                saving_ns: 0.0,
                ci95_ns: None,
                share: 0.0,
                change: format!(
                    "link {} with -Wl,-z,pack-relative-relocs (binutils ≥ 2.38, glibc ≥ 2.36)",
                    name(i)
                ),
                reason: format!(
                    "{unpacked} relative relocations in RELA ({} KiB of 24-byte entries): priced as reading those entries, {:.0}% of {} (the median share measured on a library built both ways; its interval spans the measured {:.0}% to {:.0}%); the 8-byte pointer writes and their page faults are kept",
                    unpacked * 24 / 1024,
                    RELR_REMOVED_SHARE * 100.0,
                    match own_per {
                        Some(own) => format!(
                            "its own {:.1} ns of relocation CPU per relative relocation ({} over {})",
                            own / r.by_class.relative as f64,
                            us(own),
                            r.by_class.relative
                        ),
                        None => format!(
                            "this run's fitted {:.1} ns per relative relocation (its own relocation was not measured)",
                            full.reloc.as_ref().map_or(0.0, |f| f[1])
                        ),
                    },
                    RELR_REMOVED_SHARE_RANGE.0 * 100.0,
                    RELR_REMOVED_SHARE_RANGE.1 * 100.0,
                ),
                caveat: system_caveat(&[i]),
            },
            price,
            spread: (
                RELR_REMOVED_SHARE_RANGE.0 / RELR_REMOVED_SHARE,
                RELR_REMOVED_SHARE_RANGE.1 / RELR_REMOVED_SHARE,
            ),
        });
    }

    // 4. Lookups an object answers itself, in objects the user builds.
    if let Some(m) = inp.lookups {
        for (i, o) in c.objects.iter().enumerate() {
            if !facts(c, i).user_built {
                continue;
            }
            let Some(l) = m.objects.iter().find(|l| l.path == o.path) else {
                continue;
            };
            let own = l.resolved_in.get(&o.path).copied().unwrap_or(0);
            if own == 0 {
                continue;
            }
            // Each walks the scope up to the object itself.
            let scope_pos = c.objects[..=i].iter().filter(|x| x.in_scope).count() as f64;
            let price: Pricer = Box::new(move |un: &Units| {
                let f = un.reloc.as_ref()?;
                Some(own as f64 * (f[2] + scope_pos * f[3]))
            });
            cands.push(Candidate {
                fix: Fix {
                    kind: FixKind::SelfBinding,
                    side: FixSide::Exec,
                    objects: vec![name(i)],
                    saving_ns: 0.0,
                    ci95_ns: None,
                    share: 0.0,
                    change: format!(
                        "build {} with -fvisibility=hidden (exporting only its API), or link it -Wl,-Bsymbolic",
                        name(i)
                    ),
                    reason: format!(
                        "{own} of its {} start-up lookups bind to its own definitions, each probing {scope_pos:.0} object{}; {}",
                        l.lookups,
                        if scope_pos == 1.0 { "" } else { "s" },
                        unit_text(&full)
                    ),
                    caveat: (i == 0).then(|| {
                        "a symbol the program must let a library or LD_PRELOAD interpose keeps its lookup".into()
                    }),
                },
                price,
                spread: (1.0, 1.0),
            });
        }
    }

    // 5. Expensive constructors.
    for i in 0..c.objects.len() {
        let Some(t) = full.init_of[i] else { continue };
        if t <= CONSTRUCTOR_SHARE * whole {
            continue;
        }
        let inits = &c.objects[i].info.initializers;
        // Read from the object itself: the document keeps no symbol table.
        let names =
            crate::elf::init_names::initializer_names(std::path::Path::new(&c.objects[i].path))
                .unwrap_or_default();
        let price: Pricer = Box::new(move |un: &Units| un.init_of[i]);
        cands.push(Candidate {
            fix: Fix {
                kind: FixKind::Constructor,
                side: FixSide::Exec,
                objects: vec![name(i)],
                saving_ns: 0.0,
                ci95_ns: None,
                share: 0.0,
                change: format!(
                    "defer the work of {}'s constructors to first use (or drop the library that runs them)",
                    name(i)
                ),
                reason: format!(
                    "its {} initializer{} ({}) take {} per exec, {:.0}% of the CPU per exec",
                    inits.total,
                    if inits.total == 1 { "" } else { "s" },
                    if names.is_empty() {
                        format!(
                            "DT_INIT {}, DT_INIT_ARRAY {}; no symbol names them",
                            if inits.dt_init { "yes" } else { "no" },
                            inits.init_array
                        )
                    } else {
                        names.join(", ")
                    },
                    us(t),
                    100.0 * t / whole
                ),
                caveat: system_caveat(&[i]),
            },
            price,
            spread: (1.0, 1.0),
        });
    }

    // Price each on all runs, and its interval on resamples of them.
    let n = runs.reloc.len();
    let n_now = runs.reloc_now.len();
    let mut draws: Vec<Vec<f64>> = vec![Vec::new(); cands.len()];
    if n > 1 {
        let mut next = crate::stats::draws();
        for _ in 0..RESAMPLES {
            let pick: Vec<usize> = (0..n).map(|_| crate::stats::pick(&mut next, n)).collect();
            let pick_now: Vec<usize> = (0..n_now)
                .map(|_| crate::stats::pick(&mut next, n_now))
                .collect();
            let u = units(&runs, &cnt, Some(&pick), Some(&pick_now));
            for (d, k) in draws.iter_mut().zip(&cands) {
                if let Some(v) = (k.price)(&u) {
                    d.push(v);
                }
            }
        }
    }
    let mut out = Vec::new();
    for (k, mut d) in cands.into_iter().zip(draws) {
        let Some(s) = (k.price)(&full) else { continue };
        if s == 0.0 {
            continue;
        }
        let mut fix = k.fix;
        fix.saving_ns = s;
        fix.share = s / whole;
        // Percentiles over some resamples only would not mean what they say.
        fix.ci95_ns = (d.len() == RESAMPLES)
            .then(|| interval95(&mut d))
            .flatten()
            .map(|(lo, hi)| widen((lo, hi), k.spread));
        out.push(fix);
    }
    out
}

/// `-lNAME` for `libNAME.so[.N]`, else the name itself.
/// "-lssl -lcrypto" for the DT_NEEDED names of one entry or of a group ("a, b").
fn drop_flags(needed: &str) -> String {
    needed
        .split(", ")
        .map(|n| format!("-l{}", lib_flag(n)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The unused entries as fixes name them: each on its own, except that an object's entries
/// are one entry (their names joined by ", ") when dropping them all at once removes an
/// object no one of them removes: libcrypto, needed by the program and by libssl and used by
/// neither, leaves only with libssl.
fn grouped(c: &Closure, unused: &[UnusedDependency]) -> Vec<UnusedDependency> {
    let mut out = Vec::new();
    let mut objects: Vec<&std::path::Path> = Vec::new();
    for u in unused {
        if !objects.contains(&u.object_path.as_path()) {
            objects.push(&u.object_path);
        }
    }
    for o in objects {
        let group: Vec<UnusedDependency> = unused
            .iter()
            .filter(|u| u.object_path == o)
            .cloned()
            .collect();
        let each: std::collections::BTreeSet<&str> = group
            .iter()
            .flat_map(|u| u.removes.iter().map(String::as_str))
            .collect();
        let all = crate::deps::removed_by_dropping_all(c, &group);
        if group.len() > 1 && all.iter().any(|r| !each.contains(r.as_str())) {
            out.push(UnusedDependency {
                object: group[0].object.clone(),
                object_path: group[0].object_path.clone(),
                needed: group
                    .iter()
                    .map(|u| u.needed.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                needed_path: None,
                removes: all,
            });
        } else {
            out.extend(group);
        }
    }
    out
}

fn lib_flag(needed: &str) -> String {
    let base = needed.strip_prefix("lib").unwrap_or(needed);
    match base.find(".so") {
        Some(i) => base[..i].to_string(),
        None => base.to_string(),
    }
}

fn fork_fixes(inp: &Inputs, f: &ForkSection, c: &Closure) -> Vec<Fix> {
    let mut out = Vec::new();
    let Some(whole) = whole_fork(f).filter(|w| *w > 0.0) else {
        return out;
    };
    // The parent's fork CPU spread over the VMAs it duplicates: the whole call is charged to
    // them, so this is the most a VMA can cost, not a fitted slope.
    let per_vma = f.footprint.as_ref().and_then(|fp| {
        let n = fp.vmas.total as f64;
        let p = f.per_fork.parent_cpu_ns.as_ref()?;
        (n > 0.0).then(|| (p.median / n, (p.ci95.0 / n, p.ci95.1 / n)))
    });
    if let Some((unit, (lo, hi))) = per_vma {
        for u in &grouped(c, inp.unused) {
            let gone = removed(c, u);
            let vmas: u64 = gone
                .iter()
                .map(|&i| c.objects[i].info.vmas.len() as u64)
                .sum();
            if vmas == 0 {
                continue;
            }
            let v = vmas as f64;
            out.push(Fix {
                kind: FixKind::UnusedDependency,
                side: FixSide::Fork,
                objects: gone.iter().map(|&i| short(&c.objects[i].path).to_string()).collect(),
                saving_ns: v * unit,
                ci95_ns: Some((v * lo, v * hi)),
                share: v * unit / whole,
                change: format!(
                    "link {} with -Wl,--as-needed, or drop {}",
                    u.object,
                    drop_flags(&u.needed)
                ),
                reason: format!(
                    "{vmas} of the {} VMAs each fork duplicates leave with {}, at {:.0} ns each (the parent's fork CPU over its VMAs)",
                    f.footprint.as_ref().map_or(0, |fp| fp.vmas.total),
                    u.needed,
                    unit
                ),
                caveat: Some(
                    "an upper bound: the fork's fixed cost is spread over the VMAs too".into(),
                ),
            });
        }
    }
    // -z now for the children: the binding each child's first call of a lazy function costs.
    let lazy: u64 = (0..c.objects.len()).map(|i| lazy_slots(c, i)).sum();
    if let Some(l) = f.lazy_binding.as_ref().filter(|_| lazy > 0) {
        if let (Some(cost), Some(got), Some(direct)) = (
            l.cost_ns,
            l.through_got_child_cpu_ns.as_ref(),
            l.direct_child_cpu_ns.as_ref(),
        ) {
            if cost > 0.0 {
                out.push(Fix {
                    kind: FixKind::BindNow,
                    side: FixSide::Fork,
                    objects: Vec::new(),
                    saving_ns: cost,
                    // Conservative: the difference of the two medians' intervals.
                    ci95_ns: Some((got.ci95.0 - direct.ci95.1, got.ci95.1 - direct.ci95.0)),
                    share: cost / whole,
                    change: "link with -Wl,-z,now (or run with LD_BIND_NOW=1)".into(),
                    reason: format!(
                        "each child's first call of a lazily bound function (exit here) costs it {} of CPU (measured: {} through the GOT, {} direct, {} children); {lazy} slots are lazy",
                        us(cost),
                        us(got.median),
                        us(direct.median),
                        l.iterations
                    ),
                    caveat: Some(if l.significant {
                        "per lazily bound function a child calls; -z now costs every exec its lazy slots at start-up".into()
                    } else {
                        "the two intervals overlap: the saving is not established; -z now costs every exec its lazy slots at start-up".into()
                    }),
                });
            }
        }
    }
    out.extend(spawn_fix(f, whole));
    out
}

/// fork then exec: what creating the child without copying the image saves each child, from
/// the fork/vfork A/B of this very image. Only where the two intervals do not overlap and
/// fork costs more: a small image's difference is within the noise and names no fix.
fn spawn_fix(f: &ForkSection, whole: f64) -> Option<Fix> {
    let a = f.spawn_ab.as_ref()?;
    let (fork, vfork) = (
        a.fork_parent_cpu_ns.as_ref()?,
        a.vfork_parent_cpu_ns.as_ref()?,
    );
    let saving = fork.median - vfork.median;
    if !(a.significant && saving > 0.0) {
        return None;
    }
    Some(Fix {
        kind: FixKind::Spawn,
        side: FixSide::Fork,
        objects: Vec::new(),
        saving_ns: saving,
        // Conservative: the difference of the two medians' intervals.
        ci95_ns: Some((fork.ci95.0 - vfork.ci95.1, fork.ci95.1 - vfork.ci95.0)),
        share: saving / whole,
        change: "create the child with posix_spawn (or vfork) when it only execs".into(),
        reason: format!(
            "the parent's CPU per child, measured on this image: fork loop {}, vfork loop {} ({} children each, interleaved in {} rounds)",
            us(fork.median),
            us(vfork.median),
            a.iterations,
            a.rounds
        ),
        caveat: Some("only if the child execs right away".into()),
    })
}

/// The closure indices of what dropping `u` removes (the tables' names of them, matched to
/// the closure's objects by file name).
fn removed(c: &Closure, u: &UnusedDependency) -> Vec<usize> {
    u.removes
        .iter()
        .filter_map(|r| c.objects.iter().position(|o| short(&o.path) == r))
        .collect()
}

/// The fixes of a profile whose closure and lookup model are at hand (a saved document's
/// `deps` section, or the `profile` run's own).
pub fn of_document(
    profile: &ProfileSection,
    fork: Option<&ForkSection>,
    closure: &Closure,
    lookups: Option<&LookupModel>,
) -> Vec<Fix> {
    fixes_of(&Inputs {
        profile: Some(profile),
        fork,
        closure: Some(closure),
        lookups,
        unused: &crate::deps::unused_direct(closure),
    })
}

/// This run's unit costs, as the exec-side fixes are priced with them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnitCosts {
    /// Relocation CPU per object, per relative relocation, per lookup and per probe (ns),
    /// fitted across this run's objects.
    pub per_object: f64,
    pub per_relative: f64,
    pub per_lookup: f64,
    pub per_probe: f64,
    /// ld.so's search and mapping per object it maps (ns).
    pub mapping_per_object: Option<f64>,
}

/// The unit costs [`fixes_of`] prices the exec side with; None without per-object runs or a
/// fit.
pub fn unit_costs(
    profile: &ProfileSection,
    closure: &Closure,
    lookups: Option<&LookupModel>,
) -> Option<UnitCosts> {
    let u = units(
        &runs(profile, closure),
        &counts(closure, lookups),
        None,
        None,
    );
    let f = u.reloc?;
    Some(UnitCosts {
        per_object: f[0],
        per_relative: f[1],
        per_lookup: f[2],
        per_probe: f[3],
        mapping_per_object: u.mapping_per_object,
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn savings_come_before_trade_offs_and_user_changes_before_system_ones() {
        let fix = |saving_ns: f64, system: bool| Fix {
            kind: FixKind::Constructor,
            side: FixSide::Exec,
            objects: Vec::new(),
            saving_ns,
            ci95_ns: None,
            share: 0.0,
            change: String::new(),
            reason: String::new(),
            caveat: system.then(|| SYSTEM_LIBRARY.to_string()),
        };
        let mut v = [
            fix(-12.8, false),
            fix(26.8, true),
            fix(39.8, true),
            fix(5.0, false),
        ];
        v.sort_by(rank);
        let order: Vec<(f64, bool)> = v
            .iter()
            .map(|f| (f.saving_ns, f.changes_a_system_library()))
            .collect();
        assert_eq!(
            order,
            [(5.0, false), (39.8, true), (26.8, true), (-12.8, false)]
        );
    }
    use super::*;
    use crate::attribute::lookups::ObjectLookups;
    use crate::deps::{Object, SearchRules};
    use crate::record::{Detail, Run};

    /// Known unit costs: 5,000 ns per object, 10 per relative relocation, 80 per lookup, 20
    /// per probe.
    const TRUE: [f64; 4] = [5000.0, 10.0, 80.0, 20.0];

    /// (relative, lookups, probes) of six objects whose counts vary independently.
    const COUNTS: [(u64, u64, u64); 6] = [
        (100, 10, 30),
        (5000, 20, 40),
        (300, 400, 900),
        (50, 60, 2000),
        (1200, 5, 5),
        (20, 150, 160),
    ];

    fn counts_of() -> Vec<Counts> {
        COUNTS
            .iter()
            .map(|&(r, l, p)| Counts {
                relative: r as f64,
                lookups: l as f64,
                probes: p as f64,
            })
            .collect()
    }

    fn cost(k: &Counts) -> f64 {
        TRUE[0] + TRUE[1] * k.relative + TRUE[2] * k.lookups + TRUE[3] * k.probes
    }

    #[test]
    fn a_fit_with_known_unit_costs_recovers_them() {
        let cnt = counts_of();
        let runs = Runs {
            reloc: vec![cnt.iter().map(cost).enumerate().collect(); 3],
            init: vec![BTreeMap::new(); 3],
            map_of: vec![BTreeMap::new(); 3],
            mapping: vec![Some(40_000.0); 3],
            reloc_now: Vec::new(),
            first_mapped: vec![None; 3],
        };
        let u = units(&runs, &cnt, None, None);
        let f = u.reloc.expect("a fit");
        for (got, want) in f.iter().zip(TRUE) {
            assert!((got - want).abs() < 1e-6 * want, "{f:?}");
        }
        // Search and mapping spread over the four objects ld.so maps (six less the program
        // and ld.so).
        assert_eq!(u.mapping_per_object, Some(10_000.0));
    }

    /// A closure of six objects with [`COUNTS`]: the program (lazy, 100 slots), four
    /// libraries of the user's (one linked -z now with 50 PLT slots), ld.so last.
    fn closure() -> Closure {
        let exe = std::env::current_exe().unwrap();
        let info = crate::deps::analyze_file(&exe, true).expect("the test binary is ELF");
        let objects = COUNTS
            .iter()
            .enumerate()
            .map(|(i, &(r, l, _))| {
                let path = match i {
                    0 => "/home/u/prog".to_string(),
                    5 => "/lib64/ld-linux-x86-64.so.2".to_string(),
                    _ => format!("/home/u/lib/lib{i}.so"),
                };
                let mut info = info.clone();
                info.flags.bind_now = i == 2;
                let rel = &mut info.relocations;
                rel.by_class.relative = r;
                rel.relr = 0;
                rel.startup_lookups = l;
                rel.cache_hits = 0;
                rel.by_class.plt = if i == 2 { 50 } else { 0 };
                rel.lazy_deferred = if i == 0 { 100 } else { 0 };
                info.initializers.total = 0;
                Object {
                    name: path.rsplit('/').next().unwrap().into(),
                    path,
                    found_by: match i {
                        0 => FoundBy::Target,
                        5 => FoundBy::Interpreter,
                        _ => FoundBy::Runpath {
                            of: "/home/u/prog".into(),
                        },
                    },
                    loaded_by: (i > 0).then_some(0),
                    depth: (i > 0) as u32,
                    needed: Vec::new(),
                    in_scope: true,
                    info,
                }
            })
            .collect();
        Closure {
            rules: SearchRules::built_in("/lib64/ld-linux-x86-64.so.2"),
            objects,
            missing: Vec::new(),
            ld_library_path: None,
            bind_now_env: false,
        }
    }

    fn lookups(c: &Closure) -> LookupModel {
        LookupModel {
            objects: c
                .objects
                .iter()
                .zip(COUNTS)
                .map(|(o, (_, l, p))| ObjectLookups {
                    path: o.path.clone(),
                    lookups: l,
                    probes: p,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    /// Five per-object runs whose relocation phases cost exactly [`TRUE`]'s prices, and five
    /// uninstrumented runs of 1 ms.
    fn section(c: &Closure) -> ProfileSection {
        let cnt = counts_of();
        let seg = |phase: &str, object: Option<&str>, ns: f64| {
            serde_json::json!({"phase": phase, "object": object, "wall_ns": ns as u64,
                "counters": {"task_clock_ns": ns as u64}, "stops": 0})
        };
        let mut raw: Vec<Run> = Vec::new();
        for _ in 0..5 {
            let mut segs = vec![seg("ldso-mapping", None, 40_000.0)];
            for (o, k) in c.objects.iter().zip(&cnt) {
                segs.push(seg("relocation", Some(&o.path), cost(k)));
            }
            for (inst, segments) in [("per-object", segs), ("none", Vec::new())] {
                raw.push(
                    serde_json::from_value(serde_json::json!({
                        "instrumentation": inst, "segments": segments,
                        "total": {"task_clock_ns": 1_000_000}, "wall_ns": 1_000_000,
                        "ending": {"how": "exited", "value": 0}, "stops": 0,
                    }))
                    .expect("a run"),
                );
            }
        }
        crate::attribute::profile::aggregate(
            vec!["/home/u/prog".into()],
            0,
            Detail::Static,
            raw,
            None,
            BTreeMap::new(),
        )
    }

    #[test]
    fn bind_now_is_a_cost_and_dropping_it_a_saving() {
        let c = closure();
        let m = lookups(&c);
        let p = section(&c);
        let fixes = fixes_of(&Inputs {
            profile: Some(&p),
            fork: None,
            closure: Some(&c),
            lookups: Some(&m),
            unused: &[],
        });
        // -z now: the program's 100 lazy slots at its 3 probes per lookup.
        let now = fixes.iter().find(|f| f.kind == FixKind::BindNow).unwrap();
        let want = -100.0 * (TRUE[2] + 3.0 * TRUE[3]);
        assert!((now.saving_ns - want).abs() < 1e-6, "{now:#?}");
        // Its share is of the CPU per exec the summary states.
        let whole = crate::attribute::summary::summary(Some(&p), None)
            .exec
            .unwrap()
            .cpu_ns;
        assert!((now.share - want / whole).abs() < 1e-9, "{now:#?}");
        assert!(
            now.reason.starts_with("a cost at start-up: 100 "),
            "{now:#?}"
        );
        assert_eq!(now.objects, ["prog"]);
        // Every resample prices the same exact data alike.
        let (lo, hi) = now.ci95_ns.unwrap();
        assert!((lo - want).abs() < 1e-6 && (hi - want).abs() < 1e-6);
        // Dropping -z now from lib2.so: its 50 slots at 2.25 probes per lookup (900 / 400).
        let lazy = fixes
            .iter()
            .find(|f| f.kind == FixKind::LazyBinding)
            .unwrap();
        let want = 50.0 * (TRUE[2] + 2.25 * TRUE[3]);
        assert!((lazy.saving_ns - want).abs() < 1e-6, "{lazy:#?}");
        assert_eq!(lazy.objects, ["lib2.so"]);
        // Ranked: the saving first, the cost last.
        assert_eq!(fixes.last().unwrap().kind, FixKind::BindNow);
        // lib1.so's 5,000 relative relocations (over RELR_MIN_RELATIVE), all in RELA:
        // RELR_REMOVED_SHARE of its own relocation CPU, not of the fit's 10 ns each.
        let relr = fixes
            .iter()
            .find(|f| f.kind == FixKind::PackRelativeRelocs)
            .unwrap();
        assert_eq!(relr.objects, ["lib1.so"]);
        let own = cost(&counts_of()[1]);
        assert!(
            (relr.saving_ns - own * RELR_REMOVED_SHARE).abs() < 1e-6,
            "{relr:#?}"
        );
        assert!(relr.caveat.is_none(), "not a system library: {relr:#?}");
    }

    /// The unused-dependency fix on `section`'s runs with lib3.so's own search and mapping
    /// (`own`, in each per-object run) or without it.
    fn unused_fix(own: Option<f64>) -> Fix {
        let c = closure();
        let m = lookups(&c);
        let mut p = section(&c);
        if let Some(ns) = own {
            for r in p
                .raw
                .iter_mut()
                .filter(|r| r.instrumentation == Instrumentation::PerObject)
            {
                let mut s = r.segments[0].clone();
                s.phase = Phase::ObjectMapping;
                s.object = Some(c.objects[3].path.clone());
                s.counters.task_clock_ns = Some(ns as u64);
                r.segments.push(s);
            }
        }
        let u = UnusedDependency {
            object: "prog".into(),
            object_path: "/home/u/prog".into(),
            needed: "lib3.so".into(),
            needed_path: Some(c.objects[3].path.clone().into()),
            removes: vec!["lib3.so".into()],
        };
        fixes_of(&Inputs {
            profile: Some(&p),
            fork: None,
            closure: Some(&c),
            lookups: Some(&m),
            unused: std::slice::from_ref(&u),
        })
        .into_iter()
        .find(|f| f.kind == FixKind::UnusedDependency)
        .expect("the unused dependency is priced")
    }

    #[test]
    fn an_unused_dependency_is_priced_on_its_own_measured_mapping() {
        let reloc = cost(&counts_of()[3]);
        // Measured: its own 7 µs of search and mapping, no upper-bound caveat.
        let f = unused_fix(Some(7_000.0));
        assert!((f.saving_ns - (reloc + 7_000.0)).abs() < 1e-6, "{f:#?}");
        assert!(!f.caveat.as_deref().unwrap_or("").contains("upper bound"));
        assert!(f.reason.contains("lib3.so 7.0 µs"), "{f:#?}");
        // Not measured: ld.so's 40 µs phase over the four objects it maps, said to be an
        // upper bound.
        let f = unused_fix(None);
        assert!((f.saving_ns - (reloc + 10_000.0)).abs() < 1e-6, "{f:#?}");
        assert!(f.caveat.as_deref().unwrap_or("").contains("upper bound"));
    }

    #[test]
    fn bind_now_is_priced_from_the_ld_bind_now_runs_where_made() {
        let c = closure();
        let m = lookups(&c);
        let mut p = section(&c);
        // Three LD_BIND_NOW=1 runs: the program's relocation 30 µs dearer (its 100 slots
        // bound), the other objects' as without.
        let template = p
            .raw
            .iter()
            .find(|r| r.instrumentation == Instrumentation::PerObject)
            .unwrap()
            .clone();
        for _ in 0..3 {
            let mut r = template.clone();
            r.instrumentation = Instrumentation::PerObjectBindNow;
            for s in r.segments.iter_mut() {
                if s.phase == Phase::Relocation && s.object.as_deref() == Some("/home/u/prog") {
                    let t = s.counters.task_clock_ns.unwrap();
                    s.counters.task_clock_ns = Some(t + 30_000);
                }
            }
            p.raw.push(r);
        }
        let fixes = fixes_of(&Inputs {
            profile: Some(&p),
            fork: None,
            closure: Some(&c),
            lookups: Some(&m),
            unused: &[],
        });
        let now = fixes.iter().find(|f| f.kind == FixKind::BindNow).unwrap();
        assert!((now.saving_ns + 30_000.0).abs() < 1e-6, "{now:#?}");
        assert!(now.reason.contains("LD_BIND_NOW=1"), "{now:#?}");
        let (lo, hi) = now.ci95_ns.unwrap();
        assert!((lo + 30_000.0).abs() < 1e-6 && (hi + 30_000.0).abs() < 1e-6);
        // The phase table is the per-object runs' alone.
        let again = section(&c);
        assert_eq!(p.phases, again.phases);
    }

    #[test]
    fn each_lazy_object_is_its_own_bind_now_fix_on_its_own_slots() {
        // The program's 100 lazy slots and lib1.so's 40: relinking either binds its own.
        let mut c = closure();
        c.objects[1].info.relocations.lazy_deferred = 40;
        let m = lookups(&c);
        let mut p = section(&c);
        let template = p
            .raw
            .iter()
            .find(|r| r.instrumentation == Instrumentation::PerObject)
            .unwrap()
            .clone();
        // LD_BIND_NOW=1: the program's relocation 30 µs dearer and lib1.so's 12 µs, 300 ns
        // a slot.
        for _ in 0..3 {
            let mut r = template.clone();
            r.instrumentation = Instrumentation::PerObjectBindNow;
            for s in r.segments.iter_mut() {
                let more = match s.object.as_deref() {
                    Some("/home/u/prog") => 30_000,
                    Some("/home/u/lib/lib1.so") => 12_000,
                    _ => 0,
                };
                if s.phase == Phase::Relocation {
                    let t = s.counters.task_clock_ns.unwrap();
                    s.counters.task_clock_ns = Some(t + more);
                }
            }
            p.raw.push(r);
        }
        let fixes = fixes_of(&Inputs {
            profile: Some(&p),
            fork: None,
            closure: Some(&c),
            lookups: Some(&m),
            unused: &[],
        });
        let now: Vec<&Fix> = fixes
            .iter()
            .filter(|f| f.kind == FixKind::BindNow)
            .collect();
        assert_eq!(now.len(), 2, "{now:#?}");
        for (obj, slots) in [("prog", 100.0), ("lib1.so", 40.0)] {
            let f = now.iter().find(|f| f.objects == [obj]).unwrap();
            assert!((f.saving_ns + 300.0 * slots).abs() < 1e-6, "{f:#?}");
            assert_eq!(f.change, format!("link {obj} with -Wl,-z,now"));
            assert!(
                f.reason.starts_with(&format!(
                    "a cost at start-up: {slots} lazily bound PLT slots of {obj} "
                )),
                "{f:#?}"
            );
            assert!(f.reason.contains("every object's, 140 "), "{f:#?}");
            assert!(f.reason.ends_with(", costing 42.0 µs"), "{f:#?}");
        }
        let now_of = |c: &Closure| -> Vec<Fix> {
            fixes_of(&Inputs {
                profile: Some(&p),
                fork: None,
                closure: Some(c),
                lookups: Some(&m),
                unused: &[],
            })
            .into_iter()
            .filter(|f| f.kind == FixKind::BindNow)
            .collect()
        };
        // lib1.so a system library: its relink is not the user's, so only the program's fix.
        c.objects[1].found_by = FoundBy::DefaultPath;
        let now = now_of(&c);
        assert_eq!(now.len(), 1, "{now:#?}");
        assert_eq!(now[0].objects, ["prog"]);
        assert!((now[0].saving_ns + 30_000.0).abs() < 1e-6, "{now:#?}");
        // Only system libraries lazy: LD_BIND_NOW=1 is the change, priced on their slots,
        // ranked as a change the user can make.
        c.objects[0].info.relocations.lazy_deferred = 0;
        c.objects[3].found_by = FoundBy::DefaultPath;
        c.objects[3].info.relocations.lazy_deferred = 20;
        let now = now_of(&c);
        assert_eq!(now.len(), 1, "{now:#?}");
        assert_eq!(now[0].change, "run with LD_BIND_NOW=1");
        assert_eq!(now[0].objects, ["lib1.so", "lib3.so"]);
        assert!(!now[0].changes_a_system_library(), "{now:#?}");
        assert!((now[0].saving_ns + 18_000.0).abs() < 1e-6, "{now:#?}");
        assert!(
            now[0].reason.starts_with(
                "a cost at start-up: 60 lazily bound PLT slots of lib1.so (40), lib3.so (20) "
            ),
            "{now:#?}"
        );
    }

    #[test]
    fn an_interval_is_widened_away_from_zero() {
        assert_eq!(widen((10.0, 20.0), (0.5, 2.0)), (5.0, 40.0));
        assert_eq!(widen((-20.0, -10.0), (0.5, 2.0)), (-40.0, -5.0));
        assert_eq!(widen((-10.0, 20.0), (0.5, 2.0)), (-20.0, 40.0));
        assert_eq!(widen((10.0, 20.0), (1.0, 1.0)), (10.0, 20.0));
    }

    /// `section`'s runs with each library's own search and mapping, in the order given.
    fn mapped_in_order(c: &Closure, order: &[(usize, f64)]) -> ProfileSection {
        let mut p = section(c);
        for r in p
            .raw
            .iter_mut()
            .filter(|r| r.instrumentation == Instrumentation::PerObject)
        {
            for (k, &(i, ns)) in order.iter().enumerate() {
                let mut s = r.segments[0].clone();
                s.phase = Phase::ObjectMapping;
                s.object = Some(c.objects[i].path.clone());
                s.counters.task_clock_ns = Some(ns as u64);
                r.segments.insert(1 + k, s);
            }
        }
        p
    }

    #[test]
    fn the_first_object_mapped_is_priced_at_the_others_median() {
        let c = closure();
        let m = lookups(&c);
        // lib3 is mapped first (50 µs, ld.so's mapping code cold), then lib1, lib2, lib4 and
        // ld.so (found already loaded).
        let p = mapped_in_order(
            &c,
            &[
                (3, 50_000.0),
                (1, 20_000.0),
                (2, 22_000.0),
                (4, 24_000.0),
                (5, 300.0),
            ],
        );
        let dep = |i: usize| UnusedDependency {
            object: "prog".into(),
            object_path: "/home/u/prog".into(),
            needed: format!("lib{i}.so"),
            needed_path: Some(c.objects[i].path.clone().into()),
            removes: vec![format!("lib{i}.so")],
        };
        let priced = |i: usize| {
            let u = dep(i);
            fixes_of(&Inputs {
                profile: Some(&p),
                fork: None,
                closure: Some(&c),
                lookups: Some(&m),
                unused: std::slice::from_ref(&u),
            })
            .into_iter()
            .find(|f| f.kind == FixKind::UnusedDependency)
            .unwrap()
        };
        // Dropping lib3: its cold start moves to lib1; it saves a mapping like the others'
        // (the median of 20, 22 and 24 µs; not ld.so's 0.3).
        let f = priced(3);
        let want = cost(&counts_of()[3]) + 22_000.0;
        assert!((f.saving_ns - want).abs() < 1e-6, "{f:#?}");
        assert!(f.reason.contains("lib3.so is mapped first"), "{f:#?}");
        // Dropping lib1: its own mapping.
        let f = priced(1);
        let want = cost(&counts_of()[1]) + 20_000.0;
        assert!((f.saving_ns - want).abs() < 1e-6, "{f:#?}");
        assert!(!f.reason.contains("mapped first"), "{f:#?}");
        // When nothing ld.so maps would be left, the first saves its own.
        let u = UnusedDependency {
            object: "prog".into(),
            object_path: "/home/u/prog".into(),
            needed: "lib1.so, lib2.so, lib3.so, lib4.so".into(),
            needed_path: None,
            removes: (1..=4).map(|i| format!("lib{i}.so")).collect(),
        };
        let un = units(&runs(&p, &c), &counts_of(), None, None);
        assert_eq!(un.first_mapped, Some(3));
        let gone = removed(&c, &u);
        assert_eq!(
            mapping_removed(&un, &gone, &interp_of(&c), 3),
            Some(50_000.0)
        );
        assert_eq!(
            mapping_removed(&un, &[3], &interp_of(&c), 3),
            Some(22_000.0)
        );
    }

    #[test]
    fn ld_so_and_bind_now_objects_have_no_lazy_slots() {
        let mut c = closure();
        c.objects[5].info.relocations.lazy_deferred = 7;
        c.objects[2].info.relocations.lazy_deferred = 9;
        assert_eq!(lazy_slots(&c, 0), 100);
        assert_eq!(lazy_slots(&c, 2), 0);
        assert_eq!(lazy_slots(&c, 5), 0);
        c.bind_now_env = true;
        assert_eq!(lazy_slots(&c, 0), 0);
    }

    #[test]
    fn unused_entries_are_one_fix_where_only_all_of_them_remove_more() {
        // prog needs lib1 and lib2, lib1 needs lib2; prog uses neither: lib2 alone removes
        // nothing (lib1 keeps it), lib1 alone removes lib1; both at once remove both.
        let mut c = closure();
        let edge = |name: &str, object: usize| crate::deps::Edge {
            name: name.into(),
            object: Some(object),
            first: true,
        };
        c.objects[0].needed = vec![
            edge("lib1.so", 1),
            edge("lib2.so", 2),
            edge("lib3.so", 3),
            edge("lib4.so", 4),
        ];
        c.objects[1].needed = vec![edge("lib2.so", 2)];
        let dep = |needed: &str, removes: &[&str]| UnusedDependency {
            object: "prog".into(),
            object_path: "/home/u/prog".into(),
            needed: needed.into(),
            needed_path: None,
            removes: removes.iter().map(|r| r.to_string()).collect(),
        };
        let unused = [dep("lib1.so", &["lib1.so"]), dep("lib2.so", &[])];
        let g = grouped(&c, &unused);
        assert_eq!(g.len(), 1, "{g:?}");
        assert_eq!(g[0].needed, "lib1.so, lib2.so");
        assert_eq!(g[0].removes, ["lib1.so", "lib2.so"], "{g:?}");
        assert_eq!(drop_flags(&g[0].needed), "-l1 -l2");
        // Where each entry removes what it would together, they stay apart.
        c.objects[1].needed.clear();
        let apart = [dep("lib1.so", &["lib1.so"]), dep("lib2.so", &["lib2.so"])];
        assert_eq!(grouped(&c, &apart), apart.to_vec());
    }

    #[test]
    fn lib_flags() {
        assert_eq!(lib_flag("libfoo.so.1"), "foo");
        assert_eq!(lib_flag("libm.so"), "m");
        assert_eq!(lib_flag("odd"), "odd");
    }
}
