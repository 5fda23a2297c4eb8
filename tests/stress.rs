//! The option matrix at its extremes: no combination of documented options makes ldcost run
//! away. Each case is bounded by a hang guard (killed and failed after [`GUARD`]) and an RSS
//! ceiling (ldcost's peak resident set, `ru_maxrss` from wait4, against [`RSS_CEILING_KB`]).
//! These are bounds, not benchmarks: the ceilings are far above what a healthy run uses, and
//! far below what the unbounded sampler reached (57 minutes, 3 GB at 100 kHz on /bin/true).
//! The cases use the bounds themselves (--sample-deadline, --timeout) to stay short; the
//! whole file runs in about a minute here.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::QUICK;

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");
const GUARD: Duration = Duration::from_secs(120);
/// The default sampling budget is 256 MiB; ldcost itself needs some tens of MiB more.
const RSS_CEILING_KB: i64 = 512 * 1024;

struct Outcome {
    code: i32,
    maxrss_kb: i64,
    wall: Duration,
    stdout: String,
    stderr: String,
}

fn root(name: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { nix::libc::geteuid() } != 0 {
        common::skip(name, "needs root (ptrace, system-wide sampling)");
        return false;
    }
    true
}

/// Runs ldcost under the hang guard and reads its peak RSS from wait4.
// The child is reaped by wait4 (for its rusage), which clippy cannot see.
#[allow(clippy::zombie_processes)]
fn bounded(name: &str, args: &[&str]) -> Outcome {
    let dir = tempfile::tempdir().expect("tempdir");
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let t0 = Instant::now();
    let child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("out"))
        .stderr(std::fs::File::create(&err).expect("err"))
        .spawn()
        .expect("spawn ldcost");
    let pid = child.id() as i32;
    let (status, maxrss_kb) = loop {
        let mut status = 0;
        // SAFETY: a zeroed rusage is a valid out-parameter.
        let mut ru: nix::libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: wait4 on our own child with valid pointers.
        let r = unsafe { nix::libc::wait4(pid, &mut status, nix::libc::WNOHANG, &mut ru) };
        if r == pid {
            break (status, ru.ru_maxrss);
        }
        assert!(r == 0, "{name}: wait4 failed");
        if t0.elapsed() > GUARD {
            // SAFETY: plain kill of our own child.
            unsafe { nix::libc::kill(pid, nix::libc::SIGKILL) };
            let _ = unsafe { nix::libc::waitpid(pid, &mut status, 0) };
            panic!("{name}: ldcost still running after {GUARD:?} (hang guard)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let code = if nix::libc::WIFEXITED(status) {
        nix::libc::WEXITSTATUS(status)
    } else {
        -1
    };
    let o = Outcome {
        code,
        maxrss_kb,
        wall: t0.elapsed(),
        stdout: std::fs::read_to_string(out).unwrap_or_default(),
        stderr: std::fs::read_to_string(err).unwrap_or_default(),
    };
    eprintln!(
        "NOTE {name}: exit {} in {:.1} s, peak RSS {} MiB",
        o.code,
        o.wall.as_secs_f64(),
        o.maxrss_kb / 1024
    );
    assert!(
        o.maxrss_kb < RSS_CEILING_KB,
        "{name}: peak RSS {} KiB over the ceiling",
        o.maxrss_kb
    );
    o
}

fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut v: Vec<&str> = QUICK.to_vec();
    v.extend(extra);
    v
}

/// [`bounded`] `QUICK --sample --sample-runs RUNS EXTRA...`.
fn sampled(name: &str, runs: &str, extra: &[&str]) -> Outcome {
    let mut v = vec!["--sample", "--sample-runs", runs];
    v.extend(extra);
    bounded(name, &args(&v))
}

