//! Side-by-side benchmark: ldcost's post-processing of a sampled fork-heavy run against
//! `perf script` on a `perf record -a -g` of the very same run.
//!
//! Run with `cargo bench --bench sampling_speed` (release profile, as root). See
//! docs/benchmarks.md for how to read the output.
//!
//! Set-up, not timed: seed 001's forktest (`experiment::seeds`, dynamic, the seed's libraries)
//! runs once under two samplers at the same time, both at 10 kHz and system-wide:
//! `perf record -N -a -g -F 10000 -- sh -c 'echo $$; read go && exec forktest N'` and
//! ldcost's `Sampler` on the pid that `sh` prints. perf starts `sh` only once its own events
//! are enabled (it corks the workload), `sh` then blocks on a pipe from us, we start ldcost's
//! sampler and write the line that lets `sh` exec: both samplers see the workload from its
//! first instruction, with no sleep. ldcost's `Recording` is also saved as JSON.
//!
//! Variants, interleaved round by round so that they share the machine's noise (each round
//! starting one variant later than the last):
//! - `A`:   `Symbolizer::symbolize` + `breakdown` (which runs `categories::classify` on every
//!   stack) + `write_folded` into a `Vec`, on the in-memory recording: what `ldcost` does after
//!   capture.
//! - `A2`:  `A` preceded by reading and parsing the saved JSON (a replay from disk, as perf
//!   script reads perf.data).
//! - `A1M`: `A` on exactly 1,000,000 frames: the recording's first samples (started over from
//!   the first if it holds fewer frames).
//! - `B`:   `perf script -i perf.data --comms forktest > /dev/null` (piped into
//!   `stackcollapse-perf.pl` when that is on PATH): the workload's stacks only, as ldcost keeps
//!   only the workload's tree.
//! - `B0`:  `perf script -i perf.data > /dev/null`: every process the machine ran.
//! - `C`:   `perf script --comms forktest -s stackcollapse.py` (perf's own collapser, when
//!   installed with perf): the manual pipeline to folded stacks.
//!
//! Environment: `LDCOST_BENCH_ROUNDS` (timed rounds, default 7), `LDCOST_BENCH_FORKS` (forktest
//! iterations, default 15000), `LDCOST_BENCH_DIR` (keep perf.data and the JSON there),
//! `LDCOST_BENCH_PROFILE=N` (after set-up, run only variant `A`, N times, printing its stages:
//! a loop to profile).

use std::fs;
use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use ldcost::attribute::breakdown::{breakdown, Span, Unit};
use ldcost::experiment::seeds::{self, Linkage, Seed, SEED_LIBS};
use ldcost::perf::sampler::{Recording, Sampler, SamplerConfig, Symbolizer, TaskKind};
use ldcost::report::flamegraph::write_folded;
use ldcost::symbolize::default_debug_roots;

const WARMUP_ROUNDS: usize = 1;
const DEFAULT_ROUNDS: usize = 7;
const DEFAULT_FORKS: u32 = 15_000;
const FREQUENCY_HZ: u64 = 10_000;
/// The goal, kept as stated although not met yet: seven runs on the 2-vCPU VM gave
/// 3.3x to 5.2x, median 4.4x (docs/benchmarks.md says where ldcost's time goes).
const GOAL_RATIO: f64 = 5.0;
/// The issue: symbolizing a million frames must take less than a second.
const GOAL_MILLION: Duration = Duration::from_secs(1);
/// The workload's name, hence its comm (perf's `--comms` filter).
const COMM: &str = "forktest";

