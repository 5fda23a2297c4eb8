//! From ring-buffer records to a [`Recording`]'s parts: parsing, splitting call chains, and
//! keeping only the root's process tree.
//!
//! Records are read CPU by CPU, so one drain round can hold a child's samples (CPU 1) and
//! not yet the fork that made it a member (written to CPU 0's buffer after we read it). Each
//! round is therefore sorted by time, and a record whose pid is not (yet) a member waits for
//! the next round, which holds every record written before this round ended, and is
//! dropped only if its pid is still unknown then. The last round (after the events are
//! disabled) sees everything and waits for nothing.

use std::collections::HashSet;

use perf_event::data::Record as Parsed;

use super::{MmapEvent, Recording, Sample, Scope, TaskEvent, TaskKind};

/// `PERF_CONTEXT_*` markers in a call chain (`include/uapi/linux/perf_event.h`): the
/// frames after a marker belong to that context, until the next marker.
const PERF_CONTEXT_KERNEL: u64 = -128i64 as u64;
const PERF_CONTEXT_USER: u64 = -512i64 as u64;
/// Every value at or above this is a marker, not an address.
const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;
/// `PERF_RECORD_MISC_COMM_EXEC`: the COMM record comes from an execve.
const MISC_COMM_EXEC: u16 = 1 << 13;
/// The first address of the kernel half on x86-64 (only used for chains without markers).
const KERNEL_HALF: u64 = 0xffff_8000_0000_0000;

/// Splits a sampled call chain into kernel and user frames, leaf first, without markers.
/// Guest and hypervisor frames are dropped.
pub(crate) fn split_callchain(chain: &[u64]) -> (Vec<u64>, Vec<u64>) {
    #[derive(PartialEq)]
    enum Ctx {
        Unmarked,
        Kernel,
        User,
        Other,
    }
    let mut kernel = Vec::new();
    let mut user = Vec::with_capacity(chain.len());
    let mut ctx = Ctx::Unmarked;
    for &a in chain {
        if a >= PERF_CONTEXT_MAX {
            ctx = match a {
                PERF_CONTEXT_KERNEL => Ctx::Kernel,
                PERF_CONTEXT_USER => Ctx::User,
                _ => Ctx::Other,
            };
            continue;
        }
        match ctx {
            Ctx::Kernel => kernel.push(a),
            Ctx::User => user.push(a),
            Ctx::Unmarked if a >= KERNEL_HALF => kernel.push(a),
            Ctx::Unmarked => user.push(a),
            Ctx::Other => {}
        }
    }
    (kernel, user)
}

/// How a sample's CPU time is derived from its period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Weight {
    /// cpu-clock: the period is in ns.
    Period,
    /// cycles: a nominal `1e9 / frequency` ns per sample.
    Nominal(u64),
}

/// A record of interest, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    Sample(Sample),
    Task(TaskEvent),
    Mmap(MmapEvent),
}

impl Item {
    fn time(&self) -> u64 {
        match self {
            Item::Sample(s) => s.time_ns,
            Item::Task(t) => t.time_ns,
            Item::Mmap(m) => m.time_ns,
        }
    }

    fn pid(&self) -> i32 {
        match self {
            Item::Sample(s) => s.pid,
            Item::Task(t) => t.pid,
            Item::Mmap(m) => m.pid,
        }
    }
}

/// What one ring-buffer record turned into.
#[derive(Debug)]
pub(crate) enum Converted {
    Item(Item),
    Lost(u64),
    Throttle,
    Unthrottle,
    /// Records we did not ask for, or that failed to parse.
    Ignored,
}

