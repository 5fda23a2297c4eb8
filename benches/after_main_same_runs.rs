//! The per-object windows after `main` against `perf record` of the same runs: each object's
//! search and mapping, relocation and initializers as ldcost times them, against perf's
//! samples of the same thread inside the same windows.
//!
//! `perf record -a -e cpu-clock -c PERIOD -g -k CLOCK_MONOTONIC` runs `ldcost profile -n N
//! --json` of the program that dlopens 100 generated libraries (benches/support). System-wide:
//! a per-CPU clock samples whatever runs, every PERIOD of the CPU's time, stops or not. A
//! per-task clock is stopped and started again at each of the target's thousands of ptrace
//! stops, so its samples times the period fall short of the task's CPU (docs/benchmarks.md
//! has the figures); the per-CPU clock's excess over the task's CPU is at the context
//! switches, inside the stops' own path, which is left out below. ldcost's
//! windows carry their CLOCK_MONOTONIC span and the thread that made the `dlopen`; perf's
//! samples carry the same clock and the thread. For each measured run and each class, ldcost's
//! side is the Σ over the objects of their windows' CPU (the thread's CPU between the stops
//! that bound the window, less the replayed cost of its stops); perf's is the number of the
//! thread's samples inside those windows, times the period, leaving out the samples taken in
//! a ptrace stop's own path (a kernel stack through the breakpoint's trap, the signal it
//! raises or `ptrace_stop`: what ldcost's correction takes out). No unwinding of user stacks
//! is needed on either side: the windows say which object and class a sample belongs to.
//!
//! What ldcost's figures then rest on, and this checks: that the windows start and end where
//! the work does, that the CPU read at the stops is the thread's, and that the correction
//! takes out what the stops cost and no more. The cache effects a stop leaves behind (the
//! residue the report also takes out) are in both sides alike; `after_main_ab` checks the
//! report's figures against a program that never stops.
//!
//! Goals, the rules start-up's sampled categories are judged by against `perf record` in
//! `profile_checks`: per class, the µs per run within 20% of perf's, and the class's share of
//! the three within 5 points.
//!
//! Run with `cargo bench --bench after_main_same_runs` (root, perf, cc, libc6-dbg).
//! `LDCOST_BENCH_RUNS`: ldcost's measured runs (default 20).

#[path = "../tests/common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "support/hundred_dlopens.rs"]
mod hundred;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use ldcost::profile::ProfileSection;
use ldcost::record::{Instrumentation, Run};

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");
/// perf's sampling period, ns of the thread's CPU (cpu-clock).
const PERIOD_NS: u64 = 25_000;
/// Per-class µs per run: within this fraction of perf's.
const GOAL: f64 = 0.20;
/// Per-class share of the three: within this many points of perf's.
const SHARE_POINTS: f64 = 5.0;

const CLASSES: [&str; 3] = ["search & mapping", "relocation", "initializers"];

/// Kernel functions that put a sample in a ptrace stop's own path: the breakpoint's trap
/// (`int3`, or the debug exception of a single step), the SIGTRAP it raises and its delivery,
/// the stop itself, and a syscall stop's report.
const STOP_FRAMES: [&str; 10] = [
    "exc_int3",
    "asm_exc_int3",
    "exc_debug",
    "asm_exc_debug",
    "noist_exc_debug",
    "force_sig_info_to_task",
    "get_signal",
    "ptrace_stop",
    "ptrace_report_syscall",
    "syscall_trace_enter",
];

/// One window: the thread, its CLOCK_MONOTONIC span and the class (3: a whole `dlopen`).
struct Window {
    tid: i32,
    span: (u64, u64),
    class: usize,
}

/// One sample of perf's: the thread, CLOCK_MONOTONIC ns and whether it was in a stop's path.
#[derive(Clone, Copy)]
struct Sample {
    time: u64,
    stop: bool,
}

