//! The groups of categories that ldcost's exec breakdown and an independent classification of
//! `perf record -a -g` of a shell loop are compared by, and that loop; shared by
//! tests/phase_categories.rs (wide margins) and benches/profile_checks.rs (5 points), which
//! include this file by path next to tests/common/perf_record.rs.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::perf_record;

/// The fault categories.
pub const FAULTS: [&str; 3] = ["cow_fault", "file_fault", "anon_fault"];

/// Groups of categories that the comparison with perf record uses.
pub const GROUPS: [(&str, &[&str]); 3] = [
    ("relocation+lookup", &["ldso_relocation", "symbol_lookup"]),
    ("faults", &FAULTS),
    ("mapping", &["ldso_mapping"]),
];

/// Each group's share of the samples that are not `exec_kernel` (nor `instrumentation`), and
/// exec kernel's share of all samples but `instrumentation`. Exec kernel is left out of the denominator: ldcost's launcher is a fork of
/// ldcost, whose image exec tears down, a shell's is small.
pub fn group_shares(c: &BTreeMap<String, u64>) -> (Vec<f64>, f64) {
    // `instrumentation` (the oracle's name for perf's own side-band records, which perf
    // record asks for too) is out of every share, as in ldcost's breakdown.
    let total: u64 = c
        .iter()
        .filter(|(k, _)| k.as_str() != "instrumentation")
        .map(|(_, v)| v)
        .sum();
    let exec = c.get("exec_kernel").copied().unwrap_or(0);
    let rest = (total - exec).max(1) as f64;
    let groups = GROUPS
        .iter()
        .map(|(_, ks)| {
            ks.iter()
                .map(|k| c.get(*k).copied().unwrap_or(0))
                .sum::<u64>() as f64
                / rest
        })
        .collect();
    (groups, exec as f64 / total.max(1) as f64)
}

/// `perf record -a -g -F 20000` of `sh -c 'for ...; do RUSTC --version; done'`, classified by
/// the oracle over the shell's process tree (the shell's own loop, forks and waits included:
/// dash's are a small part of a 10 ms start-up).
pub fn perf_record_loop(rustc: &Path, n: u32) -> Result<BTreeMap<String, u64>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let data = dir.path().join("perf.data");
    let rec = perf_record::PerfRecord::start(dir.path(), &data, "20000")?;
    let t0 = mono_ns();
    let script = format!(
        "i=0; while [ $i -lt {n} ]; do {} --version >/dev/null; i=$((i+1)); done",
        rustc.display()
    );
    let child = Command::new("sh")
        .arg("-c")
        .arg(script)
        .spawn()
        .map_err(|e| e.to_string())?;
    let pid = child.id() as u64;
    let st = child.wait_with_output().map_err(|e| e.to_string())?;
    let t1 = mono_ns();
    rec.stop()?;
    if !st.status.success() {
        return Err(format!("the loop exited with {}", st.status));
    }
    let (all, kept) = perf_record::oracle(&data, pid, (t0, t1));
    if kept < 200 {
        return Err(format!("perf record kept {kept} samples of the loop"));
    }
    Ok(all)
}

pub fn mono_ns() -> u64 {
    let mut t = nix::libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec.
    unsafe { nix::libc::clock_gettime(nix::libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}
