//! The fork probe: code injected into a stopped target that forks it N times at native speed.
//!
//! In: a ptrace-stopped thread (at a breakpoint, rip rewound) and what to run. Out: one
//! [`ProbeRecord`] per iteration, read back from the target's memory, with every register
//! (general, x87/SSE/AVX state) and every byte of the target as they were.
//!
//! How (the sequence gdb's `call` uses, minus the stack):
//! 1. Save the registers (PTRACE_GETREGS) and the extended state (PTRACE_GETREGSET
//!    NT_X86_XSTATE).
//! 2. mmap one shared anonymous region by *remote syscalls*: rip is pointed at a `syscall`
//!    instruction (the first one found in the vDSO, later the probe's own) and the thread is
//!    single-stepped over it, so no byte of the target is changed. It holds the probe (code,
//!    parameters, strings, scratch) and after it the records, pre-faulted (MAP_POPULATE):
//!    shared, fork copies no page-table entry of it and the parent's writes never fault.
//! 3. Block every signal in the thread and set SIGCHLD to SIG_DFL for the loop (a handler of
//!    the target's must not reap our children), turn off PTRACE_O_TRACEFORK/VFORK/CLONE (the
//!    children must not stop), start the probe and wait for its int3.
//! 4. Read the records, undo 3, munmap the region, put back the registers.
//!
//! The probes' source is in probes/*.s (AT&T syntax), assembled into this binary with
//! `global_asm!`; the bytes we inject are our own copy of that code (position independent:
//! only rip-relative references inside the probe). A test assembles the same files with GNU as
//! and compares the bytes, and checks the parameter offsets against [`ProbeParams`].

use std::fs::File;
use std::os::unix::fs::FileExt;

use nix::libc;
use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

std::arch::global_asm!(
    concat!(
        include_str!("../../probes/params.s"),
        include_str!("../../probes/probe_fork.s"),
        include_str!("../../probes/probe_vfork.s"),
        include_str!("../../probes/probe_spawn.s"),
    ),
    options(att_syntax)
);

extern "C" {
    static ldcost_probe_fork: u8;
    static ldcost_probe_fork_end: u8;
    static ldcost_probe_vfork: u8;
    static ldcost_probe_vfork_end: u8;
    static ldcost_probe_spawn: u8;
    static ldcost_probe_spawn_end: u8;
}

/// How the probe creates each child.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Spawn {
    Fork,
    Vfork,
    PosixSpawn,
}

impl Spawn {
    pub fn label(self) -> &'static str {
        match self {
            Spawn::Fork => "fork",
            Spawn::Vfork => "vfork",
            Spawn::PosixSpawn => "posix_spawn",
        }
    }

    /// The probe's machine code (our own copy, see the module docs) and its source file.
    pub fn probe(self) -> (&'static [u8], &'static str) {
        // SAFETY: the symbols are labels of global_asm! above, start before end, in .text.
        unsafe {
            let (a, b, src) = match self {
                Spawn::Fork => (
                    &raw const ldcost_probe_fork,
                    &raw const ldcost_probe_fork_end,
                    "probes/probe_fork.s",
                ),
                Spawn::Vfork => (
                    &raw const ldcost_probe_vfork,
                    &raw const ldcost_probe_vfork_end,
                    "probes/probe_vfork.s",
                ),
                Spawn::PosixSpawn => (
                    &raw const ldcost_probe_spawn,
                    &raw const ldcost_probe_spawn_end,
                    "probes/probe_spawn.s",
                ),
            };
            (
                std::slice::from_raw_parts(a, (b as usize) - (a as usize)),
                src,
            )
        }
    }
}

/// Offset of the probe's entry point (0 holds the `syscall; int3` stub).
pub const PROBE_ENTRY: u64 = 4;

/// The parameter block (probes/params.s, `P_*`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbeParams {
    pub n: u64,
    pub action: u64,
    pub exit_fn: u64,
    pub exit_alt: u64,
    pub path: u64,
    pub argv: u64,
    pub envp: u64,
    pub records: u64,
    pub spawn_fn: u64,
    pub code: u64,
    pub clock_fn: u64,
    pub done: u64,
    pub error: i64,
    pub t_start: u64,
    pub t_end: u64,
    pub ru_start: Rusage,
    pub sigmask: u64,
    pub pdeath: u64,
    pub ppid: u64,
    pub attr: u64,
    pub fork_fn: u64,
    pub devnull: u64,
}

