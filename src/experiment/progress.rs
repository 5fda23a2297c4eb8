//! Where `ldcost experiment` says what it is doing: the shared bar of [`crate::progress`] on
//! standard error when it is a terminal (and NO_COLOR is unset, `--no-progress` not given),
//! plain lines otherwise. Standard output is never touched, so `--format json` stays one
//! clean document.
//!
//! In: the orchestrator's begin/end of each experiment and the experiments' own steps (the
//! [`Progress`] trait). Out: text on standard error only.

use super::section::Progress;
use crate::progress::Bar;

/// The progress of a whole `ldcost experiment` run.
pub struct Reporter {
    bar: Bar,
    /// Plain lines (not a terminal): only begin/end, never each step.
    lines: bool,
}

impl Reporter {
    /// A bar on a terminal, plain lines otherwise.
    pub fn for_stderr(total: usize) -> Reporter {
        let bar = Bar::steps(total as u64);
        let lines = !bar.shown();
        Reporter { bar, lines }
    }

    /// Says nothing (tests).
    pub fn silent() -> Reporter {
        Reporter {
            bar: Bar::hidden(),
            lines: false,
        }
    }

    pub fn begin(&self, name: &str, index: usize, total: usize) {
        if self.bar.shown() {
            self.bar.step(format!("{name}: starting"));
        } else if self.lines {
            eprintln!("ldcost: experiment {}/{total}: {name}", index + 1);
        }
    }

    pub fn end(&self, name: &str, error: Option<&str>, elapsed_s: f64) {
        // Interrupted: the experiment "failed" only because ldcost killed it; the one line
        // that matters is the interruption, which the command's error path prints.
        if error.is_some() && crate::trace::interrupted() {
            return;
        }
        let line = match error {
            None => format!("ldcost: experiment {name}: done in {elapsed_s:.1} s"),
            Some(e) => format!("ldcost: experiment {name}: failed after {elapsed_s:.1} s: {e}"),
        };
        if self.bar.shown() {
            self.bar.inc();
            self.bar.println(line);
        } else if self.lines {
            eprintln!("{line}");
        }
    }

    pub fn finish(&self) {
        self.bar.finish();
    }
}

impl Progress for Reporter {
    fn step(&self, what: &str) {
        self.bar.step(what);
    }
}
