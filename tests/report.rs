//! `ldcost report FILE.json` through the real binary: a saved document re-rendered equals what
//! the command that wrote it printed (the oracle: that command's own standard output).
//!
//! | case | expectation |
//! | --- | --- |
//! | `profile --json F` (plain, `--fork`, `--sample`) then `report F` | the same text, line for line |
//! | `deps --json F` then `report F` | the same text as `deps` printed |
//! | `compare --json F` / `diff --format markdown --json F` then `report F` | the same text / Markdown |
//! | `--format markdown` | a heading, then the same text in one fenced block |
//! | missing, directory, not JSON, truncated, schema 1, a document with nothing to show | one error line naming the file + a hint; exit 3 / 3 / 10 / 10 / 11 / 10 |
//!
//! Profiling needs ptrace and perf_event_open: where ldcost is refused (exit 8) the tests print
//! `SKIP` (a failure under LDCOST_REQUIRE_ALL). `report` itself needs neither.

mod common;

use std::path::{Path, PathBuf};

use common::{ldcost, skip, Out};

/// Runs `ldcost ARGS --json DIR/NAME.json` and returns (its stdout, the document's path), or
/// None (after a SKIP line) when profiling is refused here.
fn written(test: &str, dir: &Path, name: &str, args: &[&str]) -> Option<(String, PathBuf)> {
    let path = dir.join(format!("{name}.json"));
    let mut all: Vec<&str> = args.to_vec();
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
    Some((o.stdout, path))
}

/// Fails naming the first line where `report` differs from the original.
fn assert_same_text(what: &str, original: &str, rendered: &str) {
    if original == rendered {
        return;
    }
    let (a, b): (Vec<&str>, Vec<&str>) = (original.lines().collect(), rendered.lines().collect());
    let first = (0..a.len().max(b.len()))
        .find(|&i| a.get(i) != b.get(i))
        .unwrap_or(a.len());
    panic!(
        "{what}: `report` differs from the original at line {}:\n  original: {:?}\n  report:   {:?}\n\
         ({} vs {} lines)",
        first + 1,
        a.get(first).copied().unwrap_or("<end of text>"),
        b.get(first).copied().unwrap_or("<end of text>"),
        a.len(),
        b.len()
    );
}

/// `profile ARGS --json F`, then `report F` (and `--format markdown`): the same text.
fn round_trip(test: &str, args: &[&str], must_contain: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let Some((original, path)) = written(test, dir.path(), "doc", args) else {
        return;
    };
    for needle in must_contain {
        assert!(
            original.contains(needle),
            "{test}: the original report lacks {needle:?}:\n{original}"
        );
    }
    // `report --detail` shows what `profile --detail` showed.
    let detail = args.contains(&"--detail");
    let mut report = vec!["report", path.to_str().unwrap()];
    if detail {
        report.push("--detail");
    }
    let o = ldcost(&report);
    assert_eq!(o.code, 0, "report: {}", o.stderr);
    assert!(
        o.stderr.is_empty(),
        "report says nothing on stderr: {}",
        o.stderr
    );
    assert_same_text(test, &original, &o.stdout);

    report.extend(["--format", "markdown"]);
    let md = ldcost(&report);
    assert_eq!(md.code, 0, "report --format markdown: {}", md.stderr);
    assert!(md.stdout.starts_with("# ldcost "), "{}", md.stdout);
    let fenced = md
        .stdout
        .split_once("```text\n")
        .and_then(|(_, rest)| rest.rsplit_once("```\n"))
        .map(|(body, _)| body)
        .unwrap_or_else(|| panic!("one fenced block: {}", md.stdout));
    // The summary is Markdown of its own (tests/summary.rs); the block holds the rest.
    let (_, body) = original
        .split_once("\n\n")
        .unwrap_or_else(|| panic!("a summary, then a blank line: {original}"));
    assert_same_text(&format!("{test} (markdown)"), body, fenced);
}

