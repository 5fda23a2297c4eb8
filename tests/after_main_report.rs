//! The section "Loaded after main", the summary's part "libraries loaded after main" and the
//! JSON's `profile.after_main`, against oracles someone else wrote.
//!
//! | claim | oracle |
//! | --- | --- |
//! | relocations by class and in all for each object loaded after main | `readelf -rW` of its file |
//! | the section's objects and their order | `LD_DEBUG=files`' lines after the first "dynamically loaded by" (the objects each dlopen mapped) on a C fixture: a chain (A needs B), RTLD_GLOBAL and RTLD_LOCAL, a failed dlopen, dlclose |
//! | the summary's part = the section's ld.so CPU after main = the JSON's, text and Markdown | the document's numbers, formatted at the printed precision |
//! | a static program: "not available (why)"; a program that never dlopens: "none" or "not available (why)", and no part | the text and the JSON |
//! | `diff`: a library loaded after main on BASE only is "removed", ld.so's CPU after main is each document's | the fixture run without its dlopen of libC.so (LD_DEBUG=files' set), the documents |
//!
//! Profiling needs ptrace and perf_event_open: where ldcost is refused (exit 8) the tests print
//! `SKIP` (a failure under LDCOST_REQUIRE_ALL), as they do where the C compiler is missing.

mod common;

use std::path::{Path, PathBuf};

use common::{cc, ldcost, skip, tools, write};
use serde_json::Value;

const LIB_B: &str = r#"
int b_counter;
int b_value(void) { return b_counter + 1; }
int (*b_pointer)(void) = b_value;
"#;

const LIB_A: &str = r#"
#include <stdio.h>
extern int b_value(void);
static const char *names[] = { "one", "two", "three", "four" };
int a_value(void) { return b_value() + (int)(names[1][0]); }
const char *a_name(int i) { return names[i & 3]; }
int a_print(void) { return printf("%s\n", a_name(2)) > 0; }
"#;

const LIB_C: &str = r#"
static int c_state;
__attribute__((constructor)) static void c_init(void) { c_state = 7; }
int c_value(void) { return c_state; }
"#;

const PROG: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
    (void)argv;
    void *a = dlopen("libA.so", RTLD_LAZY | RTLD_GLOBAL);
    if (!a) { fprintf(stderr, "%s\n", dlerror()); return 2; }
    int (*av)(void) = (int (*)(void))dlsym(a, "a_value");
    if (!av || av() < 0) return 3;
    if (dlopen("libmissing-ldcost.so", RTLD_NOW)) return 4;
    if (argc > 1) return 0; /* "no-c": libA.so and libB.so only */
    void *c = dlopen("libC.so", RTLD_NOW);
    if (!c) { fprintf(stderr, "%s\n", dlerror()); return 5; }
    int (*cv)(void) = (int (*)(void))dlsym(c, "c_value");
    if (!cv || cv() != 7) return 6;
    dlclose(c);
    return 0;
}
"#;

/// The fixture: libB.so, libA.so (needs libB.so), libC.so (a constructor), and the program
/// that opens them from its own directory (RUNPATH $ORIGIN).
fn fixture(dir: &Path) -> PathBuf {
    write(dir, "b.c", LIB_B);
    write(dir, "a.c", LIB_A);
    write(dir, "c.c", LIB_C);
    write(dir, "prog.c", PROG);
    cc(dir, &["-shared", "-fPIC", "-O1", "-o", "libB.so", "b.c"]);
    cc(
        dir,
        &[
            "-shared",
            "-fPIC",
            "-O1",
            "-o",
            "libA.so",
            "a.c",
            "-L.",
            "-lB",
            "-Wl,-rpath,$ORIGIN",
        ],
    );
    cc(dir, &["-shared", "-fPIC", "-O1", "-o", "libC.so", "c.c"]);
    cc(
        dir,
        &["-O1", "-o", "prog", "prog.c", "-ldl", "-Wl,-rpath,$ORIGIN"],
    );
    dir.join("prog")
}

