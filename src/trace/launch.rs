//! Launching a target under ptrace, stopped before exec, and tearing it down whatever happens.
//!
//! In: a [`Command`] (program, arguments, environment, where its output goes). Out: a
//! [`Tracee`] stopped before its execve, or a [`TraceError`] naming the user's problem; a
//! [`Watchdog`] for `--timeout`; how the target ended ([`Ending`], defined by the recording).
//!
//! The child is cloned with CLONE_VM (it shares ldcost's address space until its execve, as
//! posix_spawn's child does), calls PTRACE_TRACEME and stops itself with SIGSTOP before
//! execve, so the parent can open perf counters on its pid and set ptrace options
//! (PTRACE_O_EXITKILL: the target dies with ldcost; TRACEEXEC; TRACEEXIT; TRACESYSGOOD) before
//! the program image exists. Why CLONE_VM: a forked child's execve tears down its copy of
//! ldcost's image (`begin_new_exec → exec_mmap → mmput → exit_mmap`: 115 of 147 exec-kernel
//! samples of `rustc --version`), a cost of the launcher that a shell's vfork does not pay;
//! sharing the mm, the exec only drops a reference. Not CLONE_VFORK: the parent must keep
//! running to trace the child's stops. The child makes raw system calls only (no allocation,
//! no locks, no errno, which is thread-local storage it would share).
//!
//! [`Tracee::stop_at_execve`] runs the child to the entry of its execve (a syscall-enter stop),
//! where the counters are zeroed, so the kernel-exec phase is the whole system call (a
//! timestamp alone would count the wait for a CPU; task-clock counts only the child running).
//!
//! An execve failure comes back through a close-on-exec pipe as an errno (the samply way), so
//! "no such file" and "permission denied" are told apart from a target that exits 127 by
//! itself. [`Tracee`]'s Drop kills and reaps the child, so no stopped, zombie or orphaned
//! process survives an error path.

use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::ptrace;
use nix::sys::signal::{self, Signal};
use nix::sys::wait::{WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

/// Errors of the trace layer.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("{path} does not exist")]
    NotFound { path: PathBuf },
    #[error("{path} cannot be executed: {reason}")]
    NotExecutable { path: PathBuf, reason: String },
    #[error("{path} is set-user-ID or set-group-ID; under ptrace it would not run with those privileges, so its start-up would not be the real one")]
    Setuid { path: PathBuf },
    #[error("ptrace is not permitted here ({what})")]
    PtraceDenied { what: String },
    #[error("cannot start {path}: {source}")]
    Spawn {
        path: PathBuf,
        #[source]
        source: nix::Error,
    },
    #[error("lost track of the target {path}: {what}")]
    Lost { path: PathBuf, what: String },
    #[error("interrupted: the target was killed and reaped")]
    Interrupted,
    #[error("the exec chain of {path} differs from the one found by its first run: {what}")]
    ChainChanged { path: PathBuf, what: String },
}

impl TraceError {
    pub fn hint(&self) -> Option<String> {
        match self {
            TraceError::NotFound { .. } => Some("check the path; bare names are searched in $PATH".into()),
TraceError::NotExecutable { reason, .. } if reason.contains("directory") => {
                Some("give the path of a program file, not a directory".into())
            }
            TraceError::NotExecutable { reason, .. } if reason.contains("not a program") => {
                Some("give an ELF program or a #! script".into())
            }
            TraceError::NotExecutable { .. } => {
                Some("make it executable (chmod +x) or give the interpreter explicitly".into())
            }

            TraceError::Setuid { .. } => Some("profile a copy without the set-ID bit (cp FILE /tmp/x && ldcost profile /tmp/x), or use `ldcost deps` which needs no tracing".into()),
            TraceError::PtraceDenied { .. } => Some(ptrace_hint()),
            TraceError::Spawn { source, .. } => {
                crate::limits::resource_hint(*source as i32).map(Into::into)
            }
            TraceError::ChainChanged { .. } => Some("a wrapper that execs another program from run to run cannot be followed: profile the program it runs directly, or its first image with --no-follow".into()),
            _ => None,
        }
    }
}

