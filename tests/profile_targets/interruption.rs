//! Interruption and clean-up: SIGINT to ldcost in each phase, and the sweep for leftovers.
//!
//! No bound here is a speed claim: a handled SIGINT ends ldcost in well under a second, a lost
//! one costs the fixture's 300 s sleep or a 600 s --timeout, and [`STOP_GUARD`] (60 s) lies
//! between the two with a margin no load closes.

use super::fixtures::*;
use super::harness::*;

/// Sends SIGINT to `ldc` and waits for it (bounded by [`HANG`]); fails when it took longer
/// than [`STOP_GUARD`]. Returns how it ended.
fn interrupt(ldc: Spawned, what: &str) -> Finished {
    kill(Pid::from_raw(ldc.pid), Signal::SIGINT).expect("SIGINT");
    let sent = Instant::now();
    let out = ldc.wait(HANG);
    let took = sent.elapsed();
    assert!(
        took < STOP_GUARD,
        "SIGINT sent {what}: ldcost went on for {took:?} (exit {:?}):\n{}",
        out.code,
        out.stderr
    );
    out
}

/// SIGINT to ldcost while the target sleeps: ldcost exits promptly, and the target is killed
/// and reaped (no stopped, zombie or orphaned fixture).
#[test]
fn sigint_to_ldcost_mid_run() {
    if !tools("sigint_to_ldcost_mid_run", &["cc"]) {
        return;
    }
    let mut case = Case::new();
    let exe = case.build("sleeper", SLEEPER, &[]);
    let ldc = start_sleeping(&exe, &["--no-ld-debug"]);
    let out = interrupt(ldc, "while the target sleeps in main");
    assert_ne!(out.code, Some(0), "an interrupted profile is not a success");
    assert_ne!(
        out.code, None,
        "ldcost handles SIGINT and exits with a code"
    );
    assert_ne!(out.code, Some(70), "not an internal error: {}", out.stderr);
    assert!(
        out.stderr.starts_with("ldcost: "),
        "one error line: {}",
        out.stderr
    );
    case.finish();
}

/// Starts `ldcost profile -n 2 --warmup 0 --quiet-target --timeout 600 EXTRA SLEEPER` and
/// returns once the target sleeps in main (clock_nanosleep, x86-64 syscall 230): ldcost is
/// then blocked in waitpid, where SIGINT interrupts it.
fn start_sleeping(exe: &Path, extra: &[&str]) -> Spawned {
    start_until_asleep("2", extra, exe, |_| true)
        .expect("the fixture appears in /proc under ldcost and sleeps")
}

/// Starts `ldcost profile -n RUNS --warmup 0 --quiet-target EXTRA --timeout 600 EXE` and
/// returns once a child of ldcost running EXE for which `also` holds sleeps in main
/// (clock_nanosleep, x86-64 syscall 230); None when none does within [`STOP_GUARD`].
fn start_until_asleep(
    runs: &str,
    extra: &[&str],
    exe: &Path,
    also: impl Fn(&Proc) -> bool,
) -> Option<Spawned> {
    let mut args = os(&["profile", "-n", runs, "--warmup", "0", "--quiet-target"]);
    args.extend(os(extra));
    args.extend(os(&["--timeout", "600"]));
    args.push(exe.into());
    let ldc = Spawned::start(OsStr::new(BIN), &args);
    let exe_s = exe.display().to_string();
    let ldc_pid = ldc.pid;
    wait_for_process(STOP_GUARD, |p| {
        p.ppid == ldc_pid
            && p.cmdline.starts_with(&exe_s)
            && also(p)
            && std::fs::read_to_string(format!("/proc/{}/syscall", p.pid))
                .is_ok_and(|s| s.starts_with("230 "))
    })?;
    Some(ldc)
}

