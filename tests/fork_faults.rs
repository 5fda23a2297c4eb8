//! Page faults by kind in the fork loop (`fork.faults` of the JSON, counted by ldcost with the
//! exceptions:page_fault_user tracepoint) against `perf stat` counting the same tracepoint with
//! the same error-code filter over two whole ldcost runs that differ only in the number of
//! forks: the difference divided by the difference in children made (`children_total`) is the
//! oracle's per-fork figure. The children call libc `exit` (`--child exit`), which faults in
//! more of the program's pages than `_exit` (8 copy-on-write and 5 file-backed per fork here).
//! ldcost's own faults are nearly the same in both runs (it reads 336 bytes more per extra
//! fork: about 0.1 fault per fork, all "not present", none copy-on-write).
//!
//! Both runs are made with address-space randomisation off (`setarch -R`, inherited by the
//! target): the copy-on-write count depends on the layout. Where the target's stack pointer
//! sits in its page (randomised per run, and moved by the size of the environment) decides
//! whether the frames the loop writes straddle a page boundary: one more copy-on-write fault
//! in the parent and one in the child per fork (8 → 10 per fork). A pair of runs with
//! different layouts then gives perf stat's difference a figure neither run had (11.333 =
//! (5000 × 10 − 2000 × 8) / 3000); it read so on a loaded machine by chance, not from load.
//!
//! The file-backed share of the not-present faults is checked the same way, with perf stat's
//! filter on the address built from `readelf -lW`: the static, non-PIE forktime's PT_LOAD
//! segments, page-rounded from p_vaddr to p_vaddr + p_filesz, are its only file mappings
//! (ldcost, PIE, has nothing mapped there).

mod common;

use std::path::Path;
use std::process::Command;

/// The tests of this file run one at a time: each counts every fault of its runs.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

const COW: &str = "error_code & 1 && error_code & 2";
/// `ldcost profile` of the fork loop alone, children calling exit(); the count comes next.
const FORK_EXIT: &[&str] = &[
    "profile",
    "--no-exec",
    "--quiet-target",
    "--child",
    "exit",
    "--fork",
];

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
        // One layout for every run (see the module docs).
        .args(["setarch", "-R"])
        .arg(env!("CARGO_BIN_EXE_ldcost"))
        .args(FORK_EXIT)
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

/// The perf stat oracle per fork (copy-on-write, all, file-backed) from two runs of 1000 and
/// 3000 forks, and ldcost's `fork` sections of both.
struct Oracle {
    cow: f64,
    all: f64,
    file: f64,
    sections: [serde_json::Value; 2],
}

fn oracle(dir: &Path, bin: &Path, ranges: &[(u64, u64)]) -> Oracle {
    let (cow1, all1, file1, f1) = perf_stat(dir, 1000, bin, ranges);
    let (cow3, all3, file3, f3) = perf_stat(dir, 3000, bin, ranges);
    // Every child the probe made (the measured loop and the loop that counts fault kinds).
    let forks = f3["children_total"].as_f64().unwrap() - f1["children_total"].as_f64().unwrap();
    assert!(forks >= 2000.0, "children: {f1} {f3}");
    Oracle {
        cow: (cow3 - cow1) / forks,
        all: (all3 - all1) / forks,
        file: (file3 - file1) / forks,
        sections: [f1, f3],
    }
}

