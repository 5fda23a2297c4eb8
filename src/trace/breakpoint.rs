//! Software breakpoints (int3) in a ptrace-stopped process, and hardware ones (debug registers).
//!
//! In: a stopped tracee, addresses and tags. Out: on a SIGTRAP stop, which breakpoint was hit
//! (its address and tag), the tracee left ready to run on as if it had not been there.
//!
//! A breakpoint replaces the first byte of an instruction with 0xcc. When the tracee hits it
//! (SIGTRAP with rip one past the address), [`Breakpoints::hit`] restores the byte, rewinds rip
//! and, for a persistent breakpoint, single-steps over the original instruction and plants the
//! int3 again, unless the tracer can run that instruction itself ([`Emulation`]). Each hit costs two or three ptrace stops; `profile` measures that cost by running
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
    /// The original instruction when hits of this persistent breakpoint are emulated (see
    /// [`Emulation`]), with its length.
    emulation: Option<(Emulation, u64)>,
}

/// An instruction a persistent breakpoint is taken over without a single-step: the tracer
/// does what it does to the registers (and the stack), so the int3 never leaves the text and
/// a thread passing meanwhile cannot miss it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Emulation {
    /// `push r64`.
    Push { reg: usize },
    /// `cmp r/m64, r64` with a memory operand (REX.W 39 /r): the flags of memory − register.
    CmpMemReg { reg: usize, mem: MemOperand },
    /// `mov r64, r/m64` with a memory operand (REX.W 8B /r).
    MovRegMem { reg: usize, mem: MemOperand },
}

/// A ModRM memory operand without an index register: `[base + disp]` or `[rip + disp]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MemOperand {
    Base {
        reg: usize,
        disp: i64,
    },
    /// Relative to the next instruction's address.
    Rip {
        disp: i64,
    },
}

/// The instruction at the low bytes of `word` when it is one [`Emulation`] covers, and its
/// length. Registers are numbered in the encoding's order (rax..rdi, then r8..r15).
fn decode(word: i64) -> Option<(Emulation, u64)> {
    let b = word.to_le_bytes();
    match (b[0], b[1]) {
        (0x50..=0x57, _) => {
            return Some((
                Emulation::Push {
                    reg: (b[0] - 0x50) as usize,
                },
                1,
            ))
        }
        (0x41, 0x50..=0x57) => {
            return Some((
                Emulation::Push {
                    reg: 8 + (b[1] - 0x50) as usize,
                },
                2,
            ))
        }
        _ => {}
    }
    // REX with W set and X clear (no index register is decoded).
    let rex = b[0];
    if rex & 0xfa != 0x48 {
        return None;
    }
    let (op, modrm) = (b[1], b[2]);
    let (md, reg, rm) = (modrm >> 6, (modrm >> 3) & 7, modrm & 7);
    let reg = reg as usize + if rex & 4 != 0 { 8 } else { 0 };
    let base = rm as usize + if rex & 1 != 0 { 8 } else { 0 };
    let disp32 = i32::from_le_bytes([b[3], b[4], b[5], b[6]]) as i64;
    let (mem, len) = match (md, rm) {
        // rm = 4 needs a SIB byte.
        (_, 4) | (3, _) => return None,
        (0, 5) => (MemOperand::Rip { disp: disp32 }, 7),
        (0, _) => (MemOperand::Base { reg: base, disp: 0 }, 3),
        (1, _) => (
            MemOperand::Base {
                reg: base,
                disp: b[3] as i8 as i64,
            },
            4,
        ),
        _ => (
            MemOperand::Base {
                reg: base,
                disp: disp32,
            },
            7,
        ),
    };
    match op {
        0x39 => Some((Emulation::CmpMemReg { reg, mem }, len)),
        0x8b => Some((Emulation::MovRegMem { reg, mem }, len)),
        _ => None,
    }
}

