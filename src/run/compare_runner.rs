//! `ldcost compare`: BASE and HEAD profiled in one run, interleaved, then the report of
//! [`crate::compare::report`].
//!
//! In: a [`CompareConfig`]. Out: two `profile` [`Document`]s built exactly as `profile --json`
//! builds them (so they can be saved with `--save-base`/`--save-head` and `diff`ed later).
//!
//! Interleaving: warm-ups B H, then rounds in the order B H, H B, B H, … (ABBA): a drift of
//! the machine over the run (a neighbour's build starting, the CPU's clock) falls on both
//! sides alike, and a linear drift cancels in each pair of rounds. Each side's round is the
//! profile's unit: a per-object run and, unless `--no-reference`, a boundaries-only run and an
//! uninstrumented run. The fork loops are interleaved too (`fork_loops`).
//!
//! `--sample`: after the measured rounds, each side's sampled exec runs (as `profile
//! --sample`: the measured runs' boundaries, shares scaled to the side's own uninstrumented
//! CPU per exec), interleaved in the same order B H, H B, … ([`sampled_rounds`]): each side
//! pools its runs in its own accumulator, since two breakdowns cannot be merged afterwards.
//! With `--fork`, the first fork loop of each side, which is interleaved, is the sampled one.
//! The folded stacks of each side are returned beside the documents (they are not in the
//! JSON) for `--flamegraph-diff`.
//! Not done here: LD_DEBUG=statistics runs.

use crate::attribute::FoldedStack;
pub use crate::config::CompareConfig;
use crate::config::ProfileRun;
use crate::deps::{self, ResolveOptions};
use crate::error::{Error, ExitCode};
use crate::profile::{aggregate, ProfileConfig, SampledRuns};
use crate::record::{Detail, Ending, Instrumentation, Machine, Phase, Run};
use crate::report::Document;
use crate::trace::startup::{run_once, run_uninstrumented, RunOptions};

use super::compare_rounds::{planned_rounds, rounds_done, rounds_label, rounds_run, Stop};
use crate::profile::interrupted;
use crate::progress::Bar;
use crate::report::schema::comparison::RoundsRun;
use std::time::Duration;

/// The resolve options a process started with `env` on top of ours would get.
fn resolve_options(env: &[(String, String)]) -> ResolveOptions {
    let mut o = ResolveOptions::from_env();
    for (k, v) in env {
        match k.as_str() {
            "LD_LIBRARY_PATH" => o.ld_library_path = Some(v.clone()),
            "LD_BIND_NOW" => o.bind_now = !v.is_empty(),
            _ => {}
        }
    }
    o
}

