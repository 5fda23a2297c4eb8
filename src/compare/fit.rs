//! Non-negative least squares for the attribution's unit costs.
//!
//! In: points (a row of regressors per observation: counts such as relocations, lookups,
//! probes, objects) and the measured times. Out: one coefficient per regressor, each ≥ 0 (a
//! cost), and the fit's R². Why non-negative: a unit cost below zero ("a probe saves 3 ns")
//! is a collinearity artefact, never a cost; and why so small: at most a handful of
//! regressors, so every subset of them is solved by ordinary least squares and the best
//! feasible subset is the NNLS optimum (the NNLS solution is the unconstrained least-squares
//! solution on its set of positive coefficients).

/// A fitted linear model.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearFit {
    /// One per regressor; 0 for a regressor the fit left out.
    pub coef: Vec<f64>,
    /// 1 − SSE / SST (None with fewer than two distinct times).
    pub r_squared: Option<f64>,
    pub points: usize,
}

/// Solves the normal equations of the columns in `cols` (each scaled to unit maximum);
/// None when they are singular (collinear columns, or a column of zeros).
fn least_squares(x: &[Vec<f64>], y: &[f64], cols: &[usize]) -> Option<Vec<f64>> {
    let k = cols.len();
    let scale: Vec<f64> = cols
        .iter()
        .map(|&c| x.iter().map(|r| r[c].abs()).fold(0.0, f64::max))
        .collect();
    if scale.contains(&0.0) || x.len() < k {
        return None;
    }
    // A = XᵀX, b = Xᵀy on the scaled columns.
    let mut a = vec![vec![0.0; k + 1]; k];
    for (row, &yi) in x.iter().zip(y) {
        for i in 0..k {
            let xi = row[cols[i]] / scale[i];
            for j in 0..k {
                a[i][j] += xi * row[cols[j]] / scale[j];
            }
            a[i][k] += xi * yi;
        }
    }
    let norm = (0..k).map(|i| a[i][i]).fold(0.0, f64::max);
    for i in 0..k {
        let p = (i..k).max_by(|&r, &s| a[r][i].abs().total_cmp(&a[s][i].abs()))?;
        a.swap(i, p);
        if a[i][i].abs() <= 1e-9 * norm {
            return None;
        }
        for r in 0..k {
            if r != i {
                let f = a[r][i] / a[i][i];
                let pivot = a[i].clone();
                for (v, p) in a[r][i..].iter_mut().zip(&pivot[i..]) {
                    *v -= f * p;
                }
            }
        }
    }
    Some((0..k).map(|i| a[i][k] / a[i][i] / scale[i]).collect())
}

/// The non-negative least-squares fit of `y` on the columns of `x` (rows of equal length),
/// keeping the columns in `always` in every candidate (an intercept that must be there).
/// None when no subset can be solved.
pub fn nnls(x: &[Vec<f64>], y: &[f64], always: &[usize]) -> Option<LinearFit> {
    let k = x.first().map_or(0, |r| r.len());
    if k == 0 || k > 8 || x.len() != y.len() {
        return None;
    }
    let must: u32 = always.iter().map(|&c| 1u32 << c).sum();
    let mut best: Option<(f64, Vec<f64>)> = None;
    for mask in 1u32..(1 << k) {
        if mask & must != must {
            continue;
        }
        let cols: Vec<usize> = (0..k).filter(|c| mask & (1 << c) != 0).collect();
        let Some(c) = least_squares(x, y, &cols) else {
            continue;
        };
        if c.iter().any(|&v| v < 0.0 || !v.is_finite()) {
            continue;
        }
        let mut coef = vec![0.0; k];
        for (i, &col) in cols.iter().enumerate() {
            coef[col] = c[i];
        }
        let sse = sse(x, y, &coef);
        // Ties (an exact fit by several subsets) go to the smaller model: fewer unit costs.
        if best.as_ref().is_none_or(|(b, bc)| {
            sse < b * (1.0 - 1e-12) - 1e-9 || (sse <= *b && nz(&coef) < nz(bc))
        }) {
            best = Some((sse, coef));
        }
    }
    let (sse, coef) = best?;
    let mean = y.iter().sum::<f64>() / y.len() as f64;
    let sst: f64 = y.iter().map(|v| (v - mean).powi(2)).sum();
    Some(LinearFit {
        coef,
        r_squared: (sst > 0.0).then(|| 1.0 - sse / sst),
        points: y.len(),
    })
}

fn nz(c: &[f64]) -> usize {
    c.iter().filter(|&&v| v != 0.0).count()
}

fn sse(x: &[Vec<f64>], y: &[f64], coef: &[f64]) -> f64 {
    x.iter()
        .zip(y)
        .map(|(r, yi)| (yi - predict(r, coef)).powi(2))
        .sum()
}

/// Σ coefᵢ · rowᵢ.
pub fn predict(row: &[f64], coef: &[f64]) -> f64 {
    row.iter().zip(coef).map(|(a, b)| a * b).sum()
}

/// The 2.5th and 97.5th percentiles of `v` (None when empty).
pub fn interval95(v: &mut [f64]) -> Option<(f64, f64)> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let lo = v[(v.len() as f64 * 0.025) as usize];
    let hi = v[((v.len() as f64 * 0.975) as usize).min(v.len() - 1)];
    Some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_known_costs() {
        // t = 1000 + 8·relative + 90·probes, exactly.
        let pts = [
            (10.0, 5.0),
            (2000.0, 10.0),
            (50.0, 4000.0),
            (300.0, 300.0),
            (0.0, 20.0),
        ];
        let x: Vec<Vec<f64>> = pts.iter().map(|&(r, p)| vec![1.0, r, p]).collect();
        let y: Vec<f64> = pts
            .iter()
            .map(|&(r, p)| 1000.0 + 8.0 * r + 90.0 * p)
            .collect();
        let f = nnls(&x, &y, &[]).unwrap();
        for (got, want) in f.coef.iter().zip([1000.0, 8.0, 90.0]) {
            assert!((got - want).abs() < 1e-6 * want, "{:?}", f.coef);
        }
        assert!((f.r_squared.unwrap() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_negative_cost_is_left_out() {
        // y falls with the second column: NNLS drops it rather than call it a saving.
        let x: Vec<Vec<f64>> = (0..6).map(|i| vec![1.0, i as f64]).collect();
        let y: Vec<f64> = (0..6).map(|i| 100.0 - 3.0 * i as f64).collect();
        let f = nnls(&x, &y, &[]).unwrap();
        assert_eq!(f.coef[1], 0.0);
        assert!((f.coef[0] - 92.5).abs() < 1e-9);
    }

    #[test]
    fn collinear_columns_do_not_break_it() {
        let x: Vec<Vec<f64>> = (1..6).map(|i| vec![i as f64, 2.0 * i as f64]).collect();
        let y: Vec<f64> = (1..6).map(|i| 10.0 * i as f64).collect();
        let f = nnls(&x, &y, &[]).unwrap();
        assert!((predict(&x[2], &f.coef) - 30.0).abs() < 1e-6);
        assert!(nnls(&x, &y, &[0, 1]).is_none());
    }
}
