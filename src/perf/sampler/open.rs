//! Opening the per-CPU sampling events and their ring buffers, the drain thread, and stopping.

use std::io;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use perf_event::events::{Hardware, Software};
use perf_event::{Builder, Clock, SampleFlag};

use super::collect::{convert, Collector, Weight};
use super::maps::{read_proc_maps, MapRange};
use super::{Recording, SamplerConfig, SamplerError, Scope, PER_TASK_NOTE};
use crate::perf::{is_perf_privileged, read_paranoid_level};
use crate::symbolize::samples::kernel_names;
use crate::symbolize::KernelSymbols;

/// Where the kernel lists the online CPUs.
const CPUS_ONLINE: &str = "/sys/devices/system/cpu/online";

/// The smallest ring buffer we fall back to, in pages.
const MIN_PAGES: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EventKind {
    Cycles,
    CpuClock,
}

impl EventKind {
    fn name(self) -> &'static str {
        match self {
            EventKind::Cycles => "cycles",
            EventKind::CpuClock => "cpu-clock",
        }
    }
}

/// Everything fixed when the events were opened.
#[derive(Debug, Clone)]
struct Settings {
    root: i32,
    scope: Scope,
    frequency_hz: u64,
    event: EventKind,
    include_kernel: bool,
    cpus: Vec<u32>,
    pages: usize,
    maps_at_start: std::collections::BTreeMap<i32, Vec<MapRange>>,
    notes: Vec<String>,
}

struct Ring {
    cpu: u32,
    sampler: perf_event::Sampler,
}

struct State {
    rings: Vec<Ring>,
    collector: Collector,
    weight: Weight,
    /// When sampling must stop (`SamplerConfig::deadline`).
    deadline: Option<(Instant, Duration)>,
    /// Why the events were disabled early (deadline, budget), once they were.
    stopped: Option<String>,
}

impl State {
    /// Reads every ring buffer to its end, then ends the round; disables the events once
    /// the deadline has passed or the budget is reached.
    fn drain(&mut self, last: bool) {
        for ring in &mut self.rings {
            while let Some(rec) = ring.sampler.next_record() {
                let (c, t) = convert(&rec, self.weight);
                // Dropping the record advances the ring's tail.
                drop(rec);
                self.collector.take(c, t);
            }
        }
        self.collector.round(last);
        if self.stopped.is_some() || last {
            return;
        }
        let why = if self.collector.over_budget() {
            Some(format!(
                "sampling stopped: the memory budget ({} KiB of kept records, --sample-budget) \
                 was reached",
                self.collector.kept_bytes / 1024
            ))
        } else {
            self.deadline
                .filter(|(at, _)| Instant::now() >= *at)
                .map(|(_, d)| {
                    format!(
                        "sampling stopped: the deadline of {:.1} s (--sample-deadline) passed",
                        d.as_secs_f64()
                    )
                })
        };
        if let Some(why) = why {
            // A failed disable leaves the events running; the budget still bounds what is
            // kept, so it is not an error here.
            for ring in &mut self.rings {
                let _ = ring.sampler.disable();
            }
            self.stopped = Some(why);
        }
    }
}

struct Shared {
    state: Mutex<State>,
    stop: Mutex<bool>,
    wake: Condvar,
}