/// The fork loops, interleaved: each side's N forks in up to [`FORK_CHUNKS`] loops of at
/// least 50 forks (at least 2 loops), in the order B H, H B, B H, … (one loop per side per round; each loop is
/// a fresh start of the target). A single loop per side, one after the other, compares the
/// machine's load at two moments as much as the programs (measured here: the same BASE
/// loop took 59 µs of parent CPU per fork in one run and 26 µs in another while other builds
/// ran). The document's fork section is the first loop's, with the per-fork summaries,
/// `samples`, fork/vfork A/B (`spawn_ab`) and lazy-binding A/B of all loops.
fn fork_loops(
    sides: &[&ProfileRun; 2],
    folded: &mut [Vec<FoldedStack>; 2],
    bar: &Bar,
) -> Result<[Option<crate::attribute::fork_cost::ForkSection>; 2], Error> {
    let (Some(fb), Some(fh)) = (&sides[0].fork, &sides[1].fork) else {
        return Ok([None, None]);
    };
    let n = fb.iterations.min(fh.iterations);
    let chunks = (n / 50).clamp(2, FORK_CHUNKS).min(n.max(1));
    bar.add(2 * chunks);
    let mut sections: [Option<crate::attribute::fork_cost::ForkSection>; 2] = [None, None];
    let mut samples: [crate::attribute::fork_cost::ForkSamples; 2] = Default::default();
    // Each loop's fork/vfork A/B rounds (large images only), merged per side at the end.
    let mut spawn_rounds: [Vec<Vec<_>>; 2] = Default::default();
    // Each loop's lazy-binding A/B, merged per side at the end too.
    let mut lazy_runs: [Vec<crate::record::fork::ProbeResult>; 2] = Default::default();
    for round in 0..chunks {
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let f = [fb, fh][i];
            // The remainder goes to the last loop.
            let size = f.iterations / chunks
                + if round + 1 == chunks {
                    f.iterations % chunks
                } else {
                    0
                };
            let opts = crate::trace::fork::ForkOptions {
                iterations: size,
                lazy_ab_iterations: f.lazy_ab_iterations.min(size.max(1)),
                // `--sample`: the first loop of each side is sampled, the others are not.
                sample: if round == 0 { f.sample.clone() } else { None },
                sample_iterations: f.sample_iterations.min(size.max(1)),
                ..f.clone()
            };
            bar.step(format!(
                "{} fork loop {}/{chunks} ({size})",
                ["BASE", "HEAD"][i],
                round + 1
            ));
            // The loop runs in the target; the bar's clock moves from ldcost's side.
            let run = bar.ticking(|| crate::trace::fork::run(&sides[i].profile.command, &opts));
            sweep(i);
            let run = run?;
            bar.inc();
            let mut s = crate::attribute::fork_cost::section(&run, size);
            spawn_rounds[i].push(run.spawn_ab.clone());
            lazy_runs[i].extend(run.lazy_ab.clone());
            if round == 0 {
                let (b, e, stacks) = crate::attribute::fork_cost::fork_breakdown(
                    &run,
                    &sides[i].profile.debug_roots,
                );
                s.breakdown = b;
                s.breakdown_error = e;
                folded[i].extend(stacks);
            }
            if let Some(x) = &s.samples {
                samples[i].round_trip_ns.extend(&x.round_trip_ns);
                samples[i].parent_cpu_ns.extend(&x.parent_cpu_ns);
                samples[i].child_cpu_ns.extend(&x.child_cpu_ns);
                samples[i].chunks.push(x.round_trip_ns.len() as u64);
            }
            if let Some(first) = &mut sections[i] {
                first.completed += s.completed;
                first.iterations += s.iterations;
                first.children_total += s.children_total;
            } else {
                sections[i] = Some(s);
            }
        }
    }
    for i in 0..2 {
        if let Some(s) = &mut sections[i] {
            let f = |v: &[u64]| {
                crate::attribute::stats::summarize(&v.iter().map(|x| *x as f64).collect::<Vec<_>>())
            };
            s.per_fork.round_trip_ns = f(&samples[i].round_trip_ns);
            s.per_fork.parent_cpu_ns = f(&samples[i].parent_cpu_ns);
            if samples[i].child_cpu_ns.len() == samples[i].round_trip_ns.len() {
                s.per_fork.child_cpu_ns = f(&samples[i].child_cpu_ns);
            }
            s.samples = Some(std::mem::take(&mut samples[i]));
            if !lazy_runs[i].is_empty() {
                s.lazy_binding = Some(crate::attribute::fork_cost::lazy_binding::merged(
                    &lazy_runs[i],
                ));
            }
            s.spawn_ab = crate::attribute::fork_cost::spawn_ab::merged(
                spawn_rounds[i].iter().map(|r| &r[..]),
            );
        }
    }
    Ok(sections)
}

/// At most this many interleaved fork loops per side.
pub const FORK_CHUNKS: u64 = 10;

/// Both sides' documents, their sampled stacks (empty without `--sample`), and what went
/// wrong in runs that still count (a target killed by a signal after its entry point).
pub struct Measured {
    pub base: Document,
    pub head: Document,
    pub folded: [Vec<FoldedStack>; 2],
    /// Per side, one line per kind of ending (`HEAD: the target was killed by …`).
    pub warnings: [Vec<String>; 2],
    /// The measured rounds and what ended them (None: no exec runs).
    pub rounds: Option<RoundsRun>,
}

const SIDES: [&str; 2] = ["BASE", "HEAD"];

/// Processes each side's target left running, killed after each of its runs so that the
/// warning can name the side (and so that none runs on into the other side's runs).
static LEFT_RUNNING: [std::sync::atomic::AtomicUsize; 2] = [
    std::sync::atomic::AtomicUsize::new(0),
    std::sync::atomic::AtomicUsize::new(0),
];

/// After a run of side `i`: kills what it left running and counts it for the side.
fn sweep(i: usize) {
    // A target that leaves processes may leave more a moment later (a child not yet
    // scheduled forks its own after the walk, as a daemon's double fork does on a loaded
    // machine): after a pass that found some, passes again after growing pauses until one
    // finds nothing, so that nothing the side left is found later and counted for nobody. A
    // target that leaves nothing costs one pass.
    let mut pause = std::time::Duration::from_millis(10);
    for _ in 0..6 {
        let left = crate::run::kill_left_running();
        LEFT_RUNNING[i].fetch_add(left, std::sync::atomic::Ordering::Relaxed);
        if left == 0 {
            break;
        }
        std::thread::sleep(pause);
        pause *= 2;
    }
}

