//! The report cannot be written: exit 7.

use crate::common::skip;
use crate::harness::*;

#[test]
fn json_into_missing_directory() {
    let Some(libz) = system_lib("libz.so.1") else {
        return skip(
            "json_into_missing_directory",
            "no libz.so.1 on this machine",
        );
    };
    let dir = tmp();
    let out = dir.path().join("no-such-dir").join("out.json");
    let o = deps(&["--json", out.to_str().unwrap()], &libz);
    assert_robust(&o);
    assert_eq!(o.code, Some(7), "{}", o.describe());
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert!(lines.len() <= 2, "{}", o.describe());
    assert!(
        lines[0].starts_with("ldcost: error:") && lines[0].contains(&out.display().to_string()),
        "{}",
        o.describe()
    );
    // The text report went to stdout before the JSON failed; that is allowed.
    assert!(!out.exists());
    // The same for a --json path that is a directory.
    let o = deps(&["--json", dir.path().to_str().unwrap()], &libz);
    assert_eq!(o.code, Some(7), "{}", o.describe());
    assert!(
        o.stderr
            .lines()
            .next()
            .unwrap_or("")
            .contains(&dir.path().display().to_string()),
        "{}",
        o.describe()
    );
}

/// `profile --json` into a directory that does not exist is refused before the target runs:
/// exit 7, the user's path (not a temporary file's) in the one error line, nothing on stdout.
#[test]
fn profile_json_into_missing_directory_is_refused_before_running() {
    let dir = tmp();
    let out = dir.path().join("no-such-dir").join("out.json");
    let (code, stdout, stderr) = ldcost(&["profile", "/bin/true", "--json", out.to_str().unwrap()]);
    assert_eq!(code, Some(7), "{stderr}");
    assert!(stdout.is_empty(), "the target ran: {stdout}");
    let first = stderr.lines().next().unwrap_or("");
    assert!(
        first.starts_with("ldcost: error: cannot write")
            && first.contains(&out.display().to_string())
            && !first.contains("/.out.json"),
        "{stderr}"
    );
}

