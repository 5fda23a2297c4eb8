//! The verdict: start-up CPU and wall, and with `--fork` the fork round trip and the parent's
//! CPU per fork, each BASE → HEAD with its [`Change`].
//!
//! In: two [`Document`]s. Out: [`Verdict`]. The per-run values are taken from the documents'
//! raw runs (not their summaries), so `diff` of two saved halves computes exactly what
//! `compare` computed.

use super::stats::{change_halves, Change};
use crate::record::{Instrumentation, Phase};
use crate::report::Document;

/// One figure of the verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// "total_cpu", "startup_cpu", "after_main_libraries", "main_cpu", "exit_cpu",
    /// "startup_wall", "fork_round_trip", "fork_child_cpu", "fork_parent_cpu".
    pub key: String,
    pub label: String,
    /// Whether it decides the verdict: the CPU figures (total CPU per exec and its parts, the
    /// parent's CPU per fork). Wall times follow the machine's load and the ptrace stops'
    /// scheduling; they are shown, not judged.
    pub judged: bool,
    /// Whether `--fail-above` looks at it ([`apply_gate`]): by default total CPU, start-up
    /// CPU and the parent's CPU per fork; `--gate` picks one.
    pub gated: bool,
    /// Where the values come from ("boundaries-only runs", "per-object runs", "fork loop").
    pub source: String,
    pub change: Option<Change>,
    /// Why there is no change (a document without the figure).
    pub missing: Option<String>,
}

/// The verdict of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// One line: "start-up CPU +31.2% [+28.0, +34.5] (p = 0.008); fork …" or
    /// "no significant change".
    pub summary: String,
    pub metrics: Vec<Metric>,
    /// Some gated metric changed significantly for the worse.
    pub slower: bool,
    pub faster: bool,
    /// Significant changes of the figures that do not decide (wall times), said apart.
    pub notes: Vec<String>,
}

/// Per-run figures of a document, one value per run that counted them, and where they come
/// from. Boundaries-only runs are used when the document has them (a handful of ptrace stops,
/// nothing to correct); else the per-object runs, each segment less its stops × the
/// document's measured cost per stop.
#[derive(Debug, Clone, Default)]
pub struct RunFigures {
    /// Start-up CPU (ns, execve → main): every segment before main.
    pub startup_cpu: Vec<f64>,
    /// Start-up wall time (ns).
    pub startup_wall: Vec<f64>,
    /// The program's own work (ns): the main → exit segment, with the CPU of the target's
    /// threads and child processes (counted apart, in no phase). When the program loaded
    /// libraries after `main`, ld.so's CPU after `main` (dlopen, dlclose, lazy binding: the
    /// part "libraries loaded after main", as `profile`'s summary splits it) is taken out, run
    /// by run, so these come from the per-object runs, the only ones that trace after `main`:
    /// each main → exit less its stops' cost, less that run's ld.so CPU after `main`. A
    /// boundaries-only run's main → exit less the per-object runs' ld.so figure would mix two
    /// kinds of run: the stops after `main` leave more in the per-object figure than the
    /// boundaries-only run spent, and the difference reads zero.
    pub main_cpu: Vec<f64>,
    /// Where `main_cpu` comes from, when not from `source`'s runs.
    pub main_source: Option<&'static str>,
    /// Exit teardown (ns): the target's CPU after its exit stop, by the scheduler
    /// ([`crate::record::Run::exit_ns`]); runs without it have none.
    pub exit_cpu: Vec<f64>,
    /// Total CPU per exec (ns): start-up + own work + exit teardown, for the runs that have
    /// all three (never a total without its teardown).
    pub total_cpu: Vec<f64>,
    pub source: &'static str,
}