/// `struct rusage` as the kernel writes it (x86-64).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rusage {
    pub utime: [i64; 2],
    pub stime: [i64; 2],
    pub maxrss: i64,
    pub ixrss: i64,
    pub idrss: i64,
    pub isrss: i64,
    pub minflt: i64,
    pub majflt: i64,
    pub nswap: i64,
    pub inblock: i64,
    pub oublock: i64,
    pub msgsnd: i64,
    pub msgrcv: i64,
    pub nsignals: i64,
    pub nvcsw: i64,
    pub nivcsw: i64,
}

impl Rusage {
    pub fn user_ns(&self) -> u64 {
        (self.utime[0] as u64) * 1_000_000_000 + (self.utime[1] as u64) * 1000
    }
    pub fn sys_ns(&self) -> u64 {
        (self.stime[0] as u64) * 1_000_000_000 + (self.stime[1] as u64) * 1000
    }
}

/// One iteration (probes/params.s, `R_*`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProbeRecord {
    pub t0: u64,
    pub t1: u64,
    pub t2: u64,
    pub pid: u64,
    pub status: u64,
    pub _pad: u64,
    pub child: Rusage,
    pub parent: Rusage,
}

/// What the child does (`P_ACTION`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChildAction {
    /// exit_group(code), as `_exit()`.
    RawExit,
    /// Call this `exit` (the address in the target's GOT slot: lazily bound or not), and for
    /// odd iterations `alt` if given (libc's own `exit`: the lazy-binding A/B).
    CallExit { func: u64, alt: Option<u64> },
    /// execve(path, argv, envp).
    Exec {
        path: Vec<u8>,
        argv: Vec<Vec<u8>>,
        envp: Vec<Vec<u8>>,
    },
}

/// A loop to run.
#[derive(Debug, Clone)]
pub struct ProbeRequest {
    pub spawn: Spawn,
    pub iterations: u64,
    pub action: ChildAction,
    /// libc's fork() (None: the raw syscall), posix_spawn() (required for PosixSpawn).
    pub fork_fn: Option<u64>,
    pub spawn_fn: Option<u64>,
    /// The vDSO's clock_gettime (None: the syscall).
    pub clock_fn: Option<u64>,
    pub exit_code: u64,
}

/// What one probe run gave.
#[derive(Debug, Clone)]
pub struct ProbeResult {
    pub records: Vec<ProbeRecord>,
    pub ru_start: Rusage,
    pub t_start: u64,
    pub t_end: u64,
    /// -errno of the first failure (the loop stopped there).
    pub error: Option<i64>,
    /// Bytes of the probe page (VMAs the children inherit from us: 1).
    pub page_bytes: u64,
}

/// Errors of injection. The target is killed by the caller on any of them (its state is not
/// known to be intact).
#[derive(Debug, thiserror::Error)]
pub enum InjectError {
    #[error("ptrace {what} on pid {pid}: {errno}")]
    Ptrace {
        what: &'static str,
        pid: i32,
        errno: nix::Error,
    },
    #[error("remote {what} in pid {pid} failed: {errno}")]
    RemoteSyscall {
        what: &'static str,
        pid: i32,
        errno: nix::Error,
    },
    #[error("/proc/{pid}/mem: {source}")]
    Memory { pid: i32, source: std::io::Error },
    #[error("the target (pid {pid}) {what} while the probe ran")]
    Lost { pid: i32, what: String },
    #[error("the probe in pid {pid} stopped at {rip:#x} with {signal} (not its own int3)")]
    Crashed { pid: i32, rip: u64, signal: String },
    #[error("interrupted")]
    Interrupted,
}

fn perr(what: &'static str, pid: Pid) -> impl Fn(nix::Error) -> InjectError {
    move |errno| InjectError::Ptrace {
        what,
        pid: pid.as_raw(),
        errno,
    }
}

/// Registers and extended state, saved so that they come back exactly.
pub struct SavedState {
    regs: libc::user_regs_struct,
    xstate: Option<Vec<u8>>,
}

const NT_X86_XSTATE: libc::c_int = 0x202;

