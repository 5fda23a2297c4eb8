//! The harness of the profile-target tests: running ldcost (a guard that kills and reaps),
//! one test case (the lock, a temporary directory, the fixtures, the /proc check) and the /proc
//! scans. The `use`s are re-exported: `use super::harness::*` is the test modules' prelude.

pub(crate) use super::common::{
    assert_no_leftovers, cc, forker_source, have, ldd, processes, running_as_root, skip, stdout_of,
    tools, write, Proc,
};

pub(crate) use std::collections::BTreeSet;
pub(crate) use std::ffi::{OsStr, OsString};
pub(crate) use std::os::unix::fs::PermissionsExt;
pub(crate) use std::path::{Path, PathBuf};
pub(crate) use std::process::Command;
pub(crate) use std::sync::{mpsc, Mutex, MutexGuard};
pub(crate) use std::time::{Duration, Instant};

pub(crate) use ldcost::profile::ProfileSection;
pub(crate) use ldcost::record::{Detail, Instrumentation, Phase};
pub(crate) use ldcost::report::Document;
pub(crate) use ldcost::trace::launch::{Ending, TraceError};
pub(crate) use nix::sys::signal::{kill, Signal};
pub(crate) use nix::unistd::Pid;

use super::fixtures::USE_CTOR;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_ldcost");
/// The interpreter of every dynamic fixture (x86-64 glibc).
pub(crate) const LDSO: &str = "/lib64/ld-linux-x86-64.so.2";
/// No single ldcost run in this file may take longer than this (a hang is a failure).
pub(crate) const HANG: Duration = Duration::from_secs(120);
/// How long ldcost may take to stop after SIGINT or a --timeout: a generous hang guard, not a
/// speed claim (it stops in well under a second on a quiet machine). The fixtures that would
/// run on if the signal were lost sleep 300 s, or run until a --timeout of 600 s.
pub(crate) const STOP_GUARD: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// Running ldcost.

/// How an ldcost run ended.
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: String,
    pub(crate) elapsed: Duration,
}

impl Finished {
    pub(crate) fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// The `profile` section of the JSON on standard output.
    pub(crate) fn profile(&self) -> ProfileSection {
        let doc: Document = serde_json::from_slice(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not a JSON Document ({e}); exit {:?}; stderr:\n{}",
                self.code, self.stderr
            )
        });
        assert_eq!(doc.command, "profile");
        doc.profile
            .expect("the document has a profile section")
            .into()
    }
}

/// What the waiter thread reports: exit code (None: killed by a signal), stdout, stderr.
pub(crate) type Exit = (Option<i32>, Vec<u8>, String);

/// An ldcost (or wrapper) process started by a test. Dropping it SIGKILLs and reaps it unless
/// it was waited for.
pub(crate) struct Spawned {
    pub(crate) pid: i32,
    pub(crate) done: Option<mpsc::Receiver<Exit>>,
    pub(crate) started: Instant,
}

impl Spawned {
    /// Starts `program args` with stdin from /dev/null, stdout and stderr captured, and
    /// LD_LIBRARY_PATH removed (cargo sets it for tests; the oracles run without it).
    pub(crate) fn start(program: &OsStr, args: &[OsString]) -> Spawned {
        // The waiter thread owns the Child: it drains both pipes and reaps it, then reports.
        let (pid, rx) = super::common::spawn_reaped(program, args)
            .unwrap_or_else(|e| panic!("cannot start {program:?}: {e}"));
        Spawned {
            pid,
            done: Some(rx),
            started: Instant::now(),
        }
    }

    /// Waits for the process to end, at most `limit` (then it is killed and the test fails).
    pub(crate) fn wait(mut self, limit: Duration) -> Finished {
        let rx = self.done.take().expect("not waited yet");
        match rx.recv_timeout(limit) {
            Ok((code, stdout, stderr)) => Finished {
                code,
                stdout,
                stderr,
                elapsed: self.started.elapsed(),
            },
            Err(_) => {
                kill_and_reap(self.pid, &rx);
                panic!(
                    "process {} did not finish within {limit:?}: killed (a hang)",
                    self.pid
                );
            }
        }
    }
}

pub(crate) fn kill_and_reap(pid: i32, rx: &mpsc::Receiver<Exit>) {
    if let Ok(msg) = rx.try_recv() {
        drop(msg); // already reaped: its pid may belong to someone else now
        return;
    }
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
    let _ = rx.recv_timeout(Duration::from_secs(30));
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Some(rx) = self.done.take() {
            kill_and_reap(self.pid, &rx);
        }
    }
}

pub(crate) fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

