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

use std::collections::{HashMap, HashSet};

use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

#[derive(Debug, Clone, Copy)]
struct Bp {
    orig: i64,
    tag: u32,
    persistent: bool,
    /// The original instruction is a `push` of a register: a hit is emulated (the register
    /// written below rsp, rip moved past it) instead of single-stepped, so the int3 never
    /// leaves the text and a thread passing meanwhile cannot miss it.
    push_len: u64,
}

/// The register a `push r64` at the low bytes of `word` pushes (an index in the order of the
/// instruction's encoding, rax..rdi then r8..r15) and the instruction's length.
fn push_register(word: i64) -> Option<(usize, u64)> {
    let b = word.to_le_bytes();
    match (b[0], b[1]) {
        (0x50..=0x57, _) => Some(((b[0] - 0x50) as usize, 1)),
        (0x41, 0x50..=0x57) => Some((8 + (b[1] - 0x50) as usize, 2)),
        _ => None,
    }
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

/// Single-steps the stopped task over one instruction. A signal that arrives meanwhile stops
/// it first (a signal-delivery stop that must be resumed, or the step never completes): it is
/// held back for the step and queued to the thread again after it, so it is delivered at the
/// next resume as it would have been. ESRCH: the task ended.
fn step_once(tid: Pid) -> nix::Result<()> {
    let mut held = Vec::new();
    ptrace::step(tid, None)?;
    let r = loop {
        match waitpid(tid, Some(WaitPidFlag::__WALL)) {
            Ok(WaitStatus::Stopped(_, Signal::SIGTRAP)) => break Ok(()),
            Ok(WaitStatus::Stopped(_, sig)) => {
                held.push(sig);
                ptrace::step(tid, None)?;
            }
            Ok(WaitStatus::PtraceEvent(..)) => ptrace::step(tid, None)?,
            Ok(WaitStatus::Exited(..) | WaitStatus::Signaled(..)) => break Err(nix::Error::ESRCH),
            Ok(_) => break Err(nix::Error::EIO),
            Err(nix::Error::EINTR) if !super::interrupted() => continue,
            Err(e) => break Err(e),
        }
    };
    if !held.is_empty() {
        let tgid = super::inspect::process::thread_group(tid).unwrap_or(tid.as_raw());
        for sig in held {
            // SAFETY: a plain syscall with integer arguments.
            unsafe {
                nix::libc::syscall(
                    nix::libc::SYS_tgkill,
                    tgid,
                    tid.as_raw(),
                    sig as nix::libc::c_int,
                )
            };
        }
    }
    r
}

/// The breakpoints planted in one process.
#[derive(Default)]
pub struct Breakpoints {
    map: HashMap<u64, Bp>,
    /// The tracee's `/proc/PID/pagemap`, opened at the first insert.
    pagemap: Option<(Pid, procfs::process::PageMap)>,
    /// Pages (address / page size) that were not in the tracee's page table when we first
    /// wrote a breakpoint into them: our write (get_user_pages in the kernel) brought them in,
    /// so the tracee will not take their first-touch fault, and no perf event counts it for
    /// anyone.
    brought_in: HashSet<u64>,
    /// Pages already asked about.
    checked: HashSet<u64>,
    /// pagemap could not be read: the count is unknown.
    pagemap_failed: bool,
}

impl Breakpoints {
    /// Plants a breakpoint at `addr` with `tag` (what the caller wants told on a hit).
    pub fn insert(&mut self, pid: Pid, addr: u64, tag: u32, persistent: bool) -> nix::Result<()> {
        if let Some(bp) = self.map.get_mut(&addr) {
            bp.tag = tag;
            bp.persistent |= persistent;
            return Ok(());
        }
        self.note_page(pid, addr);
        let orig = ptrace::read(pid, addr as ptrace::AddressType)?;
        let patched = (orig & !0xff) | INT3;
        ptrace::write(pid, addr as ptrace::AddressType, patched)?;
        self.map.insert(
            addr,
            Bp {
                orig,
                tag,
                persistent,
                push_len: 0,
            },
        );
        Ok(())
    }

    /// Plants a persistent breakpoint whose hits are emulated rather than single-stepped when
    /// the instruction under it is a `push` of a register (see `Bp::push_len`). Returns whether
    /// they are.
    pub fn insert_emulated(&mut self, pid: Pid, addr: u64, tag: u32) -> nix::Result<bool> {
        self.insert(pid, addr, tag, true)?;
        let Some(bp) = self.map.get_mut(&addr) else {
            return Ok(false);
        };
        if let Some((_, len)) = push_register(bp.orig) {
            bp.push_len = len;
        }
        Ok(bp.push_len != 0)
    }

    /// Whether hits of the breakpoint at `addr` are emulated (one stop, no single-step).
    pub fn emulated(&self, addr: u64) -> bool {
        self.map.get(&addr).is_some_and(|b| b.push_len != 0)
    }

    /// Runs the `push` under an emulated breakpoint at `addr` for the stopped task: the int3
    /// stays where it is.
    fn emulate_push(pid: Pid, addr: u64, bp: &Bp) -> nix::Result<()> {
        let mut regs = ptrace::getregs(pid)?;
        let Some((reg, len)) = push_register(bp.orig) else {
            return Err(nix::Error::EINVAL);
        };
        let value = match reg {
            0 => regs.rax,
            1 => regs.rcx,
            2 => regs.rdx,
            3 => regs.rbx,
            4 => regs.rsp,
            5 => regs.rbp,
            6 => regs.rsi,
            7 => regs.rdi,
            8 => regs.r8,
            9 => regs.r9,
            10 => regs.r10,
            11 => regs.r11,
            12 => regs.r12,
            13 => regs.r13,
            14 => regs.r14,
            _ => regs.r15,
        };
        regs.rsp -= 8;
        ptrace::write(pid, regs.rsp as ptrace::AddressType, value as i64)?;
        regs.rip = addr + len;
        ptrace::setregs(pid, regs)
    }

    /// The emulated breakpoint the task stopped just past, if any.
    fn emulated_hit(&self, pid: Pid) -> nix::Result<Option<(u64, Bp)>> {
        let regs = ptrace::getregs(pid)?;
        let addr = regs.rip.wrapping_sub(1);
        Ok(self
            .map
            .get(&addr)
            .filter(|b| b.push_len != 0)
            .map(|b| (addr, *b)))
    }

    /// Before the first write into `addr`'s page: was the page in the tracee's page table?
    /// (Asked before our own read, which would bring it in too.)
    fn note_page(&mut self, pid: Pid, addr: u64) {
        let page = addr / procfs::page_size();
        if self.pagemap_failed || !self.checked.insert(page) {
            return;
        }
        if self.pagemap.as_ref().map(|(p, _)| *p) != Some(pid) {
            self.pagemap = procfs::process::Process::new(pid.as_raw())
                .and_then(|p| p.pagemap())
                .ok()
                .map(|m| (pid, m));
        }
        let info = self
            .pagemap
            .as_mut()
            .and_then(|(_, m)| m.get_info(page as usize).ok());
        use procfs::process::{MemoryPageFlags, PageInfo};
        match info {
            Some(PageInfo::MemoryPage(f)) if f.contains(MemoryPageFlags::PRESENT) => {}
            // Not present, or swapped out: our write brings it in, not the tracee's touch.
            Some(_) => {
                self.brought_in.insert(page);
            }
            None => {
                self.pagemap = None;
                self.pagemap_failed = true;
            }
        }
    }

    /// How many pages our breakpoint writes brought into the tracee's page table (see
    /// `brought_in`); `None` when pagemap could not be read.
    pub fn pages_brought_in(&self) -> Option<u64> {
        (!self.pagemap_failed).then_some(self.brought_in.len() as u64)
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
        if let Some((addr, bp)) = self.emulated_hit(pid)? {
            Self::emulate_push(pid, addr, &bp)?;
            return Ok(Some((addr, bp.tag)));
        }
        let Some((addr, bp)) = self.rewind(pid)? else {
            return Ok(None);
        };
        if bp.persistent {
            step_once(pid)?;
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
        if let Some((addr, bp)) = self.emulated_hit(tid)? {
            Self::emulate_push(tid, addr, &bp)?;
            return Ok(true);
        }
        let Some((addr, _)) = self.rewind(tid)? else {
            return Ok(false);
        };
        match step_once(tid) {
            Err(nix::Error::ESRCH) => return Ok(true),
            r => r?,
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

    /// Arms a breakpoint at `addr` in a free register; returns the register's number.
    /// ENOSPC when the four are in use; any other error: the kernel refused (no debug
    /// registers in this VM, say), and nothing was armed.
    pub fn arm(&mut self, pid: Pid, addr: u64) -> nix::Result<usize> {
        let Some(i) = self.slots.iter().position(|s| s.is_none()) else {
            return Err(nix::Error::ENOSPC);
        };
        poke_debugreg(pid, i as u64, addr)?;
        self.slots[i] = Some((addr, 0));
        if let Err(e) = poke_debugreg(pid, 7, self.dr7()) {
            self.slots[i] = None;
            return Err(e);
        }
        Ok(i)
    }

    /// Disarms register `i` (armed by [`HwBreakpoints::arm`]) of the stopped thread. Safe
    /// whatever the thread is doing: no byte of its text changes, and a thread trapped on it
    /// has already taken the trap.
    pub fn disarm(&mut self, pid: Pid, i: usize) -> nix::Result<()> {
        if self.slots.get(i).is_some_and(|s| s.is_some()) {
            self.slots[i] = None;
            poke_debugreg(pid, 7, self.dr7())?;
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::launch::{launch, Command};

    /// At /bin/true's exec stop, ld.so's first instruction's page is not yet in the page table
    /// (its first user fault is there) and the stack page is (the kernel wrote argv into it):
    /// a breakpoint in the first counts one page, a second one in the same page none, one in
    /// the stack none.
    #[test]
    fn pages_brought_in_are_the_untouched_ones_counted_once() {
        let name = "pages_brought_in_are_the_untouched_ones_counted_once";
        let cmd = Command {
            program: "/bin/true".into(),
            args: Vec::new(),
            env: Vec::new(),
            env_remove: Vec::new(),
            quiet: true,
            stdout_to_stderr: false,
            no_stdin: true,
            follow: None,
        };
        let mut t = match launch(&cmd) {
            Ok(t) => t,
            Err(e) => return crate::test_skip::skip(name, &format!("cannot trace here: {e}")),
        };
        if let Err(e) = t.run_to_exec() {
            return crate::test_skip::skip(name, &format!("cannot trace here: {e}"));
        }
        let regs = ptrace::getregs(t.pid).expect("registers at the exec stop");
        let page = procfs::page_size();
        let mut bps = Breakpoints::default();
        bps.insert(t.pid, regs.rip, 1, false)
            .expect("plant at the entry");
        assert_eq!(bps.pages_brought_in(), Some(1), "ld.so's entry page");
        bps.insert(t.pid, regs.rip & !(page - 1), 2, false)
            .expect("plant at the page's start");
        assert_eq!(bps.pages_brought_in(), Some(1), "the same page again");
        bps.insert(t.pid, regs.rsp & !7, 3, false)
            .expect("plant in the stack");
        assert_eq!(
            bps.pages_brought_in(),
            Some(1),
            "the stack page was present"
        );
        t.kill();
    }
}
