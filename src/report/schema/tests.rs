//! The document types against the documents main's ldcost wrote and the schema files in docs/:
//! a document read and written again is the same JSON (no key lost, renamed or retyped), and
//! what these types write validates against the schema file, which lists every key
//! (`additionalProperties: false`) and the required ones.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::{Comparison, Document};

/// A profile document with every section: `deps`, `profile` (with a breakdown), `fork` (with
/// its breakdown, faults and footprint) and `machine` (`compare --fork --sample --save-head`).
pub(crate) const PROFILE: &str = include_str!("../../../tests/documents/profile.json");
/// The comparison of that run (`compare --fork --sample --json`).
const COMPARISON: &str = include_str!("../../../tests/documents/comparison.json");
/// A plain `profile --json` document (no fork section).
pub(crate) const PLAIN: &str = include_str!("../../../tests/phase_flags/true.json");

fn value(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

pub(crate) fn schema(name: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    jsonschema::draft202012::new(&value(&text)).unwrap()
}

pub(crate) fn assert_valid(schema_name: &str, doc: &Value) {
    let v = schema(schema_name);
    let errors: Vec<String> = v
        .iter_errors(doc)
        .take(20)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{schema_name}:\n  {}",
        errors.join("\n  ")
    );
}

/// Every object key of `v`, as a JSON path with array indices dropped (`/deps/objects/info`).
fn key_paths(v: &Value, at: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{at}/{k}");
                out.insert(p.clone());
                key_paths(x, &p, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| key_paths(x, at, out)),
        _ => {}
    }
}

/// A stored version-2 document as `profile` writes it now (version 3): its `summary` and
/// `fixes` computed from its sections, as `report` computes them for a version-2 document.
fn upgraded(text: &str) -> Document {
    let mut doc: Document = serde_json::from_str(text).unwrap();
    let profile = doc.profile.as_ref().map(|p| p.section());
    let fork = doc.fork.as_ref().map(|f| f.section());
    let summary = crate::attribute::summary::summary(profile.as_ref(), fork.as_ref());
    doc.fixes = Some(doc.fixes().into_iter().map(Into::into).collect());
    doc.summary = Some(summary.into());
    doc.schema_version = super::SCHEMA_VERSION;
    doc
}

fn differing(a: &Value, b: &Value) -> Vec<String> {
    let (mut ka, mut kb) = (BTreeSet::new(), BTreeSet::new());
    key_paths(a, "", &mut ka);
    key_paths(b, "", &mut kb);
    ka.symmetric_difference(&kb).cloned().collect()
}

#[test]
fn profile_documents_read_and_written_again_are_the_same_json() {
    for text in [PROFILE, PLAIN] {
        let original = value(text);
        let doc: Document = serde_json::from_value(original.clone()).unwrap();
        let again = serde_json::to_value(&doc).unwrap();
        assert_eq!(differing(&original, &again), Vec::<String>::new());
        assert!(again == original, "same keys, other values");
    }
}

#[test]
fn comparison_read_and_written_again_is_the_same_json() {
    let original = value(COMPARISON);
    let cmp: Comparison = serde_json::from_value(original.clone()).unwrap();
    let again = serde_json::to_value(&cmp).unwrap();
    assert_eq!(differing(&original, &again), Vec::<String>::new());
    assert!(again == original, "same keys, other values");
}

#[test]
fn what_the_types_write_matches_the_schema_files() {
    for text in [PROFILE, PLAIN] {
        let doc = upgraded(text);
        assert_valid("profile.schema.json", &serde_json::to_value(&doc).unwrap());
    }
    // A comparison is the same in versions 2 and 3.
    let mut cmp: Comparison = serde_json::from_str(COMPARISON).unwrap();
    cmp.schema_version = super::SCHEMA_VERSION;
    assert_valid(
        "comparison.schema.json",
        &serde_json::to_value(&cmp).unwrap(),
    );
}

