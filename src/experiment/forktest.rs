//! Experiment 2, `forktest` (seed 001, Chris Brannon, 2009): forks per second by `clock()` for
//! a static build, a dynamic one, and dynamic builds with the seed's growing list of unused
//! libraries (-lm -lcurses -lpthread -lresolv -lssl -lreadline).
//!
//! In: [`Settings`]. Out: a [`Section`]: the seed's figures beside the program's own printout
//! (clock and wall) and the fork probe's figure for the same image (`ldcost profile
//! --fork=N --no-exec --child exit`, run as a child of this very binary), a bar plot, and the
//! directions checked. A library this machine lacks is a skipped row naming its package.
//! Every printout is kept in `data` so that the figures can be checked against them.

use std::time::Duration;

use super::plot;
use super::runner::{self, fmt, Program};
use super::section::{
    Check, ExperimentError, Finding, Plot, Progress, Section, Settings, Skipped, Table,
};
use super::seeds::{parse_forktest_output, parse_forktest_wall, Linkage, Seed, SEED_LIBS};
use crate::report::schema::experiment as doc;
use crate::stats::median_finite;

/// The seed's transcript: (its build, forks per second by clock()).
pub const SEED_FIGURES: [(&str, f64); 8] = [
    ("dietcc (static, dietlibc)", 30864.1),
    ("gcc (dynamic)", 15723.3),
    ("-lm", 14792.9),
    ("-lm -lcurses", 13888.9),
    ("-lm -lcurses -lpthread", 11961.7),
    ("-lm -lcurses -lpthread -lresolv", 11013.2),
    ("-lm -lcurses -lpthread -lresolv -lssl", 8250.83),
    ("-lm -lcurses -lpthread -lresolv -lssl -lreadline", 7961.78),
];

/// One build's figures.
#[derive(Debug, Clone)]
struct Row {
    label: String,
    /// Index into [`SEED_FIGURES`].
    seed_index: usize,
    command: String,
    /// forktest's own "N forks per second" (parent CPU by clock()), one per run.
    clock_per_s: Vec<f64>,
    /// Its "wall: N forks per second", one per run.
    wall_per_s: Vec<f64>,
    printouts: Vec<String>,
    /// The fork probe in the same image: parent-CPU and wall forks per second.
    probe_cpu_per_s: Option<f64>,
    probe_wall_per_s: Option<f64>,
    /// The image's VMAs when the probe forked it (/proc/PID/maps, read by the probe).
    probe_vmas: Option<u64>,
    probe_error: Option<String>,
}

impl Row {
    fn clock(&self) -> f64 {
        median_finite(&self.clock_per_s).unwrap_or(f64::NAN)
    }
    fn wall(&self) -> f64 {
        median_finite(&self.wall_per_s).unwrap_or(f64::NAN)
    }
}

/// The builds: (linkage, libraries, index of the seed's figure).
fn builds(quick: bool) -> Vec<(Linkage, Vec<&'static str>, usize)> {
    let mut out = vec![(Linkage::Static, vec![], 0), (Linkage::Dynamic, vec![], 1)];
    let steps: Vec<usize> = if quick {
        vec![SEED_LIBS.len()]
    } else {
        (1..=SEED_LIBS.len()).collect()
    };
    for n in steps {
        out.push((Linkage::Dynamic, SEED_LIBS[..n].to_vec(), n + 1));
    }
    out
}

