//! The lazy-binding A/B: the probe's children alternately call `exit` through the GOT (so
//! ld.so binds it in each child) and directly; the difference of the two medians is what the
//! binding costs each child.

use super::per_fork::with_prev;
use crate::attribute::stats::{summarize, Summary};
use crate::record::fork::ProbeResult;

/// The interleaved A/B: children calling `exit` through the GOT (binding it) vs directly.
#[derive(Debug, Clone, PartialEq)]
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

/// Even iterations went through the GOT, odd ones called libc's exit directly.
pub fn lazy_binding(res: &ProbeResult) -> LazyBinding {
    merged([res])
}

/// The A/B of several fork loops of one side as one (`compare` runs a side's forks in
/// interleaved loops, each with its own A/B): every child of every loop, each loop's even and
/// odd iterations split as [`lazy_binding`] splits one loop's.
pub fn merged<'a>(loops: impl IntoIterator<Item = &'a ProbeResult>) -> LazyBinding {
    let (mut got, mut direct) = (Vec::new(), Vec::new());
    let (mut got_f, mut direct_f) = (Vec::new(), Vec::new());
    let mut iterations = 0;
    for res in loops {
        iterations += res.records.len() as u64;
        for (i, (_, r)) in with_prev(res).iter().enumerate() {
            let cpu = (r.child.user_ns() + r.child.sys_ns()) as f64;
            if i % 2 == 0 {
                got.push(cpu);
                got_f.push(r.child.minflt as f64);
            } else {
                direct.push(cpu);
                direct_f.push(r.child.minflt as f64);
            }
        }
    }
    let a = summarize(&got);
    let b = summarize(&direct);
    let (cost_ns, significant) = match (&a, &b) {
        (Some(a), Some(b)) => (
            Some(a.median - b.median),
            a.ci95.0 > b.ci95.1 || b.ci95.0 > a.ci95.1,
        ),
        _ => (None, false),
    };
    LazyBinding {
        iterations,
        through_got_child_cpu_ns: a,
        direct_child_cpu_ns: b,
        through_got_child_faults: summarize(&got_f),
        direct_child_faults: summarize(&direct_f),
        cost_ns,
        significant,
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{result, ru};
    use super::*;

    #[test]
    fn lazy_ab_splits_even_and_odd() {
        // Even iterations (0, 2) through the GOT: 65 and 67 µs of child CPU, median 66; the
        // odd one (1) direct: made 35 µs. A swapped split or a flipped sign fails.
        let mut r = result();
        r.records[1].child = ru(5, 30, 40);
        let l = lazy_binding(&r);
        assert_eq!(l.iterations, 3);
        assert_eq!(l.through_got_child_cpu_ns.unwrap().median, 66_000.0);
        assert_eq!(l.direct_child_cpu_ns.unwrap().median, 35_000.0);
        assert_eq!(l.cost_ns, Some(31_000.0));
    }

    /// Two loops: the first as above (GOT 65, 67 µs; direct 35 µs), the second with every
    /// child at 100 µs except its odd one (direct) at 40 µs. Merged: GOT 65, 67, 100, 100
    /// (median 83.5), direct 35 and 40 (median 37.5); each loop's parity is its own, so the
    /// second loop's first child counts through the GOT though the first loop had 3.
    #[test]
    fn the_loops_of_a_side_are_merged_not_the_first_kept() {
        let mut a = result();
        a.records[1].child = ru(5, 30, 40);
        let mut b = result();
        for r in b.records.iter_mut() {
            r.child = ru(5, 95, 40);
        }
        b.records[1].child = ru(5, 35, 40);
        let l = merged([&a, &b]);
        assert_eq!(l.iterations, 6);
        assert_eq!(l.through_got_child_cpu_ns.unwrap().median, 83_500.0);
        assert_eq!(l.direct_child_cpu_ns.unwrap().median, 37_500.0);
        assert_eq!(l.cost_ns, Some(46_000.0));
        assert_eq!(lazy_binding(&a).cost_ns, Some(31_000.0));
    }
}
