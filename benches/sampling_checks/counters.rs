//! Counters: the magnitudes behind tests/perf_counters.rs. Each target is the sampler tests'
//! blocked `sh` (`read go && exec TARGET`): the counters open on its pid before the exec that
//! enables them, and schedstat, read while the target is a zombie, also holds sh's own start
//! (about a millisecond).

use std::path::Path;
use std::process::Command;

use ldcost::perf::{cpu_times, CounterSet, CpuTimes, Snapshot};
use nix::sys::wait::{waitid, Id, WaitPidFlag};
use nix::unistd::Pid;

use crate::harness::Target;
use crate::Table;

const S: &str = "counters";

/// A counted run: the counters after exit, /proc's times of the zombie, the target's stdout.
struct Counted {
    snap: Snapshot,
    times: CpuTimes,
}

fn counted(program: &Path, args: &[&str]) -> Result<Counted, String> {
    let mut target = Target::spawn(program, args);
    let pid = target.pid();
    let mut set = CounterSet::open(pid, true).map_err(|e| e.to_string())?;
    target.release();
    waitid(
        Id::Pid(Pid::from_raw(pid)),
        WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
    )
    .map_err(|e| format!("waitid: {e}"))?;
    let times = cpu_times(pid).ok_or("no /proc of the zombie")?;
    let snap = set.read().map_err(|e| e.to_string())?;
    target.finish();
    Ok(Counted { snap, times })
}

/// The median of `v` (NaN when empty), as the library's summaries compute it.
fn median(v: Vec<f64>) -> f64 {
    ldcost::attribute::stats::summarize(&v).map_or(f64::NAN, |s| s.median)
}

pub fn run(t: &mut Table) {
    println!("\n{S}:");
    if let Err(e) = exit_teardown(t) {
        t.skip("counters: exit teardown", e);
    }
    if let Err(e) = task_clock_against_perf_stat(t) {
        t.skip("counters: task-clock vs perf stat", e);
    }
    if let Err(e) = schedstat_against_task_clock(t) {
        t.skip("counters: schedstat vs task-clock", e);
    }
    if let Err(e) = split_against_perf_record(t) {
        t.skip("counters: user/kernel split vs perf record", e);
    }
}

/// 256 MiB touched, then `_exit` (teardown in exit_mm, after the counters stop) or `munmap`
/// first (counted); three runs each, interleaved, medians.
fn exit_teardown(t: &mut Table) -> Result<(), String> {
    let code = "import mmap, os, sys, time\nm = mmap.mmap(-1, 256 << 20)\n\
                for i in range(0, 256 << 20, 4096): m[i] = 1\n\
                if sys.argv[1] == 'unmap':\n    t = time.process_time_ns(); m.close()\n    \
                open(sys.argv[2], 'w').write(str(time.process_time_ns() - t))\nos._exit(0)";
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("munmap_ns");
    let f = file.to_str().unwrap();
    let (mut exit, mut unmap, mut munmap) = (vec![], vec![], vec![]);
    for _ in 0..3 {
        for (mode, gaps) in [("exit", &mut exit), ("unmap", &mut unmap)] {
            let c = counted(Path::new("python3"), &["-c", code, mode, f])?;
            let tc = c.snap.task_clock_ns.ok_or("no task-clock")? as f64;
            gaps.push((c.times.total_ns as f64 - tc) / 1e6);
        }
        let ns: f64 = std::fs::read_to_string(&file)
            .map_err(|e| e.to_string())?
            .trim()
            .parse()
            .map_err(|e| format!("munmap time: {e}"))?;
        munmap.push(ns / 1e6);
    }
    let (e, u, m) = (median(exit), median(unmap), median(munmap));
    t.check(
        S,
        "exit teardown of 256 MiB outside task-clock: exit gap − unmap gap",
        format!(
            "{:.1} ms (exit {e:.1}, unmap {u:.1}; the munmap itself {m:.1} ms)",
            e - u
        ),
        "> 20 ms",
        e - u > 20.0,
    );
    t.check(
        S,
        "unmapped before exit: schedstat − task-clock",
        format!("{u:.1} ms"),
        "< 15 ms",
        u < 15.0,
    );
    Ok(())
}

