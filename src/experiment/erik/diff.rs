//! erik's differential flame graphs: where k = 100 libraries' forks spend what k = 0's do not,
//! with the footprint held equal.
//!
//! In: the series-A drivers for k = 0 and k = 100 (same VMAs of each kind, same page tables,
//! same resident pages), still paused after the measured rounds. Out: for the child leaving by
//! `exit()` and by `_exit`, a [`DiffGraph`]: inferno's differential SVG (BASE k = 0, HEAD
//! k = 100; widths k = 100's; red: k = 100 spends more per fork, blue: less), its negated
//! companion drawn with k = 0's widths and the same colours (so a frame only k = 0 has is
//! drawn, blue: inferno's differential mode cannot show it in the first), their two-column
//! folded text, and the frames whose own samples grew and fell most, for the report's
//! sentences on what is red and what is blue.
//!
//! The sampling is `profile --fork --sample`'s: the same [`Sampler`] (system-wide on every CPU
//! as root, so the children's exit teardown is seen; per-task otherwise, and the graph says
//! so), the same frequency default capped by `kernel.perf_event_max_sample_rate`, the same
//! symbolizer, and the same categorised stacks ([`breakdown`] of section `fork`, the child's
//! samples labelled `child`, a symbol lookup in a child counted as lazy binding). The units are
//! the driver's blocks of forks, timed by ldcost with CLOCK_MONOTONIC (the sampler's clock)
//! around each `run` command. These loops are sampled after the measured ones and their
//! timings are not used: sampling costs the forks CPU. Counts, not times, are compared: the
//! graph divides each side's samples by its own forks ([`diff::Units`]).

use crate::attribute::breakdown::{breakdown, Unit};
use crate::attribute::FoldedStack;
use crate::perf::sampler::Symbolizer;
use crate::perf::{Recording, Sampler, SamplerConfig, Scope};
use crate::report::flamegraph::{diff, FlameOptions};
use crate::report::schema::experiment as doc;

use super::super::section::{Flamegraph, Section, Skipped};
use super::driver::{Driver, Exit};
use super::MAX_LIBS;

/// One side of a differential graph: the categorised stacks of its sampled forks.
#[derive(Debug, Clone)]
pub struct Side {
    pub libs: u32,
    pub stacks: Vec<FoldedStack>,
    /// Samples inside the forks' blocks.
    pub samples: u64,
    /// Forks the blocks cover.
    pub forks: u64,
    /// The sampled blocks' wall time, summed (CLOCK_MONOTONIC around each block).
    pub wall_ns: u64,
    /// What the recording says about itself (per-task fallback, lost records).
    pub notes: Vec<String>,
}

/// The differential flame graph of one way of leaving.
#[derive(Debug, Clone)]
pub struct DiffGraph {
    pub exit: Exit,
    pub file_name: String,
    /// The sampler's requested frequency: samples ÷ it is CPU time.
    pub frequency_hz: u64,
    pub base: Side,
    pub head: Side,
    /// `section;category;frames… BASE HEAD`, samples per 1000 forks (what inferno drew).
    pub folded: String,
    /// Widths k = 100's (HEAD).
    pub svg: String,
    /// The negated graph: widths k = 0's (BASE), colours as in `svg`.
    pub negated_file_name: String,
    pub negated_svg: String,
    /// Frames by the growth of their own samples (HEAD − BASE, per 1000 forks), largest
    /// first, positive only.
    pub red: Growth,
    /// The same by category.
    pub red_categories: Growth,
    /// Frames by the fall of their own samples (BASE − HEAD, per 1000 forks): what k = 0
    /// spends more on, largest first, positive only.
    pub blue: Growth,
}

/// The file a graph is written to: `erik-diff-exit.svg`, `erik-diff-_exit.svg`.
pub fn file_name(exit: Exit) -> String {
    format!("erik-diff-{}.svg", exit.key())
}

/// The negated graph's file: `erik-diff-exit-k0.svg`, `erik-diff-_exit-k0.svg`.
pub fn negated_file_name(exit: Exit) -> String {
    format!("erik-diff-{}-k0.svg", exit.key())
}

