//! Each class of ld.so's work after `main` against an untraced A/B of the same program with
//! that class's work changed: no ptrace, no sampling, no unwinding on the oracle's side.
//!
//! The program dlopens 200 generated libraries in pairs, `libgNNN.so` then `libvNNN.so`
//! (`RTLD_NOW | RTLD_LOCAL`; benches/support/hundred_dlopens.rs's libraries, 100 of each).
//! The `libv` set is built in a variant whose work differs in one class only:
//!
//! - relocation: [`EXTRA_LOOKUPS`] more exported functions in each, each pointed to from a
//!   table: a relocation against a symbol of its own, looked up through the global scope (the
//!   program, libc, ld.so) before the library itself answers. Each symbol is a distinct one:
//!   ld.so's one-entry cache answers a relocation against the symbol of the one before
//!   without a lookup, and the linker sorts relocations by symbol, so more pointers to the
//!   same libc functions would add relocations and pages but not lookups. The bench checks
//!   the added lookups with `LD_DEBUG=bindings` before it measures;
//! - initializers: a constructor loop of [`EXTRA_CTOR`] more additions in each;
//! - search and mapping: each `libv` opened by its name, found through `LD_LIBRARY_PATH` after
//!   [`EMPTY_DIRS`] existing empty directories (an `openat` that fails in each), instead of by
//!   its path.
//!
//! ldcost's side, from `ldcost profile -n N --json -` of the variant program: in each measured
//! run, the class's Σ over the `libv` objects of their windows' CPU less its Σ over the
//! `libg` objects (the same libraries but for the change, loaded in the same run, so the
//! machine's speed of the moment falls on both).
//!
//! The oracle: `perf stat -e task-clock` of single runs of the variant program and of the same
//! program with the `libv` set built as the `libg` set is (opened by path, the same
//! `LD_LIBRARY_PATH`), in pairs a few ms apart, before and after each profile; each pair's
//! difference. Untraced, whole process: what the change costs the program, wherever it falls.
//!
//! Differences within one moment, on both sides: the speed of the machine moves, and not
//! alike for all work (the constructors' loop of additions takes 1x or 4x as long from one
//! round to the next, on both sides, while the rest of the program moves less). So each round
//! gives a ratio, the median of ldcost's runs in it over the median of the pairs around it,
//! and the class's result is the median ratio over the rounds: a round whose speed changed
//! between its profile and its pairs is one round of many. The medians over all the runs and
//! all the pairs are printed beside.
//!
//! Goal: per class, ldcost's change within 20% of the untraced change (the rule
//! after_main_perf holds each class to against perf record). Beside: the change ldcost shows
//! in the other two classes (what the variant should not move), and the same difference in a
//! profile of the unchanged program (the two sets' bias, which should be near zero).
//!
//! Run with `cargo bench --bench after_main_ab` (root, perf, cc, libc6-dbg).
//! `LDCOST_BENCH_RUNS`: ldcost's measured runs per profile (default 3).

#[path = "../tests/common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "support/hundred_dlopens.rs"]
mod hundred;

use std::path::Path;
use std::process::{Command, Stdio};

use ldcost::profile::ProfileSection;

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");
/// Libraries per set.
const LIBS: usize = hundred::LIBS;
/// Symbol lookups the relocation variant adds to each library.
const EXTRA_LOOKUPS: usize = 200;
/// Constructor loop iterations the initializers variant adds to each library.
const EXTRA_CTOR: usize = 30_000;
/// Empty directories searched before the variant's libraries are found by name.
const EMPTY_DIRS: usize = 20;
/// ldcost profiles of each variant (each between two pairs of untraced blocks).
const ROUNDS: usize = 10;
/// Pairs of single untraced runs before and after each profile.
const PAIRS: usize = 4;
/// Within this fraction of the untraced change.
const GOAL: f64 = 0.20;

const CLASSES: [&str; 3] = ["search & mapping", "relocation", "initializers"];

