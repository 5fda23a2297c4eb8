//! `ldcost profile`'s numbers against tools someone else wrote.
//!
//! | figure | oracle | bound |
//! | --- | --- | --- |
//! | page faults of the uninstrumented runs | `perf stat -e page-faults` (median of 5) | 10% |
//! | sum of the per-object phases' page faults | the uninstrumented total | 10% |
//! | CPU time of the uninstrumented runs | `perf stat -e task-clock` (median of 5) | factor 10 (presence; factor 2 is `cargo bench --bench profile_checks`) |
//! | `ld_debug` section | our own `LD_DEBUG=statistics` run of the target (its own pid's file) | exact |
//! | `prediction` (the deps model) | `LD_DEBUG=statistics` via the `ld_debug` section | exact |
//! | the objects that dominate relocation | `ldcost deps` relocation counts (top 2 have relocation time), and `perf record` on a uprobe at `_dl_relocate_object` | ldcost's top among perf's top 2 (the ranking by time: `profile_checks` bench) |
//!
//! Page faults are nearly deterministic for a given binary and page cache, which is why their
//! bound is tight; CPU time on a 2-core VM is not. `python3` is the real interpreter behind the
//! `python3` on $PATH (`sys.executable`, resolved): a pyenv shim is a bash script that runs
//! other processes, which `perf stat` counts and ldcost (one process) does not.
//!
//! Tests needing cc, perf, rustc, python3 or git print `SKIP <name>: <reason>` when the tool is
//! missing (a failure under LDCOST_REQUIRE_ALL). The tests run one at a time: they measure, and
//! the perf probe test must not have its uprobe in ld.so while another test runs ldcost.

mod common;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};

use common::{cc, output_of, skip, tools, write};
use ldcost::profile::ProfileSection;
use ldcost::record::{Instrumentation, Phase};
use ldcost::report::Document;

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

// ---------------------------------------------------------------------------------------------
// Targets.

/// A command to profile: the program (absolute) and its arguments.
#[derive(Debug, Clone)]
struct Target {
    program: PathBuf,
    args: Vec<String>,
}

