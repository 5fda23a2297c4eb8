//! Page faults by kind in the fork loop (`fork.faults` of the JSON, counted by ldcost with the
//! exceptions:page_fault_user tracepoint) against `perf stat` counting the same tracepoint with
//! the same error-code filter over two whole ldcost runs that differ only in the number of
//! forks: the difference divided by the difference in children made (`children_total`) is the
//! oracle's per-fork figure. The children call libc `exit` (`--child exit`), which faults in
//! more of the program's pages than `_exit` (8 copy-on-write and 5 file-backed per fork here).
//! ldcost's own faults are nearly the same in both runs (it reads 336 bytes more per extra
//! fork: about 0.1 fault per fork, all "not present", none copy-on-write).
//!
//! The file-backed share of the not-present faults is checked the same way, with perf stat's
//! filter on the address built from `readelf -lW`: the static, non-PIE forktime's PT_LOAD
//! segments, page-rounded from p_vaddr to p_vaddr + p_filesz, are its only file mappings
//! (ldcost, PIE, has nothing mapped there).

mod common;

use std::path::Path;
use std::process::Command;

const COW: &str = "error_code & 1 && error_code & 2";

/// The file-backed ranges of a static non-PIE executable, from `readelf -lW`: each PT_LOAD
/// from its page-rounded-down p_vaddr to p_vaddr + p_filesz rounded up.
fn load_ranges(bin: &Path) -> Vec<(u64, u64)> {
    let text = common::stdout_of("readelf", &["-lW", bin.to_str().unwrap()]);
    assert!(
        text.contains("Type: EXEC") || text.contains("EXEC ("),
        "non-PIE:\n{text}"
    );
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    text.lines()
        .filter(|l| l.trim_start().starts_with("LOAD "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // LOAD Offset VirtAddr PhysAddr FileSiz MemSiz Flg Align
            let (vaddr, filesz) = (hex(f[2]), hex(f[4]));
            (vaddr & !0xfff, (vaddr + filesz + 0xfff) & !0xfff)
        })
        .filter(|(a, b)| a < b)
        .collect()
}

/// perf stat over one ldcost run of `forks`: (copy-on-write, all, not present in `ranges`)
/// faults, and ldcost's `fork` section.
fn perf_stat(
    dir: &Path,
    forks: u32,
    bin: &Path,
    ranges: &[(u64, u64)],
) -> (f64, f64, f64, serde_json::Value) {
    let json = dir.join(format!("f{forks}.json"));
    let terms: Vec<String> = ranges
        .iter()
        .map(|(a, b)| format!("(address >= {a:#x} && address < {b:#x})"))
        .collect();
    let file = format!("!(error_code & 1) && ({})", terms.join(" || "));
    let out = Command::new("perf")
        .args([
            "stat",
            "-x,",
            "-e",
            "exceptions:page_fault_user",
            "--filter",
            COW,
        ])
        .args(["-e", "exceptions:page_fault_user"])
        .args(["-e", "exceptions:page_fault_user", "--filter", &file, "--"])
        .arg(env!("CARGO_BIN_EXE_ldcost"))
        .args([
            "profile",
            "--no-exec",
            "--quiet-target",
            "--child",
            "exit",
            "--fork",
        ])
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
        3,
        "perf stat output: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (counts[0], counts[1], counts[2], doc["fork"].clone())
}

#[test]
fn fault_kinds_per_fork_agree_with_perf_stat() {
    let name = "fault_kinds_per_fork_agree_with_perf_stat";
    if !common::tools(name, &["cc", "perf", "readelf"]) {
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
    let ranges = load_ranges(&bin);
    assert!(!ranges.is_empty(), "forktime has PT_LOAD segments");
    let (cow1, all1, file1, f1) = perf_stat(dir.path(), 1000, &bin, &ranges);
    let (cow3, all3, file3, f3) = perf_stat(dir.path(), 3000, &bin, &ranges);
    // Every child the probe made (the measured loop and the loop that counts fault kinds).
    let forks = f3["children_total"].as_f64().unwrap() - f1["children_total"].as_f64().unwrap();
    assert!(forks >= 2000.0, "children: {f1} {f3}");
    let perf_cow = (cow3 - cow1) / forks;
    let perf_all = (all3 - all1) / forks;
    let perf_file = (file3 - file1) / forks;
    for f in [&f1["faults"], &f3["faults"]] {
        let cow = f["parent_cow"].as_f64().unwrap() + f["child_cow"].as_f64().unwrap();
        let all = cow
            + f["parent_not_present"].as_f64().unwrap()
            + f["child_not_present"].as_f64().unwrap();
        let file = f["parent_file"].as_f64().expect("file faults counted")
            + f["child_file"].as_f64().expect("file faults counted");
        eprintln!(
            "ldcost: {cow:.3} cow, {all:.3} all, {file:.3} file-backed per fork; perf stat: \
             {perf_cow:.3} cow, {perf_all:.3} all, {perf_file:.3} file-backed"
        );
        assert!(file > 0.0, "a static child faults its text back in: {f}");
        assert!(
            (file - perf_file).abs() <= 0.25,
            "file-backed faults per fork: ldcost {file}, perf {perf_file}"
        );
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
