//! The category breakdown: symbolized samples ([`crate::perf::sampler`]) sorted into the cost
//! taxonomy ([`super::categories`]), counted per unit (one exec run, or one block of fork
//! iterations) so that every share and every time per exec/fork has a 95% interval, and placed
//! in the phase they fell in (by CLOCK_MONOTONIC time: ptrace stops for exec, the probe's own
//! timestamps for fork).
//!
//! Pure: a recording replayed without root gives the same breakdown.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::categories::{classify, Category, StackFrame};
use super::stats::{summarize, Summary};
use super::FoldedStack;
use crate::perf::sampler::{Frame, FrameKind, SymbolizedStack};

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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Span {
    pub label: String,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// One unit the shares are computed over: an exec run (`per_unit` = 1) or a block of
/// `per_unit` fork iterations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// One category in a breakdown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryShare {
    pub category: Category,
    pub label: String,
    pub samples: u64,
    /// Share of all samples in the units.
    pub share: f64,
    /// The share per unit, over units.
    pub share_per_unit: Option<Summary>,
    /// CPU time per exec or per fork (ns, from the samples' weights).
    pub ns_per_exec_or_fork: Option<Summary>,
    /// Samples by phase.
    pub phases: BTreeMap<String, u64>,
}

/// The breakdown of one section (`exec` or `fork`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    pub section: String,
    pub samples: u64,
    pub units: usize,
    /// Execs or forks the units cover.
    pub covered: f64,
    pub categories: Vec<CategoryShare>,
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
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&i| units[i].start_ns);
    let starts: Vec<u64> = order.iter().map(|&i| units[i].start_ns).collect();
    // per unit: category -> weight
    let mut per_unit: Vec<HashMap<Category, (u64, u64)>> = vec![HashMap::new(); units.len()];
    // Samples repeat a few thousand distinct stacks: each is classified and labelled once,
    // keyed by its frames' interned names (the symbolizer shares one string per address).
    let mut distinct: HashMap<Vec<(usize, bool)>, (Category, usize)> = HashMap::new();
    let mut folded_keys: Vec<(Category, Vec<String>)> = Vec::new();
    let mut folded_counts: Vec<u64> = Vec::new();
    let mut folded_index: HashMap<(Category, Vec<String>), usize> = HashMap::new();
    let mut phase_counts: HashMap<(Category, &str), u64> = HashMap::new();
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
        let (cat, fi) = match distinct.get(&key) {
            Some(v) => *v,
            None => {
                let mut cat = classify(&s.frames);
                if lazy && cat == Category::SymbolLookup {
                    cat = Category::LazyBinding;
                }
                let fk = (cat, folded_frames(s));
                let fi = match folded_index.get(&fk) {
                    Some(i) => *i,
                    None => {
                        folded_keys.push(fk.clone());
                        folded_counts.push(0);
                        folded_index.insert(fk, folded_keys.len() - 1);
                        folded_keys.len() - 1
                    }
                };
                distinct.insert(key.clone(), (cat, fi));
                (cat, fi)
            }
        };
        total += 1;
        let e = per_unit[ui].entry(cat).or_insert((0, 0));
        e.0 += 1;
        e.1 += s.weight_ns;
        *phase_counts
            .entry((cat, phase_of(u, s.pid, s.time_ns, other_label)))
            .or_insert(0) += 1;
        folded_counts[fi] += 1;
    }
    let mut phases: BTreeMap<Category, BTreeMap<String, u64>> = BTreeMap::new();
    for ((cat, label), n) in phase_counts {
        *phases
            .entry(cat)
            .or_default()
            .entry(label.to_string())
            .or_insert(0) += n;
    }
    let mut cats: Vec<CategoryShare> = Vec::new();
    for cat in Category::ALL {
        let samples: u64 = per_unit
            .iter()
            .map(|m| m.get(&cat).map(|e| e.0).unwrap_or(0))
            .sum();
        if samples == 0 {
            continue;
        }
        let shares: Vec<f64> = per_unit
            .iter()
            .filter_map(|m| {
                let n: u64 = m.values().map(|e| e.0).sum();
                (n > 0).then(|| m.get(&cat).map(|e| e.0).unwrap_or(0) as f64 / n as f64)
            })
            .collect();
        let times: Vec<f64> = per_unit
            .iter()
            .zip(units)
            .map(|(m, u)| m.get(&cat).map(|e| e.1).unwrap_or(0) as f64 / u.per_unit.max(1.0))
            .collect();
        cats.push(CategoryShare {
            category: cat,
            label: cat.label().to_string(),
            samples,
            share: samples as f64 / total.max(1) as f64,
            share_per_unit: summarize(&shares),
            ns_per_exec_or_fork: summarize(&times),
            phases: phases.remove(&cat).unwrap_or_default(),
        });
    }
    cats.sort_by_key(|c| std::cmp::Reverse(c.samples));
    let mut folded: Vec<FoldedStack> = folded_keys
        .into_iter()
        .zip(folded_counts)
        .map(|((category, frames), count)| FoldedStack {
            category,
            section: section.to_string(),
            frames,
            count,
        })
        .collect();
    folded.sort_by(|a, b| (a.category, &a.frames).cmp(&(b.category, &b.frames)));
    (
        Breakdown {
            section: section.to_string(),
            samples: total,
            units: units.len(),
            covered: units.iter().map(|u| u.per_unit).sum(),
            categories: cats,
            notes: Vec::new(),
        },
        folded,
    )
}

