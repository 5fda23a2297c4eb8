//! Opening and reading the counters of one task ([`CounterSet`]), and probing which counters
//! this machine has ([`machine_support`]).

use std::io;

use nix::errno::Errno;
use perf_event::events::{Event, Hardware, Software};
use perf_event::Builder;

use super::error::{is_perf_privileged, paranoid_hint, read_paranoid_level, PerfError};
use super::{Availability, Counter, Snapshot};

/// The perf fds counting one task (and, if opened with [`CounterSet::open_inherited`], its
/// descendants). Dropping it closes them.
#[derive(Debug)]
pub struct CounterSet {
    pid: i32,
    inherited: bool,
    /// One entry per [`Counter::ALL`], in that order: the open fd or why there is none.
    counters: Vec<(Counter, Result<perf_event::Counter, String>)>,
    /// Subtracted from every reading (set by [`CounterSet::rebase`]).
    baseline: Option<Snapshot>,
}

impl CounterSet {
    /// Opens every counter on `pid`, which must be a stopped child of ours (or ptrace-stopped)
    /// that has not yet exec'd. The counters are disabled, enabled by the kernel at the child's
    /// next `execve` if `enable_on_exec` (otherwise counting starts now), not inherited by its
    /// children, and count user and kernel mode.
    ///
    /// Hardware counters the machine refuses are recorded as unavailable (see
    /// [`CounterSet::availability`]); a software counter that cannot be opened is an error,
    /// whose [`PerfError::hint`] names the setting to change.
    pub fn open(pid: i32, enable_on_exec: bool) -> Result<CounterSet, PerfError> {
        CounterSet::open_with(pid, enable_on_exec, false)
    }

    /// Like [`CounterSet::open`], but with `inherit` set: children the task forks after this
    /// call are counted too (their counts are added when they exit, and at each read while they
    /// live). Use it to report "the process and its children" next to "the process itself".
    pub fn open_inherited(pid: i32, enable_on_exec: bool) -> Result<CounterSet, PerfError> {
        CounterSet::open_with(pid, enable_on_exec, true)
    }

    fn open_with(pid: i32, enable_on_exec: bool, inherit: bool) -> Result<CounterSet, PerfError> {
        let mut counters = Vec::with_capacity(Counter::ALL.len());
        for counter in Counter::ALL {
            let mut builder = builder_for(counter);
            builder
                .observe_pid(pid)
                .any_cpu()
                .inherit(inherit)
                .enabled(!enable_on_exec)
                .enable_on_exec(enable_on_exec);
            match builder.build() {
                Ok(fd) => counters.push((counter, Ok(fd))),
                Err(e) if counter.is_hardware() => {
                    counters.push((counter, Err(unavailable_reason(&e))))
                }
                Err(e) => return Err(PerfError::from_open(counter, pid, e)),
            }
        }
        Ok(CounterSet {
            pid,
            inherited: inherit,
            counters,
            baseline: None,
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

    /// Reads every counter now. Read while the task is stopped (or after it has exited) so that
    /// all values describe the same instant. Unavailable counters read as `None`; multiplexed
    /// hardware counters are scaled and listed in [`Snapshot::scaled`].
    pub fn read(&mut self) -> Result<Snapshot, PerfError> {
        let mut snap = Snapshot::default();
        for (counter, fd) in &mut self.counters {
            let Ok(fd) = fd else { continue };
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