/// [`RunFigures`] of a document (None: no exec runs).
pub fn run_figures(doc: &Document) -> Option<RunFigures> {
    let p = doc.profile.as_ref()?;
    let coarse = p
        .raw
        .iter()
        .any(|r| r.instrumentation == Instrumentation::Coarse);
    let (inst, source) = if coarse {
        (Instrumentation::Coarse, "boundaries-only runs")
    } else {
        (
            Instrumentation::PerObject,
            "per-object runs, less the ptrace stops' measured cost",
        )
    };
    let fallback = p.overhead.ns_per_stop_slope.or(p.overhead.ns_per_stop);
    // Whether the summary has a part "libraries loaded after main".
    let loader = p.section().after_main.part_ns().is_some();
    let mut f = RunFigures {
        source,
        ..Default::default()
    };
    // Runs that did not end as the program ends them are left out, as `profile` leaves them
    // out ([`crate::attribute::profile::lost`]): their figures stop where the kill came.
    for r in p
        .raw
        .iter()
        .filter(|r| r.instrumentation == inst && crate::attribute::profile::lost(r).is_none())
    {
        let (segs, main): (Vec<_>, Vec<_>) = r
            .segments
            .iter()
            .partition(|s| s.phase != Phase::MainToExit);
        if segs.is_empty() {
            continue;
        }
        let per_stop = if coarse {
            0.0
        } else {
            crate::attribute::profile::per_stop_ns(r, fallback).unwrap_or(0.0)
        };
        let cpu = |ss: &[&crate::record::Segment]| -> Option<f64> {
            ss.iter()
                .map(|s| {
                    s.counters
                        .task_clock_ns
                        .map(|t| (t as f64 - s.stops as f64 * per_stop).max(0.0))
                })
                .sum()
        };
        let start = cpu(&segs);
        f.startup_wall
            .push(segs.iter().map(|s| s.wall_ns as f64).sum());
        // The main → exit segment exists only when main was reached and the exit stop seen.
        let whole = match main.is_empty() {
            true => None,
            false => cpu(&main).map(|m| {
                m + r
                    .children
                    .as_ref()
                    .and_then(|c| c.task_clock_ns)
                    .unwrap_or(0) as f64
            }),
        };
        let own = whole.filter(|_| !loader);
        let exit = r.exit_ns.map(|e| e as f64);
        f.startup_cpu.extend(start);
        f.main_cpu.extend(own);
        f.exit_cpu.extend(exit);
        // The total keeps ld.so's work after main: it is the process's CPU.
        if let (Some(s), Some(m), Some(e)) = (start, whole, exit) {
            f.total_cpu.push(s + m + e);
        }
    }
    if loader {
        f.main_cpu = own_work_less_loader(p, fallback);
        f.main_source = Some(
            "per-object runs, each main → exit less its stops' cost and its ld.so CPU after main",
        );
    }
    Some(f)
}

/// The program's own work per per-object run that recorded the loader after `main`: main →
/// exit less its stops' cost, with the children's CPU, less the run's ld.so CPU after `main`
/// (never below zero). Where the profile took the stops after `main` out at their residue
/// too ([`crate::attribute::profile::residue`]), both figures are read as it read them, so
/// the own work is the summary's "the program".
fn own_work_less_loader(
    p: &crate::report::schema::profile::ProfileSection,
    fallback: Option<f64>,
) -> Vec<f64> {
    let adjusted = p
        .overhead
        .residue
        .map(|r| crate::attribute::profile::residue::apply(&p.raw, &r.into()));
    adjusted
        .as_deref()
        .unwrap_or(&p.raw)
        .iter()
        .filter(|r| {
            r.instrumentation == Instrumentation::PerObject
                && crate::attribute::profile::lost(r).is_none()
        })
        .filter_map(|r| {
            let a = r.after_main.as_ref()?;
            let per_stop = crate::attribute::profile::per_stop_ns(r, fallback).unwrap_or(0.0);
            let main: Option<f64> = r
                .segments
                .iter()
                .filter(|s| s.phase == Phase::MainToExit)
                .map(|s| crate::attribute::profile::corrected(s, per_stop))
                .reduce(|a, b| Some(a? + b?))?;
            let children = r
                .children
                .as_ref()
                .and_then(|c| c.task_clock_ns)
                .unwrap_or(0) as f64;
            Some((main? + children - a.loader_cpu_ns() as f64).max(0.0))
        })
        .collect()
}

/// Per-run start-up figures of a document: CPU (ns, execve → main) and wall (ns), and where
/// they come from ([`run_figures`]).
pub fn startup_samples(doc: &Document) -> Option<(Vec<f64>, Vec<f64>, &'static str)> {
    run_figures(doc).map(|f| (f.startup_cpu, f.startup_wall, f.source))
}

/// The kind of run [`startup_samples`] took its figures from, by the source it named.
fn kind_of(source: &str) -> Instrumentation {
    if source.starts_with("boundaries-only") {
        Instrumentation::Coarse
    } else {
        Instrumentation::PerObject
    }
}

