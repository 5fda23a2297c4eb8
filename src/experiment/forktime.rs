//! Experiment 1, `forktime` (seed 000, geoff, 1989): 1000 × fork / parent waits / child
//! `_exit(0)`, linked statically and dynamically, timed as `time ./forktime 1000` was.
//!
//! In: [`Settings`] (runs). Out: a [`Section`] with the seed's SunOS figures beside ours
//! (real/user/sys seconds per 1000 forks) and the dynamic/static ratio there and here. The
//! program is `probes/forktime.c`, which prints its own wall and getrusage figures; every
//! printout is kept in `data` so that each figure can be checked against it.

use std::time::Duration;

use super::runner::{self, fmt, ratio};
use super::section::{Check, ExperimentError, Finding, Progress, Section, Settings, Table};
use super::seeds::{parse_forktime_output, ForktimeLine, Linkage, Seed};
use crate::report::schema::experiment as doc;
use crate::stats::{mean, median_finite};

/// The seed's figures: (machine, linkage, [(real, user, sys)] in seconds per 1000 forks).
/// (real, user, sys) seconds of one `time` line.
pub type TimeLine = (f64, f64, f64);

pub const SEED_FIGURES: [(&str, &str, &[TimeLine]); 5] = [
    (
        "Sun 3/50, SunOS 3.5, diskless",
        "static (no shared libraries)",
        &[(22.9, 0.1, 22.0), (22.6, 0.1, 22.1)],
    ),
    (
        "Sun 3/50, SunOS 4.0, diskless",
        "static (-Bstatic)",
        &[(12.0, 0.1, 11.7), (11.9, 0.1, 11.7)],
    ),
    (
        "Sun 3/50, SunOS 4.0, diskless",
        "dynamic",
        &[(46.8, 0.8, 41.7), (46.9, 1.1, 42.4), (45.9, 0.9, 42.2)],
    ),
    (
        "Sun 4/280, SunOS 4.0",
        "static (-Bstatic)",
        &[(12.7, 0.1, 11.8), (12.0, 0.1, 11.2)],
    ),
    (
        "Sun 4/280, SunOS 4.0",
        "dynamic",
        &[(29.9, 0.4, 25.3), (35.4, 0.5, 25.0)],
    ),
];

/// The seed's loop count.
const FORKS: u64 = 1000;

/// The seed's dynamic/static ratios of real and sys time on the two SunOS 4.0 machines.
fn seed_ratios() -> Vec<(&'static str, f64, f64)> {
    let find = |machine: &str, dynamic: bool| {
        SEED_FIGURES
            .iter()
            .find(|(m, l, _)| *m == machine && l.starts_with("dynamic") == dynamic)
            .map(|(_, _, runs)| {
                let mean_of = |f: fn(&(f64, f64, f64)) -> f64| {
                    mean(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN)
                };
                (mean_of(|r| r.0), mean_of(|r| r.2))
            })
    };
    let mut out = Vec::new();
    for m in ["Sun 3/50, SunOS 4.0, diskless", "Sun 4/280, SunOS 4.0"] {
        if let (Some(s), Some(d)) = (find(m, false), find(m, true)) {
            out.push((m, d.0 / s.0, d.1 / s.1));
        }
    }
    out
}

/// One linkage's runs, as `time` would show them per 1000 forks (seconds).
struct Measured {
    linkage: Linkage,
    lines: Vec<ForktimeLine>,
    printouts: Vec<String>,
    command: String,
}

impl Measured {
    /// Each run's real time per [`FORKS`] forks, in seconds.
    fn real_per_run(&self) -> Vec<f64> {
        self.lines
            .iter()
            .map(|l| l.wall_us * FORKS as f64 / 1e6)
            .collect()
    }
    fn real_s(&self) -> f64 {
        median_finite(&self.lines.iter().map(|l| l.wall_us).collect::<Vec<_>>()).unwrap_or(f64::NAN)
            * FORKS as f64
            / 1e6
    }
    fn user_s(&self) -> f64 {
        let v: Vec<f64> = self
            .lines
            .iter()
            .map(|l| l.parent_user_us + l.children_user_us)
            .collect();
        median_finite(&v).unwrap_or(f64::NAN) * FORKS as f64 / 1e6
    }
    fn sys_s(&self) -> f64 {
        let v: Vec<f64> = self
            .lines
            .iter()
            .map(|l| l.parent_sys_us + l.children_sys_us)
            .collect();
        median_finite(&v).unwrap_or(f64::NAN) * FORKS as f64 / 1e6
    }
    fn cpu_s(&self) -> f64 {
        let v: Vec<f64> = self
            .lines
            .iter()
            .map(|l| l.parent_cpu_us + l.children_cpu_us)
            .collect();
        median_finite(&v).unwrap_or(f64::NAN) * FORKS as f64 / 1e6
    }
}

