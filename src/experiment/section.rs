//! What one experiment hands to the report: tables, plots, findings and what it could not run.
//!
//! In: the measurements of one experiment (forktime, forktest, BYTE, the fork+execl matrix,
//! Micah's matrix, erik's series). Out: a [`Section`], plain data that `report.md`,
//! `report.html`, `results.json` and the terminal text are all rendered from, so the four never
//! disagree. Every experiment module returns one `Section` from `run(&Settings, &Progress)`.

use super::runner::fmt;
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

/// From this many figures on a side, [`Check::ranked`] judges by the interval of its median.
const MANY: usize = 40;

/// How the detail of a check begins when its figures' ranges overlap: the direction is open,
/// neither held nor failed (`holds` is false, and the reports say "not decided", not "NO").
pub const NOT_DECIDED: &str = "not decided: ";

impl Check {
    /// False when the noise left the direction open ([`NOT_DECIDED`]).
    pub fn decided(&self) -> bool {
        !self.detail.starts_with(NOT_DECIDED)
    }

    /// The direction "`low`'s figure is below `high`'s", judged on one figure per run (or
    /// loop, or sample: `per` names it) of each: it holds when every figure of `low` lies
    /// below every figure of `high`, fails when every one lies above, and is not decided
    /// otherwise, since the figures of one build move by more than the difference between
    /// two medians on a loaded machine and a comparison of medians would answer at random.
    /// One figure on a side gives no range to judge the noise by: not decided either.
    /// A side of 40 figures or more is one figure per run of a program started once per run
    /// (micah's 50 or 1000), not a loop's aggregate: its range is then the 95% interval of its
    /// median ([`crate::stats::median_interval`]), since on a loaded machine the slowest
    /// few of hundreds of starts reach any other build's figures and their range would leave
    /// every direction open whatever the medians.
    /// `unit` follows each figure ("ms", "lps", "/s").
    pub fn ranked(
        claim: String,
        low: (&str, &[f64]),
        high: (&str, &[f64]),
        unit: &str,
        per: &str,
    ) -> Check {
        let range = |v: &[f64]| {
            let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
            v.sort_by(f64::total_cmp);
            let n = v.len();
            let (lo, hi) = match n {
                0 => return None,
                1..MANY => (v[0], v[n - 1]),
                _ => crate::stats::median_interval(&v),
            };
            Some((lo, hi, n))
        };
        let show = |name: &str, v: &[f64], r: Option<(f64, f64, usize)>| match r {
            Some((lo, hi, n)) => format!(
                "{name} {} {unit} ({} {}–{} {} {n} {per}{})",
                fmt(crate::stats::median_finite(v).unwrap_or(f64::NAN)),
                if n < MANY {
                    "range"
                } else {
                    "95% interval of the median"
                },
                fmt(lo),
                fmt(hi),
                if n < MANY { "over" } else { "of" },
                if n == 1 { "" } else { "s" }
            ),
            None => format!("{name} not available (no {per} finished)"),
        };
        let (rl, rh) = (range(low.1), range(high.1));
        let figures = format!("{}, {}", show(low.0, low.1, rl), show(high.0, high.1, rh));
        let (holds, detail) = match (rl, rh) {
            (Some((_, lh, nl)), Some((hl, _, nh))) if nl > 1 && nh > 1 && lh < hl => {
                (true, figures)
            }
            (Some((ll, _, nl)), Some((_, hh, nh))) if nl > 1 && nh > 1 && ll > hh => {
                (false, figures)
            }
            (Some((_, _, nl)), Some((_, _, nh))) if nl < 2 || nh < 2 => (
                false,
                format!("{NOT_DECIDED}one {per} gives no range to judge the noise by: {figures}"),
            ),
            (Some(_), Some(_)) => (
                false,
                format!("{NOT_DECIDED}noisy, the ranges overlap: {figures}"),
            ),
            _ => (
                false,
                format!("{NOT_DECIDED}a side has no figure: {figures}"),
            ),
        };
        Check {
            claim,
            holds,
            detail,
        }
    }

