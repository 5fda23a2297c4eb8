//! `compare` with a side given as a bad command line: exit 2 for one that cannot be split
//! into words (an unclosed quote, no word, an empty program name), exit 3 for a program that
//! does not exist or is a directory, each in one `ldcost: error:` line naming the side and
//! what it was given (plus at most a `  hint:` line), before anything runs. `--gate fork`
//! without `--fork` is exit 2 too, in one line saying what to add.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

use crate::harness::{Outcome, LDCOST};

fn compare(base: &str, head: &str) -> Outcome {
    let out = Command::new(LDCOST)
        .args(["--no-progress", "compare", "--runs", "1", base, head])
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .output()
        .expect("run the ldcost binary");
    Outcome {
        what: format!("ldcost compare {base:?} {head:?}"),
        code: out.status.code(),
        signal: out.status.signal(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Exit `code`, one error line starting `ldcost: error: SIDE: ` and holding `names`, at most
/// one hint line, nothing on standard output.
fn assert_refused(o: &Outcome, code: i32, side: &str, names: &str) {
    assert_eq!(o.code, Some(code), "wrong exit code: {}", o.describe());
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert!(
        (1..=2).contains(&lines.len()),
        "not one error line (and a hint): {}",
        o.describe()
    );
    assert!(
        lines[0].starts_with(&format!("ldcost: error: {side}: ")),
        "the first line does not name {side}: {}",
        o.describe()
    );
    assert!(
        lines[0].contains(names),
        "does not name {names:?}: {}",
        o.describe()
    );
    if let Some(h) = lines.get(1) {
        assert!(h.starts_with("  hint: "), "second line: {}", o.describe());
    }
    assert!(o.stdout.is_empty(), "stdout is not empty: {}", o.describe());
}

#[test]
fn a_command_line_with_an_unclosed_quote_is_a_usage_error() {
    let o = compare("/bin/true -c \"pass", "/bin/true");
    assert_refused(&o, 2, "BASE", "a quote is not closed");
    assert!(
        o.stderr.contains(r#"/bin/true -c \"pass"#),
        "{}",
        o.describe()
    );
    let o = compare("/bin/true", "/bin/true 'it''s");
    assert_refused(&o, 2, "HEAD", "a quote is not closed");
}

#[test]
fn an_empty_command_line_is_a_usage_error() {
    assert_refused(&compare("/bin/true", ""), 2, "HEAD", "no words");
    assert_refused(&compare(" \t ", "/bin/true"), 2, "BASE", "no words");
    assert_refused(&compare("'' -v", "/bin/true"), 2, "BASE", "name is empty");
}

#[test]
fn a_command_whose_program_does_not_exist_is_exit_3() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("no-such-program");
    let m = missing.to_str().expect("utf-8 path");
    assert_refused(&compare(&format!("{m} -v"), "/bin/true"), 3, "BASE", m);
    // A bare name is looked up in $PATH; the hint says so.
    let o = compare("/bin/true", "ldcost-no-such-program-anywhere --flag");
    assert_refused(&o, 3, "HEAD", "ldcost-no-such-program-anywhere");
    assert!(o.stderr.contains("$PATH"), "{}", o.describe());
}

#[test]
fn a_command_whose_program_is_a_directory_is_exit_3() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8 path");
    for (base, head, side) in [(d, "/bin/true", "BASE"), ("/bin/true", d, "HEAD")] {
        let o = compare(base, head);
        assert_refused(&o, 3, side, d);
        assert!(o.stderr.contains("directory"), "{}", o.describe());
    }
    // With arguments: the directory is still the program.
    let o = compare(&format!("{d} -x"), "/bin/true");
    assert_refused(&o, 3, "BASE", d);
    // A directory whose name has a space, given whole, is that directory, not split.
    let spaced = dir.path().join("a dir");
    std::fs::create_dir(&spaced).expect("mkdir");
    let s = spaced.to_str().expect("utf-8 path");
    let o = compare(s, "/bin/true");
    assert_refused(&o, 3, "BASE", s);
    assert!(o.stderr.contains("directory"), "{}", o.describe());
}

/// `--gate fork` gates the parent CPU per fork, which only `--fork` measures: refused before
/// anything runs (the target would create the marker file), exit 2, one line naming what to
/// add.
#[test]
fn gate_fork_without_fork_is_refused_before_any_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("ran");
    let side = format!("/bin/sh -c 'echo > {}'", marker.display());
    let out = Command::new(LDCOST)
        .args(["--no-progress", "compare", "--runs", "1"])
        .args(["--fail-above", "5", "--gate", "fork"])
        .args([&side, "/bin/true"])
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .output()
        .expect("run the ldcost binary");
    let o = Outcome {
        what: format!("ldcost compare --fail-above 5 --gate fork {side:?} /bin/true"),
        code: out.status.code(),
        signal: out.status.signal(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert_eq!(o.code, Some(2), "wrong exit code: {}", o.describe());
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "not one line: {}", o.describe());
    assert!(
        lines[0].starts_with("ldcost: error: ") && lines[0].contains("add --fork"),
        "does not say what to add: {}",
        o.describe()
    );
    assert!(o.stdout.is_empty(), "stdout is not empty: {}", o.describe());
    assert!(!marker.exists(), "a side ran: {}", o.describe());
}
