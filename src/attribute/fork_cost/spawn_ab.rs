//! The fork/vfork A/B: rounds of a fork loop and a vfork loop of the same stopped image, every
//! child doing `_exit`. The difference of the parents' CPU per child is what copying the image
//! (its page tables, its VMAs) costs a program that forks only to exec.

use super::per_fork::{columns, with_prev};
use crate::attribute::stats::{summarize, Summary};
use crate::record::fork::ProbeResult;

/// Both loops' per-child figures.
#[derive(Debug, Clone, PartialEq)]
pub struct SpawnAb {
    /// Children per side.
    pub iterations: u64,
    /// Rounds (a fork loop then a vfork loop each).
    pub rounds: u64,
    /// The parent's CPU per child (getrusage(RUSAGE_THREAD) differences), each loop's.
    pub fork_parent_cpu_ns: Option<Summary>,
    pub vfork_parent_cpu_ns: Option<Summary>,
    /// The round trip per child (ns, wall: the call to the reap), each loop's.
    pub fork_round_trip_ns: Option<Summary>,
    pub vfork_round_trip_ns: Option<Summary>,
    /// Difference of the parent-CPU medians, fork − vfork (ns per child).
    pub saving_ns: Option<f64>,
    /// The two parent-CPU intervals do not overlap.
    pub significant: bool,
}

/// Summarises the rounds (each a fork loop's and a vfork loop's result); None without rounds.
pub fn spawn_ab(rounds: &[(ProbeResult, ProbeResult)]) -> Option<SpawnAb> {
    if rounds.is_empty() {
        return None;
    }
    let (mut fc, mut ft, mut vc, mut vt) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (f, v) in rounds {
        // Each loop's first record is paired with that loop's own starting rusage.
        let c = columns(&f.ru_start, with_prev(f).into_iter());
        fc.extend(c.p_cpu);
        ft.extend(c.trip);
        let c = columns(&v.ru_start, with_prev(v).into_iter());
        vc.extend(c.p_cpu);
        vt.extend(c.trip);
    }
    let a = summarize(&fc);
    let b = summarize(&vc);
    let (saving_ns, significant) = match (&a, &b) {
        (Some(a), Some(b)) => (
            Some(a.median - b.median),
            a.ci95.0 > b.ci95.1 || b.ci95.0 > a.ci95.1,
        ),
        _ => (None, false),
    };
    Some(SpawnAb {
        iterations: fc.len().min(vc.len()) as u64,
        rounds: rounds.len() as u64,
        fork_parent_cpu_ns: a,
        vfork_parent_cpu_ns: b,
        fork_round_trip_ns: summarize(&ft),
        vfork_round_trip_ns: summarize(&vt),
        saving_ns,
        significant,
    })
}

/// The A/B of several fork loops of one side as one (`compare` runs a side's forks in
/// interleaved loops, each a fresh start of the target with its own rounds): every round of
/// every loop, each loop still differenced from its own start, so the medians and the
/// intervals are over all the children, not the first loop's alone. None without rounds.
pub fn merged<'a>(
    loops: impl IntoIterator<Item = &'a [(ProbeResult, ProbeResult)]>,
) -> Option<SpawnAb> {
    let rounds: Vec<(ProbeResult, ProbeResult)> = loops.into_iter().flatten().cloned().collect();
    spawn_ab(&rounds)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{result, ru};
    use super::*;

    #[test]
    fn each_loop_is_differenced_from_its_own_start() {
        // The fork loop (the fixture): parent CPU 30, 40, 50 µs per child. The vfork loop:
        // 3 µs per child. Two rounds; a loop's first record paired with the other loop's
        // last rusage would give the second fork loop a first child of 21 µs, not 30.
        let f = result();
        let mut v = result();
        for (i, r) in v.records.iter_mut().enumerate() {
            let k = i as i64 + 1;
            r.parent = ru(100 + k, 200 + 2 * k, 10);
        }
        let ab = spawn_ab(&[(f.clone(), v.clone()), (f, v)]).unwrap();
        assert_eq!((ab.rounds, ab.iterations), (2, 6));
        let fork = ab.fork_parent_cpu_ns.as_ref().unwrap();
        assert_eq!(
            (fork.min, fork.median, fork.max),
            (30_000.0, 40_000.0, 50_000.0)
        );
        assert_eq!(ab.vfork_parent_cpu_ns.as_ref().unwrap().median, 3_000.0);
        assert_eq!(ab.saving_ns, Some(37_000.0));
        assert!(ab.significant);
        assert!(spawn_ab(&[]).is_none());
    }

    /// Two loops of one side: the first's fork children cost 30, 40, 50 µs of parent CPU,
    /// the second's 130, 140, 150 µs (its rusage starts 100 µs of user time later, each
    /// child 100 µs dearer); vfork children 3 µs in both. Merged: one round from each loop,
    /// six children per side, the fork median the middle of all six (the mean of 50 and
    /// 130), not the first loop's 40.
    #[test]
    fn the_loops_of_a_side_are_merged_not_the_first_kept() {
        let vfork = || {
            let mut v = result();
            for (i, r) in v.records.iter_mut().enumerate() {
                let k = i as i64 + 1;
                r.parent = ru(100 + k, 200 + 2 * k, 10);
            }
            v
        };
        let first = result();
        let mut second = result();
        for (i, r) in second.records.iter_mut().enumerate() {
            let k = i as i64 + 1;
            r.parent.utime[1] += 100 * k;
        }
        let a = [(first, vfork())];
        let b = [(second, vfork())];
        let m = merged([&a[..], &b[..]]).unwrap();
        assert_eq!((m.rounds, m.iterations), (2, 6));
        let fork = m.fork_parent_cpu_ns.as_ref().unwrap();
        assert_eq!(
            (fork.min, fork.median, fork.max),
            (30_000.0, 90_000.0, 150_000.0)
        );
        assert_eq!(m.saving_ns, Some(87_000.0));
        // The first loop alone is what the merge replaces.
        assert_eq!(spawn_ab(&a).unwrap().saving_ns, Some(37_000.0));
        assert!(merged([&[][..], &[][..]]).is_none());
    }
}
