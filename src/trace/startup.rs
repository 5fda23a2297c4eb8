//! One run of a target from execve to exit, cut into phases at ptrace stops.
//!
//! In: a [`Command`] and what to instrument. Out: a [`Run`] (see [`crate::record`]).
//!
//! Boundaries, from the most to the least detail available (the report says which):
//! * exec: the PTRACE_EVENT_EXEC stop, at ld.so's first instruction (or a static program's);
//! * with ld.so's debug symbols (build-id debug file): `_dl_relocate_object(l, ...)` and
//!   `call_init(l, ...)` entries (rdi is the `struct link_map *`, whose `l_name` at offset 8
//!   names the object) and their return addresses (read from `[rsp]` at entry);
//! * without: `_dl_debug_state` hits, reading `_r_debug.r_state` (offset 24): RT_CONSISTENT
//!   after RT_ADD means every object is mapped (the r_debug protocol debuggers use);
//! * the program's entry point (AT_ENTRY from /proc/PID/auxv): ld.so is done;
//! * `main`, from the executable's symbol table, or else from `__libc_start_main`'s first
//!   argument (rdi), which is main's address;
//! * the PTRACE_EVENT_EXIT stop.
//!
//! At every boundary the target's perf counters are read (it is stopped, so they are still).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::sys::wait::{waitid, waitpid, Id, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::breakpoint::{read_u64, Breakpoints};
pub use super::inspect::cpu::virtual_machine;
pub use super::inspect::ldso_detail;
use super::inspect::{
    auxv, cpu, exe_bias, exe_path, fork_event, is_fork_event, libc_base, link_map_name,
    main_map_name, mapped_base, other_tracee, plant_main, start_sampler, Forked, AT_BASE, AT_ENTRY,
    TAG_LIBC_START_MAIN, TAG_MAIN,
};
use super::launch::{launch, Command, Ending, TraceError, Watchdog};
use super::segments::{segments_from, Boundary, Mark};
use crate::perf::CounterSet;
use crate::record::{CpuFeatureCut, Detail, Instrumentation, Phase, Run};

/// Errors of one profiled run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error(transparent)]
    Perf(#[from] crate::perf::PerfError),
}

/// What to do in one run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub instrumentation: Instrumentation,
    pub timeout: Option<Duration>,
    pub debug_roots: Vec<PathBuf>,
    /// Sample the run (from before exec to the end) over the target's process tree.
    pub sample: Option<crate::perf::SamplerConfig>,
}

const TAG_RELOC: u32 = 1;
const TAG_RELOC_RET: u32 = 2;
const TAG_INIT: u32 = 3;
const TAG_INIT_RET: u32 = 4;
const TAG_DEBUG_STATE: u32 = 5;
const TAG_ENTRY: u32 = 6;
// CPU feature detection (inspect/cpu.rs): its start (ld.so's init_cpu_features entry, or a
// static program's __tunables_init return), its end (the return address read at that entry,
// or a static program's _dl_relocate_static_pie entry), and a static program's
// __tunables_init entry, where the return address that starts it is read.
const TAG_CPU: u32 = 21;
const TAG_CPU_RET: u32 = 22;
const TAG_TUNABLES: u32 = 23;
const TAG_CPU_END: u32 = 24;

