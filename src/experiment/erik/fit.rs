//! Least squares of fork cost on footprint and library count, with bootstrap intervals.
//!
//! In: one row of regressors per measured point (intercept, library count, VMAs, resident
//! anonymous pages) and that point's raw per-fork samples. Out: a [`Fit`]: the coefficients of
//! the model fitted to the points' medians, their 95% percentile-bootstrap intervals, widened to
//! hold the coefficient when they do not (the samples of every point resampled with
//! replacement, medians recomputed, the model refitted;
//! the fixed-seed generator of [`crate::stats::draws`], so the same samples always
//! give the same intervals) and R².
//!
//! The solve is [`crate::stats::least_squares`]. A column that is constant over the points, or
//! a combination of others (not identifiable from this design), makes the system singular,
//! and the fit is then `None`, never a made-up coefficient.

use crate::stats::{self, median_mut, resampled_medians, Singular};

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

/// Ordinary least squares of `y` on the rows `x`: the coefficients and R², or None when the
/// columns are not linearly independent over these rows (or there are fewer rows than columns).
/// Singular: a pivot of the scaled normal equations below 1e-9 × the number of columns (their
/// entries are of order 1 × rows).
pub fn ols(x: &[Vec<f64>], y: &[f64]) -> Option<(Vec<f64>, f64)> {
    let p = x.first()?.len();
    if x.iter().any(|r| r.len() != p) {
        return None;
    }
    let cols: Vec<usize> = (0..p).collect();
    let coef = stats::least_squares(x, y, &cols, Singular::PivotBelow(1e-9 * p as f64))?;
    let r2 = stats::r_squared(x, y, &coef).unwrap_or(1.0);
    Some((coef, r2))
}

/// Fits y = median of each point's `samples` on the rows `x`, with `rounds` bootstrap rounds
/// (at least 1). None when the model is not identifiable or a point has no samples.
pub fn fit(x: &[Vec<f64>], samples: &[Vec<f64>], rounds: usize) -> Option<Fit> {
    if samples.iter().any(Vec::is_empty) || samples.len() != x.len() {
        return None;
    }
    let medians: Vec<f64> = samples.iter().map(|s| median_mut(&mut s.clone())).collect();
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
            let (lo, hi) = stats::interval95_around(&mut v, c);
            [lo, hi]
        })
        .collect();
    Some(Fit { coef, ci, r2 })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
