//! Unit tests of the residue per stop after `main`: what the kinds' runs resolve, what they
//! do not, and the windows less it, never below zero.

use super::*;
use crate::attribute::after_main::tests::{object, open, record, run};

/// A run of kind `k` with `stops` stops and `total` ns of CPU; per-object runs carry one
/// `dlopen` (one object, each window 2 stops) and replays of `replay` ns.
fn kind_run(k: Instrumentation, stops: u64, total: u64, replay: u64, windows: u64) -> Run {
    let mut a = record(
        vec![open(
            "libx.so",
            1,
            4 * windows,
            0,
            vec![object("/t/libx.so", windows, windows, windows, 0)],
        )],
        vec![],
        vec![],
    );
    a.stops = stops;
    let mut r = run(total, (k == Instrumentation::PerObject).then_some(a));
    r.instrumentation = k;
    r.stops = stops;
    r.total.task_clock_ns = Some(total);
    r.stop_costs_ns = vec![replay; 5];
    for s in &mut r.segments {
        if s.phase == Phase::MainToExit {
            s.stops = stops;
        }
    }
    r
}

/// Ten rounds of a per-object run of 1,000 stops at 19 ms and a boundaries-only run of 10
/// stops at 13 ms, each ± `jitter` / 2 in its own pattern, and a run without ptrace;
/// replays of 2 µs: each stop cost about (19 − 13) ms / 990 ≈ 6.06 µs, 4.06 beyond the replay.
pub(crate) fn kinds(jitter: u64) -> Vec<Run> {
    let mut v = Vec::new();
    for i in 0..10u64 {
        let a = (i % 5) * jitter / 4;
        let b = ((i * 3 + 1) % 5) * jitter / 4;
        v.push(kind_run(
            Instrumentation::PerObject,
            1000,
            19_000_000 + a - jitter / 2,
            2_000,
            50_000,
        ));
        v.push(kind_run(
            Instrumentation::Coarse,
            10,
            13_000_000 + b - jitter / 2,
            0,
            0,
        ));
        v.push(kind_run(Instrumentation::None, 0, 12_900_000, 0, 0));
    }
    v
}

#[test]
fn the_residue_is_the_cost_per_stop_across_kinds_beyond_the_replay() {
    let r = estimate(&kinds(100_000)).expect("resolved");
    let want = 6_000_000.0 / 990.0 - 2_000.0;
    // The rounds' differences are 6 ms ± 75 µs: their median within 76 ns a stop of it.
    assert!((r.ns_per_stop - want).abs() < 76.0, "{r:?} against {want}");
    assert_eq!(r.replay_ns, 2_000.0);
    assert!(
        r.low_ns > 0.0 && r.low_ns <= r.ns_per_stop && r.high_ns >= r.ns_per_stop,
        "{r:?}"
    );
    assert!(r.high_ns > r.low_ns, "{r:?}");
}

#[test]
fn a_difference_within_the_noise_is_no_residue() {
    // Jitter of ±6 ms: the rounds' residues run from −5 to +13 µs, and their median's
    // interval reaches below zero.
    assert_eq!(estimate(&kinds(12_000_000)), None);
}

#[test]
fn without_boundaries_only_runs_or_enough_stops_there_is_none() {
    let v: Vec<Run> = kinds(100_000)
        .into_iter()
        .filter(|r| r.instrumentation != Instrumentation::Coarse)
        .collect();
    assert_eq!(estimate(&v), None);
    let few: Vec<Run> = kinds(100_000)
        .into_iter()
        .map(|mut r| {
            if r.instrumentation == Instrumentation::PerObject {
                r.stops = 50;
            }
            r
        })
        .collect();
    assert_eq!(estimate(&few), None);
}

/// A residue of 3 µs a stop beyond replays of 2 µs.
const THREE_US: Residue = Residue {
    ns_per_stop: 3_000.0,
    low_ns: 1.0,
    high_ns: 5_000.0,
    replay_ns: 2_000.0,
};

/// A run's main-to-exit task-clock.
fn m2e(r: &Run) -> u64 {
    r.segments
        .iter()
        .find(|s| s.phase == Phase::MainToExit)
        .and_then(|s| s.counters.task_clock_ns)
        .unwrap()
}

#[test]
fn each_window_and_main_to_exit_lose_the_residue_per_stop_inside_them() {
    let raw = kinds(100_000);
    let out = apply(&raw, &THREE_US);
    let (before, after) = (&raw[0], &out[0]);
    let o = &after.after_main.as_ref().unwrap().opens[0];
    // Each window has 2 stops: 50 µs less 6 µs; the call 200 µs less 6 µs.
    assert_eq!(o.objects[0].mapping.unwrap().cpu_ns, 44_000);
    assert_eq!(o.objects[0].initializers.unwrap().cpu_ns, 44_000);
    assert_eq!(o.cost.cpu_ns, 194_000);
    assert_eq!(m2e(before) - m2e(after), 3_000_000);
    // The recording's totals and the other kinds are untouched.
    assert_eq!(after.total, before.total);
    assert_eq!(out[1], raw[1]);
}

#[test]
fn no_window_goes_below_zero() {
    // Windows of 4 µs with 2 stops: at most 2 µs a stop comes out of this run.
    let raw = vec![kind_run(
        Instrumentation::PerObject,
        1000,
        9_000_000,
        2_000,
        4_000,
    )];
    let out = apply(&raw, &THREE_US);
    let o = &out[0].after_main.as_ref().unwrap().opens[0];
    assert_eq!(o.objects[0].relocation.unwrap().cpu_ns, 0);
    assert_eq!(o.cost.cpu_ns, 16_000 - 4_000);
}

/// Main-to-exit is this run's cheapest segment per stop (4 µs for each of its 1,000 stops,
/// replays of 2 µs): 3 µs a stop would leave 1 µs, below the replay, and the copy's stops
/// would then be corrected at 1 µs before `main` too. It keeps 2 µs a stop, and the copy's
/// correction per stop is the recording's, with replays or with only the fallback.
#[test]
fn the_copy_corrects_its_stops_as_the_recording_does() {
    let mut raw = kind_run(Instrumentation::PerObject, 1000, 4_000_000, 2_000, 50_000);
    raw.segments[0].stops = 20;
    raw.segments[0].counters.task_clock_ns = Some(200_000);
    let out = apply(std::slice::from_ref(&raw), &THREE_US);
    assert_eq!(m2e(&out[0]), 2_000_000);
    for fallback in [None, Some(2_500.0), Some(9_000.0)] {
        assert_eq!(
            per_stop_ns(&out[0], fallback),
            per_stop_ns(&raw, fallback),
            "{fallback:?}"
        );
    }
    // Without replays: the bound (4 µs) is kept whatever the fallback.
    raw.stop_costs_ns.clear();
    let out = apply(std::slice::from_ref(&raw), &THREE_US);
    assert_eq!(m2e(&out[0]), 4_000_000);
    for fallback in [Some(2_500.0), Some(9_000.0)] {
        assert_eq!(per_stop_ns(&out[0], fallback), per_stop_ns(&raw, fallback));
    }
}
