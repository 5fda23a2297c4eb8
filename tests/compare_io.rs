//! `ldcost compare`'s two sides as a user gives them, and what reaches standard output.
//!
//! | case | oracle |
//! | --- | --- |
//! | a target that prints on stdout and stderr in every run: `compare --format json`, `--json -`, `--format markdown`, `--fork`, `profile --json -`, and `diff`/`report` of the saved documents | the output parses as JSON (serde_json) and holds none of the target's lines; the Markdown holds none either |
//! | `compare --show-output` (and `profile --json - --show-output`) | each of the target's lines is on standard error exactly once per run asked for (sides × rounds), never on standard output |
//! | BASE and HEAD as quoted command lines, `-- ARGS` appended | the argument vector the target itself prints equals the one `/bin/sh` gives the same words; a path with a space that exists is that file |
//! | a wrapper script that execs the program, against the program through a symlink | both sides' static model is the program's: its relocations as `readelf -rW` counts them; no measured row names the program by its file name beside "(target)" |
//! | `compare 'python3 -c pass' 'python3 -S -c pass'` | both sides have the static model (no "has no deps section"), HEAD's argv ends in `-S -c pass` |
//!
//! The runs need ptrace and perf_event_open: where ldcost is refused (exit 8) those tests
//! print `SKIP` (a failure under LDCOST_REQUIRE_ALL); cc, readelf and python3 likewise.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{cc, readelf_reloc_counts, skip, tools, write};

/// One compare at a time: two at once on a 2-CPU machine would each time the other.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");
/// The marks the printing fixture writes, once each per run.
const OUT_MARK: &str = "fixture-line-on-stdout";
const ERR_MARK: &str = "fixture-line-on-stderr";
/// Measured rounds of the quick compare (each runs each side once).
const ROUNDS: usize = 2;

