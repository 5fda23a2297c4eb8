//! CPU feature detection as a category and a phase, on a trivial
//! program. The target is `int main(){return 0;}`, built here static and dynamic.
//!
//! - The phase: cut in every run (ld.so's `init_cpu_features` entry to return with libc6-dbg's
//!   debug file; a static program's `__tunables_init` return to `_dl_relocate_static_pie`
//!   entry), in its place in the sequence of segments, charged to the object that runs it; not
//!   cut, and said so, without ld.so's debug symbols; absent, and said so, in a stripped static
//!   program.
//! - The note: present, and naming the hypervisor exit exactly when /proc/cpuinfo has the
//!   `hypervisor` flag (the oracle); the same sentence in the text and the JSON.
//! - Sampled (`--sample`, root): (a) the `cpu_features` category is named in the exec samples
//!   (ldcost's own ptrace stops are out of the shares already); (b) the category and the phase
//!   agree on the same samples: ≥ 70% of the category's samples fall in the phase's spans and
//!   the category leads the phase's samples (the names and the breakpoints are independent),
//!   and the measured phase share and the category share are within 30 points;
//!   (c) `perf record -a -g` of a shell loop of the program, classified in
//!   tests/common/cpu_oracle.rs from the function names alone, sees CPU feature detection too.
//!   How large it is — the top category, ≥ 10%, within 5 points of perf — is
//!   the host's, not ldcost's: each `cpuid` is a hypervisor exit whose price the host sets
//!   (from ~50 µs per exec on an AMD EPYC host, `handle_amd`, 10-17% of the samples, behind
//!   exit teardown and faults in the static build, to ~460 µs on an Intel host, 4× the next
//!   category). So those magnitudes are benches/profile_checks.rs's
//!   `cpu features` rows, which print the rank and the share beside perf's.
//!
//! Measured on the development VM (2 vCPUs, AMD EPYC guest, glibc 2.36, 10 kHz): phase 0.17-0.20
//! ms, 31-33% of the phases (dynamic), 47-49% (static); category 9.1% of all samples, 21-31%
//! without exec: kernel; perf record of a loop 23% (dynamic), 37% (static; 43% with the cpuid
//! inlined into `__libc_start_main`, which has no name of its own and is `application`).
//! With ldcost's own ptrace stops set apart (`instrumentation`, kernel 6.18):
//! (a) is the top category among all the exec samples less exec: kernel, nothing else left out,
//! at 4× the next (static 151 vs exit teardown 34, dynamic 164 vs ld.so mapping 41; `kernel:
//! other`, which held the stops and was left out, is now 7 and 3 samples); the test prints it.
//! Shares less exec: kernel 53.9% (static) and 47.3% (dynamic), 49.0% and 40.7% with the stops
//! counted; perf record of a loop 72.6% and 57.8%.
//!
//! Needs cc and a static libc; the sampled tests need root and perf. Otherwise each test prints
//! `SKIP name: reason`. Artefacts in `target/tmp/cpu_features/`.

mod common;
#[path = "common/cpu_oracle.rs"]
mod cpu_oracle;
#[path = "common/perf_record.rs"]
#[allow(dead_code)]
mod perf_record;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use common::{running_as_root, skip, tools};
use cpu_oracle::{build, ldcost_share, perf_loop};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");

fn workdir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("cpu_features")
}

/// The two builds, once per test binary.
fn programs() -> &'static Result<(PathBuf, PathBuf), String> {
    static P: OnceLock<Result<(PathBuf, PathBuf), String>> = OnceLock::new();
    P.get_or_init(|| build(&workdir()))
}

/// `ldcost profile OPTIONS --json FILE -- prog`: (text, JSON).
fn profile(prog: &Path, options: &[&str], tag: &str) -> (String, Value) {
    let json = workdir().join(format!("{tag}.json"));
    let out = std::process::Command::new(BIN)
        .args([
            "profile",
            "--detail",
            "--warmup",
            "0",
            "--no-ld-debug",
            "--quiet-target",
        ])
        .args(options)
        .arg("--json")
        .arg(&json)
        .arg("--")
        .arg(prog)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_BIND_NOW")
        .output()
        .expect("run ldcost");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "ldcost {options:?} {} failed: {}\n{text}",
        prog.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::write(workdir().join(format!("{tag}.txt")), &text);
    let doc = serde_json::from_slice(&std::fs::read(&json).expect("JSON written")).expect("JSON");
    (text, doc)
}