fn main() {
    if let Err(reason) = check_machine() {
        println!("SKIP sampling_speed: {reason}");
        return;
    }
    let kept = std::env::var_os("LDCOST_BENCH_DIR").filter(|d| !d.is_empty());
    let tmp = tempfile::tempdir().expect("temporary directory");
    let dir = kept.map_or_else(|| tmp.path().to_path_buf(), PathBuf::from);
    fs::create_dir_all(&dir).expect("LDCOST_BENCH_DIR");
    let forks = env_usize("LDCOST_BENCH_FORKS").map_or(DEFAULT_FORKS, |n| n as u32);

    // ---- Set-up: build, record twice at once, save.
    let (program, libs) = match build_workload(&dir) {
        Ok(b) => b,
        Err(reason) => {
            println!("SKIP sampling_speed: {reason}");
            return;
        }
    };
    let perf_data = dir.join("perf.data");
    let run = record_both(&program, forks, &perf_data);
    let rec = run.recording;
    let json_path = dir.join("recording.json");
    let json = serde_json::to_vec(&rec).expect("serialise the recording");
    fs::write(&json_path, &json).expect("write recording.json");
    let units = fork_units(&rec, 10);
    let roots = default_debug_roots();

    if let Some(n) = env_usize("LDCOST_BENCH_PROFILE") {
        // Variant A only, each round's stages printed (symbolize, breakdown, write, free).
        for _ in 0..n {
            let p = post_process(&rec, &units, &roots);
            let st: Vec<String> = p.stages.iter().map(|&d| ms(d)).collect();
            println!(
                "profile: {} samples, {} frames: {}",
                p.stacks,
                p.frames,
                st.join(" ")
            );
        }
        return;
    }

    let first = post_process(&rec, &units, &roots);
    let million = with_frames(&rec, 1_000_000);
    let million_frames: usize = million
        .samples
        .iter()
        .map(|s| s.kernel.len() + s.user.len())
        .sum();
    let perf_total = perf_sample_count(&perf_data);
    let perf_tree = perf_script_counts(&perf_data);
    let collapser = find_on_path("stackcollapse-perf.pl");
    let collapse_py = Path::new("/usr/lib/perf-core/scripts/python/stackcollapse.py");
    let collapse_py = collapse_py.is_file().then_some(collapse_py);

    println!("sampling_speed");
    println!(
        "workload:  {} {forks} (dynamic, -l{})",
        program.display(),
        libs.join(" -l")
    );
    for l in run
        .workload_out
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
    {
        println!("           {l}");
    }
    println!(
        "ldcost:    {} samples of {} at {} Hz ({} frames, {} stacks folded into {} lines), \
         {} lost, throttled {}; JSON {:.1} MB",
        rec.samples.len(),
        rec.event,
        rec.frequency_hz,
        first.frames,
        first.stacks,
        first.folded_lines,
        rec.lost,
        rec.throttled,
        mb(json.len() as u64)
    );
    println!(
        "perf:      perf.data {:.1} MB, {} samples ({} of comm {COMM}, {} frames printed for them)",
        mb(fs::metadata(&perf_data).map_or(0, |m| m.len())),
        perf_total.map_or_else(|| "?".into(), |n| n.to_string()),
        perf_tree.0,
        perf_tree.1,
    );
    if !perf_tree.2.is_empty() {
        println!("           perf script says: {}", perf_tree.2);
    }
    println!(
        "collapser: {}",
        match &collapser {
            Some(p) => format!("{} (B is perf script | it)", p.display()),
            None => "stackcollapse-perf.pl not found: B is `perf script > /dev/null`, a lower \
                     bound of the manual pipeline"
                .into(),
        }
    );
    println!(
        "1M frames: {} samples, {million_frames} frames ({})",
        million.samples.len(),
        if million.samples.len() > rec.samples.len() {
            "the recording's samples, then again from the first"
        } else {
            "the first samples of the recording"
        }
    );
    println!(
        "rounds:    {WARMUP_ROUNDS} warm-up + {} timed, interleaved A A2 A1M B B0{} (rotated)",
        rounds(),
        if collapse_py.is_some() { " C" } else { "" }
    );
    println!();
    drop(json);

    let mut a = Variant::new(
        "A",
        "ldcost symbolize + classify + breakdown + folded (in memory)",
    );
    let mut a2 = Variant::new("A2", "ldcost: read + parse the JSON, then A");
    let mut a1m = Variant::new("A1M", "ldcost A on 1,000,000 frames");
    let b_what = if collapser.is_some() {
        "`perf script --comms forktest \\| stackcollapse-perf.pl`"
    } else {
        "`perf script --comms forktest > /dev/null`"
    };
    let mut b = Variant::new("B", b_what);
    let mut b0 = Variant::new("B0", "`perf script > /dev/null` (every process)");
    let mut c = Variant::new("C", "`perf script --comms forktest -s stackcollapse.py`");

    let mut stages: Vec<[Duration; 4]> = Vec::new();
    let py = collapse_py.map(|p| p.to_string_lossy().into_owned());
    // The tools' command lines: 0 is B, 1 is B0, 2 is C (None when not installed).
    let tool = |which: usize| -> Option<Command> {
        let mut cmd = match (which, &collapser, &py) {
            (0, Some(p), _) => {
                let mut sh = Command::new("sh");
                sh.arg("-c")
                    .arg("perf script -i \"$1\" --comms \"$2\" 2>/dev/null | \"$3\"")
                    .arg("sh")
                    .arg(&perf_data)
                    .arg(COMM)
                    .arg(p)
                    .stdin(Stdio::null())
                    .stderr(Stdio::null());
                sh
            }
            (0, None, _) => perf_script(&perf_data, &["--comms", COMM]),
            (1, _, _) => perf_script(&perf_data, &[]),
            (2, _, Some(py)) => perf_script(&perf_data, &["--comms", COMM, "-s", py]),
            _ => return None,
        };
        cmd.stdout(Stdio::null());
        Some(cmd)
    };
    // Each round starts one variant later (A A2 A1M B B0 C, then A2 A1M B B0 C A, ...), so no
    // variant always follows the same one (a long Python run, a freshly freed heap).
    for round in 0..WARMUP_ROUNDS + rounds() {
        let keep = round >= WARMUP_ROUNDS;
        for k in 0..6 {
            match (round + k) % 6 {
                0 => a.in_process(keep, || {
                    let p = black_box(post_process(&rec, &units, &roots));
                    if keep {
                        stages.push(p.stages);
                    }
                    p.frames
                }),
                1 => a2.in_process(keep, || {
                    let bytes = fs::read(&json_path).expect("read recording.json");
                    let r: Recording =
                        serde_json::from_slice(&bytes).expect("parse recording.json");
                    drop(bytes);
                    black_box(post_process(&r, &units, &roots)).frames
                }),
                2 => a1m.in_process(keep, || {
                    black_box(post_process(&million, &units, &roots)).frames
                }),
                k => {
                    let v = match k {
                        3 => &mut b,
                        4 => &mut b0,
                        _ => &mut c,
                    };
                    if let Some(mut cmd) = tool(k - 3) {
                        v.child(keep, &mut cmd);
                    }
                }
            }
        }
    }
    // The tools' peak RSS, in one more run each, untimed (see `peak_rss_kb`).
    for (i, v) in [&mut b, &mut b0, &mut c].into_iter().enumerate() {
        if let Some(cmd) = tool(i).filter(|_| !v.samples.is_empty()) {
            v.peak_kb = peak_rss_kb(&cmd, &dir.join("maxrss.txt"));
        }
    }

    let base = b.median();
    let n_rec = rec.samples.len() as f64;
    let rows = [
        (&a, n_rec),
        (&a2, n_rec),
        (&a1m, million.samples.len() as f64),
        (&b, perf_tree.0 as f64),
        (&b0, perf_total.unwrap_or(0) as f64),
        (&c, perf_tree.0 as f64),
    ];
    println!(
        "| variant | what | median | min | max | perf script / variant | samples/s | peak RSS |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|");
    for (v, samples) in rows.into_iter().filter(|(v, _)| !v.samples.is_empty()) {
        println!(
            "| {} | {} | {} | {} | {} | {:.1}x | {:.2} M | {} |",
            v.name,
            v.what,
            ms(v.median()),
            ms(v.min()),
            ms(v.max()),
            base.as_secs_f64() / v.median().as_secs_f64(),
            samples / v.median().as_secs_f64() / 1e6,
            v.peak_kb.map_or_else(
                || "?".to_string(),
                |k| format!(
                    "{}{:.1} MB",
                    if v.is_child { "" } else { "+" },
                    k as f64 / 1024.0
                )
            ),
        );
    }
    println!();
    println!(
        "peak RSS: for A*, VmHWM increase over VmRSS before the call (the bench process holds \
         the recording already); for B, B0, C, the tool's whole peak (/usr/bin/time %M)"
    );
    let stage = |i: usize| {
        let mut v: Vec<Duration> = stages.iter().map(|s| s[i]).collect();
        v.sort();
        ms(v.get(v.len() / 2).copied().unwrap_or_default())
    };
    println!(
        "A by stage (medians): symbolize {}, breakdown (classify + fold) {}, write_folded {}, \
         freeing {}",
        stage(0),
        stage(1),
        stage(2),
        stage(3)
    );
    let m = a1m.median();
    println!(
        "one million frames: {} (goal < {} s): {}",
        ms(m),
        GOAL_MILLION.as_secs(),
        if million_frames >= 1_000_000 && m < GOAL_MILLION {
            "PASS"
        } else {
            "FAIL"
        }
    );
    if !c.samples.is_empty() {
        println!(
            "ratio perf-script+stackcollapse.py/ldcost (C/A) = {:.1}x",
            ratio(&c, &a)
        );
    }
    println!(
        "ratio perf-script/ldcost from JSON (B/A2) = {:.1}x",
        ratio(&b, &a2)
    );
    let r = ratio(&b, &a);
    println!(
        "ratio perf-script/ldcost = {r:.1}x (goal >= {GOAL_RATIO:.0}x): {}",
        if r >= GOAL_RATIO { "PASS" } else { "FAIL" }
    );
}

