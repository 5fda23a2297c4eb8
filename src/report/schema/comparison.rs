//! The comparison document (`diff`, `compare`: `--format json`, `--json FILE`): the verdict,
//! the factors and the attribution, built from [`crate::compare`]'s results (the conversions
//! live there, `compare` being above `report`). `report` renders a saved comparison from these
//! types directly, so they are only ever built from the analysis, never converted back.

use serde::{Deserialize, Serialize};

use super::Tool;
use crate::record::Machine;

/// The change of one figure from BASE to HEAD.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub base_n: usize,
    pub head_n: usize,
    pub base_median: f64,
    pub head_median: f64,
    /// (HEAD median / BASE median − 1) × 100.
    pub change_pct: f64,
    /// 95% percentile-bootstrap interval of that change, in %.
    pub ci95_pct: (f64, f64),
    /// Two-sided Mann–Whitney U p-value (exact without ties for small samples, else the
    /// normal approximation with tie and continuity corrections).
    pub p_value: f64,
    /// The split-half noise floor in %: the larger of the two sides' |median(odd half) /
    /// median(even half) − 1|, i.e. the change an A/A comparison of this very data shows.
    /// The halves are the odd and even runs (start-up: one value per run, runs interleaved in
    /// time), the odd and even interleaved loops (`compare --fork`), or the first and the
    /// second half of a single fork loop (drift over the loop).
    pub noise_floor_pct: f64,
    /// The interval excludes zero, p < 0.05 and |change| > the noise floor.
    pub significant: bool,
}

/// One figure of the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// "total_cpu", "startup_cpu", "after_main_libraries", "main_cpu", "exit_cpu",
    /// "startup_wall", "fork_round_trip", "fork_child_cpu", "fork_parent_cpu".
    pub key: String,
    pub label: String,
    /// Whether it decides the verdict: the CPU figures (total CPU per exec, start-up, the
    /// program's own work after main, exit teardown, the parent's CPU per fork). Wall times
    /// follow the machine's load and the ptrace stops' scheduling; they are shown, not judged.
    #[serde(default)]
    pub judged: bool,
    /// Whether `--fail-above` looks at it: total CPU, start-up CPU and the parent's CPU per
    /// fork, or the one `--gate` names.
    pub gated: bool,
    /// Where the values come from ("boundaries-only runs", "per-object runs", "fork loop").
    pub source: String,
    pub change: Option<Change>,
    /// Why there is no change (a document without the figure).
    pub missing: Option<String>,
}

/// The verdict of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// One line: "start-up CPU +31.2% [+28.0, +34.5] (p = 0.008); fork …" or
    /// "no significant change".
    pub summary: String,
    pub metrics: Vec<Metric>,
    /// Some judged metric changed significantly for the worse.
    pub slower: bool,
    pub faster: bool,
    /// Significant changes of the figures that do not decide (wall times), said apart.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One figure BASE → HEAD.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub name: String,
    pub base: Option<f64>,
    pub head: Option<f64>,
    /// head − base when both exist.
    pub delta: Option<f64>,
}

/// An object only one side loads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectChange {
    /// The name it was asked for (DT_NEEDED).
    pub name: String,
    pub path: String,
    /// The rule that found it ("ld.so.cache", "RUNPATH of app", …).
    pub found_by: String,
    /// The objects whose DT_NEEDED names it (basenames).
    pub needed_by: Vec<String>,
    pub relocations: u64,
    pub vmas: u64,
    pub file_bytes: u64,
}

/// Per-object figures BASE → HEAD (None: the side does not load it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectRow {
    pub name: String,
    pub base_path: Option<String>,
    pub head_path: Option<String>,
    /// relative, symbolic, plt, irelative, tls, copy, other, total, startup_lookups,
    /// probes, lazy_plt, initializers, vmas, file_bytes.
    pub rows: Vec<Row>,
    /// `after_main` only: loaded on both sides with the same counts, and each time's 95%
    /// intervals overlapping, so its change is within noise (the reports count it; `--detail`
    /// lists it). Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub within_noise: bool,
}

