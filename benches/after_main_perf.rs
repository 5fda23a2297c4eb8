//! The report's per-object times after `main` against `perf record` of the same program: the
//! program that dlopens 100 generated libraries (benches/support/hundred_dlopens.rs), measured
//! by `ldcost profile -n N --json -` and, in turns with it (ldcost, perf, ldcost, perf: the
//! machine's load falls on both alike), run untraced in a shell loop under
//! `perf record -e cpu-clock -c 50000 --call-graph dwarf,32768` (a sample per 50 µs of the
//! program's CPU, kernel and user; DWARF unwinding, because ld.so has no frame pointers and a
//! frame-pointer chain from inside it does not reach `dlopen`).
//!
//! perf's side, classified here from the function names of each sample's stack alone: its
//! class is the innermost of ld.so's functions ldcost's windows are bounded by:
//! `_dl_map_object` (and `_dl_map_object_from_fd`, what it calls) is search and mapping,
//! `_dl_relocate_object` relocation (its symbol lookups and the page faults its writes take
//! are in its stack), `call_init`/`_dl_init` initializers (the constructors run under them).
//! DWARF unwinding through ld.so stops short in a part of the samples, so a chain need not
//! reach `dlopen`: a chain of symbol lookup alone counts as relocation, one ending in a
//! generated library's `_init` (crti's, without unwind information; only call_init calls it)
//! as initializers, and stacks through `dlsym` or lazy binding are left out. Start-up has the
//! same functions: the same program loading no library (its second argument 0) runs in the
//! same block under perf, and its samples per class are subtracted. The rest of the `dlopen`
//! windows (the dependency walk, version checks, the scope's update) is printed beside, not
//! compared.
//!
//! perf's figure per class: the class's fraction of the samples that loading the libraries
//! adds (its samples less the control's, over all of the program's samples less the
//! control's), times the fraction of the program's untraced CPU that loading them adds
//! (`perf stat -e task-clock -r N` of the program less that of the control, over the
//! program's, in the same block). Not samples × 50 µs: sampling with DWARF stacks costs the
//! program CPU of its own (a 32 KB stack copy per sample), which falls in whatever it
//! interrupts and overstates every class alike (its samples give the program 8.4 ms per run
//! where perf stat gives 3.8 to 6.1); the fractions stay. ldcost's side likewise: each
//! class over its own runs without ptrace in the same profile. Fractions, because the
//! machine's speed moves between moments; both are printed as µs at the mean of ldcost's
//! runs without ptrace. Samples × 50 µs are printed beside.
//!
//! ldcost's side: each class's total over the objects loaded after `main`, the sum of the
//! report's per-object medians (`after_main.objects[]`), the mean over the blocks.
//!
//! Beside: the residue per stop the report took out of the windows after `main`
//! (`overhead.residue`, see src/attribute/profile/residue.rs), and the stops inside each
//! class's windows.
//!
//! Goals, the rules start-up's sampled categories are judged by against `perf record` in
//! benches/profile_checks.rs (`cpu features same runs`): per class, µs per run within 20%, and
//! its share of the three classes within 5 points. PASS/FAIL per row.
//!
//! Run with `cargo bench --bench after_main_perf` (root, perf, cc, libc6-dbg: without ld.so's
//! debug symbols neither side can name these functions). `LDCOST_BENCH_RUNS`: ldcost's
//! measured runs and the loops' runs per block (default 30); 2 blocks each.

#[path = "../tests/common/mod.rs"]
mod common;
#[path = "support/hundred_dlopens.rs"]
mod hundred;
#[allow(dead_code)]
#[path = "support/targets.rs"]
mod targets;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ldcost::attribute::after_main::AfterMainSection;
use targets::{loadavg, profile, Target};

/// perf's sampling period, ns of the program's CPU (cpu-clock).
const PERIOD_NS: f64 = 50_000.0;
/// Blocks of each side, interleaved.
const BLOCKS: usize = 2;
/// Per-class µs per run: within this fraction of perf's.
const GOAL_US: f64 = 0.20;
/// Per-class share of the three: within this many points (as a fraction).
const GOAL_SHARE: f64 = 0.05;

