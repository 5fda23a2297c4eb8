//! The CPU of threads a library's constructor starts, as ldcost charges it to that library,
//! against the threads' own clocks.
//!
//! A program dlopens `libT.so`, whose constructor starts 4 threads. Each spins on its own
//! `CLOCK_THREAD_CPUTIME_ID`: it marks the moment it has spun [`MARK_MS`] (its CPU and
//! CLOCK_MONOTONIC then), and the constructor returns once all four have; each ends at
//! [`SPIN_MS`] of its CPU and reads its clock a last time. After the `dlopen` returns, the
//! program reads CLOCK_MONOTONIC, joins the threads and writes each one's figures with its
//! thread id, which is how they are matched to ldcost's threads.
//!
//! - By the end: ldcost's CPU of each thread by its end (`threads[].cpu_total_ns`, the
//!   scheduler's count when the thread exits) against the thread's last reading of its own
//!   clock. Goal: the Σ over the four within 2% in every measured run (what lies between is
//!   the thread's exit).
//! - When the `dlopen` returned: ldcost's reading (`cpu_at_return_ns`) must lie between the
//!   thread's CPU at its mark and that plus the wall time from its mark to the program's
//!   reading after the `dlopen` (a thread cannot gain more CPU than time passes), for every
//!   thread of every measured run. A thread still running is read as the scheduler last
//!   counted it (its last tick or switch), so the reading is a bound's worth, not exact.
//!
//! Run with `cargo bench --bench after_main_threads` (root, cc, libc6-dbg).
//! `LDCOST_BENCH_RUNS`: ldcost's measured runs (default 10).

#[path = "../tests/common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "support/hundred_dlopens.rs"]
mod hundred;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use ldcost::profile::ProfileSection;
use ldcost::record::Instrumentation;

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");
/// CPU each thread spins for, ms of its own clock.
const SPIN_MS: u64 = 40;
/// CPU each thread has spun when it marks, before the constructor returns.
const MARK_MS: u64 = 5;
/// By the end: ldcost's Σ over the four within this fraction of the threads' own.
const GOAL: f64 = 0.02;

const LIB: &str = r#"
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static pthread_t th[4];
static struct { long long tid, mark_cpu, mark_mono, end_cpu; volatile int marked; } fig[4];
static long long now(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static void *spin(void *arg) {
    int i = (int)(long)arg;
    fig[i].tid = gettid();
    volatile unsigned long x = 0;
    while (now(CLOCK_THREAD_CPUTIME_ID) < MARK_MS * 1000000LL) x++;
    fig[i].mark_cpu = now(CLOCK_THREAD_CPUTIME_ID);
    fig[i].mark_mono = now(CLOCK_MONOTONIC);
    fig[i].marked = 1;
    while (now(CLOCK_THREAD_CPUTIME_ID) < SPIN_MS * 1000000LL) x++;
    fig[i].end_cpu = now(CLOCK_THREAD_CPUTIME_ID);
    return 0;
}
__attribute__((constructor)) static void start(void) {
    for (long i = 0; i < 4; i++) pthread_create(&th[i], 0, spin, (void *)i);
    for (int i = 0; i < 4; i++) while (!fig[i].marked) sched_yield();
}
/* Joins the threads and appends "tid mark_cpu mark_mono end_cpu returned_mono" per thread. */
int t_join(long long returned, const char *out) {
    FILE *f = fopen(out, "a");
    if (!f) return 1;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], 0);
        fprintf(f, "%lld %lld %lld %lld %lld\n", fig[i].tid, fig[i].mark_cpu, fig[i].mark_mono,
                fig[i].end_cpu, returned);
    }
    return fclose(f) != 0;
}
"#;

const PROG: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>
int main(int argc, char **argv) {
    if (argc < 3) return 2;
    void *h = dlopen(argv[1], RTLD_NOW);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    int (*join)(long long, const char *) = (int (*)(long long, const char *))dlsym(h, "t_join");
    if (!join) return 1;
    return join(ts.tv_sec * 1000000000LL + ts.tv_nsec, argv[2]);
}
"#;

/// One thread's own figures (ns).
struct Own {
    mark_cpu: u64,
    mark_mono: u64,
    end_cpu: u64,
    returned_mono: u64,
}