/// The `hypervisor` flag of /proc/cpuinfo: the oracle for the note's last sentence.
fn hypervisor_flag() -> bool {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|w| w == "hypervisor"))
}

/// The phases of each measured run, in order, as their JSON names.
fn sequences(doc: &Value) -> Vec<Vec<String>> {
    doc["profile"]["raw"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["instrumentation"] != "none")
        .map(|r| {
            r["segments"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["phase"].as_str().unwrap().to_string())
                .collect()
        })
        .collect()
}

fn ready(name: &str) -> Option<&'static (PathBuf, PathBuf)> {
    if !tools(name, &["cc"]) {
        return None;
    }
    match programs() {
        Ok(p) => Some(p),
        Err(e) => {
            skip(name, e);
            None
        }
    }
}

#[test]
fn the_phase_is_cut_in_every_run_where_the_code_runs() {
    let name = "the_phase_is_cut_in_every_run_where_the_code_runs";
    let Some((stat, dynamic)) = ready(name) else {
        return;
    };
    let debug = dynamic_has_debug_symbols();
    for (prog, tag, before) in [
        (stat, "static", "entry-to-main"),
        (dynamic, "dynamic", "ldso-mapping"),
    ] {
        if tag == "dynamic" && !debug {
            skip(name, "no debug file for ld.so (install libc6-dbg)");
            continue;
        }
        // Reference runs too: the coarse runs carry the phase as well.
        let (text, doc) = profile(prog, &["-n", "2"], &format!("cut-{tag}"));
        let seqs = sequences(&doc);
        assert!(seqs.len() >= 2, "{tag}: measured and coarse runs: {seqs:?}");
        for seq in &seqs {
            // Exactly once, right after the part of start-up that precedes it, and the same
            // phase resumes after it (it is cut out of "ld.so start..." or "entry to main").
            let at: Vec<usize> = (0..seq.len())
                .filter(|&i| seq[i] == "cpu-features")
                .collect();
            assert_eq!(at.len(), 1, "{tag}: one CPU-feature segment: {seq:?}");
            let i = at[0];
            assert_eq!(&seq[..i], ["kernel-exec", before], "{tag}: {seq:?}");
            assert_eq!(seq[i + 1], before, "{tag}: {seq:?}");
        }
        for r in doc["profile"]["raw"].as_array().unwrap() {
            if r["instrumentation"] != "none" {
                assert_eq!(r["cpu_features"]["how"], "cut", "{tag}: {r:#?}");
            }
        }
        // Charged to the object that runs it: ld.so, or the static executable itself.
        let phase = doc["profile"]["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["phase"] == "cpu-features")
            .expect("the phase");
        let object = phase["object"].as_str().unwrap();
        if tag == "static" {
            assert_eq!(Path::new(object), prog, "{tag}");
        } else {
            assert!(object.contains("ld-linux"), "{tag}: {object}");
        }
        assert!(
            text.contains("\n CPU feature detection "),
            "{tag}: the phase row:\n{text}"
        );
    }
}

/// Whether ld.so's build-id debug file is installed (readelf -n gives the build-id).
fn dynamic_has_debug_symbols() -> bool {
    let ldso = std::fs::canonicalize("/lib64/ld-linux-x86-64.so.2").unwrap_or_default();
    let notes = common::stdout_of("readelf", &["-n", ldso.to_str().unwrap_or("")]);
    let Some(id) = notes
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
    else {
        return false;
    };
    Path::new(&format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        &id[..2],
        &id[2..]
    ))
    .is_file()
}

