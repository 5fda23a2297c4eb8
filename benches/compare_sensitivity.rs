//! Sensitivity of `ldcost compare`: how often is a real 3%, 5% or 10% change of start-up CPU
//! found, beside how often "no change" is called a change.
//!
//! Run with `cargo bench --bench compare_sensitivity` (root or ptrace + perf, cc). The fixtures
//! are generated C built with cc in a temporary directory: a program linked against one
//! library, `librel.so`, which holds a table of pointers to its own static data (each entry an
//! `R_X86_64_RELATIVE` relocation, or a DT_RELR entry where the toolchain packs them). BASE's
//! table has no relocations; each HEAD is the same program with the same library built with a
//! larger table, so the two sides load the same objects and differ only in relative relocations
//! (and the pages they write).
//!
//! **Calibration.** The size of each HEAD is found on the machine first: `ldcost profile --json -`
//! (default settings) of BASE and of a calibration build with [`CAL_RELOCS`] relocations, three
//! times each, alternating. The per-object relocation CPU of `librel.so` (its `relocation`
//! phase, the ptrace stops' cost subtracted) of the calibration build less BASE's, per
//! relocation, is the CPU of one relative relocation; BASE's start-up CPU (boundaries-only runs,
//! the figure compare's verdict judges) says what 1% is; their ratio is how many relocations make
//! 1%. The bench prints the calibration, the change three comparisons of BASE with the
//! calibration build measure beside the change the calibration predicts for it, and, for each
//! pair, the change compare measured (median of the comparisons), since a pair is only "about"
//! its nominal size: the machine's state when the calibration ran is not its state at every
//! comparison.
//!
//! **Plan.** Each pair is compared [`ROUNDS`] times with `ldcost compare BASE HEAD --format json`
//! at default settings (the rounds a 3 s `--min-time` budget buys, which the table reports), run as
//! a user runs it; BASE against itself [`AA`] times. The pairs and the
//! A/A comparisons are interleaved round by round, so a change of the machine's load falls on all
//! of them alike. A detection is a significant start-up CPU change with HEAD slower; an A/A
//! detection is a significant change either way. Goals: at least 9 of 10 detected at 5% and 10%
//! (3% is reported, not judged), at most 1 of 20 A/A detections, a median wall time per comparison
//! of at most 15 s. Prints PASS or FAIL per goal; never fails the build.
//!
//! Environment: `LDCOST_SENS_ROUNDS` (comparisons per pair, default 10), `LDCOST_SENS_AA` (A/A
//! comparisons, default 20), `LDCOST_SENS_SIZES` (nominal changes in percent, default `3,5,10`),
//! `LDCOST_SENS_ARGS` (extra `compare` options, split at white space, e.g. `-n 20`, to find the
//! setting that reaches a goal the defaults miss).

#[path = "../tests/common/mod.rs"]
mod common;
// Of the shared bench helpers only `ldcost_json`, `loadavg` and `BIN` are used here.
#[allow(dead_code)]
#[path = "support/targets.rs"]
mod targets;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use ldcost::record::Phase;
use targets::{ldcost_json, loadavg, BIN};

/// Relocations of the calibration build: enough that its relocation CPU stands well above the
/// phase's noise (tens of microseconds), few enough to stay near the sizes measured.
const CAL_RELOCS: usize = 20_000;
/// Comparisons per pair.
const ROUNDS: usize = 10;
/// A/A comparisons.
const AA: usize = 20;
/// Goal: median wall time of one comparison, seconds.
const WALL_GOAL_S: f64 = 15.0;
/// The pair sizes (nominal %) the detection goal applies to.
const JUDGED_PCT: f64 = 5.0;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The library's source: a table of `relocs` pointers into its own static data. `const`
/// pointers go to .data.rel.ro, so each entry is one relative relocation and nothing else
/// (a static target is never looked up by name).
fn library_source(relocs: usize) -> String {
    let mut s = String::from("static char relsens_data[64];\n");
    if relocs == 0 {
        s.push_str("char *const relsens_table[1] = { 0 };\n");
    } else {
        s.push_str(&format!("char *const relsens_table[{relocs}] = {{\n"));
        for i in 0..relocs {
            s.push_str(&format!("relsens_data + {},\n", i % 64));
        }
        s.push_str("};\n");
    }
    s.push_str("int rel_value(int i) { return relsens_table[i][0]; }\n");
    s
}

