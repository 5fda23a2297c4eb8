//! Side-by-side benchmark: ldcost's closure analysis against `readelf -rW FILE | wc -l` and
//! `ldd FILE`, in two parts.
//!
//! Run with `cargo bench --bench deps_speed` (release profile). See docs/benchmarks.md for how
//! to read the output. The goals: `ldcost deps --json - FILE` end to end at least
//! 20x faster than readelf on the same file, and the library call at least 30x.
//!
//! Part 1, **end to end**: the release binary `ldcost deps --json - FILE` spawned (output to
//! /dev/null), against `sh -c 'readelf -rW FILE | wc -l'` and `ldd FILE`, interleaved round by
//! round, on libLLVM-15.so.1, librustc_driver-*.so and libicudata.so.* (whichever exist; the
//! missing are named). Wall time, CPU time and peak RSS of each child come from `wait4`.
//!
//! Part 2, **in process**, variants interleaved round by round so that they share the noise:
//! - `A0`: `deps::analyze_file(target, true)`: the target alone (map, parse, count relocations).
//! - `A`:  `deps::resolve(target, ..)` with search rules detected once before timing: the whole
//!   DT_NEEDED closure, every object mapped and analysed.
//! - `A2`: `SearchRules::detect` (an `ld.so --help` subprocess) plus `A`.
//! - `B`:  `sh -c 'readelf -rW FILE | wc -l'`, from spawn to exit (the target only).
//! - `C`:  `ldd FILE`, from spawn to exit (the closure, as a user would otherwise list it).
//!
//! Environment: `LDCOST_BENCH_TARGET` (a file to use in part 2 instead of the largest library
//! found), `LDCOST_BENCH_ROUNDS` (timed rounds, default 15), `LDCOST_BENCH_PART` (`e2e` or
//! `in-process`: only that part), `LDCOST_BENCH_BIN` (part 1 runs this ldcost binary instead of
//! the one built with the bench: a before/after comparison), `LDCOST_BENCH_PROFILE=N` (run
//! only variant `A`, N times, with no child processes: a loop to put under `perf record -g`).

#[path = "support/child.rs"]
#[allow(dead_code)] // `success` and `status`: end_to_end uses them
mod child;

use std::fs;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ldcost::deps::{self, Closure, ResolveOptions, SearchRules};

const WARMUP_ROUNDS: usize = 2;
const DEFAULT_ROUNDS: usize = 15;
/// In process: readelf / `resolve` (keep >= 30x).
const GOAL_RATIO: f64 = 30.0;
/// End to end: readelf / the `ldcost deps --json -` process.
const GOAL_E2E: f64 = 20.0;
/// The interpreter to ask when neither the target nor this executable names one.
const FALLBACK_INTERP: &str = if cfg!(target_arch = "aarch64") {
    "/lib/ld-linux-aarch64.so.1"
} else {
    "/lib64/ld-linux-x86-64.so.2"
};

fn main() {
    let part = std::env::var("LDCOST_BENCH_PART").unwrap_or_default();
    if std::env::var_os("LDCOST_BENCH_PROFILE").is_none() && part != "in-process" {
        end_to_end();
        println!();
    }
    if part != "e2e" {
        in_process();
    }
}

