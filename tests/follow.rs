//! `ldcost profile` of a wrapper: the exec chain is followed to the program that finally runs
//! and `--no-follow` measures the first image.
//!
//! The wrapper is a `#!/bin/sh` script that runs a `$(…)` child first (as a pyenv shim does:
//! a traced child would hang it) and then does `exec /usr/bin/env FIXTURE`; the fixture is a
//! C program built here, linked with libm so that it has objects of its own. Oracles:
//!
//! | figure | oracle | bound |
//! | --- | --- | --- |
//! | `followed[].path` and the header's chain | `strace -f -e trace=execve` of the wrapper: its first process's successful execves | exact, in order |
//! | the per-object rows' objects and `prediction.per_object` | `ldd FIXTURE` (and the fixture itself) | the same names |
//! | `ld_debug.relocations`, `prediction.lookups` | `LD_DEBUG=statistics FIXTURE` run directly | exact |
//! | `--no-follow`: `ld_debug.relocations` | `LD_DEBUG=statistics /bin/sh -c :` run directly | exact |
//!
//! Needs cc, strace, ldd and a machine where `ldcost profile` may trace (exit 8 otherwise:
//! not root, ptrace or perf refused); each prints `SKIP <name>: <reason>` when missing (a
//! failure under LDCOST_REQUIRE_ALL). The per-object rows need ld.so's debug symbols
//! (libc6-dbg); without them that part is skipped with its reason.

mod common;

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{cc, ldd, skip, tools, write};
use ldcost::profile::ProfileSection;
use ldcost::record::{Detail, Phase};
use ldcost::report::Document;

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");

const FIXTURE: &str = r#"
#include <math.h>
#include <stdio.h>
int main(int argc, char **argv) {
    volatile double x = argc;
    printf("%f\n", cos(x));
    return 0;
}
"#;