/// The sampler's settings: `profile --sample`'s defaults (10 kHz capped at 20 kHz and at
/// `kernel.perf_event_max_sample_rate`, its memory budget and deadline).
pub fn sampler_config() -> SamplerConfig {
    let sysctl = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    SamplerConfig {
        frequency_hz: crate::config::capped_frequency(
            10_000,
            crate::config::MAX_FREQUENCY_HZ,
            sysctl,
        ),
        deadline: Some(std::time::Duration::from_secs_f64(
            crate::config::SAMPLE_DEADLINE_S,
        )),
        budget_bytes: Some(crate::config::SAMPLE_BUDGET_MB << 20),
        ..SamplerConfig::default()
    }
}

/// CLOCK_MONOTONIC in ns: the clock of the sampler's records.
fn mono_ns() -> u64 {
    let mut ts = nix::libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into a live local.
    unsafe { nix::libc::clock_gettime(nix::libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Starts the sampler on `pid`'s tree: system-wide, or per-task when that is refused.
fn start(cfg: &SamplerConfig, pid: i32) -> Result<Sampler, String> {
    match Sampler::start(cfg, pid) {
        Ok(s) => Ok(s),
        Err(e) if e.is_denied() && cfg.scope == Scope::SystemWide => {
            let per_task = SamplerConfig {
                scope: Scope::PerTask,
                ..cfg.clone()
            };
            Sampler::start(&per_task, pid).map_err(|e2| format!("{e}; per-task: {e2}"))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Samples `blocks` × `block` forks of `driver` leaving by `exit`.
pub fn sample_side(
    driver: &mut Driver,
    libs: u32,
    exit: Exit,
    blocks: u32,
    block: u32,
    cfg: &SamplerConfig,
    symbolizer: &mut Symbolizer,
) -> Result<Side, String> {
    let sampler = start(cfg, driver.pid)?;
    let mut units = Vec::with_capacity(blocks as usize);
    let mut failed = None;
    for _ in 0..blocks {
        let t0 = mono_ns();
        if let Err(e) = driver.run(exit, block) {
            failed = Some(e.to_string());
            break;
        }
        units.push(Unit {
            start_ns: t0,
            end_ns: mono_ns(),
            per_unit: f64::from(block),
            phases: Vec::new(),
            main_pid: driver.pid,
        });
    }
    let rec: Recording = sampler.stop().map_err(|e| e.to_string())?;
    if let Some(e) = failed {
        return Err(e);
    }
    let stacks = symbolizer.symbolize(&rec, &rec.maps_at_start);
    let (b, folded) = breakdown("fork", &stacks, &units, "child", true);
    let mut notes = crate::attribute::breakdown::recording_notes(&[&rec]);
    notes.extend(rec.notes.iter().cloned());
    notes.sort();
    notes.dedup();
    let wall_ns = units.iter().map(|u| u.end_ns - u.start_ns).sum();
    Ok(Side {
        libs,
        stacks: folded,
        samples: b.samples,
        forks: b.covered as u64,
        wall_ns,
        notes,
    })
}

/// Names with their growth in samples per 1000 forks, largest first.
/// The lines of a two-column folded text as (stack, BASE, HEAD); lines that are not are skipped.
fn columns(folded: &str) -> impl Iterator<Item = (&str, i64, i64)> {
    folded.lines().filter_map(|l| {
        let mut w = l.rsplitn(3, ' ');
        let (h, b, stack) = (w.next()?, w.next()?, w.next()?);
        Some((stack, b.parse::<i64>().ok()?, h.parse::<i64>().ok()?))
    })
}

pub type Growth = Vec<(String, i64)>;

/// HEAD − BASE of each frame's own samples (a folded line's last frame) and of each category
/// (its second frame), from the two-column folded text.
type Deltas = std::collections::BTreeMap<String, i64>;

fn deltas(folded: &str) -> (Deltas, Deltas) {
    let mut frames = Deltas::new();
    let mut cats = Deltas::new();
    for (stack, b, h) in columns(folded) {
        let parts: Vec<&str> = stack.split(';').collect();
        if let Some(leaf) = parts.last() {
            *frames.entry((*leaf).to_string()).or_default() += h - b;
        }
        if let Some(c) = parts.get(1) {
            *cats.entry((*c).to_string()).or_default() += h - b;
        }
    }
    (frames, cats)
}

/// The entries whose delta times `sign` is positive, as that product, largest first, ties by
/// name.
fn largest(m: &Deltas, sign: i64) -> Growth {
    let mut v: Vec<(String, i64)> = m
        .iter()
        .map(|(k, d)| (k.clone(), d * sign))
        .filter(|(_, d)| *d > 0)
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// The growth of each frame's own samples (a folded line's last frame) and of each category
/// (its second frame), HEAD − BASE, from the two-column folded text; positive only, largest
/// first, ties by name.
pub fn growth(folded: &str) -> (Growth, Growth) {
    let (frames, cats) = deltas(folded);
    (largest(&frames, 1), largest(&cats, 1))
}

/// The fall of each frame's own samples, BASE − HEAD (what BASE spends more on); positive
/// only, largest first, ties by name.
pub fn shrinkage(folded: &str) -> Growth {
    largest(&deltas(folded).0, -1)
}

/// Draws the graph of `base` (k = 0) against `head` (k = 100), sampled at `frequency_hz`.
pub fn graph(exit: Exit, frequency_hz: u64, base: Side, head: Side) -> Result<DiffGraph, String> {
    let bu = diff::Units {
        exec: 0,
        fork: base.forks,
    };
    let hu = diff::Units {
        exec: 0,
        fork: head.forks,
    };
    let folded =
        diff::folded_diff(&base.stacks, bu, &head.stacks, hu).map_err(|e| e.to_string())?;
    let opts = FlameOptions {
        title: format!(
            "erik: fork with the child leaving by {}, {} vs {} libraries, same footprint",
            exit.label(),
            head.libs,
            base.libs
        ),
        subtitle: Some(format!(
            "BASE k = {}: {} samples over {} forks; HEAD k = {}: {} samples over {} forks",
            base.libs, base.samples, base.forks, head.libs, head.samples, head.forks
        )),
    };
    let mut svg = Vec::new();
    let widths = diff::Widths::Head;
    diff::write_diff_svg(&base.stacks, bu, &head.stacks, hu, widths, &opts, &mut svg)
        .map_err(|e| e.to_string())?;
    let svg = String::from_utf8(svg).map_err(|e| e.to_string())?;
    let negated_opts = FlameOptions {
        title: format!("{}, drawn with k = {}'s widths", opts.title, base.libs),
        subtitle: opts.subtitle.clone(),
    };
    let mut negated = Vec::new();
    diff::write_diff_svg(
        &base.stacks,
        bu,
        &head.stacks,
        hu,
        diff::Widths::Base,
        &negated_opts,
        &mut negated,
    )
    .map_err(|e| e.to_string())?;
    let negated_svg = String::from_utf8(negated).map_err(|e| e.to_string())?;
    let (red, red_categories) = growth(&folded);
    let blue = shrinkage(&folded);
    Ok(DiffGraph {
        exit,
        file_name: file_name(exit),
        frequency_hz,
        base,
        head,
        folded,
        svg,
        negated_file_name: negated_file_name(exit),
        negated_svg,
        red,
        red_categories,
        blue,
    })
}

/// Frames of the walk over every object at `exit()`: glibc's `_dl_fini`, the destructors it
/// calls in each object (crtstuff's `__do_global_dtors_aux` and the `deregister_tm_clones` it
/// calls, `_fini`) and libc's exit handlers.
pub const EXIT_WALK: [&str; 8] = [
    "__run_exit_handlers",
    "_dl_fini",
    "_dl_call_fini",
    "__do_global_dtors_aux",
    "deregister_tm_clones",
    "register_tm_clones",
    "_fini",
    "__cxa_finalize",
];

/// Frames of a symbol lookup by ld.so (the lazy binding of `exit` in the child).
pub const LOOKUP: [&str; 5] = [
    "_dl_fixup",
    "_dl_lookup_symbol_x",
    "do_lookup_x",
    "check_match",
    "_dl_runtime_resolve_xsavec",
];

/// HEAD − BASE over all lines, and over the lines through [`EXIT_WALK`] and (of the rest)
/// through [`LOOKUP`] or in the `lazy binding` category: (total, walk, lookup).
pub fn growth_where(folded: &str) -> (i64, i64, i64) {
    let (mut total, mut walk, mut lookup) = (0, 0, 0);
    for (stack, b, h) in columns(folded) {
        let d = h - b;
        total += d;
        let frames: Vec<&str> = stack.split(';').collect();
        if frames.iter().any(|f| EXIT_WALK.contains(f)) {
            walk += d;
        } else if frames.iter().any(|f| LOOKUP.contains(f))
            || frames.get(1) == Some(&crate::attribute::categories::Category::LazyBinding.label())
        {
            lookup += d;
        }
    }
    (total, walk, lookup)
}

/// A frame's name as the graph shows it (inferno drops the `_[k]` of kernel frames).
fn shown(frame: &str) -> String {
    match frame.strip_suffix("_[k]") {
        Some(f) => format!("{f} (kernel)"),
        None => frame.to_string(),
    }
}

/// The sentence the report prints under a graph: what is red, in samples per 1000 forks.
pub fn what_is_red(g: &DiffGraph) -> String {
    let list = |v: &[(String, i64)], n: usize| {
        v.iter()
            .take(n)
            .map(|(f, d)| format!("`{}` +{d}", shown(f)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if g.red.is_empty() {
        return format!(
            "With {}, nothing is red: no frame has more samples per 1000 forks with {} \
             libraries than with {}.",
            g.exit.label(),
            g.head.libs,
            g.base.libs
        );
    }
    let (total, walk, lookup) = growth_where(&g.folded);
    let (b, h) = totals(&g.folded);
    let pct = |x: i64| format!("{:.0}%", 100.0 * x as f64 / total.max(1) as f64);
    let mut out = format!(
        "With {}, {} libraries take {h} samples per 1000 forks and {} take {b} at the same \
         footprint ({total:+})",
        g.exit.label(),
        g.head.libs,
        g.base.libs,
    );
    if total > 0 {
        out.push_str(&format!(
            "; of the growth, {} is in stacks through the walk over every object at exit \
             (`_dl_fini` and each object's destructors, page faults included) and {} in \
             ld.so's symbol lookup",
            pct(walk),
            pct(lookup)
        ));
    }
    out.push_str(&format!(
        "; red by category: {}; by frame: {}.",
        list(&g.red_categories, 3),
        list(&g.red, 5)
    ));
    out
}

/// The sentence under the negated graph: what is blue (k = 0 spends more), in samples per
/// 1000 forks, and which of those frames k = 100 does not have at all.
pub fn what_is_blue(g: &DiffGraph) -> String {
    let mut out = format!(
        "The same comparison drawn with k = {}'s widths, so frames only k = {} has are drawn \
         too; colours as above (red: k = {} spends more in the frame's own code, blue: less).",
        g.base.libs, g.base.libs, g.head.libs
    );
    if g.blue.is_empty() {
        out.push_str(&format!(
            " Nothing is blue: no frame has more samples per 1000 forks with {} libraries than \
             with {}.",
            g.base.libs, g.head.libs
        ));
        return out;
    }
    let in_head: std::collections::BTreeSet<&str> = columns(&g.folded)
        .filter(|(_, _, h)| *h > 0)
        .flat_map(|(stack, _, _)| stack.split(';'))
        .collect();
    let list = g
        .blue
        .iter()
        .take(5)
        .map(|(f, d)| format!("`{}` -{d}", shown(f)))
        .collect::<Vec<_>>()
        .join(", ");
    out.push_str(&format!(" With {}, blue by frame: {list}", g.exit.label()));
    let only: Vec<String> = g
        .blue
        .iter()
        .filter(|(f, _)| !in_head.contains(f.as_str()))
        .take(5)
        .map(|(f, _)| format!("`{}`", shown(f)))
        .collect();
    if only.is_empty() {
        out.push('.');
    } else {
        out.push_str(&format!(
            "; only k = {} has {} (not drawn in the first graph).",
            g.base.libs,
            only.join(", ")
        ));
    }
    out
}

/// The BASE and HEAD columns' sums of a two-column folded text.
pub fn totals(folded: &str) -> (i64, i64) {
    folded.lines().fold((0, 0), |(b, h), l| {
        let mut w = l.rsplitn(3, ' ');
        let hv = w.next().and_then(|x| x.parse::<i64>().ok()).unwrap_or(0);
        let bv = w.next().and_then(|x| x.parse::<i64>().ok()).unwrap_or(0);
        (b + bv, h + hv)
    })
}

/// Puts the graphs into the section: each as a flame graph with its sentence, its figures in
/// `data.diff`; a graph that could not be made is a skipped row with the reason.
///
/// `rounds(libs, exit)`: the measured rounds' median round trip of series A's point with that
/// many libraries, for the table that puts the graphs' forks beside them ([`population`]).
pub fn add_to_section(
    s: &mut Section,
    graphs: &[(Exit, Result<DiffGraph, String>)],
    rounds: &dyn Fn(u32, Exit) -> Option<f64>,
) {
    let what = |e: Exit| {
        format!(
            "erik: differential flame graph k = {MAX_LIBS} vs k = 0 with {}",
            e.label()
        )
    };
    if graphs.is_empty() {
        s.skipped.push(Skipped {
            what: format!("erik: differential flame graph k = {MAX_LIBS} vs k = 0"),
            reason: "the plan has no series-A point for one of the two".into(),
        });
    }
    let side = |x: &Side| doc::ErikDiffSide {
        libs: x.libs,
        samples: x.samples,
        forks: x.forks,
    };
    let mut data = Vec::new();
    for (exit, g) in graphs {
        match g {
            Err(e) => s.skipped.push(Skipped {
                what: what(*exit),
                reason: e.clone(),
            }),
            Ok(g) => {
                let title = what(*exit).replacen("erik: d", "D", 1);
                s.flamegraphs.push(Flamegraph {
                    file_name: g.file_name.clone(),
                    title: format!("{title}, k = {}'s widths", g.head.libs),
                    caption: format!(
                        "Widths: k = {}'s samples per 1000 forks; red where k = {} spends more \
                         in a frame's own code, blue where less; a frame only k = {} has is not \
                         drawn here (see the graph with k = {}'s widths). {} The same forks \
                         per fork in µs, beside the measured rounds and the fit: the table \
                         \"{POPULATION_TITLE}\".",
                        g.head.libs,
                        g.head.libs,
                        g.base.libs,
                        g.base.libs,
                        what_is_red(g)
                    ),
                    svg: g.svg.clone(),
                    folded: g.folded.clone(),
                });
                s.flamegraphs.push(Flamegraph {
                    file_name: g.negated_file_name.clone(),
                    title: format!("{title}, k = {}'s widths (negated)", g.base.libs),
                    caption: format!("{} Folded text: the first graph's.", what_is_blue(g)),
                    svg: g.negated_svg.clone(),
                    // The same two columns as the first graph's folded file.
                    folded: String::new(),
                });
                for n in g.base.notes.iter().chain(&g.head.notes) {
                    if !s.notes.contains(n) {
                        s.notes.push(n.clone());
                    }
                }
                data.push(doc::ErikDiff {
                    exit: exit.key().into(),
                    file: g.file_name.clone(),
                    negated_file: g.negated_file_name.clone(),
                    base: side(&g.base),
                    head: side(&g.head),
                    per: diff::PER,
                    red: g.red.iter().take(20).cloned().collect(),
                    red_categories: g.red_categories.clone(),
                    blue: g.blue.iter().take(20).cloned().collect(),
                });
            }
        }
    }
    let drawn: Vec<&DiffGraph> = graphs.iter().filter_map(|(_, g)| g.as_ref().ok()).collect();
    if !drawn.is_empty() {
        let fitted = |e: Exit| {
            s.findings
                .iter()
                .find(|f| f.key == format!("erik.per_library_us.round_trip.{}", e.key()))
                .and_then(|f| Some((f.value, f.interval?)))
        };
        let table = population(&drawn, rounds, &fitted);
        s.tables.push(table);
    }
    if let Some(o) = s.data.as_object_mut() {
        o.insert(
            "diff".into(),
            serde_json::to_value(data).unwrap_or(serde_json::Value::Null),
        );
    }
}

/// One side's figures in the table: the graph's total, CPU µs and wall µs per fork, the
/// measured rounds' median.
type Figures = (f64, f64, f64, Option<f64>);

/// The title of the table beside the graphs.
pub const POPULATION_TITLE: &str = "erik: the forks behind the differential flame graphs, per fork";

/// The table beside the graphs: each side's sampled forks normalised per fork as the graph
/// is (samples per 1000 forks, the graph's total), the same forks in µs (samples ÷ the
/// sampling frequency; the blocks' wall time), the measured rounds' median for the same point,
/// and per library ((k = 100 − k = 0) ÷ 100) beside the model's fitted per-library effect,
/// with the caption saying why those differ.
pub fn population(
    graphs: &[&DiffGraph],
    rounds: &dyn Fn(u32, Exit) -> Option<f64>,
    fitted: &dyn Fn(Exit) -> Option<(f64, [f64; 2])>,
) -> crate::experiment::section::Table {
    let na = || "not available".to_string();
    let mut rows = Vec::new();
    let mut fits = Vec::new();
    for g in graphs {
        let (bt, ht) = totals(&g.folded);
        let per_fork = |x: &Side| {
            let f = x.forks.max(1) as f64;
            (
                x.samples as f64 / f,
                x.samples as f64 / f / g.frequency_hz.max(1) as f64 * 1e6,
                x.wall_ns as f64 / f / 1e3,
            )
        };
        let mut figs = Vec::new();
        for (x, total) in [(&g.base, bt), (&g.head, ht)] {
            let (_, cpu, wall) = per_fork(x);
            let r = rounds(x.libs, g.exit);
            rows.push(vec![
                g.exit.label().to_string(),
                x.libs.to_string(),
                x.forks.to_string(),
                x.samples.to_string(),
                total.to_string(),
                format!("{cpu:.1}"),
                format!("{wall:.1}"),
                r.map_or_else(na, |r| format!("{r:.1}")),
            ]);
            figs.push((total as f64, cpu, wall, r));
        }
        let n = f64::from(g.head.libs.saturating_sub(g.base.libs).max(1));
        let d = |f: fn(&Figures) -> Option<f64>| match (f(&figs[0]), f(&figs[1])) {
            (Some(a), Some(b)) => format!("{:+.2}", (b - a) / n),
            _ => na(),
        };
        rows.push(vec![
            g.exit.label().to_string(),
            format!(
                "per library ((k = {} − k = {}) ÷ {n})",
                g.head.libs, g.base.libs
            ),
            String::new(),
            String::new(),
            d(|x| Some(x.0)),
            d(|x| Some(x.1)),
            d(|x| Some(x.2)),
            d(|x| x.3),
        ]);
        if let Some((v, ci)) = fitted(g.exit) {
            fits.push(format!(
                "{} {v:.2} [{:.2}, {:.2}] µs per library",
                g.exit.label(),
                ci[0],
                ci[1]
            ));
        }
    }
    let hz = graphs.first().map_or(0, |g| g.frequency_hz);
    crate::experiment::section::Table {
        title: POPULATION_TITLE.into(),
        columns: [
            "way out",
            "libraries",
            "forks sampled",
            "samples",
            "samples per 1000 forks (the graph's total)",
            "CPU µs per fork (samples ÷ sampling rate)",
            "sampled blocks: wall µs per fork",
            "measured rounds: median round trip µs",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        caption: Some(format!(
            "The graphs draw exactly the forks of the first four columns, normalised per fork \
             as here (column 5 is each graph's total width). Samples count CPU time on every \
             CPU at {hz} Hz requested (parent, child, and the kernel's work for both), so \
             column 6 can exceed the wall time of column 7, and the sampled blocks run under \
             the sampler, after the measured rounds: their per-fork figures are not the \
             measured rounds' (column 8). The model's per-library figures (the round trip: {}) \
             are fitted to the medians of every point of series A, B and C with a footprint \
             term, not to these two points: where the per-library rows here and the fit \
             disagree, the fit is the figure the verdict uses; these rows say what the two \
             graphs compare.",
            if fits.is_empty() {
                na()
            } else {
                fits.join("; ")
            }
        )),
    }
}

#[cfg(test)]
#[path = "diff_tests.rs"]
mod tests;
