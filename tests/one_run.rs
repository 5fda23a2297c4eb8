//! `profile -n 1`: one measured run gives no interval (where the sample is too
//! small for an interval, the report says so). The report says so in its header and prints `n/a (1 run)` where
//! an interval would be, never a degenerate `[x, x]` (a bootstrap of one value); the JSON keeps
//! `n` = 1 beside that `ci95` and stays valid against docs/profile.schema.json.
//!
//! Needs ptrace and perf_event_open: where ldcost is refused (exit 8) the test prints `SKIP`.

mod common;

use std::path::Path;

use common::{ldcost, skip};
use serde_json::Value;

/// Every `[a, b]` of the text whose two numbers are equal.
fn degenerate(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find('[') {
        rest = &rest[i + 1..];
        let Some(j) = rest.find(']') else { break };
        let inner = &rest[..j];
        if let Some((a, b)) = inner.split_once(", ") {
            if let (Ok(x), Ok(y)) = (a.trim().parse::<f64>(), b.trim().parse::<f64>()) {
                if x == y {
                    out.push(format!("[{inner}]"));
                }
            }
        }
    }
    out
}

#[test]
fn degenerate_finds_equal_pairs_only() {
    assert_eq!(
        degenerate("a [0.098, 0.098] b [1.0, 2.0] c [x, x]"),
        ["[0.098, 0.098]"]
    );
}

#[test]
fn one_run_says_no_interval_and_prints_none() {
    let name = "one_run_says_no_interval_and_prints_none";
    let o = ldcost(&["profile", "-n", "1", "--no-ld-debug", "/bin/true"]);
    if o.code == 8 {
        skip(name, o.stderr.trim());
        return;
    }
    assert_eq!(o.code, 0, "{}", o.stderr);
    let text = &o.stdout;
    // The summary's first line says it (the longer header line is behind --detail).
    assert!(
        text.lines()
            .next()
            .is_some_and(|l| l.contains("no interval from 1 run")),
        "the summary says it: {text}"
    );
    let bad = degenerate(text);
    assert!(bad.is_empty(), "degenerate intervals {bad:?} in:\n{text}");
    // The phase table: each single phase row says why it has no interval.
    let phases = text
        .split(
            "Phases (start-up order; ld.so start and ld.so other run in pieces between the others)",
        )
        .nth(1)
        .expect("phase table")
        .split("\n\n")
        .next()
        .unwrap_or("");
    let kernel = phases
        .lines()
        .find(|l| l.trim_start().starts_with("kernel exec"))
        .expect("kernel exec row");
    assert!(kernel.contains("n/a (1 run)"), "{kernel}");

    // The JSON: the same run count, n = 1 beside each ci95, valid against the schema.
    let o = ldcost(&[
        "profile",
        "-n",
        "1",
        "--no-ld-debug",
        "--json",
        "-",
        "/bin/true",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let doc: Value = serde_json::from_str(&o.stdout).expect("JSON");
    let phases = doc["profile"]["phases"].as_array().expect("phases");
    assert!(!phases.is_empty());
    for p in phases {
        if let Some(n) = p["task_clock_ns"]["n"].as_u64() {
            assert_eq!(n, 1, "{p}");
        }
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/profile.schema.json");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("schema")).expect("schema");
    let v = jsonschema::draft202012::new(&schema).expect("schema");
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
}
