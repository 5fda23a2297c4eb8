//! What another user on the machine can do to a root run of ldcost through the shared
//! temporary directory: nothing. The names ldcost once used there were predictable
//! (`$TMPDIR/ldcost-lddebug-<pid>`); here `nobody` plants, before ldcost starts, a directory of
//! forged LD_DEBUG files under that name, or a symlink from it to a directory it cannot write.
//! ldcost must neither use nor follow them: glibc's figures it reports are the target's own
//! (against an LD_DEBUG=statistics run of the same command, the oracle), the planted
//! directory is left as it was, the symlink's target stays empty, and the directory ldcost
//! did use was private (0700, root's) even under `umask 000`, and is gone afterwards.
//!
//! Needs root (to run ldcost as the victim and switch to `nobody` with setpriv); skipped
//! with a printed reason otherwise.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::skip;

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");
/// The forged count a planted LD_DEBUG file carries (what a root run once reported).
const FORGED: u64 = 123_456_789;
/// How many of the next pids get a forged `debug.<pid>` file.
const PLANTED_PIDS: i32 = 3000;

fn root(name: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip(
            name,
            "needs root (ldcost runs as root, the attacker as nobody)",
        );
        return false;
    }
    if !common::have("setpriv") {
        skip(name, "no setpriv to act as nobody");
        return false;
    }
    true
}

/// A shared temporary directory (mode 1777, as /tmp) that `nobody` can reach: under the test's
/// temp dir when every ancestor lets others through, else under /tmp.
fn shared_tmp() -> tempfile::TempDir {
    let reachable = |p: &Path| {
        p.ancestors()
            .all(|a| std::fs::metadata(a).is_ok_and(|m| m.mode() & 0o001 != 0))
    };
    let base = std::env::temp_dir();
    let base = if reachable(&base) {
        base
    } else {
        PathBuf::from("/tmp")
    };
    let d = tempfile::tempdir_in(base).expect("tempdir");
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let shared = d.path().join("shared");
    std::fs::create_dir(&shared).expect("mkdir");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    d
}

/// The target: `/bin/sh -c SCRIPT`, which records, in its LD_DEBUG runs, the mode, owner and
/// path of the directory LD_DEBUG_OUTPUT names (the measured runs have no such variable).
fn script(record: &Path) -> String {
    format!(
        "if [ -n \"$LD_DEBUG_OUTPUT\" ]; then stat -c '%a %u %n' \"${{LD_DEBUG_OUTPUT%/*}}\" >> {}; fi; :",
        record.display()
    )
}

/// glibc's count of relocations for `sh -c script`, from a run of our own (the oracle).
fn oracle_relocations(dir: &Path, script: &str) -> u64 {
    let out = dir.join("oracle");
    let mut child = Command::new("/bin/sh")
        .args(["-c", script])
        .env("LD_DEBUG", "statistics")
        .env("LD_DEBUG_OUTPUT", &out)
        .spawn()
        .expect("sh");
    let pid = child.id();
    assert!(child.wait().expect("wait").success());
    let text = std::fs::read_to_string(format!("{}.{pid}", out.display())).expect("oracle");
    ldcost::profile::parse_ld_debug(&text)
        .relocations
        .expect("relocations in the oracle run")
}

