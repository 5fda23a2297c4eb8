//! Does compare's lazy-binding prediction agree with the change it predicts?
//!
//! Run with `cargo bench --bench compare_whatif`. `ldcost compare /bin/ls /bin/ls --head-env
//! LD_BIND_NOW=1`: HEAD binds at start-up what BASE binds lazily, so the what-if "lazy
//! binding" (HEAD without LD_BIND_NOW) predicts BASE − HEAD, which the same comparison
//! measures. PASS when the prediction lies within the 95% interval of the measured change of
//! start-up CPU (the verdict's runs), or its own interval holds the measured change, or it is
//! within 25% of it. Beside it, what a user would otherwise run: `perf stat -e task-clock -r R`
//! of `env -u LD_BIND_NOW /bin/ls` and `env LD_BIND_NOW=1 /bin/ls` (whole processes, `env`'s
//! own exec in both). Needs ptrace and perf_event_open; prints SKIP otherwise. Never fails the
//! build.
//!
//! Environment: `LDCOST_WHATIF_COMPARISONS` (default 3), `LDCOST_WHATIF_RUNS` (rounds per
//! comparison, default 20).

use clap::Parser;
use ldcost::cli::{Cli, Command};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `perf stat`'s median-free mean task-clock in µs of `argv` over `r` runs, in `dir`.
fn perf_task_clock_us(dir: &std::path::Path, r: usize, argv: &[&str]) -> Option<f64> {
    let o = std::process::Command::new("perf")
        .args([
            "stat",
            "-x,",
            "-e",
            "task-clock",
            "-r",
            &r.to_string(),
            "--",
        ])
        .args(argv)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .output()
        .ok()?;
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err.lines().find(|l| l.contains("task-clock"))?;
    let ms: f64 = line.split(',').next()?.parse().ok()?;
    Some(ms * 1e3)
}

fn main() {
    let comparisons = env_or("LDCOST_WHATIF_COMPARISONS", 3);
    let runs = env_or("LDCOST_WHATIF_RUNS", 20);
    let dir = tempfile::tempdir().expect("temporary directory");
    let argv = [
        "ldcost",
        "compare",
        "/bin/ls",
        "/bin/ls",
        "--head-env",
        "LD_BIND_NOW=1",
        "-n",
        &runs.to_string(),
        "--quiet-target",
    ];
    let Command::Compare(args) = Cli::parse_from(argv).command else {
        unreachable!("a compare command line");
    };
    let cfg = ldcost::config::compare_config(*args).expect("a compare command line");
    println!(
        "lazy-binding what-if: {comparisons} comparisons of /bin/ls with itself under LD_BIND_NOW=1, {runs} rounds each\n"
    );
    println!(
        "{:>2}  {:>6}  {:>26}  {:>28}  {:>12}  {:>10}  result",
        "#",
        "slots",
        "predicted µs [95%]",
        "measured BASE−HEAD µs [95%]",
        "per-object",
        "perf stat"
    );
    let (mut pass, mut done) = (0, 0);
    for i in 0..comparisons {
        let (base, head) = match ldcost::run::compare_runner::measure(&cfg) {
            Ok(d) => d,
            Err(e) if e.exit_code() == ldcost::error::ExitCode::Refused => {
                println!("SKIP compare_whatif: {e}");
                return;
            }
            Err(e) => {
                println!("comparison {i}: {e}");
                continue;
            }
        };
        let (v, _, a) = ldcost::compare::compare_documents(&base, &head);
        let Some(c) = v
            .metrics
            .iter()
            .find(|m| m.key == "startup_cpu")
            .and_then(|m| m.change.clone())
        else {
            println!("comparison {i}: no start-up CPU");
            continue;
        };
        let Some(w) = a
            .what_if
            .iter()
            .find(|w| w.change.starts_with("lazy binding"))
        else {
            println!("comparison {i}: no lazy-binding prediction");
            continue;
        };
        let Some(p) = w.predicted_ns else { continue };
        done += 1;
        let slots = w
            .basis
            .split(" PLT slots")
            .next()
            .unwrap_or("?")
            .to_string();
        // BASE − HEAD: what HEAD would gain by going lazy, the prediction's sign.
        let m = c.base_median - c.head_median;
        let m_ci = (
            -c.ci95_pct.1 * c.base_median / 100.0,
            -c.ci95_pct.0 * c.base_median / 100.0,
        );
        let within_measured = m_ci.0 <= p && p <= m_ci.1;
        let holds_measured = w.ci95_ns.is_some_and(|(lo, hi)| lo <= m && m <= hi);
        let within_25 = (p - m).abs() <= 0.25 * m.abs();
        let ok = within_measured || holds_measured || within_25;
        if ok {
            pass += 1;
        }
        let perf = match (
            perf_task_clock_us(dir.path(), runs, &["env", "-u", "LD_BIND_NOW", "/bin/ls"]),
            perf_task_clock_us(dir.path(), runs, &["env", "LD_BIND_NOW=1", "/bin/ls"]),
        ) {
            (Some(b), Some(h)) => format!("{:+.1}", b - h),
            _ => "not available".into(),
        };
        println!(
            "{:>2}  {:>6}  {:>+9.1} [{:>+6.1}, {:>+6.1}]  {:>+9.1} [{:>+7.1}, {:>+7.1}]  {:>+12.1}  {:>10}  {}",
            i + 1,
            slots,
            p / 1e3,
            w.ci95_ns.map_or(f64::NAN, |c| c.0 / 1e3),
            w.ci95_ns.map_or(f64::NAN, |c| c.1 / 1e3),
            m / 1e3,
            m_ci.0 / 1e3,
            m_ci.1 / 1e3,
            a.instrumented_delta_ns.map_or(f64::NAN, |d| -d / 1e3),
            perf,
            if ok { "PASS" } else { "FAIL" }
        );
    }
    println!(
        "\n{} the prediction within the measured change's interval, its own interval, or 25%: {pass} of {done}",
        if done > 0 && pass == done { "PASS" } else { "FAIL" }
    );
}
