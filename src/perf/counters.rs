//! Opening and reading the counters of one task ([`CounterSet`]), and probing which counters
//! this machine has ([`machine_support`]).

use std::io;

use nix::errno::Errno;
use perf_event::events::{Event, Hardware, Software};
use perf_event::Builder;

use super::error::{is_perf_privileged, paranoid_hint, read_paranoid_level, PerfError};
use super::sources::{self, Counting, Fallback, Source};
use super::{Availability, Counter, Snapshot};

/// How one counter is read.
#[derive(Debug)]
enum Reader {
    Perf(perf_event::Counter),
    /// From /proc at each read (the unprivileged fallback, [`super::sources`]).
    Proc(ProcField),
}

/// A figure the kernel keeps per task in /proc.
#[derive(Debug, Clone, Copy)]
enum ProcField {
    /// schedstat's run time, ns.
    Runtime,
    /// stat's min_flt + maj_flt.
    Faults,
    MinorFaults,
    MajorFaults,
}

/// How a counter is read and where its figures come from, or why it is not counted.
type Opened = Result<(Reader, Source), String>;

/// The perf fds counting one task (and, if opened with [`CounterSet::open_inherited`], its
/// descendants), or, where perf refuses the kernel's share, the task's /proc entries
/// ([`super::sources`]). Dropping it closes them.
#[derive(Debug)]
pub struct CounterSet {
    pid: i32,
    inherited: bool,
    /// One entry per [`Counter::ALL`], in that order: how it is read, or why it is not.
    counters: Vec<(Counter, Opened)>,
    /// Subtracted from every reading (set by [`CounterSet::rebase`]).
    baseline: Option<Snapshot>,
    /// The main thread's /proc directory (an fd: once the task is reaped, reads fail rather
    /// than read a new process that got the pid), when a figure comes from /proc.
    task: Option<procfs::process::Task>,
    /// Why perf could not count the kernel's share, if it could not.
    fallback: Option<Fallback>,
}

impl CounterSet {
    /// Opens every counter on `pid`, which must be a stopped child of ours (or ptrace-stopped)
    /// that has not yet exec'd. The counters are disabled, enabled by the kernel at the child's
    /// next `execve` if `enable_on_exec` (otherwise counting starts now), not inherited by its
    /// children, and count user and kernel mode.
    ///
    /// Hardware counters the machine refuses are recorded as unavailable (see
    /// [`CounterSet::availability`]). When perf refuses to count the kernel's share (EACCES
    /// or EPERM at perf_event_paranoid 2 or more, for an unprivileged user), CPU time and faults
    /// come from /proc instead and the rest is user mode only or unavailable
    /// ([`super::sources`], [`CounterSet::fallback`]). Another failure to open a software
    /// counter is an error, whose [`PerfError::hint`] names the setting to change.
    pub fn open(pid: i32, enable_on_exec: bool) -> Result<CounterSet, PerfError> {
        CounterSet::open_with(pid, enable_on_exec, false)
    }

    /// Like [`CounterSet::open`], but with `inherit` set: children the task forks after this
    /// call are counted too (their counts are added when they exit, and at each read while they
    /// live). Use it to report "the process and its children" next to "the process itself".
    /// In the unprivileged fallback only the user-mode perf counters are inherited (/proc
    /// has no running total of a task's descendants).
    pub fn open_inherited(pid: i32, enable_on_exec: bool) -> Result<CounterSet, PerfError> {
        CounterSet::open_with(pid, enable_on_exec, true)
    }

