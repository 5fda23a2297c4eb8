//! The start-up timeline of `profile --timeline` (an SVG, one row per phase and object in time
//! order, as `systemd-analyze plot` draws a boot) and its raw form, `profile --trace` (Chrome's
//! trace-event JSON, one track per measured run, which Perfetto and chrome://tracing open).
//!
//! In: the profile section, whose phase rows carry the medians and intervals the text's phase
//! table prints and whose raw runs carry each segment's CLOCK_MONOTONIC span. Out: the bytes of
//! the two files. Pure: both are drawn from the recording, so a saved document draws the same.
//!
//! The SVG is drawn on the target's own time: ldcost's ptrace stops are removed, so the
//! segments are laid end to end in the order the runs record them, each lasting its median
//! wall over the measured runs (see [`bars`]), and the axis ends at the phases' wall time the
//! summary prints. A phase a run records in several segments (ld.so's start, interrupted by CPU
//! feature detection; "ld.so other" between the objects) is drawn as its pieces, each at its
//! own start with its own median wall and CPU, so the pieces come in the order of the trace's
//! events. A row's
//! figures are the phase table's: its CPU (task-clock less the ptrace stops' cost) and the 95%
//! interval of that median, drawn as a whisker at the end of its last piece. The exit teardown
//! is a row of its own after "main to exit", with the summary's figure (the CPU after the last
//! stop and the teardown the counters do not see): CPU only, since no wall time of it is
//! recorded.
//!
//! The trace keeps real time: each event at its CLOCK_MONOTONIC start since the run's exec,
//! stops included (the gaps), which is what a trace viewer is for; its metadata says so and each
//! event's args carry its start on the target's own time as well.
//!
//! Drawn by hand rather than through plotters (which draws the experiment's plots): its SVG
//! backend writes shapes only, and a timeline needs a `<title>` per bar for the hover figures
//! and data attributes a test (or a script) reads the figures back from.

use std::fmt::Write as _;

use crate::attribute::profile::{corrected, lost, per_stop_ns, ProfileSection};
use crate::attribute::stats::{summarize, Summary};
use crate::record::after_main::{Cost, LoadedObject};
use crate::record::{Instrumentation, Phase, Run};

/// One of a row's segments: the k-th segment of its phase and object in each run.
#[derive(Debug, Clone, PartialEq)]
pub struct Piece {
    /// 1-based.
    pub part: usize,
    /// On the target's own time: the sum of the median walls of the pieces before it.
    pub start_ns: f64,
    /// Median wall of the piece.
    pub wall_ns: f64,
    /// Median CPU of the piece (less its stops' cost); None when no run counted it.
    pub cpu_ns: Option<f64>,
    /// Median position among the run's segments: the tie-break of equal starts.
    order: f64,
    /// For a piece of an object loaded after `main`, which of ld.so's phases it is
    /// (`object-mapping`, `relocation`, `initializers`); None for start-up's pieces, which
    /// are all of their row's phase.
    pub kind: Option<&'static str>,
}

/// One row of the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// The phase's label ("relocation"), or "exit teardown".
    pub phase: String,
    /// The phase as the JSON names it ("relocation"); None for the exit teardown.
    pub key: Option<&'static str>,
    /// The object of a per-object phase, as the JSON names it (ld.so's l_name).
    pub object: Option<String>,
    /// Its first piece's start on the target's own time, ns; None when no run placed it.
    pub start_ns: Option<f64>,
    /// The pieces in time order; empty for the exit teardown.
    pub pieces: Vec<Piece>,
    /// The phase row's CPU (median, interval) and wall, as in the JSON; no interval for the
    /// exit teardown, a sum of two medians.
    pub cpu: Option<Summary>,
    /// The CPU figure the row prints: the phase table's median, or the summary's exit teardown.
    pub cpu_ns: Option<f64>,
    pub wall: Option<Summary>,
}

impl Bar {
    /// "relocation: libc.so.6" (the basename, as the text's object table).
    pub fn label(&self) -> String {
        match &self.object {
            Some(o) => format!("{}: {}", self.phase, short(o)),
            None => self.phase.clone(),
        }
    }

    /// Where the whisker's interval is measured from: the last piece's start less the CPU of
    /// the pieces before it, so the row's whole CPU ends at the end of the last CPU bar.
    fn whisker_origin(&self) -> f64 {
        match self.pieces.split_last() {
            Some((last, before)) if !before.is_empty() => {
                last.start_ns - before.iter().filter_map(|p| p.cpu_ns).sum::<f64>()
            }
            _ => self.start_ns.unwrap_or(0.0),
        }
    }

    fn end_ns(&self) -> f64 {
        let pieces = self
            .pieces
            .iter()
            .map(|p| p.start_ns + p.wall_ns.max(p.cpu_ns.unwrap_or(0.0)))
            .fold(0.0, f64::max);
        let whisker = self
            .cpu
            .as_ref()
            .map_or(0.0, |s| self.whisker_origin() + s.ci95.1);
        let own = self.start_ns.unwrap_or(0.0) + self.cpu_ns.unwrap_or(0.0);
        pieces.max(whisker).max(own)
    }
}

/// The exit teardown's row label.
pub const EXIT_TEARDOWN: &str = "exit teardown";

fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The runs the phase rows are the medians of (as [`crate::attribute::profile::aggregate`]).
fn measured(p: &ProfileSection) -> Vec<&Run> {
    p.raw
        .iter()
        .filter(|r| r.instrumentation == Instrumentation::PerObject && lost(r).is_none())
        .collect()
}

/// Each segment's start on the target's own time: the sum of the walls before it.
fn target_starts(r: &Run) -> Vec<u64> {
    let mut at = 0;
    r.segments
        .iter()
        .map(|s| {
            let here = at;
            at += s.wall_ns;
            here
        })
        .collect()
}

/// Each segment's start in real time since the run's exec, ns: by its span when every segment
/// has one (stops included), else by the walls before it; and whether spans were used.
fn starts(r: &Run) -> (Vec<u64>, bool) {
    let spans: Option<Vec<(u64, u64)>> = r.segments.iter().map(|s| s.span_ns).collect();
    match spans {
        Some(spans) if !spans.is_empty() => {
            let origin = spans[0].0;
            (
                spans.iter().map(|s| s.0.saturating_sub(origin)).collect(),
                true,
            )
        }
        _ => (target_starts(r), false),
    }
}

/// A segment of a row in one run: (position among the run's segments, wall, CPU).
type Seg = (f64, f64, Option<f64>);