fn main() {
    let runs = hundred::runs(10);
    println!(
        "after_main_threads: a constructor's 4 threads, {SPIN_MS} ms of CPU each ({MARK_MS} ms before the dlopen returns); ldcost profile -n {runs}"
    );
    println!("load:     {}", hundred::load());
    if !common::have("cc") {
        println!("SKIP: cc not installed");
        return;
    }
    let Some(dir) = hundred::scratch() else {
        return;
    };
    if let Err(e) = build(dir.path()) {
        println!("SKIP: cannot build the program: {e}");
        return;
    }
    let out = dir.path().join("threads.txt");
    let p = match profile(dir.path(), &out, runs) {
        Ok(p) => p,
        Err(e) => {
            println!("FAIL: {e}");
            return;
        }
    };
    let own = match read_own(&out) {
        Ok(o) => o,
        Err(e) => {
            println!("FAIL: {}: {e}", out.display());
            return;
        }
    };
    let mut failed = false;
    let (mut measured, mut within, mut offs) = (0, 0, Vec::new());
    let (mut bounded, mut threads) = (0, 0);
    println!();
    println!("| run | threads' own CPU by their end | ldcost's (cpu_total_ns) | off | when the dlopen returned: ldcost's (cpu_at_return_ns) | the threads' bounds | threads within |");
    println!("|---:|---:|---:|---:|---:|---:|---|");
    for r in p
        .raw
        .iter()
        .filter(|r| r.instrumentation == Instrumentation::PerObject)
    {
        let Some(a) = &r.after_main else { continue };
        let Some(lib) = a
            .loaded()
            .map(|(_, l)| l)
            .find(|l| l.name.ends_with("/libT.so"))
        else {
            println!("FAIL: a measured run without libT.so loaded after main");
            failed = true;
            continue;
        };
        measured += 1;
        if lib.threads.len() != 4 {
            println!(
                "FAIL: run {measured}: {} threads charged to libT.so, not 4",
                lib.threads.len()
            );
            failed = true;
            continue;
        }
        let (mut theirs, mut ours, mut inside) = (0u64, 0u64, 0);
        let (mut at, mut lo, mut hi_sum) = (0u64, 0u64, 0u64);
        let mut missing = false;
        for t in &lib.threads {
            let (Some(o), Some(total)) = (own.get(&t.tid), t.cpu_total_ns) else {
                missing = true;
                continue;
            };
            theirs += o.end_cpu;
            ours += total;
            threads += 1;
            let hi = o.mark_cpu + o.returned_mono.saturating_sub(o.mark_mono);
            at += t.cpu_at_return_ns.unwrap_or(0);
            lo += o.mark_cpu;
            hi_sum += hi;
            if t.cpu_at_return_ns
                .is_some_and(|c| c >= o.mark_cpu && c <= hi)
            {
                inside += 1;
                bounded += 1;
            }
        }
        if missing {
            println!("FAIL: run {measured}: a thread without its own figures or ldcost's");
            failed = true;
            continue;
        }
        let off = ours as f64 / theirs as f64 - 1.0;
        offs.push(off);
        within += (off.abs() <= GOAL) as usize;
        println!(
            "| {measured} | {:.3} ms | {:.3} ms | {:+.2}% | {:.3} ms | {:.3}–{:.3} ms | {inside} of 4 |",
            theirs as f64 / 1e6,
            ours as f64 / 1e6,
            off * 100.0,
            at as f64 / 1e6,
            lo as f64 / 1e6,
            hi_sum as f64 / 1e6
        );
    }
    if measured == 0 {
        println!("FAIL: no measured run");
        return;
    }
    println!();
    let by_end = within == measured && !failed;
    let at_return = bounded == threads && threads == 4 * measured;
    println!(
        "by the end: {within} of {measured} runs within {:.0}% (median off {:+.2}%): {}",
        GOAL * 100.0,
        ldcost::stats::median_mut(&mut offs) * 100.0,
        if by_end { "PASS" } else { "FAIL" }
    );
    println!(
        "at return: {bounded} of {} threads within their bounds: {}",
        4 * measured,
        if at_return { "PASS" } else { "FAIL" }
    );
    println!();
    println!("{}", if by_end && at_return { "PASS" } else { "FAIL" });
}

fn build(d: &Path) -> Result<(), String> {
    let lib = LIB
        .replace("SPIN_MS", &SPIN_MS.to_string())
        .replace("MARK_MS", &MARK_MS.to_string());
    std::fs::write(d.join("libT.c"), lib).map_err(|e| e.to_string())?;
    hundred::cc(
        d,
        &[
            "-shared", "-fPIC", "-O1", "-o", "libT.so", "libT.c", "-pthread",
        ],
    )?;
    std::fs::write(d.join("prog.c"), PROG).map_err(|e| e.to_string())?;
    hundred::cc(d, &["-O1", "-o", "prog", "prog.c", "-ldl"])
}

/// `ldcost profile -n runs --json` of the program; every run appends its threads' own figures
/// to `out`.
fn profile(d: &Path, out: &Path, runs: usize) -> Result<ProfileSection, String> {
    let json = d.join("profile.json");
    let st = Command::new(BIN)
        .args(["profile", "-n"])
        .arg(runs.to_string())
        .args(["--no-ld-debug", "--quiet-target", "--json"])
        .arg(&json)
        .arg(d.join("prog"))
        .arg(d.join("libT.so"))
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("ldcost: {e}"))?;
    if !st.success() {
        return Err(format!("ldcost profile exited with {st}"));
    }
    let text = std::fs::read(&json).map_err(|e| format!("{}: {e}", json.display()))?;
    hundred::profile_of(&text)
}

/// The threads' own figures by thread id.
fn read_own(path: &Path) -> Result<BTreeMap<i32, Own>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<u64> = line
            .split_whitespace()
            .map(|x| x.parse().map_err(|e| format!("{line:?}: {e}")))
            .collect::<Result<_, _>>()?;
        let [tid, mark_cpu, mark_mono, end_cpu, returned_mono] = f[..] else {
            return Err(format!("{line:?}: not five figures"));
        };
        out.insert(
            tid as i32,
            Own {
                mark_cpu,
                mark_mono,
                end_cpu,
                returned_mono,
            },
        );
    }
    Ok(out)
}