/// Runs, as root and under `umask 000`, `plant` as nobody (with `$1` the name ldcost's
/// LD_DEBUG directory once had: ldcost is exec'd by the same shell, so it has its pid), then
/// `ldcost profile` of `sh -c script` with TMPDIR=`tmp`. Returns the exit code, ldcost's pid
/// and its JSON document.
fn run_after(tmp: &Path, plant: &str, script: &str, json: &Path) -> (i32, i32, serde_json::Value) {
    let pidfile = json.with_extension("pid");
    let outer = format!(
        "umask 000; echo $$ > {pidfile}; \
         setpriv --reuid 65534 --regid 65534 --clear-groups /bin/sh -c '{plant}' plant \"$TMPDIR/ldcost-lddebug-$$\" || exit 99; \
         exec \"$0\" \"$@\"",
        pidfile = pidfile.display()
    );
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(outer)
        .arg(BIN)
        .args(["profile", "-n", "1", "--warmup", "0", "--no-reference"])
        .args(["--quiet-target", "--json"])
        .arg(json)
        .args(["/bin/sh", "-c", script])
        .env("TMPDIR", tmp)
        .output()
        .expect("run ldcost");
    let code = out.status.code().unwrap_or(-1);
    assert_ne!(
        code,
        99,
        "nobody could not plant: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(code, 0, "{}", String::from_utf8_lossy(&out.stderr));
    let pid = std::fs::read_to_string(&pidfile)
        .expect("pid")
        .trim()
        .parse()
        .expect("pid");
    let doc = serde_json::from_str(&std::fs::read_to_string(json).expect("json")).expect("JSON");
    (code, pid, doc)
}

/// The directories the target recorded in its LD_DEBUG runs: (mode, uid, path).
fn recorded(record: &Path) -> Vec<(String, u32, PathBuf)> {
    let text = std::fs::read_to_string(record).expect("the LD_DEBUG runs recorded nothing");
    text.lines()
        .map(|l| {
            let mut w = l.splitn(3, ' ');
            let mode = w.next().unwrap_or("").to_string();
            let uid = w.next().and_then(|u| u.parse().ok()).unwrap_or(u32::MAX);
            (mode, uid, PathBuf::from(w.next().unwrap_or("")))
        })
        .collect()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// What both cases check of the directories ldcost used: fresh, 0700, root's, in TMPDIR,
/// not the planted name, and gone.
fn check_private(used: &[(String, u32, PathBuf)], tmp: &Path, planted: &Path) {
    // Two LD_DEBUG runs (statistics, then bindings,libs), each in a directory of its own.
    assert_eq!(used.len(), 2, "{used:?}");
    for (mode, uid, path) in used {
        assert_eq!(mode, "700", "{}", path.display());
        assert_eq!(*uid, 0, "{}", path.display());
        assert_eq!(path.parent(), Some(tmp), "{}", path.display());
        assert_ne!(path, planted);
        assert!(!path.exists(), "{} was left behind", path.display());
    }
    assert_ne!(used[0].2, used[1].2, "a directory was reused");
}

#[test]
fn a_planted_lddebug_directory_is_not_used() {
    const NAME: &str = "a_planted_lddebug_directory_is_not_used";
    if !root(NAME) {
        return;
    }
    let base = shared_tmp();
    let tmp = base.path().join("shared");
    let record = base.path().join("record");
    let script = script(&record);
    let expected = oracle_relocations(base.path(), &script);
    std::fs::remove_file(&record).expect("the oracle run recorded");
    // nobody makes the old name world-writable and fills it with forged files for the next
    // pids (ld.so appends to debug.<pid>: the forged block would come first).
    let last: i32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1000);
    let plant = format!(
        "mkdir -m 777 \"$1\" && i={} && while [ $i -le {} ]; do \
         printf \"     1:\\t  total startup time in dynamic loader: {FORGED} cycles\\n     1:\\t  number of relocations: {FORGED}\\n\" > \"$1/debug.$i\"; \
         i=$((i+1)); done",
        last + 1,
        last + PLANTED_PIDS
    );
    let json = base.path().join("r.json");
    let (_, pid, doc) = run_after(&tmp, &plant, &script, &json);
    let planted = tmp.join(format!("ldcost-lddebug-{pid}"));

    let got = doc["profile"]["ld_debug"]["relocations"].as_u64();
    assert_eq!(got, Some(expected), "{}", doc["profile"]["ld_debug"]);
    // The planted directory as nobody left it: its files only, unchanged, still nobody's.
    let m = std::fs::metadata(&planted).expect("planted dir");
    assert_eq!(m.uid(), 65534);
    let files = names(&planted);
    assert_eq!(
        files.len(),
        PLANTED_PIDS as usize,
        "ldcost added files to it"
    );
    let forged_len = std::fs::metadata(planted.join(&files[0]))
        .expect("forged")
        .len();
    for f in &files {
        let len = std::fs::metadata(planted.join(f)).expect("forged").len();
        assert_eq!(len, forged_len, "{f} was written to");
    }
    check_private(&recorded(&record), &tmp, &planted);
    // Nothing of ldcost's left in TMPDIR.
    assert_eq!(names(&tmp), vec![format!("ldcost-lddebug-{pid}")]);
}

#[test]
fn a_planted_lddebug_symlink_is_not_followed() {
    const NAME: &str = "a_planted_lddebug_symlink_is_not_followed";
    if !root(NAME) {
        return;
    }
    let base = shared_tmp();
    let tmp = base.path().join("shared");
    // Where nobody wants root to create files: a directory only root may write.
    let victim = base.path().join("victim");
    std::fs::create_dir(&victim).expect("mkdir");
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let record = base.path().join("record");
    let script = script(&record);
    let expected = oracle_relocations(base.path(), &script);
    std::fs::remove_file(&record).expect("the oracle run recorded");
    let plant = format!("ln -s {} \"$1\"", victim.display());
    let json = base.path().join("r.json");
    let (_, pid, doc) = run_after(&tmp, &plant, &script, &json);
    let planted = tmp.join(format!("ldcost-lddebug-{pid}"));

    let got = doc["profile"]["ld_debug"]["relocations"].as_u64();
    assert_eq!(got, Some(expected), "{}", doc["profile"]["ld_debug"]);
    assert!(std::fs::symlink_metadata(&planted)
        .expect("planted link")
        .file_type()
        .is_symlink());
    assert!(
        names(&victim).is_empty(),
        "files created through the link: {:?}",
        names(&victim)
    );
    check_private(&recorded(&record), &tmp, &planted);
    assert_eq!(names(&tmp), vec![format!("ldcost-lddebug-{pid}")]);
}