    fn open_with(pid: i32, enable_on_exec: bool, inherit: bool) -> Result<CounterSet, PerfError> {
        let open = |counter: Counter, user_only: bool| {
            let mut builder = builder_for(counter);
            if user_only {
                builder.exclude_kernel(true);
            }
            builder
                .observe_pid(pid)
                .any_cpu()
                .inherit(inherit)
                .enabled(!enable_on_exec)
                .enable_on_exec(enable_on_exec);
            builder.build()
        };
        let mut counters = Vec::with_capacity(Counter::ALL.len());
        for counter in Counter::ALL {
            match open(counter, false) {
                Ok(fd) => counters.push((counter, Ok((Reader::Perf(fd), Source::Perf)))),
                // A refused resource (EMFILE, ENOMEM) is an error for every counter: the
                // machine may well have the hardware counter.
                Err(e)
                    if counter.is_hardware() && crate::limits::io_resource_hint(&e).is_none() =>
                {
                    counters.push((counter, Err(unavailable_reason(&e))))
                }
                Err(e) => {
                    let err = PerfError::from_open(counter, pid, e);
                    // Only the paranoid level's rule for an unprivileged user (2: user mode
                    // only; 3+, Debian's: nothing) is worked around; a refusal by seccomp, an
                    // LSM or a kernel without perf events stays an error with its hint.
                    let refusal = match &err {
                        PerfError::Denied {
                            errno,
                            paranoid: Some(level),
                            privileged: false,
                            ..
                        } if *level >= 2 => format!("{errno:?}"),
                        _ => return Err(err),
                    };
                    // The first software counter refused: the unprivileged fallback, if
                    // /proc can stand in (otherwise the refusal is the error).
                    let task = match procfs::process::Process::new(pid)
                        .and_then(|p| p.task_main_thread())
                    {
                        Ok(task) => task,
                        // No descriptor (or memory) left to open /proc: that limit is what
                        // to change, not the paranoid level the refusal would name.
                        Err(procfs::ProcError::Io(source, _))
                            if crate::limits::io_resource_hint(&source).is_some() =>
                        {
                            return Err(PerfError::Open {
                                counter,
                                pid,
                                source,
                            });
                        }
                        Err(_) => return Err(err),
                    };
                    let fallback = sources::fallback(read_paranoid_level(), &refusal);
                    let counters = Counter::ALL
                        .into_iter()
                        .map(|c| {
                            (
                                c,
                                user_mode_reader(c, inherit, &fallback, |c| open(c, true)),
                            )
                        })
                        .collect();
                    return Ok(CounterSet {
                        pid,
                        inherited: inherit,
                        counters,
                        baseline: None,
                        task: Some(task),
                        fallback: Some(fallback),
                    });
                }
            }
        }
        Ok(CounterSet {
            pid,
            inherited: inherit,
            counters,
            baseline: None,
            task: None,
            fallback: None,
        })
    }

    /// The pid the counters were opened on.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Whether the task's descendants are counted too.
    pub fn is_inherited(&self) -> bool {
        self.inherited
    }

    /// Why perf could not count the kernel's share and what is missing, when the counters
    /// are the unprivileged fallback.
    pub fn fallback(&self) -> Option<&Fallback> {
        self.fallback.as_ref()
    }

    /// Where each counted figure comes from, and the fallback if any.
    pub fn counting(&self) -> Counting {
        Counting {
            sources: self
                .counters
                .iter()
                .filter_map(|(c, r)| Some((c.perf_name().to_string(), r.as_ref().ok()?.1)))
                .collect(),
            fallback: self.fallback.clone(),
        }
    }

    /// Reads every counter now. Read while the task is stopped (or after it has exited) so that
    /// all values describe the same instant. Unavailable counters read as `None`; multiplexed
    /// hardware counters are scaled and listed in [`Snapshot::scaled`]. A figure from /proc
    /// reads as `None` once the task has been reaped (its /proc entry is gone).
    pub fn read(&mut self) -> Result<Snapshot, PerfError> {
        let mut snap = Snapshot::default();
        let proc_figures = self.task.as_ref().map(read_proc);
        for (counter, reader) in &mut self.counters {
            let Ok((reader, _)) = reader else { continue };
            let fd = match reader {
                Reader::Perf(fd) => fd,
                Reader::Proc(field) => {
                    let v = proc_figures.as_ref().and_then(|f| match field {
                        ProcField::Runtime => f.runtime_ns,
                        ProcField::Faults => f.minflt.zip(f.majflt).map(|(a, b)| a + b),
                        ProcField::MinorFaults => f.minflt,
                        ProcField::MajorFaults => f.majflt,
                    });
                    snap.set(*counter, v);
                    continue;
                }
            };
            let data = fd.read_full().map_err(|source| PerfError::Read {
                counter: *counter,
                source,
            })?;
            let enabled = data.time_enabled().map_or(0, |d| d.as_nanos() as u64);
            let running = data.time_running().map_or(0, |d| d.as_nanos() as u64);
            let (value, was_scaled) = scale(data.count(), enabled, running);
            snap.set(*counter, value);
            if was_scaled {
                snap.scaled.push(*counter);
            }
        }
        Ok(match &self.baseline {
            Some(b) => snap.delta(b),
            None => snap,
        })
    }

