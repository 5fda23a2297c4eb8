//! Progress bars through the real binary: drawn on a terminal (a pty from
//! util-linux `script`, as tests/cli.rs's colour test), never when standard error is piped,
//! with `--json -`, `--no-progress` or NO_COLOR.
//!
//! | case | expectation |
//! | --- | --- |
//! | `profile -n 3 /bin/true` on a pty | the bar `N/11 runs` (1 warm-up + 3 × 3 + 1 LD_DEBUG), each kind of run named |
//! | the same with `--json -`, `--no-progress`, NO_COLOR; or piped | no bar, no `\r` on stderr |
//! | `profile -n 2 /bin/echo MARK` on a pty | the target's line shown once, on a line of its own (the bar is cleared around it) |
//! | `profile --fork 20000 --no-exec` on a pty | the spinner `fork loop: 20000 forks` (the loop ran > 1 s) |
//! | `profile --fork 50 --no-exec` on a pty, done in < 1 s | no spinner (it waits a second) |
//! | `compare -n 1 /bin/true /bin/true` on a pty | the bar `N/8 runs` (2 warm-ups + 2 × 3) |
//!
//! The oracle of the bar's length is the command line's own arithmetic; of its presence, the
//! terminal's bytes. Profiling needs ptrace and perf_event_open: where ldcost is refused
//! (exit 8) the tests print `SKIP` (a failure under LDCOST_REQUIRE_ALL).

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{ldcost, skip, tools};

/// What `ldcost ARGS` wrote to a pty (stdout and stderr together), its exit code and how long
/// it took; `env` is set on top of TERM=xterm with NO_COLOR removed.
fn on_pty(args: &str, env: &[(&str, &str)]) -> (String, i32, Duration) {
    let bin = env!("CARGO_BIN_EXE_ldcost");
    let mut c = Command::new("script");
    // -e: script exits with ldcost's code.
    c.args(["-qec", &format!("{bin} {args}"), "/dev/null"])
        .env("TERM", "xterm")
        .env_remove("NO_COLOR")
        .env_remove("LD_BIND_NOW")
        .env_remove("LD_LIBRARY_PATH");
    for (k, v) in env {
        c.env(k, v);
    }
    let t = Instant::now();
    let o = c.output().expect("run script");
    let took = t.elapsed();
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        o.status.code().unwrap_or(-1),
        took,
    )
}

/// The bar of `len` steps as drawn: `K/len runs` for some K.
fn has_bar(text: &str, len: u64) -> bool {
    (0..=len).any(|k| text.contains(&format!(" {k}/{len} runs ")))
}

/// The lines a terminal would show: each line's text after its last carriage return (the bar
/// is redrawn by `\r` and erased by `\r\x1b[2K`; the pty ends lines with `\r\n`).
fn visible_lines(text: &str) -> Vec<String> {
    text.split('\n')
        .map(|l| {
            let l = l.strip_suffix('\r').unwrap_or(l);
            let l = l.rsplit('\r').next().unwrap_or(l);
            l.replace("\x1b[2K", "")
        })
        .collect()
}

/// True (after a SKIP line) when profiling is refused here or `script` is missing.
fn cannot(test: &str, code: i32) -> bool {
    if code == 8 {
        skip(
            test,
            "ldcost profile is refused here (exit 8: ptrace or perf)",
        );
        return true;
    }
    false
}

#[test]
fn profile_bar_on_a_terminal_only() {
    let test = "profile_bar_on_a_terminal_only";
    if !tools(test, &["script"]) {
        return;
    }
    let (tty, code, _) = on_pty("profile -n 3 --quiet-target /bin/true", &[]);
    if cannot(test, code) {
        return;
    }
    assert_eq!(code, 0, "{tty}");
    // 1 warm-up + 3 rounds of (measured, boundaries-only, without ptrace) + LD_DEBUG.
    assert!(has_bar(&tty, 11), "no `K/11 runs` bar on the pty:\n{tty:?}");
    for kind in [
        "warm-up 1/1",
        "measured 3/3",
        "reference 3/3 (boundaries)",
        "reference 3/3 (no ptrace)",
        "LD_DEBUG=statistics",
    ] {
        assert!(tty.contains(kind), "the bar never named {kind:?}:\n{tty:?}");
    }
    // The report itself is still there, after the bar was cleared.
    assert!(
        tty.contains(
            "Phases (start-up order; ld.so start and ld.so other run in pieces between the others)"
        ),
        "{tty:?}"
    );

    for (args, env, why) in [
        (
            "profile -n 3 --quiet-target /bin/true --json -",
            &[][..],
            "--json -",
        ),
        (
            "profile -n 3 --quiet-target /bin/true --no-progress",
            &[][..],
            "--no-progress",
        ),
        (
            "profile -n 3 --quiet-target /bin/true",
            &[("NO_COLOR", "1")][..],
            "NO_COLOR",
        ),
    ] {
        let (text, code, _) = on_pty(args, env);
        assert_eq!(code, 0, "{why}: {text}");
        assert!(!has_bar(&text, 11), "a bar with {why}:\n{text:?}");
        assert!(!text.contains(" runs ["), "a bar with {why}:\n{text:?}");
    }
    // With `--json -` the pty carries the JSON document alone (stderr has nothing to say).
    let (text, _, _) = on_pty("profile -n 3 --quiet-target /bin/true --json -", &[]);
    let json: serde_json::Value = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("--json - on a pty is not one clean document ({e}):\n{text:?}"));
    assert_eq!(json["command"], "profile");

    // Piped: nothing drawn on stderr.
    let piped = ldcost(&["profile", "-n", "3", "--quiet-target", "/bin/true"]);
    assert_eq!(piped.code, 0, "{}", piped.stderr);
    assert!(!has_bar(&piped.stderr, 11), "{:?}", piped.stderr);
    assert!(!piped.stderr.contains('\r'), "{:?}", piped.stderr);
}