/// Runs the experiment.
pub fn run(settings: &Settings, progress: &dyn Progress) -> Result<Section, ExperimentError> {
    let runs = settings.runs_or(1, 5);
    let mut measured = Vec::new();
    for linkage in [Linkage::Static, Linkage::Dynamic] {
        progress.step(&format!("building forktime ({})", linkage.name()));
        let p = match runner::build(
            "forktime",
            Seed::Forktime.source(),
            linkage,
            &[],
            &settings.work_dir,
        )? {
            Ok(p) => p,
            Err(s) => {
                return Err(ExperimentError::Run {
                    what: s.what,
                    detail: s.reason,
                })
            }
        };
        let mut m = Measured {
            linkage,
            lines: Vec::new(),
            printouts: Vec::new(),
            command: p.command.clone(),
        };
        for r in 0..runs {
            progress.step(&format!("forktime {} run {}/{runs}", linkage.name(), r + 1));
            let out = runner::run(&p.path, &[FORKS.to_string()], Duration::from_secs(120))?;
            let line = parse_forktime_output(&out).ok_or_else(|| ExperimentError::Run {
                what: p.path.display().to_string(),
                detail: format!("printed no forktime line: {:?}", out.trim()),
            })?;
            m.lines.push(line);
            m.printouts.push(out);
        }
        measured.push(m);
    }
    Ok(section(settings, runs, &measured))
}