/// One side's error, named (`HEAD: …`), with its own code and hint.
fn named(i: usize, e: Error) -> Error {
    match e {
        // Ctrl-C is not a side's fault.
        e if e.exit_code() == ExitCode::Interrupted => e,
        e => Error::Side {
            side: SIDES[i],
            source: Box::new(e),
        },
    }
}

/// Whether a traced run got as far as the program's entry point (past ld.so). An untraced
/// run has no boundaries: it is taken to have, its traced neighbours say otherwise.
fn reached_entry(r: &Run) -> bool {
    r.instrumentation == Instrumentation::None
        || r.segments
            .iter()
            .any(|s| matches!(s.phase, Phase::EntryToMain | Phase::MainToExit))
}

/// A run that ended before the program's entry point (ld.so could not load it, its exec
/// failed) or was killed there is an error: its figures are an error path's, and a verdict on
/// them would be silently wrong. A run killed by a signal later still counts, with a warning
/// the report carries. Timed-out runs are `--timeout`'s (a warning and exit 9 at the end, for
/// a measured run); a run killed by SIGKILL is left out and counted, as `profile` does.
fn check_ending(
    i: usize,
    target: &std::path::Path,
    r: &Run,
    warnings: &mut Vec<RunWarning>,
) -> Result<(), Error> {
    // Timed-out runs are `--timeout`'s; runs killed by SIGKILL from outside are left out of
    // the side's statistics and counted ([`crate::profile::lost`]), wherever the kill came.
    if r.ending == Ending::TimedOut || crate::profile::lost(r).is_some() {
        return Ok(());
    }
    if !reached_entry(r) {
        let how = match r.ending {
            Ending::Killed(_) => format!("was {}", r.ending.describe()),
            _ => r.ending.describe(),
        };
        return Err(Error::SideFailed {
            side: SIDES[i],
            target: target.to_path_buf(),
            what: format!(
                "{how} before reaching its entry point (ld.so could not load or link it, or an \
                 initializer failed)"
            ),
        });
    }
    if let Ending::Killed(_) = r.ending {
        let kind = match r.instrumentation {
            Instrumentation::None => "uninstrumented",
            _ => "traced",
        };
        warnings.push((
            format!("{}: the target was {}", SIDES[i], r.ending.describe()),
            kind,
        ));
    }
    Ok(())
}

