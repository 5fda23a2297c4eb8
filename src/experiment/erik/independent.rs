//! erik's independent per-VMA measurement as a table and a finding.
//!
//! In: the output of the vmaloop probe ([`VmaLoop`]: one region of written anonymous pages
//! forked as one VMA and as many). Out: the table, the finding
//! `erik.per_vma_us.independent.round_trip`, and the (round trip, parent) µs per VMA that the
//! factor-of-two check holds the fitted cost against; a skipped row when the region did not
//! split.

use super::driver::VmaLoop;
use super::LOOP_VMAS;
use crate::experiment::section::{Finding, Section, Skipped, Table};
use crate::stats::median_mut;

fn us(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.1}")
    } else {
        "not available".into()
    }
}

/// The independent per-VMA cost (round trip and parent), µs per VMA.
pub(super) fn independent(s: &mut Section, v: &VmaLoop) -> Option<(f64, f64)> {
    let extra = v.split_vmas as f64 - v.merged_vmas as f64;
    if extra <= 0.0 {
        s.skipped.push(Skipped {
            what: "erik: independent per-VMA measurement".into(),
            reason: format!(
                "vmaloop's region did not split ({} VMAs merged, {} split)",
                v.merged_vmas, v.split_vmas
            ),
        });
        return None;
    }
    let m = |xs: &[(f64, f64)], i: usize| {
        median_mut(
            &mut xs
                .iter()
                .map(|p| if i == 0 { p.0 } else { p.1 })
                .collect::<Vec<_>>(),
        )
    };
    let rt = (m(&v.split, 0) - m(&v.merged, 0)) / extra;
    let parent = (m(&v.split, 1) - m(&v.merged, 1)) / extra;
    s.tables.push(Table {
        title: "erik: independent per-VMA measurement (one region, one VMA or many)".into(),
        columns: [
            "state",
            "VMAs",
            "round trip µs",
            "parent's fork() µs",
            "forks",
        ]
        .map(String::from)
        .to_vec(),
        rows: vec![
            vec![
                "merged".into(),
                v.merged_vmas.to_string(),
                us(m(&v.merged, 0)),
                us(m(&v.merged, 1)),
                v.merged.len().to_string(),
            ],
            vec![
                "split".into(),
                v.split_vmas.to_string(),
                us(m(&v.split, 0)),
                us(m(&v.split, 1)),
                v.split.len().to_string(),
            ],
        ],
        caption: Some(format!(
            "{LOOP_VMAS} written anonymous pages, as one VMA or with every other page read-only; \
             the same pages either way. Medians. `{}`",
            v.command
        )),
    });
    s.findings.push(Finding {
        key: "erik.per_vma_us.independent.round_trip".into(),
        text: format!(
            "independently: {rt:.3} µs per VMA per fork round trip ({parent:.3} µs per VMA in \
             the parent's fork() call), {extra} extra VMAs over the same pages"
        ),
        value: rt,
        unit: "µs per VMA".into(),
        interval: None,
    });
    Some((rt, parent))
}
