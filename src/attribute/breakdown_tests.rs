//! Unit tests of the category breakdown: units, phases, the pooled estimator and its
//! interval, and the phase-aware rule with the phase × category table.

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
    assert_eq!(pt.ns_per_exec_or_fork.as_ref().unwrap().value, 10_000.0);
    // Two units with samples: too few for an interval.
    assert_eq!(b.units_with_samples, 2);
    assert_eq!(b.outside_units, 1);
    assert_eq!(pt.share_ci95, None);
    assert_eq!(pt.ns_per_exec_or_fork.as_ref().unwrap().ci95, None);
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

/// A sparse category: present in 6 of 20 runs (30%), 100 of 2000 samples (5% pooled).
/// The median over runs of per-run shares is 0; the pooled estimate is not, and its
/// interval (from the same bootstrap) holds it.
#[test]
fn a_sparse_category_gets_its_pooled_share_and_an_interval_around_it() {
    let relocation = || vec![frame("_dl_relocate_object", false, Some("ld.so"))];
    let faults = || {
        vec![
            frame("filemap_fault", true, None),
            frame("handle_mm_fault", true, None),
            frame("exc_page_fault", true, None),
        ]
    };
    let mut units = Vec::new();
    let mut stacks = Vec::new();
    for u in 0..20u64 {
        let start = u * 1_000_000;
        units.push(Unit {
            start_ns: start,
            end_ns: start + 999_999,
            per_unit: 1.0,
            phases: vec![],
            main_pid: 7,
        });
        // Runs 0, 3, 6, 9, 12, 15 hold the sparse category: 17 + 17 + 17 + 17 + 16 + 16.
        let sparse = if u % 3 == 0 && u < 18 {
            if u < 12 {
                17
            } else {
                16
            }
        } else {
            0
        };
        for i in 0..100u64 {
            let f = if i < sparse { faults() } else { relocation() };
            stacks.push(stack(7, start + i * 1000, f));
        }
    }
    let (mut b, _) = breakdown("exec", &stacks, &units, "threads and children", false);
    assert_eq!(b.samples, 2000);
    assert_eq!(b.units_with_samples, 20);
    let cpu = 1_000_000.0; // 1 ms per exec, measured without the sampler
    scale_to_measured(&mut b, cpu);
    let c = b
        .categories
        .iter()
        .find(|c| c.samples == 100)
        .expect("the sparse category");
    assert_eq!(c.samples, 100);
    assert_eq!(c.units_present, 6);
    assert_eq!(c.share, 0.05);
    // The old estimator: the median over runs of per-run shares.
    assert_eq!(c.share_per_unit.as_ref().unwrap().median, 0.0);
    let e = c.ns_per_exec_or_fork.as_ref().unwrap();
    assert_eq!(e.value, 50_000.0, "share × CPU: 5% of 1 ms");
    let (lo, hi) = e.ci95.expect("20 runs give an interval");
    assert!(
        lo <= e.value && e.value <= hi,
        "[{lo}, {hi}] holds {}",
        e.value
    );
    assert!(lo > 0.0 && hi > lo, "a real interval: [{lo}, {hi}]");
    let (slo, shi) = c.share_ci95.unwrap();
    assert!((slo * cpu - lo).abs() < 1e-6 && (shi * cpu - hi).abs() < 1e-6);
    // Every category's interval holds its point, share and time alike.
    for c in &b.categories {
        let (lo, hi) = c.share_ci95.unwrap();
        assert!(
            lo <= c.share && c.share <= hi,
            "{}: {lo} {} {hi}",
            c.label,
            c.share
        );
    }
    // Without a measured CPU: the pooled weight (100 µs a sample) over 20 execs.
    let (b, _) = breakdown("exec", &stacks, &units, "threads and children", false);
    let c = b.categories.iter().find(|c| c.samples == 100).unwrap();
    let e = c.ns_per_exec_or_fork.as_ref().unwrap();
    assert_eq!(e.value, 100.0 * 100_000.0 / 20.0);
    let (lo, hi) = e.ci95.unwrap();
    assert!(lo <= e.value && e.value <= hi && lo > 0.0);
}