/// Root (system-wide sampling) and perf, or the reason to skip.
fn check_machine() -> Result<(), String> {
    // The effective uid is the second field of `Uid:` in /proc/self/status.
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:")?.split_whitespace().nth(1));
    if euid != Some("0") {
        return Err("not root (perf record -a and the system-wide sampler need it)".into());
    }
    match Command::new("perf")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => Ok(()),
        _ => Err("`perf` is not installed (apt-get install linux-perf)".into()),
    }
}

/// forktest with the seed's libraries (without them if they are not installed), copied to
/// `dir/forktest` so that its comm is `forktest`.
fn build_workload(dir: &Path) -> Result<(PathBuf, Vec<&'static str>), String> {
    let (built, libs) = match seeds::build(Seed::Forktest, Linkage::Dynamic, &SEED_LIBS, dir) {
        Ok(p) => (p, SEED_LIBS.to_vec()),
        Err(e) => {
            eprintln!("sampling_speed: {e}; building without the seed's libraries");
            let p = seeds::build(Seed::Forktest, Linkage::Dynamic, &[], dir)
                .map_err(|e| format!("cannot build forktest: {e}"))?;
            (p, Vec::new())
        }
    };
    let program = dir.join(COMM);
    fs::copy(&built, &program).map_err(|e| format!("cannot copy {}: {e}", built.display()))?;
    Ok((program, libs))
}