/// SIGINT that arrives while ldcost is busy at one of the target's ptrace stops (not blocked
/// in waitpid, so no EINTR) must not be lost: ldcost stops soon after, instead of measuring
/// the rest of the run and the other runs of the round. The fixture raises an ignored signal
/// in a loop, so traced it lives in signal-delivery stops and ldcost handles one stop after
/// another; with `--timeout 600` a lost SIGINT costs ten minutes, a handled one well under a
/// second.
#[test]
fn sigint_while_the_target_is_stopped_is_not_lost() {
    let name = "sigint_while_the_target_is_stopped_is_not_lost";
    if !tools(name, &["cc"]) {
        return;
    }
    let mut case = Case::new();
    let exe = case.build("sigstorm", SIGSTORM, &[]);
    let mut args = quick_profile_args(&["--timeout", "600"]);
    args.push(exe.clone().into());
    let ldc = Spawned::start(OsStr::new(BIN), &args);
    // Poll ldcost's children (/proc/PID/task/PID/children) until one is in a ptrace stop.
    let children = format!("/proc/{0}/task/{0}/children", ldc.pid);
    let deadline = Instant::now() + STOP_GUARD;
    let mut caught = None;
    while caught.is_none() && Instant::now() < deadline {
        let Ok(list) = std::fs::read_to_string(&children) else {
            break;
        };
        for pid in list.split_whitespace() {
            if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                let state = stat
                    .rfind(')')
                    .and_then(|i| stat[i + 1..].split_whitespace().next())
                    .unwrap_or("");
                if state == "t" || state == "T" {
                    caught = Some(pid.to_string());
                    break;
                }
            }
        }
    }
    let Some(stopped) = caught else {
        drop(ldc);
        case.finish();
        return skip(
            name,
            "never saw the target in a ptrace stop within 60 s, so no SIGINT was sent",
        );
    };
    let out = interrupt(
        ldc,
        &format!("while the target (pid {stopped}) was in a ptrace stop"),
    );
    case.finish();
    assert_ne!(out.code, Some(0), "an interrupted profile is not a success");
}

/// SIGINT while ldcost waits for the LD_DEBUG=statistics run (a plain child, not traced):
/// that child is killed and reaped too. The fixture exits at once in the measured runs and
/// sleeps 300 s under LD_DEBUG, so the LD_DEBUG run is always there to interrupt.
#[test]
fn sigint_during_the_ld_debug_run() {
    if !tools("sigint_during_the_ld_debug_run", &["cc"]) {
        return;
    }
    let mut case = Case::new();
    let exe = case.build("lddebug-sleeper", LD_DEBUG_SLEEPER, &[]);
    let ldc = start_ld_debug_run(&exe);
    let out = interrupt(ldc, "during the LD_DEBUG=statistics run");
    assert_ne!(out.code, None, "{}", out.stderr);
    case.finish();
}

/// Starts `ldcost profile -n 1 --warmup 0 --quiet-target --timeout 600 LD_DEBUG_SLEEPER` and
/// returns once its LD_DEBUG run (recognised by its environment) sleeps in main.
fn start_ld_debug_run(exe: &Path) -> Spawned {
    start_until_asleep("1", &[], exe, |p| {
        std::fs::read(format!("/proc/{}/environ", p.pid))
            .map(|e| e.split(|b| *b == 0).any(|v| v.starts_with(b"LD_DEBUG=")))
            .unwrap_or(false)
    })
    .expect("ldcost starts the LD_DEBUG=statistics run and it sleeps in main")
}

/// The sweep: the ways a run ends that leave processes to clean up, made here one after
/// another (a target killed by --timeout, SIGINT while the target sleeps in a measured run,
/// SIGINT during the untraced LD_DEBUG run), then no fixture process of this test, nor of any
/// test of this file that ran before, may exist in any state (alive, stopped, zombie, or
/// orphaned to init). It does not depend on which tests ran before it.
#[test]
fn no_leftovers_after_all_tests() {
    let name = "no_leftovers_after_all_tests";
    if !tools(name, &["cc"]) {
        return;
    }
    let mut case = Case::new();
    let sleeper = case.build("sleeper", SLEEPER, &[]);
    let mut args = os(&["profile", "-n", "1", "--warmup", "0", "--quiet-target"]);
    args.extend(os(&["--timeout", "0.5", "--json", "-"]));
    args.push(sleeper.clone().into());
    let timed_out = ldcost(args);
    assert_eq!(timed_out.code, Some(9), "{}", timed_out.stderr);
    interrupt(start_sleeping(&sleeper, &["--no-ld-debug"]), "mid-run");
    let ld_debug = case.build("lddebug-sleeper", LD_DEBUG_SLEEPER, &[]);
    interrupt(start_ld_debug_run(&ld_debug), "during the LD_DEBUG run");
    let mut all = ALL_FIXTURES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    all.extend(case.fixtures.iter().cloned());
    assert_no_leftovers(&all);
    case.finish();
}