const CLASSES: [&str; 3] = ["mapping", "relocation", "initializers"];

fn main() {
    let runs = hundred::runs(30);
    println!(
        "after_main_perf: {} dlopens; {BLOCKS} blocks of ldcost profile -n {runs} and perf record of {runs} runs",
        hundred::LIBS
    );
    println!("load:     {}", loadavg());
    let Some(h) = hundred::ready(common::have) else {
        return;
    };
    let argv = h.argv();
    let t: Target = (PathBuf::from(&argv[0]), argv[1..].to_vec());
    let mut ours: Vec<[f64; 3]> = Vec::new();
    // Per block: the stops per run inside each class's windows (Σ over the objects), and
    // the residue per stop the report took out (None: not resolved in that block).
    let mut stops: Vec<[f64; 3]> = Vec::new();
    let mut residue: Vec<Option<f64>> = Vec::new();
    // Per block: untraced task-clock per run (perf stat's mean) of the program and the control.
    let mut untraced: Vec<(f64, f64)> = Vec::new();
    // Per block: ldcost's runs without ptrace (task-clock median), and perf's fraction of
    // the program's untraced CPU in each class.
    let mut speed: Vec<f64> = Vec::new();
    let mut theirs_frac: Vec<[f64; 3]> = Vec::new();
    let mut loader: Vec<f64> = Vec::new();
    let mut theirs = PerfClasses::default();
    let mut start_up = PerfClasses::default();
    let mut perf_runs = 0usize;
    let mut control = argv.clone();
    control.push("0".into());
    for b in 0..BLOCKS {
        match profile(&t, &["-n", &runs.to_string(), "--no-ld-debug"]) {
            Ok(p) => match class_totals(&p.after_main) {
                Ok(v) => {
                    let Some(u) = p.overhead.uninstrumented_ns.as_ref().map(|s| s.median) else {
                        println!("FAIL: block {b}: no runs without ptrace");
                        return;
                    };
                    ours.push(v);
                    speed.push(u);
                    stops.push(class_stops(&p));
                    residue.push(p.overhead.residue.map(|r| r.ns_per_stop));
                    if let Some(l) = &p.after_main.loader_cpu_ns {
                        loader.push(l.median);
                    }
                }
                Err(e) => {
                    println!("FAIL: block {b}: {e}");
                    return;
                }
            },
            Err(e) => {
                println!("FAIL: block {b}: ldcost profile: {e}");
                return;
            }
        }
        match (
            perf_block(h.dir.path(), &argv, runs),
            perf_block(h.dir.path(), &control, runs),
        ) {
            (Ok(c), Ok(z)) => {
                let (a, zs) = match (
                    hundred::perf_stat(&argv, runs),
                    hundred::perf_stat(&control, runs),
                ) {
                    (Ok((a, _)), Ok((z, _))) => (a, z),
                    (Err(e), _) | (_, Err(e)) => {
                        println!("SKIP: perf stat: {e}");
                        return;
                    }
                };
                untraced.push((a, zs));
                // Each class's fraction of the program's untraced CPU, this block.
                let added = c.total as f64 - z.total as f64;
                theirs_frac.push(std::array::from_fn(|i| {
                    (c.classes[i] as f64 - z.classes[i] as f64) / added * (a - zs) / a
                }));
                theirs.add(&c);
                start_up.add(&z);
                perf_runs += runs;
            }
            (Err(e), _) | (_, Err(e)) => {
                println!("SKIP: perf record: {e}");
                return;
            }
        }
    }
    println!();
    println!(
        "perf: {} samples of prog, {} in dlopen windows ({} of them initializers by a library's `_init`; {} outside the three classes: {})",
        theirs.total,
        theirs.in_dlopen,
        theirs.init_unwound,
        theirs.other,
        theirs.top_other()
    );
    println!(
        "perf, the same program loading nothing (start-up's share of the classes, subtracted): {} samples, mapping/relocation/initializers {}/{}/{}",
        start_up.total, start_up.classes[0], start_up.classes[1], start_up.classes[2]
    );
    println!(
        "ldcost blocks (mapping/relocation/initializers µs per run): {}",
        ours.iter()
            .map(|v| format!("{:.0}/{:.0}/{:.0}", v[0] / 1e3, v[1] / 1e3, v[2] / 1e3))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // Both sides as fractions of the program's CPU untraced at their own moment (the
    // machine's speed moves between blocks: the untraced program took 3.8 ms in one block and
    // 6.1 in the next), averaged over the blocks, in µs at ldcost's untraced runs' mean.
    let n = ours.len() as f64;
    let at = speed.iter().sum::<f64>() / n / 1e3;
    let o: Vec<f64> = (0..3)
        .map(|i| ours.iter().zip(&speed).map(|(v, u)| v[i] / u).sum::<f64>() / n * at)
        .collect();
    let p: Vec<f64> = (0..3)
        .map(|i| theirs_frac.iter().map(|f| f[i]).sum::<f64>() / n * at)
        .collect();
    let added_samples = theirs.total as f64 - start_up.total as f64;
    let class_samples = |i: usize| theirs.classes[i] as f64 - start_up.classes[i] as f64;
    println!(
        "untraced per block: perf stat -e task-clock -r {runs}: the program {} µs, the control {} µs; ldcost's runs without ptrace: {} µs (µs below at their mean, {at:.0} µs); perf record: loading adds {added_samples:.0} samples",
        untraced.iter().map(|(a, _)| format!("{:.0}", a / 1e3)).collect::<Vec<_>>().join("/"),
        untraced.iter().map(|(_, z)| format!("{:.0}", z / 1e3)).collect::<Vec<_>>().join("/"),
        speed.iter().map(|u| format!("{:.0}", u / 1e3)).collect::<Vec<_>>().join("/"),
    );
    println!();
    println!("| check | class | ldcost (Σ of per-object medians) | perf record × perf stat | goal | result |");
    println!("|---|---|---|---|---|---|");
    let (os, ps) = (o.iter().sum::<f64>(), p.iter().sum::<f64>());
    for i in 0..3 {
        let rel = o[i] / p[i] - 1.0;
        println!(
            "| µs per run | {} | {:.0} µs | {:.0} µs ({} − {} of {added_samples:.0} samples) | within 20% | {} ({:+.1}%) |",
            CLASSES[i],
            o[i],
            p[i],
            theirs.classes[i],
            start_up.classes[i],
            verdict(rel.abs() <= GOAL_US),
            rel * 100.0
        );
    }
    for i in 0..3 {
        let (a, b) = (o[i] / os, p[i] / ps);
        println!(
            "| share of the three | {} | {:.1}% | {:.1}% | within 5 points | {} ({:+.1} points) |",
            CLASSES[i],
            a * 100.0,
            b * 100.0,
            verdict((a - b).abs() <= GOAL_SHARE),
            (a - b) * 100.0
        );
    }
    println!(
        "| (beside) | the three together | {os:.0} µs | {ps:.0} µs | | {:+.1}% |",
        (os / ps - 1.0) * 100.0
    );
    for (i, class) in CLASSES.iter().enumerate() {
        println!(
            "| (beside) samples × 50 µs | {class} | | {:.0} µs | | sampling's own cost included |",
            class_samples(i) * PERIOD_NS / 1e3 / perf_runs as f64
        );
    }
    let st: Vec<f64> = (0..3)
        .map(|i| stops.iter().map(|v| v[i]).sum::<f64>() / stops.len().max(1) as f64)
        .collect();
    println!(
        "| (beside) | residue per stop taken out by the report, per block | {} | | | stops per run in the windows {:.0}/{:.0}/{:.0} |",
        residue
            .iter()
            .map(|r| r.map_or("not resolved".into(), |r| format!("{:.2} µs", r / 1e3)))
            .collect::<Vec<_>>()
            .join(", "),
        st[0],
        st[1],
        st[2]
    );
    // The whole dlopen calls, and perf's own view of the program's CPU: its samples per run
    // include what sampling itself costs the program (a DWARF stack copy per sample).
    let whole = loader.iter().sum::<f64>() / loader.len().max(1) as f64 / 1e3;
    let dl = theirs.in_dlopen as f64 * PERIOD_NS / 1e3 / perf_runs as f64;
    println!(
        "| (beside) | whole dlopen calls | {whole:.0} µs (ld.so's CPU after main) | at least {dl:.0} µs (chains that reach dlopen) | | {:+.1}% |",
        (whole / dl - 1.0) * 100.0
    );
    println!(
        "perf's CPU per run by its samples (sampling's own cost included): {:.0} µs",
        theirs.total as f64 * PERIOD_NS / 1e3 / perf_runs as f64
    );
    println!("load afterwards: {}", loadavg());
}

fn verdict(pass: bool) -> &'static str {
    if pass {
        "PASS"
    } else {
        "FAIL"
    }
}