/// `perf stat -x, -e task-clock,page-faults --no-inherit`: (task-clock ns, page faults).
fn perf_stat(argv: &[&str]) -> Result<(f64, f64), String> {
    let out = Command::new("perf")
        .args([
            "stat",
            "-x,",
            "-e",
            "task-clock,page-faults",
            "--no-inherit",
            "--",
        ])
        .args(argv)
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stderr);
    let value = |name: &str| {
        text.lines()
            .map(|l| l.split(',').collect::<Vec<_>>())
            .find(|f| f.len() > 2 && f[2] == name)
            .and_then(|f| {
                let v: f64 = f[0].parse().ok()?;
                Some(if f[1] == "msec" { v * 1e6 } else { v })
            })
            .ok_or(format!("perf stat did not count {name}: {text}"))
    };
    Ok((value("task-clock")?, value("page-faults")?))
}

/// /bin/true, ten runs each, interleaved: the median task-clock against perf stat's.
fn task_clock_against_perf_stat(t: &mut Table) -> Result<(), String> {
    let (mut ours, mut theirs) = (vec![], vec![]);
    for _ in 0..10 {
        let c = counted(Path::new("/bin/true"), &[])?;
        ours.push(c.snap.task_clock_ns.ok_or("no task-clock")? as f64);
        theirs.push(perf_stat(&["/bin/true"])?.0);
    }
    let (o, p) = (median(ours), median(theirs));
    let r = o / p;
    t.check(
        S,
        "/bin/true task-clock: ldcost / perf stat (medians of 10)",
        format!("{r:.2}x ({:.0} µs vs {:.0} µs)", o / 1e3, p / 1e3),
        "within 1.5x",
        (1.0 / 1.5..=1.5).contains(&r),
    );
    Ok(())
}

/// A python zombie: schedstat's total (from the fork) against task-clock (from the exec).
fn schedstat_against_task_clock(t: &mut Table) -> Result<(), String> {
    let c = counted(Path::new("python3"), &["-c", "sum(range(3_000_000))"])?;
    let tc = c.snap.task_clock_ns.ok_or("no task-clock")? as f64;
    let total = c.times.total_ns as f64;
    t.check(
        S,
        "python zombie: schedstat total vs task-clock",
        format!(
            "{:.3}x ({:.1} ms vs {:.1} ms)",
            total / tc,
            total / 1e6,
            tc / 1e6
        ),
        "0.95x to 1.3x + 2 ms",
        total >= 0.95 * tc && total <= 1.3 * tc + 2e6,
    );
    Ok(())
}

/// About 300 ms of /dev/zero reads: /proc's tick-sampled kernel share against cpu-clock
/// sampling of the same workload.
fn split_against_perf_record(t: &mut Table) -> Result<(), String> {
    let code = "import time\nb=bytearray(1<<20); f=open('/dev/zero','rb',0)\n\
                t=time.process_time()\nwhile time.process_time()-t<0.3: f.readinto(b)";
    let c = counted(Path::new("python3"), &["-c", code])?;
    let (u, k) = c.times.split().ok_or("no ticks")?;
    let ticks = k as f64 / (u + k) as f64;
    let sampled = crate::common::perf_record_kernel_share(&["python3", "-c", code])?;
    t.check(
        S,
        "/dev/zero reads, kernel share: /proc ticks vs perf record cpu-clock",
        format!(
            "{:.0} points ({:.0}% vs {:.0}%)",
            100.0 * (ticks - sampled).abs(),
            100.0 * ticks,
            100.0 * sampled
        ),
        "within 40 points",
        (ticks - sampled).abs() < 0.4,
    );
    Ok(())
}
