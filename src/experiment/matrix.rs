//! Experiment 4, the fork+execl matrix (seed 003, Sasha Pachev and Dan Nelson, 1998–99):
//! static/dynamic parent × static/dynamic child, created with fork(), vfork() (the seed's "v"
//! column) and posix_spawn(), in ms per spawn; and the same with a large parent (a touched
//! heap), where fork() must copy the page tables that vfork() and posix_spawn() share.
//!
//! In: [`Settings`]. Out: a [`Section`] in the seed's layout beside its Linux, FreeBSD and
//! SunOS figures, a bar plot, the directions checked, and `probes/matrix_spawn.c`'s printouts.

use std::time::Duration;

use super::plot;
use super::runner::{self, fmt, Program};
use super::section::{Check, ExperimentError, Plot, Progress, Section, Settings, Table};
use super::seeds::{Linkage, Seed};
use crate::report::schema::experiment as doc;
use crate::stats::median_finite;

pub const SOURCE: &str = include_str!("../../probes/matrix_spawn.c");

/// The seed's pairs, in its order: (parent, child).
pub const PAIRS: [(Linkage, Linkage); 4] = [
    (Linkage::Static, Linkage::Dynamic),
    (Linkage::Static, Linkage::Static),
    (Linkage::Dynamic, Linkage::Dynamic),
    (Linkage::Dynamic, Linkage::Static),
];

/// The seed's machines and figures, ms per fork()+execl() for [`PAIRS`] in order, with the
/// vfork ("v=") figure where the seed gave one.
/// One cell of the seed: ms with fork, and with vfork where given.
pub type SeedCell = (f64, Option<f64>);

/// (3.14 ms is the seed's SunOS figure, not an approximation of pi.)
#[allow(clippy::approx_constant)]
pub const SEED_FIGURES: [(&str, [SeedCell; 4]); 5] = [
    (
        "Linux 2.0.33, Pentium 166",
        [(8.36, None), (1.95, None), (8.80, None), (2.48, None)],
    ),
    (
        "Linux 2.0.36, Pentium II 350",
        [(2.31, None), (0.43, None), (2.45, None), (0.55, None)],
    ),
    (
        "FreeBSD 4.0-CURRENT, P/166",
        [
            (6.59, Some(6.19)),
            (1.41, Some(0.96)),
            (7.31, Some(6.21)),
            (2.07, Some(0.96)),
        ],
    ),
    (
        "FreeBSD 2.2.8-STABLE, PII/400",
        [(2.38, None), (0.63, None), (2.68, None), (0.87, None)],
    ),
    (
        "SunOS 5.6, Sparc 400 MHz x6",
        [
            (3.14, Some(2.94)),
            (0.88, Some(0.69)),
            (3.68, Some(2.95)),
            (1.41, Some(0.65)),
        ],
    ),
];

pub const METHODS: [&str; 3] = ["fork", "vfork", "posix_spawn"];

/// The large parent's heap, MiB (written before the loop).
pub const LARGE_HEAP_MIB: u32 = 64;
/// Loops of the large-parent cells per round (each a fresh parent); a cell's figure is the
/// median over every round's loops. Five: a loop's figure moves by several times with the
/// machine's other load, and the median of more loops moves less; `--quick`'s three rounds
/// of five loops of 30 spawns cost it a few seconds.
pub const LARGE_LOOPS: u32 = 5;

/// `matrix_spawn: METHOD N spawns, X us per spawn (wall), heap H MiB`: (method, spawns, µs).
pub fn parse_spawn(text: &str) -> Option<(String, u64, f64)> {
    text.lines().find_map(|l| {
        let rest = l.trim().strip_prefix("matrix_spawn: ")?;
        let (method, rest) = rest.split_once(' ')?;
        let (n, rest) = rest.split_once(" spawns, ")?;
        let (us, _) = rest.split_once(" us per spawn (wall), heap ")?;
        let us = us
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x > 0.0)?;
        Some((method.to_string(), n.parse().ok()?, us))
    })
}

fn pair_name(p: Linkage, c: Linkage) -> String {
    let cap = |l: Linkage| match l {
        Linkage::Static => "Static",
        Linkage::Dynamic => "Dynamic",
    };
    format!("{} parent/{} child", cap(p), cap(c))
}

#[derive(Debug, Clone)]
struct Cell {
    parent: Linkage,
    child: Linkage,
    method: &'static str,
    heap_mib: u32,
    /// µs per spawn, one per run.
    us: Vec<f64>,
    printouts: Vec<String>,
}

impl Cell {
    fn ms(&self) -> f64 {
        median_finite(&self.us).unwrap_or(f64::NAN) / 1e3
    }
}