/// A running sampler: one event and ring buffer per online CPU, drained by a background
/// thread. [`Sampler::stop`] returns the [`Recording`]; dropping it stops everything and
/// closes the fds.
pub struct Sampler {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    settings: Settings,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Sampler {
    /// Opens, maps and enables one event per online CPU and starts the drain thread.
    ///
    /// `root_pid` should not be running the code of interest yet (a child blocked before its
    /// `exec`): only children it forks from now on join the tree, besides descendants that
    /// already exist (found in /proc). A refused system-wide event is
    /// [`SamplerError::SystemWideDenied`]; the caller may retry with [`Scope::PerTask`].
    /// Per-task sampling that may not see the kernel falls back to user mode only and says
    /// so in [`Recording::notes`].
    pub fn start(cfg: &SamplerConfig, root_pid: i32) -> Result<Sampler, SamplerError> {
        let cpus = online_cpus()?;
        let existing = crate::perf::tasks::descendants(root_pid);
        let mut maps_at_start = std::collections::BTreeMap::new();
        let mut notes = Vec::new();
        for pid in std::iter::once(root_pid).chain(existing.iter().copied()) {
            match read_proc_maps(pid) {
                Ok(m) => {
                    maps_at_start.insert(pid, m);
                }
                Err(e) => notes.push(format!(
                    "/proc/{pid}/maps was not readable ({e}): frames of its mappings from \
                     before sampling started are not named"
                )),
            }
        }
        if cfg.scope == Scope::PerTask {
            notes.push(PER_TASK_NOTE.to_string());
        }

        let mut settings = Settings {
            root: root_pid,
            scope: cfg.scope,
            frequency_hz: cfg.frequency_hz,
            event: EventKind::CpuClock,
            include_kernel: true,
            cpus: cpus.clone(),
            pages: ring_pages(cfg, cpus.len()),
            maps_at_start,
            notes,
        };
        choose_event(cfg, &mut settings)?;

        let mut rings = Vec::with_capacity(cpus.len());
        for &cpu in &cpus {
            rings.push(open_ring(cfg, &mut settings, cpu)?);
        }
        for ring in &mut rings {
            ring.sampler
                .enable()
                .map_err(|source| SamplerError::Control {
                    action: "enable",
                    cpu: ring.cpu,
                    source,
                })?;
        }

        let weight = match settings.event {
            EventKind::CpuClock => Weight::Period,
            EventKind::Cycles => Weight::Nominal(1_000_000_000 / cfg.frequency_hz.max(1)),
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                rings,
                collector: Collector::new(root_pid, existing)
                    .exclude(std::process::id() as i32)
                    .with_budget(records_budget(cfg, &settings)),
                weight,
                deadline: cfg.deadline.map(|d| (Instant::now() + d, d)),
                stopped: None,
            }),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let interval = cfg.drain_interval;
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("ldcost-sampler".into())
            .spawn(move || drain_loop(&thread_shared, interval))
            .map_err(|source| SamplerError::Control {
                action: "start the drain thread for",
                cpu: 0,
                source,
            })?;
        Ok(Sampler {
            shared,
            thread: Some(thread),
            settings,
        })
    }

    /// Reads what the ring buffers hold now (the drain thread does this too; call it when
    /// records must not wait for the next interval).
    pub fn drain(&mut self) {
        if let Ok(mut st) = self.shared.state.lock() {
            st.drain(false);
        }
    }

    /// The event sampled: `"cycles"` or `"cpu-clock"`.
    pub fn event(&self) -> &'static str {
        self.settings.event.name()
    }

    /// Whether `pid` is in the tree now (as far as the records read so far tell).
    pub fn is_member(&self, pid: i32) -> bool {
        self.shared
            .state
            .lock()
            .map(|st| st.collector.is_member(pid))
            .unwrap_or(false)
    }

    /// Disables the events, reads everything left, and returns the recording. Kernel frames
    /// are named from /proc/kallsyms now (about 0.1 s), so the recording can be replayed
    /// without root.
    pub fn stop(mut self) -> Result<Recording, SamplerError> {
        if !self.join_thread() {
            return Err(SamplerError::DrainThread);
        }
        let mut st = self
            .shared
            .state
            .lock()
            .map_err(|_| SamplerError::DrainThread)?;
        for ring in &mut st.rings {
            ring.sampler
                .disable()
                .map_err(|source| SamplerError::Control {
                    action: "disable",
                    cpu: ring.cpu,
                    source,
                })?;
        }
        st.drain(true);
        st.collector.finish();
        let c = std::mem::take(&mut st.collector);
        let stopped = st.stopped.take();
        drop(st);

        let s = &self.settings;
        let mut rec = c.kept;
        rec.root_pid = s.root;
        rec.scope = s.scope;
        rec.frequency_hz = s.frequency_hz;
        rec.event = s.event.name().to_string();
        rec.cpus = s.cpus.clone();
        rec.buffer_pages = s.pages;
        rec.maps_at_start = s.maps_at_start.clone();
        rec.notes = s.notes.clone();
        if let Some(why) = &stopped {
            rec.notes.push(why.clone());
        }
        rec.stopped = stopped;
        if rec.dropped_budget > 0 {
            rec.notes
                .push(format!("{} samples dropped: budget", rec.dropped_budget));
        }
        if rec.throttled > 0 {
            rec.notes.push(format!(
                "the kernel throttled sampling {} times (PERF_RECORD_THROTTLE: more samples \
                 per tick than perf_event_max_sample_rate allows) and lost {} records: lower \
                 --frequency",
                rec.throttled, rec.lost
            ));
        }
        if rec.lost > 0 {
            rec.notes.push(format!(
                "{} records were lost because a ring buffer was full; use more buffer pages \
                 or a lower frequency",
                rec.lost
            ));
        }
        if s.include_kernel {
            match kernel_symbols() {
                Ok(ks) if !ks.hidden() => {
                    rec.kernel_names = kernel_names(&rec.samples, &ks);
                    rec.kernel_frames_visible = true;
                }
                Ok(ks) => rec.notes.push(ks.hidden_reason().unwrap_or_default()),
                Err(e) => rec.notes.push(format!("kernel frames are not named: {e}")),
            }
        }
        Ok(rec)
    }

    /// Stops and joins the drain thread; false if it panicked.
    fn join_thread(&mut self) -> bool {
        let Some(thread) = self.thread.take() else {
            return true;
        };
        if let Ok(mut stop) = self.shared.stop.lock() {
            *stop = true;
        }
        self.shared.wake.notify_all();
        thread.join().is_ok()
    }
}

