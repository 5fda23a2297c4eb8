//! The human report of `ldcost profile`: phases and objects by cost, the instrumentation's own
//! cost, and the cross-checks against `deps` and glibc's LD_DEBUG=statistics.

use std::fmt::Write as _;

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

use crate::attribute::profile::ProfileSection;
use crate::attribute::stats::Summary;
use crate::record::{Detail, Instrumentation, Phase};

fn ms(s: &Option<Summary>) -> String {
    s.as_ref()
        .map(|s| format!("{:.3}", s.median / 1e6))
        .unwrap_or_else(|| "n/a".into())
}

/// A total of one kind of run, "0.351 ms", or "not measured (why)" when every run of that kind was
/// left out: never a number made of runs that did not end.
fn reference_ms(p: &ProfileSection, s: &Option<Summary>, kind: Instrumentation) -> String {
    let lost: Vec<String> = p
        .left_out
        .iter()
        .filter(|l| l.instrumentation == kind)
        .map(|l| l.describe())
        .collect();
    match s {
        None if !lost.is_empty() => format!("not measured ({})", lost.join("; ")),
        _ => format!("{} ms", ms(s)),
    }
}

/// A median's 95% interval, or why there is none: one run gives no interval (its bootstrap
/// is the run's own value twice, which says nothing about the next run).
fn ci(s: &Option<Summary>) -> String {
    match s {
        Some(s) if s.n < 2 => format!("n/a ({} run)", s.n),
        Some(s) => format!("[{:.3}, {:.3}]", s.ci95.0 / 1e6, s.ci95.1 / 1e6),
        None => String::new(),
    }
}

/// The mark after a phase's interval when it is wider than ±3% of its median (and the phase
/// over 5% of the total), and the footnote that explains it.
pub const WIDE: &str = " *";
pub const WIDE_NOTE: &str = "* interval wider than ±3%: more runs (-n) narrow it";

fn short(p: &str) -> String {
    super::text::clean(p.rsplit('/').next().unwrap_or(p))
}

/// The header line on where the exec runs ran ([`crate::trace::pin`]); none for a document
/// written before ldcost recorded it.
fn pinning(cpu: Option<Option<usize>>) -> Option<String> {
    Some(match cpu? {
        Some(n) => format!(
            "exec runs pinned to CPU {n} (tracer and target share it; --no-pin to let them move)"
        ),
        None => "exec runs not pinned (--no-pin, or the kernel refused the CPU mask): each \
                 ptrace stop may cost the target a CPU hand-over"
            .to_string(),
    })
}

/// What the default report leaves to `--detail`, said on its last line.
pub const MORE: &str = "--detail (-v) adds: where and how the figures were taken, the per-run min and max, the exit and whole-process lines, the instrumentation's own cost and the cross-checks with glibc";

