//! The rendering half of `ldcost report FILE.json` (or `report -`, the document on standard
//! input, read by [`read_stdin`]), which re-renders a saved document without
//! running anything and without privileges. In: a [`Document`] written by `profile --json` or
//! `deps --json`. Out: the text the writing command printed, or Markdown.
//!
//! The command itself is `crate::run::report`: it reads the file with `diff`'s reader
//! (`crate::compare::read_value`: missing, not JSON, truncated, another schema version are
//! refused there, with diff's exit codes) and renders comparisons with `compare`'s own text
//! and Markdown (this module must not depend on `compare`, which depends on it). Documents
//! are rendered by the very functions `profile` and `deps` print with
//! ([`super::profile_report`], [`super::text::deps`]), so a re-rendered report equals the
//! original (tests/report.rs compares them line by line).

use std::io::Read;

use super::Document;

/// How standard input is named in messages when the document is read from it (`report -`).
pub const STDIN: &str = "standard input";

/// The whole of standard input (`ldcost report -`): the bytes up to end of file.
pub fn read_stdin() -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::io::stdin().lock().read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The text the command that wrote `doc` printed (without colour), or `None` when the document
/// has no section to show (it was written by neither `profile` nor `deps`).
pub fn text(doc: &Document) -> Option<String> {
    if doc.profile.is_some() || doc.fork.is_some() {
        let section = doc.profile.as_ref().map(|p| p.section());
        let fork = doc.fork.as_ref().map(|f| f.section());
        return Some(super::profile_report(section.as_ref(), fork.as_ref()));
    }
    let deps = doc.deps.as_ref()?;
    if deps.closure.objects.is_empty() {
        return None;
    }
    Some(super::text::deps(
        &deps.closure(),
        super::text::DepsView::Tree,
        deps.lookups().as_ref(),
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
