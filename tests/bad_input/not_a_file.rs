//! Not a readable file: exit 3.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::Command;

use crate::common::skip;
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

#[test]
fn directory() {
    let dir = tmp();
    assert_error(&deps(&[], dir.path()), 3, dir.path());
    let o = deps(&[], dir.path());
    assert!(o.stderr.contains("directory"), "{}", o.describe());
}

#[test]
fn not_a_regular_file() {
    // A device: stat says it is neither a file nor a directory.
    let p = Path::new("/dev/null");
    assert_error(&deps(&[], p), 3, p);
}

/// As root (CAP_DAC_OVERRIDE) read permission is not enforced, so there ldcost runs as `nobody`
/// on a file in a directory everyone may search.
#[test]
fn unreadable_file() {
    let test = "unreadable_file";
    let dir = tmp();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let p = write(dir.path(), "unreadable.so", b"\x7fELF");
    fs::set_permissions(&p, fs::Permissions::from_mode(0o000)).unwrap();
    let o = if fs::File::open(&p).is_err() {
        deps(&[], &p)
    } else {
        // nobody:nogroup, the uid and gid Debian reserves for it.
        let mut cmd = Command::new(LDCOST);
        cmd.arg("deps").arg(&p);
        unsafe {
            // SAFETY: only async-signal-safe system calls between fork and exec.
            cmd.pre_exec(|| {
                use nix::libc;
                if libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setgid(65534) != 0
                    || libc::setuid(65534) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = match cmd.output() {
            Ok(out) => out,
            Err(e) => return skip(test, &format!("cannot run ldcost as nobody: {e}")),
        };
        Outcome {
            what: format!("(as nobody) ldcost deps {}", p.display()),
            code: out.status.code(),
            signal: out.status.signal(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    assert_error(&o, 3, &p);
    assert!(o.stderr.contains("ermission"), "{}", o.describe());
}
