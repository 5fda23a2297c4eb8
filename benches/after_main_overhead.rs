//! The cost of measuring the loader after `main`: a program that dlopens 100 generated
//! libraries (benches/support/hundred_dlopens.rs: each with 300 relocations and a small
//! constructor; one function called in each), measured three ways side by side:
//! - `perf stat -e task-clock -r N` of the program untraced (what a user would run);
//! - `ldcost profile -n N --json -`'s uninstrumented reference runs (no ptrace after the
//!   execve entry; `overhead.uninstrumented_ns`, median and 95% interval);
//! - the per-object runs' CPU per exec as the summary gives it (the phases corrected for
//!   ldcost's stops, each run's stops at that run's replayed cost, plus the exit teardown),
//!   beside their raw task-clock (`overhead.per_object_ns`) and the corrected phases' sum.
//!
//! Also: the stops per measured run (median) and how many of them were after `main` (each
//! run's `after_main.stops`), and the relocations of one library by `readelf -r` against the
//! count the report reads from its file.
//!
//! Goal: the corrected CPU per exec within 10% of the uninstrumented runs' median CPU
//! (|ratio − 1| ≤ 0.10), PASS/FAIL; the ratio to `perf stat`'s mean is printed beside.
//!
//! Run with `cargo bench --bench after_main_overhead` (root, perf, cc, libc6-dbg for the
//! per-object split). `LDCOST_BENCH_RUNS`: measured runs and `perf stat -r` repeats (default
//! 20).

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/hundred_dlopens.rs"]
mod hundred;
#[allow(dead_code)]
#[path = "support/targets.rs"]
mod targets;

use std::path::PathBuf;

use ldcost::attribute::stats::summarize;
use ldcost::profile::ProfileSection;
use ldcost::record::Instrumentation;
use targets::{loadavg, profile, Target};

/// The goal: |corrected instrumented CPU / uninstrumented CPU − 1| at most this.
const GOAL: f64 = 0.10;

fn main() {
    let runs = hundred::runs(20);
    println!(
        "after_main_overhead: {} dlopens, {runs} runs each way",
        hundred::LIBS
    );
    println!("load:     {}", loadavg());
    let Some(h) = hundred::ready(common::have) else {
        return;
    };
    let argv = h.argv();
    let t: Target = (PathBuf::from(&argv[0]), argv[1..].to_vec());
    let relocs = common::readelf_reloc_counts(&h.lib(0));
    println!(
        "libg000.so by readelf -r: {} relocations ({})",
        relocs.values().sum::<u64>(),
        relocs
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let perf = perf_stat(&argv, runs);
    let p = match profile(&t, &["-n", &runs.to_string(), "--no-ld-debug"]) {
        Ok(p) => p,
        Err(e) => {
            println!("FAIL: ldcost profile: {e}");
            return;
        }
    };
    report(&p, perf, runs);
    println!("load afterwards: {}", loadavg());
}

/// `perf stat -x, -e task-clock -r N`: the mean task-clock in ns and its relative stddev.
fn perf_stat(argv: &[String], runs: usize) -> Result<(f64, String), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("stat.csv");
    let st = std::process::Command::new("perf")
        .args(["stat", "-x,", "-o"])
        .arg(&file)
        .args(["-e", "task-clock", "-r", &runs.to_string(), "--"])
        .args(argv)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("perf: {e}"))?;
    if !st.success() {
        return Err(format!("perf stat exited with {st}"));
    }
    let text = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
    // CSV: value,unit,event,stddev%,...
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            if f.len() < 4 || !f[2].starts_with("task-clock") {
                return None;
            }
            let unit = if f[1] == "msec" { 1e6 } else { 1.0 };
            Some((f[0].parse::<f64>().ok()? * unit, f[3].to_string()))
        })
        .ok_or_else(|| format!("cannot read perf stat's output:\n{text}"))
}

fn ms(ns: f64) -> String {
    format!("{:.3}", ns / 1e6)
}

