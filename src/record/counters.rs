//! The counters ldcost reads, whether the machine has them, one reading of every counter, and
//! the arithmetic phases need (differences and sums). Opened and read by `perf`; plain data here.
//!
//! A field is `None` when the counter is not available on the machine (or was never scheduled),
//! never 0: a report must be able to say "not available" instead of printing a zero as if it
//! had been measured.

use serde::{Deserialize, Serialize};

/// One counter kind ldcost reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Counter {
    /// CPU time of the task in nanoseconds (user + kernel: task-clock ignores the exclude
    /// flags, as the `perf` module documents).
    TaskClock,
    /// All page faults, user and kernel mode.
    PageFaults,
    /// Page faults taken while the task ran in user mode.
    PageFaultsUser,
    /// Page faults taken while the kernel worked for the task (copying to/from user memory).
    PageFaultsKernel,
    /// Faults resolved without I/O.
    MinorFaults,
    /// Faults that needed I/O.
    MajorFaults,
    ContextSwitches,
    CpuMigrations,
    /// Hardware: CPU cycles.
    Cycles,
    /// Hardware: retired instructions.
    Instructions,
    /// Hardware: last-level cache misses.
    CacheMisses,
}

impl Counter {
    /// Every counter, in the order reports show them.
    pub const ALL: [Counter; 11] = [
        Counter::TaskClock,
        Counter::PageFaults,
        Counter::PageFaultsUser,
        Counter::PageFaultsKernel,
        Counter::MinorFaults,
        Counter::MajorFaults,
        Counter::ContextSwitches,
        Counter::CpuMigrations,
        Counter::Cycles,
        Counter::Instructions,
        Counter::CacheMisses,
    ];

    /// The name `perf stat -e` uses for the same event (with `:u`/`:k` for the split faults).
    pub fn perf_name(self) -> &'static str {
        match self {
            Counter::TaskClock => "task-clock",
            Counter::PageFaults => "page-faults",
            Counter::PageFaultsUser => "page-faults:u",
            Counter::PageFaultsKernel => "page-faults:k",
            Counter::MinorFaults => "minor-faults",
            Counter::MajorFaults => "major-faults",
            Counter::ContextSwitches => "context-switches",
            Counter::CpuMigrations => "cpu-migrations",
            Counter::Cycles => "cycles",
            Counter::Instructions => "instructions",
            Counter::CacheMisses => "cache-misses",
        }
    }

    /// Whether the event is counted by the CPU's PMU (and so may be missing or multiplexed).
    pub fn is_hardware(self) -> bool {
        matches!(
            self,
            Counter::Cycles | Counter::Instructions | Counter::CacheMisses
        )
    }

    /// The unit of the value ("ns" for task-clock, "" for counts).
    pub fn unit(self) -> &'static str {
        match self {
            Counter::TaskClock => "ns",
            _ => "",
        }
    }
}

impl std::fmt::Display for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.perf_name())
    }
}

/// Whether the machine can count a [`Counter`], and if not why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Availability {
    Available,
    /// e.g. "not supported by this machine's PMU (perf_event_open: ENOENT)".
    Unavailable(String),
}

impl Availability {
    pub fn is_available(&self) -> bool {
        matches!(self, Availability::Available)
    }
}

/// The values of all counters at one instant (cumulative since the counters were enabled), or
/// the difference of two such readings (see [`Snapshot::delta`]).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Snapshot {
    pub task_clock_ns: Option<u64>,
    pub page_faults: Option<u64>,
    /// Faults taken in user mode (`page-faults:u`).
    #[serde(default)]
    pub page_faults_user: Option<u64>,
    /// Faults taken in kernel mode on the task's behalf (`page-faults:k`).
    #[serde(default)]
    pub page_faults_kernel: Option<u64>,
    pub minor_faults: Option<u64>,
    pub major_faults: Option<u64>,
    pub context_switches: Option<u64>,
    pub cpu_migrations: Option<u64>,
    pub cycles: Option<u64>,
    pub instructions: Option<u64>,
    pub cache_misses: Option<u64>,
    /// Counters whose value was extrapolated because the PMU multiplexed them
    /// (time_running < time_enabled): value = count × time_enabled / time_running.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scaled: Vec<Counter>,
}

impl Snapshot {
    /// The value of one counter.
    pub fn get(&self, counter: Counter) -> Option<u64> {
        *self.field(counter)
    }

    /// Sets the value of one counter.
    pub fn set(&mut self, counter: Counter, value: Option<u64>) {
        *self.field_mut(counter) = value;
    }

    fn field(&self, counter: Counter) -> &Option<u64> {
        match counter {
            Counter::TaskClock => &self.task_clock_ns,
            Counter::PageFaults => &self.page_faults,
            Counter::PageFaultsUser => &self.page_faults_user,
            Counter::PageFaultsKernel => &self.page_faults_kernel,
            Counter::MinorFaults => &self.minor_faults,
            Counter::MajorFaults => &self.major_faults,
            Counter::ContextSwitches => &self.context_switches,
            Counter::CpuMigrations => &self.cpu_migrations,
            Counter::Cycles => &self.cycles,
            Counter::Instructions => &self.instructions,
            Counter::CacheMisses => &self.cache_misses,
        }
    }