/// The `profile` report of the exec side; with `detail`, also how the figures were taken, the
/// per-run min and max, the instrumentation's own cost and the cross-checks (the JSON always
/// has them).
pub fn profile(p: &ProfileSection, detail: bool) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "ldcost profile {}: {} measured run{} (+{} warm-up)",
        crate::report::text::clean(&shell_words::join(&p.argv)),
        p.runs,
        if p.runs == 1 { "" } else { "s" },
        p.warmup
    );
    if p.followed.len() > 1 || p.followed.iter().any(|i| i.interpreter.is_some()) {
        let _ = writeln!(
            s,
            "followed: {} (measured: {})",
            crate::record::describe_chain(&p.followed),
            p.followed.last().map_or("", |i| i.exe.as_str())
        );
    }
    let mut endings: Vec<String> = p.endings.iter().map(|e| e.describe()).collect();
    endings.dedup();
    let _ = writeln!(s, "target: {}", endings.join("; "));
    for l in &p.left_out {
        let _ = writeln!(s, "{}", l.describe());
    }
    let stops: u64 = p.raw.iter().map(|r| r.group_stops).sum();
    if stops > 0 {
        let _ = writeln!(
            s,
            "the target stopped itself or was stopped (SIGSTOP, SIGTSTP, ...) {stops} time{} and waited for SIGCONT, as it does untraced: the stopped time is in no phase's CPU",
            if stops == 1 { "" } else { "s" }
        );
    }
    if p.runs == 0 {
        let _ = writeln!(
            s,
            "phases: {}",
            reference_ms(p, &None, Instrumentation::PerObject)
        );
    }
    // Said by default only when ld.so's internals could not be cut per object.
    if detail || !matches!(p.detail, Detail::DebugSymbols { .. }) {
        let _ = writeln!(
            s,
            "detail: {}",
            match &p.detail {
                Detail::DebugSymbols { debug_file } => format!(
                    "ld.so debug symbols ({debug_file}): relocation and initializers per object"
                ),
                Detail::Exported { why } =>
                    format!("exported symbols only ({why}): mapping vs relocation+initializers"),
                Detail::Static => "static program: no ld.so".to_string(),
            }
        );
    }
    if let Some(line) = pinning(p.pinned_cpu).filter(|_| detail) {
        let _ = writeln!(s, "{line}");
    }
    for line in p.counting.header_lines() {
        let _ = writeln!(s, "{line}");
    }
    let unavailable: Vec<String> = p
        .counters
        .iter()
        .filter(|(_, v)| !v.is_available())
        .map(|(k, _)| k.clone())
        .collect();
    if detail && !unavailable.is_empty() {
        let _ = writeln!(
            s,
            "not available on this machine: {}",
            unavailable.join(", ")
        );
    }
    let correction = if p.overhead.ns_per_stop.is_some() {
        "less the measured cost of ptrace stops"
    } else {
        // --no-reference (or runs too alike to fit a cost per stop): nothing is subtracted.
        "including the cost of ptrace stops (not measured, nothing subtracted)"
    };
    let of_runs = if p.runs < 2 {
        format!(
            "the value of the {} measured run (no interval can be drawn from {} run: -n 5 or more for a 95% CI)",
            if p.runs == 1 { "one" } else { "no" },
            p.runs
        )
    } else {
        "median of the runs with a 95% bootstrap CI".to_string()
    };
    if detail {
        let _ = writeln!(
            s,
            "figures: CPU time of the target process {} {correction}, {of_runs}; wall time excludes ldcost's own work at stops; threads and children are not included",
            p.counting.cpu_source()
        );
    }
    s.push('\n');

    let _ = writeln!(
        s,
        "Phases (start-up order; ld.so start and ld.so other run in pieces between the others)"
    );
    let mut t = Table::new();
    t.load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec![
            "phase", "object", "cpu ms", "95% CI", "share", "wall ms", "faults",
        ]);
    // Phases in order; per-object phases collapsed into one row per phase here.
    let order = [
        Phase::KernelExec,
        Phase::CpuFeatures,
        Phase::LdsoMapping,
        Phase::ObjectMapping,
        Phase::Relocation,
        Phase::RelocationAndInit,
        Phase::Initializers,
        Phase::LdsoOther,
        Phase::EntryToMain,
        Phase::MainToExit,
    ];
    let mut any_wide = false;
    for ph in order {
        let rows: Vec<_> = p.phases.iter().filter(|x| x.phase == ph).collect();
        if rows.is_empty() {
            continue;
        }
        let share: f64 = rows.iter().map(|r| r.share).sum();
        let cpu: f64 = rows
            .iter()
            .filter_map(|r| r.task_clock_ns.as_ref().map(|s| s.median))
            .sum();
        let wall: f64 = rows
            .iter()
            .filter_map(|r| r.wall_ns.as_ref().map(|s| s.median))
            .sum();
        let faults: f64 = rows
            .iter()
            .filter_map(|r| r.page_faults.as_ref().map(|s| s.median))
            .sum();
        let (obj, civ) = if rows.len() == 1 {
            // The mark is the arithmetic on the interval printed beside it.
            let wide = rows[0].interval_is_wide();
            any_wide |= wide;
            (
                rows[0].object.as_deref().map(short).unwrap_or_default(),
                format!(
                    "{}{}",
                    ci(&rows[0].task_clock_ns),
                    if wide { WIDE } else { "" }
                ),
            )
        } else {
            (format!("({} objects)", rows.len()), String::new())
        };
        t.add_row(vec![
            ph.label().to_string(),
            obj,
            format!("{:.3}", cpu / 1e6),
            civ,
            format!("{:.1}%", share * 100.0),
            format!("{:.3}", wall / 1e6),
            format!("{faults:.0}"),
        ]);
    }
    for i in 2..7 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let _ = writeln!(s, "{t}");
    if any_wide {
        let _ = writeln!(s, "{WIDE_NOTE}");
    }
    if detail {
        if let Some(a) = p.raw.iter().find_map(|r| r.exec) {
            let _ = writeln!(s, "{}", a.describe());
        }
        if let Some(n) = &p.cpu_features_note {
            let _ = writeln!(s, "{n}");
        }
    }

    let mut per_obj: Vec<_> = p
        .phases
        .iter()
        // Each object's search and mapping only with --detail: the default report stays short.
        .filter(|x| {
            (matches!(x.phase, Phase::Relocation | Phase::Initializers)
                || (detail && x.phase == Phase::ObjectMapping))
                && x.object.is_some()
        })
        .collect();
    if !per_obj.is_empty() {
        per_obj.sort_by(|a, b| {
            let m = |x: &&crate::attribute::profile::PhaseStat| {
                x.task_clock_ns.as_ref().map_or(0.0, |s| s.median)
            };
            m(b).total_cmp(&m(a))
        });
        let _ = writeln!(s, "\nObjects, by cost (relocation and initializers)");
        // glibc's column only when its run was made (not with --no-ld-debug).
        let glibc = p.ld_debug.as_ref();
        // The per-run extremes only with --detail.
        let mut header = vec!["object", "phase", "cpu ms", "95% CI"];
        if detail {
            header.extend(["min", "max"]);
        }
        header.extend(["faults", "relocations", "lookups (deps)"]);
        if glibc.is_some() {
            header.push("bindings (glibc)");
        }
        let mut t = Table::new();
        t.load_preset(presets::NOTHING)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(header);
        for r in per_obj {
            let pred = p
                .prediction
                .as_ref()
                .and_then(|pr| pr.per_object.get(r.object.as_deref().unwrap_or("")));
            let mut row = vec![
                short(r.object.as_deref().unwrap_or("")).to_string(),
                r.phase.label().to_string(),
                ms(&r.task_clock_ns),
                ci(&r.task_clock_ns),
            ];
            if detail {
                row.push(
                    r.task_clock_ns
                        .as_ref()
                        .map(|s| format!("{:.3}", s.min / 1e6))
                        .unwrap_or_default(),
                );
                row.push(
                    r.task_clock_ns
                        .as_ref()
                        .map(|s| format!("{:.3}", s.max / 1e6))
                        .unwrap_or_default(),
                );
            }
            row.extend([
                r.page_faults
                    .as_ref()
                    .map(|s| format!("{:.0}", s.median))
                    .unwrap_or_default(),
                if r.phase == Phase::Relocation {
                    pred.map(|x| x.1.to_string()).unwrap_or_default()
                } else {
                    String::new()
                },
                if r.phase == Phase::Relocation {
                    pred.map(|x| x.0.to_string()).unwrap_or_default()
                } else {
                    String::new()
                },
            ]);
            if let Some(g) = glibc {
                row.push(if r.phase == Phase::Relocation {
                    g.bindings
                        .get(r.object.as_deref().unwrap_or(""))
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                } else {
                    String::new()
                });
            }
            t.add_row(row);
        }
        for i in 2..10 {
            if let Some(c) = t.column_mut(i) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
        let _ = writeln!(s, "{t}");
    }
    // A section with rows stands apart; "none" or "not available (why)" is one line.
    let after_main = super::after_main_text::section(&p.after_main, detail);
    if after_main.lines().nth(1).is_some() {
        s.push('\n');
    }
    s.push_str(&after_main);
    if let Some(line) = after_main_residue(p) {
        let _ = writeln!(s, "{line}");
    }
    if detail {
        details(&mut s, p);
    } else {
        let _ = writeln!(s, "{MORE}");
    }
    s
}