/// Runs ldcost with `args` to completion (bounded by [`HANG`]).
pub(crate) fn ldcost(args: Vec<OsString>) -> Finished {
    Spawned::start(OsStr::new(BIN), &args).wait(HANG)
}

/// `profile -n 1 --warmup 0 --no-ld-debug --quiet-target`: a test appends the target.
pub(crate) const ONE_RUN: &[&str] = &[
    "profile",
    "-n",
    "1",
    "--warmup",
    "0",
    "--no-ld-debug",
    "--quiet-target",
];

/// `profile -n 2 --warmup 0 --no-ld-debug --quiet-target EXTRA...`.
pub(crate) fn quick_profile_args(extra: &[&str]) -> Vec<OsString> {
    let mut args = os(&[
        "profile",
        "-n",
        "2",
        "--warmup",
        "0",
        "--no-ld-debug",
        "--quiet-target",
    ]);
    args.extend(os(extra));
    args
}

/// `ldcost profile -n 2 --warmup 0 --no-ld-debug --quiet-target [EXTRA] --json - TARGET`.
pub(crate) fn profile(target: &Path, extra: &[&str]) -> Finished {
    let mut args = quick_profile_args(extra);
    args.extend(os(&["--json", "-"]));
    args.push(target.into());
    ldcost(args)
}

// ---------------------------------------------------------------------------------------------
// One test case: the lock, a temporary directory, the fixtures, and the /proc check.

pub(crate) static SERIAL: Mutex<()> = Mutex::new(());
/// Every fixture any test built, for the final sweep.
pub(crate) static ALL_FIXTURES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

pub(crate) struct Case {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) fixtures: Vec<PathBuf>,
    pub(crate) _serial: MutexGuard<'static, ()>,
}

impl Case {
    pub(crate) fn new() -> Case {
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        Case {
            dir: tempfile::tempdir().expect("tempdir"),
            fixtures: Vec::new(),
            _serial: serial,
        }
    }

    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn register(&mut self, p: &Path) {
        self.fixtures.push(p.to_path_buf());
        ALL_FIXTURES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(p.to_path_buf());
    }

    /// `cc -O0 FLAGS -o ldcpt-NAME NAME.c` in the case's directory; returns the absolute path.
    pub(crate) fn build(&mut self, name: &str, source: &str, flags: &[&str]) -> PathBuf {
        let src = format!("{name}.c");
        write(self.dir(), &src, source);
        let out = format!("ldcpt-{name}");
        let mut args = vec!["-O0"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["-o", &out, &src]);
        cc(self.dir(), &args);
        let p = self.dir().join(out);
        self.register(&p);
        p
    }

    /// A program linked against a shared library built from `lib_source` (see USE_CTOR).
    pub(crate) fn build_with_library(&mut self, lib_source: &str, lib_flags: &[&str]) -> PathBuf {
        write(self.dir(), "ctor.c", lib_source);
        write(self.dir(), "usector.c", USE_CTOR);
        let mut args = vec!["-O0", "-shared", "-fPIC"];
        args.extend_from_slice(lib_flags);
        args.extend_from_slice(&["-o", "libldcptctor.so", "ctor.c"]);
        cc(self.dir(), &args);
        cc(
            self.dir(),
            &[
                "-O0",
                "-o",
                "ldcpt-usector",
                "usector.c",
                "-L.",
                "-lldcptctor",
                "-Wl,-rpath,$ORIGIN",
            ],
        );
        let p = self.dir().join("ldcpt-usector");
        self.register(&p);
        p
    }

    /// A copy of `from` named ldcpt-NAME with permission bits `mode`.
    pub(crate) fn copy(&mut self, from: &str, name: &str, mode: u32) -> PathBuf {
        let p = self.dir().join(format!("ldcpt-{name}"));
        std::fs::copy(from, &p).expect("copy");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("chmod");
        self.register(&p);
        p
    }

    /// A text file named ldcpt-NAME with permission bits `mode`.
    pub(crate) fn text(&mut self, name: &str, contents: &str, mode: u32) -> PathBuf {
        let p = write(self.dir(), &format!("ldcpt-{name}"), contents);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("chmod");
        self.register(&p);
        p
    }

    /// The check every test ends with.
    pub(crate) fn finish(self) {
        assert_no_leftovers(&self.fixtures);
    }
}

// ---------------------------------------------------------------------------------------------
// /proc.

/// Polls /proc until a process satisfying `pred` exists (bounded by `limit`).
pub(crate) fn wait_for_process(limit: Duration, pred: impl Fn(&Proc) -> bool) -> Option<Proc> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(p) = processes().into_iter().find(|p| pred(p)) {
            return Some(p);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
