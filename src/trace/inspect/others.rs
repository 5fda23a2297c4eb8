//! The target's other tasks: its threads and the processes it forks, all traced (TRACECLONE,
//! TRACEFORK) while ldcost has breakpoints in it.
//!
//! In: a wait status of a task that is not the target's first thread, the breakpoints planted
//! and the forks seen so far. Out: the task resumed or let go: a thread that meets one of our
//! breakpoints is stepped over it, a forked child gets the original bytes back (its copy of
//! memory holds our int3s) and is detached, whichever of its first stop and the fork event
//! comes first.

use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::sys::wait::WaitStatus;
use nix::unistd::Pid;

use super::process::thread_group;
use crate::trace::breakpoint::Breakpoints;

/// A child the target forked: its pid, whether by vfork, and the breakpoints its copy of
/// memory holds (those planted at the fork).
pub(in crate::trace) struct Forked {
    pid: Pid,
    vfork: bool,
    planted: Vec<(u64, i64)>,
    /// Its first stop has been handled already (it came before the fork event).
    released: bool,
    /// A vfork child kept traced until its exec: it runs in the target's memory, where our
    /// persistent breakpoints are, and would die of the first int3 it met untraced (a lazily
    /// bound `execv` is resolved through `_dl_fixup` in the child).
    kept: bool,
}

/// Records a fork event of the target (or releases the child if its first stop came first).
fn note_fork(forked: &mut Vec<Forked>, child: Pid, vfork: bool, bps: &Breakpoints) {
    match forked.iter().position(|f| f.pid == child) {
        // Seen stopped before this event: already released.
        Some(i) if forked[i].released => {
            forked.remove(i);
        }
        Some(_) => {}
        None => forked.push(Forked {
            pid: child,
            vfork,
            planted: bps.snapshot(),
            released: false,
            kept: false,
        }),
    }
}

/// Whether a PTRACE_EVENT stop is a fork or a vfork.
pub(in crate::trace) fn is_fork_event(ev: i32) -> bool {
    ev == ptrace::Event::PTRACE_EVENT_FORK as i32 || ev == ptrace::Event::PTRACE_EVENT_VFORK as i32
}

/// At a fork or vfork event of `tid`: records the new child ([`note_fork`]).
pub(in crate::trace) fn fork_event(forked: &mut Vec<Forked>, tid: Pid, ev: i32, bps: &Breakpoints) {
    if let Ok(child) = ptrace::getevent(tid) {
        let vfork = ev == ptrace::Event::PTRACE_EVENT_VFORK as i32;
        note_fork(forked, Pid::from_raw(child as i32), vfork, bps);
    }
}

/// Handles a stop of a thread or child of the target (not the target's first thread).
pub(in crate::trace) fn other_tracee(
    main: Pid,
    tid: Pid,
    st: &WaitStatus,
    bps: &mut Breakpoints,
    forked: &mut Vec<Forked>,
) {
    if let Some(i) = forked.iter().position(|f| f.pid == tid && f.kept) {
        kept_vfork_child(forked, i, tid, st, bps);
        return;
    }
    let known = forked.iter().position(|f| f.pid == tid && !f.released);
    // A new process whose fork event we have not seen yet (the child's first stop can come
    // first): its thread group is not the target's. The forking thread is still stopped at
    // that event, so our breakpoints are still those of the fork.
    let early = known.is_none()
        && matches!(st, WaitStatus::Stopped(_, Signal::SIGSTOP))
        && thread_group(tid).is_some_and(|g| g != main.as_raw());
    if known.is_some() || early {
        let (vfork, planted) = match known {
            Some(i) => {
                let f = forked.remove(i);
                (f.vfork, f.planted)
            }
            None => {
                forked.push(Forked {
                    pid: tid,
                    vfork: false,
                    planted: Vec::new(),
                    released: true,
                    kept: false,
                });
                (false, bps.snapshot())
            }
        };
        // A forked child has its own copy of our int3 bytes: put the originals back before it
        // runs untraced (a vfork child shares our memory, so it is left alone, and traced
        // until its exec while we have breakpoints there).
        if !vfork {
            Breakpoints::restore_in(tid, &planted);
        } else if !bps.is_empty() {
            forked.push(Forked {
                pid: tid,
                vfork: true,
                planted: Vec::new(),
                released: true,
                kept: true,
            });
            let _ = ptrace::cont(tid, None);
            return;
        }
        let _ = ptrace::detach(tid, None);
        return;
    }
    match st {
        WaitStatus::Stopped(_, Signal::SIGTRAP) => match bps.step_over(tid) {
            Ok(true) => {
                let _ = ptrace::cont(tid, None);
            }
            _ => {
                let _ = ptrace::cont(tid, Some(Signal::SIGTRAP));
            }
        },
        // The first stop of a new thread, or a group stop: not a signal to deliver.
        WaitStatus::Stopped(_, Signal::SIGSTOP) => {
            let _ = ptrace::cont(tid, None);
        }
        WaitStatus::Stopped(_, sig) => {
            let _ = ptrace::cont(tid, Some(*sig));
        }
        WaitStatus::PtraceEvent(_, _, ev) if is_fork_event(*ev) => {
            fork_event(forked, tid, *ev, bps);
            let _ = ptrace::cont(tid, None);
        }
        WaitStatus::Exited(..) | WaitStatus::Signaled(..) => {}
        _ => {
            let _ = ptrace::cont(tid, None);
        }
    }
}

/// A stop of a vfork child kept traced (see `Forked::kept`): stepped over our breakpoints,
/// let go at its exec (its new image holds none of them), forgotten at its end.
fn kept_vfork_child(
    forked: &mut Vec<Forked>,
    i: usize,
    tid: Pid,
    st: &WaitStatus,
    bps: &mut Breakpoints,
) {
    match st {
        WaitStatus::Stopped(_, Signal::SIGTRAP) => match bps.step_over(tid) {
            Ok(true) => {
                let _ = ptrace::cont(tid, None);
            }
            _ => {
                let _ = ptrace::cont(tid, Some(Signal::SIGTRAP));
            }
        },
        WaitStatus::PtraceEvent(_, _, ev) if *ev == ptrace::Event::PTRACE_EVENT_EXEC as i32 => {
            forked.remove(i);
            let _ = ptrace::detach(tid, None);
        }
        WaitStatus::Exited(..) | WaitStatus::Signaled(..) => {
            forked.remove(i);
        }
        WaitStatus::Stopped(_, Signal::SIGSTOP) => {
            let _ = ptrace::cont(tid, None);
        }
        WaitStatus::Stopped(_, sig) => {
            let _ = ptrace::cont(tid, Some(*sig));
        }
        _ => {
            let _ = ptrace::cont(tid, None);
        }
    }
}
