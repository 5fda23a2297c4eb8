//! The fixes `profile` predicts, verified by rebuilding: for each kind of fix, a program built
//! before and after the fix (tests/common/fix_fixtures.rs, generated C built with cc), then
//! - predicted: `ldcost profile --json -` of BEFORE alone; the `fixes` array's entries of the
//!   matching kind that name one of the pair's objects (summed when there are several, e.g.
//!   one per unused library) give the predicted saving (`saving_ns`) and its interval
//!   (`ci95_ns`);
//! - measured: `ldcost compare BEFORE AFTER --format json`, interleaved rounds with compare's
//!   own statistics: the start-up CPU (execve to main) of BEFORE less AFTER's, its interval
//!   from compare's 95% interval of the ratio.
//!
//! A prediction is a share of BEFORE's start-up as the profile measured it; the measurement
//! comes minutes later, when a shared machine may run at another speed. So the prediction is
//! judged at the measurement's speed: scaled by BEFORE's start-up CPU in the compare over
//! the same figure in the profile (both printed, µs, with the scaled prediction). PASS when
//! the measured saving lies within the scaled prediction's interval or within 25% of it;
//! FAIL otherwise. When the document has no `fixes` array (a build without the fixes), the
//! line says "prediction not available" and the measurement is still printed.
//!
//! A verdict needs a measurement precise enough to tell: the measured interval's half-width
//! must not exceed the tolerance, 25% of |scaled prediction| (or the scaled prediction's own
//! interval half-width when that is larger). After the first compare of a pair, when it is
//! wider, the pair is compared again with more interleaved rounds, as many as the interval
//! shrinking with the square root of the rounds asks for: rounds × (half-width / tolerance)²,
//! with a 10% margin, capped by `LDCOST_FIXES_MAX_ROUNDS` (default 1000, compare's own
//! maximum) and by `LDCOST_FIXES_MAX_SECONDS` (default 600) of compare's own wall time per
//! pair, estimated from the rounds already run. compare's JSON keeps medians and intervals, not the runs, so
//! the larger compare replaces the smaller rather than pooling with it. The rounds used and
//! why are printed. A pair still wider than its tolerance at the cap is "UNDECIDED (noise:
//! …)": neither a pass nor a fail, counted apart.
//!
//! The DT_RELR pair also gives the unit cost of what packing removes: `profile` of both builds
//! (interleaved, `LDCOST_FIXES_RELR_ROUNDS` rounds), the library's relocation phase CPU
//! before less after, over the RELA entries removed (readelf). What packing keeps, the
//! pointer writes and the faults on the pages they write, is in both builds.
//!
//! Run with `cargo bench --bench fixes` (root or ptrace and perf_event_open allowed, cc).
//! Environment: `LDCOST_FIXES_RUNS` (compare rounds, default 20), `LDCOST_FIXES_PROFILE_RUNS`
//! (profile -n, default 10), `LDCOST_FIXES_RELR_ROUNDS` (default 5), `LDCOST_FIXES_MAX_ROUNDS`
//! (default 1000), `LDCOST_FIXES_MAX_SECONDS` (default 600), `LDCOST_FIXES_ONLY`
//! (comma-separated kinds: unused, bind-now, relr, self-binding, constructor).

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::fix_fixtures as fx;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");
/// How far from the prediction a measurement may be, as a share of the prediction.
const TOLERANCE: f64 = 0.25;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One pair to verify.
struct Case {
    /// Short name (`LDCOST_FIXES_ONLY`).
    name: &'static str,
    /// The fix kinds, normalised (lower case, letters only), that count as this one.
    kinds: &'static [&'static str],
    before: PathBuf,
    after: PathBuf,
    objects: Vec<String>,
}

/// Why ldcost could not run: the system refuses (exit 8) or anything else.
enum RunError {
    Refused(String),
    Failed(String),
}

