//! Instrumentation overhead: what ldcost's ptrace stops cost the target.
//! For /bin/true, a trivial C program (built here with cc), `python3 -c pass` and
//! `rustc --version`, one `ldcost profile -n N --json -` each: its rounds interleave a
//! per-object run, a boundaries-only (`coarse`) run and an uninstrumented run (no ptrace after
//! the execve entry), so the machine's load falls on the three kinds alike. Per kind: the
//! target's CPU time (task-clock, `raw[].total`, the per-object runs' replayed stops already
//! left out by ldcost) as median and 95% bootstrap interval; the ratios of the medians
//! boundaries-only/uninstrumented and per-object/uninstrumented, and the median of the
//! per-round ratios with its interval; the cost per boundary in µs ((kind − uninstrumented) /
//! stops) beside the replayed stops' own cost (`stop_costs_ns`: the int3 + waitpid round
//! trip with no work between), whose difference is what the target pays after each stop
//! (cache and TLB refill, a migration).
//!
//! Goal: boundaries-only within 2% of uninstrumented CPU (ratio of medians ≤ 1.02) for
//! python3 and the trivial program, PASS/FAIL.
//!
//! Run with `cargo bench --bench overhead` (root, perf, cc). `LDCOST_BENCH_RUNS`: rounds per
//! target (default 30).

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/targets.rs"]
mod targets;

use ldcost::attribute::stats::{summarize, Summary};
use ldcost::profile::ProfileSection;
use ldcost::record::Instrumentation;
use targets::{loadavg, profile, python3, rustc, tgt, trivial_c, Target};

/// The goal: boundaries-only / uninstrumented CPU, ratio of medians.
const GOAL: f64 = 1.02;

fn main() {
    let runs = std::env::var("LDCOST_BENCH_RUNS").unwrap_or_else(|_| "30".into());
    println!("overhead: ldcost profile -n {runs} --quiet-target --json - TARGET, per target");
    println!("load:     {}", loadavg());
    let dir = tempfile::tempdir().expect("temp dir");
    let targets: Vec<(&str, Option<Target>, bool)> = vec![
        ("/bin/true", Some(tgt("/bin/true", &[])), false),
        ("trivial C", trivial_c(dir.path()), true),
        ("python3 -c pass", python3(), true),
        ("rustc --version", rustc(), false),
    ];
    println!();
    println!("| target | kind | stops | CPU median µs | 95% CI µs | / uninstrumented | per-round ratio [95% CI] | µs per stop | replayed stop µs |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut goals = Vec::new();
    for (label, t, goal) in targets {
        let Some(t) = t else {
            println!("| {label} | SKIP: not installed | | | | | | | |");
            continue;
        };
        match profile(&t, &["-n", &runs, "--no-ld-debug"]) {
            Ok(p) => {
                let ratio = rows(label, &p);
                if goal {
                    goals.push((label, ratio));
                }
            }
            Err(e) => println!("| {label} | FAIL: {e} | | | | | | | |"),
        }
    }
    println!();
    for (label, ratio) in goals {
        match ratio {
            Some(r) => println!(
                "goal {label}: boundaries-only / uninstrumented CPU = {r:.3} (goal <= {GOAL}): {}",
                if r <= GOAL { "PASS" } else { "FAIL" }
            ),
            None => println!("goal {label}: FAIL (no figure)"),
        }
    }
    println!("load afterwards: {}", loadavg());
}

fn cpu(p: &ProfileSection, kind: Instrumentation) -> Vec<f64> {
    p.raw
        .iter()
        .filter(|r| r.instrumentation == kind)
        .filter_map(|r| r.total.task_clock_ns.map(|v| v as f64))
        .collect()
}

fn stops(p: &ProfileSection, kind: Instrumentation) -> Option<f64> {
    let s: Vec<f64> = p
        .raw
        .iter()
        .filter(|r| r.instrumentation == kind)
        .map(|r| r.stops as f64)
        .collect();
    summarize(&s).map(|s| s.median)
}

/// Per-round ratios kind/uninstrumented (the runs of a round are adjacent in `raw`).
fn paired(p: &ProfileSection, kind: Instrumentation) -> Option<Summary> {
    let mut out = Vec::new();
    let mut last: Option<f64> = None;
    for r in &p.raw {
        let v = r.total.task_clock_ns.map(|v| v as f64);
        if r.instrumentation == kind {
            last = v;
        } else if r.instrumentation == Instrumentation::None {
            if let (Some(a), Some(b)) = (last.take(), v) {
                out.push(a / b);
            }
        }
    }
    summarize(&out)
}

/// Prints the three kinds' rows; returns the boundaries-only ratio of medians.
fn rows(label: &str, p: &ProfileSection) -> Option<f64> {
    let none = summarize(&cpu(p, Instrumentation::None))?;
    let replayed: Vec<f64> = p
        .raw
        .iter()
        .flat_map(|r| r.stop_costs_ns.iter().map(|&v| v as f64))
        .collect();
    let replayed = summarize(&replayed).map(|s| s.median / 1e3);
    let mut coarse_ratio = None;
    for (name, kind) in [
        ("uninstrumented", Instrumentation::None),
        ("boundaries-only", Instrumentation::Coarse),
        ("per-object", Instrumentation::PerObject),
    ] {
        let Some(s) = summarize(&cpu(p, kind)) else {
            continue;
        };
        let n = stops(p, kind).unwrap_or(0.0);
        let (ratio, pair, per_stop, rep) = if kind == Instrumentation::None {
            ("".into(), "".into(), "".into(), "".into())
        } else {
            let r = s.median / none.median;
            if kind == Instrumentation::Coarse {
                coarse_ratio = Some(r);
            }
            let pair = paired(p, kind).map_or("n/a".into(), |q| {
                format!("{:.3} [{:.3}, {:.3}]", q.median, q.ci95.0, q.ci95.1)
            });
            let per = if n > 0.0 {
                format!("{:.1}", (s.median - none.median) / n / 1e3)
            } else {
                "n/a".into()
            };
            let rep = match (kind, replayed) {
                (Instrumentation::PerObject, Some(v)) => format!("{v:.1}"),
                _ => "".into(),
            };
            (format!("{r:.3}"), pair, per, rep)
        };
        println!(
            "| {label} | {name} (n={}) | {n} | {:.1} | [{:.1}, {:.1}] | {ratio} | {pair} | {per_stop} | {rep} |",
            s.n,
            s.median / 1e3,
            s.ci95.0 / 1e3,
            s.ci95.1 / 1e3
        );
    }
    coarse_ratio
}
