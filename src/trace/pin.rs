//! One CPU for the tracer and its target during an exec run (`--no-pin` turns it off).
//!
//! Why: on a virtual machine, when the tracer and the target sit on different CPUs, every
//! ptrace stop hands the work across: the target's CPU goes idle (a halt, a hypervisor exit)
//! while the tracer runs, and the target is woken on it again by an inter-processor
//! interrupt. On a quiet 2-vCPU VM that makes one stop cost about five times as much unpinned
//! (about 15 µs against 3 µs), the boundaries-only runs about 1.25× the uninstrumented CPU
//! against 1.04×, and the corrected per-object sum about 1.07× against 1.01×; to reproduce,
//! run `ldcost profile -n 30 --quiet-target --no-ld-debug /bin/true` with and without
//! `--no-pin` and compare the replayed stop costs and the ratios in the report. Under load
//! the other CPU is rarely idle and the difference mostly goes away, so stops look cheap on
//! a busy machine.
//!
//! The calling thread (the tracer) is pinned to the CPU it is running on at the first exec run,
//! and every later run of the process to that same CPU, so a document names one CPU
//! ([`cpu`]: `profile.pinned_cpu` in the JSON, a header line of the report); the target, cloned
//! from the tracer, inherits that mask, and the old mask is put back when the guard drops. Only the
//! exec runs are pinned (measured, reference, uninstrumented, sampled): the fork probe is
//! compared with the seed programs' own unpinned loops and is left to the scheduler. A
//! multi-threaded target's threads share the one CPU too, which changes its wall time, not
//! the CPU time ldcost reports.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

static OFF: AtomicBool = AtomicBool::new(false);
/// The CPU of the first run that was pinned (`NONE` before it).
static CHOSEN: AtomicUsize = AtomicUsize::new(NONE);
/// Set when pinning was on but a run could not be pinned (the kernel refused the mask, or the
/// chosen CPU left the allowed set): the document then names no CPU.
static MISSED: AtomicBool = AtomicBool::new(false);
const NONE: usize = usize::MAX;

/// `--no-pin`: leave the tracer and the target where the scheduler puts them.
pub fn disable() {
    OFF.store(true, Ordering::Relaxed);
}

/// Whether exec runs are pinned (for the report's header and the JSON).
pub fn enabled() -> bool {
    !OFF.load(Ordering::Relaxed)
}

/// The CPU every pinned exec run of this process shared with its tracer, or `None` when
/// pinning is off (`--no-pin`), nothing was pinned yet, or some run could not be pinned.
pub fn cpu() -> Option<usize> {
    let c = CHOSEN.load(Ordering::Relaxed);
    (enabled() && c != NONE && !MISSED.load(Ordering::Relaxed)).then_some(c)
}

/// Reads a field that may be `null` as `Some(None)`, so a document that has it (`null`: not
/// pinned) differs from one written before it existed (absent: `None` by `serde(default)`).
pub fn present<'de, D>(d: D) -> Result<Option<Option<usize>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    <Option<usize> as serde::Deserialize>::deserialize(d).map(Some)
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
    let pinned = pin();
    if pinned.old.is_none() {
        MISSED.store(true, Ordering::Relaxed);
    }
    pinned
}

fn pin() -> Pinned {
    let me = Pid::from_raw(0);
    let Ok(old) = sched_getaffinity(me) else {
        return Pinned { old: None };
    };
    let cpu = match CHOSEN.load(Ordering::Relaxed) {
        NONE => {
            // SAFETY: sched_getcpu has no preconditions; it returns -1 on failure.
            let here = unsafe { nix::libc::sched_getcpu() };
            let Ok(here) = usize::try_from(here) else {
                return Pinned { old: None };
            };
            here
        }
        c => c,
    };
    if !old.is_set(cpu).unwrap_or(false) {
        return Pinned { old: None };
    }
    let mut one = CpuSet::new();
    if one.set(cpu).is_err() || sched_setaffinity(me, &one).is_err() {
        return Pinned { old: None };
    }
    // The first pinned run chooses the CPU for the rest (a race between two first runs keeps
    // the first chosen; the loser's run is still pinned, to its own CPU, and counted missed).
    if CHOSEN
        .compare_exchange(NONE, cpu, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
        && CHOSEN.load(Ordering::Relaxed) != cpu
    {
        MISSED.store(true, Ordering::Relaxed);
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
        // Every later run goes to the same CPU, and that is the CPU the document names.
        let first = cpu().expect("pinned");
        for _ in 0..3 {
            let _p = here();
            // SAFETY: as in `pin`.
            let now = unsafe { nix::libc::sched_getcpu() };
            assert_eq!(usize::try_from(now).ok(), Some(first));
        }
    }
}
