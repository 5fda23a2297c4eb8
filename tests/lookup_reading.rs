//! The lookup sentence of `ldcost deps` is derived from the numbers it prints, so the
//! numbers beside it cannot refute it.
//!
//! Oracle: the same run's JSON lookup model (`deps.lookups`: lookups, probes, unresolved).
//! - `deps /bin/ls`: "Each start-up lookup probes X objects on average (P hash-table probes
//!   for L lookups ...)" has P and L equal to the JSON's, and X = P / L to one decimal;
//! - `deps --object-only /bin/ls`: the libraries are out of the scope, so every lookup is
//!   unresolved there (the JSON says so); the text must not average probes over a scope of one
//!   object nor call the lookups undefined weak symbols (it said "0.6 objects probed on
//!   average" then "16 find no definition (undefined weak symbols) and probe every object"),
//!   and says the lookups are not modelled.

mod common;

use common::ldcost;

fn model(args: &[&str]) -> (String, serde_json::Value) {
    let mut a = vec!["deps"];
    a.extend_from_slice(args);
    let text = ldcost(&a);
    assert_eq!(text.code, 0, "{}", text.stderr);
    let mut j = vec!["deps", "--json", "-"];
    j.extend_from_slice(args);
    let json = ldcost(&j);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).expect("deps JSON");
    (text.stdout, doc["deps"]["lookups"].clone())
}

#[test]
fn the_probe_average_is_the_printed_probes_over_the_printed_lookups() {
    let (text, m) = model(&["/bin/ls"]);
    let (lookups, probes) = (
        m["lookups"].as_u64().unwrap(),
        m["probes"].as_u64().unwrap(),
    );
    assert!(lookups > 0, "ls makes start-up lookups: {m}");
    let line = text
        .lines()
        .find(|l| l.contains("objects on average"))
        .unwrap_or_else(|| panic!("no probe sentence in:\n{text}"));
    let expect = format!(
        "probes {:.1} objects on average ({probes} hash-table probes for {lookups} lookups",
        probes as f64 / lookups as f64
    );
    assert!(line.contains(&expect), "{line:?} should contain {expect:?}");
}

#[test]
fn object_only_does_not_model_lookups_over_a_scope_of_one() {
    let (text, m) = model(&["--object-only", "/bin/ls"]);
    let lookups = m["lookups"].as_u64().unwrap();
    assert!(lookups > 0, "ls's own relocations name symbols: {m}");
    // The oracle for "out of scope": with its libraries left out, nothing in ls's scope
    // answers its lookups.
    assert_eq!(m["unresolved"].as_u64(), Some(lookups), "{m}");
    assert!(
        !text.contains("objects on average") && !text.contains("undefined weak"),
        "a probe average or weak symbols over a scope of one object:\n{text}"
    );
    let expect = format!("Where the {lookups} start-up lookups are answered is not modelled");
    assert!(text.contains(&expect), "no {expect:?} in:\n{text}");
}
