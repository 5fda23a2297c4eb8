//! A sampled breakdown (exec or fork): the category shares with their intervals, the exec
//! kernel's parts, the instrumentation's share and the phase × category table, converted from
//! and back to [`crate::attribute`]'s own types. The categories are written under the
//! taxonomy's stable snake_case names ([`super::common::Category`]), shared with the folded
//! files.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::common::{Category, Summary};

use crate::attribute::{breakdown, exec_parts, phase_table};

fn all<T, U: From<T>>(v: Vec<T>) -> Vec<U> {
    v.into_iter().map(U::from).collect()
}

/// A count kept as f64 for arithmetic, written as the integer it is.
fn count<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() && *v >= 0.0 && v.fract() == 0.0 && *v < 2f64.powi(53) {
        s.serialize_u64(*v as u64)
    } else {
        s.serialize_f64(*v)
    }
}

/// A figure estimated from the pooled samples, and its 95% interval from the bootstrap over
/// units of the same pooled ratio (None: too few units, see [`crate::attribute::breakdown::MIN_UNITS_FOR_INTERVAL`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// Read from schema 1's Summary `median` too.
    #[serde(alias = "median")]
    pub value: f64,
    pub ci95: Option<(f64, f64)>,
}

/// One category in a breakdown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CategoryShare {
    pub category: Category,
    pub label: String,
    pub samples: u64,
    /// Share of all samples in the units (pooled).
    pub share: f64,
    /// 95% interval of `share` (bootstrap over units); None with too few units.
    #[serde(default)]
    pub share_ci95: Option<(f64, f64)>,
    /// Units in which the category has at least one sample.
    #[serde(default)]
    pub units_present: usize,
    /// The spread of the per-unit shares, over units with samples (descriptive: the figures
    /// above do not derive from it).
    pub share_per_unit: Option<Summary>,
    /// CPU time per exec or per fork (ns): the pooled sample weight over the execs/forks
    /// covered, or `share` × the measured CPU ([`crate::attribute::breakdown::scale_to_measured`]); same interval.
    pub ns_per_exec_or_fork: Option<Estimate>,
    /// Samples by phase.
    pub phases: BTreeMap<String, u64>,
}

/// The breakdown of one section (`exec` or `fork`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    pub section: String,
    pub samples: u64,
    pub units: usize,
    /// Units with at least one sample (intervals need [`crate::attribute::breakdown::MIN_UNITS_FOR_INTERVAL`]).
    #[serde(default)]
    pub units_with_samples: usize,
    /// Samples of the recordings that fell outside every unit (left out of the shares).
    #[serde(default)]
    pub outside_units: u64,
    /// ldcost's own ptrace stops in the units (the `instrumentation` category): counted here and
    /// left out of `samples`, every share and every time.
    #[serde(default)]
    pub instrumentation: Instrumentation,
    /// Execs or forks the units cover (a count: written as an integer).
    #[serde(serialize_with = "count")]
    pub covered: f64,
    pub categories: Vec<CategoryShare>,
    /// `exec_kernel` in parts (old image teardown, ELF mapping, arguments and stack, other),
    /// largest first; they add up to the category (same samples, same estimator).
    #[serde(default)]
    pub exec_kernel_parts: Vec<ExecPartShare>,
    /// The phase × category table: each span (phase and object) split into categories, by
    /// the same pooled shares × CPU ([`crate::attribute::phase_table`]).
    #[serde(default)]
    pub phase_table: Vec<PhaseRow>,
    /// The measured CPU per exec/fork the times are scaled to ([`crate::attribute::breakdown::scale_to_measured`]): every
    /// `ns_per_exec_or_fork` is its share × this; None when they are pooled sample weights.
    #[serde(default)]
    pub cpu_ns_per_unit: Option<f64>,
    /// Sampling facts and limits, said in the report.
    pub notes: Vec<String>,
}

/// One part of `exec: kernel` in a breakdown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecPartShare {
    pub part: ExecPart,
    pub label: String,
    pub samples: u64,
    /// Of all the breakdown's samples (pooled), as the category's own share.
    pub share: f64,
    /// `share` × the measured CPU per exec (or the pooled sample weight per exec), as the
    /// category's.
    pub ns_per_exec_or_fork: f64,
}

/// ldcost's own ptrace stops in the target ([`crate::attribute::categories::Category::Instrumentation`]): counted, and left
/// out of every share and time of the breakdown.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Instrumentation {
    /// Samples in the units classified `instrumentation`.
    pub samples: u64,
    /// `samples` over all the units' samples, the target's and these (the sampled CPU).
    pub share_of_sampled: f64,
    /// Samples by phase (span label).
    pub phases: BTreeMap<String, u64>,
}

/// One category's part of a phase row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseCell {
    pub category: Category,
    pub samples: u64,
    /// Of all samples of the breakdown (pooled), as the category table's shares.
    pub share: f64,
    /// `share` × the measured CPU per exec (or the pooled sample weight per exec).
    pub ns_per_exec_or_fork: f64,
}

/// One phase (and object) of the runs, split into categories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// A part of the exec kernel's time ([`exec_parts::ExecPart`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecPart {
    OldImageTeardown,
    ElfMapping,
    ArgumentsAndStack,
    Other,
}

impl From<exec_parts::ExecPart> for ExecPart {
    fn from(p: exec_parts::ExecPart) -> Self {
        use exec_parts::ExecPart as P;
        match p {
            P::OldImageTeardown => ExecPart::OldImageTeardown,
            P::ElfMapping => ExecPart::ElfMapping,
            P::ArgumentsAndStack => ExecPart::ArgumentsAndStack,
            P::Other => ExecPart::Other,
        }
    }
}

