//! The loader after `main`, over the runs: one row per object loaded by `dlopen`/`dlmopen`
//! after `main` in load order, one per `dlopen` call, one per `dlclose`, lazy binds per
//! object, and ld.so's CPU after `main` as a whole (the summary's part of its own).
//!
//! In: the measured (per-object) runs' [`crate::record::after_main::AfterMain`] records.
//! Objects are matched by ld.so's name across runs and listed in the order the first run
//! that loaded them did; calls by (file asked for, caller, how many such calls came before).
//! Out: medians with their 95% intervals ([`crate::attribute::stats::summarize`]), and per
//! object the static model `deps` gives for start-up objects (relocations by class and
//! symbol lookups, read from the object's file by [`add_static_model`]).
//!
//! A figure that was not measured is absent, never 0: a static program, a run that never
//! reached `main`, a recording made before this was recorded ([`Seen::NotAvailable`]).

use crate::attribute::stats::{summarize, Summary};
use crate::record::after_main::{AfterMain, AfterMainSeen, Cost};
use crate::record::{Detail, Instrumentation, Phase, Run};

/// How much of ld.so's work after `main` the runs saw (the coarsest run's level).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// Each object's mapping, relocation and initializers (ld.so's debug symbols).
    PerObject,
    /// Each call whole and its mapping by the r_debug rendezvous: why not more.
    Rendezvous(String),
    /// Nothing: why.
    NotAvailable(String),
}

/// The static model of one object's file: what its relocation had to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StaticModel {
    pub relative: u64,
    pub symbolic: u64,
    pub plt: u64,
    /// IRELATIVE, TLS, COPY and the rest.
    pub other: u64,
    /// Every relocation entry (`readelf -rW`'s count).
    pub total: u64,
    /// Symbol lookups its relocation makes (PLT slots left to lazy binding not counted unless
    /// the object was opened with `RTLD_NOW` or is linked `-z now`), less the one-entry
    /// cache's hits.
    pub lookups: u64,
}

/// One object loaded after `main`.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectRow {
    /// ld.so's name for it.
    pub object: String,
    /// The `dlopen` that loaded it: the file asked for (its own name, or the name of the
    /// object whose DT_NEEDED closure it is in), the calling object and the mode.
    pub file: Option<String>,
    pub caller: Option<String>,
    pub mode: i32,
    /// Runs that loaded it.
    pub runs: usize,
    /// When its load began, ns after `main` started.
    pub at_ns: Option<Summary>,
    pub mapping_ns: Option<Summary>,
    pub relocation_ns: Option<Summary>,
    pub initializers_ns: Option<Summary>,
    /// Threads its initializers started (median over the runs, rounded).
    pub threads: u64,
    /// Their CPU when the `dlopen` returned, and by their end or the run's.
    pub threads_cpu_at_return_ns: Option<Summary>,
    pub threads_cpu_total_ns: Option<Summary>,
    /// Lazy PLT bindings in its slots (runs without any count 0: the breakpoint was armed).
    pub lazy_binds: Option<Summary>,
    /// Its file's static model; None when the file could not be read (or was not looked at).
    pub model: Option<StaticModel>,
    /// Its lookups walked through the scope of the `dlopen` that loaded it; None when that
    /// scope is not known (a `dlmopen` into a namespace made before, a file gone, a document
    /// read back without it).
    pub scope: Option<ScopeLookups>,
}

/// What the lookup scope of a `dlopen` is made of, in one run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScopeSpec {
    /// ld.so's name for the object the call opened: its DT_NEEDED closure, breadth first, is
    /// the local scope of every object the call loaded.
    pub opened: String,
    /// Objects opened `RTLD_GLOBAL` by earlier calls of the run, in order: their closures
    /// joined the global scope after the executable's.
    pub globals: Vec<String>,
    /// The call's namespace (None or 0: the base one; -1 `LM_ID_NEWLM`: a new one, whose
    /// only scope is the local one).
    pub namespace: Option<i64>,
}

/// One object's symbol lookups in the scope of the `dlopen` that loaded it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ScopeLookups {
    /// Lookups its relocation makes (as [`StaticModel::lookups`]).
    pub lookups: u64,
    /// Objects probed before the definer (all of the scope for a lookup nothing answers).
    pub probes: u64,
    /// Lookups nothing in the scope answers (undefined weak symbols).
    pub unresolved: u64,
    /// The objects that answer them, with how many each answers, in path order.
    pub definers: Vec<(String, u64)>,
}

