//! The statistics every stage uses, in one place: medians, means and quantiles, the fixed-seed
//! bootstrap (its draws, percentile intervals widened to hold their estimate, resampled
//! medians, the interval of a median and of a ratio of medians), the Mann–Whitney U test, and
//! least squares (ordinary, non-negative, and the straight line).
//!
//! A leaf: it imports nothing from the crate, so any stage may use it.
//!
//! Conventions, so that callers can choose explicitly: [`median`] is `None` for no values and
//! [`median_sorted`] / [`median_mut`] are NaN for none; none of them filters NaN or infinite
//! values (NaN sorts last by [`f64::total_cmp`]); a caller that wants only finite values
//! filters them first, where it is visible. An even count's median is the mean of the middle
//! two.
//!
//! Why the bootstrap is written here: it is a few lines over a fixed-seed xorshift64*
//! ([`draws`]), so every interval ldcost prints is reproducible from the same data (the tests
//! pin some), and the statistics crates' bootstrap helpers bring a random-number stack we do
//! not otherwise need. No well-kept crate offers the Mann–Whitney U test with the exact
//! distribution (statrs has the distributions only). The linear solves use `nalgebra`.

use nalgebra::{DMatrix, DVector};

/// Resamples of each bootstrap in ldcost.
pub const RESAMPLES: usize = 2000;