/// ldcost's fault kinds per fork (`fork.faults`) against the oracle. `layout` is how many
/// copy-on-write faults per fork a different stack layout may add or take (0 when ldcost's
/// run and the oracle's share one layout; 2 otherwise: a page more or less on each side).
fn check(f: &serde_json::Value, o: &Oracle, layout: f64) {
    let num = |k: &str| f[k].as_f64().unwrap_or_else(|| panic!("{k} counted: {f}"));
    let cow = num("parent_cow") + num("child_cow");
    let all = cow + num("parent_not_present") + num("child_not_present");
    let file = num("parent_file") + num("child_file");
    eprintln!(
        "ldcost: {cow:.3} cow, {all:.3} all, {file:.3} file-backed per fork; perf stat: \
         {:.3} cow, {:.3} all, {:.3} file-backed",
        o.cow, o.all, o.file
    );
    assert!(file > 0.0, "a static child faults its text back in: {f}");
    assert!(
        (file - o.file).abs() <= 0.25,
        "file-backed faults per fork: ldcost {file}, perf {}",
        o.file
    );
    assert!(cow > 0.0, "a fork loop makes copy-on-write faults: {f}");
    assert!(
        (cow - o.cow).abs() <= 0.25 + layout,
        "cow per fork: ldcost {cow}, perf {}",
        o.cow
    );
    assert!(
        (all - o.all).abs() <= 0.5 + layout,
        "faults per fork: ldcost {all}, perf {}",
        o.all
    );
}

/// A temporary directory, the static forktime in it and its file-backed ranges.
type Fixture = (tempfile::TempDir, std::path::PathBuf, Vec<(u64, u64)>);

/// Root, the tools, and the static forktime with its file-backed ranges; None after a SKIP.
fn setup(name: &str, extra: &[&str]) -> Option<Fixture> {
    let mut need = vec!["cc", "perf", "readelf", "setarch"];
    need.extend_from_slice(extra);
    if !common::tools(name, &need) {
        return None;
    }
    if unsafe { nix::libc::geteuid() } != 0 {
        common::skip(name, "needs root (tracepoints)");
        return None;
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
    Some((dir, bin, ranges))
}

#[test]
fn fault_kinds_per_fork_agree_with_perf_stat() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((dir, bin, ranges)) = setup("fault_kinds_per_fork_agree_with_perf_stat", &[]) else {
        return;
    };
    let o = oracle(dir.path(), &bin, &ranges);
    for f in &o.sections {
        check(&f["faults"], &o, 0.0);
    }
}

/// On a fresh boot nothing has mounted tracefs (perf mounts it when it first needs it). In a
/// private mount namespace (the host's mounts stay as they are) tracefs and debugfs's tracing
/// are unmounted, then ldcost runs as root: it mounts tracefs itself and counts the kinds,
/// which agree with perf stat's.
#[test]
fn fault_kinds_are_counted_when_tracefs_is_not_mounted() {
    let name = "fault_kinds_are_counted_when_tracefs_is_not_mounted";
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some((dir, bin, ranges)) = setup(name, &["unshare", "umount"]) else {
        return;
    };
    let json = dir.path().join("unmounted.json");
    let script = r#"
        for m in /sys/kernel/debug/tracing /sys/kernel/tracing; do
            if grep -q " $m " /proc/self/mounts; then umount -l "$m" || exit 90; fi
        done
        if grep -qE " /sys/kernel(/debug)?/tracing " /proc/self/mounts; then exit 91; fi
        setarch -R "$@" || exit $?
        grep -q " /sys/kernel/tracing tracefs " /proc/self/mounts || exit 92
    "#;
    let out = Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(env!("CARGO_BIN_EXE_ldcost"))
        .args(FORK_EXIT)
        .args(["1000", "--json"])
        .arg(&json)
        .arg(&bin)
        .args(["--", "0"])
        .output()
        .expect("run unshare");
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => {}
        Some(90) | Some(91) => {
            common::skip(
                name,
                &format!("cannot unmount tracefs in a mount namespace: {stderr}"),
            );
            return;
        }
        Some(92) => panic!("ldcost ran but tracefs is still not mounted: {stderr}"),
        c => panic!("ldcost in the namespace: exit {c:?}: {stderr}"),
    }
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let fork = &doc["fork"];
    assert!(
        fork["faults_error"].is_null(),
        "fault kinds not counted: {}",
        fork["faults_error"]
    );
    let o = oracle(dir.path(), &bin, &ranges);
    // The shell in the namespace changes the environment, so the target's stack sits elsewhere
    // in its page than in perf stat's runs: the file-backed count is exact, copy-on-write may
    // differ by the page each side's frames straddle.
    check(&fork["faults"], &o, 2.0);
}
