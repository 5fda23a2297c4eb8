//! `--flamegraph-diff` and `--folded-diff` of `compare`: BASE's and HEAD's sampled stacks as a
//! differential flame graph (and its two-column folded text), per exec and per fork.
//!
//! In: the two [`Document`]s (how many execs and forks each side's samples cover: the
//! breakdowns' `units` and `covered`) and the folded stacks [`crate::run::compare_runner::measure_with_stacks`] kept
//! beside them. Out: the files, written by [`crate::report::flamegraph::diff`]. `diff` has no
//! stacks to draw (a `profile --json` document does not hold them), which [`no_stacks`] says.

use std::path::Path;

use crate::attribute::FoldedStack;
use crate::error::{CompareError, Error, ReportError};
use crate::report::flamegraph::diff::{folded_diff, write_diff_svg, Units};
use crate::report::flamegraph::FlameOptions;
use crate::report::Document;

/// What one side's samples cover: its sampled exec runs and its sampled forks.
pub fn units(doc: &Document) -> Units {
    Units {
        exec: doc
            .profile
            .as_ref()
            .and_then(|p| p.breakdown.as_ref())
            .map_or(0, |b| b.units as u64),
        fork: doc
            .fork
            .as_ref()
            .and_then(|f| f.breakdown.as_ref())
            .map_or(0, |b| b.covered.round() as u64),
    }
}

/// Writes `--folded-diff` and `--flamegraph-diff` (when asked for). A side with no samples
/// leaves the graph unwritten with a warning, as `profile --flamegraph` does.
pub fn write(
    base: (&Document, &[FoldedStack]),
    head: (&Document, &[FoldedStack]),
    svg: Option<&Path>,
    folded: Option<&Path>,
) -> Result<(), Error> {
    if svg.is_none() && folded.is_none() {
        return Ok(());
    }
    let (bu, hu) = (units(base.0), units(head.0));
    let err = |path: &Path, e: std::io::Error| {
        Error::Report(ReportError::Write {
            path: path.to_path_buf(),
            source: e,
        })
    };
    if base.1.is_empty() || head.1.is_empty() {
        let side = if base.1.is_empty() { "BASE" } else { "HEAD" };
        for p in svg.iter().chain(folded.iter()) {
            eprintln!(
                "ldcost: warning: {side} has no sampled stacks; {} not written",
                p.display()
            );
        }
        return Ok(());
    }
    if let Some(path) = folded {
        let text = folded_diff(base.1, bu, head.1, hu).map_err(|e| err(path, e))?;
        crate::report::write_text(&text, path)?;
    }
    if let Some(path) = svg {
        let per = |u: Units| match (u.exec, u.fork) {
            (0, f) => format!("{f} forks"),
            (e, 0) => format!("{e} execs"),
            (e, f) => format!("{e} execs, {f} forks"),
        };
        let opts = FlameOptions {
            title: format!("ldcost compare {} → {}", base.0.target, head.0.target),
            subtitle: Some(format!(
                "samples per {} execs (forks): BASE {}, HEAD {}",
                crate::report::flamegraph::diff::PER,
                per(bu),
                per(hu)
            )),
        };
        let mut buf = Vec::new();
        write_diff_svg(base.1, bu, head.1, hu, &opts, &mut buf).map_err(|e| err(path, e))?;
        let text = String::from_utf8(buf).map_err(|e| {
            err(
                path,
                std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            )
        })?;
        crate::report::write_text(&text, path)?;
    }
    Ok(())
}

/// `diff --flamegraph-diff/--folded-diff`: a saved document holds no sampled stacks.
pub fn no_stacks(base: &Path) -> Error {
    CompareError::NoStacks {
        path: base.to_path_buf(),
    }
    .into()
}
