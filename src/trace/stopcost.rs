//! The cost of one ptrace stop to the target, measured in the run it corrects.
//!
//! In: a tracee stopped at one of our one-shot breakpoints, already rewound onto the original
//! instruction ([`super::breakpoint::Breakpoints::hit`]). Out: the same stop replayed once
//! with no work between (the int3 planted again under rip, the tracee continued into it and
//! stopped again, the byte and rip put back), so the caller can read the counters before and
//! after: the difference is what one breakpoint stop costs the target's CPU at this moment
//! (the trap into the kernel, SIGTRAP, the ptrace stop, and the resume back to user mode).
//!
//! Why: a per-object run's segments each carry the halves of the stops that bound them (the
//! trap half before the tracer reads the counters, the resume half after). The correction used
//! to be one slope of total CPU against stop count *across* runs of different kinds, measured
//! at different moments: a loaded moment inflated it past a small segment's raw figure (a
//! relocation row read 0.0 ms once). A replay is the same kind of stop, in the same process,
//! a few microseconds after the stop it stands for.

use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::sys::wait::{WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

/// The int3 opcode.
const INT3: i64 = 0xcc;

/// What became of a replay.
#[derive(Debug)]
pub(crate) enum Replay {
    /// Replayed: the tracee is stopped where it was, as it was.
    Done,
    /// Not replayed (rip is not at the breakpoint: a persistent one, already stepped over).
    Skipped,
    /// The tracee ended meanwhile (killed by the watchdog, a signal): its final status, which
    /// this wait consumed, for the caller to record.
    Ended(WaitStatus),
}

/// Replays a breakpoint stop at `addr`, where the stopped tracee's rip is (see the module
/// doc). A signal that arrives meanwhile is delivered (its handler's time then falls in the
/// replay, an outlier the run's median ignores). An error means the tracee refuses ptrace, or
/// EINTR when ldcost was interrupted: the caller treats it as lost or interrupted.
pub(crate) fn replay(pid: Pid, addr: u64) -> nix::Result<Replay> {
    let regs = ptrace::getregs(pid)?;
    if regs.rip != addr {
        return Ok(Replay::Skipped);
    }
    let word = ptrace::read(pid, addr as ptrace::AddressType)?;
    ptrace::write(pid, addr as ptrace::AddressType, (word & !0xff) | INT3)?;
    ptrace::cont(pid, None)?;
    loop {
        match super::wait::waitpid(pid, Some(WaitPidFlag::__WALL)) {
            Ok(WaitStatus::Stopped(_, Signal::SIGTRAP)) => break,
            Ok(WaitStatus::Stopped(_, sig)) => ptrace::cont(pid, Some(sig))?,
            Ok(st @ (WaitStatus::Exited(..) | WaitStatus::Signaled(..))) => {
                return Ok(Replay::Ended(st))
            }
            Ok(_) => ptrace::cont(pid, None)?,
            Err(nix::Error::EINTR) if !super::interrupted() => continue,
            Err(e) => return Err(e),
        }
    }
    // Put the instruction back: the low byte as it was, the rest as the tracee has it now.
    let now = ptrace::read(pid, addr as ptrace::AddressType)?;
    ptrace::write(
        pid,
        addr as ptrace::AddressType,
        (now & !0xff) | (word & 0xff),
    )?;
    ptrace::setregs(pid, regs)?;
    Ok(Replay::Done)
}
