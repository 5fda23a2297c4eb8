//! Every JSON document ldcost writes, validated against the JSON Schema files in docs/
//! (docs/profile.schema.json for `deps`/`profile` documents, docs/comparison.schema.json for
//! `compare`/`diff`), written from docs/json-schema.md and checked here by an independent
//! validator (the `jsonschema` crate). The schemas say `additionalProperties: false` wherever
//! the docs list every field, so a field the docs do not mention fails here.
//!
//! | document | made by |
//! | --- | --- |
//! | deps | `deps /bin/ls --json` (no privilege) |
//! | profile | plain, `--fork --child exit`, `--sample --fork`, `--no-reference`, `--no-ld-debug`, `--fork --no-exec` |
//! | comparison | `compare --json` (with `--fork`, `--save-base`), `diff --format json` of two different targets |
//!
//! Profiling needs ptrace and perf_event_open: where ldcost is refused (exit 8) the tests print
//! `SKIP` (a failure under LDCOST_REQUIRE_ALL).

mod common;

use std::path::Path;

use common::{ldcost, skip};
use serde_json::Value;

fn schema(name: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    jsonschema::meta::validate(&value).unwrap_or_else(|e| panic!("{name} is no JSON Schema: {e}"));
    jsonschema::draft202012::new(&value).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Every way `doc` breaks the schema, one line each (path in the document: what).
fn violations(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| {
            let mut what = e.to_string();
            what.truncate(300);
            format!("{}: {what}", e.instance_path())
        })
        .collect()
}

