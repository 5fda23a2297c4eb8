//! One run of a target from execve to exit, cut into phases at ptrace stops.
//!
//! In: a [`Command`] and what to instrument. Out: a [`Run`] (see [`crate::record`]).
//!
//! Boundaries, from the most to the least detail available (the report says which):
//! * exec: the PTRACE_EVENT_EXEC stop, at ld.so's first instruction (or a static program's);
//! * with ld.so's debug symbols (build-id debug file), in per-object runs: each
//!   `_dl_map_object(loader, name, ...)` call, entry to return (`_dl_map_object_deps` calls it
//!   once per DT_NEEDED entry, one after another, never nested), charged to the object whose
//!   link_map it returns (the DT_NEEDED name when it fails);
//! * with ld.so's debug symbols: `_dl_relocate_object(l, ...)` and
//!   `call_init(l, ...)` entries (rdi is the `struct link_map *`, whose `l_name` at offset 8
//!   names the object) and their return addresses (read from `[rsp]` at entry);
//! * without: `_dl_debug_state` hits, reading `_r_debug.r_state` (offset 24): RT_CONSISTENT
//!   after RT_ADD means every object is mapped (the r_debug protocol debuggers use);
//! * the program's entry point (AT_ENTRY from /proc/PID/auxv): ld.so is done;
//! * `main`, from the executable's symbol table, or else from `__libc_start_main`'s first
//!   argument (rdi), which is main's address;
//! * the PTRACE_EVENT_EXIT stop.
//!
//! Per-object runs of a dynamic program go on from `main` with the loader's work after it
//! (`dlopen`, `dlclose`, lazy binding, in any thread): see the `after_main` module.
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
    main_map_name, mapped_base, other_tracee, plant_main, second_arg_string, start_sampler, Forked,
    AT_BASE, AT_ENTRY, TAG_LIBC_START_MAIN, TAG_MAIN,
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
// One object's search and mapping (per-object runs with ld.so's debug symbols): the entry of
// `_dl_map_object(loader, name, ...)` and its return, where rax is the link_map it mapped or
// found.
const TAG_MAP: u32 = 25;
const TAG_MAP_RET: u32 = 26;

/// Runs the command once and records its phases.
pub fn run_once(cmd: &Command, opts: &RunOptions) -> Result<(Run, Detail), RunError> {
    // The tracer and the target on one CPU: a ptrace stop then costs the target ~3 µs
    // instead of ~15 µs on an idle VM (see pin.rs).
    let _pin = super::pin::here();
    let mut run = StartupRun::to_exec(cmd, opts)?;
    run.plant()?;
    run.resume_first()?;
    run.trace()?;
    Ok(run.finish())
}

/// What a stop handler tells the wait loop.
enum Flow {
    /// Wait for the next stop.
    Next,
    /// The target has ended (its ending recorded): the run is over.
    Ended,
}