/// `ldcost ARGS`, its standard output read as JSON.
fn ldcost_json(args: &[&str]) -> Result<Value, RunError> {
    let out = Command::new(BIN)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_BIND_NOW")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| RunError::Failed(format!("cannot run {BIN}: {e}")))?;
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    match out.status.code() {
        Some(0) => {}
        Some(8) => return Err(RunError::Refused(err)),
        _ => {
            return Err(RunError::Failed(format!(
                "ldcost {}: {}: {err}",
                args.join(" "),
                out.status
            )))
        }
    }
    serde_json::from_slice(&out.stdout).map_err(|e| RunError::Failed(format!("JSON: {e}")))
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temporary path")
}

/// A saving and its 95% interval, in ns.
#[derive(Clone, Copy)]
struct Saving {
    ns: f64,
    ci: Option<(f64, f64)>,
}

fn normalise(kind: &str) -> String {
    kind.chars()
        .filter(|c| c.is_ascii_alphabetic())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The `fixes` array wherever the document keeps it.
fn fixes_of(doc: &Value) -> Option<&Vec<Value>> {
    ["/fixes", "/profile/fixes", "/summary/fixes"]
        .iter()
        .find_map(|p| doc.pointer(p).and_then(Value::as_array))
}

/// The predicted saving of `case`'s kind on the exec side, summed over its entries.
fn prediction(doc: &Value, case: &Case) -> Result<Saving, String> {
    let Some(fixes) = fixes_of(doc) else {
        return Err("prediction not available: the profile document has no `fixes` array".into());
    };
    let mut found = Vec::new();
    for f in fixes {
        let kind = f.get("kind").and_then(Value::as_str).unwrap_or("");
        let side = f.get("side").and_then(Value::as_str).unwrap_or("exec");
        // A fix of the same kind on another object (libc's own self-binding, say) is not
        // this pair's: only entries naming one of the pair's objects count.
        let ours = f
            .get("objects")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .any(|o| {
                let base = o.rsplit('/').next().unwrap_or(o);
                case.objects.iter().any(|x| x == base)
            });
        if case.kinds.contains(&normalise(kind).as_str()) && normalise(side) == "exec" && ours {
            found.push(f);
        }
    }
    if found.is_empty() {
        let kinds: Vec<String> = fixes
            .iter()
            .map(|f| {
                format!(
                    "{} {}",
                    f.get("kind").and_then(Value::as_str).unwrap_or("?"),
                    f.get("objects").map(Value::to_string).unwrap_or_default()
                )
            })
            .collect();
        return Err(format!(
            "not predicted for these objects (fixes: {})",
            kinds.join("; ")
        ));
    }
    let mut s = Saving {
        ns: 0.0,
        ci: Some((0.0, 0.0)),
    };
    for f in found {
        s.ns += f
            .get("saving_ns")
            .and_then(Value::as_f64)
            .unwrap_or(f64::NAN);
        let ci = f
            .get("ci95_ns")
            .and_then(Value::as_array)
            .and_then(|a| Some((a.first()?.as_f64()?, a.get(1)?.as_f64()?)));
        s.ci = match (s.ci, ci) {
            (Some((a, b)), Some((c, d))) => Some((a + c, b + d)),
            _ => None,
        };
    }
    Ok(s)
}

/// compare's start-up CPU: BEFORE less AFTER, with compare's 95% interval of the ratio turned
/// into ns at BEFORE's median; also the p-value and BEFORE's median.
fn measured(cmp: &Value) -> Result<(Saving, f64, f64), String> {
    let metrics = cmp
        .pointer("/verdict/metrics")
        .and_then(Value::as_array)
        .ok_or("no verdict metrics in compare's JSON")?;
    let m = metrics
        .iter()
        .find(|m| m.get("key").and_then(Value::as_str) == Some("startup_cpu"))
        .ok_or("no start-up CPU metric")?;
    let c = m.get("change").filter(|c| !c.is_null()).ok_or_else(|| {
        format!(
            "no start-up CPU change: {}",
            m.get("missing").and_then(Value::as_str).unwrap_or("?")
        )
    })?;
    let f = |k: &str| c.get(k).and_then(Value::as_f64).ok_or(format!("no {k}"));
    let (base, head, p) = (f("base_median")?, f("head_median")?, f("p_value")?);
    let ci = c
        .get("ci95_pct")
        .and_then(Value::as_array)
        .and_then(|a| Some((a.first()?.as_f64()?, a.get(1)?.as_f64()?)))
        .map(|(lo, hi)| (-base * hi / 100.0, -base * lo / 100.0));
    Ok((
        Saving {
            ns: base - head,
            ci,
        },
        p,
        base,
    ))
}

/// BEFORE's start-up CPU (execve to main) in its profile: the phases' medians but main to
/// exit, the figure compare's start-up CPU is of.
fn profile_startup(doc: &Value) -> Option<f64> {
    let phases = doc.pointer("/profile/phases")?.as_array()?;
    Some(
        phases
            .iter()
            .filter(|p| p.get("phase").and_then(Value::as_str) != Some("main-to-exit"))
            .filter_map(|p| p.pointer("/task_clock_ns/median").and_then(Value::as_f64))
            .sum(),
    )
}

/// Rounds and runs per round of the measurement without ldcost.
const UNTRACED_ROUNDS: usize = 40;
const UNTRACED_RUNS: usize = 100;

/// `perf stat -e task-clock` of a shell loop running `prog x` RUNS times: the CPU per run,
/// ns (perf prints msec to two decimals: over the loop's total that is 0.1 µs a run, where
/// `-r` would average runs printed to 10 µs). The shell's own forks are the same for both
/// builds. The argument makes the bind-now pair's program return before its calls (start-up
/// alone: their lazy binding would otherwise move, not vanish); the other pairs' programs
/// ignore it.
fn perf_stat_mean(prog: &Path, runs: usize) -> Result<f64, String> {
    let script = format!("i=0; while [ $i -lt {runs} ]; do \"$0\" x; i=$((i+1)); done");
    let out = Command::new("perf")
        .args(["stat", "-x,", "-e", "task-clock", "--", "sh", "-c", &script])
        .arg(prog)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_BIND_NOW")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run perf: {e}"))?;
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines()
        .find(|l| l.contains(",task-clock"))
        .and_then(|l| l.split(',').next())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map(|msec| msec * 1e6 / runs as f64)
        .ok_or_else(|| format!("perf stat gave no task-clock: {}", err.trim()))
}