    fn field_mut(&mut self, counter: Counter) -> &mut Option<u64> {
        match counter {
            Counter::TaskClock => &mut self.task_clock_ns,
            Counter::PageFaults => &mut self.page_faults,
            Counter::PageFaultsUser => &mut self.page_faults_user,
            Counter::PageFaultsKernel => &mut self.page_faults_kernel,
            Counter::MinorFaults => &mut self.minor_faults,
            Counter::MajorFaults => &mut self.major_faults,
            Counter::ContextSwitches => &mut self.context_switches,
            Counter::CpuMigrations => &mut self.cpu_migrations,
            Counter::Cycles => &mut self.cycles,
            Counter::Instructions => &mut self.instructions,
            Counter::CacheMisses => &mut self.cache_misses,
        }
    }

    /// What happened between `earlier` and `self`: field-wise saturating difference. A field
    /// missing in either reading is `None` in the result; `scaled` is the union of both.
    pub fn delta(&self, earlier: &Snapshot) -> Snapshot {
        let mut out = Snapshot::default();
        for c in Counter::ALL {
            let v = match (self.get(c), earlier.get(c)) {
                (Some(now), Some(then)) => Some(now.saturating_sub(then)),
                _ => None,
            };
            out.set(c, v);
        }
        out.scaled = union(&self.scaled, &earlier.scaled);
        out
    }

    /// Accumulates `other` into `self` (summing phases or runs): field-wise saturating sum.
    /// A field missing in either stays (becomes) `None`, so a sum never hides a hole.
    pub fn add(&mut self, other: &Snapshot) {
        for c in Counter::ALL {
            let v = match (self.get(c), other.get(c)) {
                (Some(a), Some(b)) => Some(a.saturating_add(b)),
                _ => None,
            };
            self.set(c, v);
        }
        self.scaled = union(&self.scaled, &other.scaled);
    }
}

fn union(a: &[Counter], b: &[Counter]) -> Vec<Counter> {
    let mut v: Vec<Counter> = a.iter().chain(b).copied().collect();
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(task_clock: u64, faults: u64) -> Snapshot {
        Snapshot {
            task_clock_ns: Some(task_clock),
            page_faults: Some(faults),
            ..Default::default()
        }
    }

    #[test]
    fn delta_is_fieldwise_and_saturating() {
        let a = snap(100, 10);
        let b = snap(250, 8);
        let d = b.delta(&a);
        assert_eq!(d.task_clock_ns, Some(150));
        assert_eq!(d.page_faults, Some(0), "a decrease saturates at 0");
        assert_eq!(d.cycles, None, "None stays None");
    }

    #[test]
    fn delta_with_one_side_missing_is_none() {
        let mut a = snap(100, 10);
        a.cycles = Some(5);
        let b = snap(200, 20);
        assert_eq!(b.delta(&a).cycles, None);
        assert_eq!(a.delta(&b).cycles, None);
    }

    #[test]
    fn add_sums_and_keeps_holes() {
        let mut total = snap(1, 2);
        total.instructions = Some(10);
        let mut other = snap(u64::MAX, 3);
        other.major_faults = Some(1);
        total.add(&other);
        assert_eq!(total.task_clock_ns, Some(u64::MAX), "saturates");
        assert_eq!(total.page_faults, Some(5));
        assert_eq!(total.instructions, None, "missing on one side");
        assert_eq!(total.major_faults, None, "missing on one side");
    }

    #[test]
    fn delta_then_add_round_trips() {
        let a = snap(100, 10);
        let b = snap(250, 30);
        let mut x = a.clone();
        x.add(&b.delta(&a));
        assert_eq!(x, b);
    }

    #[test]
    fn scaled_is_a_union() {
        let mut a = snap(1, 1);
        a.scaled = vec![Counter::Instructions];
        let mut b = snap(2, 2);
        b.scaled = vec![Counter::Cycles, Counter::Instructions];
        assert_eq!(
            b.delta(&a).scaled,
            vec![Counter::Cycles, Counter::Instructions]
        );
    }

    #[test]
    fn every_counter_has_its_own_field() {
        let mut s = Snapshot::default();
        for (i, c) in Counter::ALL.into_iter().enumerate() {
            s.set(c, Some(i as u64 + 1));
        }
        for (i, c) in Counter::ALL.into_iter().enumerate() {
            assert_eq!(s.get(c), Some(i as u64 + 1), "{c}");
        }
    }

    #[test]
    fn json_round_trip_and_old_documents() {
        let mut s = snap(5, 6);
        s.scaled = vec![Counter::Cycles];
        let j = serde_json::to_string(&s).unwrap();
        assert!(j.contains("\"scaled\":[\"cycles\"]"), "{j}");
        assert_eq!(serde_json::from_str::<Snapshot>(&j).unwrap(), s);
        // A document without the newer fields still reads.
        let old = r#"{"task_clock_ns":1,"page_faults":2,"minor_faults":null,"major_faults":null,
            "context_switches":null,"cpu_migrations":null,"cycles":null,"instructions":null,
            "cache_misses":null}"#;
        let s: Snapshot = serde_json::from_str(old).unwrap();
        assert_eq!(s.page_faults_user, None);
        assert!(s.scaled.is_empty());
    }
}
