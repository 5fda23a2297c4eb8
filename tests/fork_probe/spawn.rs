//! 2. Spawn methods and child actions.

use super::harness::*;

/// Every valid spawn method and child action on a dynamic and a static target: fork ×
/// {_exit, exit, exec}, vfork × {_exit, exec}, posix_spawn × exec, the exec'd child being the
/// seeds' child (static and dynamic) or TALLY (static and dynamic), which appends a byte to a
/// file named in the target's environment: exactly N bytes for N exec'd children, none
/// otherwise. The target's own output and status are unchanged.
#[test]
fn every_spawn_method_and_child_action() {
    let name = "every_spawn_method_and_child_action";
    let Some(mut case) = Case::new(name) else {
        return;
    };
    let targets = [
        case.build("target", TARGET, &[]),
        case.build("target-s", TARGET, &["-static"]),
    ];
    let mut execs = Vec::new();
    for l in [Linkage::Static, Linkage::Dynamic] {
        let Some(c) = case.seed(name, Seed::Child, l) else {
            return;
        };
        execs.push((c, false));
    }
    execs.push((case.build("tally-s", TALLY, &["-static"]), true));
    execs.push((case.build("tally", TALLY, &[]), true));
    let tally = case.dir().join("tally.bytes");
    let n = 50u64;
    let mut combos: Vec<(&str, String, Option<bool>)> = vec![
        ("fork", "_exit".into(), None),
        ("fork", "exit".into(), None),
        ("vfork", "_exit".into(), None),
    ];
    for spawn in ["fork", "vfork", "posix_spawn"] {
        for (child, counts) in &execs {
            combos.push((spawn, format!("exec:{}", child.display()), Some(*counts)));
        }
    }
    for target in &targets {
        for (spawn, child, counts) in &combos {
            std::fs::write(&tally, b"").unwrap();
            let what = format!("{} --spawn {spawn} --child {child}", target.display());
            let args = ["--fork", "50", "--spawn", spawn, "--child", child];
            let env = [("LDCOST_TEST_TALLY", tally.as_path())];
            let (out, fork) = profile(&case, target, &args, &["a"], &env);
            let f = assert_forked(&out, &fork, n);
            assert_eq!(target_part(&out), "target ran with 2 args\n", "{what}");
            assert_eq!(f.target_ending, Ending::Exited(0), "{what}");
            let want_spawn = match *spawn {
                "fork" => Spawn::Fork,
                "vfork" => Spawn::Vfork,
                _ => Spawn::PosixSpawn,
            };
            assert_eq!((f.spawn, f.child.as_str()), (want_spawn, child.as_str()));
            let bytes = std::fs::metadata(&tally).unwrap().len();
            // The measured loop and the loop that counts fault kinds both exec the child.
            assert!(
                f.children_total >= n,
                "{what}: {} children in all",
                f.children_total
            );
            let want = if *counts == Some(true) {
                f.children_total
            } else {
                0
            };
            assert_eq!(bytes, want, "{what}: bytes appended by exec'd children");
        }
    }
    case.finish();
}

/// vfork + exit (the child would run atexit handlers in the parent's memory) and posix_spawn
/// without exec are refused as usage errors (exit 2, one line) before the target starts: the
/// target, which would append to the tally file, never ran.
#[test]
fn invalid_spawn_and_child_combinations_are_usage_errors() {
    let name = "invalid_spawn_and_child_combinations_are_usage_errors";
    let Some(mut case) = Case::new(name) else {
        return;
    };
    let target = case.build("tally", TALLY, &[]);
    let tally = case.dir().join("tally.bytes");
    let json = case.dir().join("fork.json");
    for (spawn, child) in [
        ("vfork", "exit"),
        ("posix_spawn", "_exit"),
        ("posix_spawn", "exit"),
    ] {
        let args = ["--fork", "10", "--spawn", spawn, "--child", child];
        let (out, fork) = profile(
            &case,
            &target,
            &args,
            &[],
            &[("LDCOST_TEST_TALLY", tally.as_path())],
        );
        assert_error(&out, 2, "--spawn");
        assert!(fork.is_none() && !json.exists(), "no report");
        assert!(
            !tally.exists(),
            "--spawn {spawn} --child {child}: the target ran"
        );
    }
    case.finish();
}

/// A static target that does not link posix_spawn (`readelf -sW` has no such symbol) cannot
/// be spawned from: exit 6 (documented for a symbol that is not in the target), one line
/// naming posix_spawn, and the target is not left behind.
#[test]
fn posix_spawn_missing_from_a_static_target() {
    let name = "posix_spawn_missing_from_a_static_target";
    let Some(mut case) = Case::new(name) else {
        return;
    };
    let target = case.build("plain-s", PLAIN, &["-static"]);
    assert_eq!(symbol_value(&target, "posix_spawn"), None, "the oracle");
    let child = case.build("tally-s", TALLY, &["-static"]);
    let exec = format!("exec:{}", child.display());
    let args = ["--fork", "10", "--spawn", "posix_spawn", "--child", &exec];
    let (out, _) = profile(&case, &target, &args, &[], &[]);
    assert_error(&out, 6, "posix_spawn");
    case.finish();
}

/// At a static program's entry __libc_start_main has not run: no thread pointer, and libc's
/// fork() faults on its stack-protector read of %fs:0x28 (the static seed forktest links it;
/// this once ended the run with "stopped with SIGSEGV"). There the probe forks by the raw
/// system call: forktest at entry with `--child _exit` forks 50 times and then runs its own
/// loop to its end; `--child exit` and `--spawn posix_spawn`, which need libc, are usage
/// errors (exit 2, one line naming the option) that leave nothing behind.
#[test]
fn static_entry_forks_without_libc() {
    let name = "static_entry_forks_without_libc";
    let Some(mut case) = Case::new(name) else {
        return;
    };
    let Some(stat) = case.seed(name, Seed::Forktest, Linkage::Static) else {
        return;
    };
    assert!(
        symbol_value(&stat, "fork").is_some(),
        "the oracle: fork is linked"
    );
    let (out, fork) = profile(
        &case,
        &stat,
        &["--fork", "50", "--at", "entry"],
        &["20"],
        &[],
    );
    let f = assert_forked(&out, &fork, 50);
    assert_eq!(f.target_ending, Ending::Exited(0));
    assert!(
        target_part(&out).contains("forks per second"),
        "forktest ran its own loop:\n{}",
        out.stdout
    );
    let (out, fork) = profile(
        &case,
        &stat,
        &["--fork", "50", "--at", "entry", "--child", "exit"],
        &["20"],
        &[],
    );
    assert_error(&out, 2, "--child exit");
    assert!(fork.is_none(), "no report");
    let target = case.build("target-s", TARGET, &["-static"]);
    let exec = format!("exec:{}", stat.display());
    let args = [
        "--fork",
        "5",
        "--at",
        "entry",
        "--spawn",
        "posix_spawn",
        "--child",
        &exec,
    ];
    let (out, _) = profile(&case, &target, &args, &[], &[]);
    assert_error(&out, 2, "--spawn posix_spawn");
    case.finish();
}
