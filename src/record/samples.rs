//! The sampler's recording: every sample (its user and kernel call chain as raw addresses),
//! the tree's task and mmap events, and the maps of each process when sampling began, in
//! time order (CLOCK_MONOTONIC ns). Symbolization reads this after the run.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Which tasks the events are opened on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scope {
    /// One event per online CPU for every task (`pid = -1`), filtered to the root's tree.
    /// Sees exit teardown. Needs root, CAP_PERFMON or `perf_event_paranoid <= 0`.
    SystemWide,
    /// One event per online CPU for the root with `inherit`, like `perf record -p`. Does not
    /// see the exit teardown of the tree's processes.
    PerTask,
}

/// Everything the sampler captured, in time order (CLOCK_MONOTONIC nanoseconds).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recording {
    /// Samples of the root's process tree only.
    pub samples: Vec<Sample>,
    /// Forks, exits, execs and renames of tree members (forks: of a member's children).
    pub tasks: Vec<TaskEvent>,
    /// Executable mappings made by tree members while sampling (`PERF_RECORD_MMAP2`).
    pub mmaps: Vec<MmapEvent>,
    /// Records the kernel dropped because a ring buffer was full (`PERF_RECORD_LOST`,
    /// `PERF_RECORD_LOST_SAMPLES`), over all tasks of the CPU, not only the tree.
    pub lost: u64,
    /// Times the kernel throttled sampling (too many samples per tick).
    pub throttled: u64,
    pub unthrottled: u64,
    pub frequency_hz: u64,
    /// `"cycles"` or `"cpu-clock"`.
    pub event: String,
    pub scope: Scope,
    /// Whether the call chains hold kernel frames that can be named: kernel mode was sampled
    /// (perf_event_paranoid, privileges) and /proc/kallsyms shows addresses (kptr_restrict).
    pub kernel_frames_visible: bool,
    pub root_pid: i32,
    /// The CPUs an event was opened on.
    pub cpus: Vec<u32>,
    /// Ring buffer pages per CPU actually used.
    pub buffer_pages: usize,
    /// The times of the first and last record read from any ring buffer (CLOCK_MONOTONIC
    /// ns, any task): the window the sampler saw. None when nothing was recorded.
    pub window_ns: Option<(u64, u64)>,
    /// `/proc/PID/maps` of the root (and of descendants that already existed) read when the
    /// sampler started: the address spaces that MMAP2 records do not describe.
    pub maps_at_start: BTreeMap<i32, Vec<MapRange>>,
    /// Kernel function names resolved when the recording stopped, keyed by lookup address
    /// (the leaf's address, or a caller's return address minus one), so that a saved
    /// recording names kernel frames without root or after a reboot.
    pub kernel_names: BTreeMap<u64, String>,
    /// What a report must say about this recording (fallbacks, what is not visible).
    pub notes: Vec<String>,
    /// Samples of the tree read after the memory budget was reached, not kept.
    #[serde(default)]
    pub dropped_budget: u64,
    /// Samples of ldcost itself (system-wide events see it), dropped as they were read.
    #[serde(default)]
    pub dropped_own: u64,
    /// Why sampling stopped before the sampler was stopped, if it did (deadline, budget).
    #[serde(default)]
    pub stopped: Option<String>,
}

impl Recording {
    /// An empty recording with the given settings (for tests and replays built by hand).
    pub fn empty(root_pid: i32, scope: Scope, frequency_hz: u64, event: &str) -> Recording {
        Recording {
            samples: Vec::new(),
            tasks: Vec::new(),
            mmaps: Vec::new(),
            lost: 0,
            throttled: 0,
            unthrottled: 0,
            frequency_hz,
            event: event.to_string(),
            scope,
            kernel_frames_visible: false,
            root_pid,
            cpus: Vec::new(),
            buffer_pages: 0,
            window_ns: None,
            maps_at_start: BTreeMap::new(),
            kernel_names: BTreeMap::new(),
            notes: Vec::new(),
            dropped_budget: 0,
            dropped_own: 0,
            stopped: None,
        }
    }

    /// The pids of the tree seen in this recording: the root and every forked child.
    pub fn tree_pids(&self) -> Vec<i32> {
        let mut pids: Vec<i32> = std::iter::once(self.root_pid)
            .chain(self.maps_at_start.keys().copied())
            .chain(
                self.tasks
                    .iter()
                    .filter(|t| t.kind == TaskKind::Fork)
                    .map(|t| t.pid),
            )
            .collect();
        pids.sort_unstable();
        pids.dedup();
        pids
    }
}

/// One sample of a tree member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sample {
    pub time_ns: u64,
    /// Process id (thread group id).
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    pub cpu: u32,
    /// Kernel frames, leaf first (empty when the sample hit user mode or the kernel is not
    /// visible).
    pub kernel: Vec<u64>,
    /// User frames, leaf first (frame-pointer walk by the kernel: a program without frame
    /// pointers shows its leaf and little else).
    pub user: Vec<u64>,
    /// The event's period for this sample (ns for cpu-clock, cycles for cycles).
    pub period: u64,
    /// The CPU time this sample stands for: the period for cpu-clock; for cycles, the
    /// nominal `1e9 / frequency_hz`.
    pub weight_ns: u64,
}

/// What happened to a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskKind {
    /// A process or thread was created (`PERF_RECORD_FORK`).
    Fork,
    /// A thread exited (`PERF_RECORD_EXIT`; the process when `tid == pid`).
    Exit,
    /// The task exec'd a new image (`PERF_RECORD_COMM` with the exec flag): its address space
    /// was replaced.
    Exec,
    /// The task renamed itself (`prctl(PR_SET_NAME)`).
    Comm,
}

/// A fork, exit, exec or rename of a tree member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskEvent {
    pub time_ns: u64,
    pub kind: TaskKind,
    pub pid: i32,
    pub tid: i32,
    /// Parent process and thread (fork and exit records only).
    pub ppid: Option<i32>,
    pub ptid: Option<i32>,
    /// The new name (exec and comm only).
    pub comm: Option<String>,
}

/// An executable mapping made by a tree member (`PERF_RECORD_MMAP2`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MmapEvent {
    pub time_ns: u64,
    pub pid: i32,
    pub tid: i32,
    pub addr: u64,
    pub len: u64,
    /// File offset of `addr`, in bytes.
    pub pgoff: u64,
    /// The file, or a kernel label such as `[vdso]`, `//anon`.
    pub path: String,
    pub prot: u32,
    pub flags: u32,
}

/// One line of `/proc/PID/maps`, or one MMAP2 record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapRange {
    pub start: u64,
    pub end: u64,
    /// File offset of `start`, in bytes.
    pub pgoff: u64,
    /// `rwxp` as the kernel prints it.
    pub perms: String,
    /// The file, a label (`[vdso]`, `[heap]`), or empty for anonymous memory.
    pub path: String,
}

impl MapRange {
    pub fn is_executable(&self) -> bool {
        self.perms.as_bytes().get(2) == Some(&b'x')
    }
}
