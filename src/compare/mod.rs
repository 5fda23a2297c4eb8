//! `ldcost diff` and `ldcost compare`: why HEAD starts (and forks) slower or faster than BASE.
//!
//! In: two `profile` [`Document`]s, read from files ([`load`], for `diff`) or measured here in
//! one interleaved run ([`crate::run::compare_runner`], for `compare`). Out: a [`Comparison`]: the [`Verdict`]
//! first (start-up CPU and wall, fork; each a change in % with a 95% bootstrap interval, a
//! Mann–Whitney U p-value and a measured noise floor: [`stats`]), then the [`Factors`] BASE →
//! HEAD → Δ. Both commands end in [`compare_documents`], so `diff` of the two halves of a
//! `compare` gives the same verdict.

pub mod after_main;
pub mod attribution;
mod document;
pub mod explain;
pub mod factors;
pub mod fit;
pub mod graphs;
pub mod inputs;
pub mod markdown;
mod objects;
pub mod stats;
pub mod text;
pub mod unit_costs;
pub mod verdict;
pub mod whatif;

use std::path::Path;

pub use crate::config::{DiffConfig, Format};
use crate::error::CompareError;
pub use crate::report::schema::{Comparison, SideInfo};
use crate::report::{Document, Tool, SCHEMA_VERSION};
pub use attribution::Attribution;
pub use factors::Factors;
pub use verdict::Verdict;

/// Reads one `profile --json` document for `diff`, refusing what cannot be compared.
pub fn load(path: &Path) -> Result<Document, CompareError> {
    let doc = read(path)?;
    if doc.profile.is_none() && doc.fork.is_none() {
        return Err(CompareError::BadDocument {
            path: path.to_path_buf(),
            what: format!(
                "a `{}` document: diff needs `profile --json` documents",
                doc.command
            ),
        });
    }
    Ok(doc)
}

/// Reads one ldcost JSON document of this schema version (`diff`, `report`): missing, not JSON,
/// truncated, another version and not an ldcost document are each refused as such.
pub fn read(path: &Path) -> Result<Document, CompareError> {
    typed(read_value(path)?, path)
}

/// The untyped, version-checked document as the typed one.
fn typed(value: serde_json::Value, path: &Path) -> Result<Document, CompareError> {
    serde_json::from_value(value).map_err(|e| CompareError::BadDocument {
        path: path.to_path_buf(),
        what: format!("not an ldcost document ({e})"),
    })
}

/// [`read`] up to the schema version check: the document as untyped JSON (`report` tells a
/// profile document from a comparison by its keys).
pub fn read_value(path: &Path) -> Result<serde_json::Value, CompareError> {
    let p = path.to_path_buf();
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => CompareError::Missing { path: p.clone() },
        _ => CompareError::Unreadable {
            path: p.clone(),
            source: e,
        },
    })?;
    if meta.is_dir() {
        return Err(CompareError::IsDirectory { path: p });
    }
    // A device (/dev/zero) never ends; a pipe (`<(ldcost profile … --json -)`) is read up to
    // the size cap.
    use std::os::unix::fs::MetadataExt;
    if let Some(kind) = crate::report::reader::not_a_document_kind(meta.mode()) {
        return Err(CompareError::NotRegular { path: p, kind });
    }
    let unreadable = |source| CompareError::Unreadable {
        path: p.clone(),
        source,
    };
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let text = crate::report::reader::read_capped(file).map_err(|e| match e {
        crate::report::reader::ReadFailure::Io(e) => unreadable(e),
        crate::report::reader::ReadFailure::TooLarge => CompareError::TooLarge { path: p.clone() },
    })?;
    parse_value(&text, path)
}

/// Reads the bytes of one `profile --json` document (the file `path` names, for the messages):
/// [`read`] after the file is read, and the fuzz target's entry (fuzz/fuzz_targets/diff_json.rs).
/// Any bytes give a [`Document`] or a [`CompareError`] (exit 10 or 11), never a panic.
pub fn parse(text: &[u8], path: &Path) -> Result<Document, CompareError> {
    typed(parse_value(text, path)?, path)
}

