//! The worked examples, repeated: each examples/*/run.sh N times (`EXAMPLES_ROUNDS`, default
//! 10; `RUNS` per side, default 10), checking every time what the issue asks of them: the
//! verdict's direction, the leading factor (part and object of the attribution), and that the
//! explained share of the start-up change is at least 80% (aa: "no significant change").
//!
//! A bench, not a test: the explained share moves with the machine's load (the unexplained
//! part is ld.so's fixed start-up, whose noise a neighbour's build moves), and a detection
//! rate needs many runs. Prints one row per run, a table per example and PASS/FAIL (exit 1 on
//! FAIL). `cargo build --release` first: it runs target/release/ldcost. A wrong run's JSON is
//! kept in target/examples_check/NAME-ROUND.json. `LDCOST=FILE` runs that binary instead.
//!
//! The share is the attribution's: the explained total over the start-up change measured on
//! the same per-object runs the unit costs are fitted on (and its bootstrap interval, shown).
//!
//! Beside the share, each row says whether the explained total lies inside the verdict's
//! start-up change's own 95% interval (the boundaries-only runs; told, not judged).

use std::path::PathBuf;
use std::process::Command;

use ldcost::compare::Comparison;

struct Expect {
    name: &'static str,
    /// +1 slower, −1 faster, 0 no significant change.
    direction: i32,
    /// (part, object) leading the attribution.
    leader: Option<(&'static str, &'static str)>,
}

const EXAMPLES: [Expect; 4] = [
    Expect {
        name: "more-libraries",
        direction: 1,
        leader: Some(("relocation", "libwidgets.so")),
    },
    Expect {
        name: "visibility",
        direction: -1,
        leader: Some(("relocation", "libshapes.so")),
    },
    Expect {
        name: "bind-now",
        direction: 1,
        leader: Some(("relocation", "app")),
    },
    Expect {
        name: "aa",
        direction: 0,
        leader: None,
    },
];

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    // LDCOST: a copy of the binary, so a rebuild during the long bench does not swap it.
    let ldcost = std::env::var_os("LDCOST")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/release/ldcost"));
    if !ldcost.exists() {
        eprintln!("examples_check: build first: cargo build --release");
        std::process::exit(2);
    }
    let rounds: usize = std::env::var("EXAMPLES_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let only = std::env::var("EXAMPLES_ONLY").ok();
    let mut all_ok = true;
    let mut table = Vec::new();
    for e in EXAMPLES
        .iter()
        .filter(|e| only.as_deref().is_none_or(|o| o == e.name))
    {
        let (mut right, mut shares, mut inside) = (0, Vec::new(), 0);
        for round in 0..rounds {
            let out = Command::new("sh")
                .arg(root.join(format!("examples/{}/run.sh", e.name)))
                .args(["--format", "json"])
                .env("LDCOST", &ldcost)
                .env_remove("LD_BIND_NOW")
                .env_remove("LD_LIBRARY_PATH")
                .output();
            let stdout = out.as_ref().ok().filter(|o| o.status.success());
            let c: Option<Comparison> = stdout.and_then(|o| serde_json::from_slice(&o.stdout).ok());
            let Some(c) = c else {
                println!(
                    "{} #{}: run failed: {:?}",
                    e.name,
                    round + 1,
                    out.map(|o| o.status)
                );
                continue;
            };
            let dir = if c.verdict.slower {
                1
            } else if c.verdict.faster {
                -1
            } else {
                0
            };
            let a = &c.attribution;
            let lead = a.parts.first().and_then(|p| {
                p.items
                    .first()
                    .map(|i| (p.factor.clone(), i.object.clone()))
            });
            let lead_ok = match e.leader {
                Some((p, o)) => lead.as_ref().is_some_and(|l| l.0 == p && l.1 == o),
                None => true,
            };
            let share_ok = e.direction == 0 || a.explained_share.is_some_and(|s| s >= 0.8);
            let ok = dir == e.direction && lead_ok && share_ok;
            let within = within_interval(&c);
            inside += usize::from(within == Some(true));
            right += ok as usize;
            // A wrong run's whole comparison is kept, for its per-run figures.
            let kept = match stdout.filter(|_| !ok) {
                Some(o) => {
                    let dir = root.join("target/examples_check");
                    let p = dir.join(format!("{}-{}.json", e.name, round + 1));
                    let _ = std::fs::create_dir_all(&dir);
                    match std::fs::write(&p, &o.stdout) {
                        Ok(()) => format!(" (kept: {})", p.display()),
                        Err(err) => format!(" (not kept: {err})"),
                    }
                }
                None => String::new(),
            };
            if let Some(s) = a.explained_share {
                shares.push(s * 100.0);
            }
            println!(
                "{} #{}: {} | leader {:?} | explained {} (inside the verdict's change's 95% interval: {}) {}{}",
                e.name,
                round + 1,
                c.verdict.summary,
                lead,
                a.explained_share.map_or("—".to_string(), |s| format!(
                    "{:.0}%{}",
                    s * 100.0,
                    a.explained_share_ci95.map_or(String::new(), |(l, h)| format!(
                        " [95% {:.0}%, {:.0}%]",
                        l * 100.0,
                        h * 100.0
                    ))
                )),
                within.map_or("—", |w| if w { "yes" } else { "no" }),
                if ok { "ok" } else { "WRONG" },
                kept
            );
        }
        shares.sort_by(|a, b| a.total_cmp(b));
        let ok = right == rounds;
        all_ok &= ok;
        table.push(format!(
            "{:<16} {:>3}/{:<3} {:>22}  {:>3}/{:<3}  {}",
            e.name,
            right,
            rounds,
            if shares.is_empty() {
                "—".to_string()
            } else {
                format!("{:.0}% … {:.0}%", shares[0], shares[shares.len() - 1])
            },
            inside,
            rounds,
            if ok { "PASS" } else { "FAIL" }
        ));
    }
    println!(
        "\nexample          right      explained share (min … max)  explained inside the interval"
    );
    for l in &table {
        println!("{l}");
    }
    println!("{}", if all_ok { "PASS" } else { "FAIL" });
    if !all_ok {
        std::process::exit(1);
    }
}

/// Whether the explained total lies inside the 95% interval of the measured start-up CPU
/// change (the interval of the ratio of medians, times BASE's median); None without one.
fn within_interval(c: &Comparison) -> Option<bool> {
    let m = c.verdict.metrics.iter().find(|m| m.key == "startup_cpu")?;
    let ch = m.change.as_ref()?;
    let (lo, hi) = ch.ci95_pct;
    let base = ch.base_median;
    let x = c.attribution.explained_ns;
    Some(x >= base * lo / 100.0 && x <= base * hi / 100.0)
}
