//! The answer first: what `profile`'s report opens with. In: the profile's measured section and,
//! with `--fork`, the fork section. Out: the CPU per exec and where it goes, as parts that add
//! up to it, the costliest objects with the counts behind them, and the fork side's whole.
//!
//! Every figure here is made of the figures the tables print (the phase medians, the exit
//! teardown lines, the per-fork medians), added up, never measured again, so the summary and
//! the tables cannot disagree. A pure function of what a saved document holds: `report` of the
//! document gives the summary the `profile` run printed.

use crate::attribute::fixes::FixKind;
use crate::attribute::fork_cost::ForkSection;
use crate::attribute::profile::{PhaseStat, ProfileSection};
use crate::record::Phase;

/// How many objects the summary names.
pub const TOP_OBJECTS: usize = 3;

/// One part of the CPU per exec: phases of the table added up.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// "kernel exec", "ld.so search & mapping", ...
    pub label: String,
    /// The table's rows it is made of ("ld.so other", "CPU after the last stop", ...).
    pub made_of: Vec<String>,
    /// Nanoseconds per exec: the sum of those rows' medians.
    pub ns: f64,
    /// `ns` over the whole.
    pub share: f64,
}

/// One of the costliest objects at start-up (relocation and initializers).
#[derive(Debug, Clone, PartialEq)]
pub struct TopObject {
    /// The object, as the tables name it (its path).
    pub object: String,
    /// Its relocation and initializers rows added up (ns per exec).
    pub ns: f64,
    /// The larger of its rows: its phase's label and median.
    pub dominant_phase: String,
    pub dominant_ns: f64,
    /// The static reason, from `deps`' prediction: its relocations and start-up symbol lookups.
    pub relocations: Option<u64>,
    pub lookups: Option<u64>,
}

/// The exec side.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecSummary {
    /// The CPU per exec: every part added up (the phase medians, the CPU after the last stop
    /// and the exit teardown no counter sees).
    pub cpu_ns: f64,
    /// 95% interval around `cpu_ns`: the runs' phase totals' bootstrap interval, as distances
    /// below and above their median, placed around the point; None with fewer than two runs.
    pub ci95_ns: Option<(f64, f64)>,
    pub runs: usize,
    /// Wall time of the phases: the sum of their wall medians (the phase table's column).
    pub wall_ns: Option<f64>,
    /// The parts, in the order they happen; their shares add up to 1.
    pub parts: Vec<Part>,
    /// At most [`TOP_OBJECTS`], costliest first.
    pub top_objects: Vec<TopObject>,
    /// The median CPU per exec of the runs without ptrace (the instrumentation's cross-check,
    /// [`uninstrumented_per_exec`]), when they ran: the summary says so when the parts stray
    /// from it by more than 10%.
    pub uninstrumented_ns: Option<f64>,
}

/// The fork side: the CPU per fork as the per-fork table's parent and child rows.
#[derive(Debug, Clone, PartialEq)]
pub struct ForkSummary {
    pub spawn: String,
    pub parent_cpu_ns: f64,
    pub child_cpu_ns: f64,
    /// Parent and child added up: the whole a fork-side fix's share is of.
    pub cpu_ns: f64,
    pub round_trip_ns: Option<f64>,
}

/// What the report opens with.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Summary {
    pub exec: Option<ExecSummary>,
    pub fork: Option<ForkSummary>,
}

/// The parts of the CPU per exec: (label, its phases, the one it is named after first).
/// "ld.so other" (TLS set-up, version checks, bookkeeping between the objects) is ld.so's own
/// work and goes with its search and mapping; "entry to main" (libc's start-up, the
/// executable's constructors) is the program's.
const PARTS: [(&str, &[Phase]); 6] = [
    ("kernel exec", &[Phase::KernelExec]),
    ("CPU feature detection", &[Phase::CpuFeatures]),
    (
        "ld.so search & mapping",
        &[Phase::LdsoMapping, Phase::ObjectMapping, Phase::LdsoOther],
    ),
    (
        "relocation & symbol lookup",
        &[Phase::Relocation, Phase::RelocationAndInit],
    ),
    ("constructors", &[Phase::Initializers]),
    (PROGRAM, &[Phase::MainToExit, Phase::EntryToMain]),
];