/// /proc/kallsyms, read once per ldcost process and shared by every later recording.
///
/// Reading it costs about 0.1 s of CPU and walks tens of MiB (the kernel formats 200,000
/// lines, we parse and sort them). Read at the end of every sampled run, it was the last thing
/// ldcost did before launching the next run's target, whose memory-bound work (page faults,
/// exit teardown, short functions) then ran on caches and TLBs full of kallsyms: a trivial
/// static program's non-CPU-feature samples per run were twice those of a shell loop of it
/// under `perf record` (issue 12; docs/taxonomy.md, "What the sampled runs' launcher does to
/// the target"). Kernel text does not move while ldcost runs; a module loaded meanwhile would
/// keep its frames unnamed.
fn kernel_symbols() -> Result<Arc<KernelSymbols>, crate::symbolize::SymbolizeError> {
    static KALLSYMS: Mutex<Option<Arc<KernelSymbols>>> = Mutex::new(None);
    let mut kept = KALLSYMS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = kept.as_ref() {
        return Ok(Arc::clone(k));
    }
    let k = Arc::new(KernelSymbols::load()?);
    *kept = Some(Arc::clone(&k));
    Ok(k)
}

impl Drop for Sampler {
    fn drop(&mut self) {
        // The fds and mappings go with the last reference to `shared`, which is ours once the
        // thread has been joined.
        self.join_thread();
    }
}

fn drain_loop(shared: &Shared, interval: std::time::Duration) {
    loop {
        let Ok(stop) = shared.stop.lock() else { return };
        let Ok((stop, _)) = shared.wake.wait_timeout_while(stop, interval, |s| !*s) else {
            return;
        };
        if *stop {
            return;
        }
        drop(stop);
        let Ok(mut st) = shared.state.lock() else {
            return;
        };
        st.drain(false);
    }
}

/// The attributes of one CPU's event (see the module docs for why each is set).
fn builder(cfg: &SamplerConfig, s: &Settings, kind: EventKind, cpu: u32) -> Builder<'static> {
    let mut b = match kind {
        EventKind::Cycles => Builder::new(Hardware::CPU_CYCLES),
        EventKind::CpuClock => Builder::new(Software::CPU_CLOCK),
    };
    b.sample(
        SampleFlag::IP
            | SampleFlag::TID
            | SampleFlag::TIME
            | SampleFlag::CPU
            | SampleFlag::PERIOD
            | SampleFlag::CALLCHAIN,
    )
    .sample_frequency(cfg.frequency_hz)
    .exclude_kernel(!s.include_kernel)
    .exclude_callchain_kernel(!s.include_kernel)
    .exclude_hv(true)
    .exclude_idle(true)
    .mmap(true)
    .mmap2(true)
    .comm(true)
    .comm_exec(true)
    .task(true)
    .sample_id_all(true)
    .clockid(Clock::MONOTONIC)
    .sample_max_stack(cfg.callchain_max)
    .one_cpu(cpu as usize)
    .enabled(false);
    match s.scope {
        Scope::SystemWide => b.any_pid(),
        Scope::PerTask => b.observe_pid(s.root).inherit(true),
    };
    b
}

/// Picks cycles or cpu-clock by opening on the first CPU, and for per-task sampling falls
/// back to user mode when the kernel may not be sampled.
fn choose_event(cfg: &SamplerConfig, s: &mut Settings) -> Result<(), SamplerError> {
    let cpu = s.cpus[0];
    if cfg.prefer_cycles && builder(cfg, s, EventKind::Cycles, cpu).build().is_ok() {
        s.event = EventKind::Cycles;
        return Ok(());
    }
    s.event = EventKind::CpuClock;
    let err = match builder(cfg, s, EventKind::CpuClock, cpu).build() {
        Ok(_) => return Ok(()),
        Err(e) => e,
    };
    let denied = matches!(
        err.raw_os_error().map(Errno::from_raw),
        Some(Errno::EACCES | Errno::EPERM)
    );
    if denied && s.scope == Scope::PerTask && !is_perf_privileged() {
        s.include_kernel = false;
        if builder(cfg, s, EventKind::CpuClock, cpu).build().is_ok() {
            let level = read_paranoid_level().map_or("unknown".into(), |l| l.to_string());
            s.notes.push(format!(
                "user mode only: perf_event_paranoid is {level}, so the kernel may not be \
                 sampled; kernel time has no samples and call chains no kernel frames (run as \
                 root or `sudo sysctl kernel.perf_event_paranoid=1`)"
            ));
            return Ok(());
        }
        s.include_kernel = true;
    }
    Err(SamplerError::from_open(
        s.scope,
        s.root,
        cpu,
        s.event.name(),
        err,
    ))
}