/// Parses one record; also returns its time, if it has one. `weight` turns a sample's period
/// into nanoseconds.
pub(crate) fn convert(rec: &perf_event::Record<'_>, weight: Weight) -> (Converted, Option<u64>) {
    let Ok(parsed) = rec.parse_record() else {
        return (Converted::Ignored, None);
    };
    let trailer_time = || trailer(rec.data()).map(|t| t.time);
    match parsed {
        Parsed::Sample(s) => {
            let (kernel, user) = split_callchain(s.callchain().unwrap_or(&[]));
            let period = s.period().unwrap_or(0);
            let time_ns = s.time().unwrap_or(0);
            let sample = Sample {
                time_ns,
                pid: s.pid().unwrap_or(0) as i32,
                tid: s.tid().unwrap_or(0) as i32,
                cpu: s.cpu().unwrap_or(0),
                kernel,
                user,
                period,
                weight_ns: match weight {
                    Weight::Period => period,
                    Weight::Nominal(ns) => ns,
                },
            };
            (Converted::Item(Item::Sample(sample)), Some(time_ns))
        }
        Parsed::Fork(f) | Parsed::Exit(f) => {
            let task = TaskEvent {
                time_ns: f.time,
                kind: task_kind(rec.ty()),
                pid: f.pid as i32,
                tid: f.tid as i32,
                ppid: Some(f.ppid as i32),
                ptid: Some(f.ptid as i32),
                comm: None,
            };
            (Converted::Item(Item::Task(task)), Some(f.time))
        }
        Parsed::Comm(c) => {
            let Some(time_ns) = trailer_time() else {
                return (Converted::Ignored, None);
            };
            let exec = rec.misc() & MISC_COMM_EXEC != 0;
            let task = TaskEvent {
                time_ns,
                kind: if exec { TaskKind::Exec } else { TaskKind::Comm },
                pid: c.pid as i32,
                tid: c.tid as i32,
                ppid: None,
                ptid: None,
                comm: Some(String::from_utf8_lossy(&c.comm).into_owned()),
            };
            (Converted::Item(Item::Task(task)), Some(time_ns))
        }
        Parsed::Mmap2(m) => {
            let Some(time_ns) = trailer_time() else {
                return (Converted::Ignored, None);
            };
            let mmap = MmapEvent {
                time_ns,
                pid: m.pid as i32,
                tid: m.tid as i32,
                addr: m.addr,
                len: m.len,
                pgoff: m.pgoff,
                path: String::from_utf8_lossy(&m.filename).into_owned(),
                prot: m.prot,
                flags: m.flags,
            };
            (Converted::Item(Item::Mmap(mmap)), Some(time_ns))
        }
        Parsed::Lost(l) => (Converted::Lost(l.lost), trailer_time()),
        Parsed::LostSamples(l) => (Converted::Lost(l.lost), trailer_time()),
        Parsed::Throttle(t) => (Converted::Throttle, Some(t.time)),
        Parsed::Unthrottle(t) => (Converted::Unthrottle, Some(t.time)),
        _ => (Converted::Ignored, None),
    }
}

/// FORK and EXIT records share one layout; the header type tells them apart.
fn task_kind(ty: u32) -> TaskKind {
    const PERF_RECORD_FORK: u32 = 7;
    if ty == PERF_RECORD_FORK {
        TaskKind::Fork
    } else {
        TaskKind::Exit
    }
}

/// The `sample_id` appended to non-sample records with `sample_id_all`, for our sample type
/// (TID | TIME | CPU): `u32 pid, tid; u64 time; u32 cpu, res`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Trailer {
    pub pid: u32,
    pub tid: u32,
    pub time: u64,
    pub cpu: u32,
}

/// Reads the trailer from the record body, which may be split where the ring buffer wraps.
pub(crate) fn trailer(parts: &[&[u8]]) -> Option<Trailer> {
    const LEN: usize = 24;
    let total: usize = parts.iter().map(|p| p.len()).sum();
    let mut skip = total.checked_sub(LEN)?;
    let mut buf = [0u8; LEN];
    let mut k = 0;
    for p in parts {
        if skip >= p.len() {
            skip -= p.len();
            continue;
        }
        let take = &p[skip..];
        buf[k..k + take.len()].copy_from_slice(take);
        k += take.len();
        skip = 0;
    }
    let u32_at = |i: usize| u32::from_ne_bytes([buf[i], buf[i + 1], buf[i + 2], buf[i + 3]]);
    Some(Trailer {
        pid: u32_at(0),
        tid: u32_at(4),
        time: u64::from(u32_at(8)) | u64::from(u32_at(12)) << 32,
        cpu: u32_at(16),
    })
}