/// The label of the part ld.so's work after `main` is (`dlopen`, `dlclose`, lazy binding):
/// the loader's, not the program's, taken out of the program's part.
pub const AFTER_MAIN: &str = "libraries loaded after main";
/// The row it is made of: the section of the report that lists it.
pub const AFTER_MAIN_ROWS: &str = "Loaded after main";
/// The part of the CPU of threads that the initializers of libraries loaded after `main`
/// started: the libraries' work, not the exit's.
pub const AFTER_MAIN_THREADS: &str = "threads started by their constructors";
/// The column it is made of.
pub const AFTER_MAIN_THREADS_ROWS: &str = "Loaded after main's threads' CPU (total)";
/// The label of the program's part.
pub const PROGRAM: &str = "the program (entry → exit)";

/// The label of the last part: what the target's exit costs after its last stop.
pub const EXIT_TEARDOWN: &str = "exit teardown";
/// The rows of the exit teardown part, as the report's lines name them.
pub const AFTER_LAST_STOP: &str = "CPU after the last stop";
pub const UNCOUNTED_EXIT: &str = "exit teardown after the counters stop";

fn median(s: &Option<crate::attribute::stats::Summary>) -> Option<f64> {
    s.as_ref().map(|s| s.median)
}

/// The fix kinds whose inputs this profile has, in [`FixKind`]'s order: the exec-side kinds
/// need the exec profile and the dependency closure; on the fork side an unused dependency
/// needs the closure and the footprint, lazy binding the closure and the lazy-binding A/B,
/// fork then exec the fork/vfork A/B. A kind whose inputs were not read was not looked for,
/// and the summary does not say it was checked.
pub fn looked_for(
    profile: Option<&ProfileSection>,
    fork: Option<&ForkSection>,
    closure: bool,
) -> Vec<FixKind> {
    let exec = profile.is_some() && closure;
    let fork_with = |has: fn(&ForkSection) -> bool| fork.is_some_and(has);
    let mut out = Vec::new();
    for (kind, present) in [
        (
            FixKind::UnusedDependency,
            exec || (closure && fork_with(|f| f.footprint.is_some())),
        ),
        (
            FixKind::BindNow,
            exec || (closure && fork_with(|f| f.lazy_binding.is_some())),
        ),
        (FixKind::LazyBinding, exec),
        (FixKind::PackRelativeRelocs, exec),
        (FixKind::SelfBinding, exec),
        (FixKind::Constructor, exec),
        (FixKind::Spawn, fork_with(|f| f.spawn_ab.is_some())),
    ] {
        if present {
            out.push(kind);
        }
    }
    out
}

/// The summary of one profile.
pub fn summary(profile: Option<&ProfileSection>, fork: Option<&ForkSection>) -> Summary {
    Summary {
        exec: profile.and_then(exec),
        fork: fork.and_then(fork_side),
    }
}

