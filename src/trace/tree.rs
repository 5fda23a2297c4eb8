//! Stage: live processes, the way out. In: ldcost's own pid, the outputs being written, a
//! SIGINT/SIGTERM. Out: no process of the target's tree left (stopped tracees included), no
//! half-written report, no temp files, and exit 130 within about a second whatever ldcost was
//! busy with.
//!
//! The signal handler ([`super::install_signal_handlers`]) only sets a flag and SIGKILLs the
//! current target (async-signal-safe). [`watch_interrupts`] starts a thread that, once the
//! flag is set, kills every descendant of ldcost (the target, its children, probes, LD_DEBUG
//! runs) and gives the main thread [`GRACE`] to unwind through its own error path; a main
//! thread stuck in a long computation (symbolizing millions of samples, say) is not waited
//! for: the watcher removes the partial outputs, reaps and exits 130 itself. That is the one
//! `exit` outside `main`: the only way to honour Ctrl-C from a thread that cannot be
//! cancelled.
//!
//! The tree is found from /proc (every process whose parent chain reaches ldcost). It is
//! frozen first (SIGSTOP, repeated until no new member shows up), then killed, so a process
//! forking in a loop cannot leave an orphan behind between the scan and the kill.

use std::time::{Duration, Instant};

/// How long the main thread has to return by itself after a SIGINT/SIGTERM.
pub const GRACE: Duration = Duration::from_millis(1000);

/// Makes ldcost the reaper of orphans of its tree: a process whose parent (the target) was
/// killed is re-parented to ldcost rather than to init, so it stays a descendant that
/// [`kill_tree`] finds. Wait loops that wait for any child see such orphans' exits and
/// ignore them as unknown pids.
pub fn adopt_orphans() {
    let _ = nix::sys::prctl::set_child_subreaper(true);
}

pub use crate::cleanup::{remove_partial, temp_gone, temp_made, temp_paths, writing, written};

/// The exit code of an interrupted run (`ExitCode::Interrupted` in `error.rs` is defined
/// from it, so this layer needs nothing above it).
pub const INTERRUPTED_EXIT: u8 = 130;

pub use crate::perf::tasks::{descendants, parse_ppid};

/// Freezes and kills every descendant of `root`; returns how many were killed.
pub fn kill_tree(root: i32) -> usize {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let mut seen: Vec<i32> = Vec::new();
    // Freeze until the set stops growing (a stopped process cannot fork); bounded, in case
    // a process ignores the stop (it cannot: SIGSTOP is not catchable, but a tracee in a
    // ptrace stop reports it to us instead of stopping again).
    for _ in 0..50 {
        let now = descendants(root);
        let new: Vec<i32> = now.into_iter().filter(|p| !seen.contains(p)).collect();
        if new.is_empty() {
            break;
        }
        for &p in &new {
            let _ = kill(Pid::from_raw(p), Signal::SIGSTOP);
        }
        seen.extend(new);
    }
    for &p in &seen {
        let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
    }
    seen.len()
}

/// Reaps ldcost's children (killed tracees included) until there are none or `limit` passed.
pub fn reap_all(limit: Duration) {
    use nix::sys::wait::{WaitPidFlag, WaitStatus};
    let until = Instant::now() + limit;
    loop {
        match super::wait::waitpid(
            nix::unistd::Pid::from_raw(-1),
            Some(WaitPidFlag::WNOHANG | WaitPidFlag::__WALL),
        ) {
            Ok(WaitStatus::StillAlive) => {
                if Instant::now() >= until {
                    return;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => {}
            Err(_) => return,
        }
    }
}

/// Everything ldcost must leave behind on a failed or interrupted run: no process of the
/// tree, no partial report, no temp file.
pub fn clean_up() {
    kill_tree(std::process::id() as i32);
    reap_all(Duration::from_secs(2));
    remove_partial();
}

/// Starts the thread that turns a SIGINT/SIGTERM into exit 130 within about [`GRACE`],
/// whatever the main thread is doing (see the module docs). Idempotent.
pub fn watch_interrupts() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let _ = std::thread::Builder::new()
            .name("ldcost-interrupt".into())
            .spawn(|| {
                while !super::interrupted() {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let me = std::process::id() as i32;
                let until = Instant::now() + GRACE;
                // Keep killing while the main thread unwinds: a run loop may have started
                // one more process before it saw the flag.
                while Instant::now() < until {
                    kill_tree(me);
                    std::thread::sleep(Duration::from_millis(50));
                }
                remove_partial();
                kill_tree(me);
                reap_all(Duration::from_secs(1));
                remove_partial();
                eprintln!("ldcost: error: interrupted; the target was killed and reaped");
                std::process::exit(INTERRUPTED_EXIT as i32);
            });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ppid_from_stat() {
        assert_eq!(parse_ppid("42 (a) b) c) S 7 42 42 0 -1"), Some(7));
        assert_eq!(parse_ppid("1 (init) S 0 1 1"), Some(0));
        assert_eq!(parse_ppid("garbage"), None);
    }

    #[test]
    fn a_forking_tree_is_killed_to_the_last_grandchild() {
        // sh -> (sh -> sleep) x3, with the middle shells looping: nothing may survive.
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("for i in 1 2 3; do (while :; do sleep 30; done) & done; wait")
            .spawn()
            .expect("sh");
        let root = child.id() as i32;
        let t0 = Instant::now();
        while descendants(root).len() < 6 && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let before = descendants(root);
        assert!(before.len() >= 6, "{before:?}");
        // Kill from the shell down (its parent, the test, is not touched).
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(root),
            nix::sys::signal::Signal::SIGSTOP,
        );
        let killed = kill_tree(root);
        let _ = child.kill();
        let _ = child.wait();
        assert!(killed >= 6, "{killed}");
        let t0 = Instant::now();
        let alive = |p: &i32| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .map(|s| !s.contains(") Z"))
                .unwrap_or(false)
        };
        while before.iter().any(alive) && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let left: Vec<&i32> = before.iter().filter(|p| alive(p)).collect();
        assert!(left.is_empty(), "survivors {left:?}");
    }

    #[test]
    fn partial_outputs_are_removed_and_complete_ones_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (dir.path().join("a.json"), dir.path().join("b.svg"));
        std::fs::write(&a, "{").expect("write");
        std::fs::write(&b, "<svg/>").expect("write");
        writing(&a);
        writing(&b);
        writing(std::path::Path::new("-"));
        written(&b);
        remove_partial();
        assert!(!a.exists() && b.exists());
    }
}
