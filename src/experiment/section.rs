//! What one experiment hands to the report: tables, plots, findings and what it could not run.
//!
//! In: the measurements of one experiment (forktime, forktest, BYTE, the fork+execl matrix,
//! Micah's matrix, erik's series). Out: a [`Section`], plain data that `report.md`,
//! `report.html`, `results.json` and the terminal text are all rendered from, so the four never
//! disagree. Every experiment module returns one `Section` from `run(&Settings, &Progress)`.

use std::path::PathBuf;

/// How an experiment is run; resolved from the command line once.
#[derive(Debug, Clone)]
pub struct Settings {
    /// A private directory for sources and builds (removed afterwards unless `--keep`).
    pub work_dir: PathBuf,
    /// `--quick`: fewer sizes and runs, the whole of `ldcost experiment` under 60 s.
    pub quick: bool,
    /// `--runs N`: overrides each experiment's own number of runs (repetitions per point).
    pub runs: Option<u32>,
}

impl Settings {
    /// The experiment's number of repetitions: `--runs`, else `quick` or `full`.
    pub fn runs_or(&self, quick: u32, full: u32) -> u32 {
        self.runs
            .unwrap_or(if self.quick { quick } else { full })
            .max(1)
    }
}

/// Where an experiment says what it is doing (a progress bar on a terminal, lines otherwise).
pub trait Progress {
    /// A new step: `what` is shown as the bar's message.
    fn step(&self, what: &str);
}

/// Progress that goes nowhere (tests, `--format json` to stdout).
pub struct Silent;

impl Progress for Silent {
    fn step(&self, _what: &str) {}
}

/// One experiment's results.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// The experiment's name on the command line (`forktime`, `erik`, …).
    pub name: String,
    /// The heading, titled by its seed ("forktime (seed 000, 1989)").
    pub title: String,
    /// The seed file the experiment reproduces (`000_1b3ec4cf5ab103e9.txt`), if any.
    pub seed: Option<String>,
    /// Paragraphs of prose before the tables (what was run, how).
    pub intro: Vec<String>,
    pub tables: Vec<Table>,
    pub plots: Vec<Plot>,
    /// Interactive flame graphs (inferno's SVGs), written beside the report and linked.
    pub flamegraphs: Vec<Flamegraph>,
    /// Figures a script can read ("µs per VMA" …), each with its value and interval.
    pub findings: Vec<Finding>,
    /// The directions the seeds report, checked here.
    pub checks: Vec<Check>,
    /// Rows or points that could not be measured here, and why (never a silent gap).
    pub skipped: Vec<Skipped>,
    /// Notes after the tables (caveats, what differs from the seed's setup).
    pub notes: Vec<String>,
    /// The raw measurements, for `results.json` (the experiment's own shape).
    pub data: serde_json::Value,
}

/// A table: every cell already formatted, so that text, Markdown and HTML show the same.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// A line under the table (units, where the seed's figures come from).
    pub caption: Option<String>,
}

/// A plot, rendered as a standalone SVG document.
#[derive(Debug, Clone)]
pub struct Plot {
    /// The file it is written to in the output directory (`erik-a-vmas.svg`).
    pub file_name: String,
    /// Neutral: what is drawn against what.
    pub title: String,
    /// The sentence under it: what the lines show, from the data.
    pub caption: Option<String>,
    /// The SVG text (written beside results.json, not into it).
    pub svg: String,
}

/// An interactive flame graph: inferno's SVG with its own search and zoom scripts, so it is
/// written beside the report, linked from report.md and embedded by reference (`<object>`,
/// which keeps the scripts working and the ids apart) in report.html, never inlined.
#[derive(Debug, Clone)]
pub struct Flamegraph {
    /// The file it is written to in the output directory (`erik-diff-exit.svg`).
    pub file_name: String,
    pub title: String,
    /// The sentence under it (what is red).
    pub caption: String,
    pub svg: String,
    /// The folded text it was drawn from, written beside it as `<file stem>.folded` (for a
    /// differential graph, two columns: it keeps the frames only BASE has, which the graph
    /// cannot draw). Empty: no such file.
    pub folded: String,
}

impl Flamegraph {
    /// The name of the folded file beside the SVG, if there is one.
    pub fn folded_name(&self) -> Option<String> {
        if self.folded.is_empty() {
            return None;
        }
        let stem = self
            .file_name
            .strip_suffix(".svg")
            .unwrap_or(&self.file_name);
        Some(format!("{stem}.folded"))
    }
}

/// A named figure with its unit and, where one was computed, its 95% interval.
#[derive(Debug, Clone)]
pub struct Finding {
    /// A stable key for scripts (`erik.per_library_us.exit`).
    pub key: String,
    /// The sentence the report prints, derived from `value` and `interval`.
    pub text: String,
    pub value: f64,
    pub unit: String,
    pub interval: Option<[f64; 2]>,
}

/// A direction a seed reports, and whether it holds on this machine.
#[derive(Debug, Clone)]
pub struct Check {
    /// "static forks faster than dynamic".
    pub claim: String,
    pub holds: bool,
    /// The figures behind the answer ("static 5120/s, dynamic 3890/s"); starts with
    /// [`NOT_DECIDED`] when the noise leaves the direction open.
    pub detail: String,
}

/// How the detail of a check begins when its figures' ranges overlap: the direction is open,
/// neither held nor failed (`holds` is false, and the reports say "not decided", not "NO").
pub const NOT_DECIDED: &str = "not decided: ";

impl Check {
    /// False when the noise left the direction open ([`NOT_DECIDED`]).
    pub fn decided(&self) -> bool {
        !self.detail.starts_with(NOT_DECIDED)
    }
}

/// What could not be measured, and why (a missing package names the package).
#[derive(Debug, Clone)]
pub struct Skipped {
    pub what: String,
    pub reason: String,
}

/// Why an experiment could not run at all (a point it could not measure is a [`Skipped`]).
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// A program could not be built (the message names the package to install).
    #[error(transparent)]
    Build(#[from] super::seeds::BuildError),
    /// A built program did not run or did not print what it should.
    #[error("{what}: {detail}")]
    Run { what: String, detail: String },
    /// A file or directory of the experiment could not be written or read.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What every experiment module exports as `run`.
pub type RunFn = fn(&Settings, &dyn Progress) -> Result<Section, ExperimentError>;