/// Runs the experiment.
pub fn run(settings: &Settings, progress: &dyn Progress) -> Result<Section, ExperimentError> {
    let runs = settings.runs_or(1, 3);
    let forks: u32 = if settings.quick { 1000 } else { 2000 };
    let probe_forks: u32 = if settings.quick { 300 } else { 500 };
    let mut rows = Vec::new();
    let mut skipped = Vec::new();
    for (linkage, libs, seed_index) in builds(settings.quick) {
        let label = runner::label(linkage, &libs);
        progress.step(&format!("building forktest ({label})"));
        let p: Program = match runner::build(
            "forktest",
            Seed::Forktest.source(),
            linkage,
            &libs,
            &settings.work_dir,
        )? {
            Ok(p) => p,
            Err(s) => {
                skipped.push(s);
                continue;
            }
        };
        let mut row = Row {
            label: label.clone(),
            seed_index,
            command: p.command.clone(),
            clock_per_s: Vec::new(),
            wall_per_s: Vec::new(),
            printouts: Vec::new(),
            probe_cpu_per_s: None,
            probe_wall_per_s: None,
            probe_vmas: None,
            probe_error: None,
        };
        for r in 0..runs {
            progress.step(&format!("forktest {label} run {}/{runs}", r + 1));
            let out = runner::run(&p.path, &[forks.to_string()], Duration::from_secs(300))?;
            match (parse_forktest_output(&out), parse_forktest_wall(&out)) {
                (Some(c), Some(w)) => {
                    row.clock_per_s.push(c);
                    row.wall_per_s.push(w);
                }
                // clock() did not advance ("inf"): no measurement, said so.
                _ => skipped.push(Skipped {
                    what: format!("forktest {label}, run {}", r + 1),
                    reason: format!("no figure in its output: {:?}", out.trim()),
                }),
            }
            row.printouts.push(out);
        }
        progress.step(&format!("fork probe in forktest ({label})"));
        match probe(&p, probe_forks) {
            Ok((cpu, wall, vmas)) => {
                row.probe_cpu_per_s = cpu;
                row.probe_wall_per_s = wall;
                row.probe_vmas = vmas;
            }
            Err(e) => {
                skipped.push(Skipped {
                    what: format!("fork probe in forktest {label}"),
                    reason: e.clone(),
                });
                row.probe_error = Some(e);
            }
        }
        rows.push(row);
    }
    section(settings, runs, forks, probe_forks, rows, skipped)
}

/// `ldcost profile --fork=N --no-exec --child exit --json - PROG -- 0`: this binary, as a child,
/// so that the probe's ptrace and its children stay out of this process. The program is given
/// 0 forks of its own, so the probe's loop is the only one.
/// The probe's figures: parent-CPU forks/s, wall forks/s, the image's VMAs.
type ProbeFigures = (Option<f64>, Option<f64>, Option<u64>);

fn probe(p: &Program, forks: u32) -> Result<ProbeFigures, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find ldcost itself: {e}"))?;
    if exe.file_name().and_then(|n| n.to_str()) != Some("ldcost") {
        return Err(format!(
            "not run: this process is {}, not the ldcost binary",
            exe.display()
        ));
    }
    let args: Vec<String> = [
        "profile",
        &format!("--fork={forks}"),
        "--no-exec",
        "--child",
        "exit",
        "--quiet-target",
        "--json",
        "-",
        &p.path.to_string_lossy(),
        "--",
        "0",
    ]
    .map(String::from)
    .to_vec();
    let out = runner::run(&exe, &args, Duration::from_secs(300)).map_err(|e| e.to_string())?;
    let doc: serde_json::Value =
        serde_json::from_str(&out).map_err(|e| format!("profile --json is not JSON: {e}"))?;
    let fork = &doc["fork"];
    if let Some(e) = fork["error"].as_str() {
        return Err(format!("the probe failed: {e}"));
    }
    Ok((
        fork["forks_per_sec_parent_cpu"].as_f64(),
        fork["forks_per_sec_wall"].as_f64(),
        fork["footprint"]["vmas"]["total"].as_u64(),
    ))
}

fn opt(x: Option<f64>) -> String {
    x.map(fmt).unwrap_or_else(|| "not available".into())
}

