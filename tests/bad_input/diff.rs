//! `ldcost diff BASE.json HEAD.json` on bad documents: a missing file or a directory (exit 3),
//! not JSON, truncated, not an ldcost document (exit 10), another schema version (exit 11),
//! a HEAD missing beside a good BASE (exit 3, naming HEAD). Each: one `ldcost: error:` line
//! naming the file, at most a hint after it, nothing on standard output, no panic.
//!
//! The good document is written by `ldcost profile --json` here (SKIP where profiling is
//! refused, exit 8); every bad one is made from text or from a cut or edited copy of it.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::skip;
use crate::harness::*;

/// Runs `ldcost diff BASE HEAD`.
fn diff(base: &Path, head: &Path) -> Outcome {
    let out = Command::new(LDCOST)
        .arg("diff")
        .arg(base)
        .arg(head)
        .env_remove("RUST_BACKTRACE")
        .output()
        .expect("run the ldcost binary");
    Outcome {
        what: format!("ldcost diff {} {}", base.display(), head.display()),
        code: out.status.code(),
        signal: out.status.signal(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The error contract of diff: `code`, one line naming `names` (+ a hint), no stdout.
fn refused(o: &Outcome, code: i32, names: &Path, says: &str) {
    assert_eq!(o.signal, None, "{}", o.describe());
    assert!(!o.stderr.contains("panicked"), "{}", o.describe());
    assert_eq!(o.code, Some(code), "{}", o.describe());
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert!(!lines.is_empty() && lines.len() <= 2, "{}", o.describe());
    assert!(lines[0].starts_with("ldcost: error: "), "{}", o.describe());
    assert!(
        lines[0].contains(&names.display().to_string()),
        "should name {}: {}",
        names.display(),
        o.describe()
    );
    assert!(
        lines[0].contains(says),
        "should say `{says}`: {}",
        o.describe()
    );
    if let Some(h) = lines.get(1) {
        assert!(h.starts_with("  hint: "), "{}", o.describe());
    }
    assert!(o.stdout.is_empty(), "{}", o.describe());
}

#[test]
fn diff_missing_directory_non_json_truncated_schema() {
    let dir = tmp();
    let d = dir.path();
    let missing = d.join("missing.json");
    let text = write(d, "text.json", b"hello, not JSON\n");
    let empty = write(d, "empty.json", b"");
    let cut = write(
        d,
        "cut.json",
        br#"{"schema_version": 2, "tool": {"name": "ldc"#,
    );
    let other = write(d, "v99.json", br#"{"schema_version": 99, "whatever": []}"#);
    let plain = write(d, "plain.json", br#"{"a": 1}"#);
    let cases: [(&Path, i32, &str); 7] = [
        (&missing, 3, "does not exist"),
        (d, 3, "is a directory"),
        (&text, 10, "not JSON"),
        (&empty, 10, "truncated"),
        (&cut, 10, "truncated"),
        (&other, 11, "schema version 99"),
        (&plain, 10, "not an ldcost document"),
    ];
    for (base, code, says) in cases {
        // BASE is checked first: HEAD may be anything.
        refused(&diff(base, &missing), code, base, says);
    }
}

/// A document written by `ldcost profile --json` here, or None (SKIP) where it is refused.
fn good_document(dir: &Path, name: &str) -> Option<PathBuf> {
    let p = dir.join("true.json");
    let out = Command::new(LDCOST)
        .args([
            "profile",
            "/bin/true",
            "-n",
            "1",
            "--no-reference",
            "--no-ld-debug",
        ])
        .arg("--json")
        .arg(&p)
        .output()
        .expect("run the ldcost binary");
    if out.status.code() == Some(8) {
        skip(
            name,
            "ldcost profile is refused here (exit 8: ptrace or perf)",
        );
        return None;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(p)
}

#[test]
fn diff_head_missing_truncated_or_another_version_beside_a_good_base() {
    let name = "diff_head_missing_truncated_or_another_version_beside_a_good_base";
    let dir = tmp();
    let d = dir.path();
    let Some(good) = good_document(d, name) else {
        return;
    };
    let text = std::fs::read_to_string(&good).unwrap();
    let missing = d.join("head.json");
    refused(&diff(&good, &missing), 3, &missing, "does not exist");
    // The document cut at a quarter, half and three quarters, and one byte short of its end
    // (the closing brace and newline gone).
    for cut in [
        text.len() / 4,
        text.len() / 2,
        3 * text.len() / 4,
        text.len() - 2,
    ] {
        let p = write(d, &format!("cut-{cut}.json"), &text.as_bytes()[..cut]);
        refused(&diff(&good, &p), 10, &p, "truncated");
    }
    let v1 = write(
        d,
        "v1.json",
        text.replacen("\"schema_version\": 4", "\"schema_version\": 1", 1)
            .as_bytes(),
    );
    refused(&diff(&good, &v1), 11, &v1, "schema version 1");
    // The document with itself, as control: it is good.
    let o = diff(&good, &good);
    assert_eq!(o.code, Some(0), "{}", o.describe());
}
