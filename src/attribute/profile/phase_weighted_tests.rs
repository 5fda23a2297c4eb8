//! The phase-weighted estimator on synthetic runs: a phase's sampling rate does not move the
//! shares (its measured CPU does), intervals hold their points, borrowed compositions.

use super::*;

const EXEC: &str = "kernel exec";
const RELOC: &str = "relocation: a.so";

fn kinds() -> BTreeMap<String, String> {
    [
        (EXEC, "kernel exec"),
        (RELOC, "relocation"),
        ("relocation: b.so", "relocation"),
        (OUTSIDE, OUTSIDE),
        (CHILDREN, CHILDREN),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect()
}

/// Measured runs: kernel exec 100 µs, relocation of a.so 400 µs, outside 50 µs (a little
/// spread so the bootstrap has something to draw).
fn measured(runs: usize) -> MeasuredStrata {
    MeasuredStrata {
        kinds: kinds(),
        runs: (0..runs)
            .map(|i| {
                let d = i as f64 * 1000.0;
                [
                    (EXEC, 100e3 + d),
                    (RELOC, 400e3 - d),
                    (OUTSIDE, 50e3),
                    (CHILDREN, 0.0),
                ]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
            })
            .collect(),
        outside_from_reference: true,
        exit_uncounted_ns: None,
        exit_measured: false,
    }
}

/// One sampled run: `exec` exec-kernel samples in kernel exec, 30 relocation + 10 file
/// faults in a.so's relocation, 5 exit-teardown samples outside every phase.
fn unit(exec: u64) -> UnitCounts {
    [
        ((EXEC, Category::ExecKernel), exec),
        ((RELOC, Category::LdsoRelocation), 30),
        ((RELOC, Category::FileFault), 10),
        ((OUTSIDE, Category::ExitTeardown), 5),
    ]
    .into_iter()
    .map(|((s, c), n)| ((s.to_string(), c), n))
    .collect()
}

fn pooled_share(units: &[UnitCounts], c: Category) -> f64 {
    let all: u64 = units.iter().flat_map(|u| u.values()).sum();
    let n: u64 = units
        .iter()
        .flat_map(|u| u.iter())
        .filter(|((_, k), _)| *k == c)
        .map(|(_, n)| n)
        .sum();
    n as f64 / all as f64
}

#[test]
fn an_over_sampled_phase_leaves_the_weighted_share_and_moves_the_pooled_one() {
    let m = measured(7);
    let plain: Vec<UnitCounts> = (0..8).map(|_| unit(10)).collect();
    // The sampler slows execve: twice its samples, the same unsampled CPU.
    let doubled: Vec<UnitCounts> = (0..8).map(|_| unit(20)).collect();
    let a = weighted(&plain, &m);
    let b = weighted(&doubled, &m);
    let ek = |w: &Weighted| w.shares[&Category::ExecKernel].0;
    // The medians of the measured runs: 103 µs, 397 µs, 50 µs.
    let expect = 103e3 / 550e3;
    assert!((ek(&a) - expect).abs() < 1e-12, "{} vs {expect}", ek(&a));
    assert!((ek(&b) - expect).abs() < 1e-12, "{} vs {expect}", ek(&b));
    // Relocation of a.so: 3/4 of its 397 µs.
    let rel = a.shares[&Category::LdsoRelocation].0;
    assert!((rel - 0.75 * 397e3 / 550e3).abs() < 1e-12, "{rel}");
    // Pooled, the over-sampled phase gains: 10/55 -> 20/65.
    let (pa, pb) = (
        pooled_share(&plain, Category::ExecKernel),
        pooled_share(&doubled, Category::ExecKernel),
    );
    assert!(pb - pa > 0.1, "pooled {pa} -> {pb}");
    let total: f64 = a.shares.values().map(|s| s.0).sum();
    assert!((total - 1.0).abs() < 1e-12, "shares add up to 1: {total}");
    let s = a.strata.iter().find(|s| s.span == EXEC).unwrap();
    assert_eq!((s.samples, s.composition), (80, Composition::Own));
}

#[test]
fn intervals_hold_their_points_and_a_sparse_category_keeps_its_share() {
    let m = measured(7);
    // Lazy binding in 3 of 10 runs, a few samples each: present in 30% of the runs.
    let units: Vec<UnitCounts> = (0..10)
        .map(|i| {
            let mut u = unit(10 + i % 3);
            if i % 10 < 3 {
                u.insert((RELOC.to_string(), Category::SymbolLookup), 4);
            }
            u
        })
        .collect();
    let w = weighted(&units, &m);
    for (c, (p, ci)) in &w.shares {
        let (lo, hi) = ci.unwrap_or_else(|| panic!("{c:?} has no interval"));
        assert!(lo <= *p && *p <= hi, "{c:?}: {p} outside [{lo}, {hi}]");
    }
    let (p, ci) = w.shares[&Category::SymbolLookup];
    assert!(p > 0.0 && ci.unwrap().1 > 0.0, "{p} {ci:?}");
    // Four runs with samples: no interval.
    let few = weighted(&units[..4], &m);
    assert!(few.shares.values().all(|s| s.1.is_none()));
}

#[test]
fn a_phase_with_cpu_and_no_sample_borrows_its_kind_else_is_left_out() {
    let mut m = measured(5);
    for r in &mut m.runs {
        r.insert("relocation: b.so".into(), 100e3);
    }
    let units: Vec<UnitCounts> = (0..6).map(|_| unit(10)).collect();
    let w = weighted(&units, &m);
    let b = w
        .strata
        .iter()
        .find(|s| s.span == "relocation: b.so")
        .unwrap();
    assert_eq!((b.samples, b.composition), (0, Composition::Phase));
    // a.so's relocation composition (3/4 relocation) over 398 + 100 of 650 µs.
    let rel = w.shares[&Category::LdsoRelocation].0;
    assert!(
        (rel - 0.75 * (398e3 + 100e3) / 650e3).abs() < 1e-12,
        "{rel}"
    );
    // No relocation sample at all: b.so is left out (no other phase's composition).
    let only_exec: Vec<UnitCounts> = (0..6)
        .map(|_| {
            [((EXEC.to_string(), Category::ExecKernel), 10)]
                .into_iter()
                .collect()
        })
        .collect();
    let w = weighted(&only_exec, &m);
    let b = w
        .strata
        .iter()
        .find(|s| s.span == "relocation: b.so")
        .unwrap();
    assert_eq!(b.composition, Composition::LeftOut);
    assert!((w.shares[&Category::ExecKernel].0 - 1.0).abs() < 1e-12);
}

#[test]
fn sampled_labels_outside_the_measured_spans_fall_outside() {
    let k = kinds();
    assert_eq!(stratum_of(EXEC, &k), EXEC);
    assert_eq!(stratum_of("after the exit stop", &k), OUTSIDE);
    assert_eq!(stratum_of("other", &k), OUTSIDE);
    assert_eq!(stratum_of(CHILDREN, &k), CHILDREN);
}

/// A pooled breakdown of the runs of [`unit`] (as `breakdown_in_phases` would give it).
fn pooled_breakdown(runs: u64) -> Breakdown {
    use crate::attribute::categories::Category as C;
    use crate::attribute::exec_parts::{ExecPart, ExecPartShare};
    use crate::attribute::phase_table::{PhaseCell, PhaseRow};
    let row = |span: &str, phase: &str, cells: &[(C, u64)]| PhaseRow {
        span: span.into(),
        phase: phase.into(),
        object: None,
        samples: cells.iter().map(|c| c.1).sum::<u64>(),
        share: 0.0,
        ns_per_exec_or_fork: 0.0,
        categories: cells
            .iter()
            .map(|&(category, samples)| PhaseCell {
                category,
                samples,
                share: 0.0,
                ns_per_exec_or_fork: 0.0,
            })
            .collect(),
    };
    let cat = |c: C, n: u64| crate::attribute::breakdown::CategoryShare {
        category: c,
        label: c.name().into(),
        samples: n,
        share: n as f64 / (55 * runs) as f64,
        share_ci95: None,
        units_present: 0,
        share_per_unit: None,
        ns_per_exec_or_fork: None,
        phases: BTreeMap::new(),
    };
    Breakdown {
        section: "exec".into(),
        samples: 55 * runs,
        units: runs as usize,
        units_with_samples: 0,
        outside_units: 0,
        instrumentation: Default::default(),
        covered: runs as f64,
        categories: vec![
            cat(C::LdsoRelocation, 30 * runs),
            cat(C::ExecKernel, 10 * runs),
            cat(C::FileFault, 10 * runs),
            cat(C::ExitTeardown, 5 * runs),
        ],
        exec_kernel_parts: vec![ExecPartShare {
            part: ExecPart::ElfMapping,
            label: "ELF".into(),
            samples: 10 * runs,
            share: 10.0 / 55.0,
            ns_per_exec_or_fork: 0.0,
        }],
        phase_table: vec![
            row(EXEC, "kernel exec", &[(C::ExecKernel, 10 * runs)]),
            row(
                RELOC,
                "relocation",
                &[(C::LdsoRelocation, 30 * runs), (C::FileFault, 10 * runs)],
            ),
            row(
                "after the exit stop",
                "after the exit stop",
                &[(C::ExitTeardown, 5 * runs)],
            ),
        ],
        cpu_ns_per_unit: None,
        notes: vec![],
    }
}

#[test]
fn applied_rows_add_up_to_the_categories_with_a_borrowed_row() {
    let mut m = measured(5);
    for r in &mut m.runs {
        r.insert("relocation: b.so".into(), 100e3);
        // No sample in this phase at all: left out, the rest scaled to the CPU.
        r.insert("entry to main".into(), 20e3);
    }
    let units: Vec<UnitCounts> = (0..6).map(|_| unit(10)).collect();
    let w = weighted(&units, &m);
    let mut b = pooled_breakdown(6);
    let cpu = 700e3;
    apply(&mut b, &w, cpu, 5);
    let b_row = b
        .phase_table
        .iter()
        .find(|r| r.span == "relocation: b.so")
        .expect("a row for the span with no sample");
    assert_eq!(
        (b_row.samples, b_row.phase.as_str(), b_row.object.as_deref()),
        (0, "relocation", Some("b.so"))
    );
    let mut by_cat: BTreeMap<Category, f64> = BTreeMap::new();
    for r in &b.phase_table {
        for c in &r.categories {
            *by_cat.entry(c.category).or_insert(0.0) += c.ns_per_exec_or_fork;
        }
    }
    for c in &b.categories {
        let ns = c.ns_per_exec_or_fork.as_ref().unwrap().value;
        assert!((ns - c.share * cpu).abs() < 1e-6, "{:?}", c.category);
        assert!(
            (by_cat[&c.category] - ns).abs() < 1e-6,
            "{:?}: rows {} vs {ns}",
            c.category,
            by_cat[&c.category]
        );
    }
    let rows: f64 = b.phase_table.iter().map(|r| r.ns_per_exec_or_fork).sum();
    assert!((rows - cpu).abs() < 1e-6, "{rows} vs {cpu}");
    // The exec-kernel parts add up to their category.
    let ek = b
        .categories
        .iter()
        .find(|c| c.category == Category::ExecKernel)
        .unwrap();
    let parts: f64 = b.exec_kernel_parts.iter().map(|p| p.share).sum();
    assert!((parts - ek.share).abs() < 1e-12);
    assert!(b.notes.iter().any(|n| n.contains("phase-weighted")));
    assert!(b
        .notes
        .iter()
        .any(|n| n.contains("left out") && n.contains("entry to main")));
    assert!(b.phase_table.iter().all(|r| r.span != "entry to main"));
}

/// A run as `ldcost profile --json` writes it: one kernel-exec segment of `exec_ns` task-clock
/// (no stops to correct), the whole run's `total_ns`, its threads' and children's `children_ns`
/// (the target's own exit as far as its counter saw it among them), and its exit by the
/// scheduler with the part of it the counters missed.
fn run(
    instrumentation: &str,
    exec_ns: u64,
    total_ns: u64,
    children_ns: u64,
    exit: Option<(u64, u64)>,
) -> Run {
    let snap = |t: u64| serde_json::json!({"task_clock_ns": t, "page_faults": 0});
    let segments = if instrumentation == "per-object" {
        serde_json::json!([{"phase": "kernel-exec", "object": null, "wall_ns": exec_ns,
            "counters": snap(exec_ns), "stops": 0}])
    } else {
        serde_json::json!([])
    };
    serde_json::from_value(serde_json::json!({
        "instrumentation": instrumentation, "segments": segments, "total": snap(total_ns),
        "wall_ns": total_ns, "ending": {"how": "exited", "value": 0}, "stops": 0,
        "children": snap(children_ns),
        "exit_ns": exit.map(|e| e.0), "exit_uncounted_ns": exit.map(|e| e.1),
    }))
    .expect("a run document")
}

#[test]
fn the_exit_by_the_scheduler_is_the_outside_stratum() {
    // Untraced runs counted 300 µs; the per-object run's phases 280 µs; after its exit stop the
    // scheduler saw 66 µs, 60 of them after its counter stopped (the other 6 are in its
    // inherited counters' excess, with no thread or child of its own).
    let raw = [
        run("none", 0, 300_000, 6_000, None),
        run(
            "per-object",
            280_000,
            280_000,
            6_000,
            Some((66_000, 60_000)),
        ),
    ];
    let m = measured_strata(&raw);
    assert_eq!(m.runs[0][OUTSIDE], 66_000.0, "the exit, not 300 - 280");
    assert_eq!(
        m.runs[0][CHILDREN], 0.0,
        "its own counted exit is not a child's"
    );
    assert_eq!(m.exit_uncounted_ns, Some(60_000.0));
    assert!(m.exit_measured);
    // The CPU per exec the shares are scaled to: the untraced runs and the uncounted exit.
    assert_eq!(
        super::super::cpu_per_exec(&raw),
        vec![300_000.0 + 6_000.0 + 60_000.0]
    );
    // Without the measurement (older recordings): the untraced total less the spans.
    let raw = [
        run("none", 0, 300_000, 0, None),
        run("per-object", 280_000, 280_000, 0, None),
    ];
    let m = measured_strata(&raw);
    assert_eq!(m.runs[0][OUTSIDE], 20_000.0);
    assert_eq!(m.exit_uncounted_ns, None);
    assert!(!m.exit_measured);
}
