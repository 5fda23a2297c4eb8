//! Stage 4: reports. In: a resolved [`crate::deps::Closure`] (later, profiles). Out: text for people
//! ([`text`]) and the versioned JSON documents ([`schema`]) for tools and later `diff`.
//!
//! The JSON schema is documented in docs/json-schema.md. `schema_version` is bumped only on
//! incompatible changes; `profile`, `compare` and `diff` add sections beside `deps` rather than
//! changing it.

pub mod after_main_text;
pub mod breakdown_text;
pub mod color;
mod error;
pub mod fault_gap;

pub mod flamegraph;
pub mod fork_text;
pub mod output;
pub mod profile_text;
pub mod reader;
pub mod schema;
pub mod summary_text;
pub mod text;
pub mod timeline;

use std::path::Path;

pub use error::ReportError;
pub use schema::{DepsSection, Document, Tool, SCHEMA_VERSION};

/// The text `profile` prints: the summary ([`summary_text`]: the CPU per exec and where it
/// goes, the costliest objects, `fixes`), then [`profile_body`]. `closure`: whether the
/// dependency closure was read (the exec-side fixes are looked for only then). `report` re-renders a saved
/// document with the same function, so the two cannot drift apart.
pub fn profile_report(
    profile: Option<&crate::attribute::profile::ProfileSection>,
    fork: Option<&crate::attribute::fork_cost::ForkSection>,
    closure: bool,
    fixes: &[crate::attribute::fixes::Fix],
    detail: bool,
) -> String {
    let summary = crate::attribute::summary::summary(profile, fork);
    let looked_for = crate::attribute::summary::looked_for(profile, fork, closure);
    let mut text = summary_text::text(&summary, fixes, &looked_for);
    text.push('\n');
    text.push_str(&profile_body(profile, fork, detail));
    let why = summary_text::why(fixes);
    if !why.is_empty() {
        text.push('\n');
        text.push_str(&why);
    }
    text
}

/// The report after its summary: the exec section (phases, objects; with `detail` also the
/// instrumentation's cost and the cross-checks), its category breakdown (with `detail` also
/// the phase table) or why there is none, then the fork section.
pub fn profile_body(
    profile: Option<&crate::attribute::profile::ProfileSection>,
    fork: Option<&crate::attribute::fork_cost::ForkSection>,
    detail: bool,
) -> String {
    let mut text = String::new();
    if let Some(section) = profile {
        text.push_str(&profile_text::profile(section, detail));
        if let Some(b) = &section.breakdown {
            text.push('\n');
            text.push_str(&breakdown_text::breakdown(b, "exec"));
            if detail {
                text.push_str(&profile_text::phase_table(b));
            }
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
