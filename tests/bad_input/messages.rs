//! Messages that name the real problem: a missing or non-program interpreter (not "the target
//! does not exist"), a noexec mount (not "chmod +x"), a `--child exec:` text file, a
//! schema_version of the wrong type, a closed standard input. Each is refused before anything
//! runs, so no ptrace is needed.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::skip;
use crate::harness::{tmp, LDCOST};

fn run(args: &[&str], stdin: Stdio) -> (Option<i32>, String, String) {
    let o = Command::new(LDCOST)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .stdin(stdin)
        .output()
        .expect("run ldcost");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn executable(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    p
}

/// One error line that starts with `first` and a hint: `code`.
fn assert_says(got: &(Option<i32>, String, String), code: i32, first: &str) {
    let (c, _, err) = got;
    assert_eq!(*c, Some(code), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert_eq!(lines[0], format!("ldcost: error: {first}"), "{err}");
    assert!(lines[1].starts_with("  hint: "), "{err}");
}

#[test]
fn missing_or_text_interpreter_is_named() {
    let dir = tmp();
    let d = dir.path();
    let text = executable(d, "text", b"hello, not a program\n");
    let s1 = executable(d, "s1", b"#!/nonexistent/sh\necho hi\n");
    let s2 = executable(
        d,
        "s2",
        format!("#!{}\necho hi\n", text.display()).as_bytes(),
    );
    let (s1, s2, text) = (s1.to_str().unwrap(), s2.to_str().unwrap(), text.display());
    assert_says(
        &run(&["profile", s1], Stdio::null()),
        3,
        &format!("/nonexistent/sh, the #! interpreter of {s1}, does not exist"),
    );
    assert_says(
        &run(&["profile", s2], Stdio::null()),
        3,
        &format!(
            "{text}, the #! interpreter of {s2}, is not a program: neither ELF nor a #! script"
        ),
    );
    // An ELF program whose PT_INTERP names a loader that is not there (same length).
    let Ok(mut elf) = std::fs::read("/bin/true") else {
        skip("missing_or_text_interpreter_is_named", "no /bin/true");
        return;
    };
    let want = b"/lib64/ld-linux-x86-64.so.2";
    let Some(at) = elf.windows(want.len()).position(|w| w == want) else {
        skip(
            "missing_or_text_interpreter_is_named",
            "/bin/true's PT_INTERP is not /lib64/ld-linux-x86-64.so.2",
        );
        return;
    };
    let gone = b"/lib64/ld-missing-x86-64.so";
    elf[at..at + gone.len()].copy_from_slice(gone);
    let t = executable(d, "t", &elf);
    let t = t.to_str().unwrap();
    assert_says(
        &run(&["profile", t], Stdio::null()),
        3,
        &format!(
            "/lib64/ld-missing-x86-64.so, the ELF interpreter (PT_INTERP) of {t}, does not exist"
        ),
    );
    // deps reports the closure and says the loader is missing: a finding, exit 1.
    let (code, out, err) = run(&["deps", t], Stdio::null());
    assert_eq!(code, Some(1), "{err}");
    assert!(!out.is_empty(), "the report is printed");
    assert_eq!(
        err.trim_end(),
        format!("ldcost: warning: the ELF interpreter (PT_INTERP) /lib64/ld-missing-x86-64.so, of {t}, does not exist: the kernel cannot start it")
    );
}

#[test]
fn child_exec_of_a_text_file_is_refused() {
    let dir = tmp();
    let text = executable(dir.path(), "text", b"hello\n");
    let child = format!("--child=exec:{}", text.display());
    assert_says(
        &run(
            &["profile", "--fork=2", &child, "--no-exec", "/bin/true"],
            Stdio::null(),
        ),
        3,
        &format!(
            "--child exec:{} cannot be executed: it is not a program (neither ELF nor a #! script)",
            text.display()
        ),
    );
}

#[test]
fn noexec_mount_is_named() {
    let name = "noexec_mount_is_named";
    let dir = tmp();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).expect("mkdir");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "noexec,size=4m", "tmpfs"])
        .arg(&mnt)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        skip(name, "cannot mount a noexec tmpfs (needs root)");
        return;
    }
    let t = mnt.join("true");
    let copied = std::fs::copy("/bin/true", &t);
    let got = run(&["profile", t.to_str().unwrap()], Stdio::null());
    let _ = Command::new("umount").arg(&mnt).status();
    copied.expect("copy /bin/true");
    assert_says(
        &got,
        8,
        &format!(
            "{} is on a file system mounted noexec: the kernel runs no program from it",
            t.display()
        ),
    );
}

#[test]
fn schema_version_of_the_wrong_type_is_shown() {
    let dir = tmp();
    for (v, shown) in [("\"2\"", "\"2\""), ("2.5", "2.5")] {
        let p = dir.path().join("doc.json");
        std::fs::write(&p, format!("{{\"schema_version\": {v}}}")).expect("write");
        let p = p.to_str().unwrap();
        assert_says(
            &run(&["report", p], Stdio::null()),
            10,
            &format!(
                "{p} is not an ldcost document (schema_version is {shown}, not a whole number)"
            ),
        );
    }
}

/// The Rust runtime gives a closed standard input /dev/null, so both read as closed.
#[test]
fn closed_stdin_is_not_empty() {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("exec '{LDCOST}' report - <&-"))
        .stdin(Stdio::null());
    let o = cmd.output().expect("sh");
    let got = (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    let says = "standard input is closed (or /dev/null): there is no document to read";
    assert_says(&got, 3, says);
    assert_says(&run(&["report", "-"], Stdio::null()), 3, says);
}
