//! Experiment 3, BYTE (seed 002, Jon Tombs, 1992): the BYTE UNIX Benchmarks' Process Creation
//! (fork + exit + wait per second) and Execl Throughput (execl of itself per second) loops,
//! for a static build, a dynamic one and a dynamic one with seed 001's unused libraries — the
//! seed's "depends very much on the process being invoked", quantified.
//!
//! In: [`Settings`]. Out: a [`Section`] with the seed's three Linux 0.97 score lines beside
//! ours, the ratios to the static build, and the raw printouts of `probes/byte_spawn.c` and
//! `probes/byte_execl.c` in `data`.

use std::time::Duration;

use super::runner::{self, fmt, ratio};
use super::section::{
    Check, ExperimentError, Finding, Progress, Section, Settings, Skipped, Table,
};
use super::seeds::{Linkage, SEED_LIBS};
use crate::report::schema::experiment as doc;
use crate::stats::median_finite;

/// The seed's scores: (system, Process Creation lps, Execl Throughput lps), 486/33, 16 MB.
pub const SEED_FIGURES: [(&str, f64, f64); 3] = [
    ("Linux 0.97-14, gcc 2.2.2", 102.1, 129.9),
    ("Linux 0.97 pl1 (0.97-19), gcc 2.2.2d", 64.2, 59.1),
    ("Linux 0.97 pl2 (0.97.pl2-13), gcc 2.2.2d", 57.9, 55.0),
];

pub const SPAWN_SOURCE: &str = include_str!("../../probes/byte_spawn.c");
pub const EXECL_SOURCE: &str = include_str!("../../probes/byte_execl.c");

/// `byte_spawn: N loops in S s, X lps (wall)` or `byte_execl: N execs in S s, X lps (wall)`:
/// (count, seconds, lps).
pub fn parse_score(text: &str) -> Option<(u64, f64, f64)> {
    text.lines().find_map(|l| {
        let rest = l
            .trim()
            .strip_prefix("byte_spawn: ")
            .or_else(|| l.trim().strip_prefix("byte_execl: "))?;
        let (n, rest) = rest.split_once(' ')?;
        let rest = rest
            .strip_prefix("loops in ")
            .or_else(|| rest.strip_prefix("execs in "))?;
        let (s, rest) = rest.split_once(" s, ")?;
        let lps = rest.strip_suffix(" lps (wall)")?;
        let (n, s, lps) = (
            n.parse().ok()?,
            s.parse::<f64>().ok()?,
            lps.parse::<f64>().ok()?,
        );
        (s > 0.0 && lps.is_finite() && lps >= 0.0).then_some((n, s, lps))
    })
}

#[derive(Debug, Clone)]
struct Row {
    label: String,
    spawn_lps: Vec<f64>,
    execl_lps: Vec<f64>,
    printouts: Vec<String>,
    commands: Vec<String>,
}

/// Runs the experiment.
pub fn run(settings: &Settings, progress: &dyn Progress) -> Result<Section, ExperimentError> {
    let runs = settings.runs_or(1, 3);
    let seconds: f64 = if settings.quick { 0.4 } else { 2.0 };
    let secs_arg = format!("{seconds}");
    let deadline = Duration::from_secs(60 + seconds as u64 * 4);
    let mut rows = Vec::new();
    let mut skipped: Vec<Skipped> = Vec::new();
    let builds: [(Linkage, &[&str]); 3] = [
        (Linkage::Static, &[]),
        (Linkage::Dynamic, &[]),
        (Linkage::Dynamic, &SEED_LIBS),
    ];
    for (linkage, libs) in builds {
        let label = runner::label(linkage, libs);
        progress.step(&format!("building BYTE loops ({label})"));
        let spawn = runner::build(
            "byte_spawn",
            SPAWN_SOURCE,
            linkage,
            libs,
            &settings.work_dir,
        )?;
        let execl = runner::build(
            "byte_execl",
            EXECL_SOURCE,
            linkage,
            libs,
            &settings.work_dir,
        )?;
        let (spawn, execl) = match (spawn, execl) {
            (Ok(s), Ok(e)) => (s, e),
            (Err(s), _) | (_, Err(s)) => {
                skipped.push(s);
                continue;
            }
        };
        let mut row = Row {
            label: label.clone(),
            spawn_lps: Vec::new(),
            execl_lps: Vec::new(),
            printouts: Vec::new(),
            commands: vec![spawn.command.clone(), execl.command.clone()],
        };
        for r in 0..runs {
            progress.step(&format!(
                "BYTE Process Creation, {label}, run {}/{runs}",
                r + 1
            ));
            let out = runner::run(&spawn.path, std::slice::from_ref(&secs_arg), deadline)?;
            let (_, _, lps) = parse_score(&out).ok_or_else(|| bad(&spawn.path, &out))?;
            row.spawn_lps.push(lps);
            row.printouts.push(out);
            progress.step(&format!(
                "BYTE Execl Throughput, {label}, run {}/{runs}",
                r + 1
            ));
            let out = runner::run(&execl.path, std::slice::from_ref(&secs_arg), deadline)?;
            let (_, _, lps) = parse_score(&out).ok_or_else(|| bad(&execl.path, &out))?;
            row.execl_lps.push(lps);
            row.printouts.push(out);
        }
        rows.push(row);
    }
    Ok(section(settings, runs, seconds, rows, skipped))
}