/// Two rounds, no warm-up, no reference runs; the targets' output left at the default.
fn quick() -> Vec<String> {
    [
        "--no-progress",
        "compare",
        "--runs",
        &ROUNDS.to_string(),
        "--warmup",
        "0",
        "--no-reference",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Out {
    let o = Command::new(BIN)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_BIND_NOW")
        .stdin(Stdio::null())
        .output()
        .expect("run ldcost");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The printing fixture: its marks on stdout and stderr, then its arguments one a line
/// (`arg: …`) on stdout.
fn printer(name: &str, dir: &Path) -> Option<PathBuf> {
    if !tools(name, &["cc"]) {
        return None;
    }
    write(
        dir,
        "printer.c",
        &format!(
            "#include <stdio.h>\nint main(int argc, char **argv) {{\n  puts(\"{OUT_MARK}\");\n  \
             fputs(\"{ERR_MARK}\\n\", stderr);\n  for (int i = 1; i < argc; i++) \
             printf(\"arg: %s\\n\", argv[i]);\n  return 0;\n}}\n"
        ),
    );
    cc(dir, &["-O1", "-o", "printer", "printer.c"]);
    Some(dir.join("printer"))
}

/// Whether ldcost may trace and count here (else the test is skipped).
fn can_profile(name: &str) -> bool {
    let o = run(&["--no-progress", "profile", "--runs", "1", "/bin/true"]);
    if o.code == 8 {
        skip(
            name,
            "ldcost profile is refused here (exit 8: ptrace or perf)",
        );
        return false;
    }
    assert_eq!(o.code, 0, "profile /bin/true: {}", o.stderr);
    true
}

fn json(what: &str, text: &str) -> serde_json::Value {
    serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("{what}: standard output is not JSON ({e}):\n{text}"))
}

fn assert_no_marks(what: &str, text: &str) {
    for m in [OUT_MARK, ERR_MARK] {
        assert!(
            !text.contains(m),
            "{what}: the target's {m:?} is in:\n{text}"
        );
    }
}

#[test]
fn standard_output_carries_only_the_document() {
    let _g = serial();
    const NAME: &str = "standard_output_carries_only_the_document";
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let Some(p) = printer(NAME, dir) else { return };
    if !can_profile(NAME) {
        return;
    }
    let p = p.to_str().expect("utf-8 path");
    let save = |n: &str| dir.join(n).display().to_string();
    let (base_doc, head_doc) = (save("base.json"), save("head.json"));
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("--format json", vec!["--format".into(), "json".into()]),
        (
            "--json - with saved sides",
            vec![
                "--json".into(),
                "-".into(),
                "--save-base".into(),
                base_doc.clone(),
                "--save-head".into(),
                head_doc.clone(),
            ],
        ),
        (
            "--format markdown",
            vec!["--format".into(), "markdown".into()],
        ),
        (
            "--fork json (the fork loops' runs, children calling exit)",
            ["--fork=100", "--child", "exit", "--format", "json"]
                .map(String::from)
                .to_vec(),
        ),
        ("text", vec![]),
    ];
    let mut comparison = String::new();
    for (what, opts) in &cases {
        let mut args = quick();
        args.extend(opts.iter().cloned());
        args.extend([p.to_string(), p.to_string()]);
        let o = run(&args);
        assert_eq!(o.code, 0, "compare {what}: {}", o.stderr);
        assert_no_marks(&format!("compare {what} (stdout)"), &o.stdout);
        // Discarded by default: not on standard error either.
        assert_no_marks(&format!("compare {what} (stderr)"), &o.stderr);
        if what.contains("json") {
            let v = json(what, &o.stdout);
            assert!(v.get("verdict").is_some(), "{what}: no verdict: {v}");
            comparison = o.stdout.clone();
        }
        if what.contains("markdown") {
            assert!(o.stdout.contains('|'), "{what}: no table:\n{}", o.stdout);
        }
    }
    // The saved sides and the comparison, re-read: diff and report print documents too.
    let cmp_file = dir.join("comparison.json");
    std::fs::write(&cmp_file, &comparison).expect("write comparison");
    let cmp_file = cmp_file.display().to_string();
    for args in [
        vec!["diff", "--format", "json", &base_doc, &head_doc],
        vec!["diff", "--json", "-", &base_doc, &head_doc],
    ] {
        let o = run(&args);
        assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
        json(&args.join(" "), &o.stdout);
        assert_no_marks(&args.join(" "), &o.stdout);
    }
    for args in [
        vec!["report", &cmp_file],
        vec!["report", "--format", "markdown", &cmp_file],
        vec!["report", &base_doc],
    ] {
        let o = run(&args);
        assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
        assert_no_marks(&args.join(" "), &o.stdout);
    }
    // profile: with a document on standard output, the target's output is not in it.
    let o = run(&[
        "--no-progress",
        "profile",
        "-n",
        "2",
        "--warmup",
        "0",
        "--json",
        "-",
        p,
    ]);
    assert_eq!(o.code, 0, "profile --json -: {}", o.stderr);
    json("profile --json -", &o.stdout);
    assert_no_marks("profile --json - (stdout)", &o.stdout);
}

#[test]
fn show_output_puts_every_runs_output_on_standard_error() {
    let _g = serial();
    const NAME: &str = "show_output_puts_every_runs_output_on_standard_error";
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let Some(p) = printer(NAME, dir) else { return };
    if !can_profile(NAME) {
        return;
    }
    let p = p.to_str().expect("utf-8 path");
    let count = |text: &str, m: &str| text.lines().filter(|l| *l == m).count();
    for format in ["text", "json"] {
        let mut args = quick();
        args.extend(["--show-output", "--format", format, p, p].map(String::from));
        let o = run(&args);
        assert_eq!(o.code, 0, "compare --show-output: {}", o.stderr);
        assert_no_marks("compare --show-output (stdout)", &o.stdout);
        if format == "json" {
            json("compare --show-output --format json", &o.stdout);
        }
        // Each measured run of each side, once: two sides, ROUNDS rounds, no warm-up.
        for m in [OUT_MARK, ERR_MARK] {
            assert_eq!(
                count(&o.stderr, m),
                2 * ROUNDS,
                "{m} on stderr:\n{}",
                o.stderr
            );
        }
    }
    // profile --json - --show-output: every run's output on standard error (2 measured, 2
    // boundaries-only, 2 uninstrumented; the LD_DEBUG run's is never shown).
    let o = run(&[
        "--no-progress",
        "profile",
        "-n",
        "2",
        "--warmup",
        "0",
        "--no-ld-debug",
        "--show-output",
        "--json",
        "-",
        p,
    ]);
    assert_eq!(o.code, 0, "profile --json - --show-output: {}", o.stderr);
    json("profile --json - --show-output", &o.stdout);
    assert_no_marks("profile --json - --show-output (stdout)", &o.stdout);
    for m in [OUT_MARK, ERR_MARK] {
        assert_eq!(count(&o.stderr, m), 6, "{m} on stderr:\n{}", o.stderr);
    }
}

/// The arguments the printer printed in its first shown run.
fn printed_args(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .skip_while(|l| *l != OUT_MARK)
        .skip(1)
        .map_while(|l| l.strip_prefix("arg: "))
        .map(String::from)
        .collect()
}

#[test]
fn sides_given_as_command_lines_are_split_as_a_shell_splits_them() {
    let _g = serial();
    const NAME: &str = "sides_given_as_command_lines_are_split_as_a_shell_splits_them";
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let Some(p) = printer(NAME, dir) else { return };
    if !can_profile(NAME) {
        return;
    }
    // A copy whose path has a space: given whole, it is that file.
    let spaced = dir.join("my printer");
    std::fs::copy(&p, &spaced).expect("copy");
    let p = p.to_str().expect("utf-8 path");
    let base = format!("{p} 'two words' plain \"dq $x\" back\\ slash ''");
    let head = spaced.to_str().expect("utf-8 path").to_string();
    // The oracle: the same words as /bin/sh splits them (`$x` quoted in single quotes
    // inside the oracle's script, so neither shell expands it).
    let sh = |cmd: &str| -> Vec<String> {
        let o = Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("exec {cmd} -- tail"))
            .env_remove("x")
            .output()
            .expect("run /bin/sh");
        printed_args(&String::from_utf8_lossy(&o.stdout).replace(ERR_MARK, ""))
    };
    let base_sh = {
        // `$x` inside double quotes is expanded by a shell; ldcost runs none, so the oracle
        // gets the literal through single quotes.
        let literal = base.replace("\"dq $x\"", "'dq $x'");
        sh(&literal)
    };
    let head_sh = sh(&format!("'{head}'"));
    assert_eq!(
        base_sh,
        [
            "two words",
            "plain",
            "dq $x",
            "back slash",
            "",
            "--",
            "tail"
        ],
        "the oracle's own split"
    );
    let mut args = quick();
    args.push("--show-output".to_string());
    for (cmd, want) in [(&base, &base_sh), (&head, &head_sh)] {
        let mut a = args.clone();
        a.extend([cmd.clone(), "/bin/true".into(), "--".into(), "tail".into()]);
        let o = run(&a);
        assert_eq!(o.code, 0, "compare {cmd:?}: {}", o.stderr);
        let got = printed_args(&o.stderr);
        // The printer prints `--` too: `-- ARGS` appends ARGS (without the `--`).
        let want: Vec<String> = want.iter().filter(|w| *w != "--").cloned().collect();
        assert_eq!(got, want, "compare {cmd:?}:\n{}", o.stderr);
    }
}

