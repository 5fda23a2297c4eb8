//! Unused direct dependencies ([`ldcost::deps::unused_direct`]) against glibc's own account,
//! `ldd -u -r` ("Unused direct dependencies:"), on fixtures built here from C source:
//! a program linked `-Wl,--no-as-needed` against libraries it never calls, and a library with
//! an unused DT_NEEDED entry of its own.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{cc, skip, tools, write};
use ldcost::deps::{self, ResolveOptions};

/// The paths `ldd -u -r target` lists as unused direct dependencies, canonicalized; None
/// when ldd did not run.
fn ldd_unused(target: &Path) -> Option<BTreeSet<PathBuf>> {
    let out = Command::new("ldd")
        .args(["-u", "-r"])
        .arg(target)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_BIND_NOW")
        .env_remove("LD_PRELOAD")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut set = BTreeSet::new();
    let mut inside = false;
    for l in text.lines() {
        if l.starts_with("Unused direct dependencies") {
            inside = true;
        } else if inside && l.starts_with(char::is_whitespace) && !l.trim().is_empty() {
            let p = PathBuf::from(l.trim());
            set.insert(std::fs::canonicalize(&p).unwrap_or(p));
        } else if inside {
            inside = false;
        }
    }
    Some(set)
}

fn opts() -> ResolveOptions {
    ResolveOptions {
        ld_library_path: None,
        bind_now: false,
        ..ResolveOptions::from_env()
    }
}

/// ldcost's unused entries of the target, as canonical paths.
fn ours(target: &Path) -> (BTreeSet<PathBuf>, Vec<deps::UnusedDependency>) {
    let c = deps::resolve(target, &opts()).expect("resolve the fixture");
    let all = deps::unused_direct(&c);
    let set = all
        .iter()
        .filter(|u| u.object_path == target)
        .filter_map(|u| u.needed_path.clone())
        .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
        .collect();
    (set, all)
}

struct Fixture {
    _dir: tempfile::TempDir,
    exe: PathBuf,
    libmid: PathBuf,
    dir: PathBuf,
}

/// libfoo (called), libbar (never called by the program; libmid needs it without calling
/// it), libonly (never called, pulled in by nothing else), libmid (called; needs libbar and
/// libm, calls cos from libm only), and the program linked `--no-as-needed` against all of
/// them plus libm, which it never calls.
fn build(name: &str) -> Option<Fixture> {
    if !tools(name, &["cc", "ldd"]) {
        return None;
    }
    let t = tempfile::tempdir().expect("tempdir");
    let d = t.path().to_path_buf();
    write(&d, "foo.c", "int foo(int x) { return x + 1; }\n");
    write(&d, "bar.c", "int bar(int x) { return x * 2; }\n");
    write(&d, "only.c", "int only_here(int x) { return x - 3; }\n");
    write(
        &d,
        "mid.c",
        "#include <math.h>\nint mid(int x) { return (int)cos((double)x) + x; }\n",
    );
    write(
        &d,
        "main.c",
        "int foo(int); int mid(int);\nint main(int argc, char **argv) { (void)argv; return foo(argc) + mid(argc) - 5; }\n",
    );
    for (src, lib) in [
        ("foo.c", "libfoo.so"),
        ("bar.c", "libbar.so"),
        ("only.c", "libonly.so"),
    ] {
        cc(&d, &["-shared", "-fPIC", "-o", lib, src]);
    }
    cc(
        &d,
        &[
            "-shared",
            "-fPIC",
            "-o",
            "libmid.so",
            "mid.c",
            "-Wl,--no-as-needed",
            "-L.",
            "-lbar",
            "-lm",
            "-Wl,-rpath,$ORIGIN",
        ],
    );
    cc(
        &d,
        &[
            "-o",
            "prog",
            "main.c",
            "-Wl,--no-as-needed",
            "-L.",
            "-lfoo",
            "-lbar",
            "-lonly",
            "-lmid",
            "-lm",
            "-Wl,-rpath,$ORIGIN",
        ],
    );
    Some(Fixture {
        exe: d.join("prog"),
        libmid: d.join("libmid.so"),
        dir: std::fs::canonicalize(&d).unwrap_or(d),
        _dir: t,
    })
}

/// The program's unused entries are exactly ldd -u -r's (libbar, libonly, libm), and the
/// removal sets follow the graph: dropping libonly removes it, dropping libbar removes
/// nothing (libmid still needs it), dropping libm removes nothing (libmid needs it).
#[test]
fn program_unused_equal_ldd() {
    let name = "program_unused_equal_ldd";
    let Some(f) = build(name) else { return };
    let Some(want) = ldd_unused(&f.exe) else {
        return skip(name, "ldd -u -r did not run");
    };
    let (got, all) = ours(&f.exe);
    assert_eq!(got, want, "ldcost vs ldd -u -r on {}", f.exe.display());
    // The oracle itself names what the fixture was built to have.
    let names: BTreeSet<String> = want
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    assert!(names.contains("libbar.so") && names.contains("libonly.so"));
    assert!(!names.contains("libfoo.so") && !names.contains("libmid.so"));
    let of = |needed: &str| {
        all.iter()
            .find(|u| u.object == "prog" && u.needed == needed)
            .unwrap_or_else(|| panic!("{needed} not reported: {all:?}"))
    };
    assert_eq!(of("libonly.so").removes, vec!["libonly.so".to_string()]);
    assert!(of("libbar.so").removes.is_empty());
    assert_eq!(
        of("libonly.so").needed_path.as_deref(),
        Some(f.dir.join("libonly.so").as_path())
    );
}

/// A library's own unused entry (libmid needs libbar and never calls it) equals what
/// `ldd -u -r libmid.so` prints, and is reported in the program's closure too.
#[test]
fn library_unused_equal_ldd() {
    let name = "library_unused_equal_ldd";
    let Some(f) = build(name) else { return };
    let Some(want) = ldd_unused(&f.libmid) else {
        return skip(name, "ldd -u -r did not run");
    };
    let (got, _) = ours(&f.libmid);
    assert_eq!(got, want, "ldcost vs ldd -u -r on {}", f.libmid.display());
    assert_eq!(
        want.iter()
            .filter_map(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect::<Vec<_>>(),
        vec!["libbar.so".to_string()]
    );
    let c = deps::resolve(&f.exe, &opts()).expect("resolve");
    let in_program: Vec<_> = deps::unused_direct(&c)
        .into_iter()
        .filter(|u| u.object == "libmid.so")
        .map(|u| u.needed)
        .collect();
    assert_eq!(in_program, vec!["libbar.so".to_string()]);
}

/// A program whose every dependency is called has none, and ldd agrees.
#[test]
fn no_unused_when_all_are_called() {
    let name = "no_unused_when_all_are_called";
    if !tools(name, &["cc", "ldd"]) {
        return;
    }
    let t = tempfile::tempdir().expect("tempdir");
    let d = t.path();
    write(
        d,
        "m.c",
        "#include <math.h>\n#include <stdio.h>\nint main(int c, char **v) { (void)v; printf(\"%f\\n\", cos(c)); return 0; }\n",
    );
    cc(d, &["-o", "m", "m.c", "-Wl,--no-as-needed", "-lm"]);
    let exe = d.join("m");
    let Some(want) = ldd_unused(&exe) else {
        return skip(name, "ldd -u -r did not run");
    };
    let (got, _) = ours(&exe);
    assert_eq!(got, want);
    assert!(got.is_empty(), "{got:?}");
}