/// One run from its exec stop to its end: the state the stops build up, with one handler
/// per kind of stop ([`StartupRun::trace`] dispatches).
struct StartupRun<'a> {
    opts: &'a RunOptions,
    tracee: super::launch::Tracee,
    pid: Pid,
    sampler: Option<Result<crate::perf::Sampler, String>>,
    counters: CounterSet,
    /// The same counters inherited by threads and children: the difference is theirs.
    inherited: Option<CounterSet>,
    /// --timeout: killed by a watchdog, cancelled when it is dropped.
    watchdog: Watchdog,
    /// The process's CPU before the measured execve (a followed chain's wrappers): not the
    /// target's, left out of the user/kernel split read at its exit.
    cpu_at_exec: Option<crate::perf::CpuTimes>,
    user_kernel_ns: Option<(u64, u64)>,
    t0: Instant,
    /// Wall time during which the target ran: our own work at each stop is left out.
    running_ns: u64,
    /// When the target was last resumed: until a handler resumes it, the clock is ours.
    resumed: Instant,
    marks: Vec<Boundary>,
    stops: u64,
    bps: Breakpoints,
    at_base: u64,
    at_entry: u64,
    exe: PathBuf,
    /// The name the main map goes by in the report: the path as given when it is what runs,
    /// else (a #! script) the interpreter as the script names it, else the real executable.
    main_name: PathBuf,
    per_object: bool,
    detail: Detail,
    r_debug: Option<u64>,
    /// ld.so's persistent breakpoints, removed at the entry point (a later dlopen must not
    /// stop the target, and untraced threads must never meet an int3).
    ldso_bps: Vec<u64>,
    entry_addrs: Vec<(u64, u32)>,
    /// Where CPU feature detection is cut: the object the phase is charged to and how, or
    /// why it is not cut; and whether its start and end were hit.
    cpu_plan: Result<(String, String), CpuFeatureCut>,
    cpu_started: bool,
    cpu_done: bool,
    seen_rt_add: bool,
    mapping_done: bool,
    relocs_seen: u32,
    /// The open `_dl_map_object` call's start mark: named at its return by the object found.
    map_mark: Option<usize>,
    ending: Option<Ending>,
    /// Threads and processes the target starts are traced too (TRACECLONE/TRACEFORK): a
    /// thread that meets one of our breakpoints is stepped over it, a forked child gets the
    /// original bytes back and is let go. Pids of forked children not yet seen stopped:
    forked: Vec<Forked>,
    /// What each replayed stop cost the target (per-object runs: stopcost).
    stop_costs_ns: Vec<u64>,
    /// The target's own CPU by the scheduler at its exit stop and at its death: the exit
    /// teardown its counters do not see (Run::exit_uncounted_ns).
    cpu_at_exit_stop: Option<u64>,
    cpu_at_death: Option<u64>,
    /// Group-stops the target entered, and whether it is in one now.
    group_stops: u64,
    group_stopped: bool,
    /// ld.so's addresses the loader's work after `main` is seen at (a dynamic program).
    ldso_points: Option<super::after_main::LdsoPoints>,
    /// The loader after `main` (per-object runs, from `main` on), or why it is not seen.
    after_main: Result<super::after_main::Tracer, String>,
}

