//! An unprivileged `ldcost profile` (CPU time from /proc schedstat at each
//! ptrace stop, perf_event_paranoid 2) against the privileged one (perf's task-clock): the sum
//! of the phases' CPU time agrees within 20%. A CPU-time ratio moves with the load of a shared
//! 2-vCPU VM, so it is a PASS/FAIL row here, not a test (tests/unprivileged.rs keeps the
//! structure, the sources and the fault counts).
//!
//! Run with `cargo bench --bench unprivileged_check` as root (to switch to `nobody` with
//! setpriv), with cc, at perf_event_paranoid 2 (the bench does not change the sysctl). The
//! target is a C program built with `cc -O2 -o burn burn.c` that runs ~20 ms of arithmetic
//! in main, and /bin/true. Each side is profiled 3 times with `-n 10`, alternating; the
//! figure is the median of the three `total_task_clock_ns` medians (the corrected phase sum
//! of the report) and, beside it, the uncorrected sum.

#[path = "../tests/common/mod.rs"]
mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

const BURN: &str = "int main(void) { volatile unsigned long x = 0; \
                    for (unsigned long i = 0; i < 20000000; i++) x += i; return 0; }\n";

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// (corrected phase sum, raw phase sum) in ns of one `profile -n 10`, or why none.
fn run(
    dir: &Path,
    ldcost: &Path,
    target: &str,
    nobody: bool,
    i: usize,
) -> Result<(f64, f64), String> {
    let json = dir.join(format!("{nobody}-{i}.json"));
    let mut cmd = if nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid", "nobody", "--regid", "nogroup", "--clear-groups"])
            .arg(ldcost);
        c
    } else {
        Command::new(ldcost)
    };
    let out = cmd
        .current_dir(dir)
        .args([
            "profile",
            "-n",
            "10",
            "--no-ld-debug",
            "--quiet-target",
            "--json",
        ])
        .arg(&json)
        .arg(target)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let p = &doc["profile"];
    let total = p["total_task_clock_ns"]["median"]
        .as_f64()
        .ok_or("no total")?;
    let raw: f64 = p["phases"]
        .as_array()
        .ok_or("no phases")?
        .iter()
        .filter_map(|ph| ph["task_clock_raw_ns"]["median"].as_f64())
        .sum();
    Ok((total, raw))
}

fn main() {
    println!("unprivileged_check");
    println!(
        "load:     {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    let paranoid =
        std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default();
    let uid0 = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    if paranoid.trim() != "2" || !uid0 {
        println!(
            "SKIP: needs root and perf_event_paranoid 2 (is {})",
            paranoid.trim()
        );
        return;
    }
    // ldcost and the target where nobody can reach them, wherever the clone is.
    let user = match common::as_user_binary() {
        Ok(u) => u,
        Err(e) => {
            println!("SKIP: {e}");
            return;
        }
    };
    let work = user.writable("work");
    let dir = work.as_path();
    std::fs::write(dir.join("burn.c"), BURN).expect("write");
    let cc = Command::new("cc")
        .current_dir(dir)
        .args(["-O2", "-o", "burn", "burn.c"])
        .status();
    if !cc.is_ok_and(|s| s.success()) {
        println!("SKIP: cc failed");
        return;
    }
    std::fs::set_permissions(dir.join("burn"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    let ldcost = user.bin.clone();
    println!();
    println!("| target | unprivileged (schedstat) ms | privileged (task-clock) ms | raw sums ms | ratio | goal | result |");
    println!("|---|---|---|---|---|---|---|");
    let burn = dir.join("burn").display().to_string();
    for (label, target) in [
        ("burn (C, 20M adds)", burn.as_str()),
        ("/bin/true", "/bin/true"),
    ] {
        let (mut u, mut p) = (Vec::new(), Vec::new());
        let mut failed = None;
        for i in 0..3 {
            for (nobody, acc) in [(true, &mut u), (false, &mut p)] {
                match run(dir, &ldcost, target, nobody, i) {
                    Ok(v) => acc.push(v),
                    Err(e) => failed = Some(e),
                }
            }
        }
        if let Some(e) = failed {
            println!("| {label} | | | | | within 20% | FAIL ({e}) |");
            continue;
        }
        let (uc, ur) = (
            median(u.iter().map(|v| v.0).collect()),
            median(u.iter().map(|v| v.1).collect()),
        );
        let (pc, pr) = (
            median(p.iter().map(|v| v.0).collect()),
            median(p.iter().map(|v| v.1).collect()),
        );
        let ratio = uc / pc;
        println!(
            "| {label} | {:.3} | {:.3} | {:.3} / {:.3} | {ratio:.3} | within 20% | {} |",
            uc / 1e6,
            pc / 1e6,
            ur / 1e6,
            pr / 1e6,
            if (ratio - 1.0).abs() <= 0.2 {
                "PASS"
            } else {
                "FAIL"
            }
        );
    }
}