#[test]
fn report_of_a_plain_profile_equals_profiles_text() {
    round_trip(
        "report_of_a_plain_profile_equals_profiles_text",
        &[
            "profile",
            "/bin/true",
            "-n",
            "2",
            "--quiet-target",
            "--detail",
        ],
        &[
            "Phases (start-up order; ld.so start and ld.so other run in pieces between the others)",
            "Instrumentation's own cost",
            "Cross-check",
        ],
    );
}

#[test]
fn report_of_a_fork_profile_equals_profiles_text() {
    round_trip(
        "report_of_a_fork_profile_equals_profiles_text",
        &[
            "profile",
            "/bin/true",
            "-n",
            "2",
            "--fork=200",
            "--no-ld-debug",
            "--quiet-target",
        ],
        &[
            "Phases (start-up order; ld.so start and ld.so other run in pieces between the others)",
            "fork",
        ],
    );
}

#[test]
fn report_of_a_fork_only_profile_equals_profiles_text() {
    round_trip(
        "report_of_a_fork_only_profile_equals_profiles_text",
        &["profile", "/bin/true", "--fork=200", "--no-exec"],
        &["fork"],
    );
}

#[test]
fn report_of_a_sampled_profile_equals_profiles_text() {
    round_trip(
        "report_of_a_sampled_profile_equals_profiles_text",
        &[
            "profile",
            "/bin/true",
            "-n",
            "2",
            "--sample",
            "--sample-runs",
            "5",
            "--fork=200",
            "--no-ld-debug",
            "--quiet-target",
        ],
        &["exec cost by category", "fork"],
    );
}

/// A comparison (`compare --json F`): `report F` prints what `compare` printed, and
/// `--format markdown` what `compare --format markdown` would (compared on `diff`'s, which
/// renders the same document of the same two saved profiles).
#[test]
fn report_of_a_comparison_equals_compares_text() {
    let test = "report_of_a_comparison_equals_compares_text";
    let dir = tempfile::tempdir().unwrap();
    let Some((original, path)) = written(
        test,
        dir.path(),
        "cmp",
        &[
            "compare",
            "/bin/true",
            "/bin/ls",
            "-n",
            "3",
            "--quiet-target",
        ],
    ) else {
        return;
    };
    assert!(original.contains("verdict"), "{original}");
    let o = ldcost(&["report", path.to_str().unwrap()]);
    assert_eq!(o.code, 0, "report: {}", o.stderr);
    assert_same_text(test, &original, &o.stdout);
    // Markdown: `diff --format markdown --json F` prints the Markdown of the document it saves.
    let (base, head) = (dir.path().join("b.json"), dir.path().join("h.json"));
    for (target, p) in [("/bin/true", &base), ("/bin/ls", &head)] {
        let o = ldcost(&[
            "profile",
            target,
            "-n",
            "2",
            "--no-ld-debug",
            "--quiet-target",
            "--json",
            p.to_str().unwrap(),
        ]);
        assert_eq!(o.code, 0, "profile {target}: {}", o.stderr);
    }
    let saved = dir.path().join("diff.json");
    let md = ldcost(&[
        "diff",
        base.to_str().unwrap(),
        head.to_str().unwrap(),
        "--format",
        "markdown",
        "--json",
        saved.to_str().unwrap(),
    ]);
    assert_eq!(md.code, 0, "diff: {}", md.stderr);
    let o = ldcost(&["report", saved.to_str().unwrap(), "--format", "markdown"]);
    assert_eq!(o.code, 0, "report --format markdown: {}", o.stderr);
    assert_same_text(&format!("{test} (markdown)"), &md.stdout, &o.stdout);
}

/// `deps` needs no privilege: the deps document and the bad inputs are made from it.
fn deps_document(dir: &Path) -> (String, PathBuf) {
    let path = dir.join("ls.json");
    let o = ldcost(&["deps", "/bin/ls", "--json", path.to_str().unwrap()]);
    assert_eq!(o.code, 0, "deps /bin/ls: {}", o.stderr);
    (o.stdout, path)
}

