//! Unit tests of the section over synthetic runs: load order across runs, medians, calls
//! matched by what they asked for, failed calls, dlclose, and never a 0 for what was not seen.

use super::*;
use crate::record::after_main::{Dlclose, Dlopen, LazyBinds, LoadedObject, Outcome, StartedThread};

/// A cost of `cpu` ns starting `at` ns after the run's `main` (which starts at 1_000_000).
pub(crate) fn cost(cpu: u64, at: u64) -> Cost {
    Cost {
        cpu_ns: cpu,
        wall_ns: cpu + 10,
        stops: 2,
        span_ns: (1_000_000 + at, 1_000_000 + at + cpu),
    }
}

/// A per-object run whose main-to-exit segment starts at 1_000_000 ns and costs `main_ns`,
/// with `after` as its loader record.
pub(crate) fn run(main_ns: u64, after: Option<AfterMain>) -> Run {
    let snap = |n: u64| serde_json::json!({"task_clock_ns": n, "page_faults": 0});
    let mut r: Run = serde_json::from_value(serde_json::json!({
        "instrumentation": "per-object",
        "segments": [
            {"phase": "kernel-exec", "object": null, "wall_ns": 100, "counters": snap(100),
             "stops": 0, "span_ns": [0, 100]},
            {"phase": "main-to-exit", "object": null, "wall_ns": main_ns,
             "counters": snap(main_ns), "stops": 0, "span_ns": [1_000_000, 1_000_000 + main_ns]},
        ],
        "total": snap(100 + main_ns), "wall_ns": 100 + main_ns,
        "ending": {"how": "exited", "value": 0}, "stops": 0, "children": null,
    }))
    .expect("a run document");
    r.after_main = after;
    r
}

pub(crate) fn object(name: &str, map: u64, rel: u64, init: u64, at: u64) -> LoadedObject {
    LoadedObject {
        name: name.into(),
        mapping: Some(cost(map, at)),
        relocation: Some(cost(rel, at + map)),
        initializers: Some(cost(init, at + map + rel)),
        threads: Vec::new(),
    }
}

pub(crate) fn open(file: &str, mode: i32, cpu: u64, at: u64, objects: Vec<LoadedObject>) -> Dlopen {
    Dlopen {
        tid: 1,
        file: Some(file.into()),
        mode,
        namespace: None,
        caller: Some("/usr/bin/prog".into()),
        parent: None,
        cost: cost(cpu, at),
        outcome: if objects.is_empty() {
            Outcome::Failed
        } else {
            Outcome::Loaded(objects[0].name.clone())
        },
        objects,
    }
}

pub(crate) fn record(opens: Vec<Dlopen>, closes: Vec<Dlclose>, lazy: Vec<LazyBinds>) -> AfterMain {
    AfterMain {
        seen: AfterMainSeen::PerObject,
        opens,
        closes,
        lazy,
        stops: 0,
    }
}

/// Three runs: libA.so (needing libB.so, whose constructor starts 2 threads), a failed
/// dlopen of libmissing.so, libC.so in the last run only, a dlclose of libA.so.
pub(crate) fn three_runs() -> Vec<Run> {
    let mk = |k: u64, with_c: bool| {
        let mut b = object("/t/libB.so", 10 * k, 20 * k, 300 * k, 5_000 + 10 * k);
        b.threads = vec![
            StartedThread {
                tid: 7,
                cpu_at_return_ns: Some(1_000 * k),
                cpu_total_ns: Some(40_000 * k),
            },
            StartedThread {
                tid: 8,
                cpu_at_return_ns: Some(2_000 * k),
                cpu_total_ns: Some(60_000 * k),
            },
        ];
        let mut opens = vec![
            open(
                "libA.so",
                0x101,
                1_000 * k,
                5_000,
                vec![object("/t/libA.so", 10 * k, 30 * k, 5 * k, 5_000), b],
            ),
            open("libmissing.so", 0x2, 7 * k, 9_000, Vec::new()),
        ];
        if with_c {
            opens.push(open(
                "libC.so",
                0x2,
                50,
                20_000,
                vec![object("/t/libC.so", 1, 2, 3, 20_000)],
            ));
        }
        let closes = vec![Dlclose {
            tid: 1,
            object: "/t/libA.so".into(),
            cost: cost(100 * k, 30_000),
            finalizers: vec![("/t/libB.so".into(), cost(9 * k, 30_001))],
        }];
        let lazy = vec![LazyBinds {
            object: "/t/libA.so".into(),
            count: 3 + k,
            cpu_ns: Some(11 * k),
        }];
        record(opens, closes, lazy)
    };
    vec![
        run(10_000_000, Some(mk(1, false))),
        run(10_000_000, Some(mk(2, false))),
        run(10_000_000, Some(mk(3, true))),
    ]
}

fn debug() -> Detail {
    Detail::DebugSymbols {
        debug_file: "ld.debug".into(),
    }
}

