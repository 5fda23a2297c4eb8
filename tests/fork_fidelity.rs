//! The fidelity bar of the fork probe (issue 4): `ldcost profile --fork` run on the seed
//! forktest's own image must agree with forktest's own forks per second within 5%.
//!
//! forktest (probes/forktest.c, seed 001) is built static and dynamic with the seed's six
//! libraries (`seeds::SEED_LIBS`, linked --no-as-needed as in 2009). Each run is
//! `ldcost profile BIN --fork N --child exit --at main --no-exec --json J -- N`: the probe
//! forks forktest's image N times at main (children call exit, as forktest's do), then
//! forktest runs its own loop of N and prints its figure, `clock()`-based: forks per second of
//! the parent's CPU time, the same quantity as ldcost's `forks_per_sec_parent_cpu`. The two
//! figures of one run are compared.
//!
//! This machine is shared and noisy: two back-to-back loops of the *same* C fork loop in one
//! process differ by 8-12% (standard deviation of their ratio), whatever the loop length
//! (100 to 10000 forks). So the builds run interleaved (the order alternating from round to
//! round), many short runs each, and the bar is judged on the per-run ratios ldcost /
//! forktest: their median must be within 10% of 1, and the 95% bootstrap interval of that
//! median must reach into the 5% band: the test fails when the data show the probe
//! off by more than 5%, not when noise hides a smaller agreement. Every run's figures are
//! printed (with `--nocapture`), together with forktest run alone without ldcost, for reading
//! a failure. Also checked: static forktest forks faster than dynamic-with-libraries in
//! ldcost's own figures (the seed's finding).

mod common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{skip, tools};
use ldcost::attribute::fork_cost::ForkSection;
use ldcost::experiment::seeds::{
    build, parse_forktest_output, parse_forktest_wall, Linkage, Seed, SEED_LIBS,
};
use ldcost::report::Document;
use ldcost::trace::launch::Ending;

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");
/// Forks per run, by the probe and by forktest.
const N: u64 = 2_000;
/// Runs per build. On this VM two back-to-back loops of the same C program in one process
/// differ by 8-12% (standard deviation of their ratio, whatever the loop length from 100 to
/// 10000 forks): many short paired runs, not a few long ones, pin the median down.
const RUNS: usize = 21;
/// One ldcost run may not take longer (a hang is a failure).
const HANG: Duration = Duration::from_secs(900);

/// Runs `program args` (LD_LIBRARY_PATH removed: cargo sets it for tests) and returns its
/// exit code, stdout and stderr; kills it and fails after `limit`.
fn run(program: &Path, args: &[&str], limit: Duration) -> (Option<i32>, String, String) {
    let mut child = Command::new(program)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
    let pid = child.id() as i32;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut err = child.stderr.take().expect("stderr");
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let mut out = String::new();
        if let Some(mut o) = child.stdout.take() {
            let _ = o.read_to_string(&mut out);
        }
        let code = child.wait().ok().and_then(|s| s.code());
        let _ = tx.send((code, out, reader.join().unwrap_or_default()));
    });
    rx.recv_timeout(limit).unwrap_or_else(|_| {
        let pid = nix::unistd::Pid::from_raw(pid);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        panic!(
            "{} {args:?} did not end within {limit:?}",
            program.display()
        )
    })
}

/// The figures of one run.
#[derive(Debug)]
struct Figures {
    /// ldcost's forks per second of the parent's CPU time, and of wall time.
    ldcost_cpu: f64,
    ldcost_wall: f64,
    /// forktest's own, from the same run: `clock()`, and CLOCK_MONOTONIC.
    forktest_cpu: f64,
    forktest_wall: f64,
    /// forktest run alone, without ldcost, right after.
    alone_cpu: f64,
}

fn measure(exe: &Path, json: &Path) -> Figures {
    let n = N.to_string();
    let args = [
        "profile",
        exe.to_str().unwrap(),
        "--fork",
        &n,
        "--child",
        "exit",
        "--at",
        "main",
        "--no-exec",
        "--json",
        json.to_str().unwrap(),
        "--",
        &n,
    ];
    let (code, out, err) = run(Path::new(BIN), &args, HANG);
    assert_eq!(code, Some(0), "ldcost {args:?}:\n{err}");
    let doc: Document = serde_json::from_slice(&std::fs::read(json).unwrap()).expect("JSON");
    let f: ForkSection = doc.fork.expect("a fork section");
    assert_eq!((f.completed, f.error.as_deref()), (N, None));
    assert_eq!(
        f.child_endings,
        BTreeMap::from([("exited 0".to_string(), N)])
    );
    assert_eq!(
        f.target_ending,
        Ending::Exited(0),
        "forktest ran to its end"
    );
    let (_, alone, _) = run(exe, &[&n], HANG);
    Figures {
        ldcost_cpu: f.forks_per_sec_parent_cpu.expect("forks/s by parent CPU"),
        ldcost_wall: f.forks_per_sec_wall.expect("forks/s by wall time"),
        forktest_cpu: parse_forktest_output(&out)
            .unwrap_or_else(|| panic!("forktest's figure in ldcost's stdout:\n{out}")),
        forktest_wall: parse_forktest_wall(&out).expect("forktest's wall figure"),
        alone_cpu: parse_forktest_output(&alone).expect("forktest alone"),
    }
}

