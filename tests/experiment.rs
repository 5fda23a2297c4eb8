//! `ldcost experiment` as a user runs it: `ldcost experiment --quick --out DIR`, once, shared by
//! the tests below (a run takes ~20 s of this loaded 2-core VM), plus its bad input.
//!
//! Oracles: the programs' own printouts kept in results.json, parsed here by hand (the forktest
//! and forktime figures in the tables must be what the programs printed); the seed texts (each
//! table titled by its seed, the seed's figures copied); the files themselves (SVG documents
//! with their axis labels, HTML with the SVGs inline, results.json's schema_version); the
//! exit-code policy of README. Directions are timed, so they are printed, not asserted (see
//! `large_effects_are_printed_and_vma_counts_hold`): load from the other tenants of a shared VM
//! can flip or shrink them; the VMA counts behind them are exact and asserted.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{skip, tools};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");

struct Run {
    dir: PathBuf,
    tmp: PathBuf,
    code: Option<i32>,
    stdout: String,
    stderr: String,
    results: Value,
    _keep: tempfile::TempDir,
}

/// The one quick run (None: no cc here, skipped).
fn quick_run() -> Option<&'static Run> {
    static RUN: OnceLock<Option<Run>> = OnceLock::new();
    RUN.get_or_init(|| {
        if !common::have("cc") {
            return None;
        }
        let keep = tempfile::tempdir().unwrap();
        let dir = keep.path().join("out");
        let tmp = keep.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let out = Command::new(BIN)
            .args(["experiment", "--quick", "--out"])
            .arg(&dir)
            .env("TMPDIR", &tmp)
            .output()
            .expect("run ldcost");
        let results = std::fs::read_to_string(dir.join("results.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        Some(Run {
            dir,
            tmp,
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            results,
            _keep: keep,
        })
    })
    .as_ref()
}

fn run_or_skip(name: &str) -> Option<&'static Run> {
    let r = quick_run();
    if r.is_none() {
        skip(name, "`cc` is not installed");
    }
    r
}

/// The section of experiment `name` in results.json (asserting it ran).
fn section<'a>(r: &'a Run, name: &str) -> &'a Value {
    let e = r.results["experiments"]
        .as_array()
        .expect("experiments")
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no experiment {name} in results.json"));
    assert_eq!(e["ok"], true, "{name} failed: {}", e["error"]);
    &e["section"]
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn the_quick_run_writes_every_file_and_exits_by_the_policy() {
    let Some(r) = run_or_skip("the_quick_run_writes_every_file_and_exits_by_the_policy") else {
        return;
    };
    assert_eq!(r.results["schema_version"], 1, "{}", r.stderr);
    assert_eq!(r.results["command"], "experiment");
    assert_eq!(r.results["settings"]["quick"], true);
    for k in ["kernel_release", "cpu_model", "glibc"] {
        assert!(r.results["machine"][k].is_string(), "machine.{k}");
    }
    let exps = r.results["experiments"].as_array().unwrap();
    let names: Vec<&str> = exps.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["forktime", "forktest", "byte", "matrix", "micah", "erik"]
    );
    // Exit 0 when every experiment ran, 13 when one failed; a failed one is named in the
    // warning on stderr and as a failed section of each report.
    let failed: Vec<&str> = exps
        .iter()
        .filter(|e| e["ok"] == false)
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    let md = read(&r.dir.join("report.md"));
    let html = read(&r.dir.join("report.html"));
    if failed.is_empty() {
        assert_eq!(r.code, Some(0), "{}", r.stderr);
    } else {
        assert_eq!(r.code, Some(13), "{}", r.stderr);
        for f in &failed {
            assert!(r.stderr.contains("could not run: ") && r.stderr.contains(f));
            assert!(md.contains(&format!("## {f} — failed")), "{f} in report.md");
            assert!(
                html.contains(&format!("<h2>{f} — failed</h2>")),
                "{f} in report.html"
            );
        }
    }
    for mine in ["forktime", "forktest", "byte", "matrix"] {
        assert!(!failed.contains(&mine), "{mine} failed: {}", r.stderr);
    }
    // The quick run says it was quick, in every rendering.
    for text in [&md, &html, &r.stdout] {
        assert!(text.contains("This was a quick run (--quick)"));
    }
    // The build directory is gone (TMPDIR pointed at an empty directory).
    let left: Vec<_> = std::fs::read_dir(&r.tmp).unwrap().collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}