/// What to tell a user whose ptrace was refused.
fn ptrace_hint() -> String {
    match std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope") {
        Ok(s) if s.trim() != "0" => format!(
            "Yama ptrace_scope is {}; run `sysctl kernel.yama.ptrace_scope=0` (or 1, which allows tracing our own children) or run as root; in a container add CAP_SYS_PTRACE and a seccomp profile that allows ptrace",
            s.trim()
        ),
        _ => "in a container add CAP_SYS_PTRACE (docker run --cap-add=SYS_PTRACE) and a seccomp profile that allows ptrace and perf_event_open".into(),
    }
}

/// How the target ended: part of the recording, so defined there.
pub use crate::record::Ending;

/// The `--timeout` (in ns) of the last watchdog that killed its target, 0 when none has: a kill
/// before exec is then named as the timeout's.
static TIMEOUT_FIRED_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// "killed by SIGKILL before exec", and why when it was `--timeout`.
fn killed_before_exec(s: Signal) -> String {
    match TIMEOUT_FIRED_NS.load(Ordering::SeqCst) {
        ns if ns > 0 && s == Signal::SIGKILL => format!(
            "killed by SIGKILL before exec: --timeout ({} s) expired before the program started",
            ns as f64 / 1e9
        ),
        _ => format!("killed by {s:?} before exec"),
    }
}

/// The `--timeout` watchdog: a thread that SIGKILLs the target when the time is up. Dropping
/// the watchdog cancels it (the thread's channel closes).
pub struct Watchdog {
    fired: Arc<AtomicBool>,
    _cancel: mpsc::Sender<()>,
}

impl Watchdog {
    /// Starts the watchdog on `pid` (with no timeout, one that never fires).
    pub fn start(pid: Pid, timeout: Option<Duration>) -> Watchdog {
        let fired = Arc::new(AtomicBool::new(false));
        let (cancel, cancelled) = mpsc::channel::<()>();
        if let Some(t) = timeout {
            let flag = fired.clone();
            std::thread::spawn(move || {
                if let Err(mpsc::RecvTimeoutError::Timeout) = cancelled.recv_timeout(t) {
                    flag.store(true, Ordering::SeqCst);
                    TIMEOUT_FIRED_NS.store(t.as_nanos().max(1) as u64, Ordering::SeqCst);
                    let _ = signal::kill(pid, Signal::SIGKILL);
                }
            });
        }
        Watchdog {
            fired,
            _cancel: cancel,
        }
    }

    /// Whether the watchdog killed the target.
    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::SeqCst)
    }
}

/// A traced child. Dropping it kills and reaps the child if it is still there.
pub struct Tracee {
    pub pid: Pid,
    pub path: PathBuf,
    alive: bool,
    exec_err: Option<OwnedFd>,
    /// What the child reads until its exec (see [`ChildData`]); dropped at the exec stop.
    child_data: Option<Box<ChildData>>,
    /// The exec chain to follow before the measured execve; taken when it has been followed.
    follow: Option<super::follow::FollowTo>,
}

/// What `launch` needs.
#[derive(Debug, Clone)]
pub struct Command {
    pub program: PathBuf,
    pub args: Vec<std::ffi::OsString>,
    /// Extra environment on top of ours (e.g. LD_BIND_NOW).
    pub env: Vec<(String, String)>,
    /// Environment variables to remove.
    pub env_remove: Vec<String>,
    /// Send the target's stdout and stderr to /dev/null.
    pub quiet: bool,
    /// Send the target's standard output to ldcost's standard error (unless `quiet`):
    /// `compare --show-output`, whose standard output carries the report alone.
    pub stdout_to_stderr: bool,
    /// Give the target /dev/null as its standard input instead of ldcost's: a run whose
    /// output is not shown must not read the input meant for the run that is.
    pub no_stdin: bool,
    /// Follow the exec chain: the run starts at the final image's execve, the wrappers before
    /// it run through ([`crate::trace::follow`]); `None`: the first image is measured.
    pub follow: Option<super::follow::FollowTo>,
}