/// Values with the half (0/1) each belongs to for the noise floor.
type Halved = (Vec<f64>, Vec<u8>);

/// Start-up: one value per run, runs alternate in time: odd and even runs.
fn by_parity(v: &[f64]) -> Halved {
    (v.to_vec(), (0..v.len()).map(|i| (i % 2) as u8).collect())
}

/// Fork: with several interleaved loops per side (`compare`), the unit is the loop: one value
/// per loop, its median fork, halves by the loop's parity. The forks of one loop share its
/// moment's machine load, so they are not independent draws: 600 forks in 6 loops are 6
/// observations of the load, and an A/A comparison that treated them as 600 called 2 of 5
/// runs significant here. With one loop per side (`profile --fork` documents), every fork
/// is a value, halves are the loop's first and second half.
fn fork_halves(v: &[u64], chunks: &[u64]) -> Halved {
    if chunks.len() >= 2 && chunks.iter().sum::<u64>() == v.len() as u64 {
        let mut at = 0usize;
        let mut meds = Vec::new();
        for n in chunks {
            let part: Vec<f64> = v[at..at + *n as usize].iter().map(|x| *x as f64).collect();
            at += *n as usize;
            meds.extend(crate::stats::median(&part));
        }
        return by_parity(&meds);
    }
    let vals: Vec<f64> = v.iter().map(|x| *x as f64).collect();
    let half = (0..v.len()).map(|i| (2 * i >= v.len()) as u8).collect();
    (vals, half)
}

/// Where fork figures come from.
fn fork_source(s: Option<&crate::report::schema::fork::ForkSamples>) -> &'static str {
    match s {
        Some(s) if s.chunks.len() >= 2 => "interleaved fork loops, one median per loop",
        _ => "one fork loop per side, per fork",
    }
}

/// The figures `--fail-above` looks at without `--gate`.
pub const DEFAULT_GATE: [&str; 3] = ["total_cpu", "startup_cpu", "fork_parent_cpu"];

fn metric(
    key: &str,
    label: &str,
    judged: bool,
    source: &str,
    b: Option<&Halved>,
    h: Option<&Halved>,
    what: &str,
) -> Metric {
    let (change, missing) = match (b, h) {
        (Some(b), Some(h)) if !b.0.is_empty() && !h.0.is_empty() => {
            match change_halves(&b.0, &b.1, &h.0, &h.1) {
                Some(c) => (Some(c), None),
                None => (None, Some(format!("{what}: BASE's median is zero"))),
            }
        }
        (None, _) | (Some(_), None) | (Some(_), Some(_)) => {
            let side = match (
                b.is_some_and(|v| !v.0.is_empty()),
                h.is_some_and(|v| !v.0.is_empty()),
            ) {
                (false, false) => "neither document",
                (false, true) => "BASE",
                _ => "HEAD",
            };
            (None, Some(format!("{what}: not in {side}")))
        }
    };
    Metric {
        key: key.into(),
        label: label.into(),
        judged,
        gated: DEFAULT_GATE.contains(&key),
        source: source.into(),
        change,
        missing,
    }
}

/// ld.so's CPU after `main` per measured (per-object) run, or why there is none.
fn after_main_runs(doc: &Document) -> Result<(Vec<f64>, bool), String> {
    let p = doc.profile.as_ref().ok_or("no profile section")?;
    let a = p.section().after_main;
    if let crate::attribute::after_main::Seen::NotAvailable(why) = &a.seen {
        return Err(why.clone());
    }
    // Read as the section is: less the residue per stop where one was taken out.
    let adjusted = p
        .overhead
        .residue
        .map(|r| crate::attribute::profile::residue::apply(&p.raw, &r.into()));
    let runs: Vec<f64> = adjusted
        .as_deref()
        .unwrap_or(&p.raw)
        .iter()
        .filter(|r| r.instrumentation == crate::record::Instrumentation::PerObject)
        .filter(|r| crate::attribute::profile::lost(r).is_none())
        .filter_map(|r| r.after_main.as_ref())
        .map(|a| a.loader_cpu_ns() as f64)
        .collect();
    Ok((runs, a.any_dlopen()))
}