#[test]
fn report_of_a_deps_document_equals_deps_text() {
    let dir = tempfile::tempdir().unwrap();
    let (original, path) = deps_document(dir.path());
    let o = ldcost(&["report", path.to_str().unwrap()]);
    assert_eq!(o.code, 0, "report: {}", o.stderr);
    assert!(original.contains("libc.so.6"), "{original}");
    assert_same_text("deps /bin/ls", &original, &o.stdout);
}

fn one_error_line(o: &Out, names: &str) {
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "one error line and a hint: {}", o.stderr);
    assert!(lines[0].starts_with("ldcost: error: "), "{}", o.stderr);
    assert!(lines[0].contains(names), "{} should name {names}", lines[0]);
    assert!(lines[1].starts_with("  hint: "), "{}", o.stderr);
    assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
    assert!(o.stdout.is_empty(), "nothing on stdout: {}", o.stdout);
}

#[test]
fn bad_documents_are_one_line_and_diffs_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let (_, good) = deps_document(dir.path());
    let text = std::fs::read_to_string(&good).unwrap();
    let file = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p
    };
    let missing = dir.path().join("missing.json");
    let not_json = file("notes.json", "phases: fast\n");
    let truncated = file("truncated.json", &text[..text.len() / 2]);
    let old = file(
        "old.json",
        &text.replacen("\"schema_version\": 4", "\"schema_version\": 1", 1),
    );
    let empty = file(
        "empty.json",
        r#"{"schema_version": 2, "tool": {"name": "ldcost", "version": "0"}, "command": "deps", "target": "/x", "deps": null}"#,
    );
    let cases: [(&Path, i32, &str); 6] = [
        (&missing, 3, "does not exist"),
        (dir.path(), 3, "is a directory"),
        (&not_json, 10, "not JSON"),
        (&truncated, 10, "truncated"),
        (&old, 11, "schema version 1"),
        (&empty, 10, "nothing to show"),
    ];
    for (path, code, what) in cases {
        let p = path.to_str().unwrap();
        let o = ldcost(&["report", p]);
        assert_eq!(o.code, code, "report {p}: {}", o.stderr);
        one_error_line(&o, p);
        assert!(o.stderr.contains(what), "{p}: {what:?} in {}", o.stderr);
    }
}

#[test]
fn report_is_documented_in_help_and_readme() {
    let o = ldcost(&["report", "--help"]);
    assert_eq!(o.code, 0);
    assert!(o.stdout.contains("--format"), "{}", o.stdout);
    assert!(o.stdout.contains("10  diff/report"), "{}", o.stdout);
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    assert!(
        readme.contains("ldcost report"),
        "README documents `ldcost report`"
    );
}

/// `report` needs no privilege: as root, the document is re-rendered as `nobody` (setpriv, a
/// copy of ldcost and of the document where nobody can reach them), and equals what the
/// privileged `profile` printed.
#[test]
fn report_runs_unprivileged() {
    let test = "report_runs_unprivileged";
    let dir = tempfile::tempdir().unwrap();
    let Some((original, path)) = written(
        test,
        dir.path(),
        "doc",
        &["profile", "/bin/true", "-n", "2", "--quiet-target"],
    ) else {
        return;
    };
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    let out = if root {
        if !common::tools(test, &["setpriv"]) {
            return;
        }
        let user = match common::as_user_binary() {
            Ok(u) => u,
            Err(e) => return skip(test, &e),
        };
        let doc = user.copy(&path, "doc.json");
        let o = user
            .command()
            .arg("report")
            .arg(&doc)
            .output()
            .expect("run setpriv");
        assert!(
            o.status.success(),
            "report as nobody: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    } else {
        // Not root: this process is already unprivileged.
        let o = ldcost(&["report", path.to_str().unwrap()]);
        assert_eq!(o.code, 0, "{}", o.stderr);
        o.stdout
    };
    assert_same_text(test, &original, &out);
}