impl<'a> StartupRun<'a> {
    /// Launches the command and runs it to its exec stop, counting from its execve's entry.
    fn to_exec(cmd: &Command, opts: &'a RunOptions) -> Result<StartupRun<'a>, RunError> {
        let mut tracee = launch(cmd)?;
        let pid = tracee.pid;
        // Started while the target waits before its exec: the exec and everything after are
        // seen.
        let sampler = opts
            .sample
            .as_ref()
            .map(|cfg| start_sampler(cfg, pid.as_raw()));
        // Counting from now, zeroed at the execve's entry: the whole system call is counted
        // (CounterSet::rebase says why not enable-on-exec).
        let mut counters = CounterSet::open(pid.as_raw(), false)?;
        let mut inherited = CounterSet::open_inherited(pid.as_raw(), false).ok();
        let watchdog = Watchdog::start(pid, opts.timeout);
        tracee.stop_at_execve()?;
        counters.rebase()?;
        let cpu_at_exec = crate::perf::cpu_times(pid.as_raw());
        if let Some(c) = inherited.as_mut() {
            c.rebase()?;
        }
        let t0 = Instant::now();
        tracee.run_to_exec()?;
        let running_ns = t0.elapsed().as_nanos() as u64;
        let stops = 1u64;
        let marks = vec![Boundary::new(
            Mark::Exec,
            running_ns,
            stops,
            counters.read()?,
        )];
        let aux = auxv(pid);
        let exe = exe_path(pid, &cmd.program);
        Ok(StartupRun {
            opts,
            pid,
            sampler,
            counters,
            inherited,
            watchdog,
            cpu_at_exec,
            user_kernel_ns: None,
            t0,
            running_ns,
            resumed: Instant::now(),
            marks,
            stops,
            bps: Breakpoints::default(),
            at_base: aux.get(&AT_BASE).copied().unwrap_or(0),
            at_entry: aux.get(&AT_ENTRY).copied().unwrap_or(0),
            main_name: main_map_name(&cmd.program, &exe),
            exe,
            per_object: matches!(
                opts.instrumentation,
                Instrumentation::PerObject | Instrumentation::PerObjectBindNow
            ),
            detail: Detail::Static,
            r_debug: None,
            ldso_bps: Vec::new(),
            entry_addrs: Vec::new(),
            cpu_plan: Err(CpuFeatureCut::Absent("not planned".into())),
            cpu_started: false,
            cpu_done: false,
            seen_rt_add: false,
            mapping_done: false,
            relocs_seen: 0,
            map_mark: None,
            ending: None,
            forked: Vec::new(),
            stop_costs_ns: Vec::new(),
            cpu_at_exit_stop: None,
            cpu_at_death: None,
            group_stops: 0,
            group_stopped: false,
            ldso_points: None,
            after_main: Err("main was not reached".into()),
            tracee,
        })
    }

    /// A breakpoint planted at the exec stop (see [`gone_ok`] for a target killed meanwhile).
    fn insert(&mut self, addr: u64, tag: u32, persistent: bool) -> Result<(), TraceError> {
        let r = self.bps.insert(self.pid, addr, tag, persistent);
        r.or_else(|e| gone_ok(e, &self.tracee, "breakpoint"))
    }

    /// Plants the breakpoints of the phase boundaries the image allows (module doc).
    fn plant(&mut self) -> Result<(), RunError> {
        if self.at_base == 0 {
            self.plant_static()
        } else {
            self.plant_ldso()
        }
    }

    /// A dynamic program: ld.so's boundaries, by its debug symbols or its exported ones.
    fn plant_ldso(&mut self) -> Result<(), RunError> {
        let pid = self.pid;
        let interp = mapped_base(pid, |p| {
            p.contains("/ld-linux") || p.contains("/ld.so") || p.contains("/ld-")
        });
        let (interp_path, base) = match &interp {
            Some((b, p)) => (PathBuf::from(p), *b),
            None => (PathBuf::from(crate::deps::DEFAULT_INTERP), self.at_base),
        };
        let (detail, syms) = ldso_detail(&interp_path, &self.opts.debug_roots);
        let sym = |n: &str| {
            syms.as_ref()
                .and_then(|s| s.lookup(n))
                .map(|s| base + s.value)
        };
        let have_debug = matches!(detail, Detail::DebugSymbols { .. });
        self.cpu_plan = match cpu::ldso_entry(syms.as_deref(), have_debug) {
            Ok((value, name)) => {
                let a = base + value;
                self.insert(a, TAG_CPU, false)?;
                self.ldso_bps.push(a);
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
                    self.insert(a, TAG_RELOC, false)?;
                    self.ldso_bps.push(a);
                    self.entry_addrs.push((a, TAG_RELOC));
                }
                if self.per_object {
                    if let Some(a) = sym("_dl_map_object") {
                        self.insert(a, TAG_MAP, false)?;
                        self.ldso_bps.push(a);
                        self.entry_addrs.push((a, TAG_MAP));
                    }
                    if let Some(a) = sym("call_init") {
                        self.insert(a, TAG_INIT, false)?;
                        self.ldso_bps.push(a);
                        self.entry_addrs.push((a, TAG_INIT));
                    }
                }
            }
            _ => {
                if let Some(a) = sym("_dl_debug_state") {
                    self.insert(a, TAG_DEBUG_STATE, true)?;
                    self.ldso_bps.push(a);
                }
            }
        }
        self.r_debug = sym("_r_debug");
        self.ldso_points = Some(super::after_main::LdsoPoints {
            map: sym("_dl_map_object"),
            reloc: sym("_dl_relocate_object"),
            init: sym("call_init"),
            fini: sym("_dl_call_fini"),
            fixup: sym("_dl_fixup"),
            r_debug: self.r_debug,
            debug_roots: self.opts.debug_roots.clone(),
            coarse_why: match &detail {
                Detail::DebugSymbols { .. } => None,
                Detail::Exported { why } => Some(why.clone()),
                Detail::Static => Some("no ld.so".into()),
            },
        });
        if self.at_entry != 0 {
            self.insert(self.at_entry, TAG_ENTRY, false)?;
        }
        self.detail = detail;
        Ok(())
    }

    /// A static program: the exec stop is at its entry point already; main and the CPU
    /// feature detection inlined into `__libc_start_main`.
    fn plant_static(&mut self) -> Result<(), RunError> {
        self.detail = Detail::Static;
        self.after_main = Err("a static program: no ld.so".into());
        self.marks.push(Boundary::new(
            Mark::Entry,
            self.running_ns,
            self.stops,
            self.marks[0].counters.clone(),
        ));
        plant_main(self.pid, &self.exe, self.at_entry, None, &mut self.bps);
        let exe_syms = super::inspect::symbols_of(&self.exe, &[]).ok();
        self.cpu_plan = match cpu::static_points(exe_syms.as_deref()) {
            Ok((tunables, end)) => {
                let bias = exe_bias(&self.exe, self.at_entry);
                self.insert(bias.wrapping_add(tunables), TAG_TUNABLES, false)?;
                self.insert(bias.wrapping_add(end), TAG_CPU_END, false)?;
                Ok((
                    self.main_name.display().to_string(),
                    "the executable's __tunables_init return to _dl_relocate_static_pie entry (init_cpu_features inlined into __libc_start_main)".into(),
                ))
            }
            Err(why) => Err(why),
        };
        Ok(())
    }