fn in_process() {
    let Some(target) = find_target() else {
        println!("SKIP deps_speed in process: no large library found");
        return;
    };
    let target_info = match deps::analyze_file(&target, true) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("deps_speed: cannot analyse {}: {e}", target.display());
            std::process::exit(1);
        }
    };
    // A shared library has no PT_INTERP; ask the loader this very process was started by.
    let interp = target_info
        .interpreter
        .clone()
        .or_else(own_interpreter)
        .unwrap_or_else(|| FALLBACK_INTERP.to_string());
    let rules = SearchRules::detect(&interp);
    let opts = ResolveOptions {
        rules: Some(rules.clone()),
        ..ResolveOptions::from_env()
    };

    if let Some(n) = env_usize("LDCOST_BENCH_PROFILE") {
        profile_loop(&target, &opts, n);
        return;
    }

    let rounds = env_usize("LDCOST_BENCH_ROUNDS")
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_ROUNDS);

    // What the timed runs compute, checked once outside the timing.
    let closure = match deps::resolve(&target, &opts) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("deps_speed: cannot resolve {}: {e}", target.display());
            std::process::exit(1);
        }
    };
    let closure_relocs = total_relocations(&closure);
    let closure_len = closure.objects.len();
    let closure_bytes: u64 = closure.objects.iter().map(|o| o.info.file_size).sum();
    let target_relocs = target_info.relocations.total;
    let readelf_lines = readelf_line_count(&target);
    drop(closure);

    println!("deps_speed, part 2: in process");
    println!(
        "target:   {} ({:.1} MB)",
        target.display(),
        mb(target_info.file_size)
    );
    println!(
        "closure:  {} objects, {:.1} MB, {} relocations ({} in the target; readelf -rW prints {} lines)",
        closure_len,
        mb(closure_bytes),
        closure_relocs,
        target_relocs,
        readelf_lines.map_or_else(|| "?".to_string(), |n| n.to_string()),
    );
    println!(
        "rules:    {:?} from {} ({} hwcaps, {} system dirs)",
        rules.source,
        rules.interpreter,
        rules.hwcaps.len(),
        rules.system_dirs.len()
    );
    println!("rounds:   {WARMUP_ROUNDS} warm-up + {rounds} timed, interleaved A0 A A2 B C");
    println!();

    // Peak RSS of the set-up (one resolve, outside the timing), before the per-variant resets.
    let setup_hwm = read_status_kb("VmHWM");
    let mut a0 = Variant::new("A0", "ldcost `analyze_file` (target only)");
    let mut a = Variant::new("A", "ldcost `resolve` (closure, rules detected once)");
    let mut a2 = Variant::new("A2", "ldcost `detect` + `resolve` (closure)");
    let mut b = Variant::new("B", "`readelf -rW FILE \\| wc -l` (target only)");
    let mut c = Variant::new("C", "`ldd FILE` (closure)");

    for round in 0..WARMUP_ROUNDS + rounds {
        let keep = round >= WARMUP_ROUNDS;
        a0.record(keep, || {
            let info = deps::analyze_file(&target, true).expect("analyze_file");
            black_box(info.relocations.total);
        });
        a.record(keep, || {
            let cl = deps::resolve(&target, &opts).expect("resolve");
            black_box(total_relocations(&cl));
        });
        a2.record(keep, || {
            let o = ResolveOptions {
                rules: Some(SearchRules::detect(&interp)),
                ..ResolveOptions::from_env()
            };
            let cl = deps::resolve(&target, &o).expect("resolve");
            black_box(total_relocations(&cl));
        });
        b.record(keep, || {
            let out = Command::new("sh")
                .arg("-c")
                .arg("readelf -rW \"$1\" | wc -l")
                .arg("sh")
                .arg(&target)
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output()
                .expect("spawn sh -c readelf");
            black_box(out.stdout.len());
        });
        c.record(keep, || {
            let out = Command::new("ldd")
                .arg(&target)
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output()
                .expect("spawn ldd");
            black_box(out.stdout.len());
        });
    }

    let readelf_median = b.median();
    let rows: [(&Variant, Option<u64>); 5] = [
        (&a0, Some(target_relocs)),
        (&a, Some(closure_relocs)),
        (&a2, Some(closure_relocs)),
        (&b, readelf_lines.map(|_| target_relocs)),
        (&c, None),
    ];
    println!(
        "| variant | what | median | min | max | readelf / variant | relocations/s | peak RSS |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for (v, relocs) in rows {
        let is_child = v.name == "B" || v.name == "C";
        println!(
            "| {} | {} | {} | {} | {} | {:.1}x | {} | {} |",
            v.name,
            v.what,
            ms(v.median()),
            ms(v.min()),
            ms(v.max()),
            readelf_median.as_secs_f64() / v.median().as_secs_f64(),
            relocs.map_or_else(
                || "n/a".to_string(),
                |n| format!("{:.1} M", n as f64 / v.median().as_secs_f64() / 1e6)
            ),
            if is_child {
                "(child)".to_string()
            } else {
                v.peak_rss_kb.map_or_else(
                    || "?".to_string(),
                    |k| format!("{:.1} MB", k as f64 / 1024.0),
                )
            },
        );
    }
    println!();
    let hwm = [setup_hwm, a0.peak_rss_kb, a.peak_rss_kb, a2.peak_rss_kb]
        .into_iter()
        .flatten()
        .max();
    println!(
        "peak RSS of the benchmark process (VmHWM, whole run, children excluded): {}",
        hwm.map_or_else(
            || "?".to_string(),
            |k| format!("{:.1} MB", k as f64 / 1024.0)
        )
    );
    println!(
        "ratio readelf/ldcost (target only, B/A0) = {:.1}x",
        ratio(&b, &a0)
    );
    println!(
        "ratio readelf/ldcost (closure with detection, B/A2) = {:.1}x",
        ratio(&b, &a2)
    );
    let r = ratio(&b, &a);
    println!(
        "in process: ratio readelf/ldcost = {r:.1}x (goal >= {GOAL_RATIO:.0}x): {}",
        if r >= GOAL_RATIO { "PASS" } else { "FAIL" }
    );
}

