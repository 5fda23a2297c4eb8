//! The category breakdown: symbolized samples ([`crate::perf::sampler`]) sorted into the cost
//! taxonomy ([`super::categories`]), counted per unit (one exec run, or one block of fork
//! iterations) so that every share and every time per exec/fork has a 95% interval, and placed
//! in the phase they fell in (by CLOCK_MONOTONIC time: ptrace stops for exec, the probe's own
//! timestamps for fork).
//!
//! One estimator per number: a category's share is pooled (its samples over all samples), its
//! time per exec/fork is that share × the measured CPU (or its pooled sample weight over the
//! execs/forks covered), and both intervals come from one bootstrap over units of the same
//! pooled ratio, so every interval contains its point. (A median over units of per-unit shares
//! is zero for a category present in fewer than half the units, whatever its pooled share.)
//! With fewer than [`MIN_UNITS_FOR_INTERVAL`] units holding samples there is no interval.
//!
//! Pure: a recording replayed without root gives the same breakdown.

use std::collections::{BTreeMap, HashMap};

use super::categories::{classify, in_phase, Category, StackFrame};
use super::exec_parts::{exec_part, part_shares, ExecPart};
pub use super::exec_parts::{ExecPartShare, Instrumentation};
pub use super::phase_table::{PhaseCell, PhaseRow, SpanInfo};
use super::stats::{summarize, Summary};
use super::FoldedStack;
use crate::stats::widen;
use crate::symbolize::samples::{Frame, FrameKind, SymbolizedStack};

impl StackFrame for Frame {
    fn name(&self) -> &str {
        &self.name
    }
    fn object(&self) -> Option<&str> {
        self.object.as_deref()
    }
    fn is_kernel(&self) -> bool {
        self.kind == FrameKind::Kernel
    }
}

/// A stretch of time with a name (a phase of an exec run, a part of a fork iteration).
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub label: String,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// One unit the shares are computed over: an exec run (`per_unit` = 1) or a block of
/// `per_unit` fork iterations.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    pub start_ns: u64,
    pub end_ns: u64,
    pub per_unit: f64,
    /// The unit's own phases, in time order.
    pub phases: Vec<Span>,
    /// The process the phases describe; samples of other processes in the tree are labelled
    /// `other_label` (a fork's child; an exec's threads and children).
    pub main_pid: i32,
}

/// Fewer units with samples than this give no interval (a bootstrap over 1–4 units says
/// nothing about the next run).
pub const MIN_UNITS_FOR_INTERVAL: usize = 5;

/// A figure estimated from the pooled samples, and its 95% interval from the bootstrap over
/// units of the same pooled ratio (None: too few units, see [`MIN_UNITS_FOR_INTERVAL`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Read from schema 1's Summary `median` too.
    pub value: f64,
    pub ci95: Option<(f64, f64)>,
}

/// One category in a breakdown.
#[derive(Debug, Clone, PartialEq)]
pub struct CategoryShare {
    pub category: Category,
    pub label: String,
    pub samples: u64,
    /// Share of all samples in the units (pooled).
    pub share: f64,
    /// 95% interval of `share` (bootstrap over units); None with too few units.
    pub share_ci95: Option<(f64, f64)>,
    /// Units in which the category has at least one sample.
    pub units_present: usize,
    /// The spread of the per-unit shares, over units with samples (descriptive: the figures
    /// above do not derive from it).
    pub share_per_unit: Option<Summary>,
    /// CPU time per exec or per fork (ns): the pooled sample weight over the execs/forks
    /// covered, or `share` × the measured CPU ([`scale_to_measured`]); same interval.
    pub ns_per_exec_or_fork: Option<Estimate>,
    /// Samples by phase.
    pub phases: BTreeMap<String, u64>,
}

