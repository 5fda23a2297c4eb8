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

/// The largest JSON document `diff` and `report` read, in bytes (256 MiB): a `profile --json`
/// document is a few hundred KiB, and a reader that never ends (a pipe from /dev/zero) must not
/// take the machine's memory before it is refused.
pub const MAX_DOCUMENT_BYTES: u64 = 256 << 20;

/// What stops a document from being read from standard input or a file.
#[derive(Debug)]
pub enum ReadFailure {
    /// Reading failed (`EBADF`: standard input is closed).
    Io(std::io::Error),
    /// More than [`MAX_DOCUMENT_BYTES`] bytes.
    TooLarge,
}

/// At most [`MAX_DOCUMENT_BYTES`] bytes of `r`, or [`ReadFailure::TooLarge`] when there are more.
/// The buffer grows to the cap and no further (`reserve_exact`), so the memory of a refused
/// document is bounded by the cap too.
pub fn read_capped(mut r: impl Read) -> Result<Vec<u8>, ReadFailure> {
    let cap = MAX_DOCUMENT_BYTES as usize;
    let mut bytes: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) => return Ok(bytes),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadFailure::Io(e)),
        };
        if bytes.len() + n > cap {
            return Err(ReadFailure::TooLarge);
        }
        if bytes.capacity() - bytes.len() < n {
            let grow = bytes.capacity().max(n).min(cap - bytes.len());
            bytes.reserve_exact(grow);
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
}

/// What kind of file `mode` (`st_mode`) is, when it is not one a document can be read from (a
/// regular file or a pipe): "a character device", "a directory", "a socket", ...
pub fn not_a_document_kind(mode: u32) -> Option<&'static str> {
    match mode & nix::libc::S_IFMT {
        nix::libc::S_IFREG | nix::libc::S_IFIFO => None,
        nix::libc::S_IFDIR => Some("a directory"),
        nix::libc::S_IFCHR => Some("a character device"),
        nix::libc::S_IFBLK => Some("a block device"),
        nix::libc::S_IFSOCK => Some("a socket"),
        _ => Some("not a regular file"),
    }
}

/// The whole of standard input (`ldcost report -`), at most [`MAX_DOCUMENT_BYTES`]. Standard
/// input that is closed (or /dev/null) is told apart from an empty pipe or file; one that is
/// another device (`< /dev/zero`) or a directory is refused before anything is read, with its
/// kind.
pub fn read_stdin() -> Result<Vec<u8>, StdinFailure> {
    let stdin = std::io::stdin();
    let st = match nix::sys::stat::fstat(&stdin) {
        Ok(st) => st,
        Err(nix::errno::Errno::EBADF) => return Err(StdinFailure::Closed),
        Err(e) => return Err(StdinFailure::Read(ReadFailure::Io(e.into()))),
    };
    if let Some(kind) = not_a_document_kind(st.st_mode) {
        // The Rust runtime opens /dev/null in place of a closed standard input, so a closed
        // one and `< /dev/null` look the same: neither holds a document.
        let dev_null = nix::sys::stat::stat("/dev/null").ok().map(|n| n.st_rdev);
        if st.st_mode & nix::libc::S_IFMT == nix::libc::S_IFCHR && dev_null == Some(st.st_rdev) {
            return Err(StdinFailure::Closed);
        }
        // A document may be pasted at a terminal (read up to the cap, as a pipe).
        if !std::io::IsTerminal::is_terminal(&stdin) {
            return Err(StdinFailure::NotADocument(kind));
        }
    }
    read_capped(stdin.lock()).map_err(|e| match e {
        ReadFailure::Io(e) if e.raw_os_error() == Some(nix::libc::EBADF) => StdinFailure::Closed,
        e => StdinFailure::Read(e),
    })
}

/// Why [`read_stdin`] read no document.
#[derive(Debug)]
pub enum StdinFailure {
    /// Standard input is closed (`report - <&-`) or /dev/null.
    Closed,
    /// Standard input is not a file or pipe (a device, a directory, a socket).
    NotADocument(&'static str),
    Read(ReadFailure),
}

/// Whether `doc` holds the dependency closure the exec-side fixes are priced from.
fn has_closure(doc: &Document) -> bool {
    doc.deps
        .as_ref()
        .is_some_and(|d| !d.closure.objects.is_empty())
}

/// The text the command that wrote `doc` printed (without colour), or `None` when the document
/// has no section to show (it was written by neither `profile` nor `deps`).
pub fn text(doc: &Document, detail: bool) -> Option<String> {
    if doc.profile.is_some() || doc.fork.is_some() {
        let section = doc.profile.as_ref().map(|p| p.section());
        let fork = doc.fork.as_ref().map(|f| f.section());
        return Some(super::profile_report(
            section.as_ref(),
            fork.as_ref(),
            has_closure(doc),
            &doc.fixes(),
            detail,
        ));
    }
    let deps = doc.deps.as_ref()?;
    if deps.closure.objects.is_empty() {
        return None;
    }
    Some(super::text::deps(
        &deps.closure(),
        super::text::DepsView::Tree,
        deps.lookups().as_ref(),
        &deps.unused_direct(),
    ))
}

/// The same report as Markdown: a heading naming the document's command, target and machine,
/// for a profile document its summary as a list, and the text report (after the summary) in a
/// fenced block (its tables are aligned for a fixed-width font).
pub fn markdown(doc: &Document, text: &str, detail: bool) -> String {
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
    s.push_str(".\n\n");
    let mut text = text.to_string();
    if doc.profile.is_some() || doc.fork.is_some() {
        // The summary as Markdown of its own, the rest as the text report shows it.
        let section = doc.profile.as_ref().map(|p| p.section());
        let fork = doc.fork.as_ref().map(|f| f.section());
        let summary = crate::attribute::summary::summary(section.as_ref(), fork.as_ref());
        let looked_for = crate::attribute::summary::looked_for(
            section.as_ref(),
            fork.as_ref(),
            has_closure(doc),
        );
        s.push_str(&super::summary_text::markdown(
            &summary,
            &doc.fixes(),
            &looked_for,
        ));
        text = super::profile_body(section.as_ref(), fork.as_ref(), detail);
        let why = super::summary_text::why(&doc.fixes());
        if !why.is_empty() {
            text.push('\n');
            text.push_str(&why);
        }
    }
    s.push_str("```text\n");
    // A line of backticks in a target's name must not close the fence early.
    s.push_str(&text.replace("```", "`\u{200b}``"));
    if !text.ends_with('\n') {
        s.push('\n');
    }
    s.push_str("```\n");
    s
}
