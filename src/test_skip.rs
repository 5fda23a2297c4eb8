//! Test support (compiled only for tests): the one way a test says it cannot run here.
//!
//! `skip(name, reason)` writes `SKIP name: reason` straight to standard error (libtest captures
//! only the `print!`/`eprint!` macros of a passing test, so a plain `cargo test` shows the
//! line), fails instead when LDCOST_REQUIRE_ALL is set, and records the skip in a file that
//! every test binary of one `cargo test` run shares: `<target>/tmp/skips/<key>`, the key being
//! the parent process (cargo) by pid and start time, so a reused pid starts a new file. The last
//! test binary, tests/zz_skipped.rs, reads that file and prints "N skipped: ...".
//!
//! The unit tests of the library use it as `crate::test_skip::skip`; the integration tests
//! include this same file from tests/common/mod.rs (where CARGO_TARGET_TMPDIR is known at
//! compile time). LDCOST_SKIP_DIR overrides the directory (the counting's own test uses it).
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};

/// True on machines known to be capable (CI here): skips become failures.
pub fn require_all() -> bool {
    std::env::var_os("LDCOST_REQUIRE_ALL").is_some()
}

/// Says that test `name` cannot run here and why: uncaptured on standard error, counted for
/// the run's summary; a panic instead when LDCOST_REQUIRE_ALL is set.
pub fn skip(name: &str, reason: &str) {
    if require_all() {
        panic!("{name}: cannot run ({reason}) but LDCOST_REQUIRE_ALL is set");
    }
    let line = format!("SKIP {name}: {reason}\n");
    // Not eprint!: that is captured (and dropped) for a test that passes.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    if let Some(key) = run_key() {
        let name = format!("{}::{name}", binary_name());
        // A summary must not fail a test: a skip that cannot be recorded is still printed.
        let _ = record(&skip_dir(), &key, &name, reason);
    }
}

/// Appends one skip to `dir/key` as a `name\treason` line (one write: lines of parallel tests
/// do not interleave under O_APPEND).
pub fn record(dir: &Path, key: &str, name: &str, reason: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
    let line = format!("{}\t{}\n", clean(name), clean(reason));
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(key))?
        .write_all(line.as_bytes())
}

/// The skips recorded under `key`, in the order they were recorded.
pub fn recorded(dir: &Path, key: &str) -> Vec<(String, String)> {
    std::fs::read_to_string(dir.join(key))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(n, r)| (n.to_string(), r.to_string()))
        .collect()
}

/// "0 skipped", or "N skipped: name: reason; name: reason".
pub fn summary(skips: &[(String, String)]) -> String {
    if skips.is_empty() {
        return "0 skipped".to_string();
    }
    let items: Vec<String> = skips.iter().map(|(n, r)| format!("{n}: {r}")).collect();
    format!("{} skipped: {}", skips.len(), items.join("; "))
}

/// Where the skips of this run go: LDCOST_SKIP_DIR, else `<target>/tmp/skips`.
pub fn skip_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("LDCOST_SKIP_DIR") {
        return PathBuf::from(d);
    }
    if let Some(t) = option_env!("CARGO_TARGET_TMPDIR") {
        return Path::new(t).join("skips");
    }
    // A unit-test binary (target/debug/deps/NAME-HASH) is not told CARGO_TARGET_TMPDIR: the
    // target directory is the nearest ancestor that cargo marked with CACHEDIR.TAG.
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.ancestors()
                .find(|d| d.join("CACHEDIR.TAG").is_file())
                .map(|d| d.join("tmp").join("skips"))
        })
        .unwrap_or_else(|| std::env::temp_dir().join("ldcost-skips"))
}

/// The file name shared by all test binaries cargo runs in one `cargo test`: the parent's pid
/// and its start time (field 22 of /proc/PID/stat).
pub fn run_key() -> Option<String> {
    key_of(std::os::unix::process::parent_id())
}

/// `PID-STARTTIME` of process `pid`, None when it is gone.
pub fn key_of(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let start = rest.split_whitespace().nth(19)?;
    Some(format!("{pid}-{start}"))
}

/// This test binary's name without cargo's hash (`bad_input-9e66caa5cc173ccd` -> `bad_input`).
fn binary_name() -> String {
    let exe = std::env::current_exe().ok();
    let stem = exe
        .as_deref()
        .and_then(|p| p.file_name())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match stem.rsplit_once('-') {
        Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
        _ => stem,
    }
}