/// How ldcost's stops after `main` were taken out, when they are many: at their replayed
/// cost and the residue the runs resolved beyond it ([`crate::attribute::profile::residue`]);
/// or, when the runs did not resolve a residue but the cross-run slope of CPU over stops is
/// above the replays, how much of the figures after `main` may still be ldcost's at most.
/// None when there is nothing to say.
fn after_main_residue(p: &ProfileSection) -> Option<String> {
    let o = &p.overhead;
    let stops: Vec<f64> = p
        .raw
        .iter()
        .filter(|r| r.instrumentation == crate::record::Instrumentation::PerObject)
        .filter_map(|r| r.after_main.as_ref())
        .map(|a| a.stops as f64)
        .collect();
    let stops = crate::stats::median(&stops)?;
    // Fewer stops than this are within the runs' own noise, as at start-up.
    if stops < 100.0 {
        return None;
    }
    if let Some(r) = &o.residue {
        return Some(format!(
            "  ldcost's {stops:.0} stops after main are taken out at {:.1} µs each: {:.1} µs replayed in each run, and {:.1} µs [{:.1}, {:.1}] more that the boundaries-only runs, taken in turns, show a stop cost (the target's work refilling what each stop disturbed), out of these figures and of the program's own part",
            (r.replay_ns + r.ns_per_stop) / 1e3,
            r.replay_ns / 1e3,
            r.ns_per_stop / 1e3,
            r.low_ns / 1e3,
            r.high_ns / 1e3,
        ));
    }
    let replay = o.ns_per_stop?;
    let residue = o
        .ns_per_stop_slope
        .map(|slope| (slope, stops * (slope - replay)));
    match residue {
        // A slope within a quarter of the replays, or below a tenth of a millisecond in all,
        // is within the runs' own noise.
        Some((slope, residue)) if slope > 1.25 * replay && residue >= 100_000.0 => Some(format!(
            "  caveat: {stops:.0} stops after main are taken out at their replayed cost ({:.1} µs each); the runs did not resolve what they cost beyond it, but by the slope of CPU over stops across runs each cost the target {:.1} µs: up to {:.3} ms of the figures after main may still be ldcost's",
            replay / 1e3,
            slope / 1e3,
            residue / 1e6
        )),
        _ => Some(format!(
            "  ldcost's {stops:.0} stops after main are taken out at their replayed cost ({:.1} µs each); the runs did not resolve a cost beyond it (more runs, -n, may)",
            replay / 1e3
        )),
    }
}