/// The breakdown of one section (`exec` or `fork`).
#[derive(Debug, Clone, PartialEq)]
pub struct Breakdown {
    pub section: String,
    pub samples: u64,
    pub units: usize,
    /// Units with at least one sample (intervals need [`MIN_UNITS_FOR_INTERVAL`]).
    pub units_with_samples: usize,
    /// Samples of the recordings that fell outside every unit (left out of the shares).
    pub outside_units: u64,
    /// ldcost's own ptrace stops in the units (the `instrumentation` category): counted here and
    /// left out of `samples`, every share and every time.
    pub instrumentation: Instrumentation,
    /// Execs or forks the units cover (a count: written as an integer).
    pub covered: f64,
    pub categories: Vec<CategoryShare>,
    /// `exec_kernel` in parts (old image teardown, ELF mapping, arguments and stack, other),
    /// largest first; they add up to the category (same samples, same estimator).
    pub exec_kernel_parts: Vec<ExecPartShare>,
    /// The phase × category table: each span (phase and object) split into categories, by
    /// the same pooled shares × CPU ([`super::phase_table`]).
    pub phase_table: Vec<PhaseRow>,
    /// The measured CPU per exec/fork the times are scaled to ([`scale_to_measured`]): every
    /// `ns_per_exec_or_fork` is its share × this; None when they are pooled sample weights.
    pub cpu_ns_per_unit: Option<f64>,
    /// Sampling facts and limits, said in the report.
    pub notes: Vec<String>,
}

fn phase_of<'a>(unit: &'a Unit, pid: i32, t: u64, other_label: &'a str) -> &'a str {
    if pid != unit.main_pid {
        return other_label;
    }
    // Phases are few per exec run; for fork blocks they are sorted: binary search.
    let i = unit.phases.partition_point(|p| p.end_ns < t);
    match unit.phases.get(i) {
        Some(p) if p.start_ns <= t => &p.label,
        _ => "other",
    }
}

/// The flame-graph frames of a stack, root first. A frame-pointer walk through code built
/// without frame pointers wanders through garbage: runs of unnamed frames become one, so the
/// graph keeps its height for what is known.
fn folded_frames(s: &SymbolizedStack) -> Vec<String> {
    let mut frames: Vec<String> = Vec::with_capacity(s.frames.len());
    for f in s.frames.iter().rev() {
        let l = f.label();
        if l.starts_with("[unknown]") && frames.last().is_some_and(|p| p == &l) {
            continue;
        }
        frames.push(l);
    }
    frames
}

/// Sorts `stacks` into categories per unit. Samples outside every unit are left out.
/// Returns the breakdown and the folded stacks for the flame graph.
pub fn breakdown(
    section: &str,
    stacks: &[SymbolizedStack],
    units: &[Unit],
    other_label: &str,
    lazy_context: bool,
) -> (Breakdown, Vec<FoldedStack>) {
    breakdown_in_phases(
        section,
        stacks,
        units,
        other_label,
        lazy_context,
        &HashMap::new(),
    )
}

/// [`breakdown`], with what the caller knows of its span labels: the phase and object each
/// names (for the phase × category table) and the category a user-mode sample that no frame
/// decided takes in it (the phase-aware rule, [`in_phase`]).
pub fn breakdown_in_phases(
    section: &str,
    stacks: &[SymbolizedStack],
    units: &[Unit],
    other_label: &str,
    lazy_context: bool,
    spans: &HashMap<String, SpanInfo>,
) -> (Breakdown, Vec<FoldedStack>) {
    breakdown_in_windows(
        section,
        stacks,
        units,
        other_label,
        lazy_context,
        spans,
        &[],
    )
}

/// A stretch of one thread's time whose samples take `frames` between their category and
/// their own frames in the folded stacks (`dlopen: libX.so`, `relocation: libX.so` for an
/// object loaded after `main`): it names whose work the loader was doing, as the object
/// frame of a start-up span does. A user-mode sample no frame decided takes `context` as its
/// category there, as in the start-up span of the same phase (a library's constructor run by
/// `dlopen` is initializers, not the program's own code); the span it falls in (main to exit)
/// stays its span.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    pub tid: i32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub frames: Vec<String>,
    pub context: Option<Category>,
}