/// Each class's total over the objects loaded after `main` (ns per run): the sum of the
/// report's per-object medians.
fn class_totals(a: &AfterMainSection) -> Result<[f64; 3], String> {
    if a.objects.len() < hundred::LIBS {
        return Err(format!(
            "the report has {} objects loaded after main, not {} ({:?})",
            a.objects.len(),
            hundred::LIBS,
            a.seen
        ));
    }
    let mut v = [0.0; 3];
    for o in &a.objects {
        for (i, s) in [&o.mapping_ns, &o.relocation_ns, &o.initializers_ns]
            .into_iter()
            .enumerate()
        {
            match s {
                Some(s) => v[i] += s.median,
                None => return Err(format!("{}: no {} figure", o.object, CLASSES[i])),
            }
        }
    }
    Ok(v)
}

/// The stops per run inside each class's windows, summed over the objects loaded after
/// `main` (the median run's; they do not vary between runs of this program).
fn class_stops(p: &ldcost::profile::ProfileSection) -> [f64; 3] {
    let mut per_run: Vec<[f64; 3]> = p
        .raw
        .iter()
        .filter_map(|r| r.after_main.as_ref())
        .map(|a| {
            let mut v = [0.0; 3];
            for o in a.opens.iter().flat_map(|o| &o.objects) {
                for (i, c) in [&o.mapping, &o.relocation, &o.initializers]
                    .into_iter()
                    .enumerate()
                {
                    v[i] += c.as_ref().map_or(0.0, |c| c.stops as f64);
                }
            }
            v
        })
        .collect();
    per_run.sort_by(|a, b| a.iter().sum::<f64>().total_cmp(&b.iter().sum::<f64>()));
    per_run.get(per_run.len() / 2).copied().unwrap_or_default()
}