/// Keeps the tree's records, round by round, in the parts of a [`Recording`] they fill
/// (samples, tasks, mmaps, the loss and throttle counts, the window, the dropped counts).
#[derive(Debug)]
pub(crate) struct Collector {
    tree: HashSet<i32>,
    /// Records of unknown pids from the previous round (they get one more chance).
    pending: Vec<Item>,
    /// Records read in this round.
    batch: Vec<Item>,
    /// What is kept; the sampler fills in its settings when it stops.
    pub kept: Recording,
    /// Records read from the ring buffers in all, of any task.
    pub records: u64,
    /// ldcost's own pid: its samples are dropped as they are read (system-wide events see
    /// the drain thread and the tracer too).
    own_pid: Option<i32>,
    /// The bytes kept records may take (None: unbounded) and what they take.
    budget: Option<u64>,
    pub kept_bytes: u64,
}

impl Default for Collector {
    fn default() -> Self {
        Collector {
            tree: HashSet::new(),
            pending: Vec::new(),
            batch: Vec::new(),
            kept: Recording::empty(0, Scope::SystemWide, 0, ""),
            records: 0,
            own_pid: None,
            budget: None,
            kept_bytes: 0,
        }
    }
}

/// About how many bytes one kept sample takes in memory.
pub(crate) fn sample_bytes(s: &Sample) -> u64 {
    (std::mem::size_of::<Sample>() + 8 * (s.kernel.capacity() + s.user.capacity())) as u64
}

impl Collector {
    /// A collector for the tree of `root` (and of `members` that already exist).
    pub fn new(root: i32, members: impl IntoIterator<Item = i32>) -> Collector {
        let mut tree: HashSet<i32> = members.into_iter().collect();
        tree.insert(root);
        Collector {
            tree,
            ..Collector::default()
        }
    }

    /// Drops the records of `pid` (ldcost itself) as they are read, counting its samples.
    pub fn exclude(mut self, pid: i32) -> Collector {
        self.own_pid = Some(pid);
        self
    }

    /// Bounds the memory of the kept records to `bytes`.
    pub fn with_budget(mut self, bytes: Option<u64>) -> Collector {
        self.budget = bytes;
        self
    }

    /// Whether the kept records reached the budget.
    pub fn over_budget(&self) -> bool {
        self.budget.is_some_and(|b| self.kept_bytes >= b)
    }

    /// Takes one converted record into the current round.
    pub fn take(&mut self, c: Converted, time: Option<u64>) {
        self.records += 1;
        if let Some(t) = time {
            self.kept.window_ns = Some(match self.kept.window_ns {
                None => (t, t),
                Some((a, b)) => (a.min(t), b.max(t)),
            });
        }
        match c {
            Converted::Item(item) if Some(item.pid()) == self.own_pid => {
                if matches!(item, Item::Sample(_)) {
                    self.kept.dropped_own += 1;
                }
            }
            Converted::Item(item) => self.batch.push(item),
            Converted::Lost(n) => self.kept.lost += n,
            Converted::Throttle => self.kept.throttled += 1,
            Converted::Unthrottle => self.kept.unthrottled += 1,
            Converted::Ignored => {}
        }
    }

    /// Ends a round: members' records are kept, in time order, growing the tree at each fork
    /// of a member; others wait one round, or are dropped if they waited already or if `last`.
    pub fn round(&mut self, last: bool) {
        let mut items: Vec<(Item, bool)> = self
            .pending
            .drain(..)
            .map(|i| (i, true))
            .chain(self.batch.drain(..).map(|i| (i, false)))
            .collect();
        items.sort_by_key(|(i, _)| i.time());
        for (item, waited) in items {
            let member = match &item {
                Item::Task(t) if t.kind == TaskKind::Fork => {
                    let parent = t.ppid.unwrap_or(t.pid);
                    let member = self.tree.contains(&parent);
                    if member {
                        self.tree.insert(t.pid);
                    }
                    member
                }
                other => self.tree.contains(&other.pid()),
            };
            if member {
                match item {
                    Item::Sample(_) if self.over_budget() => self.kept.dropped_budget += 1,
                    Item::Sample(s) => {
                        self.kept_bytes += sample_bytes(&s);
                        self.kept.samples.push(s);
                    }
                    Item::Task(t) => {
                        self.kept_bytes += std::mem::size_of::<TaskEvent>() as u64;
                        self.kept.tasks.push(t);
                    }
                    Item::Mmap(m) => {
                        self.kept_bytes += (std::mem::size_of::<MmapEvent>() + m.path.len()) as u64;
                        self.kept.mmaps.push(m);
                    }
                }
            } else if !waited && !last {
                self.pending.push(item);
            } else if let Item::Task(t) = &item {
                // A process outside the tree was given the pid of an exited member: from
                // now on that pid is someone else.
                if t.kind == TaskKind::Fork && t.ppid != Some(t.pid) {
                    self.tree.remove(&t.pid);
                }
            }
        }
    }