fn section(
    settings: &Settings,
    runs: u32,
    forks: u32,
    probe_forks: u32,
    rows: Vec<Row>,
    skipped: Vec<Skipped>,
) -> Result<Section, ExperimentError> {
    let mut table_rows = Vec::new();
    for r in &rows {
        let (seed_build, seed_value) = SEED_FIGURES[r.seed_index];
        table_rows.push(vec![
            r.label.clone(),
            format!("{seed_value} ({seed_build})"),
            fmt(r.clock()),
            fmt(r.wall()),
            opt(r.probe_cpu_per_s),
            opt(r.probe_wall_per_s),
            r.probe_vmas
                .map(|v| v.to_string())
                .unwrap_or_else(|| "not available".into()),
        ]);
    }
    for s in &skipped {
        table_rows.push(vec![
            s.what.clone(),
            String::new(),
            format!("skipped: {}", s.reason),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ]);
    }
    let table = Table {
        title: "forktest (seed 001, 2009): forks per second".into(),
        columns: [
            "build",
            "seed 001 (2009, x86 Linux)",
            "forktest, clock()",
            "forktest, wall",
            "fork probe, parent CPU",
            "fork probe, wall",
            "VMAs",
        ]
        .map(String::from)
        .to_vec(),
        rows: table_rows,
        caption: Some(format!(
            "forktest's own printout ({forks} forks, child exit(42); median of {runs} run(s)): \
             \"clock()\" is the seed's figure, forks per second of the *parent's CPU time*; \
             \"wall\" is the round trip fork + child + wait. The fork probe is `ldcost profile \
             --fork={probe_forks} --child exit` in the same image (the program told to do 0 \
             forks of its own); VMAs is the image's mappings when the probe forked it. The seed's static build used dietlibc, ours glibc's libc.a."
        )),
    };
    let find = |pred: &dyn Fn(&Row) -> bool| rows.iter().find(|r| pred(r));
    let stat = find(&|r| r.seed_index == 0);
    let dyn0 = find(&|r| r.seed_index == 1);
    let most = rows
        .iter()
        .filter(|r| r.seed_index > 1)
        .max_by_key(|r| r.seed_index);
    let mut checks = Vec::new();
    let mut findings = Vec::new();
    if let (Some(s), Some(d)) = (stat, dyn0) {
        checks.push(Check::ranked(
            "static forks faster than dynamic (forktest, clock())".into(),
            ("dynamic", &d.clock_per_s),
            ("static", &s.clock_per_s),
            "forks/s",
            "run",
        ));
    }
    if let (Some(d), Some(m)) = (dyn0, most) {
        checks.push(Check::ranked(
            "more libraries, slower fork (forktest, clock())".into(),
            (&m.label, &m.clock_per_s),
            ("dynamic", &d.clock_per_s),
            "forks/s",
            "run",
        ));
        findings.push(Finding {
            key: "forktest.slowdown_all_libs".into(),
            text: format!(
                "forktest: the seed's six libraries cost {} of dynamic forktest's forks per \
                 second here (seed: {:.0}%)",
                format_args!("{:.0}%", (1.0 - m.clock() / d.clock()) * 100.0),
                (1.0 - SEED_FIGURES[7].1 / SEED_FIGURES[1].1) * 100.0
            ),
            value: (1.0 - m.clock() / d.clock()) * 100.0,
            unit: "%".into(),
            interval: None,
        });
    }
    let labels: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
    let categories = short_labels(&labels);
    let groups = [
        "seed 001 (2009)",
        "forktest, clock()",
        "forktest, wall",
        "fork probe, parent CPU",
    ]
    .map(String::from)
    .to_vec();
    let values: Vec<Vec<Option<f64>>> = rows
        .iter()
        .map(|r| {
            vec![
                Some(SEED_FIGURES[r.seed_index].1),
                Some(r.clock()).filter(|x| x.is_finite()),
                Some(r.wall()).filter(|x| x.is_finite()),
                r.probe_cpu_per_s,
            ]
        })
        .collect();
    let mut plots = Vec::new();
    if !rows.is_empty() {
        let svg = plot::bar_chart(
            "forktest (seed 001): forks per second (+x: one more library)",
            "forks per second",
            &categories,
            &groups,
            &values,
        )
        .map_err(|e| ExperimentError::Run {
            what: "forktest plot".into(),
            detail: e,
        })?;
        plots.push(Plot {
            file_name: "forktest-forks-per-second.svg".into(),
            title: "forktest: forks per second per library list".into(),
            caption: None,
            svg,
        });
    }
    Ok(Section {
        name: "forktest".into(),
        title: "forktest (seed 001, 2009)".into(),
        seed: Some(Seed::Forktest.seed_file().into()),
        intro: vec![format!(
            "Chris Brannon's forktest.c: fork, the child calls exit(42), the parent waits; \
             forks per second by clock(). Built static, dynamic, and dynamic with {} of the \
             seed's unused libraries (linked with --no-as-needed so that each is loaded).",
            if settings.quick {
                "all (quick run: the intermediate lists are left out)"
            } else {
                "a growing list"
            }
        )],
        tables: vec![table],
        plots,
        flamegraphs: Vec::new(),
        findings,
        checks,
        skipped,
        notes: vec![
            "-lcurses is ncurses here. On glibc 2.34 and later libpthread is part of libc: \
             -lpthread loads nothing, so the -lpthread step adds no object."
                .into(),
            "clock() counts only the parent's CPU time: the child's exit, its faults and the \
             teardown of its address space are in the wall figure, not in the seed's."
                .into(),
        ],
        data: serde_json::to_value(doc::ForktestData {
            forks,
            probe_forks,
            runs,
            rows: rows
                .into_iter()
                .map(|r| doc::ForktestRow {
                    label: r.label,
                    seed_index: r.seed_index,
                    command: r.command,
                    clock_per_s: r.clock_per_s,
                    wall_per_s: r.wall_per_s,
                    printouts: r.printouts,
                    probe_cpu_per_s: r.probe_cpu_per_s,
                    probe_wall_per_s: r.probe_wall_per_s,
                    probe_vmas: r.probe_vmas,
                    probe_error: r.probe_error,
                })
                .collect(),
        })
        .unwrap_or(serde_json::Value::Null),
    })
}

