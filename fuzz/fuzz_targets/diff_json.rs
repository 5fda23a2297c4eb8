//! Fuzz target: `ldcost::compare::parse`, the JSON reader of `ldcost diff`, must return a
//! `Document` or a `CompareError` for any bytes, never panic, overflow or hang; and what it
//! accepts must go through the whole comparison (verdict, factors, attribution, the text and
//! Markdown reports, the JSON written back) without a panic either, since `diff` does exactly
//! that with a document the user hands it.
//!
//! See docs/fuzzing.md for how to run it and what it has found.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.json");
    match ldcost::compare::parse(data, path) {
        Err(e) => {
            // Every error is a documented exit code (10: bad document, 11: not comparable),
            // names the file and is one line.
            assert!(matches!(e.exit_code().code(), 10 | 11), "{e}");
            let msg = e.to_string();
            assert!(msg.contains("fuzz.json"), "{msg}");
            assert!(!msg.contains('\n'), "{msg}");
        }
        Ok(doc) => {
            let env: &[(String, String)] = &[];
            // The document against itself, as `diff DOC DOC` does; and against a copy without
            // its fork section, so one-sided sections are exercised too.
            let mut other = doc.clone();
            other.fork = None;
            for head in [&doc, &other] {
                let diffs = ldcost::compare::machine_differences(&doc, head);
                let cmp = ldcost::compare::comparison(
                    "diff",
                    (&doc, (Some(path), env)),
                    (head, (Some(path), env)),
                    diffs,
                    true,
                    Some(5.0),
                );
                let _ = ldcost::compare::text::comparison(&cmp);
                let _ = ldcost::compare::markdown::comparison(&cmp);
                let _ = serde_json::to_string(&cmp);
            }
        }
    }
});