/// What `--detail` adds after the tables: the whole process, the exit, the instrumentation's
/// own cost, the cross-checks.
fn details(s: &mut String, p: &ProfileSection) {
    let _ = writeln!(s);
    match (&p.user_ns, &p.kernel_ns) {
        (Some(u), Some(k)) => {
            let _ = writeln!(
                s,
                "Whole process: user {:.3} ms, kernel {:.3} ms (the kernel's tick-sampled split; task-clock itself cannot be split on this kernel)",
                u.median / 1e6,
                k.median / 1e6
            );
        }
        _ => {
            let _ = writeln!(
                s,
                "Whole process: user/kernel split not available (the run is shorter than one clock tick; task-clock ignores exclude_user/exclude_kernel)"
            );
        }
    }
    if let Some(c) = &p.children_task_clock_ns {
        // The inherited counters are read after the target is gone: their excess over the
        // last stop's reading is the target's own exit as well as any threads and children
        // (a program with neither still shows a few µs).
        let _ = writeln!(
            s,
            "CPU after the last stop and in other tasks (the target's exit, and its threads and child processes if it has any; not in the phases): {:.3} ms",
            c.median / 1e6
        );
    }
    if let Some(e) = &p.exit_uncounted_ns {
        let _ = writeln!(
            s,
            "Exit teardown after the per-task counters stop: {:.3} ms (the scheduler's CPU of the target from its exit stop to its death, less what the counters still counted; this kernel stops a task's perf events before its exit frees the memory); not in the phases, but counted in the CPU per exec (the whole the category shares are scaled to)",
            e.median / 1e6
        );
    }
    let o = &p.overhead;
    let _ = writeln!(
        s,
        "\nInstrumentation's own cost (total CPU time of the target)"
    );
    if o.uninstrumented_ns.is_none() && o.coarse_ns.is_none() {
        let fate = match o.ns_per_stop {
            // Each stop replayed in the same run (src/trace/stopcost.rs): no reference needed.
            Some(c) => format!(
                "their cost ({:.1} µs per stop, replayed in the same runs) subtracted from the phases",
                c / 1e3
            ),
            None => "their cost included in the phases".to_string(),
        };
        let _ = writeln!(
            s,
            "  not measured (no reference runs, --no-reference): per object {} ms with {:.0} ptrace stops, {fate}",
            ms(&o.per_object_ns),
            o.per_object_stops
        );
    } else {
        let _ = writeln!(
            s,
            "  without ptrace {}; boundaries only {}; per object {} ({:.0} ptrace stops{})",
            reference_ms(p, &o.uninstrumented_ns, Instrumentation::None),
            reference_ms(p, &o.coarse_ns, Instrumentation::Coarse),
            reference_ms(p, &o.per_object_ns, Instrumentation::PerObject),
            o.per_object_stops,
            o.ns_per_stop
                .map(|n| format!(", about {:.1} µs each", n / 1e3))
                .unwrap_or_default()
        );
        if let Some(u) = crate::attribute::summary::uninstrumented_per_exec(p) {
            let _ = writeln!(
                s,
                "  without ptrace, per exec as the summary counts it: {:.3} ms (with their threads' and children's CPU and the exit teardown no counter sees)",
                u / 1e6
            );
        }
    }
    let within = |a: f64| {
        if (a - 1.0).abs() <= 0.10 {
            "within 10%"
        } else {
            "NOT within 10%"
        }
    };
    if let Some(a) = o.agreement_coarse {
        let _ = writeln!(
            s,
            "  boundaries-only total / uninstrumented total = {a:.2} ({}, no correction)",
            within(a)
        );
    }
    if let (Some(a), Some(r)) = (o.agreement, o.agreement_raw) {
        let _ = writeln!(
            s,
            "  per-object phases: sum / uninstrumented = {r:.2} as measured, {a:.2} after subtracting the stops' cost ({})",
            within(a)
        );
        let _ = writeln!(
            s,
            "  correction: each phase loses (stops charged to it) x (cost of a stop in that run: its breakpoint stops replayed once with no work between, median, at most its cheapest segment per stop)"
        );
    }
    if let Some(l) = super::fault_gap::line(p) {
        let _ = writeln!(s, "{l}");
    }

    if p.ld_debug.is_some() || p.prediction.is_some() {
        cross_check(s, p);
    }
}

