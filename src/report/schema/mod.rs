//! The documents ldcost writes and reads back, as they are on disk: the profile document
//! ([`Document`]: `deps`, `profile`, `compare --save-base/--save-head`), the comparison
//! ([`Comparison`]: `diff`, `compare`), and the parts they are made of.
//!
//! These types are the file format. The analysis builds its own structs and converts them
//! here explicitly (`From`), so renaming an internal field cannot change a document; a change
//! to a type in this folder is a change of the format, which docs/json-schema.md,
//! docs/profile.schema.json and docs/comparison.schema.json describe and the tests in
//! [`tests`](self) hold to. `schema_version` is bumped only on incompatible changes;
//! `profile`, `compare` and `diff` add sections beside `deps` rather than changing it.
//!
//! What a live run recorded (phases, runs, the machine: [`crate::record`]) is embedded as it
//! is: those types are the recording, and their serde form is part of this format too.

pub mod after_main;
pub mod breakdown;
pub mod common;
pub mod comparison;
pub mod deps;
pub mod experiment;
pub mod fork;
pub mod profile;
pub mod summary;
#[cfg(test)]
pub(crate) mod tests;
pub mod tree;

use serde::{Deserialize, Serialize};

pub use comparison::{Comparison, SideInfo};
pub use deps::DepsSection;

/// Version of the JSON document. 1: the `deps` section. 2: a breakdown category's
/// `ns_per_exec_or_fork` is an Estimate (`value`, `ci95`: pooled share × CPU, one bootstrap).
/// 3: a profile document has `summary` and `fixes`. 4: the `profile` section has `after_main`
/// (the loader after `main`), and the summary's parts may hold "libraries loaded after main".
pub const SCHEMA_VERSION: u32 = 4;

/// The oldest version `report` and `diff` read: a version-2 document differs only in lacking
/// `summary` and `fixes`, which are computed from its `profile`, `fork` and `deps` sections.
pub const OLDEST_READABLE: u32 = 2;

/// The tool that wrote a document.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

/// The root of every JSON report.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document {
    pub schema_version: u32,
    pub tool: Tool,
    pub command: String,
    pub target: String,
    pub deps: Option<DepsSection>,
    /// Written by `profile`: the measured phases ([`crate::attribute::profile::ProfileSection`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<profile::ProfileSection>,
    /// Written by `profile --fork`: fork cost per fork and the footprint
    /// ([`crate::attribute::fork_cost::ForkSection`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<fork::ForkSection>,
    /// Written by `profile --fork` when the fork run was lost (the target killed from outside
    /// during it): why `fork` is absent. The exec runs' figures do not depend on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_not_measured: Option<String>,
    /// Written by `profile`: the machine it ran on ([`crate::record::Machine`]), which
    /// `diff` checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::record::Machine>,
    /// Written by `profile` (version 3): what the report opens with
    /// ([`crate::attribute::summary`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<summary::Summary>,
    /// Written by `profile` (version 3): the predicted fixes, ranked
    /// ([`crate::attribute::fixes`]); an empty list when none was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fixes: Option<Vec<summary::Fix>>,
}

impl Document {
    /// The fixes of this document: those it stores, or for a document written before they
    /// were stored (version 2), the ones its sections give.
    pub fn fixes(&self) -> Vec<crate::attribute::fixes::Fix> {
        if let Some(f) = &self.fixes {
            return f.iter().cloned().map(Into::into).collect();
        }
        let profile = self.profile.as_ref().map(|p| p.section());
        let fork = self.fork.as_ref().map(|f| f.section());
        let closure = self.deps.as_ref().map(|d| d.closure());
        crate::attribute::fixes::fixes(profile.as_ref(), fork.as_ref(), closure.as_ref())
    }

    pub fn deps(
        target: &str,
        closure: crate::deps::Closure,
        lookups: Option<crate::attribute::lookups::LookupModel>,
    ) -> Document {
        Document {
            schema_version: SCHEMA_VERSION,
            tool: Tool {
                name: "ldcost".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            command: "deps".into(),
            target: target.into(),
            deps: Some(DepsSection::new(closure, lookups)),
            profile: None,
            fork: None,
            fork_not_measured: None,
            machine: None,
            summary: None,
            fixes: None,
        }
    }

    /// A document without a `deps` section (its target could not be analysed statically).
    pub fn empty(target: &str) -> Document {
        Document {
            schema_version: SCHEMA_VERSION,
            tool: Tool {
                name: "ldcost".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            command: String::new(),
            target: target.into(),
            deps: None,
            profile: None,
            fork: None,
            fork_not_measured: None,
            machine: None,
            summary: None,
            fixes: None,
        }
    }
}
