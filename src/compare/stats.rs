//! Two-sample statistics for BASE vs HEAD: the change of the median with a bootstrap interval,
//! the Mann–Whitney U test, and the split-half noise floor.
//!
//! In: two samples of one figure (per run or per fork). Out: [`Change`].
//!
//! Why these: run times are skewed (a few slow runs when a neighbour takes the CPU), so the
//! median and a rank test are robust where the mean and Welch's t-test are not (the same
//! reasons benchstat gives). Written by hand: no well-kept Rust crate offers the Mann–Whitney
//! U test (statrs has the distributions only), and the bootstrap is the fixed-seed xorshift of
//! [`crate::attribute::stats`], so the same documents always give the same verdict.

/// Bootstrap resamples of the ratio of medians.
pub const RESAMPLES: usize = 2000;

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

pub(crate) fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    median_sorted(&s)
}

fn median_sorted(s: &[f64]) -> f64 {
    let n = s.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
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
    let (lo, hi) = bootstrap_ratio(base, head);
    let ci95_pct = if lo.is_nan() || hi.is_nan() {
        (lo, hi)
    } else {
        (lo.min(change_pct), hi.max(change_pct))
    };
    let p_value = mann_whitney_p(base, head);
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

/// Percentile bootstrap of (median(HEAD*) / median(BASE*) − 1) × 100, each side resampled
/// with replacement on its own, fixed seed. Large samples (fork loops) are resampled at most
/// [`MAX_RESAMPLE_LEN`] values per side (a random subsample each time), which keeps 2000
/// resamples fast and makes the interval conservative, not narrower.
pub fn bootstrap_ratio(base: &[f64], head: &[f64]) -> (f64, f64) {
    let mut next = crate::attribute::stats::draws();
    let (lb, lh) = (
        base.len().min(MAX_RESAMPLE_LEN),
        head.len().min(MAX_RESAMPLE_LEN),
    );
    let mut sb = vec![0.0; lb];
    let mut sh = vec![0.0; lh];
    let mut out = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        for s in sb.iter_mut() {
            *s = base[(next() % base.len() as u64) as usize];
        }
        for s in sh.iter_mut() {
            *s = head[(next() % head.len() as u64) as usize];
        }
        sb.sort_by(|a, b| a.total_cmp(b));
        sh.sort_by(|a, b| a.total_cmp(b));
        let (mb, mh) = (median_sorted(&sb), median_sorted(&sh));
        if mb > 0.0 {
            out.push((mh / mb - 1.0) * 100.0);
        }
    }
    if out.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    out.sort_by(|a, b| a.total_cmp(b));
    let lo = out[(out.len() as f64 * 0.025) as usize];
    let hi = out[((out.len() as f64 * 0.975) as usize).min(out.len() - 1)];
    (lo, hi)
}

/// Per-side cap on the bootstrap's resample size.
pub const MAX_RESAMPLE_LEN: usize = 1000;

/// Two-sided p-value of the Mann–Whitney U test of "BASE and HEAD come from one distribution".
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    // Midranks over the pooled sample.
    let mut all: Vec<(f64, usize)> = a
        .iter()
        .map(|&v| (v, 0))
        .chain(b.iter().map(|&v| (v, 1)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let mut ranks = vec![0.0; n];
    let mut ties = false;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        for k in ranks.iter_mut().take(j + 1).skip(i) {
            *k = r;
        }
        let t = (j - i + 1) as f64;
        if t > 1.0 {
            ties = true;
            tie_term += t * t * t - t;
        }
        i = j + 1;
    }
    let r1: f64 = all
        .iter()
        .zip(&ranks)
        .filter(|(x, _)| x.1 == 0)
        .map(|(_, r)| r)
        .sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let (f1, f2) = (n1 as f64, n2 as f64);
    let mu = f1 * f2 / 2.0;
    if !ties && n1 * n2 <= 2500 {
        return exact_p(n1, n2, u1);
    }
    let nf = n as f64;
    let var = f1 * f2 / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = ((u1 - mu).abs() - 0.5).max(0.0) / var.sqrt();
    (2.0 * normal_sf(z)).min(1.0)
}

/// Exact two-sided p of U = u for samples of n1 and n2 without ties: the number of
/// arrangements with U ≤ min(u, n1·n2 − u), doubled, over C(n1 + n2, n1). Counted with the
/// recurrence f(m, n, u) = f(m − 1, n, u − n) + f(m, n − 1, u) (Mann & Whitney 1947).
fn exact_p(n1: usize, n2: usize, u: f64) -> f64 {
    let max_u = n1 * n2;
    let lo = u.min(max_u as f64 - u).floor() as usize;
    // counts[n][u] for the current m, built up m = 0..=n1.
    let mut prev: Vec<Vec<f64>> = (0..=n2)
        .map(|_| {
            let mut v = vec![0.0; max_u + 1];
            v[0] = 1.0;
            v
        })
        .collect();
    for m in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = vec![vec![0.0; max_u + 1]; n2 + 1];
        cur[0][0] = 1.0;
        for n in 1..=n2 {
            for uu in 0..=m * n {
                let a = if uu >= n { prev[n][uu - n] } else { 0.0 };
                let b = cur[n - 1][uu];
                cur[n][uu] = a + b;
            }
        }
        prev = cur;
    }
    let dist = &prev[n2];
    let total: f64 = dist.iter().sum();
    let tail: f64 = dist.iter().take(lo + 1).sum();
    (2.0 * tail / total).min(1.0)
}

/// Upper tail of the standard normal (Abramowitz & Stegun 7.1.26 on erfc; error < 1.5e-7).
fn normal_sf(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    0.5 * poly * (-x * x).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_p_matches_tables() {
        // n1 = n2 = 5, complete separation: p = 2 / C(10, 5) = 2/252.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0];
        let b = [6.0, 7.0, 8.0, 9.0, 10.0];
        assert!((mann_whitney_p(&a, &b) - 2.0 / 252.0).abs() < 1e-12);
        assert!((mann_whitney_p(&b, &a) - 2.0 / 252.0).abs() < 1e-12);
        // U = 3 for 4 vs 4: P(U <= 3) = (1 + 1 + 2 + 3) / C(8, 4) = 7/70, two-sided 0.2
        // (scipy.stats.mannwhitneyu([1,2,4,6], [3,5,7,8], method="exact").pvalue = 0.2).
        let a = [1.0, 2.0, 4.0, 6.0];
        let b = [3.0, 5.0, 7.0, 8.0];
        let p = mann_whitney_p(&a, &b);
        assert!((p - 0.2).abs() < 1e-12, "{p}");
    }

    #[test]
    fn identical_samples_are_not_different() {
        let a: Vec<f64> = (0..30).map(|i| (i * 7 % 13) as f64).collect();
        assert!(mann_whitney_p(&a, &a) > 0.9);
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
    fn normal_approximation_with_ties() {
        // Many ties: normal approximation; same data -> p ~ 1; shifted -> tiny.
        let a: Vec<f64> = (0..200).map(|i| (i % 4) as f64).collect();
        let b: Vec<f64> = (0..200).map(|i| (i % 4 + 2) as f64).collect();
        assert!(mann_whitney_p(&a, &a) > 0.9);
        assert!(mann_whitney_p(&a, &b) < 1e-10);
        assert!((normal_sf(1.959_964) - 0.025).abs() < 1e-4);
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