/// One benchmarked variant: its kept samples and the peak RSS seen while it ran.
struct Variant {
    name: &'static str,
    what: &'static str,
    samples: Vec<Duration>,
    peak_rss_kb: Option<u64>,
}

impl Variant {
    fn new(name: &'static str, what: &'static str) -> Variant {
        Variant {
            name,
            what,
            samples: Vec::new(),
            peak_rss_kb: None,
        }
    }

    /// Runs `f` once, timed; keeps the sample unless it is a warm-up round. The process's peak
    /// RSS is reset before (outside the timing) so VmHWM afterwards is this variant's peak.
    fn record(&mut self, keep: bool, f: impl FnOnce()) {
        let reset = reset_peak_rss();
        let start = Instant::now();
        f();
        let elapsed = start.elapsed();
        if keep {
            self.samples.push(elapsed);
            if reset {
                if let Some(k) = read_status_kb("VmHWM") {
                    self.peak_rss_kb = Some(self.peak_rss_kb.map_or(k, |p| p.max(k)));
                }
            }
        }
    }

    fn sorted(&self) -> Vec<Duration> {
        let mut s = self.samples.clone();
        s.sort();
        s
    }

    fn median(&self) -> Duration {
        let s = self.sorted();
        match s.len() {
            0 => Duration::ZERO,
            n if n % 2 == 1 => s[n / 2],
            n => (s[n / 2 - 1] + s[n / 2]) / 2,
        }
    }

    fn min(&self) -> Duration {
        self.samples.iter().copied().min().unwrap_or_default()
    }

    fn max(&self) -> Duration {
        self.samples.iter().copied().max().unwrap_or_default()
    }
}

fn ratio(num: &Variant, den: &Variant) -> f64 {
    num.median().as_secs_f64() / den.median().as_secs_f64()
}

fn total_relocations(c: &Closure) -> u64 {
    c.objects.iter().map(|o| o.info.relocations.total).sum()
}

/// `LDCOST_BENCH_PROFILE=N`: variant A only, N times, for `perf record -g`.
fn profile_loop(target: &Path, opts: &ResolveOptions, n: usize) {
    let start = Instant::now();
    let mut relocs = 0;
    for _ in 0..n {
        let cl = deps::resolve(target, opts).expect("resolve");
        relocs = black_box(total_relocations(&cl));
    }
    let per = start.elapsed() / u32::try_from(n.max(1)).unwrap_or(u32::MAX);
    println!(
        "profile: {n} x resolve({}) = {relocs} relocations, {} each",
        target.display(),
        ms(per)
    );
}