/// What happened in which kind of run ("traced", "uninstrumented").
type RunWarning = (String, &'static str);

/// Identical warnings counted once: "… in 3 traced runs".
fn summarize_warnings(w: &[RunWarning]) -> Vec<String> {
    let mut out: Vec<(&RunWarning, usize)> = Vec::new();
    for x in w {
        match out.iter_mut().find(|(s, _)| *s == x) {
            Some((_, n)) => *n += 1,
            None => out.push((x, 1)),
        }
    }
    out.into_iter()
        .map(|((what, kind), n)| match n {
            1 => format!("{what} in 1 {kind} run"),
            n => format!("{what} in {n} {kind} runs"),
        })
        .collect()
}

/// Runs both sides interleaved and builds their documents (the sampled stacks dropped).
pub fn measure(cfg: &CompareConfig) -> Result<(Document, Document), Error> {
    measure_with_stacks(cfg).map(|m| (m.base, m.head))
}

/// Runs both sides interleaved and builds their documents, keeping the sampled stacks.
pub fn measure_with_stacks(cfg: &CompareConfig) -> Result<Measured, Error> {
    crate::trace::install_signal_handlers();
    // `profile`'s checks on both sides before anything runs, with its codes and messages:
    // a side that cannot run would otherwise be measured as ld.so's error path.
    for (i, side) in [&cfg.base, &cfg.head].into_iter().enumerate() {
        let opts = resolve_options(&side.profile.command.env);
        crate::run::pre_checks(side, &opts).map_err(|e| named(i, e))?;
    }
    // Each side measures the program its exec chain ends in, as `profile` does (wrappers).
    let followed = |i: usize, side: &crate::config::ProfileRun| -> Result<_, Error> {
        let mut side = side.clone();
        side.profile = crate::profile::with_chain(&side.profile).map_err(|e| named(i, e.into()))?;
        Ok(side)
    };
    let base = followed(0, &cfg.base);
    sweep(0);
    let base = base?;
    let head = followed(1, &cfg.head);
    sweep(1);
    let head = head?;
    for side in [&base, &head] {
        crate::run::chain_outputs(side.profile.chain.as_deref(), &cfg.outputs())?;
    }
    let sides = [&base, &head];
    let mut docs = Vec::new();
    let mut folded: [Vec<FoldedStack>; 2] = Default::default();
    let bar = run_bar(cfg);
    let forks = fork_loops(&sides, &mut folded, &bar)?;
    let mut warnings: [Vec<RunWarning>; 2] = Default::default();
    let mut raws: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
    let mut details = [Detail::Static, Detail::Static];
    // The measured rounds run, what ended them and their wall time.
    let mut stopped: Option<(usize, Stop, Duration)> = None;
    let exec = cfg.base.exec && cfg.head.exec;
    if exec {
        let opts = |p: &ProfileConfig, inst| RunOptions {
            instrumentation: inst,
            timeout: p.timeout,
            debug_roots: p.debug_roots.clone(),
            sample: None,
        };
        let warmup = cfg.base.profile.warmup;
        for w in 0..warmup {
            for (i, s) in sides.iter().enumerate() {
                interrupted()?;
                bar.step(format!(
                    "{} warm-up {}/{warmup}",
                    ["BASE", "HEAD"][i],
                    w + 1
                ));
                let r = bar.around(!s.profile.command.quiet, || {
                    run_once(
                        &s.profile.command,
                        &opts(&s.profile, Instrumentation::Coarse),
                    )
                });
                sweep(i);
                let (r, d) = r?;
                bar.inc();
                // A side that cannot start fails here, before the measured rounds; a warm-up
                // killed later is not reported (its figures are not kept).
                check_ending(i, &s.profile.command.program, &r, &mut Vec::new())?;
                details[i] = d;
            }
        }
        let started = std::time::Instant::now();
        let mut planned = planned_rounds(cfg.rounds, 0, Duration::ZERO);
        let per_round = if cfg.base.profile.reference { 3 } else { 1 };
        let mut round = 0;
        'rounds: loop {
            if let Some(why) = rounds_done(cfg.rounds, round, started.elapsed()) {
                stopped = Some((round, why, started.elapsed()));
                break;
            }
            // The bar's length follows the budget's estimate (it only grows).
            let now = planned_rounds(cfg.rounds, round, started.elapsed());
            if now > planned {
                bar.add((2 * per_round * (now - planned)) as u64);
                planned = now;
            }
            let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                let p = &sides[i].profile;
                let side = ["BASE", "HEAD"][i];
                let shown = !p.command.quiet;
                interrupted()?;
                bar.step(format!(
                    "{side} measured {}/{}",
                    round + 1,
                    rounds_label(cfg.rounds, planned)
                ));
                let r = bar.around(shown, || {
                    run_once(&p.command, &opts(p, Instrumentation::PerObject))
                });
                sweep(i);
                let (r, d) = r?;
                bar.inc();
                details[i] = d;
                check_ending(i, &p.command.program, &r, &mut warnings[i])?;
                raws[i].push(r);
                if p.reference {
                    interrupted()?;
                    bar.step(format!(
                        "{side} reference {}/{}",
                        round + 1,
                        rounds_label(cfg.rounds, planned)
                    ));
                    let r = bar.around(shown, || {
                        run_once(&p.command, &opts(p, Instrumentation::Coarse))
                    });
                    sweep(i);
                    let r = r?;
                    check_ending(i, &p.command.program, &r.0, &mut warnings[i])?;
                    raws[i].push(r.0);
                    bar.inc();
                    interrupted()?;
                    let r = bar.around(shown, || run_uninstrumented(&p.command, p.timeout));
                    sweep(i);
                    let r = r?;
                    check_ending(i, &p.command.program, &r, &mut warnings[i])?;
                    raws[i].push(r);
                    bar.inc();
                }
                // A measured run past --timeout ends the measurement (the next would time out
                // too); a reference run past it is left out and counted, as in `profile`.
                if raws[i].iter().any(|r| {
                    r.ending == Ending::TimedOut && r.instrumentation == Instrumentation::PerObject
                }) {
                    stopped = Some((round + 1, Stop::Timeout, started.elapsed()));
                    break 'rounds;
                }
            }
            round += 1;
        }
    }
    let mut sampled = if exec {
        sampled_rounds(&sides, &bar)
    } else {
        Default::default()
    };
    let counters = crate::profile::counter_support();
    let machine = Machine::current();
    for (i, s) in sides.iter().enumerate() {
        let target = &s.profile.command.program;
        let followed = s.profile.chain.clone().unwrap_or_default();
        // Through a wrapper (a script, `env`, a launcher that execs the real program) the
        // static model describes the program that was measured, as `profile`'s does: the
        // final image of the exec chain, whose path also names its per-object rows, so that
        // the same object has one name on both sides whatever each side's launcher.
        let measured = match followed.as_slice() {
            [_, .., last] => std::path::PathBuf::from(&last.exe),
            _ => target.clone(),
        };
        let closure = deps::resolve(&measured, &resolve_options(&s.profile.command.env)).ok();
        // The static model and its prediction when the side's closure resolves.
        let (mut doc, prediction) = match closure {
            Some(c) => {
                let m = crate::attribute::lookups::model(&c);
                let pred = crate::attribute::link_cost::prediction(&c);
                (
                    Document::deps(&target.to_string_lossy(), c, Some(m)),
                    Some(pred),
                )
            }
            None => (Document::empty(&target.to_string_lossy()), None),
        };
        if exec {
            let raw = std::mem::take(&mut raws[i]);
            let cpu = crate::profile::cpu_per_exec(&raw);
            let mut sec = aggregate(
                s.profile.argv(),
                s.profile.warmup,
                details[i].clone(),
                raw,
                None,
                counters.clone(),
            );
            sec.prediction = prediction;
            sec.followed = followed;
            sample_side(sampled[i].take(), cpu, &mut sec, &mut folded[i]);
            doc.profile = Some(sec.into());
        }
        doc.command = "profile".into();
        doc.fork = forks[i].clone().map(Into::into);
        doc.machine = Some(machine.clone());
        docs.push(doc);
    }
    match <[Document; 2]>::try_from(docs) {
        Ok([base, head]) => Ok(Measured {
            base,
            head,
            folded,
            warnings: warnings.map(|w| summarize_warnings(&w)),
            rounds: stopped
                .map(|(count, why, elapsed)| rounds_run(cfg.rounds, count, why, elapsed)),
        }),
        Err(_) => unreachable!("one document per side, two sides"),
    }
}