/// Refuses what we cannot or should not trace, before forking.
pub fn preflight(program: &Path) -> Result<(), TraceError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(program).map_err(|_| TraceError::NotFound {
        path: program.to_path_buf(),
    })?;
    if meta.is_dir() {
        return Err(TraceError::NotExecutable {
            path: program.to_path_buf(),
            reason: "it is a directory".into(),
        });
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(TraceError::NotExecutable {
            path: program.to_path_buf(),
            reason: "no execute permission".into(),
        });
    }
    if meta.permissions().mode() & 0o6000 != 0 {
        return Err(TraceError::Setuid {
            path: program.to_path_buf(),
        });
    }
    Ok(())
}

/// Refuses a set-user-ID or set-group-ID image at its PTRACE_EVENT_EXEC stop: the program as
/// given may be a wrapper (`#!/bin/sh` + `exec ./prog`) whose exec reaches one, which under
/// ptrace runs without those privileges, as [`preflight`] says of one given directly. The
/// image is /proc/PID/exe, the file the kernel exec'd; one that cannot be read is not refused.
pub(crate) fn refuse_set_id_image(pid: Pid) -> Result<(), TraceError> {
    use std::os::unix::fs::PermissionsExt;
    let exe = format!("/proc/{pid}/exe");
    match std::fs::metadata(&exe) {
        Ok(m) if m.permissions().mode() & 0o6000 != 0 => Err(TraceError::Setuid {
            path: std::fs::read_link(&exe).unwrap_or_else(|_| exe.into()),
        }),
        _ => Ok(()),
    }
}

fn cstring(s: &OsStr) -> CString {
    CString::new(s.as_bytes()).unwrap_or_else(|_| CString::from(c"?"))
}

/// Everything the child reads between clone and execve, prepared (and allocated) before the
/// clone: the child shares our memory and may not allocate, lock or touch thread-local state.
/// Owned by the [`Tracee`] until the exec (or the child's death), so it outlives the child's use.
struct ChildData {
    prog: CString,
    _argv: Vec<CString>,
    _env: Vec<CString>,
    argv_ptrs: Vec<*const nix::libc::c_char>,
    env_ptrs: Vec<*const nix::libc::c_char>,
    devnull: Option<CString>,
    /// /dev/null for standard input ([`Command::no_stdin`]).
    stdin_null: Option<CString>,
    /// Standard output onto standard error ([`Command::stdout_to_stderr`]).
    stdout_to_stderr: bool,
    /// The write end of the close-on-exec error pipe.
    err_fd: RawFd,
    /// The child's stack (it cannot use ours: we keep running).
    stack: Vec<u8>,
}

/// The child's stack: it makes a handful of raw system calls and nothing else.
const CHILD_STACK: usize = 64 * 1024;

/// Raw system calls for the CLONE_VM child: glibc's wrappers write `errno`, which lives in the
/// thread-local storage the child shares with the thread that cloned it.
#[cfg(target_arch = "x86_64")]
unsafe fn raw_syscall(nr: nix::libc::c_long, a: [usize; 4]) -> isize {
    let ret: isize;
    // SAFETY: the caller passes a valid system call; rcx and r11 are clobbered by `syscall`.
    unsafe {
        std::arch::asm!("syscall", inlateout("rax") nr as isize => ret, in("rdi") a[0],
            in("rsi") a[1], in("rdx") a[2], in("r10") a[3], lateout("rcx") _,
            lateout("r11") _, options(nostack));
    }
    ret
}

#[cfg(target_arch = "aarch64")]
unsafe fn raw_syscall(nr: nix::libc::c_long, a: [usize; 4]) -> isize {
    let ret: isize;
    // SAFETY: the caller passes a valid system call.
    unsafe {
        std::arch::asm!("svc 0", in("x8") nr, inlateout("x0") a[0] as isize => ret,
            in("x1") a[1], in("x2") a[2], in("x3") a[3], options(nostack));
    }
    ret
}