/// Rule 5: in an initializers span, a user-mode sample that no frame decided (an application
/// leaf without frame pointers, an anonymous ld.so leaf) is initializers; in a relocation span,
/// relocation. The stack still decides when it can: a fault stays a fault, a kernel sample
/// stays kernel, a named `do_lookup_x` stays symbol lookup; outside such spans nothing changes.
/// The phase table puts each in its row, and the note counts what the phase decided.
#[test]
fn the_phase_decides_only_what_the_stack_left_undecided() {
    let libllvm = Some("/usr/lib/libLLVM.so.22");
    let ctor = || vec![frame("llvm::cl::Option::addArgument", false, libllvm)];
    let anon_ldso = || {
        vec![frame(
            "[unknown]",
            false,
            Some("/lib64/ld-linux-x86-64.so.2"),
        )]
    };
    let fault = || {
        vec![
            frame("do_anonymous_page", true, None),
            frame("handle_mm_fault", true, None),
            frame("exc_page_fault", true, None),
            frame("llvm::cl::Option::addArgument", false, libllvm),
        ]
    };
    let syscall = || {
        vec![
            frame("ksys_write", true, None),
            frame("write", false, Some("/usr/lib/x86_64-linux-gnu/libc.so.6")),
        ]
    };
    let lookup = || vec![frame("do_lookup_x", false, Some("ld-linux-x86-64.so.2"))];
    let span = |label: &str, a: u64, b: u64| Span {
        label: label.into(),
        start_ns: a,
        end_ns: b,
    };
    let units = vec![Unit {
        start_ns: 0,
        end_ns: 4000,
        per_unit: 1.0,
        phases: vec![
            span("relocation: libLLVM.so.22", 0, 999),
            span("initializers: libLLVM.so.22", 1000, 1999),
            span("main to exit", 2000, 4000),
        ],
        main_pid: 7,
    }];
    let mut spans = HashMap::new();
    for (l, ctx) in [
        ("relocation: libLLVM.so.22", Category::LdsoRelocation),
        ("initializers: libLLVM.so.22", Category::Initializers),
    ] {
        spans.insert(
            l.to_string(),
            SpanInfo {
                phase: l.split(':').next().unwrap().to_string(),
                object: Some("libLLVM.so.22".into()),
                context: Some(ctx),
            },
        );
    }
    let stacks = vec![
        stack(7, 100, anon_ldso()), // relocation span: relocation
        stack(7, 200, lookup()),    // stays symbol lookup
        stack(7, 1100, ctor()),     // initializers span: initializers
        stack(7, 1200, ctor()),
        stack(7, 1300, fault()),   // stays a fault
        stack(7, 1400, syscall()), // stays kernel: other
        stack(8, 1500, ctor()),    // another process: not in the span
        stack(7, 2100, ctor()),    // main to exit: application
    ];
    let (b, folded) = breakdown_in_phases("exec", &stacks, &units, "children", false, &spans);
    let n = |c: Category| {
        b.categories
            .iter()
            .find(|x| x.category == c)
            .map_or(0, |x| x.samples)
    };
    assert_eq!(n(Category::LdsoRelocation), 1);
    assert_eq!(n(Category::SymbolLookup), 1);
    assert_eq!(n(Category::Initializers), 2);
    assert_eq!(n(Category::AnonFault), 1);
    assert_eq!(n(Category::KernelOther), 1);
    assert_eq!(n(Category::Application), 2);
    assert_eq!(n(Category::LdsoOther), 0);
    // The flame graph shows the decided category too.
    let init: u64 = folded
        .iter()
        .filter(|f| f.category == Category::Initializers)
        .map(|f| f.count)
        .sum();
    assert_eq!(init, 2);
    assert!(b.notes.iter().any(|x| x.starts_with("3 user-mode samples")
        && x.contains("initializers 2")
        && x.contains("ld.so: relocation 1")));
    // The phase table: rows in time order, phase and object split, cells adding up.
    let rows: Vec<(&str, Option<&str>, u64)> = b
        .phase_table
        .iter()
        .map(|r| (r.phase.as_str(), r.object.as_deref(), r.samples))
        .collect();
    assert_eq!(
        rows,
        [
            ("relocation", Some("libLLVM.so.22"), 2),
            ("initializers", Some("libLLVM.so.22"), 4),
            ("main to exit", None, 1),
            ("children", None, 1),
        ]
    );
    let init_row = &b.phase_table[1];
    assert_eq!(init_row.categories[0].category, Category::Initializers);
    assert_eq!(init_row.categories[0].samples, 2);
    // Without span information, the same stacks keep the stack's answer.
    let (plain, _) = breakdown("exec", &stacks, &units, "children", false);
    let m = |c: Category| {
        plain
            .categories
            .iter()
            .find(|x| x.category == c)
            .map_or(0, |x| x.samples)
    };
    assert_eq!(m(Category::Initializers), 0);
    assert_eq!(m(Category::Application), 4);
    assert_eq!(m(Category::LdsoOther), 1);
}