/// Builds the program and its library with `relocs` relocations in `root/rel-N`; returns the
/// program's path.
fn build(root: &Path, relocs: usize) -> PathBuf {
    let dir = root.join(format!("rel-{relocs}"));
    common::write(&dir, "librel.c", &library_source(relocs));
    common::write(
        &dir,
        "main.c",
        "int rel_value(int);\n\
         int main(int argc, char **argv) { (void)argv; return argc > 99 ? rel_value(0) : 0; }\n",
    );
    common::cc(
        &dir,
        &["-O2", "-shared", "-fPIC", "-o", "librel.so", "librel.c"],
    );
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    common::cc(
        &dir,
        &["-O2", "-o", "app", "main.c", "-L.", "-lrel", &rpath],
    );
    dir.join("app")
}

/// One `ldcost profile --json -` of `app`: (librel.so's relocation CPU, start-up CPU), ns.
fn profile(app: &Path) -> Result<(f64, f64), String> {
    let doc = ldcost_json(&[
        "profile".into(),
        "--quiet-target".into(),
        "--json".into(),
        "-".into(),
        app.into(),
    ])?;
    let p = doc.profile.as_ref().ok_or("no profile section")?;
    let reloc = p
        .phases
        .iter()
        .find(|s| {
            s.phase == Phase::Relocation
                && s.object
                    .as_deref()
                    .is_some_and(|o| o.ends_with("/librel.so"))
        })
        .and_then(|s| s.task_clock_ns.as_ref())
        .map(|s| s.median)
        .ok_or("no relocation phase of librel.so (ld.so debug symbols missing?)")?;
    let (startup, _, _) =
        ldcost::compare::verdict::startup_samples(&doc).ok_or("no start-up samples")?;
    Ok((reloc, median(&startup)))
}

/// One comparison's outcome.
struct Outcome {
    change_pct: f64,
    p: f64,
    noise_pct: f64,
    /// The 95% interval excludes no change.
    interval_clear: bool,
    significant: bool,
    wall_s: f64,
    /// Measured rounds the comparison ran (its JSON's `rounds.count`).
    rounds: usize,
}