/// The saving measured without ldcost: BEFORE's and AFTER's `perf stat` means in
/// [`UNTRACED_ROUNDS`] interleaved rounds; the median of the rounds' paired differences
/// with its 95% interval, and BEFORE's median CPU (the speed the prediction is scaled to).
fn untraced(before: &Path, after: &Path) -> Result<(Saving, f64), String> {
    let (mut d, mut b) = (Vec::new(), Vec::new());
    for round in 0..UNTRACED_ROUNDS {
        // Alternate which side goes first, so a drift within a round falls on both.
        let (x, y) = if round % 2 == 0 {
            let x = perf_stat_mean(before, UNTRACED_RUNS)?;
            (x, perf_stat_mean(after, UNTRACED_RUNS)?)
        } else {
            let y = perf_stat_mean(after, UNTRACED_RUNS)?;
            (perf_stat_mean(before, UNTRACED_RUNS)?, y)
        };
        d.push(x - y);
        b.push(x);
    }
    d.sort_by(f64::total_cmp);
    let ns = ldcost::stats::median_sorted(&d);
    let ci = ldcost::stats::median_interval(&d);
    let base = ldcost::stats::median(&b).unwrap_or(0.0);
    Ok((Saving { ns, ci: Some(ci) }, base))
}

/// BEFORE's CPU in its profile's runs without ptrace, the figure `perf stat` measures.
fn profile_uninstrumented(doc: &Value) -> Option<f64> {
    doc.pointer("/profile/overhead/uninstrumented_ns/median")
        .and_then(Value::as_f64)
}

