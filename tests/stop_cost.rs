//! The per-stop correction of `ldcost profile`'s per-object phases, under a busy second core.
//!
//! | figure | oracle | bound |
//! | --- | --- | --- |
//! | replayed stops per per-object run | the run's own stop count: every breakpoint stop (all but the exec and exit stops) is replayed once | exact |
//! | each run's cost per stop | the run's cheapest segment per stop (a segment is its stops plus work ≥ 0) | never above it |
//! | every per-object phase's corrected CPU | its raw CPU | 0 < corrected median ≤ the largest raw run, every phase has a figure |
//!
//! Printed, not asserted (a timed comparison of two sets of runs): the corrected start-up sum
//! against the uninstrumented runs (no ptrace at all), not below their 95% interval less the
//! first-touch faults ldcost's breakpoint writes took off the target (≤ 3 µs per page).
//!
//! The machine is loaded on purpose: a thread spins for the whole test (stopped on drop), as
//! CI's second core is busy with another build. The cross-run slope this replaced (one cost
//! per stop fitted over runs taken at different moments) took zero-work phases (ld.so's own
//! initializer, ~0.2 µs) below zero in every run seen here; the in-run replay bounded by the
//! run's cheapest segment cannot. Whether the corrected sum comes *within* the uninstrumented
//! interval is a timed ratio (what the replays do not see: the cache refill after each stop):
//! `cargo bench --bench profile_checks` prints it as PASS/FAIL.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::skip;
use ldcost::attribute::profile::{per_stop_ns, ProfileSection};
use ldcost::record::{Detail, Instrumentation};

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");

/// A thread that keeps one core busy until dropped.
struct Busy(Arc<AtomicBool>, Option<std::thread::JoinHandle<()>>);

