//! Runs Micah's programs R times each and keeps each run's own account from `wait4`.
//!
//! In: the programs. Out: per program, every run's wall time (spawn to reap), user and system
//! CPU time and minor faults from the rusage `wait4` returns for that child alone ([`Runs`]).
//! He timed 1000 runs under `time` (so his figures, in seconds per 1000 runs, are also
//! milliseconds per run, and include his shell's fork); here each child is started by
//! `posix_spawn` (Rust's `Command`, which shares the parent's memory until exec, so ldcost's
//! own image is not copied or torn down) and reaped by `wait4`, so each figure is the
//! program's own. Programs are interleaved round by round, so that a change in the machine's
//! load falls on all of them alike.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// One program's runs. Times in microseconds.
#[derive(Debug, Clone, Default)]
pub struct Runs {
    pub path: PathBuf,
    pub elapsed_us: Vec<f64>,
    pub user_us: Vec<f64>,
    pub sys_us: Vec<f64>,
    pub minor_faults: Vec<u64>,
}

impl Runs {
    /// user + sys of each run: exact, where the split between the two is not (see notes).
    pub fn cpu_us(&self) -> Vec<f64> {
        self.user_us
            .iter()
            .zip(&self.sys_us)
            .map(|(u, s)| u + s)
            .collect()
    }

    pub fn mean_faults(&self) -> Option<f64> {
        let v: Vec<f64> = self.minor_faults.iter().map(|&f| f as f64).collect();
        crate::stats::mean(&v)
    }
}

/// What one run of a program returned.
struct One {
    elapsed_us: f64,
    user_us: f64,
    sys_us: f64,
    minor_faults: u64,
}

/// Runs every program once to warm the page cache, then `rounds` rounds of one run each.
/// A program that does not exit 0 is an error naming it.
pub fn run_all(
    programs: &[PathBuf],
    rounds: u32,
    step: &dyn Fn(&str),
) -> Result<Vec<Runs>, String> {
    let mut out: Vec<Runs> = programs
        .iter()
        .map(|p| Runs {
            path: p.clone(),
            ..Runs::default()
        })
        .collect();
    for p in programs {
        run_once(p)?;
    }
    for r in 0..rounds {
        if r % 50 == 0 {
            step(&format!("micah: round {} of {rounds}", r + 1));
        }
        for (p, runs) in programs.iter().zip(out.iter_mut()) {
            let one = run_once(p)?;
            runs.elapsed_us.push(one.elapsed_us);
            runs.user_us.push(one.user_us);
            runs.sys_us.push(one.sys_us);
            runs.minor_faults.push(one.minor_faults);
        }
    }
    Ok(out)
}

/// Spawns `path` without arguments (so his `main` returns at once) and reaps it with wait4.
fn run_once(path: &Path) -> Result<One, String> {
    let t0 = Instant::now();
    let child = Command::new(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", path.display()))?;
    let pid = child.id() as nix::libc::pid_t;
    let (status, usage) = wait4(pid).map_err(|e| format!("wait4 on {}: {e}", path.display()))?;
    let elapsed_us = t0.elapsed().as_secs_f64() * 1e6;
    // The child is reaped: `Child` has no handles (all null) and its drop does not wait.
    drop(child);
    let exited_zero = nix::libc::WIFEXITED(status) && nix::libc::WEXITSTATUS(status) == 0;
    if !exited_zero {
        return Err(format!(
            "{} did not exit 0 (wait status {status:#x})",
            path.display()
        ));
    }
    let us = |t: nix::libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    Ok(One {
        elapsed_us,
        user_us: us(usage.ru_utime),
        sys_us: us(usage.ru_stime),
        minor_faults: usage.ru_minflt.max(0) as u64,
    })
}

/// `wait4(pid, &status, 0, &rusage)`, retried on EINTR: the child's own resource usage.
fn wait4(pid: nix::libc::pid_t) -> std::io::Result<(i32, nix::libc::rusage)> {
    loop {
        let mut status: i32 = 0;
        // SAFETY: rusage is plain data; zeroed is a valid value, and wait4 only writes into
        // the two pointers we give it, which live for the call.
        let mut usage: nix::libc::rusage = unsafe { std::mem::zeroed() };
        let r = unsafe { nix::libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return Ok((status, usage));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_program_is_an_error_and_true_is_measured() {
        let r = run_all(&[PathBuf::from("/bin/false")], 1, &|_| {});
        assert!(r.unwrap_err().contains("did not exit 0"));
        let r = run_all(&[PathBuf::from("/bin/true")], 3, &|_| {}).unwrap();
        assert_eq!(r[0].elapsed_us.len(), 3);
        // Every process takes some page faults (its stack, at least): wait4 filled rusage.
        assert!(r[0].minor_faults.iter().all(|&f| f > 0));
    }
}