    /// Makes "now" the zero of every later reading: reads the counters and subtracts that
    /// reading from each later one.
    ///
    /// This is how the whole of an execve is counted. Counters opened enabled (not
    /// enable-on-exec) on the child stopped before exec count from then on; rebased at the
    /// execve syscall-enter stop ([`crate::trace::launch::Tracee::stop_at_execve`]), the first
    /// reading after the exec is the entire system call: the old image's release, the ELF and
    /// interpreter mapping, the argument and stack set-up. Enable-on-exec would start counting
    /// in `begin_new_exec`, after most of it (about 30 µs of rustc's execve was seen that way).
    pub fn rebase(&mut self) -> Result<(), PerfError> {
        self.baseline = None;
        self.baseline = Some(self.read()?);
        Ok(())
    }

    /// Leaves `d` (counted since some earlier reading) out of every later reading: what the
    /// tracer made the target do for its own sake (a replayed ptrace stop,
    /// [`crate::trace::stopcost`]) is not the target's.
    pub fn exclude(&mut self, d: &Snapshot) {
        match &mut self.baseline {
            Some(b) => b.add(d),
            None => self.baseline = Some(d.clone()),
        }
    }

    /// Which counters are being counted, and why the others are not.
    pub fn availability(&self) -> Vec<(Counter, Availability)> {
        self.counters
            .iter()
            .map(|(c, fd)| {
                let a = match fd {
                    Ok(_) => Availability::Available,
                    Err(why) => Availability::Unavailable(why.clone()),
                };
                (*c, a)
            })
            .collect()
    }
}

/// How `counter` is read in the unprivileged fallback, or why it is not available.
fn user_mode_reader(
    counter: Counter,
    inherit: bool,
    fallback: &Fallback,
    open_user_mode: impl Fn(Counter) -> io::Result<perf_event::Counter>,
) -> Opened {
    let level = fallback
        .paranoid
        .map_or("unknown".to_string(), |l| l.to_string());
    let proc = |field, source| {
        if inherit {
            Err("not counted for threads and children without perf's kernel-mode counting                  (/proc has no running total of a task's descendants)"
                .to_string())
        } else {
            Ok((Reader::Proc(field), source))
        }
    };
    match counter {
        Counter::TaskClock => proc(ProcField::Runtime, Source::ProcSchedstat),
        Counter::PageFaults => proc(ProcField::Faults, Source::ProcStat),
        Counter::MinorFaults => proc(ProcField::MinorFaults, Source::ProcStat),
        Counter::MajorFaults => proc(ProcField::MajorFaults, Source::ProcStat),
        Counter::PageFaultsKernel | Counter::ContextSwitches | Counter::CpuMigrations => {
            Err(format!(
                "counted in kernel mode, which perf_event_paranoid {level} does not allow                  ({})",
                fallback.fix
            ))
        }
        Counter::PageFaultsUser
        | Counter::Cycles
        | Counter::Instructions
        | Counter::CacheMisses => match open_user_mode(counter) {
            Ok(fd) => Ok((Reader::Perf(fd), Source::PerfUserMode)),
            Err(e) => Err(unavailable_reason(&e)),
        },
    }
}

/// One reading of a task's /proc figures; a field is `None` if its file could not be read
/// (the task is gone) or parsed.
#[derive(Debug, Default)]
struct ProcFigures {
    runtime_ns: Option<u64>,
    minflt: Option<u64>,
    majflt: Option<u64>,
}

fn read_proc(task: &procfs::process::Task) -> ProcFigures {
    let stat = task.stat().ok();
    ProcFigures {
        runtime_ns: task.schedstat().ok().map(|s| s.sum_exec_runtime),
        minflt: stat.as_ref().map(|s| s.minflt),
        majflt: stat.as_ref().map(|s| s.majflt),
    }
}

