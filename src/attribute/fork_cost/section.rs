//! The `fork` section of the report: one probe run ([`ForkRun`]) summarised — the per-fork
//! figures, the rates (forks per second by wall time and by the parent's CPU time), the
//! children's endings, the fault kinds, the footprint, and the one-line reading.

use std::collections::BTreeMap;

use super::lazy_binding::{lazy_binding, LazyBinding};
use super::per_fork::{columns, per_fork, with_prev, PerFork};
use super::reading::{mib, reading};
use super::spawn_ab::{spawn_ab, SpawnAb};
use crate::record::footprint::Footprint;
use crate::record::fork::Spawn;
use crate::record::fork::{ExitBinding, ForkRun};
use crate::record::Ending;

/// Page faults per fork by kind, from the kernel's fault tracepoint counted over the loop
/// (means: counters give totals).
#[derive(Debug, Clone, PartialEq)]
pub struct FaultsPerFork {
    pub parent_cow: f64,
    pub parent_not_present: f64,
    pub child_cow: f64,
    /// File-backed pages the child had no PTE for, or new anonymous pages.
    pub child_not_present: f64,
    /// Of the not-present faults, those in the target's file-backed VMAs (page-cache
    /// faults); None when the kernel did not count them.
    pub parent_file: Option<f64>,
    pub child_file: Option<f64>,
}

/// The `fork` section of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct ForkSection {
    pub at: String,
    pub at_address: u64,
    pub spawn: Spawn,
    pub child: String,
    pub iterations: u64,
    pub completed: u64,
    /// Every child the probe created: the measured loop, plus the lean loop the rates come
    /// from (N, fork only) and the loops that count fault kinds (min(N, 2000)), sample, and
    /// time the lazy-binding and fork/vfork A/Bs. An exec'd program runs
    /// this many times.
    pub children_total: u64,
    /// The first failure of fork/spawn/wait in the loop, if any.
    pub error: Option<String>,
    pub exit_binding: Option<ExitBinding>,
    pub libc_fork: bool,
    /// "vdso" or "syscall": how the probe read CLOCK_MONOTONIC.
    pub clock: String,
    pub per_fork: PerFork,
    /// The loop the rates come from: the lean one (fork and wait4 only) with `--spawn
    /// fork`, else the measured one.
    pub loop_wall_ns: u64,
    pub loop_parent_cpu_ns: u64,
    /// The parent's user and system time over the whole loop, per fork: the kernel's
    /// tick-sampled split (hundreds of ticks over a loop, so meaningful there).
    pub parent_user_ns_per_fork: Option<f64>,
    pub parent_sys_ns_per_fork: Option<f64>,
    pub forks_per_sec_wall: Option<f64>,
    /// By the parent's CPU time, as the seed forktest's clock() counts.
    pub forks_per_sec_parent_cpu: Option<f64>,
    /// "exited 0" -> count, "killed by SIGSEGV" -> count ...
    pub child_endings: BTreeMap<String, u64>,
    pub lazy_binding: Option<LazyBinding>,
    /// The fork/vfork A/B of the same image (None: not run).
    pub spawn_ab: Option<SpawnAb>,
    /// The sampled loop's category breakdown, or why there is none.
    pub breakdown: Option<crate::attribute::breakdown::Breakdown>,
    pub breakdown_error: Option<String>,
    /// The target's pid and the sampled loop's CLOCK_MONOTONIC window (ns), to line up
    /// other tools' recordings of the same run (`perf record -k mono`).
    pub pid: i32,
    pub sampled_window_ns: Option<(u64, u64)>,
    pub faults: Option<FaultsPerFork>,
    /// Why the fault kinds are missing.
    pub faults_error: Option<String>,
    pub footprint: Option<Footprint>,
    pub footprint_error: Option<String>,
    /// What the probe itself adds to each fork.
    pub probe_adds: String,
    pub reading: String,
    pub target_ending: Ending,
    /// Every iteration's round trip and parent CPU (ns), for `ldcost diff`'s tests
    /// (a median's interval is not enough for a Mann–Whitney U test).
    pub samples: Option<ForkSamples>,
}

