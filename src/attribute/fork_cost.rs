//! Fork cost per fork: the probe's raw records ([`crate::trace::fork::ForkRun`]) summarised
//! into medians with 95% intervals, forks per second (by wall time and by the parent's CPU
//! time, which is what the seed forktest's `clock()` measures), the lazy-binding A/B, and the
//! one-line reading.
//!
//! Pure: no process is touched here, so every figure is testable on hand-made records.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::stats::{summarize, Summary};
use crate::trace::footprint::Footprint;
use crate::trace::fork::{ExitBinding, ForkRun};
use crate::trace::inject::{ProbeRecord, ProbeResult, Rusage, Spawn};
use crate::trace::launch::Ending;

/// Per-fork figures (each a summary over the iterations).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PerFork {
    /// fork()/vfork()/posix_spawn() in the parent, call to return (ns, wall).
    pub spawn_call_ns: Option<Summary>,
    /// From that return to the reap by wait4 (ns, wall): the child's life.
    pub child_to_reap_ns: Option<Summary>,
    /// The whole round trip (ns, wall).
    pub round_trip_ns: Option<Summary>,
    /// The parent thread's CPU per iteration (getrusage(RUSAGE_THREAD) differences; the
    /// total is the scheduler's exact runtime).
    pub parent_cpu_ns: Option<Summary>,
    /// The child's CPU (its rusage from wait4; includes its exit teardown). Only the total:
    /// the kernel splits user/system by timer ticks, and a child that saw no tick is charged
    /// entirely to user time (cputime_adjust), so a per-child split would be an artefact.
    pub child_cpu_ns: Option<Summary>,
    /// Minor faults in the parent per iteration (copy-on-write after each fork, mostly).
    pub parent_minor_faults: Option<Summary>,
    pub child_minor_faults: Option<Summary>,
    pub child_major_faults: Option<Summary>,
    /// Mean and 99th percentile of each figure above: the tail the median hides (forks per
    /// second by wall time follow the mean, not the median).
    #[serde(default)]
    pub tails: PerForkTails,
}

/// The mean and the 99th percentile (nearest rank) of a per-fork figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tail {
    pub mean: f64,
    pub p99: f64,
}

/// [`Tail`]s of the [`PerFork`] figures, field for field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PerForkTails {
    pub spawn_call_ns: Option<Tail>,
    pub child_to_reap_ns: Option<Tail>,
    pub round_trip_ns: Option<Tail>,
    pub parent_cpu_ns: Option<Tail>,
    pub child_cpu_ns: Option<Tail>,
    pub parent_minor_faults: Option<Tail>,
    pub child_minor_faults: Option<Tail>,
    pub child_major_faults: Option<Tail>,
}

/// Mean and nearest-rank 99th percentile; None when empty.
pub fn tail(values: &[f64]) -> Option<Tail> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    Some(Tail {
        mean: crate::stats::mean(&v)?,
        p99: crate::stats::nearest_rank(&v, 0.99)?,
    })
}

/// Page faults per fork by kind, from the kernel's fault tracepoint counted over the loop
/// (means: counters give totals).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultsPerFork {
    pub parent_cow: f64,
    pub parent_not_present: f64,
    pub child_cow: f64,
    /// File-backed pages the child had no PTE for, or new anonymous pages.
    pub child_not_present: f64,
    /// Of the not-present faults, those in the target's file-backed VMAs (page-cache
    /// faults); None when the kernel did not count them.
    #[serde(default)]
    pub parent_file: Option<f64>,
    #[serde(default)]
    pub child_file: Option<f64>,
}

/// The interleaved A/B: children calling `exit` through the GOT (binding it) vs directly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LazyBinding {
    pub iterations: u64,
    pub through_got_child_cpu_ns: Option<Summary>,
    pub direct_child_cpu_ns: Option<Summary>,
    pub through_got_child_faults: Option<Summary>,
    pub direct_child_faults: Option<Summary>,
    /// Difference of the medians (ns of child CPU per child): the binding's cost.
    pub cost_ns: Option<f64>,
    /// The two intervals do not overlap.
    pub significant: bool,
}