fn us(ns: f64) -> String {
    format!("{:+.1}", ns / 1e3)
}

fn interval(ci: Option<(f64, f64)>) -> String {
    match ci {
        Some((a, b)) => format!("[{}, {}]", us(a), us(b)),
        None => "[n/a]".into(),
    }
}

/// PASS when the measured saving is inside the predicted interval or within 25% of the
/// prediction.
fn verdict(pred: Saving, meas: Saving) -> bool {
    let inside = pred
        .ci
        .is_some_and(|(lo, hi)| meas.ns >= lo.min(hi) && meas.ns <= lo.max(hi));
    inside || (meas.ns - pred.ns).abs() <= TOLERANCE * pred.ns.abs()
}

/// The precision a verdict needs: 25% of the prediction, or its own interval's half-width
/// when that is wider (the verdict accepts anything inside that interval).
fn tolerance(pred: Saving) -> f64 {
    let own = pred.ci.map_or(0.0, |(lo, hi)| (hi - lo).abs() / 2.0);
    (TOLERANCE * pred.ns.abs()).max(own)
}

/// Half the width of a measured 95% interval.
fn half_width(m: Saving) -> Option<f64> {
    m.ci.map(|(lo, hi)| (hi - lo).abs() / 2.0)
}

fn scale_saving(p: Saving, scale: f64) -> Saving {
    Saving {
        ns: p.ns * scale,
        ci: p.ci.map(|(lo, hi)| (lo * scale, hi * scale)),
    }
}

/// The rounds that shrink an interval of `half` (after `rounds`) to `target`: an interval's
/// width goes with 1/√rounds, so rounds × (half / target)², with a 10% margin because the
/// second estimate of the spread is itself noisy; whole ABBA pairs (even).
fn rounds_needed(rounds: usize, half: f64, target: f64) -> usize {
    let n = (rounds as f64 * (half / target).powi(2) * 1.1).ceil() as usize;
    (n.max(rounds + 2) + 1) & !1
}

/// compare's wall time of its measured rounds, seconds (0 when the document lacks it).
fn elapsed_s(cmp: &Value) -> f64 {
    cmp.pointer("/rounds/elapsed_s")
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
}

/// The measured rounds compare ran.
fn rounds_of(cmp: &Value) -> Option<usize> {
    cmp.pointer("/rounds/count")
        .and_then(Value::as_u64)
        .map(|n| n as usize)
}

/// A measured phase's median CPU ns (BASE, HEAD) from compare's factors, by its label.
fn compare_phase(cmp: &Value, label: &str) -> Option<(f64, f64)> {
    let row = cmp
        .pointer("/factors/phases")?
        .as_array()?
        .iter()
        .find(|r| r.get("name").and_then(Value::as_str) == Some(label))?;
    Some((row.get("base")?.as_f64()?, row.get("head")?.as_f64()?))
}

/// The relocation phase of `lib` in a profile document: median CPU ns, its interval, faults.
fn relocation_of(doc: &Value, lib: &str) -> Option<(f64, (f64, f64), f64)> {
    doc.pointer("/profile/phases")?
        .as_array()?
        .iter()
        .find(|p| {
            p.get("phase").and_then(Value::as_str) == Some("relocation")
                && p.get("object")
                    .and_then(Value::as_str)
                    .is_some_and(|o| o.ends_with(&format!("/{lib}")))
        })
        .and_then(|p| {
            let t = p.get("task_clock_ns")?;
            let ci = t.get("ci95")?.as_array()?;
            Some((
                t.get("median")?.as_f64()?,
                (ci.first()?.as_f64()?, ci.get(1)?.as_f64()?),
                p.pointer("/page_faults/median")?.as_f64()?,
            ))
        })
}