/// Opens the event of one CPU and maps its ring buffer, halving the buffer while the kernel
/// refuses to lock that much memory (`perf_event_mlock_kb` for unprivileged users).
fn open_ring(cfg: &SamplerConfig, s: &mut Settings, cpu: u32) -> Result<Ring, SamplerError> {
    let page = page_size();
    loop {
        let counter = builder(cfg, s, s.event, cpu)
            .build()
            .map_err(|e| SamplerError::from_open(s.scope, s.root, cpu, s.event.name(), e))?;
        match counter.sampled(s.pages * page) {
            Ok(sampler) => return Ok(Ring { cpu, sampler }),
            Err(e) if is_lock_limit(&e) && s.pages / 2 >= MIN_PAGES => {
                s.pages /= 2;
                s.notes.push(format!(
                    "the ring buffers were reduced to {} pages per CPU (perf_event_mlock_kb)",
                    s.pages
                ));
            }
            Err(source) => {
                return Err(SamplerError::RingBuffer {
                    cpu,
                    pages: s.pages,
                    source,
                })
            }
        }
    }
}

/// Ring buffer pages per CPU: as asked (a power of two), shrunk so that the buffers of all
/// CPUs take at most half the memory budget, never below [`MIN_PAGES`].
fn ring_pages(cfg: &SamplerConfig, cpus: usize) -> usize {
    let mut pages = cfg.buffer_pages.max(1).next_power_of_two();
    if let Some(budget) = cfg.budget_bytes {
        let page = page_size() as u64;
        while pages > MIN_PAGES && (pages as u64 * page * cpus.max(1) as u64) > budget / 2 {
            pages /= 2;
        }
    }
    pages
}

/// What the kept records may take: the budget less the ring buffers.
fn records_budget(cfg: &SamplerConfig, s: &Settings) -> Option<u64> {
    let rings = (s.pages * page_size() * s.cpus.len()) as u64;
    cfg.budget_bytes.map(|b| b.saturating_sub(rings))
}

fn page_size() -> usize {
    nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .unwrap_or(4096) as usize
}

fn is_lock_limit(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error().map(Errno::from_raw),
        Some(Errno::EPERM | Errno::ENOMEM)
    )
}

/// The online CPUs, from `0-3,6` style text.
fn online_cpus() -> Result<Vec<u32>, SamplerError> {
    let text = std::fs::read_to_string(CPUS_ONLINE).map_err(|source| SamplerError::Cpus {
        path: CPUS_ONLINE.into(),
        source,
    })?;
    parse_cpu_list(&text).ok_or_else(|| SamplerError::Cpus {
        path: CPUS_ONLINE.into(),
        source: io::Error::new(io::ErrorKind::InvalidData, format!("{text:?}")),
    })
}

fn parse_cpu_list(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<u32>().ok()?..=b.parse::<u32>().ok()?),
            None => cpus.push(part.parse().ok()?),
        }
    }
    (!cpus.is_empty()).then_some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kallsyms_is_read_once_per_process() {
        let (Ok(a), Ok(b)) = (kernel_symbols(), kernel_symbols()) else {
            return crate::test_skip::skip(
                "kallsyms_is_read_once_per_process",
                "/proc/kallsyms is not readable",
            );
        };
        assert!(
            Arc::ptr_eq(&a, &b),
            "the second recording read /proc/kallsyms again"
        );
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("0,2-3,6"), Some(vec![0, 2, 3, 6]));
        assert_eq!(parse_cpu_list("5"), Some(vec![5]));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("x-1"), None);
        assert!(!online_cpus().unwrap().is_empty());
    }

    #[test]
    fn the_budget_shrinks_the_ring_buffers_to_half_of_it() {
        let page = page_size() as u64;
        let mut cfg = SamplerConfig::default();
        assert_eq!(ring_pages(&cfg, 2), 512);
        cfg.budget_bytes = Some(1 << 20);
        let p = ring_pages(&cfg, 2);
        assert!(p as u64 * page * 2 <= 1 << 19, "{p} pages");
        assert!(p as u64 * page * 4 > 1 << 19 || p == MIN_PAGES, "{p} pages");
        cfg.budget_bytes = Some(1);
        assert_eq!(ring_pages(&cfg, 2), MIN_PAGES);
    }

    #[test]
    fn our_children_are_descendants() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let d = crate::perf::tasks::descendants(std::process::id() as i32);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(d.contains(&(child.id() as i32)), "{d:?}");
    }
}