const PROG: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    if (argc < 4) return 2;
    const char *base = argv[1], *vdir = argv[2];
    int byname = atoi(argv[3]);
    long sum = 0;
    for (int i = 0; i < LIBS; i++) {
        for (int v = 0; v < 2; v++) {
            char path[4096], name[64];
            if (v == 0) snprintf(path, sizeof path, "%s/libg%03d.so", base, i);
            else if (byname) snprintf(path, sizeof path, "libv%03d.so", i);
            else snprintf(path, sizeof path, "%s/libv%03d.so", vdir, i);
            void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (!h) { fprintf(stderr, "dlopen %s: %s\n", path, dlerror()); return 1; }
            snprintf(name, sizeof name, "%c%03d_entry", v ? 'v' : 'g', i);
            int (*f)(int) = (int (*)(int))dlsym(h, name);
            if (!f) { fprintf(stderr, "dlsym %s: %s\n", name, dlerror()); return 1; }
            sum += f(i);
        }
    }
    return sum == 0;
}
"#;

/// One A/B: the class it changes, the variant's command line and the unchanged one's, and
/// the environment both run in.
struct Pair {
    class: usize,
    changed: Vec<String>,
    unchanged: Vec<String>,
    env: Vec<(String, String)>,
}

fn build_set(dir: &Path, prefix: char, own: usize, libc: usize, ctor: usize) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    for i in 0..LIBS {
        let p = format!("{prefix}{i:03}");
        let src = format!("lib{p}.c");
        std::fs::write(dir.join(&src), hundred::library_with(&p, own, libc, ctor))
            .map_err(|e| e.to_string())?;
        hundred::cc(
            dir,
            &["-shared", "-fPIC", "-O1", "-o", &format!("lib{p}.so"), &src],
        )?;
    }
    Ok(())
}

fn build(d: &Path) -> Result<Vec<Pair>, String> {
    let (own, libc, ctor) = (hundred::OWN, hundred::LIBC, hundred::CTOR_LOOP);
    build_set(&d.join("base"), 'g', own, libc, ctor)?;
    build_set(&d.join("same"), 'v', own, libc, ctor)?;
    build_set(&d.join("reloc"), 'v', own + EXTRA_LOOKUPS, libc, ctor)?;
    build_set(&d.join("init"), 'v', own, libc, ctor + EXTRA_CTOR)?;
    let mut search: Vec<String> = (0..EMPTY_DIRS)
        .map(|i| {
            let e = d.join(format!("empty{i:02}"));
            std::fs::create_dir_all(&e).map(|_| e.display().to_string())
        })
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    search.push(d.join("same").display().to_string());
    std::fs::write(d.join("prog.c"), PROG.replace("LIBS", &LIBS.to_string()))
        .map_err(|e| e.to_string())?;
    hundred::cc(d, &["-O1", "-o", "prog", "prog.c", "-ldl"])?;
    let prog = d.join("prog").display().to_string();
    let argv = |v: &str, byname: &str| {
        vec![
            prog.clone(),
            d.join("base").display().to_string(),
            d.join(v).display().to_string(),
            byname.to_string(),
        ]
    };
    Ok(vec![
        Pair {
            class: 1,
            changed: argv("reloc", "0"),
            unchanged: argv("same", "0"),
            env: Vec::new(),
        },
        Pair {
            class: 2,
            changed: argv("init", "0"),
            unchanged: argv("same", "0"),
            env: Vec::new(),
        },
        Pair {
            class: 0,
            changed: argv("same", "1"),
            unchanged: argv("same", "0"),
            env: vec![("LD_LIBRARY_PATH".into(), search.join(":"))],
        },
    ])
}

/// Bindings `LD_DEBUG=bindings` prints for the first `libv` library in one run of `argv`:
/// its symbol lookups that found a definition.
fn bindings(argv: &[String], env: &[(String, String)]) -> Result<usize, String> {
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .env_remove("LD_LIBRARY_PATH")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("LD_DEBUG", "bindings")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{}: {e}", argv[0]))?;
    if !out.status.success() {
        return Err(format!("{} exited with {}", argv[0], out.status));
    }
    Ok(String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("binding file ") && l.contains("/libv000.so ["))
        .count())
}

/// `perf stat -e task-clock` of one run of `argv` in `env`: its task-clock (ns).
fn perf_stat(argv: &[String], env: &[(String, String)]) -> Result<f64, String> {
    hundred::perf_stat_in(argv, 1, env).map(|(ns, _)| ns)
}