impl ObjectRow {
    /// Its symbol lookups: walked through its `dlopen`'s scope (what ld.so does), or the
    /// file's own figure where that scope is not known; None without a static model.
    pub fn lookups(&self) -> Option<u64> {
        self.scope
            .as_ref()
            .map(|s| s.lookups)
            .or(self.model.map(|m| m.lookups))
    }

    /// Mapping, relocation and initializers added up (medians).
    pub fn loader_ns(&self) -> f64 {
        [&self.mapping_ns, &self.relocation_ns, &self.initializers_ns]
            .iter()
            .filter_map(|s| s.as_ref().map(|s| s.median))
            .sum()
    }
}

/// One `dlopen` call (matched across runs).
#[derive(Debug, Clone, PartialEq)]
pub struct OpenRow {
    pub file: Option<String>,
    pub caller: Option<String>,
    pub mode: i32,
    /// Made from a constructor inside another `dlopen`.
    pub nested: bool,
    pub runs: usize,
    /// Runs in which it returned NULL.
    pub failed: usize,
    pub cpu_ns: Option<Summary>,
    pub wall_ns: Option<Summary>,
    /// Objects it mapped (the first run's count).
    pub objects: usize,
    /// The namespace a `dlmopen` asked for (-1: `LM_ID_NEWLM`); None for a `dlopen`.
    pub namespace: Option<i64>,
}

/// One `dlclose` call.
#[derive(Debug, Clone, PartialEq)]
pub struct CloseRow {
    pub object: String,
    pub runs: usize,
    pub cpu_ns: Option<Summary>,
    pub wall_ns: Option<Summary>,
    /// Objects unloaded with their finalizers' CPU.
    pub finalizers: Vec<(String, Option<Summary>)>,
}

/// Lazy binds in one object's slots.
#[derive(Debug, Clone, PartialEq)]
pub struct LazyRow {
    pub object: String,
    pub count: Option<Summary>,
    pub cpu_ns: Option<Summary>,
}

/// The section "Loaded after main".
#[derive(Debug, Clone, PartialEq)]
pub struct AfterMainSection {
    pub seen: Seen,
    /// Measured runs whose record it is made of.
    pub runs: usize,
    pub objects: Vec<ObjectRow>,
    pub opens: Vec<OpenRow>,
    pub closes: Vec<CloseRow>,
    pub lazy: Vec<LazyRow>,
    /// ld.so's CPU after `main` per run ([`AfterMain::loader_cpu_ns`]): every top-level
    /// `dlopen` and `dlclose` whole and measured lazy binding. None when not measured.
    pub loader_cpu_ns: Option<Summary>,
}

impl AfterMainSection {
    /// Nothing measured, and why.
    pub fn not_available(why: impl Into<String>) -> AfterMainSection {
        AfterMainSection {
            seen: Seen::NotAvailable(why.into()),
            runs: 0,
            objects: Vec::new(),
            opens: Vec::new(),
            closes: Vec::new(),
            lazy: Vec::new(),
            loader_cpu_ns: None,
        }
    }

    /// Whether any run called `dlopen` after `main`.
    pub fn any_dlopen(&self) -> bool {
        !self.opens.is_empty()
    }

    /// The loader's part of the CPU per exec: its CPU after `main`, when any `dlopen`
    /// happened and it was measured.
    pub fn part_ns(&self) -> Option<f64> {
        match self.seen {
            Seen::NotAvailable(_) => None,
            _ if !self.any_dlopen() => None,
            _ => self.loader_cpu_ns.as_ref().map(|s| s.median),
        }
    }
}

