//! One CPU for the tracer and its target during an exec run (`--no-pin` turns it off).
//!
//! Why: on these 2-vCPU virtual machines, when the tracer and the target sit on different
//! CPUs, every ptrace stop hands the work across: the target's CPU goes idle (a halt, a
//! hypervisor exit) while the tracer runs, and the target is woken on it again by an
//! inter-processor interrupt. Measured 2026-12-02 on a quiet VM (`ldcost profile -n 30
//! --quiet-target --no-ld-debug /bin/true`, two runs each): the replayed cost of one stop
//! 14.7 µs unpinned against 2.7 µs with both on one CPU (`taskset -c 1 ldcost …`), the
//! boundaries-only runs 1.23–1.27× the uninstrumented CPU against 1.036, and the corrected
//! per-object sum 1.06–1.08× against 1.003–1.017. Under load the other CPU is rarely idle and
//! the difference mostly goes away, which is why it showed as "stops are cheap when the
//! machine is busy".
//!
//! The calling thread (the tracer) is pinned to the CPU it is running on; the target, cloned
//! from it, inherits that mask, and the old mask is put back when the guard drops. Only the
//! exec runs are pinned (measured, reference, uninstrumented, sampled): the fork probe is
//! compared with the seed programs' own unpinned loops and is left to the scheduler. A
//! multi-threaded target's threads share the one CPU too, which changes its wall time, not
//! the CPU time ldcost reports.

use std::sync::atomic::{AtomicBool, Ordering};

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

static OFF: AtomicBool = AtomicBool::new(false);

/// `--no-pin`: leave the tracer and the target where the scheduler puts them.
pub fn disable() {
    OFF.store(true, Ordering::Relaxed);
}

/// Whether exec runs are pinned (for the report's header and the JSON).
pub fn enabled() -> bool {
    !OFF.load(Ordering::Relaxed)
}

/// Puts the tracer thread's CPU mask back when dropped.
pub struct Pinned {
    old: Option<CpuSet>,
}

/// Pins the calling thread to the CPU it runs on, if pinning is on and the CPU is in its
/// mask; anything the kernel refuses leaves the mask as it was (no pin, no error: the run is
/// still valid, only dearer per stop).
pub fn here() -> Pinned {
    if !enabled() {
        return Pinned { old: None };
    }
    let me = Pid::from_raw(0);
    let Ok(old) = sched_getaffinity(me) else {
        return Pinned { old: None };
    };
    // SAFETY: sched_getcpu has no preconditions; it returns -1 on failure.
    let cpu = unsafe { nix::libc::sched_getcpu() };
    let Ok(cpu) = usize::try_from(cpu) else {
        return Pinned { old: None };
    };
    if !old.is_set(cpu).unwrap_or(false) {
        return Pinned { old: None };
    }
    let mut one = CpuSet::new();
    if one.set(cpu).is_err() || sched_setaffinity(me, &one).is_err() {
        return Pinned { old: None };
    }
    Pinned { old: Some(old) }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if let Some(old) = self.old.take() {
            let _ = sched_setaffinity(Pid::from_raw(0), &old);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed() -> usize {
        let set = sched_getaffinity(Pid::from_raw(0)).unwrap();
        (0..CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap())
            .count()
    }

    #[test]
    fn pins_to_one_cpu_and_puts_the_mask_back() {
        let before = allowed();
        {
            let _p = here();
            assert_eq!(allowed(), 1);
        }
        assert_eq!(allowed(), before);
    }
}