fn build(
    name: &'static str,
    src: &str,
    l: Linkage,
    s: &Settings,
) -> Result<Program, ExperimentError> {
    runner::build(name, src, l, &[], &s.work_dir)?.map_err(|sk| ExperimentError::Run {
        what: sk.what,
        detail: sk.reason,
    })
}

/// Runs the experiment.
pub fn run(settings: &Settings, progress: &dyn Progress) -> Result<Section, ExperimentError> {
    let runs = settings.runs_or(3, 5);
    // The large parent: the same heap in both plans, so that --quick reads what a full run
    // does; each of its loops spawns enough children that the first fork (which also pays for
    // the parent's page-table and THP state settling after the heap was written) is a small
    // share, and its figure is the median of LARGE_LOOPS loops per round.
    let (count, big_count, heap_mib) = if settings.quick {
        (15u32, 30u32, LARGE_HEAP_MIB)
    } else {
        (150, 50, LARGE_HEAP_MIB)
    };
    progress.step("building the matrix's parents and children");
    let mut parent = Vec::new();
    let mut child = Vec::new();
    for l in [Linkage::Static, Linkage::Dynamic] {
        parent.push((l, build("matrix_spawn", SOURCE, l, settings)?));
        child.push((l, build("child", Seed::Child.source(), l, settings)?));
    }
    let get = |v: &[(Linkage, Program)], l: Linkage| {
        v.iter()
            .find(|(k, _)| *k == l)
            .map(|(_, p)| p.path.clone())
            .unwrap_or_default()
    };
    let mut plan: Vec<(Linkage, Linkage, &'static str, u32, u32)> = Vec::new();
    for (p, c) in PAIRS {
        for m in METHODS {
            plan.push((p, c, m, 0, count));
        }
    }
    for m in METHODS {
        plan.push((Linkage::Static, Linkage::Static, m, heap_mib, big_count));
    }
    let mut cells: Vec<Cell> = plan
        .iter()
        .map(|&(p, c, method, heap, _)| Cell {
            parent: p,
            child: c,
            method,
            heap_mib: heap,
            us: Vec::new(),
            printouts: Vec::new(),
        })
        .collect();
    // Rounds: every cell once per round, so that a burst of other load on this shared machine
    // falls on all cells alike instead of on one; each cell's figure is its median.
    for r in 0..runs {
        progress.step(&format!("matrix: round {}/{runs}", r + 1));
        for (cell, &(p, c, method, heap, n)) in cells.iter_mut().zip(&plan) {
            let loops = if heap > 0 { LARGE_LOOPS } else { 1 };
            for _ in 0..loops {
                let args = [
                    method.to_string(),
                    get(&child, c).to_string_lossy().into_owned(),
                    n.to_string(),
                    heap.to_string(),
                ];
                let parent_path = get(&parent, p);
                let out = runner::run(&parent_path, &args, Duration::from_secs(300))?;
                let (_, _, us) = parse_spawn(&out).ok_or_else(|| ExperimentError::Run {
                    what: parent_path.display().to_string(),
                    detail: format!("printed no matrix_spawn line: {:?}", out.trim()),
                })?;
                cell.us.push(us);
                cell.printouts.push(out);
            }
        }
    }
    section(settings, runs, count, big_count, heap_mib, cells)
}

/// A direction "`fast` is faster than `slow`" judged on the two cells' loop figures (µs per
/// spawn, one per loop): decided only when their ranges do not overlap, since a cell's figure
/// moves by several times between loops on a loaded machine and a comparison of two medians
/// alone would then answer at random; otherwise "not decided: noisy (ranges …)".
pub(crate) fn direction(claim: String, fast: (&str, &[f64]), slow: (&str, &[f64])) -> Check {
    let ms = |v: &[f64]| v.iter().map(|x| x / 1e3).collect::<Vec<f64>>();
    Check::ranked(
        claim,
        (fast.0, &ms(fast.1)),
        (slow.0, &ms(slow.1)),
        "ms",
        "loop",
    )
}

fn section(
    settings: &Settings,
    runs: u32,
    count: u32,
    big_count: u32,
    heap_mib: u32,
    cells: Vec<Cell>,
) -> Result<Section, ExperimentError> {
    let find = |p: Linkage, c: Linkage, m: &str, big: bool| {
        cells
            .iter()
            .find(|x| x.parent == p && x.child == c && x.method == m && (x.heap_mib > 0) == big)
    };
    let ms = |p, c, m, big| find(p, c, m, big).map(|x| x.ms()).unwrap_or(f64::NAN);
    let mut columns = vec!["Avg fork() + execl() time, ms".to_string()];
    columns.extend(SEED_FIGURES.iter().map(|(m, _)| format!("seed 003: {m}")));
    columns.extend(METHODS.iter().map(|m| format!("here: {m}")));
    let mut rows = Vec::new();
    for (i, (p, c)) in PAIRS.iter().enumerate() {
        let mut row = vec![pair_name(*p, *c)];
        for (_, figs) in SEED_FIGURES {
            let (f, v) = figs[i];
            row.push(match v {
                Some(v) => format!("{f:.2} v={v:.2}"),
                None => format!("{f:.2}"),
            });
        }
        for m in METHODS {
            row.push(fmt(ms(*p, *c, m, false)));
        }
        rows.push(row);
    }
    let table = Table {
        title: "the fork+execl matrix (seed 003, 1998–99): ms per fork() + execl() + wait".into(),
        columns,
        rows,
        caption: Some(format!(
            "Seed columns copied from the seed (\"v=\": the same with vfork()). Ours: \
             probes/matrix_spawn.c spawning probes/child.c {count} times per round, wall time, \
             median of {runs} round(s) (each round runs every cell once); the parent is small (no \
             extra heap)."
        )),
    };
    let mut big_rows = Vec::new();
    for m in METHODS {
        big_rows.push(vec![
            m.to_string(),
            fmt(ms(Linkage::Static, Linkage::Static, m, false)),
            fmt(ms(Linkage::Static, Linkage::Static, m, true)),
        ]);
    }
    let big = Table {
        title: format!(
            "the fork+execl matrix (seed 003): a large parent ({heap_mib} MiB touched heap), \
             ms per spawn"
        ),
        columns: [
            "how".to_string(),
            "static parent, no heap".into(),
            format!("static parent, {heap_mib} MiB heap"),
        ]
        .to_vec(),
        rows: big_rows,
        caption: Some(format!(
            "Static parent and static child; with the heap, the median of {} loops of \
             {big_count} spawns ({LARGE_LOOPS} per round, each a fresh parent). Dan \
             Nelson: \"why copy your page tables when you're going to throw them away in the \
             next syscall?\"",
            runs * LARGE_LOOPS
        )),
    };
    let loops = |p, c, m, big| find(p, c, m, big).map(|x| x.us.clone()).unwrap_or_default();
    let mut checks = Vec::new();
    for p in [Linkage::Static, Linkage::Dynamic] {
        checks.push(direction(
            format!(
                "static child faster than dynamic child ({} parent, fork)",
                p.name()
            ),
            ("static child", &loops(p, Linkage::Static, "fork", false)),
            ("dynamic child", &loops(p, Linkage::Dynamic, "fork", false)),
        ));
    }
    let (f, v) = (
        ms(Linkage::Static, Linkage::Static, "fork", true),
        ms(Linkage::Static, Linkage::Static, "vfork", true),
    );
    checks.push(direction(
        format!("vfork+exec cheaper than fork+exec for a {heap_mib} MiB parent"),
        (
            "vfork",
            &loops(Linkage::Static, Linkage::Static, "vfork", true),
        ),
        (
            "fork",
            &loops(Linkage::Static, Linkage::Static, "fork", true),
        ),
    ));
    let categories: Vec<String> = PAIRS
        .iter()
        .map(|(p, c)| format!("{}/{}", p.name(), c.name()))
        .chain(std::iter::once(format!(
            "static/static, {heap_mib} MiB parent"
        )))
        .collect();
    let groups: Vec<String> = METHODS.iter().map(|m| m.to_string()).collect();
    let mut values: Vec<Vec<Option<f64>>> = PAIRS
        .iter()
        .map(|(p, c)| {
            METHODS
                .iter()
                .map(|m| Some(ms(*p, *c, m, false)).filter(|x| x.is_finite()))
                .collect()
        })
        .collect();
    values.push(
        METHODS
            .iter()
            .map(|m| Some(ms(Linkage::Static, Linkage::Static, m, true)).filter(|x| x.is_finite()))
            .collect(),
    );
    let svg = plot::bar_chart(
        "fork+execl matrix (seed 003): parent/child linkage",
        "ms per spawn (fork/vfork/posix_spawn + execl + wait)",
        &categories,
        &groups,
        &values,
    )
    .map_err(|e| ExperimentError::Run {
        what: "matrix plot".into(),
        detail: e,
    })?;
    let findings = vec![super::section::Finding {
        key: "matrix.large_parent_fork_over_vfork".into(),
        text: format!(
            "fork+execl from a {heap_mib} MiB parent costs {} the vfork+execl",
            runner::ratio(f / v)
        ),
        value: f / v,
        unit: "ratio".into(),
        interval: None,
    }];
    Ok(Section {
        name: "matrix".into(),
        title: "the fork+execl matrix (seed 003, 1998–99)".into(),
        seed: Some(Seed::ForkExec.seed_file().into()),
        intro: vec![format!(
            "A parent creates a child that execl()s a program whose main returns 0, and waits \
             for it: static or dynamic parent, static or dynamic child, by fork(), vfork() or \
             posix_spawn(){}.",
            if settings.quick {
                " (quick run: few spawns per cell, three rounds)"
            } else {
                ""
            }
        )],
        tables: vec![table, big],
        plots: vec![Plot {
            file_name: "matrix-fork-execl.svg".into(),
            title: "the fork+execl matrix as bars".into(),
            caption: None,
            svg,
        }],
        flamegraphs: Vec::new(),
        findings,
        checks,
        skipped: Vec::new(),
        notes: vec![
            "glibc's posix_spawn() creates the child with clone(CLONE_VM | CLONE_VFORK): like \
             vfork(), it copies no page tables."
                .into(),
        ],
        data: serde_json::to_value(doc::MatrixData {
            count,
            large_parent_count: big_count,
            heap_mib,
            runs,
            cells: cells
                .into_iter()
                .map(|c| doc::MatrixCell {
                    parent: c.parent.name().into(),
                    child: c.child.name().into(),
                    method: c.method.into(),
                    heap_mib: c.heap_mib,
                    us: c.us,
                    printouts: c.printouts,
                })
                .collect(),
        })
        .unwrap_or(serde_json::Value::Null),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parents_line_parses() {
        let out = "Avg fork() + execl() time = 1.98 ms\nmatrix_spawn: fork 100 spawns, 1984.098 \
                   us per spawn (wall), heap 0 MiB\n";
        assert_eq!(parse_spawn(out), Some(("fork".into(), 100, 1984.098)));
        assert_eq!(
            parse_spawn("matrix_spawn: posix_spawn 5 spawns, 2.5 us per spawn (wall), heap 64 MiB"),
            Some(("posix_spawn".into(), 5, 2.5))
        );
        assert_eq!(
            parse_spawn("matrix_spawn: fork 1 spawns, 0 us per spawn (wall), heap 0 MiB"),
            None
        );
        assert!(SOURCE.contains(
            "\"matrix_spawn: %s %ld spawns, %.3f us per spawn (wall), heap %ld MiB\\n\""
        ));
    }

    #[test]
    fn a_direction_is_judged_only_when_the_ranges_do_not_overlap() {
        let c = |fast: &[f64], slow: &[f64]| {
            direction("a faster than b".into(), ("a", fast), ("b", slow))
        };
        // Apart, the right way round: holds.
        let h = c(&[250.0, 266.0, 300.0], &[2000.0, 2200.0, 3600.0]);
        assert!(h.holds && h.decided(), "{}", h.detail);
        assert_eq!(
            h.detail,
            "a 0.266 ms (range 0.250–0.300 over 3 loops), b 2.200 ms (range 2.000–3.600 over 3 loops)"
        );
        // Apart, the wrong way round: does not hold, decided.
        let f = c(&[2000.0, 2200.0, 3600.0], &[250.0, 266.0, 300.0]);
        assert!(!f.holds && f.decided(), "{}", f.detail);
        // The run that was reported: vfork's loops 0.593 and 2.940 ms around fork's; the
        // medians alone would call vfork slower.
        let o = c(&[593.0, 2940.0, 2577.0], &[2200.0, 3583.0, 1432.0]);
        assert!(!o.holds && !o.decided(), "{}", o.detail);
        assert!(
            o.detail.starts_with(
                "not decided: noisy, the ranges overlap: a 2.577 ms (range 0.593–2.940"
            ),
            "{}",
            o.detail
        );
        // Touching ranges overlap too.
        assert!(!c(&[1.0, 2.0], &[2.0, 3.0]).decided());
        // One loop per cell gives no range.
        let one = c(&[100.0], &[900.0]);
        assert!(!one.decided() && one.detail.contains("one loop gives no range"));
        // No loop at all: said, never a zero.
        let none = c(&[], &[900.0, 950.0]);
        assert!(
            !none.decided() && none.detail.contains("a not available"),
            "{}",
            none.detail
        );
    }

    #[test]
    fn the_seed_figures_are_in_the_seeds_order() {
        // Static parent/Static child is the cheapest of each machine's four, as in the seed.
        for (m, f) in SEED_FIGURES {
            let min = f.iter().map(|x| x.0).fold(f64::MAX, f64::min);
            assert_eq!(min, f[1].0, "{m}");
        }
        assert_eq!(
            pair_name(PAIRS[0].0, PAIRS[0].1),
            "Static parent/Dynamic child"
        );
    }
}
