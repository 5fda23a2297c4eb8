//! How targets end: a non-zero status, a signal, a --timeout; threads and children.

use super::fixtures::*;
use super::harness::*;
use super::oracles::*;

// ---------------------------------------------------------------------------------------------
// How targets end.

#[test]
fn target_exiting_non_zero() {
    if !tools("target_exiting_non_zero", &["cc", "ldd", "readelf"]) {
        return;
    }
    let mut case = Case::new();
    let exe = case.build("exit3", EXIT3, &[]);
    let out = profile(&exe, &[]);
    assert_eq!(out.code, Some(0), "stderr:\n{}", out.stderr);
    let p = out.profile();
    assert_eq!(p.endings, vec![Ending::Exited(3); 2]);
    assert_eq!(p.raw.len(), 6, "2 x (per-object, coarse, none)");
    assert!(
        p.raw.iter().all(|r| r.ending == Ending::Exited(3)),
        "{:?}",
        p.raw
    );
    check_dynamic("target_exiting_non_zero", &p, &exe, 2);
    case.finish();
}

#[test]
fn target_killed_by_sigsegv() {
    if !tools("target_killed_by_sigsegv", &["cc", "ldd", "readelf"]) {
        return;
    }
    let mut case = Case::new();
    let exe = case.build("segv", SEGV, &[]);
    let out = profile(&exe, &[]);
    assert_eq!(out.code, Some(0), "stderr:\n{}", out.stderr);
    let p = out.profile();
    assert_eq!(p.endings, vec![Ending::Killed(11); 2]);
    assert!(p.raw.iter().all(|r| r.ending == Ending::Killed(11)));
    // It died in main: the phases before it are all there.
    assert!(phases(&p).contains(&Phase::MainToExit));
    check_dynamic("target_killed_by_sigsegv", &p, &exe, 2);
    case.finish();
}

fn timed_out(name: &str, extra: &[&str]) {
    if !tools(name, &["cc", "ldd", "readelf"]) {
        return;
    }
    let mut case = Case::new();
    let exe = case.build("sleeper", SLEEPER, &[]);
    let mut args = os(&["profile", "-n", "2", "--warmup", "0", "--quiet-target"]);
    args.extend(os(extra));
    args.extend(os(&["--timeout", "0.5", "--json", "-"]));
    args.push(exe.clone().into());
    let out = ldcost(args);
    // A hang guard (the target sleeps 300 s), not a performance figure.
    assert!(
        out.elapsed < STOP_GUARD,
        "--timeout 0.5 must not wait for the 300 s target: took {:?}",
        out.elapsed
    );
    assert_eq!(
        out.code,
        Some(9),
        "documented: killed by --timeout; stderr:\n{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("--timeout"),
        "a warning says why: {}",
        out.stderr
    );
    let p = out.profile();
    assert!(!p.endings.is_empty());
    assert!(
        p.endings.iter().all(|e| *e == Ending::TimedOut),
        "{:?}",
        p.endings
    );
    // The first timed-out run ends the measurement; its phases up to main are all there.
    check_dynamic(name, &p, &exe, p.endings.len());
    case.finish();
}

#[test]
fn target_running_past_timeout() {
    timed_out("target_running_past_timeout", &["--no-ld-debug"]);
}

/// The same with the LD_DEBUG=statistics run left on: it runs the same target and must obey
/// the same --timeout.
#[test]
fn target_running_past_timeout_with_ld_debug() {
    timed_out("target_running_past_timeout_with_ld_debug", &[]);
}

#[test]
fn multi_threaded_target() {
    if !tools("multi_threaded_target", &["cc", "ldd", "readelf"]) {
        return;
    }
    let mut case = Case::new();
    let exe = case.build("threads", THREADS, &["-pthread"]);
    let out = profile(&exe, &[]);
    assert_eq!(out.code, Some(0), "stderr:\n{}", out.stderr);
    let p = out.profile();
    assert_eq!(p.endings, vec![Ending::Exited(0); 2]);
    assert!(p.raw.iter().all(|r| r.ending == Ending::Exited(0)));
    check_dynamic("multi_threaded_target", &p, &exe, 2);
    case.finish();
}

#[test]
fn target_forking_and_execing_children() {
    if !tools(
        "target_forking_and_execing_children",
        &["cc", "ldd", "readelf"],
    ) {
        return;
    }
    let mut case = Case::new();
    let exe = case.build("forker", &forker_source(3), &[]);
    let out = profile(&exe, &[]);
    assert_eq!(out.code, Some(0), "stderr:\n{}", out.stderr);
    let p = out.profile();
    assert_eq!(
        p.endings,
        vec![Ending::Exited(0); 2],
        "children exec'd and were reaped"
    );
    check_dynamic("target_forking_and_execing_children", &p, &exe, 2);
    // The text report says the children's cost is not in the phases.
    let mut args = os(ONE_RUN);
    args.push(exe.clone().into());
    let text = ldcost(args);
    assert_eq!(text.code, Some(0), "stderr:\n{}", text.stderr);
    assert!(
        text.stdout_text()
            .to_lowercase()
            .contains("threads and children are not included"),
        "{}",
        text.stdout_text()
    );
    case.finish();
}
