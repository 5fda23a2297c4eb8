//! Statistics over repeated runs: median, min, max and a 95% confidence interval of the median.
//!
//! The interval is a percentile bootstrap (2000 resamples) with a fixed-seed generator, so the
//! same runs always give the same interval; above [`BOOTSTRAP_MAX`] values (fork loops) it is
//! the order-statistic interval of the median, which costs one sort. Written by hand: it is twenty lines, and the
//! statistics crates' bootstrap helpers pull in a random-number stack we do not otherwise need.

use serde::{Deserialize, Serialize};

/// Summary of one figure over runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// 95% bootstrap confidence interval of the median.
    pub ci95: (f64, f64),
}

fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Above this many values the interval comes from order statistics, not the bootstrap.
pub const BOOTSTRAP_MAX: usize = 1000;

/// Summarises `values` (None when empty).
/// The bootstrap's draws: xorshift64* from a fixed seed, so every interval ldcost prints is
/// reproducible from the same data (the tests pin them).
pub fn draws() -> impl FnMut() -> u64 {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// The median (the mean of the middle two for an even count); None when empty. Not
/// `summarize`, whose own bootstrap would run inside every resample of its callers.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

pub fn summarize(values: &[f64]) -> Option<Summary> {
    if values.is_empty() {
        return None;
    }
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let median = median_sorted(&v);
    if v.len() > BOOTSTRAP_MAX {
        // Many values (a fork loop's iterations): the distribution-free interval of the median
        // from order statistics (the ranks n/2 ∓ 1.96·√n/2 of a Binomial(n, ½)), which the
        // bootstrap approaches for large n and which costs one sort instead of 2000.
        let n = v.len() as f64;
        let half = 1.96 * n.sqrt() / 2.0;
        let lo = ((n / 2.0 - half).floor().max(0.0)) as usize;
        let hi = ((n / 2.0 + half).ceil() as usize).min(v.len() - 1);
        return Some(Summary {
            n: v.len(),
            median,
            min: v[0],
            max: v[v.len() - 1],
            ci95: (v[lo], v[hi]),
        });
    }
    let mut next = draws();
    let mut meds = Vec::with_capacity(2000);
    let mut sample = vec![0.0; v.len()];
    for _ in 0..2000 {
        for s in sample.iter_mut() {
            *s = v[(next() % v.len() as u64) as usize];
        }
        sample.sort_by(|a, b| a.total_cmp(b));
        meds.push(median_sorted(&sample));
    }
    meds.sort_by(|a, b| a.total_cmp(b));
    let lo = meds[(meds.len() as f64 * 0.025) as usize];
    let hi = meds[((meds.len() as f64 * 0.975) as usize).min(meds.len() - 1)];
    Some(Summary {
        n: v.len(),
        median,
        min: v[0],
        max: v[v.len() - 1],
        // Percentiles of resampled medians need not hold the median itself: widened to it
        // (every interval ldcost prints contains its estimate).
        ci95: (lo.min(median), hi.max(median)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_samples_use_order_statistics_and_agree_with_the_bootstrap() {
        // 1001 values 0..=1000: the median is 500, the rank interval ±31.
        let v: Vec<f64> = (0..=1000).map(|i| i as f64).collect();
        let big = summarize(&v).unwrap();
        assert_eq!(big.median, 500.0);
        assert_eq!(big.ci95, (469.0, 532.0));
        // The bootstrap on the first 1000 gives nearly the same width.
        let boot = summarize(&v[..1000]).unwrap();
        let (wb, wo) = (boot.ci95.1 - boot.ci95.0, big.ci95.1 - big.ci95.0);
        assert!(
            (wb - wo).abs() <= 0.35 * wo,
            "bootstrap {wb}, order statistics {wo}"
        );
        // 100000 values: fast, and the interval is tight around the median.
        let v: Vec<f64> = (0..100_000).map(|i| (i % 997) as f64).collect();
        let s = summarize(&v).unwrap();
        assert!(s.ci95.0 <= s.median && s.median <= s.ci95.1);
    }

    #[test]
    fn median_min_max() {
        let s = summarize(&[5.0, 1.0, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.n), (3.0, 1.0, 5.0, 5));
        assert!(s.ci95.0 <= 3.0 && s.ci95.1 >= 3.0);
        assert!(s.ci95.0 >= 1.0 && s.ci95.1 <= 5.0);
    }

    #[test]
    fn constant_data_has_a_point_interval() {
        let s = summarize(&[7.0; 9]).unwrap();
        assert_eq!(s.ci95, (7.0, 7.0));
    }

    #[test]
    fn interval_narrows_with_more_runs() {
        let few: Vec<f64> = (0..5).map(|i| (i * 37 % 11) as f64).collect();
        let many: Vec<f64> = (0..200).map(|i| (i * 37 % 11) as f64).collect();
        let a = summarize(&few).unwrap();
        let b = summarize(&many).unwrap();
        assert!(b.ci95.1 - b.ci95.0 <= a.ci95.1 - a.ci95.0);
    }

    /// The fixed seed: 201 distinct values, where the interval's ends depend on which
    /// resamples were drawn (one seed more or less moves them), pinned to the values this
    /// generator gives; the order of the input does not matter.
    #[test]
    fn deterministic() {
        let v: Vec<f64> = (0..201u32)
            .map(|i| f64::from(i * 7919 % 1000) + f64::from(i) / 1000.0)
            .collect();
        let s = summarize(&v).unwrap();
        assert_eq!(s.median, 498.142);
        assert_eq!(s.ci95, (436.044, 573.067), "the bootstrap's draws changed");
        let mut reversed = v.clone();
        reversed.reverse();
        assert_eq!(summarize(&reversed).unwrap(), s);
        assert!(summarize(&[]).is_none());
    }
}
