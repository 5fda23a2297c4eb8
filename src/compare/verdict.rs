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
    /// "startup_cpu", "startup_wall", "fork_round_trip", "fork_child_cpu", "fork_parent_cpu".
    pub key: String,
    pub label: String,
    /// Whether it decides the verdict and `--fail-above` looks at it: the CPU figures
    /// (start-up CPU, the parent's CPU per fork). Wall times follow the machine's load and
    /// the ptrace stops' scheduling; they are shown, not judged.
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

/// Per-run start-up figures of a document: CPU (ns, execve → main) and wall (ns), and where
/// they come from. Boundaries-only runs are used when the document has them (a handful of
/// ptrace stops, nothing to correct); else the per-object runs, each segment less its
/// stops × the document's measured cost per stop.
pub fn startup_samples(doc: &Document) -> Option<(Vec<f64>, Vec<f64>, &'static str)> {
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
    let (mut cpu, mut wall) = (Vec::new(), Vec::new());
    // Runs that did not end as the program ends them are left out, as `profile` leaves them
    // out ([`crate::attribute::profile::lost`]): their figures stop where the kill came.
    for r in p
        .raw
        .iter()
        .filter(|r| r.instrumentation == inst && crate::attribute::profile::lost(r).is_none())
    {
        let segs: Vec<_> = r
            .segments
            .iter()
            .filter(|s| s.phase != Phase::MainToExit)
            .collect();
        if segs.is_empty() {
            continue;
        }
        let per_stop = if coarse {
            0.0
        } else {
            crate::attribute::profile::per_stop_ns(r, fallback).unwrap_or(0.0)
        };
        if segs.iter().all(|s| s.counters.task_clock_ns.is_some()) {
            cpu.push(
                segs.iter()
                    .map(|s| {
                        (s.counters.task_clock_ns.unwrap_or(0) as f64 - s.stops as f64 * per_stop)
                            .max(0.0)
                    })
                    .sum(),
            );
        }
        wall.push(segs.iter().map(|s| s.wall_ns as f64).sum());
    }
    Some((cpu, wall, source))
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

fn metric(
    key: &str,
    label: &str,
    gated: bool,
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
        gated,
        source: source.into(),
        change,
        missing,
    }
}

/// Computes the verdict.
pub fn verdict(base: &Document, head: &Document) -> Verdict {
    let mut metrics = Vec::new();
    let sb = startup_samples(base);
    let sh = startup_samples(head);
    let source = sb
        .as_ref()
        .or(sh.as_ref())
        .map(|s| s.2)
        .unwrap_or("exec runs");
    // A side whose every run of the kind the start-up figures come from was left out: not
    // measured, and why (never a figure made of runs that did not end).
    let lost_sides = {
        let why: Vec<String> = [("BASE", base, &sb), ("HEAD", head, &sh)]
            .into_iter()
            .filter(|(_, _, s)| s.as_ref().is_some_and(|s| s.1.is_empty()))
            .filter_map(|(side, d, s)| {
                let inst = kind_of(s.as_ref()?.2);
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
        type Pick = for<'a> fn(&'a (Vec<f64>, Vec<f64>, &'static str)) -> &'a Vec<f64>;
        let figures: [(&str, &str, bool, Pick, &str); 2] = [
            (
                "startup_cpu",
                "start-up CPU",
                true,
                |s| &s.0,
                "start-up CPU (task-clock)",
            ),
            (
                "startup_wall",
                "start-up wall",
                false,
                |s| &s.1,
                "start-up wall time",
            ),
        ];
        for (key, label, gated, pick, what) in figures {
            let mut m = metric(
                key,
                label,
                gated,
                source,
                sb.as_ref().map(|s| by_parity(pick(s))).as_ref(),
                sh.as_ref().map(|s| by_parity(pick(s))).as_ref(),
                what,
            );
            if let (None, Some(why)) = (&m.change, &lost_sides) {
                m.missing = Some(format!("{what}: {why}"));
            }
            metrics.push(m);
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
    let all_sig = |gated: bool| -> Vec<&Metric> {
        metrics
            .iter()
            .filter(|m| m.gated == gated && m.change.as_ref().is_some_and(|c| c.significant))
            .collect()
    };
    let sig = all_sig(true);
    let notes: Vec<String> = all_sig(false)
        .iter()
        .filter_map(|m| {
            let why = if m.key == "fork_child_cpu" {
                "the children's CPU informs; the parent's decides"
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
        .filter(|m| m.gated && m.change.is_none() && lost_sides.is_some())
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
        sig.iter()
            .filter_map(|m| direction(m))
            .collect::<Vec<_>>()
            .join("; ")
    };
    Verdict {
        summary,
        metrics,
        slower,
        faster,
        notes,
    }
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

/// Whether a significant slow-down of a gated metric exceeds `pct`.
pub fn fails_above(v: &Verdict, pct: f64) -> bool {
    v.metrics.iter().any(|m| {
        m.gated
            && m.change
                .as_ref()
                .is_some_and(|c| c.significant && c.change_pct > pct)
    })
}
