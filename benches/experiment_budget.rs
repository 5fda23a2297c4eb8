//! The time budgets for `ldcost experiment`: `--quick` under 60 s, the full run under
//! 10 minutes, on this 2-core VM.
//!
//! Run with `cargo bench --bench experiment_budget` (release profile; needs `cc` and the static
//! libc, as `experiment` does; root for the fork probe and the differential flame graphs, which
//! are otherwise skipped rows the report names, so the run is shorter). It runs the binary as a
//! user does, `ldcost experiment --quick --no-progress --out TMP/quick` and then `ldcost
//! experiment --no-progress --out TMP/full`, their standard output discarded, and prints per
//! run its wall time (from just before `spawn` to `wait4`'s return), CPU time and peak RSS
//! (`wait4`'s rusage: ldcost and the descendants it waited for, the built programs included),
//! the exit code, each experiment's own seconds (`results.json`), the load average before and
//! after, and PASS/FAIL against the goal; then how many of the seeds' directions the run's
//! report found to hold, and which did not (timed: for the record, not a goal here). A run that does not exit 0 is a FAIL whatever its
//! time. `LDCOST_BENCH_ONLY=quick` (or `full`) runs one of the two. Wall time on a shared
//! machine is moved by load: the load average is printed beside the figures and never asserted
//! anywhere (docs/benchmarks.md). `LDCOST_BENCH_KEEP=DIR` writes the reports into DIR instead
//! of a temporary directory (to refresh the README's plots from the full run).

// Shared with the benches that take medians of many runs; this one runs each case once.
#[allow(dead_code)]
#[path = "support/child.rs"]
mod child;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

struct Case {
    name: &'static str,
    quick: bool,
    goal: Duration,
}

struct Row {
    name: &'static str,
    goal: Duration,
    wall: Duration,
    cpu: Duration,
    maxrss_kb: u64,
    code: Option<i32>,
    load_before: String,
    load_after: String,
    /// Each experiment's own seconds from results.json, or why they are not there.
    parts: String,
    /// The seeds' directions: how many hold, and those that do not (printed, timed).
    directions: (String, Vec<String>),
}

impl Row {
    fn pass(&self) -> bool {
        self.code == Some(0) && self.wall < self.goal
    }
}

/// The run's results.json, or why it cannot be read.
fn results(dir: &Path) -> Result<serde_json::Value, String> {
    let text = std::fs::read_to_string(dir.join("results.json"))
        .map_err(|e| format!("no results.json: {e}"))?;
    serde_json::from_str(&text).map_err(|e| format!("results.json is not JSON: {e}"))
}

/// `N of M hold` over the seeds' directions the report checked, and the claims that did not.
fn directions(dir: &Path) -> (String, Vec<String>) {
    let v = match results(dir) {
        Ok(v) => v,
        Err(e) => return (e, Vec::new()),
    };
    let (mut held, mut all, mut not) = (0, 0, Vec::new());
    for e in v["experiments"].as_array().cloned().unwrap_or_default() {
        for c in e["section"]["checks"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            all += 1;
            if c["holds"].as_bool() == Some(true) {
                held += 1;
            } else {
                not.push(format!(
                    "{}: {} ({})",
                    e["name"].as_str().unwrap_or("?"),
                    c["claim"].as_str().unwrap_or("?"),
                    c["detail"].as_str().unwrap_or("")
                ));
            }
        }
    }
    (format!("{held} of {all} hold"), not)
}

