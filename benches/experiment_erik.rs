//! erik's series, full size: is the fitted per-VMA cost within a factor of two of the
//! independent one, and what does a library cost at constant footprint?
//!
//! Run with `cargo bench --bench experiment_erik` (about 3 minutes on a 2-core VM;
//! `LDCOST_ERIK_QUICK=1` for the quick plan). Runs `ldcost::experiment::erik::run` in a
//! temporary directory and prints the fitted per-VMA costs beside the independent loop's
//! (one region of 1000 written anonymous pages forked as one VMA and as 1000), the per-library
//! costs with each way out of the child, and PASS/FAIL for the factor-of-two rule;
//! then the per-kind model's terms (VMAs by kind, page-table pages, resident
//! anonymous pages, libraries; "not identifiable" where the points cannot separate a term)
//! and its anonymous-VMA term against the independent loop, whose extra VMAs are of that kind.
//! A magnitude another process can move, so a bench, not a test; never fails the build.

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
    // The per-kind model: its tables (one per way of leaving), and the anonymous-VMA term
    // against the independent loop, whose extra VMAs are anonymous VMAs with written pages.
    for t in s.tables.iter().filter(|t| t.title.contains("by VMA kind")) {
        println!("{}", t.title);
        println!(
            "{:<22} {:>28} {:>28} {:>28}",
            t.columns[0], t.columns[2], t.columns[3], t.columns[4]
        );
        for r in &t.rows {
            let short = |c: &String| c.chars().take(28).collect::<String>();
            println!(
                "{:<22} {:>28} {:>28} {:>28}",
                r[0],
                short(&r[2]),
                short(&r[3]),
                short(&r[4])
            );
        }
        println!("{}\n", t.caption.clone().unwrap_or_default());
    }
    let value = |key: &str| s.findings.iter().find(|f| f.key == key).map(|f| f.value);
    match (
        value("erik.term.vmas.anon.round_trip._exit"),
        value("erik.per_vma_us.independent.round_trip"),
    ) {
        (Some(k), Some(i)) => println!(
            "{} per-kind anon VMA term {k:.3} µs against the independent loop's {i:.3} µs per \
             VMA (round trip, `_exit`): ratio {:.2}, goal within a factor of two\n",
            if i > 0.0 && k / i >= 0.5 && k / i <= 2.0 {
                "PASS"
            } else {
                "FAIL"
            },
            k / i
        ),
        _ => println!("FAIL per-kind anon VMA term or independent loop not available\n"),
    }
    for c in &s.checks {
        println!(
            "{} {}: {}",
            if c.holds { "PASS" } else { "FAIL" },
            c.claim,
            c.detail
        );
    }
}
