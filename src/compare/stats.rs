//! Two-sample statistics for BASE vs HEAD: the change of the median with a bootstrap interval,
//! the Mann–Whitney U test, and the split-half noise floor.
//!
//! In: two samples of one figure (per run or per fork). Out: [`Change`].
//!
//! Why these: run times are skewed (a few slow runs when a neighbour takes the CPU), so the
//! median and a rank test are robust where the mean and Welch's t-test are not (the same
//! reasons benchstat gives). The test and the bootstrap are [`crate::stats`]'s (a fixed seed,
//! so the same documents always give the same verdict).

use crate::stats;

/// The change of one figure from BASE to HEAD.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub base_n: usize,
    pub head_n: usize,
    pub base_median: f64,
    pub head_median: f64,
    /// (HEAD median / BASE median − 1) × 100.
    pub change_pct: f64,
    /// 95% percentile-bootstrap interval of that change, in %.
    pub ci95_pct: (f64, f64),
    /// Two-sided Mann–Whitney U p-value (exact without ties for small samples, else the
    /// normal approximation with tie and continuity corrections).
    pub p_value: f64,
    /// The split-half noise floor in %: the larger of the two sides' |median(odd half) /
    /// median(even half) − 1|, i.e. the change an A/A comparison of this very data shows.
    /// The halves are the odd and even runs (start-up: one value per run, runs interleaved in
    /// time), the odd and even interleaved loops (`compare --fork`), or the first and the
    /// second half of a single fork loop (drift over the loop).
    pub noise_floor_pct: f64,
    /// The interval excludes zero, p < 0.05 and |change| > the noise floor.
    pub significant: bool,
}

/// The median; NaN when empty (callers compare it with `<=`, which NaN fails).
fn median(v: &[f64]) -> f64 {
    stats::median(v).unwrap_or(f64::NAN)
}

/// Compares two samples, each value labelled with its half (0 or 1) for the noise floor; None
/// when either is empty or BASE's median is not positive.
pub fn change_halves(
    base: &[f64],
    base_half: &[u8],
    head: &[f64],
    head_half: &[u8],
) -> Option<Change> {
    let mut c = change(base, head)?;
    c.noise_floor_pct = halves(base, base_half).max(halves(head, head_half));
    c.significant = significant(&c);
    Some(c)
}

fn significant(c: &Change) -> bool {
    (c.ci95_pct.0 > 0.0 || c.ci95_pct.1 < 0.0)
        && c.p_value < 0.05
        && c.change_pct.abs() > c.noise_floor_pct
}

/// |median(half 1) / median(half 0) − 1| × 100 (0 when a half is empty).
pub fn halves(v: &[f64], half: &[u8]) -> f64 {
    let a: Vec<f64> = v
        .iter()
        .zip(half)
        .filter(|x| *x.1 == 0)
        .map(|x| *x.0)
        .collect();
    let b: Vec<f64> = v
        .iter()
        .zip(half)
        .filter(|x| *x.1 == 1)
        .map(|x| *x.0)
        .collect();
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (ma, mb) = (median(&a), median(&b));
    if ma <= 0.0 {
        return 0.0;
    }
    ((mb / ma) - 1.0).abs() * 100.0
}

/// Compares two samples (noise floor: odd vs even values); None when either is empty or
/// BASE's median is not positive.
pub fn change(base: &[f64], head: &[f64]) -> Option<Change> {
    if base.is_empty() || head.is_empty() {
        return None;
    }
    let (mb, mh) = (median(base), median(head));
    if mb <= 0.0 || !mb.is_finite() || !mh.is_finite() {
        return None;
    }
    let change_pct = (mh / mb - 1.0) * 100.0;
    // Widened to hold the change itself when the resampled percentiles do not.
    let (lo, hi) = stats::bootstrap_ratio(base, head);
    let ci95_pct = if lo.is_nan() || hi.is_nan() {
        (lo, hi)
    } else {
        stats::widen((lo, hi), change_pct)
    };
    let p_value = stats::mann_whitney_p(base, head);
    let noise_floor_pct = split_half(base).max(split_half(head));
    let mut c = Change {
        base_n: base.len(),
        head_n: head.len(),
        base_median: mb,
        head_median: mh,
        change_pct,
        ci95_pct,
        p_value,
        noise_floor_pct,
        significant: false,
    };
    c.significant = significant(&c);
    Some(c)
}

/// |median(odd) / median(even) − 1| × 100 of one side (0 with fewer than 2 values): runs are
/// interleaved in time, so the two halves differ only by noise.
pub fn split_half(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let even: Vec<f64> = v.iter().step_by(2).copied().collect();
    let odd: Vec<f64> = v.iter().skip(1).step_by(2).copied().collect();
    let (a, b) = (median(&even), median(&odd));
    if a <= 0.0 {
        return 0.0;
    }
    ((b / a) - 1.0).abs() * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_samples_are_not_different() {
        let a: Vec<f64> = (0..30).map(|i| (i * 7 % 13) as f64).collect();
        assert!(stats::mann_whitney_p(&a, &a) > 0.9);
        let c = change(&a, &a).unwrap();
        assert_eq!(c.change_pct, 0.0);
        assert!(!c.significant);
        assert!(c.ci95_pct.0 <= 0.0 && c.ci95_pct.1 >= 0.0);
    }

    #[test]
    fn a_clear_shift_is_significant_and_signed() {
        let a: Vec<f64> = (0..40).map(|i| 100.0 + (i % 5) as f64).collect();
        let b: Vec<f64> = a.iter().map(|v| v * 1.3).collect();
        let c = change(&a, &b).unwrap();
        assert!(c.significant, "{c:?}");
        assert!(c.change_pct > 25.0 && c.ci95_pct.0 > 0.0);
        assert!(c.p_value < 1e-6);
        let d = change(&b, &a).unwrap();
        assert!(d.significant && d.change_pct < 0.0 && d.ci95_pct.1 < 0.0);
    }

    #[test]
    fn split_half_noise_floor() {
        assert_eq!(split_half(&[10.0, 10.0, 10.0, 10.0]), 0.0);
        // Even runs 100, odd runs 110: 10%.
        assert!((split_half(&[100.0, 110.0, 100.0, 110.0]) - 10.0).abs() < 1e-9);
        assert_eq!(split_half(&[5.0]), 0.0);
        // Halves by label: first loop 100, second 120: 20%.
        let v = [100.0, 100.0, 120.0, 120.0];
        assert!((halves(&v, &[0, 0, 1, 1]) - 20.0).abs() < 1e-9);
        let c = change_halves(&v, &[0, 0, 1, 1], &[115.0; 4], &[0, 0, 1, 1]).unwrap();
        assert_eq!(c.noise_floor_pct, halves(&v, &[0, 0, 1, 1]));
        assert!(
            !c.significant,
            "a change inside the drift between loops: {c:?}"
        );
    }
}