/// Where each counter would come from for a process of ours, and which are available (and
/// why not), probed by opening the counters (disabled) on this process: the profile's
/// `counting` and `counters`. Never fails: when perf refuses and /proc cannot stand in, the
/// sources are empty and the availability is [`machine_support`]'s.
pub fn machine_counting() -> (Counting, Vec<(Counter, Availability)>) {
    match CounterSet::open(std::process::id() as i32, true) {
        Ok(c) => (c.counting(), c.availability()),
        Err(_) => (Counting::default(), machine_support()),
    }
}

/// Probes every counter by opening it (disabled) on the current process, user and kernel mode.
/// Used by reports to say "not available on this machine"; never fails.
pub fn machine_support() -> Vec<(Counter, Availability)> {
    Counter::ALL
        .into_iter()
        .map(|counter| {
            let mut builder = builder_for(counter);
            builder.observe_self().any_cpu();
            let a = match builder.build() {
                Ok(_) => Availability::Available,
                Err(e) => Availability::Unavailable(unavailable_reason(&e)),
            };
            (counter, a)
        })
        .collect()
}

/// A builder for one counter with ldcost's common settings: disabled, user + kernel mode,
/// hypervisor excluded, time_enabled/time_running in every read.
fn builder_for(counter: Counter) -> Builder<'static> {
    fn b(event: impl Event + 'static) -> Builder<'static> {
        let mut b = Builder::new(event);
        b.include_kernel().exclude_hv(true);
        b
    }
    match counter {
        Counter::TaskClock => b(Software::TASK_CLOCK),
        Counter::PageFaults => b(Software::PAGE_FAULTS),
        Counter::PageFaultsUser => {
            let mut b = b(Software::PAGE_FAULTS);
            b.exclude_kernel(true);
            b
        }
        Counter::PageFaultsKernel => {
            let mut b = b(Software::PAGE_FAULTS);
            b.exclude_user(true);
            b
        }
        Counter::MinorFaults => b(Software::PAGE_FAULTS_MIN),
        Counter::MajorFaults => b(Software::PAGE_FAULTS_MAJ),
        Counter::ContextSwitches => b(Software::CONTEXT_SWITCHES),
        Counter::CpuMigrations => b(Software::CPU_MIGRATIONS),
        Counter::Cycles => b(Hardware::CPU_CYCLES),
        Counter::Instructions => b(Hardware::INSTRUCTIONS),
        Counter::CacheMisses => b(Hardware::CACHE_MISSES),
    }
}

/// Why a counter could not be opened, in words a report can print.
fn unavailable_reason(e: &io::Error) -> String {
    let Some(raw) = e.raw_os_error() else {
        // perf-event2 turns E2BIG into an Unsupported error without an errno.
        return format!("this kernel does not accept the requested counter settings ({e})");
    };
    let errno = Errno::from_raw(raw);
    match errno {
        Errno::ENOENT | Errno::ENODEV | Errno::EOPNOTSUPP => {
            format!("not supported by this machine's PMU (perf_event_open: {errno:?})")
        }
        Errno::EMFILE | Errno::ENFILE | Errno::ENOMEM | Errno::EAGAIN => format!(
            "not opened: the system refused a resource (perf_event_open: {errno:?}, {}); {}",
            errno.desc(),
            crate::limits::resource_hint(raw).unwrap_or_default()
        ),
        Errno::EBUSY => {
            format!("the PMU is in use by another tool (perf_event_open: {errno:?})")
        }
        Errno::EACCES | Errno::EPERM | Errno::ENOSYS => format!(
            "not permitted (perf_event_open: {errno:?}); {}",
            paranoid_hint(errno, read_paranoid_level(), is_perf_privileged())
        ),
        _ => format!("perf_event_open: {errno:?} ({})", errno.desc()),
    }
}

