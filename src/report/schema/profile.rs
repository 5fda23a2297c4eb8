//! The `profile` section: the measured phases over the runs, the instrumentation's cost,
//! glibc's own account and the prediction, converted from and back to [`crate::attribute::profile`]'s
//! own types. What the runs recorded ([`crate::record`]: phases, runs, endings) is embedded
//! as it is.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::breakdown::Breakdown;
use super::common::Summary;

use crate::attribute::link_cost;
use crate::attribute::profile::{self, phase_weighted};
use crate::record::counters::Availability;
use crate::record::ExecImage;
use crate::record::{Detail, Ending, Phase, Run};

fn all<T, U: From<T>>(v: Vec<T>) -> Vec<U> {
    v.into_iter().map(U::from).collect()
}

/// One phase (and object) over the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseStat {
    pub phase: Phase,
    pub object: Option<String>,
    /// CPU time of the target in this phase (task-clock), nanoseconds, minus the measured
    /// cost of the ptrace stops charged to it ([`Overhead::ns_per_stop`]).
    pub task_clock_ns: Option<Summary>,
    /// The same before that correction.
    pub task_clock_raw_ns: Option<Summary>,
    pub wall_ns: Option<Summary>,
    pub page_faults: Option<Summary>,
    /// Median share of the run's total task-clock.
    pub share: f64,
    /// The phase is over 5% of the total and its CPU interval is wider than ±3% of its
    /// median ([`crate::attribute::profile::PhaseStat::interval_is_wide`]); false in documents written before it existed.
    #[serde(default)]
    pub wide_interval: bool,
}

/// glibc's own account of the same start-up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LdDebugStatistics {
    pub startup_cycles: Option<u64>,
    pub relocation_cycles: Option<u64>,
    pub load_cycles: Option<u64>,
    pub relocations: Option<u64>,
    pub relocations_from_cache: Option<u64>,
    pub relative_relocations: Option<u64>,
    pub final_relocations: Option<u64>,
    /// Successful symbol bindings per referencing object during start-up (LD_DEBUG=bindings
    /// lines before the first "calling init"): the lookups glibc performed for that object,
    /// less cache hits and failed weak lookups, plus ld.so's own (vDSO, malloc) lookups.
    #[serde(default)]
    pub bindings: BTreeMap<String, u64>,
}

/// The instrumentation's cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    pub uninstrumented_ns: Option<Summary>,
    pub coarse_ns: Option<Summary>,
    pub per_object_ns: Option<Summary>,
    pub per_object_stops: f64,
    /// CPU cost of one ptrace stop to the target, as the per-object runs are corrected: the
    /// median over runs of each run's own figure (its replayed stops, bounded by its cheapest
    /// segment per stop: [`crate::attribute::profile::per_stop_ns`]).
    pub ns_per_stop: Option<f64>,
    /// The slope of total task-clock against stops across all runs (least squares): shown for
    /// comparison, applied only to recordings without replayed stops.
    #[serde(default)]
    pub ns_per_stop_slope: Option<f64>,
    /// What each stop after `main` cost the target beyond its replay, taken out of the
    /// windows after `main` ([`crate::attribute::profile::residue`]); absent when the runs do
    /// not resolve it, and in older documents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub residue: Option<Residue>,
    /// Sum of the corrected per-object phases / uninstrumented total (1.0 = agreement).
    pub agreement: Option<f64>,
    /// Sum of the phases before correction / uninstrumented total.
    pub agreement_raw: Option<f64>,
    /// Boundaries-only runs (a few stops, no correction) / uninstrumented total.
    pub agreement_coarse: Option<f64>,
}

/// The residue per stop after `main` and the interval it was judged by (ns).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Residue {
    pub ns_per_stop: f64,
    pub low_ns: f64,
    pub high_ns: f64,
    pub replay_ns: f64,
}

impl From<profile::residue::Residue> for Residue {
    fn from(x: profile::residue::Residue) -> Self {
        Residue {
            ns_per_stop: x.ns_per_stop,
            low_ns: x.low_ns,
            high_ns: x.high_ns,
            replay_ns: x.replay_ns,
        }
    }
}

impl From<Residue> for profile::residue::Residue {
    fn from(x: Residue) -> Self {
        profile::residue::Residue {
            ns_per_stop: x.ns_per_stop,
            low_ns: x.low_ns,
            high_ns: x.high_ns,
            replay_ns: x.replay_ns,
        }
    }
}