/// The keys of the schema's object at `pointer` (`properties`), following `$ref`.
fn schema_keys(schema: &Value, pointer: &str) -> BTreeSet<String> {
    let mut node = schema.pointer(pointer).unwrap();
    while let Some(r) = node.get("$ref").and_then(Value::as_str) {
        node = schema.pointer(r.trim_start_matches('#')).unwrap();
    }
    node["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

#[test]
fn each_section_writes_exactly_the_keys_its_schema_lists() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/profile.schema.json");
    let s = value(&std::fs::read_to_string(path).unwrap());
    let doc = upgraded(PROFILE);
    let v = serde_json::to_value(&doc).unwrap();
    for (section, pointer) in [
        ("/summary", "/$defs/ReportSummary"),
        ("/summary/exec", "/$defs/ExecSummary"),
        (
            "/summary/exec/parts/0",
            "/$defs/ExecSummary/properties/parts/items",
        ),
        (
            "/summary/exec/top_objects/0",
            "/$defs/ExecSummary/properties/top_objects/items",
        ),
        ("/summary/fork", "/$defs/ForkSummary"),
        ("", ""),
        ("/deps", "/$defs/DepsSection"),
        ("/deps/objects/0", "/$defs/Object"),
        ("/deps/objects/0/info", "/$defs/ObjectInfo"),
        ("/profile", "/$defs/ProfileSection"),
        ("/profile/breakdown", "/$defs/Breakdown"),
        ("/fork", "/$defs/ForkSection"),
        ("/machine", "/$defs/Machine"),
        ("/tool", "/$defs/Tool"),
    ] {
        let written = keys(v.pointer(section).unwrap());
        let listed = schema_keys(&s, pointer);
        // Keys a section may leave out (skipped when empty or absent) are listed but unwritten.
        let unwritten: BTreeSet<_> = listed.difference(&written).cloned().collect();
        let unlisted: BTreeSet<_> = written.difference(&listed).cloned().collect();
        assert!(
            unlisted.is_empty(),
            "{section}: not in the schema: {unlisted:?}"
        );
        let optional = [
            "after_main",
            "breakdown_weights",
            "exit_uncounted_ns",
            "fork_not_measured",
            "left_out",
            "pinned_cpu",
            "samples",
            "unused_direct",
            "spawn_ab",
        ];
        assert!(
            unwritten.iter().all(|k| optional.contains(&k.as_str())),
            "{section}: the schema lists {unwritten:?}, not written"
        );
    }
}

/// A profile document whose runs loaded libraries after `main`: its `after_main` (and each
/// run's record) validates against the schema file, lists exactly the keys the schema does,
/// and reads back to the same section (From both ways).
#[test]
fn after_main_is_written_as_the_schema_says_and_read_back() {
    let mut section = crate::attribute::profile::aggregate(
        vec!["/usr/bin/prog".into()],
        0,
        crate::record::Detail::DebugSymbols {
            debug_file: "ld.debug".into(),
        },
        crate::attribute::after_main::tests::three_runs(),
        None,
        Default::default(),
    );
    section.after_main.objects[0].model = Some(crate::attribute::after_main::StaticModel {
        relative: 5,
        symbolic: 2,
        plt: 3,
        other: 0,
        total: 10,
        lookups: 4,
    });
    section.after_main.objects[0].scope = Some(crate::attribute::after_main::ScopeLookups {
        lookups: 4,
        probes: 9,
        unresolved: 1,
        definers: vec![("/lib/libc.so.6".into(), 3)],
    });
    section.after_main.opens[0].namespace = Some(-1);
    let mut doc = Document::empty("/usr/bin/prog");
    doc.command = "profile".into();
    doc.summary = Some(crate::attribute::summary::summary(Some(&section), None).into());
    doc.fixes = Some(Vec::new());
    doc.profile = Some(section.clone().into());
    let v = serde_json::to_value(&doc).unwrap();
    assert_valid("profile.schema.json", &v);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/profile.schema.json");
    let s = value(&std::fs::read_to_string(path).unwrap());
    for (at, pointer) in [
        ("/profile/after_main", "/$defs/AfterMainSection"),
        (
            "/profile/after_main/objects/0",
            "/$defs/AfterMainSection/properties/objects/items",
        ),
        (
            "/profile/after_main/opens/0",
            "/$defs/AfterMainSection/properties/opens/items",
        ),
        (
            "/profile/after_main/closes/0",
            "/$defs/AfterMainSection/properties/closes/items",
        ),
    ] {
        assert_eq!(
            keys(v.pointer(at).unwrap()),
            schema_keys(&s, pointer),
            "{at}"
        );
    }
    assert_eq!(
        v.pointer("/profile/after_main/objects/1/mode_text"),
        Some(&Value::String("RTLD_LAZY|RTLD_GLOBAL".into()))
    );
    let back: Document = serde_json::from_value(v).unwrap();
    assert_eq!(
        back.profile.unwrap().section().after_main,
        section.after_main
    );
    // A document written before version 4: the section is computed from its raw runs.
    let mut old = serde_json::to_value(&doc).unwrap();
    old["profile"].as_object_mut().unwrap().remove("after_main");
    let old: Document = serde_json::from_value(old).unwrap();
    let mut expect = section.after_main.clone();
    expect.objects[0].model = None;
    expect.objects[0].scope = None;
    expect.opens[0].namespace = None;
    assert_eq!(old.profile.unwrap().section().after_main, expect);
}