fn exec(p: &ProfileSection) -> Option<ExecSummary> {
    let mut parts = Vec::new();
    for (label, phases) in PARTS {
        let rows: Vec<&PhaseStat> = p
            .phases
            .iter()
            .filter(|r| phases.contains(&r.phase))
            .collect();
        if rows.is_empty() {
            continue;
        }
        let mut made_of: Vec<String> = Vec::new();
        for ph in phases {
            if rows.iter().any(|r| r.phase == *ph) {
                made_of.push(ph.label().to_string());
            }
        }
        parts.push(Part {
            label: label.to_string(),
            made_of,
            ns: rows.iter().filter_map(|r| median(&r.task_clock_ns)).sum(),
            share: 0.0,
        });
    }
    if parts.is_empty() {
        return None;
    }
    // The loader's CPU after `main` is inside main to exit: a part of its own, out of the
    // program's. Medians of different figures: never more than the program's part holds.
    if let (Some(ns), Some(i)) = (
        p.after_main.part_ns(),
        parts.iter().position(|x| x.label == PROGRAM),
    ) {
        let ns = ns.min(parts[i].ns);
        parts[i].ns -= ns;
        parts.insert(
            i + 1,
            Part {
                label: AFTER_MAIN.to_string(),
                made_of: vec![AFTER_MAIN_ROWS.to_string()],
                ns,
                share: 0.0,
            },
        );
    }
    let mut after = median(&p.children_task_clock_ns);
    // Threads a library's constructor started after `main` are counted with the target's
    // other threads (in "CPU after the last stop"); their CPU is that library's, so it is
    // taken out of there into a part of its own, next to the libraries'. Medians of
    // different figures: never more than the other threads' part holds.
    let threads: f64 = p
        .after_main
        .objects
        .iter()
        .filter_map(|o| median(&o.threads_cpu_total_ns))
        .sum();
    if let Some(a) = after.as_mut().filter(|_| threads > 0.0) {
        let ns = threads.min(*a);
        *a -= ns;
        let i = parts
            .iter()
            .position(|x| x.label == AFTER_MAIN)
            .map_or(parts.len(), |i| i + 1);
        parts.insert(
            i,
            Part {
                label: AFTER_MAIN_THREADS.to_string(),
                made_of: vec![AFTER_MAIN_THREADS_ROWS.to_string()],
                ns,
                share: 0.0,
            },
        );
    }
    let uncounted = median(&p.exit_uncounted_ns);
    if after.is_some() || uncounted.is_some() {
        let mut made_of = Vec::new();
        if after.is_some() {
            made_of.push(AFTER_LAST_STOP.to_string());
        }
        if uncounted.is_some() {
            made_of.push(UNCOUNTED_EXIT.to_string());
        }
        parts.push(Part {
            label: EXIT_TEARDOWN.to_string(),
            made_of,
            ns: after.unwrap_or(0.0) + uncounted.unwrap_or(0.0),
            share: 0.0,
        });
    }
    let cpu_ns: f64 = parts.iter().map(|x| x.ns).sum();
    for x in &mut parts {
        x.share = if cpu_ns > 0.0 { x.ns / cpu_ns } else { 0.0 };
    }
    // The point is the parts' medians added up, which is not the median of the runs' totals:
    // with noise that is skewed and falls on different phases in different runs, the two
    // differ by a few percent, and the totals' interval can miss the point altogether. The
    // interval keeps the totals' spread (their bootstrap distances below and above their
    // median) around the point the report prints.
    let ci95_ns = p
        .total_task_clock_ns
        .as_ref()
        .filter(|s| s.n >= 2)
        .map(|s| {
            (
                (cpu_ns - (s.median - s.ci95.0)).max(0.0),
                cpu_ns + (s.ci95.1 - s.median),
            )
        });
    Some(ExecSummary {
        cpu_ns,
        ci95_ns,
        runs: p.runs,
        wall_ns: Some(p.phases.iter().filter_map(|r| median(&r.wall_ns)).sum()),
        parts,
        top_objects: top_objects(p),
        uninstrumented_ns: uninstrumented_per_exec(p),
    })
}

/// The runs without ptrace per exec as the summary counts its own CPU per exec: their
/// task-clock, their threads' and children's, and the exit teardown no counter sees
/// ([`crate::attribute::profile::cpu_per_exec`]); the plain median of their task-clock for a
/// recording without those figures.
pub fn uninstrumented_per_exec(p: &ProfileSection) -> Option<f64> {
    crate::stats::median(&crate::attribute::profile::cpu_per_exec(&p.raw)).or(p
        .overhead
        .uninstrumented_ns
        .as_ref()
        .map(|s| s.median))
}

