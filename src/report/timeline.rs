//! The start-up timeline of `profile --timeline` (an SVG, one row per phase and object in time
//! order, as `systemd-analyze plot` draws a boot) and its raw form, `profile --trace` (Chrome's
//! trace-event JSON, one track per measured run, which Perfetto and chrome://tracing open).
//!
//! In: the profile section, whose phase rows carry the medians and intervals the text's phase
//! table prints and whose raw runs carry each segment's CLOCK_MONOTONIC span. Out: the bytes of
//! the two files. Pure: both are drawn from the recording, so a saved document draws the same.
//!
//! A row's bar starts at the median, over the measured runs, of its first segment's start
//! relative to the run's exec (the kernel-exec segment's start); its dark bar is the phase's
//! median CPU (task-clock less the ptrace stops' cost, as the phase table), the light bar behind
//! it its median wall time, the whisker the 95% interval of the CPU median (the phase table's).
//! Runs recorded without segment spans are placed by the sum of the walls before each segment
//! (the subtitle says so). The exit teardown the counters do not see is a row of its own after
//! "main to exit": CPU only, since no wall time of it is recorded.
//!
//! Drawn by hand rather than through plotters (which draws the experiment's plots): its SVG
//! backend writes shapes only, and a timeline needs a `<title>` per bar for the hover figures
//! and data attributes a test (or a script) reads the figures back from.

use std::fmt::Write as _;

use crate::attribute::profile::{corrected, lost, per_stop_ns, ProfileSection};
use crate::attribute::stats::{summarize, Summary};
use crate::record::{Instrumentation, Phase, Run};

/// One row of the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// The phase's label ("relocation"), or "exit teardown".
    pub phase: String,
    /// The phase as the JSON names it ("relocation"); None for the exit teardown.
    pub key: Option<&'static str>,
    /// The object of a per-object phase, as the JSON names it (ld.so's l_name).
    pub object: Option<String>,
    /// Median start since the run's exec, ns; None when no run placed it.
    pub start_ns: Option<f64>,
    /// The phase row's CPU (median, interval) and wall, as in the JSON.
    pub cpu: Option<Summary>,
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

    fn end_ns(&self) -> f64 {
        let len = [
            self.cpu.as_ref().map(|s| s.ci95.1.max(s.median)),
            self.wall.as_ref().map(|s| s.median),
        ]
        .into_iter()
        .flatten()
        .fold(0.0, f64::max);
        self.start_ns.unwrap_or(0.0) + len
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

/// Each segment's start since the run's exec, ns: by its span when every segment has one,
/// else by the walls before it; and whether spans were used.
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
        _ => {
            let mut at = 0;
            let v = r
                .segments
                .iter()
                .map(|s| {
                    let here = at;
                    at += s.wall_ns;
                    here
                })
                .collect();
            (v, false)
        }
    }
}

