//! The exec runs put ldcost and the target on one CPU; `--no-pin` leaves them to the
//! scheduler (src/trace/pin.rs says why: a ptrace stop costs ~3 µs instead of ~15 µs on an
//! idle VM, a figure for `cargo bench --bench overhead`, not for a test).
//!
//! | case | expectation |
//! | --- | --- |
//! | `profile -n 1 -- grep Cpus_allowed_list /proc/self/status` | the target's own line names exactly one CPU, one the test process may run on |
//! | the same with `--no-pin` | the target's line equals the test process's own |
//!
//! The oracle is the kernel's `/proc/self/status`, read by `grep` inside the target. With one
//! allowed CPU the two cases cannot differ: SKIP. Profiling refused (exit 8): SKIP.

mod common;

use common::{ldcost, skip};

fn allowed_list(status: &str) -> Option<String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

/// The CPUs in a list such as `0-1,4`.
fn cpus(list: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap()),
            None => out.push(part.parse().unwrap()),
        }
    }
    out
}

fn target_list(extra: &[&str]) -> Option<String> {
    let mut args = extra.to_vec();
    args.extend([
        "profile",
        "-n",
        "1",
        "--no-reference",
        "--no-ld-debug",
        "--",
        "/bin/grep",
        "Cpus_allowed_list",
        "/proc/self/status",
    ]);
    let out = ldcost(&args);
    if out.code == 8 {
        return None;
    }
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The target's output is shown once (the first measured run's), before the report.
    let line = allowed_list(&out.stdout);
    assert!(line.is_some(), "no line of the target's in {}", out.stdout);
    line
}

#[test]
fn exec_runs_are_pinned_to_one_cpu_unless_told_not_to() {
    let test = "exec_runs_are_pinned_to_one_cpu_unless_told_not_to";
    let own = allowed_list(&std::fs::read_to_string("/proc/self/status").unwrap()).unwrap();
    let mine = cpus(&own);
    if mine.len() < 2 {
        skip(
            test,
            "this process may run on one CPU only: pinned and unpinned look alike",
        );
        return;
    }
    let Some(pinned) = target_list(&[]) else {
        skip(
            test,
            "ldcost profile is refused here (exit 8: ptrace or perf)",
        );
        return;
    };
    let one = cpus(&pinned);
    assert_eq!(one.len(), 1, "the target may run on {pinned}, not one CPU");
    assert!(
        mine.contains(&one[0]),
        "{pinned} is outside this process's {own}"
    );
    let free = target_list(&["--no-pin"]).unwrap();
    assert_eq!(
        free, own,
        "with --no-pin the target's mask is the launcher's"
    );
}

#[test]
fn cpu_lists_parse() {
    assert_eq!(cpus("0-1,4"), vec![0, 1, 4]);
    assert_eq!(cpus("3"), vec![3]);
}
