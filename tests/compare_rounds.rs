//! How many rounds `ldcost compare` runs: `-n N` exactly, by default a time budget
//! (`--min-time`, 3 s) of at least 10 rounds in whole pairs, recorded in the JSON's `rounds`.
//!
//! | case | oracle |
//! | --- | --- |
//! | `compare -n 3` of a program that counts its own executions | each side's count of its executions = 1 (the exec-chain discovery) + 1 warm-up + 3 runs × 3 rounds; the JSON's `rounds.count` = 3, `stopped_by` "runs", each side's per-object runs = 3 |
//! | `compare` at default settings, same program | each side's own count = 2 + 3 × `rounds.count`; `rounds.count` ≥ 10 and even; `budget_s` = 3; the wall time of the measured rounds at least the budget unless the maximum of 1000 ended them; the text report's note names the count and the budget |
//!
//! Nothing here asserts a timing ratio. The runs need ptrace and perf_event_open: where ldcost
//! is refused (exit 8) the tests print `SKIP` (a failure under LDCOST_REQUIRE_ALL); cc too.

mod common;

use std::path::{Path, PathBuf};

use common::{cc, ldcost, skip, tools, write};
use ldcost::compare::Comparison;

/// One compare at a time: two at once on a 2-CPU machine would each time the other.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A program that appends one byte to `$COUNT_FILE` each time it runs.
const COUNTER: &str = r#"#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    const char *p = getenv("COUNT_FILE");
    if (p) {
        int fd = open(p, O_WRONLY | O_APPEND | O_CREAT, 0600);
        if (fd >= 0) { (void)write(fd, "x", 1); close(fd); }
    }
    return 0;
}
"#;

fn counter(dir: &Path) -> PathBuf {
    write(dir, "count.c", COUNTER);
    cc(dir, &["-O2", "-o", "count", "count.c"]);
    dir.join("count")
}

/// Runs `compare count count` with each side counting into its own file; returns the
/// comparison (None: skipped) and each side's count of its executions.
fn run(name: &str, extra: &[&str]) -> Option<(Comparison, [usize; 2], String)> {
    if !tools(name, &["cc"]) {
        return None;
    }
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let prog = counter(dir.path());
    let counts = [dir.path().join("base.count"), dir.path().join("head.count")];
    let json = dir.path().join("c.json");
    let env = |p: &Path| format!("COUNT_FILE={}", p.display());
    let (benv, henv) = (env(&counts[0]), env(&counts[1]));
    let mut args = vec![
        "compare",
        prog.to_str().unwrap(),
        prog.to_str().unwrap(),
        "--base-env",
        &benv,
        "--head-env",
        &henv,
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend(extra);
    let o = ldcost(&args);
    if o.code == 8 {
        skip(name, "ldcost is refused ptrace or perf here (exit 8)");
        return None;
    }
    assert_eq!(o.code, 0, "{}", o.stderr);
    let c: Comparison =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).expect("comparison JSON");
    let n = counts.map(|p| std::fs::read(p).map_or(0, |b| b.len()));
    Some((c, n, o.stdout))
}

/// Executions of one side: the exec-chain discovery, one warm-up, three runs a round (per-object,
/// boundaries-only, uninstrumented).
fn executions(rounds: usize) -> usize {
    1 + 1 + 3 * rounds
}

#[test]
fn n_runs_exactly_that_many_rounds() {
    let Some((c, counts, _)) = run("n_runs_exactly_that_many_rounds", &["-n", "3"]) else {
        return;
    };
    let r = c.rounds.expect("rounds recorded");
    assert_eq!(
        (r.count, r.stopped_by.as_str(), r.budget_s),
        (3, "runs", None)
    );
    assert_eq!(
        counts,
        [executions(3); 2],
        "each side's own count of its runs"
    );
    assert_eq!((c.base.runs, c.head.runs), (3, 3));
}

#[test]
fn the_default_spends_the_budget_in_whole_pairs() {
    let Some((c, counts, text)) = run("the_default_spends_the_budget_in_whole_pairs", &[]) else {
        return;
    };
    let r = c.rounds.expect("rounds recorded");
    assert!(r.count >= 10 && r.count % 2 == 0, "{r:?}");
    assert!(r.count <= 1000, "{r:?}");
    assert_eq!(r.budget_s, Some(3.0));
    assert_eq!(
        counts,
        [executions(r.count); 2],
        "each side's own count of its runs, {r:?}"
    );
    assert_eq!((c.base.runs, c.head.runs), (r.count, r.count));
    match r.stopped_by.as_str() {
        "budget" | "minimum" => assert!(r.elapsed_s >= 3.0, "{r:?}"),
        "maximum" => assert_eq!(r.count, 1000),
        other => panic!("stopped by {other}: {r:?}"),
    }
    assert!(
        text.contains(&format!("{} rounds in ", r.count)) && text.contains("3.0 s"),
        "the report names the rounds and the budget:\n{text}"
    );
}
