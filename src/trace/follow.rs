//! Wrappers: following a target's exec chain to the program that finally runs.
//!
//! In: a [`Command`] whose program may be a wrapper (a `#!` script, `env`, a pyenv shim: a
//! program that execs another in the same process). Out: the chain of images the process
//! exec'd ([`ExecImage`], by [`discover`]), and the [`FollowTo`] plan that makes every later
//! run start its measurement at the final image's execve ([`to_final_execve`]).
//!
//! Discovery is one run of its own, traced with PTRACE_O_TRACEEXEC and nothing else (no
//! syscall stops, no fork tracing), to its exit: each PTRACE_EVENT_EXEC stop records the file
//! the execve named (AT_EXECFN in the new image's auxiliary vector: the string the caller
//! passed, what `strace -e trace=execve` prints, the script's path for a `#!` script) and the
//! executable the kernel loaded (/proc/PID/exe: the interpreter for a script). The final image
//! is the last one exec'd by the traced process before it exits.
//!
//! A measured run then lets the wrappers run through: PTRACE_CONT past their exec events, with
//! their threads and children left untraced (a shell wrapper waits for its `$(…)` children;
//! a traced child would sit stopped), then PTRACE_SYSCALL through the last wrapper to the entry
//! of the execve that names the final image's file (a PATH search's failed attempts name other
//! files). There the counters are rebased, as at a direct target's execve, and the full ptrace
//! options come back. A run whose chain differs from the discovered one is an error, not a
//! measurement of something else.
//!
//! Only exec in the same process is followed: a wrapper that forks and execs the program in
//! the child (and waits) is measured as itself.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::sys::wait::{WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::breakpoint::read_cstring;
use super::inspect::auxv;
use super::launch::{launch, Command, TraceError, Tracee, Watchdog};
pub use crate::record::{describe_chain as describe, ExecImage};

/// AT_EXECFN: the address of the file name the execve was given, in the new image's stack.
const AT_EXECFN: u64 = 31;

/// Where the measurement of a run starts in an exec chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowTo {
    /// Successful execs before the final one (the launch's own is the first).
    pub skip: usize,
    /// The file the final execve names ([`ExecImage::path`] of the final image).
    pub execfn: String,
}

/// The plan for a chain: `None` when the first image is the final one (nothing to follow).
pub fn plan(chain: &[ExecImage]) -> Option<FollowTo> {
    (chain.len() > 1).then(|| FollowTo {
        skip: chain.len() - 1,
        execfn: chain[chain.len() - 1].path.clone(),
    })
}