/// The objects each dlopen mapped, by file name, in order: `LD_DEBUG=files`' "generating
/// link map" lines after its first "dynamically loaded by" line.
fn ld_debug_loaded(prog: &Path, args: &[&str]) -> Vec<String> {
    let out = std::process::Command::new(prog)
        .args(args)
        .env("LD_DEBUG", "files")
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("run the fixture");
    assert!(out.status.success(), "the fixture failed: {out:?}");
    let text = String::from_utf8_lossy(&out.stderr);
    let mut after_main = false;
    let mut names = Vec::new();
    for l in text.lines() {
        if l.contains("dynamically loaded by") {
            after_main = true;
        }
        if !after_main {
            continue;
        }
        if let Some(rest) = l.trim_start().split_once("file=").map(|x| x.1) {
            if rest.contains("generating link map") {
                let name = rest.split(" [").next().unwrap();
                names.push(name.rsplit('/').next().unwrap().to_string());
            }
        }
    }
    names
}

fn base(p: &str) -> String {
    p.rsplit('/').next().unwrap_or(p).to_string()
}

/// `ldcost profile PROG --json`: (text, document), None when profiling is refused here.
fn profile(test: &str, prog: &Path, dir: &Path) -> Option<(String, Value, PathBuf)> {
    profile_args(test, prog, &[], dir)
}

fn profile_args(
    test: &str,
    prog: &Path,
    args: &[&str],
    dir: &Path,
) -> Option<(String, Value, PathBuf)> {
    let json = dir.join("doc.json");
    let mut argv = vec![
        "profile",
        prog.to_str().unwrap(),
        "--quiet-target",
        "-n",
        "3",
        "--json",
        json.to_str().unwrap(),
    ];
    if !args.is_empty() {
        argv.push("--");
        argv.extend_from_slice(args);
    }
    let o = ldcost(&argv);
    if o.code == 8 {
        skip(
            test,
            "ldcost profile is refused here (exit 8: ptrace or perf)",
        );
        return None;
    }
    assert_eq!(o.code, 0, "{}", o.stderr);
    let doc = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    Some((o.stdout, doc, json))
}

/// The readelf classes of one file: (relative, symbolic, plt, total).
fn readelf_classes(path: &Path) -> (u64, u64, u64, u64) {
    let m = common::readelf_reloc_counts(path);
    let get = |k: &str| m.get(k).copied().unwrap_or(0);
    let relative = get("R_X86_64_RELATIVE") + get("RELR") + get("R_AARCH64_RELATIVE");
    let plt = get("R_X86_64_JUMP_SLOT") + get("R_AARCH64_JUMP_SLOT");
    let symbolic = get("R_X86_64_GLOB_DAT")
        + get("R_X86_64_64")
        + get("R_AARCH64_GLOB_DAT")
        + get("R_AARCH64_ABS64");
    (relative, symbolic, plt, m.values().sum())
}