/// The `profile` section of the JSON document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileSection {
    pub argv: Vec<String>,
    pub detail: Detail,
    pub runs: usize,
    pub warmup: usize,
    /// Counter -> `"available"` or `{"unavailable": why}`.
    #[serde(deserialize_with = "counters_any_version")]
    pub counters: BTreeMap<String, Availability>,
    /// Where each counted figure comes from, and, when perf refused to count the kernel's
    /// share (an unprivileged user), what is missing and the setting that would give it.
    #[serde(default)]
    pub counting: Counting,
    pub phases: Vec<PhaseStat>,
    pub total_task_clock_ns: Option<Summary>,
    pub total_wall_ns: Option<Summary>,
    pub overhead: Overhead,
    pub ld_debug: Option<LdDebugStatistics>,
    pub prediction: Option<Prediction>,
    /// The loader after `main` (version 4); absent from older documents, whose raw runs
    /// recorded none of it (read as not measured, with why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_main: Option<super::after_main::AfterMainSection>,
    /// How the measured runs ended (the target's exit status or signal).
    pub endings: Vec<Ending>,
    /// Runs left out of the statistics (killed by SIGKILL, or a reference run by
    /// `--timeout`), by kind and reason; absent when every run counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
    /// CPU time of threads and child processes, counted apart (median over runs).
    pub children_task_clock_ns: Option<Summary>,
    /// The target's exit teardown that its per-task counters do not see (median over the
    /// measured runs of [`crate::record::Run::exit_uncounted_ns`]): in the CPU per exec the
    /// category shares are scaled to, not in the phases. None when no run measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_uncounted_ns: Option<Summary>,
    /// The kernel's tick-sampled user and kernel CPU time of the whole process (medians).
    pub user_ns: Option<Summary>,
    pub kernel_ns: Option<Summary>,
    /// The sampled runs' category breakdown, or why there is none.
    #[serde(default)]
    pub breakdown: Option<Breakdown>,
    #[serde(default)]
    pub breakdown_error: Option<String>,
    /// The strata the breakdown's shares are weighted by: each phase's CPU in the measured
    /// runs and where its composition came from ([`phase_weighted`]); empty when the shares
    /// are pooled (no breakdown, or a document written before the weighting).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breakdown_weights: Vec<PhaseWeight>,
    /// CPU feature detection: its phase and category when significant, why its phase was not
    /// cut, and on a virtual machine that each `cpuid` is a hypervisor exit
    /// ([`crate::attribute::profile::cpu_features::note`]).
    #[serde(default)]
    pub cpu_features_note: Option<String>,
    /// The exec chain followed to the measured program: the target as given first, the
    /// measured image last (one image when the target execs nothing); empty with
    /// `--no-follow`.
    #[serde(default)]
    pub followed: Vec<ExecImage>,
    /// The CPU the exec runs' tracer and target shared ([`crate::trace::pin`]): `Some(Some(n))`,
    /// written as `n`; `Some(None)`, written as `null`, when they were not pinned (`--no-pin`,
    /// or the kernel refused the mask); `None` in documents written before the field existed
    /// (not written back).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub pinned_cpu: Option<Option<usize>>,
    /// Every run, raw.
    pub raw: Vec<Run>,
}

/// One stratum of the phase-weighted shares (JSON `profile.breakdown_weights`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseWeight {
    /// The span label ("kernel exec", "relocation: libc.so.6"), [`crate::attribute::profile::phase_weighted::CHILDREN`] or [`crate::attribute::profile::phase_weighted::OUTSIDE`].
    pub span: String,
    /// Its CPU per exec in the measured (unsampled) runs, median over them.
    pub cpu_ns: f64,
    /// The sampled runs' samples in it (instrumentation left out).
    pub samples: u64,
    pub composition: Composition,
}

/// Where a stratum's composition came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Composition {
    /// Its own samples.
    Own,
    /// No sample of its own: the samples of its phase kind (every object of that phase).
    Phase,
    /// No sample of its phase either: left out of the shares (the other strata's times are
    /// scaled to the whole CPU); a composition borrowed from other phases would put, say,
    /// `exec: kernel` into `main to exit`.
    LeftOut,
}

impl From<phase_weighted::Composition> for Composition {
    fn from(c: phase_weighted::Composition) -> Self {
        use phase_weighted::Composition as C;
        match c {
            C::Own => Composition::Own,
            C::Phase => Composition::Phase,
            C::LeftOut => Composition::LeftOut,
        }
    }
}