/// Runs the command once and records its phases.
pub fn run_once(cmd: &Command, opts: &RunOptions) -> Result<(Run, Detail), RunError> {
    // The tracer and the target on one CPU: a ptrace stop then costs the target ~3 µs
    // instead of ~15 µs on an idle VM (see pin.rs).
    let _pin = super::pin::here();
    let mut tracee = launch(cmd)?;
    let pid = tracee.pid;
    // Started while the target waits before its exec: the exec and everything after are seen.
    let mut sampler = opts
        .sample
        .as_ref()
        .map(|cfg| start_sampler(cfg, pid.as_raw()));
    // Counting from now, zeroed at the execve's entry: the whole system call is counted
    // (CounterSet::rebase says why not enable-on-exec).
    let mut counters = CounterSet::open(pid.as_raw(), false)?;
    // The same counters inherited by threads and children: the difference is theirs.
    let mut inherited = CounterSet::open_inherited(pid.as_raw(), false).ok();
    let mut user_kernel_ns = None;

    // --timeout: killed by a watchdog, cancelled when it is dropped.
    let watchdog = Watchdog::start(pid, opts.timeout);

    tracee.stop_at_execve()?;
    counters.rebase()?;
    // The process's CPU before the measured execve (a followed chain's wrappers): not the
    // target's, left out of the user/kernel split read at its exit.
    let cpu_at_exec = crate::perf::cpu_times(pid.as_raw());
    if let Some(c) = inherited.as_mut() {
        c.rebase()?;
    }
    let t0 = Instant::now();
    tracee.run_to_exec()?;
    // Wall time during which the target ran: our own work at each stop is left out.
    let mut running_ns = t0.elapsed().as_nanos() as u64;
    let mut marks: Vec<Boundary> = Vec::new();
    let mut stops = 1u64;
    marks.push(Boundary::new(
        Mark::Exec,
        running_ns,
        stops,
        counters.read()?,
    ));

    let aux = auxv(pid);
    let at_base = aux.get(&AT_BASE).copied().unwrap_or(0);
    let at_entry = aux.get(&AT_ENTRY).copied().unwrap_or(0);
    let exe = exe_path(pid, &cmd.program);
    // The name the main map goes by in the report: the path as given when it is what runs,
    // else (a #! script) the interpreter as the script names it, else the real executable.
    let main_name = main_map_name(&cmd.program, &exe);
    let mut bps = Breakpoints::default();
    let per_object = opts.instrumentation == Instrumentation::PerObject;

    let mut r_debug: Option<u64> = None;
    // ld.so's persistent breakpoints, removed at the entry point (a later dlopen must not stop
    // the target, and untraced threads must never meet an int3).
    let mut ldso_bps: Vec<u64> = Vec::new();
    let mut entry_addrs: Vec<(u64, u32)> = Vec::new();
    // Where CPU feature detection is cut: the object the phase is charged to and how, or why
    // it is not cut; and whether its start and end were hit.
    let mut cpu_plan: Result<(String, String), CpuFeatureCut> =
        Err(CpuFeatureCut::Absent("not planned".into()));
    let (mut cpu_started, mut cpu_done) = (false, false);
    let detail = if at_base == 0 {
        Detail::Static
    } else {
        let interp = mapped_base(pid, |p| {
            p.contains("/ld-linux") || p.contains("/ld.so") || p.contains("/ld-")
        });
        let (interp_path, base) = match &interp {
            Some((b, p)) => (PathBuf::from(p), *b),
            None => (PathBuf::from(crate::deps::DEFAULT_INTERP), at_base),
        };
        let (detail, syms) = ldso_detail(&interp_path, &opts.debug_roots);
        let sym = |n: &str| {
            syms.as_ref()
                .and_then(|s| s.lookup(n))
                .map(|s| base + s.value)
        };
        let have_debug = matches!(detail, Detail::DebugSymbols { .. });
        cpu_plan = match cpu::ldso_entry(syms.as_deref(), have_debug) {
            Ok((value, name)) => {
                let a = base + value;
                bps.insert(pid, a, TAG_CPU, false)
                    .or_else(|e| gone_ok(e, &tracee, "breakpoint"))?;
                ldso_bps.push(a);
                Ok((
                    interp_path.display().to_string(),
                    format!("ld.so's {name}, entry to return"),
                ))
            }
            Err(why) => Err(why),
        };
        match &detail {
            Detail::DebugSymbols { .. } => {
                // One-shot, re-armed when the call returns: no single-step over the entry
                // (a third fewer stops than a persistent breakpoint).
                if let Some(a) = sym("_dl_relocate_object") {
                    bps.insert(pid, a, TAG_RELOC, false)
                        .or_else(|e| gone_ok(e, &tracee, "breakpoint"))?;
                    ldso_bps.push(a);
                    entry_addrs.push((a, TAG_RELOC));
                }
                if per_object {
                    if let Some(a) = sym("call_init") {
                        bps.insert(pid, a, TAG_INIT, false)
                            .or_else(|e| gone_ok(e, &tracee, "breakpoint"))?;
                        ldso_bps.push(a);
                        entry_addrs.push((a, TAG_INIT));
                    }
                }
            }
            _ => {
                if let Some(a) = sym("_dl_debug_state") {
                    bps.insert(pid, a, TAG_DEBUG_STATE, true)
                        .or_else(|e| gone_ok(e, &tracee, "breakpoint"))?;
                    ldso_bps.push(a);
                }
            }
        }
        r_debug = sym("_r_debug");
        if at_entry != 0 {
            bps.insert(pid, at_entry, TAG_ENTRY, false)
                .or_else(|e| gone_ok(e, &tracee, "breakpoint"))?;
        }
        detail
    };
    let is_static = detail == Detail::Static;
    if is_static {
        // The exec stop is at the entry point already.
        marks.push(Boundary::new(
            Mark::Entry,
            running_ns,
            stops,
            marks[0].counters.clone(),
        ));
        plant_main(pid, &exe, at_entry, None, &mut bps);
        let exe_syms = super::inspect::symbols_of(&exe, &[]).ok();
        cpu_plan = match cpu::static_points(exe_syms.as_deref()) {
            Ok((tunables, end)) => {
                let bias = exe_bias(&exe, at_entry);
                bps.insert(pid, bias.wrapping_add(tunables), TAG_TUNABLES, false)
                    .or_else(|e| gone_ok(e, &tracee, "breakpoint"))?;
                bps.insert(pid, bias.wrapping_add(end), TAG_CPU_END, false)
                    .or_else(|e| gone_ok(e, &tracee, "breakpoint"))?;
                Ok((
                    main_name.display().to_string(),
                    "the executable's __tunables_init return to _dl_relocate_static_pie entry (init_cpu_features inlined into __libc_start_main)".into(),
                ))
            }
            Err(why) => Err(why),
        };
    }

    let mut seen_rt_add = false;
    let mut mapping_done = false;
    let mut relocs_seen = 0u32;
    let mut ending = None;
    let mut resumed = Instant::now();
    ptrace::cont(pid, None).or_else(|e| gone_ok(e, &tracee, "PTRACE_CONT"))?;
    // Threads and processes the target starts are traced too (TRACECLONE/TRACEFORK): a thread
    // that meets one of our breakpoints is stepped over it, a forked child gets the original
    // bytes back and is let go. Pids of forked children not yet seen stopped:
    let mut forked: Vec<Forked> = Vec::new();
    // What each replayed stop cost the target (per-object runs: stopcost).
    let mut stop_costs_ns: Vec<u64> = Vec::new();
    // The target's own CPU by the scheduler at its exit stop and at its death: the exit
    // teardown its counters do not see (Run::exit_uncounted_ns).
    let (mut cpu_at_exit_stop, mut cpu_at_death) = (None, None);
    // Group-stops the target entered, and whether it is in one now.
    let (mut group_stops, mut group_stopped) = (0u64, false);
    loop {
        if super::interrupted() {
            tracee.kill();
            return Err(TraceError::Interrupted.into());
        }
        if cpu_at_exit_stop.is_some() && cpu_at_death.is_none() {
            // Past the exit stop: when the next event is the target's death, it is read as a
            // zombie (WNOWAIT leaves it to the wait below), its CPU final and /proc/PID there.
            let any = WaitPidFlag::WEXITED
                | WaitPidFlag::WSTOPPED
                | WaitPidFlag::__WALL
                | WaitPidFlag::WNOWAIT;
            if let Ok(WaitStatus::Exited(p, _) | WaitStatus::Signaled(p, _, _)) =
                waitid(Id::All, any)
            {
                if p == pid {
                    cpu_at_death = crate::perf::thread_cpu_ns(pid.as_raw());
                }
            }
        }
        let waited = if group_stopped {
            // The target waits in its group-stop for SIGCONT, which a tracee stopped under
            // PTRACE_TRACEME is not woken by (nor is its parent told): the SIGCONT is seen
            // pending, and the target resumed to take it, as it would be untraced.
            match waitpid(
                Pid::from_raw(-1),
                Some(WaitPidFlag::__WALL | WaitPidFlag::WNOHANG),
            ) {
                Ok(WaitStatus::StillAlive) => {
                    if sigcont_pending(pid) {
                        group_stopped = false;
                        resumed = Instant::now();
                        let _ = ptrace::cont(pid, None);
                    } else {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    continue;
                }
                w => w,
            }
        } else {
            waitpid(Pid::from_raw(-1), Some(WaitPidFlag::__WALL))
        };
        if let Ok(st) = &waited {
            if let Some(other) = st.pid().filter(|p| *p != pid) {
                other_tracee(pid, other, st, &mut bps, &mut forked);
                continue;
            }
        }
        running_ns += resumed.elapsed().as_nanos() as u64;
        // Until a branch below resumes the target, the clock is ours, not its.
        resumed = Instant::now();
        let status = match waited {
            Ok(s) => s,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(tracee.lost(format!("waitpid: {e}")).into()),
        };
        match status {
            WaitStatus::PtraceEvent(_, _, ev) if is_fork_event(ev) => {
                fork_event(&mut forked, pid, ev, &bps);
                resumed = Instant::now();
                let _ = ptrace::cont(pid, None);
            }
            WaitStatus::Exited(_, code) => {
                tracee.reaped();
                ending.get_or_insert(Ending::Exited(code));
                break;
            }
            WaitStatus::Signaled(_, sig, _) => {
                tracee.reaped();
                if watchdog.fired() {
                    ending = Some(Ending::TimedOut);
                } else {
                    ending.get_or_insert(Ending::Killed(sig as i32));
                }
                break;
            }
            WaitStatus::PtraceEvent(_, _, ev) if ev == ptrace::Event::PTRACE_EVENT_EXIT as i32 => {
                stops += 1;
                marks.push(Boundary::new(
                    Mark::Exit,
                    running_ns,
                    stops,
                    counters.read()?,
                ));
                cpu_at_exit_stop = crate::perf::thread_cpu_ns(pid.as_raw());
                // /proc/PID still describes the whole process here (it has not exited yet).
                user_kernel_ns = crate::perf::cpu_times(pid.as_raw())
                    .map(|c| c.since(cpu_at_exec.as_ref()))
                    .and_then(|c| c.split());
                if let Ok(msg) = ptrace::getevent(pid) {
                    // The exit status (wait(2) encoding), in case the final wait is lost.
                    let st = msg as i32;
                    ending = Some(if st & 0x7f == 0 {
                        Ending::Exited((st >> 8) & 0xff)
                    } else {
                        Ending::Killed(st & 0x7f)
                    });
                }
                resumed = Instant::now();
                let _ = ptrace::cont(pid, None);
            }
            WaitStatus::PtraceEvent(_, _, ev) if ev == ptrace::Event::PTRACE_EVENT_EXEC as i32 => {
                // The measured image exec'd another (--no-follow): refused like the first.
                super::launch::refuse_set_id_image(pid)?;
                resumed = Instant::now();
                let _ = ptrace::cont(pid, None);
            }
            WaitStatus::PtraceEvent(..) | WaitStatus::PtraceSyscall(_) => {
                resumed = Instant::now();
                let _ = ptrace::cont(pid, None);
            }
            WaitStatus::Stopped(_, Signal::SIGTRAP) => {
                let hit = match bps.hit(pid) {
                    Ok(h) => h,
                    // Killed in its stop: the next wait sees its end.
                    Err(nix::errno::Errno::ESRCH) => continue,
                    Err(e) => return Err(tracee.lost(format!("breakpoint: {e}")).into()),
                };
                let Some((addr, tag)) = hit else {
                    // Not ours: the program's own SIGTRAP.
                    resumed = Instant::now();
                    let _ = ptrace::cont(pid, Some(Signal::SIGTRAP));
                    continue;
                };
                // A persistent breakpoint costs a second stop (the single-step over it).
                stops += if tag == TAG_DEBUG_STATE { 2 } else { 1 };
                let now = (running_ns, stops);
                let snap = counters.read()?;
                // Not in sampled runs: their samples would see the replays' kernel work.
                if per_object && opts.sample.is_none() {
                    // The same stop once more with no work between: its cost, measured now, in
                    // this process, and left out of every later reading (see stopcost).
                    use super::stopcost::{replay, Replay};
                    let replayed = match replay(pid, addr) {
                        Ok(r) => r,
                        Err(_) if super::interrupted() => {
                            tracee.kill();
                            return Err(TraceError::Interrupted.into());
                        }
                        // Killed in its stop: the next wait sees its end.
                        Err(nix::errno::Errno::ESRCH) => continue,
                        Err(e) => return Err(tracee.lost(format!("replayed stop: {e}")).into()),
                    };
                    if let Replay::Ended(st) = replayed {
                        tracee.reaped();
                        ending = Some(match st {
                            WaitStatus::Signaled(..) if watchdog.fired() => Ending::TimedOut,
                            WaitStatus::Signaled(_, sig, _) => Ending::Killed(sig as i32),
                            WaitStatus::Exited(_, code) => Ending::Exited(code),
                            _ => Ending::Killed(Signal::SIGKILL as i32),
                        });
                        break;
                    }
                    if let Replay::Done = replayed {
                        let d = counters.read()?.delta(&snap);
                        stop_costs_ns.extend(d.task_clock_ns);
                        if let Some(c) = inherited.as_mut() {
                            c.exclude(&d);
                        }
                        counters.exclude(&d);
                    }
                }
                match tag {
                    TAG_TUNABLES => {
                        if let Some(ret) =
                            ptrace::getregs(pid).ok().and_then(|r| read_u64(pid, r.rsp))
                        {
                            let _ = bps.insert(pid, ret, TAG_CPU, false);
                        }
                    }
                    TAG_CPU => {
                        if let Ok((object, _)) = &cpu_plan {
                            cpu_started = true;
                            marks.push(Boundary::at(
                                Mark::Start(Phase::CpuFeatures, object.clone()),
                                now,
                                snap,
                            ));
                            if at_base != 0 {
                                if let Some(ret) =
                                    ptrace::getregs(pid).ok().and_then(|r| read_u64(pid, r.rsp))
                                {
                                    let _ = bps.insert(pid, ret, TAG_CPU_RET, false);
                                }
                            }
                        }
                    }
                    TAG_CPU_RET | TAG_CPU_END if cpu_started && !cpu_done => {
                        cpu_done = true;
                        marks.push(Boundary::at(Mark::End, now, snap));
                    }
                    TAG_RELOC => {
                        relocs_seen += 1;
                        if per_object {
                            let name = link_map_name(pid, &main_name);
                            marks.push(Boundary::at(
                                Mark::Start(Phase::Relocation, name),
                                now,
                                snap,
                            ));
                            if let Some(ret) =
                                ptrace::getregs(pid).ok().and_then(|r| read_u64(pid, r.rsp))
                            {
                                let _ = bps.insert(pid, ret, TAG_RELOC_RET, false);
                            }
                        } else if relocs_seen == 1 {
                            marks.push(Boundary::at(Mark::MappingDone, now, snap));
                            let _ = bps.remove(pid, addr);
                        }
                    }
                    TAG_INIT => {
                        let name = link_map_name(pid, &main_name);
                        marks.push(Boundary::at(
                            Mark::Start(Phase::Initializers, name),
                            now,
                            snap,
                        ));
                        if let Some(ret) =
                            ptrace::getregs(pid).ok().and_then(|r| read_u64(pid, r.rsp))
                        {
                            let _ = bps.insert(pid, ret, TAG_INIT_RET, false);
                        }
                    }
                    TAG_RELOC_RET | TAG_INIT_RET => {
                        marks.push(Boundary::at(Mark::End, now, snap));
                        // Re-arm the entry breakpoint for the next object.
                        let entry_tag = if tag == TAG_RELOC_RET {
                            TAG_RELOC
                        } else {
                            TAG_INIT
                        };
                        if let Some(&(a, _)) = entry_addrs.iter().find(|(_, t)| *t == entry_tag) {
                            if ldso_bps.contains(&a) {
                                let _ = bps.insert(pid, a, entry_tag, false);
                            }
                        }
                    }
                    TAG_DEBUG_STATE => {
                        let state = r_debug
                            .and_then(|a| read_u64(pid, a + 24))
                            .map(|v| v as u32);
                        match state {
                            Some(1) => seen_rt_add = true,
                            Some(0) if seen_rt_add && !mapping_done => {
                                mapping_done = true;
                                marks.push(Boundary::at(Mark::MappingDone, now, snap));
                                let _ = bps.remove(pid, addr);
                            }
                            _ => {}
                        }
                    }
                    TAG_ENTRY => {
                        marks.push(Boundary::at(Mark::Entry, now, snap));
                        // ld.so is done: its breakpoints go.
                        for a in ldso_bps.drain(..) {
                            let _ = bps.remove(pid, a);
                        }
                        plant_main(pid, &exe, at_entry, libc_base(pid), &mut bps);
                    }
                    TAG_LIBC_START_MAIN => {
                        let main = ptrace::getregs(pid).map(|r| r.rdi).unwrap_or(0);
                        if main != 0 {
                            let _ = bps.insert(pid, main, TAG_MAIN, false);
                        }
                    }
                    TAG_MAIN => {
                        marks.push(Boundary::at(Mark::Main, now, snap));
                        let _ = bps.clear(pid);
                    }
                    _ => {}
                }
                resumed = Instant::now();
                let _ = ptrace::cont(pid, None);
            }
            WaitStatus::Stopped(_, sig) if is_group_stop(pid, sig) => {
                // The stop signal delivered below took effect: the target stays stopped, until
                // SIGCONT (see the wait above).
                group_stops += 1;
                group_stopped = true;
            }
            WaitStatus::Stopped(_, sig) => {
                // A signal for the program: deliver it unchanged (a stop signal then stops it).
                resumed = Instant::now();
                let _ = ptrace::cont(pid, Some(sig));
            }
            _ => {
                resumed = Instant::now();
                let _ = ptrace::cont(pid, None);
            }
        }
    }
    drop(watchdog);
    let wall = t0.elapsed();
    let total = marks.last().map(|m| m.counters.clone()).unwrap_or_default();
    // After the exit stop: the target's own CPU by the scheduler, and that less what its counter
    // still counted (both differences over the same short span, so steal and IRQ time, which
    // task-clock counts and the scheduler's runtime does not, barely enter).
    let (exit_ns, exit_uncounted_ns) = match (cpu_at_exit_stop, cpu_at_death) {
        (Some(a), Some(b)) => {
            let whole = b.saturating_sub(a);
            let counted = counters
                .read()
                .ok()
                .and_then(|f| Some(f.task_clock_ns?.saturating_sub(total.task_clock_ns?)));
            (Some(whole), counted.map(|c| whole.saturating_sub(c)))
        }
        _ => (None, None),
    };
    let children = inherited
        .as_mut()
        .and_then(|c| c.read().ok())
        .map(|all| all.delta(&total));
    let segments = segments_from(&marks, &detail);
    let cpu_features = Some(match cpu_plan {
        Ok((_, how)) if cpu_done => CpuFeatureCut::Cut(how),
        Ok((_, how)) => {
            CpuFeatureCut::NotCut(format!("the breakpoints ({how}) were not both reached"))
        }
        Err(why) => why,
    });
    Ok((
        Run {
            instrumentation: opts.instrumentation,
            segments,
            total,
            wall_ns: wall.as_nanos() as u64,
            ending: ending.unwrap_or(Ending::Exited(0)),
            stops,
            children,
            user_kernel_ns,
            exec: Some(crate::record::ExecAccount::CURRENT),
            sampled: sampler
                .take()
                .map(|s| s.and_then(|s| s.stop().map_err(|e| e.to_string()))),
            cpu_features,
            stop_costs_ns,
            breakpoint_pages: bps.pages_brought_in(),
            exit_ns,
            exit_uncounted_ns,
            group_stops,
        },
        detail,
    ))
}

/// Whether a stop with a stop signal is a group-stop (the signal took effect: the target is
/// stopped as it would be untraced) rather than the signal's delivery stop, where the tracer
/// chooses whether to deliver it: PTRACE_GETSIGINFO fails with EINVAL only in a group-stop.
fn is_group_stop(pid: Pid, sig: Signal) -> bool {
    matches!(
        sig,
        Signal::SIGSTOP | Signal::SIGTSTP | Signal::SIGTTIN | Signal::SIGTTOU
    ) && ptrace::getsiginfo(pid) == Err(nix::errno::Errno::EINVAL)
}

/// Whether a SIGCONT is pending for the process (its shared or its thread's pending set, in
/// /proc/PID/status): under ptrace an ignored signal is still queued, so it shows there.
fn sigcont_pending(pid: Pid) -> bool {
    let bit = 1u64 << (Signal::SIGCONT as u32 - 1);
    std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
        s.lines()
            .filter_map(|l| {
                l.strip_prefix("SigPnd:")
                    .or_else(|| l.strip_prefix("ShdPnd:"))
            })
            .filter_map(|v| u64::from_str_radix(v.trim(), 16).ok())
            .any(|m| m & bit != 0)
    })
}