#[test]
fn a_wrapper_side_keeps_the_programs_static_model_and_one_name() {
    let _g = serial();
    const NAME: &str = "a_wrapper_side_keeps_the_programs_static_model_and_one_name";
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let Some(p) = printer(NAME, dir) else { return };
    if !tools(NAME, &["readelf"]) || !can_profile(NAME) {
        return;
    }
    let wrapper = dir.join("wrapper");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\nexec '{}' \"$@\"\n", p.display()),
    )
    .expect("write wrapper");
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    // HEAD is the program through a symlink: its model is resolved from the link's path,
    // while the process maps (and its rows name) the file the link points to.
    let link = dir.join("link");
    std::os::unix::fs::symlink(&p, &link).expect("symlink");
    let (b, h) = (dir.join("b.json"), dir.join("h.json"));
    let mut args = quick();
    args.extend([
        "--format".to_string(),
        "json".into(),
        "--save-base".into(),
        b.display().to_string(),
        "--save-head".into(),
        h.display().to_string(),
        wrapper.display().to_string(),
        link.display().to_string(),
    ]);
    let o = run(&args);
    assert_eq!(o.code, 0, "compare wrapper program: {}", o.stderr);
    let cmp = json("compare wrapper program", &o.stdout);
    let readelf_total: u64 = readelf_reloc_counts(&p).values().sum();
    for (side, doc) in [("BASE", &b), ("HEAD", &h)] {
        let d = json(side, &std::fs::read_to_string(doc).expect("saved side"));
        let first = &d["deps"]["objects"][0];
        let canonical = |q: &Path| std::fs::canonicalize(q).expect("canonical path");
        assert_eq!(
            first["path"].as_str().map(|q| canonical(Path::new(q))),
            Some(canonical(&p)),
            "{side}: the static model is not the program's: {first}"
        );
        assert_eq!(
            first["info"]["relocations"]["total"].as_u64(),
            Some(readelf_total),
            "{side}: relocations against readelf -rW"
        );
    }
    // BASE's chain is the wrapper's two images, HEAD's the program alone.
    let chain = |doc: &Path| {
        json("side", &std::fs::read_to_string(doc).expect("saved side"))["profile"]["followed"]
            .as_array()
            .map_or(0, |a| a.len())
    };
    assert_eq!((chain(&b), chain(&h)), (2, 1), "the followed chains");
    let text = cmp.to_string();
    assert!(
        !text.contains("no deps section"),
        "a side lost its static model: {text}"
    );
    // The program is "(target)" on both sides, never also under its file name.
    let phases = cmp["factors"]["phases"].as_array().expect("phase rows");
    assert!(
        phases.iter().any(|r| r.to_string().contains("(target)")),
        "no (target) row: {phases:?}"
    );
    for r in phases {
        let label = r.to_string();
        assert!(
            !label.contains(": printer") && !label.contains(": link"),
            "the program under its file name: {label}"
        );
    }
}