/// All factors.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Factors {
    /// Totals over the closure (the static model of each side).
    pub totals: Vec<Row>,
    pub objects_added: Vec<ObjectChange>,
    pub objects_removed: Vec<ObjectChange>,
    /// Only objects where some figure differs (or that one side lacks).
    pub objects: Vec<ObjectRow>,
    /// Measured CPU per phase (median ns; per object where the phase is per object).
    pub phases: Vec<Row>,
    /// Category shares of the sampled CPU, in % (when both were sampled).
    pub categories: Vec<Row>,
    /// ld.so's CPU after `main` (median ns, the dlopen and dlclose calls), when both
    /// documents are profiles (version 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_main_cpu: Option<Row>,
    /// Per object loaded after `main` (times in µs): those whose figures differ, and those
    /// one side lacks (no path on that side: "added", "removed").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after_main: Vec<ObjectRow>,
    /// Why a group is missing ("BASE has no deps section", …).
    pub notes: Vec<String>,
}

/// One factor's change in one object, priced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Term {
    /// "object", "relative relocations", "lookups", "probes", "initializers", "objects".
    pub factor: String,
    pub base: f64,
    pub head: f64,
    pub delta: f64,
    /// The fitted unit cost (ns per unit).
    pub unit_ns: f64,
    /// delta × unit_ns, rounded to whole ns.
    pub ns: f64,
}

/// One object's (or the loader's) share of a part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub object: String,
    /// "added", "removed" or "changed".
    pub change: String,
    /// Σ terms' ns.
    pub ns: f64,
    /// The measured change of this object's phase (median HEAD − median BASE, an absent
    /// side counting 0), for comparison with the model's account.
    pub measured_ns: Option<f64>,
    pub terms: Vec<Term>,
}

/// A phase group: "relocation", "initializers", "search & mapping".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Part {
    pub factor: String,
    /// Σ items' ns.
    pub ns: f64,
    /// The measured change of the phase group (sum of the items' measured changes).
    pub measured_ns: Option<f64>,
    pub items: Vec<Item>,
}

/// A fitted unit cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitCost {
    /// The fit it comes from ("relocation", "initializers", "search & mapping").
    pub fit: String,
    /// "per relative relocation", "per probe", …
    pub unit: String,
    pub ns: f64,
    /// 95% percentile-bootstrap interval over the runs.
    pub ci95_ns: Option<(f64, f64)>,
}

/// How a fit was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FitInfo {
    pub fit: String,
    /// "t = a·object + b·relative + c·lookups + d·probes, a..d ≥ 0".
    pub model: String,
    /// Points: objects × builds (relocation, initializers) or runs (search & mapping).
    pub points: usize,
    pub r_squared: Option<f64>,
}

/// The counts behind one object's unit-cost inputs, per side (from the `deps` section).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ObjectInputs {
    /// "base" or "head".
    pub side: String,
    pub object: String,
    pub path: String,
    pub relative: u64,
    pub symbolic: u64,
    pub plt: u64,
    pub lazy_plt: u64,
    pub lookups: u64,
    pub probes: u64,
    /// Start-up lookups this object's own definitions answer (what -Bsymbolic saves).
    pub self_answered: u64,
    pub relr: u64,
    pub initializers: u64,
    /// Median CPU of its relocation / initializers over the per-object runs (None: not seen).
    pub relocation_ns: Option<f64>,
    pub initializers_ns: Option<f64>,
}

/// A prediction from the unit costs (never measured).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WhatIf {
    pub change: String,
    /// Predicted change of HEAD's start-up CPU, ns (negative: faster). None: not predicted.
    pub predicted_ns: Option<f64>,
    /// The prediction is a bound (at most this much), not an estimate.
    #[serde(default)]
    pub bound: bool,
    /// 95% percentile-bootstrap interval of the prediction: the same arithmetic on each
    /// resample's refitted unit costs (None: not predicted in every resample).
    #[serde(default)]
    pub ci95_ns: Option<(f64, f64)>,
    pub basis: String,
}

/// The whole attribution.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Attribution {
    /// The verdict's start-up CPU change, median HEAD − median BASE (ns), from its
    /// boundaries-only runs.
    pub measured_delta_ns: Option<f64>,
    /// The start-up CPU change on the runs the unit costs are fitted on (the per-object runs,
    /// less their stops), median HEAD − median BASE: what the attribution explains. The two
    /// kinds of run differ in how much the instrumentation slows the heavy phases, so
    /// explaining the boundaries-only change with per-object unit costs mixed two
    /// measurements (docs/compare.md, "Attribution").
    #[serde(default)]
    pub instrumented_delta_ns: Option<f64>,
    /// Σ parts' ns.
    pub explained_ns: f64,
    /// 95% bootstrap interval of the explained total (runs resampled, unit costs refitted).
    pub explained_ci95_ns: Option<(f64, f64)>,
    /// instrumented_delta_ns − explained_ns.
    pub unexplained_ns: Option<f64>,
    /// explained / instrumented delta, when the verdict's change is significant.
    pub explained_share: Option<f64>,
    /// 95% bootstrap interval of the share: each resample's explained total over the change
    /// of the same resampled runs.
    #[serde(default)]
    pub explained_share_ci95: Option<(f64, f64)>,
    pub parts: Vec<Part>,
    pub unit_costs: Vec<UnitCost>,
    pub fits: Vec<FitInfo>,
    pub inputs: Vec<ObjectInputs>,
    pub what_if: Vec<WhatIf>,
    pub notes: Vec<String>,
    /// How the report's start-up deltas relate, in one line; absent when a figure is missing
    /// (no per-object phases, no attribution).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciliation: Option<Reconciliation>,
}