/// The bar labels of the library lists: a list that extends the one before it by libraries
/// is labelled by what it adds (`+m`, `+ncurses`), so that the growing lists of a full run do
/// not overlap under their bars; any other keeps its label without the `-l`s.
fn short_labels(labels: &[String]) -> Vec<String> {
    labels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let prev = if i > 0 { labels[i - 1].as_str() } else { "" };
            match l.strip_prefix(prev) {
                Some(rest) if i > 0 && prev.starts_with("dynamic") && rest.starts_with(" -l") => {
                    format!("+{}", rest.trim().replace("-l", ""))
                }
                _ => l.replace(" -l", " "),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_growing_list_is_labelled_by_what_it_adds() {
        let l: Vec<String> = [
            "static",
            "dynamic",
            "dynamic -lm",
            "dynamic -lm -lncurses -lssl",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            super::short_labels(&l),
            ["static", "dynamic", "+m", "+ncurses ssl"]
        );
        let one = ["static".to_string(), "dynamic -lm -lssl".to_string()];
        assert_eq!(super::short_labels(&one), ["static", "dynamic m ssl"]);
    }

    use super::*;

    #[test]
    fn directions_are_judged_on_the_runs_ranges() {
        let row = |label: &str, seed_index: usize, clock: &[f64]| Row {
            label: label.into(),
            seed_index,
            command: String::new(),
            clock_per_s: clock.to_vec(),
            wall_per_s: clock.to_vec(),
            printouts: Vec::new(),
            probe_cpu_per_s: None,
            probe_wall_per_s: None,
            probe_vmas: None,
            probe_error: Some("not run".into()),
        };
        let settings = Settings {
            work_dir: std::path::PathBuf::from("/nonexistent"),
            quick: false,
            runs: None,
        };
        let checks = |rows| {
            section(&settings, 3, 1000, 1000, rows, Vec::new())
                .expect("a section")
                .checks
        };
        let c = checks(vec![
            row("static", 0, &[5000.0, 5200.0, 5100.0]),
            row("dynamic", 1, &[3000.0, 3500.0, 3200.0]),
            row("dynamic -lm", 2, &[3100.0, 3400.0, 2900.0]),
        ]);
        assert_eq!(c.len(), 2, "{c:?}");
        assert!(c[0].holds && c[0].decided(), "{c:?}");
        assert!(
            c[0].detail
                .starts_with("dynamic 3200 forks/s (range 3000–3500 over 3 runs)"),
            "{c:?}"
        );
        assert!(!c[1].holds && !c[1].decided(), "{c:?}");
        let c = checks(vec![
            row("static", 0, &[2000.0, 2100.0]),
            row("dynamic", 1, &[3000.0, 3100.0]),
            row("dynamic -lm", 2, &[1000.0, 1100.0]),
        ]);
        assert!(!c[0].holds && c[0].decided(), "{c:?}");
        assert!(c[1].holds && c[1].decided(), "{c:?}");
    }

    #[test]
    fn the_builds_follow_the_seeds_list() {
        let full = builds(false);
        assert_eq!(full.len(), SEED_FIGURES.len());
        for (i, (_, libs, seed)) in full.iter().enumerate() {
            assert_eq!(*seed, i);
            if i >= 2 {
                assert_eq!(libs.len(), i - 1);
            }
        }
        let quick = builds(true);
        assert_eq!(quick.len(), 3);
        assert_eq!(quick[2].2, 7);
        assert_eq!(quick[2].1.len(), 6);
    }
}