fn assert_valid(schema_name: &str, what: &str, doc: &Value) {
    let errors = violations(&schema(schema_name), doc);
    assert!(
        errors.is_empty(),
        "{what} does not match docs/{schema_name} ({} violations):\n  {}",
        errors.len(),
        errors
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// `ldcost ARGS --json FILE`'s document, or None (after a SKIP) when profiling is refused.
fn document(test: &str, args: &[&str]) -> Option<Value> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("doc.json");
    let mut all = args.to_vec();
    all.extend(["--json", path.to_str().unwrap()]);
    let o = ldcost(&all);
    if o.code == 8 {
        skip(
            test,
            "ldcost profile is refused here (exit 8: ptrace or perf)",
        );
        return None;
    }
    assert_eq!(o.code, 0, "ldcost {}: {}", all.join(" "), o.stderr);
    Some(read(&path))
}

fn deps_ls() -> Value {
    let o = ldcost(&["deps", "/bin/ls", "--json", "-"]);
    assert_eq!(o.code, 0, "deps /bin/ls: {}", o.stderr);
    serde_json::from_str(&o.stdout).expect("deps --json - is JSON")
}

#[test]
fn deps_document_matches_the_schema() {
    assert_valid("profile.schema.json", "deps /bin/ls", &deps_ls());
}

fn profile_matches(test: &str, extra: &[&str], sections: &[&str]) {
    let mut args = vec!["profile", "/bin/true", "-n", "2", "--quiet-target"];
    args.extend(extra);
    let Some(doc) = document(test, &args) else {
        return;
    };
    // A count is written as an integer (`covered`: `3`, not `3.0`). JSON Schema calls 3.0
    // an integer too, so this is checked on the text's form, not by the schema.
    for section in ["profile", "fork"] {
        if let Some(c) = doc
            .get(section)
            .and_then(|s| s.get("breakdown"))
            .and_then(|b| b.get("covered"))
        {
            assert!(
                c.is_u64(),
                "{test}: {section}.breakdown.covered is {c}, not an integer"
            );
        }
    }
    for s in sections {
        assert!(doc.get(*s).is_some(), "{test}: the document has `{s}`");
    }
    assert_valid(
        "profile.schema.json",
        &format!("profile {}", extra.join(" ")),
        &doc,
    );
}

#[test]
fn plain_profile_document_matches_the_schema() {
    profile_matches(
        "plain_profile_document_matches_the_schema",
        &[],
        &["profile", "deps", "machine"],
    );
}

#[test]
fn fork_profile_document_matches_the_schema() {
    profile_matches(
        "fork_profile_document_matches_the_schema",
        &["--fork=200", "--child", "exit", "--no-ld-debug"],
        &["profile", "fork"],
    );
}

#[test]
fn sampled_profile_document_matches_the_schema() {
    profile_matches(
        "sampled_profile_document_matches_the_schema",
        &[
            "--sample",
            "--sample-runs",
            "5",
            "--fork=200",
            "--no-ld-debug",
        ],
        &["profile", "fork"],
    );
}

#[test]
fn no_reference_profile_document_matches_the_schema() {
    profile_matches(
        "no_reference_profile_document_matches_the_schema",
        &["--no-reference", "--no-ld-debug"],
        &["profile"],
    );
}

#[test]
fn no_ld_debug_profile_document_matches_the_schema() {
    profile_matches(
        "no_ld_debug_profile_document_matches_the_schema",
        &["--no-ld-debug"],
        &["profile"],
    );
}

#[test]
fn fork_only_profile_document_matches_the_schema() {
    profile_matches(
        "fork_only_profile_document_matches_the_schema",
        &["--fork=200", "--no-exec"],
        &["fork"],
    );
}

#[test]
fn compare_and_diff_documents_match_the_schema() {
    let test = "compare_and_diff_documents_match_the_schema";
    let dir = tempfile::tempdir().unwrap();
    let (cmp, base) = (dir.path().join("cmp.json"), dir.path().join("base.json"));
    let o = ldcost(&[
        "compare",
        "/bin/true",
        "/bin/ls",
        "-n",
        "3",
        "--fork=100",
        "--quiet-target",
        "--json",
        cmp.to_str().unwrap(),
        "--save-base",
        base.to_str().unwrap(),
    ]);
    if o.code == 8 {
        skip(
            test,
            "ldcost compare is refused here (exit 8: ptrace or perf)",
        );
        return;
    }
    assert_eq!(o.code, 0, "compare: {}", o.stderr);
    assert_valid("comparison.schema.json", "compare --json", &read(&cmp));
    assert_valid("profile.schema.json", "compare --save-base", &read(&base));
    // diff of two different programs: objects added and removed, per-object rows.
    let Some(head) = document(test, &["profile", "/bin/ls", "-n", "2", "--quiet-target"]) else {
        return;
    };
    let head_path = dir.path().join("head.json");
    std::fs::write(&head_path, serde_json::to_string(&head).unwrap()).unwrap();
    let o = ldcost(&[
        "diff",
        base.to_str().unwrap(),
        head_path.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(o.code, 0, "diff: {}", o.stderr);
    let diff: Value = serde_json::from_str(&o.stdout).expect("diff --format json is JSON");
    assert!(
        !diff["factors"]["objects_added"]
            .as_array()
            .unwrap()
            .is_empty(),
        "ls adds objects to true: {diff}"
    );
    assert_valid("comparison.schema.json", "diff --format json", &diff);
}

/// The schemas are closed where the docs list every field: a field the docs do not name, at
/// the root or deep inside, and a value of the wrong form fail. (Guards the tests above
/// against a schema that accepts anything.)
#[test]
fn the_schema_refuses_undocumented_fields_and_wrong_forms() {
    let v = schema("profile.schema.json");
    let good = deps_ls();
    assert!(violations(&v, &good).is_empty());
    let mutate = |f: &dyn Fn(&mut Value)| {
        let mut d = good.clone();
        f(&mut d);
        violations(&v, &d)
    };
    type Mutation<'a> = (&'a str, &'a dyn Fn(&mut Value));
    let cases: [Mutation; 5] = [
        ("a field at the root", &|d| d["extra"] = 1.into()),
        ("a field of an object's info", &|d| {
            d["deps"]["objects"][0]["info"]["undocumented"] = true.into()
        }),
        ("a count as a float", &|d| {
            d["deps"]["totals"]["objects"] = 1.5.into()
        }),
        ("another schema version", &|d| {
            d["schema_version"] = 1.into()
        }),
        ("a found_by rule the docs do not list", &|d| {
            d["deps"]["objects"][1]["found_by"]["rule"] = "guess".into()
        }),
    ];
    for (what, f) in cases {
        assert!(!mutate(f).is_empty(), "the schema accepts {what}");
    }
    // counters written as Rust debug strings are not the documented form.
    let counters: Value = serde_json::json!({"cycles": "Unavailable(\"no PMU\")"});
    let profile =
        &schema_value("profile.schema.json")["$defs"]["ProfileSection"]["properties"]["counters"];
    let c = jsonschema::draft202012::new(profile).unwrap();
    assert!(
        !c.is_valid(&counters),
        "a debug string is not a counter's status"
    );
    assert!(c.is_valid(
        &serde_json::json!({"cycles": {"unavailable": "no PMU"}, "task-clock": "available"})
    ));
}

fn schema_value(name: &str) -> Value {
    read(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("docs")
            .join(name),
    )
}

/// Every property the schemas name is documented in docs/json-schema.md (in code), so
/// the schema cannot grow a field the prose lacks: the schema is written from the docs, and
/// this keeps it that way.
#[test]
fn every_schema_property_is_in_the_docs() {
    fn names(v: &Value, out: &mut std::collections::BTreeSet<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::Object(props)) = m.get("properties") {
                    out.extend(props.keys().cloned());
                }
                m.values().for_each(|x| names(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| names(x, out)),
            _ => {}
        }
    }
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/json-schema.md"))
            .unwrap();
    // The words inside code (`…` spans and the ```text block): where the docs name keys,
    // alone (`covered`) or in an example (`{"level": "static"}`).
    let mut documented = std::collections::BTreeSet::new();
    for (i, code) in docs.split('`').enumerate() {
        if i % 2 == 1 {
            documented.extend(
                code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .filter(|w| !w.is_empty())
                    .map(str::to_string),
            );
        }
    }
    for schema in ["profile.schema.json", "comparison.schema.json"] {
        let mut all = std::collections::BTreeSet::new();
        names(&schema_value(schema), &mut all);
        assert!(
            all.len() > 50,
            "{schema}: only {} properties read",
            all.len()
        );
        let missing: Vec<&String> = all.iter().filter(|n| !documented.contains(*n)).collect();
        assert!(
            missing.is_empty(),
            "{schema} names properties docs/json-schema.md does not: {missing:?}"
        );
    }
}