/// The windows of the loader's work after `main` in one run: each `dlopen` call whole
/// (`dlopen: libX.so`, the work between its objects' phases) and inside it each object's
/// search and mapping, relocation and initializers (`dlopen: libssl.so.3`,
/// `relocation: libcrypto.so.3`: the call's object, then the same frame as at start-up).
pub fn after_main_windows(am: &crate::record::after_main::AfterMain) -> Vec<Window> {
    use super::folded::dlopen_frame;
    let mut out = Vec::new();
    for open in &am.opens {
        let called = match (&open.outcome, &open.file) {
            (crate::record::after_main::Outcome::Loaded(o), _) => o.as_str(),
            (_, Some(f)) => f.as_str(),
            (_, None) => "the main program",
        };
        out.push(Window {
            tid: open.tid,
            start_ns: open.cost.span_ns.0,
            end_ns: open.cost.span_ns.1,
            frames: vec![dlopen_frame(called)],
            context: None,
        });
        for o in &open.objects {
            let short = o.name.rsplit('/').next().unwrap_or(&o.name);
            // The contexts of the same phases at start-up (see `profile::sampled`).
            let phases = [
                ("mapping", &o.mapping, None),
                ("relocation", &o.relocation, Some(Category::LdsoRelocation)),
                (
                    "initializers",
                    &o.initializers,
                    Some(Category::Initializers),
                ),
            ];
            for (word, cost, context) in phases {
                if let Some(c) = cost {
                    out.push(Window {
                        tid: open.tid,
                        start_ns: c.span_ns.0,
                        end_ns: c.span_ns.1,
                        frames: vec![dlopen_frame(called), format!("{word}: {short}")],
                        context,
                    });
                }
            }
        }
    }
    out
}

/// The innermost window of `tid` holding `t` (a `dlopen` made by a constructor runs inside
/// its parent's initializers): the latest-starting one. `windows` sorted by start;
/// `longest` their longest length, which bounds the search back.
fn window_of(windows: &[Window], longest: u64, tid: i32, t: u64) -> Option<usize> {
    let end = windows.partition_point(|w| w.start_ns <= t);
    (0..end)
        .rev()
        .take_while(|&i| windows[i].start_ns.saturating_add(longest) >= t)
        .find(|&i| windows[i].tid == tid && windows[i].end_ns >= t)
}