/// The bootstrap's draws: xorshift64* from a fixed seed, so every interval ldcost prints is
/// reproducible from the same data.
pub fn draws() -> impl FnMut() -> u64 {
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// An index in `0..n` (n > 0) from the next draw.
pub fn pick(next: &mut impl FnMut() -> u64, n: usize) -> usize {
    (next() % n as u64) as usize
}

/// The arithmetic mean; None when empty.
pub fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// The median of sorted values; NaN when empty.
pub fn median_sorted(s: &[f64]) -> f64 {
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

/// The median of `values` (a sorted copy); None when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    Some(median_sorted(&v))
}

/// The median of the finite values of `values` (NaN and infinities left out); None when none
/// is finite.
pub fn median_finite(values: &[f64]) -> Option<f64> {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    median(&v)
}

/// The median of `v`, reordered in place (a selection, not a sort: the bootstrap calls it in
/// every resample); NaN when empty.
pub fn median_mut(v: &mut [f64]) -> f64 {
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

/// The nearest-rank quantile `q` (0 < q ≤ 1) of sorted values: the ⌈q·n⌉-th smallest; None
/// when empty.
pub fn nearest_rank(s: &[f64], q: f64) -> Option<f64> {
    if s.is_empty() {
        return None;
    }
    let rank = ((s.len() as f64 * q).ceil() as usize).clamp(1, s.len());
    Some(s[rank - 1])
}

/// The 95% percentile interval of bootstrap replicates `v` (sorted here): the values at ranks
/// ⌊0.025·n⌋ and ⌊0.975·n⌋ (0-based); None when empty.
pub fn interval95(v: &mut [f64]) -> Option<(f64, f64)> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let lo = v[(v.len() as f64 * 0.025) as usize];
    let hi = v[((v.len() as f64 * 0.975) as usize).min(v.len() - 1)];
    Some((lo, hi))
}

/// `ci` widened, if need be, to hold its estimate: a percentile interval need not hold its
/// point (skewed resamples of few points, a ratio's resamples missing the full-sample ratio by
/// a hair), and every interval ldcost prints contains its estimate.
pub fn widen(ci: (f64, f64), estimate: f64) -> (f64, f64) {
    (ci.0.min(estimate), ci.1.max(estimate))
}

/// [`interval95`] of the replicates `v` (not empty) of the estimate `c`, [`widen`]ed to hold it.
pub fn interval95_around(v: &mut [f64], c: f64) -> (f64, f64) {
    interval95(v).map_or((c, c), |ci| widen(ci, c))
}

/// Above this many values the median's interval comes from order statistics, not the bootstrap.
pub const BOOTSTRAP_MAX: usize = 1000;

/// The 95% confidence interval of the median of sorted values `v` (not empty), holding the
/// median. Up to [`BOOTSTRAP_MAX`] values: a percentile bootstrap of [`RESAMPLES`] resampled
/// medians. Above: the distribution-free interval from order statistics (the ranks
/// n/2 ∓ 1.96·√n/2 of a Binomial(n, ½)), which the bootstrap approaches for large n and which
/// costs nothing beyond the caller's sort.
pub fn median_interval(v: &[f64]) -> (f64, f64) {
    let median = median_sorted(v);
    if v.len() > BOOTSTRAP_MAX {
        let n = v.len() as f64;
        let half = 1.96 * n.sqrt() / 2.0;
        let lo = ((n / 2.0 - half).floor().max(0.0)) as usize;
        let hi = ((n / 2.0 + half).ceil() as usize).min(v.len() - 1);
        return (v[lo], v[hi]);
    }
    let mut next = draws();
    let mut meds = Vec::with_capacity(RESAMPLES);
    let mut sample = vec![0.0; v.len()];
    for _ in 0..RESAMPLES {
        for s in sample.iter_mut() {
            *s = v[pick(&mut next, v.len())];
        }
        sample.sort_by(f64::total_cmp);
        meds.push(median_sorted(&sample));
    }
    interval95_around(&mut meds, median)
}

/// One bootstrap round's response: each point's samples drawn with replacement (the fixed-seed
/// [`draws`]), and their median. Each call is the next round.
pub fn resampled_medians() -> impl FnMut(&[Vec<f64>]) -> Vec<f64> {
    let mut next = draws();
    let mut buf = Vec::new();
    move |samples| {
        samples
            .iter()
            .map(|s| {
                buf.clear();
                buf.extend((0..s.len()).map(|_| s[pick(&mut next, s.len())]));
                median_mut(&mut buf)
            })
            .collect()
    }
}

/// Per-side cap on [`bootstrap_ratio`]'s resample size.
pub const MAX_RESAMPLE_LEN: usize = 1000;

/// Percentile bootstrap of (median(HEAD*) / median(BASE*) − 1) × 100, each side resampled
/// with replacement on its own, fixed seed; NaN when no resample had a positive BASE median.
/// Large samples (fork loops) are resampled at most [`MAX_RESAMPLE_LEN`] values per side (a
/// random subsample each time), which keeps the resamples fast and makes the interval
/// conservative, not narrower.
pub fn bootstrap_ratio(base: &[f64], head: &[f64]) -> (f64, f64) {
    let mut next = draws();
    let (lb, lh) = (
        base.len().min(MAX_RESAMPLE_LEN),
        head.len().min(MAX_RESAMPLE_LEN),
    );
    let mut sb = vec![0.0; lb];
    let mut sh = vec![0.0; lh];
    let mut out = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        for s in sb.iter_mut() {
            *s = base[pick(&mut next, base.len())];
        }
        for s in sh.iter_mut() {
            *s = head[pick(&mut next, head.len())];
        }
        sb.sort_by(f64::total_cmp);
        sh.sort_by(f64::total_cmp);
        let (mb, mh) = (median_sorted(&sb), median_sorted(&sh));
        if mb > 0.0 {
            out.push((mh / mb - 1.0) * 100.0);
        }
    }
    interval95(&mut out).unwrap_or((f64::NAN, f64::NAN))
}

/// Two-sided p-value of the Mann–Whitney U test of "`a` and `b` come from one distribution":
/// exact without ties for n1·n2 ≤ 2500, else the normal approximation with tie and continuity
/// corrections; 1 when either is empty.
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

/// When [`least_squares`] calls its normal equations singular (a column that is a combination
/// of the others over these rows), judged on the pivots of their LU factorisation with the
/// columns scaled to a largest magnitude of 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Singular {
    /// A pivot of magnitude below this.
    PivotBelow(f64),
    /// A pivot of magnitude at most this fraction of the largest diagonal entry of XᵀX.
    PivotAtMostOfDiagonal(f64),
}

