//! erik's series, full size: is the fitted per-VMA cost within a factor of two of the
//! independent one, and what does a library cost at constant footprint?
//!
//! Run with `cargo bench --bench experiment_erik` (about 3 minutes on a 2-core VM;
//! `LDCOST_ERIK_QUICK=1` for the quick plan). Runs `ldcost::experiment::erik::run` in a
//! temporary directory and prints the fitted per-VMA costs beside the independent loop's
//! (one region of 1000 written anonymous pages forked as one VMA and as 1000), the per-library
//! costs with each way out of the child, and PASS/FAIL for the factor-of-two rule (issue 15,
//! "Must be true"). A magnitude another process can move, so a bench, not a test; never fails
//! the build.

use ldcost::experiment::erik::run;
use ldcost::experiment::section::{Settings, Silent};

fn main() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let quick = std::env::var_os("LDCOST_ERIK_QUICK").is_some();
    let settings = Settings {
        work_dir: dir.path().to_path_buf(),
        quick,
        runs: None,
    };
    let t = std::time::Instant::now();
    let s = match run(&settings, &Silent) {
        Ok(s) => s,
        Err(e) => {
            println!("SKIP experiment_erik: {e}");
            return;
        }
    };
    println!(
        "erik's series ({} plan) in {:.0} s\n",
        if quick { "quick" } else { "full" },
        t.elapsed().as_secs_f64()
    );
    println!("{:<44} {:>10} {:>22}", "finding", "value", "95% interval");
    for f in &s.findings {
        let ci = f
            .interval
            .map_or(String::new(), |[a, b]| format!("[{a:.3}, {b:.3}]"));
        println!("{:<44} {:>10.3} {:>22}", f.key, f.value, ci);
    }
    println!();
    for c in &s.checks {
        println!(
            "{} {}: {}",
            if c.holds { "PASS" } else { "FAIL" },
            c.claim,
            c.detail
        );
    }
}
