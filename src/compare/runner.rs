//! `ldcost compare`: BASE and HEAD profiled in one run, interleaved, then the report of
//! [`super::report`].
//!
//! In: a [`CompareConfig`]. Out: two `profile` [`Document`]s built exactly as `profile --json`
//! builds them (so they can be saved with `--save-base`/`--save-head` and `diff`ed later).
//!
//! Interleaving: warm-ups B H, then rounds in the order B H, H B, B H, … (ABBA): a drift of
//! the machine over the run (a neighbour's build starting, the CPU's clock) falls on both
//! sides alike, and a linear drift cancels in each pair of rounds. Each side's round is the
//! profile's unit: a per-object run and, unless `--no-reference`, a boundaries-only run and an
//! uninstrumented run. The fork loops run once per side, BASE first. Not done here (yet):
//! LD_DEBUG=statistics runs and sampling.

use std::path::PathBuf;

use crate::config::ProfileRun;
use crate::deps::{self, ResolveOptions};
use crate::error::{Error, ExitCode};
use crate::perf::machine_support;
use crate::profile::{aggregate, ProfileConfig};
use crate::record::{Detail, Instrumentation, Machine, Run};
use crate::report::Document;
use crate::trace::launch::Ending;
use crate::trace::startup::{run_once, run_uninstrumented, RunError, RunOptions};

/// Everything `ldcost compare` needs.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    /// BASE's and HEAD's profile settings (their commands carry `--base-env`/`--head-env`).
    pub base: ProfileRun,
    pub head: ProfileRun,
    pub save_base: Option<PathBuf>,
    pub save_head: Option<PathBuf>,
    pub format: super::Format,
    pub json: Option<PathBuf>,
    pub fail_above: Option<f64>,
}

fn interrupted() -> Result<(), RunError> {
    if crate::trace::interrupted() {
        Err(RunError::Trace(
            crate::trace::launch::TraceError::Interrupted,
        ))
    } else {
        Ok(())
    }
}

/// The resolve options a process started with `env` on top of ours would get.
fn resolve_options(env: &[(String, String)]) -> ResolveOptions {
    let mut o = ResolveOptions::from_env();
    for (k, v) in env {
        match k.as_str() {
            "LD_LIBRARY_PATH" => o.ld_library_path = Some(v.clone()),
            "LD_BIND_NOW" => o.bind_now = !v.is_empty(),
            _ => {}
        }
    }
    o
}

fn progress(what: &str) {
    use std::io::IsTerminal;
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[Kldcost compare: {what}");
    }
}

/// Runs both sides interleaved and builds their documents.
pub fn measure(cfg: &CompareConfig) -> Result<(Document, Document), Error> {
    crate::trace::install_signal_handlers();
    let sides = [&cfg.base, &cfg.head];
    let mut docs = Vec::new();
    let mut forks = Vec::new();
    for (i, s) in sides.iter().enumerate() {
        let fork = match &s.fork {
            Some(f) => {
                progress(&format!(
                    "{} fork loop ({} forks)",
                    ["BASE", "HEAD"][i],
                    f.iterations
                ));
                let run = crate::trace::fork::run(&s.profile.command, f)?;
                Some(crate::attribute::fork_cost::section(&run, f.iterations))
            }
            None => None,
        };
        forks.push(fork);
    }
    let mut raws: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
    let mut details = [Detail::Static, Detail::Static];
    let exec = cfg.base.exec && cfg.head.exec;
    if exec {
        let opts = |p: &ProfileConfig, inst| RunOptions {
            instrumentation: inst,
            timeout: p.timeout,
            debug_roots: p.debug_roots.clone(),
            sample: None,
        };
        let warmup = cfg.base.profile.warmup;
        for w in 0..warmup {
            for (i, s) in sides.iter().enumerate() {
                interrupted()?;
                progress(&format!("warm-up {}/{warmup}", w + 1));
                let (_, d) = run_once(
                    &s.profile.command,
                    &opts(&s.profile, Instrumentation::Coarse),
                )?;
                details[i] = d;
            }
        }
        let runs = cfg.base.profile.runs.max(1);
        'rounds: for round in 0..runs {
            let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            progress(&format!("round {}/{runs}", round + 1));
            for i in order {
                let p = &sides[i].profile;
                interrupted()?;
                let (r, d) = run_once(&p.command, &opts(p, Instrumentation::PerObject))?;
                details[i] = d;
                raws[i].push(r);
                if p.reference {
                    interrupted()?;
                    raws[i].push(run_once(&p.command, &opts(p, Instrumentation::Coarse))?.0);
                    interrupted()?;
                    raws[i].push(run_uninstrumented(&p.command, p.timeout)?);
                }
                if raws[i].iter().any(|r| r.ending == Ending::TimedOut) {
                    break 'rounds;
                }
            }
        }
    }
    progress("done\n");
    let counters: std::collections::BTreeMap<String, String> = machine_support()
        .into_iter()
        .map(|(c, a)| {
            (
                c.perf_name().to_string(),
                if a.is_available() {
                    "available".to_string()
                } else {
                    format!("{a:?}")
                },
            )
        })
        .collect();
    let machine = Machine::current();
    for (i, s) in sides.iter().enumerate() {
        let target = &s.profile.command.program;
        let closure = deps::resolve(target, &resolve_options(&s.profile.command.env)).ok();
        let mut doc = match closure {
            Some(c) => {
                let m = crate::attribute::lookups::model(&c);
                let pred = crate::attribute::link_cost::prediction(&c);
                let mut d = Document::deps(&target.to_string_lossy(), c, Some(m));
                if exec {
                    let raw = std::mem::take(&mut raws[i]);
                    let mut sec =
                        aggregate(&s.profile, details[i].clone(), raw, None, counters.clone());
                    sec.prediction = Some(pred);
                    d.profile = Some(sec);
                }
                d
            }
            None => {
                let mut d = Document::empty(&target.to_string_lossy());
                if exec {
                    let raw = std::mem::take(&mut raws[i]);
                    d.profile = Some(aggregate(
                        &s.profile,
                        details[i].clone(),
                        raw,
                        None,
                        counters.clone(),
                    ));
                }
                d
            }
        };
        doc.command = "profile".into();
        doc.fork = forks[i].take();
        doc.machine = Some(machine.clone());
        docs.push(doc);
    }
    let head = docs.pop().expect("two sides");
    let base = docs.pop().expect("two sides");
    Ok((base, head))
}

/// `ldcost compare BASE HEAD [-- ARGS]`.
pub fn compare(cfg: &CompareConfig) -> Result<ExitCode, Error> {
    let (base, head) = measure(cfg)?;
    if let Some(p) = &cfg.save_base {
        crate::report::write_json(&base, p)?;
    }
    if let Some(p) = &cfg.save_head {
        crate::report::write_json(&head, p)?;
    }
    let out = super::Output {
        format: cfg.format,
        json: cfg.json.as_deref(),
        fail_above: cfg.fail_above,
    };
    let cmp = super::report(
        "compare",
        &base,
        &head,
        (None, &cfg.base.profile.command.env),
        (None, &cfg.head.profile.command.env),
        Vec::new(),
        false,
        &out,
    )?;
    let timed_out = [&base, &head].iter().any(|d| {
        d.profile
            .as_ref()
            .is_some_and(|p| p.endings.contains(&Ending::TimedOut))
    });
    if timed_out {
        eprintln!("ldcost: warning: a target ran past --timeout and was killed; phases after that point are missing");
        return Ok(ExitCode::TargetFailed);
    }
    Ok(super::exit_code(&cmp))
}
