//! One traced per-object run of a program, and of the dlopen fixtures, for the tests of the
//! loader after `main`: the run, or None after a printed SKIP where tracing is refused.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::dlopen_fixtures::{self, Fixtures};
use super::skip;
use ldcost::record::after_main::{AfterMain, AfterMainSeen};
use ldcost::record::{Ending, Instrumentation, Run};
use ldcost::trace::launch::Command;
use ldcost::trace::startup::{run_once, RunOptions};

/// One test at a time: the tracer waits for any child (`waitpid(-1)`), so a compiler or an
/// oracle run started by another test thread meanwhile could be reaped by it.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// One per-object run of `argv` with `env`, or None (printed SKIP) where tracing is refused.
pub fn traced(
    name: &str,
    argv: &[&str],
    env: &[(String, String)],
    roots: Vec<PathBuf>,
) -> Option<Run> {
    let cmd = Command {
        program: argv[0].into(),
        args: argv[1..].iter().map(Into::into).collect(),
        env: env.to_vec(),
        env_remove: Vec::new(),
        quiet: true,
        stdout_to_stderr: false,
        no_stdin: true,
        follow: None,
    };
    let opts = RunOptions {
        instrumentation: Instrumentation::PerObject,
        // The hang guard: a run that does not end by then is killed and fails the test.
        timeout: Some(Duration::from_secs(120)),
        debug_roots: roots,
        sample: None,
    };
    match run_once(&cmd, &opts) {
        Ok((run, _)) => Some(run),
        Err(e) => {
            skip(name, &format!("cannot trace here: {e}"));
            None
        }
    }
}

/// The fixtures, traced in `mode` with the debug symbols; None where a test must skip.
pub fn fixture_run(name: &str, mode: &str) -> Option<(Fixtures, Run, AfterMain)> {
    if !super::tools(name, &["cc"]) {
        return None;
    }
    let fx = dlopen_fixtures::build();
    let prog = fx.prog.display().to_string();
    let run = traced(
        name,
        &[&prog, mode],
        &fx.env(),
        ldcost::symbolize::default_debug_roots(),
    )?;
    let am = per_object(name, &run)?;
    assert_eq!(run.ending, Ending::Exited(7), "the fixture's exit status");
    Some((fx, run, am))
}

/// A traced run's record after main, seen per object; None, with `SKIP` printed, where ld.so
/// has no debug symbols (the rendezvous level only).
pub fn per_object(name: &str, run: &Run) -> Option<AfterMain> {
    let am = run
        .after_main
        .clone()
        .expect("a per-object run records after_main");
    if let AfterMainSeen::Rendezvous(why) = &am.seen {
        skip(name, &format!("no ld.so debug symbols: {why}"));
        return None;
    }
    assert_eq!(am.seen, AfterMainSeen::PerObject);
    Some(am)
}

/// The fixtures, traced in `mode` with no debug symbols at all (an empty directory for them),
/// as on a machine without libc6-dbg; None where a test must skip.
pub fn fixture_run_without_symbols(name: &str, mode: &str) -> Option<(Fixtures, Run)> {
    if !super::tools(name, &["cc"]) {
        return None;
    }
    let fx = dlopen_fixtures::build();
    let prog = fx.prog.display().to_string();
    let empty = tempfile::tempdir().unwrap();
    let run = traced(name, &[&prog, mode], &fx.env(), vec![empty.path().into()])?;
    Some((fx, run))
}

/// A path's file name.
pub fn base(p: &str) -> String {
    Path::new(p)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The objects loaded after main, in load order, by file name.
pub fn loaded(am: &AfterMain) -> Vec<String> {
    am.loaded().map(|(_, l)| base(&l.name)).collect()
}

/// LD_DEBUG=files' objects after main, by file name.
pub fn oracle(fx: &Fixtures, mode: &str) -> Vec<String> {
    let prog = fx.prog.display().to_string();
    let o = dlopen_fixtures::ld_debug_files(&[&prog, mode], &fx.env());
    assert_eq!(o.status, Some(7), "the fixture's exit status untraced");
    o.mapped.iter().map(|m| base(m)).collect()
}
