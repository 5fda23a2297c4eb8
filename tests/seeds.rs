//! The seeds' programs (`ldcost::experiment::seeds`), built here and run with small counts.
//!
//! Oracles: `readelf -lW` (a static build has no PT_INTERP, a dynamic one has), `readelf -dW`
//! and `ldd` (the seed's unused libraries are DT_NEEDED and resolved, so ld.so loads them), the
//! programs' own output (parsed) against the wall time the test sees from spawn to exit, and
//! the fork probe's exact counts on forktest. Seed 001's finding (static forktest forks faster
//! than dynamic with six libraries) is a rate, so it is checked by `cargo bench --bench
//! fork_fidelity`, not here.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use common::{skip, tools};
use ldcost::attribute::fork_cost::ForkSection;
use ldcost::experiment::seeds::{
    build, build_recorded, parse_forktest_output, parse_forktest_wall, parse_forktime_output,
    parse_spawn_output, BuildError, Linkage, Seed, SEED_LIBS,
};
use ldcost::report::Document;
use ldcost::trace::launch::Ending;

const LINKAGES: [Linkage; 2] = [Linkage::Static, Linkage::Dynamic];

/// Builds, or prints SKIP with the build error (which says what to install) and returns None.
fn built(test: &str, seed: Seed, linkage: Linkage, libs: &[&str], dir: &Path) -> Option<PathBuf> {
    match build(seed, linkage, libs, dir) {
        Ok(p) => Some(p),
        Err(e) => {
            skip(test, &e.to_string());
            None
        }
    }
}