impl From<ExecPart> for exec_parts::ExecPart {
    fn from(p: ExecPart) -> Self {
        use exec_parts::ExecPart as P;
        match p {
            ExecPart::OldImageTeardown => P::OldImageTeardown,
            ExecPart::ElfMapping => P::ElfMapping,
            ExecPart::ArgumentsAndStack => P::ArgumentsAndStack,
            ExecPart::Other => P::Other,
        }
    }
}

impl From<breakdown::Estimate> for Estimate {
    fn from(x: breakdown::Estimate) -> Self {
        Estimate {
            value: x.value,
            ci95: x.ci95,
        }
    }
}

impl From<Estimate> for breakdown::Estimate {
    fn from(x: Estimate) -> Self {
        breakdown::Estimate {
            value: x.value,
            ci95: x.ci95,
        }
    }
}

impl From<breakdown::CategoryShare> for CategoryShare {
    fn from(x: breakdown::CategoryShare) -> Self {
        CategoryShare {
            category: x.category.into(),
            label: x.label,
            samples: x.samples,
            share: x.share,
            share_ci95: x.share_ci95,
            units_present: x.units_present,
            share_per_unit: x.share_per_unit.map(Into::into),
            ns_per_exec_or_fork: x.ns_per_exec_or_fork.map(Into::into),
            phases: x.phases,
        }
    }
}

impl From<CategoryShare> for breakdown::CategoryShare {
    fn from(x: CategoryShare) -> Self {
        breakdown::CategoryShare {
            category: x.category.into(),
            label: x.label,
            samples: x.samples,
            share: x.share,
            share_ci95: x.share_ci95,
            units_present: x.units_present,
            share_per_unit: x.share_per_unit.map(Into::into),
            ns_per_exec_or_fork: x.ns_per_exec_or_fork.map(Into::into),
            phases: x.phases,
        }
    }
}

impl From<breakdown::Breakdown> for Breakdown {
    fn from(x: breakdown::Breakdown) -> Self {
        Breakdown {
            section: x.section,
            samples: x.samples,
            units: x.units,
            units_with_samples: x.units_with_samples,
            outside_units: x.outside_units,
            instrumentation: x.instrumentation.into(),
            covered: x.covered,
            categories: all(x.categories),
            exec_kernel_parts: all(x.exec_kernel_parts),
            phase_table: all(x.phase_table),
            cpu_ns_per_unit: x.cpu_ns_per_unit,
            notes: x.notes,
        }
    }
}

impl From<Breakdown> for breakdown::Breakdown {
    fn from(x: Breakdown) -> Self {
        breakdown::Breakdown {
            section: x.section,
            samples: x.samples,
            units: x.units,
            units_with_samples: x.units_with_samples,
            outside_units: x.outside_units,
            instrumentation: x.instrumentation.into(),
            covered: x.covered,
            categories: all(x.categories),
            exec_kernel_parts: all(x.exec_kernel_parts),
            phase_table: all(x.phase_table),
            cpu_ns_per_unit: x.cpu_ns_per_unit,
            notes: x.notes,
        }
    }
}

impl From<exec_parts::ExecPartShare> for ExecPartShare {
    fn from(x: exec_parts::ExecPartShare) -> Self {
        ExecPartShare {
            part: x.part.into(),
            label: x.label,
            samples: x.samples,
            share: x.share,
            ns_per_exec_or_fork: x.ns_per_exec_or_fork,
        }
    }
}

impl From<ExecPartShare> for exec_parts::ExecPartShare {
    fn from(x: ExecPartShare) -> Self {
        exec_parts::ExecPartShare {
            part: x.part.into(),
            label: x.label,
            samples: x.samples,
            share: x.share,
            ns_per_exec_or_fork: x.ns_per_exec_or_fork,
        }
    }
}

impl From<exec_parts::Instrumentation> for Instrumentation {
    fn from(x: exec_parts::Instrumentation) -> Self {
        Instrumentation {
            samples: x.samples,
            share_of_sampled: x.share_of_sampled,
            phases: x.phases,
        }
    }
}

impl From<Instrumentation> for exec_parts::Instrumentation {
    fn from(x: Instrumentation) -> Self {
        exec_parts::Instrumentation {
            samples: x.samples,
            share_of_sampled: x.share_of_sampled,
            phases: x.phases,
        }
    }
}

impl From<phase_table::PhaseCell> for PhaseCell {
    fn from(x: phase_table::PhaseCell) -> Self {
        PhaseCell {
            category: x.category.into(),
            samples: x.samples,
            share: x.share,
            ns_per_exec_or_fork: x.ns_per_exec_or_fork,
        }
    }
}

impl From<PhaseCell> for phase_table::PhaseCell {
    fn from(x: PhaseCell) -> Self {
        phase_table::PhaseCell {
            category: x.category.into(),
            samples: x.samples,
            share: x.share,
            ns_per_exec_or_fork: x.ns_per_exec_or_fork,
        }
    }
}

impl From<phase_table::PhaseRow> for PhaseRow {
    fn from(x: phase_table::PhaseRow) -> Self {
        PhaseRow {
            span: x.span,
            phase: x.phase,
            object: x.object,
            samples: x.samples,
            share: x.share,
            ns_per_exec_or_fork: x.ns_per_exec_or_fork,
            categories: all(x.categories),
        }
    }
}

impl From<PhaseRow> for phase_table::PhaseRow {
    fn from(x: PhaseRow) -> Self {
        phase_table::PhaseRow {
            span: x.span,
            phase: x.phase,
            object: x.object,
            samples: x.samples,
            share: x.share,
            ns_per_exec_or_fork: x.ns_per_exec_or_fork,
            categories: all(x.categories),
        }
    }
}