fn median(v: &[f64]) -> Option<f64> {
    summarize(v).map(|s| s.median)
}

/// The summary's exit teardown (the CPU after the last stop plus the teardown the counters
/// miss), the figure the text prints; None when the report has no such part.
pub fn exit_teardown_ns(p: &ProfileSection) -> Option<f64> {
    crate::attribute::summary::summary(Some(p), None)
        .exec?
        .parts
        .into_iter()
        .find(|x| x.label == crate::attribute::summary::EXIT_TEARDOWN)
        .map(|x| x.ns)
}

/// The phases' wall time as the summary prints it (the sum of the phase rows' wall medians):
/// where the axis ends.
pub fn phases_wall_ns(p: &ProfileSection) -> f64 {
    crate::attribute::summary::summary(Some(p), None)
        .exec
        .and_then(|e| e.wall_ns)
        .unwrap_or(0.0)
}

/// The rows in time order, the exit teardown last. The pieces are laid end to end in the order
/// the runs record them (their median position among a run's segments), each lasting its
/// median wall: a piece starts at the sum of the median walls of the pieces before it. A
/// median of each run's sum of earlier walls would be the same on a quiet machine, but a
/// preemption lengthens a different segment in each run, and those medians then drift past
/// the phases' wall time by the preemptions of the runs in the middle; the sum of medians
/// ends where the phase table's walls add up (to the difference between the median of a
/// phase's pieces' sum and the sum of their medians).
pub fn bars(p: &ProfileSection) -> Vec<Bar> {
    let runs = measured(p);
    let per_stop: Vec<f64> = runs
        .iter()
        .map(|r| per_stop_ns(r, p.overhead.ns_per_stop_slope).unwrap_or(0.0))
        .collect();
    let mut out: Vec<Bar> = p
        .phases
        .iter()
        .map(|ph| {
            // Per run, the row's segments in order.
            let per_run: Vec<Vec<Seg>> = runs
                .iter()
                .zip(&per_stop)
                .map(|(r, per_stop)| {
                    r.segments
                        .iter()
                        .enumerate()
                        .filter(|(_, s)| s.phase == ph.phase && s.object == ph.object)
                        .map(|(i, s)| (i as f64, s.wall_ns as f64, corrected(s, *per_stop)))
                        .collect()
                })
                .collect();
            let parts = per_run.iter().map(Vec::len).max().unwrap_or(0);
            let pieces: Vec<Piece> = (0..parts)
                .filter_map(|k| {
                    let of: Vec<&Seg> = per_run.iter().filter_map(|v| v.get(k)).collect();
                    let col = |f: fn(&Seg) -> Option<f64>| {
                        median(&of.iter().filter_map(|x| f(x)).collect::<Vec<f64>>())
                    };
                    Some(Piece {
                        part: k + 1,
                        order: col(|x| Some(x.0))?,
                        start_ns: 0.0,
                        wall_ns: col(|x| Some(x.1))?,
                        cpu_ns: col(|x| x.2),
                        kind: None,
                    })
                })
                .collect();
            Bar {
                phase: ph.phase.label().to_string(),
                key: Some(category(ph.phase)),
                object: ph.object.clone(),
                start_ns: None,
                pieces,
                cpu: ph.task_clock_ns.clone(),
                cpu_ns: ph.task_clock_ns.as_ref().map(|s| s.median),
                wall: ph.wall_ns.clone(),
            }
        })
        .collect();
    // End to end, in the runs' order (ties: the phase table's order, then the part).
    let mut seq: Vec<(f64, usize, usize)> = out
        .iter()
        .enumerate()
        .flat_map(|(i, b)| {
            b.pieces
                .iter()
                .enumerate()
                .map(move |(k, x)| (x.order, i, k))
        })
        .collect();
    seq.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut at = 0.0;
    for (_, i, k) in seq {
        let piece = &mut out[i].pieces[k];
        piece.start_ns = at;
        at += piece.wall_ns;
    }
    for b in &mut out {
        b.start_ns = b.pieces.first().map(|x| x.start_ns);
    }
    let main = out
        .iter()
        .find(|b| b.key == Some(category(Phase::MainToExit)))
        .and_then(|b| b.start_ns);
    if let Some(main) = main {
        out.extend(after_main_bars(&runs, main));
    }
    if let Some(exit) = exit_teardown_ns(p) {
        // After the last piece: the exit stop ends "main to exit".
        out.push(Bar {
            phase: EXIT_TEARDOWN.to_string(),
            key: None,
            object: None,
            start_ns: (!runs.is_empty()).then_some(at),
            pieces: Vec::new(),
            cpu: None,
            cpu_ns: Some(exit),
            wall: None,
        });
    }
    let key = |b: &Bar| {
        (
            b.start_ns.unwrap_or(f64::INFINITY),
            b.pieces.first().map_or(f64::INFINITY, |x| x.order),
        )
    };
    out.sort_by(|a, b| {
        let (ka, kb) = (key(a), key(b));
        ka.0.total_cmp(&kb.0).then(ka.1.total_cmp(&kb.1))
    });
    out
}

/// The row label of an object loaded after `main` ("dlopen: libX.so").
pub const DLOPEN: &str = "dlopen";

/// The key of those rows (their `data-key`), and the trace's category prefix.
pub const AFTER_MAIN: &str = "after-main";

/// ld.so's phases for one object loaded after `main`, in the order it runs them: the piece
/// kinds of its row.
const AFTER_MAIN_PHASES: [&str; 3] = ["object-mapping", "relocation", "initializers"];

/// A piece kind's words.
fn kind_label(kind: &str) -> &'static str {
    match kind {
        "object-mapping" => "search and mapping",
        "relocation" => "relocation",
        _ => "initializers",
    }
}

/// The phase whose colours a piece kind takes (start-up's for the same work).
fn kind_colours(kind: &str) -> (&'static str, &'static str) {
    colours(match kind {
        "object-mapping" => "ld.so start, search and mapping",
        k => kind_label(k),
    })
}

fn after_main_costs(o: &LoadedObject) -> [Option<&Cost>; 3] {
    [
        o.mapping.as_ref(),
        o.relocation.as_ref(),
        o.initializers.as_ref(),
    ]
}

/// Where "main to exit" lies in a run: its clock start and end (the spans of its first and
/// last segment), its start on the target's own time, and its wall; None without spans.
fn main_window(r: &Run) -> Option<(u64, u64, u64, u64)> {
    let mut first = None;
    let (mut end, mut wall) = (0, 0);
    for (s, own) in r.segments.iter().zip(target_starts(r)) {
        if s.phase != Phase::MainToExit {
            continue;
        }
        let (a, b) = s.span_ns?;
        first.get_or_insert((a, own));
        end = b;
        wall += s.wall_ns;
    }
    let (a, own) = first?;
    Some((a, end, own, wall))
}