/// How far the median ratio may be from 1 (see the test's documentation).
const TOLERANCE: f64 = 0.10;
/// The bar: the interval of the median ratio must reach into 1 ± BAR.
const BAR: f64 = 0.05;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// ldcost's forks/s by the parent's CPU time agrees with forktest's `clock()` figure from
/// the same run (the median of the per-run ratios), static and dynamic with the seed's
/// libraries; and static forks faster than dynamic in ldcost's figures.
///
/// The bar is 5%. What this VM showed (2026-11-30, 30 runs of 2000 forks per build,
/// median of the per-run ratios): static 0.985 and 1.008, dynamic 1.027 and 0.993, once the
/// probe's records shared its one VMA and the measured loop ran last (before: static
/// 0.91-0.95, dynamic 0.92-0.99). A single run's ratio scatters by ±10-20%, so the test judges
/// the median and its 95% bootstrap interval: the median within [`TOLERANCE`], the interval
/// reaching into 1 ± [`BAR`] (it fails when the data show the probe off by more than 5%).
#[test]
fn fork_probe_agrees_with_forktest() {
    let name = "fork_probe_agrees_with_forktest";
    if !tools(name, &["cc"]) {
        return;
    }
    if !running_as_root() {
        return skip(name, "needs root (ptrace of forktest)");
    }
    let dir = tempfile::tempdir().unwrap();
    let mut builds: Vec<(&str, PathBuf)> = Vec::new();
    for (label, linkage, libs) in [
        ("static", Linkage::Static, &[][..]),
        ("dynamic+libs", Linkage::Dynamic, &SEED_LIBS[..]),
    ] {
        match build(Seed::Forktest, linkage, libs, dir.path()) {
            Ok(p) => builds.push((label, p)),
            Err(e) => return skip(name, &e.to_string()),
        }
    }
    let json = dir.path().join("fork.json");
    let mut figures: Vec<Vec<Figures>> = vec![Vec::new(), Vec::new()];
    for round in 0..RUNS {
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let (label, exe) = &builds[i];
            let f = measure(exe, &json);
            eprintln!(
                "round {round} {label:>12}: forks/s by parent CPU: ldcost {:>8.0}, forktest {:>8.0} \
                 (alone {:>8.0}), ratio {:.3}; by wall: ldcost {:>7.0}, forktest {:>7.0}",
                f.ldcost_cpu,
                f.forktest_cpu,
                f.alone_cpu,
                f.ldcost_cpu / f.forktest_cpu,
                f.ldcost_wall,
                f.forktest_wall
            );
            figures[i].push(f);
        }
    }
    let mut failures = Vec::new();
    let mut ldcost_medians = Vec::new();
    for (i, (label, _)) in builds.iter().enumerate() {
        let ratios: Vec<f64> = figures[i]
            .iter()
            .map(|f| f.ldcost_cpu / f.forktest_cpu)
            .collect();
        let summary = ldcost::attribute::stats::summarize(&ratios).expect("runs");
        let m = summary.median;
        eprintln!(
            "{label:>12}: ratio ldcost/forktest median {m:.3}, 95% CI [{:.3}, {:.3}], range \
             {:.3}-{:.3} over {} runs",
            summary.ci95.0, summary.ci95.1, summary.min, summary.max, summary.n
        );
        let ldcost = median(figures[i].iter().map(|f| f.ldcost_cpu).collect());
        let forktest = median(figures[i].iter().map(|f| f.forktest_cpu).collect());
        let alone = median(figures[i].iter().map(|f| f.alone_cpu).collect());
        eprintln!(
            "{label:>12}: ratios {ratios:.3?}; medians: ldcost {ldcost:.0}, forktest \
             {forktest:.0}, forktest alone {alone:.0} forks/s"
        );
        if (m - 1.0).abs() > TOLERANCE {
            failures.push(format!(
                "{label}: median ratio {m:.3} is not within {:.0}% of 1",
                TOLERANCE * 100.0
            ));
        }
        let (lo, hi) = summary.ci95;
        if hi < 1.0 - BAR || lo > 1.0 + BAR {
            failures.push(format!(
                "{label}: the 95% interval of the median ratio [{lo:.3}, {hi:.3}] lies outside \
                 the issue's {:.0}% band",
                BAR * 100.0
            ));
        }
        ldcost_medians.push(ldcost);
    }
    assert!(failures.is_empty(), "{}", failures.join("; "));
    assert!(
        ldcost_medians[0] > ldcost_medians[1],
        "static forktest forks faster than dynamic with the seed's libraries (ldcost's \
         medians: {:.0} vs {:.0} forks/s)",
        ldcost_medians[0],
        ldcost_medians[1]
    );
}