impl From<Composition> for phase_weighted::Composition {
    fn from(c: Composition) -> Self {
        use phase_weighted::Composition as C;
        match c {
            Composition::Own => C::Own,
            Composition::Phase => C::Phase,
            Composition::LeftOut => C::LeftOut,
        }
    }
}

impl From<profile::PhaseStat> for PhaseStat {
    fn from(x: profile::PhaseStat) -> Self {
        PhaseStat {
            phase: x.phase,
            object: x.object,
            task_clock_ns: x.task_clock_ns.map(Into::into),
            task_clock_raw_ns: x.task_clock_raw_ns.map(Into::into),
            wall_ns: x.wall_ns.map(Into::into),
            page_faults: x.page_faults.map(Into::into),
            share: x.share,
            wide_interval: x.wide_interval,
        }
    }
}

impl From<PhaseStat> for profile::PhaseStat {
    fn from(x: PhaseStat) -> Self {
        profile::PhaseStat {
            phase: x.phase,
            object: x.object,
            task_clock_ns: x.task_clock_ns.map(Into::into),
            task_clock_raw_ns: x.task_clock_raw_ns.map(Into::into),
            wall_ns: x.wall_ns.map(Into::into),
            page_faults: x.page_faults.map(Into::into),
            share: x.share,
            wide_interval: x.wide_interval,
        }
    }
}

impl From<profile::LdDebugStatistics> for LdDebugStatistics {
    fn from(x: profile::LdDebugStatistics) -> Self {
        LdDebugStatistics {
            startup_cycles: x.startup_cycles,
            relocation_cycles: x.relocation_cycles,
            load_cycles: x.load_cycles,
            relocations: x.relocations,
            relocations_from_cache: x.relocations_from_cache,
            relative_relocations: x.relative_relocations,
            final_relocations: x.final_relocations,
            bindings: x.bindings,
        }
    }
}

impl From<LdDebugStatistics> for profile::LdDebugStatistics {
    fn from(x: LdDebugStatistics) -> Self {
        profile::LdDebugStatistics {
            startup_cycles: x.startup_cycles,
            relocation_cycles: x.relocation_cycles,
            load_cycles: x.load_cycles,
            relocations: x.relocations,
            relocations_from_cache: x.relocations_from_cache,
            relative_relocations: x.relative_relocations,
            final_relocations: x.final_relocations,
            bindings: x.bindings,
        }
    }
}

impl From<profile::Overhead> for Overhead {
    fn from(x: profile::Overhead) -> Self {
        Overhead {
            uninstrumented_ns: x.uninstrumented_ns.map(Into::into),
            coarse_ns: x.coarse_ns.map(Into::into),
            per_object_ns: x.per_object_ns.map(Into::into),
            per_object_stops: x.per_object_stops,
            ns_per_stop: x.ns_per_stop,
            ns_per_stop_slope: x.ns_per_stop_slope,
            residue: x.residue.map(Into::into),
            agreement: x.agreement,
            agreement_raw: x.agreement_raw,
            agreement_coarse: x.agreement_coarse,
        }
    }
}

impl From<Overhead> for profile::Overhead {
    fn from(x: Overhead) -> Self {
        profile::Overhead {
            uninstrumented_ns: x.uninstrumented_ns.map(Into::into),
            coarse_ns: x.coarse_ns.map(Into::into),
            per_object_ns: x.per_object_ns.map(Into::into),
            per_object_stops: x.per_object_stops,
            ns_per_stop: x.ns_per_stop,
            ns_per_stop_slope: x.ns_per_stop_slope,
            residue: x.residue.map(Into::into),
            agreement: x.agreement,
            agreement_raw: x.agreement_raw,
            agreement_coarse: x.agreement_coarse,
        }
    }
}

impl ProfileSection {
    /// The section as the analysis holds it (what `report` renders and `diff` compares).
    pub fn section(&self) -> profile::ProfileSection {
        self.clone().into()
    }
}

