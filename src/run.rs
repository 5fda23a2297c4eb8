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
    let mut folded = Vec::new();
    let fork = match &cfg.fork {
        Some(f) => {
            let run = crate::trace::fork::run(&cfg.profile.command, f)?;
            let mut s = crate::attribute::fork_cost::section(&run, f.iterations);
            let (b, e, stacks) =
                crate::attribute::fork_cost::fork_breakdown(&run, &cfg.profile.debug_roots);
            s.breakdown = b;
            s.breakdown_error = e;
            folded.extend(stacks);
            Some(s)
        }
        None => None,
    };
    if !cfg.exec {
        write_graphs(cfg, &folded, fork.as_ref(), None)?;
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
    folded.extend(std::mem::take(&mut section.folded));
    write_graphs(cfg, &folded, fork.as_ref(), section.breakdown.as_ref())?;
    if cfg.text {
        let mut text = report::profile_text::profile(&section);
        if let Some(b) = &section.breakdown {
            text.push('\n');
            text.push_str(&report::breakdown_text::breakdown(b, "exec"));
        } else if let Some(e) = &section.breakdown_error {
            text.push_str(&format!("\nexec cost by category: not available ({e})\n"));
        }
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
        doc.machine = Some(crate::record::Machine::current());
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
        doc.machine = Some(crate::record::Machine::current());
        report::write_json(&doc, path)?;
    }
    Ok(ExitCode::Ok)
}

/// `--folded` and `--flamegraph`: the sampled stacks of exec and fork in one graph, rooted by
/// section, then category.
fn write_graphs(
    cfg: &crate::config::ProfileRun,
    folded: &[report::flamegraph::FoldedStack],
    fork: Option<&crate::attribute::fork_cost::ForkSection>,
    exec: Option<&crate::attribute::breakdown::Breakdown>,
) -> Result<(), Error> {
    let err = |path: &std::path::Path, e: std::io::Error| {
        Error::Report(crate::error::ReportError::Write {
            path: path.to_path_buf(),
            source: e,
        })
    };
    if let Some(path) = &cfg.folded {
        let f = std::fs::File::create(path).map_err(|e| err(path, e))?;
        report::flamegraph::write_folded(folded, std::io::BufWriter::new(f))
            .map_err(|e| err(path, e))?;
    }
    if let Some(path) = &cfg.flamegraph {
        if folded.is_empty() {
            eprintln!(
                "ldcost: warning: no samples to draw; {} not written",
                path.display()
            );
            return Ok(());
        }
        let target = cfg.profile.command.program.display().to_string();
        let mut head = Vec::new();
        if let Some(b) = exec {
            head.push(format!("exec: {} samples over {} runs", b.samples, b.units));
        }
        if let Some(f) = fork {
            if let Some(b) = &f.breakdown {
                head.push(format!(
                    "fork: {} samples over {} forks",
                    b.samples, b.covered as u64
                ));
            }
            if !f.reading.is_empty() {
                head.push(f.reading.clone());
            }
        }
        let opts = report::flamegraph::FlameOptions {
            title: format!("ldcost profile {target}"),
            subtitle: Some(head.join(" · ")),
        };
        let f = std::fs::File::create(path).map_err(|e| err(path, e))?;
        report::flamegraph::write_svg(folded, &opts, std::io::BufWriter::new(f))
            .map_err(|e| err(path, e))?;
    }
    Ok(())
}

/// `ldcost diff BASE.json HEAD.json`.
pub fn diff(cfg: &crate::compare::DiffConfig) -> Result<ExitCode, Error> {
    crate::compare::diff(cfg)
}

/// `ldcost compare BASE HEAD [-- ARGS]`.
pub fn compare(cfg: &crate::compare::runner::CompareConfig) -> Result<ExitCode, Error> {
    crate::compare::runner::compare(cfg)
}