/// glibc's own account (LD_DEBUG=statistics) beside `deps`' prediction. Without glibc's run
/// (`--no-ld-debug`, or it failed) only the prediction is shown, under a title that says so:
/// no "glibc n/a" lines.
fn cross_check(s: &mut String, p: &ProfileSection) {
    let Some(g) = &p.ld_debug else {
        if let (Some(pr), false) = (&p.prediction, matches!(p.detail, Detail::Static)) {
            let _ = writeln!(
                s,
                "\nPredicted by ldcost deps (glibc's LD_DEBUG=statistics not gathered: no cross-check)"
            );
            let _ = writeln!(
                s,
                "  symbol lookups at start-up: {} (+{} from cache) including ld.so's own {}",
                pr.lookups,
                pr.cache_hits,
                crate::attribute::link_cost::RTLD_INTERNAL_LOOKUPS
            );
            let _ = writeln!(
                s,
                "  relative relocations: {} (DT_RELACOUNT {})",
                pr.relative_total, pr.relacount
            );
            let _ = writeln!(s, "  PLT slots left to lazy binding: {}", pr.lazy_deferred);
        }
        return;
    };
    let _ = writeln!(
        s,
        "\nCross-check with glibc (LD_DEBUG=statistics, separate run) and ldcost deps"
    );
    if let (Some(tot), Some(rel)) = (g.startup_cycles, g.relocation_cycles) {
        let _ = writeln!(
            s,
            "  glibc: {tot} cycles in ld.so, {rel} ({:.1}%) in relocation, {} ({:.1}%) loading objects",
            rel as f64 * 100.0 / tot.max(1) as f64,
            g.load_cycles.unwrap_or(0),
            g.load_cycles.unwrap_or(0) as f64 * 100.0 / tot.max(1) as f64
        );
    }
    if let (Some(_), Detail::Static) = (&p.prediction, &p.detail) {
        let _ = writeln!(
            s,
            "  static program: no ld.so, so no start-up symbol lookups for glibc to count"
        );
    } else if let Some(pr) = &p.prediction {
        let opt = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_else(|| "n/a".into());
        let _ = writeln!(
            s,
            "  symbol lookups at start-up: glibc {} (+{} from cache); deps predicts {} (+{}) including ld.so's own {}",
            opt(g.relocations),
            opt(g.relocations_from_cache),
            pr.lookups,
            pr.cache_hits,
            crate::attribute::link_cost::RTLD_INTERNAL_LOOKUPS
        );
        let packed = pr.relative_total.saturating_sub(pr.relacount);
        let _ = writeln!(
            s,
            "  relative relocations (DT_RELACOUNT): glibc {}; deps {}{}",
            opt(g.relative_relocations),
            pr.relacount,
            if packed > 0 {
                format!(
                    " (glibc counts DT_RELACOUNT only: {packed} more relative relocations, DT_RELR-packed or past the count, {} in all)",
                    pr.relative_total
                )
            } else {
                String::new()
            }
        );
        let _ = writeln!(s, "  PLT slots left to lazy binding: {}", pr.lazy_deferred);
        let _ = writeln!(
            s,
            "  per object: 'lookups (deps)' counts every start-up lookup; glibc's bindings omit cache hits and failed weak lookups and add ld.so's own (malloc on the executable, __libc_early_init on libc)"
        );
    }
}

