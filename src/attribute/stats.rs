//! Statistics over repeated runs: median, min, max and a 95% confidence interval of the median.
//!
//! The interval is [`stats::median_interval`]'s: a percentile bootstrap with a fixed-seed
//! generator, so the same runs always give the same interval; above
//! [`stats::BOOTSTRAP_MAX`] values (fork loops) the order-statistic interval of the median.

use crate::stats;

/// Summary of one figure over runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// 95% bootstrap confidence interval of the median.
    pub ci95: (f64, f64),
}

/// Summarises `values` (None when empty): the median and its 95% interval of
/// [`stats::median_interval`].
pub fn summarize(values: &[f64]) -> Option<Summary> {
    if values.is_empty() {
        return None;
    }
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(f64::total_cmp);
    Some(Summary {
        n: v.len(),
        median: stats::median_sorted(&v),
        min: v[0],
        max: v[v.len() - 1],
        ci95: stats::median_interval(&v),
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
