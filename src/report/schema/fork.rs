//! The `fork` section: one probe run's per-fork figures, rates, fault kinds, footprint and
//! reading, converted from and back to [`crate::attribute::fork_cost`]'s own types. What the
//! probe recorded ([`crate::record`]: the footprint, the spawn, the endings) is embedded as
//! it is.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::breakdown::Breakdown;
use super::common::Summary;

use crate::attribute::fork_cost as fc;
use crate::record::footprint::Footprint;
use crate::record::fork::{ExitBinding, Spawn};
use crate::record::Ending;

/// The interleaved A/B: children calling `exit` through the GOT (binding it) vs directly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LazyBinding {
    pub iterations: u64,
    pub through_got_child_cpu_ns: Option<Summary>,
    pub direct_child_cpu_ns: Option<Summary>,
    pub through_got_child_faults: Option<Summary>,
    pub direct_child_faults: Option<Summary>,
    /// Difference of the medians (ns of child CPU per child): the binding's cost.
    pub cost_ns: Option<f64>,
    /// The two intervals do not overlap.
    pub significant: bool,
}

/// The fork/vfork A/B of the same stopped image, every child doing `_exit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpawnAb {
    /// Children per side.
    pub iterations: u64,
    /// Rounds (a fork loop then a vfork loop each).
    pub rounds: u64,
    /// The parent's CPU per child, each loop's.
    pub fork_parent_cpu_ns: Option<Summary>,
    pub vfork_parent_cpu_ns: Option<Summary>,
    /// The round trip per child (wall), each loop's.
    pub fork_round_trip_ns: Option<Summary>,
    pub vfork_round_trip_ns: Option<Summary>,
    /// Difference of the parent-CPU medians, fork − vfork (ns per child).
    pub saving_ns: Option<f64>,
    /// The two parent-CPU intervals do not overlap.
    pub significant: bool,
}

impl From<fc::SpawnAb> for SpawnAb {
    fn from(x: fc::SpawnAb) -> Self {
        SpawnAb {
            iterations: x.iterations,
            rounds: x.rounds,
            fork_parent_cpu_ns: x.fork_parent_cpu_ns.map(Into::into),
            vfork_parent_cpu_ns: x.vfork_parent_cpu_ns.map(Into::into),
            fork_round_trip_ns: x.fork_round_trip_ns.map(Into::into),
            vfork_round_trip_ns: x.vfork_round_trip_ns.map(Into::into),
            saving_ns: x.saving_ns,
            significant: x.significant,
        }
    }
}

impl From<SpawnAb> for fc::SpawnAb {
    fn from(x: SpawnAb) -> Self {
        fc::SpawnAb {
            iterations: x.iterations,
            rounds: x.rounds,
            fork_parent_cpu_ns: x.fork_parent_cpu_ns.map(Into::into),
            vfork_parent_cpu_ns: x.vfork_parent_cpu_ns.map(Into::into),
            fork_round_trip_ns: x.fork_round_trip_ns.map(Into::into),
            vfork_round_trip_ns: x.vfork_round_trip_ns.map(Into::into),
            saving_ns: x.saving_ns,
            significant: x.significant,
        }
    }
}

/// Per-fork figures (each a summary over the iterations).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PerFork {
    /// fork()/vfork()/posix_spawn() in the parent, call to return (ns, wall).
    pub spawn_call_ns: Option<Summary>,
    /// From that return to the reap by wait4 (ns, wall): the child's life.
    pub child_to_reap_ns: Option<Summary>,
    /// The whole round trip (ns, wall).
    pub round_trip_ns: Option<Summary>,
    /// The parent thread's CPU per iteration (getrusage(RUSAGE_THREAD) differences; the
    /// total is the scheduler's exact runtime).
    pub parent_cpu_ns: Option<Summary>,
    /// The child's CPU (its rusage from wait4; includes its exit teardown). Only the total:
    /// the kernel splits user/system by timer ticks, and a child that saw no tick is charged
    /// entirely to user time (cputime_adjust), so a per-child split would be an artefact.
    pub child_cpu_ns: Option<Summary>,
    /// Minor faults in the parent per iteration (copy-on-write after each fork, mostly).
    pub parent_minor_faults: Option<Summary>,
    pub child_minor_faults: Option<Summary>,
    pub child_major_faults: Option<Summary>,
    /// Mean and 99th percentile of each figure above: the tail the median hides (forks per
    /// second by wall time follow the mean, not the median).
    #[serde(default)]
    pub tails: PerForkTails,
}

/// The mean and the 99th percentile (nearest rank) of a per-fork figure.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tail {
    pub mean: f64,
    pub p99: f64,
}

