//! The report's flag on phases whose own 95% interval is wide: a phase over 5% of
//! the total whose CPU interval reaches more than 3% below or above its median is marked `*`
//! in `ldcost profile`'s phase table, with one footnote line, and `wide_interval` is true in
//! its JSON.
//!
//! | figure | oracle | bound |
//! | --- | --- | --- |
//! | the mark on each phase row of `ldcost report FIXTURE` (a saved /bin/true profile, as saved and with intervals narrowed or widened) | the rule computed here from the document's own numbers: share > 5% and ci95 outside median ± 3% | exact, per row; the footnote iff a row is marked |
//! | `wide_interval` of every phase of a live `ldcost profile -n 3 --json -` | the same rule on that phase's printed median, interval and share | exact |
//!
//! Nothing timed is asserted: the flag is arithmetic on numbers the document carries.
//! Fixture: tests/phase_flags/true.json, written by
//! `ldcost profile -n 5 --quiet-target --json tests/phase_flags/true.json /bin/true`
//! on a 2-vCPU VM.

mod common;

use common::{ldcost, skip};
use ldcost::report::schema::profile::PhaseStat;
use ldcost::report::Document;

const FOOTNOTE: &str = "* interval wider than ±3%: more runs (-n) narrow it";

/// The rule, written here apart from the library's.
fn wide(p: &PhaseStat) -> bool {
    let Some(s) = &p.task_clock_ns else {
        return false;
    };
    let m = s.median;
    p.share > 0.05 && (s.ci95.0 < 0.97 * m || s.ci95.1 > 1.03 * m)
}

fn fixture() -> Document {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/phase_flags/true.json"
    ))
    .expect("the fixture");
    serde_json::from_str(&text).expect("a document")
}

/// The phase table's rows of `ldcost report`: (phase label, the row has an interval, marked).
fn rows(doc: &Document) -> (Vec<(String, bool, bool)>, bool) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("doc.json");
    std::fs::write(&path, serde_json::to_vec(doc).expect("serialize")).expect("write");
    let out = ldcost(&["report", path.to_str().expect("utf-8 path")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let table: Vec<&str> = out
        .stdout
        .lines()
        .skip_while(|l| *l != "Phases (start-up order; ld.so start and ld.so other run in pieces between the others)")
        .skip(2)
        .take_while(|l| l.starts_with(' '))
        .collect();
    assert!(!table.is_empty(), "no phase table in:\n{}", out.stdout);
    let rows = table
        .iter()
        .map(|l| {
            let label = l.trim_start().split("  ").next().unwrap_or("").to_string();
            (label, l.contains(']'), l.contains("] *"))
        })
        .collect();
    (rows, out.stdout.lines().any(|l| l == FOOTNOTE))
}

/// Checks every row's mark against the rule on the document's single-object phases; returns
/// how many rows are marked and how many rows with an interval are not.
fn check(doc: &Document, what: &str) -> (usize, usize) {
    let p = doc.profile.as_ref().expect("a profile section");
    let (rows, footnote) = rows(doc);
    let (mut marked, mut plain) = (0, 0);
    for (label, has_ci, mark) in &rows {
        let phases: Vec<&PhaseStat> = p
            .phases
            .iter()
            .filter(|x| x.phase.label() == label)
            .collect();
        assert!(!phases.is_empty(), "{what}: row {label:?} names no phase");
        // A row collapsing several objects prints no interval and carries no mark.
        let expected = phases.len() == 1 && wide(phases[0]);
        assert_eq!(*has_ci, phases.len() == 1, "{what}: {label}");
        assert_eq!(
            *mark, expected,
            "{what}: the mark of {label} ({:?})",
            phases[0]
        );
        if *mark {
            marked += 1;
        } else if *has_ci {
            plain += 1;
        }
    }
    assert_eq!(footnote, marked > 0, "{what}: the footnote");
    (marked, plain)
}

#[test]
fn marks_follow_the_documents_own_intervals() {
    let doc = fixture();
    // As saved: some phases wide, some narrow or under 5%, so the rule is tried both ways.
    let (marked, plain) = check(&doc, "as saved");
    assert!(
        marked > 0 && plain > 0,
        "as saved: {marked} marked, {plain} not"
    );

    // Every interval narrowed to ±2.9% of its median: nothing is marked, no footnote.
    let mut narrow = doc.clone();
    for ph in &mut narrow.profile.as_mut().expect("profile").phases {
        if let Some(s) = ph.task_clock_ns.as_mut() {
            s.ci95 = (s.median * 0.971, s.median * 1.029);
        }
    }
    assert_eq!(check(&narrow, "narrowed to ±2.9%").0, 0);

    // Only the upper end past 3.1%: marked when over 5% of the total, never under.
    let mut upper = narrow.clone();
    for ph in &mut upper.profile.as_mut().expect("profile").phases {
        if let Some(s) = ph.task_clock_ns.as_mut() {
            s.ci95.1 = s.median * 1.031;
        }
    }
    let (marked, plain) = check(&upper, "upper end at +3.1%");
    assert!(
        marked > 0 && plain > 0,
        "upper: {marked} marked, {plain} not"
    );
}

#[test]
fn json_flag_is_the_arithmetic_on_each_phase() {
    let name = "json_flag_is_the_arithmetic_on_each_phase";
    let out = ldcost(&[
        "profile",
        "-n",
        "3",
        "--no-ld-debug",
        "--quiet-target",
        "--json",
        "-",
        "/bin/true",
    ]);
    if out.code == 8 {
        skip(name, "ldcost is refused ptrace or perf here (exit 8)");
        return;
    }
    assert_eq!(out.code, 0, "{}", out.stderr);
    let doc: Document = serde_json::from_str(&out.stdout).expect("a JSON document");
    let p = doc.profile.as_ref().expect("a profile section");
    assert!(!p.phases.is_empty());
    for ph in &p.phases {
        assert_eq!(ph.wide_interval, wide(ph), "{ph:?}");
    }
    // The raw JSON carries the key on every phase (not only through serde's default).
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let phases = v["profile"]["phases"].as_array().expect("phases");
    assert!(phases.iter().all(|x| x["wide_interval"].is_boolean()));
}