/// The value to report for a counter that counted `count` while enabled for `enabled` ns and
/// running on the PMU for `running` ns, and whether it was extrapolated.
///
/// Not yet enabled (`enabled == 0`, e.g. before the exec of enable_on_exec): the count, which
/// is 0. Enabled but never scheduled: `None`, since nothing was measured. Multiplexed: scaled
/// by enabled / running, as `perf stat` does.
fn scale(count: u64, enabled: u64, running: u64) -> (Option<u64>, bool) {
    if enabled == 0 || running >= enabled {
        (Some(count), false)
    } else if running == 0 {
        (None, false)
    } else {
        let v = (count as u128 * enabled as u128 / running as u128).min(u64::MAX as u128);
        (Some(v as u64), true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling() {
        assert_eq!(scale(0, 0, 0), (Some(0), false), "not enabled yet");
        assert_eq!(scale(100, 50, 50), (Some(100), false), "ran all the time");
        assert_eq!(scale(100, 100, 25), (Some(400), true), "multiplexed 1/4");
        assert_eq!(scale(7, 100, 0), (None, false), "never scheduled");
        assert_eq!(scale(u64::MAX, 10, 1), (Some(u64::MAX), true), "saturates");
    }

    #[test]
    fn reasons_name_the_errno() {
        let r = unavailable_reason(&io::Error::from_raw_os_error(Errno::ENOENT as i32));
        assert_eq!(
            r,
            "not supported by this machine's PMU (perf_event_open: ENOENT)"
        );
        let r = unavailable_reason(&io::Error::from_raw_os_error(Errno::EBUSY as i32));
        assert!(r.contains("EBUSY"), "{r}");
        let r = unavailable_reason(&io::Error::from_raw_os_error(Errno::EACCES as i32));
        assert!(
            r.contains("EACCES") && r.contains("perf_event_paranoid"),
            "{r}"
        );
        let r = unavailable_reason(&io::Error::new(io::ErrorKind::Unsupported, "E2BIG"));
        assert!(r.contains("does not accept"), "{r}");
    }

    #[test]
    fn the_fallback_reads_cpu_and_faults_from_proc_and_names_the_rest() {
        let f = sources::fallback(Some(2), "EACCES");
        let refuse = |_| Err(io::Error::from_raw_os_error(Errno::EACCES as i32));
        let src = |c, inherit| user_mode_reader(c, inherit, &f, refuse).map(|(_, s)| s);
        assert_eq!(src(Counter::TaskClock, false), Ok(Source::ProcSchedstat));
        assert_eq!(src(Counter::PageFaults, false), Ok(Source::ProcStat));
        assert_eq!(src(Counter::MinorFaults, false), Ok(Source::ProcStat));
        assert_eq!(src(Counter::MajorFaults, false), Ok(Source::ProcStat));
        // /proc has no running total of the descendants: not counted, not zero.
        assert!(src(Counter::TaskClock, true).is_err());
        for c in [
            Counter::PageFaultsKernel,
            Counter::ContextSwitches,
            Counter::CpuMigrations,
        ] {
            let why = src(c, false).unwrap_err();
            assert!(why.contains("perf_event_paranoid 2"), "{c}: {why}");
            assert!(
                why.contains("sysctl kernel.perf_event_paranoid=1"),
                "{c}: {why}"
            );
        }
        // User-mode perf counters are tried, and a refusal is a reason.
        let why = src(Counter::PageFaultsUser, false).unwrap_err();
        assert!(why.contains("EACCES"), "{why}");
    }

    #[test]
    fn proc_figures_of_a_live_task_and_of_a_reaped_one() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("spawn sleep");
        let pid = child.id() as i32;
        let task = procfs::process::Process::new(pid)
            .and_then(|p| p.task_main_thread())
            .expect("our child's /proc entry");
        let live = read_proc(&task);
        assert!(
            live.runtime_ns.is_some() && live.minflt.is_some(),
            "{live:?}"
        );
        let _ = child.kill();
        let _ = child.wait();
        // Reaped: the directory fd no longer reads, whatever process gets the pid next.
        let gone = read_proc(&task);
        assert_eq!(
            (gone.runtime_ns, gone.minflt, gone.majflt),
            (None, None, None)
        );
    }

    #[test]
    fn software_counters_are_available_here() {
        // Every Linux kernel with perf events has these; the machine must be allowed to count
        // its own process (we run the tests as root or with paranoid <= 1).
        for (c, a) in machine_support() {
            if !c.is_hardware() {
                assert_eq!(a, Availability::Available, "{c}");
            }
        }
    }
}