/// The `fork` section of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForkSection {
    pub at: String,
    pub at_address: u64,
    pub spawn: Spawn,
    pub child: String,
    pub iterations: u64,
    pub completed: u64,
    /// Every child the probe created: the measured loop, plus the lean loop the rates come
    /// from (N, fork only) and the loops that count fault kinds (min(N, 2000)), sample, and
    /// time the lazy-binding A/B. An exec'd program runs
    /// this many times.
    #[serde(default)]
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
    /// The sampled loop's category breakdown, or why there is none.
    #[serde(default)]
    pub breakdown: Option<super::breakdown::Breakdown>,
    #[serde(default)]
    pub breakdown_error: Option<String>,
    /// The target's pid and the sampled loop's CLOCK_MONOTONIC window (ns), to line up
    /// other tools' recordings of the same run (`perf record -k mono`).
    #[serde(default)]
    pub pid: i32,
    #[serde(default)]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<ForkSamples>,
}

/// Per-iteration values of the measured loop (ns), in loop order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ForkSamples {
    pub round_trip_ns: Vec<u64>,
    pub parent_cpu_ns: Vec<u64>,
    /// The child's CPU per fork (user + system from `wait4`'s rusage).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub child_cpu_ns: Vec<u64>,
    /// `compare`: the sizes of the loops interleaved with the other side's, in order (empty:
    /// one loop).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<u64>,
}

fn nonneg(a: u64, b: u64) -> f64 {
    a.saturating_sub(b) as f64
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

/// Per-iteration vectors of one loop.
struct Columns {
    spawn: Vec<f64>,
    reap: Vec<f64>,
    trip: Vec<f64>,
    p_cpu: Vec<f64>,
    c_cpu: Vec<f64>,
    p_flt: Vec<f64>,
    c_flt: Vec<f64>,
    c_maj: Vec<f64>,
}

fn columns<'a>(
    start: &Rusage,
    recs: impl Iterator<Item = (&'a Rusage, &'a ProbeRecord)>,
) -> Columns {
    let mut c = Columns {
        spawn: Vec::new(),
        reap: Vec::new(),
        trip: Vec::new(),
        p_cpu: Vec::new(),
        c_cpu: Vec::new(),
        p_flt: Vec::new(),
        c_flt: Vec::new(),
        c_maj: Vec::new(),
    };
    let _ = start;
    for (prev, r) in recs {
        c.spawn.push(nonneg(r.t1, r.t0));
        c.reap.push(nonneg(r.t2, r.t1));
        c.trip.push(nonneg(r.t2, r.t0));
        c.p_cpu.push(nonneg(
            r.parent.user_ns() + r.parent.sys_ns(),
            prev.user_ns() + prev.sys_ns(),
        ));
        c.c_cpu.push((r.child.user_ns() + r.child.sys_ns()) as f64);
        c.p_flt.push((r.parent.minflt - prev.minflt).max(0) as f64);
        c.c_flt.push(r.child.minflt as f64);
        c.c_maj.push(r.child.majflt as f64);
    }
    c
}

/// Pairs each record with the parent's rusage before it.
fn with_prev(res: &ProbeResult) -> Vec<(&Rusage, &ProbeRecord)> {
    let mut out = Vec::with_capacity(res.records.len());
    let mut prev = &res.ru_start;
    for r in &res.records {
        out.push((prev, r));
        prev = &r.parent;
    }
    out
}

pub fn per_fork(res: &ProbeResult) -> PerFork {
    let c = columns(&res.ru_start, with_prev(res).into_iter());
    PerFork {
        spawn_call_ns: summarize(&c.spawn),
        child_to_reap_ns: summarize(&c.reap),
        round_trip_ns: summarize(&c.trip),
        parent_cpu_ns: summarize(&c.p_cpu),
        child_cpu_ns: summarize(&c.c_cpu),
        parent_minor_faults: summarize(&c.p_flt),
        child_minor_faults: summarize(&c.c_flt),
        child_major_faults: summarize(&c.c_maj),
        tails: PerForkTails {
            spawn_call_ns: tail(&c.spawn),
            child_to_reap_ns: tail(&c.reap),
            round_trip_ns: tail(&c.trip),
            parent_cpu_ns: tail(&c.p_cpu),
            child_cpu_ns: tail(&c.c_cpu),
            parent_minor_faults: tail(&c.p_flt),
            child_minor_faults: tail(&c.c_flt),
            child_major_faults: tail(&c.c_maj),
        },
    }
}

