//! The fork/vfork A/B of `profile --fork` (`fork.spawn_ab`) against `perf stat -e task-clock`
//! of a C program that touches the same amount of memory and then forks or vforks N times,
//! each child doing `_exit(0)`. A benchmark, not a test: the figures are CPU times, which move
//! with the load on a shared 2-vCPU VM.
//!
//! Run with `cargo bench --bench spawn_ab` (release profile, as root, with perf and cc).
//!
//! Each round: `ldcost profile LARGE --fork N --at exit --child _exit --no-exec --json J`
//! (LARGE touches `LDCOST_BENCH_MIB` MiB, default 256, and exits), then the oracle program
//! once per method: it touches as much memory, says "ready" and waits on its stdin; `perf stat
//! -e task-clock --no-inherit -p PID` is attached, the program is released, runs N forks (or
//! vforks) and waits on its stdin again, and perf stat is stopped before the program exits
//! (its exit teardown of the memory is not counted). The oracle's figure per child is the
//! parent's task-clock over N (a mean); ldcost's is the median of the per-child parent CPU
//! (getrusage differences). The probe's three clock reads, wait4's rusage and the getrusage
//! per child, and the ptrace attachment, add nothing that stands out of the noise of a C loop
//! doing the same vforks (docs/benchmarks.md), so the two agree on an unloaded machine; under
//! load a round's figures move with the load average, printed per round.
//!
//! PASS per method when the median over rounds of ldcost's median is within 25% (or 5 µs) of
//! the median of the oracle's figures. Also PASS/FAIL: fork costs more than vfork in both.
//!
//! Environment: `LDCOST_BENCH_ROUNDS` (default 5), `LDCOST_BENCH_FORKS` (default 200),
//! `LDCOST_BENCH_MIB` (default 256).

#[path = "../tests/common/mod.rs"]
mod common;

#[path = "support/child.rs"]
#[allow(dead_code)]
mod child;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use ldcost::report::Document;

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");

const LARGE: &str = r#"
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
int main(int argc, char **argv) {
    long size = atol(argv[1]) << 20;
    char *p = mmap(0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 1;
    madvise(p, size, MADV_NOHUGEPAGE);
    memset(p, 1, size);
    return p[size - 1] == 1 ? 0 : 2;
}
"#;

/// `oracle MIB N fork|vfork`: touch, "ready", wait, N children, "done", wait, exit.
const ORACLE: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
int main(int argc, char **argv) {
    long size = atol(argv[1]) << 20, n = atol(argv[2]);
    int use_vfork = strcmp(argv[3], "vfork") == 0;
    char *p = mmap(0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char c;
    if (p == MAP_FAILED)
        return 1;
    madvise(p, size, MADV_NOHUGEPAGE);
    memset(p, 1, size);
    printf("ready\n");
    fflush(stdout);
    if (read(0, &c, 1) != 1)
        return 3;
    for (long i = 0; i < n; i++) {
        pid_t pid = use_vfork ? vfork() : fork();
        if (pid == 0)
            _exit(0);
        if (pid < 0 || waitpid(pid, 0, 0) != pid)
            return 4;
    }
    printf("done\n");
    fflush(stdout);
    if (read(0, &c, 1) != 1)
        return 5;
    return p[size - 1] == 1 ? 0 : 2;
}
"#;

fn main() {
    if !common::running_as_root() || !common::have("cc") || !common::have("perf") {
        println!("SKIP spawn_ab: needs root (ptrace), cc and perf");
        return;
    }
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .filter(|&v| v > 0)
            .unwrap_or(d)
    };
    let (rounds, n, mib) = (
        env("LDCOST_BENCH_ROUNDS", 5),
        env("LDCOST_BENCH_FORKS", 200),
        env("LDCOST_BENCH_MIB", 256),
    );
    let dir = tempfile::tempdir().expect("temporary directory");
    let d = dir.path();
    common::write(d, "large.c", LARGE);
    common::write(d, "oracle.c", ORACLE);
    common::cc(d, &["-O2", "-o", "large", "large.c"]);
    common::cc(d, &["-O2", "-o", "oracle", "oracle.c"]);
    println!("spawn_ab: {rounds} rounds, {n} children per side, {mib} MiB touched");
    println!(
        "per round: ldcost profile large --fork {n} --at exit --child _exit --no-exec; \
         perf stat -e task-clock --no-inherit -p PID over oracle's {n} forks, then {n} vforks"
    );
    let (mut lf, mut lv, mut of, mut ov) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for r in 0..rounds {
        let (f, v) = match ldcost(d, n, mib) {
            Ok(x) => x,
            Err(e) => {
                println!("FAIL spawn_ab: round {r}: ldcost: {e}");
                std::process::exit(1);
            }
        };
        let (pf, pv) = match (oracle(d, n, mib, "fork"), oracle(d, n, mib, "vfork")) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => {
                println!("SKIP spawn_ab: the perf stat oracle failed: {e}");
                return;
            }
        };
        println!(
            "round {r}: ldcost fork {:>8.1} µs vfork {:>6.1} µs | perf stat fork {:>8.1} µs vfork {:>6.1} µs | load average {}",
            f / 1e3,
            v / 1e3,
            pf / 1e3,
            pv / 1e3,
            child::loadavg()
        );
        lf.push(f);
        lv.push(v);
        of.push(pf);
        ov.push(pv);
    }
    let med = |v: &[f64]| ldcost::stats::median(v).unwrap_or(f64::NAN);
    let mut ok = true;
    println!();
    println!("| loop | ldcost parent CPU per child | perf stat task-clock per child | verdict |");
    println!("| --- | --- | --- | --- |");
    for (what, l, o) in [("fork", med(&lf), med(&of)), ("vfork", med(&lv), med(&ov))] {
        let pass = (l - o).abs() <= (0.25 * o).max(5_000.0);
        ok &= pass;
        println!(
            "| {what} | {:.1} µs | {:.1} µs | {} |",
            l / 1e3,
            o / 1e3,
            if pass { "PASS" } else { "FAIL" }
        );
    }
    let order = med(&lf) > med(&lv) && med(&of) > med(&ov);
    ok &= order;
    println!(
        "{} fork costs the parent more than vfork in both",
        if order { "PASS" } else { "FAIL" }
    );
    if !ok {
        std::process::exit(1);
    }
}

