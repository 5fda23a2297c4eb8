//! Launching a target under ptrace, stopped before exec, and tearing it down whatever happens.
//!
//! In: a [`Command`] (program, arguments, environment, where its output goes). Out: a
//! [`Tracee`] stopped before its execve, or a [`TraceError`] naming the user's problem; a
//! [`Watchdog`] for `--timeout`; how the target ended ([`Ending`], defined by the recording).
//!
//! The child forked here calls PTRACE_TRACEME and stops itself with SIGSTOP before execve, so
//! the parent can open perf counters on its pid (enable-on-exec) and set ptrace options
//! (PTRACE_O_EXITKILL: the target dies with ldcost; TRACEEXEC; TRACEEXIT) before the program
//! image exists. An execve failure comes back through a close-on-exec pipe as an errno (the
//! samply way), so "no such file" and "permission denied" are told apart from a target that
//! exits 127 by itself. [`Tracee`]'s Drop kills and reaps the child, so no stopped, zombie or
//! orphaned process survives an error path.

use std::ffi::{CString, OsStr};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::ptrace;
use nix::sys::signal::{self, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};

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
}

impl TraceError {
    pub fn hint(&self) -> Option<String> {
        match self {
            TraceError::NotFound { .. } => Some("check the path; bare names are searched in $PATH".into()),
TraceError::NotExecutable { reason, .. } if reason.contains("directory") => {
                Some("give the path of a program file, not a directory".into())
            }
            TraceError::NotExecutable { .. } => {
                Some("make it executable (chmod +x) or give the interpreter explicitly".into())
            }

            TraceError::Setuid { .. } => Some("profile a copy without the set-ID bit (cp FILE /tmp/x && ldcost profile /tmp/x), or use `ldcost deps` which needs no tracing".into()),
            TraceError::PtraceDenied { .. } => Some(ptrace_hint()),
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

fn cstring(s: &OsStr) -> CString {
    CString::new(s.as_bytes()).unwrap_or_else(|_| CString::from(c"?"))
}

/// Forks the child, stopped before exec, with ptrace options set.
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
    // SAFETY: the child only calls async-signal-safe functions (ptrace, open, dup2, raise,
    // execve, write, _exit) on data prepared before the fork.
    match unsafe { fork() } {
        Err(e) => Err(TraceError::Spawn { path, source: e }),
        Ok(ForkResult::Child) => {
            drop(rd);
            // If ldcost dies, so does the target, traced or not (a fork run detaches after
            // its probe; PTRACE_O_EXITKILL covers the traced part).
            // SAFETY: prctl is async-signal-safe.
            unsafe { nix::libc::prctl(nix::libc::PR_SET_PDEATHSIG, nix::libc::SIGKILL) };
            if ptrace::traceme().is_err() {
                let _ = nix::unistd::write(&wr, &(Errno::EPERM as i32).to_ne_bytes());
                unsafe { nix::libc::_exit(127) };
            }
            if let Some(dn) = &devnull {
                // SAFETY: plain libc calls on a valid C string.
                unsafe {
                    let fd = nix::libc::open(dn.as_ptr(), nix::libc::O_WRONLY);
                    if fd >= 0 {
                        nix::libc::dup2(fd, 1);
                        nix::libc::dup2(fd, 2);
                    }
                }
            }
            let _ = signal::raise(Signal::SIGSTOP);
            let e = nix::unistd::execve(&prog, &argv, &env)
                .err()
                .unwrap_or(Errno::UnknownErrno);
            let _ = nix::unistd::write(&wr, &(e as i32).to_ne_bytes());
            unsafe { nix::libc::_exit(127) }
        }
        Ok(ForkResult::Parent { child }) => {
            drop(wr);
            crate::trace::set_current_target(child.as_raw());
            let mut t = Tracee {
                pid: child,
                path,
                alive: true,
                exec_err: Some(rd),
            };
            match waitpid(child, Some(WaitPidFlag::__WALL)) {
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
            let opts = ptrace::Options::PTRACE_O_EXITKILL
                | ptrace::Options::PTRACE_O_TRACEEXEC
                | ptrace::Options::PTRACE_O_TRACEEXIT
                | ptrace::Options::PTRACE_O_TRACECLONE
                | ptrace::Options::PTRACE_O_TRACEFORK
                | ptrace::Options::PTRACE_O_TRACEVFORK;
            ptrace::setoptions(child, opts).map_err(|e| TraceError::PtraceDenied {
                what: format!("PTRACE_SETOPTIONS: {e}"),
            })?;
            Ok(t)
        }
    }
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

    /// Continues the stopped child into execve and waits for the PTRACE_EVENT_EXEC stop.
    pub fn run_to_exec(&mut self) -> Result<(), TraceError> {
        ptrace::cont(self.pid, None).map_err(|e| self.lost(format!("PTRACE_CONT: {e}")))?;
        loop {
            match waitpid(self.pid, Some(WaitPidFlag::__WALL)) {
                Ok(WaitStatus::PtraceEvent(_, _, ev))
                    if ev == ptrace::Event::PTRACE_EVENT_EXEC as i32 =>
                {
                    self.exec_err = None;
                    return Ok(());
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
                    return Err(self.lost(format!("killed by {s:?} before exec")));
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
                match waitpid(self.pid, Some(WaitPidFlag::__WALL)) {
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

impl Drop for Tracee {
    fn drop(&mut self) {
        self.kill();
    }
}
