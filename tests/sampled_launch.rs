//! What ldcost does between and inside its sampled runs does not grow with their number
//! (the sampled runs' extra teardown and faults).
//!
//! A trivial static program's CPU-feature share read 58-62% in ldcost's sampled runs against
//! 81-83% in `perf record -a -g` of a shell loop of it. The CPU-feature time per run agreed;
//! the rest of the program (faults, exit teardown, its short functions) took twice as many
//! samples per run. The cause: just before each run's target ran, ldcost read /proc/kallsyms
//! (0.1 s, at the end of the previous run) and re-read the target's symbol tables (at its exec
//! stop), so the target started on caches full of ldcost's work. A shell loop with 16 MiB of
//! memory written between the runs moved perf's share from 81% to 69% the same way
//! (docs/taxonomy.md, "What the sampled runs' launcher does to the target"). Both are read
//! once now.
//!
//! A time cannot be asserted on a loaded machine; what is asserted is the work itself, as an
//! independent tracer sees it: `strace -e trace=openat` of ldcost's main thread (not its
//! children: the target stays ldcost's tracee) opens /proc/kallsyms exactly once whatever the
//! number of sampled runs, and opens the target's file as often with 6 sampled runs as with 2.
//! Reading kallsyms per run (the old code) fails the first; reading the symbols at every exec
//! stop fails the second.
//!
//! Needs root (system-wide sampling), perf, strace, cc and a static libc; otherwise `SKIP`.

mod common;
#[path = "common/cpu_oracle.rs"]
mod cpu_oracle;
#[path = "common/perf_record.rs"]
#[allow(dead_code)]
mod perf_record;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{running_as_root, skip, tools};

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");

fn workdir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("sampled_launch")
}

/// The paths ldcost's main thread opened in one sampled profile of `prog`, and the number of
/// sampled runs that its JSON reports.
fn opened(prog: &Path, runs: u32) -> (Vec<String>, u64) {
    let log = workdir().join(format!("openat-{runs}.log"));
    let out = Command::new("strace")
        .args(["-qq", "-e", "trace=openat", "-e", "signal=none", "-o"])
        .arg(&log)
        .arg(BIN)
        .args(["profile", "-n", "1", "--warmup", "0", "--no-reference"])
        .args([
            "--no-ld-debug",
            "--quiet-target",
            "--sample",
            "--sample-runs",
        ])
        .arg(runs.to_string())
        .args(["--json", "-", "--"])
        .arg(prog)
        .output()
        .expect("strace runs");
    assert!(
        out.status.success(),
        "strace ldcost profile: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let units = doc["profile"]["breakdown"]["units"].as_u64().unwrap_or(0);
    let text = std::fs::read_to_string(&log).expect("strace's log");
    let paths = text
        .lines()
        .filter(|l| l.starts_with("openat(") && !l.contains("= -1"))
        .filter_map(|l| l.split('"').nth(1).map(str::to_string))
        .collect();
    (paths, units)
}

#[test]
fn sampled_runs_read_kallsyms_and_the_targets_symbols_once() {
    let name = "sampled_runs_read_kallsyms_and_the_targets_symbols_once";
    if !running_as_root() {
        return skip(name, "sampling the process tree system-wide needs root");
    }
    if !tools(name, &["cc", "perf", "strace"]) {
        return;
    }
    let prog = match cpu_oracle::build(&workdir()) {
        Ok((stat, _)) => stat,
        Err(e) => return skip(name, &e),
    };
    let prog_s = prog.display().to_string();
    let count = |paths: &[String], p: &str| paths.iter().filter(|x| *x == p).count();
    let (few, few_units) = opened(&prog, 2);
    let (many, many_units) = opened(&prog, 6);
    assert_eq!(
        (few_units, many_units),
        (2, 6),
        "every sampled run is in the breakdown"
    );
    assert_eq!(
        (
            count(&few, "/proc/kallsyms"),
            count(&many, "/proc/kallsyms")
        ),
        (1, 1),
        "/proc/kallsyms is read once per ldcost process, not once per sampled run"
    );
    let (a, b) = (count(&few, &prog_s), count(&many, &prog_s));
    assert!(a > 0, "ldcost never opened {prog_s}: strace saw {few:?}");
    assert_eq!(
        a, b,
        "{prog_s} opened {a} times with 2 sampled runs, {b} with 6: its symbols are read per run"
    );
}