/// [`Tail`]s of the [`PerFork`] figures, field for field.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PerForkTails {
    pub spawn_call_ns: Option<Tail>,
    pub child_to_reap_ns: Option<Tail>,
    pub round_trip_ns: Option<Tail>,
    pub parent_cpu_ns: Option<Tail>,
    pub child_cpu_ns: Option<Tail>,
    pub parent_minor_faults: Option<Tail>,
    pub child_minor_faults: Option<Tail>,
    pub child_major_faults: Option<Tail>,
}

/// Page faults per fork by kind, from the kernel's fault tracepoint counted over the loop
/// (means: counters give totals).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultsPerFork {
    pub parent_cow: f64,
    pub parent_not_present: f64,
    pub child_cow: f64,
    /// File-backed pages the child had no PTE for, or new anonymous pages.
    pub child_not_present: f64,
    /// Of the not-present faults, those in the target's file-backed VMAs (page-cache
    /// faults); None when the kernel did not count them.
    #[serde(default)]
    pub parent_file: Option<f64>,
    #[serde(default)]
    pub child_file: Option<f64>,
}

/// The `fork` section of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForkSection {
    pub at: String,
    pub at_address: u64,
    pub spawn: Spawn,
    pub child: String,
    pub iterations: u64,
    pub completed: u64,
    /// Every child the probe created: the measured loop, plus the lean loop the rates come
    /// from (N, fork only) and the loops that count fault kinds (min(N, 2000)), sample, and
    /// time the lazy-binding A/B. An exec'd program runs
    /// this many times.
    #[serde(default)]
    pub children_total: u64,
    /// The first failure of fork/spawn/wait in the loop, if any.
    pub error: Option<String>,
    pub exit_binding: Option<ExitBinding>,
    pub libc_fork: bool,
    /// "vdso" or "syscall": how the probe read CLOCK_MONOTONIC.
    pub clock: String,
    pub per_fork: PerFork,
    /// The loop the rates come from: the lean one (fork and wait4 only) with `--spawn
    /// fork`, else the measured one.
    pub loop_wall_ns: u64,
    pub loop_parent_cpu_ns: u64,
    /// The parent's user and system time over the whole loop, per fork: the kernel's
    /// tick-sampled split (hundreds of ticks over a loop, so meaningful there).
    pub parent_user_ns_per_fork: Option<f64>,
    pub parent_sys_ns_per_fork: Option<f64>,
    pub forks_per_sec_wall: Option<f64>,
    /// By the parent's CPU time, as the seed forktest's clock() counts.
    pub forks_per_sec_parent_cpu: Option<f64>,
    /// "exited 0" -> count, "killed by SIGSEGV" -> count ...
    pub child_endings: BTreeMap<String, u64>,
    pub lazy_binding: Option<LazyBinding>,
    /// The fork/vfork A/B of the same image (absent: not run, or a document from before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawn_ab: Option<SpawnAb>,
    /// The sampled loop's category breakdown, or why there is none.
    #[serde(default)]
    pub breakdown: Option<Breakdown>,
    #[serde(default)]
    pub breakdown_error: Option<String>,
    /// The target's pid and the sampled loop's CLOCK_MONOTONIC window (ns), to line up
    /// other tools' recordings of the same run (`perf record -k mono`).
    #[serde(default)]
    pub pid: i32,
    #[serde(default)]
    pub sampled_window_ns: Option<(u64, u64)>,
    pub faults: Option<FaultsPerFork>,
    /// Why the fault kinds are missing.
    pub faults_error: Option<String>,
    pub footprint: Option<Footprint>,
    pub footprint_error: Option<String>,
    /// What the probe itself adds to each fork.
    pub probe_adds: String,
    pub reading: String,
    pub target_ending: Ending,
    /// Every iteration's round trip and parent CPU (ns), for `ldcost diff`'s tests
    /// (a median's interval is not enough for a Mann–Whitney U test).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<ForkSamples>,
}

/// Per-iteration values of the measured loop (ns), in loop order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ForkSamples {
    pub round_trip_ns: Vec<u64>,
    pub parent_cpu_ns: Vec<u64>,
    /// The child's CPU per fork (user + system from `wait4`'s rusage).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub child_cpu_ns: Vec<u64>,
    /// `compare`: the sizes of the loops interleaved with the other side's, in order (empty:
    /// one loop).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chunks: Vec<u64>,
}