/// The child: it runs on its own stack in ldcost's address space (CLONE_VM) until execve, so
/// the exec has no copy of ldcost's image to tear down. Only raw system calls on data prepared
/// before the clone; it never returns.
extern "C" fn child_main(arg: *mut nix::libc::c_void) -> nix::libc::c_int {
    use nix::libc::{
        SYS_execve, SYS_exit, SYS_getpid, SYS_kill, SYS_openat, SYS_prctl, SYS_ptrace, SYS_write,
    };
    // SAFETY: `arg` is the ChildData the parent keeps alive until the exec or our death; we
    // only read it. Every call below is a plain system call on valid pointers.
    unsafe {
        let d = &*(arg as *const ChildData);
        let report = |errno: i32| {
            let b = errno.to_ne_bytes();
            raw_syscall(SYS_write, [d.err_fd as usize, b.as_ptr() as usize, 4, 0]);
            raw_syscall(SYS_exit, [127, 0, 0, 0]);
        };
        // If ldcost dies, so does the target, traced or not (a fork run detaches after its
        // probe; PTRACE_O_EXITKILL covers the traced part).
        raw_syscall(
            SYS_prctl,
            [
                nix::libc::PR_SET_PDEATHSIG as usize,
                nix::libc::SIGKILL as usize,
                0,
                0,
            ],
        );
        if raw_syscall(SYS_ptrace, [nix::libc::PTRACE_TRACEME as usize, 0, 0, 0]) < 0 {
            report(Errno::EPERM as i32);
        }
        // /dev/null opened close-on-exec and dup3'd (which clears the flag on the copy) onto
        // the standard fds: the target gets 0, 1 and 2 and no extra descriptor. Should the
        // open itself land on a standard fd (one was closed), the flag is cleared there.
        let onto = |path: &CString, flags: i32, fds: &[usize]| {
            let fd = raw_syscall(
                SYS_openat,
                [
                    nix::libc::AT_FDCWD as usize,
                    path.as_ptr() as usize,
                    (flags | nix::libc::O_CLOEXEC) as usize,
                    0,
                ],
            );
            if fd >= 0 {
                for &to in fds {
                    if fd as usize == to {
                        raw_syscall(
                            nix::libc::SYS_fcntl,
                            [to, nix::libc::F_SETFD as usize, 0, 0],
                        );
                    } else {
                        raw_syscall(nix::libc::SYS_dup3, [fd as usize, to, 0, 0]);
                    }
                }
            }
        };
        if let Some(dn) = &d.stdin_null {
            onto(dn, nix::libc::O_RDONLY, &[0]);
        }
        if let Some(dn) = &d.devnull {
            onto(dn, nix::libc::O_WRONLY, &[1, 2]);
        } else if d.stdout_to_stderr {
            raw_syscall(nix::libc::SYS_dup3, [2, 1, 0, 0]);
        }
        // The signal state a program gets from a shell or std::process::Command: SIGPIPE at
        // its default (Rust's runtime ignores it in ldcost, and an ignored disposition
        // survives execve: a target writing into a closed pipe would get EPIPE instead of
        // dying) and no signal blocked (the cloning thread's mask is inherited too).
        let dfl = [0u64; 4]; // struct sigaction: SIG_DFL, no flags, no restorer, empty mask
        raw_syscall(
            nix::libc::SYS_rt_sigaction,
            [nix::libc::SIGPIPE as usize, dfl.as_ptr() as usize, 0, 8],
        );
        let empty = 0u64;
        raw_syscall(
            nix::libc::SYS_rt_sigprocmask,
            [
                nix::libc::SIG_SETMASK as usize,
                &empty as *const u64 as usize,
                0,
                8,
            ],
        );
        let me = raw_syscall(SYS_getpid, [0; 4]);
        raw_syscall(SYS_kill, [me as usize, nix::libc::SIGSTOP as usize, 0, 0]);
        // The next system call after the stop is this one: the tracer's execve-enter stop.
        let r = raw_syscall(
            SYS_execve,
            [
                d.prog.as_ptr() as usize,
                d.argv_ptrs.as_ptr() as usize,
                d.env_ptrs.as_ptr() as usize,
                0,
            ],
        );
        report((-r) as i32);
    }
    127
}