/// Replaces the sampled time per exec/fork by `share × cpu_ns` (the CPU time per exec or fork
/// measured without the sampler, which makes the sampled runs slower), interval included.
pub fn scale_to_measured(b: &mut Breakdown, cpu_ns: f64) {
    for c in &mut b.categories {
        c.ns_per_exec_or_fork = c.share_per_unit.as_ref().map(|s| Summary {
            n: s.n,
            median: s.median * cpu_ns,
            min: s.min * cpu_ns,
            max: s.max * cpu_ns,
            ci95: (s.ci95.0 * cpu_ns, s.ci95.1 * cpu_ns),
        });
    }
}

/// What a report must say about the recordings of one breakdown: event, frequency, scope,
/// losses (summed over all of them), visibility.
pub fn recording_notes(recs: &[&crate::perf::Recording]) -> Vec<String> {
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
            .all(|r| r.scope == crate::perf::Scope::SystemWide)
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
mod tests {
    use super::*;
    use std::sync::Arc;

    fn frame(name: &str, kernel: bool, object: Option<&str>) -> Frame {
        Frame {
            kind: if kernel {
                FrameKind::Kernel
            } else {
                FrameKind::User
            },
            name: Arc::from(name),
            object: object.map(Arc::from),
            addr: 0,
        }
    }

    fn stack(pid: i32, t: u64, frames: Vec<Frame>) -> SymbolizedStack {
        SymbolizedStack {
            sample: 0,
            pid,
            tid: pid,
            time_ns: t,
            weight_ns: 100_000,
            frames,
        }
    }

    #[test]
    fn samples_fall_into_units_phases_and_categories() {
        let fork = || {
            vec![
                frame("copy_pte_range", true, None),
                frame("copy_page_range", true, None),
                frame("dup_mmap", true, None),
                frame("__x64_sys_clone", true, None),
                frame("fork", false, Some("/usr/lib/x86_64-linux-gnu/libc.so.6")),
            ]
        };
        let teardown = || {
            vec![
                frame("zap_pte_range", true, None),
                frame("unmap_vmas", true, None),
                frame("exit_mmap", true, None),
                frame("do_exit", true, None),
            ]
        };
        let units = vec![
            Unit {
                start_ns: 1000,
                end_ns: 2000,
                per_unit: 10.0,
                phases: vec![Span {
                    label: "parent: fork call".into(),
                    start_ns: 1000,
                    end_ns: 1500,
                }],
                main_pid: 7,
            },
            Unit {
                start_ns: 2000,
                end_ns: 3000,
                per_unit: 10.0,
                phases: vec![],
                main_pid: 7,
            },
        ];
        let stacks = vec![
            stack(7, 1100, fork()),
            stack(8, 1600, teardown()),
            stack(7, 2100, fork()),
            stack(9, 2200, teardown()),
            stack(7, 5000, fork()), // outside every unit
        ];
        let (b, folded) = breakdown("fork", &stacks, &units, "child", true);
        assert_eq!(b.samples, 4);
        assert_eq!(b.covered, 20.0);
        let pt = b
            .categories
            .iter()
            .find(|c| c.category == Category::PageTableCopy)
            .unwrap();
        assert_eq!(pt.samples, 2);
        assert_eq!(pt.share, 0.5);
        assert_eq!(pt.phases.get("parent: fork call"), Some(&1));
        assert_eq!(pt.phases.get("other"), Some(&1));
        // 100 µs per sample, one sample per unit of 10 forks: 10 µs per fork.
        assert_eq!(pt.ns_per_exec_or_fork.as_ref().unwrap().median, 10_000.0);
        let ex = b
            .categories
            .iter()
            .find(|c| c.category == Category::ExitTeardown)
            .unwrap();
        assert_eq!(ex.phases.get("child"), Some(&2));
        assert_eq!(folded.iter().map(|f| f.count).sum::<u64>(), 4);
        assert!(folded.iter().all(|f| f.section == "fork"));
        assert_eq!(
            folded
                .iter()
                .find(|f| f.category == Category::PageTableCopy)
                .unwrap()
                .frames
                .last()
                .map(String::as_str),
            Some("copy_pte_range_[k]")
        );
    }
}
