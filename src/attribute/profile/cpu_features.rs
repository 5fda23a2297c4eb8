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

#[cfg(test)]
mod tests {
    use super::*;

    /// A section with a CPU-feature phase of `share` (0.2 ms) and runs cut as `how`.
    fn section(share: f64, how: &str) -> ProfileSection {
        let phases = if share > 0.0 {
            serde_json::json!([{ "phase": "cpu-features", "object": "/x", "share": share }])
        } else {
            serde_json::json!([])
        };
        let raw = serde_json::json!([{ "instrumentation": "coarse", "segments": [],
            "total": {}, "wall_ns": 1, "ending": { "how": "exited", "value": 0 }, "stops": 1,
            "cpu_features": { "how": how, "where": "WHY" } }]);
        let phases: Vec<serde_json::Value> = serde_json::from_value(phases).unwrap();
        fn json<T: serde::de::DeserializeOwned>(v: &serde_json::Value, k: &str) -> T {
            serde_json::from_value(v[k].clone()).unwrap()
        }
        ProfileSection {
            argv: vec![],
            detail: serde_json::from_value(serde_json::json!({ "level": "static" })).unwrap(),
            runs: 1,
            warmup: 0,
            counters: Default::default(),
            counting: Default::default(),
            phases: phases
                .iter()
                .map(|p| super::super::PhaseStat {
                    phase: json(p, "phase"),
                    object: json(p, "object"),
                    task_clock_ns: Some(crate::attribute::stats::Summary {
                        n: 3,
                        median: 200000.0,
                        min: 1.0,
                        max: 1.0,
                        ci95: (1.0, 1.0),
                    }),
                    task_clock_raw_ns: None,
                    wall_ns: None,
                    page_faults: None,
                    share: json(p, "share"),
                    wide_interval: false,
                })
                .collect(),
            total_task_clock_ns: None,
            total_wall_ns: None,
            overhead: super::super::Overhead {
                uninstrumented_ns: None,
                coarse_ns: None,
                per_object_ns: None,
                per_object_stops: 0.0,
                ns_per_stop: None,
                ns_per_stop_slope: None,
                residue: None,
                agreement: None,
                agreement_raw: None,
                agreement_coarse: None,
            },
            ld_debug: None,
            prediction: None,
            after_main: crate::attribute::after_main::AfterMainSection::not_available(
                "not measured",
            ),
            endings: vec![],
            left_out: vec![],
            children_task_clock_ns: None,
            exit_uncounted_ns: None,
            user_ns: None,
            kernel_ns: None,
            breakdown: None,
            breakdown_error: None,
            breakdown_weights: vec![],
            cpu_features_note: None,
            followed: vec![],
            pinned_cpu: None,
            folded: vec![],
            raw: serde_json::from_value(raw).unwrap(),
        }
    }

    #[test]
    fn significant_phase_on_a_vm_names_the_evidence() {
        let n = note(&section(0.4, "cut"), Some("EVIDENCE")).unwrap();
        assert!(n.contains("0.200 ms, 40.0% of the phases"), "{n}");
        assert!(n.contains("virtual machine (EVIDENCE)"), "{n}");
        assert!(n.contains("hypervisor exit"), "{n}");
        // Not virtual: the same note, no hypervisor sentence.
        let bare = note(&section(0.4, "cut"), None).unwrap();
        assert!(!bare.contains("hypervisor"), "{bare}");
    }

    #[test]
    fn small_and_cut_says_nothing_not_cut_says_why() {
        assert_eq!(note(&section(0.05, "cut"), Some("E")), None);
        assert_eq!(note(&section(0.0, "absent"), Some("E")), None);
        let n = note(&section(0.0, "not-cut"), Some("E")).unwrap();
        assert!(n.contains("Not cut into a phase: WHY."), "{n}");
        // Not significant: no claim about the hypervisor.
        assert!(!n.contains("hypervisor"), "{n}");
    }
}