/// [`parse`] up to the schema version check: untyped JSON.
pub fn parse_value(text: &[u8], path: &Path) -> Result<serde_json::Value, CompareError> {
    let p = path.to_path_buf();
    // First as untyped JSON: a document of another schema version is refused as such, not as
    // a field this version does not know.
    let value: serde_json::Value = serde_json::from_slice(text).map_err(|e| {
        let what = if e.classify() == serde_json::error::Category::Eof {
            format!("truncated: the JSON ends early (line {})", e.line())
        } else {
            format!("not JSON ({e})")
        };
        CompareError::BadDocument {
            path: p.clone(),
            what,
        }
    })?;
    let found = value.get("schema_version");
    match found.and_then(|v| v.as_u64()) {
        None => {
            // Say what stands there: "2" (a string) or 2.5 is not a missing version.
            let what = match found {
                None => "not an ldcost document (no schema_version)".to_string(),
                Some(v) => format!(
                    "not an ldcost document (schema_version is {}, not a whole number)",
                    crate::report::text::clean(&v.to_string().chars().take(40).collect::<String>())
                ),
            };
            return Err(CompareError::BadDocument { path: p, what });
        }
        Some(v)
            if !(crate::report::schema::OLDEST_READABLE as u64..=SCHEMA_VERSION as u64)
                .contains(&v) =>
        {
            return Err(CompareError::SchemaVersion {
                path: p,
                found: v,
                expected: SCHEMA_VERSION,
            })
        }
        _ => {}
    }
    Ok(value)
}

/// What differs between the documents' machines ("BASE: not recorded" for an older document).
pub fn machine_differences(base: &Document, head: &Document) -> Vec<String> {
    match (&base.machine, &head.machine) {
        (Some(b), Some(h)) => b.differences(h),
        (None, None) => vec!["machine not recorded in BASE nor HEAD".into()],
        (None, _) => vec!["machine not recorded in BASE".into()],
        (_, None) => vec!["machine not recorded in HEAD".into()],
    }
}

fn side(doc: &Document, document: Option<&Path>, env: &[(String, String)]) -> SideInfo {
    SideInfo {
        target: doc.target.clone(),
        args: doc
            .profile
            .as_ref()
            .map_or_else(Vec::new, |p| p.argv.iter().skip(1).cloned().collect()),
        document: document.map(|d| d.display().to_string()),
        env: env.iter().map(|(k, v)| format!("{k}={v}")).collect(),
        machine: doc.machine.clone(),
        runs: doc.profile.as_ref().map_or(0, |p| p.runs),
        forks: doc.fork.as_ref().map_or(0, |f| f.completed),
        left_out: doc
            .profile
            .as_ref()
            .map_or_else(Vec::new, |p| p.left_out.clone()),
    }
}

/// The comparison of two documents (pure).
pub fn compare_documents(base: &Document, head: &Document) -> (Verdict, Factors, Attribution) {
    let (base, head) = after_main::with_common_residue(base, head);
    let (base, head) = (&base, &head);
    let v = verdict::verdict(base, head);
    let f = factors::factors(base, head);
    let measured = v
        .metrics
        .iter()
        .find(|m| m.key == "startup_cpu")
        .and_then(|m| m.change.as_ref())
        .map(|c| (c.head_median - c.base_median, c.significant));
    let added: Vec<String> = f.objects_added.iter().map(|o| o.name.clone()).collect();
    let mut a = attribution::attribute(base, head, measured, &added);
    let source = v
        .metrics
        .iter()
        .find(|m| m.key == "startup_cpu")
        .map_or("", |m| m.source.as_str());
    a.reconciliation = attribution::reconcile(&a, source);
    (v, f, a)
}