    /// Lets the target go from its exec stop.
    fn resume_first(&mut self) -> Result<(), RunError> {
        self.resumed = Instant::now();
        ptrace::cont(self.pid, None).or_else(|e| gone_ok(e, &self.tracee, "PTRACE_CONT"))?;
        Ok(())
    }

    /// Resumes the target (with `sig` delivered): from now the clock is its.
    fn resume(&mut self, sig: Option<Signal>) {
        self.resumed = Instant::now();
        let _ = ptrace::cont(self.pid, sig);
    }

    /// The wait loop: each stop of the target to its handler, until it ends.
    fn trace(&mut self) -> Result<(), RunError> {
        let pid = self.pid;
        loop {
            if super::interrupted() {
                self.tracee.kill();
                return Err(TraceError::Interrupted.into());
            }
            self.peek_death();
            let waited = match self.wait_next() {
                Some(w) => w,
                None => continue,
            };
            if let Ok(st) = &waited {
                if let Some(other) = st.pid().filter(|p| *p != pid) {
                    if let Ok(am) = self.after_main.as_mut() {
                        if am.on_other(other, st, &mut self.bps, Instant::now()) {
                            continue;
                        }
                    }
                    other_tracee(pid, other, st, &mut self.bps, &mut self.forked);
                    continue;
                }
            }
            self.running_ns += self.resumed.elapsed().as_nanos() as u64;
            // Until a handler resumes the target, the clock is ours, not its.
            self.resumed = Instant::now();
            let status = match waited {
                Ok(s) => s,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(self.tracee.lost(format!("waitpid: {e}")).into()),
            };
            let flow = match status {
                WaitStatus::PtraceEvent(_, _, ev) if is_fork_event(ev) => {
                    fork_event(&mut self.forked, pid, ev, &self.bps);
                    self.resume(None);
                    Flow::Next
                }
                WaitStatus::Exited(_, code) => self.on_exited(code),
                WaitStatus::Signaled(_, sig, _) => self.on_killed(sig),
                WaitStatus::PtraceEvent(_, _, ev)
                    if ev == ptrace::Event::PTRACE_EVENT_EXIT as i32 =>
                {
                    self.on_exit_stop()?
                }
                WaitStatus::PtraceEvent(_, _, ev)
                    if ev == ptrace::Event::PTRACE_EVENT_EXEC as i32 =>
                {
                    self.on_exec()?
                }
                WaitStatus::PtraceEvent(_, _, ev)
                    if ev == ptrace::Event::PTRACE_EVENT_CLONE as i32 =>
                {
                    if let Ok(am) = self.after_main.as_mut() {
                        am.on_clone(pid);
                    }
                    self.resume(None);
                    Flow::Next
                }
                WaitStatus::PtraceEvent(..) | WaitStatus::PtraceSyscall(_) => {
                    self.resume(None);
                    Flow::Next
                }
                WaitStatus::Stopped(_, Signal::SIGTRAP) => self.on_trap()?,
                WaitStatus::Stopped(_, sig) if is_group_stop(pid, sig) => self.on_group_stop(sig),
                WaitStatus::Stopped(_, sig) => {
                    // A signal for the program: deliver it unchanged (a stop signal then
                    // stops it).
                    self.resume(Some(sig));
                    Flow::Next
                }
                _ => {
                    self.resume(None);
                    Flow::Next
                }
            };
            if let Flow::Ended = flow {
                return Ok(());
            }
        }
    }

