//! What a newcomer meets in the first five minutes: the target's output shown once,
//! shell completions and a man page, and options that do what their help says.

mod common;

use std::process::{Command, Output};

use clap::CommandFactory;
use common::*;
use ldcost::cli::Cli;
use ldcost::report::Document;

fn ldcost_in(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ldcost"))
        .current_dir(dir)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_BIND_NOW")
        .output()
        .unwrap()
}

fn ldcost(args: &[&str]) -> Output {
    ldcost_in(std::path::Path::new("/"), args)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Whether `ldcost profile` can trace here (exit 8 is the system refusing: ptrace, perf).
fn can_profile(name: &str) -> bool {
    let out = ldcost(&[QUICK, &["/bin/true"]].concat());
    if out.status.code() == Some(8) {
        skip(
            name,
            &format!("profile is refused here: {}", text(&out.stderr).trim()),
        );
        return false;
    }
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    true
}

/// The subcommands, from the clap definition itself (no hand-kept list).
fn subcommands() -> Vec<String> {
    let names: Vec<String> = Cli::command()
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    assert!(names.len() >= 6, "{names:?}");
    names
}

#[test]
fn the_targets_output_is_shown_once_all_or_never() {
    if !can_profile("the_targets_output_is_shown_once_all_or_never") {
        return;
    }
    let dir = tempdir();
    let marker = "ldcost-first-minutes-marker-7f3a";
    let count = |out: &Output| text(&out.stdout).lines().filter(|l| *l == marker).count();
    let json = dir.path().join("p.json");
    let json_s = json.to_str().unwrap();
    let base = ["profile", "-n", "3", "--warmup", "2", "--no-ld-debug"];
    let run = |extra: &[&str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(extra);
        a.extend_from_slice(&["--json", json_s, "/bin/echo", "--", marker]);
        let out = ldcost_in(dir.path(), &a);
        assert_eq!(out.status.code(), Some(0), "{a:?}: {}", text(&out.stderr));
        let doc: Document = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        (out, doc.profile.expect("a profile section"))
    };
    // Default: the first measured run's output only.
    let (out, p) = run(&[]);
    assert!(p.raw.len() > 1, "several runs were made: {}", p.raw.len());
    assert_eq!(count(&out), 1, "default: shown once\n{}", text(&out.stdout));
    // --quiet-target: never.
    let (out, _) = run(&["--quiet-target"]);
    assert_eq!(count(&out), 0, "--quiet-target\n{}", text(&out.stdout));
    // --show-output: every run the document counts (warm-up and every measured, reference and
    // uninstrumented run).
    let (out, p) = run(&["--show-output"]);
    let runs = p.warmup + p.raw.len();
    assert!(runs > 3, "{runs}");
    assert_eq!(count(&out), runs, "--show-output\n{}", text(&out.stdout));
}

#[test]
fn bash_completions_name_every_subcommand_and_parse() {
    let out = ldcost(&["completions", "bash"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let script = text(&out.stdout);
    for s in subcommands() {
        assert!(script.contains(&s), "the bash script lacks {s}");
    }
    assert!(
        script.contains("--show-output"),
        "profile's options are completed"
    );
    if !tools(
        "bash_completions_name_every_subcommand_and_parse",
        &["bash"],
    ) {
        return;
    }
    let dir = tempdir();
    let f = dir.path().join("ldcost.bash");
    std::fs::write(&f, &script).unwrap();
    let check = Command::new("bash").arg("-n").arg(&f).output().unwrap();
    assert!(check.status.success(), "bash -n: {}", text(&check.stderr));
    // Other shells are generated too.
    for sh in ["zsh", "fish", "elvish", "powershell"] {
        let out = ldcost(&["completions", sh]);
        assert_eq!(out.status.code(), Some(0), "{sh}");
        assert!(text(&out.stdout).contains("profile"), "{sh}");
    }
    assert_eq!(ldcost(&["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn the_man_page_renders_and_names_every_subcommand() {
    let out = ldcost(&["man"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let roff = text(&out.stdout);
    assert!(
        roff.lines().any(|l| l.starts_with(".TH ldcost 1")),
        "a .TH header"
    );
    assert!(roff.contains(".SH \"EXIT STATUS\""), "the exit codes");
    for s in subcommands() {
        let head = format!(".SH \"LDCOST {}\"", s.to_uppercase());
        assert!(roff.contains(&head), "no section {head}");
    }
    if !tools(
        "the_man_page_renders_and_names_every_subcommand",
        &["groff"],
    ) {
        return;
    }
    let mut g = Command::new("groff")
        .args(["-man", "-Tutf8", "-ww", "-z"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    g.stdin.take().unwrap().write_all(roff.as_bytes()).unwrap();
    let g = g.wait_with_output().unwrap();
    assert!(g.status.success(), "groff failed");
    assert!(g.stderr.is_empty(), "groff warns: {}", text(&g.stderr));
}

#[test]
fn fork_takes_a_number_and_leaves_a_path_alone() {
    let parse = |args: &[&str]| {
        let argv: Vec<std::ffi::OsString> = args.iter().map(|a| a.into()).collect();
        match Cli::try_parse_from_normalized(argv) {
            Ok(ldcost::cli::Command::Profile(p)) => p,
            other => panic!("{args:?}: {other:?}"),
        }
    };
    // clap's own default for a bare `--fork` (no value follows it).
    let bare = parse(&["ldcost", "profile", "/bin/true", "--fork"]).fork;
    assert!(bare.is_some());
    let p = parse(&["ldcost", "profile", "--fork", "/bin/true"]);
    assert_eq!((p.fork, p.target.to_str()), (bare, Some("/bin/true")));
    let p = parse(&["ldcost", "profile", "--fork", "500", "/bin/true"]);
    assert_eq!((p.fork, p.target.to_str()), (Some(500), Some("/bin/true")));
    let p = parse(&[
        "ldcost",
        "profile",
        "--fork=7",
        "/bin/true",
        "--",
        "--fork",
        "9",
    ]);
    assert_eq!(p.fork, Some(7));
    assert_eq!(
        p.args,
        vec!["--fork", "9"],
        "after -- everything is the target's"
    );
    // Through the binary: the path is the target, not a bad value of --fork.
    let out = ldcost(&["profile", "--fork", "/nonexistent/x"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
}

#[test]
fn timeout_zero_is_a_usage_error() {
    let out = ldcost(&["profile", "--timeout", "0", "/bin/true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--timeout"),
        "{}",
        text(&out.stderr)
    );
    let out = ldcost(&["compare", "--timeout", "0", "/bin/true", "/bin/true"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_child_program_that_cannot_run_is_refused_before_anything_runs() {
    let dir = tempdir();
    let noexec = dir.path().join("not-executable");
    std::fs::write(&noexec, "#!/bin/sh\n").unwrap();
    for child in ["exec:/nonexistent", &format!("exec:{}", noexec.display())] {
        let out = ldcost(&["profile", "--fork=5", "--child", child, "/bin/true"]);
        assert_eq!(out.status.code(), Some(3), "{child}: {}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(
            err.lines()
                .next()
                .unwrap()
                .contains(&format!("--child {child}")),
            "{err}"
        );
        assert!(out.stdout.is_empty(), "nothing was measured");
    }
}

#[test]
fn sample_runs_help_and_the_sampled_fork_loop_agree() {
    let help = text(&ldcost(&["profile", "--help"]).stdout);
    let para: String = help
        .split("--sample-runs")
        .nth(1)
        .unwrap()
        .split("\n      --")
        .next()
        .unwrap()
        .to_string();
    assert!(para.contains("--fork N"), "{para}");
    // The sampled loop's size follows --fork, not --sample-runs.
    let argv: Vec<std::ffi::OsString> = [
        "ldcost",
        "profile",
        "--fork=50",
        "--sample-runs",
        "7",
        "/bin/true",
    ]
    .iter()
    .map(|a| a.into())
    .collect();
    let Ok(ldcost::cli::Command::Profile(p)) = Cli::try_parse_from_normalized(argv) else {
        panic!()
    };
    let run = ldcost::config::ProfileRun::from_args(*p);
    assert_eq!(run.fork.unwrap().sample_iterations, 50);
}

#[test]
fn no_reference_says_what_was_done_instead() {
    if !can_profile("no_reference_says_what_was_done_instead") {
        return;
    }
    let out = ldcost(&[
        "profile",
        "--detail",
        "-n",
        "2",
        "--no-reference",
        "--no-ld-debug",
        "--quiet-target",
        "/bin/true",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(!t.contains("n/a ms"), "{t}");
    assert!(t.contains("not measured (no reference runs"), "{t}");
    // The header and the instrumentation section say the same about the stops' cost: each
    // stop replayed in the same run is subtracted (no reference run needed), or, when no stop
    // could be replayed, nothing is.
    let subtracted = t.contains("less the measured cost of ptrace stops");
    assert_eq!(
        subtracted,
        t.contains("subtracted from the phases"),
        "header and section disagree: {t}"
    );
    assert_eq!(!subtracted, t.contains("nothing subtracted"), "{t}");
}

#[test]
fn folded_dash_writes_the_stacks_to_standard_output() {
    if !can_profile("folded_dash_writes_the_stacks_to_standard_output") {
        return;
    }
    let dir = tempdir();
    let out = ldcost_in(
        dir.path(),
        &[
            "profile",
            "-n",
            "1",
            "--no-reference",
            "--no-ld-debug",
            "--sample-runs",
            "2",
            "--folded",
            "-",
            "/bin/true",
        ],
    );
    if out.status.code() == Some(8) {
        skip(
            "folded_dash_writes_the_stacks_to_standard_output",
            "sampling is refused here",
        );
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!dir.path().join("-").exists(), "no file named -");
    let t = text(&out.stdout);
    assert!(
        !t.is_empty(),
        "stacks on stdout; stderr: {}",
        text(&out.stderr)
    );
    for l in t.lines() {
        let (stack, n) = l.rsplit_once(' ').unwrap_or_else(|| panic!("{l:?}"));
        assert!(
            !stack.is_empty() && n.parse::<u64>().is_ok(),
            "a folded line: {l:?}"
        );
    }
    assert!(
        t.lines().any(|l| l.starts_with("exec;")),
        "rooted by exec:\n{t}"
    );
}

/// A fresh private directory, removed when the test ends (the runs' outputs go there).
fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}