    /// Whether `pid` is a member now.
    pub fn is_member(&self, pid: i32) -> bool {
        self.tree.contains(&pid)
    }

    /// Sorts what was kept by time (rounds can interleave by a few records).
    pub fn finish(&mut self) {
        self.round(true);
        self.kept.samples.sort_by_key(|s| s.time_ns);
        self.kept.tasks.sort_by_key(|t| t.time_ns);
        self.kept.mmaps.sort_by_key(|m| m.time_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callchains_split_at_markers() {
        let chain = [
            PERF_CONTEXT_KERNEL,
            0xffff_ffff_8100_0010,
            0xffff_ffff_8100_0020,
            PERF_CONTEXT_USER,
            0x5555_0000_1000,
            0x5555_0000_2000,
            0x7f00_0000_0000,
        ];
        let (k, u) = split_callchain(&chain);
        assert_eq!(k, vec![0xffff_ffff_8100_0010, 0xffff_ffff_8100_0020]);
        assert_eq!(
            u,
            vec![0x5555_0000_1000, 0x5555_0000_2000, 0x7f00_0000_0000]
        );

        let (k, u) = split_callchain(&[PERF_CONTEXT_USER, 0x1000]);
        assert!(k.is_empty());
        assert_eq!(u, vec![0x1000]);

        // Guest frames are not ours; unmarked frames go by address.
        let guest = -2048i64 as u64;
        let (k, u) = split_callchain(&[0xffff_ffff_8100_0000, 0x4000, guest, 0x5000]);
        assert_eq!((k, u), (vec![0xffff_ffff_8100_0000], vec![0x4000]));
        assert_eq!(split_callchain(&[]), (vec![], vec![]));
    }

    #[test]
    fn trailer_across_the_wrap() {
        let mut body = vec![0xaa; 16];
        body.extend_from_slice(&7u32.to_ne_bytes());
        body.extend_from_slice(&8u32.to_ne_bytes());
        body.extend_from_slice(&123_456_789u64.to_ne_bytes());
        body.extend_from_slice(&1u32.to_ne_bytes());
        body.extend_from_slice(&0u32.to_ne_bytes());
        let want = Trailer {
            pid: 7,
            tid: 8,
            time: 123_456_789,
            cpu: 1,
        };
        assert_eq!(trailer(&[&body]), Some(want));
        for cut in [0, 5, 17, 30, body.len()] {
            let (a, b) = body.split_at(cut);
            assert_eq!(trailer(&[a, b]), Some(want), "cut at {cut}");
        }
        assert_eq!(trailer(&[&body[..20]]), None);
    }

    fn sample(t: u64, pid: i32) -> Item {
        Item::Sample(Sample {
            time_ns: t,
            pid,
            tid: pid,
            cpu: 0,
            kernel: vec![],
            user: vec![],
            period: 1_000_000,
            weight_ns: 1_000_000,
        })
    }

    fn fork(t: u64, ppid: i32, pid: i32) -> Item {
        Item::Task(TaskEvent {
            time_ns: t,
            kind: TaskKind::Fork,
            pid,
            tid: pid,
            ppid: Some(ppid),
            ptid: Some(ppid),
            comm: None,
        })
    }

    fn feed(c: &mut Collector, items: Vec<Item>) {
        for i in items {
            let t = i.time();
            c.take(Converted::Item(i), Some(t));
        }
    }

    #[test]
    fn the_tree_grows_at_forks_of_members() {
        let mut c = Collector::new(100, []);
        feed(
            &mut c,
            vec![
                sample(1, 100),
                fork(2, 100, 101),
                fork(3, 101, 102), // grandchild
                sample(4, 102),
                sample(5, 555), // unrelated
                fork(6, 555, 556),
                sample(7, 556),
                fork(8, 102, 102), // a thread of the grandchild
            ],
        );
        c.finish();
        let pids: Vec<i32> = c.kept.samples.iter().map(|s| s.pid).collect();
        assert_eq!(pids, vec![100, 102]);
        assert_eq!(c.kept.tasks.len(), 3);
        assert!(c.is_member(101) && c.is_member(102) && !c.is_member(556));
        assert_eq!(c.kept.window_ns, Some((1, 8)));
        assert_eq!(c.records, 8);
    }

    #[test]
    fn a_child_seen_before_its_fork_waits_one_round() {
        let mut c = Collector::new(100, []);
        // Round 1 read CPU 1 (the child's sample) but CPU 0's fork record came later.
        feed(&mut c, vec![sample(20, 101), sample(21, 999)]);
        c.round(false);
        assert!(c.kept.samples.is_empty());
        feed(&mut c, vec![fork(10, 100, 101), sample(30, 101)]);
        c.round(false);
        let times: Vec<u64> = c.kept.samples.iter().map(|s| s.time_ns).collect();
        assert_eq!(times, vec![20, 30]);
        // The unrelated sample had its second chance and is gone.
        c.round(false);
        c.finish();
        assert_eq!(c.kept.samples.len(), 2);
    }

    #[test]
    fn exited_members_stay_and_reused_pids_leave() {
        let mut c = Collector::new(100, [50]);
        let exit = Item::Task(TaskEvent {
            time_ns: 3,
            kind: TaskKind::Exit,
            pid: 101,
            tid: 101,
            ppid: Some(100),
            ptid: Some(100),
            comm: None,
        });
        feed(
            &mut c,
            vec![fork(1, 100, 101), exit, sample(4, 101), sample(5, 50)],
        );
        c.round(false);
        assert_eq!(
            c.kept.samples.len(),
            2,
            "teardown samples after the exit record are kept"
        );
        feed(&mut c, vec![fork(10, 7, 101), sample(11, 101)]);
        c.finish();
        assert_eq!(c.kept.samples.len(), 2, "pid 101 now belongs to a stranger");
        assert!(!c.is_member(101));
    }

    #[test]
    fn own_samples_are_dropped_at_once_and_counted() {
        let mut c = Collector::new(100, []).exclude(7);
        feed(&mut c, vec![sample(1, 7), sample(2, 100), fork(3, 7, 8)]);
        assert_eq!(
            c.batch.len(),
            2,
            "ldcost's own sample never enters the round"
        );
        c.finish();
        assert_eq!(c.kept.dropped_own, 1);
        assert_eq!(c.kept.samples.len(), 1);
        assert!(!c.is_member(8));
    }

    #[test]
    fn the_budget_stops_keeping_samples_and_counts_the_rest() {
        let one = match sample(0, 100) {
            Item::Sample(s) => sample_bytes(&s),
            _ => unreachable!(),
        };
        // Room for exactly three samples.
        let mut c = Collector::new(100, []).with_budget(Some(3 * one));
        feed(&mut c, (1..=10).map(|t| sample(t, 100)).collect());
        c.round(false);
        assert!(c.over_budget());
        feed(&mut c, vec![sample(11, 100), fork(12, 100, 101)]);
        c.finish();
        assert_eq!(c.kept.samples.len(), 3);
        assert_eq!(c.kept.dropped_budget, 8);
        assert!(
            c.is_member(101),
            "forks still grow the tree past the budget"
        );
        let mut free = Collector::new(100, []);
        feed(&mut free, (1..=10).map(|t| sample(t, 100)).collect());
        free.finish();
        assert!(!free.over_budget() && free.kept.samples.len() == 10);
    }

    #[test]
    fn counters_of_losses_and_throttling() {
        let mut c = Collector::new(1, []);
        c.take(Converted::Lost(5), Some(9));
        c.take(Converted::Lost(2), None);
        c.take(Converted::Throttle, Some(3));
        c.take(Converted::Unthrottle, Some(4));
        c.take(Converted::Ignored, None);
        assert_eq!(
            (c.kept.lost, c.kept.throttled, c.kept.unthrottled),
            (7, 1, 1)
        );
        assert_eq!(c.kept.window_ns, Some((3, 9)));
    }
}