/// [`breakdown_in_phases`], with the [`Window`]s whose samples take their frames.
pub fn breakdown_in_windows(
    section: &str,
    stacks: &[SymbolizedStack],
    units: &[Unit],
    other_label: &str,
    lazy_context: bool,
    spans: &HashMap<String, SpanInfo>,
    windows: &[Window],
) -> (Breakdown, Vec<FoldedStack>) {
    let mut windows = windows.to_vec();
    windows.sort_by_key(|w| (w.start_ns, w.end_ns));
    let longest = windows
        .iter()
        .map(|w| w.end_ns.saturating_sub(w.start_ns))
        .max()
        .unwrap_or(0);
    let mut window_index: HashMap<usize, Option<usize>> = HashMap::new();
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&i| units[i].start_ns);
    let starts: Vec<u64> = order.iter().map(|&i| units[i].start_ns).collect();
    // per unit: category -> weight
    let mut per_unit: Vec<HashMap<Category, (u64, u64)>> = vec![HashMap::new(); units.len()];
    // Samples repeat a few thousand distinct stacks: each is classified and labelled once,
    // keyed by its frames' interned names (the symbolizer shares one string per address).
    let mut distinct: HashMap<Vec<(usize, bool)>, (Category, usize)> = HashMap::new();
    let mut frame_lists: Vec<Vec<String>> = Vec::new();
    // (category, frame list, object frame of the span): see `folded::object_frame`.
    let mut folded_keys: Vec<(Category, usize, Option<usize>)> = Vec::new();
    let mut object_frames: Vec<Vec<String>> = Vec::new();
    let mut object_index: HashMap<&str, Option<usize>> = HashMap::new();
    let mut folded_counts: Vec<u64> = Vec::new();
    let mut folded_index: HashMap<(Category, usize, Option<usize>), usize> = HashMap::new();
    let mut phase_counts: HashMap<(Category, &str), (u64, u64)> = HashMap::new();
    let mut by_phase: BTreeMap<Category, u64> = BTreeMap::new();
    let mut parts: BTreeMap<ExecPart, (u64, u64)> = BTreeMap::new();
    let mut own = Instrumentation::default();
    let mut total = 0u64;
    let mut key: Vec<(usize, bool)> = Vec::new();
    let mut by_ptr: HashMap<usize, usize> = HashMap::new();
    let mut by_text: HashMap<std::sync::Arc<str>, usize> = HashMap::new();
    for s in stacks {
        let k = starts.partition_point(|&st| st <= s.time_ns);
        if k == 0 {
            continue;
        }
        let ui = order[k - 1];
        let u = &units[ui];
        if s.time_ns > u.end_ns {
            continue;
        }
        // ld.so has no frame pointers, so a do_lookup_x leaf rarely shows _dl_fixup above it.
        // In a forked child start-up is long over: a symbol lookup there is lazy binding
        // (or a dlsym, which the probe's children do not make).
        let lazy = lazy_context && s.pid != u.main_pid;
        key.clear();
        for f in &s.frames {
            // One id per distinct name: looked up by the string's address first (the
            // symbolizer shares one string per address), by its text only when new.
            let ptr = std::sync::Arc::as_ptr(&f.name) as *const u8 as usize;
            let id = match by_ptr.get(&ptr) {
                Some(id) => *id,
                None => {
                    let next = by_text.len();
                    let id = *by_text.entry(f.name.clone()).or_insert(next);
                    by_ptr.insert(ptr, id);
                    id
                }
            };
            key.push((id, f.kind == FrameKind::Kernel));
        }
        key.push((usize::from(lazy), false));
        let (stack_cat, li) = match distinct.get(&key) {
            Some(v) => *v,
            None => {
                let mut cat = classify(&s.frames);
                if lazy && cat == Category::SymbolLookup {
                    cat = Category::LazyBinding;
                }
                frame_lists.push(folded_frames(s));
                distinct.insert(key.clone(), (cat, frame_lists.len() - 1));
                (cat, frame_lists.len() - 1)
            }
        };
        let label = phase_of(u, s.pid, s.time_ns, other_label);
        let window = window_of(&windows, longest, s.tid, s.time_ns);
        // The phase decides only what the stack left undecided (rule 5 of the taxonomy); inside
        // a window, the window's phase.
        let context = match window {
            Some(w) => windows[w].context,
            None => spans.get(label).and_then(|i| i.context),
        };
        let cat = match context {
            Some(ctx) => in_phase(stack_cat, &s.frames, Some(ctx)),
            None => stack_cat,
        };
        if cat != stack_cat {
            *by_phase.entry(cat).or_insert(0) += 1;
        }
        let oi = match window {
            Some(w) => *window_index.entry(w).or_insert_with(|| {
                let f = &windows[w].frames;
                let at = object_frames.iter().position(|x| x == f);
                Some(at.unwrap_or_else(|| {
                    object_frames.push(f.clone());
                    object_frames.len() - 1
                }))
            }),
            None => *object_index.entry(label).or_insert_with(|| {
                let f = super::folded::object_frame(label)?;
                object_frames.push(vec![f]);
                Some(object_frames.len() - 1)
            }),
        };
        let fi = *folded_index.entry((cat, li, oi)).or_insert_with(|| {
            folded_keys.push((cat, li, oi));
            folded_counts.push(0);
            folded_keys.len() - 1
        });
        folded_counts[fi] += 1;
        // ldcost's own ptrace stops: in the folded stacks, out of the target's shares.
        if cat == Category::Instrumentation {
            own.samples += 1;
            *own.phases.entry(label.to_string()).or_insert(0) += 1;
            continue;
        }
        if cat == Category::ExecKernel {
            let e = parts.entry(exec_part(&s.frames)).or_insert((0, 0));
            e.0 += 1;
            e.1 += s.weight_ns;
        }
        total += 1;
        let e = per_unit[ui].entry(cat).or_insert((0, 0));
        e.0 += 1;
        e.1 += s.weight_ns;
        let pc = phase_counts.entry((cat, label)).or_insert((0, 0));
        pc.0 += 1;
        pc.1 += s.weight_ns;
    }
    own.share_of_sampled = own.samples as f64 / (total + own.samples).max(1) as f64;
    let covered: f64 = units.iter().map(|u| u.per_unit.max(1.0)).sum();
    let span_order: Vec<&str> = order
        .iter()
        .flat_map(|&i| units[i].phases.iter().map(|p| p.label.as_str()))
        .chain([other_label, "other"])
        .collect();
    let phase_table = super::phase_table::rows(&phase_counts, &span_order, spans, total, covered);
    let mut phases: BTreeMap<Category, BTreeMap<String, u64>> = BTreeMap::new();
    for ((cat, label), (n, _)) in phase_counts {
        *phases
            .entry(cat)
            .or_default()
            .entry(label.to_string())
            .or_insert(0) += n;
    }
    let present: Vec<Category> = Category::ALL
        .iter()
        .copied()
        .filter(|c| per_unit.iter().any(|m| m.contains_key(c)))
        .collect();
    let counts: Vec<Vec<(u64, u64)>> = per_unit
        .iter()
        .map(|m| {
            present
                .iter()
                .map(|c| m.get(c).copied().unwrap_or((0, 0)))
                .collect()
        })
        .collect();
    let per: Vec<f64> = units.iter().map(|u| u.per_unit.max(1.0)).collect();
    let units_with_samples = per_unit.iter().filter(|m| !m.is_empty()).count();
    let intervals = if units_with_samples >= MIN_UNITS_FOR_INTERVAL {
        pooled_intervals(&counts, &per)
    } else {
        Vec::new()
    };
    let mut cats: Vec<CategoryShare> = Vec::new();
    for (ci, &cat) in present.iter().enumerate() {
        let samples: u64 = counts.iter().map(|u| u[ci].0).sum();
        let weight: u64 = counts.iter().map(|u| u[ci].1).sum();
        let shares: Vec<f64> = per_unit
            .iter()
            .filter_map(|m| {
                let n: u64 = m.values().map(|e| e.0).sum();
                (n > 0).then(|| m.get(&cat).map(|e| e.0).unwrap_or(0) as f64 / n as f64)
            })
            .collect();
        let share = super::folded::pooled_share(samples, total);
        let ns = weight as f64 / covered.max(1.0);
        let (share_ci95, ns_ci95) = match intervals.get(ci) {
            // A percentile bootstrap of a ratio can miss the full-sample ratio by a hair when
            // the units are few and uneven: widened to hold it.
            Some(&(s, w)) => (Some(widen(s, share)), Some(widen(w, ns))),
            None => (None, None),
        };
        cats.push(CategoryShare {
            category: cat,
            label: cat.label().to_string(),
            samples,
            share,
            share_ci95,
            units_present: counts.iter().filter(|u| u[ci].0 > 0).count(),
            share_per_unit: summarize(&shares),
            ns_per_exec_or_fork: Some(Estimate {
                value: ns,
                ci95: ns_ci95,
            }),
            phases: phases.remove(&cat).unwrap_or_default(),
        });
    }
    cats.sort_by_key(|c| std::cmp::Reverse(c.samples));
    let mut folded: Vec<FoldedStack> = folded_keys
        .into_iter()
        .zip(folded_counts)
        .map(|((category, li, oi), count)| FoldedStack {
            category,
            section: section.to_string(),
            frames: oi
                .map(|o| object_frames[o].clone())
                .into_iter()
                .flatten()
                .chain(frame_lists[li].iter().cloned())
                .collect(),
            count,
        })
        .collect();
    folded.sort_by(|a, b| (a.category, &a.frames).cmp(&(b.category, &b.frames)));
    (
        Breakdown {
            section: section.to_string(),
            samples: total,
            units: units.len(),
            units_with_samples,
            outside_units: stacks.len() as u64 - total - own.samples,
            instrumentation: own,
            covered: units.iter().map(|u| u.per_unit).sum(),
            categories: cats,
            exec_kernel_parts: part_shares(&parts, total, covered),
            phase_table,
            cpu_ns_per_unit: None,
            notes: phase_note(&by_phase).into_iter().collect(),
        },
        folded,
    )
}