/// "libraries loaded after main": ld.so's CPU after `main`, BASE → HEAD, from the per-object
/// runs; "none" when neither side called dlopen after main, "not measured (why)" when a
/// side did not measure it: never a change made of zeros.
fn after_main_metric(base: &Document, head: &Document) -> Metric {
    const KEY: &str = "after_main_libraries";
    const LABEL: &str = "libraries loaded after main";
    const SOURCE: &str = "per-object runs (the dlopen and dlclose calls after main)";
    let missing = |why: String| Metric {
        key: KEY.into(),
        label: LABEL.into(),
        judged: false,
        gated: DEFAULT_GATE.contains(&KEY),
        source: SOURCE.into(),
        change: None,
        missing: Some(why),
    };
    match (after_main_runs(base), after_main_runs(head)) {
        (Err(b), _) => missing(format!("not measured (BASE: {b})")),
        (_, Err(h)) => missing(format!("not measured (HEAD: {h})")),
        (Ok((_, false)), Ok((_, false))) => {
            missing("none (no dlopen after main on either side)".into())
        }
        (Ok((b, _)), Ok((h, _))) => {
            let mut m = metric(
                KEY,
                LABEL,
                false,
                SOURCE,
                Some(&by_parity(&b)),
                Some(&by_parity(&h)),
                "ld.so's CPU after main",
            );
            m.gated = DEFAULT_GATE.contains(&KEY);
            m
        }
    }
}