/// A clock time inside "main to exit" as an offset from its start on the target's own time:
/// the clock offset scaled by the window's wall over its clock length, which spreads the
/// stops inside the window (those of the loader's own breakpoints) evenly over it.
fn own_offset(t: u64, (a, b, _, wall): (u64, u64, u64, u64)) -> f64 {
    let len = b.saturating_sub(a);
    if len == 0 {
        return 0.0;
    }
    t.saturating_sub(a).min(len) as f64 * wall as f64 / len as f64
}

/// One row per object loaded after `main`, in load order: the same object loaded again in a
/// run (after a `dlclose`) is a row of its own. Each row's pieces are the object's search and
/// mapping, relocation and initializers, each at `main` (the "main to exit" row's start) plus
/// its median offset into "main to exit" over the runs that loaded it, lasting its median wall;
/// the row's CPU is the median over those runs of the three's sum (each the calling thread's
/// CPU less its stops, as the record has it).
fn after_main_bars(runs: &[&Run], main: f64) -> Vec<Bar> {
    #[derive(Default)]
    struct Seen {
        pieces: [Vec<(f64, f64, f64)>; 3],
        cpu: Vec<f64>,
        wall: Vec<f64>,
    }
    let mut keys: Vec<(String, usize)> = Vec::new();
    let mut seen: Vec<Seen> = Vec::new();
    for r in runs {
        let (Some(am), Some(w)) = (&r.after_main, main_window(r)) else {
            continue;
        };
        let mut times: std::collections::HashMap<&str, usize> = Default::default();
        for (_, o) in am.loaded() {
            let costs = after_main_costs(o);
            if costs.iter().all(Option::is_none) {
                continue;
            }
            let n = times.entry(o.name.as_str()).or_insert(0);
            let key = (o.name.clone(), *n);
            *n += 1;
            let i = match keys.iter().position(|k| *k == key) {
                Some(i) => i,
                None => {
                    keys.push(key);
                    seen.push(Seen::default());
                    seen.len() - 1
                }
            };
            for (j, c) in costs.iter().enumerate() {
                if let Some(c) = c {
                    seen[i].pieces[j].push((
                        own_offset(c.span_ns.0, w),
                        c.wall_ns as f64,
                        c.cpu_ns as f64,
                    ));
                }
            }
            seen[i]
                .cpu
                .push(costs.iter().flatten().map(|c| c.cpu_ns as f64).sum());
            seen[i]
                .wall
                .push(costs.iter().flatten().map(|c| c.wall_ns as f64).sum());
        }
    }
    let mut out: Vec<Bar> = keys
        .into_iter()
        .zip(seen)
        .filter_map(|((name, _), s)| {
            let mut pieces: Vec<Piece> = Vec::new();
            for (j, v) in s.pieces.iter().enumerate() {
                let col =
                    |f: fn(&(f64, f64, f64)) -> f64| median(&v.iter().map(f).collect::<Vec<f64>>());
                let (Some(at), Some(wall), Some(cpu)) = (col(|x| x.0), col(|x| x.1), col(|x| x.2))
                else {
                    continue;
                };
                pieces.push(Piece {
                    part: pieces.len() + 1,
                    start_ns: main + at,
                    wall_ns: wall,
                    cpu_ns: Some(cpu),
                    order: f64::INFINITY,
                    kind: Some(AFTER_MAIN_PHASES[j]),
                });
            }
            let cpu = summarize(&s.cpu)?;
            Some(Bar {
                phase: DLOPEN.to_string(),
                key: Some(AFTER_MAIN),
                object: Some(name),
                start_ns: pieces.first().map(|x| x.start_ns),
                pieces,
                cpu_ns: Some(cpu.median),
                cpu: Some(cpu),
                wall: summarize(&s.wall),
            })
        })
        .collect();
    out.sort_by(|a, b| {
        a.start_ns
            .unwrap_or(f64::INFINITY)
            .total_cmp(&b.start_ns.unwrap_or(f64::INFINITY))
    });
    out
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            // XML 1.0 has no other control characters; a path may.
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

fn ms(ns: f64) -> String {
    format!("{:.3}", ns / 1e6)
}

/// The phase's colour: (CPU, wall).
fn colours(phase: &str) -> (&'static str, &'static str) {
    match phase {
        "kernel exec" => ("#4e79a7", "#c6d4e6"),
        "CPU feature detection" => ("#b07aa1", "#e6d3e1"),
        "ld.so start, search and mapping" => ("#76b7b2", "#d3e9e7"),
        "relocation" | "relocation + initializers" => ("#f28e2b", "#fbd6b3"),
        "initializers" => ("#59a14f", "#cde3c9"),
        "entry to main" => ("#9c755f", "#e0d2c9"),
        "main to exit" => ("#4e79a7", "#c6d4e6"),
        EXIT_TEARDOWN => ("#e15759", "#f5c4c5"),
        _ => ("#7f7f7f", "#d9d9d9"),
    }
}

/// A step of 1, 2 or 5 × 10^k ns giving about `n` ticks over `span`.
fn tick_step(span: f64, n: f64) -> f64 {
    let raw = (span / n).max(1.0);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// The most characters of the title drawn (a 15 px Verdana glyph averages under 8.5 px, so
/// this fits the 1200 px canvas); a longer command line is shortened with an ellipsis.
const TITLE_CHARS: usize = 130;

fn fit(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut o: String = s.chars().take(n - 1).collect();
        o.push('…');
        o
    }
}

/// How many of the costliest rows get their figure written beside the bar.
const LABELLED: usize = 5;

/// The SVG. `title` names the program and its arguments.
pub fn svg(p: &ProfileSection, title: &str) -> String {
    let bars = bars(p);
    let (w, left, right, top, row_h) = (1200.0, 330.0, 150.0, 100.0, 20.0);
    let plot_w = w - left - right;
    // The axis ends at the phases' wall time; the exit teardown (CPU after it) and a piece
    // whose median start and wall add up to a little more are drawn past it.
    let wall_end = phases_wall_ns(p);
    let end = bars
        .iter()
        .map(Bar::end_ns)
        .fold(wall_end, f64::max)
        .max(1.0);
    let x = |ns: f64| left + ns / end * plot_w;
    let h = top + bars.len() as f64 * row_h + 48.0;
    let mut top_rows: Vec<usize> = (0..bars.len())
        .filter(|&i| bars[i].cpu_ns.is_some())
        .collect();
    top_rows.sort_by(|&a, &b| {
        let m = |i: usize| bars[i].cpu_ns.unwrap_or(0.0);
        m(b).total_cmp(&m(a))
    });
    top_rows.truncate(LABELLED);

    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="Verdana, sans-serif" font-size="11">
<rect x="0" y="0" width="{w}" height="{h}" fill="white"/>
<text id="ldcost-title" x="{cx}" y="22" text-anchor="middle" font-size="15">{t}</text>"#,
        cx = w / 2.0,
        t = esc(&fit(title, TITLE_CHARS)),
    );
    let _ = writeln!(
        o,
        r##"<text id="ldcost-subtitle" x="{cx}" y="40" text-anchor="middle" fill="#555">{n} measured run{s} on the target's own time, ldcost's stops removed: each segment at the sum of the median walls before it<tspan x="{cx}" dy="14">dark: CPU (median), light: wall (median), whisker: 95% interval of the row's CPU median; a phase run in several pieces is drawn as its pieces</tspan></text>"##,
        cx = w / 2.0,
        n = p.runs,
        s = if p.runs == 1 { "" } else { "s" },
    );
    // The time axis, in ms, from exec to the phases' wall time.
    let step = tick_step(wall_end.max(1.0), 8.0);
    let axis_y = top - 8.0;
    let _ = writeln!(
        o,
        r##"<g id="ldcost-axis" data-end-ns="{wall_end}" fill="#555" stroke="#ddd">"##
    );
    let mut t = 0.0;
    while t <= wall_end - step * 0.4 {
        let _ = writeln!(
            o,
            r#"<line x1="{X:.1}" y1="{axis_y}" x2="{X:.1}" y2="{y2}"/><text x="{X:.1}" y="{ty}" text-anchor="middle" stroke="none">{l} ms</text>"#,
            X = x(t),
            y2 = h - 42.0,
            ty = axis_y - 4.0,
            l = t.round() / 1e6,
        );
        t += step;
    }
    let _ = writeln!(
        o,
        r##"<line id="ldcost-axis-end" x1="{X:.1}" y1="{axis_y}" x2="{X:.1}" y2="{y2}" stroke="#888" stroke-dasharray="4,3"/><text x="{X:.1}" y="{ty}" text-anchor="middle" stroke="none" fill="#222">{l} ms</text><text x="{X:.1}" y="{by}" text-anchor="middle" stroke="none">the phases' wall time</text>"##,
        X = x(wall_end),
        y2 = h - 42.0,
        ty = axis_y - 4.0,
        by = h - 30.0,
        l = ms(wall_end),
    );
    let _ = writeln!(o, "</g>");
    let _ = writeln!(o, r#"<g id="ldcost-bars">"#);
    for (i, b) in bars.iter().enumerate() {
        let y = top + i as f64 * row_h;
        let (dark, light) = colours(&b.phase);
        let parts = b.pieces.len();
        let mut attrs = format!(r#" data-phase="{}""#, esc(&b.phase));
        if let Some(k) = b.key {
            let _ = write!(attrs, r#" data-key="{k}""#);
        }
        if let Some(obj) = &b.object {
            let _ = write!(attrs, r#" data-object="{}""#, esc(obj));
        }
        if let Some(s) = b.start_ns {
            let _ = write!(attrs, r#" data-start-ns="{s}""#);
        }
        if parts > 0 {
            let _ = write!(attrs, r#" data-parts="{parts}""#);
        }
        let mut title = b.label();
        if let Some(o) = &b.object {
            let _ = write!(title, " ({o})");
        }
        match b.start_ns {
            Some(s) if b.key.is_none() => {
                let _ = write!(
                    title,
                    "\nafter main to exit: at {} ms of the target's own time (median)",
                    ms(s)
                );
            }
            Some(s) => {
                let _ = write!(
                    title,
                    "\nstarts at {} ms of the target's own time (median; ldcost's stops removed)",
                    ms(s)
                );
            }
            None => title.push_str("\nstart: not available (in no measured run)"),
        }
        if b.key == Some(AFTER_MAIN) {
            title.push_str(
                "\nloaded after main (dlopen): its search and mapping, relocation and initializers, each at its median place in main to exit; the figures below are their sum, in the thread that called dlopen",
            );
        } else if parts > 1 {
            let _ = write!(
                title,
                "\nrecorded in {parts} pieces per run, drawn at their own starts; the figures below are their sum"
            );
        }
        match (&b.cpu, b.cpu_ns) {
            (Some(c), _) => {
                let _ = write!(
                    attrs,
                    r#" data-cpu-ns="{}" data-cpu-lo-ns="{}" data-cpu-hi-ns="{}" data-n="{}""#,
                    c.median, c.ci95.0, c.ci95.1, c.n
                );
                let _ = write!(
                    title,
                    "\nCPU {} ms, 95% interval [{}, {}] ms, {} run{}",
                    ms(c.median),
                    ms(c.ci95.0),
                    ms(c.ci95.1),
                    c.n,
                    if c.n == 1 { "" } else { "s" }
                );
            }
            (None, Some(c)) => {
                let _ = write!(attrs, r#" data-cpu-ns="{c}""#);
                let _ = write!(
                    title,
                    "\nCPU {} ms: the CPU after the last stop plus the teardown the counters miss (medians; no interval of their sum)",
                    ms(c)
                );
            }
            (None, None) => title.push_str("\nCPU: not available (not counted)"),
        }
        match &b.wall {
            Some(wl) => {
                let _ = write!(attrs, r#" data-wall-ns="{}""#, wl.median);
                let _ = write!(title, "\nwall {} ms", ms(wl.median));
            }
            None if b.key.is_none() => title.push_str(
                "\nwall: not recorded (the CPU after the exit stop, read from the scheduler)",
            ),
            None => title.push_str("\nwall: not available"),
        }
        let _ = writeln!(o, r#"<g class="ldcost-bar"{attrs}>"#);
        let _ = writeln!(o, "<title>{}</title>", esc(&title));
        if i % 2 == 1 {
            let _ = writeln!(
                o,
                r##"<rect x="0" y="{y}" width="{w}" height="{row_h}" fill="#f6f6f6"/>"##
            );
        }
        let row_label = if parts > 1 && b.key != Some(AFTER_MAIN) {
            format!("{} ({parts} pieces)", b.label())
        } else {
            b.label()
        };
        let _ = writeln!(
            o,
            r#"<text class="ldcost-row-label" x="{lx}" y="{ty}" text-anchor="end">{l}</text>"#,
            lx = left - 8.0,
            ty = y + 14.0,
            l = esc(&row_label),
        );
        for piece in &b.pieces {
            let mut pa = format!(
                r#" data-part="{}" data-start-ns="{}" data-wall-ns="{}""#,
                piece.part, piece.start_ns, piece.wall_ns
            );
            let mut pt = match (piece.kind, &b.object) {
                (Some(k), Some(obj)) => {
                    let _ = write!(pa, r#" data-kind="{k}""#);
                    format!("{}: {} (after main)", kind_label(k), short(obj))
                }
                _ if parts > 1 => format!("{} (part {}/{parts})", b.label(), piece.part),
                _ => b.label(),
            };
            let (dark, light) = piece.kind.map_or((dark, light), kind_colours);
            let _ = write!(
                pt,
                "\nstarts at {} ms of the target's own time, wall {} ms",
                ms(piece.start_ns),
                ms(piece.wall_ns)
            );
            match piece.cpu_ns {
                Some(c) => {
                    let _ = write!(pa, r#" data-cpu-ns="{c}""#);
                    let _ = write!(pt, ", CPU {} ms (medians)", ms(c));
                }
                None => pt.push_str(", CPU: not available (not counted)"),
            }
            let _ = writeln!(o, r#"<g class="ldcost-piece"{pa}>"#);
            let _ = writeln!(o, "<title>{}</title>", esc(&pt));
            let _ = writeln!(
                o,
                r#"<rect class="ldcost-wall" x="{X:.2}" y="{Y}" width="{W:.2}" height="16" fill="{light}"/>"#,
                X = x(piece.start_ns),
                Y = y + 2.0,
                W = (piece.wall_ns / end * plot_w).max(1.0),
            );
            // A one-piece row's dark bar is the phase table's CPU itself.
            let cpu = if parts == 1 { b.cpu_ns } else { piece.cpu_ns };
            if let Some(c) = cpu {
                let _ = writeln!(
                    o,
                    r#"<rect class="ldcost-cpu" x="{X:.2}" y="{Y}" width="{W:.2}" height="10" fill="{dark}"/>"#,
                    X = x(piece.start_ns),
                    Y = y + 5.0,
                    W = (c / end * plot_w).max(1.0),
                );
            }
            let _ = writeln!(o, "</g>");
        }
        if b.pieces.is_empty() {
            if let (Some(c), Some(start)) = (b.cpu_ns, b.start_ns) {
                let _ = writeln!(
                    o,
                    r#"<rect class="ldcost-cpu" x="{X:.2}" y="{Y}" width="{W:.2}" height="10" fill="{dark}"/>"#,
                    X = x(start),
                    Y = y + 5.0,
                    W = (c / end * plot_w).max(1.0),
                );
            }
        }
        if let Some(c) = &b.cpu {
            let origin = b.whisker_origin();
            let (lo, hi) = (x(origin + c.ci95.0), x(origin + c.ci95.1));
            let cy = y + 10.0;
            let _ = writeln!(
                o,
                r##"<path class="ldcost-whisker" d="M{lo:.2},{cy} H{hi:.2} M{lo:.2},{a} V{b} M{hi:.2},{a} V{b}" stroke="#222" stroke-width="1" fill="none"/>"##,
                a = cy - 4.0,
                b = cy + 4.0,
            );
        }
        if let (true, Some(c)) = (top_rows.contains(&i), b.cpu_ns) {
            let text = format!("{} {} ms", b.label(), ms(c));
            // Right of the bar, or left of its start where it would leave the picture
            // (an average Verdana 11 px glyph is under 7 px wide).
            let width = text.chars().count() as f64 * 7.0;
            let after = x(b.end_ns()) + 6.0;
            let before = x(b.start_ns.unwrap_or(0.0)) - 6.0;
            // Right of the bar; else left of its start; else, a bar spanning the picture,
            // white on its dark bar, so that it never covers the row's own label.
            let (lx, anchor, fill) = if after + width <= w {
                (after, "start", "")
            } else if before - width >= left {
                (before, "end", "")
            } else {
                // On the piece of most CPU: its dark bar is under the whole text.
                let on = b
                    .pieces
                    .iter()
                    .max_by(|a, c| a.cpu_ns.unwrap_or(0.0).total_cmp(&c.cpu_ns.unwrap_or(0.0)))
                    .map_or(b.start_ns.unwrap_or(0.0), |x| x.start_ns);
                (x(on) + 4.0, "start", r#" fill="white""#)
            };
            let _ = writeln!(
                o,
                r#"<text class="ldcost-top-label" x="{lx:.2}" y="{ty}" text-anchor="{anchor}"{fill}>{l}</text>"#,
                ty = y + 14.0,
                l = esc(&text),
            );
        }
        let _ = writeln!(o, "</g>");
    }
    let _ = writeln!(o, "</g>");
    let _ = writeln!(
        o,
        r##"<text x="{left}" y="{ly}" fill="#555">The {n} costliest rows are labelled with their CPU; hover a row or a piece for its figures.{dl}</text>"##,
        ly = h - 12.0,
        n = top_rows.len(),
        dl = if bars.iter().any(|b| b.key == Some(AFTER_MAIN)) {
            " dlopen rows: objects loaded after main."
        } else {
            ""
        },
    );
    o.push_str("</svg>\n");
    o
}

/// The Chrome trace-event document: one track (tid) per measured run, one complete event per
/// segment at its real start since that run's exec (ldcost's stops included: the gaps),
/// lasting its wall time, with its CPU and its start on the target's own time in the args.
pub fn trace(p: &ProfileSection, title: &str) -> Result<String, serde_json::Error> {
    let runs = measured(p);
    let mut by_span = !runs.is_empty();
    let mut events = vec![serde_json::json!({
        "ph": "M", "name": "process_name", "pid": 1, "tid": 0,
        "args": {"name": title},
    })];
    for (i, r) in runs.iter().enumerate() {
        let tid = i + 1;
        events.push(serde_json::json!({
            "ph": "M", "name": "thread_name", "pid": 1, "tid": tid,
            "args": {"name": format!("measured run {tid}")},
        }));
        events.push(serde_json::json!({
            "ph": "M", "name": "thread_sort_index", "pid": 1, "tid": tid,
            "args": {"sort_index": tid},
        }));
        let per_stop = per_stop_ns(r, p.overhead.ns_per_stop_slope).unwrap_or(0.0);
        let (st, spans) = starts(r);
        by_span &= spans;
        let own = target_starts(r);
        for ((s, at), own) in r.segments.iter().zip(st).zip(own) {
            let name = match &s.object {
                Some(o) => format!("{}: {}", s.phase.label(), short(o)),
                None => s.phase.label().to_string(),
            };
            let mut a = serde_json::Map::new();
            a.insert("wall_ns".into(), s.wall_ns.into());
            a.insert("ptrace_stops".into(), s.stops.into());
            a.insert("target_start_ns".into(), own.into());
            match corrected(s, per_stop) {
                Some(c) => {
                    a.insert("cpu_ns".into(), c.into());
                }
                None => {
                    a.insert("cpu_ns".into(), "not available (not counted)".into());
                }
            }
            if let Some(raw) = s.counters.task_clock_ns {
                a.insert("cpu_raw_ns".into(), raw.into());
            }
            if let Some(pf) = s.counters.page_faults {
                a.insert("page_faults".into(), pf.into());
            }
            if let Some(o) = &s.object {
                a.insert("object".into(), o.clone().into());
            }
            events.push(serde_json::json!({
                "name": name,
                "cat": category(s.phase),
                "ph": "X",
                "ts": at as f64 / 1000.0,
                "dur": s.wall_ns as f64 / 1000.0,
                "pid": 1,
                "tid": tid,
                "args": a,
            }));
        }
        if spans {
            events.extend(after_main_events(r, tid, runs.len() + tid));
        }
    }
    let clock = if by_span {
        "real time: ts in µs since each run's exec (CLOCK_MONOTONIC), ldcost's ptrace stops included (the gaps between events); dur is the segment's wall time without them"
    } else {
        "the target's own time: this recording has no segment times, so ts is the sum of the walls of the run's earlier segments (ldcost's stops removed), in µs; dur is the segment's wall time"
    };
    let doc = serde_json::json!({
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "title": title,
            "clock": clock,
            "target_time": "args.target_start_ns: the segment's start on this run's own time (the sum of the walls of its earlier segments, ldcost's stops removed); the --timeline SVG lays the segments' median walls end to end",
        },
    });
    let mut s = serde_json::to_string_pretty(&doc)?;
    s.push('\n');
    Ok(s)
}

/// A run's objects loaded after `main` as trace events on a track of their own (`track`, named
/// after the run's `tid`): each object's search and mapping, relocation and initializers at its
/// real start since the run's exec, lasting its wall, with its CPU (the calling thread's, less
/// its stops) and the `dlopen` that loaded it in the args. A track apart from the run's
/// segments, since "main to exit" lasts its wall without the stops and would end before the
/// later of them.
fn after_main_events(r: &Run, tid: usize, track: usize) -> Vec<serde_json::Value> {
    let (Some(am), Some(origin)) = (
        &r.after_main,
        r.segments.first().and_then(|s| s.span_ns).map(|s| s.0),
    ) else {
        return Vec::new();
    };
    let w = main_window(r);
    let mut ev = vec![
        serde_json::json!({
            "ph": "M", "name": "thread_name", "pid": 1, "tid": track,
            "args": {"name": format!("measured run {tid}: loaded after main")},
        }),
        serde_json::json!({
            "ph": "M", "name": "thread_sort_index", "pid": 1, "tid": track,
            "args": {"sort_index": track},
        }),
    ];
    for (open, o) in am.loaded() {
        for (kind, c) in AFTER_MAIN_PHASES.iter().zip(after_main_costs(o)) {
            let Some(c) = c else { continue };
            let mut a = serde_json::Map::new();
            a.insert("cpu_ns".into(), c.cpu_ns.into());
            a.insert("wall_ns".into(), c.wall_ns.into());
            a.insert("ptrace_stops".into(), c.stops.into());
            a.insert("object".into(), o.name.clone().into());
            a.insert("thread".into(), open.tid.into());
            if let Some(f) = &open.file {
                a.insert("dlopen_file".into(), f.clone().into());
            }
            if let Some(caller) = &open.caller {
                a.insert("caller".into(), caller.clone().into());
            }
            if let Some(w) = w {
                a.insert(
                    "target_start_ns".into(),
                    (w.2 as f64 + own_offset(c.span_ns.0, w)).round().into(),
                );
            }
            ev.push(serde_json::json!({
                "name": format!("{}: {}", kind_label(kind), short(&o.name)),
                "cat": format!("{AFTER_MAIN}-{kind}"),
                "ph": "X",
                "ts": c.span_ns.0.saturating_sub(origin) as f64 / 1000.0,
                "dur": c.wall_ns as f64 / 1000.0,
                "pid": 1,
                "tid": track,
                "args": a,
            }));
        }
    }
    if ev.len() == 2 {
        ev.clear();
    }
    ev
}

/// The phase's name as the JSON writes it (kebab-case), also the trace events' category.
fn category(p: Phase) -> &'static str {
    match p {
        Phase::KernelExec => "kernel-exec",
        Phase::CpuFeatures => "cpu-features",
        Phase::LdsoMapping => "ldso-mapping",
        Phase::ObjectMapping => "object-mapping",
        Phase::Relocation => "relocation",
        Phase::RelocationAndInit => "relocation-and-init",
        Phase::Initializers => "initializers",
        Phase::LdsoOther => "ldso-other",
        Phase::EntryToMain => "entry-to-main",
        Phase::MainToExit => "main-to-exit",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A per-object run: (phase, object, wall, cpu, span start) per segment; spans end at
    /// start + wall. `spans: false` records none.
    fn run(segs: &[(&str, Option<&str>, u64, u64, u64)], spans: bool, killed: bool) -> Run {
        let segments: Vec<serde_json::Value> = segs
            .iter()
            .map(|&(phase, object, wall, cpu, at)| {
                let mut v = serde_json::json!({"phase": phase, "object": object,
                    "wall_ns": wall, "stops": 0,
                    "counters": {"task_clock_ns": cpu, "page_faults": 1}});
                if spans {
                    v["span_ns"] = serde_json::json!([at, at + wall]);
                }
                v
            })
            .collect();
        let ending = if killed {
            serde_json::json!({"how": "killed", "value": 9})
        } else {
            serde_json::json!({"how": "exited", "value": 0})
        };
        serde_json::from_value(serde_json::json!({
            "instrumentation": "per-object", "segments": segments,
            "total": {"task_clock_ns": 1000}, "wall_ns": 1000, "ending": ending,
            "stops": 0, "children": null,
        }))
        .expect("a run document")
    }

    fn section(runs: Vec<Run>) -> ProfileSection {
        crate::attribute::profile::aggregate(
            vec!["/bin/x".into()],
            0,
            crate::record::Detail::Static,
            runs,
            None,
            Default::default(),
        )
    }

    #[test]
    fn pieces_start_at_the_median_of_the_walls_before_them() {
        // Clock origins 1000, 5000, 9000: real time with gaps (the stops) that the placement
        // leaves out. "ld.so other" comes twice per run, around a relocation: two pieces.
        let r = |o: u64, reloc_wall: u64, cpu: u64| {
            run(
                &[
                    ("kernel-exec", None, 100, 90, o),
                    ("ldso-other", None, 10, cpu, o + 150),
                    ("relocation", Some("/lib/a.so"), reloc_wall, 40, o + 300),
                    ("ldso-other", None, 20, 15, o + 500),
                    ("main-to-exit", None, 30, 20, o + 700),
                ],
                true,
                false,
            )
        };
        let mut killed = r(20_000, 1, 1);
        killed.ending = crate::record::Ending::Killed(9);
        let p = section(vec![
            r(1000, 50, 8),
            r(5000, 60, 10),
            r(9000, 90, 12),
            killed,
        ]);
        let bars = bars(&p);
        let got: Vec<(String, Vec<(f64, f64)>)> = bars
            .iter()
            .map(|b| {
                (
                    b.label(),
                    b.pieces.iter().map(|x| (x.start_ns, x.wall_ns)).collect(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("kernel exec".to_string(), vec![(0.0, 100.0)]),
                // Its second piece after the relocation: at 110 + median(50, 60, 90).
                (
                    "ld.so other".to_string(),
                    vec![(100.0, 10.0), (170.0, 20.0)]
                ),
                ("relocation: a.so".to_string(), vec![(110.0, 60.0)]),
                ("main to exit".to_string(), vec![(190.0, 30.0)]),
            ]
        );
        let other = &bars[1];
        // The row's figures stay the phase table's: the sum of the pieces per run.
        assert_eq!(other.wall.as_ref().map(|w| w.median), Some(30.0));
        assert_eq!(other.cpu_ns, Some(25.0));
        assert_eq!(other.pieces[0].cpu_ns, Some(10.0));
        assert_eq!(other.key, Some("ldso-other"));
        // The axis ends at the phases' wall time: 100 + 30 + 60 + 30.
        assert_eq!(phases_wall_ns(&p), 220.0);
        let svg = svg(&p, "ldcost profile /bin/x");
        assert!(svg.contains(r#"data-end-ns="220""#), "{svg}");
        assert!(svg.contains("ldcost's stops removed"), "{svg}");
        assert!(svg.contains("ld.so other (part 2/2)"), "{svg}");
        assert_eq!(svg.matches("class=\"ldcost-bar\"").count(), 4);
        assert_eq!(svg.matches("class=\"ldcost-piece\"").count(), 5);
        // The trace: three tracks, five events each, at real time; dur = wall in µs.
        let t: serde_json::Value = serde_json::from_str(&trace(&p, "t").unwrap()).unwrap();
        let xs: Vec<&serde_json::Value> = t["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .collect();
        assert_eq!(xs.len(), 15);
        assert_eq!(xs.iter().filter(|e| e["tid"] == 3).count(), 5);
        assert_eq!(xs[2]["ts"], 0.3);
        assert_eq!(xs[2]["dur"], 0.05);
        assert_eq!(xs[2]["args"]["target_start_ns"], 110);
        assert_eq!(xs[2]["args"]["cpu_ns"], 40.0);
        assert_eq!(xs[2]["cat"], "relocation");
        assert!(t["otherData"]["clock"]
            .as_str()
            .unwrap()
            .starts_with("real time"));
    }

    #[test]
    fn without_spans_the_placement_is_the_same() {
        let segs = [
            ("kernel-exec", None, 100, 90, 0),
            ("ldso-mapping", None, 40, 30, 0),
            ("main-to-exit", None, 30, 20, 0),
        ];
        let p = section(vec![run(&segs, false, false), run(&segs, false, false)]);
        let starts: Vec<Option<f64>> = bars(&p).iter().map(|b| b.start_ns).collect();
        assert_eq!(starts, [Some(0.0), Some(100.0), Some(140.0)]);
        let t: serde_json::Value = serde_json::from_str(&trace(&p, "t").unwrap()).unwrap();
        assert!(t["otherData"]["clock"]
            .as_str()
            .unwrap()
            .contains("this recording has no segment times"));
    }

    #[test]
    fn a_preemption_in_one_run_moves_no_later_piece() {
        // Each run has one long wall (a preemption) in a different segment: the medians of
        // the runs' sums of earlier walls would put main to exit at 1010, past the phases'
        // wall time of 30.
        let r = |a: u64, b: u64| {
            run(
                &[
                    ("kernel-exec", None, a, 9, 0),
                    ("ldso-mapping", None, b, 9, 0),
                    ("main-to-exit", None, 10, 9, 0),
                ],
                false,
                false,
            )
        };
        let p = section(vec![r(1000, 10), r(10, 1000), r(10, 10)]);
        let starts: Vec<Option<f64>> = bars(&p).iter().map(|b| b.start_ns).collect();
        assert_eq!(starts, [Some(0.0), Some(10.0), Some(20.0)]);
        assert_eq!(phases_wall_ns(&p), 30.0);
    }

    /// An object loaded after `main`: (name, [(clock start, wall, cpu)] for its mapping,
    /// relocation and initializers).
    fn loaded(
        name: &str,
        phases: [(u64, u64, u64); 3],
        tid: i32,
    ) -> crate::record::after_main::Dlopen {
        use crate::record::after_main::{Dlopen, Outcome};
        let c = |(at, wall, cpu): (u64, u64, u64)| Cost {
            cpu_ns: cpu,
            wall_ns: wall,
            stops: 2,
            span_ns: (at, at + wall),
        };
        Dlopen {
            tid,
            file: Some(name.to_string()),
            mode: 2,
            namespace: None,
            caller: Some("/bin/x".into()),
            parent: None,
            cost: c((phases[0].0, 1, 1)),
            outcome: Outcome::Loaded(name.to_string()),
            objects: vec![LoadedObject {
                name: format!("/lib/{name}"),
                mapping: Some(c(phases[0])),
                relocation: Some(c(phases[1])),
                initializers: Some(c(phases[2])),
                threads: Vec::new(),
            }],
        }
    }

    #[test]
    fn objects_loaded_after_main_are_rows_after_main() {
        use crate::record::after_main::{AfterMain, AfterMainSeen};
        // Main to exit lasts 1000 ns of the target's time over 2000 ns of clock (stops):
        // offsets into it are halved.
        let r = |o: u64, reloc_cpu: u64| {
            let mut r = run(
                &[
                    ("kernel-exec", None, 100, 90, o),
                    ("main-to-exit", None, 1000, 900, o + 200),
                ],
                true,
                false,
            );
            r.segments[1].span_ns = Some((o + 200, o + 2200));
            r.after_main = Some(AfterMain {
                seen: AfterMainSeen::PerObject,
                opens: vec![
                    loaded(
                        "liba.so",
                        [
                            (o + 400, 50, 40),
                            (o + 600, 60, reloc_cpu),
                            (o + 800, 100, 90),
                        ],
                        7,
                    ),
                    loaded(
                        "libb.so",
                        [(o + 1200, 10, 10), (o + 1300, 20, 20), (o + 1400, 30, 30)],
                        7,
                    ),
                ],
                closes: Vec::new(),
                lazy: Vec::new(),
                stops: 12,
            });
            r
        };
        let p = section(vec![r(1000, 50), r(10_000, 70), r(20_000, 60)]);
        let bars = bars(&p);
        let labels: Vec<String> = bars.iter().map(Bar::label).collect();
        assert_eq!(
            labels,
            [
                "kernel exec",
                "main to exit",
                "dlopen: liba.so",
                "dlopen: libb.so"
            ]
        );
        let a = &bars[2];
        assert_eq!(a.key, Some(AFTER_MAIN));
        assert_eq!(a.object.as_deref(), Some("/lib/liba.so"));
        // main starts at 100; mapping 200 ns of clock in, halved: 100.
        let got: Vec<(Option<&str>, f64, f64, Option<f64>)> = a
            .pieces
            .iter()
            .map(|x| (x.kind, x.start_ns, x.wall_ns, x.cpu_ns))
            .collect();
        assert_eq!(
            got,
            [
                (Some("object-mapping"), 200.0, 50.0, Some(40.0)),
                (Some("relocation"), 300.0, 60.0, Some(60.0)),
                (Some("initializers"), 400.0, 100.0, Some(90.0)),
            ]
        );
        // The row's CPU: the median of the runs' sums (180, 200, 190).
        let cpu = a.cpu.as_ref().unwrap();
        assert_eq!((cpu.median, cpu.n), (190.0, 3));
        assert_eq!(a.cpu_ns, Some(190.0));
        assert_eq!(a.wall.as_ref().map(|w| w.median), Some(210.0));
        assert_eq!(bars[3].start_ns, Some(600.0));
        let svg = svg(&p, "ldcost profile /bin/x");
        let doc = roxmltree::Document::parse(&svg).expect("the SVG parses");
        let rows: Vec<_> = doc
            .descendants()
            .filter(|n| n.attribute("data-key") == Some(AFTER_MAIN))
            .collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].attribute("data-cpu-ns"), Some("190"));
        let kinds: Vec<&str> = rows[0]
            .descendants()
            .filter_map(|n| n.attribute("data-kind"))
            .collect();
        assert_eq!(kinds, AFTER_MAIN_PHASES);
        assert!(svg.contains("relocation: liba.so (after main)"), "{svg}");
        // The trace: a track of its own per run, six events each, CPU in the args, at real
        // time since the exec; dur is the wall.
        let t: serde_json::Value = serde_json::from_str(&trace(&p, "t").unwrap()).unwrap();
        let xs: Vec<&serde_json::Value> = t["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"].as_str().unwrap().starts_with(AFTER_MAIN))
            .collect();
        assert_eq!(xs.len(), 18);
        let first: Vec<&&serde_json::Value> = xs.iter().filter(|e| e["tid"] == 4).collect();
        assert_eq!(first.len(), 6);
        assert_eq!(first[1]["name"], "relocation: liba.so");
        assert_eq!(first[1]["cat"], "after-main-relocation");
        assert_eq!(first[1]["ts"], 0.6);
        assert_eq!(first[1]["dur"], 0.06);
        assert_eq!(first[1]["args"]["cpu_ns"], 50);
        assert_eq!(first[1]["args"]["target_start_ns"], 300.0);
        assert_eq!(first[1]["args"]["thread"], 7);
    }

    #[test]
    fn a_figure_label_never_covers_the_row_labels() {
        // Main to exit spans nearly the whole axis: its figure fits neither right of its bar
        // nor left of its start, and goes on the bar.
        let r = || {
            run(
                &[
                    ("kernel-exec", None, 10, 9, 0),
                    ("main-to-exit", None, 1000, 990, 10),
                ],
                true,
                false,
            )
        };
        let p = section(vec![r(), r(), r()]);
        let svg = svg(&p, "ldcost profile /bin/x");
        let doc = roxmltree::Document::parse(&svg).expect("the SVG parses");
        let labels: Vec<roxmltree::Node> = doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("ldcost-top-label"))
            .collect();
        assert_eq!(labels.len(), 2);
        for l in labels {
            let x: f64 = l.attribute("x").unwrap().parse().unwrap();
            let width = l.text().unwrap().chars().count() as f64 * 7.0;
            let from = match l.attribute("text-anchor") {
                Some("end") => x - width,
                _ => x,
            };
            assert!(from >= 330.0, "{:?} starts at {from}", l.text());
        }
        assert!(
            svg.contains(r#"fill="white">main to exit 0.001 ms"#),
            "{svg}"
        );
    }

    #[test]
    fn offsets_into_main_spread_its_stops_evenly() {
        assert_eq!(own_offset(150, (100, 300, 0, 100)), 25.0);
        assert_eq!(own_offset(50, (100, 300, 0, 100)), 0.0);
        assert_eq!(own_offset(900, (100, 300, 0, 100)), 100.0);
        assert_eq!(own_offset(900, (100, 100, 0, 100)), 0.0);
    }

    #[test]
    fn a_long_title_is_shortened() {
        assert_eq!(fit("abc", 3), "abc");
        assert_eq!(fit("abcd", 3), "ab…");
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(1_000_000.0, 8.0), 200_000.0);
        assert_eq!(tick_step(7_300_000.0, 8.0), 1_000_000.0);
    }

    #[test]
    fn escaping_keeps_xml_well_formed() {
        assert_eq!(esc("a<b>&\"c\u{1}"), "a&lt;b&gt;&amp;&quot;c\u{fffd}");
    }
}