/// The phase × category table: for each phase (and its top objects), how its sampled time
/// splits into categories. Times are the category table's (pooled share × the measured CPU),
/// so each row's categories add up to the row.
pub fn phase_table(b: &crate::attribute::breakdown::Breakdown) -> String {
    use crate::attribute::breakdown::PhaseRow;
    const TOP_OBJECTS: usize = 3;
    let mut s = String::new();
    if b.phase_table.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "\n{} time by phase and category (µs per {}; each row = its categories, largest first; same estimator as above)",
        b.section, b.section
    );
    // Phases in time order, each with its rows.
    let mut phases: Vec<(&str, Vec<&PhaseRow>)> = Vec::new();
    for r in &b.phase_table {
        match phases.iter_mut().find(|(p, _)| *p == r.phase) {
            Some((_, v)) => v.push(r),
            None => phases.push((&r.phase, vec![r])),
        }
    }
    let mut t = Table::new();
    t.load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled);
    t.set_header(vec!["phase / object", "µs", "share", "= categories (µs)"]);
    for (phase, rows) in &phases {
        let merged = merge(rows);
        let with_objects = rows.iter().any(|r| r.object.is_some());
        let name = if with_objects && rows.len() > 1 {
            format!("{phase} ({} objects)", rows.len())
        } else {
            match &merged.object {
                Some(o) => format!("{phase}: {}", short(o)),
                None => phase.to_string(),
            }
        };
        t.add_row(row_cells(name, &merged));
        if with_objects && rows.len() > 1 {
            let mut by_cost = rows.clone();
            // By time, not samples: with phase-weighted shares a span's samples are not its
            // weight (and a span with no sample of its own has time).
            by_cost.sort_by(|a, b| b.ns_per_exec_or_fork.total_cmp(&a.ns_per_exec_or_fork));
            for r in by_cost.iter().take(TOP_OBJECTS) {
                let o = r.object.as_deref().map(short).unwrap_or_default();
                t.add_row(row_cells(format!("  {o}"), r));
            }
            if by_cost.len() > TOP_OBJECTS {
                let rest = merge(&by_cost[TOP_OBJECTS..]);
                t.add_row(row_cells(
                    format!("  ({} other objects)", by_cost.len() - TOP_OBJECTS),
                    &rest,
                ));
            }
        }
    }
    for i in 1..3 {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let _ = writeln!(s, "{t}");
    s
}