fn main() {
    let runs = hundred::runs(20);
    println!(
        "after_main_same_runs: {} dlopens; perf record -a -e cpu-clock -c {PERIOD_NS} -g -k CLOCK_MONOTONIC of ldcost profile -n {runs}",
        hundred::LIBS
    );
    println!("load:     {}", hundred::load());
    let Some(h) = hundred::ready(common::have) else {
        return;
    };
    let Some(dir) = hundred::scratch() else {
        return;
    };
    let p = match record(dir.path(), &h.argv(), runs) {
        Ok(p) => p,
        Err(e) => {
            println!("FAIL: {e}");
            return;
        }
    };
    let samples = match samples(dir.path()) {
        Ok(s) => s,
        Err(e) => {
            println!("SKIP: perf script: {e}");
            return;
        }
    };
    let measured: Vec<&Run> = p
        .raw
        .iter()
        .filter(|r| {
            r.instrumentation == Instrumentation::PerObject
                && ldcost::attribute::profile::lost(r).is_none()
                && r.after_main.is_some()
        })
        .collect();
    if measured.is_empty() {
        println!("FAIL: no measured run recorded the loader after main");
        return;
    }
    // Σ over the runs, per class (3: the whole dlopen calls): ldcost's CPU, its stops, perf's
    // samples outside and inside the stops' path.
    let (mut ours, mut stops) = ([0.0f64; 4], [0u64; 4]);
    let (mut theirs, mut in_stops) = ([0u64; 4], [0u64; 4]);
    let mut objects = 0;
    for r in &measured {
        let a = r.after_main.as_ref().expect("filtered");
        let mut windows = Vec::new();
        for o in &a.opens {
            windows.push((
                Window {
                    tid: o.tid,
                    span: o.cost.span_ns,
                    class: 3,
                },
                o.cost,
            ));
            for l in &o.objects {
                objects += 1;
                for (c, cost) in [&l.mapping, &l.relocation, &l.initializers]
                    .into_iter()
                    .enumerate()
                {
                    if let Some(cost) = cost {
                        windows.push((
                            Window {
                                tid: o.tid,
                                span: cost.span_ns,
                                class: c,
                            },
                            *cost,
                        ));
                    }
                }
            }
        }
        for (w, cost) in windows {
            ours[w.class] += cost.cpu_ns as f64;
            stops[w.class] += cost.stops;
            let (n, s) = count(&samples, &w);
            theirs[w.class] += n;
            in_stops[w.class] += s;
        }
    }
    let n = measured.len() as f64;
    let per_run = |x: f64| x / n / 1e3;
    let perf_us = |k: u64| (k * PERIOD_NS) as f64 / n / 1e3;
    let ours3: f64 = ours[..3].iter().sum();
    let theirs3: u64 = theirs[..3].iter().sum();
    println!(
        "measured runs: {}; objects loaded after main: {} a run; perf's samples of those runs' threads inside the windows: {} ({} more in the stops' own path)",
        measured.len(),
        objects / measured.len(),
        theirs.iter().take(3).sum::<u64>(),
        in_stops.iter().take(3).sum::<u64>()
    );
    println!();
    println!("| check | class | ldcost (Σ of windows' CPU, per run) | perf record (samples in the same windows × {} µs) | goal | result |", PERIOD_NS / 1000);
    println!("|---|---|---:|---:|---|---|");
    let mut passed = 0;
    for c in 0..3 {
        let (o, t) = (per_run(ours[c]), perf_us(theirs[c]));
        let off = if t > 0.0 { o / t - 1.0 } else { f64::INFINITY };
        let pass = off.abs() <= GOAL;
        passed += pass as usize;
        println!(
            "| µs per run | {} | {o:.0} | {t:.0} | within {:.0}% | {} ({:+.1}%) |",
            CLASSES[c],
            GOAL * 100.0,
            verdict(pass),
            off * 100.0
        );
    }
    for c in 0..3 {
        let o = 100.0 * ours[c] / ours3;
        let t = 100.0 * theirs[c] as f64 / theirs3 as f64;
        let pass = (o - t).abs() <= SHARE_POINTS;
        passed += pass as usize;
        println!(
            "| share of the three | {} | {o:.1}% | {t:.1}% | within {SHARE_POINTS:.0} points | {} ({:+.1}) |",
            CLASSES[c],
            verdict(pass),
            o - t
        );
    }
    println!(
        "| beside | the whole dlopen calls | {:.0} | {:.0} | | {:+.1}% |",
        per_run(ours[3]),
        perf_us(theirs[3]),
        (ours[3] / (theirs[3] * PERIOD_NS) as f64 - 1.0) * 100.0
    );
    let median_stop = ldcost::stats::median_mut(
        &mut measured
            .iter()
            .flat_map(|r| r.stop_costs_ns.iter().map(|&x| x as f64))
            .collect::<Vec<_>>(),
    );
    println!(
        "| beside | the stops inside the three (per run) | {:.0} stops × {:.2} µs replayed = {:.0} | {:.0} in their path | | |",
        stops[..3].iter().sum::<u64>() as f64 / n,
        median_stop / 1e3,
        stops[..3].iter().sum::<u64>() as f64 / n * median_stop / 1e3,
        perf_us(in_stops[..3].iter().sum())
    );
    println!();
    println!(
        "{passed} of 6: {}",
        if passed == 6 { "PASS" } else { "FAIL" }
    );
}

