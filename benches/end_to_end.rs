//! End-to-end wall time and peak memory of the two `ldcost profile` runs a user starts with.
//!
//! Run with `cargo bench --bench end_to_end` (release profile; needs root or ptrace and perf
//! permissions, as `profile` does: without them it prints SKIP and the reason). Cases:
//! - `ldcost profile /bin/ls` (the defaults): goal < 0.5 s wall.
//! - `ldcost profile --fork 2000 --sample --flamegraph F.svg rustc --version`: goal < 5 s.
//!
//! Each case runs the release binary as a child, its output discarded, `LDCOST_BENCH_ROUNDS`
//! times (default: ls 5 after one discarded warm-up, rustc 3 without), and prints the median
//! wall time, the median CPU time and peak RSS of the ldcost process (`wait4`'s rusage: ldcost
//! itself, not the targets it runs), then a PASS/FAIL line per goal. Wall time on a shared
//! machine is moved by load: the load average is printed beside the figures
//! (docs/benchmarks.md).

#[path = "support/child.rs"]
mod child;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

const DEFAULT_ROUNDS: usize = 5;

struct Case {
    name: &'static str,
    args: Vec<String>,
    goal: Duration,
    /// Timed runs, and whether a discarded warm-up run precedes them.
    rounds: usize,
    warmup: bool,
}

fn main() {
    let ldcost = env!("CARGO_BIN_EXE_ldcost");
    let rounds_env = std::env::var("LDCOST_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| n > 0);
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("end_to_end: cannot create a temporary directory: {e}");
            std::process::exit(1);
        }
    };
    let svg: PathBuf = dir.path().join("rustc.svg");
    let mut cases = vec![Case {
        name: "profile /bin/ls",
        args: vec!["profile".into(), "/bin/ls".into()],
        goal: Duration::from_millis(500),
        rounds: rounds_env.unwrap_or(DEFAULT_ROUNDS),
        warmup: true,
    }];
    match which("rustc") {
        Some(rustc) => cases.push(Case {
            name: "profile --fork 2000 --sample --flamegraph F.svg rustc --version",
            args: vec![
                "profile".into(),
                "--fork".into(),
                "2000".into(),
                "--sample".into(),
                "--flamegraph".into(),
                svg.to_string_lossy().into_owned(),
                rustc.to_string_lossy().into_owned(),
                "--".into(),
                "--version".into(),
            ],
            goal: Duration::from_secs(5),
            // Seconds per run (tens on a loaded machine): 3 runs, no warm-up, unless asked.
            rounds: rounds_env.unwrap_or(3),
            warmup: false,
        }),
        None => println!("SKIP rustc case: no `rustc` on PATH"),
    }

    println!("end_to_end: `{ldcost}`");
    println!("load average at start: {}", child::loadavg());
    for c in &cases {
        println!(
            "rounds:   {}{} timed: {}",
            if c.warmup { "1 warm-up + " } else { "" },
            c.rounds,
            c.name
        );
    }
    println!();
    let mut rows = Vec::new();
    let mut verdicts = Vec::new();
    for case in &cases {
        let mut runs = Vec::new();
        let mut failed = None;
        let first = usize::from(case.warmup);
        for round in 0..first + case.rounds {
            let _ = std::fs::remove_file(&svg);
            let mut cmd = Command::new(ldcost);
            cmd.args(&case.args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            match child::run(&mut cmd) {
                Ok(r) if r.success => {
                    if round >= first {
                        runs.push(r);
                    }
                }
                Ok(r) => {
                    failed = Some(format!(
                        "exit status {:#x}: {}",
                        r.status,
                        reason(ldcost, &case.args)
                    ));
                    break;
                }
                Err(e) => {
                    failed = Some(format!("cannot spawn: {e}"));
                    break;
                }
            }
        }
        if let Some(why) = failed {
            println!("SKIP {}: {why}", case.name);
            verdicts.push(format!("{}: not measured ({why})", case.name));
            continue;
        }
        if case.args.iter().any(|a| a.ends_with("rustc.svg")) && !svg.is_file() {
            verdicts.push(format!("{}: FAIL (no flame graph written)", case.name));
        }
        let wall = child::median(&runs.iter().map(|r| r.wall).collect::<Vec<_>>());
        let cpu = child::median(&runs.iter().map(|r| r.cpu).collect::<Vec<_>>());
        let rss = child::median_u64(&runs.iter().map(|r| r.maxrss_kb).collect::<Vec<_>>());
        let max_rss = runs.iter().map(|r| r.maxrss_kb).max().unwrap_or(0);
        let min_wall = runs.iter().map(|r| r.wall).min().unwrap_or_default();
        let max_wall = runs.iter().map(|r| r.wall).max().unwrap_or_default();
        rows.push(format!(
            "| `ldcost {}` | {} | {} | {} | {} | {:.1} MB | {:.1} MB | < {} |",
            case.name,
            secs(wall),
            secs(min_wall),
            secs(max_wall),
            secs(cpu),
            rss as f64 / 1024.0,
            max_rss as f64 / 1024.0,
            secs(case.goal),
        ));
        verdicts.push(format!(
            "{}: median wall {} (goal < {}): {}",
            case.name,
            secs(wall),
            secs(case.goal),
            if wall < case.goal { "PASS" } else { "FAIL" }
        ));
    }
    println!("| command | median wall | min | max | median CPU (ldcost) | median peak RSS | max peak RSS | goal |");
    println!("|---|---:|---:|---:|---:|---:|---:|---|");
    for r in rows {
        println!("{r}");
    }
    println!();
    println!("load average at end: {}", child::loadavg());
    for v in verdicts {
        println!("{v}");
    }
}

/// The first line ldcost printed on stderr when run once more (why a case could not run).
fn reason(ldcost: &str, args: &[String]) -> String {
    Command::new(ldcost)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .next()
                .map(str::to_string)
        })
        .unwrap_or_else(|| "no message".to_string())
}

/// `name` looked up in `$PATH`.
fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn secs(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}
