//! Software breakpoints (int3) in a ptrace-stopped process, and hardware ones (debug registers).
//!
//! In: a stopped tracee, addresses and tags. Out: on a SIGTRAP stop, which breakpoint was hit
//! (its address and tag), the tracee left ready to run on as if it had not been there.
//!
//! A breakpoint replaces the first byte of an instruction with 0xcc. When the tracee hits it
//! (SIGTRAP with rip one past the address), [`Breakpoints::hit`] restores the byte, rewinds rip
//! and, for a persistent breakpoint, single-steps over the original instruction and plants the
//! int3 again. Each hit costs two or three ptrace stops; `profile` measures that cost by running
//! with and without the per-object breakpoints.

use std::collections::HashMap;

use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

#[derive(Debug, Clone, Copy)]
struct Bp {
    orig: i64,
    tag: u32,
    persistent: bool,
}

/// The int3 opcode.
const INT3: i64 = 0xcc;

/// Writes the low byte of `byte` at `addr`, leaving the rest of the word as it is now (the
/// tracee may have written its neighbours since we planted).
fn set_low_byte(pid: Pid, addr: u64, byte: i64) -> nix::Result<()> {
    let cur = ptrace::read(pid, addr as ptrace::AddressType)?;
    ptrace::write(
        pid,
        addr as ptrace::AddressType,
        (cur & !0xff) | (byte & 0xff),
    )
}

/// The breakpoints planted in one process.
#[derive(Default)]
pub struct Breakpoints {
    map: HashMap<u64, Bp>,
}

impl Breakpoints {
    /// Plants a breakpoint at `addr` with `tag` (what the caller wants told on a hit).
    pub fn insert(&mut self, pid: Pid, addr: u64, tag: u32, persistent: bool) -> nix::Result<()> {
        if let Some(bp) = self.map.get_mut(&addr) {
            bp.tag = tag;
            bp.persistent |= persistent;
            return Ok(());
        }
        let orig = ptrace::read(pid, addr as ptrace::AddressType)?;
        let patched = (orig & !0xff) | INT3;
        ptrace::write(pid, addr as ptrace::AddressType, patched)?;
        self.map.insert(
            addr,
            Bp {
                orig,
                tag,
                persistent,
            },
        );
        Ok(())
    }

    /// Removes the breakpoint at `addr`, restoring the original byte.
    pub fn remove(&mut self, pid: Pid, addr: u64) -> nix::Result<()> {
        if let Some(bp) = self.map.remove(&addr) {
            set_low_byte(pid, addr, bp.orig)?;
        }
        Ok(())
    }

    /// Removes every breakpoint.
    pub fn clear(&mut self, pid: Pid) -> nix::Result<()> {
        let addrs: Vec<u64> = self.map.keys().copied().collect();
        for a in addrs {
            self.remove(pid, a)?;
        }
        Ok(())
    }

    /// If the task stopped just past one of our int3s, puts the original byte back and rewinds
    /// rip onto the instruction; returns the breakpoint.
    fn rewind(&self, pid: Pid) -> nix::Result<Option<(u64, Bp)>> {
        let mut regs = ptrace::getregs(pid)?;
        let addr = regs.rip.wrapping_sub(1);
        let Some(bp) = self.map.get(&addr).copied() else {
            return Ok(None);
        };
        set_low_byte(pid, addr, bp.orig)?;
        regs.rip = addr;
        ptrace::setregs(pid, regs)?;
        Ok(Some((addr, bp)))
    }

    /// Called on a SIGTRAP stop: if rip-1 is one of ours, handles it (see the module doc) and
    /// returns `(address, tag)`; the tracee is left stopped at the original instruction (for a
    /// persistent breakpoint: just after it, with the int3 planted again).
    pub fn hit(&mut self, pid: Pid) -> nix::Result<Option<(u64, u32)>> {
        let Some((addr, bp)) = self.rewind(pid)? else {
            return Ok(None);
        };
        if bp.persistent {
            ptrace::step(pid, None)?;
            loop {
                match waitpid(pid, Some(WaitPidFlag::__WALL))? {
                    WaitStatus::Stopped(_, Signal::SIGTRAP) => break,
                    WaitStatus::Stopped(_, _) => continue,
                    other => {
                        return Err(match other {
                            WaitStatus::Exited(..) | WaitStatus::Signaled(..) => nix::Error::ESRCH,
                            _ => nix::Error::EIO,
                        })
                    }
                }
            }
            set_low_byte(pid, addr, INT3)?;
        } else {
            self.map.remove(&addr);
        }
        Ok(Some((addr, bp.tag)))
    }

    /// The planted breakpoints and their original words, as they are now (taken at a fork:
    /// the child's copy of memory has exactly these int3s, whatever we change later).
    pub fn snapshot(&self) -> Vec<(u64, i64)> {
        self.map.iter().map(|(a, bp)| (*a, bp.orig)).collect()
    }

    /// In another process with a copy of our memory (a forked child), writes the original
    /// bytes back at every breakpoint of `planted`. Our own breakpoints stay.
    pub fn restore_in(other: Pid, planted: &[(u64, i64)]) {
        for (addr, orig) in planted {
            let _ = set_low_byte(other, *addr, *orig);
        }
    }