fn bad(path: &std::path::Path, out: &str) -> ExperimentError {
    ExperimentError::Run {
        what: path.display().to_string(),
        detail: format!("printed no score line: {:?}", out.trim()),
    }
}

fn section(
    settings: &Settings,
    runs: u32,
    seconds: f64,
    rows: Vec<Row>,
    skipped: Vec<Skipped>,
) -> Section {
    let med = |v: &[f64]| median_finite(v).unwrap_or(f64::NAN);
    let mut table_rows: Vec<Vec<String>> = SEED_FIGURES
        .iter()
        .map(|(sys, p, e)| {
            vec![
                format!("seed 002: 486/33, {sys}"),
                "(the benchmark's own build)".into(),
                format!("{p:.1}"),
                format!("{e:.1}"),
            ]
        })
        .collect();
    for r in &rows {
        table_rows.push(vec![
            "here (this machine)".into(),
            r.label.clone(),
            fmt(med(&r.spawn_lps)),
            fmt(med(&r.execl_lps)),
        ]);
    }
    for s in &skipped {
        table_rows.push(vec![
            "here".into(),
            s.what.clone(),
            format!("skipped: {}", s.reason),
            String::new(),
        ]);
    }
    let table = Table {
        title: "BYTE Process Creation / Execl Throughput (seed 002, 1992), loops per second".into(),
        columns: [
            "system",
            "build",
            "Process Creation, lps",
            "Execl Throughput, lps",
        ]
        .map(String::from)
        .to_vec(),
        rows: table_rows,
        caption: Some(format!(
            "Seed rows: BYTE UNIX Benchmarks 3.11 on a 486/33 (16 MB), 10 s (Execl: 9 s) per \
             sample, 6 samples. Our rows: probes/byte_spawn.c and probes/byte_execl.c, {seconds} \
             s per sample, median of {runs} sample(s), wall time."
        )),
    };
    let stat = rows.iter().find(|r| r.label == "static");
    let dyn0 = rows.iter().find(|r| r.label == "dynamic");
    let libs = rows.iter().find(|r| r.label.contains(" -l"));
    let mut ratio_rows = Vec::new();
    let mut findings = Vec::new();
    let mut checks = Vec::new();
    if let Some(s) = stat {
        for r in &rows {
            ratio_rows.push(vec![
                r.label.clone(),
                ratio(med(&r.spawn_lps) / med(&s.spawn_lps)),
                ratio(med(&r.execl_lps) / med(&s.execl_lps)),
            ]);
        }
        for (name, other) in [("dynamic", dyn0), ("dynamic_seed_libs", libs)] {
            if let Some(o) = other {
                let x = med(&s.execl_lps) / med(&o.execl_lps);
                findings.push(Finding {
                    key: format!("byte.execl_static_over.{name}"),
                    text: format!(
                        "BYTE Execl Throughput: static does {} the execs per second of {}",
                        ratio(x),
                        o.label
                    ),
                    value: x,
                    unit: "ratio".into(),
                    interval: None,
                });
            }
        }
        if let Some(d) = dyn0 {
            checks.push(Check::ranked(
                "static execl faster than dynamic (BYTE Execl Throughput)".into(),
                ("dynamic", &d.execl_lps),
                ("static", &s.execl_lps),
                "lps",
                "sample",
            ));
        }
    }
    if let (Some(d), Some(l)) = (dyn0, libs) {
        checks.push(Check::ranked(
            "more libraries, slower execl (BYTE Execl Throughput)".into(),
            (&l.label, &l.execl_lps),
            ("dynamic", &d.execl_lps),
            "lps",
            "sample",
        ));
    }
    let seed_ratio = [(
        "seed 002: gcc 2.2.2d over gcc 2.2.2 (0.97 pl2 vs 0.97-14)".to_string(),
        ratio(SEED_FIGURES[2].1 / SEED_FIGURES[0].1),
        ratio(SEED_FIGURES[2].2 / SEED_FIGURES[0].2),
    )];
    for (a, b, c) in seed_ratio {
        ratio_rows.insert(0, vec![a, b, c]);
    }
    let ratios = Table {
        title: "BYTE (seed 002): each build's score over the static build's".into(),
        columns: ["build", "Process Creation", "Execl Throughput"]
            .map(String::from)
            .to_vec(),
        rows: ratio_rows,
        caption: Some(
            "The seed's compiler change roughly halved both scores; here the \"process being \
             invoked\" is the same loop linked three ways."
                .into(),
        ),
    };
    Section {
        name: "byte".into(),
        title: "BYTE Process Creation / Execl Throughput (seed 002, 1992)".into(),
        seed: Some("002_12036fb490721da6.txt".into()),
        intro: vec![format!(
            "BYTE UNIX Benchmarks 3.11's two process tests: Process Creation forks a child \
             that exits at once and waits for it; Execl Throughput replaces the process with \
             itself by execl() again and again. Each runs for a fixed time and scores loops per \
             second{}.",
            if settings.quick {
                " (quick run: short samples, one per build)"
            } else {
                ""
            }
        )],
        tables: vec![table, ratios],
        findings,
        checks,
        skipped,
        notes: vec![
            "Execl Throughput's loop is execve of the same program: for a dynamic build every \
             loop maps ld.so and each library and relocates them, which is what \"depends very \
             much on the process being invoked\" measures."
                .into(),
        ],
        data: serde_json::to_value(doc::ByteData {
            seconds,
            runs,
            rows: rows
                .into_iter()
                .map(|r| doc::ByteRow {
                    label: r.label,
                    spawn_lps: r.spawn_lps,
                    execl_lps: r.execl_lps,
                    printouts: r.printouts,
                    commands: r.commands,
                })
                .collect(),
        })
        .unwrap_or(serde_json::Value::Null),
        // No plots, no flame graphs.
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions_are_judged_on_the_samples_ranges() {
        let row = |label: &str, execl: &[f64]| Row {
            label: label.into(),
            spawn_lps: vec![1000.0; execl.len()],
            execl_lps: execl.to_vec(),
            printouts: Vec::new(),
            commands: Vec::new(),
        };
        let settings = Settings {
            work_dir: std::path::PathBuf::from("/nonexistent"),
            quick: false,
            runs: None,
        };
        let checks = |rows| section(&settings, 3, 2.0, rows, Vec::new()).checks;
        // Static above dynamic apart; the libraries' samples overlap dynamic's, though their
        // median is lower.
        let c = checks(vec![
            row("static", &[900.0, 950.0, 920.0]),
            row("dynamic", &[700.0, 760.0, 640.0]),
            row("dynamic -lm -lz", &[650.0, 700.0, 690.0]),
        ]);
        assert_eq!(c.len(), 2);
        assert!(c[0].holds && c[0].decided(), "{c:?}");
        assert!(c[0]
            .detail
            .starts_with("dynamic 700.0 lps (range 640.0–760.0 over 3 samples)"));
        assert!(!c[1].holds && !c[1].decided(), "{c:?}");
        // The libraries faster than dynamic, apart: NO.
        let c = checks(vec![
            row("static", &[600.0, 650.0]),
            row("dynamic", &[700.0, 710.0]),
            row("dynamic -lm -lz", &[800.0, 810.0]),
        ]);
        assert!(!c[0].holds && c[0].decided(), "{c:?}");
        assert!(!c[1].holds && c[1].decided(), "{c:?}");
        // One sample each (--quick): nothing decided.
        let c = checks(vec![row("static", &[900.0]), row("dynamic", &[100.0])]);
        assert!(!c[0].decided(), "{c:?}");
    }

    #[test]
    fn scores_parse_from_both_programs() {
        assert_eq!(
            parse_score("byte_spawn: 1075 loops in 0.503 s, 2135.3 lps (wall)\n"),
            Some((1075, 0.503, 2135.3))
        );
        assert_eq!(
            parse_score("byte_execl: 390 execs in 0.500 s, 779.7 lps (wall)"),
            Some((390, 0.5, 779.7))
        );
        assert_eq!(
            parse_score("byte_execl: x execs in 0.5 s, 1 lps (wall)"),
            None
        );
        assert_eq!(parse_score("execl: Permission denied"), None);
        // The format strings of the sources themselves.
        assert!(SPAWN_SOURCE.contains("\"byte_spawn: %lu loops in %.3f s, %.1f lps (wall)\\n\""));
        assert!(EXECL_SOURCE.contains("\"byte_execl: %lu execs in %.3f s, %.1f lps (wall)\\n\""));
    }
}
