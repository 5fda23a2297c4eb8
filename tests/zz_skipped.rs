//! The last test binary of a `cargo test` run (cargo runs integration tests in name order):
//! prints the skips every earlier binary recorded through `common::skip` (and the library's
//! unit tests through `test_skip::skip`), "N skipped: name: reason; ...", or "0 skipped", to the
//! terminal uncaptured. See src/test_skip.rs for where they are kept.
//!
//! With LDCOST_REQUIRE_ALL set a skip is a failure where it happens, so the count must be 0.

mod common;

use std::io::Write;
use std::process::Command;

use common::skips::{key_of, recorded, run_key, skip_dir, summary};

#[test]
fn summary_of_this_run() {
    let dir = skip_dir();
    let Some(key) = run_key() else {
        panic!("cannot read /proc for the parent (cargo) of this test binary");
    };
    let skips = recorded(&dir, &key);
    let line = format!("\n{}\n", summary(&skips));
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    // This run is reported: forget it, and runs whose cargo is gone (a `cargo test --test X`
    // never reaches this binary).
    let _ = std::fs::remove_file(dir.join(&key));
    for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let alive = name
            .split_once('-')
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
            .and_then(key_of)
            .is_some_and(|k| k == name);
        if !alive {
            let _ = std::fs::remove_file(e.path());
        }
    }
    if common::require_all() {
        assert!(skips.is_empty(), "LDCOST_REQUIRE_ALL is set: {line}");
    }
}

/// The fixture of `a_recorded_skip_reaches_the_summary`, which runs it as a child process
/// with LDCOST_SKIP_DEMO set; a `cargo test -- --ignored` of the whole suite passes over it
/// rather than count a skip that is no skip.
#[test]
#[ignore = "a skip on purpose: run as a child by a_recorded_skip_reaches_the_summary"]
fn skip_demo() {
    if std::env::var_os("LDCOST_SKIP_DEMO").is_some() {
        common::skip("skip_demo", "the reason\tof the demo");
    }
}

/// The counting itself: a child run of `skip_demo` (output captured as in any `cargo test`)
/// shows its SKIP line, and the skip lands in the file this process's children share.
#[test]
fn a_recorded_skip_reaches_the_summary() {
    let dir = tempfile::tempdir().unwrap();
    let run = |require_all: bool| {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", "skip_demo", "--ignored", "--test-threads", "1"])
            .env("LDCOST_SKIP_DIR", dir.path())
            .env("LDCOST_SKIP_DEMO", "1")
            .env_remove("LDCOST_REQUIRE_ALL");
        if require_all {
            cmd.env("LDCOST_REQUIRE_ALL", "1");
        }
        cmd.output().unwrap()
    };
    let out = run(false);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stderr.contains("SKIP skip_demo: the reason\tof the demo\n"),
        "the SKIP line was captured or lost: {stderr:?}"
    );
    let key = key_of(std::process::id()).unwrap();
    let skips = recorded(dir.path(), &key);
    assert_eq!(
        skips,
        vec![(
            "zz_skipped::skip_demo".to_string(),
            "the reason of the demo".to_string()
        )]
    );
    assert_eq!(
        summary(&skips),
        "1 skipped: zz_skipped::skip_demo: the reason of the demo"
    );
    // Under LDCOST_REQUIRE_ALL the same skip is a failure and is not counted.
    let out = run(true);
    assert!(!out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("LDCOST_REQUIRE_ALL is set"),
        "{out:?}"
    );
    assert_eq!(recorded(dir.path(), &key).len(), 1);
    assert_eq!(summary(&[]), "0 skipped");
}