fn section(settings: &Settings, runs: u32, measured: &[Measured]) -> Section {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (machine, linkage, seed_runs) in SEED_FIGURES {
        for (real, user, sys) in seed_runs.iter() {
            rows.push(vec![
                format!("seed 000: {machine}"),
                linkage.to_string(),
                format!("{real:.1}"),
                format!("{user:.1}"),
                format!("{sys:.1}"),
            ]);
        }
    }
    for m in measured {
        rows.push(vec![
            "here (this machine)".into(),
            m.linkage.name().into(),
            fmt(m.real_s()),
            fmt(m.user_s()),
            fmt(m.sys_s()),
        ]);
    }
    let table = Table {
        title: "forktime (seed 000, 1989): `time ./forktime 1000`, seconds per 1000 forks".into(),
        columns: ["machine", "linkage", "real s", "user s", "sys s"]
            .map(String::from)
            .to_vec(),
        rows,
        caption: Some(format!(
            "Seed rows: geoff's 1989 SunOS runs, copied from the seed. Our rows: the median of \
             {runs} run(s) of probes/forktime.c; real is CLOCK_MONOTONIC around the loop, user \
             and sys are getrusage of the parent plus its reaped children (as `time` adds them). \
             Of each user/sys pair only the sum is exact: the kernel splits run time by tick \
             samples, and a child that lives less than a tick reads as all user time."
        )),
    };
    let get = |l: Linkage| measured.iter().find(|m| m.linkage == l);
    let mut ratio_rows = Vec::new();
    for (m, real, sys) in seed_ratios() {
        ratio_rows.push(vec![
            format!("seed 000: {m}"),
            ratio(real),
            format!("{} (sys)", ratio(sys)),
        ]);
    }
    let mut findings = Vec::new();
    let mut checks = Vec::new();
    if let (Some(s), Some(d)) = (get(Linkage::Static), get(Linkage::Dynamic)) {
        let real = d.real_s() / s.real_s();
        let cpu = d.cpu_s() / s.cpu_s();
        ratio_rows.push(vec![
            "here (this machine)".into(),
            ratio(real),
            format!("{} (user + sys)", ratio(cpu)),
        ]);
        findings.push(Finding {
            key: "forktime.dynamic_static_ratio.real".into(),
            text: format!(
                "forktime: dynamic/static ratio of real time {} here (seed: 3.9x on a Sun 3/50, \
                 2.6x on a Sun 4/280)",
                ratio(real)
            ),
            value: real,
            unit: "ratio".into(),
            interval: None,
        });
        findings.push(Finding {
            key: "forktime.us_per_fork.static".into(),
            text: format!("forktime: {} µs per fork, static", fmt(s.real_s() * 1e3)),
            value: s.real_s() * 1e3,
            unit: "µs".into(),
            interval: None,
        });
        findings.push(Finding {
            key: "forktime.us_per_fork.dynamic".into(),
            text: format!("forktime: {} µs per fork, dynamic", fmt(d.real_s() * 1e3)),
            value: d.real_s() * 1e3,
            unit: "µs".into(),
            interval: None,
        });
        checks.push(Check::ranked(
            "static forks faster than dynamic (forktime, real time)".into(),
            ("static", &s.real_per_run()),
            ("dynamic", &d.real_per_run()),
            "s real per 1000 forks",
            "run",
        ));
    }
    let ratios = Table {
        title: "forktime (seed 000): dynamic / static".into(),
        columns: ["machine", "real", "cpu"].map(String::from).to_vec(),
        rows: ratio_rows,
        caption: Some("Seed ratios are of the means of the seed's runs.".into()),
    };
    let data = serde_json::to_value(doc::ForktimeData {
        forks: FORKS,
        runs,
        builds: measured
            .iter()
            .map(|m| doc::ForktimeBuild {
                linkage: m.linkage.name().into(),
                command: m.command.clone(),
                real_s: m.real_s(),
                user_s: m.user_s(),
                sys_s: m.sys_s(),
                lines: m.lines.iter().map(doc::ForktimeLine::from).collect(),
                printouts: m.printouts.clone(),
            })
            .collect(),
    })
    .unwrap_or(serde_json::Value::Null);
    Section {
        name: "forktime".into(),
        title: "forktime (seed 000, 1989)".into(),
        seed: Some(Seed::Forktime.seed_file().into()),
        intro: vec![format!(
            "geoff's loop: fork, the parent waits, the child calls _exit(0), {FORKS} times, \
             linked statically and dynamically{}.",
            if settings.quick {
                " (quick run: one run per build)"
            } else {
                ""
            }
        )],
        tables: vec![table, ratios],
        findings,
        checks,
        notes: vec![
            "The seed's machines ran one process at a time; this VM is shared, so real time \
             carries other tenants' load. The user + sys sum is the steadier figure."
                .into(),
        ],
        data,
        // No plots, no flame graphs, nothing skipped.
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_direction_is_judged_on_the_runs_ranges() {
        let m = |linkage, walls: &[f64]| Measured {
            linkage,
            lines: walls
                .iter()
                .map(|&w| ForktimeLine {
                    forks: FORKS,
                    wall_us: w,
                    parent_cpu_us: w / 2.0,
                    parent_user_us: 0.0,
                    parent_sys_us: w / 2.0,
                    children_cpu_us: w / 4.0,
                    children_user_us: 0.0,
                    children_sys_us: w / 4.0,
                })
                .collect(),
            printouts: Vec::new(),
            command: String::new(),
        };
        let settings = Settings {
            work_dir: std::path::PathBuf::from("/nonexistent"),
            quick: false,
            runs: None,
        };
        let check = |s: &[f64], d: &[f64]| {
            let sec = section(
                &settings,
                3,
                &[m(Linkage::Static, s), m(Linkage::Dynamic, d)],
            );
            assert_eq!(sec.checks.len(), 1);
            sec.checks[0].clone()
        };
        let c = check(&[100.0, 110.0, 105.0], &[150.0, 160.0, 170.0]);
        assert!(c.holds && c.decided(), "{c:?}");
        assert!(
            c.detail
                .starts_with("static 0.105 s real per 1000 forks (range 0.100–0.110 over 3 runs)"),
            "{c:?}"
        );
        let c = check(&[100.0, 110.0, 160.0], &[105.0, 160.0, 170.0]);
        assert!(!c.holds && !c.decided(), "{c:?}");
        let c = check(&[200.0, 210.0], &[105.0, 110.0]);
        assert!(!c.holds && c.decided(), "{c:?}");
    }

    #[test]
    fn the_seed_ratios_are_the_seeds_means() {
        let r = seed_ratios();
        assert_eq!(r.len(), 2);
        // Sun 3/50: (46.8+46.9+45.9)/3 / ((12.0+11.9)/2) = 46.533 / 11.95.
        assert!((r[0].1 - 46.5333 / 11.95).abs() < 1e-3, "{r:?}");
        // Sun 4/280 sys: (25.3+25.0)/2 / ((11.8+11.2)/2).
        assert!((r[1].2 - 25.15 / 11.5).abs() < 1e-3, "{r:?}");
    }
}
