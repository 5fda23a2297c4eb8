//! The kernel's own user/kernel split of a task's CPU time, from /proc.
//!
//! Why not from perf: the task-clock and cpu-clock events ignore `exclude_user` and
//! `exclude_kernel` (`perf stat -e task-clock:u,task-clock:k` prints the same value twice), so
//! counting cannot split CPU time by mode. What the kernel offers instead:
//!
//! - `/proc/PID/schedstat`, first field: `se.sum_exec_runtime`, the thread's CPU time in
//!   nanoseconds, exact (updated whenever the thread is descheduled, so exact for a stopped
//!   or exited task; stale by up to a tick for a running one). No mode split.
//! - `/proc/PID/stat`, fields 14 and 15: utime and stime of the whole thread group in clock
//!   ticks (`sysconf(_SC_CLK_TCK)`, 100 per second, so 10 ms units). On kernels with
//!   tick-based accounting (`CONFIG_TICK_CPU_ACCOUNTING`, these VMs, HZ = 250) the kernel
//!   decides user or kernel by looking at the mode of the CPU at each scheduler tick
//!   (every 4 ms here) and then scales both so that they sum to the precise runtime
//!   (`cputime_adjust()` in kernel/sched/cputime.c). The *ratio* is therefore a sample of
//!   a few ticks, and when one side got no tick at all the kernel gives everything to the other
//!   ("assume all runtime is userspace" when stime is 0).
//!
//! [`user_kernel_split`] combines the two: the exact total from schedstat (summed over the
//! live threads, or stat's total if larger because threads have exited), divided in the
//! ratio of stat's utime to stime. The total is exact (it matches task-clock within 1-2% for
//! a zombie, the difference being the few hundred µs between fork and exec). The split is as
//! good as the tick sample behind it, which is not very good:
//!
//! - statistically, with n ticks of CPU time its error is of the order of 1/√n of the total,
//!   so below about 100 ms of CPU (fewer than ~25 ticks here) it is an indication only, and a
//!   process that used less than one clock tick (10 ms) has no split at all (`None`);
//! - systematically, it drifts on a loaded machine. Measured here: a python loop reading
//!   /dev/zero into a 1 MiB buffer, about 80% kernel by cpu-clock sampling (`perf record`),
//!   showed 82-90% kernel in its ticks on an idle VM but anywhere from 50% to 85% with two
//!   CPU-bound processes competing for the two CPUs (the ticks that end a time slice are not
//!   a random sample of where the task is).
//!
//! It is right about which mode dominates and exact in sum; for the few-millisecond phases of
//! a start-up, or any figure a report puts a percentage on, sample cpu-clock instead (each
//! sample records the CPU mode it interrupted).
//!
//! Read it while the task is stopped or a zombie: once it has been reaped /proc/PID is gone.

use std::path::Path;

/// The raw material of the split, for callers that want to judge its precision themselves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTimes {
    /// CPU time of the process in ns (schedstat over its live threads, or stat's total).
    pub total_ns: u64,
    /// utime from /proc/PID/stat, in clock ticks (already scaled by the kernel to the runtime).
    pub utime_ticks: u64,
    /// stime from /proc/PID/stat, in clock ticks.
    pub stime_ticks: u64,
    /// The length of one clock tick in ns (10,000,000 for USER_HZ = 100).
    pub tick_ns: u64,
}

impl CpuTimes {
    /// What was added since `earlier` (the same process read before; `None`: everything).
    pub fn since(&self, earlier: Option<&CpuTimes>) -> CpuTimes {
        let Some(e) = earlier else { return *self };
        CpuTimes {
            total_ns: self.total_ns.saturating_sub(e.total_ns),
            utime_ticks: self.utime_ticks.saturating_sub(e.utime_ticks),
            stime_ticks: self.stime_ticks.saturating_sub(e.stime_ticks),
            tick_ns: self.tick_ns,
        }
    }

    /// `(user_ns, kernel_ns)`, summing to `total_ns`; `None` when no tick was recorded, i.e.
    /// the kernel has no evidence about the ratio.
    pub fn split(&self) -> Option<(u64, u64)> {
        let ticks = self.utime_ticks.checked_add(self.stime_ticks)?;
        if ticks == 0 {
            return None;
        }
        let user = (self.total_ns as u128 * self.utime_ticks as u128 / ticks as u128) as u64;
        Some((user, self.total_ns - user))
    }
}

/// The user and kernel CPU time of process `pid` in ns, `(utime, stime)`: exact in sum, tick
/// sampled in ratio (see the module documentation for how coarse that is). `None` if the
/// process is gone, /proc is unreadable, or it has run for less than one clock tick.
pub fn user_kernel_split(pid: i32) -> Option<(u64, u64)> {
    cpu_times(pid)?.split()
}

/// The CPU time of thread `tid` so far, in ns: `se.sum_exec_runtime` from /proc/TID/schedstat
/// (through procfs), exact for a stopped thread or a zombie. `None` when the thread is reaped
/// or the kernel keeps no schedstat (`CONFIG_SCHED_INFO` off).
///
/// Unlike a task's perf events, it runs to the thread's last instruction: on the 6.18 kernel
/// of these machines `do_exit` stops a task's events before it frees the address space, so
/// task-clock never sees the exit teardown (an `mmap` of 100 MiB touched and left to the exit:
/// `perf stat -e task-clock` 54.8 ms; unmapped before returning: 66.8 ms; schedstat from the
/// exec to the zombie 64.6 ms both ways).
pub fn thread_cpu_ns(tid: i32) -> Option<u64> {
    procfs::process::Process::new(tid)
        .ok()?
        .schedstat()
        .ok()
        .map(|s| s.sum_exec_runtime)
}