/// Ordinary least squares of `y` on the columns `cols` of the rows `x`: one coefficient per
/// entry of `cols`, or None when the columns are not identifiable over these rows (a column of
/// zeros or of non-finite values, fewer rows than columns, or `singular`).
///
/// The normal equations (XᵀX) β = Xᵀy are small (a handful of columns), solved by nalgebra's
/// LU with partial pivoting after each column is scaled to a largest magnitude of 1, so that
/// pivots compare fairly.
pub fn least_squares(
    x: &[Vec<f64>],
    y: &[f64],
    cols: &[usize],
    singular: Singular,
) -> Option<Vec<f64>> {
    let k = cols.len();
    if k == 0
        || x.len() < k
        || x.len() != y.len()
        || x.iter().any(|r| cols.iter().any(|&c| c >= r.len()))
    {
        return None;
    }
    let scale: Vec<f64> = cols
        .iter()
        .map(|&c| x.iter().map(|r| r[c].abs()).fold(0.0, f64::max))
        .collect();
    if scale.iter().any(|&s| s == 0.0 || !s.is_finite()) {
        return None;
    }
    let mut a = DMatrix::<f64>::zeros(k, k);
    let mut b = DVector::<f64>::zeros(k);
    for (row, &yi) in x.iter().zip(y) {
        for i in 0..k {
            let xi = row[cols[i]] / scale[i];
            for j in 0..k {
                a[(i, j)] += xi * row[cols[j]] / scale[j];
            }
            b[i] += xi * yi;
        }
    }
    let diagonal = a.diagonal().iter().copied().fold(0.0, f64::max);
    let lu = a.lu();
    let pivots = lu.u().diagonal();
    let bad = |p: f64| match singular {
        Singular::PivotBelow(t) => p.abs() < t,
        Singular::PivotAtMostOfDiagonal(f) => p.abs() <= f * diagonal,
    };
    if pivots.iter().any(|&p| bad(p)) {
        return None;
    }
    let beta = lu.solve(&b)?;
    Some(beta.iter().zip(&scale).map(|(b, s)| b / s).collect())
}

/// Σ coefᵢ · rowᵢ.
pub fn predict(row: &[f64], coef: &[f64]) -> f64 {
    row.iter().zip(coef).map(|(a, b)| a * b).sum()
}

/// The sum of squared residuals of `coef` on the rows `x` against `y`.
pub fn sse(x: &[Vec<f64>], y: &[f64], coef: &[f64]) -> f64 {
    x.iter()
        .zip(y)
        .map(|(r, yi)| (yi - predict(r, coef)).powi(2))
        .sum()
}

/// 1 − SSE / SST of `coef` on the rows `x` against `y`; None when `y` does not vary.
pub fn r_squared(x: &[Vec<f64>], y: &[f64], coef: &[f64]) -> Option<f64> {
    let mean = mean(y)?;
    let sst: f64 = y.iter().map(|v| (v - mean).powi(2)).sum();
    (sst > 0.0).then(|| 1.0 - sse(x, y, coef) / sst)
}

