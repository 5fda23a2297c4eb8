//! One probe loop, from the saved registers back to them.
//!
//! In: a ptrace-stopped thread and a [`ProbeRequest`]. Out: a [`ProbeResult`] (one record per
//! iteration), and the thread as it was: registers, signal mask and SIGCHLD action, trace
//! options, memory (the probe's mapping unmapped, the target's stack bytes put back). The
//! steps are those of the module doc of [`super`].

use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::sys::wait::{WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::image::{
    build_image, round_up, spawn_attr, Stack, MAP_ANONYMOUS, MAP_POPULATE, MAP_SHARED, PAGE,
};
use super::remote::{as_bytes, from_bytes, vdso_syscall, Memory, Remote, SavedState};
use super::{
    crashed, perr, ChildAction, InjectError, ProbeParams, ProbeRecord, ProbeRequest, ProbeResult,
    Spawn, PROBE_ENTRY,
};

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
            flags: if req.lean && req.spawn == Spawn::Fork {
                super::FLAG_LEAN
            } else {
                0
            },
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
                    ru_end: out.ru_end,
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
        match crate::trace::wait::waitpid(Pid::from_raw(-1), Some(WaitPidFlag::__WALL)) {
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
                return Err(crashed(pid, sig.as_str()));
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
            Err(nix::errno::Errno::EINTR) if !crate::trace::interrupted() => continue,
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
