//! The comparison document (`diff`, `compare`: `--format json`, `--json FILE`): the verdict,
//! the factors and the attribution, converted from [`crate::compare`]'s results. `report`
//! renders a saved comparison from these types directly, so they are only ever built from the
//! analysis (`From`), never converted back.

use serde::{Deserialize, Serialize};

use super::Tool;
use crate::compare;
use crate::record::Machine;

fn all<T, U: From<T>>(v: Vec<T>) -> Vec<U> {
    v.into_iter().map(U::from).collect()
}

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

impl From<compare::stats::Change> for Change {
    fn from(x: compare::stats::Change) -> Self {
        Change {
            base_n: x.base_n,
            head_n: x.head_n,
            base_median: x.base_median,
            head_median: x.head_median,
            change_pct: x.change_pct,
            ci95_pct: x.ci95_pct,
            p_value: x.p_value,
            noise_floor_pct: x.noise_floor_pct,
            significant: x.significant,
        }
    }
}

/// One figure of the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// "startup_cpu", "startup_wall", "fork_round_trip", "fork_child_cpu", "fork_parent_cpu".
    pub key: String,
    pub label: String,
    /// Whether it decides the verdict and `--fail-above` looks at it: the CPU figures
    /// (start-up CPU, the parent's CPU per fork). Wall times follow the machine's load and
    /// the ptrace stops' scheduling; they are shown, not judged.
    pub gated: bool,
    /// Where the values come from ("boundaries-only runs", "per-object runs", "fork loop").
    pub source: String,
    pub change: Option<Change>,
    /// Why there is no change (a document without the figure).
    pub missing: Option<String>,
}

impl From<compare::verdict::Metric> for Metric {
    fn from(x: compare::verdict::Metric) -> Self {
        Metric {
            key: x.key,
            label: x.label,
            gated: x.gated,
            source: x.source,
            change: x.change.map(Into::into),
            missing: x.missing,
        }
    }
}

/// The verdict of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// One line: "start-up CPU +31.2% [+28.0, +34.5] (p = 0.008); fork …" or
    /// "no significant change".
    pub summary: String,
    pub metrics: Vec<Metric>,
    /// Some gated metric changed significantly for the worse.
    pub slower: bool,
    pub faster: bool,
    /// Significant changes of the figures that do not decide (wall times), said apart.
    #[serde(default)]
    pub notes: Vec<String>,
}

impl From<compare::verdict::Verdict> for Verdict {
    fn from(x: compare::verdict::Verdict) -> Self {
        Verdict {
            summary: x.summary,
            metrics: all(x.metrics),
            slower: x.slower,
            faster: x.faster,
            notes: x.notes,
        }
    }
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

impl From<compare::factors::Row> for Row {
    fn from(x: compare::factors::Row) -> Self {
        Row {
            name: x.name,
            base: x.base,
            head: x.head,
            delta: x.delta,
        }
    }
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

impl From<compare::factors::ObjectChange> for ObjectChange {
    fn from(x: compare::factors::ObjectChange) -> Self {
        ObjectChange {
            name: x.name,
            path: x.path,
            found_by: x.found_by,
            needed_by: x.needed_by,
            relocations: x.relocations,
            vmas: x.vmas,
            file_bytes: x.file_bytes,
        }
    }
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
}

impl From<compare::factors::ObjectRow> for ObjectRow {
    fn from(x: compare::factors::ObjectRow) -> Self {
        ObjectRow {
            name: x.name,
            base_path: x.base_path,
            head_path: x.head_path,
            rows: all(x.rows),
        }
    }
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
    /// Why a group is missing ("BASE has no deps section", …).
    pub notes: Vec<String>,
}

impl From<compare::factors::Factors> for Factors {
    fn from(x: compare::factors::Factors) -> Self {
        Factors {
            totals: all(x.totals),
            objects_added: all(x.objects_added),
            objects_removed: all(x.objects_removed),
            objects: all(x.objects),
            phases: all(x.phases),
            categories: all(x.categories),
            notes: x.notes,
        }
    }
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

impl From<compare::attribution::Term> for Term {
    fn from(x: compare::attribution::Term) -> Self {
        Term {
            factor: x.factor,
            base: x.base,
            head: x.head,
            delta: x.delta,
            unit_ns: x.unit_ns,
            ns: x.ns,
        }
    }
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

impl From<compare::attribution::Item> for Item {
    fn from(x: compare::attribution::Item) -> Self {
        Item {
            object: x.object,
            change: x.change,
            ns: x.ns,
            measured_ns: x.measured_ns,
            terms: all(x.terms),
        }
    }
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

impl From<compare::attribution::Part> for Part {
    fn from(x: compare::attribution::Part) -> Self {
        Part {
            factor: x.factor,
            ns: x.ns,
            measured_ns: x.measured_ns,
            items: all(x.items),
        }
    }
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

impl From<compare::attribution::UnitCost> for UnitCost {
    fn from(x: compare::attribution::UnitCost) -> Self {
        UnitCost {
            fit: x.fit,
            unit: x.unit,
            ns: x.ns,
            ci95_ns: x.ci95_ns,
        }
    }
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

impl From<compare::attribution::FitInfo> for FitInfo {
    fn from(x: compare::attribution::FitInfo) -> Self {
        FitInfo {
            fit: x.fit,
            model: x.model,
            points: x.points,
            r_squared: x.r_squared,
        }
    }
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

impl From<compare::attribution::ObjectInputs> for ObjectInputs {
    fn from(x: compare::attribution::ObjectInputs) -> Self {
        ObjectInputs {
            side: x.side,
            object: x.object,
            path: x.path,
            relative: x.relative,
            symbolic: x.symbolic,
            plt: x.plt,
            lazy_plt: x.lazy_plt,
            lookups: x.lookups,
            probes: x.probes,
            self_answered: x.self_answered,
            relr: x.relr,
            initializers: x.initializers,
            relocation_ns: x.relocation_ns,
            initializers_ns: x.initializers_ns,
        }
    }
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

impl From<compare::attribution::WhatIf> for WhatIf {
    fn from(x: compare::attribution::WhatIf) -> Self {
        WhatIf {
            change: x.change,
            predicted_ns: x.predicted_ns,
            bound: x.bound,
            ci95_ns: x.ci95_ns,
            basis: x.basis,
        }
    }
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
    /// measurements (README, "Attribution").
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
}

impl From<compare::attribution::Attribution> for Attribution {
    fn from(x: compare::attribution::Attribution) -> Self {
        Attribution {
            measured_delta_ns: x.measured_delta_ns,
            instrumented_delta_ns: x.instrumented_delta_ns,
            explained_ns: x.explained_ns,
            explained_ci95_ns: x.explained_ci95_ns,
            unexplained_ns: x.unexplained_ns,
            explained_share: x.explained_share,
            explained_share_ci95: x.explained_share_ci95,
            parts: all(x.parts),
            unit_costs: all(x.unit_costs),
            fits: all(x.fits),
            inputs: all(x.inputs),
            what_if: all(x.what_if),
            notes: x.notes,
        }
    }
}

/// One side of a comparison, as the report names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideInfo {
    pub target: String,
    /// The document file (`diff`), or the environment given to it (`compare`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    pub machine: Option<Machine>,
    /// Measured runs (per-object) and fork iterations in the document.
    pub runs: usize,
    pub forks: u64,
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
    pub failed: bool,
    /// The command line that reproduces this report.
    pub command_line: String,
}