/// perf's samples of the program, by class.
#[derive(Default)]
struct PerfClasses {
    total: u64,
    in_dlopen: u64,
    classes: [u64; 3],
    other: u64,
    /// Initializers samples whose chain ends in a library's `_init` (see [`classify`]).
    init_unwound: u64,
    /// The innermost named user frame of the other samples in `dlopen`, counted.
    other_by: std::collections::BTreeMap<String, u64>,
}

impl PerfClasses {
    fn add(&mut self, c: &PerfClasses) {
        self.total += c.total;
        self.in_dlopen += c.in_dlopen;
        self.other += c.other;
        self.init_unwound += c.init_unwound;
        for i in 0..3 {
            self.classes[i] += c.classes[i];
        }
        for (k, v) in &c.other_by {
            *self.other_by.entry(k.clone()).or_default() += v;
        }
    }

    fn top_other(&self) -> String {
        let mut v: Vec<(&String, &u64)> = self.other_by.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1));
        v.iter()
            .take(5)
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The frames that say a sample is inside a `dlopen` call.
const DLOPEN: [&str; 6] = [
    "_dl_open",
    "dl_open_worker",
    "dl_open_worker_begin",
    "dlopen_doit",
    "___dlopen",
    "__dlopen",
];

/// The frames of ld.so's work that is none of the three windows: `dlsym`'s lookups, lazy
/// binding.
const NOT_COMPARED: [&str; 8] = [
    "___dlsym",
    "dlsym",
    "dlsym_doit",
    "_dl_sym",
    "_dl_fixup",
    "_dl_runtime_resolve_xsavec",
    "_dl_runtime_resolve_xsave",
    "_dl_runtime_resolve_fxsave",
];

