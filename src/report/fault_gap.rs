//! The page faults a traced run does not take: one line for the profile report.
//!
//! A breakpoint is an int3 that ldcost writes into the target's text with `PTRACE_POKEDATA`.
//! When the page is not yet in the target's page table, the kernel brings it in for the write
//! (get_user_pages), and the target never takes that page's first-touch fault; no perf event
//! counts it for anyone. The runs count those pages from `/proc/PID/pagemap` before each first
//! write ([`crate::record::Run::breakpoint_pages`]); this line sets them beside the measured
//! gap between the untraced and the per-object runs, so a reader of the phase table's faults
//! column knows why its sum is below `perf stat`'s.

use crate::attribute::profile::ProfileSection;
use crate::record::Instrumentation;
use crate::stats::median;

/// The median page faults of the untraced and the per-object runs and the median pages the
/// per-object runs' breakpoints brought in; None when a figure is missing.
pub fn figures(p: &ProfileSection) -> Option<(f64, f64, f64)> {
    let of = |k: Instrumentation| {
        p.raw
            .iter()
            .filter(move |r| r.instrumentation == k)
            .collect::<Vec<_>>()
    };
    let faults = |k| {
        median(
            &of(k)
                .iter()
                .filter_map(|r| r.total.page_faults)
                .map(|f| f as f64)
                .collect::<Vec<_>>(),
        )
    };
    let pages = median(
        &of(Instrumentation::PerObject)
            .iter()
            .filter_map(|r| r.breakpoint_pages)
            .map(|f| f as f64)
            .collect::<Vec<_>>(),
    )?;
    Some((
        faults(Instrumentation::None)?,
        faults(Instrumentation::PerObject)?,
        pages,
    ))
}

/// "page faults: without ptrace 49, per object 46 (medians); ..." or None.
pub fn line(p: &ProfileSection) -> Option<String> {
    let (none, traced, pages) = figures(p)?;
    Some(format!(
        "  page faults: without ptrace {none:.0}, per object {traced:.0} (medians); ldcost's breakpoint writes brought {pages:.0} text page{} into the target before it touched {}, so {} first-touch fault{} {} in no phase and no counter",
        if pages == 1.0 { "" } else { "s" },
        if pages == 1.0 { "it" } else { "them" },
        if pages == 1.0 { "its" } else { "their" },
        if pages == 1.0 { "" } else { "s" },
        if pages == 1.0 { "is" } else { "are" },
    ))
}
