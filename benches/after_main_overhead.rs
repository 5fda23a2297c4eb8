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
//! The correction takes each stop out at its replayed cost and, after `main`, at the residue
//! the per-object and boundaries-only runs resolve beyond it (`overhead.residue`,
//! src/attribute/profile/residue.rs); the runs without ptrace are not used by it.
//!
//! Goal: the corrected CPU per exec within 10% of the uninstrumented runs' CPU per exec
//! counted alike (their task-clock, threads' and children's, and the exit teardown no counter
//! sees: the summary's `uninstrumented_ns`), |ratio − 1| ≤ 0.10, PASS/FAIL; the ratio to
//! `perf stat`'s mean is printed beside.
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
    let perf = hundred::perf_stat(&argv, runs);
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
    let per_exec = exec.and_then(|e| e.uninstrumented_ns);
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
        "ldcost's cost per stop (replayed): {}; beyond it after main (residue): {}",
        p.overhead
            .ns_per_stop
            .map_or("n/a".into(), |v| format!("{:.1} µs", v / 1e3)),
        p.overhead
            .residue
            .map_or("not resolved".into(), |r| format!(
                "{:.2} µs [{:.2}, {:.2}]",
                r.ns_per_stop / 1e3,
                r.low_ns / 1e3,
                r.high_ns / 1e3
            ))
    );
    println!();
    println!("| figure | runs | CPU ms | 95% CI ms | / uninstrumented |");
    println!("|---|---|---|---|---|");
    let base = per_exec;
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
            "| ldcost uninstrumented reference runs, task-clock | {} | {} | [{}, {}] | {} |",
            s.n,
            ms(s.median),
            ms(s.ci95.0),
            ms(s.ci95.1),
            ratio(s.median)
        );
    }
    if let Some(u) = per_exec {
        println!(
            "| ldcost uninstrumented reference runs, CPU per exec (with the exit teardown) | | {} | | 1 |",
            ms(u)
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
                "goal: corrected CPU per exec / uninstrumented CPU per exec = {r:.3} (goal within {GOAL:.2} of 1; / perf stat {vs_perf}): {}",
                if (r - 1.0).abs() <= GOAL { "PASS" } else { "FAIL" }
            );
        }
        _ => println!("goal: FAIL (no figure: no summary or no uninstrumented runs)"),
    }
}