/// Even iterations went through the GOT, odd ones called libc's exit directly.
pub fn lazy_binding(res: &ProbeResult) -> LazyBinding {
    let pairs = with_prev(res);
    let (mut got, mut direct) = (Vec::new(), Vec::new());
    let (mut got_f, mut direct_f) = (Vec::new(), Vec::new());
    for (i, (_, r)) in pairs.iter().enumerate() {
        let cpu = (r.child.user_ns() + r.child.sys_ns()) as f64;
        if i % 2 == 0 {
            got.push(cpu);
            got_f.push(r.child.minflt as f64);
        } else {
            direct.push(cpu);
            direct_f.push(r.child.minflt as f64);
        }
    }
    let a = summarize(&got);
    let b = summarize(&direct);
    let (cost_ns, significant) = match (&a, &b) {
        (Some(a), Some(b)) => (
            Some(a.median - b.median),
            a.ci95.0 > b.ci95.1 || b.ci95.0 > a.ci95.1,
        ),
        _ => (None, false),
    };
    LazyBinding {
        iterations: res.records.len() as u64,
        through_got_child_cpu_ns: a,
        direct_child_cpu_ns: b,
        through_got_child_faults: summarize(&got_f),
        direct_child_faults: summarize(&direct_f),
        cost_ns,
        significant,
    }
}

fn errno_text(e: i64) -> String {
    let errno = nix::errno::Errno::from_raw((-e) as i32);
    format!("{} ({})", errno.desc(), errno)
}

fn mib(b: u64) -> String {
    if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    } else {
        format!("{} KiB", b / 1024)
    }
}