/// Runs the command once to its exit, traced only at its execs, and returns the images its
/// process exec'd, in order (the first is the command's own program).
pub fn discover(cmd: &Command, timeout: Option<Duration>) -> Result<Vec<ExecImage>, TraceError> {
    let mut t = launch(&Command {
        follow: None,
        ..cmd.clone()
    })?;
    let pid = t.pid;
    untrace_children(&t)?;
    let watchdog = Watchdog::start(pid, timeout);
    t.run_to_exec()?;
    let mut chain = vec![image(pid)];
    ptrace::cont(pid, None).map_err(|e| t.lost(format!("PTRACE_CONT: {e}")))?;
    // In a group-stop (SIGSTOP and the like): left stopped until a SIGCONT is pending, as
    // the measured runs do (startup::wait_next says why it is looked for).
    let mut group_stopped = false;
    loop {
        let waited = if group_stopped {
            match super::wait::waitpid(pid, Some(WaitPidFlag::__WALL | WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => {
                    if crate::trace::interrupted() {
                        t.kill();
                        return Err(TraceError::Interrupted);
                    }
                    if super::startup::sigcont_pending(pid) {
                        group_stopped = false;
                        let _ = ptrace::cont(pid, None);
                    } else {
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    }
                    continue;
                }
                w => w,
            }
        } else {
            super::wait::waitpid(pid, Some(WaitPidFlag::__WALL))
        };
        match waited {
            Ok(WaitStatus::PtraceEvent(_, _, ev))
                if ev == ptrace::Event::PTRACE_EVENT_EXEC as i32 =>
            {
                super::launch::refuse_set_id_image(pid)?;
                chain.push(image(pid));
                let _ = ptrace::cont(pid, None);
            }
            // Killed by --timeout too: the final image is the last one exec'd by then (the
            // measured runs will say that they timed out).
            Ok(WaitStatus::Exited(..)) | Ok(WaitStatus::Signaled(..)) => {
                t.reaped();
                drop(watchdog);
                return Ok(chain);
            }
            Ok(WaitStatus::Stopped(_, sig)) if super::startup::is_group_stop(pid, sig) => {
                super::startup::say_group_stopped(pid, sig);
                group_stopped = true;
            }
            // No breakpoint is planted: every signal is the program's.
            Ok(WaitStatus::Stopped(_, sig)) => {
                let _ = ptrace::cont(pid, Some(sig));
            }
            Ok(_) => {
                let _ = ptrace::cont(pid, None);
            }
            Err(Errno::EINTR) => {
                if crate::trace::interrupted() {
                    t.kill();
                    return Err(TraceError::Interrupted);
                }
            }
            Err(e) => return Err(t.lost(format!("waitpid: {e}"))),
        }
    }
}

/// What the image `pid` has just exec'd is (it is at its PTRACE_EVENT_EXEC stop).
fn image(pid: Pid) -> ExecImage {
    let aux = auxv(pid);
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
    let path = aux
        .get(&AT_EXECFN)
        .and_then(|&a| read_cstring(pid, a))
        .unwrap_or_else(|| exe.display().to_string());
    // A relative name is relative to the process's working directory, not ours.
    let file = if Path::new(&path).is_absolute() {
        PathBuf::from(&path)
    } else {
        PathBuf::from(format!("/proc/{pid}/cwd")).join(&path)
    };
    ExecImage {
        interpreter: shebang(&file),
        exe: exe.display().to_string(),
        path,
    }
}

/// The interpreter line of a `#!` file (trimmed), or `None` for any other file.
fn shebang(file: &Path) -> Option<String> {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(file)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .ok()?;
    let rest = head[..n].strip_prefix(b"#!")?;
    let line = rest.split(|&b| b == b'\n').next().unwrap_or(&[]);
    let text = String::from_utf8_lossy(line).trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// The ptrace options of a tracee ([`launch`] sets them all); `children`: its threads and
/// forked processes are traced too (off while the wrappers of an exec chain run).
pub(super) fn ptrace_options(children: bool) -> ptrace::Options {
    let opts = ptrace::Options::PTRACE_O_EXITKILL
        | ptrace::Options::PTRACE_O_TRACEEXEC
        | ptrace::Options::PTRACE_O_TRACEEXIT
        | ptrace::Options::PTRACE_O_TRACESYSGOOD;
    if children {
        opts | ptrace::Options::PTRACE_O_TRACECLONE
            | ptrace::Options::PTRACE_O_TRACEFORK
            | ptrace::Options::PTRACE_O_TRACEVFORK
    } else {
        opts
    }
}

/// While wrappers run, their threads and children are not traced (`PTRACE_O_TRACE{CLONE,
/// FORK,VFORK}` off): nothing of theirs is measured, and a traced child would wait stopped for
/// a tracer that does not wait for it.
fn untrace_children(t: &Tracee) -> Result<(), TraceError> {
    ptrace::setoptions(t.pid, ptrace_options(false))
        .map_err(|e| t.lost(format!("PTRACE_SETOPTIONS: {e}")))
}

/// From the launch stop to the entry of the final image's execve ([`FollowTo`]): the first
/// `skip` images run through, the full ptrace options are set again at the entry.
pub(super) fn to_final_execve(t: &mut Tracee, to: &FollowTo) -> Result<(), TraceError> {
    untrace_children(t)?;
    let pid = t.pid;
    // The launch's own execve: its failure is reported as for a direct target.
    t.run_to_exec()?;
    let mut execs = 1;
    let changed = |t: &Tracee, what: String| TraceError::ChainChanged {
        path: t.path.clone(),
        what: format!(
            "{what} ({} execs expected, the last of {})",
            to.skip + 1,
            to.execfn
        ),
    };
    // PTRACE_CONT to the last wrapper's exec stop, then syscall stops to the final execve.
    let resume = |execs: usize, sig: Option<Signal>| {
        if execs < to.skip {
            ptrace::cont(pid, sig)
        } else {
            ptrace::syscall(pid, sig)
        }
    };
    resume(execs, None).map_err(|e| t.lost(format!("PTRACE_CONT: {e}")))?;
    loop {
        match super::wait::waitpid(pid, Some(WaitPidFlag::__WALL)) {
            Ok(WaitStatus::PtraceEvent(_, _, ev))
                if ev == ptrace::Event::PTRACE_EVENT_EXEC as i32 =>
            {
                if execs == to.skip {
                    let p = image(pid).path;
                    return Err(changed(t, format!("an exec of {p} came instead")));
                }
                execs += 1;
                let _ = resume(execs, None);
            }
            Ok(WaitStatus::PtraceSyscall(_)) => {
                if execve_entry(pid).is_some_and(|f| f == to.execfn) {
                    ptrace::setoptions(pid, ptrace_options(true))
                        .map_err(|e| t.lost(format!("PTRACE_SETOPTIONS: {e}")))?;
                    return Ok(());
                }
                let _ = resume(execs, None);
            }
            Ok(WaitStatus::Exited(_, code)) => {
                t.reaped();
                return Err(changed(
                    t,
                    format!("it exited with status {code} after {execs} execs"),
                ));
            }
            Ok(WaitStatus::Signaled(_, s, _)) => {
                t.reaped();
                let by = if s == Signal::SIGKILL {
                    " (by --timeout, or from outside)"
                } else {
                    ""
                };
                let what = format!("it was killed by {s:?}{by} after {execs} execs");
                return Err(changed(t, what));
            }
            Ok(WaitStatus::Stopped(_, sig)) => {
                let _ = resume(execs, Some(sig));
            }
            Ok(_) => {
                let _ = resume(execs, None);
            }
            Err(Errno::EINTR) => {
                if crate::trace::interrupted() {
                    t.kill();
                    return Err(TraceError::Interrupted);
                }
            }
            Err(e) => return Err(t.lost(format!("waitpid: {e}"))),
        }
    }
}

/// At a syscall stop: the file an execve is about to run, when this is an execve's entry.
fn execve_entry(pid: Pid) -> Option<String> {
    let args = crate::trace::launch::execve_entry_args(pid)?;
    read_cstring(pid, args[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn img(path: &str, interp: Option<&str>) -> ExecImage {
        ExecImage {
            path: path.into(),
            interpreter: interp.map(str::to_string),
            exe: path.into(),
        }
    }

    #[test]
    fn the_plan_skips_every_image_but_the_last() {
        let chain = [
            img("./wrap", Some("/bin/sh")),
            img("/usr/bin/env", None),
            img("/tmp/fx", None),
        ];
        assert_eq!(
            plan(&chain),
            Some(FollowTo {
                skip: 2,
                execfn: "/tmp/fx".into()
            })
        );
        assert_eq!(plan(&chain[..1]), None);
        assert_eq!(
            describe(&chain),
            "./wrap (#!/bin/sh) → /usr/bin/env → /tmp/fx"
        );
    }
}
