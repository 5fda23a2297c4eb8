//! Page faults by kind in the fork loop (`fork.faults` of the JSON, counted by ldcost with the
//! exceptions:page_fault_user tracepoint) against `perf stat` counting the same tracepoint with
//! the same error-code filter over two whole ldcost runs that differ only in the number of
//! forks: the difference divided by the difference in children made (`children_total`) is the
//! oracle's per-fork figure.
//! ldcost's own faults are nearly the same in both runs (it reads 336 bytes more per extra
//! fork: about 0.1 fault per fork, all "not present", none copy-on-write).

mod common;

use std::path::Path;
use std::process::Command;

const COW: &str = "error_code & 1 && error_code & 2";

fn perf_stat(dir: &Path, forks: u32, bin: &Path) -> (f64, f64, serde_json::Value) {
    let json = dir.join(format!("f{forks}.json"));
    let out = Command::new("perf")
        .args([
            "stat",
            "-x,",
            "-e",
            "exceptions:page_fault_user",
            "--filter",
            COW,
        ])
        .args(["-e", "exceptions:page_fault_user", "--"])
        .arg(env!("CARGO_BIN_EXE_ldcost"))
        .args(["profile", "--no-exec", "--quiet-target", "--fork"])
        .arg(forks.to_string())
        .arg("--json")
        .arg(&json)
        .arg(bin)
        .args(["--", "0"])
        .output()
        .expect("run perf stat");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let counts: Vec<f64> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("exceptions:page_fault_user"))
        .filter_map(|l| l.split(',').next()?.parse().ok())
        .collect();
    assert_eq!(
        counts.len(),
        2,
        "perf stat output: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (counts[0], counts[1], doc["fork"].clone())
}

#[test]
fn fault_kinds_per_fork_agree_with_perf_stat() {
    let name = "fault_kinds_per_fork_agree_with_perf_stat";
    if !common::tools(name, &["cc", "perf"]) {
        return;
    }
    if unsafe { nix::libc::geteuid() } != 0 {
        common::skip(name, "needs root (tracepoints)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = ldcost::experiment::seeds::build(
        ldcost::experiment::seeds::Seed::Forktime,
        ldcost::experiment::seeds::Linkage::Static,
        &[],
        dir.path(),
    )
    .expect("build forktime");
    let (cow1, all1, f1) = perf_stat(dir.path(), 1000, &bin);
    let (cow3, all3, f3) = perf_stat(dir.path(), 3000, &bin);
    // Every child the probe made (the measured loop and the loop that counts fault kinds).
    let forks = f3["children_total"].as_f64().unwrap() - f1["children_total"].as_f64().unwrap();
    assert!(forks >= 2000.0, "children: {f1} {f3}");
    let perf_cow = (cow3 - cow1) / forks;
    let perf_all = (all3 - all1) / forks;
    for f in [&f1["faults"], &f3["faults"]] {
        let cow = f["parent_cow"].as_f64().unwrap() + f["child_cow"].as_f64().unwrap();
        let all = cow
            + f["parent_not_present"].as_f64().unwrap()
            + f["child_not_present"].as_f64().unwrap();
        eprintln!("ldcost: {cow:.3} cow, {all:.3} all per fork; perf stat: {perf_cow:.3} cow, {perf_all:.3} all");
        assert!(cow > 0.0, "a fork loop makes copy-on-write faults: {f}");
        assert!(
            (cow - perf_cow).abs() <= 0.25,
            "cow per fork: ldcost {cow}, perf {perf_cow}"
        );
        assert!(
            (all - perf_all).abs() <= 0.5,
            "faults per fork: ldcost {all}, perf {perf_all}"
        );
    }
}