impl From<fc::LazyBinding> for LazyBinding {
    fn from(x: fc::LazyBinding) -> Self {
        LazyBinding {
            iterations: x.iterations,
            through_got_child_cpu_ns: x.through_got_child_cpu_ns.map(Into::into),
            direct_child_cpu_ns: x.direct_child_cpu_ns.map(Into::into),
            through_got_child_faults: x.through_got_child_faults.map(Into::into),
            direct_child_faults: x.direct_child_faults.map(Into::into),
            cost_ns: x.cost_ns,
            significant: x.significant,
        }
    }
}

impl From<LazyBinding> for fc::LazyBinding {
    fn from(x: LazyBinding) -> Self {
        fc::LazyBinding {
            iterations: x.iterations,
            through_got_child_cpu_ns: x.through_got_child_cpu_ns.map(Into::into),
            direct_child_cpu_ns: x.direct_child_cpu_ns.map(Into::into),
            through_got_child_faults: x.through_got_child_faults.map(Into::into),
            direct_child_faults: x.direct_child_faults.map(Into::into),
            cost_ns: x.cost_ns,
            significant: x.significant,
        }
    }
}

impl From<fc::PerFork> for PerFork {
    fn from(x: fc::PerFork) -> Self {
        PerFork {
            spawn_call_ns: x.spawn_call_ns.map(Into::into),
            child_to_reap_ns: x.child_to_reap_ns.map(Into::into),
            round_trip_ns: x.round_trip_ns.map(Into::into),
            parent_cpu_ns: x.parent_cpu_ns.map(Into::into),
            child_cpu_ns: x.child_cpu_ns.map(Into::into),
            parent_minor_faults: x.parent_minor_faults.map(Into::into),
            child_minor_faults: x.child_minor_faults.map(Into::into),
            child_major_faults: x.child_major_faults.map(Into::into),
            tails: x.tails.into(),
        }
    }
}

impl From<PerFork> for fc::PerFork {
    fn from(x: PerFork) -> Self {
        fc::PerFork {
            spawn_call_ns: x.spawn_call_ns.map(Into::into),
            child_to_reap_ns: x.child_to_reap_ns.map(Into::into),
            round_trip_ns: x.round_trip_ns.map(Into::into),
            parent_cpu_ns: x.parent_cpu_ns.map(Into::into),
            child_cpu_ns: x.child_cpu_ns.map(Into::into),
            parent_minor_faults: x.parent_minor_faults.map(Into::into),
            child_minor_faults: x.child_minor_faults.map(Into::into),
            child_major_faults: x.child_major_faults.map(Into::into),
            tails: x.tails.into(),
        }
    }
}

impl From<fc::Tail> for Tail {
    fn from(x: fc::Tail) -> Self {
        Tail {
            mean: x.mean,
            p99: x.p99,
        }
    }
}

impl From<Tail> for fc::Tail {
    fn from(x: Tail) -> Self {
        fc::Tail {
            mean: x.mean,
            p99: x.p99,
        }
    }
}

impl From<fc::PerForkTails> for PerForkTails {
    fn from(x: fc::PerForkTails) -> Self {
        PerForkTails {
            spawn_call_ns: x.spawn_call_ns.map(Into::into),
            child_to_reap_ns: x.child_to_reap_ns.map(Into::into),
            round_trip_ns: x.round_trip_ns.map(Into::into),
            parent_cpu_ns: x.parent_cpu_ns.map(Into::into),
            child_cpu_ns: x.child_cpu_ns.map(Into::into),
            parent_minor_faults: x.parent_minor_faults.map(Into::into),
            child_minor_faults: x.child_minor_faults.map(Into::into),
            child_major_faults: x.child_major_faults.map(Into::into),
        }
    }
}

impl From<PerForkTails> for fc::PerForkTails {
    fn from(x: PerForkTails) -> Self {
        fc::PerForkTails {
            spawn_call_ns: x.spawn_call_ns.map(Into::into),
            child_to_reap_ns: x.child_to_reap_ns.map(Into::into),
            round_trip_ns: x.round_trip_ns.map(Into::into),
            parent_cpu_ns: x.parent_cpu_ns.map(Into::into),
            child_cpu_ns: x.child_cpu_ns.map(Into::into),
            parent_minor_faults: x.parent_minor_faults.map(Into::into),
            child_minor_faults: x.child_minor_faults.map(Into::into),
            child_major_faults: x.child_major_faults.map(Into::into),
        }
    }
}

impl From<fc::FaultsPerFork> for FaultsPerFork {
    fn from(x: fc::FaultsPerFork) -> Self {
        FaultsPerFork {
            parent_cow: x.parent_cow,
            parent_not_present: x.parent_not_present,
            child_cow: x.child_cow,
            child_not_present: x.child_not_present,
            parent_file: x.parent_file,
            child_file: x.child_file,
        }
    }
}