/// `RTLD_LAZY|RTLD_GLOBAL`: the mode as the caller wrote it (RTLD_LOCAL, 0, named when
/// RTLD_GLOBAL is not set).
pub fn mode_text(mode: i32) -> String {
    let mut parts = Vec::new();
    let mut rest = mode;
    for (bit, name) in [
        (0x1, "RTLD_LAZY"),
        (0x2, "RTLD_NOW"),
        (0x4, "RTLD_NOLOAD"),
        (0x8, "RTLD_DEEPBIND"),
        (0x100, "RTLD_GLOBAL"),
        (0x1000, "RTLD_NODELETE"),
        // libc's own loads (NSS, iconv, libgcc_s) mark themselves with it.
        (i32::MIN, "__RTLD_DLOPEN"),
    ] {
        if mode & bit != 0 {
            parts.push(name.to_string());
            rest &= !bit;
        }
    }
    if mode & 0x100 == 0 {
        parts.push("RTLD_LOCAL".into());
    }
    if rest != 0 {
        parts.push(format!("{rest:#x}"));
    }
    parts.join("|")
}

fn sum(v: &[f64]) -> Option<Summary> {
    summarize(v)
}

fn ns(c: &Cost) -> f64 {
    c.cpu_ns as f64
}

/// The measured runs' records, with the run each is from.
fn records(runs: &[Run]) -> Vec<(&Run, &AfterMain)> {
    runs.iter()
        .filter(|r| r.instrumentation == Instrumentation::PerObject)
        .filter(|r| kept(r))
        .filter_map(|r| r.after_main.as_ref().map(|a| (r, a)))
        .collect()
}

/// Where `main` started in a run (CLOCK_MONOTONIC ns): its main-to-exit segment's start.
fn main_start(r: &Run) -> Option<u64> {
    r.segments
        .iter()
        .find(|s| s.phase == Phase::MainToExit)
        .and_then(|s| s.span_ns)
        .map(|s| s.0)
}

/// The section over a profile's runs. `detail`: the profile's, which says why nothing was
/// seen in a static program. The static model is not read here ([`add_static_model`]).
pub fn section(runs: &[Run], detail: &Detail) -> AfterMainSection {
    if matches!(detail, Detail::Static) {
        return AfterMainSection::not_available("a static program: no ld.so, no dlopen");
    }
    let recs = records(runs);
    if recs.is_empty() {
        let measured = runs
            .iter()
            .any(|r| r.instrumentation == Instrumentation::PerObject && kept(r));
        return AfterMainSection::not_available(if measured {
            "the measured runs did not record it (a recording made before ldcost measured the loader after main)"
        } else {
            "no measured (per-object) run"
        });
    }
    // The coarsest level any run saw.
    let mut seen = Seen::PerObject;
    for (_, a) in &recs {
        match &a.seen {
            AfterMainSeen::NotAvailable(why) => {
                seen = Seen::NotAvailable(why.clone());
                break;
            }
            AfterMainSeen::Rendezvous(why) => seen = Seen::Rendezvous(why.clone()),
            AfterMainSeen::PerObject => {}
        }
    }
    if let Seen::NotAvailable(why) = seen {
        return AfterMainSection::not_available(why);
    }
    let loader: Vec<f64> = recs.iter().map(|(_, a)| a.loader_cpu_ns() as f64).collect();
    AfterMainSection {
        seen,
        runs: recs.len(),
        objects: objects(&recs),
        opens: opens(&recs),
        closes: closes(&recs),
        lazy: lazy(&recs),
        loader_cpu_ns: sum(&loader),
    }
}

fn kept(r: &Run) -> bool {
    crate::attribute::profile::lost(r).is_none()
}

/// Names in first-seen order over the runs.
fn order<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if !out.iter().any(|o| o == n) {
            out.push(n.to_string());
        }
    }
    out
}