impl SavedState {
    pub fn save(pid: Pid) -> Result<SavedState, InjectError> {
        let regs = ptrace::getregs(pid).map_err(perr("GETREGS", pid))?;
        let mut buf = vec![0u8; 16384];
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: PTRACE_GETREGSET writes at most iov_len bytes into buf and updates iov_len.
        let r = unsafe {
            libc::ptrace(
                libc::PTRACE_GETREGSET,
                pid.as_raw(),
                NT_X86_XSTATE as usize as *mut libc::c_void,
                &mut iov as *mut libc::iovec as *mut libc::c_void,
            )
        };
        let xstate = (r == 0).then(|| {
            buf.truncate(iov.iov_len);
            buf
        });
        Ok(SavedState { regs, xstate })
    }

    pub fn restore(&self, pid: Pid) -> Result<(), InjectError> {
        if let Some(x) = &self.xstate {
            let mut x = x.clone();
            let mut iov = libc::iovec {
                iov_base: x.as_mut_ptr().cast(),
                iov_len: x.len(),
            };
            // SAFETY: the buffer is what GETREGSET gave for this thread.
            let r = unsafe {
                libc::ptrace(
                    libc::PTRACE_SETREGSET,
                    pid.as_raw(),
                    NT_X86_XSTATE as usize as *mut libc::c_void,
                    &mut iov as *mut libc::iovec as *mut libc::c_void,
                )
            };
            if r != 0 {
                return Err(InjectError::Ptrace {
                    what: "SETREGSET",
                    pid: pid.as_raw(),
                    errno: nix::Error::last(),
                });
            }
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

fn as_bytes<T: Copy>(v: &T) -> &[u8] {
    // SAFETY: T is a repr(C) plain-old-data struct of integers.
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>()) }
}

fn from_bytes<T: Copy + Default>(b: &[u8]) -> T {
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
                    let rip = ptrace::getregs(pid).map(|r| r.rip).unwrap_or(0);
                    return Err(InjectError::Crashed {
                        pid: pid.as_raw(),
                        rip,
                        signal: sig.as_str().into(),
                    });
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
                Err(nix::errno::Errno::EINTR) if !super::interrupted() => continue,
                Err(nix::errno::Errno::EINTR) => return Err(InjectError::Interrupted),
                Err(e) => return Err(perr("waitpid", pid)(e)),
            }
        }
        let after = ptrace::getregs(pid).map_err(perr("GETREGS", pid))?;
        Ok(after.rax as i64)
    }

    fn checked(&self, what: &'static str, nr: u64, args: [u64; 6]) -> Result<u64, InjectError> {
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

/// The target's vDSO: its address and bytes.
fn vdso(pid: Pid, mem: &Memory) -> Option<(u64, Vec<u8>)> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let line = maps.lines().find(|l| l.ends_with("[vdso]"))?;
    let (a, b) = line.split_whitespace().next()?.split_once('-')?;
    let (a, b) = (
        u64::from_str_radix(a, 16).ok()?,
        u64::from_str_radix(b, 16).ok()?,
    );
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

const PAGE: u64 = 4096;
const STACK_BYTES: u64 = 256 * 1024;
const MAP_SHARED: u64 = 0x01;
const MAP_PRIVATE: u64 = 0x02;
const MAP_ANONYMOUS: u64 = 0x20;
const MAP_NORESERVE: u64 = 0x4000;
const MAP_POPULATE: u64 = 0x8000;

fn round_up(v: u64) -> u64 {
    v.div_ceil(PAGE) * PAGE
}

/// Lays out the probe page: code at 0, parameters at 1024, posix_spawnattr at 2048, strings
/// from 4096, the stack at the top.
struct PageImage {
    bytes: Vec<u8>,
    params_off: u64,
    attr_off: u64,
    size: u64,
}

fn build_image(
    code: &[u8],
    base: u64,
    params: &mut ProbeParams,
    action: &ChildAction,
    attr: Option<&[u8]>,
) -> PageImage {
    let params_off = 1024u64;
    let attr_off = 2048u64;
    let mut data: Vec<u8> = Vec::new();
    let data_off = 4096u64;
    let push = |data: &mut Vec<u8>, b: &[u8]| -> u64 {
        let at = base + data_off + data.len() as u64;
        data.extend_from_slice(b);
        data.push(0);
        while data.len() % 8 != 0 {
            data.push(0);
        }
        at
    };
    params.devnull = push(&mut data, b"/dev/null");
    if let ChildAction::Exec { path, argv, envp } = action {
        params.path = push(&mut data, path);
        let argv_ptrs: Vec<u64> = argv.iter().map(|a| push(&mut data, a)).collect();
        let envp_ptrs: Vec<u64> = envp.iter().map(|e| push(&mut data, e)).collect();
        for (ptrs, slot) in [(argv_ptrs, &mut params.argv), (envp_ptrs, &mut params.envp)] {
            *slot = base + data_off + data.len() as u64;
            for p in ptrs {
                data.extend_from_slice(&p.to_le_bytes());
            }
            data.extend_from_slice(&0u64.to_le_bytes());
        }
    }
    // A last page of scratch space for the remote syscalls' arguments.
    let size = round_up(data_off + data.len() as u64) + PAGE;
    let mut bytes = vec![0u8; (data_off as usize) + data.len()];
    bytes[..code.len()].copy_from_slice(code);
    if let Some(a) = attr {
        bytes[attr_off as usize..attr_off as usize + a.len()].copy_from_slice(a);
        params.attr = base + attr_off;
    }
    bytes[data_off as usize..].copy_from_slice(&data);
    PageImage {
        bytes,
        params_off,
        attr_off,
        size,
    }
}

/// A posix_spawnattr_t asking for `mask` in the child (built by our own glibc: the same ABI
/// as the target's on this machine; the caller only uses it for glibc targets).
fn spawn_attr(mask: u64) -> Vec<u8> {
    // SAFETY: plain libc calls on a local attribute object, destroyed after copying its bytes.
    unsafe {
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        libc::posix_spawnattr_init(&mut attr);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in 1..64 {
            if mask & (1u64 << (sig - 1)) != 0 {
                libc::sigaddset(&mut set, sig);
            }
        }
        libc::posix_spawnattr_setsigmask(&mut attr, &set);
        libc::posix_spawnattr_setflags(&mut attr, libc::POSIX_SPAWN_SETSIGMASK as libc::c_short);
        let bytes = as_bytes(&attr).to_vec();
        libc::posix_spawnattr_destroy(&mut attr);
        bytes
    }
}

/// The probe's stack. Preferably the target's own main stack, a page below its rsp (the bytes
/// it overwrites are saved and put back): no mapping of ours then has private pages, so fork
/// copies no page-table entry and clones no anon_vma for the probe. Otherwise (a thread's or a
/// tiny stack) a private mapping of its own.
enum Stack {
    Target {
        top: u64,
        saved_at: u64,
        saved: Vec<u8>,
    },
    Own {
        base: u64,
    },
}

const PROBE_STACK_USE: u64 = 64 * 1024;

impl Stack {
    fn choose(pid: Pid, rsp: u64, mem: &Memory, remote: &Remote) -> Result<Stack, InjectError> {
        if let Some(s) = Self::on_target_stack(pid, rsp, mem) {
            return Ok(s);
        }
        let base = remote.checked(
            "mmap (probe stack)",
            9,
            [
                0,
                STACK_BYTES,
                3,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                u64::MAX,
                0,
            ],
        )?;
        Ok(Stack::Own { base })
    }

    fn on_target_stack(pid: Pid, rsp: u64, mem: &Memory) -> Option<Stack> {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
        let line = maps.lines().find(|l| l.ends_with("[stack]"))?;
        let (a, b) = line.split_whitespace().next()?.split_once('-')?;
        let (start, end) = (
            u64::from_str_radix(a, 16).ok()?,
            u64::from_str_radix(b, 16).ok()?,
        );
        if !(start..end).contains(&rsp) {
            return None;
        }
        let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
        let soft = limits
            .lines()
            .find(|l| l.starts_with("Max stack size"))?
            .split_whitespace()
            .nth(3)?
            .to_string();
        let rlimit = if soft == "unlimited" {
            u64::MAX
        } else {
            soft.parse().ok()?
        };
        // Below the red zone and a page more; the probe uses far less than 64 KiB.
        let top = (rsp - 4096) & !15;
        let low = top.checked_sub(PROBE_STACK_USE)?;
        // The stack may grow to `low` (RLIMIT_STACK), with a margin for the program's own.
        if end - low > rlimit / 2 {
            return None;
        }
        let saved_at = low.max(start);
        let saved = mem.read(saved_at, (top - saved_at) as usize).ok()?;
        Some(Stack::Target {
            top,
            saved_at,
            saved,
        })
    }

    fn top(&self) -> u64 {
        match self {
            Stack::Target { top, .. } => *top,
            Stack::Own { base } => base + STACK_BYTES,
        }
    }

    fn release(&self, mem: &Memory, remote: &Remote) -> Result<(), InjectError> {
        match self {
            Stack::Target {
                saved_at, saved, ..
            } => mem.write(*saved_at, saved),
            Stack::Own { base } => remote
                .checked("munmap (probe stack)", 11, [*base, STACK_BYTES, 0, 0, 0, 0])
                .map(|_| ()),
        }
    }
}

/// Whether SIGCHLD (signal 17) is pending for the thread or its process (/proc/PID/status).
fn sigchld_pending(pid: Pid) -> bool {
    let Ok(st) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    st.lines()
        .filter_map(|l| {
            l.strip_prefix("SigPnd:")
                .or_else(|| l.strip_prefix("ShdPnd:"))
        })
        .filter_map(|v| u64::from_str_radix(v.trim(), 16).ok())
        .any(|m| m & (1 << 16) != 0)
}

/// Options the target was traced with, to put back after the loop.
pub fn trace_options_without_children() -> ptrace::Options {
    ptrace::Options::PTRACE_O_EXITKILL
        | ptrace::Options::PTRACE_O_TRACEEXEC
        | ptrace::Options::PTRACE_O_TRACEEXIT
}

/// Runs one probe loop in the stopped thread `pid` and puts everything back. `on_other` is
/// called with the stops of other traced threads while the loop runs (they must be resumed).
pub fn run_probe(
    pid: Pid,
    req: &ProbeRequest,
    mut on_other: impl FnMut(Pid, &WaitStatus),
) -> Result<ProbeResult, InjectError> {
    let saved = SavedState::save(pid)?;
    let mem = Memory::open(pid)?;
    let (code, _) = req.spawn.probe();
    // The first syscall needs a `syscall` instruction in the target: the vDSO's, or two bytes
    // at rip put back at once.
    let rip = saved.regs().rip;
    let mut patched: Option<Vec<u8>> = None;
    let stub = match vdso_syscall(pid, &mem) {
        Some(a) => a,
        None => {
            let orig = mem.read(rip, 2)?;
            mem.write(rip, &[0x0f, 0x05])?;
            patched = Some(orig);
            rip
        }
    };
    let mut remote = Remote::new(pid, *saved.regs(), stub);
    let result = (|| {
        let rec_size = std::mem::size_of::<ProbeRecord>() as u64;
        // 1. The probe page (rwx: code, data, stack; inherited by children).
        let mut params = ProbeParams {
            n: req.iterations,
            clock_fn: req.clock_fn.unwrap_or(0),
            code: req.exit_code,
            fork_fn: req.fork_fn.unwrap_or(0),
            spawn_fn: req.spawn_fn.unwrap_or(0),
            ..Default::default()
        };
        // Size first with a dry layout, then map, then lay out at the real base. The records
        // follow the image in the same shared mapping, pre-faulted: one VMA in all. A second
        // VMA cost every fork of a small static program 4% (a C loop with and without a
        // 12 KiB shared and a MADV_DONTFORK mapping beside it, 40 interleaved pairs: 0.96);
        // shared, the records are neither copied by fork nor write-faulted by the parent.
        let dry = build_image(code, 0, &mut params.clone(), &req.action, None);
        let rec_bytes = round_up(rec_size * req.iterations.max(1));
        let map_bytes = dry.size + rec_bytes;
        let page = remote.checked(
            "mmap (probe page and records)",
            9,
            [
                0,
                map_bytes,
                7,
                MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE,
                u64::MAX,
                0,
            ],
        )?;
        if let Some(orig) = patched.take() {
            mem.write(rip, &orig)?;
        }
        // The probe's own stub (its first bytes) serves the next syscalls.
        mem.write(page, &code[..4])?;
        remote.set_stub(page);
        let records = page + dry.size;
        let run = (|| {
            // 2. Signals: all blocked in this thread; SIGCHLD to SIG_DFL (old action saved in
            // the page, read back and restored after).
            // Scratch space: the page's last page (the image written below does not cover it).
            let scratch = page + dry.size - PAGE;
            mem.write(scratch, &[0u8; 256])?;
            let full = u64::MAX;
            mem.write(scratch, &full.to_le_bytes())?;
            remote.checked("rt_sigprocmask", 14, [2, scratch, scratch + 8, 8, 0, 0])?;
            let old_mask =
                u64::from_le_bytes(mem.read(scratch + 8, 8)?.try_into().unwrap_or_default());
            // struct kernel_sigaction { handler, flags, restorer, mask }: SIG_DFL is all zero.
            let act = scratch + 64;
            let old_act = scratch + 128;
            mem.write(act, &[0u8; 32])?;
            remote.checked("rt_sigaction(SIGCHLD)", 13, [17, act, old_act, 8, 0, 0])?;
            // The children's SIGCHLDs stay pending while the thread blocks everything; unless
            // one was pending before, they are discarded (setting SIG_IGN drops a pending
            // signal) so that the target's handler does not see children it never had.
            let pending_before = sigchld_pending(pid);
            let ign = scratch + 160;
            let mut ign_act = [0u8; 32];
            ign_act[0] = 1; // SIG_IGN
            mem.write(ign, &ign_act)?;
            let restore_signals = |remote: &Remote| -> Result<(), InjectError> {
                if !pending_before {
                    remote.checked("rt_sigaction(SIGCHLD, SIG_IGN)", 13, [17, ign, 0, 8, 0, 0])?;
                }
                remote.checked("rt_sigaction(SIGCHLD)", 13, [17, old_act, 0, 8, 0, 0])?;
                mem.write(scratch, &old_mask.to_le_bytes())?;
                remote.checked("rt_sigprocmask", 14, [2, scratch, 0, 8, 0, 0])?;
                Ok(())
            };
            let loop_result = (|| {
                params.records = records;
                params.sigmask = old_mask;
                params.ppid = pid.as_raw() as u64;
                match &req.action {
                    ChildAction::RawExit => params.action = 0,
                    ChildAction::CallExit { func, alt } => {
                        params.action = 1;
                        params.exit_fn = *func;
                        params.exit_alt = alt.unwrap_or(0);
                    }
                    ChildAction::Exec { .. } => {
                        params.action = 2;
                        params.pdeath = 1;
                    }
                }
                let attr = (req.spawn == Spawn::PosixSpawn).then(|| spawn_attr(old_mask));
                let img = build_image(code, page, &mut params, &req.action, attr.as_deref());
                debug_assert_eq!(img.size, dry.size);
                let _ = img.attr_off;
                mem.write(page, &img.bytes)?;
                mem.write(page + img.params_off, as_bytes(&params))?;
                // 3. Children must not stop: no fork/clone tracing during the loop.
                ptrace::setoptions(pid, trace_options_without_children())
                    .map_err(perr("SETOPTIONS", pid))?;
                let stack = Stack::choose(pid, saved.regs().rsp, &mem, &remote)?;
                let mut r = *saved.regs();
                r.rip = page + PROBE_ENTRY;
                r.rdi = page + img.params_off;
                r.rsp = stack.top();
                r.orig_rax = u64::MAX;
                ptrace::setregs(pid, r).map_err(perr("SETREGS", pid))?;
                ptrace::cont(pid, None).map_err(perr("CONT", pid))?;
                let waited = wait_for_int3(pid, page, dry.size, &mut on_other);
                let released = stack.release(&mem, &remote);
                waited?;
                released?;
                let out: ProbeParams = from_bytes(
                    &mem.read(page + img.params_off, std::mem::size_of::<ProbeParams>())?,
                );
                let done = out.done.min(req.iterations) as usize;
                let raw = mem.read(records, done * rec_size as usize)?;
                let recs = raw
                    .chunks_exact(rec_size as usize)
                    .map(from_bytes::<ProbeRecord>)
                    .collect();
                Ok(ProbeResult {
                    records: recs,
                    ru_start: out.ru_start,
                    t_start: out.t_start,
                    t_end: out.t_end,
                    error: (out.error != 0).then_some(out.error),
                    page_bytes: map_bytes,
                })
            })();
            let restored = restore_signals(&remote);
            let r = loop_result?;
            restored?;
            Ok(r)
        })();
        // 4. Unmap (the stub is in the page being unmapped: single-stepping returns before
        // the next instruction is fetched).
        let _ = remote.syscall(11, [page, map_bytes, 0, 0, 0, 0]);
        run
    })();
    if let Some(orig) = patched {
        let _ = mem.write(rip, &orig);
    }
    let restored = saved.restore(pid);
    let r = result?;
    restored?;
    Ok(r)
}

/// Waits for the probe's final int3, resuming other threads' stops meanwhile.
fn wait_for_int3(
    pid: Pid,
    page: u64,
    size: u64,
    on_other: &mut impl FnMut(Pid, &WaitStatus),
) -> Result<(), InjectError> {
    loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::__WALL)) {
            Ok(st) if st.pid() != Some(pid) => {
                if let Some(other) = st.pid() {
                    on_other(other, &st);
                }
            }
            Ok(WaitStatus::Stopped(_, Signal::SIGTRAP)) => {
                let rip = ptrace::getregs(pid).map_err(perr("GETREGS", pid))?.rip;
                if rip > page && rip <= page + size {
                    return Ok(());
                }
                return Err(InjectError::Crashed {
                    pid: pid.as_raw(),
                    rip,
                    signal: "SIGTRAP".into(),
                });
            }
            // SIGSTOP/SIGTSTP group stops and the like: keep the loop running.
            Ok(WaitStatus::Stopped(
                _,
                sig @ (Signal::SIGSTOP | Signal::SIGTSTP | Signal::SIGTTIN | Signal::SIGTTOU),
            )) => {
                let _ = sig;
                ptrace::cont(pid, None).map_err(perr("CONT", pid))?;
            }
            Ok(WaitStatus::Stopped(_, sig)) => {
                let rip = ptrace::getregs(pid).map(|r| r.rip).unwrap_or(0);
                return Err(InjectError::Crashed {
                    pid: pid.as_raw(),
                    rip,
                    signal: sig.as_str().into(),
                });
            }
            Ok(WaitStatus::Exited(_, code)) => {
                return Err(InjectError::Lost {
                    pid: pid.as_raw(),
                    what: format!("exited with status {code}"),
                })
            }
            Ok(WaitStatus::Signaled(_, sig, _)) => {
                return Err(InjectError::Lost {
                    pid: pid.as_raw(),
                    what: format!("was killed by {}", sig.as_str()),
                })
            }
            Ok(WaitStatus::PtraceEvent(_, _, ev))
                if ev == ptrace::Event::PTRACE_EVENT_EXIT as i32 =>
            {
                return Err(InjectError::Lost {
                    pid: pid.as_raw(),
                    what: "exited (killed by a signal it could not block)".into(),
                })
            }
            Ok(_) => {
                ptrace::cont(pid, None).map_err(perr("CONT", pid))?;
            }
            Err(nix::errno::Errno::EINTR) if !super::interrupted() => continue,
            Err(nix::errno::Errno::EINTR) => return Err(InjectError::Interrupted),
            Err(nix::errno::Errno::ECHILD) => {
                return Err(InjectError::Lost {
                    pid: pid.as_raw(),
                    what: "is gone".into(),
                })
            }
            Err(e) => return Err(perr("waitpid", pid)(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `.set NAME, VALUE` lines of probes/params.s.
    fn layout() -> std::collections::HashMap<String, usize> {
        include_str!("../../probes/params.s")
            .lines()
            .filter_map(|l| {
                let rest = l.trim().strip_prefix(".set")?;
                let mut it = rest.split('#').next()?.split(',');
                let name = it.next()?.trim().to_string();
                let value = it.next()?.trim().parse().ok()?;
                Some((name, value))
            })
            .collect()
    }

    #[test]
    fn params_layout_matches_the_assembly() {
        let l = layout();
        use std::mem::offset_of;
        let p = [
            ("P_N", offset_of!(ProbeParams, n)),
            ("P_ACTION", offset_of!(ProbeParams, action)),
            ("P_EXIT_FN", offset_of!(ProbeParams, exit_fn)),
            ("P_EXIT_ALT", offset_of!(ProbeParams, exit_alt)),
            ("P_PATH", offset_of!(ProbeParams, path)),
            ("P_ARGV", offset_of!(ProbeParams, argv)),
            ("P_ENVP", offset_of!(ProbeParams, envp)),
            ("P_RECORDS", offset_of!(ProbeParams, records)),
            ("P_SPAWN_FN", offset_of!(ProbeParams, spawn_fn)),
            ("P_CODE", offset_of!(ProbeParams, code)),
            ("P_CLOCK_FN", offset_of!(ProbeParams, clock_fn)),
            ("P_DONE", offset_of!(ProbeParams, done)),
            ("P_ERROR", offset_of!(ProbeParams, error)),
            ("P_T_START", offset_of!(ProbeParams, t_start)),
            ("P_T_END", offset_of!(ProbeParams, t_end)),
            ("P_RU_START", offset_of!(ProbeParams, ru_start)),
            ("P_SIGMASK", offset_of!(ProbeParams, sigmask)),
            ("P_PDEATH", offset_of!(ProbeParams, pdeath)),
            ("P_PPID", offset_of!(ProbeParams, ppid)),
            ("P_ATTR", offset_of!(ProbeParams, attr)),
            ("P_FORK_FN", offset_of!(ProbeParams, fork_fn)),
            ("P_DEVNULL", offset_of!(ProbeParams, devnull)),
            ("P_SIZE", std::mem::size_of::<ProbeParams>()),
            ("R_T0", offset_of!(ProbeRecord, t0)),
            ("R_T1", offset_of!(ProbeRecord, t1)),
            ("R_T2", offset_of!(ProbeRecord, t2)),
            ("R_PID", offset_of!(ProbeRecord, pid)),
            ("R_STATUS", offset_of!(ProbeRecord, status)),
            ("R_CHILD_RU", offset_of!(ProbeRecord, child)),
            ("R_PARENT_RU", offset_of!(ProbeRecord, parent)),
            ("R_SIZE", std::mem::size_of::<ProbeRecord>()),
        ];
        for (name, off) in p {
            assert_eq!(l.get(name), Some(&off), "{name} in probes/params.s");
        }
        assert_eq!(l.len(), p.len(), "params.s has a field the struct lacks");
        assert_eq!(std::mem::size_of::<Rusage>(), 144);
    }

    #[test]
    fn probes_start_with_the_syscall_stub() {
        for s in [Spawn::Fork, Spawn::Vfork, Spawn::PosixSpawn] {
            let (code, _) = s.probe();
            assert_eq!(&code[..4], &[0x0f, 0x05, 0xcc, 0x90], "{s:?}");
            assert!(
                code.len() > 100 && code.len() < 1024,
                "{s:?}: {}",
                code.len()
            );
        }
    }

    #[test]
    fn image_lays_out_exec_strings() {
        let mut p = ProbeParams::default();
        let act = ChildAction::Exec {
            path: b"/bin/true".to_vec(),
            argv: vec![b"true".to_vec(), b"x".to_vec()],
            envp: vec![b"A=1".to_vec()],
        };
        let base = 0x7000_0000_0000;
        let img = build_image(&[0x90; 8], base, &mut p, &act, None);
        let at = |addr: u64| (addr - base) as usize;
        let cstr = |off: usize| {
            let end = img.bytes[off..].iter().position(|&b| b == 0).unwrap();
            String::from_utf8_lossy(&img.bytes[off..off + end]).to_string()
        };
        assert_eq!(cstr(at(p.path)), "/bin/true");
        let ptr = |off: usize| u64::from_le_bytes(img.bytes[off..off + 8].try_into().unwrap());
        assert_eq!(cstr(at(ptr(at(p.argv)))), "true");
        assert_eq!(cstr(at(ptr(at(p.argv) + 8))), "x");
        assert_eq!(ptr(at(p.argv) + 16), 0);
        assert_eq!(cstr(at(ptr(at(p.envp)))), "A=1");
        assert_eq!(ptr(at(p.envp) + 8), 0);
        assert_eq!(img.size % 4096, 0);
        assert!(img.size >= 2 * 4096);
    }
}