#[test]
fn the_highest_frequency_is_capped_and_bounded() {
    const NAME: &str = "the_highest_frequency_is_capped_and_bounded";
    if !root(NAME) {
        return;
    }
    // The kernel's ceiling, before and after: it lowers it by itself when a sample's
    // interrupt takes too long (a loaded machine), possibly during the run.
    let sysctl = || -> u64 {
        std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(u64::MAX)
    };
    let before = sysctl();
    let o = bounded(
        NAME,
        &args(&[
            "--sample",
            "--frequency",
            "1000000",
            "--sample-runs",
            "2",
            "/bin/true",
        ]),
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    // The default ceiling (config::MAX_FREQUENCY_HZ) or the kernel's, never the asked 1 MHz.
    let after = sysctl();
    let said = |hz: u64| o.stdout.contains(&format!(" at {hz} Hz"));
    assert!(
        said(20_000.min(before)) || said(20_000.min(after)),
        "want {} Hz (kernel ceiling {before} before, {after} after):\n{}",
        20_000.min(before),
        o.stdout
    );
}

#[test]
fn ten_thousand_sampled_runs_stop_at_the_deadline() {
    const NAME: &str = "ten_thousand_sampled_runs_stop_at_the_deadline";
    if !root(NAME) {
        return;
    }
    // 10,000 runs of /bin/true take 30 s and more of the runs' own time even pinned to one CPU
    // on a quiet machine (about 3–4 ms each: 1000 of them once fitted in a 5 s deadline), so
    // a 2 s deadline always stops them.
    let o = sampled(NAME, "10000", &["--sample-deadline", "2", "/bin/true"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("of 10000 sampled runs") && o.stdout.contains("--sample-deadline"),
        "{}",
        o.stdout
    );
}

#[test]
fn the_sample_budget_is_reached_and_said() {
    const NAME: &str = "the_sample_budget_is_reached_and_said";
    if !root(NAME) || !common::tools(NAME, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    // 2 s of its own CPU, whatever the host's speed: at 10 kHz 20000 samples, four times what
    // the budget's 512 KiB of kept records hold (~5000 samples of ~100 bytes). A fixed count
    // of iterations took 1.5 s on one host and 0.46 s on another, where only 4641 samples
    // were taken and the budget was never reached.
    let src = common::write(
        dir.path(),
        "spin.c",
        "#include <time.h>\nint main(void){volatile unsigned long x=0;while(clock()<2*CLOCKS_PER_SEC)for(int i=0;i<1000000;i++)x+=i;return (int)(x&1);}\n",
    );
    let exe = dir.path().join("spin");
    common::cc(
        dir.path(),
        &[
            "-O1",
            "-o",
            exe.to_str().expect("utf-8"),
            src.to_str().expect("utf-8"),
        ],
    );
    let o = sampled(
        NAME,
        "1",
        // The sampling notes are part of the long report.
        &[
            "--sample-budget",
            "1",
            "--detail",
            exe.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("samples dropped: budget"), "{}", o.stdout);
}

#[test]
fn a_million_forks_are_bounded_by_the_timeout() {
    const NAME: &str = "a_million_forks_are_bounded_by_the_timeout";
    if !root(NAME) {
        return;
    }
    let o = bounded(
        NAME,
        &[
            "profile",
            "--fork",
            "1000000",
            "--no-exec",
            "--timeout",
            "5",
            "--quiet-target",
            "/bin/true",
        ],
    );
    // Either the loop finished inside 5 s (a fast machine) or it was stopped: exit 9.
    assert!(o.code == 0 || o.code == 9, "{}: {}", o.code, o.stderr);
    if o.code == 9 {
        assert_eq!(o.stderr.lines().count(), 2, "{}", o.stderr);
    }
}

#[test]
fn a_target_forking_a_thousand_children_is_measured_and_bounded() {
    const NAME: &str = "a_target_forking_a_thousand_children_is_measured_and_bounded";
    if !root(NAME) {
        return;
    }
    let o = sampled(
        NAME,
        "1",
        &[
            "/bin/sh",
            "-c",
            "i=0; while [ $i -lt 1000 ]; do /bin/true & i=$((i+1)); done; wait",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
}

#[test]
fn a_target_that_never_exits_is_killed_at_the_timeout() {
    const NAME: &str = "a_target_that_never_exits_is_killed_at_the_timeout";
    if !root(NAME) {
        return;
    }
    let marker = format!("ldcost-stress-forever-{}", std::process::id());
    let script = format!("while :; do sleep 1; done; : {marker}");
    let o = bounded(
        NAME,
        &[
            "profile",
            "-n",
            "3",
            "--timeout",
            "2",
            "--quiet-target",
            "/bin/sh",
            "-c",
            &script,
        ],
    );
    assert_eq!(o.code, 9, "{}", o.stderr);
    assert!(o.stderr.contains("--timeout"), "{}", o.stderr);
    // Nothing of the tree is left (sleep children included).
    let left: Vec<String> = std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| {
                let p = e.ok()?.path();
                let c = std::fs::read(p.join("cmdline")).ok()?;
                String::from_utf8_lossy(&c)
                    .contains(&marker)
                    .then(|| p.display().to_string())
            })
            .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}