#[test]
fn python_with_and_without_site_compares_with_both_static_models() {
    let _g = serial();
    const NAME: &str = "python_with_and_without_site_compares_with_both_static_models";
    if !tools(NAME, &["python3"]) || !can_profile(NAME) {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let (b, h) = (tmp.path().join("b.json"), tmp.path().join("h.json"));
    let mut args = quick();
    args.extend([
        "--format".to_string(),
        "json".into(),
        "--save-base".into(),
        b.display().to_string(),
        "--save-head".into(),
        h.display().to_string(),
        "python3 -c pass".into(),
        "python3 -S -c pass".into(),
    ]);
    let o = run(&args);
    assert_eq!(o.code, 0, "compare python3: {}", o.stderr);
    let cmp = json("compare python3", &o.stdout);
    assert!(
        !cmp.to_string().contains("no deps section"),
        "a side lost its static model: {cmp}"
    );
    for (side, doc, tail) in [
        ("BASE", &b, &["-c", "pass"][..]),
        ("HEAD", &h, &["-S", "-c", "pass"][..]),
    ] {
        let d = json(side, &std::fs::read_to_string(doc).expect("saved side"));
        let objects = d["deps"]["objects"].as_array().map_or(0, |a| a.len());
        assert!(objects >= 2, "{side}: no static model: {}", d["deps"]);
        let argv: Vec<&str> = d["profile"]["argv"]
            .as_array()
            .expect("argv")
            .iter()
            .filter_map(|a| a.as_str())
            .collect();
        assert!(argv[0].ends_with("python3"), "{side}: {argv:?}");
        assert_eq!(&argv[1..], tail, "{side}: {argv:?}");
    }
}
