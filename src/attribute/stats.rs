//! Statistics over repeated runs: median, min, max and a 95% confidence interval of the median.
//!
//! The interval is a percentile bootstrap (2000 resamples) with a fixed-seed generator, so the
//! same runs always give the same interval. Written by hand: it is twenty lines, and the
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

/// Summarises `values` (None when empty).
pub fn summarize(values: &[f64]) -> Option<Summary> {
    if values.is_empty() {
        return None;
    }
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let median = median_sorted(&v);
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
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
        ci95: (lo, hi),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn deterministic() {
        let v = [3.0, 9.0, 1.0, 4.0, 4.0, 8.0];
        assert_eq!(summarize(&v), summarize(&v));
        assert!(summarize(&[]).is_none());
    }
}