fn verdict(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "**FAIL**"
    }
}

/// perf's samples of `w`'s thread inside its span: outside the stops' path, and in it.
fn count(samples: &BTreeMap<i32, Vec<Sample>>, w: &Window) -> (u64, u64) {
    let Some(s) = samples.get(&w.tid) else {
        return (0, 0);
    };
    let from = s.partition_point(|x| x.time < w.span.0);
    let to = s.partition_point(|x| x.time <= w.span.1);
    let stop = s[from..to].iter().filter(|x| x.stop).count() as u64;
    ((to - from) as u64 - stop, stop)
}

/// `perf record` of `ldcost profile -n runs --json` of `argv`; the profile read back.
fn record(dir: &Path, argv: &[String], runs: usize) -> Result<ProfileSection, String> {
    let json = dir.join("profile.json");
    let st = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-c"])
        .arg(PERIOD_NS.to_string())
        .args(["-a", "-g", "-k", "CLOCK_MONOTONIC", "-o"])
        .arg(dir.join("perf.data"))
        .args(["--", BIN, "profile", "-n"])
        .arg(runs.to_string())
        .args(["--no-ld-debug", "--quiet-target", "--json"])
        .arg(&json)
        .args(argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("perf: {e}"))?;
    if !st.success() {
        return Err(format!("perf record of ldcost profile exited with {st}"));
    }
    let text = std::fs::read(&json).map_err(|e| format!("{}: {e}", json.display()))?;
    hundred::profile_of(&text)
}

/// perf's samples by thread, in time order: `perf script -F tid,time,ip,sym --ns`, one block
/// per sample (the header with the thread and the time, then a frame per line after a tab).
fn samples(dir: &Path) -> Result<BTreeMap<i32, Vec<Sample>>, String> {
    let out = Command::new("perf")
        .args(["script", "-F", "tid,time,ip,sym", "--ns", "-i"])
        .arg(dir.join("perf.data"))
        .stderr(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("exited with {}", out.status));
    }
    let mut by_tid: BTreeMap<i32, Vec<Sample>> = BTreeMap::new();
    let mut cur: Option<(i32, Sample)> = None;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        if line.trim().is_empty() {
            continue;
        }
        // Frames start with a tab; a header's thread id is padded with spaces.
        if !line.starts_with('\t') {
            if let Some((t, s)) = cur.take() {
                by_tid.entry(t).or_default().push(s);
            }
            cur = header(line);
            continue;
        }
        if let Some((_, s)) = &mut cur {
            let sym = line.split_whitespace().nth(1).unwrap_or("");
            s.stop |= STOP_FRAMES.contains(&sym);
        }
    }
    if let Some((t, s)) = cur {
        by_tid.entry(t).or_default().push(s);
    }
    for v in by_tid.values_mut() {
        v.sort_by_key(|s| s.time);
    }
    Ok(by_tid)
}

/// "TID SECONDS.NANOS:" → the thread and the time in ns.
fn header(line: &str) -> Option<(i32, Sample)> {
    let mut f = line.split_whitespace();
    let tid = f.next()?.parse().ok()?;
    let (s, ns) = f.next()?.trim_end_matches(':').split_once('.')?;
    let time = s.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?;
    Some((tid, Sample { time, stop: false }))
}
