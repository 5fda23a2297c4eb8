//! Resolution rules on hand-built fixtures, each checked against ldd (glibc's own ld.so in
//! trace mode) and, where it matters, against the program's own behaviour when run.
//! Fixtures are built from C source by the test with the flags shown beside each.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use ldcost::deps::{self, Closure, FoundBy, ResolveOptions};
use ldcost::elf::ObjectKind;

fn opts(llp: Option<&str>) -> ResolveOptions {
    ResolveOptions {
        ld_library_path: llp.map(str::to_owned),
        bind_now: false,
        ..ResolveOptions::from_env()
    }
}

/// Our load order (paths, target excluded) and missing names must equal ldd's.
fn assert_matches_ldd(target: &Path, llp: Option<&str>, c: &Closure) {
    let env: Vec<(&str, &str)> = llp.map(|v| ("LD_LIBRARY_PATH", v)).into_iter().collect();
    let ldd = ldd(target, &env).expect("ldd accepts the fixture");
    let ldd_found: Vec<String> = ldd.iter().filter_map(|l| l.path.clone()).collect();
    let ours: Vec<String> = c.objects[1..]
        .iter()
        .filter(|o| o.in_scope)
        .map(|o| o.path.clone())
        .collect();
    assert_eq!(ours, ldd_found, "load order and paths differ from ldd");
    let mut ldd_missing: Vec<String> = ldd
        .iter()
        .filter(|l| l.path.is_none())
        .map(|l| l.name.clone())
        .collect();
    let mut our_missing: Vec<String> = c.missing.iter().map(|m| m.name.clone()).collect();
    ldd_missing.sort();
    our_missing.sort();
    assert_eq!(
        our_missing, ldd_missing,
        "missing libraries differ from ldd"
    );
}

/// A shared library `lib<name>.so` in `dir` whose function `name()` returns `value`.
fn lib(dir: &Path, name: &str, value: i32, extra: &[&str]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let src = write(
        dir,
        &format!("{name}.c"),
        &format!("int {name}(void) {{ return {value}; }}\n"),
    );
    let out = format!("lib{name}.so");
    let mut args = vec!["-shared", "-fPIC", "-o", &out, src.to_str().unwrap()];
    args.extend_from_slice(extra);
    cc(dir, &args);
    dir.join(out)
}

/// A program calling `v()` and printing its value.
fn prog(dir: &Path, out: &str, link: &[&str]) -> PathBuf {
    let src = write(
        dir,
        "main.c",
        "#include <stdio.h>\nint v(void);\nint main(void) { printf(\"%d\\n\", v()); return 0; }\n",
    );
    let mut args = vec!["-o", out, src.to_str().unwrap()];
    args.extend_from_slice(link);
    cc(dir, &args);
    dir.join(out)
}

fn run_output(p: &Path, llp: Option<&str>) -> String {
    let mut c = Command::new(p);
    c.env_remove("LD_LIBRARY_PATH");
    if let Some(v) = llp {
        c.env("LD_LIBRARY_PATH", v);
    }
    String::from_utf8_lossy(&c.output().unwrap().stdout)
        .trim()
        .to_string()
}

fn path_of<'a>(c: &'a Closure, name: &str) -> Option<&'a deps::Object> {
    c.objects.iter().find(|o| o.name == name)
}

