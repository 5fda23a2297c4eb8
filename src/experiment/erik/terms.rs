//! Least squares with one coefficient per term, saying which terms the design identifies.
//!
//! In: the design, one row of regressors per measured point (an intercept column and one
//! column per term), and each point's raw per-fork samples. Out: a [`Design`] (which columns
//! are identifiable, the rank, the condition number) and a [`TermFit`]: each identifiable
//! term's coefficient with its 95% percentile-bootstrap interval, widened to hold the
//! coefficient when it does not (the points' samples
//! resampled with replacement, medians recomputed, the model refitted, with the fixed-seed
//! generator of [`crate::stats::draws`]), `None` for a term the points cannot
//! identify, and R².
//!
//! Why not [`super::fit::ols`]: that one gives up when any column is a combination of the
//! others, and the per-kind model has columns that some plans cannot separate (in series A and
//! B every kind of VMA grows with one padding variable). Here the columns are scaled to unit
//! length and XᵀX is diagonalised (cyclic Jacobi: the matrices are at most ~15×15; nalgebra's
//! `symmetric_eigen` 0.33 gave pseudo-inverse solutions far from the normal equations' on
//! some well-conditioned random designs (about 1 in 500), where this one agrees with them);
//! eigenvalues below [`NULL_RATIO`] of the largest span the design's null space. Coefficient j
//! is identifiable (estimable: the same in every least-squares solution) exactly when the unit
//! vector e_j is orthogonal to that null space, i.e. column j is not a combination of the
//! others. The identifiable coefficients are then read off the pseudo-inverse solution, which
//! is one of the least-squares solutions; the others are reported as not identifiable, never
//! as a number.

use crate::stats::{self, median_mut, resampled_medians};

/// An eigenvalue of the scaled XᵀX below this fraction of the largest is treated as zero: a
/// singular value below 1e-4 of the largest, a direction the points do not move along.
pub const NULL_RATIO: f64 = 1e-8;

/// What the rows say about the columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Design {
    /// Per column: can its coefficient be estimated from these rows?
    pub identifiable: Vec<bool>,
    /// Per column: all zero over the rows (then it is not identifiable either).
    pub zero: Vec<bool>,
    /// Rank of the design (columns scaled to unit length).
    pub rank: usize,
    /// Condition number (largest over smallest singular value) of the scaled design over its
    /// non-null directions: how much the identifiable coefficients amplify noise.
    pub condition: f64,
    /// The pseudo-inverse, one row per column (p × n): β = P y.
    pinv: Vec<Vec<f64>>,
}

/// A fitted model: identifiable terms only.
#[derive(Debug, Clone, PartialEq)]
pub struct TermFit {
    pub coef: Vec<Option<f64>>,
    pub ci: Vec<Option<[f64; 2]>>,
    /// R² of the fit to the points' medians.
    pub r2: f64,
}

/// Eigenvalues and eigenvectors (`vectors[k]` is the k-th) of the symmetric matrix `a`.
pub fn eigen(mut a: Vec<Vec<f64>>) -> (Vec<f64>, Vec<Vec<f64>>) {
    let n = a.len();
    let mut v: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..n).map(|j| f64::from(u8::from(i == j))).collect())
        .collect();
    let norm: f64 = a.iter().flatten().map(|x| x * x).sum();
    for _ in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i][j] * a[i][j])
            .sum();
        if off <= 1e-30 * norm {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                if a[p][q] == 0.0 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for row in a.iter_mut() {
                    let (kp, kq) = (row[p], row[q]);
                    row[p] = c * kp - s * kq;
                    row[q] = s * kp + c * kq;
                }
                let (rp, rq) = (a[p].clone(), a[q].clone());
                a[p] = rp.iter().zip(&rq).map(|(x, y)| c * x - s * y).collect();
                a[q] = rp.iter().zip(&rq).map(|(x, y)| s * x + c * y).collect();
                for row in v.iter_mut() {
                    let (kp, kq) = (row[p], row[q]);
                    row[p] = c * kp - s * kq;
                    row[q] = s * kp + c * kq;
                }
            }
        }
    }
    let values = (0..n).map(|i| a[i][i]).collect();
    let vectors = (0..n).map(|k| (0..n).map(|i| v[i][k]).collect()).collect();
    (values, vectors)
}