/// `perf record` holding the workload; killed if dropped unfinished.
struct PerfRecord {
    child: Option<Child>,
    go: Option<ChildStdin>,
}

impl Drop for PerfRecord {
    fn drop(&mut self) {
        drop(self.go.take()); // `read go` gets EOF and sh exits
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

struct BothRecorded {
    recording: Recording,
    workload_out: String,
}

/// Runs forktest under `perf record -a -g` and ldcost's sampler at once (see the module docs).
fn record_both(program: &Path, forks: u32, perf_data: &Path) -> BothRecorded {
    let freq = FREQUENCY_HZ.to_string();
    let child = Command::new("perf")
        .args(["record", "-N", "-a", "-g", "-F", &freq, "-o"])
        .arg(perf_data)
        .args([
            "--",
            "sh",
            "-c",
            "echo $$; read go && exec \"$0\" \"$@\" </dev/null",
        ])
        .arg(program)
        .arg(forks.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn perf record");
    let mut guard = PerfRecord {
        child: Some(child),
        go: None,
    };
    let child = guard.child.as_mut().expect("child");
    guard.go = child.stdin.take();
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("read the workload's pid");
    let pid: i32 = line.trim().parse().unwrap_or_else(|_| {
        let mut err = String::new();
        let _ = std::io::Read::read_to_string(child.stderr.as_mut().expect("stderr"), &mut err);
        panic!("perf record did not start the workload: {line:?} {err}")
    });
    let cfg = SamplerConfig {
        frequency_hz: FREQUENCY_HZ,
        ..Default::default()
    };
    let sampler = Sampler::start(&cfg, pid).unwrap_or_else(|e| panic!("{e}: {:?}", e.hint()));
    let mut go = guard.go.take().expect("stdin");
    go.write_all(b"go\n").expect("release the workload");
    drop(go);
    let mut workload_out = String::new();
    std::io::Read::read_to_string(&mut out, &mut workload_out).expect("workload output");
    let child = guard.child.take().expect("child");
    let output = child.wait_with_output().expect("wait for perf record");
    let recording = sampler.stop().unwrap_or_else(|e| panic!("sampler: {e}"));
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "perf record failed: {err}");
    for l in err
        .lines()
        .filter(|l| l.contains("lost") || l.contains("Captured"))
    {
        workload_out.push_str(&format!("\n{}", l.trim()));
    }
    BothRecorded {
        recording,
        workload_out,
    }
}

/// The loop cut into `blocks` units of consecutive forks, each iteration split into "child
/// alive" (its fork to its exit) and "parent" (its exit to the next fork), as the fork probe's
/// units are. The units cover every sample, so no sample is left out of the breakdown.
fn fork_units(rec: &Recording, blocks: usize) -> Vec<Unit> {
    let root = rec.root_pid;
    let mut forks: Vec<(i32, u64)> = rec
        .tasks
        .iter()
        .filter(|t| t.kind == TaskKind::Fork && t.ppid == Some(root) && t.pid != root)
        .map(|t| (t.pid, t.time_ns))
        .collect();
    forks.sort_by_key(|f| f.1);
    let exits: std::collections::HashMap<i32, u64> = rec
        .tasks
        .iter()
        .filter(|t| t.kind == TaskKind::Exit && t.pid == t.tid)
        .map(|t| (t.pid, t.time_ns))
        .collect();
    let t_min = rec.samples.iter().map(|s| s.time_ns).min().unwrap_or(0);
    let t_max = rec.samples.iter().map(|s| s.time_ns).max().unwrap_or(0);
    if forks.is_empty() {
        return vec![Unit {
            start_ns: t_min,
            end_ns: t_max,
            per_unit: 1.0,
            phases: vec![],
            main_pid: root,
        }];
    }
    let per = forks.len().div_ceil(blocks.max(1));
    let chunks: Vec<&[(i32, u64)]> = forks.chunks(per).collect();
    let mut units = Vec::with_capacity(chunks.len());
    for (k, chunk) in chunks.iter().enumerate() {
        let start = if k == 0 {
            t_min.min(chunk[0].1)
        } else {
            chunk[0].1
        };
        let end = match chunks.get(k + 1) {
            Some(next) => next[0].1 - 1,
            None => t_max.max(chunk[chunk.len() - 1].1),
        };
        let mut phases = Vec::with_capacity(chunk.len() * 2);
        for (i, &(pid, t_fork)) in chunk.iter().enumerate() {
            let next_fork = chunk.get(i + 1).map_or(end, |n| n.1);
            let t_exit = exits
                .get(&pid)
                .copied()
                .unwrap_or(next_fork)
                .clamp(t_fork, next_fork);
            phases.push(Span {
                label: "child alive".into(),
                start_ns: t_fork,
                end_ns: t_exit,
            });
            phases.push(Span {
                label: "parent".into(),
                start_ns: t_exit,
                end_ns: next_fork,
            });
        }
        units.push(Unit {
            start_ns: start,
            end_ns: end,
            per_unit: chunk.len() as f64,
            phases,
            main_pid: root,
        });
    }
    units
}

/// What one post-processing produced, and the time of its stages: symbolize, breakdown
/// (classify and fold), write_folded, and freeing the stacks.
struct Processed {
    stacks: usize,
    frames: usize,
    folded_lines: usize,
    stages: [Duration; 4],
}

/// Variant A: symbolize, classify (inside `breakdown`), fold, write the folded text.
fn post_process(rec: &Recording, units: &[Unit], roots: &[PathBuf]) -> Processed {
    let t0 = Instant::now();
    let mut symbolizer = Symbolizer::new(roots);
    let stacks = symbolizer.symbolize(rec, &rec.maps_at_start);
    let t1 = Instant::now();
    let (b, folded) = breakdown("fork", &stacks, units, "child", true);
    let t2 = Instant::now();
    let mut out = Vec::new();
    write_folded(&folded, &mut out).expect("write to a Vec");
    black_box(&b);
    let t3 = Instant::now();
    let (n, frames) = (stacks.len(), stacks.iter().map(|s| s.frames.len()).sum());
    drop((stacks, symbolizer, b, folded));
    Processed {
        stacks: n,
        frames,
        folded_lines: out.iter().filter(|&&c| c == b'\n').count(),
        stages: [t1 - t0, t2 - t1, t3 - t2, t3.elapsed()],
    }
}

/// The samples of `rec` in order, started over from the first if need be (the copies keep
/// their times, so they replay in the same address spaces), cut at exactly `frames` frames.
fn with_frames(rec: &Recording, frames: usize) -> Recording {
    let mut out = rec.clone();
    out.samples.clear();
    let mut left = frames;
    for s in rec.samples.iter().cycle().take(frames) {
        if left == 0 {
            break;
        }
        let mut s = s.clone();
        s.kernel.truncate(left);
        s.user.truncate(left - s.kernel.len());
        left -= s.kernel.len() + s.user.len();
        out.samples.push(s);
    }
    out
}

fn perf_script(perf_data: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new("perf");
    c.arg("script")
        .arg("-i")
        .arg(perf_data)
        .args(extra)
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// Samples in perf.data, of every process (`perf script -F comm`: one line per sample).
fn perf_sample_count(perf_data: &Path) -> Option<u64> {
    let out = perf_script(perf_data, &["-F", "comm"]).output().ok()?;
    let lines = out.stdout.split(|&b| b == b'\n');
    Some(
        lines
            .filter(|l| l.iter().any(|b| !b.is_ascii_whitespace()))
            .count() as u64,
    )
}

/// (samples, frames) that variant B prints: header lines and indented call-chain lines; and
/// perf's warnings (lost chunks make its counts smaller than ldcost's).
fn perf_script_counts(perf_data: &Path) -> (u64, u64, String) {
    let mut child = perf_script(perf_data, &["--comms", COMM])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("perf script");
    let (mut samples, mut frames) = (0, 0);
    for line in BufReader::new(child.stdout.take().expect("stdout")).split(b'\n') {
        let Ok(line) = line else { break };
        match line.first() {
            None => {}
            Some(b' ' | b'\t') => frames += 1,
            Some(_) => samples += 1,
        }
    }
    let mut err = String::new();
    let _ = std::io::Read::read_to_string(child.stderr.as_mut().expect("stderr"), &mut err);
    let _ = child.wait();
    let warnings: Vec<&str> = err
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    (samples, frames, warnings.join(" "))
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// One benchmarked variant: its kept samples and its peak memory.
struct Variant {
    name: &'static str,
    what: &'static str,
    samples: Vec<Duration>,
    peak_kb: Option<u64>,
    is_child: bool,
}

impl Variant {
    fn new(name: &'static str, what: &'static str) -> Variant {
        Variant {
            name,
            what,
            samples: Vec::new(),
            peak_kb: None,
            is_child: false,
        }
    }

    fn keep(&mut self, keep: bool, elapsed: Duration, peak_kb: Option<u64>) {
        if keep {
            self.samples.push(elapsed);
            if let Some(k) = peak_kb {
                self.peak_kb = Some(self.peak_kb.map_or(k, |p| p.max(k)));
            }
        }
    }

    /// Times `f` in this process. Outside the timing, freed heap goes back to the kernel
    /// (`malloc_trim`) and VmHWM is reset, so VmHWM after minus VmRSS before is what the call
    /// added at its peak (and the call pays its page faults, as a fresh `ldcost` would).
    fn in_process(&mut self, keep: bool, f: impl FnOnce() -> usize) {
        // SAFETY: malloc_trim only returns free memory of glibc's heap to the kernel.
        unsafe { nix::libc::malloc_trim(0) };
        let reset = fs::write("/proc/self/clear_refs", "5").is_ok();
        let before = read_status_kb("VmRSS");
        let start = Instant::now();
        black_box(f());
        let elapsed = start.elapsed();
        let peak = match (reset, before, read_status_kb("VmHWM")) {
            (true, Some(b), Some(h)) => Some(h.saturating_sub(b)),
            _ => None,
        };
        self.keep(keep, elapsed, peak);
    }

    /// Times a child from spawn to exit.
    fn child(&mut self, keep: bool, cmd: &mut Command) {
        self.is_child = true;
        let start = Instant::now();
        let status = cmd.status().expect("spawn the benchmarked tool");
        let elapsed = start.elapsed();
        assert!(status.success(), "{} failed: {cmd:?}", self.name);
        self.keep(keep, elapsed, None);
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

/// The peak RSS of `cmd` in kB, from GNU time's `%M` (its wait4 rusage), or None without
/// /usr/bin/time. Not from our own wait4: std spawns with vfork, and exec copies the old
/// address space's high-water mark (this process's, the recording's size) into the child's
/// maxrss, which would hide any tool smaller than the benchmark itself.
fn peak_rss_kb(cmd: &Command, out: &Path) -> Option<u64> {
    let status = Command::new("/usr/bin/time")
        .args(["-f", "%M", "-o"])
        .arg(out)
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    let text = fs::read_to_string(out).ok()?;
    let kb = text.lines().last()?.trim().parse().ok()?;
    status.success().then_some(kb)
}

fn ratio(num: &Variant, den: &Variant) -> f64 {
    num.median().as_secs_f64() / den.median().as_secs_f64()
}

fn rounds() -> usize {
    env_usize("LDCOST_BENCH_ROUNDS")
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_ROUNDS)
}

fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name).ok()?.trim().parse().ok()
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
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}