#[test]
fn objects_in_load_order_with_medians_over_the_runs_that_loaded_them() {
    let s = section(&three_runs(), &debug());
    assert_eq!(s.seen, Seen::PerObject);
    assert_eq!(s.runs, 3);
    let names: Vec<&str> = s.objects.iter().map(|o| o.object.as_str()).collect();
    assert_eq!(names, ["/t/libA.so", "/t/libB.so", "/t/libC.so"]);
    let b = &s.objects[1];
    assert_eq!(
        (b.runs, b.file.as_deref(), b.mode),
        (3, Some("libA.so"), 0x101)
    );
    assert_eq!(mode_text(b.mode), "RTLD_LAZY|RTLD_GLOBAL");
    assert_eq!(b.caller.as_deref(), Some("/usr/bin/prog"));
    // Medians of k = 1, 2, 3: k = 2.
    assert_eq!(b.mapping_ns.as_ref().unwrap().median, 20.0);
    assert_eq!(b.relocation_ns.as_ref().unwrap().median, 40.0);
    assert_eq!(b.initializers_ns.as_ref().unwrap().median, 600.0);
    assert_eq!(b.loader_ns(), 660.0);
    // Its load began 5_000 + 10k ns after main.
    assert_eq!(b.at_ns.as_ref().unwrap().median, 5_020.0);
    assert_eq!(b.threads, 2);
    assert_eq!(b.threads_cpu_at_return_ns.as_ref().unwrap().median, 6_000.0);
    assert_eq!(b.threads_cpu_total_ns.as_ref().unwrap().median, 200_000.0);
    // Lazy binds: libA's slots, 0 in libB's (the breakpoint was armed and saw none).
    assert_eq!(s.objects[0].lazy_binds.as_ref().unwrap().median, 5.0);
    assert_eq!(b.lazy_binds.as_ref().unwrap().median, 0.0);
    // Loaded in one run of three: its figures are that run's, n = 1.
    let c = &s.objects[2];
    assert_eq!(c.runs, 1);
    assert_eq!(c.initializers_ns.as_ref().unwrap().n, 1);
    assert!(c.model.is_none(), "the static model is read apart");
}

#[test]
fn calls_failed_ones_and_dlclose_with_finalizers() {
    let s = section(&three_runs(), &debug());
    let files: Vec<Option<&str>> = s.opens.iter().map(|o| o.file.as_deref()).collect();
    assert_eq!(
        files,
        [Some("libA.so"), Some("libmissing.so"), Some("libC.so")]
    );
    let a = &s.opens[0];
    assert_eq!((a.runs, a.failed, a.objects), (3, 0, 2));
    assert_eq!(a.cpu_ns.as_ref().unwrap().median, 2_000.0);
    assert_eq!(a.wall_ns.as_ref().unwrap().median, 2_010.0);
    let m = &s.opens[1];
    assert_eq!((m.runs, m.failed, m.objects), (3, 3, 0));
    assert_eq!(s.closes.len(), 1);
    let c = &s.closes[0];
    assert_eq!((c.object.as_str(), c.runs), ("/t/libA.so", 3));
    assert_eq!(c.finalizers.len(), 1);
    assert_eq!(c.finalizers[0].0, "/t/libB.so");
    assert_eq!(c.finalizers[0].1.as_ref().unwrap().median, 18.0);
    // The loader's CPU per run: opens + closes + lazy; k = 2 has no libC.
    let k2 = 2_000 + 14 + 200 + 22;
    assert_eq!(s.loader_cpu_ns.as_ref().unwrap().median, k2 as f64);
    assert_eq!(s.part_ns(), Some(k2 as f64));
}

#[test]
fn nothing_seen_is_not_available_and_no_dlopen_is_none() {
    let s = section(&three_runs(), &Detail::Static);
    assert!(matches!(s.seen, Seen::NotAvailable(ref w) if w.contains("static")));
    assert_eq!(s.part_ns(), None);
    // Runs recorded before the loader after main was: not available, never 0.
    let s = section(&[run(1_000, None), run(1_000, None)], &debug());
    assert!(
        matches!(s.seen, Seen::NotAvailable(ref w) if w.contains("recording")),
        "{s:?}"
    );
    assert_eq!((s.part_ns(), s.loader_cpu_ns.is_none()), (None, true));
    // A run whose tracer said why it saw nothing.
    let mut r = record(Vec::new(), Vec::new(), Vec::new());
    r.seen = AfterMainSeen::NotAvailable("not glibc".into());
    let s = section(&[run(1_000, Some(r))], &debug());
    assert_eq!(s.seen, Seen::NotAvailable("not glibc".into()));
    // Seen, and no dlopen: measured none, and no part.
    let s = section(
        &[run(1_000, Some(record(Vec::new(), Vec::new(), Vec::new())))],
        &debug(),
    );
    assert_eq!(s.seen, Seen::PerObject);
    assert!(!s.any_dlopen() && s.objects.is_empty());
    assert_eq!(s.part_ns(), None);
    assert_eq!(s.loader_cpu_ns.as_ref().unwrap().median, 0.0);
}

#[test]
fn the_coarsest_run_says_what_was_seen() {
    let mut runs = three_runs();
    runs[1].after_main.as_mut().unwrap().seen =
        AfterMainSeen::Rendezvous("no debug symbols".into());
    let s = section(&runs, &debug());
    assert_eq!(s.seen, Seen::Rendezvous("no debug symbols".into()));
}

#[test]
fn modes_as_the_caller_wrote_them() {
    assert_eq!(mode_text(0x2), "RTLD_NOW|RTLD_LOCAL");
    assert_eq!(
        mode_text(0x1 | 0x100 | 0x1000),
        "RTLD_LAZY|RTLD_GLOBAL|RTLD_NODELETE"
    );
    assert_eq!(
        mode_text(0x4 | 0x2 | 0x40),
        "RTLD_NOW|RTLD_NOLOAD|RTLD_LOCAL|0x40"
    );
}