/// The static model of an object loaded after main is its file's relocations as readelf
/// lists them (the same reading `deps` makes of start-up objects).
#[test]
fn relocations_per_object_equal_readelf() {
    let test = "relocations_per_object_equal_readelf";
    if !tools(test, &["cc", "readelf"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    for lib in ["libA.so", "libB.so", "libC.so"] {
        let path = dir.path().join(lib);
        let m = ldcost::attribute::after_main::static_model(path.to_str().unwrap(), 0x1)
            .expect("the model of an ELF file");
        let (relative, symbolic, plt, total) = readelf_classes(&path);
        assert_eq!(
            (m.relative, m.symbolic, m.plt, m.total),
            (relative, symbolic, plt, total),
            "{lib}: ldcost vs readelf -rW"
        );
        assert!(m.total > 0, "{lib}: a fixture library with relocations");
    }
    // libA.so calls b_value and printf through its PLT: lazily, no start-up lookup for them;
    // RTLD_NOW looks them up at load.
    let a = dir.path().join("libA.so");
    let lazy = ldcost::attribute::after_main::static_model(a.to_str().unwrap(), 0x1).unwrap();
    let now = ldcost::attribute::after_main::static_model(a.to_str().unwrap(), 0x2).unwrap();
    assert_eq!(now.lookups, lazy.lookups + now.plt, "{lazy:?} {now:?}");
}

/// The section's objects in LD_DEBUG=files' order, each with readelf's relocations, and the
/// summary's part, the section's total and the JSON's the same figure.
#[test]
fn the_section_follows_ld_debug_files_and_the_summary_agrees() {
    let test = "the_section_follows_ld_debug_files_and_the_summary_agrees";
    if !tools(test, &["cc", "readelf"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = fixture(dir.path());
    let expected = ld_debug_loaded(&prog, &[]);
    assert_eq!(expected, ["libA.so", "libB.so", "libC.so"], "the oracle");
    let Some((text, doc, json)) = profile(test, &prog, dir.path()) else {
        return;
    };
    let a = &doc["profile"]["after_main"];
    if a["seen"]["level"] == "not-available" {
        let why = a["seen"]["why"].as_str().unwrap_or("");
        assert!(
            text.contains(&format!("Loaded after main: not available ({why})")),
            "{text}"
        );
        skip(
            test,
            &format!("the loader after main is not measured here: {why}"),
        );
        return;
    }
    let objects: Vec<String> = a["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| base(o["object"].as_str().unwrap()))
        .collect();
    assert_eq!(objects, expected, "JSON vs LD_DEBUG=files");
    // The text's rows, in the same order.
    let rows: Vec<String> = text
        .lines()
        .skip_while(|l| !l.starts_with("Loaded after main: "))
        .skip(2)
        .take_while(|l| {
            l.starts_with(' ') && !l.trim().is_empty() && !l.trim_start().starts_with("dl")
        })
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert_eq!(rows, expected, "text vs LD_DEBUG=files:\n{text}");
    for o in a["objects"].as_array().unwrap() {
        let path = Path::new(o["object"].as_str().unwrap());
        let (relative, symbolic, plt, total) = readelf_classes(path);
        let m = &o["model"];
        assert_eq!(
            [&m["relative"], &m["symbolic"], &m["plt"], &m["total"]].map(|v| v.as_u64()),
            [relative, symbolic, plt, total].map(Some),
            "{}",
            path.display()
        );
    }
    // The failed dlopen is listed as such, dlclose with libC.so's finalizers.
    assert!(
        text.contains("dlopen(\"libmissing-ldcost.so\", RTLD_NOW|RTLD_LOCAL) from prog: failed (returned NULL)"),
        "{text}"
    );
    agree(&text, &doc);
    // `report` of the document says the same, in text and Markdown.
    let again = ldcost(&["report", json.to_str().unwrap()]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    agree(&again.stdout, &doc);
    let md = ldcost(&["report", json.to_str().unwrap(), "--format", "markdown"]);
    assert_eq!(md.code, 0, "{}", md.stderr);
    assert!(
        md.stdout.contains("libraries loaded after main "),
        "{}",
        md.stdout
    );
    assert!(md.stdout.contains("Loaded after main: "), "{}", md.stdout);
}

/// "libraries loaded after main X ms Y%" in the summary, "ld.so's CPU after main X ms" in
/// the section, and the JSON's part and loader CPU: one figure.
fn agree(text: &str, doc: &Value) {
    let part = doc["summary"]["exec"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["label"] == "libraries loaded after main")
        .unwrap_or_else(|| panic!("no part in the JSON summary: {}", doc["summary"]));
    let part_ns = part["ns"].as_f64().unwrap();
    let loader = doc["profile"]["after_main"]["loader_cpu_ns"]["median"]
        .as_f64()
        .unwrap();
    // The part is the loader's CPU, unless main to exit held less (then all of it).
    assert!(part_ns <= loader + 1e-6, "{part_ns} vs {loader}");
    let printed = |s: &str, after: &str| -> f64 {
        let at = s
            .find(after)
            .unwrap_or_else(|| panic!("no {after:?} in:\n{s}"))
            + after.len();
        s[at..].split(" ms").next().unwrap().trim().parse().unwrap()
    };
    let in_summary = printed(text, "libraries loaded after main ");
    let in_section = printed(text, "ld.so's CPU after main ");
    assert_eq!(format!("{in_summary:.3}"), format!("{:.3}", part_ns / 1e6));
    assert_eq!(format!("{in_section:.3}"), format!("{:.3}", loader / 1e6));
    let share = part["share"].as_f64().unwrap() * 100.0;
    assert!(
        text.contains(&format!(
            "libraries loaded after main {:.3} ms {share:.1}%",
            part_ns / 1e6
        )),
        "{text}"
    );
}

/// A static program: not available, and why; a program that never dlopens: none (or not
/// available, and why); never a part of 0.
#[test]
fn static_and_never_dlopening_programs_have_no_part() {
    let test = "static_and_never_dlopening_programs_have_no_part";
    if !tools(test, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "s.c", "int main(void) { return 0; }\n");
    cc(dir.path(), &["-O1", "-o", "plain", "s.c"]);
    let statically = std::process::Command::new("cc")
        .current_dir(dir.path())
        .args(["-O1", "-static", "-o", "static", "s.c"])
        .status()
        .is_ok_and(|s| s.success());
    let mut cases = vec![("plain", false)];
    if statically {
        cases.push(("static", true));
    } else {
        skip(
            test,
            "cc -static fails here (no static libc): the static case is not run",
        );
    }
    for (name, is_static) in cases {
        let sub = dir.path().join(format!("{name}.d"));
        std::fs::create_dir(&sub).unwrap();
        let Some((text, doc, _)) = profile(test, &dir.path().join(name), &sub) else {
            return;
        };
        let line = text
            .lines()
            .find(|l| l.starts_with("Loaded after main: "))
            .unwrap_or_else(|| panic!("no section in:\n{text}"));
        let a = &doc["profile"]["after_main"];
        if is_static {
            assert_eq!(
                line,
                "Loaded after main: not available (a static program: no ld.so, no dlopen)"
            );
            assert_eq!(a["seen"]["level"], "not-available");
        } else {
            assert!(
                line.starts_with(
                    "Loaded after main: none (no dlopen after main in 3 measured runs)"
                ) || line.starts_with("Loaded after main: not available ("),
                "{line}"
            );
            assert_eq!(a["opens"].as_array().map(Vec::len), Some(0), "{a}");
        }
        assert!(!text.contains("libraries loaded after main"), "{text}");
        let parts = doc["summary"]["exec"]["parts"].as_array().unwrap();
        assert!(
            parts
                .iter()
                .all(|p| p["label"] != "libraries loaded after main"),
            "{parts:?}"
        );
    }
}

/// A per-object run whose main starts at 1 ms and lasts 10 ms, and whose dlopen of libA.so
/// (needing libB.so) costs `k` × the figures below, with a failed dlopen and a dlclose.
fn synthetic_run(k: u64) -> Value {
    let snap = |n: u64| serde_json::json!({"task_clock_ns": n, "page_faults": 0});
    let cost = |cpu: u64, at: u64| {
        serde_json::json!({"cpu_ns": cpu, "wall_ns": cpu + 5, "stops": 2,
            "span_ns": [1_000_000 + at, 1_000_000 + at + cpu]})
    };
    serde_json::json!({
        "instrumentation": "per-object",
        "segments": [
            {"phase": "kernel-exec", "object": null, "wall_ns": 100_000,
             "counters": snap(100_000), "stops": 0, "span_ns": [0, 100_000]},
            {"phase": "main-to-exit", "object": null, "wall_ns": 10_000_000,
             "counters": snap(10_000_000), "stops": 0, "span_ns": [1_000_000, 11_000_000]},
        ],
        "total": snap(10_100_000), "wall_ns": 10_100_000,
        "ending": {"how": "exited", "value": 0}, "stops": 0, "children": null,
        "after_main": {
            "seen": {"level": "per-object"},
            "opens": [
                {"tid": 1, "file": "libA.so", "mode": 0x101, "caller": "/t/prog",
                 "cost": cost(900_000 * k, 2_000),
                 "outcome": {"how": "loaded", "object": "/t/libA.so"},
                 "objects": [
                    {"name": "/t/libA.so", "mapping": cost(50_000 * k, 2_000),
                     "relocation": cost(70_000 * k, 60_000), "initializers": cost(1_000, 140_000)},
                    {"name": "/t/libB.so", "mapping": cost(40_000 * k, 150_000),
                     "relocation": cost(30_000, 200_000), "initializers": cost(600_000 * k, 240_000),
                     "threads": [{"tid": 9, "cpu_at_return_ns": 100_000, "cpu_total_ns": 4_000_000 * k}]}
                 ]},
                {"tid": 1, "file": "libmissing.so", "mode": 2, "caller": "/t/prog",
                 "cost": cost(20_000, 950_000), "outcome": {"how": "failed"}}
            ],
            "closes": [{"tid": 1, "object": "/t/libA.so", "cost": cost(30_000, 990_000),
                        "finalizers": [["/t/libB.so", cost(7_000, 990_001)]]}],
            "lazy": [{"object": "/t/libA.so", "count": 4, "cpu_ns": 3_000}],
            "stops": 12
        }
    })
}

/// Without a live run: `report` of a document whose runs loaded libraries after main prints
/// the summary's part, the section's total and its rows as the JSON holds them, in text and
/// Markdown.
#[test]
fn report_text_and_markdown_agree_with_the_json() {
    let runs: Vec<ldcost::record::Run> = (1..=5)
        .map(|k| serde_json::from_value(synthetic_run(k)).expect("a run"))
        .collect();
    let section = ldcost::attribute::profile::aggregate(
        vec!["/t/prog".into()],
        0,
        ldcost::record::Detail::DebugSymbols {
            debug_file: "ld.debug".into(),
        },
        runs,
        None,
        Default::default(),
    );
    let mut doc = ldcost::report::Document::empty("/t/prog");
    doc.command = "profile".into();
    doc.summary = Some(ldcost::attribute::summary::summary(Some(&section), None).into());
    doc.fixes = Some(Vec::new());
    doc.profile = Some(section.into());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("doc.json");
    std::fs::write(&path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    let json: Value = serde_json::to_value(&doc).unwrap();
    let text = ldcost(&["report", path.to_str().unwrap()]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    agree(&text.stdout, &json);
    // k = 3: libA.so 0.900 × 3 ms per call, etc.; libB.so's initializers are the costliest
    // object after main, with its thread.
    assert!(
        text.stdout.contains(
            "top object 1: libB.so: 1.950 ms, most in initializers after main (1 thread) 1.800 ms"
        ),
        "{}",
        text.stdout
    );
    let rows: Vec<Vec<String>> = text
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Loaded after main: "))
        .skip(2)
        .take(2)
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect()
        })
        .collect();
    let objects = json["profile"]["after_main"]["objects"].as_array().unwrap();
    for (row, o) in rows.iter().zip(objects) {
        assert_eq!(row[0], base(o["object"].as_str().unwrap()));
        assert_eq!(row[3], o["mode_text"].as_str().unwrap());
        for (cell, key) in [
            (5, "mapping_ns"),
            (6, "relocation_ns"),
            (7, "initializers_ns"),
        ] {
            let ns = o[key]["median"].as_f64().unwrap();
            assert_eq!(row[cell], format!("{:.3}", ns / 1e6), "{key} of {row:?}");
        }
    }
    let md = ldcost(&["report", path.to_str().unwrap(), "--format", "markdown"]);
    assert_eq!(md.code, 0, "{}", md.stderr);
    // The summary is a Markdown list there; the section in the fenced report.
    agree(&md.stdout, &json);
}

/// `diff` of the fixture with and without its dlopen of libC.so: libC.so is "removed" in the
/// text and null on HEAD's side in the JSON, libA.so and libB.so are on both sides when
/// listed, and ld.so's CPU after main is each document's.
#[test]
fn diff_says_which_library_loaded_after_main_was_removed() {
    let test = "diff_says_which_library_loaded_after_main_was_removed";
    if !tools(test, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = fixture(dir.path());
    let (b, h) = (dir.path().join("base"), dir.path().join("head"));
    std::fs::create_dir(&b).unwrap();
    std::fs::create_dir(&h).unwrap();
    let Some((_, base_doc, base_json)) = profile(test, &prog, &b) else {
        return;
    };
    if base_doc["profile"]["after_main"]["seen"]["level"] == "not-available" {
        skip(test, "the loader after main is not measured here");
        return;
    }
    let Some((_, head_doc, head_json)) = profile_args(test, &prog, &["no-c"], &h) else {
        return;
    };
    let names = |d: &Value| -> Vec<String> {
        d["profile"]["after_main"]["objects"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| base(o["object"].as_str().unwrap()))
            .collect()
    };
    assert_eq!(
        names(&head_doc),
        ["libA.so", "libB.so"],
        "the HEAD side's oracle"
    );
    let json = dir.path().join("cmp.json");
    let o = ldcost(&[
        "diff",
        base_json.to_str().unwrap(),
        head_json.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.code == 0 || o.code == 12, "{}", o.stderr);
    assert!(
        o.stdout.contains("loaded after main (dlopen"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("  libC.so (removed)"), "{}", o.stdout);
    let cmp: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = cmp["factors"]["after_main"]
        .as_array()
        .expect("after_main rows");
    let c = rows
        .iter()
        .find(|r| r["name"] == "libC.so")
        .expect("libC.so's row");
    assert!(
        c["head_path"].is_null() && c["base_path"].is_string(),
        "{c}"
    );
    for r in rows.iter().filter(|r| r["name"] != "libC.so") {
        assert!(
            r["head_path"].is_string() && r["base_path"].is_string(),
            "{r}"
        );
    }
    let cpu = &cmp["factors"]["after_main_cpu"];
    for (side, d) in [("base", &base_doc), ("head", &head_doc)] {
        assert_eq!(
            cpu[side].as_f64(),
            d["profile"]["after_main"]["loader_cpu_ns"]["median"].as_f64(),
            "{side}"
        );
    }
}
