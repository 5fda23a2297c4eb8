//! `ldcost report -`: the saved document read from standard input.
//!
//! | case | expectation |
//! | --- | --- |
//! | `profile --json - … \| tee F \| report -` | the same text as `report F` (and the same Markdown) |
//! | `deps --json - /bin/true \| report -` | the text `deps /bin/true` printed |
//! | empty, not JSON, truncated, schema 1 on stdin | one error line naming standard input + a hint; exit 10 / 10 / 10 / 11, nothing on stdout |
//! | a directory as stdin | `cannot read standard input`, exit 3 |
//!
//! The oracle: `report FILE` of the same bytes (tests/report.rs checks that against what
//! `profile` printed) and `deps`' own output. Profiling needs ptrace and perf_event_open: where
//! ldcost is refused (exit 8) that case prints `SKIP` (a failure under LDCOST_REQUIRE_ALL).

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{ldcost, skip, Out};

/// `ldcost ARGS` with `input` on its standard input.
fn with_stdin(args: &[&str], input: Stdio) -> Out {
    common::out_of(
        Command::new(env!("CARGO_BIN_EXE_ldcost"))
            .args(args)
            .env_remove("LD_BIND_NOW")
            .env_remove("LD_LIBRARY_PATH")
            .env("NO_COLOR", "1")
            .stdin(input),
    )
}

/// `ldcost report -` fed `bytes` through a pipe.
fn report_bytes(bytes: &[u8]) -> Out {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ldcost"))
        .args(["report", "-"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ldcost report -");
    let mut stdin = child.stdin.take().unwrap();
    // ldcost may refuse before reading it all (a broken pipe here is fine).
    let _ = stdin.write_all(bytes);
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

#[test]
fn profile_json_piped_into_report_equals_report_of_the_file() {
    let test = "profile_json_piped_into_report_equals_report_of_the_file";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("doc.json");
    let out = dir.path().join("from-stdin.txt");
    let bin = env!("CARGO_BIN_EXE_ldcost");
    // A real pipeline; tee keeps the very bytes that went through it.
    let script = format!(
        "set -o pipefail; {bin} profile -n 2 --quiet-target /bin/true --json - | tee {f} | {bin} report - > {o}",
        f = file.display(),
        o = out.display()
    );
    let s = Command::new("bash")
        .args(["-c", &script])
        .env("NO_COLOR", "1")
        .env_remove("LD_BIND_NOW")
        .env_remove("LD_LIBRARY_PATH")
        .status()
        .unwrap();
    if s.code() == Some(8) {
        skip(
            test,
            "ldcost profile is refused here (exit 8: ptrace or perf)",
        );
        return;
    }
    assert!(s.success(), "{script}: {s}");
    let piped = std::fs::read_to_string(&out).unwrap();
    let f = file.to_str().unwrap();
    let from_file = with_stdin(&["report", f], Stdio::null());
    assert_eq!(from_file.code, 0, "{}", from_file.stderr);
    assert!(
        piped.contains(
            "Phases (start-up order; ld.so start and ld.so other run in pieces between the others)"
        ),
        "{piped}"
    );
    assert_eq!(piped, from_file.stdout, "report - and report FILE differ");

    let md_file = with_stdin(&["report", f, "--format", "markdown"], Stdio::null());
    let md_stdin = with_stdin(
        &["report", "-", "--format", "markdown"],
        Stdio::from(std::fs::File::open(&file).unwrap()),
    );
    assert_eq!(md_stdin.code, 0, "{}", md_stdin.stderr);
    assert_eq!(md_stdin.stdout, md_file.stdout);
}

/// No privileges needed: a deps document through standard input prints what deps printed.
#[test]
fn deps_json_piped_into_report_equals_deps() {
    let deps = ldcost(&["deps", "/bin/true"]);
    assert_eq!(deps.code, 0, "{}", deps.stderr);
    let json = ldcost(&["deps", "/bin/true", "--json", "-"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let o = report_bytes(json.stdout.as_bytes());
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stderr.is_empty(), "{}", o.stderr);
    assert_eq!(o.stdout, deps.stdout);
}

/// Bad input on standard input: as for a file, one error line (naming standard input) and a
/// hint, the documented exit code, nothing on stdout.
#[test]
fn bad_documents_on_stdin() {
    let json = ldcost(&["deps", "/bin/true", "--json", "-"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let good = json.stdout.as_bytes();
    let schema1 = json
        .stdout
        .replacen("\"schema_version\":", "\"schema_version\": 1, \"was\":", 1);
    let cases: [(&[u8], i32, &str); 4] = [
        (b"", 10, "standard input is empty"),
        (b"hello, not JSON\n", 10, "standard input is not JSON"),
        (&good[..good.len() / 2], 10, "standard input is truncated"),
        (
            schema1.as_bytes(),
            11,
            "standard input has schema version 1",
        ),
    ];
    for (bytes, code, says) in cases {
        let o = report_bytes(bytes);
        assert_eq!(o.code, code, "{says}: {}", o.stderr);
        let lines: Vec<&str> = o.stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{says}: {}", o.stderr);
        assert!(
            lines[0].starts_with(&format!("ldcost: error: {says}")),
            "{says}: {}",
            o.stderr
        );
        assert!(lines[1].starts_with("  hint: "), "{}", o.stderr);
        assert!(o.stdout.is_empty(), "{says}: {}", o.stdout);
    }
    let dir = std::fs::File::open("/").unwrap();
    let o = with_stdin(&["report", "-"], Stdio::from(dir));
    assert_eq!(o.code, 3, "{}", o.stderr);
    assert!(
        o.stderr
            .starts_with("ldcost: error: standard input is a directory, not a JSON document"),
        "{}",
        o.stderr
    );
}