#[test]
fn without_symbols_the_report_says_the_phase_is_not_cut() {
    let name = "without_symbols_the_report_says_the_phase_is_not_cut";
    let Some((stat, dynamic)) = ready(name) else {
        return;
    };
    // ld.so without its debug file: the breakpoint has nowhere to go.
    let empty = workdir().join("no-debug-root");
    std::fs::create_dir_all(&empty).unwrap();
    let (text, doc) = profile(
        dynamic,
        &[
            "-n",
            "1",
            "--no-reference",
            "--debug-root",
            empty.to_str().unwrap(),
        ],
        "nodebug",
    );
    assert!(!sequences(&doc)[0].contains(&"cpu-features".to_string()));
    let raw = &doc["profile"]["raw"][0]["cpu_features"];
    assert_eq!(raw["how"], "not-cut", "{raw}");
    assert!(
        raw["where"].as_str().unwrap().contains("debug symbols"),
        "{raw}"
    );
    let note = doc["profile"]["cpu_features_note"]
        .as_str()
        .expect("a note");
    assert!(note.contains("Not cut into a phase"), "{note}");
    assert!(
        text.contains(note),
        "the text says the JSON's note:\n{text}"
    );

    // A stripped static program: nothing named to cut at, and nothing said in the text.
    let stripped = workdir().join("cpuft_stripped");
    std::fs::copy(stat, &stripped).unwrap();
    assert!(std::process::Command::new("strip")
        .arg(&stripped)
        .status()
        .is_ok_and(|s| s.success()));
    let (_, doc) = profile(&stripped, &["-n", "1", "--no-reference"], "stripped");
    assert!(!sequences(&doc)[0].contains(&"cpu-features".to_string()));
    assert_eq!(doc["profile"]["raw"][0]["cpu_features"]["how"], "absent");
}

#[test]
fn the_note_names_the_hypervisor_exit_exactly_on_a_virtual_machine() {
    let name = "the_note_names_the_hypervisor_exit_exactly_on_a_virtual_machine";
    let Some((stat, _)) = ready(name) else {
        return;
    };
    let (text, doc) = profile(stat, &["-n", "3", "--no-reference"], "note");
    let share = doc["profile"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["phase"] == "cpu-features")
        .map(|p| p["share"].as_f64().unwrap())
        .sum::<f64>();
    let note = doc["profile"]["cpu_features_note"].as_str();
    if share < ldcost::profile::cpu_features::SIGNIFICANT {
        // Not significant on this machine (bare metal, or a fast cpuid): no note to check.
        assert!(note.is_none(), "{note:?} at a share of {share}");
        return skip(
            name,
            &format!("CPU feature detection is only {share:.3} here"),
        );
    }
    let note = note.expect("a significant phase has its note");
    assert!(
        text.contains(note),
        "the text says the JSON's note:\n{text}"
    );
    assert!(
        note.contains(&format!("{:.1}% of the phases", 100.0 * share)),
        "the note's share is the phase's ({share}): {note}"
    );
    assert_eq!(
        note.contains("hypervisor exit"),
        hypervisor_flag(),
        "the hypervisor sentence iff /proc/cpuinfo's flag: {note}"
    );
}

/// A sampled profile of each build, once.
fn sampled() -> &'static Result<[(Value, String); 2], String> {
    static S: OnceLock<Result<[(Value, String); 2], String>> = OnceLock::new();
    S.get_or_init(|| {
        let (stat, dynamic) = programs().as_ref().map_err(|e| e.clone())?;
        let run = |p: &PathBuf, tag: &str| {
            let (text, doc) = profile(
                p,
                &[
                    "-n",
                    "3",
                    "--no-reference",
                    "--sample",
                    "--sample-runs",
                    "30",
                ],
                &format!("sampled-{tag}"),
            );
            (doc, text)
        };
        Ok([run(stat, "static"), run(dynamic, "dynamic")])
    })
}

fn sampling_ready(name: &str) -> Option<&'static [(Value, String); 2]> {
    if !running_as_root() {
        skip(name, "sampling the process tree system-wide needs root");
        return None;
    }
    if !tools(name, &["cc", "perf"]) {
        return None;
    }
    if !dynamic_has_debug_symbols() {
        skip(name, "no debug file for ld.so (install libc6-dbg)");
        return None;
    }
    match sampled() {
        Ok(s) => Some(s),
        Err(e) => {
            skip(name, e);
            None
        }
    }
}