/// ldcost's own ptrace stops are in the folded stacks, counted apart, and in no share, time or
/// phase-table cell; `exec: kernel`'s parts add up to it, before and after scaling.
#[test]
fn instrumentation_is_left_out_and_exec_parts_add_up() {
    let k = |names: &[&str]| -> Vec<Frame> {
        names.iter().rev().map(|n| frame(n, true, None)).collect()
    };
    let execve = [
        "__x64_sys_execve",
        "do_execveat_common.isra.0",
        "bprm_execve",
    ];
    let with = |rest: &[&str]| {
        let mut v = execve.to_vec();
        v.extend_from_slice(rest);
        k(&v)
    };
    let stop = with(&[
        "ptrace_notify",
        "ptrace_do_notify",
        "ptrace_stop",
        "schedule",
    ]);
    let trap = {
        let mut v = k(&["asm_exc_int3", "exc_int3", "do_trap"]);
        v.push(frame("dl_main", false, Some("ld-linux-x86-64.so.2")));
        v
    };
    let args = with(&["copy_strings.isra.0", "strnlen_user"]);
    let map = with(&["load_elf_binary", "elf_load", "vm_mmap_pgoff"]);
    let app = vec![frame("main", false, Some("/tmp/a"))];
    let units: Vec<Unit> = (0..5u64)
        .map(|i| Unit {
            start_ns: i * 1000,
            end_ns: i * 1000 + 999,
            per_unit: 1.0,
            phases: vec![Span {
                label: "kernel exec".into(),
                start_ns: i * 1000,
                end_ns: i * 1000 + 500,
            }],
            main_pid: 7,
        })
        .collect();
    let mut stacks = Vec::new();
    for i in 0..5u64 {
        let t = i * 1000;
        stacks.push(stack(7, t + 10, stop.clone()));
        stacks.push(stack(7, t + 20, trap.clone()));
        stacks.push(stack(7, t + 30, args.clone()));
        stacks.push(stack(7, t + 40, args.clone()));
        stacks.push(stack(7, t + 50, map.clone()));
        stacks.push(stack(7, t + 600, app.clone()));
    }
    let (mut b, folded) = breakdown("exec", &stacks, &units, "threads", false);
    assert_eq!(b.instrumentation.samples, 10);
    assert_eq!(b.samples, 20, "the target's samples only");
    assert_eq!(b.outside_units, 0);
    assert!((b.instrumentation.share_of_sampled - 10.0 / 30.0).abs() < 1e-12);
    assert!(b
        .categories
        .iter()
        .all(|c| c.category != Category::Instrumentation));
    let shares: f64 = b.categories.iter().map(|c| c.share).sum();
    assert!((shares - 1.0).abs() < 1e-12, "shares add up to 1: {shares}");
    let in_table: u64 = b.phase_table.iter().map(|r| r.samples).sum();
    assert_eq!(in_table, 20);
    let own: u64 = folded
        .iter()
        .filter(|f| f.category == Category::Instrumentation)
        .map(|f| f.count)
        .sum();
    assert_eq!(own, 10, "the folded stacks keep them");
    let exec = b
        .categories
        .iter()
        .find(|c| c.category == Category::ExecKernel)
        .unwrap()
        .clone();
    assert_eq!(exec.samples, 15);
    let parts = |b: &Breakdown| -> Vec<(ExecPart, u64)> {
        b.exec_kernel_parts
            .iter()
            .map(|p| (p.part, p.samples))
            .collect()
    };
    assert_eq!(
        parts(&b),
        [(ExecPart::ArgumentsAndStack, 10), (ExecPart::ElfMapping, 5)]
    );
    scale_to_measured(&mut b, 1_000_000.0);
    let exec_ns = b
        .categories
        .iter()
        .find(|c| c.category == Category::ExecKernel)
        .and_then(|c| c.ns_per_exec_or_fork.as_ref())
        .unwrap()
        .value;
    let sum: f64 = b
        .exec_kernel_parts
        .iter()
        .map(|p| p.ns_per_exec_or_fork)
        .sum();
    assert!((sum - exec_ns).abs() < 1e-6, "{sum} vs {exec_ns}");
    assert!((exec_ns - 750_000.0).abs() < 1e-6);
}