/// The fixture (`cc -O1 -o fx fx.c -lm`) and its wrapper, in `dir`.
fn fixtures(dir: &Path) -> (PathBuf, PathBuf) {
    write(dir, "fx.c", FIXTURE);
    cc(dir, &["-O1", "-o", "fx", "fx.c", "-lm"]);
    let fx = dir.join("fx");
    let wrap = write(
        dir,
        "wrap",
        &format!(
            "#!/bin/sh\nhere=$(dirname \"$0\")\nexec /usr/bin/env {}\n",
            fx.display()
        ),
    );
    std::fs::set_permissions(&wrap, std::fs::Permissions::from_mode(0o755)).unwrap();
    (fx, wrap)
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run ldcost")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Whether this machine and its tools can run the test (a SKIP line if not).
fn capable(name: &str) -> bool {
    if !tools(name, &["cc", "strace", "ldd"]) {
        return false;
    }
    let out = run(&[
        "profile",
        "-n",
        "1",
        "--warmup",
        "0",
        "--no-reference",
        "--no-ld-debug",
        "/bin/true",
    ]);
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

/// `ldcost profile -n 2 --timeout 30 --quiet-target --json FILE OPTIONS TARGET`: the text report and the
/// profile section of the same run.
fn profile(dir: &Path, options: &[&str], target: &Path) -> (String, ProfileSection) {
    let json = dir.join("profile.json");
    // --timeout: a wrapper stuck on a traced child fails the test instead of hanging it.
    let mut args = vec![
        "profile",
        "-n",
        "2",
        "--timeout",
        "30",
        "--quiet-target",
        "--json",
    ];
    let json_s = json.display().to_string();
    args.push(&json_s);
    args.extend(options);
    let target_s = target.display().to_string();
    args.push(&target_s);
    let out = run(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "ldcost {args:?}: {}",
        text(&out.stderr)
    );
    let doc: Document = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (
        text(&out.stdout),
        doc.profile.expect("a profile section").into(),
    )
}

/// The files the first process of `strace -f -e trace=execve COMMAND` exec'd, in order (its
/// successful execves; `-o` prefixes every line with its pid).
fn strace_execs(dir: &Path, command: &[&Path]) -> Vec<String> {
    let log = dir.join("strace.log");
    let st = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=execve", "-o"])
        .arg(&log)
        .args(command)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run strace");
    assert!(st.success(), "strace {command:?}");
    let log = std::fs::read_to_string(&log).unwrap();
    let first = log
        .split_whitespace()
        .next()
        .expect("a strace line")
        .to_string();
    log.lines()
        .filter_map(|l| l.split_once(char::is_whitespace))
        .filter(|(pid, _)| *pid == first)
        .map(|(_, l)| l.trim_start())
        .filter(|l| l.starts_with("execve(\"") && l.trim_end().ends_with("= 0"))
        .map(|l| {
            l["execve(\"".len()..]
                .split('"')
                .next()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// glibc's own count, from `LD_DEBUG=statistics PROGRAM ARGS` run directly (its stderr).
fn ld_debug_relocations(program: &str, args: &[&str]) -> u64 {
    let out = Command::new(program)
        .args(args)
        .env("LD_DEBUG", "statistics")
        .output()
        .expect("run with LD_DEBUG");
    let err = text(&out.stderr);
    err.lines()
        .find_map(|l| l.split_once("number of relocations:"))
        .and_then(|(_, n)| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no relocation count from LD_DEBUG=statistics {program}: {err}"))
}

fn base(p: &str) -> String {
    p.rsplit('/').next().unwrap_or(p).to_string()
}

/// The objects of the per-object relocation rows, by file name.
fn relocation_objects(p: &ProfileSection) -> BTreeSet<String> {
    p.phases
        .iter()
        .filter(|s| s.phase == Phase::Relocation)
        .filter_map(|s| s.object.as_deref().map(base))
        .collect()
}

#[test]
fn a_wrapper_is_followed_to_the_program_that_runs() {
    const NAME: &str = "a_wrapper_is_followed_to_the_program_that_runs";
    if !capable(NAME) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (fx, wrap) = fixtures(dir);
    let (report, p) = profile(dir, &[], &wrap);

    // The chain, as strace saw the same wrapper exec.
    let paths: Vec<String> = p.followed.iter().map(|i| i.path.clone()).collect();
    let strace = strace_execs(dir, &[&wrap]);
    assert_eq!(paths, strace, "followed vs strace -f -e trace=execve");
    assert_eq!(p.followed[0].interpreter.as_deref(), Some("/bin/sh"));
    let last = p.followed.last().unwrap();
    assert_eq!(Path::new(&last.exe), fx.canonicalize().unwrap());
    let header = format!(
        "followed: {} (#!/bin/sh) → {} → {} (measured: {})",
        strace[0], strace[1], strace[2], last.exe
    );
    assert!(report.contains(&header), "no `{header}` in\n{report}");

    // The per-object rows: ldd's objects (and the fixture itself), not sh's or env's.
    let mut expected: BTreeSet<String> = ldd(&fx, &[])
        .expect("ldd FIXTURE")
        .iter()
        .map(|l| base(l.path.as_deref().unwrap_or(&l.name)))
        .collect();
    expected.insert("fx".into());
    if matches!(p.detail, Detail::DebugSymbols { .. }) {
        assert_eq!(relocation_objects(&p), expected, "per-object rows vs ldd");
    } else {
        let why = format!(
            "per-object rows need ld.so's debug symbols (libc6-dbg): {:?}",
            p.detail
        );
        skip(NAME, &why);
    }

    // glibc's account and the deps model describe the fixture too.
    let direct = ld_debug_relocations(&fx.display().to_string(), &[]);
    let ld = p.ld_debug.as_ref().expect("profile.ld_debug");
    assert_eq!(
        ld.relocations,
        Some(direct),
        "LD_DEBUG=statistics {}",
        fx.display()
    );
    let pr = p.prediction.as_ref().expect("profile.prediction");
    assert_eq!(pr.lookups, direct, "deps' lookups vs LD_DEBUG=statistics");
    let predicted: BTreeSet<String> = pr.per_object.keys().map(|k| base(k)).collect();
    assert_eq!(predicted, expected, "prediction.per_object vs ldd");
}

#[test]
fn no_follow_measures_the_first_image() {
    const NAME: &str = "no_follow_measures_the_first_image";
    if !capable(NAME) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (_, wrap) = fixtures(dir);
    let (report, p) = profile(dir, &["--no-follow"], &wrap);
    assert!(p.followed.is_empty(), "{:?}", p.followed);
    assert!(!report.contains("followed:"), "{report}");
    // sh's own start-up: glibc's count for sh run directly (a start-up's relocations do not
    // depend on the script), not the later images' that share its LD_DEBUG file.
    let direct = ld_debug_relocations("/bin/sh", &["-c", ":"]);
    let ld = p.ld_debug.as_ref().expect("profile.ld_debug");
    assert_eq!(
        ld.relocations,
        Some(direct),
        "LD_DEBUG=statistics /bin/sh -c :"
    );
    assert_eq!(ld.final_relocations, None, "sh execs: it never exits");
    if matches!(p.detail, Detail::DebugSymbols { .. }) {
        assert!(
            relocation_objects(&p).contains("sh"),
            "{:?}",
            relocation_objects(&p)
        );
    }
}

#[test]
fn env_as_the_target_is_followed() {
    const NAME: &str = "env_as_the_target_is_followed";
    if !capable(NAME) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (fx, _) = fixtures(dir);
    let strace = strace_execs(dir, &[Path::new("/usr/bin/env"), &fx]);
    let json = dir.join("env.json");
    let out = run(&[
        "profile",
        "-n",
        "1",
        "--no-reference",
        "--no-ld-debug",
        "--timeout",
        "30",
        "--quiet-target",
        "--json",
        json.to_str().unwrap(),
        "/usr/bin/env",
        fx.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Document = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let p: ProfileSection = doc.profile.expect("a profile section").into();
    let paths: Vec<String> = p.followed.iter().map(|i| i.path.clone()).collect();
    assert_eq!(paths, strace, "followed vs strace -f -e trace=execve");
    assert!(
        p.followed.iter().all(|i| i.interpreter.is_none()),
        "{:?}",
        p.followed
    );
}

#[test]
fn a_chain_that_changes_between_runs_is_an_error_not_another_measurement() {
    const NAME: &str = "a_chain_that_changes_between_runs_is_an_error_not_another_measurement";
    if !capable(NAME) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (fx, _) = fixtures(dir);
    // The first run (the discovery) execs the fixture, every later one /bin/true.
    let seen = dir.join("seen");
    let wrap = write(
        dir,
        "fickle",
        &format!(
            "#!/bin/sh\n[ -e {seen} ] && exec /bin/true\ntouch {seen}\nexec {fx}\n",
            seen = seen.display(),
            fx = fx.display()
        ),
    );
    std::fs::set_permissions(&wrap, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = run(&[
        "profile",
        "-n",
        "1",
        "--timeout",
        "30",
        "--quiet-target",
        wrap.to_str().unwrap(),
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{err}");
    assert!(err.starts_with("ldcost: error: "), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "an error line and a hint line: {err}");
    assert!(
        lines[0].contains("exec chain of") && lines[0].contains("/bin/true"),
        "{err}"
    );
    assert!(
        lines[1].trim_start().starts_with("hint: ") && lines[1].contains("--no-follow"),
        "{err}"
    );
    // Nothing of the target is left: no process runs the fixture or the wrapper.
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(dir.to_str().unwrap()) && !c.contains("ldcost"))
        .collect();
    assert!(left.is_empty(), "left running: {left:?}");
}