/// Analyses the rows `x` (n × p, all the same length). None when there are no rows or
/// columns, or a value is not finite.
pub fn design(x: &[Vec<f64>]) -> Option<Design> {
    let p = x.first()?.len();
    if p == 0
        || x.iter()
            .any(|r| r.len() != p || r.iter().any(|v| !v.is_finite()))
    {
        return None;
    }
    let scale: Vec<f64> = (0..p)
        .map(|j| x.iter().map(|r| r[j] * r[j]).sum::<f64>().sqrt())
        .collect();
    let zero: Vec<bool> = scale.iter().map(|&s| s == 0.0).collect();
    let xs: Vec<Vec<f64>> = x
        .iter()
        .map(|r| {
            r.iter()
                .zip(&scale)
                .map(|(v, &s)| if s > 0.0 { v / s } else { 0.0 })
                .collect()
        })
        .collect();
    let g: Vec<Vec<f64>> = (0..p)
        .map(|i| {
            (0..p)
                .map(|j| xs.iter().map(|r| r[i] * r[j]).sum())
                .collect()
        })
        .collect();
    let (values, vectors) = eigen(g);
    let max = values.iter().copied().fold(0.0, f64::max);
    let kept: Vec<usize> = (0..p)
        .filter(|&k| max > 0.0 && values[k] > NULL_RATIO * max)
        .collect();
    let null: Vec<usize> = (0..p).filter(|k| !kept.contains(k)).collect();
    // e_j's squared length in the null space: 0 for an identifiable column, of order 1
    // otherwise (rounding leaves ~1e-16 on the one side; a combination, ≥ 1/p on the other).
    let identifiable: Vec<bool> = (0..p)
        .map(|j| !zero[j] && null.iter().map(|&k| vectors[k][j].powi(2)).sum::<f64>() < 1e-6)
        .collect();
    let min = kept
        .iter()
        .map(|&k| values[k])
        .fold(f64::INFINITY, f64::min);
    let condition = if kept.is_empty() {
        f64::INFINITY
    } else {
        (max / min).sqrt()
    };
    // β_scaled = Σ_kept v_k v_kᵀ Xsᵀ y / λ_k; β_j = β_scaled_j / scale_j.
    let pinv: Vec<Vec<f64>> = (0..p)
        .map(|j| {
            xs.iter()
                .map(|row| {
                    if zero[j] {
                        return 0.0;
                    }
                    let b: f64 = kept
                        .iter()
                        .map(|&k| {
                            let vx: f64 = vectors[k].iter().zip(row).map(|(a, b)| a * b).sum();
                            vectors[k][j] * vx / values[k]
                        })
                        .sum();
                    b / scale[j]
                })
                .collect()
        })
        .collect();
    Some(Design {
        identifiable,
        zero,
        rank: kept.len(),
        condition,
        pinv,
    })
}

impl Design {
    /// The least-squares coefficients of `y` (the pseudo-inverse solution: every column's,
    /// meaningful only where [`Design::identifiable`]).
    pub fn solve(&self, y: &[f64]) -> Vec<f64> {
        self.pinv
            .iter()
            .map(|r| r.iter().zip(y).map(|(a, b)| a * b).sum())
            .collect()
    }
}

/// R² of `coef` on the rows `x` against `y` (1 when `y` does not vary).
pub fn r_squared(x: &[Vec<f64>], y: &[f64], coef: &[f64]) -> f64 {
    stats::r_squared(x, y, coef).unwrap_or(1.0)
}

/// Fits the medians of each point's `samples` on the rows of `d` (analysed from `x`), with
/// `rounds` bootstrap rounds. None when a point has no samples or the counts differ.
pub fn fit_terms(
    x: &[Vec<f64>],
    d: &Design,
    samples: &[Vec<f64>],
    rounds: usize,
) -> Option<TermFit> {
    if samples.len() != x.len() || samples.iter().any(Vec::is_empty) {
        return None;
    }
    let medians: Vec<f64> = samples.iter().map(|s| median_mut(&mut s.clone())).collect();
    let beta = d.solve(&medians);
    let r2 = r_squared(x, &medians, &beta);
    let mut resample = resampled_medians();
    let mut per: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); beta.len()];
    for _ in 0..rounds.max(1) {
        let y = resample(samples);
        for (acc, b) in per.iter_mut().zip(d.solve(&y)) {
            acc.push(b);
        }
    }
    let mut coef = Vec::new();
    let mut ci = Vec::new();
    for (j, mut v) in per.into_iter().enumerate() {
        if !d.identifiable[j] {
            coef.push(None);
            ci.push(None);
            continue;
        }
        coef.push(Some(beta[j]));
        let (lo, hi) = stats::interval95_around(&mut v, beta[j]);
        ci.push(Some([lo, hi]));
    }
    Some(TermFit { coef, ci, r2 })
}

#[cfg(test)]
#[path = "terms_tests.rs"]
mod tests;