#[test]
fn samples_in_a_window_after_main_take_its_frames_and_keep_their_shares() {
    use crate::record::after_main::{
        AfterMain, AfterMainSeen, Cost, Dlopen, LoadedObject, Outcome,
    };
    let ldso = || {
        vec![frame(
            "_dl_relocate_object",
            false,
            Some("ld-linux-x86-64.so.2"),
        )]
    };
    let cost = |a: u64, b: u64| Cost {
        cpu_ns: b - a,
        wall_ns: b - a,
        stops: 2,
        span_ns: (a, b),
    };
    let object = |name: &str, reloc: (u64, u64), init: (u64, u64)| LoadedObject {
        name: format!("/usr/lib/{name}"),
        mapping: None,
        relocation: Some(cost(reloc.0, reloc.1)),
        initializers: Some(cost(init.0, init.1)),
        threads: Vec::new(),
    };
    let open = |name: &str, call: (u64, u64), obj: LoadedObject, parent| Dlopen {
        tid: 7,
        file: Some(name.into()),
        mode: 2,
        namespace: None,
        caller: None,
        parent,
        cost: cost(call.0, call.1),
        outcome: Outcome::Loaded(format!("/usr/lib/{name}")),
        objects: vec![obj],
    };
    // libouter's constructor dlopens libinner: inner's windows lie in outer's initializers.
    let am = AfterMain {
        seen: AfterMainSeen::PerObject,
        opens: vec![
            open(
                "libouter.so",
                (2000, 3000),
                object("libouter.so", (2100, 2200), (2300, 2900)),
                None,
            ),
            open(
                "libinner.so",
                (2400, 2800),
                object("libinner.so", (2500, 2600), (2650, 2700)),
                Some(0),
            ),
        ],
        closes: Vec::new(),
        lazy: Vec::new(),
        stops: 0,
    };
    let windows = after_main_windows(&am);
    assert_eq!(windows.len(), 6);
    let units = vec![Unit {
        start_ns: 0,
        end_ns: 4000,
        per_unit: 1.0,
        phases: vec![Span {
            label: "main to exit".into(),
            start_ns: 0,
            end_ns: 4000,
        }],
        main_pid: 7,
    }];
    let ctor = || vec![frame("warm", false, Some("/usr/lib/libouter.so"))];
    let mut other_thread = stack(7, 2150, ldso());
    other_thread.tid = 9;
    let stacks = vec![
        stack(7, 2150, ldso()), // outer's relocation
        stack(7, 2550, ldso()), // inner's relocation, inside outer's initializers
        stack(7, 2850, ldso()), // outer's initializers, after inner's dlopen returned
        stack(7, 2050, ldso()), // outer's dlopen, between its object's phases
        stack(7, 3500, ldso()), // after every dlopen
        other_thread,           // the same time in another thread: not the loader's
        stack(7, 2350, ctor()), // outer's constructor's own code: initializers
        stack(7, 3600, ctor()), // the same code called by the program: the program's
    ];
    let spans = HashMap::new();
    let (plain, _) = breakdown_in_phases("exec", &stacks, &units, "children", false, &spans);
    let (b, folded) =
        breakdown_in_windows("exec", &stacks, &units, "children", false, &spans, &windows);
    let n = |b: &Breakdown, c: Category| {
        b.categories
            .iter()
            .find(|x| x.category == c)
            .map_or(0, |x| x.samples)
    };
    // ld.so's frames decide their own category, in a window or not; the constructor's code
    // inside its object's initializers is initializers, as at start-up, and the same code
    // outside every window stays the program's.
    for c in Category::ALL {
        if ![Category::Initializers, Category::Application].contains(&c) {
            assert_eq!(n(&b, c), n(&plain, c), "{c:?}");
        }
    }
    assert_eq!(
        (
            n(&plain, Category::Application),
            n(&plain, Category::Initializers)
        ),
        (2, 0)
    );
    assert_eq!(
        (n(&b, Category::Application), n(&b, Category::Initializers)),
        (1, 1)
    );
    assert_eq!(b.samples, plain.samples);
    let mut got: Vec<(Category, Vec<String>, u64)> = folded
        .iter()
        .map(|f| (f.category, f.frames[..f.frames.len() - 1].to_vec(), f.count))
        .collect();
    got.sort();
    let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let ldso_cat = folded
        .iter()
        .find(|f| f.frames.last().is_some_and(|x| x == "_dl_relocate_object"))
        .unwrap()
        .category;
    let mut want = vec![
        (ldso_cat, v(&[]), 2),
        (
            ldso_cat,
            v(&["dlopen: libinner.so", "relocation: libinner.so"]),
            1,
        ),
        (ldso_cat, v(&["dlopen: libouter.so"]), 1),
        (
            ldso_cat,
            v(&["dlopen: libouter.so", "initializers: libouter.so"]),
            1,
        ),
        (
            ldso_cat,
            v(&["dlopen: libouter.so", "relocation: libouter.so"]),
            1,
        ),
        (Category::Application, v(&[]), 1),
        (
            Category::Initializers,
            v(&["dlopen: libouter.so", "initializers: libouter.so"]),
            1,
        ),
    ];
    want.sort();
    assert_eq!(got, want);
    assert!(crate::attribute::folded::is_object_frame(
        "dlopen: libinner.so"
    ));
}

