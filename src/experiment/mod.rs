//! Stage: the seed experiments. In: the seeds' programs (`probes/`, embedded) and the
//! libraries, linkages and counts an experiment asks for. Out: built programs and the figures
//! they print, compared with the seeds' own and explained, as a report (`ldcost experiment`).
//!
//! [`seeds`] builds the seeds' own programs (forktime, forktest, fork/vfork + execl and their
//! child) with the system compiler, static or dynamic, with the seeds' unused libraries, and
//! parses their output. Each experiment module (forktime, forktest, byte, matrix, micah, erik)
//! returns a [`section::Section`] from `run`; [`run_all`] runs the chosen ones in order, and
//! [`output`] renders what they returned as report.md, report.html, SVGs and results.json. An
//! experiment that fails is a failed section the report names; the others still run.
//! Everything here runs programs; only the fork probe (forktest) uses ptrace.

pub mod byte;
pub mod erik;
pub mod forktest;
pub mod forktime;
pub mod matrix;
pub mod micah;
pub mod output;
pub mod plot;
pub mod progress;
pub mod runner;
pub mod section;
pub mod seeds;

use std::path::{Path, PathBuf};
use std::time::Instant;

use section::{Progress, RunFn, Section, Settings};

/// Every experiment, in the order they run and are reported: (name, what it reproduces, run).
pub const EXPERIMENTS: [(&str, &str, RunFn); 6] = [
    (
        "forktime",
        "seed 000: fork/wait/_exit, static vs dynamic",
        forktime::run,
    ),
    (
        "forktest",
        "seed 001: forks/s with a growing list of libraries",
        forktest::run,
    ),
    (
        "byte",
        "seed 002: BYTE Process Creation and Execl Throughput",
        byte::run,
    ),
    (
        "matrix",
        "seed 003: static/dynamic parent x child, fork/vfork/posix_spawn",
        matrix::run,
    ),
    (
        "micah",
        "seed 004: Micah's functions x libraries matrix",
        micah::run,
    ),
    (
        "erik",
        "seed 004: erik's hypothesis at constant footprint",
        erik::run,
    ),
];

/// The experiments' names, for messages ("forktime, forktest, …").
pub fn names() -> Vec<&'static str> {
    EXPERIMENTS.iter().map(|e| e.0).collect()
}

/// The chosen names in the order they run (duplicates dropped); all when none is given. Err:
/// the first unknown name.
pub fn select(asked: &[String]) -> Result<Vec<&'static str>, String> {
    if let Some(bad) = asked.iter().find(|a| !names().contains(&a.as_str())) {
        return Err(bad.clone());
    }
    Ok(names()
        .into_iter()
        .filter(|n| asked.is_empty() || asked.iter().any(|a| a == n))
        .collect())
}

/// The build directory of this run, where the compilers' own temp files go too.
static BUILD_DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Sets the build directory [`compiler`] points TMPDIR at (once; later calls are ignored).
pub fn set_build_dir(dir: &Path) {
    let _ = BUILD_DIR.set(dir.to_path_buf());
}

/// A command for the compiler (`cc`): its temp files (`ccXXXX.s`, `.o`) go to the build
/// directory, so a compiler killed by SIGINT leaves them where ldcost removes them, never
/// in the system's temp directory.
pub fn compiler(program: &str) -> std::process::Command {
    let mut c = std::process::Command::new(program);
    if let Some(d) = BUILD_DIR.get() {
        c.env("TMPDIR", d);
    }
    c
}

/// One experiment's outcome.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub name: &'static str,
    pub result: Result<Section, String>,
    pub elapsed_s: f64,
}

/// Runs `names` in order, each in its own directory under `work_dir`. A failure is an
/// [`Outcome`] with the error's text, never the end of the run. `done` is given the outcomes
/// so far after each experiment (to write them as they come). Stops early, between
/// experiments, when ldcost is interrupted (SIGINT/SIGTERM).
pub fn run_all(
    names: &[&'static str],
    work_dir: &Path,
    quick: bool,
    runs: Option<u32>,
    progress: &progress::Reporter,
    done: &mut dyn FnMut(&[Outcome]),
) -> Vec<Outcome> {
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        if crate::trace::interrupted() {
            break;
        }
        let Some((_, _, run)) = EXPERIMENTS.iter().find(|e| e.0 == *name) else {
            continue;
        };
        progress.begin(name, i, names.len());
        let dir: PathBuf = work_dir.join(name);
        let start = Instant::now();
        let result = match std::fs::create_dir_all(&dir) {
            Err(e) => Err(format!("cannot create {}: {e}", dir.display())),
            Ok(()) => {
                let settings = Settings {
                    work_dir: dir,
                    quick,
                    runs,
                };
                let p: &dyn Progress = progress;
                // A panic in one experiment is its failure, not the end of the others.
                match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&settings, p))) {
                    Ok(r) => r.map_err(|e| e.to_string()),
                    Err(_) => Err("internal error (a bug in ldcost; please report it)".into()),
                }
            }
        };
        let elapsed_s = start.elapsed().as_secs_f64();
        progress.end(name, result.as_ref().err().map(String::as_str), elapsed_s);
        out.push(Outcome {
            name,
            result,
            elapsed_s,
        });
        if !crate::trace::interrupted() {
            done(&out);
        }
    }
    progress.finish();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_selected_in_the_fixed_order() {
        assert_eq!(select(&[]).unwrap().len(), 6);
        let asked = ["matrix".to_string(), "forktime".into(), "matrix".into()];
        assert_eq!(select(&asked).unwrap(), vec!["forktime", "matrix"]);
        assert_eq!(select(&["nope".to_string()]).unwrap_err(), "nope");
        assert_eq!(
            names(),
            vec!["forktime", "forktest", "byte", "matrix", "micah", "erik"]
        );
    }
}