/// Computes the verdict.
pub fn verdict(base: &Document, head: &Document) -> Verdict {
    let mut metrics = Vec::new();
    let sb = run_figures(base);
    let sh = run_figures(head);
    let source = sb
        .as_ref()
        .or(sh.as_ref())
        .map(|s| s.source)
        .unwrap_or("exec runs");
    // A side whose every run of the kind the figures come from was left out: not measured,
    // and why (never a figure made of runs that did not end).
    let lost_sides = {
        let why: Vec<String> = [("BASE", base, &sb), ("HEAD", head, &sh)]
            .into_iter()
            .filter(|(_, _, s)| s.as_ref().is_some_and(|s| s.startup_cpu.is_empty()))
            .filter_map(|(side, d, s)| {
                let inst = kind_of(s.as_ref()?.source);
                let lost: Vec<String> = d
                    .profile
                    .as_ref()?
                    .left_out
                    .iter()
                    .filter(|l| l.instrumentation == inst)
                    .map(|l| l.describe())
                    .collect();
                (!lost.is_empty()).then(|| format!("{side} not measured ({})", lost.join("; ")))
            })
            .collect();
        (!why.is_empty()).then(|| why.join("; "))
    };
    if sb.is_some() || sh.is_some() {
        type Pick = for<'a> fn(&'a RunFigures) -> &'a Vec<f64>;
        let figures: [(&str, &str, bool, Pick, &str); 5] = [
            (
                "total_cpu",
                "total CPU per exec",
                true,
                |s| &s.total_cpu,
                "total CPU per exec (execve to the end of exit teardown)",
            ),
            (
                "startup_cpu",
                "start-up CPU",
                true,
                |s| &s.startup_cpu,
                "start-up CPU (task-clock)",
            ),
            (
                "main_cpu",
                "own work after main",
                true,
                |s| &s.main_cpu,
                "the program's own work (main → exit, less ld.so's work after main)",
            ),
            (
                "exit_cpu",
                "exit teardown",
                true,
                |s| &s.exit_cpu,
                "exit teardown (the scheduler's CPU after the exit stop)",
            ),
            (
                "startup_wall",
                "start-up wall",
                false,
                |s| &s.startup_wall,
                "start-up wall time",
            ),
        ];
        for (key, label, judged, pick, what) in figures {
            let mut m = metric(
                key,
                label,
                judged,
                source,
                sb.as_ref().map(|s| by_parity(pick(s))).as_ref(),
                sh.as_ref().map(|s| by_parity(pick(s))).as_ref(),
                what,
            );
            if let (None, Some(why)) = (&m.change, &lost_sides) {
                m.missing = Some(format!("{what}: {why}"));
            }
            if key == "main_cpu" {
                let other = |s: &Option<RunFigures>| s.as_ref().and_then(|s| s.main_source);
                if let Some(s) = other(&sb).or(other(&sh)) {
                    m.source = s.into();
                }
            }
            metrics.push(m);
            if key == "startup_cpu" {
                // ld.so's work after main (dlopen, dlclose, lazy binding) is its own part, out
                // of the program's own work: shown from the per-object runs, not judged.
                metrics.push(after_main_metric(base, head));
            }
        }
    }
    let fb = base.fork.as_ref().and_then(|f| f.samples.as_ref());
    let fh = head.fork.as_ref().and_then(|f| f.samples.as_ref());
    if base.fork.is_some() && head.fork.is_some() {
        let (rb, rh) = (
            fb.map(|s| fork_halves(&s.round_trip_ns, &s.chunks)),
            fh.map(|s| fork_halves(&s.round_trip_ns, &s.chunks)),
        );
        let (pb, ph) = (
            fb.map(|s| fork_halves(&s.parent_cpu_ns, &s.chunks)),
            fh.map(|s| fork_halves(&s.parent_cpu_ns, &s.chunks)),
        );
        metrics.push(metric(
            "fork_round_trip",
            "fork round trip",
            false,
            fork_source(fb),
            rb.as_ref(),
            rh.as_ref(),
            "per-fork samples",
        ));
        // The child's CPU (its faults, lazy binding, exit): shown, not judged; older documents
        // and `--spawn vfork`'s exec'd children may lack it.
        let child = |s: Option<&crate::report::schema::fork::ForkSamples>| {
            s.filter(|s| s.child_cpu_ns.len() == s.round_trip_ns.len())
                .map(|s| fork_halves(&s.child_cpu_ns, &s.chunks))
        };
        let (cb, ch) = (child(fb), child(fh));
        if cb.is_some() || ch.is_some() {
            metrics.push(metric(
                "fork_child_cpu",
                "fork child CPU",
                false,
                fork_source(fb),
                cb.as_ref(),
                ch.as_ref(),
                "per-fork child CPU",
            ));
        }
        metrics.push(metric(
            "fork_parent_cpu",
            "fork parent CPU",
            true,
            fork_source(fb),
            pb.as_ref(),
            ph.as_ref(),
            "per-fork samples",
        ));
    }
    let all_sig = |judged: bool| -> Vec<&Metric> {
        metrics
            .iter()
            .filter(|m| m.judged == judged && m.change.as_ref().is_some_and(|c| c.significant))
            .collect()
    };
    let sig = all_sig(true);
    let notes: Vec<String> = all_sig(false)
        .iter()
        .filter_map(|m| {
            let why = if m.key == "fork_child_cpu" {
                "the children's CPU informs; the parent's decides"
            } else if m.key == "after_main_libraries" {
                "measured in the per-object runs, whose stops after main it may still hold, so \
                 it informs; the total decides"
            } else {
                "wall time follows the machine's load, so it informs but does not decide"
            };
            Some(format!("{}; {why}", direction(m)?))
        })
        .collect();
    let slower = sig
        .iter()
        .any(|m| m.change.as_ref().is_some_and(|c| c.change_pct > 0.0));
    let faster = sig
        .iter()
        .any(|m| m.change.as_ref().is_some_and(|c| c.change_pct < 0.0));
    let unjudged: Vec<&str> = metrics
        .iter()
        .filter(|m| m.judged && m.change.is_none() && lost_sides.is_some())
        .filter_map(|m| m.missing.as_deref())
        .collect();
    let summary = if sig.is_empty() {
        let measured = metrics.iter().filter(|m| m.change.is_some()).count();
        if !unjudged.is_empty() {
            format!("cannot judge: {}", unjudged.join("; "))
        } else if measured == 0 {
            "nothing to compare: neither start-up nor fork was measured in both".to_string()
        } else {
            "no significant change".to_string()
        }
    } else {
        summary_of(&metrics, &sig)
    };
    Verdict {
        summary,
        metrics,
        slower,
        faster,
        notes,
    }
}

/// The parts of an exec's CPU, in the order they happen.
const PARTS: [&str; 3] = ["startup_cpu", "main_cpu", "exit_cpu"];

/// How the summary names a figure: "start-up CPU (execve → main)".
fn phrase(m: &Metric) -> String {
    match m.key.as_str() {
        "startup_cpu" => "start-up CPU (execve → main)".into(),
        "main_cpu" => "the program's own work after main".into(),
        "exit_cpu" => "exit teardown".into(),
        _ => m.label.clone(),
    }
}