#[test]
fn rpath_beats_ld_library_path_but_runpath_does_not() {
    if !tools("rpath_vs_runpath", &["cc", "ldd"]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let a = t.path().join("a");
    let b = t.path().join("b");
    lib(&a, "v", 1, &[]);
    lib(&b, "v", 2, &[]);
    let (ad, bd) = (a.to_str().unwrap(), b.to_str().unwrap());
    let rpath = format!("-Wl,-rpath,{ad}");
    let p_rpath = prog(
        t.path(),
        "p_rpath",
        &["-L", ad, "-lv", &rpath, "-Wl,--disable-new-dtags"],
    );
    let p_runpath = prog(
        t.path(),
        "p_runpath",
        &["-L", ad, "-lv", &rpath, "-Wl,--enable-new-dtags"],
    );

    let c = deps::resolve(&p_rpath, &opts(Some(bd))).unwrap();
    let v = path_of(&c, "libv.so").unwrap();
    assert_eq!(v.path, format!("{ad}/libv.so"));
    assert!(matches!(v.found_by, FoundBy::Rpath { .. }));
    assert_matches_ldd(&p_rpath, Some(bd), &c);
    assert_eq!(
        run_output(&p_rpath, Some(bd)),
        "1",
        "the program itself used a/"
    );

    let c = deps::resolve(&p_runpath, &opts(Some(bd))).unwrap();
    let v = path_of(&c, "libv.so").unwrap();
    assert_eq!(v.path, format!("{bd}/libv.so"));
    assert_eq!(v.found_by, FoundBy::LdLibraryPath);
    assert_matches_ldd(&p_runpath, Some(bd), &c);
    assert_eq!(
        run_output(&p_runpath, Some(bd)),
        "2",
        "the program itself used b/"
    );

    // Without LD_LIBRARY_PATH, RUNPATH finds it.
    let c = deps::resolve(&p_runpath, &opts(None)).unwrap();
    assert!(matches!(
        path_of(&c, "libv.so").unwrap().found_by,
        FoundBy::Runpath { .. }
    ));
    assert_matches_ldd(&p_runpath, None, &c);
}

#[test]
fn rpath_is_inherited_runpath_is_not() {
    if !tools("rpath_inheritance", &["cc", "ldd"]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("libs");
    lib(&d, "v", 7, &[]);
    let dd = d.to_str().unwrap();
    // libmid.so needs libv.so but carries no search path of its own.
    let mid_src = write(&d, "mid.c", "int v(void); int mid(void) { return v(); }\n");
    cc(
        &d,
        &[
            "-shared",
            "-fPIC",
            "-o",
            "libmid.so",
            mid_src.to_str().unwrap(),
            "-L",
            dd,
            "-lv",
        ],
    );
    let src = write(
        t.path(),
        "m.c",
        "int mid(void); int main(void) { return mid() == 7 ? 0 : 1; }\n",
    );
    let rpath = format!("-Wl,-rpath,{dd}");
    for (out, dtags, inherited) in [
        ("with_rpath", "-Wl,--disable-new-dtags", true),
        ("with_runpath", "-Wl,--enable-new-dtags", false),
    ] {
        cc(
            t.path(),
            &[
                "-o",
                out,
                src.to_str().unwrap(),
                "-L",
                dd,
                "-lmid",
                &rpath,
                dtags,
            ],
        );
        let p = t.path().join(out);
        let c = deps::resolve(&p, &opts(None)).unwrap();
        assert_eq!(
            path_of(&c, "libmid.so").unwrap().path,
            format!("{dd}/libmid.so")
        );
        if inherited {
            assert!(c.missing.is_empty(), "{out}: {:?}", c.missing);
            assert!(matches!(&path_of(&c, "libv.so").unwrap().found_by,
                FoundBy::Rpath { of } if of.ends_with(out)));
        } else {
            assert_eq!(c.missing.len(), 1, "{out}");
            assert_eq!(c.missing[0].name, "libv.so");
            assert!(c.missing[0].needed_by.ends_with("libmid.so"));
        }
        assert_matches_ldd(&p, None, &c);
    }
}

#[test]
fn origin_is_expanded() {
    if !tools("origin", &["cc", "ldd"]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let bin = t.path().join("app/bin");
    let libdir = t.path().join("app/lib");
    std::fs::create_dir_all(&bin).unwrap();
    lib(&libdir, "v", 3, &[]);
    let p = prog(
        &bin,
        "p",
        &[
            "-L",
            libdir.to_str().unwrap(),
            "-lv",
            "-Wl,-rpath,$ORIGIN/../lib",
        ],
    );
    let c = deps::resolve(&p, &opts(None)).unwrap();
    let v = path_of(&c, "libv.so").unwrap();
    let canon_bin = std::fs::canonicalize(&bin).unwrap();
    assert_eq!(v.path, format!("{}/../lib/libv.so", canon_bin.display()));
    assert!(matches!(v.found_by, FoundBy::Runpath { .. }));
    // ldd names the main program by the path given; give it the canonical one so $ORIGIN
    // agrees (ld.so uses /proc/self/exe when the kernel starts the program).
    let canon_p = canon_bin.join("p");
    assert_matches_ldd(
        &canon_p,
        None,
        &deps::resolve(&canon_p, &opts(None)).unwrap(),
    );
    assert_eq!(run_output(&p, None), "3");
}

#[test]
fn ld_library_path_and_missing_library() {
    if !tools("ld_library_path", &["cc", "ldd"]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("only-here");
    lib(&d, "v", 5, &[]);
    let dd = d.to_str().unwrap();
    let p = prog(t.path(), "p", &["-L", dd, "-lv"]);
    let c = deps::resolve(&p, &opts(Some(dd))).unwrap();
    assert_eq!(
        path_of(&c, "libv.so").unwrap().found_by,
        FoundBy::LdLibraryPath
    );
    assert_matches_ldd(&p, Some(dd), &c);

    // Without it the library is missing; the rest of the closure is still resolved.
    let c = deps::resolve(&p, &opts(None)).unwrap();
    assert_eq!(c.missing.len(), 1);
    assert_eq!(c.missing[0].name, "libv.so");
    assert!(c
        .objects
        .iter()
        .any(|o| o.info.soname.as_deref() == Some("libc.so.6")));
    assert_matches_ldd(&p, None, &c);

    // The binary reports it like ldd and exits 1 (a finding).
    let out = Command::new(env!("CARGO_BIN_EXE_ldcost"))
        .args(["deps", "--flat", p.to_str().unwrap()])
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("libv.so") && text.contains("not found"),
        "{text}"
    );
}

#[test]
fn cycle_between_two_libraries_loads_each_once() {
    if !tools("cycle", &["cc", "ldd"]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let dd = d.to_str().unwrap();
    let one = write(
        d,
        "one.c",
        "int two(void); int one(void) { return 1; } int call2(void) { return two(); }\n",
    );
    let two = write(
        d,
        "two.c",
        "int one(void); int two(void) { return 2; } int call1(void) { return one(); }\n",
    );
    // libtwo first without its dependency, then libone against it, then libtwo against libone.
    cc(
        d,
        &["-shared", "-fPIC", "-o", "libtwo.so", two.to_str().unwrap()],
    );
    cc(
        d,
        &[
            "-shared",
            "-fPIC",
            "-o",
            "libone.so",
            one.to_str().unwrap(),
            "-L",
            dd,
            "-ltwo",
        ],
    );
    cc(
        d,
        &[
            "-shared",
            "-fPIC",
            "-o",
            "libtwo.so",
            two.to_str().unwrap(),
            "-L",
            dd,
            "-lone",
        ],
    );
    let src = write(
        d,
        "m.c",
        "int one(void); int main(void) { return one() - 1; }\n",
    );
    let rp = format!("-Wl,-rpath,{dd}");
    // DT_RPATH (not RUNPATH) so that it also serves libone's own needs.
    cc(
        d,
        &[
            "-o",
            "p",
            src.to_str().unwrap(),
            "-L",
            dd,
            "-lone",
            &rp,
            "-Wl,--disable-new-dtags",
        ],
    );
    let p = d.join("p");
    let c = deps::resolve(&p, &opts(None)).unwrap();
    let ones = c
        .objects
        .iter()
        .filter(|o| o.path.ends_with("libone.so"))
        .count();
    let twos = c
        .objects
        .iter()
        .filter(|o| o.path.ends_with("libtwo.so"))
        .count();
    assert_eq!((ones, twos), (1, 1));
    let two = c
        .objects
        .iter()
        .find(|o| o.path.ends_with("libtwo.so"))
        .unwrap();
    assert!(two.needed.iter().any(|e| e.name == "libone.so" && !e.first));
    assert_matches_ldd(&p, None, &c);
}

#[test]
fn bind_now_static_static_pie_and_relr() {
    if !tools("bind_now_static_relr", &["cc", "readelf"]) {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let src = write(
        d,
        "h.c",
        "#include <stdio.h>\n#include <string.h>\nstatic int a, b, c;\nint *ptrs[] = {&a, &b, &c, &a, &b, &c};\n\
         int main(int argc, char **argv) { printf(\"%zu %p\\n\", strlen(argv[0]), (void *)ptrs[argc]); return 0; }\n",
    );
    let s = src.to_str().unwrap();
    cc(d, &["-o", "lazy", s]);
    cc(d, &["-o", "now", s, "-Wl,-z,now"]);
    cc(d, &["-o", "relr", s, "-Wl,-z,pack-relative-relocs"]);
    let static_ok = Command::new("cc")
        .current_dir(d)
        .args(["-static", "-o", "static", s])
        .status()
        .unwrap()
        .success();
    let spie_ok = Command::new("cc")
        .current_dir(d)
        .args(["-static-pie", "-o", "spie", s])
        .status()
        .unwrap()
        .success();

    let lazy = deps::analyze_file(&d.join("lazy"), true).unwrap();
    let now = deps::analyze_file(&d.join("now"), true).unwrap();
    assert_eq!(lazy.kind, ObjectKind::Pie);
    assert!(!lazy.flags.bind_now && now.flags.bind_now);
    assert!(
        lazy.relocations.lazy_deferred >= 2,
        "printf and strlen are lazy PLT slots"
    );
    assert_eq!(now.relocations.lazy_deferred, 0);
    assert_eq!(
        now.relocations.startup_lookups,
        lazy.relocations.startup_lookups + lazy.relocations.lazy_deferred
    );

    let relr = deps::analyze_file(&d.join("relr"), true).unwrap();
    let oracle = readelf_reloc_counts(&d.join("relr"));
    assert!(
        relr.relocations.relr > 0,
        "the linker packed relative relocations"
    );
    assert_eq!(Some(&relr.relocations.relr), oracle.get("RELR"));
    assert_eq!(relr.relocations.by_type, oracle);

    for (name, ok, kind) in [
        ("static", static_ok, ObjectKind::Static),
        ("spie", spie_ok, ObjectKind::StaticPie),
    ] {
        if !ok {
            skip(
                name,
                "static glibc (libc6-dev static archives) is not installed",
            );
            continue;
        }
        let p = d.join(name);
        let c = deps::resolve(&p, &opts(None)).unwrap();
        assert_eq!(c.objects.len(), 1, "{name}: a static binary has no closure");
        assert_eq!(c.objects[0].info.kind, kind);
        assert!(c.objects[0].info.interpreter.is_none());
        assert_eq!(
            c.objects[0].info.relocations.by_type,
            readelf_reloc_counts(&p),
            "{name}"
        );
        assert!(ldd(&p, &[]).is_none(), "ldd agrees it is static");
    }
}

#[test]
fn glibc_hwcaps_subdirectory_is_preferred() {
    if !tools("hwcaps", &["cc", "ldd"]) {
        return;
    }
    let c0 = deps::resolve(Path::new("/bin/sh"), &opts(None)).unwrap();
    let Some(best) = c0.rules.hwcaps.first().cloned() else {
        skip(
            "hwcaps",
            "ld.so reports no supported glibc-hwcaps subdirectory on this CPU",
        );
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("l");
    lib(&d, "v", 1, &[]);
    lib(&d.join("glibc-hwcaps").join(&best), "v", 2, &[]);
    let dd = d.to_str().unwrap();
    let p = prog(t.path(), "p", &["-L", dd, "-lv"]);
    let c = deps::resolve(&p, &opts(Some(dd))).unwrap();
    assert_eq!(
        path_of(&c, "libv.so").unwrap().path,
        format!("{dd}/glibc-hwcaps/{best}/libv.so")
    );
    assert_matches_ldd(&p, Some(dd), &c);
    assert_eq!(run_output(&p, Some(dd)), "2");
}
