//! One function per command: the whole of what `ldcost <command>` does, given its resolved
//! configuration. Returns the exit code to use on success paths (a missing library is a
//! finding, not an error).

use crate::config::DepsConfig;
use crate::deps;
use crate::error::{Error, ExitCode};
use crate::report::{self, Document};

/// `ldcost deps`.
pub fn deps(cfg: &DepsConfig) -> Result<ExitCode, Error> {
    let closure = deps::resolve(&cfg.target, &cfg.resolve)?;
    let complete = closure.complete();
    if cfg.text {
        let text = report::text::deps(&closure, cfg.view);
        report::write_text(&text, std::path::Path::new("-"))?;
    }
    if let Some(path) = &cfg.json {
        let doc = Document::deps(&cfg.target.to_string_lossy(), closure);
        report::write_json(&doc, path)?;
    }
    Ok(if complete {
        ExitCode::Ok
    } else {
        ExitCode::Finding
    })
}
