//! The phase × category table: for each phase of a run (and each object of a per-object phase),
//! how its sampled time splits into the taxonomy's categories ("relocation of librustc_driver:
//! 1.51 ms = 0.62 ms file faults + 0.48 ms relocation + 0.30 ms lookups + ...").
//!
//! Stage: attribution, after [`super::breakdown`] has put every sample in a unit, a span of that
//! unit (by CLOCK_MONOTONIC time) and a category. In: the sample counts and weights per
//! (category, span label). Out: [`PhaseRow`]s, serialised in the breakdown's `phase_table`.
//!
//! One estimator with the category table: a cell's time per exec is its pooled share (its
//! samples over all samples of the breakdown) × the measured CPU per exec, so a row's cells add
//! up to the row (same denominator), a category's cells over all rows add up to the category's
//! time in the category table, and the rows add up to the whole CPU. Without a measured CPU,
//! the pooled sample weight over the execs covered, as the category table does.

use std::collections::HashMap;

use super::categories::Category;

/// What the caller knows of a span label: the phase and object it names, and the category a
/// user-mode sample that no frame decided takes in it ([`super::categories::in_phase`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpanInfo {
    pub phase: String,
    pub object: Option<String>,
    pub context: Option<Category>,
}

/// One category's part of a phase row.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseCell {
    pub category: Category,
    pub samples: u64,
    /// Of all samples of the breakdown (pooled), as the category table's shares.
    pub share: f64,
    /// `share` × the measured CPU per exec (or the pooled sample weight per exec).
    pub ns_per_exec_or_fork: f64,
}

/// One phase (and object) of the runs, split into categories.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseRow {
    /// The span label samples were placed by ("relocation: libc.so.6").
    pub span: String,
    /// The phase ("relocation", "initializers", "threads and children", ...).
    pub phase: String,
    /// The object of a per-object phase (basename), else None.
    pub object: Option<String>,
    pub samples: u64,
    /// Of all samples of the breakdown.
    pub share: f64,
    /// The sum of the cells' times (share × measured CPU).
    pub ns_per_exec_or_fork: f64,
    /// Largest first.
    pub categories: Vec<PhaseCell>,
}

/// The rows, in the order the labels first occur in `order` (time order of the spans), then
/// any other label in name order. `counts[(category, label)]` = (samples, weight in ns);
/// `total` is the breakdown's sample count and `covered` the execs/forks its units cover.
pub fn rows(
    counts: &HashMap<(Category, &str), (u64, u64)>,
    order: &[&str],
    spans: &HashMap<String, SpanInfo>,
    total: u64,
    covered: f64,
) -> Vec<PhaseRow> {
    let mut labels: Vec<&str> = Vec::new();
    for l in order {
        if !labels.contains(l) && counts.keys().any(|(_, k)| k == l) {
            labels.push(l);
        }
    }
    let mut rest: Vec<&str> = counts
        .keys()
        .map(|(_, l)| *l)
        .filter(|l| !labels.contains(l))
        .collect();
    rest.sort();
    rest.dedup();
    labels.extend(rest);
    let share = |n: u64| n as f64 / total.max(1) as f64;
    labels
        .into_iter()
        .map(|label| {
            let mut cells: Vec<PhaseCell> = Category::ALL
                .iter()
                .filter_map(|&c| {
                    let &(n, w) = counts.get(&(c, label))?;
                    Some(PhaseCell {
                        category: c,
                        samples: n,
                        share: share(n),
                        ns_per_exec_or_fork: w as f64 / covered.max(1.0),
                    })
                })
                .collect();
            cells.sort_by_key(|c| std::cmp::Reverse(c.samples));
            let info = spans.get(label);
            let samples = cells.iter().map(|c| c.samples).sum();
            PhaseRow {
                span: label.to_string(),
                phase: info.map_or_else(|| label.to_string(), |i| i.phase.clone()),
                object: info.and_then(|i| i.object.clone()),
                samples,
                share: share(samples),
                ns_per_exec_or_fork: cells.iter().map(|c| c.ns_per_exec_or_fork).sum(),
                categories: cells,
            }
        })
        .collect()
}

/// Replaces every time by share × `cpu_ns` (the category table's [`super::breakdown::scale_to_measured`]).
pub fn scale(rows: &mut [PhaseRow], cpu_ns: f64) {
    for r in rows {
        for c in &mut r.categories {
            c.ns_per_exec_or_fork = c.share * cpu_ns;
        }
        r.ns_per_exec_or_fork = r.categories.iter().map(|c| c.ns_per_exec_or_fork).sum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_follow_time_order_and_add_up() {
        let mut counts = HashMap::new();
        counts.insert((Category::FileFault, "relocation: a.so"), (3, 300));
        counts.insert((Category::LdsoRelocation, "relocation: a.so"), (5, 500));
        counts.insert((Category::ExecKernel, "kernel exec"), (2, 200));
        counts.insert((Category::ExitTeardown, "zz"), (1, 100));
        let mut spans = HashMap::new();
        spans.insert(
            "relocation: a.so".to_string(),
            SpanInfo {
                phase: "relocation".into(),
                object: Some("a.so".into()),
                context: Some(Category::LdsoRelocation),
            },
        );
        let mut r = rows(
            &counts,
            &["kernel exec", "mapping", "relocation: a.so"],
            &spans,
            11,
            2.0,
        );
        let labels: Vec<&str> = r.iter().map(|r| r.span.as_str()).collect();
        assert_eq!(labels, ["kernel exec", "relocation: a.so", "zz"]);
        assert_eq!(r[1].phase, "relocation");
        assert_eq!(r[1].object.as_deref(), Some("a.so"));
        assert_eq!(r[1].samples, 8);
        assert_eq!(r[1].categories[0].category, Category::LdsoRelocation);
        assert_eq!(
            r[1].ns_per_exec_or_fork, 400.0,
            "800 ns of weight over 2 execs"
        );
        scale(&mut r, 1100.0);
        // 8 of 11 samples of 1100 ns: 800 ns, = 300 + 500.
        assert!((r[1].ns_per_exec_or_fork - 800.0).abs() < 1e-9);
        assert!((r[1].categories[1].ns_per_exec_or_fork - 300.0).abs() < 1e-9);
        let all: f64 = r.iter().map(|r| r.ns_per_exec_or_fork).sum();
        assert!((all - 1100.0).abs() < 1e-9);
    }
}
