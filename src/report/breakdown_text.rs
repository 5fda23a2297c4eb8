//! The category breakdown as text: one row per category with its share (and 95% interval over
//! runs or blocks of forks), the CPU time per exec or per fork, and the phase most of its
//! samples fell in.

use std::fmt::Write as _;

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

use crate::attribute::breakdown::Breakdown;

/// `unit` is "exec" or "fork".
pub fn breakdown(b: &Breakdown, unit: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} cost by category ({} samples over {} {}s in {} units):",
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
        "mostly in".to_string(),
    ]);
    for c in &b.categories {
        let ci = c
            .share_per_unit
            .as_ref()
            .map(|s| format!("[{:.1}, {:.1}]", s.ci95.0 * 100.0, s.ci95.1 * 100.0))
            .unwrap_or_default();
        let per = c
            .ns_per_exec_or_fork
            .as_ref()
            .map(|s| format!("{:.1}", s.median / 1e3))
            .unwrap_or_else(|| "n/a".into());
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
            top,
        ]);
    }
    for i in 1..4 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let _ = writeln!(s, "{t}");
    for n in &b.notes {
        let _ = writeln!(s, "  {}", super::text::clean(n));
    }
    s
}
