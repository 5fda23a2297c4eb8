//! `ldcost report FILE.json`: re-renders a saved document without running anything and
//! without privileges. In: a file written by `profile --json` (or `deps --json`, or a
//! comparison of `diff`/`compare --json`). Out: the text the writing command printed, or
//! Markdown.
//!
//! The document is read by `diff`'s reader ([`crate::compare::read_value`]: missing, not JSON,
//! truncated, another schema version are refused there, with diff's exit codes), and rendered
//! by the very functions `profile` and `deps` print with ([`super::profile_report`],
//! [`super::text::deps`], `compare`'s text and Markdown), so a re-rendered report equals the
//! original (tests/report.rs compares them line by line).

use std::path::{Path, PathBuf};

use super::{Document, ReportError};
use crate::config::Format;
use crate::error::{Error, ExitCode};

/// What `ldcost report` was asked to do.
#[derive(Debug, Clone)]
pub struct ReportConfig {
    /// The saved document.
    pub file: PathBuf,
    /// `Text` or `Markdown` (the command line offers no other).
    pub format: Format,
}

/// The text the command that wrote `doc` printed (without colour), or `None` when the document
/// has no section to show (it was written by neither `profile` nor `deps`).
pub fn text(doc: &Document) -> Option<String> {
    if doc.profile.is_some() || doc.fork.is_some() {
        return Some(super::profile_report(
            doc.profile.as_ref(),
            doc.fork.as_ref(),
        ));
    }
    let deps = doc.deps.as_ref()?;
    if deps.closure.objects.is_empty() {
        return None;
    }
    Some(super::text::deps(
        &deps.closure,
        super::text::DepsView::Tree,
        deps.lookups.as_ref(),
    ))
}

/// The same report as Markdown: a heading naming the document's command, target and machine,
/// and the text report in a fenced block (its tables are aligned for a fixed-width font).
pub fn markdown(doc: &Document, text: &str) -> String {
    let mut s = format!(
        "# ldcost {} {}\n\n",
        doc.command,
        super::text::clean(&doc.target)
    );
    s.push_str(&format!(
        "Written by {} {}",
        super::text::clean(&doc.tool.name),
        super::text::clean(&doc.tool.version)
    ));
    if let Some(m) = &doc.machine {
        s.push_str(&format!(
            " on Linux {}, {}, glibc {}",
            super::text::clean(&m.kernel_release),
            super::text::clean(&m.cpu_model),
            super::text::clean(&m.glibc)
        ));
    }
    s.push_str(".\n\n```text\n");
    // A line of backticks in a target's name must not close the fence early.
    s.push_str(&text.replace("```", "`\u{200b}``"));
    if !text.ends_with('\n') {
        s.push('\n');
    }
    s.push_str("```\n");
    s
}

/// A comparison document (`diff`/`compare --json`): the text or Markdown those commands
/// printed, by their own renderers; None when `value` is not a comparison (it has no verdict).
fn comparison(
    value: &serde_json::Value,
    path: &Path,
    format: Format,
) -> Option<Result<String, ReportError>> {
    value.get("verdict")?;
    let read = serde_json::from_value::<crate::compare::Comparison>(value.clone()).map_err(|e| {
        ReportError::Read(crate::error::CompareError::BadDocument {
            path: path.to_path_buf(),
            what: format!("not an ldcost comparison document ({e})"),
        })
    });
    Some(read.map(|c| match format {
        Format::Markdown => crate::compare::markdown::comparison(&c),
        _ => crate::compare::text::comparison(&c),
    }))
}

/// `ldcost report FILE`.
pub fn run(cfg: &ReportConfig) -> Result<ExitCode, Error> {
    let value = crate::compare::read_value(&cfg.file).map_err(ReportError::Read)?;
    if let Some(text) = comparison(&value, &cfg.file, cfg.format) {
        let mut text = text?;
        if cfg.format != Format::Markdown && super::color::wanted() {
            text = super::color::paint(&text);
        }
        super::write_text(&text, Path::new("-"))?;
        return Ok(ExitCode::Ok);
    }
    let doc: Document = serde_json::from_value(value).map_err(|e| {
        ReportError::Read(crate::error::CompareError::BadDocument {
            path: cfg.file.clone(),
            what: format!("not an ldcost document ({e})"),
        })
    })?;
    let Some(mut text) = text(&doc) else {
        return Err(ReportError::Read(crate::error::CompareError::BadDocument {
            path: cfg.file.clone(),
            what: format!(
                "a `{}` document with nothing to show (no profile, fork or deps section)",
                doc.command
            ),
        })
        .into());
    };
    match cfg.format {
        Format::Markdown => text = markdown(&doc, &text),
        _ => {
            if super::color::wanted() {
                text = super::color::paint(&text);
            }
        }
    }
    super::write_text(&text, Path::new("-"))?;
    Ok(ExitCode::Ok)
}
