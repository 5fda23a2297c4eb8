//! `ldcost diff BASE.json HEAD.json` through the real binary, on documents written by
//! `ldcost profile --json` here.
//!
//! | case | expectation |
//! | --- | --- |
//! | a document with itself | "no significant change", every change exactly 0, exit 0 |
//! | missing file, directory, non-JSON, truncated, schema 2, a `deps` document | one error line naming the file (+ a hint), exit 3 / 3 / 10 / 10 / 11 / 10 |
//! | another machine | exit 11 naming what differs; with `--force` exit 0 and the difference in the report |
//! | `--format json` | reads back into `Comparison` (deny_unknown_fields) |
//! | `--format markdown` | verdict line first, `<details>`, the reproducing command |
//! | `--fail-above` on a document with itself | exit 0 (no significant change never fails) |
//!
//! Profiling needs ptrace and perf_event_open: where ldcost is refused (exit 8) the tests print
//! `SKIP` (a failure under LDCOST_REQUIRE_ALL).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{ldcost, skip, Out};
use ldcost::compare::Comparison;

/// One `profile --json` document of /bin/true, made once (None: ldcost cannot profile here).
fn document() -> Option<&'static Path> {
    static DOC: OnceLock<Option<(tempfile::TempDir, PathBuf)>> = OnceLock::new();
    DOC.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("true.json");
        let o = ldcost(&[
            "profile",
            "/bin/true",
            "-n",
            "5",
            "--no-ld-debug",
            "--json",
            p.to_str().unwrap(),
        ]);
        if o.code == 8 {
            return None;
        }
        assert_eq!(o.code, 0, "profile failed: {}", o.stderr);
        Some((dir, p))
    })
    .as_ref()
    .map(|(_, p)| p.as_path())
}

fn doc_or_skip(name: &str) -> Option<&'static Path> {
    let d = document();
    if d.is_none() {
        skip(
            name,
            "ldcost profile is refused here (exit 8: ptrace or perf)",
        );
    }
    d
}

fn one_error_line(o: &Out, names: &str) {
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert!(
        !lines.is_empty() && lines.len() <= 2,
        "one error line (+ hint): {}",
        o.stderr
    );
    assert!(lines[0].starts_with("ldcost: error: "), "{}", o.stderr);
    assert!(lines[0].contains(names), "{} should name {names}", lines[0]);
    if let Some(h) = lines.get(1) {
        assert!(h.starts_with("  hint: "), "{}", o.stderr);
    }
    assert!(o.stdout.is_empty(), "nothing on stdout: {}", o.stdout);
}

#[test]
fn a_document_with_itself_is_no_significant_change() {
    let Some(doc) = doc_or_skip("a_document_with_itself_is_no_significant_change") else {
        return;
    };
    let d = doc.to_str().unwrap();
    let o = ldcost(&["diff", d, d]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("verdict: no significant change"),
        "{}",
        o.stdout
    );
    let o = ldcost(&["diff", d, d, "--format", "json", "--fail-above", "0"]);
    assert_eq!(o.code, 0, "--fail-above 0 on A vs A: {}", o.stderr);
    let c: Comparison = serde_json::from_str(&o.stdout).expect("the comparison JSON reads back");
    assert_eq!(c.verdict.summary, "no significant change");
    assert!(!c.verdict.slower && !c.verdict.faster && !c.failed);
    let cpu = c
        .verdict
        .metrics
        .iter()
        .find(|m| m.key == "startup_cpu")
        .and_then(|m| m.change.as_ref())
        .expect("start-up CPU compared");
    assert_eq!(cpu.change_pct, 0.0);
    assert_eq!(cpu.base_n, 5);
    assert!(cpu.ci95_pct.0 <= 0.0 && cpu.ci95_pct.1 >= 0.0);
    assert!(cpu.p_value > 0.9, "{}", cpu.p_value);
    assert!(c.factors.objects_added.is_empty() && c.factors.objects_removed.is_empty());
    assert!(c.factors.objects.is_empty(), "no object differs");
    assert!(c.factors.totals.iter().all(|r| r.delta == Some(0.0)));
    assert!(c.machine_differences.is_empty());
}