impl Target {
    fn new(program: impl Into<PathBuf>, args: &[&str]) -> Target {
        Target {
            program: program.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn argv(&self) -> Vec<OsString> {
        let mut v = vec![self.program.clone().into_os_string()];
        v.extend(self.args.iter().map(OsString::from));
        v
    }
}

/// The real python3 ELF (see the module doc), with `-c pass`.
fn python3(name: &str) -> Option<Target> {
    if !tools(name, &["python3"]) {
        return None;
    }
    let exe = output_of(
        "python3",
        &[
            "-c",
            "import os, sys; print(os.path.realpath(sys.executable))",
        ],
    )
    .filter(|p| !p.is_empty());
    match exe {
        Some(p) => Some(Target::new(p, &["-c", "pass"])),
        None => {
            skip(name, "python3 does not tell its sys.executable");
            None
        }
    }
}

/// `$(rustc --print sysroot)/bin/rustc --version`.
fn rustc(name: &str) -> Option<Target> {
    if !tools(name, &["rustc"]) {
        return None;
    }
    let sysroot = output_of("rustc", &["--print", "sysroot"])?;
    let p = Path::new(&sysroot).join("bin/rustc");
    if !p.is_file() {
        skip(name, &format!("{} is not a file", p.display()));
        return None;
    }
    Some(Target::new(p, &["--version"]))
}

/// `git --version`, git resolved in $PATH.
fn git(name: &str) -> Option<Target> {
    if !tools(name, &["git"]) {
        return None;
    }
    let p = output_of("sh", &["-c", "command -v git"])?;
    Some(Target::new(
        std::fs::canonicalize(&p).unwrap_or_else(|_| p.into()),
        &["--version"],
    ))
}

// ---------------------------------------------------------------------------------------------
// ldcost.

/// Runs ldcost with `args` (LD_LIBRARY_PATH removed: cargo sets it for tests, the oracles run
/// without it) and returns the JSON document from standard output.
fn ldcost_json(args: &[OsString]) -> Document {
    let out = Command::new(BIN)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .stdin(Stdio::null())
        .output()
        .expect("run ldcost");
    assert_eq!(
        out.status.code(),
        Some(0),
        "ldcost {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "ldcost {args:?}: not a JSON document ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// `ldcost profile OPTIONS --json - TARGET ARGS`.
fn profile(t: &Target, options: &[&str]) -> ProfileSection {
    let mut args: Vec<OsString> = vec!["profile".into()];
    args.extend(options.iter().map(OsString::from));
    args.extend(["--quiet-target", "--json", "-"].map(OsString::from));
    args.extend(t.argv());
    ldcost_json(&args)
        .profile
        .expect("a profile section")
        .into()
}

fn median(v: &mut [f64]) -> f64 {
    assert!(!v.is_empty(), "median of nothing");
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The uninstrumented runs' `total.page_faults` and `total.task_clock_ns`.
fn uninstrumented(p: &ProfileSection) -> (Vec<f64>, Vec<f64>) {
    let runs: Vec<_> = p
        .raw
        .iter()
        .filter(|r| r.instrumentation == Instrumentation::None)
        .collect();
    assert!(!runs.is_empty(), "no uninstrumented runs in profile.raw");
    (
        runs.iter()
            .map(|r| r.total.page_faults.expect("page-faults counted") as f64)
            .collect(),
        runs.iter()
            .map(|r| r.total.task_clock_ns.expect("task-clock counted") as f64)
            .collect(),
    )
}

/// Per per-object run: (the phases' page faults summed, the run's own total, which ends at
/// the exit stop).
fn per_object_fault_sums(p: &ProfileSection) -> Vec<(f64, f64)> {
    p.raw
        .iter()
        .filter(|r| r.instrumentation == Instrumentation::PerObject)
        .map(|r| {
            let phases = r
                .segments
                .iter()
                .map(|s| s.counters.page_faults.expect("page-faults counted") as f64)
                .sum();
            (
                phases,
                r.total.page_faults.expect("page-faults counted") as f64,
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// perf stat.

/// `perf stat -x, -e page-faults,task-clock -- TARGET`, `n` times: (page faults, task-clock
/// ns) per run.
fn perf_stat(t: &Target, n: usize) -> Result<Vec<(f64, f64)>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("stat.csv");
    let mut v = Vec::new();
    for _ in 0..n {
        let text = common::perf_stat_csv(&file, "page-faults,task-clock", &t.argv())?;
        let mut faults = None;
        let mut clock = None;
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let f: Vec<&str> = l.split(',').collect();
            if f.len() < 3 {
                continue;
            }
            let value = f[0].parse::<f64>().ok();
            if f[2].starts_with("page-faults") {
                faults = value;
            } else if f[2].starts_with("task-clock") {
                // perf prints task-clock in msec.
                let unit = if f[1] == "msec" { 1e6 } else { 1.0 };
                clock = value.map(|x| x * unit);
            }
        }
        match (faults, clock) {
            (Some(a), Some(b)) => v.push((a, b)),
            _ => return Err(format!("cannot read perf stat's output:\n{text}")),
        }
    }
    Ok(v)
}

fn within(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

fn page_faults_and_cpu(name: &str, t: &Target) {
    if !tools(name, &["perf"]) {
        return;
    }
    let _s = serial();
    let stat = match perf_stat(t, 5) {
        Ok(s) => s,
        Err(e) => {
            skip(name, &format!("perf stat does not work here: {e}"));
            return;
        }
    };
    let p = profile(t, &["-n", "5", "--warmup", "1", "--no-ld-debug"]);
    let (mut faults, mut cpu) = uninstrumented(&p);
    let mut perf_faults: Vec<f64> = stat.iter().map(|s| s.0).collect();
    let mut perf_cpu: Vec<f64> = stat.iter().map(|s| s.1).collect();
    let (ours, theirs) = (median(&mut faults), median(&mut perf_faults));
    let runs = per_object_fault_sums(&p);
    let phases_sum = median(&mut runs.iter().map(|r| r.0).collect::<Vec<_>>());
    let per_object_total = median(&mut runs.iter().map(|r| r.1).collect::<Vec<_>>());
    let cpu_ours = p
        .overhead
        .uninstrumented_ns
        .as_ref()
        .expect("overhead.uninstrumented_ns")
        .median;
    let cpu_theirs = median(&mut perf_cpu);
    eprintln!(
        "{name}: page faults: ldcost uninstrumented {ours} | perf stat {theirs} | sum of per-object phases {phases_sum}"
    );
    eprintln!(
        "{name}: CPU: ldcost uninstrumented {:.3} ms (JSON median; raw {:.3}) | perf stat task-clock {:.3} ms",
        cpu_ours / 1e6,
        median(&mut cpu) / 1e6,
        cpu_theirs / 1e6
    );
    assert!(
        within(ours, theirs, 0.10),
        "page faults: ldcost {ours} vs perf stat {theirs} (10%)"
    );
    // A per-object run's total ends at its exit stop and its phases cover it whole. It faults
    // a little less than an untraced run: each breakpoint ldcost writes with PTRACE_POKEDATA
    // into a page the target has not touched yet brings that page in through the tracer
    // (get_user_pages), so the target never takes its first-touch fault (`perf record -e
    // page-faults -c 1 -d` of /bin/true shows it: the per-object runs lack the first
    // touches at ld.so's `_start`, `_dl_relocate_object`, `brk`, ...). The runs count those
    // pages from pagemap (`breakpoint_pages`): the gap is that count, give or take the
    // run-to-run spread of the fault count itself (ASLR: /bin/true 47-51 untraced; 6 profiles
    // of 5 runs: gap 2-3 against 3 pages; python3 3-5 against 3).
    let pages = median(
        &mut p
            .raw
            .iter()
            .filter(|r| r.instrumentation == Instrumentation::PerObject)
            .map(|r| {
                r.breakpoint_pages
                    .expect("breakpoint_pages of a traced run") as f64
            })
            .collect::<Vec<_>>(),
    );
    let gap = ours - per_object_total;
    eprintln!("{name}: page faults: per-object runs {per_object_total}; gap {gap}; breakpoint pages {pages}");
    assert!(
        (gap - pages).abs() <= 3.0 + 0.02 * ours,
        "page faults: untraced {ours} - per-object {per_object_total} = {gap}, but the \
         per-object runs' breakpoints brought in {pages} pages (want equal within 3 + 2%)"
    );
    assert_eq!(
        ldcost::report::fault_gap::figures(&p),
        Some((ours, per_object_total, pages)),
        "the report's fault line reads other figures than the runs'"
    );
    for (phases, total) in &runs {
        assert!(
            phases <= total && *phases >= 0.8 * total,
            "page faults: per-object phases sum to {phases} of their run's {total} (want 80-100%)"
        );
    }
    // Presence, with a margin no load erases (factor 10); the factor-2 comparison moves with
    // the load and is `cargo bench --bench profile_checks` (check `cpu`).
    let ratio = cpu_ours / cpu_theirs;
    assert!(
        cpu_ours > 0.0 && (0.1..=10.0).contains(&ratio),
        "CPU time: ldcost {cpu_ours} ns vs perf stat {cpu_theirs} ns (ratio {ratio:.2}, bound 10x)"
    );
}

#[test]
fn page_faults_and_cpu_time_of_true_match_perf_stat() {
    page_faults_and_cpu(
        "page_faults_and_cpu_time_of_true_match_perf_stat",
        &Target::new("/bin/true", &[]),
    );
}

#[test]
fn page_faults_and_cpu_time_of_python_match_perf_stat() {
    let name = "page_faults_and_cpu_time_of_python_match_perf_stat";
    if let Some(t) = python3(name) {
        page_faults_and_cpu(name, &t);
    }
}

// ---------------------------------------------------------------------------------------------
// LD_DEBUG=statistics.

/// glibc's counts from one `LD_DEBUG=statistics` run of `t`, read from the file of the
/// target's own pid (LD_DEBUG_OUTPUT appends `.PID`; children and exec'd programs write their
/// own): (relocations, from cache, relative).
fn ld_debug_oracle(t: &Target) -> (u64, u64, u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("stats");
    let mut child = Command::new(&t.program)
        .args(&t.args)
        .env_remove("LD_LIBRARY_PATH")
        .env("LD_DEBUG", "statistics")
        .env("LD_DEBUG_OUTPUT", &base)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("run the target");
    let pid = child.id();
    child.wait().expect("wait");
    let text = std::fs::read_to_string(format!("{}.{pid}", base.display()))
        .expect("LD_DEBUG_OUTPUT file of the target's pid");
    let first = |key: &str| -> u64 {
        text.lines()
            .find_map(|l| {
                let (_, rest) = l.split_once(key)?;
                rest.split_whitespace().next()?.parse().ok()
            })
            .unwrap_or_else(|| panic!("no `{key}` in\n{text}"))
    };
    (
        first("number of relocations:"),
        first("number of relocations from cache:"),
        first("number of relative relocations:"),
    )
}

fn ld_debug_matches(name: &str, t: &Target) {
    let _s = serial();
    let p = profile(t, &["-n", "1", "--warmup", "0"]);
    let g = p.ld_debug.as_ref().expect("profile.ld_debug");
    let pr = p.prediction.as_ref().expect("profile.prediction");
    let (relocs, cached, relative) = ld_debug_oracle(t);
    eprintln!(
        "{name}: LD_DEBUG relocations {relocs} (+{cached} cached), relative {relative} | ldcost ld_debug {:?} (+{:?}), {:?} | deps predicts {} (+{}), relacount {}",
        g.relocations, g.relocations_from_cache, g.relative_relocations, pr.lookups, pr.cache_hits, pr.relacount
    );
    assert_eq!(
        (
            g.relocations,
            g.relocations_from_cache,
            g.relative_relocations
        ),
        (Some(relocs), Some(cached), Some(relative)),
        "the ld_debug section is glibc's account of the target itself"
    );
    assert_eq!(g.relocations, Some(pr.lookups), "lookups: glibc vs deps");
    assert_eq!(
        g.relocations_from_cache,
        Some(pr.cache_hits),
        "cache hits: glibc vs deps"
    );
    assert_eq!(
        g.relative_relocations,
        Some(pr.relacount),
        "relative relocations: glibc vs deps (DT_RELACOUNT)"
    );
}

#[test]
fn ld_debug_statistics_of_ls_match_the_deps_model() {
    ld_debug_matches(
        "ld_debug_statistics_of_ls_match_the_deps_model",
        &Target::new("/bin/ls", &[]),
    );
}

#[test]
fn ld_debug_statistics_of_python_match_the_deps_model() {
    let name = "ld_debug_statistics_of_python_match_the_deps_model";
    if let Some(t) = python3(name) {
        ld_debug_matches(name, &t);
    }
}

/// A target that starts other programs: every process writes its own LD_DEBUG_OUTPUT file
/// (`.PID`), and the `ld_debug` section must be the target's, not one of its children's
/// (/bin/true has other counts than the fixture, so a mix-up shows). Reading every file of
/// the directory and keeping the last value of each key gives the target's figures only when
/// the directory happens to list its file last (1 in 11 here, the order depending on pids and
/// the file system's hash), hence three profiles, each of which must be right.
#[test]
fn ld_debug_statistics_are_the_targets_own_not_a_childs() {
    let name = "ld_debug_statistics_are_the_targets_own_not_a_childs";
    if !tools(name, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "forker.c", &common::forker_source(10));
    cc(dir.path(), &["-O0", "-o", "ldcpo-forker", "forker.c"]);
    let t = Target::new(dir.path().join("ldcpo-forker"), &[]);
    let own = ld_debug_oracle(&t);
    let child = ld_debug_oracle(&Target::new("/bin/true", &[]));
    assert_ne!(own, child, "the fixture must differ from its children");
    for _ in 0..3 {
        ld_debug_matches(name, &t);
    }
}

// ---------------------------------------------------------------------------------------------
// The object that dominates relocation.

/// Canonical form of an object path (ld.so's l_name keeps `bin/../lib` as found).
fn canon(p: &str) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p))
}

/// ldcost's object with the largest median relocation CPU time, and that map.
fn ldcost_top_relocation(p: &ProfileSection) -> (PathBuf, BTreeMap<PathBuf, f64>) {
    let mut by: BTreeMap<PathBuf, f64> = BTreeMap::new();
    for s in p.phases.iter().filter(|s| s.phase == Phase::Relocation) {
        let Some(o) = &s.object else {
            continue;
        };
        // A corrected figure is never a made-up zero: it is absent when the per-stop
        // correction would take it to zero (aggregate.rs); then the raw time stands.
        if let Some(t) = &s.task_clock_ns {
            assert!(t.median > 0.0, "{}: a corrected relocation time of 0", o);
        }
        let Some(t) = s.task_clock_ns.as_ref().or(s.task_clock_raw_ns.as_ref()) else {
            continue;
        };
        *by.entry(canon(o)).or_default() += t.median;
    }
    let top = by
        .iter()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(k, _)| k.clone())
        .expect("per-object relocation rows (ld.so debug symbols needed)");
    (top, by)
}

/// The two objects with the most relocations according to `ldcost deps`.
fn deps_top2(t: &Target) -> Vec<(PathBuf, u64)> {
    let doc = ldcost_json(&[
        "deps".into(),
        "--json".into(),
        "-".into(),
        t.program.clone().into_os_string(),
    ]);
    let mut v: Vec<(PathBuf, u64)> = doc
        .deps
        .expect("deps section")
        .closure
        .objects
        .iter()
        .map(|o| (canon(&o.path), o.info.relocations.total))
        .collect();
    v.sort_by_key(|o| std::cmp::Reverse(o.1));
    v.truncate(2);
    v
}

/// Whether ld.so's internal symbols are available (the per-object detail).
fn per_object_detail(name: &str, p: &ProfileSection) -> bool {
    if matches!(p.detail, ldcost::record::Detail::DebugSymbols { .. }) {
        return true;
    }
    skip(name, &format!("no per-object detail here: {:?}", p.detail));
    false
}

fn top_relocation_object(name: &str, t: &Target, expect_name: &[&str]) {
    let _s = serial();
    let p = profile(t, &["-n", "3", "--warmup", "1", "--no-ld-debug"]);
    if !per_object_detail(name, &p) {
        return;
    }
    let (top, by) = ldcost_top_relocation(&p);
    let top2 = deps_top2(t);
    eprintln!("{name}: ldcost relocation CPU by object {by:?}; deps top 2 by count {top2:?}");
    // Presence: both objects with the most relocations have a relocation row with CPU time.
    // Which of them ldcost ranks first by time moves with the load: that is `cargo bench
    // --bench profile_checks` (check `top relocation`).
    for (o, n) in &top2 {
        assert!(
            by.get(o).is_some_and(|ns| *ns > 0.0),
            "{} ({n} relocations, deps' top 2) has no relocation time in ldcost's rows {by:?}",
            o.display()
        );
    }
    // Where the named objects hold almost all relocations (rustc: librustc_driver and libLLVM,
    // ms of relocation against µs for the rest), the top by time is one of them on any load.
    if !expect_name.is_empty() {
        let f = top.file_name().unwrap_or_default().to_string_lossy();
        assert!(
            expect_name.iter().any(|n| f.starts_with(n)),
            "top relocation object {f}, expected one of {expect_name:?}"
        );
    }
}

#[test]
fn top_relocation_object_of_rustc() {
    let name = "top_relocation_object_of_rustc";
    if let Some(t) = rustc(name) {
        top_relocation_object(name, &t, &["librustc_driver", "libLLVM"]);
    }
}

#[test]
fn top_relocation_object_of_python() {
    let name = "top_relocation_object_of_python";
    if let Some(t) = python3(name) {
        top_relocation_object(name, &t, &[]);
    }
}

#[test]
fn top_relocation_object_of_git() {
    let name = "top_relocation_object_of_git";
    if let Some(t) = git(name) {
        top_relocation_object(name, &t, &[]);
    }
}

// ---------------------------------------------------------------------------------------------
// perf record with a uprobe on _dl_relocate_object.

/// A pair of uprobes in ld.so (entry of `_dl_relocate_object` with the object's l_name, and
/// its return), in a group of their own; deleted on drop.
struct RelocProbes {
    group: String,
}

impl RelocProbes {
    fn add(ldso: &Path, tag: &str) -> Result<RelocProbes, String> {
        let group = format!("ldcost_oracle_{}_{tag}", std::process::id());
        let ld = ldso.to_str().ok_or("ld.so path")?;
        // rdi is the struct link_map *; l_name (a char *) is at offset 8.
        let specs = [
            format!("{group}:reloc=_dl_relocate_object name=+0(+8(%di)):string"),
            format!("{group}:relocret=_dl_relocate_object%return"),
        ];
        let probes = RelocProbes { group };
        for spec in specs {
            let out = Command::new("perf")
                .args(["probe", "-q", "-x", ld, "--add", &spec])
                .output()
                .map_err(|e| format!("perf probe: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "perf probe --add '{spec}' failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
        Ok(probes)
    }
}

impl Drop for RelocProbes {
    fn drop(&mut self) {
        let _ = Command::new("perf")
            .args(["probe", "-q", "-d", &format!("{}:*", self.group)])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The interpreter a target names (PT_INTERP), by `readelf -lW`.
fn interpreter(program: &Path) -> Option<PathBuf> {
    let text = output_of("readelf", &["-lW", program.to_str()?])?;
    text.lines().find_map(|l| {
        let i = l.find("[Requesting program interpreter: ")?;
        Some(PathBuf::from(l[i + 33..].trim_end().trim_end_matches(']')))
    })
}

/// cpu-clock samples of the target's main thread between each `_dl_relocate_object` entry and
/// its return, per object: the median over `runs` recordings. The median, because now and
/// then one recording is swamped by a softirq storm on a shared VM (2.8 s of `rcu_core` has
/// been charged to one relocation at a 100 kHz sampling rate). Only start-up relocation counts: the
/// attribution stops at ld.so's relocation of itself, the last one before the program starts
/// (later ones are dlopen's, which ldcost does not profile).
fn perf_record_relocation(
    t: &Target,
    probes: &RelocProbes,
    ldso: &Path,
    runs: usize,
) -> Result<BTreeMap<PathBuf, u64>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let data = dir.path().join("perf.data");
    let entry = format!("{}:reloc:", probes.group);
    let ret = format!("{}:relocret__return:", probes.group);
    let mut per_run: Vec<BTreeMap<PathBuf, u64>> = Vec::new();
    for _ in 0..runs {
        let mut samples: BTreeMap<PathBuf, u64> = BTreeMap::new();
        // Not `-F max`: a frequency applies to every event of the command line, the probes
        // too, and a probe sampled by frequency loses hits. `-c 1` records every probe hit;
        // cpu-clock gets its own period of 50 µs (20 kHz). Not 100 kHz: on a loaded 2-CPU
        // machine an interrupt every 10 µs can leave python3 -c pass no time of its own
        // (minutes of CPU, a gigabyte of perf.data), the runaway ldcost's sampler bounds
        // in ldcost itself.
        let mut args: Vec<OsString> = ["record", "-q", "-o"].map(OsString::from).to_vec();
        args.push(data.clone().into_os_string());
        args.extend(["-c", "1", "-m", "8M", "-e"].map(OsString::from));
        args.push(format!("{}:reloc", probes.group).into());
        args.push("-e".into());
        args.push(format!("{}:relocret__return", probes.group).into());
        args.extend(["-e", "cpu-clock/period=50000/", "--"].map(OsString::from));
        args.extend(t.argv());
        let mut child = Command::new("perf")
            .args(&args)
            .env_remove("LD_LIBRARY_PATH")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("perf record: {e}"))?;
        // A hang guard, not a timing check: a start-up of milliseconds that has not ended
        // after minutes is a runaway, and the test says so instead of hanging CI.
        let started = std::time::Instant::now();
        let st = loop {
            if let Some(st) = child.try_wait().map_err(|e| format!("perf record: {e}"))? {
                break st;
            }
            if started.elapsed() > std::time::Duration::from_secs(300) {
                let _ = Command::new("pkill")
                    .args(["-KILL", "-P", &child.id().to_string()])
                    .status();
                let _ = child.kill();
                let _ = child.wait();
                return Err("perf record ran over 300 s (hang guard): killed".into());
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        if !st.success() {
            return Err(format!("perf record exited with {st}"));
        }
        let out = Command::new("perf")
            .args(["script", "-F", "tid,event,trace", "-i"])
            .arg(&data)
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("perf script: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let mut tid: Option<String> = None;
        let mut current: Option<PathBuf> = None;
        let mut hits = 0;
        let mut ldso_done = false;
        let ldso_canon = canon(&ldso.display().to_string());
        for line in text.lines() {
            let mut f = line.split_whitespace();
            let (Some(this_tid), Some(event)) = (f.next(), f.next()) else {
                continue;
            };
            if event == entry {
                if ldso_done {
                    break;
                }
                tid.get_or_insert_with(|| this_tid.to_string());
                let name = line
                    .split_once("name=\"")
                    .and_then(|(_, r)| r.rsplit_once('"'))
                    .map(|(n, _)| n)
                    .unwrap_or("");
                // "" is the main program.
                let obj = if name.is_empty() {
                    canon(&t.program.display().to_string())
                } else {
                    canon(name)
                };
                ldso_done = obj == ldso_canon;
                current = Some(obj);
                hits += 1;
            } else if event == ret {
                current = None;
            } else if event.starts_with("cpu-clock") && tid.as_deref() == Some(this_tid) {
                if let Some(o) = &current {
                    *samples.entry(o.clone()).or_default() += 1;
                }
            }
        }
        if hits == 0 {
            return Err("no probe hit recorded".into());
        }
        per_run.push(samples);
    }
    let objects: std::collections::BTreeSet<&PathBuf> =
        per_run.iter().flat_map(|m| m.keys()).collect();
    Ok(objects
        .into_iter()
        .map(|o| {
            let mut v: Vec<f64> = per_run
                .iter()
                .map(|m| m.get(o).copied().unwrap_or(0) as f64)
                .collect();
            (o.clone(), median(&mut v) as u64)
        })
        .collect())
}

fn perf_record_oracle(name: &str, t: &Target, tag: &str) {
    if !tools(name, &["perf", "readelf"]) {
        return;
    }
    let _s = serial();
    let Some(ldso) = interpreter(&t.program) else {
        skip(name, "the target has no interpreter");
        return;
    };
    let samples = {
        let probes = match RelocProbes::add(&ldso, tag) {
            Ok(p) => p,
            Err(e) => {
                skip("perf_record_oracle", &e);
                return;
            }
        };
        match perf_record_relocation(t, &probes, &ldso, 5) {
            Ok(s) => s,
            Err(e) => {
                skip("perf_record_oracle", &e);
                return;
            }
        }
        // The probes are deleted here, before ldcost plants its own breakpoints in ld.so.
    };
    let p = profile(t, &["-n", "5", "--warmup", "1", "--no-ld-debug"]);
    if !per_object_detail(name, &p) {
        return;
    }
    let (ours, by) = ldcost_top_relocation(&p);
    let mut ranked: Vec<(&PathBuf, &u64)> = samples.iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(a.1));
    eprintln!("{name}: perf record samples in relocation by object {ranked:?}");
    eprintln!("{name}: ldcost relocation CPU ns by object {by:?}");
    let (first, n1) = ranked.first().copied().expect("samples in relocation");
    // Presence: ldcost's top object is one of perf record's top two. Which of two comes first
    // is not trustworthy under load: two objects within 15% are a tie on a loaded VM, and where two
    // dominate (librustc_driver and libLLVM for rustc) sampling with uprobes (100 kHz then)
    // inflates the relocation time ~10x (45 ms of samples for ~3 ms of task-clock); one CI run
    // put libLLVM first while ldcost's counters, five runs out of five, and the lookup counts
    // (1806 vs 42) put librustc_driver first.
    assert!(
        ranked.iter().take(2).any(|(o, _)| **o == ours),
        "perf record puts {} first ({n1} samples) and {:?} second, ldcost {}",
        first.display(),
        ranked.get(1),
        ours.display()
    );
}

#[test]
fn perf_record_oracle_rustc() {
    let name = "perf_record_oracle_rustc";
    if let Some(t) = rustc(name) {
        perf_record_oracle(name, &t, "rustc");
    }
}

#[test]
fn perf_record_oracle_python() {
    let name = "perf_record_oracle_python";
    if let Some(t) = python3(name) {
        perf_record_oracle(name, &t, "python");
    }
}

#[test]
fn perf_record_oracle_git() {
    let name = "perf_record_oracle_git";
    if let Some(t) = git(name) {
        perf_record_oracle(name, &t, "git");
    }
}
