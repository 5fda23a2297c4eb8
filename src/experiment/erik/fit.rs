//! Least squares of fork cost on footprint and library count, with bootstrap intervals.
//!
//! In: one row of regressors per measured point (intercept, library count, VMAs, resident
//! anonymous pages) and that point's raw per-fork samples. Out: a [`Fit`]: the coefficients of
//! the model fitted to the points' medians, their 95% percentile-bootstrap intervals, widened to
//! hold the coefficient when they do not (the samples of every point resampled with
//! replacement, medians recomputed, the model refitted;
//! the fixed-seed generator of [`crate::attribute::stats::draws`], so the same samples always
//! give the same intervals) and R².
//!
//! The linear algebra is by hand: the models have at most five columns, so the normal
//! equations (XᵀX) β = Xᵀy are a 5×5 system that Gaussian elimination with partial pivoting
//! solves exactly enough once the columns are scaled to unit size; a linear-algebra crate
//! would be a dependency for forty lines. A column that is constant over the points, or a
//! combination of others (not identifiable from this design), makes the system singular, and
//! the fit is then `None`, never a made-up coefficient.

use crate::attribute::stats::draws;

/// A fitted model.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// The coefficient of each column, in the units of y per unit of the column.
    pub coef: Vec<f64>,
    /// 95% bootstrap interval of each coefficient.
    pub ci: Vec<[f64; 2]>,
    /// R² of the fit to the points' medians.
    pub r2: f64,
}

/// The median of `v` (reordered in place); NaN when empty.
pub fn median(v: &mut [f64]) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    let (_, hi, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
    let hi = *hi;
    if n % 2 == 1 {
        return hi;
    }
    let lo = v[..n / 2].iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo + hi) / 2.0
}

/// Ordinary least squares of `y` on the rows `x`: the coefficients and R², or None when the
/// columns are not linearly independent over these rows (or there are fewer rows than columns).
pub fn ols(x: &[Vec<f64>], y: &[f64]) -> Option<(Vec<f64>, f64)> {
    let p = x.first()?.len();
    if p == 0 || x.len() < p || x.len() != y.len() || x.iter().any(|r| r.len() != p) {
        return None;
    }
    // Scale each column to a maximum magnitude of 1 so that pivots compare fairly.
    let scale: Vec<f64> = (0..p)
        .map(|j| x.iter().map(|r| r[j].abs()).fold(0.0, f64::max))
        .collect();
    if scale.iter().any(|&s| s == 0.0 || !s.is_finite()) {
        return None;
    }
    let mut a = vec![vec![0.0; p + 1]; p];
    for (row, &yi) in x.iter().zip(y) {
        for i in 0..p {
            let xi = row[i] / scale[i];
            for j in 0..p {
                a[i][j] += xi * row[j] / scale[j];
            }
            a[i][p] += xi * yi;
        }
    }
    let beta = solve(a)?;
    let coef: Vec<f64> = beta.iter().zip(&scale).map(|(b, s)| b / s).collect();
    let mean = y.iter().sum::<f64>() / y.len() as f64;
    let (mut ss_res, mut ss_tot) = (0.0, 0.0);
    for (row, &yi) in x.iter().zip(y) {
        let fitted: f64 = row.iter().zip(&coef).map(|(a, b)| a * b).sum();
        ss_res += (yi - fitted).powi(2);
        ss_tot += (yi - mean).powi(2);
    }
    let r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    Some((coef, r2))
}

/// Gaussian elimination with partial pivoting on the augmented matrix `a` (p × p+1).
fn solve(mut a: Vec<Vec<f64>>) -> Option<Vec<f64>> {
    let p = a.len();
    for col in 0..p {
        let pivot = (col..p).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        // Relative to the scaled columns (entries of order 1 × rows): a pivot this small means
        // the column is a combination of the others.
        if a[pivot][col].abs() < 1e-9 * (p as f64) {
            return None;
        }
        a.swap(col, pivot);
        let pivot_row = a[col].clone();
        for (r, row) in a.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                for (x, y) in row.iter_mut().zip(&pivot_row).skip(col) {
                    *x -= f * y;
                }
            }
        }
    }
    Some((0..p).map(|i| a[i][p] / a[i][i]).collect())
}

/// One bootstrap round's response: each point's samples drawn with replacement (the fixed-seed
/// draws of [`draws`]), and their median. Each call is the next round.
pub fn resampled_medians() -> impl FnMut(&[Vec<f64>]) -> Vec<f64> {
    let mut next = draws();
    let mut buf = Vec::new();
    move |samples| {
        samples
            .iter()
            .map(|s| {
                buf.clear();
                buf.extend((0..s.len()).map(|_| s[(next() % s.len() as u64) as usize]));
                median(&mut buf)
            })
            .collect()
    }
}