    /// A thread other than the one we follow hit a breakpoint: run it over the original
    /// instruction (restore, step, re-plant) without recording anything. Returns false when
    /// the trap was not ours. Other threads running meanwhile may miss the breakpoint.
    pub fn step_over(&mut self, tid: Pid) -> nix::Result<bool> {
        let Some((addr, _)) = self.rewind(tid)? else {
            return Ok(false);
        };
        ptrace::step(tid, None)?;
        loop {
            match waitpid(tid, Some(WaitPidFlag::__WALL))? {
                WaitStatus::Stopped(_, Signal::SIGTRAP) => break,
                WaitStatus::Stopped(..) | WaitStatus::PtraceEvent(..) => continue,
                _ => return Ok(true),
            }
        }
        let _ = set_low_byte(tid, addr, INT3);
        Ok(true)
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// Reads a NUL-terminated string from the tracee (at most 4096 bytes).
pub fn read_cstring(pid: Pid, addr: u64) -> Option<String> {
    use std::os::unix::fs::FileExt;
    if addr == 0 {
        return None;
    }
    let f = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut buf = vec![0u8; 4096];
    let n = f.read_at(&mut buf, addr).ok()?;
    let end = buf[..n].iter().position(|&b| b == 0)?;
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// Reads a u64 from the tracee.
pub fn read_u64(pid: Pid, addr: u64) -> Option<u64> {
    ptrace::read(pid, addr as ptrace::AddressType)
        .ok()
        .map(|v| v as u64)
}

/// Hardware execution breakpoints (x86-64 debug registers DR0–DR3, set through
/// PTRACE_POKEUSER): they change no byte of the target. An int3 written into a text page
/// makes that page a private anonymous copy and gives its VMA an anon_vma, after which every
/// fork copies the page-table entries of the whole VMA (file VMAs without one are skipped by
/// copy_page_range): for a static program, all of libc's text — measured here, the seed
/// forktest's own loop ran 40% slower after our software breakpoints. The fork probe's run
/// uses these instead.
#[derive(Default)]
pub struct HwBreakpoints {
    slots: [Option<(u64, u32)>; 4],
}

/// offsetof(struct user, u_debugreg) on x86-64.
const DEBUGREG_OFFSET: u64 = 848;

fn poke_debugreg(pid: Pid, n: u64, value: u64) -> nix::Result<()> {
    // SAFETY: PTRACE_POKEUSER writes one word of the stopped tracee's user area.
    let r = unsafe {
        nix::libc::ptrace(
            nix::libc::PTRACE_POKEUSER,
            pid.as_raw(),
            (DEBUGREG_OFFSET + 8 * n) as *mut nix::libc::c_void,
            value as *mut nix::libc::c_void,
        )
    };
    if r == -1 {
        Err(nix::Error::last())
    } else {
        Ok(())
    }
}

fn peek_debugreg(pid: Pid, n: u64) -> nix::Result<u64> {
    nix::errno::Errno::clear();
    // SAFETY: PTRACE_PEEKUSER reads one word of the stopped tracee's user area.
    let r = unsafe {
        nix::libc::ptrace(
            nix::libc::PTRACE_PEEKUSER,
            pid.as_raw(),
            (DEBUGREG_OFFSET + 8 * n) as *mut nix::libc::c_void,
            std::ptr::null_mut::<nix::libc::c_void>(),
        )
    };
    match nix::errno::Errno::last_raw() {
        0 => Ok(r as u64),
        _ if r != -1 => Ok(r as u64),
        e => Err(nix::Error::from_raw(e)),
    }
}

impl HwBreakpoints {
    fn dr7(&self) -> u64 {
        // Local enable bit per slot; RW = 00 (execution) and LEN = 00, as required for it.
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_some())
            .map(|(i, _)| 1u64 << (2 * i))
            .sum()
    }

    /// Arms a breakpoint at `addr` with `tag`. ENOSPC when the four registers are in use.
    pub fn insert(&mut self, pid: Pid, addr: u64, tag: u32) -> nix::Result<()> {
        let Some(i) = self.slots.iter().position(|s| s.is_none()) else {
            return Err(nix::Error::ENOSPC);
        };
        poke_debugreg(pid, i as u64, addr)?;
        self.slots[i] = Some((addr, tag));
        poke_debugreg(pid, 7, self.dr7())
    }

    /// The breakpoint the thread stopped at (SIGTRAP with DR6 naming it), disarmed; None when
    /// the trap is not ours. rip is at the address itself (a fault-type trap): resuming runs
    /// the instruction.
    pub fn hit(&mut self, pid: Pid) -> nix::Result<Option<(u64, u32)>> {
        let dr6 = peek_debugreg(pid, 6)?;
        let Some(i) = (0..4).find(|i| dr6 & (1 << i) != 0 && self.slots[*i].is_some()) else {
            return Ok(None);
        };
        let hit = self.slots[i].take();
        poke_debugreg(pid, 6, 0)?;
        poke_debugreg(pid, 7, self.dr7())?;
        Ok(hit)
    }

    /// Disarms every breakpoint.
    pub fn clear(&mut self, pid: Pid) -> nix::Result<()> {
        self.slots = [None; 4];
        poke_debugreg(pid, 7, 0)?;
        poke_debugreg(pid, 6, 0)
    }

    pub fn is_empty(&self) -> bool {
        self.slots.iter().all(|s| s.is_none())
    }
}