/// Starts the child, stopped before exec, with ptrace options set.
///
/// The child is cloned with CLONE_VM (posix_spawn's way, without CLONE_VFORK: the tracer must
/// keep running to see the child's stops), so it shares ldcost's address space until its
/// execve. The exec then only drops a reference to that mm instead of tearing down a copy of
/// ldcost's image (`begin_new_exec → exec_mmap → mmput → exit_mmap`), which a fork of ldcost
/// would charge to the target: what a shell's vfork/posix_spawn launch costs, not a profiler's.
pub fn launch(cmd: &Command) -> Result<Tracee, TraceError> {
    preflight(&cmd.program)?;
    let path = cmd.program.clone();
    let prog = cstring(cmd.program.as_os_str());
    let mut argv: Vec<CString> = vec![prog.clone()];
    argv.extend(cmd.args.iter().map(|a| cstring(a)));
    let mut env: Vec<CString> = std::env::vars_os()
        .filter(|(k, _)| {
            !cmd.env_remove.iter().any(|r| OsStr::new(r) == k)
                && !cmd.env.iter().any(|(e, _)| OsStr::new(e) == k)
        })
        .map(|(k, v)| {
            let mut b = k.as_bytes().to_vec();
            b.push(b'=');
            b.extend_from_slice(v.as_bytes());
            CString::new(b).unwrap_or_else(|_| CString::from(c"X=?"))
        })
        .collect();
    env.extend(
        cmd.env.iter().map(|(k, v)| {
            CString::new(format!("{k}={v}")).unwrap_or_else(|_| CString::from(c"X=?"))
        }),
    );
    let devnull = if cmd.quiet {
        Some(CString::from(c"/dev/null"))
    } else {
        None
    };
    let (rd, wr) =
        nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(|e| TraceError::Spawn {
            path: path.clone(),
            source: e,
        })?;
    let ptrs = |v: &[CString]| {
        let mut p: Vec<*const nix::libc::c_char> = v.iter().map(|c| c.as_ptr()).collect();
        p.push(std::ptr::null());
        p
    };
    let mut data = Box::new(ChildData {
        prog,
        argv_ptrs: ptrs(&argv),
        env_ptrs: ptrs(&env),
        _argv: argv,
        _env: env,
        devnull,
        stdin_null: cmd.no_stdin.then(|| CString::from(c"/dev/null")),
        stdout_to_stderr: cmd.stdout_to_stderr,
        err_fd: wr.as_raw_fd(),
        stack: vec![0u8; CHILD_STACK],
    });
    // The stack grows down from its (16-byte aligned) top.
    let top = {
        let base = data.stack.as_mut_ptr() as usize;
        (base + CHILD_STACK) & !15
    };
    let arg = &mut *data as *mut ChildData as *mut nix::libc::c_void;
    // SAFETY: child_main only reads `data` (alive until exec or death, see ChildData) and makes
    // raw system calls on its own stack.
    let raw = unsafe {
        nix::libc::clone(
            child_main,
            top as *mut nix::libc::c_void,
            nix::libc::CLONE_VM | nix::libc::SIGCHLD,
            arg,
        )
    };
    if raw < 0 {
        return Err(TraceError::Spawn {
            path,
            source: Errno::last(),
        });
    }
    let child = Pid::from_raw(raw);
    drop(wr);
    crate::trace::set_current_target(child.as_raw());
    let mut t = Tracee {
        pid: child,
        path,
        alive: true,
        exec_err: Some(rd),
        child_data: Some(data),
        follow: cmd.follow.clone(),
    };
    match super::wait::waitpid(child, Some(WaitPidFlag::__WALL)) {
        Ok(WaitStatus::Stopped(_, Signal::SIGSTOP)) => {}
        Ok(WaitStatus::Exited(_, _)) => {
            t.alive = false;
            return Err(t.exec_error().unwrap_or(TraceError::PtraceDenied {
                what: "the child could not call PTRACE_TRACEME".into(),
            }));
        }
        other => {
            return Err(TraceError::Lost {
                path: t.path.clone(),
                what: format!("unexpected first stop {other:?}"),
            })
        }
    }
    ptrace::setoptions(child, super::follow::ptrace_options(true)).map_err(|e| {
        TraceError::PtraceDenied {
            what: format!("PTRACE_SETOPTIONS: {e}"),
        }
    })?;
    Ok(t)
}

