//! What the experiments share: building a program into the experiment's directory, running it
//! with a deadline and keeping what it printed, medians, and number formatting.
//!
//! In: a program (embedded C source or a built path) and its arguments. Out: its standard
//! output as text (the raw printout, kept in `results.json` so that every figure can be
//! checked against what the program itself said), or an [`ExperimentError`] naming the program.
//! A program that outlives its deadline is killed and reaped: no process is left behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::section::{ExperimentError, Skipped};
use super::seeds::{self, BuildError, Linkage};

/// One build of a program: its label in the tables and where it is.
#[derive(Debug, Clone)]
pub struct Program {
    /// "static", "dynamic", "dynamic -lm -lncurses" …
    pub label: String,
    pub path: PathBuf,
    /// The exact `cc` command line.
    pub command: String,
}

/// The label of a build: its linkage and the `-l` options it was given.
pub fn label(linkage: Linkage, libs: &[&str]) -> String {
    let mut s = linkage.name().to_string();
    for l in libs {
        s.push_str(" -l");
        s.push_str(l);
    }
    s
}

/// Builds `source` as `name`; a missing library is a [`Skipped`] row (what the report names),
/// anything else (no cc, no libc.a) an error that fails the experiment with the package to
/// install.
pub fn build(
    name: &'static str,
    source: &str,
    linkage: Linkage,
    libs: &[&str],
    dir: &Path,
) -> Result<Result<Program, Skipped>, ExperimentError> {
    match seeds::build_source(name, source, linkage, libs, dir) {
        Ok(b) => Ok(Ok(Program {
            label: label(linkage, libs),
            command: b.command_line(),
            path: b.path,
        })),
        Err(e @ BuildError::LibraryMissing { .. }) => Ok(Err(Skipped {
            what: format!("{name} {}", label(linkage, libs)),
            reason: e.to_string(),
        })),
        Err(e) => Err(e.into()),
    }
}

/// Runs `program ARGS`, returns its standard output; fails if it exits non-zero, dies, or is
/// still running after `deadline` (then it is killed and reaped).
pub fn run(program: &Path, args: &[String], deadline: Duration) -> Result<String, ExperimentError> {
    let what = format!("{} {}", program.display(), args.join(" "));
    let fail = |detail: String| ExperimentError::Run {
        what: what.clone(),
        detail,
    };
    // After SIGINT/SIGTERM nothing new starts: the tree is being killed.
    if crate::trace::interrupted() {
        return Err(fail("not started: ldcost was interrupted".into()));
    }
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| fail(format!("cannot start it: {e}")))?;
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let output = match rx.recv_timeout(deadline) {
        Ok(r) => r,
        Err(_) => {
            // The waiting thread still owns the child: kill it, and that thread reaps it.
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = rx.recv();
            return Err(fail(format!(
                "still running after {} s; killed",
                deadline.as_secs()
            )));
        }
    };
    let output = output.map_err(|e| fail(format!("cannot wait for it: {e}")))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let first = stderr
            .lines()
            .next()
            .unwrap_or("no message")
            .trim()
            .to_string();
        return Err(fail(format!("{} ({first})", output.status)));
    }
    Ok(stdout)
}

/// A figure with about four significant digits (`12783`, `131.4`, `0.5123`).
pub fn fmt(x: f64) -> String {
    if !x.is_finite() {
        return "not available".into();
    }
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 100.0 {
        format!("{x:.1}")
    } else if a >= 10.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// "2.50x" for a ratio.
pub fn ratio(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}x")
    } else {
        "not available".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_keep_four_digits() {
        assert_eq!(fmt(12782.8), "12783");
        assert_eq!(fmt(131.44), "131.4");
        assert_eq!(fmt(0.51234), "0.512");
        assert_eq!(fmt(f64::NAN), "not available");
        assert_eq!(ratio(1.4), "1.40x");
    }

    #[test]
    fn a_failing_program_is_an_error_naming_it() {
        let e = run(Path::new("/bin/false"), &[], Duration::from_secs(5)).unwrap_err();
        assert!(e.to_string().contains("/bin/false"), "{e}");
        let out = run(
            Path::new("/bin/echo"),
            &["hello".into()],
            Duration::from_secs(5),
        )
        .unwrap();
        assert_eq!(out, "hello\n");
        let e = run(
            Path::new("/bin/sleep"),
            &["5".into()],
            Duration::from_millis(200),
        )
        .unwrap_err();
        assert!(e.to_string().contains("killed"), "{e}");
    }
}