impl From<profile::ProfileSection> for ProfileSection {
    fn from(x: profile::ProfileSection) -> Self {
        ProfileSection {
            argv: x.argv,
            detail: x.detail,
            runs: x.runs,
            warmup: x.warmup,
            counters: x.counters,
            counting: x.counting.into(),
            phases: all(x.phases),
            total_task_clock_ns: x.total_task_clock_ns.map(Into::into),
            total_wall_ns: x.total_wall_ns.map(Into::into),
            overhead: x.overhead.into(),
            ld_debug: x.ld_debug.map(Into::into),
            prediction: x.prediction.map(Into::into),
            after_main: Some(x.after_main.into()),
            endings: x.endings,
            left_out: x.left_out.into_iter().map(Into::into).collect(),
            children_task_clock_ns: x.children_task_clock_ns.map(Into::into),
            exit_uncounted_ns: x.exit_uncounted_ns.map(Into::into),
            user_ns: x.user_ns.map(Into::into),
            kernel_ns: x.kernel_ns.map(Into::into),
            breakdown: x.breakdown.map(Into::into),
            breakdown_error: x.breakdown_error,
            breakdown_weights: all(x.breakdown_weights),
            cpu_features_note: x.cpu_features_note,
            followed: x.followed,
            pinned_cpu: x.pinned_cpu,
            raw: x.raw,
        }
    }
}

impl From<ProfileSection> for profile::ProfileSection {
    fn from(x: ProfileSection) -> Self {
        let after_main = match x.after_main {
            Some(a) => a.into(),
            None => crate::attribute::after_main::section(&x.raw, &x.detail),
        };
        profile::ProfileSection {
            argv: x.argv,
            detail: x.detail,
            runs: x.runs,
            warmup: x.warmup,
            counters: x.counters,
            counting: x.counting.into(),
            phases: all(x.phases),
            total_task_clock_ns: x.total_task_clock_ns.map(Into::into),
            total_wall_ns: x.total_wall_ns.map(Into::into),
            overhead: x.overhead.into(),
            ld_debug: x.ld_debug.map(Into::into),
            prediction: x.prediction.map(Into::into),
            after_main,
            endings: x.endings,
            left_out: x.left_out.into_iter().map(Into::into).collect(),
            children_task_clock_ns: x.children_task_clock_ns.map(Into::into),
            exit_uncounted_ns: x.exit_uncounted_ns.map(Into::into),
            user_ns: x.user_ns.map(Into::into),
            kernel_ns: x.kernel_ns.map(Into::into),
            breakdown: x.breakdown.map(Into::into),
            breakdown_error: x.breakdown_error,
            breakdown_weights: all(x.breakdown_weights),
            cpu_features_note: x.cpu_features_note,
            followed: x.followed,
            pinned_cpu: x.pinned_cpu,
            raw: x.raw,
            // The stacks go to --folded/--flamegraph, never into the document.
            folded: Vec::new(),
            // Recomputed from the document's sections by whoever has its closure.
        }
    }
}

impl From<phase_weighted::PhaseWeight> for PhaseWeight {
    fn from(x: phase_weighted::PhaseWeight) -> Self {
        PhaseWeight {
            span: x.span,
            cpu_ns: x.cpu_ns,
            samples: x.samples,
            composition: x.composition.into(),
        }
    }
}

impl From<PhaseWeight> for phase_weighted::PhaseWeight {
    fn from(x: PhaseWeight) -> Self {
        phase_weighted::PhaseWeight {
            span: x.span,
            cpu_ns: x.cpu_ns,
            samples: x.samples,
            composition: x.composition.into(),
        }
    }
}

