//! `ldcost experiment` under faults: a disk that fills between two experiments, and SIGINT or
//! SIGTERM at three moments of its quickest useful
//! run (`experiment byte --quick`: two programs built, then each run for short samples):
//! right after it announced the experiment, while `cc` builds, while a built program is
//! measured. Each moment is found by watching ldcost: its first line on standard error, then
//! /proc for a `cc` or a `byte_*` process whose command line holds the test's own TMPDIR (so
//! no other test's processes count).
//!
//! Oracles: exit 130 and the `interrupted` message other commands print; no
//! `ldcost-experiment-*` directory left in TMPDIR; no process of the run left (by that
//! command line); no partial report file in `--out`.
//!
//! The full disk (root: a small tmpfs as `--out`): filled as soon as the first experiment's
//! results.json appears there. Oracles: that results.json still holds the first experiment,
//! complete; the report of both is printed on standard output; exit 7 naming the file.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{describe, processes, skip, tools};
use nix::sys::signal::Signal;

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");
/// The hang guard: a moment not seen, or ldcost not stopping, fails after this.
const GUARD: Duration = Duration::from_secs(120);

/// Processes whose command line starts with a program named `names[i]…` and holds `marker`.
fn running(names: &[&str], marker: &str) -> bool {
    processes().iter().any(|p| {
        p.state != 'Z'
            && p.cmdline.contains(marker)
            && names.iter().any(|n| {
                Path::new(p.cmdline.split(' ').next().unwrap_or(""))
                    .file_name()
                    .and_then(|f| f.to_str())
                    .is_some_and(|f| f.starts_with(n))
            })
    })
}

/// Runs `experiment byte --quick` with a private TMPDIR, signals it at `moment`, and checks
/// what it left.
fn interrupt_at(name: &str, moment: &str, signal: Signal) {
    if !tools(name, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let tmp = dir.path().join("tmp");
    let out = dir.path().join("out");
    std::fs::create_dir(&tmp).expect("mkdir tmp");
    let marker = tmp.to_str().expect("utf-8").to_string();
    let mut child = Command::new(BIN)
        .args(["--no-progress", "experiment", "byte", "--quick", "--out"])
        .arg(&out)
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ldcost");
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let mut first = String::new();
    err.read_line(&mut first).expect("read stderr");
    assert!(
        first.starts_with("ldcost: experiment 1/1: byte"),
        "first line: {first:?}"
    );
    let t0 = Instant::now();
    let watched: &[&str] = match moment {
        "early" => &[],
        "building" => &["cc"],
        "measuring" => &["byte_spawn", "byte_execl"],
        _ => unreachable!("no such moment"),
    };
    while !watched.is_empty() && !running(watched, &marker) {
        if let Some(st) = child.try_wait().expect("try_wait") {
            panic!("{moment}: ldcost ended ({st}) before the moment was seen");
        }
        assert!(t0.elapsed() < GUARD, "{moment}: never seen");
        std::thread::sleep(Duration::from_millis(1));
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal)
        .expect("signal ldcost");
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if t0.elapsed() > GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{moment}: ldcost still running after {signal} (hang guard)");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut err, &mut rest);
    assert_eq!(status.code(), Some(130), "{moment}: {first}{rest}");
    assert!(
        rest.contains("ldcost: error: interrupted"),
        "{moment}: {first}{rest}"
    );
    // ldcost's own kill of the experiment is not the experiment failing.
    assert!(!rest.contains(": failed after"), "{moment}: {first}{rest}");
    let temp: Vec<_> = std::fs::read_dir(&tmp)
        .expect("read tmp")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(temp.is_empty(), "{moment}: left in TMPDIR: {temp:?}");
    // A process killed a moment ago may still be on its way out: up to 5 s.
    let t1 = Instant::now();
    loop {
        let left: Vec<_> = processes()
            .into_iter()
            .filter(|p| p.cmdline.contains(&marker))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            t1.elapsed() < Duration::from_secs(5),
            "{moment}: left running:\n{}",
            describe(&left)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let partial: Vec<_> = std::fs::read_dir(&out)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    assert!(partial.is_empty(), "{moment}: partial files: {partial:?}");
}

#[test]
fn experiment_interrupted_early_exits_130_and_leaves_nothing() {
    interrupt_at(
        "experiment_interrupted_early_exits_130_and_leaves_nothing",
        "early",
        Signal::SIGINT,
    );
}

#[test]
fn experiment_interrupted_while_building_exits_130_and_leaves_nothing() {
    interrupt_at(
        "experiment_interrupted_while_building_exits_130_and_leaves_nothing",
        "building",
        Signal::SIGINT,
    );
}

#[test]
fn experiment_terminated_while_measuring_exits_130_and_leaves_nothing() {
    interrupt_at(
        "experiment_terminated_while_measuring_exits_130_and_leaves_nothing",
        "measuring",
        Signal::SIGTERM,
    );
}

#[test]
fn a_disk_that_fills_keeps_the_finished_results_and_prints_the_report() {
    const NAME: &str = "a_disk_that_fills_keeps_the_finished_results_and_prints_the_report";
    if !common::running_as_root() {
        return skip(NAME, "needs root to mount a small tmpfs");
    }
    if !tools(NAME, &["cc", "mount"]) {
        return;
    }
    let Some(fs) = common::Tmpfs::mount("size=2m") else {
        return skip(NAME, "mount -t tmpfs failed");
    };
    let out = fs.path();
    let results = out.join("results.json");
    let child = Command::new(BIN)
        .args([
            "--no-progress",
            "experiment",
            "forktime",
            "byte",
            "--quick",
            "--out",
        ])
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ldcost");
    let pid = child.id();
    let done = common::reap_on_thread(child);
    // The first experiment's results are on disk (renamed into place: complete): fill it.
    let t0 = Instant::now();
    while !std::fs::read_to_string(&results).is_ok_and(|t| t.contains("\"forktime\"")) {
        assert!(t0.elapsed() < GUARD, "results.json never appeared");
        std::thread::sleep(Duration::from_millis(2));
    }
    {
        use std::io::Write;
        let mut f = std::fs::File::create(out.join("fill")).expect("create fill");
        while f.write_all(&[0u8; 4096]).is_ok() {}
    }
    let (code, stdout, stderr) = done.recv_timeout(GUARD).unwrap_or_else(|_| {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), Signal::SIGKILL);
        panic!("ldcost still running (hang guard)")
    });
    let stdout = String::from_utf8_lossy(&stdout);
    assert_eq!(code, Some(7), "{stderr}");
    let last = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("ldcost: error: "));
    assert!(
        last.is_some_and(
            |l| l.contains(&out.display().to_string()) && l.contains("No space left on device")
        ),
        "{stderr}"
    );
    // Both experiments' results reached the user.
    for name in ["forktime", "byte"] {
        assert!(stdout.contains(name), "{name} not printed:\n{stdout}");
    }
    // The first experiment's file is intact: the later, failed write did not touch it.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&results).expect("read results.json"))
            .expect("results.json is complete JSON");
    let names: Vec<&str> = doc["experiments"]
        .as_array()
        .expect("experiments")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names, ["forktime"]);
    assert_eq!(doc["experiments"][0]["ok"], true);
    let partial: Vec<String> = std::fs::read_dir(out)
        .expect("read out")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(partial.is_empty(), "partial files: {partial:?}");
}