/// The largest existing file among the candidates, or `LDCOST_BENCH_TARGET`.
fn find_target() -> Option<PathBuf> {
    if let Some(t) = std::env::var_os("LDCOST_BENCH_TARGET").filter(|t| !t.is_empty()) {
        let p = PathBuf::from(t);
        return p.is_file().then_some(p);
    }
    let multiarch = Path::new("/usr/lib/x86_64-linux-gnu");
    let mut candidates = vec![multiarch.join("libLLVM-15.so.1")];
    candidates.extend(dir_matching(multiarch, |n| {
        n.starts_with("libLLVM") && n.contains(".so")
    }));
    if let Some(sysroot) = rustc_sysroot() {
        candidates.extend(dir_matching(&sysroot.join("lib"), |n| {
            n.starts_with("librustc_driver-") && n.ends_with(".so")
        }));
    }
    let mut best: Option<(u64, PathBuf)> = None;
    for c in candidates {
        let Ok(m) = fs::metadata(&c) else { continue };
        if !m.is_file() {
            continue;
        }
        // Strictly larger: on a tie the earlier candidate (the canonical name) wins.
        if best.as_ref().is_none_or(|(size, _)| m.len() > *size) {
            best = Some((m.len(), c));
        }
    }
    best.map(|(_, p)| p)
}

/// Entries of `dir` whose file name satisfies `pred`, sorted by name.
fn dir_matching(dir: &Path, pred: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(&pred))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

fn rustc_sysroot() -> Option<PathBuf> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc)
        .args(["--print", "sysroot"])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| PathBuf::from(s))
}

/// The PT_INTERP of this benchmark executable: the host's ld.so.
fn own_interpreter() -> Option<String> {
    let exe = std::env::current_exe().ok()?;
    deps::analyze_file(&exe, true).ok()?.interpreter
}

fn readelf_line_count(target: &Path) -> Option<u64> {
    let out = Command::new("sh")
        .arg("-c")
        .arg("readelf -rW \"$1\" | wc -l")
        .arg("sh")
        .arg(target)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok()?.trim().parse().ok()
}

/// Resets this process's VmHWM to its current RSS (Linux >= 4.0); false if not possible.
fn reset_peak_rss() -> bool {
    fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// A `kB` field of /proc/self/status.
fn read_status_kb(field: &str) -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().trim_end_matches("kB").trim().parse().ok()
    })
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// The libraries of part 1: (what the issue calls it, the file if one exists).
fn e2e_targets() -> Vec<(&'static str, Option<PathBuf>)> {
    let multiarch = Path::new("/usr/lib/x86_64-linux-gnu");
    let llvm = multiarch.join("libLLVM-15.so.1");
    let driver = rustc_sysroot().and_then(|s| {
        dir_matching(&s.join("lib"), |n| {
            n.starts_with("librustc_driver-") && n.ends_with(".so")
        })
        .into_iter()
        .next()
    });
    // libicudata.so.NN: the versioned name the loader uses (the shortest `.so.` name).
    let icu = dir_matching(multiarch, |n| n.starts_with("libicudata.so."))
        .into_iter()
        .min_by_key(|p| p.as_os_str().len());
    vec![
        ("libLLVM-15.so.1", llvm.is_file().then_some(llvm)),
        ("librustc_driver-*.so", driver),
        ("libicudata.so.*", icu),
    ]
}

/// One whole-process variant of part 1: its commands' accounting, kept rounds only.
struct Proc {
    what: &'static str,
    runs: Vec<child::Run>,
    failures: usize,
}

impl Proc {
    fn new(what: &'static str) -> Proc {
        Proc {
            what,
            runs: Vec::new(),
            failures: 0,
        }
    }

