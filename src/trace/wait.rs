//! `waitpid` for tracees that receive real-time signals.
//!
//! nix's `WaitStatus` has no value for a signal above 31 (SIGRTMIN and up, which glibc uses
//! itself for thread cancellation and for set*id calls across threads, and programs for
//! timers and queues): its `waitpid` consumes such a stop and returns EINVAL, and the tracee
//! is left in a stop no one resumes. The wait loops that resume their tracees with
//! PTRACE_CONT call this one instead: a tracee stopped to receive a real-time signal gets it
//! delivered at once, as it would untraced, and the wait goes on to the next stop.

use nix::errno::Errno;
use nix::libc;
use nix::sys::signal::Signal;
use nix::sys::wait::{WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

/// As nix's `waitpid`, but a signal-delivery stop of a signal nix cannot name is passed on
/// to the tracee (PTRACE_CONT with it) and never returned.
pub(crate) fn waitpid(pid: Pid, flags: Option<WaitPidFlag>) -> nix::Result<WaitStatus> {
    loop {
        let mut status: libc::c_int = 0;
        let bits = flags.map_or(0, |f| f.bits());
        // SAFETY: waitpid writes one int into a live local.
        let r = Errno::result(unsafe { libc::waitpid(pid.as_raw(), &mut status, bits) })?;
        if r == 0 {
            return Ok(WaitStatus::StillAlive);
        }
        let who = Pid::from_raw(r);
        if let Some(sig) = unnamed_signal_stop(status) {
            // SAFETY: PTRACE_CONT on a tracee in its signal-delivery stop, with that signal.
            unsafe {
                libc::ptrace(
                    libc::PTRACE_CONT,
                    r,
                    std::ptr::null_mut::<libc::c_void>(),
                    sig as libc::c_long,
                )
            };
            continue;
        }
        return WaitStatus::from_raw(who, status);
    }
}

/// The signal of a signal-delivery stop that nix cannot name (32 to 64), or None.
fn unnamed_signal_stop(status: libc::c_int) -> Option<libc::c_int> {
    if !libc::WIFSTOPPED(status) || status >> 16 != 0 {
        return None;
    }
    let sig = libc::WSTOPSIG(status);
    ((1..=64).contains(&sig) && Signal::try_from(sig).is_err()).then_some(sig)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_real_time_signal_stops_are_passed_on() {
        // The wait(2) encoding of a stop: 0x7f, the signal in the second byte, an event in
        // the third.
        let stop = |sig: i32, event: i32| (event << 16) | (sig << 8) | 0x7f;
        assert_eq!(unnamed_signal_stop(stop(34, 0)), Some(34));
        assert_eq!(unnamed_signal_stop(stop(64, 0)), Some(64));
        assert_eq!(unnamed_signal_stop(stop(libc::SIGUSR1, 0)), None);
        // A PTRACE_EVENT stop and a syscall stop (SIGTRAP | 0x80) are nix's to decode.
        assert_eq!(unnamed_signal_stop(stop(libc::SIGTRAP, 6)), None);
        assert_eq!(unnamed_signal_stop(stop(libc::SIGTRAP | 0x80, 0)), None);
        // An exit and a death by a signal are not stops.
        assert_eq!(unnamed_signal_stop(3 << 8), None);
        assert_eq!(unnamed_signal_stop(34), None);
    }
}