/// The rows in time order (median start; ties in the phase table's order), and whether every
/// run was placed by its segments' spans.
pub fn bars(p: &ProfileSection) -> (Vec<Bar>, bool) {
    let runs = measured(p);
    let placed: Vec<(Vec<u64>, bool)> = runs.iter().map(|r| starts(r)).collect();
    let by_span = !placed.is_empty() && placed.iter().all(|(_, s)| *s);
    let mut out: Vec<Bar> = p
        .phases
        .iter()
        .map(|ph| {
            let firsts: Vec<f64> = runs
                .iter()
                .zip(&placed)
                .filter_map(|(r, (st, _))| {
                    r.segments
                        .iter()
                        .position(|s| s.phase == ph.phase && s.object == ph.object)
                        .map(|i| st[i] as f64)
                })
                .collect();
            Bar {
                phase: ph.phase.label().to_string(),
                key: Some(category(ph.phase)),
                object: ph.object.clone(),
                start_ns: summarize(&firsts).map(|s| s.median),
                cpu: ph.task_clock_ns.clone(),
                wall: ph.wall_ns.clone(),
            }
        })
        .collect();
    if let Some(exit) = &p.exit_uncounted_ns {
        // After the last segment: the exit stop ends "main to exit".
        let ends: Vec<f64> = runs
            .iter()
            .zip(&placed)
            .filter_map(|(r, (st, _))| {
                let last = r.segments.len().checked_sub(1)?;
                Some((st[last] + r.segments[last].wall_ns) as f64)
            })
            .collect();
        out.push(Bar {
            phase: EXIT_TEARDOWN.to_string(),
            key: None,
            object: None,
            start_ns: summarize(&ends).map(|s| s.median),
            cpu: Some(exit.clone()),
            wall: None,
        });
    }
    out.sort_by(|a, b| {
        let key = |b: &Bar| b.start_ns.unwrap_or(f64::INFINITY);
        key(a).total_cmp(&key(b))
    });
    (out, by_span)
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
    let (bars, by_span) = bars(p);
    let (w, left, right, top, row_h) = (1200.0, 330.0, 150.0, 92.0, 20.0);
    let plot_w = w - left - right;
    let end = bars.iter().map(Bar::end_ns).fold(0.0, f64::max).max(1.0);
    let x = |ns: f64| left + ns / end * plot_w;
    let h = top + bars.len() as f64 * row_h + 40.0;
    let mut top_rows: Vec<usize> = (0..bars.len()).filter(|&i| bars[i].cpu.is_some()).collect();
    top_rows.sort_by(|&a, &b| {
        let m = |i: usize| bars[i].cpu.as_ref().map_or(0.0, |s| s.median);
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
    let placed = if by_span {
        "bars at the median start since exec"
    } else {
        "bars placed by the walls before them (this recording has no segment times)"
    };
    let _ = writeln!(
        o,
        r##"<text id="ldcost-subtitle" x="{cx}" y="40" text-anchor="middle" fill="#555">{n} measured run{s}; {placed}; dark: CPU (median), light: wall (median), whisker: 95% interval of the CPU median</text>"##,
        cx = w / 2.0,
        n = p.runs,
        s = if p.runs == 1 { "" } else { "s" },
    );
    // The time axis, in ms.
    let step = tick_step(end, 8.0);
    let axis_y = top - 8.0;
    let _ = writeln!(o, r##"<g id="ldcost-axis" fill="#555" stroke="#ddd">"##);
    let mut t = 0.0;
    while t <= end + 1e-9 {
        let _ = writeln!(
            o,
            r#"<line x1="{X:.1}" y1="{axis_y}" x2="{X:.1}" y2="{y2}"/><text x="{X:.1}" y="{ty}" text-anchor="middle" stroke="none">{l} ms</text>"#,
            X = x(t),
            y2 = h - 34.0,
            ty = axis_y - 4.0,
            l = t.round() / 1e6,
        );
        t += step;
    }
    let _ = writeln!(o, "</g>");
    let _ = writeln!(o, r#"<g id="ldcost-bars">"#);
    for (i, b) in bars.iter().enumerate() {
        let y = top + i as f64 * row_h;
        let (dark, light) = colours(&b.phase);
        let start = b.start_ns.unwrap_or(0.0);
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
        let mut title = b.label();
        if let Some(o) = &b.object {
            let _ = write!(title, " ({o})");
        }
        match b.start_ns {
            Some(s) => {
                let _ = write!(title, "\nstarts at {} ms after exec (median)", ms(s));
            }
            None => title.push_str("\nstart: not available (in no measured run)"),
        }
        match &b.cpu {
            Some(c) => {
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
            None => title.push_str("\nCPU: not available (not counted)"),
        }
        match &b.wall {
            Some(wl) => {
                let _ = write!(attrs, r#" data-wall-ns="{}""#, wl.median);
                let _ = write!(title, "\nwall {} ms", ms(wl.median));
            }
            None if b.phase == EXIT_TEARDOWN => title.push_str(
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
        let _ = writeln!(
            o,
            r#"<text class="ldcost-row-label" x="{lx}" y="{ty}" text-anchor="end">{l}</text>"#,
            lx = left - 8.0,
            ty = y + 14.0,
            l = esc(&b.label()),
        );
        if let Some(wl) = &b.wall {
            let _ = writeln!(
                o,
                r#"<rect class="ldcost-wall" x="{X:.2}" y="{Y}" width="{W:.2}" height="16" fill="{light}"/>"#,
                X = x(start),
                Y = y + 2.0,
                W = (wl.median / end * plot_w).max(1.0),
            );
        }
        if let Some(c) = &b.cpu {
            let _ = writeln!(
                o,
                r#"<rect class="ldcost-cpu" x="{X:.2}" y="{Y}" width="{W:.2}" height="10" fill="{dark}"/>"#,
                X = x(start),
                Y = y + 5.0,
                W = (c.median / end * plot_w).max(1.0),
            );
            let (lo, hi) = (x(start + c.ci95.0), x(start + c.ci95.1));
            let cy = y + 10.0;
            let _ = writeln!(
                o,
                r##"<path class="ldcost-whisker" d="M{lo:.2},{cy} H{hi:.2} M{lo:.2},{a} V{b} M{hi:.2},{a} V{b}" stroke="#222" stroke-width="1" fill="none"/>"##,
                a = cy - 4.0,
                b = cy + 4.0,
            );
            if top_rows.contains(&i) {
                let text = format!("{} {} ms", b.label(), ms(c.median));
                // Right of the bar, or left of its start where it would leave the picture
                // (an average Verdana 11 px glyph is under 7 px wide).
                let width = text.chars().count() as f64 * 7.0;
                let after = x(b.end_ns()) + 6.0;
                let (lx, anchor) = if after + width <= w {
                    (after, "start")
                } else {
                    (x(start) - 6.0, "end")
                };
                let _ = writeln!(
                    o,
                    r#"<text class="ldcost-top-label" x="{lx:.2}" y="{ty}" text-anchor="{anchor}">{l}</text>"#,
                    ty = y + 14.0,
                    l = esc(&text),
                );
            }
        }
        let _ = writeln!(o, "</g>");
    }
    let _ = writeln!(o, "</g>");
    let _ = writeln!(
        o,
        r##"<text x="{left}" y="{ly}" fill="#555">The {n} costliest rows are labelled with their CPU; hover a row for its figures.</text>"##,
        ly = h - 12.0,
        n = top_rows.len(),
    );
    o.push_str("</svg>\n");
    o
}

/// The Chrome trace-event document: one track (tid) per measured run, one complete event per
/// segment at its start since that run's exec, lasting its wall time, with its CPU in the args.
pub fn trace(p: &ProfileSection, title: &str) -> Result<String, serde_json::Error> {
    let runs = measured(p);
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
        let (st, _) = starts(r);
        for (s, at) in r.segments.iter().zip(st) {
            let name = match &s.object {
                Some(o) => format!("{}: {}", s.phase.label(), short(o)),
                None => s.phase.label().to_string(),
            };
            let mut a = serde_json::Map::new();
            a.insert("wall_ns".into(), s.wall_ns.into());
            a.insert("ptrace_stops".into(), s.stops.into());
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
    }
    let doc = serde_json::json!({
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "title": title,
            "clock": "µs since each run's exec (CLOCK_MONOTONIC); dur is the segment's wall time without ldcost's stops",
        },
    });
    let mut s = serde_json::to_string_pretty(&doc)?;
    s.push('\n');
    Ok(s)
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
    fn bars_start_at_the_median_first_start_in_time_order() {
        // Run 1 starts at clock 1000, run 2 at 5000, run 3 at 9000; "ld.so other" comes
        // twice per run, before and after a relocation, and is placed by its first segment.
        let r = |o: u64, reloc_at: u64| {
            run(
                &[
                    ("kernel-exec", None, 100, 90, o),
                    ("ldso-other", None, 10, 10, o + 100),
                    ("relocation", Some("/lib/a.so"), 50, 40, o + reloc_at),
                    ("ldso-other", None, 10, 10, o + reloc_at + 60),
                    ("main-to-exit", None, 30, 20, o + 400),
                ],
                true,
                false,
            )
        };
        let mut killed = r(20_000, 1);
        killed.ending = crate::record::Ending::Killed(9);
        let p = section(vec![r(1000, 200), r(5000, 220), r(9000, 300), killed]);
        let (bars, by_span) = bars(&p);
        assert!(by_span);
        let got: Vec<(String, Option<f64>)> =
            bars.iter().map(|b| (b.label(), b.start_ns)).collect();
        assert_eq!(
            got,
            [
                ("kernel exec".to_string(), Some(0.0)),
                ("ld.so other".to_string(), Some(100.0)),
                // Median of 200, 220, 300: the killed run is not a measured one.
                ("relocation: a.so".to_string(), Some(220.0)),
                ("main to exit".to_string(), Some(400.0)),
            ]
        );
        let other = &bars[1];
        assert_eq!(other.wall.as_ref().map(|w| w.median), Some(20.0));
        assert_eq!(other.key, Some("ldso-other"));
        // The trace: three tracks, five events each, dur = wall in µs.
        let t: serde_json::Value = serde_json::from_str(&trace(&p, "t").unwrap()).unwrap();
        let xs: Vec<&serde_json::Value> = t["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .collect();
        assert_eq!(xs.len(), 15);
        assert_eq!(xs.iter().filter(|e| e["tid"] == 3).count(), 5);
        assert_eq!(xs[2]["ts"], 0.2);
        assert_eq!(xs[2]["dur"], 0.05);
        assert_eq!(xs[2]["args"]["cpu_ns"], 40.0);
        assert_eq!(xs[2]["cat"], "relocation");
    }

    #[test]
    fn without_spans_bars_follow_the_walls_and_the_subtitle_says_so() {
        let segs = [
            ("kernel-exec", None, 100, 90, 0),
            ("ldso-mapping", None, 40, 30, 0),
            ("main-to-exit", None, 30, 20, 0),
        ];
        let p = section(vec![run(&segs, false, false), run(&segs, false, false)]);
        let (bars, by_span) = bars(&p);
        assert!(!by_span);
        let starts: Vec<Option<f64>> = bars.iter().map(|b| b.start_ns).collect();
        assert_eq!(starts, [Some(0.0), Some(100.0), Some(140.0)]);
        let svg = svg(&p, "ldcost profile /bin/x");
        assert!(svg.contains("this recording has no segment times"), "{svg}");
        assert_eq!(svg.matches("class=\"ldcost-bar\"").count(), 3);
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