/// `compare`'s bar: every run it will start (warm-ups, rounds, sampled runs; the fork loops
/// are added by [`fork_loops`]). Off when standard output carries a document.
fn run_bar(cfg: &CompareConfig) -> Bar {
    let stdout = Some(std::path::Path::new("-"));
    if cfg.format == crate::config::Format::Json
        || cfg.json.as_deref() == stdout
        || cfg.flamegraph_diff.as_deref() == stdout
        || cfg.folded_diff.as_deref() == stdout
    {
        crate::progress::disable();
    }
    if !(cfg.base.exec && cfg.head.exec) {
        return Bar::new("ldcost compare", 0, "runs");
    }
    let p = &cfg.base.profile;
    let per_round = if p.reference { 3 } else { 1 };
    let sampled = [&cfg.base, &cfg.head]
        .iter()
        .filter_map(|s| {
            s.profile
                .sample
                .as_ref()
                .map(|_| s.profile.sample_runs.max(1))
        })
        .sum::<usize>();
    let rounds = planned_rounds(cfg.rounds, 0, Duration::ZERO);
    let total = 2 * p.warmup + 2 * rounds * per_round + sampled;
    Bar::new("ldcost compare", total as u64, "runs")
}

/// One side's sampled exec runs so far, or why they stopped.
type SampledSide = Option<Result<SampledRuns, String>>;

/// `--sample`: the sampled exec runs of both sides, interleaved B H, H B, … as the measured
/// rounds are, each side into its own accumulator (None: that side is not sampled). A side
/// whose run fails keeps the error and the other side goes on alone.
fn sampled_rounds(sides: &[&ProfileRun; 2], bar: &Bar) -> [SampledSide; 2] {
    let mut acc: [SampledSide; 2] = [0, 1].map(|i| {
        let p = &sides[i].profile;
        let per_obj = RunOptions {
            instrumentation: Instrumentation::PerObject,
            timeout: p.timeout,
            debug_roots: p.debug_roots.clone(),
            sample: None,
        };
        p.sample
            .as_ref()
            .map(|sc| Ok(SampledRuns::new(p, sc, &per_obj)))
    });
    for round in 0.. {
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        let mut ran = false;
        for i in order {
            if let Some(Ok(runs)) = &mut acc[i] {
                let next = runs.run_next(bar);
                sweep(i);
                match next {
                    Ok(r) => ran |= r,
                    Err(e) => acc[i] = Some(Err(e)),
                }
            }
        }
        if !ran {
            break;
        }
    }
    acc
}