/// A ptrace request on a stopped target that failed: ESRCH means the target left its stop,
/// which only SIGKILL does to a tracee (from outside, or the `--timeout` watchdog), so it is on
/// its way out and the wait loop records how it ended; any other error loses the run.
fn gone_ok(
    e: nix::errno::Errno,
    tracee: &super::launch::Tracee,
    what: &str,
) -> Result<(), TraceError> {
    if e == nix::errno::Errno::ESRCH {
        Ok(())
    } else {
        Err(tracee.lost(format!("{what}: {e}")))
    }
}

/// Runs the command without ptrace, with the same counters: the reference measurement.
pub fn run_uninstrumented(cmd: &Command, timeout: Option<Duration>) -> Result<Run, RunError> {
    // Pinned as the instrumented runs are, so the two compare like with like.
    let _pin = super::pin::here();
    let mut tracee = launch(cmd)?;
    let pid = tracee.pid;
    // Counted from the execve's entry, as in run_once.
    let mut counters = CounterSet::open(pid.as_raw(), false)?;
    tracee.stop_at_execve()?;
    counters.rebase()?;
    // Detach before exec: from here on the target runs untraced.
    let t0 = Instant::now();
    ptrace::detach(pid, None).map_err(|e| tracee.lost(format!("PTRACE_DETACH: {e}")))?;
    // --timeout: killed by a watchdog, cancelled when it is dropped.
    let watchdog = Watchdog::start(pid, timeout);
    let ending = loop {
        match waitpid(pid, None) {
            Ok(WaitStatus::Exited(_, c)) => break Ending::Exited(c),
            Ok(WaitStatus::Signaled(_, s, _)) => {
                break if watchdog.fired() {
                    Ending::TimedOut
                } else {
                    Ending::Killed(s as i32)
                }
            }
            Ok(_) => continue,
            Err(nix::errno::Errno::EINTR) if !super::interrupted() => continue,
            Err(nix::errno::Errno::EINTR) => {
                tracee.kill();
                return Err(TraceError::Interrupted.into());
            }
            Err(e) => return Err(tracee.lost(format!("waitpid: {e}")).into()),
        }
    };
    tracee.reaped();
    drop(watchdog);
    let wall = t0.elapsed();
    let total = counters.read()?;
    Ok(Run {
        instrumentation: Instrumentation::None,
        segments: Vec::new(),
        total,
        wall_ns: wall.as_nanos() as u64,
        ending,
        stops: 0,
        children: None,
        user_kernel_ns: None,
        exec: Some(crate::record::ExecAccount::CURRENT),
        sampled: None,
        cpu_features: None,
        stop_costs_ns: Vec::new(),
        breakpoint_pages: None,
        exit_ns: None,
        exit_uncounted_ns: None,
        group_stops: 0,
    })
}