    /// Past the exit stop: when the next event is the target's death, it is read as a
    /// zombie (WNOWAIT leaves it to the wait that follows), its CPU final and /proc/PID there.
    fn peek_death(&mut self) {
        if self.cpu_at_exit_stop.is_none() || self.cpu_at_death.is_some() {
            return;
        }
        let any = WaitPidFlag::WEXITED
            | WaitPidFlag::WSTOPPED
            | WaitPidFlag::__WALL
            | WaitPidFlag::WNOWAIT;
        if let Ok(WaitStatus::Exited(p, _) | WaitStatus::Signaled(p, _, _)) = waitid(Id::All, any) {
            if p == self.pid {
                self.cpu_at_death = crate::perf::thread_cpu_ns(self.pid.as_raw());
            }
        }
    }

    /// The next stop of any tracee; None when the loop should look again (the target left
    /// its group-stop, or is still in it).
    fn wait_next(&mut self) -> Option<nix::Result<WaitStatus>> {
        if !self.group_stopped {
            return Some(super::wait::waitpid(
                Pid::from_raw(-1),
                Some(WaitPidFlag::__WALL),
            ));
        }
        // The target waits in its group-stop for SIGCONT, which a tracee stopped under
        // PTRACE_TRACEME is not woken by (nor is its parent told): the SIGCONT is seen
        // pending, and the target resumed to take it, as it would be untraced.
        match super::wait::waitpid(
            Pid::from_raw(-1),
            Some(WaitPidFlag::__WALL | WaitPidFlag::WNOHANG),
        ) {
            Ok(WaitStatus::StillAlive) => {
                if sigcont_pending(self.pid) {
                    self.group_stopped = false;
                    self.resume(None);
                } else {
                    std::thread::sleep(Duration::from_millis(5));
                }
                None
            }
            w => Some(w),
        }
    }

    /// The target exited: its status (unless the exit stop read it first).
    fn on_exited(&mut self, code: i32) -> Flow {
        self.tracee.reaped();
        self.ending.get_or_insert(Ending::Exited(code));
        Flow::Ended
    }

    /// The target died of a signal: the watchdog's, or another.
    fn on_killed(&mut self, sig: Signal) -> Flow {
        self.tracee.reaped();
        if self.watchdog.fired() {
            self.ending = Some(Ending::TimedOut);
        } else {
            self.ending.get_or_insert(Ending::Killed(sig as i32));
        }
        Flow::Ended
    }

    /// PTRACE_EVENT_EXIT: the last boundary, the process's CPU split, the exit status.
    fn on_exit_stop(&mut self) -> Result<Flow, RunError> {
        let pid = self.pid;
        self.stops += 1;
        self.marks.push(Boundary::new(
            Mark::Exit,
            self.running_ns,
            self.stops,
            self.counters.read()?,
        ));
        self.cpu_at_exit_stop = crate::perf::thread_cpu_ns(pid.as_raw());
        if let Ok(am) = self.after_main.as_mut() {
            am.on_exit(None);
        }
        // /proc/PID still describes the whole process here (it has not exited yet).
        self.user_kernel_ns = crate::perf::cpu_times(pid.as_raw())
            .map(|c| c.since(self.cpu_at_exec.as_ref()))
            .and_then(|c| c.split());
        if let Ok(msg) = ptrace::getevent(pid) {
            // The exit status (wait(2) encoding), in case the final wait is lost.
            let st = msg as i32;
            self.ending = Some(if st & 0x7f == 0 {
                Ending::Exited((st >> 8) & 0xff)
            } else {
                Ending::Killed(st & 0x7f)
            });
        }
        self.resume(None);
        Ok(Flow::Next)
    }

    /// The measured image exec'd another (--no-follow): refused like the first.
    fn on_exec(&mut self) -> Result<Flow, RunError> {
        super::launch::refuse_set_id_image(self.pid)?;
        // The image our breakpoints after main were in is gone: what they saw stays
        // recorded, nothing of the new image is.
        if let Ok(am) = self.after_main.as_mut() {
            am.forget_image();
            self.bps = Breakpoints::default();
        }
        self.resume(None);
        Ok(Flow::Next)
    }

    /// A group-stop: the stop signal delivered took effect; the target stays stopped until
    /// SIGCONT (see [`StartupRun::wait_next`]).
    fn on_group_stop(&mut self, sig: Signal) -> Flow {
        say_group_stopped(self.pid, sig);
        self.group_stops += 1;
        self.group_stopped = true;
        Flow::Next
    }

