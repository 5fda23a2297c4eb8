//! The fork run: the target is run to an injection point (its entry, `main`, `exit`, or a
//! symbol), its footprint is read, the fork probe ([`super::inject`]) forks it N times at
//! native speed, and it runs on to its normal end.
//!
//! In: a [`Command`] and [`ForkOptions`]. Out: a [`ForkRun`] — the raw per-iteration records,
//! the footprint, how `exit` was bound, and how the target ended (its output and exit status
//! are its own: nothing it sees changes).

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::sys::ptrace;
use nix::sys::signal::Signal;
use nix::sys::wait::{WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

use super::breakpoint::{Breakpoints, HwBreakpoints};
use super::inject::{self, ChildAction, InjectError, ProbeRequest, ProbeResult, Spawn};
use super::inspect::{
    auxv, exe_bias, exe_path, exit_got_slot, find_function, fork_event, is_fork_event, libc_base,
    main_target, other_tracee, start_sampler, Forked, AT_BASE, AT_ENTRY, TAG_LIBC_START_MAIN,
    TAG_MAIN,
};
use super::launch::{launch, Command, Ending, TraceError, Watchdog};
pub use crate::record::fork::{At, ChildSpec, ExitBinding, ForkRun};

/// What `--fork` asked for.
#[derive(Debug, Clone)]
pub struct ForkOptions {
    pub at: At,
    pub spawn: Spawn,
    pub child: ChildSpec,
    pub iterations: u64,
    pub timeout: Option<Duration>,
    pub debug_roots: Vec<PathBuf>,
    /// With `ChildSpec::Exit` and a lazily bound `exit`: also run an interleaved loop calling
    /// libc's `exit` directly in every other child, to measure the lazy binding.
    pub lazy_ab_iterations: u64,
    /// Sample a further loop of `sample_iterations` (the measured loops are never sampled:
    /// sampling costs the target CPU).
    pub sample: Option<crate::perf::SamplerConfig>,
    pub sample_iterations: u64,
}

/// Errors of a fork run.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error("the target ended before reaching {at} ({ending}); nothing was forked")]
    NotReached { at: String, ending: String },
    #[error("{what} not found in the target (pid {pid})")]
    NotFound { what: String, pid: i32 },
    #[error("injecting the fork probe: {0}")]
    Inject(#[from] InjectError),
    #[error("the target ran past --timeout before the fork loop finished")]
    TimedOut,
    /// The timeout fired before the target reached the injection point: no fork ran.
    #[error("the target ran past --timeout before reaching --at {at}; no fork was made")]
    TimedOutBeforeAt { at: String },
    /// The target was killed by SIGKILL from outside (not by `--timeout`) while the fork run
    /// had it traced: nothing of the probe is kept; the exec runs still measure.
    #[error("the target was killed by SIGKILL during the fork probe: fork figures not measured")]
    Killed,
    #[error("{0}")]
    Unsupported(String),
    /// The system refused a resource the probe needs (file descriptors, memory): exit 8, not
    /// a figure "not available on this machine".
    #[error("{what}: {source}")]
    Exhausted {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
}

const TAG_ENTRY: u32 = 101;
const TAG_AT: u32 = 102;

/// Refuses the option combinations that cannot run, before anything is launched.
pub fn check(opts: &ForkOptions) -> Result<(), ForkError> {
    if opts.spawn == Spawn::Vfork && opts.child == ChildSpec::Exit {
        return Err(ForkError::Unsupported(
            "--spawn vfork with --child exit: a vfork child may only _exit or exec (it shares the parent's memory)".into(),
        ));
    }
    if opts.spawn == Spawn::PosixSpawn && !matches!(opts.child, ChildSpec::Exec(_)) {
        return Err(ForkError::Unsupported(
            "--spawn posix_spawn needs --child exec:PATH (posix_spawn always execs)".into(),
        ));
    }
    Ok(())
}

/// Runs the target once with the fork probe. A target killed by SIGKILL from outside while
/// traced is [`ForkError::Killed`], whatever ptrace request or wait noticed it first.
pub fn run(cmd: &Command, opts: &ForkOptions) -> Result<ForkRun, ForkError> {
    check(opts)?;
    let mut tracee = launch(cmd)?;
    let pid = tracee.pid;
    super::set_current_target(pid.as_raw());
    // --timeout: killed by a watchdog, cancelled when it is dropped.
    let watchdog = Watchdog::start(pid, opts.timeout);
    let r = traced(cmd, opts, &mut tracee, &watchdog);
    match r {
        Err(e) if !watchdog.fired() && !super::interrupted() && gone(&e) => {
            let killed = reap(&mut tracee, &e);
            tracee.kill();
            Err(if killed { ForkError::Killed } else { e })
        }
        r => r,
    }
}

/// Whether the error says the target left its ptrace stop or ended under the probe: ESRCH
/// from a ptrace request on a stopped tracee (only SIGKILL makes it leave the stop), or the
/// probe's wait seeing it end, or the run ending before the injection point by a signal.
fn gone(e: &ForkError) -> bool {
    let esrch = nix::errno::Errno::ESRCH;
    match e {
        ForkError::Inject(InjectError::Ptrace { errno, .. })
        | ForkError::Inject(InjectError::RemoteSyscall { errno, .. }) => *errno == esrch,
        ForkError::Inject(InjectError::Lost { .. }) => true,
        ForkError::Trace(TraceError::Lost { what, .. }) => what.contains(&format!("{esrch:?}")),
        ForkError::NotReached { ending, .. } => *ending == Ending::Killed(9).describe(),
        _ => false,
    }
}

/// Reaps a target that is on its way out and says whether SIGKILL ended it. Called only when
/// [`gone`] holds, so the target no longer waits in a stop of ours: each wait returns.
fn reap(tracee: &mut super::launch::Tracee, e: &ForkError) -> bool {
    if let ForkError::NotReached { .. } = e {
        // The wait loop saw it die already (and reaped it).
        return true;
    }
    let pid = tracee.pid;
    loop {
        match super::wait::waitpid(pid, Some(WaitPidFlag::__WALL)) {
            Ok(WaitStatus::Signaled(_, sig, _)) => {
                tracee.reaped();
                return sig == Signal::SIGKILL;
            }
            Ok(WaitStatus::Exited(..)) => {
                tracee.reaped();
                return false;
            }
            Ok(_) => {
                let _ = ptrace::cont(pid, None);
            }
            Err(nix::errno::Errno::EINTR) => continue,
            // The probe's own wait reaped it: its report says how it ended.
            Err(_) => {
                tracee.reaped();
                return matches!(e, ForkError::Inject(InjectError::Lost { what, .. })
                    if what.contains(Signal::SIGKILL.as_str()) || what.contains("could not block"));
            }
        }
    }
}

/// The fork run from the target's exec on (see [`run`]).
fn traced(
    cmd: &Command,
    opts: &ForkOptions,
    tracee: &mut super::launch::Tracee,
    watchdog: &Watchdog,
) -> Result<ForkRun, ForkError> {
    let pid = tracee.pid;
    tracee.run_to_exec()?;
    let aux = auxv(pid);
    let at_base = aux.get(&AT_BASE).copied().unwrap_or(0);
    let at_entry = aux.get(&AT_ENTRY).copied().unwrap_or(0);
    let exe = exe_path(pid, &cmd.program);
    let is_static = at_base == 0;
    // A static program's entry runs before __libc_start_main has set up its thread pointer:
    // libc's fork, exit and posix_spawn read TLS (the stack-protector canary at %fs:0x28) and
    // fault there. The raw fork syscall is used instead; the libc calls are refused.
    if is_static && opts.at == At::Entry {
        let libc_call = match (&opts.child, opts.spawn) {
            (_, Spawn::PosixSpawn) => Some("--spawn posix_spawn"),
            (ChildSpec::Exit, _) => Some("--child exit"),
            _ => None,
        };
        if let Some(what) = libc_call {
            tracee.kill();
            return Err(ForkError::Unsupported(format!(
                "{what} at the entry of a static program: libc is not initialised there (no \
                 thread pointer yet); use --at main"
            )));
        }
    }
    let mut bps = HwBreakpoints::default();
    // No int3 is ever written into the target here; other tracees get an empty set.
    let mut sw_none = Breakpoints::default();
    let lost = |t: &super::launch::Tracee, e: nix::Error| {
        ForkError::Trace(t.lost(format!("breakpoint: {e}")))
    };

    // The first stop we need: the entry point. A static program's exec stop is at its entry
    // already, but still inside execve (the kernel writes execve's return value into rax
    // after the stop): a breakpoint there stops it again outside the system call.
    let mut at_entry_now = false;
    bps.insert(pid, at_entry, TAG_ENTRY)
        .map_err(|e| lost(tracee, e))?;
    ptrace::cont(pid, None).map_err(|e| tracee.lost(format!("PTRACE_CONT: {e}")))?;
    let mut forked: Vec<Forked> = Vec::new();
    let mut result: Option<(u64, ForkRun)> = None;
    let mut ending = None;
    loop {
        if at_entry_now {
            at_entry_now = false;
            if opts.at == At::Entry {
                bps.clear(pid).ok();
                let r = match inject_here(pid, at_entry, opts, &exe, is_static, &mut forked) {
                    Ok(r) => r,
                    Err(e) => {
                        if !gone(&e) {
                            tracee.kill();
                        }
                        return Err(probe_failed(e, watchdog));
                    }
                };
                result = Some((at_entry, r));
                detach_after_probe(pid);
            } else {
                plant_at(pid, opts, &exe, at_entry, is_static, &mut bps)?;
                ptrace::cont(pid, None).map_err(|e| tracee.lost(format!("PTRACE_CONT: {e}")))?;
            }
        }
        if super::interrupted() {
            tracee.kill();
            return Err(TraceError::Interrupted.into());
        }
        let st = match super::wait::waitpid(Pid::from_raw(-1), Some(WaitPidFlag::__WALL)) {
            Ok(st) => st,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(tracee.lost(format!("waitpid: {e}")).into()),
        };
        if let Some(other) = st.pid().filter(|p| *p != pid) {
            other_tracee(pid, other, &st, &mut sw_none, &mut forked);
            continue;
        }
        match st {
            WaitStatus::Exited(_, code) => {
                tracee.reaped();
                ending.get_or_insert(Ending::Exited(code));
                break;
            }
            WaitStatus::Signaled(_, sig, _) => {
                tracee.reaped();
                ending = Some(if watchdog.fired() {
                    Ending::TimedOut
                } else {
                    Ending::Killed(sig as i32)
                });
                break;
            }
            WaitStatus::Stopped(_, Signal::SIGTRAP) if result.is_none() => {
                let hit = bps.hit(pid).map_err(|e| lost(tracee, e))?;
                match hit {
                    Some((_, TAG_ENTRY)) => {
                        at_entry_now = true;
                        continue;
                    }
                    Some((_, TAG_LIBC_START_MAIN)) => {
                        let main = ptrace::getregs(pid).map(|r| r.rdi).unwrap_or(0);
                        if main != 0 {
                            bps.insert(pid, main, TAG_MAIN)
                                .map_err(|e| lost(tracee, e))?;
                        }
                    }
                    Some((addr, TAG_MAIN | TAG_AT)) => {
                        bps.clear(pid).ok();
                        let r = match inject_here(pid, addr, opts, &exe, is_static, &mut forked) {
                            Ok(r) => r,
                            Err(e) => {
                                if !gone(&e) {
                                    tracee.kill();
                                }
                                return Err(probe_failed(e, watchdog));
                            }
                        };
                        result = Some((addr, r));
                        detach_after_probe(pid);
                        continue;
                    }
                    Some(_) => {}
                    None => {
                        let _ = ptrace::cont(pid, Some(Signal::SIGTRAP));
                        continue;
                    }
                }
                let _ = ptrace::cont(pid, None);
            }
            WaitStatus::Stopped(_, sig) => {
                let _ = ptrace::cont(pid, Some(sig));
            }
            WaitStatus::PtraceEvent(_, _, ev) if is_fork_event(ev) => {
                fork_event(&mut forked, pid, ev, &sw_none);
                let _ = ptrace::cont(pid, None);
            }
            _ => {
                let _ = ptrace::cont(pid, None);
            }
        }
    }
    let ending = ending.unwrap_or(Ending::Exited(0));
    match result {
        Some((_, mut r)) => {
            r.ending = ending;
            Ok(r)
        }
        None if ending == Ending::TimedOut => Err(ForkError::TimedOutBeforeAt {
            at: opts.at.label(),
        }),
        None => Err(ForkError::NotReached {
            at: opts.at.label(),
            ending: ending.describe(),
        }),
    }
}

/// Lets the target run on untraced after the probe. Traced, every signal it gets would stop
/// it — even an ignored SIGCHLD, at each of its own children's exits — and the rest of its run
/// (the seed forktest's own loop, compared with ours) would pay a ptrace stop per fork. It
/// stays our child (its exit status is waited for) and dies with us (PR_SET_PDEATHSIG).
fn detach_after_probe(pid: Pid) {
    let _ = ptrace::detach(pid, None);
}

/// The error to report when the probe failed: the timeout's, when the watchdog killed the
/// target mid-loop; the interruption, when ldcost was asked to stop.
fn probe_failed(e: ForkError, watchdog: &Watchdog) -> ForkError {
    if watchdog.fired() {
        return ForkError::TimedOut;
    }
    match e {
        ForkError::Inject(InjectError::Interrupted) => ForkError::Trace(TraceError::Interrupted),
        _ if super::interrupted() => ForkError::Trace(TraceError::Interrupted),
        e => e,
    }
}

fn plant_at(
    pid: Pid,
    opts: &ForkOptions,
    exe: &Path,
    at_entry: u64,
    is_static: bool,
    bps: &mut HwBreakpoints,
) -> Result<(), ForkError> {
    let nf = |what: &str| ForkError::NotFound {
        what: what.into(),
        pid: pid.as_raw(),
    };
    match &opts.at {
        At::Entry => Ok(()),
        At::Main => {
            let libc = if is_static { None } else { libc_base(pid) };
            let (addr, tag) = main_target(exe, at_entry, libc)
                .ok_or_else(|| nf("main (no symbol main or __libc_start_main)"))?;
            bps.insert(pid, addr, tag).map_err(|e| {
                ForkError::Inject(InjectError::Ptrace {
                    what: "POKEUSER (debug register)",
                    pid: pid.as_raw(),
                    errno: e,
                })
            })
        }
        At::Exit => {
            let a = find_function(pid, exe, at_entry, "exit").ok_or_else(|| nf("exit"))?;
            bps.insert(pid, a, TAG_AT).map_err(|e| {
                ForkError::Inject(InjectError::Ptrace {
                    what: "POKE",
                    pid: pid.as_raw(),
                    errno: e,
                })
            })
        }
        At::Symbol(name) => {
            let a = find_function(pid, exe, at_entry, name)
                .ok_or_else(|| nf(&format!("symbol {name}")))?;
            bps.insert(pid, a, TAG_AT).map_err(|e| {
                ForkError::Inject(InjectError::Ptrace {
                    what: "POKE",
                    pid: pid.as_raw(),
                    errno: e,
                })
            })
        }
    }
}

fn inject_here(
    pid: Pid,
    at_address: u64,
    opts: &ForkOptions,
    exe: &Path,
    is_static: bool,
    forked: &mut Vec<Forked>,
) -> Result<ForkRun, ForkError> {
    let aux = auxv(pid);
    let at_entry = aux.get(&AT_ENTRY).copied().unwrap_or(0);
    let (footprint, footprint_error) = match super::footprint::footprint(pid.as_raw()) {
        Ok(f) => (Some(f), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let mem = inject::Memory::open(pid)?;
    let clock_fn = inject::vdso_clock_gettime(pid, &mem);
    // libc's fork() at a static program's entry would fault (see run()): the raw syscall.
    let libc_ready = !(is_static && at_address == at_entry && opts.at == At::Entry);
    let fork_fn = if opts.spawn == Spawn::Fork && libc_ready {
        find_function(pid, exe, at_entry, "fork")
    } else {
        None
    };
    let spawn_fn = if opts.spawn == Spawn::PosixSpawn {
        Some(
            find_function(pid, exe, at_entry, "posix_spawn").ok_or(ForkError::NotFound {
                what: "posix_spawn".into(),
                pid: pid.as_raw(),
            })?,
        )
    } else {
        None
    };
    let mut exit_binding = None;
    let mut lazy_alt = None;
    let action = match &opts.child {
        ChildSpec::RawExit => ChildAction::RawExit,
        ChildSpec::Exit => {
            let libc_exit =
                find_function(pid, exe, at_entry, "exit").ok_or(ForkError::NotFound {
                    what: "exit".into(),
                    pid: pid.as_raw(),
                })?;
            let slot = (!is_static)
                .then(|| exit_got_slot(exe, exe_bias(exe, at_entry)))
                .flatten();
            let got_value = slot.and_then(|s| {
                mem.read(s, 8)
                    .ok()
                    .map(|b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            });
            let (binding, func) = match (is_static, slot, got_value) {
                (true, _, _) => (ExitBinding::Static, libc_exit),
                (false, Some(got), Some(v)) if v == libc_exit => (ExitBinding::Bound { got }, v),
                (false, Some(got), Some(v)) if v != 0 => {
                    lazy_alt = Some(libc_exit);
                    (ExitBinding::Lazy { got }, v)
                }
                _ => (ExitBinding::Direct, libc_exit),
            };
            exit_binding = Some(binding);
            ChildAction::CallExit { func, alt: None }
        }
        ChildSpec::Exec(path) => {
            let mut argv = vec![path.as_os_str().as_bytes().to_vec()];
            argv.truncate(1);
            let envp = std::fs::read(format!("/proc/{pid}/environ"))
                .unwrap_or_default()
                .split(|&b| b == 0)
                .filter(|s| !s.is_empty())
                .map(|s| s.to_vec())
                .collect();
            ChildAction::Exec {
                path: path.as_os_str().as_bytes().to_vec(),
                argv,
                envp,
            }
        }
    };
    let req = ProbeRequest {
        spawn: opts.spawn,
        iterations: opts.iterations,
        action: action.clone(),
        fork_fn,
        spawn_fn,
        clock_fn,
        exit_code: 0,
        lean: false,
    };
    let mut bps_none = Breakpoints::default();
    let mut on_other = |tid: Pid, st: &WaitStatus| {
        other_tracee(pid, tid, st, &mut bps_none, forked);
    };
    let counted = ProbeRequest {
        iterations: opts.iterations.min(2000),
        ..req.clone()
    };
    let file_ranges = super::footprint::file_backed_ranges(pid.as_raw()).unwrap_or_default();
    let faults = match crate::perf::faults::FaultCounters::start(pid.as_raw(), &file_ranges) {
        Ok(mut c) => {
            let res = inject::run_probe(pid, &counted, &mut on_other)?;
            c.read()
                .map(|(p, ch)| (p, ch, res.records.len() as u64))
                .map_err(|e| e.to_string())
        }
        Err(e) if crate::limits::io_resource_hint(&e).is_some() => {
            return Err(ForkError::Exhausted {
                what: "cannot open the page-fault counters",
                source: e,
            })
        }
        Err(e) => Err(e.to_string()),
    };
    let lazy_ab = match (lazy_alt, &action) {
        (Some(alt), ChildAction::CallExit { func, .. }) if opts.lazy_ab_iterations > 0 => {
            let ab = ProbeRequest {
                iterations: opts.lazy_ab_iterations,
                action: ChildAction::CallExit {
                    func: *func,
                    alt: Some(alt),
                },
                ..req.clone()
            };
            Some(inject::run_probe(pid, &ab, &mut on_other)?)
        }
        _ => None,
    };
    let large = footprint
        .as_ref()
        .and_then(|f| f.rss_bytes.value())
        .is_some_and(|rss| rss >= SPAWN_AB_MIN_RSS);
    let spawn_ab = if large {
        spawn_ab(pid, &req, opts, exe, at_entry, libc_ready, &mut on_other)?
    } else {
        Vec::new()
    };
    let sampled = opts.sample.as_ref().map(|cfg| {
        let req = ProbeRequest {
            iterations: opts.sample_iterations,
            ..req.clone()
        };
        sample_loop(pid, &req, cfg, &mut on_other)
    });
    // The measured loop runs last, with no perf event on the target: inherited events cost
    // every fork (perf copies them into the child and sums them at its exit: 20-35% fewer
    // forks per second measured here), so the fault kinds, the lazy-binding A/B and the
    // samples come from loops of their own, run first. Last, the measured loops see the
    // process as the target's own code after it will (both after the same warm-up), right
    // before the target resumes.
    let main = inject::run_probe(pid, &req, &mut on_other)?;
    // Then the rates, from a lean loop of as many forks: fork and wait4 only, as the seed
    // forktest's loop. The measured loop's clock reads and getrusage calls cost the parent
    // 2-4 µs per fork here, 3-7% of a small static program's fork (probes/probe_fork.s).
    let rate = if opts.spawn == Spawn::Fork && main.error.is_none() {
        let lean = ProbeRequest {
            lean: true,
            ..req.clone()
        };
        Some(inject::run_probe(pid, &lean, &mut on_other)?)
    } else {
        None
    };
    // Fork/clone tracing stays off: nothing is measured after the probe, and following
    // the program's own forks would slow them (the seed forktest's own loop runs after ours
    // and is compared with it).
    Ok(ForkRun {
        at: opts.at.clone(),
        at_address,
        spawn: opts.spawn,
        child: opts.child.clone(),
        exit_binding,
        libc_fork: fork_fn.is_some(),
        vdso_clock: clock_fn.is_some(),
        footprint,
        footprint_error,
        main,
        rate,
        faults,
        sampled,
        lazy_ab,
        spawn_ab,
        ending: Ending::Exited(0),
        pid: pid.as_raw(),
    })
}

/// Rounds of the fork/vfork A/B (see [`ForkRun::spawn_ab`]).
const SPAWN_AB_ROUNDS: u64 = 4;

/// The resident size from which the fork/vfork A/B runs. Below it fork copies few page
/// tables and the A/B would only double the children (and their faults and execs, which
/// `children_total` and the fault counts' oracles count) for a difference within the noise.
pub const SPAWN_AB_MIN_RSS: u64 = 32 << 20;

/// The fork/vfork A/B: [`SPAWN_AB_ROUNDS`] rounds, each a fork loop then a vfork loop of
/// the same size, `opts.iterations` children per side in all, every child doing `_exit`.
/// Alternating the two in rounds spreads any drift of the machine's load over both sides, as
/// the lazy-binding A/B's alternate children do; a vfork loop cannot share one loop with fork
/// (it is another probe). Stops at the first loop that failed.
fn spawn_ab(
    pid: Pid,
    req: &ProbeRequest,
    opts: &ForkOptions,
    exe: &Path,
    at_entry: u64,
    libc_ready: bool,
    on_other: &mut impl FnMut(Pid, &WaitStatus),
) -> Result<Vec<(ProbeResult, ProbeResult)>, ForkError> {
    let mut out = Vec::new();
    if opts.iterations == 0 {
        return Ok(out);
    }
    // The program's own fork when libc is ready (its atfork handlers are part of a fork).
    let fork_fn = if libc_ready {
        find_function(pid, exe, at_entry, "fork")
    } else {
        None
    };
    let rounds = SPAWN_AB_ROUNDS.min(opts.iterations);
    for r in 0..rounds {
        let n = opts.iterations / rounds + u64::from(r < opts.iterations % rounds);
        let fork = ProbeRequest {
            spawn: Spawn::Fork,
            iterations: n,
            action: ChildAction::RawExit,
            fork_fn,
            spawn_fn: None,
            lean: false,
            ..req.clone()
        };
        let vfork = ProbeRequest {
            spawn: Spawn::Vfork,
            fork_fn: None,
            ..fork.clone()
        };
        let a = inject::run_probe(pid, &fork, &mut *on_other)?;
        let b = inject::run_probe(pid, &vfork, &mut *on_other)?;
        let failed = a.error.is_some() || b.error.is_some();
        out.push((a, b));
        if failed {
            break;
        }
    }
    Ok(out)
}

/// One more probe loop with the sampler running over the target's process tree (system-wide
/// where allowed, else per task, which does not see the children's exit teardown).
fn sample_loop(
    pid: Pid,
    req: &ProbeRequest,
    cfg: &crate::perf::SamplerConfig,
    on_other: &mut impl FnMut(Pid, &WaitStatus),
) -> Result<(ProbeResult, crate::perf::Recording), String> {
    let sampler = start_sampler(cfg, pid.as_raw())?;
    let res = inject::run_probe(pid, req, on_other);
    let rec = sampler.stop().map_err(|e| e.to_string())?;
    let res = res.map_err(|e| e.to_string())?;
    Ok((res, rec))
}

/// Parses `--child`: `_exit`, `exit` or `exec:PATH`.
pub fn parse_child(s: &str) -> Result<ChildSpec, String> {
    match s {
        "_exit" => Ok(ChildSpec::RawExit),
        "exit" => Ok(ChildSpec::Exit),
        _ => match s.strip_prefix("exec:") {
            Some(p) if !p.is_empty() => Ok(ChildSpec::Exec(PathBuf::from(p))),
            _ => Err(format!(
                "'{s}' is not a child action: use _exit, exit or exec:PATH"
            )),
        },
    }
}

/// Parses `--at`.
pub fn parse_at(s: &str) -> At {
    match s {
        "entry" => At::Entry,
        "main" => At::Main,
        "exit" => At::Exit,
        other => At::Symbol(other.to_string()),
    }
}
