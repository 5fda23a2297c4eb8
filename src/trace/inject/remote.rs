//! The tracee seen from outside: its registers, its memory and syscalls run in it.
//!
//! In: a ptrace-stopped thread. Out: its registers and extended state saved and put back
//! exactly ([`SavedState`]), reads and writes of its memory through /proc/PID/mem ([`Memory`]),
//! system calls made in it by single-stepping over a `syscall` instruction ([`Remote`]), and
//! what its vDSO offers (a `syscall` instruction, `clock_gettime`).

use std::fs::File;
use std::os::unix::fs::FileExt;

use nix::libc;
use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::{crashed, perr, InjectError};

/// Registers and extended state, saved so that they come back exactly.
pub struct SavedState {
    regs: libc::user_regs_struct,
    xstate: Option<Vec<u8>>,
}

const NT_X86_XSTATE: libc::c_int = 0x202;

/// PTRACE_GETREGSET or PTRACE_SETREGSET of the NT_X86_XSTATE set, into or from `buf`;
/// returns how many bytes the kernel used.
fn xstate_regset(request: libc::c_uint, pid: Pid, buf: &mut [u8]) -> nix::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: the kernel reads or writes at most iov_len bytes of buf and updates iov_len.
    let r = unsafe {
        libc::ptrace(
            request,
            pid.as_raw(),
            NT_X86_XSTATE as usize as *mut libc::c_void,
            &mut iov as *mut libc::iovec as *mut libc::c_void,
        )
    };
    if r == 0 {
        Ok(iov.iov_len)
    } else {
        Err(nix::Error::last())
    }
}

impl SavedState {
    pub fn save(pid: Pid) -> Result<SavedState, InjectError> {
        let regs = ptrace::getregs(pid).map_err(perr("GETREGS", pid))?;
        let mut buf = vec![0u8; 16384];
        let xstate = xstate_regset(libc::PTRACE_GETREGSET, pid, &mut buf)
            .ok()
            .map(|len| {
                buf.truncate(len);
                buf
            });
        Ok(SavedState { regs, xstate })
    }

    pub fn restore(&self, pid: Pid) -> Result<(), InjectError> {
        if let Some(x) = &self.xstate {
            // The buffer is what GETREGSET gave for this thread.
            xstate_regset(libc::PTRACE_SETREGSET, pid, &mut x.clone())
                .map_err(perr("SETREGSET", pid))?;
        }
        ptrace::setregs(pid, self.regs).map_err(perr("SETREGS", pid))
    }

    pub fn regs(&self) -> &libc::user_regs_struct {
        &self.regs
    }
}

/// The target's memory through /proc/PID/mem (writes reach read-only and executable pages, as
/// ptrace's do).
pub struct Memory {
    pid: i32,
    file: File,
}

impl Memory {
    pub fn open(pid: Pid) -> Result<Memory, InjectError> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(format!("/proc/{pid}/mem"))
            .map_err(|source| InjectError::Memory {
                pid: pid.as_raw(),
                source,
            })?;
        Ok(Memory {
            pid: pid.as_raw(),
            file,
        })
    }

    pub fn read(&self, addr: u64, len: usize) -> Result<Vec<u8>, InjectError> {
        let mut buf = vec![0u8; len];
        self.file
            .read_exact_at(&mut buf, addr)
            .map_err(|source| InjectError::Memory {
                pid: self.pid,
                source,
            })?;
        Ok(buf)
    }

    pub fn write(&self, addr: u64, bytes: &[u8]) -> Result<(), InjectError> {
        self.file
            .write_all_at(bytes, addr)
            .map_err(|source| InjectError::Memory {
                pid: self.pid,
                source,
            })
    }
}

pub(super) fn as_bytes<T: Copy>(v: &T) -> &[u8] {
    // SAFETY: T is a repr(C) plain-old-data struct of integers.
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>()) }
}

pub(super) fn from_bytes<T: Copy + Default>(b: &[u8]) -> T {
    let mut v = T::default();
    let n = std::mem::size_of::<T>().min(b.len());
    // SAFETY: T is plain old data; any bit pattern of its integers is valid.
    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), (&mut v as *mut T).cast::<u8>(), n) };
    v
}

/// Runs syscalls in the stopped thread `pid` by single-stepping over a `syscall` instruction.
pub struct Remote {
    pid: Pid,
    base: libc::user_regs_struct,
    /// Address of a `syscall` instruction in the target.
    stub: u64,
}

impl Remote {
    pub fn new(pid: Pid, base: libc::user_regs_struct, stub: u64) -> Remote {
        Remote { pid, base, stub }
    }