fn objects(recs: &[(&Run, &AfterMain)]) -> Vec<ObjectRow> {
    let names = order(
        recs.iter()
            .flat_map(|(_, a)| a.loaded().map(|(_, l)| l.name.as_str())),
    );
    let mut rows = Vec::new();
    for name in names {
        let mut row = ObjectRow {
            object: name.clone(),
            file: None,
            caller: None,
            mode: 0,
            runs: 0,
            at_ns: None,
            mapping_ns: None,
            relocation_ns: None,
            initializers_ns: None,
            threads: 0,
            threads_cpu_at_return_ns: None,
            threads_cpu_total_ns: None,
            lazy_binds: None,
            model: None,
            scope: None,
        };
        let (mut at, mut map, mut rel, mut init) = (vec![], vec![], vec![], vec![]);
        let (mut threads, mut t_ret, mut t_tot, mut binds) = (vec![], vec![], vec![], vec![]);
        for (run, a) in recs {
            let Some((open, l)) = a.loaded().find(|(_, l)| l.name == name) else {
                continue;
            };
            if row.runs == 0 {
                row.file = open.file.clone();
                row.caller = open.caller.clone();
                row.mode = open.mode;
            }
            row.runs += 1;
            let start = l.mapping.as_ref().unwrap_or(&open.cost).span_ns.0;
            if let Some(m) = main_start(run) {
                at.push(start.saturating_sub(m) as f64);
            }
            map.extend(l.mapping.as_ref().map(ns));
            rel.extend(l.relocation.as_ref().map(ns));
            init.extend(l.initializers.as_ref().map(ns));
            threads.push(l.threads.len() as f64);
            if !l.threads.is_empty() {
                if l.threads.iter().all(|t| t.cpu_at_return_ns.is_some()) {
                    t_ret.push(
                        l.threads
                            .iter()
                            .filter_map(|t| t.cpu_at_return_ns)
                            .sum::<u64>() as f64,
                    );
                }
                if l.threads.iter().all(|t| t.cpu_total_ns.is_some()) {
                    t_tot.push(l.threads.iter().filter_map(|t| t.cpu_total_ns).sum::<u64>() as f64);
                }
            }
            if matches!(a.seen, AfterMainSeen::PerObject) {
                binds.push(
                    a.lazy
                        .iter()
                        .filter(|b| b.object == name)
                        .map(|b| b.count)
                        .sum::<u64>() as f64,
                );
            }
        }
        row.at_ns = sum(&at);
        row.mapping_ns = sum(&map);
        row.relocation_ns = sum(&rel);
        row.initializers_ns = sum(&init);
        row.threads = sum(&threads).map_or(0, |s| s.median.round() as u64);
        row.threads_cpu_at_return_ns = sum(&t_ret);
        row.threads_cpu_total_ns = sum(&t_tot);
        row.lazy_binds = sum(&binds);
        rows.push(row);
    }
    rows
}

/// The scope of the `dlopen` call `open` of record `a`: None when it opened nothing.
fn scope_spec(a: &AfterMain, open: &crate::record::after_main::Dlopen) -> Option<ScopeSpec> {
    use crate::record::after_main::Outcome;
    let Outcome::Loaded(opened) = &open.outcome else {
        return None;
    };
    let base = |ns: Option<i64>| ns.unwrap_or(0) == 0;
    let globals = a
        .opens
        .iter()
        .take_while(|o| !std::ptr::eq(*o, open))
        .filter(|o| o.mode & 0x100 != 0 && base(o.namespace))
        .filter_map(|o| match &o.outcome {
            Outcome::Loaded(n) => Some(n.clone()),
            Outcome::Failed => None,
        })
        .collect();
    Some(ScopeSpec {
        opened: opened.clone(),
        globals,
        namespace: open.namespace,
    })
}

/// A call's key: (file, caller), and how many calls with the same file and caller came
/// before it in its run.
type CallKey = ((Option<String>, Option<String>), usize);

fn keyed<T>(items: &[T], key: impl Fn(&T) -> (Option<String>, Option<String>)) -> Vec<CallKey> {
    let mut out: Vec<CallKey> = Vec::new();
    for it in items {
        let k = key(it);
        let n = out.iter().filter(|(o, _)| *o == k).count();
        out.push((k, n));
    }
    out
}

