//! ldcost's own ptrace stops are the `instrumentation` category and nothing else
//! (docs/taxonomy.md, "ldcost's own ptrace stops").
//!
//! A sampled profile of `int main(){return 0;}` (static and dynamic), with `--folded` and
//! `--json`. The oracle is an independent reading of the folded stacks ldcost writes, from the
//! kernel frame names alone: a stack with a breakpoint trap (`asm_exc_int3`/`exc_int3`), a
//! single-step trap (`asm_exc_debug`/`exc_debug*`) or a ptrace stop (`ptrace_stop`,
//! `ptrace_notify`) is one of ldcost's stops, and one with the sampler's side-band record
//! (`perf_event_mmap`, `perf_event_exec`, `perf_event_comm`) is the sampler's. Checked:
//! - there are such samples (every sampled run stops at exec, at its breakpoints and at exit);
//! - every one of them is under the `instrumentation` category of the folded file, none under
//!   another (an interrupt taken inside a stop is interrupt work, `kernel: other`, and is left
//!   out of this reading);
//! - the JSON counts them apart (`breakdown.instrumentation.samples` = the folded file's
//!   `instrumentation` samples), no category of the breakdown is `instrumentation`, and the
//!   categories add up to `breakdown.samples` = the folded file's other samples.
//!
//! Needs root (system-wide sampling) and cc; otherwise `SKIP name: reason`.

mod common;

use common::{cc, ldcost, running_as_root, skip, tools, write};
use std::collections::BTreeMap;

const TRIVIAL: &str = "int main(void) { return 0; }\n";

/// Samples per folded category, and the samples the frame names say are ldcost's stops, per
/// folded category.
#[derive(Debug, Default)]
struct Reading {
    by_category: BTreeMap<String, u64>,
    stops_by_category: BTreeMap<String, u64>,
}

/// Reads folded text (`section;category;frames… count`, kernel frames suffixed `_[k]`).
fn read_folded(text: &str) -> Reading {
    let mut r = Reading::default();
    for line in text.lines() {
        let Some((stack, n)) = line.rsplit_once(' ') else {
            continue;
        };
        let n: u64 = n.parse().expect("a count");
        let mut parts = stack.split(';');
        let (_section, category) = (parts.next(), parts.next().unwrap_or("").to_string());
        let kernel: Vec<&str> = parts
            .filter_map(|f| f.strip_suffix("_[k]"))
            .map(|f| f.split('.').next().unwrap_or(f))
            .collect();
        *r.by_category.entry(category.clone()).or_default() += n;
        let interrupt = kernel
            .iter()
            .any(|f| f.starts_with("asm_sysvec_") || *f == "asm_common_interrupt");
        let stop = kernel.iter().any(|f| {
            matches!(
                *f,
                "asm_exc_int3"
                    | "exc_int3"
                    | "asm_exc_debug"
                    | "exc_debug"
                    | "exc_debug_user"
                    | "ptrace_stop"
                    | "ptrace_notify"
                    // The sampler's side-band records, written from the target's mmap/exec.
                    | "perf_event_mmap"
                    | "perf_event_exec"
                    | "perf_event_comm"
            )
        });
        if stop && !interrupt {
            *r.stops_by_category.entry(category).or_default() += n;
        }
    }
    r
}

fn check(name: &str, cc_args: &[&str]) {
    if !running_as_root() {
        return skip(name, "system-wide sampling (--sample) needs root");
    }
    if !tools(name, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "t.c", TRIVIAL);
    let mut args = vec!["-O2", "-o", "trivial", "t.c"];
    args.extend_from_slice(cc_args);
    cc(dir.path(), &args);
    let (json, folded) = (dir.path().join("p.json"), dir.path().join("p.folded"));
    let exe = dir.path().join("trivial");
    let out = ldcost(&[
        "profile",
        "-n",
        "2",
        "--no-reference",
        "--no-ld-debug",
        "--quiet-target",
        "--sample",
        "--sample-runs",
        "20",
        "--json",
        json.to_str().unwrap(),
        "--folded",
        folded.to_str().unwrap(),
        "--",
        exe.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = read_folded(&std::fs::read_to_string(&folded).unwrap());
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let b = &doc["profile"]["breakdown"];
    let own = b["instrumentation"]["samples"]
        .as_u64()
        .expect("instrumentation.samples");
    let stops: u64 = r.stops_by_category.values().sum();
    eprintln!(
        "{name}: folded {:?}; stops by the frame names {:?}; JSON instrumentation {own}, samples {}",
        r.by_category, r.stops_by_category, b["samples"]
    );
    assert!(stops > 0, "{name}: no ptrace stop in the folded stacks");
    let elsewhere: BTreeMap<&String, &u64> = r
        .stops_by_category
        .iter()
        .filter(|(c, _)| c.as_str() != "instrumentation")
        .collect();
    assert!(
        elsewhere.is_empty(),
        "{name}: ldcost's own stops counted in the target's categories: {elsewhere:?}"
    );
    let folded_own = r.by_category.get("instrumentation").copied().unwrap_or(0);
    assert!(
        folded_own >= stops,
        "{name}: {folded_own} instrumentation samples, {stops} stops"
    );
    assert_eq!(own, folded_own, "{name}: JSON and folded file disagree");
    assert!(
        out.stdout.contains(&format!(
            "ldcost's own ptrace stops and sampler records: {own} samples"
        )),
        "{name}: the text says it:\n{}",
        out.stdout
    );
    let cats = b["categories"].as_array().expect("categories");
    assert!(cats.iter().all(|c| c["category"] != "instrumentation"));
    let sum: u64 = cats.iter().map(|c| c["samples"].as_u64().unwrap()).sum();
    let rest: u64 = r.by_category.values().sum::<u64>() - folded_own;
    assert_eq!(sum, b["samples"].as_u64().unwrap());
    assert_eq!(sum, rest, "{name}: the target's samples, folded and JSON");
}

#[test]
fn static_program_stops_are_instrumentation_only() {
    check(
        "static_program_stops_are_instrumentation_only",
        &["-static"],
    );
}

#[test]
fn dynamic_program_stops_are_instrumentation_only() {
    check("dynamic_program_stops_are_instrumentation_only", &[]);
}

#[test]
fn folded_reading() {
    let text = "exec;instrumentation;main;asm_exc_int3_[k];exc_int3_[k] 3\n\
                exec;kernel: other;main;asm_exc_int3_[k];ptrace_stop_[k];asm_sysvec_apic_timer_interrupt_[k] 2\n\
                exec;exec: kernel;x;bprm_execve_[k];ptrace_notify_[k];ptrace_stop.isra.0_[k] 4\n\
                exec;application;main 5\n";
    let r = read_folded(text);
    assert_eq!(r.by_category["application"], 5);
    assert_eq!(r.stops_by_category["instrumentation"], 3);
    assert_eq!(r.stops_by_category["exec: kernel"], 4);
    assert!(!r.stops_by_category.contains_key("kernel: other"));
}
