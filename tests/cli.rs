//! The binary end to end: `ldcost deps` text and JSON on real targets, read back with
//! deny_unknown_fields, and the numbers checked against ldd and LD_DEBUG-independent sums.

mod common;

use std::process::Command;

use common::*;
use ldcost::report::{Document, SCHEMA_VERSION};

fn ldcost(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ldcost"))
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_BIND_NOW")
        .output()
        .unwrap()
}

#[test]
fn json_to_stdout_reads_back_and_adds_up() {
    let out = ldcost(&["deps", "--json", "-", "/bin/ls"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Document =
        serde_json::from_slice(&out.stdout).expect("stdout is only the JSON document");
    assert_eq!(doc.schema_version, SCHEMA_VERSION);
    assert_eq!(doc.command, "deps");
    let deps = doc.deps.unwrap();
    let objs = &deps.closure.objects;
    assert_eq!(deps.totals.objects, objs.len() as u64);
    assert_eq!(
        deps.totals.startup_lookups,
        objs.iter()
            .map(|o| o.info.relocations.startup_lookups)
            .sum::<u64>()
    );
    assert_eq!(
        deps.totals.relocations_total,
        objs.iter().map(|o| o.info.relocations.total).sum::<u64>()
    );
    // The same closure ldd reports.
    if tools("json_ldd", &["ldd"]) {
        let ldd = ldd(std::path::Path::new("/bin/ls"), &[]).unwrap();
        let theirs: Vec<String> = ldd.iter().filter_map(|l| l.path.clone()).collect();
        let ours: Vec<String> = objs[1..]
            .iter()
            .filter(|o| o.in_scope)
            .map(|o| o.path.clone())
            .collect();
        assert_eq!(ours, theirs);
    }
    // readelf agrees on every object's relocation types.
    if tools("json_readelf", &["readelf"]) {
        for o in objs {
            assert_eq!(
                o.info.relocations.by_type,
                readelf_reloc_counts(std::path::Path::new(&o.path)),
                "{}",
                o.path
            );
        }
    }
}

#[test]
fn text_report_tree_and_flat() {
    let tree = ldcost(&["deps", "/bin/ls"]);
    assert_eq!(tree.status.code(), Some(0));
    let t = String::from_utf8_lossy(&tree.stdout);
    // Each DT_NEEDED entry of /bin/ls (readelf) is a direct child of the root, with the path
    // ldd resolves it to.
    if tools("text_report_tree", &["ldd", "readelf"]) {
        let ls = std::path::Path::new("/bin/ls");
        let resolved = ldd(ls, &[]).expect("ldd lists /bin/ls");
        let needed = readelf_needed(ls);
        assert!(
            !needed.is_empty(),
            "readelf -dW /bin/ls lists NEEDED entries"
        );
        for name in needed {
            let path = resolved
                .iter()
                .find(|l| l.name == name)
                .and_then(|l| l.path.clone())
                .unwrap_or_else(|| panic!("ldd resolves {name}: {resolved:?}"));
            let child = format!("── {name} => {path} ");
            assert!(
                t.lines()
                    .any(|l| (l.starts_with("├") || l.starts_with("└")) && l.contains(&child)),
                "/bin/ls's DT_NEEDED {name} is a direct child `{child}` of the root:\n{t}"
            );
        }
    }
    assert!(t.contains("Relocation types over the closure"));
    assert!(t.contains("R_X86_64_JUMP_SLOT"));
    assert!(t.contains("of start-up symbol lookups come from"));
    let flat = ldcost(&["deps", "--flat", "/bin/ls"]);
    let f = String::from_utf8_lossy(&flat.stdout);
    assert!(f.contains("Load order (the global symbol lookup scope)"));
    assert!(!f.contains("Dependency tree"));
    // Both views carry the same tables.
    let tail = |s: &str| s[s.find("Objects (in load order)").unwrap()..].to_string();
    assert_eq!(tail(&t), tail(&f));
}

#[test]
fn json_file_and_text_together() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.json");
    let out = ldcost(&["deps", "--json", p.to_str().unwrap(), "/bin/true"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("ldcost deps /bin/true"));
    let doc: Document = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    assert_eq!(doc.target, "/bin/true");
}

#[test]
fn help_documents_exit_codes() {
    let out = ldcost(&["deps", "--help"]);
    let h = String::from_utf8_lossy(&out.stdout);
    for code in ["0 ", "1 ", "2 ", "3 ", "4 ", "5 ", "6 ", "7 ", "70 "] {
        assert!(
            h.contains(&format!("  {code}")),
            "exit code {code} undocumented"
        );
    }
}

/// Colour on a terminal (a pty from util-linux `script`), none when piped or with NO_COLOR.
#[test]
fn colour_only_on_a_terminal() {
    if !tools("colour_only_on_a_terminal", &["script"]) {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_ldcost");
    let on_tty = |no_color: bool| -> String {
        let mut c = Command::new("script");
        c.args(["-qc", &format!("{bin} deps /bin/true"), "/dev/null"])
            .env("TERM", "xterm")
            .env_remove("NO_COLOR");
        if no_color {
            c.env("NO_COLOR", "1");
        }
        String::from_utf8_lossy(&c.output().unwrap().stdout).into_owned()
    };
    let tty = on_tty(false);
    assert!(tty.contains("\x1b[1mDependency tree"), "{tty:?}");
    assert!(!on_tty(true).contains('\x1b'));
    let piped = ldcost(&["deps", "/bin/true"]);
    assert!(!String::from_utf8_lossy(&piped.stdout).contains('\x1b'));
}

/// With `--no-ld-debug` there is no glibc figure to show, so the report shows no
/// "glibc n/a" cross-check and no empty glibc column; `deps`' prediction is still printed,
/// under a title saying it is not cross-checked, with the document's own figures.
#[test]
fn no_ld_debug_leaves_out_the_glibc_cross_check() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ls.json");
    let out = ldcost(&[
        "profile",
        "--detail",
        "/bin/ls",
        "-n",
        "1",
        "--no-ld-debug",
        "--quiet-target",
        "--json",
        json.to_str().unwrap(),
    ]);
    if out.status.code() == Some(8) {
        skip(
            "no_ld_debug_leaves_out_the_glibc_cross_check",
            "ldcost profile is refused here (exit 8: ptrace or perf)",
        );
        return;
    }
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for absent in [
        "Cross-check",
        "glibc n/a",
        "bindings (glibc)",
        "n/a from cache",
    ] {
        assert!(
            !text.contains(absent),
            "{absent:?} under --no-ld-debug:\n{text}"
        );
    }
    let doc: Document = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let p = doc.profile.expect("a profile section");
    assert!(p.ld_debug.is_none(), "no LD_DEBUG run");
    let pr = p.prediction.expect("deps' prediction of /bin/ls");
    let expected = [
        "Predicted by ldcost deps (glibc's LD_DEBUG=statistics not gathered: no cross-check)"
            .to_string(),
        format!(
            "  symbol lookups at start-up: {} (+{} from cache)",
            pr.lookups, pr.cache_hits
        ),
        format!(
            "  relative relocations: {} (DT_RELACOUNT {})",
            pr.relative_total, pr.relacount
        ),
        format!("  PLT slots left to lazy binding: {}", pr.lazy_deferred),
    ];
    for line in expected {
        assert!(text.contains(&line), "{line:?} in:\n{text}");
    }
    assert!(
        text.contains("lookups (deps)"),
        "the per-object table stays:\n{text}"
    );
}

/// A timeout while the target has not reached `--at` is not a fork loop that ran
/// too long: the message says --at was not reached, and the hint does not say "lower --fork".
#[test]
fn a_timeout_before_the_injection_point_names_at() {
    let out = ldcost(&[
        "profile",
        "--fork=10",
        "--at",
        "exit",
        "--timeout",
        "0.5",
        "--no-exec",
        "/bin/sleep",
        "--",
        "5",
    ]);
    if out.status.code() == Some(8) {
        skip(
            "a_timeout_before_the_injection_point_names_at",
            "ldcost profile is refused here (exit 8: ptrace)",
        );
        return;
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "one error line and a hint: {err}");
    assert!(
        lines[0].starts_with("ldcost: error: ") && lines[0].contains("before reaching --at exit"),
        "{err}"
    );
    assert!(
        lines[1].starts_with("  hint: ") && lines[1].contains("--timeout"),
        "{err}"
    );
    assert!(!err.contains("lower --fork"), "no fork ran: {err}");
    assert!(out.stdout.is_empty(), "nothing was measured");
}

/// `--fork N` is read as N forks wherever the subcommand is: after the global options too
/// (they are flags, so the subcommand is the first argument that is not an option).
#[test]
fn fork_count_is_parsed_after_global_options() {
    use ldcost::cli::{Cli, Command as Sub};
    let parse = |args: &[&str]| {
        Cli::try_parse_from_normalized(
            std::iter::once("ldcost")
                .chain(args.iter().copied())
                .map(std::ffi::OsString::from),
        )
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    };
    let cases: [(&[&str], u64, &str, usize); 6] = [
        (&["profile", "./t", "--fork", "7", "--no-exec"], 7, "./t", 0),
        (
            &["--no-pin", "profile", "./t", "--fork", "7", "--no-exec"],
            7,
            "./t",
            0,
        ),
        (
            &["--no-progress", "profile", "--fork", "5", "./t"],
            5,
            "./t",
            0,
        ),
        (
            &[
                "--no-pin",
                "--no-progress",
                "profile",
                "--fork",
                "12",
                "./t",
            ],
            12,
            "./t",
            0,
        ),
        // No number: the default count, and the path stays the target.
        (&["--no-pin", "profile", "--fork", "./t"], 1000, "./t", 0),
        // After `--` a number is the target's argument.
        (
            &[
                "--no-pin", "profile", "--fork=2", "./t", "--", "--fork", "3",
            ],
            2,
            "./t",
            2,
        ),
    ];
    for (args, forks, target, nargs) in cases {
        let Sub::Profile(p) = parse(args) else {
            panic!("{args:?} is not profile")
        };
        assert_eq!(p.fork, Some(forks), "{args:?}");
        assert_eq!(p.target, std::path::PathBuf::from(target), "{args:?}");
        assert_eq!(p.args.len(), nargs, "{args:?}: {:?}", p.args);
        if args.contains(&"--no-exec") {
            assert!(p.no_exec, "{args:?}");
        }
    }
    // From the target's first argument on, every word is the target's, unchanged: `--fork 3`
    // there is not rewritten into `--fork=3` (clap would pass either to the target).
    for args in [
        &["profile", "./t", "a", "--fork", "3"][..],
        &["profile", "-n", "3", "./t", "a", "--fork", "3"],
        &["profile", "--json", "9", "./t", "a", "--fork", "3"],
    ] {
        let Sub::Profile(p) = parse(args) else {
            panic!("{args:?} is not profile")
        };
        assert_eq!(p.fork, None, "{args:?}");
        assert_eq!(p.target, std::path::PathBuf::from("./t"), "{args:?}");
        assert_eq!(
            p.args,
            ["a", "--fork", "3"].map(std::ffi::OsString::from),
            "{args:?}"
        );
    }
    let Sub::Compare(c) = parse(&["compare", "./a", "./b", "x", "--fork", "4"]) else {
        panic!("not compare")
    };
    assert_eq!(c.fork, None);
    assert_eq!(c.args, ["x", "--fork", "4"].map(std::ffi::OsString::from));
    let Sub::Compare(c) = parse(&["--no-progress", "compare", "--fork", "9", "./a", "./b"]) else {
        panic!("not compare")
    };
    assert_eq!((c.fork, c.args.len()), (Some(9), 0));
    // Other subcommands keep `--fork 3` as it is (deps has no --fork: a usage error).
    assert!(Cli::try_parse_from_normalized(
        ["ldcost", "--no-pin", "deps", "--fork", "3", "/bin/true"].map(std::ffi::OsString::from)
    )
    .is_err());
}

/// The same through the binary: the fork section counts N forks and the target receives no
/// argument (it records its argc in a file on every run).
#[test]
fn fork_count_after_global_options_end_to_end() {
    let name = "fork_count_after_global_options_end_to_end";
    if !tools(name, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "argc.c",
        r#"#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    FILE *f = fopen(getenv("ARGC_LOG"), "a");
    if (!f) return 1;
    fprintf(f, "%d", argc);
    for (int i = 1; i < argc; i++) fprintf(f, " %s", argv[i]);
    fprintf(f, "\n");
    return fclose(f) != 0;
}
"#,
    );
    cc(dir.path(), &["-O1", "-o", "argc", "argc.c"]);
    let exe = dir.path().join("argc");
    let exe = exe.to_str().unwrap();
    let log = dir.path().join("argc.log");
    let forms: [(&[&str], u64); 3] = [
        (&["--no-pin", "profile", exe, "--fork", "7", "--no-exec"], 7),
        (
            &["--no-progress", "profile", "--fork", "5", exe, "--no-exec"],
            5,
        ),
        (&["profile", "--fork", "3", exe, "--no-exec"], 3),
    ];
    for (args, forks) in forms {
        let _ = std::fs::remove_file(&log);
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--quiet-target", "--json", "-"]);
        let out = Command::new(env!("CARGO_BIN_EXE_ldcost"))
            .args(&all)
            .env("ARGC_LOG", &log)
            .output()
            .unwrap();
        if out.status.code() == Some(8) {
            skip(name, "ldcost profile is refused here (exit 8: ptrace)");
            return;
        }
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{all:?}: {err}");
        let doc: Document = serde_json::from_slice(&out.stdout).expect("a JSON document");
        let fork = doc.fork.expect("a fork section");
        assert_eq!(fork.iterations, forks, "{all:?}");
        assert!(doc.profile.is_none(), "--no-exec was seen: {all:?}");
        let runs = std::fs::read_to_string(&log).expect("the target ran");
        assert!(
            !runs.is_empty() && runs.lines().all(|l| l == "1"),
            "{all:?}: the target got arguments:\n{runs}"
        );
    }
}

/// Absurd numbers are usage errors (exit 2) that state the accepted range, never an internal
/// error: `--timeout 1e20` used to panic converting to a Duration.
#[test]
fn absurd_option_values_are_usage_errors() {
    let cases: [(&[&str], &str); 14] = [
        (&["profile", "--timeout", "1e20", "/bin/true"], "<= 1000000"),
        (&["profile", "--timeout", "0", "/bin/true"], "> 0"),
        (&["profile", "--timeout", "nan", "/bin/true"], "> 0"),
        (
            &["compare", "--timeout", "1e20", "/bin/true", "/bin/true"],
            "<= 1000000",
        ),
        (
            &["profile", "--sample-deadline", "1e20", "/bin/true"],
            "<= 1000000",
        ),
        (&["profile", "--sample-deadline=-1", "/bin/true"], "> 0"),
        (&["profile", "-n", "0", "/bin/true"], "1..=1000"),
        (
            &["profile", "--warmup", "4000000000", "/bin/true"],
            "0..=1000",
        ),
        (
            &["compare", "--warmup", "1001", "/bin/true", "/bin/true"],
            "0..=1000",
        ),
        (&["profile", "--fork=0", "/bin/true"], "from 1 to 1000000"),
        (&["profile", "--frequency", "0", "/bin/true"], "1..=1000000"),
        (
            &["compare", "--sample-runs", "0", "/bin/true", "/bin/true"],
            "1..=10000",
        ),
        (
            &["diff", "--fail-above", "1e300", "a.json", "b.json"],
            "<= 1000000",
        ),
        (
            &["compare", "--fail-above=-5", "/bin/true", "/bin/true"],
            ">= 0",
        ),
    ];
    for (args, range) in cases {
        let out = ldcost(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.starts_with("ldcost: error: invalid value")
                && err.contains(range)
                && err.lines().count() == 2
                && err.lines().nth(1).unwrap_or("").starts_with("  hint: "),
            "{args:?}: expected the range `{range}`: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// `completions` and `man` into a pipe whose reader has gone (`| head -1`): exit 0 and no
/// message, as every other command. The read end is closed before ldcost starts, so its first
/// write fails with EPIPE.
#[test]
fn closed_pipe_is_not_an_error_for_completions_and_man() {
    use std::os::fd::FromRawFd;
    for args in [&["completions", "bash"][..], &["man"]] {
        let mut fds = [0; 2];
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: both descriptors were just created by pipe2 and are owned here only.
        let (read, write) = unsafe {
            (
                std::fs::File::from_raw_fd(fds[0]),
                std::fs::File::from_raw_fd(fds[1]),
            )
        };
        drop(read);
        let out = Command::new(env!("CARGO_BIN_EXE_ldcost"))
            .args(args)
            .stdout(std::process::Stdio::from(write))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

/// A thread the system refuses is a refusal (exit 8, with a hint) or is done without, never an
/// internal error: ldcost runs under address-space limits from where its own image no longer
/// loads (the dynamic loader fails: exit 127, or a signal) up to where everything fits, and no
/// run may exit 70.
#[test]
fn refused_threads_are_not_internal_errors() {
    use std::os::unix::process::CommandExt;
    let mut fitted = false;
    for mib in 12..=64u64 {
        for args in [
            &["deps", "/bin/true"][..],
            &[
                "profile",
                "/bin/true",
                "-n",
                "1",
                "--timeout",
                "5",
                "--no-ld-debug",
            ],
        ] {
            let limit = mib << 20;
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_ldcost"));
            cmd.args(args).env_remove("LD_LIBRARY_PATH");
            // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    let lim = libc::rlimit {
                        rlim_cur: limit,
                        rlim_max: limit,
                    };
                    libc::setrlimit(libc::RLIMIT_AS, &lim);
                    Ok(())
                });
            }
            let out = cmd.output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_ne!(out.status.code(), Some(70), "{mib} MiB, {args:?}: {err}");
            assert!(
                !err.contains("internal error"),
                "{mib} MiB, {args:?}: {err}"
            );
            if err.contains("refused to start a thread") {
                assert_eq!(out.status.code(), Some(8), "{mib} MiB, {args:?}: {err}");
                assert!(err.contains("hint: raise"), "{err}");
            }
            fitted |= out.status.code() == Some(0);
        }
        if fitted {
            break;
        }
    }
    assert!(fitted, "no limit up to 64 MiB let ldcost run");
}

/// A `--timeout` that expires before the program starts is named as the cause of the kill.
#[test]
fn a_timeout_before_exec_is_named() {
    let out = ldcost(&["profile", "/bin/true", "--timeout", "1e-7"]);
    let err = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(8) {
        skip(
            "a_timeout_before_exec_is_named",
            "ldcost profile is refused here (exit 8: ptrace)",
        );
        return;
    }
    assert_eq!(out.status.code(), Some(9), "{err}");
    assert!(err.starts_with("ldcost: error: "), "{err}");
    // The kill may land after the exec on a loaded machine (then it is a timed-out run); a
    // kill before it must name the timeout.
    if err.contains("before exec") {
        assert!(
            err.contains("--timeout (0.0000001 s) expired before the program started"),
            "{err}"
        );
    }
}

/// `ldcost ARGS` under a resource limit (`setrlimit(resource, limit)` in the child before
/// exec): (exit code, stdout, stderr).
fn ldcost_limited(
    args: &[&str],
    resource: libc::__rlimit_resource_t,
    limit: u64,
) -> (Option<i32>, String, String) {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ldcost"));
    cmd.args(args).env_remove("LD_LIBRARY_PATH");
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            libc::setrlimit(resource, &lim);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Under `ulimit -n` from 4 up, `profile --fork` and `deps` either run or stop with exit 8
/// and the `ulimit -n` hint: a descriptor the system refuses is never "the kernel lacks the
/// tracepoint", a counter "not available", a library not found, or a lost target (exit 9).
#[test]
fn a_low_ulimit_n_is_a_refusal_never_an_absence() {
    let profile = [
        "--no-progress",
        "profile",
        "/bin/true",
        "--fork",
        "5",
        "-n",
        "1",
        "--timeout",
        "20",
    ];
    let (code, _, err) = ldcost_limited(&profile, libc::RLIMIT_NOFILE, 1024);
    if code != Some(0) {
        skip(
            "a_low_ulimit_n_is_a_refusal_never_an_absence",
            &format!("profile --fork does not run here ({code:?}): {err}"),
        );
        return;
    }
    let (mut refused, mut ran) = (0, 0);
    for n in 4..=24u64 {
        for args in [&profile[..], &["deps", "/bin/true"][..]] {
            let (code, out, err) = ldcost_limited(args, libc::RLIMIT_NOFILE, n);
            let all = format!("{out}{err}");
            assert!(
                !all.contains("lacks the tracepoint"),
                "ulimit -n {n}, {args:?}: {all}"
            );
            match code {
                Some(8) => {
                    let lines: Vec<&str> = err.lines().collect();
                    assert_eq!(lines.len(), 2, "ulimit -n {n}, {args:?}: {err}");
                    assert!(lines[0].starts_with("ldcost: error: "), "{err}");
                    assert!(
                        lines[1].contains("raise `ulimit -n`"),
                        "ulimit -n {n}: {err}"
                    );
                    refused += 1;
                }
                Some(0) => {
                    // A refusal laundered into the report as a missing figure (deps' built-in
                    // rules may be the one fallback, named as such with its cause).
                    let figures: String = out
                        .lines()
                        .filter(|l| !l.starts_with("search rules: built-in defaults (cannot run"))
                        .collect();
                    assert!(
                        !figures.contains("Too many open files") && !figures.contains("EMFILE"),
                        "ulimit -n {n}, {args:?}: {out}"
                    );
                    ran += 1;
                }
                _ => panic!("ulimit -n {n}, {args:?}: exit {code:?}: {err}"),
            }
        }
    }
    assert!(refused > 0 && ran > 0, "refused {refused}, ran {ran}");
}

/// When `deps` cannot ask ld.so (here: no descriptor left for the pipe to `ld.so --help`), it
/// says so in one line on stderr, names the cause and the limit, and the report and the
/// JSON's `rules.fallback` carry the same reason; rules read from ld.so have neither.
#[test]
fn deps_says_why_it_falls_back_to_built_in_rules() {
    const WARN: &str = "ldcost: warning: search rules: built-in defaults, not ld.so's: \
                        cannot run `/lib64/ld-linux-x86-64.so.2 --help`: Too many open files \
                        (os error 24); too many open files: raise `ulimit -n`";
    if !std::path::Path::new("/lib64/ld-linux-x86-64.so.2").exists() {
        skip(
            "deps_says_why_it_falls_back_to_built_in_rules",
            "no /lib64/ld-linux-x86-64.so.2",
        );
        return;
    }
    let mut fell_back = false;
    for n in 3..=16u64 {
        let (code, out, err) = ldcost_limited(&["deps", "/bin/true"], libc::RLIMIT_NOFILE, n);
        let (jcode, json, jerr) = ldcost_limited(
            &["deps", "--json", "-", "/bin/true"],
            libc::RLIMIT_NOFILE,
            n,
        );
        if code != Some(0) || jcode != Some(0) {
            continue;
        }
        let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
        let rules = &doc["deps"]["rules"];
        let line = out.lines().nth(1).unwrap_or_default();
        if err.contains("built-in defaults") {
            fell_back = true;
            assert_eq!(err.trim_end(), WARN, "ulimit -n {n}");
            let why = WARN.split("not ld.so's: ").nth(1).unwrap();
            assert_eq!(line, format!("search rules: built-in defaults ({why})"));
            if jerr.contains("built-in defaults") {
                assert_eq!(rules["source"], "built-in", "{json}");
                assert_eq!(rules["fallback"], why, "{json}");
            }
        } else {
            assert!(
                line.starts_with("search rules: from `"),
                "ulimit -n {n}: {line}"
            );
            assert!(!err.contains("warning: search rules"), "{err}");
        }
        if !jerr.contains("built-in defaults") {
            assert_eq!(rules["source"], "ld-so-help", "{json}");
            assert!(rules.get("fallback").is_none(), "{json}");
        }
    }
    if !fell_back {
        skip(
            "deps_says_why_it_falls_back_to_built_in_rules",
            "no ulimit -n from 3 to 16 let deps run without ld.so --help",
        );
    }
}

/// Under a low `ulimit -v`, a library that cannot be mapped (ENOMEM) is a refusal, exit 8
/// with the `ulimit -v` hint, never "found ... but ld.so cannot load it" (exit 1).
#[test]
fn a_low_ulimit_v_mapping_a_library_is_a_refusal() {
    let mut refused = false;
    for kib in (16_000..=40_000u64).step_by(500) {
        let (code, out, err) = ldcost_limited(&["deps", "/bin/true"], libc::RLIMIT_AS, kib << 10);
        let all = format!("{out}{err}");
        assert!(!all.contains("cannot load it"), "ulimit -v {kib}: {all}");
        assert_ne!(code, Some(1), "ulimit -v {kib}: {all}");
        assert_ne!(code, Some(70), "ulimit -v {kib}: {all}");
        if err.contains("Cannot allocate memory") && err.starts_with("ldcost: error: ") {
            assert_eq!(code, Some(8), "ulimit -v {kib}: {err}");
            assert!(err.contains("hint: out of memory: raise"), "{err}");
            assert!(err.contains("`ulimit -v`"), "{err}");
            refused = true;
        }
    }
    if !refused {
        skip(
            "a_low_ulimit_v_mapping_a_library_is_a_refusal",
            "no ulimit -v from 16 to 40 MB refused deps a library's mapping here",
        );
    }
}

/// A count after `--fork` that is not a whole number is a usage error naming `--fork`, never
/// taken for the target's name ("1e3 does not exist").
#[test]
fn fork_count_that_is_not_a_whole_number_is_a_usage_error() {
    for count in ["1e3", "1.5", "1_000", "10k", "0", "2000000"] {
        for sub in ["profile", "compare"] {
            let args: Vec<&str> = if sub == "profile" {
                vec!["--no-progress", sub, "--fork", count, "/bin/true"]
            } else {
                vec![sub, "--fork", count, "/bin/true", "/bin/true"]
            };
            let out = ldcost(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.contains("--fork takes a whole number of forks"),
                "{args:?}: {err}"
            );
            assert!(!err.contains("does not exist"), "{args:?}: {err}");
            assert!(out.stdout.is_empty(), "{args:?}");
        }
    }
}

/// Words after the target that are ldcost's own long options: named by one warning, taken
/// from clap's own option list (so `--timeline`, added late, is one), silenced by `--`.
#[test]
fn options_after_the_target_are_named_once() {
    use ldcost::cli::{normalize_args, options_after_target, Cli};
    let warn = |args: &[&str]| {
        let argv = normalize_args(
            std::iter::once("ldcost")
                .chain(args.iter().copied())
                .map(std::ffi::OsString::from),
        );
        let cli = <Cli as clap::Parser>::try_parse_from(argv.iter().cloned())
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        options_after_target(&argv, &cli.command)
    };
    assert_eq!(
        warn(&["profile", "./a.out", "x", "--json", "x.json"]).as_deref(),
        Some("ldcost: `--json` after the program is passed to it; put ldcost's options before the program")
    );
    assert_eq!(
        warn(&["profile", "./a.out", "x", "--timeline=t.svg", "--json", "j", "--json", "k", "--no-pin"]).as_deref(),
        Some("ldcost: `--timeline`, `--json`, `--no-pin` after the program are passed to it; put ldcost's options before the program")
    );
    assert!(warn(&["compare", "./a", "./b", "x", "--runs", "3"])
        .is_some_and(|w| w.starts_with("ldcost: `--runs` after the commands is passed to both")));
    // Said on purpose, or not an option of profile's: nothing.
    for quiet in [
        &["profile", "./a.out", "--", "x", "--json", "x.json"][..],
        &["profile", "./a.out", "x", "--", "--json"],
        &["profile", "./a.out", "x", "--jsonx", "-n", "--verbose-ish"],
        &["profile", "--json", "j", "./a.out", "x"],
        &["deps", "/bin/true"],
    ] {
        assert_eq!(warn(quiet), None, "{quiet:?}");
    }
}

/// The same through the binary, with a target that logs its argv on every run (the oracle:
/// its own record of what it got): the arguments reach it unchanged, and stderr has the one
/// warning line.
#[test]
fn options_after_the_target_reach_it_and_are_warned_of() {
    let name = "options_after_the_target_reach_it_and_are_warned_of";
    if !tools(name, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "argv.c",
        r#"#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    FILE *f = fopen(getenv("ARGV_LOG"), "a");
    if (!f) return 1;
    for (int i = 1; i < argc; i++) fprintf(f, "%s%s", i > 1 ? " " : "", argv[i]);
    fprintf(f, "\n");
    return fclose(f) != 0;
}
"#,
    );
    cc(dir.path(), &["-O1", "-o", "argv", "argv.c"]);
    let exe = dir.path().join("argv");
    let exe = exe.to_str().unwrap();
    let log = dir.path().join("argv.log");
    let json = dir.path().join("x.json");
    let json = json.to_str().unwrap();
    let forms: [(&[&str], &str, bool); 2] = [
        (
            &[exe, "a", "--json", json, "--runs=2"],
            "--json --runs",
            true,
        ),
        (&[exe, "--", "a", "--json", json, "--runs=2"], "", false),
    ];
    for (tail, _, warned) in forms {
        let _ = std::fs::remove_file(&log);
        let mut all: Vec<&str> = vec!["--no-progress", "profile", "-n", "1", "--quiet-target"];
        all.extend(tail);
        let out = Command::new(env!("CARGO_BIN_EXE_ldcost"))
            .args(&all)
            .env("ARGV_LOG", &log)
            .output()
            .unwrap();
        if out.status.code() == Some(8) {
            skip(name, "ldcost profile is refused here (exit 8: ptrace)");
            return;
        }
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{all:?}: {err}");
        let runs = std::fs::read_to_string(&log).expect("the target ran");
        let want = format!("a --json {json} --runs=2");
        assert!(
            !runs.is_empty() && runs.lines().all(|l| l == want),
            "{all:?}: the target got other arguments:\n{runs}"
        );
        assert!(
            !std::path::Path::new(json).exists(),
            "{all:?}: ldcost wrote the target's --json"
        );
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("after the program"))
            .collect();
        if warned {
            assert_eq!(
                lines,
                ["ldcost: `--json`, `--runs` after the program are passed to it; put ldcost's options before the program"],
                "{err}"
            );
        } else {
            assert!(lines.is_empty(), "{err}");
        }
    }
}