/// The non-negative least-squares fit of `y` on the columns of `x` (rows of equal length, at
/// most 8 columns), keeping the columns in `always` in every candidate (an intercept that must
/// be there): one coefficient per column, 0 for a column left out. None when no subset can be
/// solved.
///
/// Every subset of the columns is solved by [`least_squares`] and the best feasible one is the
/// NNLS optimum (the NNLS solution is the unconstrained least-squares solution on its set of
/// positive coefficients); ties (an exact fit by several subsets) go to the smaller model.
pub fn nnls(x: &[Vec<f64>], y: &[f64], always: &[usize], singular: Singular) -> Option<Vec<f64>> {
    let k = x.first().map_or(0, |r| r.len());
    if k == 0 || k > 8 || x.len() != y.len() {
        return None;
    }
    let nz = |c: &[f64]| c.iter().filter(|&&v| v != 0.0).count();
    let must: u32 = always.iter().map(|&c| 1u32 << c).sum();
    let mut best: Option<(f64, Vec<f64>)> = None;
    for mask in 1u32..(1 << k) {
        if mask & must != must {
            continue;
        }
        let cols: Vec<usize> = (0..k).filter(|c| mask & (1 << c) != 0).collect();
        let Some(c) = least_squares(x, y, &cols, singular) else {
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
        if best.as_ref().is_none_or(|(b, bc)| {
            sse < b * (1.0 - 1e-12) - 1e-9 || (sse <= *b && nz(&coef) < nz(bc))
        }) {
            best = Some((sse, coef));
        }
    }
    best.map(|(_, coef)| coef)
}

/// The least-squares straight line through `points` (x, y): (intercept, slope), from the
/// centred sums; None without two distinct x values (or with a non-finite spread of x).
pub fn line(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (sxx > 0.0).then(|| {
        let slope = sxy / sxx;
        (my - slope * mx, slope)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median_mut(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median_mut(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median_mut(&mut []).is_nan());
        assert!(median_sorted(&[]).is_nan());
        // No filter: NaN sorts last, so one NaN of two is half the middle pair.
        assert!(median(&[f64::NAN, 5.0]).is_some_and(f64::is_nan));
        assert_eq!(median(&[f64::NAN, 1.0, 5.0]), Some(5.0));
        assert_eq!(median_finite(&[f64::NAN, 5.0]), Some(5.0));
        assert_eq!(median_finite(&[f64::INFINITY, 1.0, 2.0]), Some(1.5));
        assert_eq!(median_finite(&[f64::NAN]), None);
    }

    #[test]
    fn means_and_nearest_ranks() {
        assert_eq!(mean(&[1.0, 2.0]), Some(1.5));
        assert_eq!(mean(&[]), None);
        let v: Vec<f64> = (1..=200).map(f64::from).collect();
        // ⌈0.99 · 200⌉ = 198th smallest.
        assert_eq!(nearest_rank(&v, 0.99), Some(198.0));
        assert_eq!(nearest_rank(&[7.0], 0.99), Some(7.0));
        assert_eq!(nearest_rank(&[], 0.5), None);
    }

    #[test]
    fn the_interval_holds_its_estimate() {
        let mut v: Vec<f64> = (0..200).map(|i| 10.0 + f64::from(i) * 0.05).collect();
        // Inside: the 2.5th and 97.5th percentiles (replicates 5 and 195 of 200).
        assert_eq!(interval95_around(&mut v.clone(), 15.0), (10.25, 19.75));
        // Below every replicate (a skewed bootstrap): the interval reaches down to it.
        assert_eq!(interval95_around(&mut v.clone(), 4.0), (4.0, 19.75));
        v.reverse();
        assert_eq!(interval95_around(&mut v, 30.0), (10.25, 30.0));
        assert_eq!(interval95(&mut []), None);
    }

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
    fn normal_approximation_with_ties() {
        // Many ties: normal approximation; same data -> p ~ 1; shifted -> tiny.
        let a: Vec<f64> = (0..200).map(|i| (i % 4) as f64).collect();
        let b: Vec<f64> = (0..200).map(|i| (i % 4 + 2) as f64).collect();
        assert!(mann_whitney_p(&a, &a) > 0.9);
        assert!(mann_whitney_p(&a, &b) < 1e-10);
        assert!((normal_sf(1.959_964) - 0.025).abs() < 1e-4);
    }

    #[test]
    fn least_squares_recovers_an_exact_plane() {
        // y = 7 − 1.5·a + 0.25·b, a and b independent over six points.
        let pts = [(3, 100), (8, 5), (1, 60), (4, 400), (9, 250), (0, 0)];
        let x: Vec<Vec<f64>> = pts
            .iter()
            .map(|&(a, b)| vec![1.0, f64::from(a), f64::from(b)])
            .collect();
        let y: Vec<f64> = x.iter().map(|r| 7.0 - 1.5 * r[1] + 0.25 * r[2]).collect();
        for singular in [
            Singular::PivotBelow(3e-9),
            Singular::PivotAtMostOfDiagonal(1e-9),
        ] {
            let c = least_squares(&x, &y, &[0, 1, 2], singular).unwrap();
            for (got, want) in c.iter().zip([7.0, -1.5, 0.25]) {
                assert!((got - want).abs() < 1e-9, "{c:?}");
            }
            assert!((r_squared(&x, &y, &c).unwrap() - 1.0).abs() < 1e-12);
            // A subset of the columns: y on the intercept alone is y's mean.
            let m = least_squares(&x, &y, &[0], singular).unwrap();
            assert!((m[0] - mean(&y).unwrap()).abs() < 1e-9, "{m:?}");
        }
    }

    #[test]
    fn collinear_columns_are_not_identifiable() {
        // The third column is the sum of the first two at every point: no unique answer.
        let x: Vec<Vec<f64>> = (0..8)
            .map(|i| {
                let (a, b) = (f64::from(i * i), f64::from(i % 3));
                vec![a, b, a + b]
            })
            .collect();
        let y: Vec<f64> = (0..8).map(|i| f64::from(i) * 2.0 + 1.0).collect();
        let abs = Singular::PivotBelow(3e-9);
        let rel = Singular::PivotAtMostOfDiagonal(1e-9);
        assert!(least_squares(&x, &y, &[0, 1, 2], abs).is_none());
        assert!(least_squares(&x, &y, &[0, 1, 2], rel).is_none());
        assert!(least_squares(&x, &y, &[0, 1], rel).is_some());
        // A column of zeros; too few rows.
        let x: Vec<Vec<f64>> = (0..4).map(|i| vec![1.0, 0.0, i as f64]).collect();
        assert!(least_squares(&x, &[1.0, 2.0, 3.0, 4.0], &[0, 1], abs).is_none());
        assert!(least_squares(&[vec![1.0, 2.0]], &[1.0], &[0, 1], abs).is_none());
    }

    #[test]
    fn nnls_leaves_out_a_negative_cost() {
        // y falls with the second column: NNLS drops it rather than call it a saving; the
        // intercept alone is the mean of y, 92.5.
        let x: Vec<Vec<f64>> = (0..6).map(|i| vec![1.0, i as f64]).collect();
        let y: Vec<f64> = (0..6).map(|i| 100.0 - 3.0 * i as f64).collect();
        let c = nnls(&x, &y, &[], Singular::PivotAtMostOfDiagonal(1e-9)).unwrap();
        assert_eq!(c[1], 0.0);
        assert!((c[0] - 92.5).abs() < 1e-9);
    }

    #[test]
    fn lines_through_points() {
        let (a, b) = line(&[(1.0, 12.0), (10.0, 30.0), (100.0, 210.0)]).unwrap();
        assert!((b - 2.0).abs() < 1e-9 && (a - 10.0).abs() < 1e-9, "{a} {b}");
        assert!(line(&[(1.0, 1.0)]).is_none());
        assert!(line(&[(1.0, 2.0), (1.0, 3.0)]).is_none());
        assert!(line(&[(f64::NAN, 2.0), (1.0, 3.0)]).is_none());
    }

    #[test]
    fn resampled_medians_are_medians_of_draws() {
        // Constant points: every resample's median is the constant.
        let mut r = resampled_medians();
        assert_eq!(r(&[vec![4.0; 5], vec![9.0; 2]]), vec![4.0, 9.0]);
        // The draws repeat from the same seed.
        let (mut a, mut b) = (draws(), draws());
        assert!((0..10).all(|_| a() == b()));
    }
}