/// The target's output (shown in the first measured run only) is never cut by the bar: the
/// bar is cleared while the target runs and redrawn after.
#[test]
fn target_output_on_a_line_of_its_own() {
    let test = "target_output_on_a_line_of_its_own";
    if !tools(test, &["script"]) {
        return;
    }
    let mark = "ldcost-progress-mark-7f3a";
    let (tty, code, _) = on_pty(&format!("profile -n 2 /bin/echo -- {mark}"), &[]);
    if cannot(test, code) {
        return;
    }
    assert_eq!(code, 0, "{tty}");
    assert!(has_bar(&tty, 8), "no `K/8 runs` bar:\n{tty:?}");
    let lines = visible_lines(&tty);
    // The report's title names the target's arguments too: only lines of the target's own.
    let own = lines.iter().filter(|l| l.trim_end() == mark).count();
    assert_eq!(
        own, 1,
        "the target's line is not shown once, alone:\n{tty:?}"
    );
    let cut: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains(mark) && l.contains(" runs ["))
        .collect();
    assert!(
        cut.is_empty(),
        "the target's line shares a line with the bar: {cut:?}"
    );
}

/// A fork loop of more than a second shows a spinner; one that ends within the second shows
/// nothing.
#[test]
fn fork_loop_spinner_after_a_second() {
    let test = "fork_loop_spinner_after_a_second";
    if !tools(test, &["script"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("fork.json");
    let (tty, code, _) = on_pty(
        &format!(
            "profile --fork 20000 --no-exec /bin/true --json {}",
            json.display()
        ),
        &[],
    );
    if cannot(test, code) {
        return;
    }
    assert_eq!(code, 0, "{tty}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let loop_s = doc["fork"]["loop_wall_ns"].as_f64().unwrap() / 1e9;
    // The spinner covers the fork measurement (two loops of 20000 and the probe's set-up):
    // when one of its loops alone takes longer than the spinner's second (about 3 s on a
    // 2-vCPU VM), it shows. A host that forks 20000 times within 1.2 s is told, not failed.
    if loop_s > 1.2 {
        assert!(
            tty.contains("fork loop: 20000 forks of /bin/true"),
            "no spinner over a {loop_s:.1} s fork loop:\n{tty:?}"
        );
    } else {
        eprintln!(
            "NOT CHECKED {test}: 20000 forks in {loop_s:.2} s, too short to ask for the spinner"
        );
    }
    assert!(!tty.contains(" runs ["), "--no-exec: no runs, no bar");

    let (tty, code, took) = on_pty("profile --fork 50 --no-exec /bin/true", &[]);
    assert_eq!(code, 0, "{tty}");
    if took < Duration::from_millis(900) {
        assert!(
            !tty.contains("fork loop:"),
            "a spinner over a loop done in {took:?}:\n{tty:?}"
        );
    } else {
        println!("fork_loop_spinner_after_a_second: --fork 50 took {took:?} (loaded machine); its absence not checked");
    }
}

#[test]
fn compare_bar_on_a_terminal_only() {
    let test = "compare_bar_on_a_terminal_only";
    if !tools(test, &["script"]) {
        return;
    }
    let args = "compare -n 1 --quiet-target /bin/true /bin/true";
    let (tty, code, _) = on_pty(args, &[]);
    if cannot(test, code) {
        return;
    }
    assert!(code == 0 || code == 12, "{tty}");
    // 2 warm-ups (one per side) + 1 round of 2 sides × (measured, boundaries-only, no ptrace).
    assert!(has_bar(&tty, 8), "no `K/8 runs` bar:\n{tty:?}");
    assert!(tty.contains("HEAD measured 1/1"), "{tty:?}");
    let (text, _, _) = on_pty(&format!("{args} --format json"), &[]);
    assert!(
        !text.contains(" runs ["),
        "a bar with --format json:\n{text:?}"
    );
    let piped = ldcost(&[
        "compare",
        "-n",
        "1",
        "--quiet-target",
        "/bin/true",
        "/bin/true",
    ]);
    assert!(!piped.stderr.contains(" runs ["), "{:?}", piped.stderr);
    assert!(!piped.stderr.contains('\r'), "{:?}", piped.stderr);
}
