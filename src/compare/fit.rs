//! Non-negative least squares for the attribution's unit costs.
//!
//! In: points (a row of regressors per observation: counts such as relocations, lookups,
//! probes, objects) and the measured times. Out: one coefficient per regressor, each ≥ 0 (a
//! cost), and the fit's R². Why non-negative: a unit cost below zero ("a probe saves 3 ns")
//! is a collinearity artefact, never a cost. The solver is [`crate::stats::nnls`].

use crate::stats::{self, Singular};

/// A fitted linear model.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearFit {
    /// One per regressor; 0 for a regressor the fit left out.
    pub coef: Vec<f64>,
    /// 1 − SSE / SST (None with fewer than two distinct times).
    pub r_squared: Option<f64>,
    pub points: usize,
}

/// The non-negative least-squares fit of `y` on the columns of `x` (rows of equal length),
/// keeping the columns in `always` in every candidate (an intercept that must be there).
/// None when no subset can be solved. A subset is singular when a pivot of its scaled normal
/// equations is at most 1e-9 of their largest diagonal entry.
pub fn nnls(x: &[Vec<f64>], y: &[f64], always: &[usize]) -> Option<LinearFit> {
    let coef = stats::nnls(x, y, always, Singular::PivotAtMostOfDiagonal(1e-9))?;
    Some(LinearFit {
        r_squared: stats::r_squared(x, y, &coef),
        coef,
        points: y.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::predict;

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