    /// Two checks of one claim as one, the first deciding (CPU) and the second (elapsed
    /// time) only able to contradict: it fails when either fails, holds when the first holds
    /// and the second holds or is left open, and is not decided when the first is open. A
    /// start's elapsed time holds the waits a busy machine adds (another core's build delays
    /// one side's runs more than the other's), so its ranges may overlap where the CPU's are
    /// apart; that says nothing against the claim. The detail has both.
    pub fn decided_by(claim: String, a: Check, b: Check) -> Check {
        let failed = |c: &Check| c.decided() && !c.holds;
        let strip = |c: &Check| c.detail.trim_start_matches(NOT_DECIDED).to_string();
        let (holds, open) = if failed(&a) || failed(&b) {
            (false, false)
        } else {
            (a.holds, !a.decided())
        };
        let detail = format!("{}; {}", strip(&a), strip(&b));
        Check {
            claim,
            holds,
            detail: if open {
                format!("{NOT_DECIDED}{detail}")
            } else {
                detail
            },
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ranked(low: &[f64], high: &[f64]) -> Check {
        Check::ranked("a below b".into(), ("a", low), ("b", high), "ms", "run")
    }

    #[test]
    fn a_direction_holds_or_fails_only_when_the_ranges_are_apart() {
        let c = ranked(&[1.0, 1.2, 1.1], &[2.0, 2.5]);
        assert!(c.holds && c.decided(), "{c:?}");
        assert_eq!(
            c.detail,
            "a 1.100 ms (range 1.000–1.200 over 3 runs), b 2.250 ms (range 2.000–2.500 over 2 runs)"
        );
        let c = ranked(&[3.0, 3.5], &[2.0, 2.5]);
        assert!(!c.holds && c.decided(), "{c:?}");
        // Medians in the claimed order, ranges overlapping: open, not YES.
        let c = ranked(&[1.0, 1.1, 2.6], &[2.0, 2.2, 2.5]);
        assert!(!c.holds && !c.decided(), "{c:?}");
        assert!(c
            .detail
            .starts_with("not decided: noisy, the ranges overlap: a 1.100 ms"));
        // Medians the other way, ranges overlapping: open, not NO.
        let c = ranked(&[2.4, 2.45, 1.0], &[2.0, 2.2, 2.5]);
        assert!(!c.holds && !c.decided(), "{c:?}");
        // Touching ranges overlap.
        assert!(!ranked(&[1.0, 2.0], &[2.0, 3.0]).decided());
        // One figure gives no range.
        let c = ranked(&[1.0], &[2.0, 3.0]);
        assert!(!c.holds && !c.decided());
        assert!(c.detail.contains("one run gives no range"), "{c:?}");
        // No figure on a side (NaN is none).
        let c = ranked(&[f64::NAN], &[2.0, 3.0]);
        assert!(!c.holds && !c.decided());
        assert!(
            c.detail.contains("a not available (no run finished)"),
            "{c:?}"
        );
        // 40 figures or more: the intervals of the medians. Ranges overlapping by far (the
        // slowest starts of a reach past all of b's) with medians 0.2 apart: decided.
        let mut low: Vec<f64> = (0..50).map(|i| 1.0 + i as f64 / 100.0).collect();
        low.extend([9.0, 9.5]);
        let high: Vec<f64> = (0..50).map(|i| 1.2 + i as f64 / 100.0).collect();
        let c = ranked(&low, &high);
        assert!(c.holds && c.decided(), "{c:?}");
        assert!(
            c.detail
                .starts_with("a 1.255 ms (95% interval of the median 1."),
            "{c:?}"
        );
        assert!(c.detail.contains(" of 52 runs)"), "{c:?}");
        // Medians 0.02 apart: their intervals overlap.
        let high: Vec<f64> = (0..50).map(|i| 1.02 + i as f64 / 100.0).collect();
        let c = ranked(&low, &high);
        assert!(!c.holds && !c.decided(), "{c:?}");
        // 39 figures: still the whole range.
        let c = ranked(&low[13..], &high[..39]);
        assert!(
            c.detail.contains("(range 1.130–9.500 over 39 runs)"),
            "{c:?}"
        );
    }

    #[test]
    fn two_checks_of_one_claim_hold_together() {
        let yes = || ranked(&[1.0, 1.1], &[2.0, 2.1]);
        let no = || ranked(&[3.0, 3.1], &[2.0, 2.1]);
        let open = || ranked(&[1.0, 2.5], &[2.0, 2.1]);
        let both = |a, b| Check::decided_by("c".into(), a, b);
        let c = both(yes(), yes());
        assert!(c.holds && c.decided());
        let c = both(yes(), no());
        assert!(!c.holds && c.decided());
        let c = both(open(), no());
        assert!(
            !c.holds && c.decided(),
            "a failed half fails the claim: {c:?}"
        );
        // The second half left open does not hold the first one back; it is said.
        let c = both(yes(), open());
        assert!(c.holds && c.decided(), "{c:?}");
        assert!(c.detail.starts_with("a 1.050 ms"), "{c:?}");
        assert!(c.detail.contains("; noisy, the ranges overlap: a"), "{c:?}");
        // The first half open leaves the claim open, whatever the second says.
        let c = both(open(), yes());
        assert!(!c.holds && !c.decided(), "{c:?}");
        assert!(c.detail.starts_with("not decided: "), "{c:?}");
    }
}