/// Fits y = median of each point's `samples` on the rows `x`, with `rounds` bootstrap rounds
/// (at least 1). None when the model is not identifiable or a point has no samples.
pub fn fit(x: &[Vec<f64>], samples: &[Vec<f64>], rounds: usize) -> Option<Fit> {
    if samples.iter().any(Vec::is_empty) || samples.len() != x.len() {
        return None;
    }
    let medians: Vec<f64> = samples.iter().map(|s| median(&mut s.clone())).collect();
    let (coef, r2) = ols(x, &medians)?;
    let mut resample = resampled_medians();
    let mut per_coef: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); coef.len()];
    for _ in 0..rounds.max(1) {
        let y = resample(samples);
        if let Some((b, _)) = ols(x, &y) {
            for (acc, v) in per_coef.iter_mut().zip(b) {
                acc.push(v);
            }
        }
    }
    let ci = per_coef
        .into_iter()
        .zip(&coef)
        .map(|(mut v, &c)| {
            if v.is_empty() {
                return [c, c];
            }
            interval(&mut v, c)
        })
        .collect();
    Some(Fit { coef, ci, r2 })
}

/// The 95% percentile interval of bootstrap replicates `v` (sorted here, not empty) of the
/// estimate `c`, widened to hold `c` when it does not: a percentile interval need not hold its
/// point (skewed resamples of few points), and every interval ldcost prints contains its
/// estimate.
pub(crate) fn interval(v: &mut [f64], c: f64) -> [f64; 2] {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() as f64 * q) as usize).min(v.len() - 1)];
    [at(0.025).min(c), at(0.975).max(c)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_holds_its_estimate() {
        let mut v: Vec<f64> = (0..200).map(|i| 10.0 + f64::from(i) * 0.05).collect();
        // Inside: the 2.5th and 97.5th percentiles (replicates 5 and 195 of 200).
        assert_eq!(interval(&mut v.clone(), 15.0), [10.25, 19.75]);
        // Below every replicate (a skewed bootstrap): the interval reaches down to it.
        assert_eq!(interval(&mut v.clone(), 4.0), [4.0, 19.75]);
        v.reverse();
        assert_eq!(interval(&mut v, 30.0), [10.25, 30.0]);
    }

    #[test]
    fn recovers_an_exact_plane() {
        // y = 3 + 2·a + 0.5·b over points where a and b vary independently.
        let x: Vec<Vec<f64>> = [
            (0.0, 10.0),
            (1.0, 40.0),
            (5.0, 20.0),
            (7.0, 90.0),
            (2.0, 2.0),
        ]
        .iter()
        .map(|&(a, b)| vec![1.0, a, b])
        .collect();
        let y: Vec<f64> = x.iter().map(|r| 3.0 + 2.0 * r[1] + 0.5 * r[2]).collect();
        let (c, r2) = ols(&x, &y).unwrap();
        for (got, want) in c.iter().zip([3.0, 2.0, 0.5]) {
            assert!((got - want).abs() < 1e-9, "{c:?}");
        }
        assert!((r2 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn collinear_columns_are_not_identifiable() {
        // b = 2·a at every point: no unique answer, so no answer.
        let x: Vec<Vec<f64>> = (0..6)
            .map(|i| vec![1.0, i as f64, 2.0 * i as f64])
            .collect();
        let y: Vec<f64> = (0..6).map(|i| i as f64).collect();
        assert!(ols(&x, &y).is_none());
        // A constant column beside the intercept, too; and too few rows.
        let x: Vec<Vec<f64>> = (0..4).map(|i| vec![1.0, 5.0, i as f64]).collect();
        assert!(ols(&x, &[1.0, 2.0, 3.0, 4.0]).is_none());
        assert!(ols(&[vec![1.0, 2.0]], &[1.0]).is_none());
    }

    #[test]
    fn bootstrap_interval_brackets_the_slope_and_shrinks_with_noise() {
        // Five points on y = 10 + 3x, each with samples spread ±1 (quiet) or ±20 (noisy).
        let x: Vec<Vec<f64>> = (0..5).map(|i| vec![1.0, i as f64 * 10.0]).collect();
        let spread = |w: f64| -> Vec<Vec<f64>> {
            (0..5)
                .map(|i| {
                    (0..101)
                        .map(|j| 10.0 + 30.0 * i as f64 + w * ((j * 37 % 101) as f64 / 50.0 - 1.0))
                        .collect()
                })
                .collect()
        };
        let quiet = fit(&x, &spread(1.0), 300).unwrap();
        let noisy = fit(&x, &spread(20.0), 300).unwrap();
        assert!((quiet.coef[1] - 3.0).abs() < 1e-6, "{quiet:?}");
        for f in [&quiet, &noisy] {
            assert!(f.ci[1][0] <= f.coef[1] && f.coef[1] <= f.ci[1][1], "{f:?}");
        }
        let width = |f: &Fit| f.ci[1][1] - f.ci[1][0];
        assert!(width(&noisy) > 5.0 * width(&quiet), "{quiet:?} {noisy:?}");
        assert_eq!(fit(&x, &spread(20.0), 300).unwrap(), noisy, "fixed seed");
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }
}
