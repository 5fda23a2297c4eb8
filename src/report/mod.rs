//! Stage 4: reports. In: a resolved [`Closure`] (later, profiles). Out: text for people
//! ([`text`]) and the versioned JSON document ([`Document`]) for tools and later `diff`.
//!
//! The JSON schema is documented in docs/json-schema.md. `schema_version` is bumped only on
//! incompatible changes; `profile`, `compare` and `diff` add sections beside `deps` rather than
//! changing it.

pub mod breakdown_text;
pub mod color;
mod error;
pub mod fault_gap;

pub mod flamegraph;
pub mod fork_text;
pub mod output;
pub mod profile_text;
pub mod reader;
pub mod text;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::attribute::link_cost::{self, Totals};
use crate::deps::Closure;
pub use error::ReportError;

/// Version of the JSON document. 1: the `deps` section. 2: a breakdown category's
/// `ns_per_exec_or_fork` is an Estimate (`value`, `ci95`: pooled share × CPU, one bootstrap).
pub const SCHEMA_VERSION: u32 = 2;

/// The tool that wrote a document.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

/// The `deps` section: the closure, its totals and the reading.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DepsSection {
    #[serde(flatten)]
    pub closure: Closure,
    pub totals: Totals,
    /// Where each start-up lookup is answered and how many objects it probes.
    #[serde(default)]
    pub lookups: Option<crate::attribute::lookups::LookupModel>,
    pub summary: Vec<String>,
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
    /// Written by `profile`: the measured phases ([`crate::profile::ProfileSection`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::profile::ProfileSection>,
    /// Written by `profile --fork`: fork cost per fork and the footprint
    /// ([`crate::attribute::fork_cost::ForkSection`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<crate::attribute::fork_cost::ForkSection>,
    /// Written by `profile --fork` when the fork run was lost (the target killed from outside
    /// during it): why `fork` is absent. The exec runs' figures do not depend on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_not_measured: Option<String>,
    /// Written by `profile`: the machine it ran on ([`crate::record::Machine`]), which
    /// `diff` checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<crate::record::Machine>,
}

impl Document {
    pub fn deps(
        target: &str,
        closure: Closure,
        lookups: Option<crate::attribute::lookups::LookupModel>,
    ) -> Document {
        let totals = link_cost::totals(&closure);
        let summary = link_cost::summary(&closure, lookups.as_ref());
        Document {
            schema_version: SCHEMA_VERSION,
            tool: Tool {
                name: "ldcost".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            command: "deps".into(),
            target: target.into(),
            deps: Some(DepsSection {
                closure,
                totals,
                lookups,
                summary,
            }),
            profile: None,
            fork: None,
            fork_not_measured: None,
            machine: None,
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
        }
    }
}

/// The text `profile` prints: the exec section (phases, instrumentation, cross-checks), its
/// category breakdown and phase table (or why there is none), then the fork section. `report`
/// re-renders a saved document with the same function, so the two cannot drift apart.
pub fn profile_report(
    profile: Option<&crate::profile::ProfileSection>,
    fork: Option<&crate::attribute::fork_cost::ForkSection>,
) -> String {
    let mut text = String::new();
    if let Some(section) = profile {
        text.push_str(&profile_text::profile(section));
        if let Some(b) = &section.breakdown {
            text.push('\n');
            text.push_str(&breakdown_text::breakdown(b, "exec"));
            text.push_str(&profile_text::phase_table(b));
        } else if let Some(e) = &section.breakdown_error {
            text.push_str(&format!("\nexec cost by category: not available ({e})\n"));
        }
    }
    if let Some(f) = fork {
        if profile.is_some() {
            text.push('\n');
        }
        text.push_str(&fork_text::fork(f));
    }
    text
}

/// Writes `doc` as pretty JSON to `path`, `-` meaning standard output.
pub fn write_json(doc: &Document, path: &Path) -> Result<(), ReportError> {
    let text = serde_json::to_string_pretty(doc)?;
    write_text(&(text + "\n"), path)
}

/// Writes `text` to `path`, `-` meaning standard output, through [`output::write_bytes`]:
/// all or nothing, a closed pipe not an error.
pub fn write_text(text: &str, path: &Path) -> Result<(), ReportError> {
    output::write_bytes(text.as_bytes(), path)
}