/// Rows of one phase added up, cell by cell (same denominator: the sums stay exact).
fn merge(rows: &[&crate::attribute::breakdown::PhaseRow]) -> crate::attribute::breakdown::PhaseRow {
    use crate::attribute::breakdown::{PhaseCell, PhaseRow};
    let mut cells: Vec<PhaseCell> = Vec::new();
    for r in rows {
        for c in &r.categories {
            match cells.iter_mut().find(|x| x.category == c.category) {
                Some(x) => {
                    x.samples += c.samples;
                    x.share += c.share;
                    x.ns_per_exec_or_fork += c.ns_per_exec_or_fork;
                }
                None => cells.push(c.clone()),
            }
        }
    }
    cells.sort_by(|a, b| b.ns_per_exec_or_fork.total_cmp(&a.ns_per_exec_or_fork));
    PhaseRow {
        span: String::new(),
        phase: rows.first().map(|r| r.phase.clone()).unwrap_or_default(),
        object: if rows.len() == 1 {
            rows[0].object.clone()
        } else {
            None
        },
        samples: rows.iter().map(|r| r.samples).sum(),
        share: rows.iter().map(|r| r.share).sum(),
        ns_per_exec_or_fork: rows.iter().map(|r| r.ns_per_exec_or_fork).sum(),
        categories: cells,
    }
}

/// A row's cells: its total, its share, and its categories (those that make up 95% of its
/// time, at most five, largest first; the rest summed as "others").
fn row_cells(name: String, r: &crate::attribute::breakdown::PhaseRow) -> Vec<String> {
    let mut parts = Vec::new();
    let mut shown = 0.0;
    let mut cells: Vec<_> = r.categories.iter().collect();
    cells.sort_by(|a, b| b.ns_per_exec_or_fork.total_cmp(&a.ns_per_exec_or_fork));
    for c in &cells {
        if parts.len() == 5 || shown >= 0.95 * r.ns_per_exec_or_fork {
            break;
        }
        shown += c.ns_per_exec_or_fork;
        parts.push(format!(
            "{:.1} {}",
            c.ns_per_exec_or_fork / 1e3,
            c.category.label()
        ));
    }
    if r.ns_per_exec_or_fork <= 0.0 && r.samples > 0 {
        // Phase-weighted: samples that stand for no measured CPU (see the notes above).
        return vec![
            name,
            "0.0".into(),
            "0.0%".into(),
            format!("({} samples, left out: no measured CPU)", r.samples),
        ];
    }
    let rest: Vec<_> = cells.iter().skip(parts.len()).collect();
    if !rest.is_empty() {
        let ns: f64 = rest.iter().map(|c| c.ns_per_exec_or_fork).sum();
        parts.push(format!("{:.1} in {} others", ns / 1e3, rest.len()));
    }
    vec![
        name,
        format!("{:.1}", r.ns_per_exec_or_fork / 1e3),
        format!("{:.1}%", r.share * 100.0),
        format!("= {}", parts.join(" + ")),
    ]
}