impl Tracee {
    /// The errno execve reported through the pipe, as a TraceError.
    fn exec_error(&mut self) -> Option<TraceError> {
        let fd = self.exec_err.take()?;
        let mut buf = [0u8; 4];
        let n = nix::unistd::read(&fd, &mut buf).ok()?;
        if n != 4 {
            return None;
        }
        let errno = Errno::from_raw(i32::from_ne_bytes(buf));
        Some(match errno {
            Errno::ENOENT => TraceError::NotFound {
                path: self.path.clone(),
            },
            Errno::EPERM => TraceError::PtraceDenied {
                what: "PTRACE_TRACEME was refused (seccomp or a security module)".into(),
            },
            e => TraceError::NotExecutable {
                path: self.path.clone(),
                reason: e.desc().to_string(),
            },
        })
    }

    /// Continues the child (stopped by its SIGSTOP) to the entry of its execve: the
    /// syscall-enter stop (PTRACE_SYSCALL, told apart by TRACESYSGOOD and
    /// PTRACE_GET_SYSCALL_INFO). Counters read here and at the exec stop bound the whole
    /// system call: see [`crate::perf::CounterSet::rebase`].
    ///
    /// With an exec chain to follow ([`Command::follow`]), the execve is the final image's:
    /// the wrappers before it run through ([`crate::trace::follow::to_final_execve`]).
    pub fn stop_at_execve(&mut self) -> Result<(), TraceError> {
        if let Some(to) = self.follow.take() {
            return super::follow::to_final_execve(self, &to);
        }
        ptrace::syscall(self.pid, None).map_err(|e| self.lost(format!("PTRACE_SYSCALL: {e}")))?;
        loop {
            match super::wait::waitpid(self.pid, Some(WaitPidFlag::__WALL)) {
                Ok(WaitStatus::PtraceSyscall(_)) => {
                    if is_execve_entry(self.pid) {
                        return Ok(());
                    }
                    let _ = ptrace::syscall(self.pid, None);
                }
                Ok(WaitStatus::Exited(_, code)) => {
                    self.alive = false;
                    return Err(self.exec_error().unwrap_or_else(|| {
                        self.lost(format!("exited with status {code} before exec"))
                    }));
                }
                Ok(WaitStatus::Signaled(_, s, _)) => {
                    self.alive = false;
                    return Err(self.lost(killed_before_exec(s)));
                }
                Ok(WaitStatus::Stopped(_, sig)) => {
                    let _ = ptrace::syscall(self.pid, Some(sig));
                }
                Ok(_) => {
                    let _ = ptrace::syscall(self.pid, None);
                }
                Err(Errno::EINTR) => {
                    if crate::trace::interrupted() {
                        self.kill();
                        return Err(TraceError::Interrupted);
                    }
                }
                Err(e) => return Err(self.lost(format!("waitpid: {e}"))),
            }
        }
    }

