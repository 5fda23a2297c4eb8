//! A/A benchmark of `ldcost compare`: how often is "no change" called a change?
//!
//! Run with `cargo bench --bench compare_aa`. Twenty comparisons of a binary with its byte-for-
//! byte copy (BASE = /bin/true, HEAD = a copy in a temporary directory), each `compare -n N`
//! (interleaved, as the command runs them). The goal: at most 1 of 20 reported as a
//! significant change of start-up CPU (the verdict's judged figure) at the 5% level. Needs
//! ptrace and perf_event_open (root here); prints SKIP otherwise. Prints a table and PASS/FAIL;
//! never fails the build.
//!
//! Environment: `LDCOST_AA_COMPARISONS` (default 20), `LDCOST_AA_RUNS` (rounds per comparison,
//! default 10), `LDCOST_AA_TARGET` (another binary to copy).

use clap::Parser;
use ldcost::cli::{Cli, Command};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let comparisons = env_or("LDCOST_AA_COMPARISONS", 20);
    let runs = env_or("LDCOST_AA_RUNS", 10);
    let target = std::env::var("LDCOST_AA_TARGET").unwrap_or_else(|_| "/bin/true".into());
    let dir = tempfile::tempdir().expect("temporary directory");
    let copy = dir.path().join("copy");
    std::fs::copy(&target, &copy).expect("copy the target");
    let argv = [
        "ldcost",
        "compare",
        &target,
        copy.to_str().unwrap(),
        "-n",
        &runs.to_string(),
        "--quiet-target",
    ];
    let Command::Compare(args) = Cli::parse_from(argv).command else {
        unreachable!("a compare command line");
    };
    let cfg = ldcost::config::compare_config(*args).expect("a compare command line");
    println!("A/A: {comparisons} comparisons of {target} with its copy, {runs} interleaved rounds each\n");
    println!(
        "{:>3}  {:>10}  {:>10}  {:>8}  {:>18}  {:>7}  {:>7}  verdict",
        "#", "BASE µs", "HEAD µs", "change", "95% interval", "p", "noise"
    );
    let (mut significant, mut done) = (0, 0);
    let mut widths = Vec::new();
    for i in 0..comparisons {
        let (base, head) = match ldcost::run::compare_runner::measure(&cfg) {
            Ok(d) => d,
            Err(e) if e.exit_code() == ldcost::error::ExitCode::Refused => {
                println!("SKIP compare_aa: {e}");
                return;
            }
            Err(e) => {
                println!("comparison {i}: {e}");
                continue;
            }
        };
        let (v, _, _) = ldcost::compare::compare_documents(&base, &head);
        let Some(c) = v
            .metrics
            .iter()
            .find(|m| m.key == "startup_cpu")
            .and_then(|m| m.change.clone())
        else {
            println!("comparison {i}: no start-up CPU");
            continue;
        };
        done += 1;
        if c.significant {
            significant += 1;
        }
        widths.push(c.ci95_pct.1 - c.ci95_pct.0);
        println!(
            "{:>3}  {:>10.1}  {:>10.1}  {:>+7.1}%  [{:>+6.1}%, {:>+6.1}%]  {:>7.3}  {:>6.1}%  {}",
            i + 1,
            c.base_median / 1e3,
            c.head_median / 1e3,
            c.change_pct,
            c.ci95_pct.0,
            c.ci95_pct.1,
            c.p_value,
            c.noise_floor_pct,
            if c.significant {
                "SIGNIFICANT"
            } else {
                "no significant change"
            }
        );
    }
    widths.sort_by(|a, b| a.total_cmp(b));
    let median_width = widths.get(widths.len() / 2).copied().unwrap_or(f64::NAN);
    println!(
        "\nsignificant: {significant} of {done} (goal: at most {}); median interval width {median_width:.1} points",
        done / 20
    );
    println!(
        "{} false alarms at most 1 in 20",
        if done > 0 && significant * 20 <= done {
            "PASS"
        } else {
            "FAIL"
        }
    );
}