/// Reads `counters` as written now (`"available"` or `{"unavailable": why}`) and as documents
/// before it wrote them (every value a string: `"available"` or Rust's debug form of the
/// reason, `Unavailable("why")`).
fn counters_any_version<'de, D>(d: D) -> Result<BTreeMap<String, Availability>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Now(Availability),
        Before(String),
    }
    let map = BTreeMap::<String, Either>::deserialize(d)?;
    Ok(map
        .into_iter()
        .map(|(k, v)| {
            let a = match v {
                Either::Now(a) => a,
                Either::Before(s) if s == "available" => Availability::Available,
                Either::Before(s) => {
                    let why = s
                        .strip_prefix("Unavailable(\"")
                        .and_then(|r| r.strip_suffix("\")"))
                        .unwrap_or(&s);
                    Availability::Unavailable(why.to_string())
                }
            };
            (k, a)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Serialize};

    use super::Availability;

    /// `counters` is written as `"available"` / `{"unavailable": why}` (it was once Rust's debug
    /// string), and documents written before still read, with the reason recovered.
    #[test]
    fn counters_are_written_as_objects_and_old_strings_still_read() {
        #[derive(Serialize, Deserialize)]
        struct Doc {
            #[serde(deserialize_with = "super::counters_any_version")]
            counters: BTreeMap<String, Availability>,
        }
        let doc = Doc {
            counters: BTreeMap::from([
                (
                    "cycles".to_string(),
                    Availability::Unavailable("no PMU".into()),
                ),
                ("task-clock".to_string(), Availability::Available),
            ]),
        };
        let text = serde_json::to_string(&doc).unwrap();
        assert_eq!(
            text,
            r#"{"counters":{"cycles":{"unavailable":"no PMU"},"task-clock":"available"}}"#
        );
        let back: Doc = serde_json::from_str(&text).unwrap();
        assert_eq!(back.counters, doc.counters);
        let old = r#"{"counters":{"cycles":"Unavailable(\"no PMU\")","task-clock":"available"}}"#;
        let back: Doc = serde_json::from_str(old).unwrap();
        assert_eq!(back.counters, doc.counters);
    }
}

/// Reads a field that may be `null` as `Some(None)`, so a document that has it (`null`: not
/// pinned) differs from one written before it existed (absent: `None` by `serde(default)`).
fn present<'de, D>(d: D) -> Result<Option<Option<usize>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    <Option<usize> as Deserialize>::deserialize(d).map(Some)
}

/// Where a counted figure comes from ([`crate::perf::Source`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    Perf,
    PerfUserMode,
    ProcSchedstat,
    ProcStat,
}

/// What perf refused and the setting that would give it ([`crate::perf::Fallback`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fallback {
    pub paranoid: Option<i32>,
    pub refusal: String,
    pub missing: Vec<String>,
    pub fix: String,
}

/// Where each counted figure comes from ([`crate::perf::Counting`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counting {
    pub sources: BTreeMap<String, Source>,
    pub fallback: Option<Fallback>,
}

/// Runs of one kind left out of the statistics, and why ([`profile::LeftOut`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    pub instrumentation: crate::record::Instrumentation,
    /// "killed by SIGKILL" or "timed out".
    pub why: String,
    pub count: usize,
    /// How many runs of that kind there were.
    pub of: usize,
}

impl LeftOut {
    /// "2 of 5 uninstrumented runs timed out: left out" ([`profile::LeftOut::describe`]).
    pub fn describe(&self) -> String {
        profile::LeftOut::from(self.clone()).describe()
    }
}

impl From<profile::LeftOut> for LeftOut {
    fn from(x: profile::LeftOut) -> Self {
        LeftOut {
            instrumentation: x.instrumentation,
            why: x.why,
            count: x.count,
            of: x.of,
        }
    }
}

impl From<LeftOut> for profile::LeftOut {
    fn from(x: LeftOut) -> Self {
        profile::LeftOut {
            instrumentation: x.instrumentation,
            why: x.why,
            count: x.count,
            of: x.of,
        }
    }
}

/// What `deps` predicted glibc's LD_DEBUG=statistics would say ([`link_cost::Prediction`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub objects: u64,
    /// Start-up symbol lookups not answered by the cache, plus ld.so's own
    /// ([`link_cost::RTLD_INTERNAL_LOOKUPS`]).
    pub lookups: u64,
    pub cache_hits: u64,
    /// Sum of DT_RELACOUNT (what LD_DEBUG=statistics calls relative relocations).
    pub relacount: u64,
    pub relative_total: u64,
    pub lazy_deferred: u64,
    /// Per object: start-up lookups and relocations (path -> (lookups, total)).
    pub per_object: BTreeMap<String, (u64, u64)>,
}

impl From<link_cost::Prediction> for Prediction {
    fn from(x: link_cost::Prediction) -> Self {
        Prediction {
            objects: x.objects,
            lookups: x.lookups,
            cache_hits: x.cache_hits,
            relacount: x.relacount,
            relative_total: x.relative_total,
            lazy_deferred: x.lazy_deferred,
            per_object: x.per_object,
        }
    }
}

impl From<Prediction> for link_cost::Prediction {
    fn from(x: Prediction) -> Self {
        link_cost::Prediction {
            objects: x.objects,
            lookups: x.lookups,
            cache_hits: x.cache_hits,
            relacount: x.relacount,
            relative_total: x.relative_total,
            lazy_deferred: x.lazy_deferred,
            per_object: x.per_object,
        }
    }
}