    /// Continues the stopped child (at its SIGSTOP, or at its execve entry after
    /// [`Tracee::stop_at_execve`]) into execve and waits for the PTRACE_EVENT_EXEC stop (of
    /// the final image, with an exec chain to follow).
    pub fn run_to_exec(&mut self) -> Result<(), TraceError> {
        if let Some(to) = self.follow.take() {
            super::follow::to_final_execve(self, &to)?;
        }
        ptrace::cont(self.pid, None).map_err(|e| self.lost(format!("PTRACE_CONT: {e}")))?;
        loop {
            match super::wait::waitpid(self.pid, Some(WaitPidFlag::__WALL)) {
                Ok(WaitStatus::PtraceEvent(_, _, ev))
                    if ev == ptrace::Event::PTRACE_EVENT_EXEC as i32 =>
                {
                    self.exec_err = None;
                    // The child has its own address space now.
                    self.child_data = None;
                    return refuse_set_id_image(self.pid);
                }
                Ok(WaitStatus::PtraceEvent(_, _, ev))
                    if ev == ptrace::Event::PTRACE_EVENT_EXIT as i32 =>
                {
                    // execve failed and the child is on its way out through _exit(127).
                    let _ = ptrace::cont(self.pid, None);
                }
                Ok(WaitStatus::Exited(_, code)) => {
                    self.alive = false;
                    return Err(self.exec_error().unwrap_or_else(|| {
                        self.lost(format!("exited with status {code} before exec"))
                    }));
                }
                Ok(WaitStatus::Signaled(_, s, _)) => {
                    self.alive = false;
                    return Err(self.lost(killed_before_exec(s)));
                }
                Ok(WaitStatus::Stopped(_, sig)) => {
                    let _ = ptrace::cont(self.pid, Some(sig));
                }
                Ok(_) => {
                    let _ = ptrace::cont(self.pid, None);
                }
                Err(Errno::EINTR) => {
                    if crate::trace::interrupted() {
                        self.kill();
                        return Err(TraceError::Interrupted);
                    }
                }
                Err(e) => return Err(self.lost(format!("waitpid: {e}"))),
            }
        }
    }

    pub fn lost(&self, what: String) -> TraceError {
        TraceError::Lost {
            path: self.path.clone(),
            what,
        }
    }

    /// Marks the child as reaped (the caller saw it exit).
    pub fn reaped(&mut self) {
        self.alive = false;
        crate::trace::set_current_target(0);
    }

    pub fn is_alive(&self) -> bool {
        self.alive
    }

    /// Kills and reaps the child now.
    pub fn kill(&mut self) {
        if self.alive {
            let _ = signal::kill(self.pid, Signal::SIGKILL);
            loop {
                match super::wait::waitpid(self.pid, Some(WaitPidFlag::__WALL)) {
                    Ok(WaitStatus::Exited(..))
                    | Ok(WaitStatus::Signaled(..))
                    | Err(Errno::ECHILD) => break,
                    Ok(WaitStatus::PtraceEvent(..)) | Ok(WaitStatus::Stopped(..)) => {
                        let _ = ptrace::cont(self.pid, None);
                    }
                    Err(Errno::EINTR) | Ok(_) => continue,
                    Err(_) => break,
                }
            }
            self.alive = false;
            crate::trace::set_current_target(0);
        }
    }
}

/// Whether the syscall stop `pid` is in is the entry of execve (PTRACE_GET_SYSCALL_INFO).
fn is_execve_entry(pid: Pid) -> bool {
    execve_entry_args(pid).is_some()
}

/// At a syscall stop: the execve's arguments when the stop is an execve's entry
/// (PTRACE_GET_SYSCALL_INFO), None at any other stop.
pub(crate) fn execve_entry_args(pid: Pid) -> Option<[u64; 6]> {
    // SAFETY: an all-zero ptrace_syscall_info is valid; the kernel fills at most its size.
    let mut info: nix::libc::ptrace_syscall_info = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<nix::libc::ptrace_syscall_info>();
    // SAFETY: PTRACE_GET_SYSCALL_INFO writes at most `size` bytes into `info`.
    let r = unsafe {
        nix::libc::ptrace(
            nix::libc::PTRACE_GET_SYSCALL_INFO,
            pid.as_raw(),
            size,
            &mut info as *mut nix::libc::ptrace_syscall_info,
        )
    };
    if r <= 0 || info.op != nix::libc::PTRACE_SYSCALL_INFO_ENTRY {
        return None;
    }
    // SAFETY: `entry` is the union member the kernel filled when op is ENTRY.
    let entry = unsafe { info.u.entry };
    (entry.nr == nix::libc::SYS_execve as u64).then_some(entry.args)
}

impl Drop for Tracee {
    fn drop(&mut self) {
        self.kill();
    }
}
