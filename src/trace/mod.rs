//! Stage: live processes. In: a command line (a [`launch::Command`]) and what to measure.
//! Out: per-run recordings ([`crate::record`]) of where the target's start-up time went, phase
//! by phase, and the fork probe's raw records ([`fork::ForkRun`]).
//!
//! [`launch`] starts the target under ptrace, stopped before exec; [`breakpoint`] plants
//! breakpoints in it; [`startup`] drives one run from exec to exit, reading perf counters at
//! each phase boundary (`segments` turns the boundaries into phase segments), and in per-object
//! runs goes on after `main` with the loader's work there (`after_main`). [`fork`] runs
//! the target to an injection point, reads its [`footprint`] and has the fork probe
//! ([`inject`]) fork it N times. `inspect` holds what `startup` and `fork` both read from a
//! live tracee (auxv, maps, symbols) and how they treat its other threads and children.
//! [`follow`] finds a wrapper's exec chain (a `#!` script, `env`, a shim) and makes the runs
//! start at the final image's execve.
//! SIGINT/SIGTERM to ldcost set a flag ([`interrupted`]) that every wait loop checks, so the
//! target is killed and reaped rather than left stopped.

mod after_main;
pub mod breakpoint;
pub mod follow;
pub mod footprint;
pub mod fork;
pub mod inject;
mod inspect;
pub mod launch;
pub mod pin;
mod segments;
pub mod startup;
pub mod stopcost;
pub mod tree;
mod wait;

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static CURRENT_TARGET: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(_: nix::libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
    // Kill the target at once, whatever ldcost is busy with: waitpid then reports it gone.
    // kill(2) is async-signal-safe.
    let pid = CURRENT_TARGET.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: a plain syscall with an integer pid.
        unsafe { nix::libc::kill(pid, nix::libc::SIGKILL) };
    }
}

/// Records the pid a SIGINT/SIGTERM to ldcost must kill (0: none).
pub fn set_current_target(pid: i32) {
    CURRENT_TARGET.store(pid, Ordering::SeqCst);
}

/// Installs SIGINT/SIGTERM/SIGHUP handlers (without SA_RESTART, so waitpid returns EINTR).
pub fn install_signal_handlers() {
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let act = SigAction::new(
        SigHandler::Handler(on_signal),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for s in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        // SAFETY: the handler only stores to an atomic.
        let _ = unsafe { sigaction(s, &act) };
    }
}

/// Whether ldcost was asked to stop.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Marks ldcost as asked to stop (the --timeout watchdog uses it too).
pub fn interrupt() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}
