//! Runs one child process to its end and reports what the kernel accounted to it: wall time
//! (from just before `spawn` to `wait4`'s return), CPU time (user + system) and peak RSS
//! (`ru_maxrss`), all from `wait4(2)`'s `struct rusage` for that child alone. Shared by the
//! benchmarks that time whole processes (deps_speed's end-to-end rows, end_to_end).

use std::process::Command;
use std::time::{Duration, Instant};

/// What one finished child cost.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    pub wall: Duration,
    /// User plus system CPU time of the child itself (its own children are not included:
    /// `wait4` accounts them to it only once it has waited for them, which ours do).
    pub cpu: Duration,
    /// Peak resident set size of the child, in KiB (`ru_maxrss`).
    pub maxrss_kb: u64,
    /// Whether it exited with status 0.
    pub success: bool,
    /// The raw wait status (for an error message).
    pub status: i32,
}

/// Spawns `cmd`, waits for it with `wait4`, and returns its accounting.
pub fn run(cmd: &mut Command) -> std::io::Result<Run> {
    let start = Instant::now();
    let child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `ru` are valid for writes; `pid` is our own unwaited child.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let wall = start.elapsed();
    // `child` was reaped above; dropping a std Child neither waits nor kills.
    drop(child);
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    Ok(Run {
        wall,
        cpu: tv(ru.ru_utime) + tv(ru.ru_stime),
        maxrss_kb: ru.ru_maxrss.max(0) as u64,
        success: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        status,
    })
}

/// The median of `v` (the mean of the middle two for an even count); zero when empty.
pub fn median(v: &[Duration]) -> Duration {
    let mut s = v.to_vec();
    s.sort();
    match s.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2,
    }
}

/// The median of `v`; zero when empty.
pub fn median_u64(v: &[u64]) -> u64 {
    let mut s = v.to_vec();
    s.sort_unstable();
    match s.len() {
        0 => 0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2,
    }
}

/// `/proc/loadavg`'s first three fields ("1.00 0.90 0.80"), or "?".
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "?".to_string())
}
