//! The category breakdown as text: one row per category with its pooled share, the CPU time
//! per exec or per fork (share × the measured CPU), one 95% interval for both (the same
//! bootstrap over runs or blocks of forks; none when there are too few of them, and the report
//! says so), and the phase most of its samples fell in. `exec: kernel` is followed by its parts
//! (old image teardown, ELF mapping, arguments and stack, other: same estimator, so they add up
//! to its row), and ldcost's own ptrace stops, left out of every share, get a line of their own.

use std::fmt::Write as _;

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

use crate::attribute::breakdown::{Breakdown, MIN_UNITS_FOR_INTERVAL};

/// `unit` is "exec" or "fork".
pub fn breakdown(b: &Breakdown, unit: &str) -> String {
    let mut s = String::new();
    let unit_name = if unit == "exec" {
        "runs"
    } else {
        "blocks of forks"
    };
    let outside = if b.outside_units > 0 {
        format!("; {} more recorded outside them, left out", b.outside_units)
    } else {
        String::new()
    };
    let _ = writeln!(
        s,
        "{} cost by category ({} samples over {} {}s in {} {unit_name}{outside}):",
        b.section, b.samples, b.covered as u64, unit, b.units
    );
    let mut t = Table::new();
    t.load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    t.set_header(vec![
        "category".to_string(),
        "share".to_string(),
        "95% CI".to_string(),
        format!("µs per {unit}"),
        "95% CI".to_string(),
        "mostly in".to_string(),
    ]);
    let interval = |ci: Option<(f64, f64)>, scale: f64| {
        ci.map(|(lo, hi)| format!("[{:.1}, {:.1}]", lo * scale, hi * scale))
            .unwrap_or_else(|| "n/a".into())
    };
    for c in &b.categories {
        let ci = interval(c.share_ci95, 100.0);
        let (per, per_ci) = c
            .ns_per_exec_or_fork
            .as_ref()
            .map(|e| (format!("{:.1}", e.value / 1e3), interval(e.ci95, 1e-3)))
            .unwrap_or_else(|| ("n/a".into(), String::new()));
        let top = c
            .phases
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(p, n)| {
                format!(
                    "{} ({:.0}%)",
                    super::text::clean(p),
                    *n as f64 * 100.0 / c.samples.max(1) as f64
                )
            })
            .unwrap_or_default();
        t.add_row(vec![
            c.label.clone(),
            format!("{:.1}%", c.share * 100.0),
            ci,
            per,
            per_ci,
            top,
        ]);
        if c.category == crate::attribute::categories::Category::ExecKernel {
            for p in &b.exec_kernel_parts {
                let per = if c.ns_per_exec_or_fork.is_some() {
                    format!("{:.1}", p.ns_per_exec_or_fork / 1e3)
                } else {
                    "n/a".into()
                };
                t.add_row(vec![
                    format!("  · {}", p.label),
                    format!("{:.1}%", p.share * 100.0),
                    String::new(),
                    per,
                    String::new(),
                    format!(
                        "{} sample{}",
                        p.samples,
                        if p.samples == 1 { "" } else { "s" }
                    ),
                ]);
            }
        }
    }
    for i in 1..5 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let _ = writeln!(s, "{t}");
    if b.units_with_samples < MIN_UNITS_FOR_INTERVAL {
        let _ = writeln!(
            s,
            "  no intervals: {} {unit_name} with samples, {} needed ({})",
            b.units_with_samples,
            MIN_UNITS_FOR_INTERVAL,
            if unit == "exec" {
                "more sampled runs: --sample-runs"
            } else {
                "a longer --fork loop"
            }
        );
    }
    let own = &b.instrumentation;
    if own.samples > 0 {
        let top = own
            .phases
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(p, n)| {
                format!(
                    ", mostly in {} ({:.0}%)",
                    super::text::clean(p),
                    *n as f64 * 100.0 / own.samples as f64
                )
            })
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "  ldcost's own ptrace stops and sampler records: {} samples, {:.1}% of the sampled CPU{top}; left out of the shares above",
            own.samples,
            own.share_of_sampled * 100.0
        );
    }
    for n in &b.notes {
        let _ = writeln!(s, "  {}", super::text::clean(n));
    }
    s
}