/// The medians of one profile's A/B: (fork, vfork) parent CPU per child, ns.
fn ldcost(d: &Path, n: u64, mib: u64) -> Result<(f64, f64), String> {
    let json = d.join("p.json");
    let out = Command::new(BIN)
        .args([
            "profile",
            "--fork",
            &n.to_string(),
            "--at",
            "exit",
            "--child",
            "_exit",
        ])
        .args(["--no-exec", "--quiet-target", "--no-progress", "--json"])
        .arg(&json)
        .arg(d.join("large"))
        .args(["--", &mib.to_string()])
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let doc: Document = serde_json::from_slice(&std::fs::read(&json).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let ab = doc
        .fork
        .and_then(|f| f.spawn_ab)
        .ok_or("no fork.spawn_ab in the document")?;
    match (ab.fork_parent_cpu_ns, ab.vfork_parent_cpu_ns) {
        (Some(f), Some(v)) => Ok((f.median, v.median)),
        _ => Err("the A/B has no parent CPU".into()),
    }
}

/// The oracle's parent task-clock per child (ns) for `method`.
fn oracle(d: &Path, n: u64, mib: u64, method: &str) -> Result<f64, String> {
    let mut prog = Command::new(d.join("oracle"))
        .args([mib.to_string(), n.to_string(), method.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdin = prog.stdin.take().unwrap();
    let mut lines = BufReader::new(prog.stdout.take().unwrap()).lines();
    let mut line = || lines.next().and_then(Result::ok).unwrap_or_default();
    let result = (|| {
        if line() != "ready" {
            return Err("the oracle did not start".to_string());
        }
        let perf = Command::new("perf")
            .args(["stat", "-x,", "-e", "task-clock", "--no-inherit", "-p"])
            .arg(prog.id().to_string())
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?;
        std::thread::sleep(Duration::from_millis(500));
        stdin.write_all(b"g").map_err(|e| e.to_string())?;
        let done = line();
        let pid = nix::unistd::Pid::from_raw(perf.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        let out = perf.wait_with_output().map_err(|e| e.to_string())?;
        if done != "done" {
            return Err("the oracle's loop failed".into());
        }
        let err = String::from_utf8_lossy(&out.stderr);
        let ms: f64 = err
            .lines()
            .find(|l| l.contains("task-clock"))
            .and_then(|l| l.split(',').next()?.parse().ok())
            .ok_or_else(|| format!("no task-clock in perf stat's output: {err}"))?;
        Ok(ms * 1e6 / n as f64)
    })();
    let _ = stdin.write_all(b"g");
    drop(stdin);
    let _ = prog.wait();
    result
}