/// Runs a program, asserting success; returns its stdout.
fn run(exe: &Path, args: &[&str]) -> String {
    let out = Command::new(exe).args(args).output().expect("run");
    assert!(
        out.status.success(),
        "{} {args:?}: {}\n{}",
        exe.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn has_interp(exe: &Path) -> bool {
    common::stdout_of("readelf", &["-lW", exe.to_str().unwrap()])
        .lines()
        .any(|l| l.trim_start().starts_with("INTERP"))
}

#[test]
fn every_seed_builds_static_and_dynamic() {
    let name = "every_seed_builds_static_and_dynamic";
    if !tools(name, &["cc", "readelf"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for seed in Seed::ALL {
        for linkage in LINKAGES {
            let b = match build_recorded(seed, linkage, &[], dir.path()) {
                Ok(b) => b,
                Err(e) => return skip(name, &e.to_string()),
            };
            assert!(b.path.is_file(), "{}", b.command_line());
            assert_eq!(b.command[0], "cc");
            assert_eq!(
                b.command.contains(&"-static".to_string()),
                linkage == Linkage::Static
            );
            assert!(
                !b.command_line().contains("--no-as-needed"),
                "no libraries, no flag"
            );
            assert_eq!(
                has_interp(&b.path),
                linkage == Linkage::Dynamic,
                "PT_INTERP of {} ({})",
                b.path.display(),
                b.command_line()
            );
        }
    }
}

#[test]
fn forktest_with_the_seeds_libraries_loads_them() {
    let name = "forktest_with_the_seeds_libraries_loads_them";
    if !tools(name, &["cc", "readelf", "ldd"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let b = match build_recorded(Seed::Forktest, Linkage::Dynamic, &SEED_LIBS, dir.path()) {
        Ok(b) => b,
        Err(e) => return skip(name, &e.to_string()),
    };
    let line = b.command_line();
    assert!(
        line.contains("-Wl,--no-as-needed -lm -lncurses -lpthread"),
        "{line}"
    );
    let needed = common::readelf_needed(&b.path);
    let ldd = common::ldd(&b.path, &[]).expect("ldd of a dynamic program");
    // glibc 2.34 moved libpthread into libc: `-lpthread` now links an empty libpthread.a and
    // adds no DT_NEEDED, so on such a system five of the seed's six libraries are loaded (and
    // libtinfo and libcrypto with them, needed by libncurses and libssl).
    let pthread_is_libc = !needed.iter().any(|n| n.starts_with("libpthread.so"));
    eprintln!("NEEDED {needed:?}; -lpthread a no-op (glibc >= 2.34): {pthread_is_libc}");
    for lib in SEED_LIBS
        .iter()
        .filter(|l| !(pthread_is_libc && **l == "pthread"))
    {
        let so = format!("lib{lib}.so");
        assert!(
            needed.iter().any(|n| n.starts_with(&so)),
            "{so} not NEEDED: {needed:?}"
        );
        let found = ldd.iter().find(|l| l.name.starts_with(&so));
        assert!(
            found.is_some_and(|l| l.path.is_some()),
            "ldd does not resolve {so}: {ldd:?}"
        );
    }
    let out = run(&b.path, &["200"]);
    assert!(parse_forktest_output(&out).is_some(), "{out}");
    assert!(parse_forktest_wall(&out).is_some(), "{out}");
}

/// forktest's two figures against what the test itself can see of the run: the loop is
/// inside the process's life, so its wall figure is at least N / (the wall time from spawn to
/// exit, measured here); and one thread cannot use more CPU than wall time, so the `clock()`
/// figure is at least the wall figure (the `clock()` interval lies inside the wall one). Both
/// hold on any load; a figure divided by the wrong time, or a line misread, breaks one.
#[test]
fn forktest_prints_positive_forks_per_second() {
    let name = "forktest_prints_positive_forks_per_second";
    if !tools(name, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for linkage in LINKAGES {
        let Some(exe) = built(name, Seed::Forktest, linkage, &[], dir.path()) else {
            return;
        };
        let started = Instant::now();
        let out = run(&exe, &["300"]);
        let outer_s = started.elapsed().as_secs_f64();
        let clock = parse_forktest_output(&out).unwrap_or_else(|| panic!("{linkage:?}: {out}"));
        let wall = parse_forktest_wall(&out).unwrap_or_else(|| panic!("{linkage:?}: {out}"));
        assert!(
            wall >= 300.0 / outer_s,
            "{linkage:?}: wall figure {wall} forks/s, but 300 forks in a process that lived \
             {outer_s:.4} s make at least {:.0}: {out}",
            300.0 / outer_s
        );
        // %g prints 6 significant digits: the two figures are compared to that precision.
        assert!(
            clock >= wall * (1.0 - 1e-5),
            "{linkage:?}: clock() figure {clock} below the wall figure {wall} (CPU > wall?): {out}"
        );
        // The seed's first line is still exactly the seed's format.
        assert!(out.lines().next().unwrap().ends_with(" forks per second"));
    }
}

#[test]
fn forktime_prints_a_machine_line() {
    let name = "forktime_prints_a_machine_line";
    if !tools(name, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for linkage in LINKAGES {
        let Some(exe) = built(name, Seed::Forktime, linkage, &[], dir.path()) else {
            return;
        };
        let started = Instant::now();
        let out = run(&exe, &["200"]);
        let outer_us = started.elapsed().as_secs_f64() * 1e6;
        let l = parse_forktime_output(&out).unwrap_or_else(|| panic!("no machine line: {out}"));
        assert_eq!(l.forks, 200, "{out}");
        // The loop is inside the process's life (measured here, from spawn to exit); and it
        // took some time: 200 forks cannot take less than a microsecond.
        assert!(
            l.wall_us * 200.0 <= outer_us && l.wall_us * 200.0 >= 1.0,
            "forktime's loop {} us of a process that lived {outer_us:.0} us: {out}",
            l.wall_us * 200.0
        );
        // The printed sums are the sums of the printed parts (to rounding).
        let sum = l.parent_user_us + l.parent_sys_us;
        assert!((l.parent_cpu_us - sum).abs() < 0.01, "{out}");
        let sum = l.children_user_us + l.children_sys_us;
        assert!((l.children_cpu_us - sum).abs() < 0.01, "{out}");
        // The parent cannot spend more CPU time than wall time (one thread).
        assert!(l.parent_cpu_us <= l.wall_us * 1.05 + 5.0, "{out}");
    }
}

#[test]
fn fork_and_vfork_exec_the_2x2_matrix() {
    let name = "fork_and_vfork_exec_the_2x2_matrix";
    if !tools(name, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut children = Vec::new();
    for linkage in LINKAGES {
        let Some(c) = built(name, Seed::Child, linkage, &[], dir.path()) else {
            return;
        };
        children.push((linkage, c));
    }
    for seed in [Seed::ForkExec, Seed::VforkExec] {
        for parent_linkage in LINKAGES {
            let Some(parent) = built(name, seed, parent_linkage, &[], dir.path()) else {
                return;
            };
            for (child_linkage, child) in &children {
                let out = run(&parent, &[child.to_str().unwrap(), "40"]);
                let l = parse_spawn_output(&out).unwrap_or_else(|| panic!("{out}"));
                eprintln!(
                    "{} {} parent, {} child: {:.1} us per spawn",
                    seed.name(),
                    parent_linkage.name(),
                    child_linkage.name(),
                    l.us_per_spawn
                );
                assert_eq!((l.seed, l.spawns), (seed, 40), "{out}");
                assert!(out.contains("execl() time = "), "the seed's line: {out}");
            }
            // A child that cannot be executed is a failure, not a fast spawn.
            let out = Command::new(&parent)
                .args([dir.path().join("no-such-child").to_str().unwrap(), "2"])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1), "{seed:?}");
            assert!(parse_spawn_output(&String::from_utf8_lossy(&out.stdout)).is_none());
        }
    }
}

#[test]
fn a_missing_library_says_what_to_install() {
    let name = "a_missing_library_says_what_to_install";
    if !tools(name, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let err = build(
        Seed::Child,
        Linkage::Dynamic,
        &["ldcost_no_such"],
        dir.path(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, BuildError::LibraryMissing { lib, .. } if lib == "ldcost_no_such"),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("install") && msg.contains("-lldcost_no_such"),
        "{msg}"
    );
    assert!(err.command().unwrap().starts_with("cc "), "{msg}");
    assert!(!msg.contains('\n'), "one line: {msg}");
}

/// The fork probe on seed 001's own image (`profile forktest --fork N --child exit --at main
/// --no-exec -- N`), static and dynamic with the seed's libraries: what holds on any load
/// only (exact counts; how close the rates are is `cargo bench --bench fork_fidelity`).
/// The probe completes N forks, every child exits 0, forktest then runs its own N forks to
/// its end and prints its figure, and both rates are positive.
#[test]
fn fork_probe_on_forktest_counts_every_fork() {
    let name = "fork_probe_on_forktest_counts_every_fork";
    if !tools(name, &["cc"]) {
        return;
    }
    if !common::running_as_root() {
        return skip(name, "needs root (ptrace of forktest)");
    }
    const N: u64 = 300;
    let dir = tempfile::tempdir().unwrap();
    for (linkage, libs) in [
        (Linkage::Static, &[][..]),
        (Linkage::Dynamic, &SEED_LIBS[..]),
    ] {
        let Some(exe) = built(name, Seed::Forktest, linkage, libs, dir.path()) else {
            return;
        };
        let json = dir.path().join("fork.json");
        let n = N.to_string();
        let out = Command::new(env!("CARGO_BIN_EXE_ldcost"))
            .args(common::forktest_probe_args(
                exe.to_str().unwrap(),
                &n,
                json.to_str().unwrap(),
            ))
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .expect("run ldcost");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{linkage:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let doc: Document = serde_json::from_slice(&std::fs::read(&json).unwrap()).expect("JSON");
        let f: ForkSection = doc.fork.expect("a fork section").into();
        assert_eq!((f.completed, f.error.as_deref()), (N, None), "{linkage:?}");
        assert_eq!(
            f.child_endings,
            BTreeMap::from([("exited 0".to_string(), N)]),
            "{linkage:?}"
        );
        assert_eq!(
            f.target_ending,
            Ending::Exited(0),
            "forktest ran to its end"
        );
        assert!(f.forks_per_sec_parent_cpu.is_some_and(|r| r > 0.0), "{f:?}");
        assert!(
            parse_forktest_output(&stdout).is_some_and(|r| r > 0.0),
            "forktest's own figure after the probe: {stdout}"
        );
    }
}
