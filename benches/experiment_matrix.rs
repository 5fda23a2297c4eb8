//! The fork+execl matrix's large parent: does `--quick` read what a full run does, and what
//! the probe run by hand does?
//!
//! Run with `cargo bench --bench experiment_matrix` (about a minute on a 2-core VM). Runs
//! `ldcost::experiment::matrix::run` quick and full in temporary directories and, for each
//! way of spawning from the 64 MiB parent (fork, vfork, posix_spawn), prints the two figures
//! with PASS/FAIL for "quick within 20% of full"; then the same beside `probes/matrix_spawn.c`
//! run by hand (built here with `cc -static`, 20 spawns, the median of five loops), the tool a
//! user would otherwise run, PASS/FAIL within 20% of the full run. Timings another process can
//! move, so a bench, not a test; never fails the build.

use std::path::Path;
use std::process::Command;

use ldcost::experiment::matrix::{parse_spawn, run, LARGE_HEAP_MIB, METHODS};
use ldcost::experiment::section::{Section, Settings, Silent};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The large-parent cell's median, µs.
fn large(s: &Section, method: &str) -> Option<f64> {
    let cell = s.data["cells"].as_array()?.iter().find(|c| {
        c["method"] == method && c["heap_mib"] == LARGE_HEAP_MIB && c["parent"] == "static"
    })?;
    Some(median(
        cell["us"]
            .as_array()?
            .iter()
            .filter_map(|v| v.as_f64())
            .collect(),
    ))
}

fn build(dir: &Path, name: &str) -> Option<std::path::PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("probes/{name}.c"));
    let out = dir.join(name);
    let ok = Command::new("cc")
        .args(["-O2", "-Wall", "-static", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(out)
}

fn verdict(a: f64, b: f64) -> &'static str {
    if (a / b - 1.0).abs() <= 0.2 {
        "PASS"
    } else {
        "FAIL"
    }
}

fn main() {
    let mut sections = Vec::new();
    for quick in [true, false] {
        let dir = tempfile::tempdir().expect("temporary directory");
        let settings = Settings {
            work_dir: dir.path().to_path_buf(),
            quick,
            runs: None,
        };
        let t = std::time::Instant::now();
        match run(&settings, &Silent) {
            Ok(s) => {
                println!(
                    "matrix, {} plan: {:.0} s",
                    if quick { "quick" } else { "full" },
                    t.elapsed().as_secs_f64()
                );
                sections.push(s);
            }
            Err(e) => {
                println!("SKIP experiment_matrix: {e}");
                return;
            }
        }
    }
    let (q, f) = (&sections[0], &sections[1]);
    let dir = tempfile::tempdir().expect("temporary directory");
    let probe = build(dir.path(), "matrix_spawn").zip(build(dir.path(), "child"));
    println!(
        "\n{LARGE_HEAP_MIB} MiB parent, µs per spawn: --quick and full (the matrix), and \
         probes/matrix_spawn.c by hand (20 spawns, median of 5 loops)"
    );
    println!(
        "{:<12} {:>10} {:>10} {:>8} {:>6} {:>10} {:>8} {:>6}",
        "method", "quick", "full", "q/f", "20%", "by hand", "h/f", "20%"
    );
    for m in METHODS {
        let (Some(qv), Some(fv)) = (large(q, m), large(f, m)) else {
            println!("FAIL {m}: no large-parent cell");
            continue;
        };
        let hand = probe.as_ref().map(|(p, c)| {
            median(
                (0..5)
                    .filter_map(|_| {
                        let o = Command::new(p)
                            .arg(m)
                            .arg(c)
                            .args(["20", &LARGE_HEAP_MIB.to_string()])
                            .output()
                            .ok()?;
                        parse_spawn(&String::from_utf8_lossy(&o.stdout)).map(|x| x.2)
                    })
                    .collect(),
            )
        });
        let (hs, hr, hv) = match hand {
            Some(h) if h.is_finite() => {
                (format!("{h:.0}"), format!("{:.2}", h / fv), verdict(h, fv))
            }
            _ => ("n/a".into(), "".into(), "SKIP"),
        };
        println!(
            "{m:<12} {qv:>10.0} {fv:>10.0} {:>8.2} {:>6} {hs:>10} {hr:>8} {hv:>6}",
            qv / fv,
            verdict(qv, fv)
        );
    }
}