    fn record(&mut self, keep: bool, cmd: &mut Command) {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        match child::run(cmd) {
            // ldcost deps exits 1 for a closure with a missing library (a finding): still timed.
            Ok(r) if keep => self.runs.push(r),
            Ok(_) => {}
            Err(_) => self.failures += 1,
        }
    }

    fn wall(&self) -> Duration {
        child::median(&self.runs.iter().map(|r| r.wall).collect::<Vec<_>>())
    }

    fn cpu(&self) -> Duration {
        child::median(&self.runs.iter().map(|r| r.cpu).collect::<Vec<_>>())
    }

    fn rss_kb(&self) -> u64 {
        child::median_u64(&self.runs.iter().map(|r| r.maxrss_kb).collect::<Vec<_>>())
    }
}

/// Part 1: the CLI, spawned, against readelf and ldd, per library.
fn end_to_end() {
    // LDCOST_BENCH_BIN: another ldcost binary (an older build, for a before/after run).
    let ldcost = std::env::var("LDCOST_BENCH_BIN")
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_ldcost").to_string());
    let rounds = env_usize("LDCOST_BENCH_ROUNDS")
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_ROUNDS);
    println!("deps_speed, part 1: end to end (`{ldcost} deps --json - FILE`)");
    println!("load average at start: {}", child::loadavg());
    println!(
        "rounds:   {WARMUP_ROUNDS} warm-up + {rounds} timed per library, interleaved ldcost readelf ldd"
    );
    println!();
    println!("| library | tool | median wall | median CPU | peak RSS | readelf / tool (wall) | readelf / tool (CPU) |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    let mut verdicts = Vec::new();
    for (label, path) in e2e_targets() {
        let Some(path) = path else {
            println!("| {label} | (not on this machine) | | | | | |");
            verdicts.push(format!(
                "end to end {label}: not measured: no such file on this machine"
            ));
            continue;
        };
        let mut e = Proc::new("ldcost deps --json -");
        let mut b = Proc::new("readelf -rW \\| wc -l");
        let mut c = Proc::new("ldd");
        for round in 0..WARMUP_ROUNDS + rounds {
            let keep = round >= WARMUP_ROUNDS;
            e.record(
                keep,
                Command::new(&ldcost)
                    .args(["deps", "--json", "-"])
                    .arg(&path),
            );
            b.record(
                keep,
                Command::new("sh")
                    .arg("-c")
                    .arg("readelf -rW \"$1\" | wc -l")
                    .arg("sh")
                    .arg(&path),
            );
            c.record(keep, Command::new("ldd").arg(&path));
        }
        let name = path
            .file_name()
            .map_or_else(|| label.to_string(), |n| n.to_string_lossy().into_owned());
        for v in [&e, &b, &c] {
            if v.runs.is_empty() {
                println!(
                    "| {name} | {} | failed to run ({} errors) | | | | |",
                    v.what, v.failures
                );
                continue;
            }
            println!(
                "| {name} | {} | {} | {} | {:.1} MB | {:.1}x | {:.1}x |",
                v.what,
                ms(v.wall()),
                ms(v.cpu()),
                v.rss_kb() as f64 / 1024.0,
                b.wall().as_secs_f64() / v.wall().as_secs_f64(),
                b.cpu().as_secs_f64() / v.cpu().as_secs_f64().max(1e-6),
            );
        }
        if e.runs.is_empty() || b.runs.is_empty() {
            verdicts.push(format!(
                "end to end {name}: not measured: a tool failed to run"
            ));
            continue;
        }
        let r = b.wall().as_secs_f64() / e.wall().as_secs_f64();
        verdicts.push(format!(
            "end to end {name}: readelf/ldcost = {r:.1}x wall, {:.1}x CPU (goal >= {GOAL_E2E:.0}x wall): {}",
            b.cpu().as_secs_f64() / e.cpu().as_secs_f64().max(1e-6),
            if r >= GOAL_E2E { "PASS" } else { "FAIL" }
        ));
    }
    println!();
    println!("load average at end: {}", child::loadavg());
    for v in verdicts {
        println!("{v}");
    }
}