    pub fn set_stub(&mut self, stub: u64) {
        self.stub = stub;
    }

    /// One syscall; returns its raw result (-errno on failure).
    pub fn syscall(&self, nr: u64, args: [u64; 6]) -> Result<i64, InjectError> {
        let pid = self.pid;
        let mut r = self.base;
        r.rax = nr;
        r.orig_rax = u64::MAX; // not in a syscall: no restart on resume
        r.rdi = args[0];
        r.rsi = args[1];
        r.rdx = args[2];
        r.r10 = args[3];
        r.r8 = args[4];
        r.r9 = args[5];
        r.rip = self.stub;
        ptrace::setregs(pid, r).map_err(perr("SETREGS", pid))?;
        ptrace::step(pid, None).map_err(perr("SINGLESTEP", pid))?;
        loop {
            match waitpid(pid, Some(WaitPidFlag::__WALL)) {
                Ok(WaitStatus::Stopped(_, Signal::SIGTRAP)) => break,
                // A fault at the stub: the syscall did not run. (A signal sent to the target
                // meanwhile is a stop we must not swallow either; both end the injection.)
                Ok(WaitStatus::Stopped(_, sig)) => {
                    return Err(crashed(pid, sig.as_str()));
                }
                Ok(WaitStatus::PtraceEvent(..)) => {
                    ptrace::step(pid, None).map_err(perr("SINGLESTEP", pid))?;
                }
                Ok(WaitStatus::Exited(..)) | Ok(WaitStatus::Signaled(..)) => {
                    return Err(InjectError::Lost {
                        pid: pid.as_raw(),
                        what: "ended".into(),
                    })
                }
                Ok(_) => continue,
                Err(nix::errno::Errno::EINTR) if !crate::trace::interrupted() => continue,
                Err(nix::errno::Errno::EINTR) => return Err(InjectError::Interrupted),
                Err(e) => return Err(perr("waitpid", pid)(e)),
            }
        }
        let after = ptrace::getregs(pid).map_err(perr("GETREGS", pid))?;
        Ok(after.rax as i64)
    }

    pub(super) fn checked(
        &self,
        what: &'static str,
        nr: u64,
        args: [u64; 6],
    ) -> Result<u64, InjectError> {
        let r = self.syscall(nr, args)?;
        if (-4095..0).contains(&r) {
            return Err(InjectError::RemoteSyscall {
                what,
                pid: self.pid.as_raw(),
                errno: nix::Error::from_raw(-r as i32),
            });
        }
        Ok(r as u64)
    }
}

/// The address range of a mapping the kernel names in /proc/PID/maps (`[vdso]`, `[stack]`).
pub(super) fn special_mapping(pid: Pid, name: &str) -> Option<(u64, u64)> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let line = maps.lines().find(|l| l.ends_with(name))?;
    let (a, b) = line.split_whitespace().next()?.split_once('-')?;
    Some((
        u64::from_str_radix(a, 16).ok()?,
        u64::from_str_radix(b, 16).ok()?,
    ))
}

/// The target's vDSO: its address and bytes.
fn vdso(pid: Pid, mem: &Memory) -> Option<(u64, Vec<u8>)> {
    let (a, b) = special_mapping(pid, "[vdso]")?;
    Some((a, mem.read(a, b.checked_sub(a)? as usize).ok()?))
}

/// Finds a `syscall` instruction (0f 05) in the target's vDSO.
pub fn vdso_syscall(pid: Pid, mem: &Memory) -> Option<u64> {
    let (a, bytes) = vdso(pid, mem)?;
    bytes
        .windows(2)
        .position(|w| w == [0x0f, 0x05])
        .map(|i| a + i as u64)
}

/// The vDSO's `__vdso_clock_gettime`, from its dynamic symbol table.
pub fn vdso_clock_gettime(pid: Pid, mem: &Memory) -> Option<u64> {
    let (a, bytes) = vdso(pid, mem)?;
    let elf = goblin::elf::Elf::parse(&bytes).ok()?;
    let sym = elf.dynsyms.iter().find(|s| {
        s.st_value != 0
            && matches!(
                elf.dynstrtab.get_at(s.st_name),
                Some("__vdso_clock_gettime") | Some("clock_gettime")
            )
    })?;
    // The vDSO is linked at 0 (or at a base its PT_LOAD says): bias = mapping - first vaddr.
    let first = elf
        .program_headers
        .iter()
        .find(|p| p.p_type == goblin::elf::program_header::PT_LOAD)
        .map(|p| p.p_vaddr)
        .unwrap_or(0);
    Some(a + sym.st_value - first)
}