/// Whether one of the SVG's `<text>` elements reads exactly `t` (an axis label, not a title
/// that happens to contain the words).
fn has_text(svg: &str, t: &str) -> bool {
    svg.split("<text").skip(1).any(|e| {
        e.split_once('>')
            .and_then(|(_, rest)| rest.split_once("</text>"))
            .is_some_and(|(inner, _)| inner.trim() == t)
    })
}

#[test]
fn every_plot_is_an_svg_file_with_axis_labels_and_inline_in_the_html() {
    let Some(r) = run_or_skip("every_plot_is_an_svg_file_with_axis_labels_and_inline_in_the_html")
    else {
        return;
    };
    let html = read(&r.dir.join("report.html"));
    let mut plots = 0;
    for e in r.results["experiments"].as_array().unwrap() {
        for p in e["section"]["plots"].as_array().into_iter().flatten() {
            let file = p["file_name"].as_str().unwrap();
            let svg = read(&r.dir.join(file));
            let t = svg.trim();
            assert!(t.starts_with("<svg") && t.ends_with("</svg>"), "{file}");
            assert!(t.matches("<text").count() >= 5, "{file}: axis labels");
            plots += 1;
        }
    }
    // My experiments' plots, with their y axis labels (units).
    for (file, label) in [
        ("forktest-forks-per-second.svg", "forks per second"),
        (
            "matrix-fork-execl.svg",
            "ms per spawn (fork/vfork/posix_spawn + execl + wait)",
        ),
    ] {
        let svg = read(&r.dir.join(file));
        assert!(has_text(&svg, label), "{file}: no axis label {label:?}");
    }
    assert!(plots >= 2);
    assert_eq!(html.matches("<svg").count(), plots, "each plot inline once");
    assert_eq!(html.matches("</svg>").count(), plots);
}

