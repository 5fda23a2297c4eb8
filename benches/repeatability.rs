//! Repeatability of `ldcost profile`: five invocations of
//! `ldcost profile -n 20 --json -` of the same target (`python3 -c pass`, a trivial C program
//! built here with cc), one after the other. For every phase (and object) whose share is over
//! 5% of the total (mean of the five), and for the total: the five medians, their spread
//! (max/min − 1) and coefficient of variation (standard deviation / mean). Goal: spread < 3%
//! per phase, PASS/FAIL per phase. The phases' own 95% intervals are printed beside (the
//! widest of the five, as ± % of its median): the report flags a phase whose interval is wider
//! than ±3% (`wide_interval` in the JSON).
//!
//! Run with `cargo bench --bench repeatability` (root, perf, cc). `LDCOST_BENCH_RUNS`: `-n`
//! of each invocation (default 20); `LDCOST_BENCH_INVOCATIONS` (default 5).

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/targets.rs"]
mod targets;

use std::collections::BTreeMap;

use ldcost::profile::ProfileSection;
use targets::{loadavg, profile, python3, trivial_c, Target};

/// The goal: spread of a phase's median across the invocations.
const GOAL: f64 = 0.03;
/// Phases at or under this share of the total are left out.
const MIN_SHARE: f64 = 0.05;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let runs = env("LDCOST_BENCH_RUNS", 20).to_string();
    let invocations = env("LDCOST_BENCH_INVOCATIONS", 5);
    println!("repeatability: {invocations} x ldcost profile -n {runs} --json - TARGET");
    println!("load:     {}", loadavg());
    let dir = tempfile::tempdir().expect("temp dir");
    println!();
    println!("| target | phase | share | medians (ms) | spread | CV | widest own CI | goal < 3% |");
    println!("|---|---|---|---|---|---|---|---|");
    for (label, t) in [
        ("python3 -c pass", python3()),
        ("trivial C", trivial_c(dir.path())),
    ] {
        let Some(t) = t else {
            println!("| {label} | SKIP: not installed | | | | | | |");
            continue;
        };
        target(label, &t, &runs, invocations);
    }
    println!();
    println!("load afterwards: {}", loadavg());
}

/// One phase's figures in one invocation: median ns, share, half-width of its CI / median.
type Figure = (f64, f64, Option<f64>);

fn target(label: &str, t: &Target, runs: &str, invocations: usize) {
    let mut docs: Vec<ProfileSection> = Vec::new();
    for _ in 0..invocations {
        match profile(t, &["-n", runs]) {
            Ok(p) => docs.push(p),
            Err(e) => {
                println!("| {label} | FAIL: {e} | | | | | | |");
                return;
            }
        }
    }
    // (first position, phase label) → figures per invocation.
    let mut phases: BTreeMap<(usize, String), Vec<Figure>> = BTreeMap::new();
    for p in &docs {
        for (i, ph) in p.phases.iter().enumerate() {
            let Some(s) = &ph.task_clock_ns else {
                continue;
            };
            let name = match &ph.object {
                Some(o) => format!("{} {}", ph.phase.label(), short(o)),
                None => ph.phase.label().to_string(),
            };
            let pos = phases
                .keys()
                .find(|(_, n)| *n == name)
                .map_or(i, |(k, _)| *k);
            let half = (s.median > 0.0).then(|| (s.ci95.1 - s.ci95.0) / 2.0 / s.median);
            phases
                .entry((pos, name))
                .or_default()
                .push((s.median, ph.share, half));
        }
        if let Some(s) = &p.total_task_clock_ns {
            let half = (s.median > 0.0).then(|| (s.ci95.1 - s.ci95.0) / 2.0 / s.median);
            phases
                .entry((usize::MAX, "total".into()))
                .or_default()
                .push((s.median, 1.0, half));
        }
    }
    for ((_, name), figs) in phases {
        let share = figs.iter().map(|f| f.1).sum::<f64>() / figs.len() as f64;
        if share <= MIN_SHARE {
            continue;
        }
        if figs.len() < invocations {
            println!(
                "| {label} | {name} | {:.1}% | in {} of {invocations} invocations | | | | FAIL |",
                share * 100.0,
                figs.len()
            );
            continue;
        }
        let m: Vec<f64> = figs.iter().map(|f| f.0).collect();
        let (lo, hi) = m
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        let spread = if lo > 0.0 {
            hi / lo - 1.0
        } else {
            f64::INFINITY
        };
        let mean = m.iter().sum::<f64>() / m.len() as f64;
        let var = m.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (m.len() as f64 - 1.0);
        let cv = var.sqrt() / mean;
        let widest = figs
            .iter()
            .filter_map(|f| f.2)
            .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))));
        let medians: Vec<String> = m.iter().map(|v| format!("{:.3}", v / 1e6)).collect();
        println!(
            "| {label} | {name} | {:.1}% | {} | {:.1}% | {:.1}% | {} | {} |",
            share * 100.0,
            medians.join(" "),
            spread * 100.0,
            cv * 100.0,
            widest.map_or("n/a".into(), |w| format!("±{:.1}%", w * 100.0)),
            if spread < GOAL {
                "PASS".to_string()
            } else {
                format!("FAIL (by {:.1} points)", (spread - GOAL) * 100.0)
            }
        );
    }
}

/// The file name of an object's path.
fn short(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}