/// How many samples the phase decided (rule 5 of the taxonomy), said in the report.
fn phase_note(by_phase: &BTreeMap<Category, u64>) -> Option<String> {
    let n: u64 = by_phase.values().sum();
    (n > 0).then(|| {
        let parts: Vec<String> = by_phase
            .iter()
            .map(|(c, k)| format!("{} {k}", c.label()))
            .collect();
        format!(
            "{n} user-mode samples that no frame decided (application or ld.so: other by their stack) took the category of the phase they fell in: {}",
            parts.join(", ")
        )
    })
}

/// Resamples drawn by [`pooled_intervals`].
const RESAMPLES: usize = 2000;

/// The 95% percentile-bootstrap intervals of each category's pooled share and pooled weight
/// per exec/fork. `counts[u][c]` is category c's (samples, weight in ns) in unit u and `per[u]`
/// the execs/forks unit u covers. Units are drawn with replacement; each resample's ratios are
/// sums over the drawn units, as the point estimates are sums over all of them. A fixed seed:
/// the same recording always gives the same intervals.
fn pooled_intervals(counts: &[Vec<(u64, u64)>], per: &[f64]) -> Vec<((f64, f64), (f64, f64))> {
    let n = counts.len();
    let cats = counts.first().map_or(0, Vec::len);
    if n == 0 || cats == 0 {
        return Vec::new();
    }
    let mut next = crate::stats::draws();
    let mut shares = vec![Vec::with_capacity(RESAMPLES); cats];
    let mut weights = vec![Vec::with_capacity(RESAMPLES); cats];
    let mut num = vec![(0u64, 0u64); cats];
    for _ in 0..RESAMPLES {
        num.iter_mut().for_each(|x| *x = (0, 0));
        let (mut all, mut covered) = (0u64, 0.0f64);
        for _ in 0..n {
            let u = crate::stats::pick(&mut next, n);
            for (acc, c) in num.iter_mut().zip(&counts[u]) {
                acc.0 += c.0;
                acc.1 += c.1;
                all += c.0;
            }
            covered += per[u];
        }
        for (c, acc) in num.iter().enumerate() {
            shares[c].push(acc.0 as f64 / all.max(1) as f64);
            weights[c].push(acc.1 as f64 / covered.max(1.0));
        }
    }
    // Not empty: one value per resample.
    let pct = |v: &mut Vec<f64>| crate::stats::interval95(v).unwrap_or((f64::NAN, f64::NAN));
    shares
        .iter_mut()
        .zip(weights.iter_mut())
        .map(|(s, w)| (pct(s), pct(w)))
        .collect()
}

