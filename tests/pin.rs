//! The exec runs put ldcost and the target on one CPU; `--no-pin` leaves them to the
//! scheduler (src/trace/pin.rs says why: a ptrace stop costs ~3 µs instead of ~15 µs on an
//! idle VM, a figure for `cargo bench --bench overhead`, not for a test).
//!
//! | case | expectation |
//! | --- | --- |
//! | `profile -n 1 --json FILE -- grep Cpus_allowed_list /proc/self/status` | the target's own line names exactly one CPU, one the test process may run on; the JSON's `profile.pinned_cpu` and the report's header name that CPU |
//! | the same with `--no-pin` | the target's line equals the test process's own; `pinned_cpu` is `null` and the header says "not pinned" |
//! | a document without `pinned_cpu` (written before it existed) | `report` reads it and prints no pinning line |
//!
//! The oracle is the kernel's `/proc/self/status`, read by `grep` inside the target. With one
//! allowed CPU the two cases cannot differ: SKIP. Profiling refused (exit 8): SKIP.

mod common;

use common::{ldcost, skip};

fn allowed_list(status: &str) -> Option<String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

/// The CPUs in a list such as `0-1,4`.
fn cpus(list: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap()),
            None => out.push(part.parse().unwrap()),
        }
    }
    out
}

/// One profile of the target's own `grep Cpus_allowed_list /proc/self/status`: the target's
/// list, the report's text and the JSON document (`None`: profiling refused here).
struct Pinned {
    list: String,
    text: String,
    doc: serde_json::Value,
}

fn profile_grep(extra: &[&str]) -> Option<Pinned> {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("p.json");
    let mut args = extra.to_vec();
    args.extend([
        "profile",
        "--detail",
        "-n",
        "1",
        "--no-reference",
        "--no-ld-debug",
        "--json",
        json.to_str().unwrap(),
        "--",
        "/bin/grep",
        "Cpus_allowed_list",
        "/proc/self/status",
    ]);
    let out = ldcost(&args);
    if out.code == 8 {
        return None;
    }
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The target's output is shown once (the first measured run's), before the report.
    let list = allowed_list(&out.stdout);
    assert!(list.is_some(), "no line of the target's in {}", out.stdout);
    let doc = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    Some(Pinned {
        list: list.unwrap(),
        text: out.stdout,
        doc,
    })
}

#[test]
fn exec_runs_are_pinned_to_one_cpu_unless_told_not_to() {
    let test = "exec_runs_are_pinned_to_one_cpu_unless_told_not_to";
    let own = allowed_list(&std::fs::read_to_string("/proc/self/status").unwrap()).unwrap();
    let mine = cpus(&own);
    if mine.len() < 2 {
        skip(
            test,
            "this process may run on one CPU only: pinned and unpinned look alike",
        );
        return;
    }
    let Some(pinned) = profile_grep(&[]) else {
        skip(
            test,
            "ldcost profile is refused here (exit 8: ptrace or perf)",
        );
        return;
    };
    let one = cpus(&pinned.list);
    assert_eq!(
        one.len(),
        1,
        "the target may run on {}, not one CPU",
        pinned.list
    );
    assert!(
        mine.contains(&one[0]),
        "{} is outside this process's {own}",
        pinned.list
    );
    // The document and the report name the CPU the target itself read.
    assert_eq!(
        pinned.doc["profile"]["pinned_cpu"].as_u64(),
        Some(u64::from(one[0])),
        "profile.pinned_cpu vs the target's Cpus_allowed_list {}",
        pinned.list
    );
    let header = format!("exec runs pinned to CPU {} (", one[0]);
    assert!(
        pinned.text.contains(&header),
        "no {header:?} in {}",
        pinned.text
    );

    let free = profile_grep(&["--no-pin"]).unwrap();
    assert_eq!(
        free.list, own,
        "with --no-pin the target's mask is the launcher's"
    );
    let field = free.doc["profile"].get("pinned_cpu");
    assert_eq!(
        field,
        Some(&serde_json::Value::Null),
        "--no-pin: pinned_cpu"
    );
    assert!(
        free.text.contains("exec runs not pinned"),
        "--no-pin: {}",
        free.text
    );
}

/// A document written before `pinned_cpu` existed still reads, and its report claims nothing
/// about pinning. Made from a real one with the field removed; skips where profiling is
/// refused.
#[test]
fn documents_without_the_field_still_read() {
    let test = "documents_without_the_field_still_read";
    let Some(mut p) = profile_grep(&[]) else {
        skip(
            test,
            "ldcost profile is refused here (exit 8: ptrace or perf)",
        );
        return;
    };
    let removed = p.doc["profile"]
        .as_object_mut()
        .unwrap()
        .remove("pinned_cpu");
    assert!(removed.is_some(), "the new document has pinned_cpu");
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.json");
    std::fs::write(&old, serde_json::to_string(&p.doc).unwrap()).unwrap();
    let out = ldcost(&["report", "--detail", old.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("ldcost profile"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("exec runs pinned") && !out.stdout.contains("exec runs not pinned"),
        "an old document claims a pinning: {}",
        out.stdout
    );
}

#[test]
fn cpu_lists_parse() {
    assert_eq!(cpus("0-1,4"), vec![0, 1, 4]);
    assert_eq!(cpus("3"), vec![3]);
}