/// The objects whose relocation and initializers cost most, with their larger phase.
fn top_objects(p: &ProfileSection) -> Vec<TopObject> {
    let mut by_object: Vec<TopObject> = Vec::new();
    for r in &p.phases {
        let (Some(o), Some(ns)) = (&r.object, median(&r.task_clock_ns)) else {
            continue;
        };
        if !matches!(
            r.phase,
            Phase::Relocation | Phase::Initializers | Phase::RelocationAndInit
        ) {
            continue;
        }
        let i = match by_object.iter().position(|t| &t.object == o) {
            Some(i) => i,
            None => {
                let pred = p.prediction.as_ref().and_then(|pr| pr.per_object.get(o));
                by_object.push(TopObject {
                    object: o.clone(),
                    ns: 0.0,
                    dominant_phase: String::new(),
                    dominant_ns: f64::NEG_INFINITY,
                    relocations: pred.map(|x| x.1),
                    lookups: pred.map(|x| x.0),
                });
                by_object.len() - 1
            }
        };
        let t = &mut by_object[i];
        t.ns += ns;
        if ns > t.dominant_ns {
            t.dominant_ns = ns;
            t.dominant_phase = r.phase.label().to_string();
        }
    }
    // Objects loaded after `main` are among them when their load costs as much.
    for o in &p.after_main.objects {
        let phases = [
            ("search and mapping after main", &o.mapping_ns),
            ("relocation after main", &o.relocation_ns),
            ("initializers after main", &o.initializers_ns),
        ];
        let Some((label, ns)) = phases
            .iter()
            .filter_map(|(l, s)| s.as_ref().map(|s| (*l, s.median)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
        else {
            continue;
        };
        // The threads' CPU is in the whole only where the other tasks' CPU was counted (the
        // part [`AFTER_MAIN_THREADS`] is taken from): an object is never said to cost more
        // than the CPU per exec holds.
        let threads_ns = median(&o.threads_cpu_total_ns)
            .filter(|_| p.children_task_clock_ns.is_some())
            .unwrap_or(0.0);
        let s = if o.threads == 1 { "" } else { "s" };
        let (label, ns) = if threads_ns > ns {
            (
                format!("the {} thread{s} its constructors started", o.threads),
                threads_ns,
            )
        } else if label.starts_with("initializers") && o.threads > 0 {
            (format!("{label} ({} thread{s})", o.threads), ns)
        } else {
            (label.to_string(), ns)
        };
        by_object.push(TopObject {
            object: o.object.clone(),
            ns: o.loader_ns() + threads_ns,
            dominant_phase: label,
            dominant_ns: ns,
            relocations: o.model.map(|m| m.total),
            lookups: o.lookups(),
        });
    }
    by_object.sort_by(|a, b| b.ns.total_cmp(&a.ns));
    by_object.truncate(TOP_OBJECTS);
    by_object
}

fn fork_side(f: &ForkSection) -> Option<ForkSummary> {
    let parent = median(&f.per_fork.parent_cpu_ns)?;
    let child = median(&f.per_fork.child_cpu_ns)?;
    Some(ForkSummary {
        spawn: f.spawn.label().to_string(),
        parent_cpu_ns: parent,
        child_cpu_ns: child,
        cpu_ns: parent + child,
        round_trip_ns: median(&f.per_fork.round_trip_ns),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Detail;

    /// The parts add up to the whole, ld.so other and entry to main land where the labels
    /// say, and the exit rows are a part of their own.
    #[test]
    fn parts_add_up_to_the_cpu_per_exec() {
        let p = crate::attribute::profile::tests::left_out_section();
        let s = summary(Some(&p), None).exec.expect("exec side");
        let sum: f64 = s.parts.iter().map(|x| x.ns).sum();
        assert!((sum - s.cpu_ns).abs() < 1e-6, "{s:?}");
        let shares: f64 = s.parts.iter().map(|x| x.share).sum();
        assert!((shares - 1.0).abs() < 1e-9 || s.cpu_ns == 0.0, "{s:?}");
        let phases: f64 = p
            .phases
            .iter()
            .filter_map(|r| r.task_clock_ns.as_ref().map(|s| s.median))
            .sum();
        let exit = p.children_task_clock_ns.as_ref().map_or(0.0, |s| s.median)
            + p.exit_uncounted_ns.as_ref().map_or(0.0, |s| s.median);
        assert!((s.cpu_ns - (phases + exit)).abs() < 1e-6, "{s:?}");
    }

    /// The interval holds the point it is printed beside, with the runs' totals' spread, even
    /// when the totals' median lies above the parts' medians added up (skewed noise falling on
    /// different phases in different runs).
    #[test]
    fn the_interval_holds_the_point() {
        let mut p = crate::attribute::profile::tests::left_out_section();
        let phases: f64 = p
            .phases
            .iter()
            .filter_map(|r| r.task_clock_ns.as_ref().map(|s| s.median))
            .sum();
        // Totals 10% above the parts' sum, with an interval of -2%/+3% around their median.
        let m = phases * 1.10;
        p.total_task_clock_ns = Some(crate::attribute::stats::Summary {
            n: 10,
            median: m,
            min: m * 0.9,
            max: m * 1.2,
            ci95: (m * 0.98, m * 1.03),
        });
        let s = summary(Some(&p), None).exec.expect("exec side");
        let (lo, hi) = s.ci95_ns.expect("an interval from 10 runs");
        assert!(lo <= s.cpu_ns && s.cpu_ns <= hi, "{lo} {} {hi}", s.cpu_ns);
        assert!(((s.cpu_ns - lo) - m * 0.02).abs() < 1e-6);
        assert!(((hi - s.cpu_ns) - m * 0.03).abs() < 1e-6);
    }

    /// ld.so's CPU after `main` is a part of its own, taken out of the program's; the parts
    /// still add up to the whole, and an object loaded after `main` can be a top object.
    #[test]
    fn libraries_loaded_after_main_are_the_loader_s_part() {
        let mut runs = crate::attribute::after_main::tests::three_runs();
        // libB.so's initializers: 3 ms (k = 2 of 1, 2, 3 × 1.5 ms).
        for (k, r) in runs.iter_mut().enumerate() {
            let a = r.after_main.as_mut().unwrap();
            a.opens[0].objects[1].initializers.as_mut().unwrap().cpu_ns =
                1_500_000 * (k as u64 + 1);
            a.opens[0].cost.cpu_ns = 1_600_000 * (k as u64 + 1);
        }
        let detail = Detail::DebugSymbols {
            debug_file: "ld.debug".into(),
        };
        let p = crate::attribute::profile::aggregate(
            vec!["/usr/bin/prog".into()],
            0,
            detail,
            runs,
            None,
            Default::default(),
        );
        let s = summary(Some(&p), None).exec.expect("exec side");
        let labels: Vec<&str> = s.parts.iter().map(|x| x.label.as_str()).collect();
        assert_eq!(labels, ["kernel exec", PROGRAM, AFTER_MAIN]);
        let after = &s.parts[2];
        assert_eq!(
            after.ns,
            p.after_main.loader_cpu_ns.as_ref().unwrap().median
        );
        assert_eq!(after.ns, 3_200_000.0 + 14.0 + 200.0 + 22.0);
        // The program's part: main to exit (10 ms per run) less it.
        assert_eq!(s.parts[1].ns, 10_000_000.0 - after.ns);
        let sum: f64 = s.parts.iter().map(|x| x.ns).sum();
        assert!((sum - s.cpu_ns).abs() < 1e-6);
        let shares: f64 = s.parts.iter().map(|x| x.share).sum();
        assert!((shares - 1.0).abs() < 1e-9);
        let top = &s.top_objects[0];
        assert_eq!(top.object, "/t/libB.so");
        assert_eq!(top.dominant_phase, "initializers after main (2 threads)");
        assert_eq!(top.dominant_ns, 3_000_000.0);
    }

    /// Threads a constructor started after main: their CPU leaves the exit teardown (the
    /// target's other threads) for a part of its own, and names their library on top.
    #[test]
    fn threads_a_constructor_started_are_their_library_s() {
        let mut runs = crate::attribute::after_main::tests::three_runs();
        for (k, r) in runs.iter_mut().enumerate() {
            let k = k as u64 + 1;
            r.children = Some(crate::record::counters::Snapshot {
                task_clock_ns: Some(100_000_000 * k),
                ..Default::default()
            });
            let b = &mut r.after_main.as_mut().unwrap().opens[0].objects[1];
            for t in &mut b.threads {
                t.cpu_total_ns = Some(20_000_000 * k);
            }
        }
        let detail = Detail::DebugSymbols {
            debug_file: "ld.debug".into(),
        };
        let p = crate::attribute::profile::aggregate(
            vec!["/usr/bin/prog".into()],
            0,
            detail,
            runs,
            None,
            Default::default(),
        );
        let s = summary(Some(&p), None).exec.expect("exec side");
        let part = |l: &str| s.parts.iter().find(|x| x.label == l).map(|x| x.ns);
        let labels: Vec<&str> = s.parts.iter().map(|x| x.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "kernel exec",
                PROGRAM,
                AFTER_MAIN,
                AFTER_MAIN_THREADS,
                EXIT_TEARDOWN
            ]
        );
        // The median run's two threads, 2 × 40 ms, out of its 200 ms of other tasks' CPU.
        assert_eq!(part(AFTER_MAIN_THREADS), Some(80_000_000.0));
        assert_eq!(part(EXIT_TEARDOWN), Some(200_000_000.0 - 80_000_000.0));
        let sum: f64 = s.parts.iter().map(|x| x.ns).sum();
        assert!((sum - s.cpu_ns).abs() < 1e-6);
        let top = &s.top_objects[0];
        assert_eq!(top.object, "/t/libB.so");
        assert_eq!(top.dominant_phase, "the 2 threads its constructors started");
        assert_eq!(top.dominant_ns, 80_000_000.0);
    }

    /// No dlopen after main: no part (the program's part is main to exit whole).
    #[test]
    fn no_dlopen_no_part() {
        let r = crate::attribute::after_main::tests::record(Vec::new(), Vec::new(), Vec::new());
        let runs = vec![crate::attribute::after_main::tests::run(1_000_000, Some(r))];
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
        let s = summary(Some(&p), None).exec.expect("exec side");
        assert!(s.parts.iter().all(|x| x.label != AFTER_MAIN));
        let program = s.parts.iter().find(|x| x.label == PROGRAM).unwrap();
        assert_eq!(program.ns, 1_000_000.0);
    }
}