    /// A SIGTRAP: one of our breakpoints (its boundary recorded, its stop replayed in
    /// per-object runs) or the program's own.
    fn on_trap(&mut self) -> Result<Flow, RunError> {
        let pid = self.pid;
        if let Ok(am) = self.after_main.as_mut() {
            match am.on_trap(pid, &mut self.bps, self.resumed) {
                None => {}
                Some(Ok(stops)) => {
                    self.stops += stops;
                    self.resume(None);
                    return Ok(Flow::Next);
                }
                Some(Err(nix::errno::Errno::ESRCH)) => return Ok(Flow::Next),
                Some(Err(e)) => return Err(self.tracee.lost(format!("breakpoint: {e}")).into()),
            }
        }
        let hit = match self.bps.hit(pid) {
            Ok(h) => h,
            // Killed in its stop: the next wait sees its end.
            Err(nix::errno::Errno::ESRCH) => return Ok(Flow::Next),
            Err(e) => return Err(self.tracee.lost(format!("breakpoint: {e}")).into()),
        };
        let Some((addr, tag)) = hit else {
            // Not ours: the program's own SIGTRAP.
            self.resume(Some(Signal::SIGTRAP));
            return Ok(Flow::Next);
        };
        // A persistent breakpoint costs a second stop (the single-step over it).
        self.stops += if tag == TAG_DEBUG_STATE { 2 } else { 1 };
        let now = (self.running_ns, self.stops);
        let snap = self.counters.read()?;
        // Not in sampled runs: their samples would see the replays' kernel work.
        if self.per_object && self.opts.sample.is_none() {
            if let Some(flow) = self.replay_stop(addr, &snap)? {
                return Ok(flow);
            }
        }
        self.on_breakpoint(addr, tag, now, snap);
        self.resume(None);
        Ok(Flow::Next)
    }