/// A general register by its encoding number.
fn reg_mut(regs: &mut nix::libc::user_regs_struct, n: usize) -> &mut u64 {
    match n {
        0 => &mut regs.rax,
        1 => &mut regs.rcx,
        2 => &mut regs.rdx,
        3 => &mut regs.rbx,
        4 => &mut regs.rsp,
        5 => &mut regs.rbp,
        6 => &mut regs.rsi,
        7 => &mut regs.rdi,
        8 => &mut regs.r8,
        9 => &mut regs.r9,
        10 => &mut regs.r10,
        11 => &mut regs.r11,
        12 => &mut regs.r12,
        13 => &mut regs.r13,
        14 => &mut regs.r14,
        _ => &mut regs.r15,
    }
}

/// The arithmetic flags (CF, PF, AF, ZF, SF, OF) a 64-bit `cmp` of `a` with `b` (a − b)
/// leaves, as the Intel SDM defines them for SUB.
const ARITH_FLAGS: u64 = 0x8d5;
fn cmp_flags(a: u64, b: u64) -> u64 {
    let r = a.wrapping_sub(b);
    let mut f = 0;
    if a < b {
        f |= 1; // CF
    }
    if (r as u8).count_ones() % 2 == 0 {
        f |= 1 << 2; // PF: even parity of the low byte
    }
    if (a ^ b ^ r) & 0x10 != 0 {
        f |= 1 << 4; // AF: borrow out of bit 3
    }
    if r == 0 {
        f |= 1 << 6; // ZF
    }
    if r >> 63 != 0 {
        f |= 1 << 7; // SF
    }
    if ((a ^ b) & (a ^ r)) >> 63 != 0 {
        f |= 1 << 11; // OF
    }
    f
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
                emulation: None,
            },
        );
        Ok(())
    }

    /// Plants a persistent breakpoint whose hits are emulated rather than single-stepped when
    /// the instruction under it is one [`Emulation`] covers. Returns whether they are.
    pub fn insert_emulated(&mut self, pid: Pid, addr: u64, tag: u32) -> nix::Result<bool> {
        self.insert(pid, addr, tag, true)?;
        let Some(bp) = self.map.get_mut(&addr) else {
            return Ok(false);
        };
        bp.emulation = decode(bp.orig);
        Ok(bp.emulation.is_some())
    }

    /// Whether a breakpoint is planted at `addr`.
    pub fn planted(&self, addr: u64) -> bool {
        self.map.contains_key(&addr)
    }

    /// Whether hits of the breakpoint at `addr` are emulated (one stop, no single-step).
    pub fn emulated(&self, addr: u64) -> bool {
        self.map.get(&addr).is_some_and(|b| b.emulation.is_some())
    }

    /// Runs the instruction under an emulated breakpoint at `addr` for the stopped task: the
    /// int3 stays where it is. EFAULT: its memory operand cannot be read (the instruction
    /// itself would fault; the caller single-steps it instead, so the fault is the program's).
    fn emulate(pid: Pid, addr: u64, bp: &Bp) -> nix::Result<()> {
        let mut regs = ptrace::getregs(pid)?;
        let Some((op, len)) = bp.emulation else {
            return Err(nix::Error::EINVAL);
        };
        let load = |regs: &mut nix::libc::user_regs_struct, mem: MemOperand| {
            let at = match mem {
                MemOperand::Base { reg, disp } => reg_mut(regs, reg).wrapping_add(disp as u64),
                MemOperand::Rip { disp } => (addr + len).wrapping_add(disp as u64),
            };
            ptrace::read(pid, at as ptrace::AddressType)
                .map(|v| v as u64)
                .map_err(|_| nix::Error::EFAULT)
        };
        match op {
            Emulation::Push { reg } => {
                let value = *reg_mut(&mut regs, reg);
                regs.rsp -= 8;
                ptrace::write(pid, regs.rsp as ptrace::AddressType, value as i64)?;
            }
            Emulation::CmpMemReg { reg, mem } => {
                let a = load(&mut regs, mem)?;
                let b = *reg_mut(&mut regs, reg);
                regs.eflags = (regs.eflags & !ARITH_FLAGS) | cmp_flags(a, b);
            }
            Emulation::MovRegMem { reg, mem } => {
                let v = load(&mut regs, mem)?;
                *reg_mut(&mut regs, reg) = v;
            }
        }
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
            .filter(|b| b.emulation.is_some())
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
            match Self::emulate(pid, addr, &bp) {
                Err(nix::Error::EFAULT) => {}
                r => return r.map(|_| Some((addr, bp.tag))),
            }
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
            match Self::emulate(tid, addr, &bp) {
                Err(nix::Error::EFAULT) => {}
                r => return r.map(|_| true),
            }
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

    /// The flags the CPU itself leaves after `cmp` (the oracle), for the emulation's figure.
    fn cpu_cmp_flags(a: u64, b: u64) -> u64 {
        let flags: u64;
        // SAFETY: a compare and a push/pop of the flags on our own stack.
        unsafe {
            std::arch::asm!(
                "cmp {a}, {b}",
                "pushfq",
                "pop {f}",
                a = in(reg) a,
                b = in(reg) b,
                f = out(reg) flags,
            );
        }
        flags & ARITH_FLAGS
    }

    #[test]
    fn cmp_flags_equal_the_cpu_s() {
        let edge = [
            0u64,
            1,
            2,
            0xf,
            0x10,
            0x7f,
            0x80,
            0xff,
            0x7fff_ffff_ffff_ffff,
            0x8000_0000_0000_0000,
            0x8000_0000_0000_0001,
            u64::MAX,
            u64::MAX - 1,
            0x5555_5555_5555_5555,
            0xaaaa_aaaa_aaaa_aaaa,
        ];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut vals = edge.to_vec();
        for _ in 0..200 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            vals.push(x);
        }
        for &a in &vals {
            for &b in &vals {
                assert_eq!(cmp_flags(a, b), cpu_cmp_flags(a, b), "cmp {a:#x} - {b:#x}");
            }
        }
    }

    /// The encodings as this machine's ld.so and libc have them at `call_init` and
    /// `dlclose` (by `objdump -d`), and ones that must not be taken.
    #[test]
    fn decode_takes_pushes_and_simple_memory_operands_only() {
        let word = |b: &[u8]| {
            let mut w = [0x90u8; 8];
            w[..b.len()].copy_from_slice(b);
            i64::from_le_bytes(w)
        };
        // push %rbx; push %r15
        assert_eq!(decode(word(&[0x53])), Some((Emulation::Push { reg: 3 }, 1)));
        assert_eq!(
            decode(word(&[0x41, 0x57])),
            Some((Emulation::Push { reg: 15 }, 2))
        );
        // cmp %rdi,0x28(%rdi)
        assert_eq!(
            decode(word(&[0x48, 0x39, 0x7f, 0x28])),
            Some((
                Emulation::CmpMemReg {
                    reg: 7,
                    mem: MemOperand::Base { reg: 7, disp: 0x28 }
                },
                4
            ))
        );
        // mov 0x14e1c1(%rip),%rdx
        assert_eq!(
            decode(word(&[0x48, 0x8b, 0x15, 0xc1, 0xe1, 0x14, 0x00])),
            Some((
                Emulation::MovRegMem {
                    reg: 2,
                    mem: MemOperand::Rip { disp: 0x14e1c1 }
                },
                7
            ))
        );
        // mov -0x8(%r12),%r9 (REX.WRB)
        assert_eq!(
            decode(word(&[0x4d, 0x8b, 0x4c, 0x24, 0xf8])),
            None,
            "a SIB byte is not decoded"
        );
        assert_eq!(
            decode(word(&[0x4d, 0x8b, 0x4d, 0xf8])),
            Some((
                Emulation::MovRegMem {
                    reg: 9,
                    mem: MemOperand::Base { reg: 13, disp: -8 }
                },
                4
            ))
        );
        // mov %rdi,%rax (register operand), cmp with a 32-bit operand, endbr64
        assert_eq!(decode(word(&[0x48, 0x8b, 0xc7])), None);
        assert_eq!(decode(word(&[0x39, 0x7f, 0x28])), None);
        assert_eq!(decode(word(&[0xf3, 0x0f, 0x1e, 0xfa])), None);
    }

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