#[test]
fn markdown_has_the_pr_comment_shape() {
    let Some(doc) = doc_or_skip("markdown_has_the_pr_comment_shape") else {
        return;
    };
    let d = doc.to_str().unwrap();
    let o = ldcost(&["diff", d, d, "--format", "markdown"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let md = o.stdout;
    let first = md.lines().next().unwrap();
    assert!(
        first.starts_with("**ldcost diff**") && first.contains("no significant change"),
        "{first}"
    );
    assert!(md.contains("| start-up CPU |"), "{md}");
    let (open, close) = (
        md.find("<details>").expect("details"),
        md.find("</details>").expect("/details"),
    );
    assert!(open < close);
    assert!(md[open..close].contains("Static model of each side"));
    assert!(md.contains(&format!(
        "```sh\nldcost diff {d} {d} --format markdown\n```"
    )));
}

fn edited(
    name: &str,
    f: impl FnOnce(&mut serde_json::Value),
) -> Option<(tempfile::TempDir, PathBuf)> {
    let doc = doc_or_skip(name)?;
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(doc).unwrap()).unwrap();
    f(&mut v);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("edited.json");
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    Some((dir, p))
}

#[test]
fn another_machine_is_refused_unless_forced() {
    let Some((_dir, other)) = edited("another_machine_is_refused_unless_forced", |v| {
        v["machine"]["kernel_release"] = "1.2.3-other".into();
        v["machine"]["hostname_digest"] = "0000000000000000".into();
    }) else {
        return;
    };
    let d = document().unwrap().to_str().unwrap();
    let o = ldcost(&["diff", d, other.to_str().unwrap()]);
    assert_eq!(o.code, 11, "{}", o.stderr);
    one_error_line(&o, "different machines");
    assert!(o.stderr.contains("1.2.3-other") && o.stderr.contains("host digest"));
    let o = ldcost(&["diff", d, other.to_str().unwrap(), "--force"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stderr.contains("different machines"), "{}", o.stderr);
    assert!(
        o.stdout.contains("1.2.3-other"),
        "the report says what differs"
    );
    // A document without a machine record (an older ldcost) is not silently comparable.
    let (_d2, old) = edited("another_machine_is_refused_unless_forced", |v| {
        v.as_object_mut().unwrap().remove("machine");
    })
    .unwrap();
    let o = ldcost(&["diff", old.to_str().unwrap(), d]);
    assert_eq!(o.code, 11, "{}", o.stderr);
    assert!(o.stderr.contains("not recorded in BASE"), "{}", o.stderr);
}

#[test]
fn the_machine_record_is_this_machine() {
    let Some(doc) = doc_or_skip("the_machine_record_is_this_machine") else {
        return;
    };
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(doc).unwrap()).unwrap();
    let m = &v["machine"];
    let uname = common::stdout_of("uname", &["-r"]);
    assert_eq!(m["kernel_release"].as_str().unwrap(), uname.trim());
    let ldd = Command::new("ldd").arg("--version").output().unwrap();
    let first = String::from_utf8_lossy(&ldd.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    let glibc = m["glibc"].as_str().unwrap();
    assert!(
        first.ends_with(glibc),
        "ldd --version says {first:?}, we say {glibc}"
    );
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let digest = m["hostname_digest"].as_str().unwrap();
    assert_eq!(digest.len(), 16);
    assert!(!digest.contains(host.trim()), "a digest, not the name");
    assert_eq!(digest, ldcost::record::hostname_digest(host.trim()));
    let cpu = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    assert!(cpu.contains(m["cpu_model"].as_str().unwrap()));
}

#[test]
fn bad_input_has_one_line_and_a_documented_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    std::fs::write(p("text.json"), "hello, not json\n").unwrap();
    std::fs::write(p("empty.json"), "").unwrap();
    std::fs::create_dir(p("adir")).unwrap();
    let missing = p("missing.json");
    let s = |x: &Path| x.to_str().unwrap().to_string();
    // BASE is read first: a bad BASE is reported whatever HEAD is.
    let cases: Vec<(String, i32, &str)> = vec![
        (s(&missing), 3, "does not exist"),
        (s(&p("adir")), 3, "is a directory"),
        (s(&p("text.json")), 10, "not JSON"),
        (s(&p("empty.json")), 10, "truncated"),
    ];
    for (base, code, what) in &cases {
        let o = ldcost(&["diff", base, &s(&missing)]);
        assert_eq!(o.code, *code, "{base}: {}", o.stderr);
        one_error_line(&o, base);
        assert!(o.stderr.contains(what), "{base}: {}", o.stderr);
    }
    let Some(doc) = doc_or_skip("bad_input_has_one_line_and_a_documented_exit_code") else {
        return;
    };
    let d = s(doc);
    // HEAD missing, HEAD a directory.
    let o = ldcost(&["diff", &d, &s(&missing)]);
    assert_eq!(o.code, 3);
    one_error_line(&o, &s(&missing));
    let o = ldcost(&["diff", &d, &s(&p("adir"))]);
    assert_eq!(o.code, 3);
    one_error_line(&o, "adir");
    // Truncated in the middle.
    let text = std::fs::read_to_string(doc).unwrap();
    std::fs::write(p("cut.json"), &text[..text.len() / 2]).unwrap();
    let o = ldcost(&["diff", &d, &s(&p("cut.json"))]);
    assert_eq!(o.code, 10, "{}", o.stderr);
    one_error_line(&o, "cut.json");
    assert!(o.stderr.contains("truncated"), "{}", o.stderr);
    // Another schema version.
    let (_d1, v999) = edited("schema", |v| v["schema_version"] = 999.into()).unwrap();
    let o = ldcost(&["diff", &s(&v999), &d]);
    assert_eq!(o.code, 11, "{}", o.stderr);
    one_error_line(&o, "schema version 999");
    // A `deps` document has nothing measured.
    let deps = p("deps.json");
    let o = ldcost(&["deps", "/bin/true", "--json", &s(&deps)]);
    assert_eq!(o.code, 0);
    let o = ldcost(&["diff", &d, &s(&deps)]);
    assert_eq!(o.code, 10, "{}", o.stderr);
    one_error_line(&o, "deps.json");
    // Valid JSON, not an ldcost document.
    std::fs::write(p("other.json"), "{\"a\": 1}").unwrap();
    let o = ldcost(&["diff", &d, &s(&p("other.json"))]);
    assert_eq!(o.code, 10, "{}", o.stderr);
    one_error_line(&o, "other.json");
}

#[test]
fn help_documents_the_new_exit_codes() {
    for cmd in ["diff", "compare"] {
        let o = ldcost(&[cmd, "--help"]);
        assert_eq!(o.code, 0);
        for code in ["10 ", "11 ", "12 "] {
            assert!(
                o.stdout.contains(&format!("  {code}")),
                "{cmd} --help: exit code {code}undocumented"
            );
        }
        assert!(o.stdout.contains("--fail-above"), "{cmd} --help");
    }
}