#[test]
fn sampled_cpu_feature_detection_is_the_top_category_and_agrees_with_its_phase() {
    let name = "sampled_cpu_feature_detection_is_the_top_category_and_agrees_with_its_phase";
    let Some(runs) = sampling_ready(name) else {
        return;
    };
    for ((doc, text), tag) in runs.iter().zip(["static", "dynamic"]) {
        eprintln!("{tag}:\n{text}");
        // (a) Named, with samples. Its rank and size are the host's (module docs): printed.
        let (share, top, which) = ldcost_share(doc).expect("a breakdown");
        eprintln!("{tag}: cpu_features {:.1}% of the exec samples less exec: kernel; the top category: {top} (top: {which})", 100.0 * share);
        // (b) The same samples, by name and by breakpoint: in the phase's spans and named.
        let cats = doc["profile"]["breakdown"]["categories"]
            .as_array()
            .unwrap();
        let (mut named, mut named_in, mut in_phase) = (0u64, 0u64, 0u64);
        // The phase's samples of every other category, by category.
        let mut others_in: Vec<(String, u64)> = Vec::new();
        for c in cats {
            let mut here_n = 0;
            for (label, n) in c["phases"].as_object().unwrap() {
                let n = n.as_u64().unwrap();
                let here = label.starts_with("CPU feature detection");
                if c["category"] == "cpu_features" {
                    named += n;
                    named_in += if here { n } else { 0 };
                }
                in_phase += if here { n } else { 0 };
                here_n += if here { n } else { 0 };
            }
            if c["category"] != "cpu_features" {
                others_in.push((c["category"].as_str().unwrap_or("?").to_string(), here_n));
            }
        }
        let next_in = others_in.iter().max_by_key(|(_, n)| *n).cloned();
        assert!(
            named > 0 && in_phase > 0,
            "{tag}: {named} named, {in_phase} in the phase"
        );
        // Most of the category's samples fall in the phase. Where a `cpuid` is cheap (an AMD
        // EPYC host: ~10 named samples) the count is small, so the floor is 70%: at a
        // true 95%, 10 samples fall under it about one time in a thousand.
        assert!(
            named_in * 10 >= named * 7,
            "{tag}: {named_in} of the category's {named} samples in the phase, want ≥ 70%"
        );
        // The phase's own samples are mostly the category's; a fixed fraction is a count the
        // host moves (on an AMD EPYC host the phase is ~40 µs, 17 samples under load, 10
        // named: 59%), so the category must lead the phase: ahead of the next category, and
        // whether by twice (the usual margin, 2.4-4.8x on Intel hosts) is printed.
        let (next_cat, next_n) = next_in.unwrap_or_default();
        assert!(
            named_in > next_n,
            "{tag}: {named_in} of the phase's {in_phase} samples named, the next category \
             {next_cat} has {next_n}: want the category ahead of the next"
        );
        if named_in < 2 * next_n {
            eprintln!(
                "{tag}: the category leads its phase by less than twice: {named_in} named, \
                 {next_cat} {next_n}"
            );
        }
        // The measured phase share (of the phases after exec) and the category share (of the
        // samples after exec): both well above noise, and within a wide margin of each other.
        let phases = doc["profile"]["phases"].as_array().unwrap();
        let sum = |f: &dyn Fn(&Value) -> bool| -> f64 {
            phases
                .iter()
                .filter(|p| f(p))
                .filter_map(|p| p["task_clock_ns"]["median"].as_f64())
                .sum()
        };
        let phase =
            sum(&|p| p["phase"] == "cpu-features") / sum(&|p| p["phase"] != "kernel-exec").max(1.0);
        eprintln!(
            "{tag}: phase {:.1}%, category {:.1}%",
            100.0 * phase,
            100.0 * share
        );
        assert!(
            phase > 0.0 && share > 0.0,
            "{tag}: phase {phase}, category {share}"
        );
        assert!(
            (phase - share).abs() <= 0.30,
            "{tag}: phase {phase} and category {share} more than 30 points apart"
        );
    }
}

#[test]
fn perf_record_of_a_loop_sees_cpu_feature_detection_too() {
    let name = "perf_record_of_a_loop_sees_cpu_feature_detection_too";
    let Some(runs) = sampling_ready(name) else {
        return;
    };
    let Ok((stat, dynamic)) = programs() else {
        return;
    };
    for ((prog, (doc, _)), tag) in [stat, dynamic].iter().zip(runs).zip(["static", "dynamic"]) {
        let perf = match perf_loop(&workdir(), prog, 300, "20000") {
            Ok(p) => p,
            Err(e) => return skip(name, &e),
        };
        let (ours, _, _) = ldcost_share(doc).expect("a breakdown");
        eprintln!(
            "{tag}: perf {} of {} samples ({:.1}%), ldcost {:.1}%",
            perf.cpu,
            perf.kept,
            100.0 * perf.share(),
            100.0 * ours
        );
        assert!(
            perf.kept >= 500,
            "{tag}: perf kept only {} samples",
            perf.kept
        );
        assert!(
            perf.cpu > 0,
            "{tag}: perf puts no sample in CPU feature detection ({:.1}%)",
            100.0 * perf.share()
        );
    }
}
