//! Progress on standard error, for the commands that run things for a while (`profile`,
//! `compare`, `experiment`): an indicatif bar of runs, and a delayed spinner for one long
//! blocking step (a fork loop).
//!
//! Drawn only when a person is watching: standard error is a terminal, `NO_COLOR` is unset,
//! `TERM` is not `dumb`, `--no-progress` was not given, and standard output does not carry a
//! document (`--json -`, `--format json`, `--folded -`, `--flamegraph -`: the command calls
//! [`disable`]). Otherwise every function here is a no-op, so callers never test the
//! conditions themselves.
//!
//! Nothing here runs inside a measured process: a bar is redrawn between runs, from ldcost's
//! own side (no steady tick while a target runs), and a [`Spinner`] ticks from its own thread
//! of ldcost while the tracer waits for a fork loop, four times a second at most. A run whose
//! output is shown on the terminal runs with the bar cleared ([`Bar::around`]), so the
//! target's lines are never cut by the bar.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Set by [`disable`]: `--no-progress`, or standard output carries a document.
static OFF: AtomicBool = AtomicBool::new(false);

/// How often a spinner (or a bar while it waits on a fork loop) is redrawn.
const TICK: Duration = Duration::from_millis(250);

/// No progress from now on in this process (`--no-progress`, or stdout carries a document).
pub fn disable() {
    OFF.store(true, Ordering::SeqCst);
}

/// Whether progress is drawn: standard error is a terminal someone reads (see the module doc).
pub fn wanted() -> bool {
    !OFF.load(Ordering::SeqCst)
        && std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none()
        && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
}

/// A bar of `len` steps on standard error, or nothing (see [`wanted`]).
pub struct Bar {
    bar: Option<ProgressBar>,
}

impl Bar {
    /// A bar of `len` steps, `unit` naming them (`runs`): `{prefix} [==>  ] 3/11 runs
    /// [elapsed] {message}`, the message cut to the terminal's width (keep it under about 30
    /// characters). Nothing when progress is not [`wanted`].
    pub fn new(prefix: &str, len: u64, unit: &str) -> Bar {
        if !wanted() {
            return Bar::hidden();
        }
        let template =
            format!("{{prefix}} [{{bar:16}}] {{pos}}/{{len}} {unit} [{{elapsed}}] {{wide_msg}}");
        let style = ProgressStyle::with_template(&template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr())
            .with_style(style)
            .with_prefix(prefix.to_string());
        bar.tick();
        Bar { bar: Some(bar) }
    }

    /// A bar with a spinner and no length, redrawn every 120 ms from indicatif's own thread
    /// (`experiment`, whose steps are builds and whole experiments, not measured runs).
    pub fn steps(len: u64) -> Bar {
        if !wanted() {
            return Bar::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{spinner} [{elapsed}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.enable_steady_tick(Duration::from_millis(120));
        Bar { bar: Some(bar) }
    }

    /// Draws nothing.
    pub fn hidden() -> Bar {
        Bar { bar: None }
    }

    /// Whether the bar is drawn.
    pub fn shown(&self) -> bool {
        self.bar.is_some()
    }

    /// The step now running (`measured run 2/5`), before it runs.
    pub fn step(&self, what: impl Into<String>) {
        if let Some(b) = &self.bar {
            b.set_message(what.into());
            // Drawn now: a step shorter than indicatif's redraw interval (the LD_DEBUG run of a
            // small program) would otherwise never be named on the terminal. Steps are a few
            // per run, so the extra draws cost nothing a user sees.
            b.force_draw();
        }
    }

    /// `n` more steps than the bar was made with.
    pub fn add(&self, n: u64) {
        if let Some(b) = &self.bar {
            b.inc_length(n);
        }
    }

    /// One step done.
    pub fn inc(&self) {
        if let Some(b) = &self.bar {
            b.inc(1);
        }
    }

    /// A line above the bar (the bar stays below it).
    pub fn println(&self, line: impl AsRef<str>) {
        if let Some(b) = &self.bar {
            b.println(line);
        }
    }

    /// Runs `f` with the bar cleared when `shows_output` (the target writes to the terminal),
    /// and redraws it after; runs `f` as is otherwise.
    pub fn around<R>(&self, shows_output: bool, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(b) if shows_output => b.suspend(f),
            _ => f(),
        }
    }

    /// Runs `f`, a long blocking step, with the bar redrawn every [`TICK`] from indicatif's
    /// thread (its elapsed time moves), then stops the ticking.
    pub fn ticking<R>(&self, f: impl FnOnce() -> R) -> R {
        let Some(b) = &self.bar else {
            return f();
        };
        b.enable_steady_tick(TICK);
        let r = f();
        b.disable_steady_tick();
        r
    }

    /// Clears the bar from the terminal (also done on drop).
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A spinner for one long blocking step, shown only once the step has taken `delay` (a
/// `--fork 100` loop that ends in 20 ms draws nothing). Ticks from its own thread; dropping
/// it stops the thread and clears the line.
pub struct Spinner {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Spinner {
    /// Starts waiting; after `delay`, `⠋ {message} [elapsed]` until dropped. Nothing when
    /// progress is not [`wanted`] (or the thread cannot be started).
    pub fn after(delay: Duration, message: String) -> Spinner {
        let none = Spinner {
            stop: None,
            thread: None,
        };
        if !wanted() {
            return none;
        }
        let started = Instant::now();
        let (tx, rx) = mpsc::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name("ldcost-progress".into())
            .spawn(move || {
                // Sent or hung up: the step is over.
                if rx.recv_timeout(delay) != Err(mpsc::RecvTimeoutError::Timeout) {
                    return;
                }
                let style = ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner());
                let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
                    .with_style(style)
                    .with_message(message)
                    .with_elapsed(started.elapsed());
                bar.tick();
                while rx.recv_timeout(TICK) == Err(mpsc::RecvTimeoutError::Timeout) {
                    bar.tick();
                }
                bar.finish_and_clear();
            });
        match spawned {
            Ok(t) => Spinner {
                stop: Some(tx),
                thread: Some(t),
            },
            Err(_) => none,
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under `cargo test` standard error is captured, not a terminal: nothing is drawn and
    /// every call is a no-op that still runs its closure.
    #[test]
    fn off_a_terminal_nothing_is_drawn_and_closures_run() {
        let b = Bar::new("ldcost profile", 3, "runs");
        assert!(!b.shown() || std::io::stderr().is_terminal());
        disable();
        assert!(!wanted());
        let b = Bar::new("ldcost profile", 3, "runs");
        assert!(!b.shown());
        assert_eq!(b.around(true, || 7), 7);
        assert_eq!(b.ticking(|| 8), 8);
        let s = Spinner::after(Duration::ZERO, "x".into());
        assert!(s.thread.is_none());
    }
}
