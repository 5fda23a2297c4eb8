//! Where `ldcost experiment` says what it is doing: an indicatif bar on standard error when it
//! is a terminal (and NO_COLOR is unset), plain lines otherwise. Standard output is never
//! touched, so `--format json` stays one clean document.
//!
//! In: the orchestrator's begin/end of each experiment and the experiments' own steps (the
//! [`Progress`] trait). Out: text on standard error only.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use super::section::Progress;

/// The progress of a whole `ldcost experiment` run.
pub struct Reporter {
    bar: Option<ProgressBar>,
    /// Plain lines (not a terminal): only begin/end, never each step.
    lines: bool,
}

impl Reporter {
    /// A bar on a terminal, plain lines otherwise.
    pub fn for_stderr(total: usize) -> Reporter {
        let tty = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        if !tty {
            return Reporter {
                bar: None,
                lines: true,
            };
        }
        let bar = ProgressBar::new(total as u64);
        let style = ProgressStyle::with_template("{spinner} [{elapsed}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(120));
        Reporter {
            bar: Some(bar),
            lines: false,
        }
    }

    /// Says nothing (tests).
    pub fn silent() -> Reporter {
        Reporter {
            bar: None,
            lines: false,
        }
    }

    pub fn begin(&self, name: &str, index: usize, total: usize) {
        if let Some(b) = &self.bar {
            b.set_message(format!("{name}: starting"));
        } else if self.lines {
            eprintln!("ldcost: experiment {}/{total}: {name}", index + 1);
        }
    }

    pub fn end(&self, name: &str, error: Option<&str>, elapsed_s: f64) {
        let line = match error {
            None => format!("ldcost: experiment {name}: done in {elapsed_s:.1} s"),
            Some(e) => format!("ldcost: experiment {name}: failed after {elapsed_s:.1} s: {e}"),
        };
        if let Some(b) = &self.bar {
            b.inc(1);
            b.println(line);
        } else if self.lines {
            eprintln!("{line}");
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Progress for Reporter {
    fn step(&self, what: &str) {
        if let Some(b) = &self.bar {
            b.set_message(what.to_string());
        }
    }
}