fn opens(recs: &[(&Run, &AfterMain)]) -> Vec<OpenRow> {
    let key = |o: &crate::record::after_main::Dlopen| (o.file.clone(), o.caller.clone());
    let mut keys: Vec<CallKey> = Vec::new();
    for (_, a) in recs {
        for k in keyed(&a.opens, key) {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    keys.into_iter()
        .filter_map(|k| {
            let mut row: Option<OpenRow> = None;
            let (mut cpu, mut wall) = (vec![], vec![]);
            for (_, a) in recs {
                let ks = keyed(&a.opens, key);
                let Some(i) = ks.iter().position(|x| *x == k) else {
                    continue;
                };
                let o = &a.opens[i];
                let r = row.get_or_insert_with(|| OpenRow {
                    file: o.file.clone(),
                    caller: o.caller.clone(),
                    mode: o.mode,
                    nested: o.parent.is_some(),
                    runs: 0,
                    failed: 0,
                    cpu_ns: None,
                    wall_ns: None,
                    objects: o.objects.len(),
                    namespace: o.namespace,
                });
                r.runs += 1;
                if o.outcome == crate::record::after_main::Outcome::Failed {
                    r.failed += 1;
                }
                cpu.push(ns(&o.cost));
                wall.push(o.cost.wall_ns as f64);
            }
            // Every key comes from some run's calls.
            let mut r = row?;
            r.cpu_ns = sum(&cpu);
            r.wall_ns = sum(&wall);
            Some(r)
        })
        .collect()
}

fn closes(recs: &[(&Run, &AfterMain)]) -> Vec<CloseRow> {
    let key = |c: &crate::record::after_main::Dlclose| (Some(c.object.clone()), None);
    let mut keys: Vec<CallKey> = Vec::new();
    for (_, a) in recs {
        for k in keyed(&a.closes, key) {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    keys.into_iter()
        .map(|k| {
            let (mut cpu, mut wall, mut runs) = (vec![], vec![], 0);
            let mut fins: Vec<(String, Vec<f64>)> = Vec::new();
            for (_, a) in recs {
                let ks = keyed(&a.closes, key);
                let Some(i) = ks.iter().position(|x| *x == k) else {
                    continue;
                };
                let c = &a.closes[i];
                runs += 1;
                cpu.push(ns(&c.cost));
                wall.push(c.cost.wall_ns as f64);
                for (o, cost) in &c.finalizers {
                    match fins.iter_mut().find(|(n, _)| n == o) {
                        Some((_, v)) => v.push(ns(cost)),
                        None => fins.push((o.clone(), vec![ns(cost)])),
                    }
                }
            }
            CloseRow {
                object: k.0 .0.unwrap_or_default(),
                runs,
                cpu_ns: sum(&cpu),
                wall_ns: sum(&wall),
                finalizers: fins.into_iter().map(|(o, v)| (o, sum(&v))).collect(),
            }
        })
        .collect()
}

fn lazy(recs: &[(&Run, &AfterMain)]) -> Vec<LazyRow> {
    let names = order(
        recs.iter()
            .flat_map(|(_, a)| a.lazy.iter().map(|l| l.object.as_str())),
    );
    names
        .into_iter()
        .map(|name| {
            let (mut count, mut cpu) = (vec![], vec![]);
            for (_, a) in recs {
                // A run that saw lazy binding and bound none of this object's slots: 0 binds.
                if !matches!(a.seen, AfterMainSeen::PerObject) {
                    continue;
                }
                let mine: Vec<_> = a.lazy.iter().filter(|l| l.object == name).collect();
                count.push(mine.iter().map(|l| l.count).sum::<u64>() as f64);
                if !mine.is_empty() && mine.iter().all(|l| l.cpu_ns.is_some()) {
                    cpu.push(mine.iter().filter_map(|l| l.cpu_ns).sum::<u64>() as f64);
                }
            }
            LazyRow {
                object: name,
                count: sum(&count),
                cpu_ns: sum(&cpu),
            }
        })
        .collect()
}

/// The static model of one object's file, as `deps` computes it for start-up objects:
/// relocations by class and the lookups its relocation makes (lazy unless opened with
/// `RTLD_NOW`; an object linked `-z now` binds at load either way). None when the file
/// cannot be read as ELF.
pub fn static_model(path: &str, mode: i32) -> Option<StaticModel> {
    let lazy = mode & 0x2 == 0;
    let info = crate::deps::analyze_file(std::path::Path::new(path), lazy).ok()?;
    let r = &info.relocations;
    let c = &r.by_class;
    Some(StaticModel {
        relative: c.relative,
        symbolic: c.symbolic,
        plt: c.plt,
        other: c.irelative + c.tls + c.copy + c.other,
        total: r.total,
        lookups: r.startup_lookups.saturating_sub(r.cache_hits),
    })
}

/// Reads each object's static model from its file ([`static_model`]) and walks its lookups
/// through its `dlopen`'s scope ([`scope_lookups`]); objects whose file is gone keep None.
/// `program`: the executable's closure (the global scope's start), when it was resolved.
/// `runs`: the profile's, whose first run that loaded an object tells its `dlopen`'s scope.
pub fn add_static_model(
    s: &mut AfterMainSection,
    runs: &[Run],
    program: Option<&crate::deps::Closure>,
) {
    let recs = records(runs);
    let mut closures = Closures::default();
    for o in &mut s.objects {
        o.model = static_model(&o.object, o.mode);
        let spec = recs.iter().find_map(|(_, a)| {
            let (open, _) = a.loaded().find(|(_, l)| l.name == o.object)?;
            scope_spec(a, open)
        });
        o.scope = match (spec, program) {
            (Some(spec), Some(p)) => scope_lookups(&o.object, o.mode, &spec, p, &mut closures),
            _ => None,
        };
    }
}

/// DT_NEEDED closures read so far, by (object, bind now).
#[derive(Default)]
pub struct Closures(Vec<((String, bool), Option<crate::deps::Closure>)>);

impl Closures {
    /// The closure of `path`, found by `rules` (the program's: asking ld.so for them again
    /// would start a process per object).
    fn of(
        &mut self,
        path: &str,
        now: bool,
        rules: &crate::deps::SearchRules,
    ) -> Option<&crate::deps::Closure> {
        let key = (path.to_string(), now);
        let i = match self.0.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                let mut opts = crate::deps::ResolveOptions::from_env();
                opts.bind_now = now;
                opts.rules = Some(rules.clone());
                let c = crate::deps::resolve(std::path::Path::new(path), &opts).ok();
                self.0.push((key, c));
                self.0.len() - 1
            }
        };
        self.0[i].1.as_ref()
    }
}

/// The objects of a closure in ld.so's search list: breadth first, those in scope.
fn search_list(c: &crate::deps::Closure) -> Vec<(String, bool)> {
    c.objects
        .iter()
        .filter(|o| o.in_scope)
        .map(|o| (o.path.clone(), o.info.kind.is_executable()))
        .collect()
}

/// The lookups of `object` (loaded by a `dlopen` in `mode` whose scope `spec` says) walked as
/// ld.so walks them: the global scope (the executable's search list, then the search lists
/// of objects opened `RTLD_GLOBAL` before, each object once) and then the local scope (the
/// opened object's search list); `RTLD_DEEPBIND` puts the local scope first, and a new
/// `dlmopen` namespace has only the local one. None for a `dlmopen` into a namespace made
/// before (its global scope is not known here) or a file that cannot be read.
pub fn scope_lookups(
    object: &str,
    mode: i32,
    spec: &ScopeSpec,
    program: &crate::deps::Closure,
    closures: &mut Closures,
) -> Option<ScopeLookups> {
    let now = mode & 0x2 != 0;
    let new_namespace = spec.namespace == Some(-1);
    if !new_namespace && spec.namespace.unwrap_or(0) != 0 {
        return None;
    }
    let local = search_list(closures.of(&spec.opened, now, &program.rules)?);
    let mut global: Vec<(String, bool)> = Vec::new();
    if !new_namespace {
        global = search_list(program);
        for g in &spec.globals {
            let Some(c) = closures.of(g, false, &program.rules) else {
                continue;
            };
            for (p, exe) in search_list(c) {
                if !global.iter().any(|(q, _)| *q == p) {
                    global.push((p, exe));
                }
            }
        }
    }
    let scope: Vec<(String, bool)> = if mode & 0x8 != 0 {
        local.iter().cloned().chain(global).collect()
    } else {
        global.into_iter().chain(local.iter().cloned()).collect()
    };
    // The object itself, as the opened object's closure read it (lazy or not by the mode).
    let c = closures.of(&spec.opened, now, &program.rules)?;
    let me = c.objects.iter().find(|o| o.path == object).or_else(|| {
        let want = std::fs::canonicalize(object).ok()?;
        c.objects
            .iter()
            .find(|o| std::fs::canonicalize(&o.path).ok().as_ref() == Some(&want))
    })?;
    let ol = crate::attribute::lookups::in_scope(me, &scope)?;
    Some(ScopeLookups {
        lookups: ol.lookups,
        probes: ol.probes,
        unresolved: ol.unresolved,
        definers: ol.resolved_in.into_iter().collect(),
    })
}

#[cfg(test)]
pub(crate) mod tests;