/// `ldcost profile -n RUNS --no-ld-debug --quiet-target --json - ARGV` in `env`.
fn profile(
    argv: &[String],
    env: &[(String, String)],
    runs: usize,
) -> Result<ProfileSection, String> {
    let out = Command::new(BIN)
        .args([
            "profile",
            "-n",
            &runs.to_string(),
            "--no-ld-debug",
            "--quiet-target",
        ])
        .args(["--json", "-"])
        .args(argv)
        .env_remove("LD_LIBRARY_PATH")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("ldcost: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "ldcost profile exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    hundred::profile_of(&out.stdout)
}

/// Per measured run, per class: Σ over the `libv` objects of their windows' CPU less Σ over
/// the `libg` objects (ns; the same run, so the same speed of the machine and the same
/// correction per stop on both sets).
fn run_differences(p: &ProfileSection) -> Result<Vec<[f64; 3]>, String> {
    use ldcost::record::Instrumentation;
    let mut out = Vec::new();
    for r in p.raw.iter().filter(|r| {
        r.instrumentation == Instrumentation::PerObject
            && ldcost::attribute::profile::lost(r).is_none()
    }) {
        let Some(a) = &r.after_main else { continue };
        let mut d = [0.0; 3];
        let mut n = [0usize; 2];
        for o in a.opens.iter().flat_map(|o| &o.objects) {
            let (k, sign) = if o.name.contains("/libv") {
                (1, 1.0)
            } else if o.name.contains("/libg") {
                (0, -1.0)
            } else {
                continue;
            };
            n[k] += 1;
            for (i, c) in [&o.mapping, &o.relocation, &o.initializers]
                .into_iter()
                .enumerate()
            {
                let c = c
                    .as_ref()
                    .ok_or_else(|| format!("{}: no {} window", o.name, CLASSES[i]))?;
                d[i] += sign * c.cpu_ns as f64;
            }
        }
        if n != [LIBS, LIBS] {
            return Err(format!(
                "a run loaded {n:?} libg/libv objects, not {LIBS} of each"
            ));
        }
        out.push(d);
    }
    if out.is_empty() {
        return Err("no measured run recorded the loader after main".into());
    }
    Ok(out)
}

/// "q1 / median / q3" in µs.
fn quartiles(v: &[f64]) -> String {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let q = |f: f64| v[((v.len() - 1) as f64 * f).round() as usize] / 1e3;
    format!("{:.0} / {:.0} / {:.0}", q(0.25), q(0.5), q(0.75))
}

fn main() {
    let runs = hundred::runs(3);
    println!(
        "after_main_ab: {LIBS} + {LIBS} dlopens; per class {ROUNDS} ldcost profiles -n {runs}, each between two blocks of {PAIRS} pairs of single runs under perf stat"
    );
    println!("load:     {}", hundred::load());
    for tool in ["cc", "perf"] {
        if !common::have(tool) {
            println!("SKIP: {tool} not installed");
            return;
        }
    }
    let Some(dir) = hundred::scratch() else {
        return;
    };
    let pairs = match build(dir.path()) {
        Ok(p) => p,
        Err(e) => {
            println!("SKIP: cannot build the programs: {e}");
            return;
        }
    };
    // The relocation variant changes what it claims: glibc's own count of its lookups.
    let reloc = &pairs[0];
    match (
        bindings(&reloc.changed, &reloc.env),
        bindings(&reloc.unchanged, &reloc.env),
    ) {
        (Ok(a), Ok(b)) if a == b + EXTRA_LOOKUPS => println!(
            "relocation variant: {a} bindings per library against {b} (LD_DEBUG=bindings, libv000.so)"
        ),
        (Ok(a), Ok(b)) => {
            println!(
                "FAIL: the relocation variant makes {a} bindings per library against {b}, not {EXTRA_LOOKUPS} more (LD_DEBUG=bindings)"
            );
            return;
        }
        (Err(e), _) | (_, Err(e)) => {
            println!("SKIP: LD_DEBUG=bindings: {e}");
            return;
        }
    }
    // The two sets' bias: the same difference in the unchanged program.
    let bias = match profile(&pairs[0].unchanged, &[], runs).and_then(|p| run_differences(&p)) {
        Ok(d) => std::array::from_fn::<f64, 3, _>(|i| {
            ldcost::stats::median_mut(&mut d.iter().map(|x| x[i]).collect::<Vec<_>>())
        }),
        Err(e) => {
            println!("FAIL: the unchanged program: {e}");
            return;
        }
    };
    let mut rows = Vec::new();
    let mut failed = false;
    for pair in &pairs {
        let c = pair.class;
        // ns: each measured run's difference (ldcost), each pair's (perf stat).
        let (mut ours, mut theirs, mut unchanged) = (Vec::new(), Vec::new(), Vec::new());
        let mut others: Vec<[f64; 3]> = Vec::new();
        // Single runs in pairs, a few ms apart (the machine's speed moves over seconds), the
        // order alternating within each block.
        let stat_pair = |theirs: &mut Vec<f64>, unchanged: &mut Vec<f64>, flip: bool| {
            for k in 0..PAIRS {
                let (a, b) = if flip ^ (k % 2 == 1) {
                    let b = perf_stat(&pair.unchanged, &pair.env)?;
                    (perf_stat(&pair.changed, &pair.env)?, b)
                } else {
                    let a = perf_stat(&pair.changed, &pair.env)?;
                    (a, perf_stat(&pair.unchanged, &pair.env)?)
                };
                theirs.push(a - b);
                unchanged.push(b);
            }
            Ok::<(), String>(())
        };
        let mut ratios = Vec::new();
        for r in 0..ROUNDS {
            let (o0, t0) = (ours.len(), theirs.len());
            if let Err(e) = stat_pair(&mut theirs, &mut unchanged, r % 2 == 1) {
                println!("SKIP: perf stat: {e}");
                return;
            }
            match profile(&pair.changed, &pair.env, runs).and_then(|p| run_differences(&p)) {
                Ok(d) => {
                    ours.extend(d.iter().map(|x| x[c]));
                    others.extend(d);
                }
                Err(e) => {
                    println!("FAIL: {}: {e}", CLASSES[c]);
                    failed = true;
                    break;
                }
            }
            if let Err(e) = stat_pair(&mut theirs, &mut unchanged, r % 2 == 0) {
                println!("SKIP: perf stat: {e}");
                return;
            }
            let t = ldcost::stats::median_mut(&mut theirs[t0..].to_vec());
            if ours.len() > o0 && t > 0.0 {
                ratios.push(ldcost::stats::median_mut(&mut ours[o0..].to_vec()) / t);
            }
        }
        if ours.is_empty() {
            continue;
        }
        // Run by run and pair by pair, each a difference within one moment; the medians
        // over the whole class, whose runs and pairs take turns.
        let at = unchanged.iter().sum::<f64>() / unchanged.len() as f64;
        let o = ldcost::stats::median_mut(&mut ours.clone());
        let t = ldcost::stats::median_mut(&mut theirs.clone());
        let off = if ratios.is_empty() {
            f64::INFINITY
        } else {
            ldcost::stats::median_mut(&mut ratios.clone()) - 1.0
        };
        let pass = off.abs() <= GOAL;
        failed |= !pass;
        println!(
            "{}: ldcost, {} runs: quartiles {} µs; perf stat, {} pairs: quartiles {} µs; the unchanged program {:.0} µs; per round, ldcost over perf stat: {}",
            CLASSES[c],
            ours.len(),
            quartiles(&ours),
            theirs.len(),
            quartiles(&theirs),
            at / 1e3,
            ratios
                .iter()
                .map(|x| format!("{x:.2}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let n = others.len() as f64;
        let leak: Vec<String> = (0..3)
            .filter(|&i| i != c)
            .map(|i| {
                format!(
                    "{} {:+.0}",
                    CLASSES[i],
                    others.iter().map(|d| d[i]).sum::<f64>() / n / 1e3
                )
            })
            .collect();
        rows.push((c, o, t, off, pass, leak.join(", ")));
    }
    println!();
    println!(
        "bias (libv − libg in the unchanged program, µs): {}",
        (0..3)
            .map(|i| format!("{} {:+.0}", CLASSES[i], bias[i] / 1e3))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!();
    println!("| class changed | ldcost's change (Σ libv − Σ libg; median run) | perf stat's change (untraced; median pair) | goal (median round) | result | ldcost's change in the other classes (µs) |");
    println!("|---|---:|---:|---|---|---|");
    for (c, o, t, off, pass, leak) in &rows {
        println!(
            "| {} | {:.0} µs | {:.0} µs | within {:.0}% | {} ({:+.1}%) | {} |",
            CLASSES[*c],
            o / 1e3,
            t / 1e3,
            GOAL * 100.0,
            if *pass { "PASS" } else { "**FAIL**" },
            off * 100.0,
            leak
        );
    }
    println!();
    println!("{}", if failed { "FAIL" } else { "PASS" });
}