/// `forktime 2.4, forktest 20.7, …` from the run's results.json.
fn parts(dir: &Path) -> String {
    let v = match results(dir) {
        Ok(v) => v,
        Err(e) => return e,
    };
    let list = v["experiments"].as_array().cloned().unwrap_or_default();
    list.iter()
        .map(|e| {
            let name = e["name"].as_str().unwrap_or("?");
            match e["elapsed_s"].as_f64() {
                Some(s) => format!("{name} {s:.1}"),
                None => format!("{name} ?"),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn run_case(ldcost: &str, out_root: &Path, c: &Case) -> Result<Row, String> {
    let out = out_root.join(c.name);
    let mut cmd = Command::new(ldcost);
    cmd.arg("experiment");
    if c.quick {
        cmd.arg("--quick");
    }
    cmd.args(["--no-progress", "--out"])
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let load_before = child::loadavg();
    // Its progress lines go to a file, read back only when it fails.
    let log = out_root.join(format!("{}.stderr", c.name));
    let file = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    cmd.stderr(Stdio::from(file));
    let r = child::run(&mut cmd).map_err(|e| format!("cannot run {ldcost}: {e}"))?;
    let load_after = child::loadavg();
    let code = if libc::WIFEXITED(r.status) {
        Some(libc::WEXITSTATUS(r.status))
    } else {
        None
    };
    if code != Some(0) {
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = said.lines().rev().take(5).collect();
        eprintln!(
            "experiment_budget: {} exited {:?}; last lines of its stderr:",
            c.name, code
        );
        for l in tail.iter().rev() {
            eprintln!("  {l}");
        }
    }
    Ok(Row {
        name: c.name,
        goal: c.goal,
        wall: r.wall,
        cpu: r.cpu,
        maxrss_kb: r.maxrss_kb,
        code,
        load_before,
        load_after,
        parts: parts(&out),
        directions: directions(&out),
    })
}

fn main() {
    let ldcost = env!("CARGO_BIN_EXE_ldcost");
    let only = std::env::var("LDCOST_BENCH_ONLY").unwrap_or_default();
    let all = [
        Case {
            name: "quick",
            quick: true,
            goal: Duration::from_secs(60),
        },
        Case {
            name: "full",
            quick: false,
            goal: Duration::from_secs(600),
        },
    ];
    let cases: Vec<&Case> = all
        .iter()
        .filter(|c| only.is_empty() || only.split(',').any(|o| o.trim() == c.name))
        .collect();
    if cases.is_empty() {
        eprintln!("experiment_budget: LDCOST_BENCH_ONLY={only:?} names no case (quick, full)");
        std::process::exit(2);
    }
    let tmp;
    let out_root: PathBuf = match std::env::var_os("LDCOST_BENCH_KEEP") {
        Some(d) => PathBuf::from(d),
        None => match tempfile::tempdir() {
            Ok(d) => {
                tmp = d;
                tmp.path().to_path_buf()
            }
            Err(e) => {
                eprintln!("experiment_budget: cannot create a temporary directory: {e}");
                std::process::exit(1);
            }
        },
    };
    if let Err(e) = std::fs::create_dir_all(&out_root) {
        eprintln!("experiment_budget: {}: {e}", out_root.display());
        std::process::exit(1);
    }
    println!(
        "experiment_budget: `{ldcost}`, reports under {}",
        out_root.display()
    );
    println!(
        "cpus: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let mut rows = Vec::new();
    for c in cases {
        let args = if c.quick { " --quick" } else { "" };
        println!(
            "running: ldcost experiment{args} --no-progress --out {}/{}",
            out_root.display(),
            c.name
        );
        match run_case(ldcost, &out_root, c) {
            Ok(r) => rows.push(r),
            Err(e) => {
                eprintln!("experiment_budget: {e}");
                std::process::exit(1);
            }
        }
    }
    println!();
    println!("| run | wall | goal | CPU | peak RSS | exit | load before | load after | result |");
    println!("|---|---:|---:|---:|---:|---:|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {:.1} s | < {} s | {:.1} s | {:.1} MB | {} | {} | {} | {} |",
            r.name,
            r.wall.as_secs_f64(),
            r.goal.as_secs(),
            r.cpu.as_secs_f64(),
            r.maxrss_kb as f64 / 1024.0,
            r.code.map_or("signal".to_string(), |c| c.to_string()),
            r.load_before,
            r.load_after,
            if r.pass() { "PASS" } else { "FAIL" }
        );
    }
    println!();
    for r in &rows {
        println!("{} per experiment (s): {}", r.name, r.parts);
    }
    println!();
    // The directions are timed: printed here for the record, PASS/FAIL only for the budgets.
    for r in &rows {
        println!("{} directions the seeds report: {}", r.name, r.directions.0);
        for n in &r.directions.1 {
            println!("  does not hold: {n}");
        }
    }
    println!();
    for r in &rows {
        println!(
            "{}: {:.1} s (goal < {} s): {}",
            r.name,
            r.wall.as_secs_f64(),
            r.goal.as_secs(),
            if r.pass() { "PASS" } else { "FAIL" }
        );
    }
}