/// Every plot as a reader sees it: rendered by headless Chromium at 800 px wide
/// (scripts/check-plot), every label inside the picture, at least 9 px high and not
/// overlapping another, something plotted. The oracle is the browser's own layout.
#[test]
fn every_plot_renders_readably_in_chromium_at_800_px() {
    let name = "every_plot_renders_readably_in_chromium_at_800_px";
    let Some(r) = run_or_skip(name) else {
        return;
    };
    if !common::have("chromium") {
        skip(name, "chromium is not installed (apt-get install chromium)");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-plot");
    let mut checked = 0;
    for e in r.results["experiments"].as_array().expect("experiments") {
        for p in e["section"]["plots"].as_array().into_iter().flatten() {
            let file = p["file_name"].as_str().expect("file_name");
            let svg = r.dir.join(file);
            let png = r.tmp.join(format!("{file}.png"));
            let out = Command::new(&script)
                .arg(&svg)
                .arg(&png)
                .output()
                .expect("run scripts/check-plot");
            let said = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(out.status.code(), Some(0), "check-plot {file}:\n{said}");
            checked += 1;
        }
    }
    assert!(checked >= 2, "plots checked: {checked}");
}

#[test]
fn each_seeds_table_is_titled_by_its_seed_with_the_seeds_figures() {
    let Some(r) = run_or_skip("each_seeds_table_is_titled_by_its_seed_with_the_seeds_figures")
    else {
        return;
    };
    let md = read(&r.dir.join("report.md"));
    for (name, seed, title, figures) in [
        (
            "forktime",
            "000_1b3ec4cf5ab103e9.txt",
            "forktime (seed 000",
            &["46.8", "42.4", "22.9", "35.4"][..],
        ),
        (
            "forktest",
            "001_072174e70058038d.txt",
            "forktest (seed 001",
            &["30864.1", "15723.3", "7961.78"][..],
        ),
        (
            "byte",
            "002_12036fb490721da6.txt",
            "BYTE Process Creation / Execl Throughput (seed 002",
            &["102.1", "129.9", "64.2", "55.0"][..],
        ),
        (
            "matrix",
            "003_439cc606f831c39f.txt",
            "the fork+execl matrix (seed 003",
            &["8.36", "6.59 v=6.19", "3.68 v=2.95", "0.43"][..],
        ),
    ] {
        let s = section(r, name);
        assert_eq!(s["seed"], seed, "{name}");
        let t = &s["tables"][0];
        let t_title = t["title"].as_str().unwrap();
        assert!(t_title.starts_with(title), "{name}: {t_title}");
        assert!(
            md.contains(&format!("**{}**", t_title.replace('|', "\\|"))),
            "{name} in report.md"
        );
        let cells: Vec<&str> = t["rows"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|row| row.as_array().unwrap().iter().map(|c| c.as_str().unwrap()))
            .collect();
        for f in figures {
            assert!(
                cells.iter().any(|c| c.contains(f)),
                "{name}: the seed's {f}"
            );
        }
    }
}

/// "N forks per second" and "wall: N forks per second", parsed by hand (not by ldcost).
fn forktest_printout(text: &str) -> (f64, f64) {
    let mut clock = None;
    let mut wall = None;
    for l in text.lines() {
        if let Some(v) = l
            .strip_prefix("wall: ")
            .and_then(|r| r.strip_suffix(" forks per second"))
        {
            wall = v.parse().ok();
        } else if let Some(v) = l.strip_suffix(" forks per second") {
            clock = v.parse().ok();
        }
    }
    (clock.expect("clock line"), wall.expect("wall line"))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The report's figure formatting (four significant digits), as the tables print them.
fn fmt(x: f64) -> String {
    ldcost::experiment::runner::fmt(x)
}

#[test]
fn forktest_and_forktime_figures_are_what_the_programs_printed() {
    let Some(r) = run_or_skip("forktest_and_forktime_figures_are_what_the_programs_printed") else {
        return;
    };
    let s = section(r, "forktest");
    let rows = s["data"]["rows"].as_array().unwrap();
    assert!(rows.len() >= 3, "static, dynamic, dynamic + libraries");
    let table = s["tables"][0]["rows"].as_array().unwrap();
    for row in rows {
        let printed: Vec<(f64, f64)> = row["printouts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| forktest_printout(p.as_str().unwrap()))
            .collect();
        assert!(!printed.is_empty());
        let clock: Vec<f64> = row["clock_per_s"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let wall: Vec<f64> = row["wall_per_s"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(
            clock,
            printed.iter().map(|p| p.0).collect::<Vec<_>>(),
            "{}",
            row["label"]
        );
        assert_eq!(
            wall,
            printed.iter().map(|p| p.1).collect::<Vec<_>>(),
            "{}",
            row["label"]
        );
        let label = row["label"].as_str().unwrap();
        let cells = table
            .iter()
            .find(|t| t[0] == label)
            .unwrap_or_else(|| panic!("no table row {label}"));
        assert_eq!(
            cells[2],
            fmt(median(printed.iter().map(|p| p.0).collect())),
            "{label}: clock"
        );
        assert_eq!(
            cells[3],
            fmt(median(printed.iter().map(|p| p.1).collect())),
            "{label}: wall"
        );
    }
    // forktime: real seconds per 1000 forks = the printed µs per fork (wall).
    let s = section(r, "forktime");
    for b in s["data"]["builds"].as_array().unwrap() {
        let walls: Vec<f64> = b["printouts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let p = p.as_str().unwrap();
                let (_, rest) = p.split_once(" forks, ").expect("forktime line");
                rest.split_once(" us per fork (wall)")
                    .unwrap()
                    .0
                    .parse()
                    .unwrap()
            })
            .collect();
        let real = median(walls) * 1000.0 / 1e6;
        let row = s["tables"][0]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t[0] == "here (this machine)" && t[1] == b["linkage"])
            .unwrap();
        assert_eq!(row[2], fmt(real), "{}", b["linkage"]);
    }
}

/// Large effects only, each with a margin well inside what a loaded 2-vCPU VM shows:
/// - a 64 MiB parent: fork+exec copies ~16k page-table entries that vfork+exec shares
///   (seen: 16 ms vs 4 ms); asserted at 1.5x;
/// - BYTE Execl Throughput, static vs dynamic with the seed's six libraries: every exec maps
///   and relocates them (seen: 497 vs 60 lps); asserted at 2x;
/// - forktest, static vs dynamic with the six libraries, parent CPU (clock()): (seen 16.8k vs
///   9.1k forks/s); asserted at 1.2x;
/// - VMAs of the forked image (exact counts): static < dynamic < dynamic + libraries.
///
/// Only the VMA counts are asserted: the timed directions are printed (`timed`), because a
/// burst of load from another tenant can move one of them inside its margin (forktest static
/// 25138 vs dynamic + libraries 22357 forks/s, 1.12 < 1.2, in one CI run); the report's own
/// direction checks say held or not for every run, and the full run is where they are read.
///
/// Not asserted (reported, with the check's verdict, in the report): static vs plain dynamic
/// fork (1.1–1.2x, within what a burst of load moves) and static vs dynamic child in the
/// matrix (a fraction of a ms on a few-ms spawn; seen flipped under load).
#[test]
fn large_effects_are_printed_and_vma_counts_hold() {
    let Some(r) = run_or_skip("large_effects_are_printed_and_vma_counts_hold") else {
        return;
    };
    let cells = section(r, "matrix")["data"]["cells"]
        .as_array()
        .unwrap()
        .clone();
    let big = |m: &str| {
        let c = cells
            .iter()
            .find(|c| c["method"] == m && c["heap_mib"].as_u64().unwrap() > 0)
            .unwrap();
        median(
            c["us"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect(),
        )
    };
    timed(
        big("fork") > 1.5 * big("vfork"),
        &format!(
            "64 MiB parent: fork {} µs > 1.5 × vfork {} µs",
            big("fork"),
            big("vfork")
        ),
    );

    let rows = section(r, "byte")["data"]["rows"]
        .as_array()
        .unwrap()
        .clone();
    let execl = |pred: &dyn Fn(&str) -> bool| {
        let row = rows
            .iter()
            .find(|x| pred(x["label"].as_str().unwrap()))
            .unwrap();
        median(
            row["execl_lps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect(),
        )
    };
    let (s, l) = (execl(&|x| x == "static"), execl(&|x| x.contains("-lssl")));
    timed(
        s > 2.0 * l,
        &format!("execl lps: static {s} > 2 × dynamic + libraries {l}"),
    );

    let rows = section(r, "forktest")["data"]["rows"]
        .as_array()
        .unwrap()
        .clone();
    let get = |pred: &dyn Fn(&str) -> bool| {
        rows.iter()
            .find(|x| pred(x["label"].as_str().unwrap()))
            .unwrap()
    };
    let (st, dy, li) = (
        get(&|x| x == "static"),
        get(&|x| x == "dynamic"),
        get(&|x| x.contains("-lssl")),
    );
    let clock = |row: &Value| {
        median(
            row["clock_per_s"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap())
                .collect(),
        )
    };
    timed(
        clock(st) > 1.2 * clock(li),
        &format!(
            "forks/s static {} > 1.2 × dynamic + libraries {}",
            clock(st),
            clock(li)
        ),
    );
    match (
        st["probe_vmas"].as_u64(),
        dy["probe_vmas"].as_u64(),
        li["probe_vmas"].as_u64(),
    ) {
        (Some(a), Some(b), Some(c)) => assert!(a < b && b < c, "VMAs {a} {b} {c}"),
        _ => skip(
            "large_effects_are_printed_and_vma_counts_hold (VMAs)",
            &format!("the fork probe did not run: {}", st["probe_error"]),
        ),
    }
}

/// A timed direction: printed with its outcome, never asserted (see
/// `large_effects_are_printed_and_vma_counts_hold`).
fn timed(held: bool, what: &str) {
    eprintln!(
        "timed direction {}: {what}",
        if held { "held" } else { "NOT HELD (load?)" }
    );
}

fn one_line_error(out: &std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.stdout.is_empty(), "nothing on stdout");
    let first = err.lines().next().unwrap_or("").to_string();
    assert!(first.starts_with("ldcost: error: "), "{err}");
    // The error line, and at most a hint line.
    assert!(err.lines().count() <= 2, "{err}");
    if let Some(h) = err.lines().nth(1) {
        assert!(h.starts_with("  hint: "), "{err}");
    }
    first
}

#[test]
fn an_unknown_name_is_a_usage_error_listing_the_names() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["experiment", "forktime", "nope", "--out"])
        .arg(dir.path().join("o"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let line = one_line_error(&out);
    assert!(line.contains("unknown experiment `nope`"), "{line}");
    assert!(
        line.contains("forktime, forktest, byte, matrix, micah, erik"),
        "{line}"
    );
    assert!(
        !dir.path().join("o").exists(),
        "nothing created before the check"
    );
}

#[test]
fn an_unwritable_out_is_an_output_error_before_anything_runs() {
    if !tools(
        "an_unwritable_out_is_an_output_error_before_anything_runs",
        &["cc"],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for out_dir in [
        PathBuf::from("/proc/ldcost-no"),
        file.clone(),
        file.join("sub"),
    ] {
        let out = Command::new(BIN)
            .args(["experiment", "forktime", "--quick", "--out"])
            .arg(&out_dir)
            .env("TMPDIR", &tmp)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(7), "{}", out_dir.display());
        let line = one_line_error(&out);
        assert!(
            line.contains(&format!("cannot write {}", out_dir.display())),
            "{line}"
        );
        // Refused before building anything: no build directory was made.
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    }
}
