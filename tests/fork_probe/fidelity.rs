//! 6. Like for like with the seed forktest.
//!
//! Per fork, the probe's parent and children take the page faults forktest's own parent and
//! children take.
//!
//! The oracle is `perf stat -e minor-faults` of forktest run alone (no ldcost) with N forks
//! and with 0: the difference over N, for forktest's process alone (`-i`, no inheritance) and
//! for it with its children. Fault counts do not move with load; the rates, which do, are in
//! benches/fork_fidelity.rs.

use super::harness::*;

/// `perf stat -x, [-i] -e minor-faults -- exe n`: the count.
fn minor_faults(exe: &Path, n: &str, inherit: bool) -> Option<f64> {
    let mut cmd = Command::new("perf");
    cmd.args(["stat", "-x,"]);
    if !inherit {
        cmd.arg("-i");
    }
    let out = cmd
        .args(["-e", "minor-faults", "--"])
        .arg(exe)
        .arg(n)
        .env_remove("LD_LIBRARY_PATH")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .ok()?;
    // perf stat sometimes ends before it has reaped its workload (see
    // the_perf_stat_oracle_leaves_no_zombie): the workload is then reparented to this process
    // (the subreaper) and would stay a zombie of ours for every later test's leftover check. The tests run one at a time and no ldcost runs now,
    // so every child of this process at this point is perf's.
    reap_orphans(Duration::from_secs(5));
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines()
        .find(|l| l.contains("minor-faults"))?
        .split(',')
        .next()?
        .trim()
        .parse()
        .ok()
}

#[test]
fn probe_faults_per_fork_equal_forktests_own() {
    let name = "probe_faults_per_fork_equal_forktests_own";
    let Some(mut case) = Case::new(name) else {
        return;
    };
    if !tools(name, &["perf"]) {
        return;
    }
    if minor_faults(Path::new("/bin/true"), "0", true).is_none() {
        skip(name, "perf stat cannot count minor-faults here");
        return;
    }
    const N: u64 = 500;
    let n = N.to_string();
    for linkage in [Linkage::Static, Linkage::Dynamic] {
        let Some(exe) = case.seed(name, Seed::Forktest, linkage) else {
            return;
        };
        let per_fork = |inherit: bool| {
            let a = minor_faults(&exe, &n, inherit).expect("perf stat of forktest N");
            let b = minor_faults(&exe, "0", inherit).expect("perf stat of forktest 0");
            (a - b) / N as f64
        };
        let (parent, total) = (per_fork(false), per_fork(true));
        let child = total - parent;
        // ldcost's probe at main; forktest's own loop then forks 0 times.
        let args = ["--fork", &n, "--child", "exit", "--at", "main"];
        let (out, fork) = profile(&case, &exe, &args, &["0"], &[]);
        let f = assert_forked(&out, &fork, N);
        let p = f
            .per_fork
            .parent_minor_faults
            .expect("parent faults")
            .median;
        let c = f.per_fork.child_minor_faults.expect("child faults").median;
        // The parent: within 1. Whether the loop's frames straddle a stack page (ASLR, the
        // environment's size) adds one copy-on-write fault per fork, to either side (2 or 3
        // seen for each).
        assert!(
            (p - parent).abs() <= 1.1,
            "{linkage:?}: the probe's parent faults {p} per fork, forktest's own {parent:.3}"
        );
        // The children: within 20% + 1. The probe's child also redirects its stdio to
        // /dev/null and runs from the probe's page, and where the stack pointer sits in its page
        // (ASLR, the environment's size) decides whether the frames straddle a page: 12 to 15
        // seen for 12-13 of forktest's, and once, under the whole suite, 27 for 22.994 (dynamic,
        // not yet explained; tests/fork_faults.rs says more on the layout).
        assert!(
            (c - child).abs() <= 0.2 * child + 1.0,
            "{linkage:?}: the probe's children fault {c} times, forktest's {child:.3}"
        );
    }
    case.finish();
}

/// The oracle itself leaves nothing. `perf stat` (6.1) sometimes ends without reaping its
/// workload, the more often the sooner the workload exits (a race with its SIGCHLD handler,
/// by our reading of perf's source; not confirmed with the perf maintainers).
/// The workload is then reparented to this process (the subreaper), and an unreaped zombie of
/// ours fails every later test's leftover check (one `true` zombie has failed six later
/// tests). A static program that returns at once makes the race likely (20% of runs
/// of a C loop here; fewer from this process); 300 runs make it near certain to occur.
#[test]
fn the_perf_stat_oracle_leaves_no_zombie() {
    let name = "the_perf_stat_oracle_leaves_no_zombie";
    let Some(mut case) = Case::new(name) else {
        return;
    };
    if !tools(name, &["perf"]) {
        return;
    }
    let exe = case.build("quick-s", "int main(void) { return 0; }\n", &["-static"]);
    for _ in 0..300 {
        if minor_faults(&exe, "0", true).is_none() {
            skip(name, "perf stat cannot count minor-faults here");
            return;
        }
    }
    case.finish();
}
