//! The per-fork figures of one probe loop: each iteration's clock readings and rusage
//! differences, summarised into medians with 95% intervals and the tails the medians hide.

use crate::attribute::stats::{summarize, Summary};
use crate::record::fork::{ProbeRecord, ProbeResult, Rusage};

/// Per-fork figures (each a summary over the iterations).
#[derive(Debug, Clone, Default, PartialEq)]
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
    pub tails: PerForkTails,
}

/// The mean and the 99th percentile (nearest rank) of a per-fork figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tail {
    pub mean: f64,
    pub p99: f64,
}

/// [`Tail`]s of the [`PerFork`] figures, field for field.
#[derive(Debug, Clone, Default, PartialEq)]
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

/// Mean and nearest-rank 99th percentile; None when empty.
pub fn tail(values: &[f64]) -> Option<Tail> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    Some(Tail {
        mean: crate::stats::mean(&v)?,
        p99: crate::stats::nearest_rank(&v, 0.99)?,
    })
}

pub(super) fn nonneg(a: u64, b: u64) -> f64 {
    a.saturating_sub(b) as f64
}

/// Per-iteration vectors of one loop.
pub(super) struct Columns {
    pub(super) spawn: Vec<f64>,
    pub(super) reap: Vec<f64>,
    pub(super) trip: Vec<f64>,
    pub(super) p_cpu: Vec<f64>,
    pub(super) c_cpu: Vec<f64>,
    pub(super) p_flt: Vec<f64>,
    pub(super) c_flt: Vec<f64>,
    pub(super) c_maj: Vec<f64>,
}

pub(super) fn columns<'a>(
    start: &Rusage,
    recs: impl Iterator<Item = (&'a Rusage, &'a ProbeRecord)>,
) -> Columns {
    let mut c = Columns {
        spawn: Vec::new(),
        reap: Vec::new(),
        trip: Vec::new(),
        p_cpu: Vec::new(),
        c_cpu: Vec::new(),
        p_flt: Vec::new(),
        c_flt: Vec::new(),
        c_maj: Vec::new(),
    };
    let _ = start;
    for (prev, r) in recs {
        c.spawn.push(nonneg(r.t1, r.t0));
        c.reap.push(nonneg(r.t2, r.t1));
        c.trip.push(nonneg(r.t2, r.t0));
        c.p_cpu.push(nonneg(
            r.parent.user_ns() + r.parent.sys_ns(),
            prev.user_ns() + prev.sys_ns(),
        ));
        c.c_cpu.push((r.child.user_ns() + r.child.sys_ns()) as f64);
        c.p_flt.push((r.parent.minflt - prev.minflt).max(0) as f64);
        c.c_flt.push(r.child.minflt as f64);
        c.c_maj.push(r.child.majflt as f64);
    }
    c
}

/// Pairs each record with the parent's rusage before it.
pub(super) fn with_prev(res: &ProbeResult) -> Vec<(&Rusage, &ProbeRecord)> {
    let mut out = Vec::with_capacity(res.records.len());
    let mut prev = &res.ru_start;
    for r in &res.records {
        out.push((prev, r));
        prev = &r.parent;
    }
    out
}

pub fn per_fork(res: &ProbeResult) -> PerFork {
    let c = columns(&res.ru_start, with_prev(res).into_iter());
    PerFork {
        spawn_call_ns: summarize(&c.spawn),
        child_to_reap_ns: summarize(&c.reap),
        round_trip_ns: summarize(&c.trip),
        parent_cpu_ns: summarize(&c.p_cpu),
        child_cpu_ns: summarize(&c.c_cpu),
        parent_minor_faults: summarize(&c.p_flt),
        child_minor_faults: summarize(&c.c_flt),
        child_major_faults: summarize(&c.c_maj),
        tails: PerForkTails {
            spawn_call_ns: tail(&c.spawn),
            child_to_reap_ns: tail(&c.reap),
            round_trip_ns: tail(&c.trip),
            parent_cpu_ns: tail(&c.p_cpu),
            child_cpu_ns: tail(&c.c_cpu),
            parent_minor_faults: tail(&c.p_flt),
            child_minor_faults: tail(&c.c_flt),
            child_major_faults: tail(&c.c_maj),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::result;
    use super::*;

    #[test]
    fn per_fork_differences_and_medians() {
        let p = per_fork(&result());
        assert_eq!(p.spawn_call_ns.as_ref().unwrap().median, 51_000.0);
        assert_eq!(p.child_to_reap_ns.as_ref().unwrap().median, 80_000.0);
        assert_eq!(p.parent_cpu_ns.as_ref().unwrap().median, 40_000.0);
        assert_eq!(p.parent_minor_faults.as_ref().unwrap().median, 6.0);
        assert_eq!(p.child_cpu_ns.as_ref().unwrap().median, 66_000.0);
        assert_eq!(p.child_minor_faults.as_ref().unwrap().max, 42.0);
    }

    #[test]
    fn tails_are_the_mean_and_the_nearest_rank_p99() {
        let v: Vec<f64> = (1..=200).map(f64::from).collect();
        let t = tail(&v).unwrap();
        assert_eq!((t.mean, t.p99), (100.5, 198.0));
        assert_eq!(tail(&[7.0]).map(|t| t.p99), Some(7.0));
        assert!(tail(&[]).is_none());
    }
}
