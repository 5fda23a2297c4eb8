//! The report's note on CPU feature detection: how much of start-up it took (its phase and its
//! category), whether its phase could be cut, and, on a virtual machine, why it is so slow.
//!
//! In: the aggregated [`ProfileSection`] and whether this machine is virtual (with the
//! evidence, from `crate::trace::startup::virtual_machine`). Out: one sentence or None. Pure,
//! so it is tested on hand-made sections.
//!
//! Why a note: glibc's `init_cpu_features` runs `cpuid` in loops (cache-info detection), and on
//! a virtual machine each `cpuid` traps to the hypervisor; on these VMs that is most of a
//! trivial program's start-up, and a reader who sees "CPU feature detection 40%" should not
//! hunt for it in their own code.

use super::ProfileSection;
use crate::attribute::categories::Category;
use crate::record::{CpuFeatureCut, Phase};

/// Share (of the phases, or of the samples) from which the note calls the cost significant.
pub const SIGNIFICANT: f64 = 0.10;

/// The note, or None when there is nothing worth a line (the phase and the category are both
/// small and the phase was cut, or there is no glibc detection code to cut).
pub fn note(p: &ProfileSection, virtual_machine: Option<&str>) -> Option<String> {
    let phase: Vec<_> = p
        .phases
        .iter()
        .filter(|s| s.phase == Phase::CpuFeatures)
        .collect();
    let phase_share: f64 = phase.iter().map(|s| s.share).sum();
    let phase_ms: Option<f64> = phase
        .iter()
        .map(|s| s.task_clock_ns.as_ref().map(|t| t.median / 1e6))
        .sum();
    let category = p.breakdown.as_ref().and_then(|b| {
        let c = b
            .categories
            .iter()
            .find(|c| c.category == Category::CpuFeatures)?;
        let rank = 1 + b
            .categories
            .iter()
            .filter(|o| o.samples > c.samples)
            .count();
        Some((c.share, rank))
    });
    let cut = p.raw.iter().find_map(|r| r.cpu_features.as_ref());
    let mut parts = Vec::new();
    if !phase.is_empty() {
        parts.push(format!(
            "its phase {}{:.1}% of the phases' CPU time",
            phase_ms.map_or(String::new(), |ms| format!("{ms:.3} ms, ")),
            100.0 * phase_share
        ));
    }
    if let Some((share, rank)) = category {
        let place = match rank {
            1 => "the top category".to_string(),
            n => format!("category number {n}"),
        };
        parts.push(format!("{:.1}% of the samples ({place})", 100.0 * share));
    }
    let significant = phase_share >= SIGNIFICANT
        || category.is_some_and(|(s, rank)| s >= SIGNIFICANT || rank == 1);
    let not_cut = match cut {
        Some(CpuFeatureCut::NotCut(why)) => Some(why.as_str()),
        _ => None,
    };
    if !significant && not_cut.is_none() {
        return None;
    }
    let mut s = String::from(
        "CPU feature detection (glibc's init_cpu_features: cpuid in loops, for the cache sizes)",
    );
    if !parts.is_empty() {
        s.push_str(": ");
        s.push_str(&parts.join("; "));
    }
    s.push('.');
    if let Some(why) = not_cut {
        s.push_str(&format!(" Not cut into a phase: {why}."));
    }
    if significant {
        if let Some(evidence) = virtual_machine {
            s.push_str(&format!(
                " This is a virtual machine ({evidence}): each `cpuid` is a hypervisor exit."
            ));
        }
    }
    Some(s)
}