impl Busy {
    fn start() -> Busy {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let h = std::thread::spawn(move || {
            let mut x = 0u64;
            while !s.load(Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        });
        Busy(stop, Some(h))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        if let Some(h) = self.1.take() {
            let _ = h.join();
        }
    }
}

/// `ldcost profile -n RUNS --json - PROGRAM`, or None after a SKIP when ldcost is refused
/// ptrace or perf (exit 8).
fn profile(name: &str, program: &str, runs: &str) -> Option<ProfileSection> {
    let out = std::process::Command::new(BIN)
        .args([
            "profile",
            "-n",
            runs,
            "--quiet-target",
            "--json",
            "-",
            program,
        ])
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_BIND_NOW")
        .output()
        .expect("run ldcost");
    if out.status.code() == Some(8) {
        skip(name, "ldcost is refused ptrace or perf here (exit 8)");
        return None;
    }
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: ldcost::report::Document =
        serde_json::from_slice(&out.stdout).expect("a JSON document");
    Some(doc.profile.expect("a profile section").into())
}

/// The most a text page's first-touch fault costs the target here (see `check`).
const FAULT_NS: f64 = 3000.0;

/// The median of `v` (0 for none: no page counted, no allowance).
fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// One test at a time: each loads the machine itself.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn check(name: &str, program: &str) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _busy = Busy::start();
    let Some(p) = profile(name, program, "10") else {
        return;
    };
    let debug = matches!(p.detail, Detail::DebugSymbols { .. });
    let measured: Vec<_> = p
        .raw
        .iter()
        .filter(|r| r.instrumentation == Instrumentation::PerObject)
        .collect();
    assert_eq!(measured.len(), 10);
    for r in &measured {
        // Every breakpoint stop replayed (with ld.so's debug symbols every breakpoint is
        // one-shot; a persistent one, stepped over, is not replayed).
        // The loader's stops after main are persistent breakpoints', not replayed.
        let after_main = r.after_main.as_ref().map_or(0, |a| a.stops);
        if debug {
            assert_eq!(
                r.stop_costs_ns.len() as u64,
                r.stops - 2 - after_main,
                "{program}"
            );
        } else {
            assert!(
                r.stop_costs_ns.len() as u64 <= r.stops - 2 - after_main,
                "{program}"
            );
        }
        assert!(!r.stop_costs_ns.is_empty(), "{program}: no replayed stop");
        let c = per_stop_ns(r, None).expect("a cost per stop");
        assert!(c > 0.0, "{program}: {c}");
        for s in r.segments.iter().filter(|s| s.stops > 0) {
            let raw = s.counters.task_clock_ns.expect("task-clock") as f64;
            assert!(
                c * s.stops as f64 <= raw,
                "{program}: {c} ns per stop × {} stops > {raw} ns of {:?} {:?}",
                s.stops,
                s.phase,
                s.object
            );
        }
    }
    for ph in &p.phases {
        // The corrected median is over the runs the correction left some CPU (a run corrected
        // to zero is left out of the phase), the raw one over every run: so the bound is the
        // largest raw run, each run's own bound being checked per segment above.
        let raw = ph.task_clock_raw_ns.as_ref().expect("a raw figure").max;
        let cpu = ph.task_clock_ns.as_ref().unwrap_or_else(|| {
            panic!(
                "{program}: {:?} {:?} has no corrected CPU figure (raw {raw} ns)",
                ph.phase, ph.object
            )
        });
        assert!(
            cpu.median > 0.0 && cpu.median <= raw,
            "{program}: {:?} {:?} corrected {} raw {raw}",
            ph.phase,
            ph.object,
            cpu.median
        );
    }
    let sum = p.total_task_clock_ns.as_ref().expect("a corrected sum");
    let none = p
        .overhead
        .uninstrumented_ns
        .as_ref()
        .expect("reference runs");
    let lo = none.ci95.0;
    // The faults the target did not take: ldcost's breakpoint writes brought those text pages
    // in (raw[].breakpoint_pages, tests/profile_oracles.rs). Each would have been a file fault
    // with fault-around, 1.5-1.8 µs on a 2-vCPU VM (a C loop touching one byte per 64 kB
    // of a cached libLLVM mapping, 20 × 1789 touches, `perf stat -e page-faults` one per
    // touch): the per-object runs do that much less work; 3 µs per page allows for load.
    let pages = median(
        &measured
            .iter()
            .filter_map(|r| r.breakpoint_pages)
            .map(|n| n as f64)
            .collect::<Vec<_>>(),
    );
    let saved = pages * FAULT_NS;
    eprintln!(
        "{program}: corrected sum {:.0} µs, uninstrumented {:.0} µs [{:.0}, …], {:.2} µs per stop (slope across runs: {:?}); breakpoint pages {pages} (≤ {:.1} µs of faults saved)",
        sum.median / 1e3,
        none.median / 1e3,
        lo / 1e3,
        p.overhead.ns_per_stop.unwrap_or(f64::NAN) / 1e3,
        p.overhead.ns_per_stop_slope.map(|s| (s / 1e2).round() / 10.0),
        saved / 1e3
    );
    // Two sets of runs at different moments, one corrected by replays whose price load moves:
    // a timed comparison, printed here and judged by `cargo bench --bench profile_checks`
    // (`stop correction`), which read +6% to +17% above the low end.
    if sum.median < lo - saved {
        eprintln!(
            "TIMED CHECK DID NOT HOLD HERE (benches/profile_checks.rs judges it): {program}: corrected sum {} ns under the uninstrumented interval's low end {lo} less the {saved} ns of faults the breakpoint pages saved",
            sum.median
        );
    }
}

#[test]
fn no_phase_of_true_is_corrected_to_zero_under_load() {
    check("no_phase_of_true_is_corrected_to_zero_under_load", "true");
}

#[test]
fn no_phase_of_ls_is_corrected_to_zero_under_load() {
    check("no_phase_of_ls_is_corrected_to_zero_under_load", "ls");
}
