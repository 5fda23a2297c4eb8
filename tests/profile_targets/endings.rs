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

/// A real-time signal (above 31, which nix's wait status cannot name) is delivered to the
/// target in every kind of run, and the run goes on: its exit status says all 100 arrived.
#[test]
fn target_receiving_real_time_signals() {
    if !tools(
        "target_receiving_real_time_signals",
        &["cc", "ldd", "readelf"],
    ) {
        return;
    }
    let mut case = Case::new();
    let exe = case.build("rtsig", RTSIG, &[]);
    let out = profile(&exe, &[]);
    assert_eq!(out.code, Some(0), "stderr:\n{}", out.stderr);
    let p = out.profile();
    assert_eq!(p.endings, vec![Ending::Exited(7); 2]);
    assert!(
        p.raw.iter().all(|r| r.ending == Ending::Exited(7)),
        "{:?}",
        p.raw.iter().map(|r| r.ending).collect::<Vec<_>>()
    );
    check_dynamic("target_receiving_real_time_signals", &p, &exe, 2);
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
    // (on the `figures:` line, which --detail shows).
    let mut args = os(ONE_RUN);
    args.push("--detail".into());
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

/// `ldcost profile -n RUNS --no-follow --json FILE [EXTRA] nth_run NTH COUNT READY MODE`
/// started (runs go measured, boundaries-only, uninstrumented, in turn: invocation 4 is the
/// second measured run, 3 the first uninstrumented one); the FIFO READY made.
fn nth_run(
    case: &mut Case,
    runs: &str,
    nth: &str,
    mode: &str,
    extra: &[&str],
) -> (Spawned, PathBuf, PathBuf) {
    let exe = case.build("nthrun", NTH_RUN, &[]);
    let ready = case.dir().join("ready");
    nix::unistd::mkfifo(&ready, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let json = case.dir().join("out.json");
    let mut args = os(&[
        "profile",
        "-n",
        runs,
        "--warmup",
        "0",
        "--no-ld-debug",
        "--quiet-target",
        "--no-follow",
    ]);
    args.extend(os(extra));
    args.extend(os(&["--json"]));
    args.push(json.clone().into());
    args.push(exe.into());
    args.extend(os(&[nth]));
    args.push(case.dir().join("count").into());
    args.push(ready.clone().into());
    args.extend(os(&[mode]));
    (Spawned::start(OsStr::new(BIN), &args), ready, json)
}

fn read_profile(json: &Path) -> ProfileSection {
    let doc: Document =
        serde_json::from_slice(&std::fs::read(json).expect("the JSON report")).expect("JSON");
    doc.profile.expect("a profile section").into()
}

/// The target SIGKILLed from outside while ldcost has it in ptrace stops (a signal storm): the
/// run is left out and counted, the others give the figures, one warning, exit 0.
#[test]
fn target_sigkilled_in_a_ptrace_stop_is_left_out() {
    const NAME: &str = "target_sigkilled_in_a_ptrace_stop_is_left_out";
    if !tools(NAME, &["cc", "ldd", "readelf"]) {
        return;
    }
    let mut case = Case::new();
    let (ldc, ready, json) = nth_run(&mut case, "3", "4", "storm", &["--timeout", "600"]);
    let pid: i32 = std::fs::read_to_string(&ready)
        .expect("the fixture's pid")
        .trim()
        .parse()
        .expect("a pid");
    kill(Pid::from_raw(pid), Signal::SIGKILL).expect("SIGKILL the target");
    let out = ldc.wait(HANG);
    assert_eq!(out.code, Some(0), "stderr:\n{}", out.stderr);
    let warnings: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.contains("killed by signal 9"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", out.stderr);
    let p = read_profile(&json);
    assert_eq!(
        p.endings,
        vec![Ending::Exited(0), Ending::Killed(9), Ending::Exited(0)]
    );
    assert_eq!(p.runs, 2, "the two runs that ended");
    assert_eq!(p.left_out.len(), 1, "{:?}", p.left_out);
    let l = &p.left_out[0];
    assert_eq!(
        (l.instrumentation, l.why.as_str(), l.count, l.of),
        (Instrumentation::PerObject, "killed by SIGKILL", 1, 3)
    );
    // The phases are the two other runs' (every one of their phases is there).
    assert!(phases(&p).contains(&Phase::MainToExit), "{:?}", phases(&p));
    for s in &p.phases {
        if let Some(t) = &s.task_clock_raw_ns {
            assert_eq!(t.n, 2, "{:?} {:?}", s.phase, s.object);
        }
    }
    assert!(
        out.stdout_text()
            .contains("1 of 3 measured runs killed by SIGKILL: left out"),
        "{}",
        out.stdout_text()
    );
    case.finish();
}

/// The target SIGKILLed from outside in the middle of the fork probe's loop: one warning, exit
/// 0, the fork section absent with why (text and JSON), the exec runs' figures all there.
#[test]
fn target_sigkilled_in_the_fork_probe_keeps_the_exec_figures() {
    const NAME: &str = "target_sigkilled_in_the_fork_probe_keeps_the_exec_figures";
    if !tools(NAME, &["cc", "ldd", "readelf"]) {
        return;
    }
    let mut case = Case::new();
    let exe = case.build("hello", HELLO, &[]);
    let ready = case.dir().join("ready");
    nix::unistd::mkfifo(&ready, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let quoted = format!("{:?}", ready.to_str().expect("a UTF-8 temporary path"));
    let child = case.build(
        "parentteller",
        &PARENT_TELLER.replace("READY", &quoted),
        &[],
    );
    let json = case.dir().join("out.json");
    let mut args = os(&[
        "profile",
        "-n",
        "1",
        "--warmup",
        "0",
        "--no-ld-debug",
        "--quiet-target",
        "--timeout",
        "600",
        "--fork",
        "1000000",
    ]);
    let mut how = OsString::from("exec:");
    how.push(&child);
    args.extend([OsString::from("--child"), how, OsString::from("--json")]);
    args.push(json.clone().into());
    args.push(exe.clone().into());
    let ldc = Spawned::start(OsStr::new(BIN), &args);
    // The first child that finds the reader here names the target, in the loop.
    let told = std::fs::read_to_string(&ready).expect("the target's pid");
    let pid: i32 = told
        .lines()
        .next()
        .and_then(|l| l.trim().parse().ok())
        .expect("a pid");
    kill(Pid::from_raw(pid), Signal::SIGKILL).expect("SIGKILL the target");
    let out = ldc.wait(HANG);
    assert_eq!(out.code, Some(0), "stderr:\n{}", out.stderr);
    let warning = "ldcost: warning: the target was killed by SIGKILL during the fork probe: \
                   fork figures not measured";
    assert_eq!(
        out.stderr.lines().filter(|l| *l == warning).count(),
        1,
        "{}",
        out.stderr
    );
    let doc: Document =
        serde_json::from_slice(&std::fs::read(&json).expect("the JSON report")).expect("JSON");
    assert!(doc.fork.is_none(), "no fork figures were measured");
    assert_eq!(
        doc.fork_not_measured.as_deref(),
        Some("the target was killed by SIGKILL during the fork probe")
    );
    let p: ldcost::profile::ProfileSection = doc.profile.expect("a profile section").into();
    assert_eq!(p.endings, vec![Ending::Exited(0)]);
    assert!(p.left_out.is_empty(), "{:?}", p.left_out);
    check_dynamic(NAME, &p, &exe, 1);
    assert!(
        out.stdout_text().contains(
            "fork cost: not measured (the target was killed by SIGKILL during the fork probe)"
        ),
        "{}",
        out.stdout_text()
    );
    case.finish();
}

/// An uninstrumented run past --timeout: counted and left out, the reference figure is the
/// other runs' median, and the measurement goes on (a measured run was not cut).
#[test]
fn timed_out_uninstrumented_run_is_left_out() {
    const NAME: &str = "timed_out_uninstrumented_run_is_left_out";
    if !tools(NAME, &["cc", "ldd", "readelf"]) {
        return;
    }
    let mut case = Case::new();
    let (ldc, ready, json) = nth_run(&mut case, "3", "3", "sleep", &["--timeout", "5"]);
    // The sleeping run says it is there (no sleep in the test).
    let _ = std::fs::read_to_string(&ready).expect("the fixture's pid");
    let out = ldc.wait(HANG);
    assert_eq!(out.code, Some(0), "stderr:\n{}", out.stderr);
    let p = read_profile(&json);
    let none: Vec<&ldcost::record::Run> = p
        .raw
        .iter()
        .filter(|r| r.instrumentation == Instrumentation::None)
        .collect();
    assert_eq!(
        none.len(),
        3,
        "the measurement went on past the timed-out run"
    );
    assert_eq!(none[0].ending, Ending::TimedOut);
    let others: Vec<f64> = none[1..]
        .iter()
        .map(|r| r.total.task_clock_ns.expect("task-clock") as f64)
        .collect();
    let want = ldcost::stats::median(&others);
    assert_eq!(
        p.overhead.uninstrumented_ns.as_ref().map(|s| s.median),
        want,
        "the reference is the two runs that ended"
    );
    assert_eq!(p.left_out.len(), 1, "{:?}", p.left_out);
    let l = &p.left_out[0];
    assert_eq!(
        (l.instrumentation, l.why.as_str(), l.count, l.of),
        (Instrumentation::None, "timed out", 1, 3)
    );
    assert!(
        out.stdout_text()
            .contains("1 of 3 uninstrumented runs timed out: left out"),
        "{}",
        out.stdout_text()
    );
    case.finish();
}

// ---------------------------------------------------------------------------------------------
// What the target sees.

/// The observer fixture run plainly, with `input` on its standard input: its own line.
fn observe_plain(case: &Case, exe: &Path, input: &Path) -> String {
    let out = case.dir().join("plain.txt");
    let st = Command::new(exe)
        .arg(&out)
        .stdin(std::fs::File::open(input).expect("input"))
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run the fixture");
    assert!(st.success(), "{st:?}");
    std::fs::read_to_string(&out)
        .expect("its observation")
        .trim()
        .to_string()
}

/// Standard input reaches the first measured run whole, though the exec-chain discovery run
/// and a warm-up run come before it; every other run reads /dev/null. And every run, shown or
/// with its output discarded, has the descriptors a plain run has: no extra fd.
#[test]
fn stdin_reaches_the_measured_run_and_no_run_gets_an_extra_fd() {
    const NAME: &str = "stdin_reaches_the_measured_run_and_no_run_gets_an_extra_fd";
    if !tools(NAME, &["cc", "ldd", "readelf"]) {
        return;
    }
    let mut case = Case::new();
    let exe = case.build("observer", OBSERVER, &[]);
    let input = case.dir().join("input.txt");
    std::fs::write(&input, "one\ntwo\nthree\n").expect("input");
    let plain = observe_plain(&case, &exe, &input);
    assert!(plain.starts_with("lines=3 "), "{plain}");
    let fds = plain
        .split_once(' ')
        .map(|(_, f)| f.to_string())
        .expect("fds");
    let seen = case.dir().join("seen.txt");
    let json = case.dir().join("out.json");
    let out = Command::new(BIN)
        .args([
            "profile",
            "-n",
            "2",
            "--warmup",
            "1",
            "--no-ld-debug",
            "--json",
        ])
        .arg(&json)
        .arg(&exe)
        .arg(&seen)
        .env_remove("LD_LIBRARY_PATH")
        .stdin(std::fs::File::open(&input).expect("input"))
        .output()
        .expect("run ldcost");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let runs: Vec<String> = std::fs::read_to_string(&seen)
        .expect("the runs' observations")
        .lines()
        .map(str::to_string)
        .collect();
    // discovery, warm-up, then 2 x (measured, boundaries-only, uninstrumented).
    assert_eq!(runs.len(), 8, "{runs:?}");
    assert_eq!(runs[2], plain, "the first measured run: {runs:?}");
    for (i, r) in runs.iter().enumerate().filter(|(i, _)| *i != 2) {
        assert_eq!(*r, format!("lines=0 {fds}"), "run {i}: {runs:?}");
    }
    // The run whose output is shown is the one that read the input.
    assert!(stdout.lines().any(|l| l == plain), "{stdout}");
    case.finish();
}

/// The state letter of `pid` in /proc/PID/stat, None once it is gone or a zombie.
fn live_state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let c = stat[stat.rfind(')')? + 1..].trim_start().chars().next()?;
    (c != 'Z' && c != 'X').then_some(c)
}

/// Waits (bounded by [`STOP_GUARD`], a hang guard) for `pid` to be in a group-stop: 'T'
/// untraced; traced ('t' at a signal's delivery stop too, where a SIGCONT would cancel the stop
/// before it happens), also its tracer `tracer` sleeping between its looks for a SIGCONT
/// (nanosleep), which ldcost does only once the target is group-stopped. Err when it ran on
/// and ended instead.
fn group_stopped(pid: i32, tracer: Option<i32>) -> Result<(), String> {
    let t0 = Instant::now();
    while t0.elapsed() < STOP_GUARD {
        let tracer_waits = || {
            tracer.is_some_and(|t| {
                std::fs::read_to_string(format!("/proc/{t}/wchan"))
                    .is_ok_and(|w| w.contains("nanosleep"))
            })
        };
        match live_state(pid) {
            None => return Err("it ran on and ended without a SIGCONT".into()),
            Some('T') if tracer.is_none() => return Ok(()),
            Some('t') if tracer_waits() => return Ok(()),
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    Err(format!("not in a group-stop after {STOP_GUARD:?}"))
}

/// Reads the pid the stopper fixture writes to `fifo`, waits for its group-stop and sends
/// SIGCONT.
fn stop_then_continue(fifo: &Path, tracer: Option<i32>) {
    let pid: i32 = std::fs::read_to_string(fifo)
        .expect("the fixture's pid")
        .trim()
        .parse()
        .expect("a pid");
    let seen = group_stopped(pid, tracer);
    kill(Pid::from_raw(pid), Signal::SIGCONT).expect("SIGCONT");
    if let Err(why) = seen {
        panic!("the target's SIGSTOP did not stop it: {why}");
    }
}

/// A SIGSTOP the target raises stops it under ldcost as it does in a plain run, until a
/// SIGCONT (its handler runs), in the exec-chain discovery run and in the measured run, and the
/// measured run reports the stop.
#[test]
fn sigstop_raised_by_the_target_stops_it_until_sigcont() {
    const NAME: &str = "sigstop_raised_by_the_target_stops_it_until_sigcont";
    if !tools(NAME, &["cc", "ldd", "readelf"]) {
        return;
    }
    let mut case = Case::new();
    let exe = case.build("stopper", STOPPER, &[]);
    let fifo = case.dir().join("ready");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    // The plain run: what the target sees untraced.
    let plain = Spawned::start(exe.as_os_str(), &[fifo.clone().into()]);
    stop_then_continue(&fifo, None);
    let plain = plain.wait(HANG);
    assert_eq!(plain.code, Some(0), "{}", plain.stderr);
    let seen = plain.stdout_text();
    assert_eq!(seen.trim(), "resumed continued=1");
    // Under ldcost: the exec-chain discovery run, then one traced run, whose output is shown.
    let json = case.dir().join("out.json");
    let mut args = os(&[
        "profile",
        "-n",
        "1",
        "--warmup",
        "0",
        "--no-ld-debug",
        "--no-reference",
        "--json",
    ]);
    args.push(json.clone().into());
    args.push(exe.clone().into());
    args.push(fifo.clone().into());
    let ldc = Spawned::start(OsStr::new(BIN), &args);
    stop_then_continue(&fifo, Some(ldc.pid));
    stop_then_continue(&fifo, Some(ldc.pid));
    let out = ldc.wait(HANG);
    assert_eq!(out.code, Some(0), "stderr:\n{}", out.stderr);
    let text = out.stdout_text();
    assert!(text.lines().any(|l| l == seen.trim()), "{text}");
    assert!(text.contains("waited for SIGCONT"), "{text}");
    // Said once while it waits, so the wait does not look like a hang.
    let said = out
        .stderr
        .lines()
        .filter(|l| l.contains("is stopped by SIGSTOP; waiting for SIGCONT"))
        .count();
    assert_eq!(said, 1, "stderr:\n{}", out.stderr);
    let p = read_profile(&json);
    assert_eq!(p.raw.len(), 1);
    assert_eq!(p.raw[0].group_stops, 1);
    assert_eq!(p.endings, vec![Ending::Exited(0)]);
    case.finish();
}
