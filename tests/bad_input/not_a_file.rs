//! Not a readable file: exit 3.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use crate::common::{as_user_binary, skip, tools};
use crate::harness::*;

#[test]
fn missing_path() {
    let dir = tmp();
    let p = dir.path().join("no-such-file");
    assert_error(&deps(&[], &p), 3, &p);
    assert_error(&deps(&["--object-only"], &p), 3, &p);
}

#[test]
fn dangling_symlink() {
    let dir = tmp();
    let p = dir.path().join("dangling");
    std::os::unix::fs::symlink(dir.path().join("nowhere"), &p).unwrap();
    assert_error(&deps(&[], &p), 3, &p);
}

/// A directory is a tree for `deps` (scanned: tests/deps_tree.rs), but not a program to run.
#[test]
fn directory() {
    let dir = tmp();
    let out = std::process::Command::new(LDCOST)
        .arg("profile")
        .arg(dir.path())
        .output()
        .expect("run the ldcost binary");
    let o = Outcome {
        what: format!("ldcost profile {}", dir.path().display()),
        code: out.status.code(),
        signal: out.status.signal(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert_error(&o, 3, dir.path());
    assert!(o.stderr.contains("directory"), "{}", o.describe());
}

#[test]
fn not_a_regular_file() {
    // A device: stat says it is neither a file nor a directory.
    let p = Path::new("/dev/null");
    assert_error(&deps(&[], p), 3, p);
}

/// As root (CAP_DAC_OVERRIDE) read permission is not enforced, so there ldcost runs as `nobody`:
/// a copy of it, and the file, in a directory nobody can enter wherever the clone is
/// (`as_user_binary`).
#[test]
fn unreadable_file() {
    let test = "unreadable_file";
    let check = |o: &Outcome, p: &Path| {
        assert_error(o, 3, p);
        assert!(o.stderr.contains("ermission"), "{}", o.describe());
    };
    let dir = tmp();
    let p = write(dir.path(), "unreadable.so", b"\x7fELF");
    fs::set_permissions(&p, fs::Permissions::from_mode(0o000)).unwrap();
    if fs::File::open(&p).is_err() {
        // Not root: the permission holds for ldcost run as this user.
        return check(&deps(&[], &p), &p);
    }
    if !tools(test, &["setpriv"]) {
        return;
    }
    let user = match as_user_binary() {
        Ok(u) => u,
        Err(e) => return skip(test, &e),
    };
    let p = write(user.path(), "unreadable.so", b"\x7fELF");
    fs::set_permissions(&p, fs::Permissions::from_mode(0o000)).unwrap();
    let out = user
        .command()
        .arg("deps")
        .arg(&p)
        .output()
        .expect("run setpriv");
    let o = Outcome {
        what: format!("(as nobody) ldcost deps {}", p.display()),
        code: out.status.code(),
        signal: out.status.signal(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    check(&o, &p);
}