/// A dependency a `dlopen` mapped is drawn under the call's object: `dlopen: libssl.so.3`
/// then `relocation: libcrypto.so.3`.
#[test]
fn a_dependency_s_windows_are_under_the_object_the_call_opened() {
    use crate::record::after_main::{
        AfterMain, AfterMainSeen, Cost, Dlopen, LoadedObject, Outcome,
    };
    let cost = |a: u64, b: u64| Cost {
        cpu_ns: b - a,
        wall_ns: b - a,
        stops: 2,
        span_ns: (a, b),
    };
    let object = |name: &str, at: u64| LoadedObject {
        name: format!("/usr/lib/{name}"),
        mapping: None,
        relocation: Some(cost(at, at + 10)),
        initializers: None,
        threads: Vec::new(),
    };
    let am = AfterMain {
        seen: AfterMainSeen::PerObject,
        opens: vec![Dlopen {
            tid: 7,
            file: Some("libssl.so.3".into()),
            mode: 2,
            namespace: None,
            caller: None,
            parent: None,
            cost: cost(0, 100),
            outcome: Outcome::Loaded("/usr/lib/libssl.so.3".into()),
            objects: vec![object("libssl.so.3", 10), object("libcrypto.so.3", 30)],
        }],
        closes: Vec::new(),
        lazy: Vec::new(),
        stops: 0,
    };
    let frames: Vec<Vec<String>> = after_main_windows(&am)
        .into_iter()
        .map(|w| w.frames)
        .collect();
    assert_eq!(
        frames,
        [
            vec!["dlopen: libssl.so.3".to_string()],
            vec![
                "dlopen: libssl.so.3".into(),
                "relocation: libssl.so.3".into()
            ],
            vec![
                "dlopen: libssl.so.3".into(),
                "relocation: libcrypto.so.3".into()
            ],
        ]
    );
}