/// The one-line reading: what each fork copies and where the child's time goes.
pub fn reading(s: &ForkSection) -> String {
    let mut parts = Vec::new();
    if let Some(f) = &s.footprint {
        let pte = f
            .page_table_bytes
            .value()
            .map(|b| format!(" and {} of page tables", mib(b)))
            .unwrap_or_default();
        parts.push(match s.spawn {
            Spawn::Fork => format!("each fork copies {} VMAs{pte}", f.vmas.total),
            // CLONE_VM: the child runs in the parent's address space until it execs or exits.
            Spawn::Vfork | Spawn::PosixSpawn => format!(
                "each {} shares the parent's {} VMAs{pte} (CLONE_VM: nothing is copied)",
                s.spawn.label(),
                f.vmas.total
            ),
        });
    }
    if let (Some(call), Some(reap)) = (&s.per_fork.spawn_call_ns, &s.per_fork.child_to_reap_ns) {
        parts.push(format!(
            "{} {:.0} µs in the parent, the child lives {:.0} µs more",
            s.spawn.label(),
            call.median / 1e3,
            reap.median / 1e3
        ));
    }
    let minflt = s.per_fork.tails.child_minor_faults.map(|t| t.mean);
    if let Some(f) = &s.faults {
        let user = f.child_not_present + f.child_cow;
        let kinds = match f.child_file {
            Some(file) => format!(
                "{:.0} copy-on-write, {file:.0} file-backed, {:.0} new anonymous or other",
                f.child_cow,
                (f.child_not_present - file).max(0.0)
            ),
            None => format!(
                "{:.0} copy-on-write, {:.0} not present",
                f.child_cow, f.child_not_present
            ),
        };
        parts.push(match minflt {
            // getrusage counts faults in kernel mode too; the tracepoint only user-mode ones.
            Some(m) if m.round() > user.round() => format!(
                "each child takes {m:.0} minor faults (getrusage), {user:.0} of them in user mode ({kinds}) and {:.0} in the kernel on its behalf",
                m.round() - user.round()
            ),
            _ => format!("each child takes {user:.0} faults in user mode ({kinds})"),
        });
    } else if let Some(f) = &s.per_fork.child_minor_faults {
        parts.push(format!("{:.0} page faults per child", f.median));
    }
    if let Some(l) = &s.lazy_binding {
        if let (Some(c), true) = (l.cost_ns, l.significant) {
            parts.push(format!(
                "binding exit lazily costs each child {:.1} µs",
                c / 1e3
            ));
        }
    }
    parts.join("; ")
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

/// The sampled loop cut into (at most) `blocks` units of consecutive iterations; each
/// iteration contributes its two parent phases (the fork call, the wait for the child).
pub fn fork_units(res: &ProbeResult, pid: i32, blocks: usize) -> Vec<super::breakdown::Unit> {
    use super::breakdown::{Span, Unit};
    let n = res.records.len();
    if n == 0 {
        return Vec::new();
    }
    let per = n.div_ceil(blocks.max(1));
    res.records
        .chunks(per)
        .map(|chunk| {
            let mut phases = Vec::with_capacity(chunk.len() * 2);
            for r in chunk {
                phases.push(Span {
                    label: "parent: fork call".into(),
                    start_ns: r.t0,
                    end_ns: r.t1,
                });
                phases.push(Span {
                    label: "parent: waiting for the child".into(),
                    start_ns: r.t1,
                    end_ns: r.t2,
                });
            }
            Unit {
                start_ns: chunk[0].t0,
                // The last child's exit teardown may be sampled a little after the reap.
                end_ns: chunk[chunk.len() - 1].t2,
                per_unit: chunk.len() as f64,
                phases,
                main_pid: pid,
            }
        })
        .collect()
}

/// The fork breakdown of a run's sampled loop, and its folded stacks.
pub fn fork_breakdown(
    run: &ForkRun,
    debug_roots: &[std::path::PathBuf],
) -> (
    Option<super::breakdown::Breakdown>,
    Option<String>,
    Vec<super::FoldedStack>,
) {
    match &run.sampled {
        None => (None, None, Vec::new()),
        Some(Err(e)) => (None, Some(e.clone()), Vec::new()),
        Some(Ok((res, rec))) => {
            let stacks = crate::perf::sampler::symbolize(rec, &rec.maps_at_start, debug_roots);
            let units = fork_units(res, run.pid, 10);
            let (mut b, folded) =
                super::breakdown::breakdown("fork", &stacks, &units, "child", true);
            b.notes.extend(super::breakdown::recording_notes(&[rec]));
            // Time per fork from the unsampled loop: its parent CPU plus its children's.
            let cpu = |r: &ProbeResult| -> Option<f64> {
                let n = r.records.len();
                let last = r.records.last()?.parent;
                let parent = (last.user_ns() + last.sys_ns())
                    .saturating_sub(r.ru_start.user_ns() + r.ru_start.sys_ns());
                let children: u64 = r
                    .records
                    .iter()
                    .map(|x| x.child.user_ns() + x.child.sys_ns())
                    .sum();
                Some((parent + children) as f64 / n as f64)
            };
            if let (Some(measured), Some(sampled)) = (cpu(&run.main), cpu(res)) {
                super::breakdown::scale_to_measured(&mut b, measured);
                b.notes.push(format!(
                    "µs per fork = share × the CPU per fork of the unsampled loop ({:.1} µs, parent and child); the sampled loop took {:.1} µs ({:+.0}%: the sampler's own cost)",
                    measured / 1e3,
                    sampled / 1e3,
                    (sampled / measured - 1.0) * 100.0
                ));
            }
            (Some(b), None, folded)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ru(user_us: i64, sys_us: i64, minflt: i64) -> Rusage {
        Rusage {
            utime: [user_us / 1_000_000, user_us % 1_000_000],
            stime: [sys_us / 1_000_000, sys_us % 1_000_000],
            minflt,
            ..Default::default()
        }
    }

    fn result() -> ProbeResult {
        // Three forks: parent CPU grows by 30, 40, 50 µs; faults by 5, 6, 7.
        let mut records = Vec::new();
        let mut t = 1_000_000u64;
        let (mut u, mut s, mut f) = (100, 200, 10);
        for i in 0..3i64 {
            let r0 = t;
            let r1 = t + 50_000 + i as u64 * 1000;
            let r2 = r1 + 80_000;
            u += 10;
            s += 20 + 10 * i;
            f += 5 + i;
            records.push(ProbeRecord {
                t0: r0,
                t1: r1,
                t2: r2,
                pid: 100 + i as u64,
                status: if i == 2 { 9 } else { 0 },
                child: ru(5, 60 + i, 40 + i),
                parent: ru(u, s, f),
                ..Default::default()
            });
            t = r2 + 1000;
        }
        ProbeResult {
            records,
            ru_start: ru(100, 200, 10),
            ru_end: Rusage::default(),
            t_start: 999_000,
            t_end: t,
            error: None,
            page_bytes: 266240,
        }
    }

    #[test]
    fn per_fork_differences_and_medians() {
        let p = per_fork(&result());
        assert_eq!(p.spawn_call_ns.as_ref().unwrap().median, 51_000.0);
        assert_eq!(p.child_to_reap_ns.as_ref().unwrap().median, 80_000.0);
        assert_eq!(p.parent_cpu_ns.as_ref().unwrap().median, 40_000.0);
        assert_eq!(p.parent_minor_faults.as_ref().unwrap().median, 6.0);
        assert_eq!(p.child_cpu_ns.as_ref().unwrap().median, 66_000.0);
        assert_eq!(p.child_minor_faults.as_ref().unwrap().max, 42.0);
    }

    #[test]
    fn statuses_are_described() {
        assert_eq!(describe_status(0), "exited 0");
        assert_eq!(describe_status(42 << 8), "exited 42");
        assert_eq!(describe_status(9), "killed by SIGKILL");
    }

    #[test]
    fn lazy_ab_splits_even_and_odd() {
        // Even iterations (0, 2) through the GOT: 65 and 67 µs of child CPU, median 66; the
        // odd one (1) direct: made 35 µs. A swapped split or a flipped sign fails.
        let mut r = result();
        r.records[1].child = ru(5, 30, 40);
        let l = lazy_binding(&r);
        assert_eq!(l.iterations, 3);
        assert_eq!(l.through_got_child_cpu_ns.unwrap().median, 66_000.0);
        assert_eq!(l.direct_child_cpu_ns.unwrap().median, 35_000.0);
        assert_eq!(l.cost_ns, Some(31_000.0));
    }

    fn run(spawn: Spawn) -> ForkRun {
        let vmas = crate::trace::footprint::VmaCounts {
            total: 23,
            ..Default::default()
        };
        ForkRun {
            at: crate::trace::fork::At::Main,
            at_address: 0x401000,
            spawn,
            child: crate::trace::fork::ChildSpec::Exit,
            exit_binding: None,
            libc_fork: false,
            vdso_clock: true,
            footprint: Some(Footprint {
                pid: 1,
                vmas,
                elf_objects: 1,
                object_paths: vec![],
                page_table_bytes: crate::trace::footprint::Figure::Measured(36 * 1024),
                rss_bytes: crate::trace::footprint::Figure::Measured(0),
                rss_anon_bytes: crate::trace::footprint::Figure::Measured(0),
                rss_file_bytes: crate::trace::footprint::Figure::Measured(0),
                rss_shmem_bytes: crate::trace::footprint::Figure::Measured(0),
                private_dirty_bytes: crate::trace::footprint::Figure::Measured(0),
            }),
            footprint_error: None,
            main: result(),
            // 1000 children: 4 cow, 2 not present (1 of them file-backed) each.
            faults: Ok((
                crate::perf::faults::FaultKinds {
                    all: 1000,
                    cow: 1000,
                    file: Some(0),
                },
                crate::perf::faults::FaultKinds {
                    all: 6000,
                    cow: 4000,
                    file: Some(1000),
                },
                1000,
            )),
            sampled: None,
            rate: None,
            lazy_ab: None,
            ending: Ending::Exited(0),
            pid: 1,
        }
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

    #[test]
    fn only_fork_copies_the_address_space() {
        let fork = section(&run(Spawn::Fork), 3);
        assert!(
            fork.reading
                .starts_with("each fork copies 23 VMAs and 36 KiB of page tables;"),
            "{}",
            fork.reading
        );
        for spawn in [Spawn::Vfork, Spawn::PosixSpawn] {
            let s = section(&run(spawn), 3);
            assert!(!s.reading.contains("copies"), "{}", s.reading);
            assert!(
                s.reading.starts_with(&format!(
                    "each {} shares the parent's 23 VMAs and 36 KiB of page tables (CLONE_VM: nothing is copied);",
                    spawn.label()
                )),
                "{}",
                s.reading
            );
        }
    }

    #[test]
    fn the_child_fault_sentence_adds_up_to_the_numbers_beside_it() {
        // getrusage: 40, 41, 42 minor faults per child (mean 41); the tracepoint: 6 in user
        // mode (4 + 1 + 1), so 35 in the kernel.
        let s = section(&run(Spawn::Fork), 3);
        assert!(
            s.reading.contains(
                "each child takes 41 minor faults (getrusage), 6 of them in user mode \
                 (4 copy-on-write, 1 file-backed, 1 new anonymous or other) and 35 in the kernel on its behalf"
            ),
            "{}",
            s.reading
        );
        // Without more faults in getrusage than in user mode, no kernel part is claimed.
        let mut r = run(Spawn::Fork);
        for rec in &mut r.main.records {
            rec.child.minflt = 6;
        }
        let s = section(&r, 3);
        assert!(
            s.reading.contains(
                "each child takes 6 faults in user mode (4 copy-on-write, 1 file-backed, 1 new anonymous or other)"
            ),
            "{}",
            s.reading
        );
        assert_eq!(s.per_fork.tails.child_minor_faults.unwrap().mean, 6.0);
    }

    #[test]
    fn tails_are_the_mean_and_the_nearest_rank_p99() {
        let v: Vec<f64> = (1..=200).map(f64::from).collect();
        let t = tail(&v).unwrap();
        assert_eq!((t.mean, t.p99), (100.5, 198.0));
        assert_eq!(tail(&[7.0]).map(|t| t.p99), Some(7.0));
        assert!(tail(&[]).is_none());
    }
}
