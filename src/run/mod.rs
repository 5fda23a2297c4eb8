//! One function per command: the whole of what `ldcost <command>` does, given its resolved
//! configuration. Returns the exit code to use on success paths (a missing library is a
//! finding, not an error).
//!
//! This is the driver layer: it may run the target (through `trace` and `perf`) and hand what
//! was captured to the analysis modules, which read only the recording.

mod compare_rounds;
pub mod compare_runner;
mod counting;
mod deps_tree;

use crate::config::DepsConfig;
use crate::deps;
use crate::error::{Error, ExitCode};
use crate::report::{self, Document};

/// `ldcost deps`.
pub fn deps(cfg: &DepsConfig) -> Result<ExitCode, Error> {
    // Several paths, or a directory: the tree scan. One file keeps the one-target report.
    if cfg.targets.len() > 1 || cfg.targets.first().is_some_and(|t| t.is_dir()) {
        return deps_tree::scan(cfg);
    }
    outputs(&[("the target", &cfg.target)], &[("--json", &cfg.json)])?;
    let closure = deps::resolve(&cfg.target, &cfg.resolve)?;
    // The kernel loads PT_INTERP before any library: without it the program cannot start, a
    // finding as a missing library is.
    let missing_interp = (!cfg.resolve.object_only)
        .then(|| closure.objects.first())
        .flatten()
        .and_then(|o| o.info.interpreter.clone())
        .filter(|i| !std::path::Path::new(i).exists());
    if let Some(i) = &missing_interp {
        eprintln!(
            "ldcost: warning: the ELF interpreter (PT_INTERP) {}, of {}, does not exist: the kernel cannot start it",
            report::text::clean(i),
            cfg.target.display()
        );
    }
    // The built-in rules lack the machine's hwcaps subdirectories: a fallback the user must
    // know of, with its cause, whatever the output.
    if let Some(why) = &closure.rules.fallback {
        eprintln!(
            "ldcost: warning: search rules: built-in defaults, not ld.so's: {}",
            report::text::clean(why)
        );
    }
    let complete = closure.complete() && missing_interp.is_none();
    let lookups = crate::attribute::lookups::model(&closure);
    if cfg.text {
        let unused = deps::unused_direct(&closure);
        let mut text = report::text::deps(&closure, cfg.view, Some(&lookups), &unused);
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

/// `ldcost profile`. A failed or interrupted run leaves nothing behind: no process of the
/// target's tree, no partial report, no temp file ([`crate::trace::tree`]).
pub fn profile(cfg: &crate::config::ProfileRun) -> Result<ExitCode, Error> {
    if !cfg.text {
        // Standard output carries a document (`--json -`, `--folded -`, `--flamegraph -`).
        crate::progress::disable();
    }
    supervised(|| profile_checked(cfg))
}

/// Runs a command that starts processes (`profile`, `compare`, `experiment`) with the one
/// clean-up they share: SIGINT/SIGTERM/SIGHUP end it with exit 130 within about a second;
/// orphans of the target are adopted so none escapes; on failure or interruption every
/// process of ldcost's tree is killed and reaped and partial outputs and temp files removed;
/// on success the processes the target left running are killed too, and the user is told.
pub fn supervised(body: impl FnOnce() -> Result<ExitCode, Error>) -> Result<ExitCode, Error> {
    crate::trace::install_signal_handlers();
    crate::trace::tree::adopt_orphans();
    crate::trace::tree::watch_interrupts();
    // Interrupted, whatever the body returned: an error then is the interruption's doing (a
    // ptrace request on a target the signal handler killed fails with ESRCH).
    let result = match body() {
        _ if crate::trace::interrupted() => Err(interrupted()),
        other => other,
    };
    if result.is_err() {
        crate::trace::tree::clean_up();
    } else {
        // Processes the target left running (its children, orphaned when it exited or was
        // killed) would outlive the measurement: they go too, and the user is told.
        warn_left_running("", kill_left_running());
    }
    result
}

/// Kills and reaps every process left in ldcost's tree (between runs: what the target left
/// running); how many there were.
pub fn kill_left_running() -> usize {
    let left = crate::trace::tree::kill_tree(std::process::id() as i32);
    crate::trace::tree::reap_all(std::time::Duration::from_secs(2));
    left
}

/// The warning for `left` processes killed after the target's runs; `side` (`"HEAD: "`, or
/// empty) says whose target left them.
pub fn warn_left_running(side: &str, left: usize) {
    if left > 0 {
        eprintln!(
            "ldcost: warning: {side}{left} process{} the target left running {} killed",
            if left == 1 { "" } else { "es" },
            if left == 1 { "was" } else { "were" }
        );
    }
}

/// The error of a command stopped by SIGINT/SIGTERM/SIGHUP (exit 130).
pub fn interrupted() -> Error {
    Error::Run(crate::trace::startup::RunError::Trace(
        crate::trace::launch::TraceError::Interrupted,
    ))
}

/// The checks before anything is launched, then the runs.
fn profile_checked(cfg: &crate::config::ProfileRun) -> Result<ExitCode, Error> {
    let closure = pre_checks(cfg, &deps::ResolveOptions::from_env())?;
    profile_inner(cfg, closure)
}

/// What `profile` (and each side of `compare`) checks before anything is launched, with
/// `deps`'s codes and messages: the target is a readable ELF (or a script) this host runs,
/// every library ld.so needs is found with `opts` (the side's environment), the sampling
/// budget fits `ulimit -v`, the fork options are usable. Returns the target's closure: the
/// static prediction the runs are checked against.
pub fn pre_checks(
    cfg: &crate::config::ProfileRun,
    opts: &deps::ResolveOptions,
) -> Result<Option<deps::Closure>, Error> {
    let target = &cfg.profile.command.program;
    outputs(
        &[("the target", target)],
        &[
            ("--json", &cfg.json),
            ("--flamegraph", &cfg.flamegraph),
            ("--fork-flamegraph", &cfg.fork_flamegraph),
            ("--folded", &cfg.folded),
            ("--timeline", &cfg.timeline),
            ("--trace", &cfg.trace),
        ],
    )?;
    // The same checks as `deps`, with its codes and messages (a script is fine: the kernel
    // runs its interpreter). The closure is the static prediction of the cross-check.
    let closure = match deps::resolve(target, opts) {
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
            check_interpreter(target, std::path::Path::new(&interp), "#! interpreter")?;
            deps::resolve(std::path::Path::new(&interp), opts).ok()
        }
        Err(e) => return Err(e.into()),
    };
    // ENOENT from execve names the program, whose file is there: the missing one is its
    // interpreter (PT_INTERP).
    if let Some(i) = closure
        .as_ref()
        .and_then(|c| c.objects.first())
        .and_then(|o| o.info.interpreter.as_deref())
    {
        check_interpreter(
            target,
            std::path::Path::new(i),
            "ELF interpreter (PT_INTERP)",
        )?;
    }
    check_exec_mount(target)?;
    // A library ld.so would not find: every run would end with status 127.
    if let Some(m) = closure.as_ref().and_then(|c| c.missing.first()) {
        return Err(Error::MissingLibrary {
            target: target.clone(),
            name: m.name.clone(),
            needed_by: m.needed_by.clone(),
            reason: m.reason.clone(),
            more: closure.as_ref().map_or(0, |c| c.missing.len() - 1),
        });
    }
    if let Some(s) = &cfg.sampling {
        check_address_space(s)?;
    }
    if let Some(f) = &cfg.fork {
        check_child(&f.child)?;
        // Before the exec-chain discovery runs the target.
        crate::trace::fork::check(f)?;
    }
    Ok(closure)
}

/// `--child exec:PATH`: every child would fail to exec (and be measured as exiting 127) when
/// PATH is missing or not executable; refused before anything runs (exit 3).
fn check_child(child: &crate::trace::fork::ChildSpec) -> Result<(), Error> {
    use crate::trace::launch::TraceError;
    use std::os::unix::fs::PermissionsExt;
    let crate::trace::fork::ChildSpec::Exec(path) = child else {
        return Ok(());
    };
    let named = std::path::PathBuf::from(format!("--child exec:{}", path.display()));
    let refuse = |e: TraceError| Err(Error::Run(crate::trace::startup::RunError::Trace(e)));
    match std::fs::metadata(path) {
        Err(_) => refuse(TraceError::NotFound { path: named }),
        Ok(m) if m.is_dir() => refuse(TraceError::NotExecutable {
            path: named,
            reason: "it is a directory".into(),
        }),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => refuse(TraceError::NotExecutable {
            path: named,
            reason: "no execute permission".into(),
        }),
        // A file that is neither ELF nor a #! script: each child's execve fails (ENOEXEC).
        Ok(_) if !is_program(path) => refuse(TraceError::NotExecutable {
            path: named,
            reason: "it is not a program (neither ELF nor a #! script)".into(),
        }),
        Ok(_) => check_exec_mount(path),
    }
}

/// The interpreter the kernel runs for `target` must exist and be a program: execve's ENOENT
/// and ENOEXEC would otherwise name the target. A `#!` interpreter may itself be a script.
fn check_interpreter(
    target: &std::path::Path,
    interp: &std::path::Path,
    kind: &'static str,
) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    let refuse = |what: String| {
        Err(Error::Interpreter {
            target: target.to_path_buf(),
            kind,
            interpreter: interp.to_path_buf(),
            what,
        })
    };
    let meta = match std::fs::metadata(interp) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return refuse("does not exist".into())
        }
        Err(e) => return refuse(format!("cannot be read: {e}")),
    };
    if !meta.is_file() {
        return refuse("is not a regular file".into());
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return refuse("is not executable (no execute permission)".into());
    }
    if !is_program(interp) {
        return refuse("is not a program: neither ELF nor a #! script".into());
    }
    check_exec_mount(interp)
}