/// The command line of this process, quoted for a POSIX shell where needed.
pub fn command_line() -> String {
    std::env::args()
        .enumerate()
        .map(|(i, a)| {
            if i == 0 {
                "ldcost".to_string()
            } else {
                text::shell_word(&a)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// What `diff` and `compare` share after the documents exist.
pub struct Output<'a> {
    pub format: Format,
    /// `--detail`: also list what the default report only counts.
    pub detail: bool,
    pub json: Option<&'a Path>,
    pub fail_above: Option<crate::config::Gate>,
}

/// Builds the [`Comparison`] and writes it; returns whether `--fail-above` tripped.
#[allow(clippy::too_many_arguments)]
pub fn report(
    command: &str,
    base: &Document,
    head: &Document,
    base_src: (Option<&Path>, &[(String, String)]),
    head_src: (Option<&Path>, &[(String, String)]),
    differences: Vec<String>,
    forced: bool,
    out: &Output,
) -> Result<Comparison, crate::error::Error> {
    let cmp = comparison(
        command,
        (base, base_src),
        (head, head_src),
        differences,
        forced,
        out.fail_above,
    );
    write(&cmp, out)?;
    Ok(cmp)
}

/// One side for [`comparison`]: the document, and where it came from.
pub type Side<'a> = (&'a Document, (Option<&'a Path>, &'a [(String, String)]));

/// The [`Comparison`] of two documents (pure: nothing is written).
pub fn comparison(
    command: &str,
    (base, base_src): Side,
    (head, head_src): Side,
    differences: Vec<String>,
    forced: bool,
    fail_above: Option<crate::config::Gate>,
) -> Comparison {
    let (mut verdict, factors, attribution) = compare_documents(base, head);
    verdict::apply_gate(&mut verdict, fail_above.and_then(|g| g.only));
    let gate_failure = fail_above.and_then(|g| verdict::gate_failure(&verdict, g.pct, g.only));
    Comparison {
        schema_version: SCHEMA_VERSION,
        tool: Tool {
            name: "ldcost".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        command: command.into(),
        base: side(base, base_src.0, base_src.1),
        head: side(head, head_src.0, head_src.1),
        machine_differences: differences,
        forced,
        verdict: verdict.into(),
        factors: factors.into(),
        attribution: attribution.into(),
        fail_above_pct: fail_above.map(|g| g.pct),
        gate: fail_above
            .and_then(|g| g.only)
            .map(|g| g.name().to_string()),
        failed: gate_failure.is_some(),
        gate_failure,
        command_line: command_line(),
        rounds: None,
    }
}

/// Writes a [`Comparison`] as `out` asks.
pub(crate) fn write(cmp: &Comparison, out: &Output) -> Result<(), crate::error::Error> {
    let json = || -> Result<String, crate::error::Error> {
        Ok(serde_json::to_string_pretty(cmp).map_err(crate::error::ReportError::Json)? + "\n")
    };
    let stdout = Path::new("-");
    // `--json -`: standard output carries the JSON alone.
    let format = if out.json == Some(stdout) {
        Format::Json
    } else {
        out.format
    };
    match format {
        Format::Text => {
            let mut t = text::comparison_with(cmp, out.detail);
            if crate::report::color::wanted() {
                t = crate::report::color::paint(&t);
            }
            crate::report::write_text(&t, stdout)?
        }
        Format::Markdown => {
            crate::report::write_text(&markdown::comparison_with(cmp, out.detail), stdout)?
        }
        Format::Json => crate::report::write_text(&json()?, stdout)?,
    }
    if let Some(path) = out.json {
        if path != stdout {
            crate::report::write_text(&json()?, path)?;
        }
    }
    Ok(())
}

/// `ldcost diff BASE.json HEAD.json`.
pub fn diff(cfg: &DiffConfig) -> Result<crate::error::ExitCode, crate::error::Error> {
    let base = load(&cfg.base)?;
    let head = load(&cfg.head)?;
    if cfg.flamegraph_diff.is_some() || cfg.folded_diff.is_some() {
        return Err(graphs::no_stacks(&cfg.base));
    }
    let differences = machine_differences(&base, &head);
    if !differences.is_empty() && !cfg.force {
        return Err(CompareError::OtherMachine {
            differences: differences.join(", "),
        }
        .into());
    }
    if !differences.is_empty() {
        eprintln!(
            "ldcost: warning: comparing documents from different machines (--force): {}",
            differences.join(", ")
        );
    }
    let out = Output {
        format: cfg.format,
        detail: cfg.detail,
        json: cfg.json.as_deref(),
        fail_above: cfg.fail_above,
    };
    let cmp = report(
        "diff",
        &base,
        &head,
        (Some(&cfg.base), &[]),
        (Some(&cfg.head), &[]),
        differences,
        cfg.force,
        &out,
    )?;
    Ok(exit_code(&cmp))
}

/// `--fail-above` tripped: [`crate::error::ExitCode::Regression`].
pub fn exit_code(cmp: &Comparison) -> crate::error::ExitCode {
    if cmp.failed {
        crate::error::ExitCode::Regression
    } else {
        crate::error::ExitCode::Ok
    }
}