/// What DT_RELR removes, per RELA entry: profile both builds, interleaved.
fn relr_unit(pair: &fx::Pair<fx::RelrFacts>, runs: &str, rounds: usize) -> Result<(), RunError> {
    let lib = &pair.facts.library;
    let relative_before = pair.facts.rela_removed;
    println!(
        "\nDT_RELR unit: relocation phase of {lib}, {rounds} rounds of profile -n {runs} per build; \
         {relative_before} RELA entries removed"
    );
    println!(
        "{:>5}  {:>22}  {:>7}  {:>22}  {:>7}  {:>12}",
        "round", "before µs [95%]", "faults", "after µs [95%]", "faults", "ns per entry"
    );
    let (mut units, mut shares) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let mut got = Vec::new();
        for prog in [&pair.before, &pair.after] {
            let doc = ldcost_json(&[
                "profile",
                "-n",
                runs,
                "--quiet-target",
                "--no-progress",
                "--no-ld-debug",
                "--json",
                "-",
                path(prog),
            ])?;
            got.push(relocation_of(&doc, lib).ok_or_else(|| {
                RunError::Failed(format!("no relocation phase of {lib} in the profile"))
            })?);
        }
        let (b, a) = (got[0], got[1]);
        let unit = (b.0 - a.0) / relative_before as f64;
        units.push(unit);
        shares.push((b.0 - a.0) / b.0);
        println!(
            "{:>5}  {:>8.1} [{:>5.1}, {:>5.1}]  {:>7}  {:>8.1} [{:>5.1}, {:>5.1}]  {:>7}  {:>12.2}",
            r + 1,
            b.0 / 1e3,
            b.1 .0 / 1e3,
            b.1 .1 / 1e3,
            b.2,
            a.0 / 1e3,
            a.1 .0 / 1e3,
            a.1 .1 / 1e3,
            a.2,
            unit
        );
    }
    units.sort_by(f64::total_cmp);
    shares.sort_by(f64::total_cmp);
    println!(
        "DT_RELR saves {:.2} ns per RELA entry removed (median of {} rounds; range {:.2} to {:.2}), \
         {:.0}% of the library's relocation CPU before (range {:.0}% to {:.0}%)",
        units[units.len() / 2],
        units.len(),
        units[0],
        units[units.len() - 1],
        100.0 * shares[shares.len() / 2],
        100.0 * shares[0],
        100.0 * shares[shares.len() - 1]
    );
    Ok(())
}