fn report(p: &ProfileSection, perf: Result<(f64, String), String>, runs: usize) {
    let measured: Vec<_> = p
        .raw
        .iter()
        .filter(|r| r.instrumentation == Instrumentation::PerObject)
        .collect();
    let stops = summarize(&measured.iter().map(|r| r.stops as f64).collect::<Vec<_>>());
    let after: Vec<f64> = measured
        .iter()
        .filter_map(|r| r.after_main.as_ref().map(|a| a.stops as f64))
        .collect();
    let after = summarize(&after);
    let a = &p.after_main;
    let objects = a.objects.len();
    let seen = format!("{:?}", a.seen);
    let summary = ldcost::attribute::summary::summary(Some(p), None);
    let exec = summary.exec.as_ref();
    let none = p.overhead.uninstrumented_ns.as_ref();
    println!();
    println!(
        "after main: {seen}, {objects} objects in the report's rows, {} dlopen calls",
        a.opens.len()
    );
    println!(
        "stops per measured run: median {} (after main: median {})",
        stops.map_or("n/a".into(), |s| format!("{:.0}", s.median)),
        after.map_or("n/a".into(), |s| format!("{:.0}", s.median)),
    );
    println!(
        "ldcost's cost per stop (replayed): {}",
        p.overhead
            .ns_per_stop
            .map_or("n/a".into(), |v| format!("{:.1} µs", v / 1e3))
    );
    println!();
    println!("| figure | runs | CPU ms | 95% CI ms | / uninstrumented |");
    println!("|---|---|---|---|---|");
    let base = none.map(|s| s.median);
    let ratio = |v: f64| base.map_or("n/a".into(), |b| format!("{:.3}", v / b));
    match &perf {
        Ok((mean, sd)) => println!(
            "| perf stat -e task-clock -r {runs}, untraced | {runs} | {} (mean, ±{sd}) | | {} |",
            ms(*mean),
            ratio(*mean)
        ),
        Err(e) => println!("| perf stat | | {e} | | |"),
    }
    if let Some(s) = none {
        println!(
            "| ldcost uninstrumented reference runs | {} | {} | [{}, {}] | 1 |",
            s.n,
            ms(s.median),
            ms(s.ci95.0),
            ms(s.ci95.1)
        );
    }
    if let Some(s) = &p.overhead.per_object_ns {
        println!(
            "| per-object runs, raw task-clock | {} | {} | [{}, {}] | {} |",
            s.n,
            ms(s.median),
            ms(s.ci95.0),
            ms(s.ci95.1),
            ratio(s.median)
        );
    }
    if let Some(s) = &p.total_task_clock_ns {
        println!(
            "| per-object runs, phases corrected for the stops | {} | {} | [{}, {}] | {} |",
            s.n,
            ms(s.median),
            ms(s.ci95.0),
            ms(s.ci95.1),
            ratio(s.median)
        );
    }
    if let Some(e) = exec {
        let ci = e.ci95_ns.map_or(String::new(), |(lo, hi)| {
            format!("[{}, {}]", ms(lo), ms(hi))
        });
        println!(
            "| per-object runs, CPU per exec (summary) | {} | {} | {ci} | {} |",
            e.runs,
            ms(e.cpu_ns),
            ratio(e.cpu_ns)
        );
        for part in &e.parts {
            println!("|   {} | | {} | | |", part.label, ms(part.ns));
        }
    }
    if let Some(s) = &a.loader_cpu_ns {
        println!(
            "| ld.so's CPU after main (in the above) | {} | {} | [{}, {}] | |",
            s.n,
            ms(s.median),
            ms(s.ci95.0),
            ms(s.ci95.1)
        );
    }
    println!();
    match (exec, base) {
        (Some(e), Some(b)) if b > 0.0 => {
            let r = e.cpu_ns / b;
            let vs_perf = perf
                .as_ref()
                .map_or("n/a".into(), |(m, _)| format!("{:.3}", e.cpu_ns / m));
            println!(
                "goal: corrected CPU per exec / uninstrumented = {r:.3} (goal within {GOAL:.2} of 1; / perf stat {vs_perf}): {}",
                if (r - 1.0).abs() <= GOAL { "PASS" } else { "FAIL" }
            );
        }
        _ => println!("goal: FAIL (no figure: no summary or no uninstrumented runs)"),
    }
}