/// `profile --json DIR` is refused before the target runs (a report never replaces a
/// directory), with a hint that fits: name a file.
#[test]
fn profile_json_into_a_directory_is_refused_before_running() {
    let dir = tmp();
    let d = dir.path().to_str().expect("utf-8");
    let (code, stdout, stderr) = ldcost(&["profile", "/bin/true", "--json", d]);
    assert_eq!(code, Some(7), "{stderr}");
    assert!(stdout.is_empty(), "the target ran: {stdout}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines,
        [
            format!("ldcost: error: cannot write {d}: Is a directory (os error 21)").as_str(),
            "  hint: give the name of a file; `-` writes to standard output",
        ],
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
}

/// A directory where no file can be created (sysfs refuses even root) is named as the user
/// wrote it, never through the name of the file ldcost tried.
#[test]
fn an_output_where_no_file_can_be_created_is_named_as_given() {
    let name = "an_output_where_no_file_can_be_created_is_named_as_given";
    if !std::path::Path::new("/sys/kernel").is_dir() {
        return skip(name, "no /sys/kernel here (sysfs not mounted)");
    }
    let out = "/sys/kernel/ldcost-out.json";
    let (code, stdout, stderr) = ldcost(&["profile", "/bin/true", "--json", out]);
    assert_eq!(code, Some(7), "{stderr}");
    assert!(stdout.is_empty(), "the target ran: {stdout}");
    let first = stderr.lines().next().unwrap_or("");
    assert!(
        first.starts_with(&format!(
            "ldcost: error: cannot write {out}: no file can be created in /sys/kernel: "
        )) && !stderr.contains(".ldcost-probe"),
        "{stderr}"
    );
}

/// Runs `ldcost args` (no target added): (exit code, stdout, stderr).
fn ldcost(args: &[&str]) -> (Option<i32>, String, String) {
    let out = std::process::Command::new(LDCOST)
        .args(args)
        .output()
        .expect("run the ldcost binary");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// An output naming the target, an input document, or another output's file is refused
/// before anything runs: exit 2, one error line naming both, nothing written or run.
#[test]
fn outputs_that_clash_are_refused_before_anything_runs() {
    let dir = tmp();
    let t = dir.path().join("t");
    std::fs::copy("/bin/true", &t).expect("copy /bin/true");
    let original = std::fs::read(&t).expect("read");
    let t = t.to_str().expect("utf-8");
    // The same file spelled another way.
    let t2 = format!("{}/./t", dir.path().display());
    let a = dir.path().join("a.json");
    let a = a.to_str().expect("utf-8");
    let b = dir.path().join("b.json");
    std::fs::write(&b, b"{}").expect("write");
    let b = b.to_str().expect("utf-8");
    let quick = [
        "profile",
        "-n",
        "1",
        "--warmup",
        "0",
        "--no-reference",
        "--no-ld-debug",
    ];
    let profile = |extra: &[&str]| -> Vec<String> {
        quick
            .iter()
            .chain(extra)
            .chain(std::iter::once(&t))
            .map(|s| s.to_string())
            .collect()
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            ["deps", "--json", &t2, t].map(String::from).to_vec(),
            "names the target itself",
        ),
        (profile(&["--json", &t2]), "names the target itself"),
        (profile(&["--folded", t]), "names the target itself"),
        (
            profile(&["--json", a, "--flamegraph", a]),
            "--json and --flamegraph both name",
        ),
        (profile(&["--json", "-", "--folded", "-"]), "both name -"),
        (
            ["diff", "--json", b, b, b].map(String::from).to_vec(),
            "names the BASE document itself",
        ),
        (
            ["compare", "-n", "2", "--json", t, t, t]
                .map(String::from)
                .to_vec(),
            "names the BASE program itself",
        ),
        (
            [
                "compare",
                "-n",
                "2",
                "--save-base",
                a,
                "--save-head",
                a,
                t,
                t,
            ]
            .map(String::from)
            .to_vec(),
            "--save-base and --save-head both name",
        ),
        (
            ["compare", "-n", "2", "--json", a, "--folded-diff", a, t, t]
                .map(String::from)
                .to_vec(),
            "--json and --folded-diff both name",
        ),
    ];
    for (args, says) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = ldcost(&args);
        let what = args.join(" ");
        assert_eq!(code, Some(2), "{what}: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{what}: {stderr}");
        assert!(
            lines[0].starts_with("ldcost: error: refusing to write:") && lines[0].contains(says),
            "{what}: {stderr}"
        );
        assert!(lines[1].starts_with("  hint:"), "{what}: {stderr}");
        assert!(stdout.is_empty(), "{what}: something ran: {stdout}");
        assert!(!std::path::Path::new(a).exists(), "{what}: wrote {a}");
        assert_eq!(std::fs::read(b).expect("b"), b"{}", "{what}");
        assert_eq!(std::fs::read(t).expect("t"), original, "{what}");
    }
}

/// A wrapper script's program is found only when the exec chain is discovered: an output
/// naming it is refused then, before the measured runs, and the program is left as it was.
#[test]
fn outputs_naming_the_program_a_wrapper_execs_are_refused() {
    let dir = tmp();
    let prog = dir.path().join("t2");
    std::fs::copy("/bin/true", &prog).expect("copy /bin/true");
    let original = std::fs::read(&prog).expect("read");
    let prog = prog.to_str().expect("utf-8");
    let wrapper = dir.path().join("w2.sh");
    std::fs::write(&wrapper, format!("#!/bin/sh\nexec {prog} \"$@\"\n")).expect("write");
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let wrapper = wrapper.to_str().expect("utf-8");
    let quick = [
        "-n",
        "1",
        "--warmup",
        "0",
        "--no-reference",
        "--no-ld-debug",
    ];
    let cmp = ["-n", "2", "--warmup", "0", "--no-reference"];
    let cases: Vec<Vec<&str>> = vec![
        [&["profile"][..], &quick, &["--json", prog, wrapper]].concat(),
        [&["profile"][..], &quick, &["--folded", prog, wrapper]].concat(),
        [
            &["compare"][..],
            &cmp,
            &["--json", prog, "/bin/true", wrapper],
        ]
        .concat(),
        [
            &["compare"][..],
            &cmp,
            &["--save-base", prog, wrapper, "/bin/true"],
        ]
        .concat(),
    ];
    for args in cases {
        let (code, stdout, stderr) = ldcost(&args);
        let what = args.join(" ");
        assert_eq!(code, Some(2), "{what}: {stderr}");
        let first = stderr.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("ldcost: error: refusing to write:")
                && first.contains("names a program of the target's exec chain itself"),
            "{what}: {stderr}"
        );
        assert!(stdout.is_empty(), "{what}: a report was printed: {stdout}");
        assert_eq!(std::fs::read(prog).expect("t2"), original, "{what}");
    }
}