/// One factor's explained change in the [`Reconciliation`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FactorDelta {
    pub factor: String,
    pub ns: f64,
}

/// How the start-up deltas of one report relate, every figure in ns rounded to 0.1 µs as the
/// reports print them, so that `verdict_ns = counted_ns + stops_correction_ns +
/// between_runs_ns`, `per_object_ns = counted_ns + stops_correction_ns` and `per_object_ns =
/// explained_ns + unexplained_ns`, `explained_ns` = Σ `by_factor`, exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reconciliation {
    /// The verdict's start-up CPU change (median HEAD − median BASE).
    pub verdict_ns: f64,
    /// The runs it comes from ("boundaries-only runs", …).
    pub verdict_source: String,
    /// Σ phases' median change in the per-object runs, as counted.
    pub counted_ns: f64,
    /// The change the correction for the ptrace stops makes to that.
    pub stops_correction_ns: f64,
    /// The per-object runs' change less their stops: what the attribution explains.
    pub per_object_ns: f64,
    /// verdict − per-object: how the two kinds of run differ (or, when the verdict comes from
    /// the per-object runs too, the median of the sums and the sum of the phases' medians).
    pub between_runs_ns: f64,
    pub by_factor: Vec<FactorDelta>,
    pub explained_ns: f64,
    pub unexplained_ns: f64,
}

/// One side of a comparison, as the report names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideInfo {
    pub target: String,
    /// The target's arguments (its argv after `argv[0]`), as the report's title names them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// The document file (`diff`), or the environment given to it (`compare`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    pub machine: Option<Machine>,
    /// Measured runs (per-object) and fork iterations in the document.
    pub runs: usize,
    pub forks: u64,
    /// The runs left out of this side's statistics (killed by SIGKILL, reference runs past
    /// `--timeout`), as `profile` counts them; absent when every run counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<super::profile::LeftOut>,
}

/// The root of the JSON a comparison writes (`--format json`, `--json FILE`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Comparison {
    pub schema_version: u32,
    pub tool: Tool,
    /// "diff" or "compare".
    pub command: String,
    pub base: SideInfo,
    pub head: SideInfo,
    /// What differs between the two machines (only with `--force`; else diff refuses).
    pub machine_differences: Vec<String>,
    pub forced: bool,
    pub verdict: Verdict,
    pub factors: Factors,
    /// The start-up delta attributed to the factors in time, and what-if predictions.
    #[serde(default)]
    pub attribution: Attribution,
    /// `--fail-above PCT` and whether it tripped.
    pub fail_above_pct: Option<f64>,
    /// `--gate`: the one figure the gate looks at ("startup", "total", "fork"); absent: the
    /// default set (the metrics marked `gated`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
    pub failed: bool,
    /// Why the gate failed ("total CPU per exec +12.0% > 5%"); absent when it passed or none
    /// was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate_failure: Option<String>,
    /// The command line that reproduces this report.
    pub command_line: String,
    /// `compare`: how many measured rounds ran and why that many; absent for `diff` (and in
    /// comparisons written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds: Option<RoundsRun>,
}

/// The measured rounds of a `compare` (each runs BASE and HEAD once), and what ended them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundsRun {
    pub count: usize,
    /// "runs" (`-n` fixed the count), "budget" (`--min-time` was spent), "minimum" (the
    /// minimum number of rounds outlasted the budget), "maximum" (the maximum number of
    /// rounds came first), "timeout" (a run past `--timeout` ended them).
    pub stopped_by: String,
    /// `--min-time`, seconds; absent with `-n`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_s: Option<f64>,
    /// Wall time of the measured rounds, seconds.
    pub elapsed_s: f64,
}
