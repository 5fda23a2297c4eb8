//! Unit tests of the profile analysis: aggregation of recorded runs, the stop-cost slope, the
//! runs left out.

use super::aggregate::slope;
use super::*;

#[test]
fn slope_of_a_line() {
    let pts = [(0.0, 10.0), (10.0, 30.0), (20.0, 50.0)];
    assert!((slope(&pts).unwrap() - 2.0).abs() < 1e-9);
    assert!(slope(&[(1.0, 2.0), (1.0, 3.0)]).is_none());
}

/// A run of `instrumentation` with total task-clock `total_ns` that ended as `ending` (the
/// recording's encoding), one kernel-exec segment when per-object.
fn ended(instrumentation: &str, total_ns: u64, ending: serde_json::Value) -> Run {
    let snap = serde_json::json!({"task_clock_ns": total_ns, "page_faults": 0});
    let segments = if instrumentation == "per-object" {
        serde_json::json!([{"phase": "kernel-exec", "object": null, "wall_ns": total_ns,
            "counters": snap, "stops": 0}])
    } else {
        serde_json::json!([])
    };
    serde_json::from_value(serde_json::json!({
        "instrumentation": instrumentation, "segments": segments, "total": snap,
        "wall_ns": total_ns, "ending": ending, "stops": 0, "children": null,
    }))
    .expect("a run document")
}

/// Eight runs of every kind, some killed or timed out: the fixture of the left-out rules
/// (also rendered by the report's unit test).
pub(crate) fn left_out_runs() -> Vec<Run> {
    let exited = serde_json::json!({"how": "exited", "value": 0});
    let sigkill = serde_json::json!({"how": "killed", "value": 9});
    let segv = serde_json::json!({"how": "killed", "value": 11});
    let timed_out = serde_json::json!({"how": "timed-out"});
    vec![
        ended("per-object", 400, exited.clone()),
        ended("per-object", 9_000, sigkill.clone()),
        // The program's own crash is how it ends: it counts.
        ended("per-object", 500, segv),
        // A measured run past --timeout keeps its completed phases.
        ended("per-object", 600, timed_out.clone()),
        ended("coarse", 7_000, timed_out.clone()),
        ended("none", 300, exited),
        ended("none", 8_000, timed_out.clone()),
        ended("none", 9_000, sigkill),
    ]
}

/// [`left_out_runs`] aggregated as a 4-run profile of /bin/true.
pub(crate) fn left_out_section() -> ProfileSection {
    aggregate(
        vec!["/bin/true".into()],
        0,
        Detail::Static,
        left_out_runs(),
        None,
        BTreeMap::new(),
    )
}

#[test]
fn runs_that_did_not_end_are_left_out_counted_and_never_a_figure() {
    let raw = left_out_runs();
    let kept: Vec<bool> = raw.iter().map(|r| lost(r).is_none()).collect();
    assert_eq!(kept, [true, false, true, true, false, true, false, false]);
    let l = left_out(&raw);
    let described: Vec<String> = l.iter().map(LeftOut::describe).collect();
    assert_eq!(
        described,
        [
            "1 of 4 measured runs killed by SIGKILL: left out",
            "1 of 1 boundaries-only run timed out: left out",
            "1 of 3 uninstrumented runs timed out: left out",
            "1 of 3 uninstrumented runs killed by SIGKILL: left out",
        ]
    );
    // Only the uninstrumented run that ended is a CPU per exec.
    assert_eq!(cpu_per_exec(&raw), vec![300.0]);
    let s = left_out_section();
    assert_eq!(s.runs, 3);
    assert_eq!(
        s.overhead.uninstrumented_ns.as_ref().map(|u| u.median),
        Some(300.0)
    );
    assert_eq!(s.overhead.coarse_ns, None);
    assert_eq!(
        s.endings.len(),
        4,
        "every measured run's ending is reported"
    );
}
