//! `ldcost profile` on a bad target runs the same checks as `deps` before launching anything,
//! with the same exit codes and messages: 3 missing, 4 empty / text / not ELF, 5 truncated,
//! 6 foreign architecture or 32-bit. Fixtures are made by the test (the aarch64 one by
//! patching `e_machine` of a copy of /bin/true); the oracle is `ldcost deps` on the same file
//! and, for the ELF facts, readelf.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn ldcost(args: &[&str], target: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ldcost"))
        .args(args)
        .arg(target)
        .output()
        .expect("run ldcost");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn executable(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write fixture");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    p
}

/// Each fixture: its name, its bytes, the exit code and a word the message must hold.
fn fixtures(dir: &Path) -> Vec<(PathBuf, i32, &'static str)> {
    let elf = std::fs::read("/bin/true").expect("/bin/true");
    let mut arm = elf.clone();
    // e_machine at offset 18: EM_AARCH64 = 183.
    arm[18..20].copy_from_slice(&183u16.to_le_bytes());
    let mut elf32 = elf.clone();
    elf32[4] = 1; // EI_CLASS = ELFCLASS32
    vec![
        (executable(dir, "empty", b""), 4, "empty"),
        (
            executable(dir, "text", b"just some words\n"),
            4,
            "not an ELF",
        ),
        (
            executable(dir, "trunc", &elf[..200.min(elf.len())]),
            5,
            "malformed",
        ),
        (executable(dir, "arm", &arm), 6, "aarch64"),
        (executable(dir, "elf32", &elf32), 6, "32-bit"),
        (dir.join("missing"), 3, "does not exist"),
    ]
}

#[test]
fn bad_targets_exit_as_deps_does_before_anything_runs() {
    const NAME: &str = "bad_targets_exit_as_deps_does_before_anything_runs";
    if !Path::new("/bin/true").exists() {
        common::skip(NAME, "/bin/true is missing");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, code, word) in fixtures(dir.path()) {
        let (deps_code, deps_err) = ldcost(&["deps"], &path);
        let (code_p, err) = ldcost(&["profile", "-n", "1", "--no-ld-debug"], &path);
        assert_eq!(code_p, code, "{}: {err}", path.display());
        assert_eq!(deps_code, code, "deps {}: {deps_err}", path.display());
        // The same first line as deps (the message), never the kernel's ENOEXEC.
        let first = |s: &str| s.lines().next().unwrap_or("").to_string();
        assert_eq!(first(&err), first(&deps_err), "{}", path.display());
        assert!(err.contains(word), "{}: {err}", path.display());
        assert!(
            !err.contains("Exec format error") && !err.contains("chmod +x"),
            "{}: {err}",
            path.display()
        );
        // One error line (and at most a hint), the same lines as deps.
        assert!(err.lines().count() <= 2, "{err}");
        assert_eq!(err, deps_err, "{}", path.display());
    }
}

#[test]
fn the_patched_fixture_is_what_readelf_calls_aarch64() {
    const NAME: &str = "the_patched_fixture_is_what_readelf_calls_aarch64";
    if !common::tools(NAME, &["readelf"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let arm = fixtures(dir.path())
        .into_iter()
        .find(|(p, _, _)| p.ends_with("arm"))
        .expect("arm fixture")
        .0;
    let h = common::stdout_of("readelf", &["-h", arm.to_str().expect("utf-8 path")]);
    assert!(h.contains("AArch64"), "{h}");
}

#[test]
fn a_script_is_still_profiled_through_its_interpreter() {
    const NAME: &str = "a_script_is_still_profiled_through_its_interpreter";
    if !Path::new("/bin/sh").exists() {
        common::skip(NAME, "/bin/sh is missing");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let s = executable(dir.path(), "s.sh", b"#!/bin/sh\nexit 0\n");
    let (code, err) = ldcost(common::QUICK, &s);
    // deps calls a script exit 4; profile runs it (the kernel runs its interpreter).
    assert_eq!(ldcost(&["deps"], &s).0, 4);
    assert!(code == 0 || code == 8, "{code}: {err}");
    if code == 8 {
        common::skip(NAME, &format!("ptrace or perf refused: {err}"));
    }
}

/// A target whose DT_NEEDED library is missing is not run to end with "status 127" and
/// ld.so's message once per run, naming no library: profile asks the deps
/// resolver first and stops with one line naming the library and who needs it, deps' exit
/// code for the same finding (1), and a hint; the target never runs. Fixture: an executable
/// linked against two libraries built beside it (`cc -shared -fPIC`), then deleted; the
/// oracle for "missing" is `ldd` ("not found").
#[test]
fn a_missing_library_is_named_before_anything_runs() {
    const NAME: &str = "a_missing_library_is_named_before_anything_runs";
    if !common::tools(NAME, &["cc", "ldd"]) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    common::write(d, "a.c", "int fa(void) { return 0; }\n");
    common::write(d, "b.c", "int fb(void) { return 0; }\n");
    common::write(
        d,
        "m.c",
        "#include <stdio.h>\nint fa(void); int fb(void);\n\
         int main(void) { puts(\"the target ran\"); return fa() + fb(); }\n",
    );
    common::cc(d, &["-shared", "-fPIC", "-o", "libh4gone_a.so", "a.c"]);
    common::cc(d, &["-shared", "-fPIC", "-o", "libh4gone_b.so", "b.c"]);
    common::cc(d, &["-o", "app", "m.c", "-L.", "-lh4gone_a", "-lh4gone_b"]);
    std::fs::remove_file(d.join("libh4gone_a.so")).expect("rm");
    std::fs::remove_file(d.join("libh4gone_b.so")).expect("rm");
    let app = d.join("app");
    let ldd = common::ldd(&app, &[]).expect("ldd runs");
    let missing: Vec<&str> = ldd
        .iter()
        .filter(|l| l.path.is_none())
        .map(|l| l.name.as_str())
        .collect();
    assert_eq!(
        missing,
        ["libh4gone_a.so", "libh4gone_b.so"],
        "ldd: not found"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_ldcost"))
        .args(["profile", "-n", "2", "--no-ld-debug"])
        .arg(&app)
        .output()
        .expect("run ldcost");
    let err = String::from_utf8_lossy(&out.stderr);
    let (deps_code, _) = ldcost(&["deps"], &app);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(deps_code, 1, "deps calls it a finding too");
    assert!(
        out.stdout.is_empty(),
        "the target must not run: {:?}",
        out.stdout
    );
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "one error line and a hint: {err}");
    assert!(
        lines[0].starts_with("ldcost: error: ")
            && lines[0].contains("libh4gone_a.so")
            && lines[0].contains(&format!("needed by {}", app.display())),
        "{err}"
    );
    assert!(
        lines[1].contains("1 more not found")
            && lines[1].contains(&format!("ldcost deps {}", app.display()))
            && lines[1].contains("LD_LIBRARY_PATH"),
        "{err}"
    );
    assert!(
        !err.contains("127") && !err.contains("cannot open shared object"),
        "{err}"
    );
}