impl From<FaultsPerFork> for fc::FaultsPerFork {
    fn from(x: FaultsPerFork) -> Self {
        fc::FaultsPerFork {
            parent_cow: x.parent_cow,
            parent_not_present: x.parent_not_present,
            child_cow: x.child_cow,
            child_not_present: x.child_not_present,
            parent_file: x.parent_file,
            child_file: x.child_file,
        }
    }
}

impl From<fc::ForkSection> for ForkSection {
    fn from(x: fc::ForkSection) -> Self {
        ForkSection {
            at: x.at,
            at_address: x.at_address,
            spawn: x.spawn,
            child: x.child,
            iterations: x.iterations,
            completed: x.completed,
            children_total: x.children_total,
            error: x.error,
            exit_binding: x.exit_binding,
            libc_fork: x.libc_fork,
            clock: x.clock,
            per_fork: x.per_fork.into(),
            loop_wall_ns: x.loop_wall_ns,
            loop_parent_cpu_ns: x.loop_parent_cpu_ns,
            parent_user_ns_per_fork: x.parent_user_ns_per_fork,
            parent_sys_ns_per_fork: x.parent_sys_ns_per_fork,
            forks_per_sec_wall: x.forks_per_sec_wall,
            forks_per_sec_parent_cpu: x.forks_per_sec_parent_cpu,
            child_endings: x.child_endings,
            lazy_binding: x.lazy_binding.map(Into::into),
            spawn_ab: x.spawn_ab.map(Into::into),
            breakdown: x.breakdown.map(Into::into),
            breakdown_error: x.breakdown_error,
            pid: x.pid,
            sampled_window_ns: x.sampled_window_ns,
            faults: x.faults.map(Into::into),
            faults_error: x.faults_error,
            footprint: x.footprint,
            footprint_error: x.footprint_error,
            probe_adds: x.probe_adds,
            reading: x.reading,
            target_ending: x.target_ending,
            samples: x.samples.map(Into::into),
        }
    }
}

impl From<ForkSection> for fc::ForkSection {
    fn from(x: ForkSection) -> Self {
        fc::ForkSection {
            at: x.at,
            at_address: x.at_address,
            spawn: x.spawn,
            child: x.child,
            iterations: x.iterations,
            completed: x.completed,
            children_total: x.children_total,
            error: x.error,
            exit_binding: x.exit_binding,
            libc_fork: x.libc_fork,
            clock: x.clock,
            per_fork: x.per_fork.into(),
            loop_wall_ns: x.loop_wall_ns,
            loop_parent_cpu_ns: x.loop_parent_cpu_ns,
            parent_user_ns_per_fork: x.parent_user_ns_per_fork,
            parent_sys_ns_per_fork: x.parent_sys_ns_per_fork,
            forks_per_sec_wall: x.forks_per_sec_wall,
            forks_per_sec_parent_cpu: x.forks_per_sec_parent_cpu,
            child_endings: x.child_endings,
            lazy_binding: x.lazy_binding.map(Into::into),
            spawn_ab: x.spawn_ab.map(Into::into),
            breakdown: x.breakdown.map(Into::into),
            breakdown_error: x.breakdown_error,
            pid: x.pid,
            sampled_window_ns: x.sampled_window_ns,
            faults: x.faults.map(Into::into),
            faults_error: x.faults_error,
            footprint: x.footprint,
            footprint_error: x.footprint_error,
            probe_adds: x.probe_adds,
            reading: x.reading,
            target_ending: x.target_ending,
            samples: x.samples.map(Into::into),
        }
    }
}

impl From<fc::ForkSamples> for ForkSamples {
    fn from(x: fc::ForkSamples) -> Self {
        ForkSamples {
            round_trip_ns: x.round_trip_ns,
            parent_cpu_ns: x.parent_cpu_ns,
            child_cpu_ns: x.child_cpu_ns,
            chunks: x.chunks,
        }
    }
}

impl From<ForkSamples> for fc::ForkSamples {
    fn from(x: ForkSamples) -> Self {
        fc::ForkSamples {
            round_trip_ns: x.round_trip_ns,
            parent_cpu_ns: x.parent_cpu_ns,
            child_cpu_ns: x.child_cpu_ns,
            chunks: x.chunks,
        }
    }
}

impl ForkSection {
    /// The section as the analysis holds it (what `report` renders and `diff` compares).
    pub fn section(&self) -> fc::ForkSection {
        self.clone().into()
    }
}
