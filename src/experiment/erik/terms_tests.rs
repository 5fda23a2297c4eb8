//! Tests of [`super`]: the eigen-solver against known spectra, identifiability of exact and
//! partial collinearity, and recovery of known coefficients.

use super::*;

#[test]
fn eigen_finds_known_spectra() {
    let (mut v, _) = eigen(vec![vec![2.0, 1.0], vec![1.0, 2.0]]);
    v.sort_by(f64::total_cmp);
    assert!(
        (v[0] - 1.0).abs() < 1e-12 && (v[1] - 3.0).abs() < 1e-12,
        "{v:?}"
    );
    // A 3×3 with eigenvalues 1, 2, 4 (Q diag Qᵀ for a rotation Q): vectors satisfy A v = λ v.
    let a = vec![
        vec![2.5, -0.5, 0.0],
        vec![-0.5, 2.5, 0.0],
        vec![0.0, 0.0, 1.0],
    ];
    let (vals, vecs) = eigen(a.clone());
    let mut sorted = vals.clone();
    sorted.sort_by(f64::total_cmp);
    assert!((sorted[0] - 1.0).abs() < 1e-12 && (sorted[1] - 2.0).abs() < 1e-12);
    assert!((sorted[2] - 3.0).abs() < 1e-12, "{sorted:?}");
    for (l, v) in vals.iter().zip(&vecs) {
        for i in 0..3 {
            let av: f64 = (0..3).map(|j| a[i][j] * v[j]).sum();
            assert!((av - l * v[i]).abs() < 1e-10, "{vals:?} {vecs:?}");
        }
    }
}

fn rows(cols: &[fn(f64) -> f64], n: usize) -> Vec<Vec<f64>> {
    (0..n)
        .map(|i| cols.iter().map(|c| c(i as f64)).collect())
        .collect()
}

#[test]
fn independent_columns_are_all_identifiable_and_recovered() {
    let x = rows(
        &[|_| 1.0, |i| i, |i| (i * 7.0) % 5.0, |i| (i * i) % 11.0],
        12,
    );
    let d = design(&x).unwrap();
    assert_eq!(d.identifiable, vec![true; 4]);
    assert_eq!(d.rank, 4);
    assert!(d.condition.is_finite() && d.condition >= 1.0);
    let want = [3.0, 2.0, -0.5, 0.25];
    let y: Vec<f64> = x
        .iter()
        .map(|r| r.iter().zip(want).map(|(a, b)| a * b).sum())
        .collect();
    for (got, want) in d.solve(&y).iter().zip(want) {
        assert!((got - want).abs() < 1e-9, "{got} vs {want}");
    }
}

#[test]
fn collinear_columns_are_not_identifiable_but_the_others_are() {
    // b and c = 2b + 3 move together (c is b and the intercept): neither is identifiable; the
    // intercept is not either (c − 2b − 3·1 = 0 involves it); a is.
    let x = rows(
        &[|_| 1.0, |i| (i * 7.0) % 5.0, |i| i, |i| 2.0 * i + 3.0],
        10,
    );
    let d = design(&x).unwrap();
    assert_eq!(d.identifiable, vec![false, true, false, false]);
    assert_eq!(d.rank, 3);
    // The identifiable coefficient is still the true one, whatever the others absorb.
    let y: Vec<f64> = x
        .iter()
        .map(|r| 1.0 + 4.0 * r[1] + 0.5 * r[2] + 0.25 * r[3])
        .collect();
    let b = d.solve(&y);
    assert!((b[1] - 4.0).abs() < 1e-9, "{b:?}");
    assert!((r_squared(&x, &y, &b) - 1.0).abs() < 1e-9);
    // A column that is zero at every point, and one that is constant (the intercept's twin).
    let x = rows(&[|_| 1.0, |i| i, |_| 0.0, |_| 5.0], 6);
    let d = design(&x).unwrap();
    assert_eq!(d.identifiable, vec![false, true, false, false]);
    assert_eq!(d.zero, vec![false, false, true, false]);
}

#[test]
fn bootstrap_intervals_bracket_identifiable_terms_only() {
    // y = 10 + 3a + 2b with b = 2a: a and b are not identifiable; c is (coefficient 0.5).
    let x = rows(&[|_| 1.0, |i| i, |i| 2.0 * i, |i| (i * 3.0) % 7.0], 8);
    let d = design(&x).unwrap();
    let samples: Vec<Vec<f64>> = x
        .iter()
        .map(|r| {
            let mid = 10.0 + 3.0 * r[1] + 2.0 * r[2] + 0.5 * r[3];
            (0..51)
                .map(|j| mid + ((j * 37 % 51) as f64 / 25.0 - 1.0))
                .collect()
        })
        .collect();
    let f = fit_terms(&x, &d, &samples, 200).unwrap();
    assert_eq!(f.coef[1], None);
    assert_eq!(f.ci[2], None);
    let (c, [lo, hi]) = (f.coef[3].unwrap(), f.ci[3].unwrap());
    assert!((c - 0.5).abs() < 1e-6 && lo <= c && c <= hi, "{f:?}");
    assert!(f.coef[0].is_some() && f.r2 > 0.999);
    assert_eq!(fit_terms(&x, &d, &samples, 200).unwrap(), f, "fixed seed");
}