/// `--sample`: one side's sampled runs, pooled into its section's breakdown (or the reason
/// there is none) and its folded stacks.
fn sample_side(
    runs: SampledSide,
    cpu: Vec<f64>,
    sec: &mut crate::profile::ProfileSection,
    folded: &mut Vec<FoldedStack>,
) {
    let Some(runs) = runs else {
        return;
    };
    let measured = crate::attribute::stats::summarize(&cpu)
        .or(sec.total_task_clock_ns.clone())
        .map(|s| s.median);
    // Pooled shares, not phase-weighted (no measured runs given): the factors compare them with
    // the folded-diff's raw sample counts (tests/compare.rs).
    match runs.and_then(|r| r.finish(measured, &[])) {
        Ok((b, f, w)) => {
            sec.breakdown = Some(b);
            sec.breakdown_weights = w;
            folded.extend(f);
        }
        Err(e) => sec.breakdown_error = Some(e),
    }
}

/// `ldcost compare BASE HEAD [-- ARGS]`, with `profile`'s clean-up: no process of either
/// target's tree outlives it, interrupted or not ([`crate::run::supervised`]).
pub fn compare(cfg: &CompareConfig) -> Result<ExitCode, Error> {
    crate::run::supervised(|| compare_measured(cfg))
}

fn compare_measured(cfg: &CompareConfig) -> Result<ExitCode, Error> {
    let Measured {
        base,
        head,
        folded,
        warnings,
        rounds,
    } = measure_with_stacks(cfg)?;
    for (i, side) in SIDES.iter().enumerate() {
        let left = LEFT_RUNNING[i].swap(0, std::sync::atomic::Ordering::Relaxed);
        crate::run::warn_left_running(&format!("{side}: "), left);
    }
    if let Some(p) = &cfg.save_base {
        crate::report::write_json(&base, p)?;
    }
    if let Some(p) = &cfg.save_head {
        crate::report::write_json(&head, p)?;
    }
    let out = crate::compare::Output {
        format: cfg.format,
        detail: cfg.detail,
        json: cfg.json.as_deref(),
        fail_above: cfg.fail_above,
    };
    crate::compare::graphs::write(
        (&base, &folded[0]),
        (&head, &folded[1]),
        cfg.flamegraph_diff.as_deref(),
        cfg.folded_diff.as_deref(),
    )?;
    let mut cmp = crate::compare::comparison(
        "compare",
        (&base, (None, &cfg.base.profile.command.env)),
        (&head, (None, &cfg.head.profile.command.env)),
        Vec::new(),
        false,
        out.fail_above,
    );
    // How many rounds and why, in the report and its JSON.
    if let Some(r) = &rounds {
        cmp.verdict
            .notes
            .insert(0, crate::compare::text::rounds_note(r));
    }
    cmp.rounds = rounds;
    // A target that died by a signal: in the report, and loudly, never a silent verdict.
    for w in warnings.iter().flatten() {
        eprintln!("ldcost: warning: {w}; its figures up to that point are in the comparison");
        cmp.verdict.notes.push(format!("warning: {w}"));
    }
    // Runs left out of a side's statistics: counted, loudly and in the report.
    for (side, info) in [("BASE", &cmp.base), ("HEAD", &cmp.head)] {
        for l in &info.left_out {
            let w = format!("{side}: {}", l.describe());
            eprintln!("ldcost: warning: {w}");
            cmp.verdict.notes.push(format!("warning: {w}"));
        }
    }
    crate::compare::write(&cmp, &out)?;
    let timed_out = [&base, &head].iter().any(|d| {
        d.profile
            .as_ref()
            .is_some_and(|p| p.endings.contains(&Ending::TimedOut))
    });
    if timed_out {
        eprintln!("ldcost: warning: a target ran past --timeout and was killed; phases after that point are missing");
        return Ok(ExitCode::TargetFailed);
    }
    Ok(crate::compare::exit_code(&cmp))
}
