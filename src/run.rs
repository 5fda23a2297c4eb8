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
    let lookups = crate::attribute::lookups::model(&closure);
    if cfg.text {
        let mut text = report::text::deps(&closure, cfg.view, Some(&lookups));
        if report::color::wanted() {
            text = report::color::paint(&text);
        }
        report::write_text(&text, std::path::Path::new("-"))?;
    }
    if let Some(path) = &cfg.json {
        let doc = Document::deps(&cfg.target.to_string_lossy(), closure, Some(lookups));
        report::write_json(&doc, path)?;
    }
    Ok(if complete {
        ExitCode::Ok
    } else {
        ExitCode::Finding
    })
}

/// `ldcost profile`.
pub fn profile(cfg: &crate::config::ProfileRun) -> Result<ExitCode, Error> {
    crate::trace::install_signal_handlers();
    let fork = match &cfg.fork {
        Some(f) => {
            let run = crate::trace::fork::run(&cfg.profile.command, f)?;
            Some(crate::attribute::fork_cost::section(&run, f.iterations))
        }
        None => None,
    };
    if !cfg.exec {
        return fork_only(cfg, fork);
    }
    let mut section = crate::profile::profile(&cfg.profile)?;
    // The static prediction, for the cross-check (a script: its interpreter's).
    let opts = deps::ResolveOptions::from_env();
    let target = &cfg.profile.command.program;
    let closure = match deps::resolve(target, &opts) {
        Ok(c) => Some(c),
        Err(crate::error::DepsError::Target(crate::error::ElfError::Script {
            interpreter,
            ..
        })) => {
            let interp = interpreter
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string();
            deps::resolve(std::path::Path::new(&interp), &opts).ok()
        }
        Err(_) => None,
    };
    if let Some(c) = &closure {
        section.prediction = Some(crate::attribute::link_cost::prediction(c));
    }
    if cfg.text {
        let mut text = report::profile_text::profile(&section);
        if let Some(f) = &fork {
            text.push('\n');
            text.push_str(&report::fork_text::fork(f));
        }
        if report::color::wanted() {
            text = report::color::paint(&text);
        }
        report::write_text(&text, std::path::Path::new("-"))?;
    }
    let timed_out = section
        .endings
        .contains(&crate::trace::launch::Ending::TimedOut);
    if let Some(path) = &cfg.json {
        let mut doc = match closure {
            Some(c) => {
                let m = crate::attribute::lookups::model(&c);
                Document::deps(&target.to_string_lossy(), c, Some(m))
            }
            None => Document::empty(&target.to_string_lossy()),
        };
        doc.command = "profile".into();
        doc.profile = Some(section);
        doc.fork = fork;
        report::write_json(&doc, path)?;
    }
    if timed_out {
        eprintln!("ldcost: warning: the target ran past --timeout and was killed; phases after that point are missing");
        return Ok(ExitCode::TargetFailed);
    }
    Ok(ExitCode::Ok)
}

/// `profile --fork --no-exec`: the fork section alone.
fn fork_only(
    cfg: &crate::config::ProfileRun,
    fork: Option<crate::attribute::fork_cost::ForkSection>,
) -> Result<ExitCode, Error> {
    let target = cfg.profile.command.program.to_string_lossy().to_string();
    if cfg.text {
        if let Some(f) = &fork {
            let mut text = report::fork_text::fork(f);
            if report::color::wanted() {
                text = report::color::paint(&text);
            }
            report::write_text(&text, std::path::Path::new("-"))?;
        }
    }
    if let Some(path) = &cfg.json {
        let mut doc = Document::empty(&target);
        doc.command = "profile".into();
        doc.fork = fork;
        report::write_json(&doc, path)?;
    }
    Ok(ExitCode::Ok)
}
