//! The fork+execl matrix's large parent (`ldcost::experiment::matrix`, --quick) against the
//! probe run by hand.
//!
//! Oracle: `probes/matrix_spawn.c` and `probes/child.c`, built here by the test with `cc
//! -static` as a user would from probes/README.md, and run by hand (20 spawns from a 64 MiB
//! parent, the least of five loops, again while they disagree) for fork, vfork and
//! posix_spawn. The least of the matrix's loops for the same cells must agree within a
//! generous bound (a factor of three, plus 0.3 ms: two timings of a loaded machine); the 20%
//! agreement of --quick with a full run is
//! `cargo bench --bench experiment_matrix`'s. Exact and asserted: the plan (enough spawns, the
//! median of several loops, the same heap in both plans).

mod common;

use std::path::Path;
use std::process::Command;

use common::{skip, tools};
use ldcost::experiment::matrix::{run, LARGE_HEAP_MIB, LARGE_LOOPS, METHODS};
use ldcost::experiment::section::{Settings, Silent};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Builds `probes/NAME.c` statically into `dir`; Err: why not.
fn build(dir: &Path, name: &str) -> Result<std::path::PathBuf, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("probes")
        .join(format!("{name}.c"));
    let out = dir.join(name);
    let o = Command::new("cc")
        .args(["-O2", "-Wall", "-static", "-o"])
        .arg(&out)
        .arg(&src)
        .output()
        .map_err(|e| e.to_string())?;
    if !o.status.success() {
        return Err(format!(
            "cc -static {name}.c failed (static libc not installed?): {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(out)
}

/// µs per spawn of one loop of the probe, from its machine-readable line.
fn by_hand(probe: &Path, method: &str, child: &Path, count: u32) -> f64 {
    let o = Command::new(probe)
        .arg(method)
        .arg(child)
        .arg(count.to_string())
        .arg(LARGE_HEAP_MIB.to_string())
        .output()
        .expect("run matrix_spawn");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{method}: {text} {:?}", o.stderr);
    let (m, n, us) = ldcost::experiment::matrix::parse_spawn(&text).expect("a matrix_spawn line");
    assert_eq!((m.as_str(), n), (method, u64::from(count)), "{text}");
    us
}

#[test]
fn the_large_parent_cells_agree_with_the_probe_run_by_hand() {
    let name = "the_large_parent_cells_agree_with_the_probe_run_by_hand";
    if !tools(name, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (probe, child) = match (
        build(dir.path(), "matrix_spawn"),
        build(dir.path(), "child"),
    ) {
        (Ok(p), Ok(c)) => (p, c),
        (Err(e), _) | (_, Err(e)) => {
            skip(name, &e);
            return;
        }
    };
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let settings = Settings {
        work_dir: work,
        quick: true,
        runs: None,
    };
    let s = match run(&settings, &Silent) {
        Ok(s) => s,
        Err(e) => {
            skip(name, &format!("the matrix could not run: {e}"));
            return;
        }
    };
    let data = &s.data;
    let count = data["large_parent_count"].as_u64().unwrap() as u32;
    let runs = data["runs"].as_u64().unwrap() as usize;
    assert_eq!(data["heap_mib"], LARGE_HEAP_MIB);
    assert!(count >= 20, "{count} spawns per loop");
    for method in METHODS {
        let cell = data["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| {
                c["method"] == method
                    && c["heap_mib"] == LARGE_HEAP_MIB
                    && c["parent"] == "static"
                    && c["child"] == "static"
            })
            .unwrap();
        let us: Vec<f64> = cell["us"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(
            us.len(),
            runs * LARGE_LOOPS as usize,
            "{method}: one figure per loop"
        );
        let ours = median(us.clone());
        // The large-parent table's cell is that median, in ms.
        let table = s
            .tables
            .iter()
            .find(|t| t.title.contains("a large parent"))
            .unwrap();
        let row = table.rows.iter().find(|r| r[0] == method).unwrap();
        let shown: f64 = row[2].parse().unwrap();
        assert!(
            (shown - ours / 1e3).abs() <= 0.01 * ours / 1e3 + 0.001,
            "{method}: table {shown} ms, data {ours} µs"
        );
        // The least loop on each side: load on a shared machine only ever adds, and a burst
        // over a loop of 20 spawns moved a median of three by 9x. A burst can outlast five
        // loops by hand (the other core busy: 1192 µs against the matrix's 217), so while
        // the two disagree the probe is run by hand again.
        let least = us.iter().copied().fold(f64::INFINITY, f64::min);
        let agree = |hand: f64| least <= 3.0 * hand + 300.0 && hand <= 3.0 * least + 300.0;
        let mut hand = f64::INFINITY;
        for _ in 0..4 {
            hand = (0..5)
                .map(|_| by_hand(&probe, method, &child, 20))
                .fold(hand, f64::min);
            if agree(hand) {
                break;
            }
        }
        eprintln!(
            "{method}, {LARGE_HEAP_MIB} MiB parent: matrix {least:.0} µs (least loop), by hand {hand:.0} µs"
        );
        assert!(
            agree(hand),
            "{method}: the matrix's least loop is {least:.0} µs per spawn, the probe's by hand {hand:.0} µs"
        );
    }
}