    /// The same stop once more with no work between: its cost, measured now, in this
    /// process, and left out of every later reading (see stopcost). Some(flow) when the run
    /// cannot go on from this stop (the target ended, or was killed in it).
    fn replay_stop(
        &mut self,
        addr: u64,
        snap: &crate::perf::Snapshot,
    ) -> Result<Option<Flow>, RunError> {
        use super::stopcost::{replay, Replay};
        let replayed = match replay(self.pid, addr) {
            Ok(r) => r,
            Err(_) if super::interrupted() => {
                self.tracee.kill();
                return Err(TraceError::Interrupted.into());
            }
            // Killed in its stop: the next wait sees its end.
            Err(nix::errno::Errno::ESRCH) => return Ok(Some(Flow::Next)),
            Err(e) => return Err(self.tracee.lost(format!("replayed stop: {e}")).into()),
        };
        match replayed {
            Replay::Ended(st) => {
                self.tracee.reaped();
                self.ending = Some(match st {
                    WaitStatus::Signaled(..) if self.watchdog.fired() => Ending::TimedOut,
                    WaitStatus::Signaled(_, sig, _) => Ending::Killed(sig as i32),
                    WaitStatus::Exited(_, code) => Ending::Exited(code),
                    _ => Ending::Killed(Signal::SIGKILL as i32),
                });
                Ok(Some(Flow::Ended))
            }
            Replay::Done => {
                let d = self.counters.read()?.delta(snap);
                self.stop_costs_ns.extend(d.task_clock_ns);
                if let Some(c) = self.inherited.as_mut() {
                    c.exclude(&d);
                }
                self.counters.exclude(&d);
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// The return address at a function's entry stop ([rsp]).
    fn return_address(&self) -> Option<u64> {
        ptrace::getregs(self.pid)
            .ok()
            .and_then(|r| read_u64(self.pid, r.rsp))
    }

    /// One of our breakpoints, by its tag: the boundary it marks, the breakpoints it arms or
    /// removes.
    fn on_breakpoint(&mut self, addr: u64, tag: u32, now: (u64, u64), snap: crate::perf::Snapshot) {
        let pid = self.pid;
        match tag {
            TAG_TUNABLES => {
                if let Some(ret) = self.return_address() {
                    let _ = self.bps.insert(pid, ret, TAG_CPU, false);
                }
            }
            TAG_CPU => {
                if let Ok((object, _)) = &self.cpu_plan {
                    self.cpu_started = true;
                    self.marks.push(Boundary::at(
                        Mark::Start(Phase::CpuFeatures, object.clone()),
                        now,
                        snap,
                    ));
                    if self.at_base != 0 {
                        if let Some(ret) = self.return_address() {
                            let _ = self.bps.insert(pid, ret, TAG_CPU_RET, false);
                        }
                    }
                }
            }
            TAG_CPU_RET | TAG_CPU_END if self.cpu_started && !self.cpu_done => {
                self.cpu_done = true;
                self.marks.push(Boundary::at(Mark::End, now, snap));
            }
            TAG_RELOC => {
                self.relocs_seen += 1;
                if self.per_object {
                    let name = link_map_name(pid, &self.main_name);
                    self.marks.push(Boundary::at(
                        Mark::Start(Phase::Relocation, name),
                        now,
                        snap,
                    ));
                    if let Some(ret) = self.return_address() {
                        let _ = self.bps.insert(pid, ret, TAG_RELOC_RET, false);
                    }
                } else if self.relocs_seen == 1 {
                    self.marks.push(Boundary::at(Mark::MappingDone, now, snap));
                    let _ = self.bps.remove(pid, addr);
                }
            }
            TAG_MAP => {
                let name = second_arg_string(pid).unwrap_or_default();
                self.map_mark = Some(self.marks.len());
                self.marks.push(Boundary::at(
                    Mark::Start(Phase::ObjectMapping, name),
                    now,
                    snap,
                ));
                if let Some(ret) = self.return_address() {
                    let _ = self.bps.insert(pid, ret, TAG_MAP_RET, false);
                }
            }
            TAG_INIT => {
                let name = link_map_name(pid, &self.main_name);
                self.marks.push(Boundary::at(
                    Mark::Start(Phase::Initializers, name),
                    now,
                    snap,
                ));
                if let Some(ret) = self.return_address() {
                    let _ = self.bps.insert(pid, ret, TAG_INIT_RET, false);
                }
            }
            TAG_RELOC_RET | TAG_INIT_RET | TAG_MAP_RET => {
                if tag == TAG_MAP_RET {
                    // The object found, by the name the relocation and initializer
                    // segments use; a failed search keeps the name it was asked for.
                    let found = super::inspect::returned_map_name(pid, &self.main_name);
                    if let (Some(i), Some(found)) = (self.map_mark.take(), found) {
                        if let Some(Boundary {
                            mark: Mark::Start(_, name),
                            ..
                        }) = self.marks.get_mut(i)
                        {
                            *name = found;
                        }
                    }
                }
                self.marks.push(Boundary::at(Mark::End, now, snap));
                // Re-arm the entry breakpoint for the next object.
                let entry_tag = match tag {
                    TAG_RELOC_RET => TAG_RELOC,
                    TAG_MAP_RET => TAG_MAP,
                    _ => TAG_INIT,
                };
                if let Some(&(a, _)) = self.entry_addrs.iter().find(|(_, t)| *t == entry_tag) {
                    if self.ldso_bps.contains(&a) {
                        let _ = self.bps.insert(pid, a, entry_tag, false);
                    }
                }
            }
            TAG_DEBUG_STATE => {
                let state = self
                    .r_debug
                    .and_then(|a| read_u64(pid, a + 24))
                    .map(|v| v as u32);
                match state {
                    Some(1) => self.seen_rt_add = true,
                    Some(0) if self.seen_rt_add && !self.mapping_done => {
                        self.mapping_done = true;
                        self.marks.push(Boundary::at(Mark::MappingDone, now, snap));
                        let _ = self.bps.remove(pid, addr);
                    }
                    _ => {}
                }
            }
            TAG_ENTRY => {
                self.marks.push(Boundary::at(Mark::Entry, now, snap));
                // ld.so is done: its breakpoints go.
                for a in self.ldso_bps.drain(..) {
                    let _ = self.bps.remove(pid, a);
                }
                plant_main(pid, &self.exe, self.at_entry, libc_base(pid), &mut self.bps);
            }
            TAG_LIBC_START_MAIN => {
                let main = ptrace::getregs(pid).map(|r| r.rdi).unwrap_or(0);
                if main != 0 {
                    let _ = self.bps.insert(pid, main, TAG_MAIN, false);
                }
            }
            TAG_MAIN => {
                self.marks.push(Boundary::at(Mark::Main, now, snap));
                let _ = self.bps.clear(pid);
                if self.opts.instrumentation == Instrumentation::PerObject {
                    if let Some(points) = &self.ldso_points {
                        self.after_main = super::after_main::Tracer::arm(
                            pid,
                            &mut self.bps,
                            points,
                            &self.main_name,
                        );
                    }
                }
            }
            _ => {}
        }
    }

    /// The recording of the run, once the target has ended.
    fn finish(mut self) -> (Run, Detail) {
        drop(self.watchdog);
        let wall = self.t0.elapsed();
        let total = self
            .marks
            .last()
            .map(|m| m.counters.clone())
            .unwrap_or_default();
        // After the exit stop: the target's own CPU by the scheduler, and that less what its
        // counter still counted (both differences over the same short span, so steal and IRQ
        // time, which task-clock counts and the scheduler's runtime does not, barely enter).
        let (exit_ns, exit_uncounted_ns) = match (self.cpu_at_exit_stop, self.cpu_at_death) {
            (Some(a), Some(b)) => {
                let whole = b.saturating_sub(a);
                let counted = self
                    .counters
                    .read()
                    .ok()
                    .and_then(|f| Some(f.task_clock_ns?.saturating_sub(total.task_clock_ns?)));
                (Some(whole), counted.map(|c| whole.saturating_sub(c)))
            }
            _ => (None, None),
        };
        let children = self
            .inherited
            .as_mut()
            .and_then(|c| c.read().ok())
            .map(|all| all.delta(&total));
        let segments = segments_from(&self.marks, &self.detail);
        let after_main = (self.opts.instrumentation == Instrumentation::PerObject).then(|| {
            match std::mem::replace(&mut self.after_main, Err(String::new())) {
                Ok(am) => {
                    self.stops += am.other_stops();
                    let mut costs = self.stop_costs_ns.clone();
                    costs.sort_unstable();
                    let median = costs.get(costs.len() / 2).copied().unwrap_or(0);
                    am.finish(median)
                }
                Err(why) => crate::record::after_main::AfterMain::not_available(why),
            }
        });
        let cpu_features = Some(match self.cpu_plan {
            Ok((_, how)) if self.cpu_done => CpuFeatureCut::Cut(how),
            Ok((_, how)) => {
                CpuFeatureCut::NotCut(format!("the breakpoints ({how}) were not both reached"))
            }
            Err(why) => why,
        });
        (
            Run {
                instrumentation: self.opts.instrumentation,
                segments,
                total,
                wall_ns: wall.as_nanos() as u64,
                ending: self.ending.unwrap_or(Ending::Exited(0)),
                stops: self.stops,
                children,
                user_kernel_ns: self.user_kernel_ns,
                exec: Some(crate::record::ExecAccount::CURRENT),
                sampled: self
                    .sampler
                    .take()
                    .map(|s| s.and_then(|s| s.stop().map_err(|e| e.to_string()))),
                cpu_features,
                stop_costs_ns: self.stop_costs_ns,
                breakpoint_pages: self.bps.pages_brought_in(),
                exit_ns,
                exit_uncounted_ns,
                group_stops: self.group_stops,
                after_main,
            },
            self.detail,
        )
    }
}

/// Whether a stop with a stop signal is a group-stop (the signal took effect: the target is
/// stopped as it would be untraced) rather than the signal's delivery stop, where the tracer
/// chooses whether to deliver it: PTRACE_GETSIGINFO fails with EINVAL only in a group-stop.
pub(super) fn is_group_stop(pid: Pid, sig: Signal) -> bool {
    matches!(
        sig,
        Signal::SIGSTOP | Signal::SIGTSTP | Signal::SIGTTIN | Signal::SIGTTOU
    ) && ptrace::getsiginfo(pid) == Err(nix::errno::Errno::EINVAL)
}

/// Says once per ldcost process that a target is in a group-stop: ldcost then waits for the
/// SIGCONT the target would wait for untraced, which would otherwise look like a hang.
pub(super) fn say_group_stopped(pid: Pid, sig: Signal) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!(
            "ldcost: the target (pid {pid}) is stopped by {sig}; waiting for SIGCONT (kill -CONT {pid}), as it would untraced"
        );
    }
}

/// Whether a SIGCONT is pending for the process (its shared or its thread's pending set, in
/// /proc/PID/status): under ptrace an ignored signal is still queued, so it shows there.
pub(super) fn sigcont_pending(pid: Pid) -> bool {
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
        after_main: None,
    })
}