/// execve refuses every file on a file system mounted noexec (EACCES, which reads as a missing
/// execute permission): say so.
fn check_exec_mount(path: &std::path::Path) -> Result<(), Error> {
    match nix::sys::statvfs::statvfs(path) {
        Ok(st) if st.flags().contains(nix::sys::statvfs::FsFlags::ST_NOEXEC) => {
            Err(Error::NoExec {
                path: path.to_path_buf(),
            })
        }
        _ => Ok(()),
    }
}

/// Whether the file starts as a program the kernel runs: ELF or a `#!` script.
fn is_program(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut magic = [0u8; 4];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut magic))
        .unwrap_or(0);
    (n == 4 && &magic == b"\x7fELF") || (n >= 2 && magic.starts_with(b"#!"))
}

/// Refuses sampling when `ulimit -v` leaves less room than its memory budget.
fn check_address_space(s: &crate::perf::SamplerConfig) -> Result<(), Error> {
    let Some(budget) = s.budget_bytes else {
        return Ok(());
    };
    // /proc/self/limits: "Max address space  <soft>  <hard>  bytes" ("unlimited" when none).
    let Some(soft) = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("Max address space"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
    else {
        return Ok(());
    };
    let used = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("VmSize:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024);
    let free = soft.saturating_sub(used);
    if free < budget {
        return Err(Error::AddressSpace {
            limit_mb: soft >> 20,
            free_mb: free >> 20,
            budget_mb: budget >> 20,
        });
    }
    Ok(())
}

/// Why the fork section is absent when the target was killed during the fork run.
const FORK_KILLED: &str = "the target was killed by SIGKILL during the fork probe";

fn profile_inner(
    cfg: &crate::config::ProfileRun,
    closure: Option<deps::Closure>,
) -> Result<ExitCode, Error> {
    let mut folded = Vec::new();
    // The exec chain through wrappers, discovered once for the fork and the exec runs.
    let pcfg = crate::profile::with_chain(&cfg.profile)?;
    // The chain names programs the first checks could not see (what a wrapper execs).
    chain_outputs(
        pcfg.chain.as_deref(),
        &[
            ("--json", &cfg.json),
            ("--flamegraph", &cfg.flamegraph),
            ("--fork-flamegraph", &cfg.fork_flamegraph),
            ("--folded", &cfg.folded),
            ("--timeline", &cfg.timeline),
            ("--trace", &cfg.trace),
        ],
    )?;
    // Why the fork section is absent when `--fork` asked for it.
    let mut fork_lost = None;
    let fork = match &cfg.fork {
        Some(f) => {
            // With exec runs to follow, the fork run's output is not the one shown.
            let cmd = if cfg.exec {
                pcfg.later_command()
            } else {
                pcfg.command.clone()
            };
            let spinner = crate::progress::Spinner::after(
                std::time::Duration::from_secs(1),
                format!(
                    "fork loop: {} forks of {}",
                    f.iterations,
                    cmd.program.display()
                ),
            );
            let run = crate::trace::fork::run(&cmd, f);
            drop(spinner);
            match run {
                // Killed from outside during the fork run: its figures are lost, the exec
                // runs' are not (they are separate processes); with no exec runs it is the
                // error it is.
                Err(e @ crate::trace::fork::ForkError::Killed) if cfg.exec => {
                    eprintln!("ldcost: warning: {e}");
                    fork_lost = Some(FORK_KILLED.to_string());
                    None
                }
                run => {
                    let run = run?;
                    let mut s = crate::attribute::fork_cost::section(&run, f.iterations);
                    let (b, e, stacks) =
                        crate::attribute::fork_cost::fork_breakdown(&run, &cfg.profile.debug_roots);
                    s.breakdown = b;
                    s.breakdown_error = e;
                    folded.extend(stacks);
                    Some(s)
                }
            }
        }
        None => None,
    };
    if !cfg.exec {
        write_graphs(cfg, &folded, fork.as_ref(), None)?;
        return fork_only(cfg, fork);
    }
    let mut section = crate::profile::profile(&pcfg)?;
    if crate::trace::interrupted() {
        return Err(interrupted());
    }
    let target = &cfg.profile.command.program;
    // Followed through wrappers: the prediction describes the program that was measured.
    let closure = match section.measured_exe() {
        Some(exe) => deps::resolve(exe, &deps::ResolveOptions::from_env()).ok(),
        None => closure,
    };
    let model = closure.as_ref().map(crate::attribute::lookups::model);
    if let Some(c) = &closure {
        section.prediction = Some(crate::attribute::link_cost::prediction(c));
    }
    crate::attribute::after_main::add_static_model(
        &mut section.after_main,
        &section.raw,
        closure.as_ref(),
    );
    let fixes = crate::attribute::fixes::fixes(Some(&section), fork.as_ref(), closure.as_ref());
    folded.extend(std::mem::take(&mut section.folded));
    write_graphs(cfg, &folded, fork.as_ref(), section.breakdown.as_ref())?;
    write_timeline(cfg, &section)?;
    if cfg.text {
        let mut text = report::profile_report(
            Some(&section),
            fork.as_ref(),
            closure.as_ref().is_some_and(|c| !c.objects.is_empty()),
            &fixes,
            cfg.detail,
        );
        if let Some(why) = &fork_lost {
            text.push_str(&format!("\nfork cost: not measured ({why})\n"));
        }
        if report::color::wanted() {
            text = report::color::paint(&text);
        }
        report::write_text(&text, std::path::Path::new("-"))?;
    }
    let killed = section.endings.iter().find_map(|e| match e {
        crate::trace::launch::Ending::Killed(s) => Some(*s),
        _ => None,
    });
    let timed_out = section
        .endings
        .contains(&crate::trace::launch::Ending::TimedOut);
    if let Some(path) = &cfg.json {
        let mut doc = match closure {
            Some(c) => Document::deps(&target.to_string_lossy(), c, model),
            None => Document::empty(&target.to_string_lossy()),
        };
        doc.command = "profile".into();
        doc.summary =
            Some(crate::attribute::summary::summary(Some(&section), fork.as_ref()).into());
        doc.fixes = Some(fixes.into_iter().map(Into::into).collect());
        doc.profile = Some(section.into());
        doc.fork = fork.map(Into::into);
        doc.fork_not_measured = fork_lost;
        doc.machine = Some(crate::record::Machine::current());
        report::write_json(&doc, path)?;
    }
    match killed {
        Some(9) => eprintln!(
            "ldcost: warning: the target was killed by signal 9 (SIGKILL) in a run; that run is left out, the figures are from the other runs"
        ),
        Some(sig) => eprintln!(
            "ldcost: warning: the target was killed by signal {sig} in a run; that run's later phases are missing"
        ),
        None => {}
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
    if cfg.text && fork.is_some() {
        let fixes = crate::attribute::fixes::fixes(None, fork.as_ref(), None);
        let mut text = report::profile_report(None, fork.as_ref(), false, &fixes, cfg.detail);
        if report::color::wanted() {
            text = report::color::paint(&text);
        }
        report::write_text(&text, std::path::Path::new("-"))?;
    }
    if let Some(path) = &cfg.json {
        let mut doc = Document::empty(&target);
        doc.command = "profile".into();
        doc.summary = Some(crate::attribute::summary::summary(None, fork.as_ref()).into());
        doc.fixes = Some(
            crate::attribute::fixes::fixes(None, fork.as_ref(), None)
                .into_iter()
                .map(Into::into)
                .collect(),
        );
        doc.fork = fork.map(Into::into);
        doc.machine = Some(crate::record::Machine::current());
        report::write_json(&doc, path)?;
    }
    Ok(ExitCode::Ok)
}

/// `--folded`, `--flamegraph` and `--fork-flamegraph`. The folded file holds both sections
/// (rooted by section, then category); each graph draws one: the exec runs' samples and the
/// fork loop's are different populations (10 runs against 2000 forks) and one sample scale
/// would draw the larger one only. `--flamegraph` draws the exec runs, or the fork loop when
/// there are none (`--no-exec`).
fn write_graphs(
    cfg: &crate::config::ProfileRun,
    folded: &[report::flamegraph::FoldedStack],
    fork: Option<&crate::attribute::fork_cost::ForkSection>,
    exec: Option<&crate::attribute::breakdown::Breakdown>,
) -> Result<(), Error> {
    use crate::attribute::breakdown::Breakdown;
    let err = |path: &std::path::Path, e: std::io::Error| {
        Error::Report(crate::error::ReportError::Write {
            path: path.to_path_buf(),
            source: e,
        })
    };
    if let Some(path) = &cfg.folded {
        let mut buf = Vec::new();
        report::flamegraph::write_folded(folded, &mut buf).map_err(|e| err(path, e))?;
        report::output::write_bytes(&buf, path)?;
    }
    let command = &cfg.profile.command;
    let mut invocation = vec![command.program.display().to_string()];
    invocation.extend(
        command
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned()),
    );
    let invocation = invocation.join(" ");
    let head = |b: Option<&Breakdown>, per: &str| -> Option<String> {
        let b = b?;
        let mut s = format!(
            "{} samples over {} {per}",
            b.samples,
            b.covered.round() as u64
        );
        if b.instrumentation.samples > 0 {
            s.push_str(&format!(
                " ({} of ldcost's instrumentation left out)",
                b.instrumentation.samples
            ));
        }
        Some(s)
    };
    let fork_breakdown = fork.and_then(|f| f.breakdown.as_ref());
    let fork_reading = fork.map(|f| f.reading.as_str()).filter(|r| !r.is_empty());
    let mut graphs = Vec::new();
    if cfg.exec {
        if let Some(path) = &cfg.flamegraph {
            let sub = head(exec, "exec runs");
            graphs.push((path, "exec", "exec", sub, exec));
        }
        if let Some(path) = &cfg.fork_flamegraph {
            let sub = head(fork_breakdown, "forks");
            let sub = [sub.as_deref(), fork_reading].into_iter().flatten();
            let sub = Some(sub.collect::<Vec<_>>().join(" · "));
            graphs.push((path, "fork", "fork", sub, fork_breakdown));
        }
    } else {
        for path in [&cfg.flamegraph, &cfg.fork_flamegraph]
            .into_iter()
            .flatten()
        {
            let sub = head(fork_breakdown, "forks");
            let sub = [sub.as_deref(), fork_reading].into_iter().flatten();
            let sub = Some(sub.collect::<Vec<_>>().join(" · "));
            graphs.push((path, "fork", "fork", sub, fork_breakdown));
        }
    }
    for (path, section, what, subtitle, breakdown) in graphs {
        let stacks: Vec<_> = folded
            .iter()
            .filter(|s| s.section == section)
            .cloned()
            .collect();
        if stacks
            .iter()
            .all(|s| s.category == crate::attribute::categories::Category::Instrumentation)
        {
            eprintln!(
                "ldcost: warning: no {what} samples to draw; {} not written",
                path.display()
            );
            continue;
        }
        let opts = report::flamegraph::FlameOptions {
            title: format!("ldcost profile ({what}): {invocation}"),
            subtitle: subtitle.filter(|s| !s.is_empty()),
        };
        let mut buf = Vec::new();
        report::flamegraph::write_section_svg(&stacks, &opts, breakdown, &mut buf)
            .map_err(|e| err(path, e))?;
        report::output::write_bytes(&buf, path)?;
    }
    Ok(())
}

/// `--timeline` and `--trace`: the exec runs' phases in time order ([`report::timeline`]).
fn write_timeline(
    cfg: &crate::config::ProfileRun,
    section: &crate::attribute::profile::ProfileSection,
) -> Result<(), Error> {
    let title = format!(
        "ldcost profile {}",
        report::text::clean(&shell_words::join(&section.argv))
    );
    if let Some(path) = &cfg.timeline {
        report::output::write_bytes(report::timeline::svg(section, &title).as_bytes(), path)?;
    }
    if let Some(path) = &cfg.trace {
        let text = report::timeline::trace(section, &title).map_err(|e| {
            Error::Report(crate::error::ReportError::Write {
                path: path.to_path_buf(),
                source: std::io::Error::other(e),
            })
        })?;
        report::output::write_bytes(text.as_bytes(), path)?;
    }
    Ok(())
}

/// `ldcost diff BASE.json HEAD.json`.
pub fn diff(cfg: &crate::compare::DiffConfig) -> Result<ExitCode, Error> {
    outputs(
        &[
            ("the BASE document", &cfg.base),
            ("the HEAD document", &cfg.head),
        ],
        &[
            ("--json", &cfg.json),
            ("--flamegraph-diff", &cfg.flamegraph_diff),
            ("--folded-diff", &cfg.folded_diff),
        ],
    )?;
    crate::compare::diff(cfg)
}

/// `ldcost report FILE` (`-`: standard input): a saved document printed again, without running anything. A
/// comparison (it has a verdict) by `compare`'s renderers, a profile or deps document by the
/// functions `profile` and `deps` print with ([`report::reader`]).
pub fn report(cfg: &crate::config::ReportConfig) -> Result<ExitCode, Error> {
    use crate::config::Format;
    use crate::error::CompareError;
    // `-`: the document comes from standard input (`profile --json - | ldcost report -`).
    let stdin = cfg.file.as_os_str() == "-";
    let file = match stdin {
        true => std::path::PathBuf::from(report::reader::STDIN),
        false => cfg.file.clone(),
    };
    let bad = |what: String| {
        Error::Saved(CompareError::BadDocument {
            path: file.clone(),
            what,
        })
    };
    let value = match stdin {
        true => {
            use report::reader::{ReadFailure, StdinFailure};
            match report::reader::read_stdin() {
                Ok(b) if b.is_empty() => {
                    return Err(bad("empty: nothing was written to it".into()))
                }
                Ok(b) => crate::compare::parse_value(&b, &file),
                Err(StdinFailure::Closed) => Err(CompareError::Closed { path: file.clone() }),
                Err(StdinFailure::NotADocument(kind)) => Err(CompareError::NotRegular {
                    path: file.clone(),
                    kind,
                }),
                Err(StdinFailure::Read(ReadFailure::TooLarge)) => {
                    Err(CompareError::TooLarge { path: file.clone() })
                }
                Err(StdinFailure::Read(ReadFailure::Io(source))) => Err(CompareError::Unreadable {
                    path: file.clone(),
                    source,
                }),
            }
        }
        false => crate::compare::read_value(&cfg.file),
    }
    .map_err(Error::Saved)?;
    let markdown = cfg.format == Format::Markdown;
    let text = if value.get("verdict").is_some() {
        let c: crate::compare::Comparison = serde_json::from_value(value)
            .map_err(|e| bad(format!("not an ldcost comparison document ({e})")))?;
        if markdown {
            crate::compare::markdown::comparison_with(&c, cfg.detail)
        } else {
            crate::compare::text::comparison_with(&c, cfg.detail)
        }
    } else {
        let doc: Document = serde_json::from_value(value)
            .map_err(|e| bad(format!("not an ldcost document ({e})")))?;
        let text = report::reader::text(&doc, cfg.detail && !markdown).ok_or_else(|| {
            bad(format!(
                "a `{}` document with nothing to show (no profile, fork or deps section)",
                doc.command
            ))
        })?;
        if markdown {
            report::reader::markdown(&doc, &text, cfg.detail)
        } else {
            text
        }
    };
    let text = if !markdown && report::color::wanted() {
        report::color::paint(&text)
    } else {
        text
    };
    report::write_text(&text, std::path::Path::new("-"))?;
    Ok(ExitCode::Ok)
}

/// `ldcost compare BASE HEAD [-- ARGS]`.
pub fn compare(cfg: &compare_runner::CompareConfig) -> Result<ExitCode, Error> {
    outputs(
        &[
            ("the BASE program", &cfg.base.profile.command.program),
            ("the HEAD program", &cfg.head.profile.command.program),
        ],
        &cfg.outputs(),
    )?;
    compare_runner::compare(cfg)
}

/// Refuses, after the exec chain is discovered and before the measured runs, an output naming
/// a program of the chain (the script and each image a wrapper execs): replacing it would
/// destroy the program being measured.
pub(crate) fn chain_outputs(
    chain: Option<&[crate::record::ExecImage]>,
    given: &[(&str, &Option<std::path::PathBuf>)],
) -> Result<(), Error> {
    let programs: Vec<std::path::PathBuf> = chain
        .unwrap_or_default()
        .iter()
        .flat_map(|i| [i.path.as_str(), i.exe.as_str()])
        .map(std::path::PathBuf::from)
        .collect();
    let inputs: Vec<(&str, &std::path::PathBuf)> = programs
        .iter()
        .map(|p| ("a program of the target's exec chain", p))
        .collect();
    outputs(&inputs, given)
}

/// Refuses, before anything runs, an output naming an input or another output's file
/// ([`report::output::check_outputs`]); options not given are left out.
fn outputs(
    inputs: &[(&str, &std::path::PathBuf)],
    given: &[(&str, &Option<std::path::PathBuf>)],
) -> Result<(), Error> {
    let inputs: Vec<(&str, &std::path::Path)> =
        inputs.iter().map(|(w, p)| (*w, p.as_path())).collect();
    let given: Vec<(&str, &std::path::Path)> = given
        .iter()
        .filter_map(|(o, p)| Some((*o, p.as_deref()?)))
        .collect();
    report::output::check_outputs(&inputs, &given)?;
    Ok(())
}

/// `ldcost experiment [NAME…]`: checks the names and the output directory before anything
/// runs, builds in a private directory (removed afterwards unless `--keep`), runs the
/// experiments in order (a failed one is named, the others still run), writes the report
/// files after each experiment (a disk that fills later cannot take the finished results
/// with it), prints the report. Exit 13 when any experiment failed; on SIGINT/SIGTERM exit 130
/// with every process killed and reaped and the build directory removed
/// ([`supervised`]).
pub fn experiment(cfg: &crate::config::ExperimentConfig) -> Result<ExitCode, Error> {
    supervised(|| experiment_run(cfg))
}

fn experiment_run(cfg: &crate::config::ExperimentConfig) -> Result<ExitCode, Error> {
    use crate::experiment::{self, output};
    let names = experiment::select(&cfg.names).map_err(|name| Error::UnknownExperiment {
        name,
        known: experiment::names().join(", "),
    })?;
    let out_err = |path: &std::path::Path, source| Error::ExperimentOutput {
        path: path.to_path_buf(),
        source,
    };
    // The output directory must be writable before minutes of measuring, not after.
    std::fs::create_dir_all(&cfg.out).map_err(|e| out_err(&cfg.out, e))?;
    // A fresh name (never an existing file, never through a link), removed when dropped.
    tempfile::Builder::new()
        .prefix(".ldcost-write-test.")
        .tempfile_in(&cfg.out)
        .map_err(|e| out_err(&cfg.out, e))?;
    let work = make_work_dir().map_err(|(p, e)| out_err(&p, e))?;
    crate::trace::tree::temp_made(&work);
    experiment::set_build_dir(&work);
    let start = std::time::Instant::now();
    if cfg.format == crate::config::Format::Json {
        crate::progress::disable(); // plain lines on stderr; stdout is the JSON
    }
    let report_of = |outcomes: Vec<experiment::Outcome>| output::Report {
        machine: crate::record::Machine::current(),
        settings: output::RunSettings {
            experiments: names.iter().map(|n| n.to_string()).collect(),
            quick: cfg.quick,
            runs: cfg.runs,
            out: cfg.out.display().to_string(),
            keep: cfg.keep,
            work_dir: cfg.keep.then(|| work.display().to_string()),
        },
        outcomes,
        elapsed_s: start.elapsed().as_secs_f64(),
    };
    // The report so far after each experiment: each file is replaced whole (written beside it,
    // then renamed), so a full disk keeps the last complete version. The first failure is
    // said at once; the experiments go on and the report is still printed at the end.
    let mut write_failed = None;
    let mut write_so_far = |so_far: &[experiment::Outcome]| {
        if write_failed.is_some() {
            return;
        }
        let partial = report_of(so_far.to_vec());
        if let Err((p, e)) = output::write_dir(&partial, &cfg.out) {
            eprintln!(
                "ldcost: warning: cannot write {}: {e}; the experiments go on and the report is \
                 printed at the end",
                p.display()
            );
            write_failed = Some(());
        }
    };
    let progress = experiment::progress::Reporter::for_stderr(names.len());
    let outcomes = experiment::run_all(
        &names,
        &work,
        cfg.quick,
        cfg.runs,
        &progress,
        &mut write_so_far,
    );
    if crate::trace::interrupted() {
        return Err(interrupted());
    }
    if cfg.keep {
        crate::trace::tree::temp_gone(&work);
        eprintln!("ldcost: the build directory is kept: {}", work.display());
    } else {
        if let Err(e) = std::fs::remove_dir_all(&work) {
            eprintln!(
                "ldcost: warning: cannot remove the build directory {}: {e}",
                work.display()
            );
        }
        crate::trace::tree::temp_gone(&work);
    }
    let report = report_of(outcomes);
    let written = output::write_dir(&report, &cfg.out).map_err(|(p, e)| out_err(&p, e));
    let text = match cfg.format {
        crate::config::Format::Text => output::text(&report),
        crate::config::Format::Markdown => output::markdown(&report),
        crate::config::Format::Json => {
            serde_json::to_string_pretty(&output::json(&report)).unwrap_or_default() + "\n"
        }
    };
    // Printed even when the files could not be written: the results are not lost.
    report::write_text(&text, std::path::Path::new("-"))?;
    written?;
    let failed = report.failed();
    if failed.is_empty() {
        return Ok(ExitCode::Ok);
    }
    let names: Vec<&str> = failed.iter().map(|f| f.0).collect();
    eprintln!(
        "ldcost: warning: {} experiment{} could not run: {} (the report says why); the others' \
         results are in {}",
        failed.len(),
        if failed.len() == 1 { "" } else { "s" },
        names.join(", "),
        cfg.out.display()
    );
    Ok(ExitCode::ExperimentFailed)
}

/// A new private directory under the system's temporary directory (absolute, mode 0700, a
/// fresh unpredictable name), left in place: removed by the caller unless `--keep`.
fn make_work_dir() -> Result<std::path::PathBuf, (std::path::PathBuf, std::io::Error)> {
    let base = std::env::temp_dir();
    let base = std::path::absolute(&base).unwrap_or(base);
    tempfile::Builder::new()
        .prefix("ldcost-experiment-")
        // tempfile's directories are 0777 less the umask unless told.
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .tempdir_in(&base)
        .map(|d| d.keep())
        .map_err(|e| (base, e))
}