/// Symbol lookup: inside relocation when no other of the windows' functions encloses it (a
/// chain cut short under the lookup).
const LOOKUP: [&str; 5] = [
    "do_lookup_x",
    "_dl_lookup_symbol_x",
    "check_match",
    "_dl_new_hash",
    "_dl_name_match_p",
];

/// The class of a frame, by ld.so's function names (None: not one of the three).
fn class_of(sym: &str) -> Option<usize> {
    match sym {
        "_dl_map_object" | "_dl_map_object_from_fd" => Some(0),
        "_dl_relocate_object" => Some(1),
        "call_init" | "_dl_init" => Some(2),
        _ => None,
    }
}

/// Classifies `perf script -F comm,ip,sym,dso` text: one block per sample, the command
/// first, then the frames leaf first (`ADDR SYM+OFF (DSO)`).
fn classify(text: &str) -> PerfClasses {
    let mut c = PerfClasses::default();
    for block in text.split("\n\n") {
        let mut lines = block.lines().filter(|l| !l.trim().is_empty());
        let Some(head) = lines.next() else { continue };
        if head.split_whitespace().next() != Some("prog") {
            continue;
        }
        c.total += 1;
        let frames: Vec<(&str, &str)> = lines
            .filter_map(|l| {
                let mut w = l.split_whitespace();
                let _addr = w.next()?;
                let sym = w.next().unwrap_or("[unknown]");
                let dso = l
                    .rsplit_once('(')
                    .map_or("", |(_, d)| d.trim_end_matches(')'));
                let dso = dso.rsplit('/').next().unwrap_or(dso);
                Some((sym.split("+0x").next().unwrap_or(sym), dso))
            })
            .collect();
        let in_dlopen = frames.iter().any(|(f, _)| DLOPEN.contains(f));
        if in_dlopen {
            c.in_dlopen += 1;
        }
        if frames.iter().any(|(f, _)| NOT_COMPARED.contains(f)) {
            continue;
        }
        // A library's DT_INIT (`_init`, from crti) has no unwind information: a sample in it
        // ends its chain there. Only call_init calls a library's `_init`, and the generated
        // libraries are loaded by dlopen alone: such a sample is in their initializers.
        let lib_init = frames
            .last()
            .is_some_and(|(s, d)| *s == "_init" && d.starts_with("libg") && d.ends_with(".so"));
        let class = if lib_init {
            c.init_unwound += 1;
            Some(2)
        } else {
            frames
                .iter()
                .find_map(|(f, _)| class_of(f))
                .or_else(|| frames.iter().any(|(f, _)| LOOKUP.contains(f)).then_some(1))
        };
        match class {
            Some(i) => c.classes[i] += 1,
            None if in_dlopen => {
                c.other += 1;
                let name = frames
                    .iter()
                    .map(|(f, _)| *f)
                    .find(|f| *f != "[unknown]" && !f.starts_with("0x"))
                    .unwrap_or("[unknown]");
                *c.other_by.entry(name.to_string()).or_default() += 1;
            }
            None => {}
        }
    }
    c
}

/// `perf record -e cpu-clock -c PERIOD --call-graph dwarf` of a shell loop of `runs` runs,
/// classified.
fn perf_block(dir: &Path, argv: &[String], runs: usize) -> Result<PerfClasses, String> {
    let data = dir.join("perf.data");
    let quoted: Vec<String> = argv.iter().map(|a| format!("'{a}'")).collect();
    let script = format!(
        "i=0; while [ $i -lt {runs} ]; do {} || exit 1; i=$((i+1)); done",
        quoted.join(" ")
    );
    let st = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-c"])
        .arg(format!("{}", PERIOD_NS as u64))
        .args(["--call-graph", "dwarf,32768", "-o"])
        .arg(&data)
        .args(["--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("perf: {e}"))?;
    if !st.success() {
        return Err(format!("perf record exited with {st}"));
    }
    let out = Command::new("perf")
        .args(["script", "-F", "comm,ip,sym,dso", "-i"])
        .arg(&data)
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("perf script: {e}"))?;
    let _ = std::fs::remove_file(&data);
    Ok(classify(&String::from_utf8_lossy(&out.stdout)))
}
