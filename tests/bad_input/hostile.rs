//! Hostile inputs: resolution must not hang, analysing a file must not run it or let it drive
//! the terminal.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use crate::common::skip;
use crate::elf::*;
use crate::harness::*;

/// A FIFO named like a needed library in a search directory: ld.so would block opening it, but
/// ldcost must not hang; it should record the library as unusable (a finding, exit 1).
#[test]
fn fifo_in_search_path_does_not_hang() {
    let Some(mut d) = read_system_lib("fifo_in_search_path_does_not_hang", "libz.so.1") else {
        return;
    };
    // Rename the DT_NEEDED libc.so.6 of this copy to libq.so.6 (same length), so that only
    // the target needs it: ldcost itself, started with LD_LIBRARY_PATH, must not.
    let Some(at) = needed_name_offset(&d, "libc.so.6") else {
        return skip(
            "fifo_in_search_path_does_not_hang",
            "this libz.so.1 does not need libc.so.6",
        );
    };
    d[at + 3] = b'q';
    let dir = tmp();
    let target = write(dir.path(), "libz-q.so", &d);
    let libs = dir.path().join("libs");
    fs::create_dir(&libs).unwrap();
    let fifo = libs.join("libq.so.6");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        return skip("fifo_in_search_path_does_not_hang", "mkfifo failed");
    }
    let mut child = Command::new(LDCOST)
        .arg("deps")
        .arg(&target)
        .env("LD_LIBRARY_PATH", &libs)
        .env_remove("LD_BIND_NOW")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run the ldcost binary");
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "ldcost deps hangs on a FIFO in LD_LIBRARY_PATH ({})",
                fifo.display()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let o = Outcome {
        what: format!(
            "LD_LIBRARY_PATH={} ldcost deps {}",
            libs.display(),
            target.display()
        ),
        code: out.status.code(),
        signal: out.status.signal(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert_robust(&o);
    assert_eq!(o.code, Some(1), "{}", o.describe());
}

// ---------------------------------------------------------------------------------------------
// Hostile content: analysing a file must not run it or let it drive the terminal

/// A copy of /bin/true whose PT_INTERP names a script: ldcost asks the interpreter for its
/// search rules (`INTERP --help`), so analysing an untrusted file would run a program it names.
#[test]
fn untrusted_pt_interp_is_not_executed() {
    let Ok(mut d) = fs::read("/bin/true") else {
        return skip("untrusted_pt_interp_is_not_executed", "no /bin/true");
    };
    // The script's path must fit in /bin/true's PT_INTERP (27 bytes): a short directory under
    // /tmp, whatever TMPDIR is (a TMPDIR on a mount deep in the tree would not fit).
    let Ok(dir) = tempfile::Builder::new().prefix("i").tempdir_in("/tmp") else {
        return skip(
            "untrusted_pt_interp_is_not_executed",
            "cannot make a directory in /tmp",
        );
    };
    let marker = dir.path().join("ran");
    let script = write(
        dir.path(),
        "i",
        format!("#!/bin/sh\ntouch '{}'\n", marker.display()).as_bytes(),
    );
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let Some(interp) = phdrs(&d).into_iter().find(|p| p.p_type == PT_INTERP) else {
        return skip(
            "untrusted_pt_interp_is_not_executed",
            "/bin/true has no PT_INTERP",
        );
    };
    let name = script.to_str().unwrap().as_bytes();
    if name.len() >= interp.filesz as usize {
        return skip(
            "untrusted_pt_interp_is_not_executed",
            "the temporary path is longer than PT_INTERP",
        );
    }
    let at = interp.offset as usize;
    d[at..at + interp.filesz as usize].fill(0);
    d[at..at + name.len()].copy_from_slice(name);
    let target = write(dir.path(), "true-with-script-interp", &d);
    let o = deps(&[], &target);
    assert_robust(&o);
    assert!(
        !marker.exists(),
        "ldcost ran the target's PT_INTERP ({}): {}",
        script.display(),
        o.describe()
    );
}

/// A DT_NEEDED name holding an escape sequence (OSC 0: set the window title) must not reach the
/// terminal raw through the text report.
#[test]
fn control_characters_in_names_are_escaped() {
    let Some(mut d) = read_system_lib("control_characters_in_names_are_escaped", "libz.so.1")
    else {
        return;
    };
    let Some(at) = needed_name_offset(&d, "libc.so.6") else {
        return skip(
            "control_characters_in_names_are_escaped",
            "this libz.so.1 does not need libc.so.6",
        );
    };
    d[at..at + 9].copy_from_slice(b"\x1b]0;pwn\x07x");
    let dir = tmp();
    let p = write(dir.path(), "libz-esc.so", &d);
    for flags in [&["--object-only"][..], &[][..], &["--flat"][..]] {
        let o = deps(flags, &p);
        assert_robust(&o);
        assert!(
            !o.stdout.contains('\x1b') && !o.stderr.contains('\x1b'),
            "an escape sequence from the file reached the terminal: {}",
            o.describe()
        );
    }
}