/// The summary of significant judged figures: the exec part that changed most (by its
/// median's change in ns; total CPU when no part alone is significant) first, "HEAD 28.4%
/// faster in the program's own work after main (…)", then the other significant figures,
/// and "start-up unchanged" when start-up was measured and did not change significantly.
fn summary_of(metrics: &[Metric], sig: &[&Metric]) -> String {
    let size = |m: &Metric| {
        m.change
            .as_ref()
            .map_or(0.0, |c| (c.head_median - c.base_median).abs())
    };
    let lead = sig
        .iter()
        .filter(|m| PARTS.contains(&m.key.as_str()))
        .max_by(|a, b| size(a).total_cmp(&size(b)))
        .or_else(|| sig.iter().find(|m| m.key == "total_cpu"))
        .or_else(|| sig.first())
        .copied();
    let mut out = Vec::new();
    if let Some(m) = lead {
        if let Some(c) = &m.change {
            out.push(format!(
                "HEAD {:.1}% {} in {} ({})",
                c.change_pct.abs(),
                if c.change_pct > 0.0 {
                    "slower"
                } else {
                    "faster"
                },
                phrase(m),
                describe(c)
            ));
        }
    }
    out.extend(
        sig.iter()
            .filter(|m| Some(m.key.as_str()) != lead.map(|l| l.key.as_str()))
            .filter_map(|m| direction(m)),
    );
    let startup_measured_unchanged = metrics
        .iter()
        .any(|m| m.key == "startup_cpu" && m.change.as_ref().is_some_and(|c| !c.significant));
    if startup_measured_unchanged {
        out.push("start-up unchanged".into());
    }
    out.join("; ")
}

/// "start-up CPU slower (+31.2% [+28.0%, +34.5%], p = 0.008)" for a metric with a change; None
/// without one.
fn direction(m: &Metric) -> Option<String> {
    let c = m.change.as_ref()?;
    let way = if c.change_pct > 0.0 {
        "slower"
    } else {
        "faster"
    };
    Some(format!("{} {way} ({})", m.label, describe(c)))
}

/// "+31.2% [+28.0%, +34.5%], p = 0.008".
pub fn describe(c: &Change) -> String {
    format!(
        "{:+.1}% [{:+.1}%, {:+.1}%], p {}",
        c.change_pct,
        c.ci95_pct.0,
        c.ci95_pct.1,
        p_text(c.p_value)
    )
}

/// "< 0.001" or "= 0.042" (after a "p").
pub fn p_text(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("= {p:.3}")
    }
}

/// Marks the figures `--fail-above` looks at: `only` one (`--gate`), else [`DEFAULT_GATE`].
pub fn apply_gate(v: &mut Verdict, only: Option<crate::config::GateKind>) {
    for m in &mut v.metrics {
        m.gated = match only {
            Some(g) => m.key == g.key(),
            None => DEFAULT_GATE.contains(&m.key.as_str()),
        };
    }
}

/// The gate's result: None when it passed, else why it failed ("total CPU per exec +12.0%
/// > 5%", or a gated figure `--gate` asked for that is not in both documents).
pub fn gate_failure(
    v: &Verdict,
    pct: f64,
    only: Option<crate::config::GateKind>,
) -> Option<String> {
    let over: Vec<String> = v
        .metrics
        .iter()
        .filter(|m| m.gated)
        .filter_map(|m| {
            let c = m.change.as_ref()?;
            (c.significant && c.change_pct > pct)
                .then(|| format!("{} {:+.1}% > {pct}%", m.label, c.change_pct))
        })
        .collect();
    if !over.is_empty() {
        return Some(over.join(", "));
    }
    // A figure asked for by name that cannot be judged fails: a gate that cannot look must
    // not pass.
    let g = only?;
    match v.metrics.iter().find(|m| m.key == g.key()) {
        Some(m) if m.change.is_some() => None,
        Some(m) => Some(format!(
            "{}: {}",
            m.label,
            m.missing.as_deref().unwrap_or("not measured")
        )),
        None => Some(format!("{}: not measured in both documents", g.key())),
    }
}

/// The labels of the figures the gate looks at.
pub fn gated_labels(v: &Verdict) -> Vec<String> {
    v.metrics
        .iter()
        .filter(|m| m.gated)
        .map(|m| m.label.clone())
        .collect()
}