/// Per-iteration values of the measured loop (ns), in loop order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ForkSamples {
    pub round_trip_ns: Vec<u64>,
    pub parent_cpu_ns: Vec<u64>,
    /// The child's CPU per fork (user + system from `wait4`'s rusage).
    pub child_cpu_ns: Vec<u64>,
    /// `compare`: the sizes of the loops interleaved with the other side's, in order (empty:
    /// one loop).
    pub chunks: Vec<u64>,
}

fn describe_status(st: u64) -> String {
    let st = st as i32;
    if st & 0x7f == 0 {
        format!("exited {}", (st >> 8) & 0xff)
    } else {
        let sig = st & 0x7f;
        let name = nix::sys::signal::Signal::try_from(sig)
            .map(|s| s.as_str().to_string())
            .unwrap_or_else(|_| format!("signal {sig}"));
        format!("killed by {name}")
    }
}

fn errno_text(e: i64) -> String {
    let errno = nix::errno::Errno::from_raw((-e) as i32);
    format!("{} ({})", errno.desc(), errno)
}

/// Summarises a fork run.
pub fn section(run: &ForkRun, iterations: u64) -> ForkSection {
    let res = &run.main;
    let completed = res.records.len() as u64;
    let mut child_endings = BTreeMap::new();
    for r in &res.records {
        *child_endings.entry(describe_status(r.status)).or_insert(0) += 1;
    }
    // The rates: from the lean loop (fork and wait4 only, as the seed forktest) when it ran
    // to the end, else from the measured loop (its records carry the parent's rusage).
    let (wall, first, last, completed_rate) = match &run.rate {
        Some(r) if r.error.is_none() && !r.records.is_empty() => (
            r.t_end.saturating_sub(r.t_start),
            r.ru_start,
            r.ru_end,
            r.records.len() as u64,
        ),
        _ => (
            res.t_end.saturating_sub(res.t_start),
            res.ru_start,
            res.records.last().map(|r| r.parent).unwrap_or(res.ru_start),
            completed,
        ),
    };
    let cpu = (last.user_ns() + last.sys_ns()).saturating_sub(first.user_ns() + first.sys_ns());
    let rate =
        |ns: u64| (ns > 0 && completed_rate > 0).then(|| completed_rate as f64 * 1e9 / ns as f64);
    let mut s = ForkSection {
        at: run.at.label(),
        at_address: run.at_address,
        spawn: run.spawn,
        child: run.child.label(),
        iterations,
        completed,
        children_total: completed
            + run.faults.as_ref().map(|f| f.2).unwrap_or(0)
            + run.rate.as_ref().map_or(0, |r| r.records.len() as u64)
            + run.lazy_ab.as_ref().map_or(0, |r| r.records.len() as u64)
            + run
                .spawn_ab
                .iter()
                .map(|(a, b)| (a.records.len() + b.records.len()) as u64)
                .sum::<u64>()
            + match &run.sampled {
                Some(Ok((r, _))) => r.records.len() as u64,
                _ => 0,
            },
        error: res
            .error
            .or(run.rate.as_ref().and_then(|r| r.error))
            .map(errno_text),
        exit_binding: run.exit_binding.clone(),
        libc_fork: run.libc_fork,
        clock: if run.vdso_clock { "vdso" } else { "syscall" }.into(),
        per_fork: per_fork(res),
        samples: Some({
            let c = columns(&res.ru_start, with_prev(res).into_iter());
            ForkSamples {
                round_trip_ns: c.trip.iter().map(|v| *v as u64).collect(),
                parent_cpu_ns: c.p_cpu.iter().map(|v| *v as u64).collect(),
                child_cpu_ns: c.c_cpu.iter().map(|v| *v as u64).collect(),
                chunks: Vec::new(),
            }
        }),
        loop_wall_ns: wall,
        loop_parent_cpu_ns: cpu,
        parent_user_ns_per_fork: (completed_rate > 0).then(|| {
            last.user_ns().saturating_sub(first.user_ns()) as f64 / completed_rate as f64
        }),
        parent_sys_ns_per_fork: (completed_rate > 0).then(|| {
            last.sys_ns().saturating_sub(first.sys_ns()) as f64 / completed_rate as f64
        }),
        forks_per_sec_wall: rate(wall),
        forks_per_sec_parent_cpu: rate(cpu),
        child_endings,
        lazy_binding: run.lazy_ab.as_ref().map(lazy_binding),
        spawn_ab: spawn_ab(&run.spawn_ab),
        breakdown: None,
        breakdown_error: None,
        pid: run.pid,
        sampled_window_ns: match &run.sampled {
            Some(Ok((r, _))) => Some((r.t_start, r.t_end)),
            _ => None,
        },
        faults: match &run.faults {
            Ok((p, c, n)) if *n > 0 => {
                let n = *n as f64;
                Some(FaultsPerFork {
                    parent_cow: p.cow as f64 / n,
                    parent_not_present: p.not_present() as f64 / n,
                    child_cow: c.cow as f64 / n,
                    child_not_present: c.not_present() as f64 / n,
                    parent_file: p.file.map(|x| x as f64 / n),
                    child_file: c.file.map(|x| x as f64 / n),
                })
            }
            _ => None,
        },
        faults_error: run.faults.as_ref().err().cloned(),
        footprint: run.footprint.clone(),
        footprint_error: run.footprint_error.clone(),
        probe_adds: format!(
            "one shared anonymous VMA of {} (code, parameters and the pre-faulted records: fork copies no page-table entry for it, each child faults in the pages it runs); its stack is the target's own, below rsp (left as it was found: resident pages saved and restored, the others dropped again), or a private mapping when there is no room{}",
            mib(res.page_bytes),
            if run.rate.is_some() {
                "; the rates (forks per second, loop_wall_ns, loop_parent_cpu_ns) come from a lean loop of as many forks that only forks and waits, as forktest does; the per-fork figures from the measured loop, whose clock reads and getrusage per fork cost the parent a few µs"
            } else {
                ""
            }
        ),
        reading: String::new(),
        target_ending: run.ending,
    };
    s.reading = reading(&s);
    s
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{result, ru, run};
    use super::*;
    use crate::record::fork::ProbeRecord;

    #[test]
    fn statuses_are_described() {
        assert_eq!(describe_status(0), "exited 0");
        assert_eq!(describe_status(42 << 8), "exited 42");
        assert_eq!(describe_status(9), "killed by SIGKILL");
    }

    #[test]
    fn the_rates_come_from_the_lean_loop() {
        // The measured loop: 3 forks, parent CPU 120 µs (100+200 -> 130+250). The lean loop:
        // 4 forks in 200 µs of parent CPU (ru_start 1000+2000 -> ru_end 1050+2150) and
        // 1 ms of wall: 20000 forks/s by CPU, 4000 by wall; user 12.5, sys 37.5 µs per fork.
        let mut r = run(Spawn::Fork);
        let measured = section(&r, 3);
        assert_eq!(measured.loop_parent_cpu_ns, 120_000);
        let mut lean = result();
        lean.records.push(ProbeRecord::default());
        lean.ru_start = ru(1000, 2000, 0);
        lean.ru_end = ru(1050, 2150, 0);
        lean.t_start = 5_000_000;
        lean.t_end = 6_000_000;
        r.rate = Some(lean);
        let s = section(&r, 3);
        assert_eq!(s.loop_parent_cpu_ns, 200_000);
        assert_eq!(s.loop_wall_ns, 1_000_000);
        assert_eq!(s.forks_per_sec_parent_cpu, Some(20_000.0));
        assert_eq!(s.forks_per_sec_wall, Some(4_000.0));
        assert_eq!(s.parent_user_ns_per_fork, Some(12_500.0));
        assert_eq!(s.parent_sys_ns_per_fork, Some(37_500.0));
        // The per-fork figures stay the measured loop's.
        assert_eq!(s.per_fork, measured.per_fork);
        assert_eq!(s.completed, 3);
        assert_eq!(s.children_total, measured.children_total + 4);
        assert!(s.probe_adds.contains("lean loop"), "{}", s.probe_adds);
        // A lean loop that failed gives no rates of its own.
        r.rate.as_mut().unwrap().error = Some(-11);
        let failed = section(&r, 3);
        assert_eq!(failed.loop_parent_cpu_ns, 120_000);
        assert!(failed.error.is_some());
    }
}