/// `ldcost compare BASE HEAD --format json [extra]`, as a user runs it.
fn compare(base: &Path, head: &Path, extra: &[String]) -> Result<Outcome, String> {
    let start = Instant::now();
    let out = Command::new(BIN)
        .arg("compare")
        .arg(base)
        .arg(head)
        .args(["--format", "json"])
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    let wall_s = start.elapsed().as_secs_f64();
    if !out.status.success() {
        return Err(format!(
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    let c = v["verdict"]["metrics"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["key"] == "startup_cpu"))
        .map(|m| &m["change"])
        .filter(|c| c.is_object())
        .ok_or("no start-up CPU change in the verdict")?;
    Ok(Outcome {
        change_pct: c["change_pct"].as_f64().ok_or("no change_pct")?,
        p: c["p_value"].as_f64().ok_or("no p_value")?,
        noise_pct: c["noise_floor_pct"].as_f64().ok_or("no noise_floor_pct")?,
        interval_clear: {
            let lo = c["ci95_pct"][0].as_f64().ok_or("no ci95_pct")?;
            let hi = c["ci95_pct"][1].as_f64().ok_or("no ci95_pct")?;
            lo > 0.0 || hi < 0.0
        },
        significant: c["significant"].as_bool().ok_or("no significant")?,
        wall_s,
        rounds: v["rounds"]["count"].as_u64().ok_or("no rounds.count")? as usize,
    })
}

/// The comparisons of one pair (or of A/A).
struct Row {
    label: String,
    relocs: usize,
    head: PathBuf,
    /// Whether only a slower HEAD counts (false: A/A, either direction).
    directed: bool,
    outcomes: Vec<Outcome>,
    errors: usize,
}

impl Row {
    /// Of the comparisons not detected, how many failed each of the verdict's three tests
    /// (p below 0.05, the interval clear of zero, the change above the noise floor); one
    /// comparison may fail several.
    fn missed_by(&self) -> (usize, usize, usize) {
        let missed: Vec<&Outcome> = self
            .outcomes
            .iter()
            .filter(|o| !(o.significant && (!self.directed || o.change_pct > 0.0)))
            .collect();
        (
            missed.iter().filter(|o| o.p >= 0.05).count(),
            missed.iter().filter(|o| !o.interval_clear).count(),
            missed
                .iter()
                .filter(|o| o.change_pct.abs() <= o.noise_pct)
                .count(),
        )
    }

    fn detected(&self) -> usize {
        self.outcomes
            .iter()
            .filter(|o| o.significant && (!self.directed || o.change_pct > 0.0))
            .count()
    }
}

fn main() {
    let rounds = env_or("LDCOST_SENS_ROUNDS", ROUNDS);
    let aa = env_or("LDCOST_SENS_AA", AA);
    let sizes: Vec<f64> = std::env::var("LDCOST_SENS_SIZES")
        .unwrap_or_else(|_| "3,5,10".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let extra: Vec<String> = std::env::var("LDCOST_SENS_ARGS")
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect();
    if !common::have("cc") {
        println!("SKIP compare_sensitivity: no cc to build the fixtures");
        return;
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    let base = build(dir.path(), 0);
    let cal = build(dir.path(), CAL_RELOCS);
    println!("compare_sensitivity: load {}", loadavg());

    // Calibration: the CPU of one relative relocation in librel.so's relocation phase, and
    // BASE's start-up CPU, three profiles each.
    let (mut per_reloc, mut startup) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let measured = profile(&base).and_then(|b| profile(&cal).map(|c| (b, c)));
        let ((b_reloc, b_start), (c_reloc, _)) = match measured {
            Ok(m) => m,
            Err(e) => {
                println!("SKIP compare_sensitivity: ldcost profile: {e}");
                return;
            }
        };
        per_reloc.push((c_reloc - b_reloc) / CAL_RELOCS as f64);
        startup.push(b_start);
    }
    let (ns_per_reloc, startup_ns) = (median(&per_reloc), median(&startup));
    if ns_per_reloc.is_nan() || ns_per_reloc <= 0.0 {
        println!("FAIL calibration: {CAL_RELOCS} relocations cost no measurable CPU");
        return;
    }
    let per_pct = (startup_ns / 100.0 / ns_per_reloc).round() as usize;
    println!(
        "\ncalibration (ldcost profile --json -, default settings, BASE and a {CAL_RELOCS}-relocation build, 3 times each):"
    );
    let list = |v: &[f64], scale: f64| {
        v.iter()
            .map(|x| format!("{:.2}", x / scale))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "  librel.so's relocation phase (per-object runs): {:.2} ns per relative relocation (median of {})",
        ns_per_reloc,
        list(&per_reloc, 1.0)
    );
    println!(
        "  BASE start-up CPU (boundaries-only runs, as compare judges it): {:.1} µs (median of {} µs)",
        startup_ns / 1e3,
        list(&startup, 1e3)
    );
    println!(
        "  1% of start-up = {:.2} µs = {per_pct} relative relocations",
        startup_ns / 1e5
    );
    // The check of the calibration: the change compare itself measures for the calibration
    // build, against the change the calibration predicts for it.
    let checks: Vec<f64> = (0..3)
        .filter_map(|_| compare(&base, &cal, &[]).ok())
        .map(|o| o.change_pct)
        .collect();
    println!(
        "  check: compare BASE against the {CAL_RELOCS}-relocation build measures {:+.1}% (median of {}); the calibration predicts {:+.1}%",
        median(&checks),
        checks
            .iter()
            .map(|c| format!("{c:+.1}%"))
            .collect::<Vec<_>>()
            .join(", "),
        CAL_RELOCS as f64 / per_pct as f64
    );

    let mut rows: Vec<Row> = sizes
        .iter()
        .map(|&pct| {
            let relocs = (pct * per_pct as f64).round() as usize;
            Row {
                label: format!("+{pct}%"),
                relocs,
                head: build(dir.path(), relocs),
                directed: true,
                outcomes: Vec::new(),
                errors: 0,
            }
        })
        .collect();
    rows.push(Row {
        label: "A/A".into(),
        relocs: 0,
        head: base.clone(),
        directed: false,
        outcomes: Vec::new(),
        errors: 0,
    });
    let extra_note = if extra.is_empty() {
        String::new()
    } else {
        format!(" {}", extra.join(" "))
    };
    println!(
        "\nplan: ldcost compare BASE HEAD --format json{extra_note}; {rounds} per pair, {aa} A/A (BASE against itself), interleaved\n"
    );
    println!(
        "{:>5}  {:>6}  {:>8}  {:>8}  {:>7}  {:>7}  {:>6}  {:>7}  verdict",
        "round", "pair", "relocs", "change", "p", "noise", "rounds", "wall s"
    );
    let aa_index = rows.len() - 1;
    let total_rounds = rounds.max(aa.div_ceil(2));
    for round in 0..total_rounds {
        for (i, row) in rows.iter_mut().enumerate() {
            // A/A runs twice per round until it has its count; the pairs once until theirs.
            let (times, wanted) = if i == aa_index { (2, aa) } else { (1, rounds) };
            for _ in 0..times {
                if row.outcomes.len() + row.errors >= wanted {
                    continue;
                }
                match compare(&base, &row.head, &extra) {
                    Ok(o) => {
                        println!(
                            "{:>5}  {:>6}  {:>8}  {:>+7.1}%  {:>7.3}  {:>6.1}%  {:>6}  {:>7.1}  {}",
                            round + 1,
                            row.label,
                            row.relocs,
                            o.change_pct,
                            o.p,
                            o.noise_pct,
                            o.rounds,
                            o.wall_s,
                            if o.significant {
                                "SIGNIFICANT"
                            } else {
                                "no significant change"
                            }
                        );
                        row.outcomes.push(o);
                    }
                    Err(e) => {
                        println!("{:>5}  {:>6}  error: {e}", round + 1, row.label);
                        row.errors += 1;
                    }
                }
            }
        }
    }

    println!("\nload {}", loadavg());
    println!(
        "\n| pair | relative relocations | detected | goal | median change | median p | median noise floor | median rounds | median wall | result |"
    );
    println!("|---|---:|---:|---|---:|---:|---:|---:|---:|---|");
    let mut walls = Vec::new();
    let mut verdicts = Vec::new();
    for row in &rows {
        let n = row.outcomes.len();
        let d = row.detected();
        let changes: Vec<f64> = row.outcomes.iter().map(|o| o.change_pct).collect();
        let ps: Vec<f64> = row.outcomes.iter().map(|o| o.p).collect();
        let noise: Vec<f64> = row.outcomes.iter().map(|o| o.noise_pct).collect();
        let w: Vec<f64> = row.outcomes.iter().map(|o| o.wall_s).collect();
        let r: Vec<f64> = row.outcomes.iter().map(|o| o.rounds as f64).collect();
        walls.extend(&w);
        let nominal: Option<f64> = row.label.trim_matches(['+', '%']).parse().ok();
        let (goal, pass) = match nominal {
            None => (
                format!("at most {} of {n}", n / 20),
                Some(n > 0 && d * 20 <= n),
            ),
            Some(pct) if pct >= JUDGED_PCT => (
                format!("at least {} of {n}", (9 * n).div_ceil(10)),
                Some(n > 0 && d * 10 >= 9 * n),
            ),
            Some(_) => ("reported".to_string(), None),
        };
        let result = match pass {
            Some(true) => "PASS",
            Some(false) => "FAIL",
            None => "—",
        };
        if let Some(p) = pass {
            verdicts.push((row.label.clone(), d, n, p));
        }
        let errors = if row.errors > 0 {
            format!(" ({} failed)", row.errors)
        } else {
            String::new()
        };
        println!(
            "| {} | {} | {d}/{n}{errors} | {goal} | {:+.1}% | {:.3} | {:.1}% | {:.0} | {:.1} s | {result} |",
            row.label,
            row.relocs,
            median(&changes),
            median(&ps),
            median(&noise),
            median(&r),
            median(&w),
        );
    }
    let wall_median = median(&walls);
    let wall_max = walls.iter().copied().fold(f64::NAN, f64::max);
    println!();
    for row in rows.iter().filter(|r| r.directed) {
        let (p, ci, floor) = row.missed_by();
        let missed = row.outcomes.len() - row.detected();
        if missed > 0 {
            println!(
                "{} missed {missed}: p at least 0.05 in {p}, interval reaching zero in {ci}, change within the noise floor in {floor}",
                row.label
            );
        }
    }
    for (label, d, n, pass) in verdicts {
        let what = if label == "A/A" {
            "false detections at most 1 in 20"
        } else {
            "detected at least 9 in 10"
        };
        println!(
            "{} {label}: {d}/{n} {what}",
            if pass { "PASS" } else { "FAIL" }
        );
    }
    println!(
        "{} wall time per comparison: median {wall_median:.1} s, max {wall_max:.1} s (goal: median at most {WALL_GOAL_S} s)",
        if wall_median <= WALL_GOAL_S {
            "PASS"
        } else {
            "FAIL"
        }
    );
}
