//! The magnitudes behind the sampler and counter tests, measured and judged: how close
//! ldcost's figures come to the kernel's CPU time, to `perf stat` and to `perf record`, and the
//! shares of the proofs on targets with known answers.
//!
//! Run with `cargo bench --bench sampling_checks` (release profile, as root, with cc, perf and
//! python3). It prints one table, a row per check (what is compared, the measured figure, the
//! goal, PASS/FAIL), and never fails the build. The tests (`tests/perf_counters.rs`,
//! `tests/sampler/`, `tests/sampling_proofs.rs`) keep what load cannot move (counts, presence,
//! direction with wide margins, oracle equalities); the goals here are the bounds those tests
//! had (task-clock against perf stat: 1.5x, tighter than the test's former 3x), which a loaded
//! machine can miss: a FAIL on a busy VM says "measure again on a quiet
//! one", on a quiet one it is a finding. See docs/benchmarks.md.
//!
//! Sections, run in this order (each one skipped with its reason when the machine cannot):
//! - `counters`: the exit teardown outside task-clock (gaps in ms), task-clock against
//!   `perf stat`, schedstat against task-clock, the /proc user/kernel split against
//!   `perf record`;
//! - `sampler`: samples per CPU time of a spinning fixture and of a grandchild, the share of
//!   their leaf function, the children's exit teardown system-wide and per task, and the
//!   sampler against `perf record -a` on the same run;
//! - `proofs`: the shares of `ldcost profile --sample` on 200k relocations, on forking 2 GiB,
//!   and on seed 001's forktest against `perf record -a -g` classified by
//!   `tests/oracle/classify_perf_script.py`.
//!
//! Environment: `LDCOST_BENCH_ONLY=counters,sampler,proofs` (a subset of the sections).

#[path = "../tests/common/mod.rs"]
mod common;

/// The fixtures, the blocked target and one sampled run of the sampler tests.
#[allow(dead_code)]
#[path = "../tests/sampler/harness.rs"]
mod harness;

#[path = "sampling_checks/counters.rs"]
mod counters;
#[path = "../tests/common/perf_record.rs"]
mod perf_record;
#[path = "../tests/common/proof_targets.rs"]
mod proof_targets;
#[path = "sampling_checks/proofs.rs"]
mod proofs;
#[path = "sampling_checks/sampler.rs"]
mod sampler;

use std::fmt::Display;

/// One row of the table.
pub struct Check {
    section: &'static str,
    what: String,
    measured: String,
    goal: String,
    pass: bool,
}

/// The table being filled.
#[derive(Default)]
pub struct Table {
    rows: Vec<Check>,
    skipped: Vec<String>,
}

impl Table {
    /// Adds a row; `measured` and `goal` as printed.
    pub fn check(
        &mut self,
        section: &'static str,
        what: impl Display,
        measured: impl Display,
        goal: impl Display,
        pass: bool,
    ) {
        let row = Check {
            section,
            what: what.to_string(),
            measured: measured.to_string(),
            goal: goal.to_string(),
            pass,
        };
        println!(
            "  {:8} {}: {} (goal {}): {}",
            row.section,
            row.what,
            row.measured,
            row.goal,
            verdict(row.pass)
        );
        self.rows.push(row);
    }

    /// Notes a section or check that could not run here.
    pub fn skip(&mut self, what: &str, why: impl Display) {
        println!("  SKIP {what}: {why}");
        self.skipped.push(format!("{what}: {why}"));
    }
}

fn verdict(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "FAIL"
    }
}

fn main() {
    let only = std::env::var("LDCOST_BENCH_ONLY").ok();
    let wanted = |s: &str| only.as_deref().is_none_or(|o| o.split(',').any(|x| x == s));
    let mut t = Table::default();
    println!("sampling_checks");
    println!(
        "machine: {} CPUs online, load average {}",
        std::fs::read_to_string("/sys/devices/system/cpu/online")
            .unwrap_or_default()
            .trim(),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let root = unsafe { nix::libc::geteuid() } == 0;
    let missing: Vec<&str> = ["cc", "perf", "python3"]
        .into_iter()
        .filter(|c| !common::have(c))
        .collect();
    if !root || !missing.is_empty() {
        println!("SKIP sampling_checks: needs root, cc, perf and python3 (missing: {missing:?}, root: {root})");
        return;
    }
    let started = std::time::Instant::now();
    if wanted("counters") {
        counters::run(&mut t);
    }
    if wanted("sampler") {
        sampler::run(&mut t);
    }
    if wanted("proofs") {
        proofs::run(&mut t);
    }

    println!();
    println!("| section | check | measured | goal | verdict |");
    println!("|---|---|---:|---|---|");
    for r in &t.rows {
        println!(
            "| {} | {} | {} | {} | {} |",
            r.section,
            r.what,
            r.measured,
            r.goal,
            verdict(r.pass)
        );
    }
    let failed = t.rows.iter().filter(|r| !r.pass).count();
    println!();
    for s in &t.skipped {
        println!("skipped: {s}");
    }
    println!(
        "{} checks, {} PASS, {failed} FAIL, {} skipped, in {:.0} s (load average now {})",
        t.rows.len(),
        t.rows.len() - failed,
        t.skipped.len(),
        started.elapsed().as_secs_f64(),
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .next()
            .unwrap_or("?")
    );
}