/// Reads [`CpuTimes`] for process `pid`; `None` if /proc/PID is gone or unreadable.
pub fn cpu_times(pid: i32) -> Option<CpuTimes> {
    let proc_dir = Path::new("/proc").join(pid.to_string());
    let stat = std::fs::read_to_string(proc_dir.join("stat")).ok()?;
    let (utime_ticks, stime_ticks) = parse_stat_times(&stat)?;
    let tick_ns = clock_tick_ns()?;
    let stat_total = (utime_ticks + stime_ticks).saturating_mul(tick_ns);
    let threads_ns: u64 = std::fs::read_dir(proc_dir.join("task"))
        .ok()
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let text = std::fs::read_to_string(entry.ok()?.path().join("schedstat")).ok()?;
            parse_schedstat(&text)
        })
        .sum();
    Some(CpuTimes {
        total_ns: threads_ns.max(stat_total),
        utime_ticks,
        stime_ticks,
        tick_ns,
    })
}

/// The length of a clock tick (`sysconf(_SC_CLK_TCK)`) in ns.
fn clock_tick_ns() -> Option<u64> {
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok()??;
    u64::try_from(hz)
        .ok()
        .filter(|&hz| hz > 0)
        .map(|hz| 1_000_000_000 / hz)
}

/// utime and stime (fields 14 and 15, in ticks) from the text of /proc/PID/stat. The command
/// name (field 2) may contain spaces and parentheses, so fields are counted from the last ')'.
fn parse_stat_times(text: &str) -> Option<(u64, u64)> {
    let after = &text[text.rfind(')')? + 1..];
    let mut fields = after.split_whitespace().skip(11); // field 3 (state) is index 0
    let utime = fields.next()?.parse().ok()?;
    let stime = fields.next()?.parse().ok()?;
    Some((utime, stime))
}

/// The runtime in ns (first field) from the text of /proc/PID/task/TID/schedstat.
fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_a_tricky_comm() {
        let text = "2557 (a) b (c)) R 2555 2555 1153 0 -1 4194304 101 0 0 0 37 12 5 6 20 0 1 0 \
                    216424 3133440 384 18446744073709551615 0\n";
        assert_eq!(parse_stat_times(text), Some((37, 12)));
        let init = "1 (process_api) S 0 0 0 0 -1 4194560 52495 45585307 0 3346 161 816 112359 \
                    29158 20 0 13 0 30 43585536 3264";
        assert_eq!(parse_stat_times(init), Some((161, 816)));
        assert_eq!(parse_stat_times("1 (x) S 0 0"), None, "truncated");
        assert_eq!(parse_stat_times("no paren"), None);
    }

    #[test]
    fn schedstat() {
        assert_eq!(parse_schedstat("14816900 2030 7\n"), Some(14_816_900));
        assert_eq!(parse_schedstat(""), None);
    }

    #[test]
    fn split_keeps_the_exact_total() {
        let t = CpuTimes {
            total_ns: 1_000_000_001,
            utime_ticks: 1,
            stime_ticks: 2,
            tick_ns: 10_000_000,
        };
        let (u, k) = t.split().unwrap();
        assert_eq!(u + k, 1_000_000_001);
        assert_eq!(u, 333_333_333);
    }

    #[test]
    fn no_ticks_no_split() {
        let t = CpuTimes {
            total_ns: 3_000_000,
            utime_ticks: 0,
            stime_ticks: 0,
            tick_ns: 10_000_000,
        };
        assert_eq!(t.split(), None);
    }

    /// CPU time this thread has used (CLOCK_THREAD_CPUTIME_ID), in ns.
    fn thread_cpu_ns() -> u64 {
        let mut ts = nix::libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        let rc = unsafe { nix::libc::clock_gettime(nix::libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0, "clock_gettime");
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    #[test]
    fn our_own_process_has_times() {
        // Burn CPU until this thread has used 60 ms of user time: by its own CPU clock, not
        // the process's total, which other test threads raise (and may raise in kernel mode),
        // nor wall time, which a loaded 2-core VM stretches. The wall-clock limit is only a
        // hang guard.
        let me = std::process::id() as i32;
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while thread_cpu_ns() < 60_000_000 {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
            assert!(
                start.elapsed() < std::time::Duration::from_secs(120),
                "hang guard: 60 ms of CPU not reached in 120 s"
            );
        }
        let t = cpu_times(me).expect("our /proc entry");
        assert_eq!(t.tick_ns, 10_000_000, "USER_HZ is 100 on Linux");
        assert!(t.total_ns >= 60_000_000, "the process has our 60 ms: {t:?}");
        let (u, k) = user_kernel_split(me).expect("ticks recorded");
        assert!(u > 0, "a busy loop is user time: {u} {k}");
        assert_eq!(cpu_times(i32::MAX), None, "no such process");
    }
}