/// Replaces the sampled time per exec/fork by `share × cpu_ns` (the CPU time per exec or fork
/// measured without the sampler, which makes the sampled runs slower); its interval is the
/// share's interval × `cpu_ns` (one resampling for both).
pub fn scale_to_measured(b: &mut Breakdown, cpu_ns: f64) {
    for c in &mut b.categories {
        c.ns_per_exec_or_fork = Some(Estimate {
            value: c.share * cpu_ns,
            ci95: c.share_ci95.map(|(lo, hi)| (lo * cpu_ns, hi * cpu_ns)),
        });
    }
    for p in &mut b.exec_kernel_parts {
        p.ns_per_exec_or_fork = p.share * cpu_ns;
    }
    super::phase_table::scale(&mut b.phase_table, cpu_ns);
    b.cpu_ns_per_unit = Some(cpu_ns);
}

/// What a report must say about the recordings of one breakdown: event, frequency, scope,
/// losses (summed over all of them), visibility.
pub fn recording_notes(recs: &[&crate::record::samples::Recording]) -> Vec<String> {
    let Some(first) = recs.first() else {
        return Vec::new();
    };
    let samples: usize = recs.iter().map(|r| r.samples.len()).sum();
    let lost: u64 = recs.iter().map(|r| r.lost).sum();
    let throttled: u64 = recs.iter().map(|r| r.throttled).sum();
    let mut v = vec![format!(
        "{} samples of {} at {} Hz in {} recording{}, {}",
        samples,
        first.event,
        first.frequency_hz,
        recs.len(),
        if recs.len() == 1 { "" } else { "s" },
        if recs
            .iter()
            .all(|r| r.scope == crate::record::samples::Scope::SystemWide)
        {
            "system-wide per CPU, the target's process tree kept"
        } else {
            "per task (inherited): children's exit teardown is not visible"
        }
    )];
    if lost > 0 || throttled > 0 {
        v.push(format!(
            "{lost} records lost, throttled {throttled} times: shares are of what was recorded"
        ));
    }
    if recs.iter().any(|r| !r.kernel_frames_visible) {
        v.push("kernel frames are not visible (perf_event_paranoid or kptr_restrict): kernel time shows as unknown".into());
    }
    let mut seen = std::collections::BTreeSet::new();
    for r in recs {
        for n in &r.notes {
            if seen.insert(n.clone()) {
                v.push(n.clone());
            }
        }
    }
    v
}

#[cfg(test)]
#[path = "breakdown_tests.rs"]
mod tests;