#[cfg(test)]
mod tests {
    /// Runs left out are said in the overhead line and counted, never shown as a figure.
    #[test]
    fn runs_left_out_are_said_in_the_text() {
        let s = crate::attribute::profile::tests::left_out_section();
        let text = crate::report::profile_report(Some(&s), None, false, &[], true);
        assert!(
            text.contains(
                "without ptrace 0.000 ms; boundaries only not measured (1 of 1 boundaries-only run timed out: left out); per object "
            ),
            "{text}"
        );
        assert!(
            text.contains("1 of 4 measured runs killed by SIGKILL: left out"),
            "{text}"
        );
    }
}

#[cfg(test)]
mod residue_tests {
    use super::after_main_residue;
    use crate::record::after_main::AfterMain;
    use crate::record::Instrumentation;

    /// 846 stops after main, replayed at 2.8 µs, costing 5.2 µs each across runs: up to
    /// 846 × 2.4 µs of the figures after main are ldcost's, and the report says so; replays
    /// that match the slope, or few stops, say nothing.
    #[test]
    fn the_stops_cost_the_replays_miss_is_said_under_the_section() {
        let mut p = crate::attribute::profile::tests::left_out_section();
        let mut n = 0;
        for r in p.raw.iter_mut() {
            if r.instrumentation == Instrumentation::PerObject {
                let mut a = AfterMain::not_available("test");
                a.stops = 846;
                r.after_main = Some(a);
                n += 1;
            }
        }
        assert!(n > 0, "the section has per-object runs");
        p.overhead.ns_per_stop = Some(2_800.0);
        p.overhead.ns_per_stop_slope = Some(5_200.0);
        let line = after_main_residue(&p).expect("a caveat");
        assert!(
            line.contains("caveat: 846 stops after main")
                && line.contains("(2.8 µs each)")
                && line.contains("5.2 µs")
                && line.contains("up to 2.030 ms"),
            "{line}"
        );
        // A slope close to the replays: said, without a caveat.
        p.overhead.ns_per_stop_slope = Some(3_000.0);
        let line = after_main_residue(&p).expect("a line");
        assert!(
            line.contains("846 stops after main are taken out at their replayed cost (2.8 µs each); the runs did not resolve")
                && !line.contains("caveat"),
            "{line}"
        );
        p.overhead.ns_per_stop_slope = Some(5_200.0);
        for r in p.raw.iter_mut() {
            if let Some(a) = r.after_main.as_mut() {
                a.stops = 40;
            }
        }
        assert_eq!(after_main_residue(&p), None);
    }

    /// A resolved residue is said as what was taken out, with its interval.
    #[test]
    fn a_residue_taken_out_is_said_with_its_interval() {
        let mut p = crate::attribute::profile::tests::left_out_section();
        for r in p.raw.iter_mut() {
            if r.instrumentation == Instrumentation::PerObject {
                let mut a = AfterMain::not_available("test");
                a.stops = 1203;
                r.after_main = Some(a);
            }
        }
        p.overhead.residue = Some(crate::attribute::profile::residue::Residue {
            ns_per_stop: 2_480.0,
            low_ns: 1_900.0,
            high_ns: 3_100.0,
            replay_ns: 3_020.0,
        });
        let line = after_main_residue(&p).expect("a line");
        assert!(
            line.contains("1203 stops after main are taken out at 5.5 µs each: 3.0 µs replayed")
                && line.contains("2.5 µs [1.9, 3.1] more that the boundaries-only runs")
                && line.contains("and of the program's own part"),
            "{line}"
        );
    }
}