fn main() {
    let runs = env("LDCOST_FIXES_RUNS", 20).to_string();
    let profile_runs = env("LDCOST_FIXES_PROFILE_RUNS", 10).to_string();
    let relr_rounds = env("LDCOST_FIXES_RELR_ROUNDS", 5);
    let max_rounds = env("LDCOST_FIXES_MAX_ROUNDS", 1000);
    let max_seconds = env("LDCOST_FIXES_MAX_SECONDS", 600) as f64;
    let only: Option<Vec<String>> = std::env::var("LDCOST_FIXES_ONLY")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
    let wanted = |name: &str| only.as_ref().is_none_or(|o| o.iter().any(|x| x == name));
    println!(
        "fixes: prediction from `profile -n {profile_runs}` of BEFORE against `compare -n {runs}` \
         of BEFORE and AFTER (start-up CPU, execve to main); PASS within the predicted \
         interval or within {:.0}% of the prediction",
        TOLERANCE * 100.0
    );
    println!(
        "load: {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    let dir = tempfile::tempdir().expect("temporary directory");
    let d = dir.path();
    let mut cases = Vec::new();
    let mut relr = None;
    let skip = |name: &str, e: String| println!("SKIP {name}: {e}");
    if wanted("unused") {
        match fx::unused_dependency(d) {
            Ok(p) => cases.push(Case {
                name: "unused",
                kinds: &["unuseddependency", "unuseddependencies"],
                before: p.before,
                after: p.after,
                objects: p.objects,
            }),
            Err(e) => skip("unused", e),
        }
    }
    if wanted("bind-now") {
        match fx::bind_now_pair(d) {
            Ok(p) => cases.push(Case {
                name: "bind-now",
                kinds: &["bindnow"],
                before: p.before,
                after: p.after,
                // Relinking the program with -z now binds the program's lazy slots only: the
                // fix naming the program is this pair's (libc's own is another relink).
                objects: p.objects,
            }),
            Err(e) => skip("bind-now", e),
        }
    }
    if wanted("relr") {
        match fx::relr_pair(d) {
            Ok(p) => {
                cases.push(Case {
                    name: "relr",
                    kinds: &["packrelativerelocs", "relr", "dtrelr"],
                    before: p.before.clone(),
                    after: p.after.clone(),
                    objects: p.objects.clone(),
                });
                relr = Some(p);
            }
            Err(e) => skip("relr", e),
        }
    }
    if wanted("self-binding") {
        match fx::self_binding_pair(d) {
            Ok(p) => cases.push(Case {
                name: "self-binding",
                kinds: &["selfbinding"],
                before: p.before,
                after: p.after,
                objects: p.objects,
            }),
            Err(e) => skip("self-binding", e),
        }
    }
    if wanted("constructor") {
        match fx::constructor_pair(d) {
            Ok(p) => cases.push(Case {
                name: "constructor",
                kinds: &["constructor", "constructors"],
                before: p.before,
                after: p.after,
                objects: p.objects,
            }),
            Err(e) => skip("constructor", e),
        }
    }

    println!(
        "\n{:<13} {:<22} {:>10} {:>22} {:>10} {:>10} {:>22} {:>8} {:>19}  verdict",
        "fix",
        "objects",
        "predicted",
        "µs [95%]",
        "scaled",
        "measured",
        "µs [95%]",
        "p",
        "BEFORE µs prof/cmp"
    );
    let (mut pass, mut fail, mut undecided, mut unavailable) = (0, 0, 0, 0);
    let mut relr_from_compare = None;
    // The library's relocation CPU in BEFORE's profile, the one the prediction is priced on.
    let mut relr_own = None;
    for case in &cases {
        let objects = case.objects.join(",");
        let objects = if objects.len() > 22 {
            format!("{}…", &objects[..21])
        } else {
            objects
        };
        let doc = match ldcost_json(&[
            "profile",
            "-n",
            &profile_runs,
            "--bind-now-runs",
            "5",
            "--quiet-target",
            "--no-progress",
            "--json",
            "-",
            path(&case.before),
        ]) {
            Ok(d) => d,
            Err(RunError::Refused(e)) => {
                println!("SKIP fixes: the system refuses to let ldcost measure: {e}");
                return;
            }
            Err(RunError::Failed(e)) => {
                println!("{:<13} profile failed: {e}", case.name);
                fail += 1;
                continue;
            }
        };
        let pred = prediction(&doc, case);
        if let Some(pair) = relr.as_ref().filter(|_| case.name == "relr") {
            relr_own = relocation_of(&doc, &pair.facts.library).map(|r| r.0);
        }
        let compare = |n: usize| {
            ldcost_json(&[
                "compare",
                path(&case.before),
                path(&case.after),
                "-n",
                &n.to_string(),
                "--quiet-target",
                "--no-progress",
                "--format",
                "json",
            ])
        };
        let first_rounds = runs.parse::<usize>().unwrap_or(20);
        let mut n = first_rounds;
        let mut cmp = compare(n);
        // compare's own wall time for this pair, for the time cap.
        let mut spent = cmp.as_ref().ok().map_or(0.0, elapsed_s);
        let mut why = format!("{n} rounds (LDCOST_FIXES_RUNS)");
        let mut precise = true;
        while let Ok(c) = &cmp {
            let (Ok(p), Ok((m, _, base))) = (&pred, measured(c)) else {
                break;
            };
            let scale = profile_startup(&doc)
                .filter(|a| *a > 0.0 && base > 0.0)
                .map_or(1.0, |a| base / a);
            let target = tolerance(scale_saving(*p, scale));
            let Some(half) = half_width(m) else { break };
            if half <= target {
                precise = true;
                if n != first_rounds {
                    why = format!(
                        "{why}; ±{:.1} µs ≤ tolerance ±{:.1} µs: decided",
                        half / 1e3,
                        target / 1e3
                    );
                }
                break;
            }
            precise = false;
            let per_round = spent / rounds_of(c).unwrap_or(n).max(1) as f64;
            let by_time = if per_round > 0.0 {
                ((max_seconds - spent) / per_round).floor().max(0.0) as usize
            } else {
                max_rounds
            };
            let cap = max_rounds.min(by_time);
            let want = rounds_needed(n, half, target);
            let next = want.min(cap) & !1;
            if next <= n {
                why = format!(
                    "{why}; ±{:.1} µs against a tolerance of ±{:.1} µs would need ~{want} rounds, \
                     past the cap ({max_rounds} rounds, {max_seconds:.0} s: {spent:.0} s spent)",
                    half / 1e3,
                    target / 1e3
                );
                break;
            }
            why = format!(
                "{why}; ±{:.1} µs > tolerance ±{:.1} µs: {next} rounds{}",
                half / 1e3,
                target / 1e3,
                if next < want {
                    format!(" (of ~{want} needed, capped)")
                } else {
                    String::new()
                }
            );
            n = next;
            cmp = compare(n);
            spent += cmp.as_ref().ok().map_or(0.0, elapsed_s);
        }
        let why = if precise && n == first_rounds {
            format!("{why}, precise enough")
        } else {
            why
        };
        println!("{:<13} rounds: {why}", case.name);
        if let (Some(pair), Ok(c)) = (relr.as_ref().filter(|_| case.name == "relr"), &cmp) {
            relr_from_compare = compare_phase(c, &format!("relocation: {}", pair.facts.library))
                .map(|(b, h)| (b, h, pair.facts.rela_removed));
        }
        let meas = match cmp {
            Ok(c) => measured(&c),
            Err(RunError::Refused(e)) | Err(RunError::Failed(e)) => Err(e),
        };
        let (pred_s, pred_ci) = match &pred {
            Ok(p) => (us(p.ns), interval(p.ci)),
            Err(_) => ("n/a".into(), String::new()),
        };
        let (meas_s, meas_ci, p_s) = match &meas {
            Ok((m, p, _)) => (us(m.ns), interval(m.ci), format!("{p:.3}")),
            Err(_) => ("n/a".into(), String::new(), String::new()),
        };
        // The same build's start-up in the profile the prediction came from and in the
        // compare that measured the saving, minutes apart: how far the machine moved between.
        let drift = match (profile_startup(&doc), &meas) {
            (Some(a), Ok((_, _, b))) => format!("{:.0}/{:.0}", a / 1e3, b / 1e3),
            _ => "n/a".into(),
        };
        // The prediction at the measurement's speed (module doc).
        let scale = match (profile_startup(&doc), &meas) {
            (Some(a), Ok((_, _, b))) if a > 0.0 && *b > 0.0 => b / a,
            _ => 1.0,
        };
        let scaled = pred.as_ref().ok().map(|p| Saving {
            ns: p.ns * scale,
            ci: p.ci.map(|(lo, hi)| (lo * scale, hi * scale)),
        });
        let scaled_s = scaled.map_or("n/a".into(), |p| us(p.ns));
        // The same saving measured without ldcost, for every pair: printed beside compare's,
        // and deciding where compare could not.
        let plain = pred
            .as_ref()
            .ok()
            .zip(profile_uninstrumented(&doc))
            .map(|(pr, u)| {
                untraced(&case.before, &case.after)
                    .map(|(m2, b2)| (scale_saving(*pr, if u > 0.0 { b2 / u } else { 1.0 }), m2))
            });
        let plain_line = match &plain {
            Some(Ok((p2, m2))) => format!(
                "without ldcost (perf stat of {UNTRACED_RUNS} runs, {UNTRACED_ROUNDS} interleaved \
                 rounds): {} µs {} against {} µs: {}",
                us(m2.ns),
                interval(m2.ci),
                us(p2.ns),
                if !half_width(*m2).is_some_and(|h| h <= tolerance(*p2)) {
                    "too wide to tell"
                } else if verdict(*p2, *m2) {
                    "within"
                } else {
                    "outside"
                }
            ),
            Some(Err(e)) => format!("without ldcost: {e}"),
            None => "without ldcost: no prediction or no runs without ptrace".into(),
        };
        println!("{:<13} {plain_line}", case.name);
        let word = match (&scaled, &meas) {
            (Some(p), Ok((m, _, _))) if !precise => {
                let noise = format!(
                    "compare UNDECIDED (noise: the measured interval ±{:.1} µs is wider than \
                     the tolerance ±{:.1} µs at the cap; measured {} µs)",
                    half_width(*m).unwrap_or(f64::NAN) / 1e3,
                    tolerance(*p) / 1e3,
                    us(m.ns)
                );
                // A measurement that cannot decide says nothing: one without ldcost, whose
                // interval is narrower, decides instead (the prediction scaled to its speed).
                match plain {
                    Some(Ok((p2, m2))) => {
                        let decided = half_width(m2).is_some_and(|h| h <= tolerance(p2));
                        let said = format!("{noise}; {plain_line}");
                        if !decided {
                            undecided += 1;
                            format!("UNDECIDED: {said}")
                        } else if verdict(p2, m2) {
                            pass += 1;
                            format!("PASS: {said}")
                        } else {
                            fail += 1;
                            format!("FAIL: {said}")
                        }
                    }
                    Some(Err(e)) => {
                        undecided += 1;
                        format!("UNDECIDED: {noise}; without ldcost: {e}")
                    }
                    None => {
                        undecided += 1;
                        format!("UNDECIDED: {noise}")
                    }
                }
            }
            (Some(p), Ok((m, _, _))) => {
                if verdict(*p, *m) {
                    pass += 1;
                    "PASS".to_string()
                } else {
                    fail += 1;
                    "FAIL".to_string()
                }
            }
            (None, Ok(_)) => match &pred {
                Err(e) if e.starts_with("prediction not available") => {
                    unavailable += 1;
                    e.clone()
                }
                Err(e) => {
                    fail += 1;
                    format!("FAIL: {e}")
                }
                Ok(_) => unreachable!("a prediction is scaled"),
            },
            (_, Err(e)) => {
                fail += 1;
                format!("FAIL: compare: {e}")
            }
        };
        println!(
            "{:<13} {:<22} {:>10} {:>22} {:>10} {:>10} {:>22} {:>8} {:>19}  {word}",
            case.name, objects, pred_s, pred_ci, scaled_s, meas_s, meas_ci, p_s, drift
        );
    }
    println!(
        "\n{pass} PASS, {fail} FAIL, {undecided} UNDECIDED (too noisy to tell at the cap), \
         {unavailable} without a prediction, of {} fixes",
        cases.len()
    );
    if let Some((b, h, n)) = relr_from_compare {
        println!(
            "\nDT_RELR unit from the compare above (interleaved): relocation of the library \
             {:.1} → {:.1} µs: {:.2} ns per RELA entry removed, {:.0}% of BEFORE's {:.2} ns per \
             relative relocation",
            b / 1e3,
            h / 1e3,
            (b - h) / n as f64,
            100.0 * (b - h) / b,
            b / n as f64
        );
        if let Some(own) = relr_own {
            println!(
                "the same saving over the library's relocation in BEFORE's profile (runs of one \
                 build back to back, {:.1} µs, {:.2} ns per relative relocation), the share \
                 RELR_REMOVED_SHARE prices: {:.0}%",
                own / 1e3,
                own / n as f64,
                100.0 * (b - h) / own
            );
        }
    }
    if let Some(pair) = &relr {
        if relr_rounds > 0 {
            if let Err(RunError::Refused(e) | RunError::Failed(e)) =
                relr_unit(pair, &profile_runs, relr_rounds)
            {
                println!("DT_RELR unit: not measured: {e}");
            }
        }
    }
}
