//! `compare` of two programs that differ in what they load after `main`: the one-sided
//! objects' totals, objects within noise counted rather than listed, the program's own work
//! without ld.so's, and the header's command lines, against oracles someone else wrote.
//!
//! | claim | oracle |
//! | --- | --- |
//! | the objects "removed" and "added" after main | `LD_DEBUG=files`' objects mapped after "transferring control" of each command run untraced: BASE's less HEAD's, HEAD's less BASE's |
//! | the one-sided totals line (count, µs) | the comparison's JSON rows of those objects, added and formatted at the printed precision |
//! | objects within noise: counted in one line, listed only with `--detail` | the JSON's `within_noise` flags; each such object's intervals overlap in the two saved profiles (`--save-base`, `--save-head`) |
//! | "libraries loaded after main" = the profile summary's part of that name | `ldcost report` of each saved profile document, at its printed precision |
//! | "own work after main" = main → exit (with the children's CPU) less ld.so's work after main, per per-object run | the saved profile's raw runs, added up here from the JSON fields docs/json-schema.md describes |
//! | the text and Markdown headers quote each argument as a shell reads it (and `report`'s header of a saved profile) | `shell_words::split` of the text header; pulldown-cmark's code spans of the Markdown title, split the same way |
//!
//! Profiling needs ptrace and perf_event_open: where ldcost is refused (exit 8) the tests print
//! `SKIP` (a failure under LDCOST_REQUIRE_ALL), as they do where the C compiler is missing.

mod common;

use std::path::{Path, PathBuf};

use common::{cc, ldcost, skip, tools, write};
use serde_json::Value;

/// `prog MODE…`: each MODE letter dlopens `libX.so` from the program's directory (A needs B).
const PROG: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        for (const char *m = argv[i]; *m; m++) {
            if (*m < 'A' || *m > 'Z') continue;
            char name[16];
            snprintf(name, sizeof name, "lib%c.so", *m);
            if (!dlopen(name, RTLD_NOW)) { fprintf(stderr, "%s\n", dlerror()); return 3; }
        }
    }
    return 0;
}
"#;

/// libA.so (needs libB.so), libC.so (a constructor), libD.so, libE.so, and the program,
/// which finds them by its RUNPATH ($ORIGIN).
fn fixture(dir: &Path) -> PathBuf {
    write(
        dir,
        "b.c",
        "int b_n; int b_value(void) { return b_n + 1; }\n",
    );
    write(
        dir,
        "a.c",
        "int b_value(void);\nint a_value(void) { return b_value() + 1; }\n",
    );
    write(
        dir,
        "c.c",
        "static int c; __attribute__((constructor)) static void i(void) { c = 7; }\nint c_value(void) { return c; }\n",
    );
    write(dir, "d.c", "int d_value(void) { return 4; }\n");
    write(
        dir,
        "e.c",
        "int e_table[64] = {1}; int e_value(void) { return e_table[0]; }\n",
    );
    write(dir, "prog.c", PROG);
    let so = |out: &str, src: &str, extra: &[&str]| {
        let mut args = vec!["-shared", "-fPIC", "-O1", "-o", out, src];
        args.extend_from_slice(extra);
        cc(dir, &args);
    };
    so("libB.so", "b.c", &[]);
    so("libA.so", "a.c", &["-L.", "-lB", "-Wl,-rpath,$ORIGIN"]);
    so("libC.so", "c.c", &[]);
    so("libD.so", "d.c", &[]);
    so("libE.so", "e.c", &[]);
    cc(
        dir,
        &["-O1", "-o", "prog", "prog.c", "-ldl", "-Wl,-rpath,$ORIGIN"],
    );
    dir.join("prog")
}

/// The objects ld.so mapped after `main` (`LD_DEBUG=files`, untraced), by file name.
fn ld_debug_after_main(prog: &Path, args: &[&str]) -> Vec<String> {
    let f = common::dlopen_fixtures::ld_debug_files(
        &std::iter::once(prog.to_str().unwrap())
            .chain(args.iter().copied())
            .collect::<Vec<_>>(),
        &[],
    );
    assert_eq!(f.status, Some(0), "the fixture failed: {f:?}");
    f.mapped
        .iter()
        .map(|p| p.rsplit('/').next().unwrap().to_string())
        .collect()
}

struct Compared {
    text: String,
    json: Value,
    json_path: PathBuf,
    base_doc: PathBuf,
    head_doc: PathBuf,
}

/// `ldcost compare 'PROG BASE' 'PROG HEAD' -n 10`, saving the comparison and both profiles;
/// None when profiling is refused here.
fn compare(test: &str, dir: &Path, base: &str, head: &str, extra: &[&str]) -> Option<Compared> {
    let json_path = dir.join(format!("{test}.cmp.json"));
    let base_doc = dir.join(format!("{test}.base.json"));
    let head_doc = dir.join(format!("{test}.head.json"));
    let mut args = vec![
        "compare",
        base,
        head,
        "-n",
        "10",
        "--no-progress",
        "--json",
        json_path.to_str().unwrap(),
        "--save-base",
        base_doc.to_str().unwrap(),
        "--save-head",
        head_doc.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = ldcost(&args);
    if o.code == 8 {
        skip(
            test,
            "ldcost compare is refused here (exit 8: ptrace or perf)",
        );
        return None;
    }
    assert_eq!(o.code, 0, "{}", o.stderr);
    let json = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    Some(Compared {
        text: o.stdout,
        json,
        json_path,
        base_doc,
        head_doc,
    })
}

fn after_main(c: &Value) -> Vec<Value> {
    c.pointer("/factors/after_main")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn name(o: &Value) -> String {
    o["name"].as_str().unwrap().to_string()
}

fn row(o: &Value, row: &str, side: &str) -> Option<f64> {
    o["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == row)
        .and_then(|r| r[side].as_f64())
}

fn metric<'a>(c: &'a Value, key: &str) -> &'a Value {
    c["verdict"]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == key)
        .unwrap_or_else(|| panic!("no metric {key}"))
}

/// BASE loads libA.so (and libB.so), libC.so and libE.so; HEAD libA.so (libB.so) and
/// libD.so. The removed and added objects are LD_DEBUG's differences; their totals are the
/// JSON's rows added up; what both load is listed only when it changed beyond noise.
#[test]
fn one_sided_objects_are_totalled_and_unchanged_ones_counted() {
    let test = "one_sided_objects_are_totalled_and_unchanged_ones_counted";
    if !tools(test, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = fixture(dir.path());
    let p = prog.to_str().unwrap();
    let (base, head) = (format!("{p} ACE"), format!("{p} AD"));
    let Some(c) = compare(test, dir.path(), &base, &head, &[]) else {
        return;
    };
    let seen_base = ld_debug_after_main(&prog, &["ACE"]);
    let seen_head = ld_debug_after_main(&prog, &["AD"]);
    let only = |a: &[String], b: &[String]| -> Vec<String> {
        let mut v: Vec<String> = a.iter().filter(|x| !b.contains(x)).cloned().collect();
        v.sort();
        v
    };
    let objects = after_main(&c.json);
    let side_only = |base: bool| -> Vec<Value> {
        objects
            .iter()
            .filter(|o| o["base_path"].is_null() != base && o["head_path"].is_null() == base)
            .cloned()
            .collect()
    };
    let (removed, added) = (side_only(true), side_only(false));
    let names = |v: &[Value]| {
        let mut n: Vec<String> = v.iter().map(name).collect();
        n.sort();
        n
    };
    assert_eq!(names(&removed), only(&seen_base, &seen_head), "removed");
    assert_eq!(names(&added), only(&seen_head, &seen_base), "added");
    assert_eq!(names(&removed), ["libC.so", "libE.so"]);
    // The totals: the JSON's loader rows of those objects, added.
    let mut under_verdict = Vec::new();
    for (what, objs, side) in [
        ("removed (BASE only)", &removed, "base"),
        ("added (HEAD only)", &added, "head"),
    ] {
        let us: f64 = objs
            .iter()
            .flat_map(|o| {
                ["search and mapping µs", "relocation µs", "initializers µs"]
                    .map(|r| row(o, r, side).unwrap_or(0.0))
            })
            .sum();
        assert!(us > 0.0, "{what}: measured times in the JSON");
        let n = objs.len();
        let line = format!(
            "{what}: {n} object{}, {us:.1} µs of search and mapping, relocation and initializers",
            if n == 1 { "" } else { "s" }
        );
        assert!(c.text.contains(&line), "{line:?} not in:\n{}", c.text);
        if n > 0 {
            let named: Vec<String> = objs.iter().map(name).collect();
            under_verdict.push(format!("{what} {} ({us:.1} µs)", named.join(", ")));
        }
    }
    // Named under the verdict, before the factors, with the same totals.
    let line = format!("  after main: {}", under_verdict.join("; "));
    let at = c
        .text
        .lines()
        .position(|l| l == line)
        .unwrap_or_else(|| panic!("{line:?} not in:\n{}", c.text));
    let factors = c
        .text
        .lines()
        .position(|l| l.starts_with("factors ("))
        .expect("the factors");
    assert!(at < factors, "{}", c.text);
    // Objects on both sides: listed by default exactly when not within noise.
    let both: Vec<&Value> = objects
        .iter()
        .filter(|o| !o["base_path"].is_null() && !o["head_path"].is_null())
        .collect();
    assert_eq!(
        both.iter().map(|o| name(o)).collect::<Vec<_>>(),
        ["libA.so", "libB.so"],
        "loaded by both (LD_DEBUG: {seen_base:?} / {seen_head:?})"
    );
    check_listing(&c, &objects);
}

/// What the reports list of the objects on both sides, against the JSON's flags: counted in
/// one line, listed only with `--detail` (through `report` of the saved comparison), and each
/// flagged object's intervals overlapping in the saved profiles.
fn check_listing(c: &Compared, objects: &[Value]) {
    let noisy: Vec<String> = objects
        .iter()
        .filter(|o| o["within_noise"] == true)
        .map(name)
        .collect();
    let listed = |text: &str, n: &str| text.lines().any(|l| l.trim_start().starts_with(n));
    let n = noisy.len();
    let count_line = format!(
        "{n} object{} loaded on both sides unchanged (within noise)",
        if n == 1 { "" } else { "s" }
    );
    assert_eq!(
        c.text.contains(&count_line),
        n > 0,
        "{count_line}\n{}",
        c.text
    );
    let detail = ldcost(&["report", c.json_path.to_str().unwrap(), "--detail"]);
    assert_eq!(detail.code, 0, "{}", detail.stderr);
    let plain = ldcost(&["report", c.json_path.to_str().unwrap()]);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    for o in objects {
        let nm = name(o);
        let both = !o["base_path"].is_null() && !o["head_path"].is_null();
        let flagged = o["within_noise"] == true;
        assert!(
            !flagged || both,
            "{nm}: only an object on both sides can be within noise"
        );
        assert_eq!(
            listed(&plain.stdout, &nm),
            !flagged,
            "{nm}:\n{}",
            plain.stdout
        );
        assert!(
            listed(&detail.stdout, &nm),
            "{nm} with --detail:\n{}",
            detail.stdout
        );
        assert_eq!(listed(&c.text, &nm), !flagged, "{nm} in compare's own text");
    }
    // The flag's reading of the saved profiles: every time's 95% intervals overlap.
    let read =
        |p: &Path| -> Value { serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap() };
    let (b, h) = (read(&c.base_doc), read(&c.head_doc));
    let of = |d: &Value, nm: &str| -> Value {
        d.pointer("/profile/after_main/objects")
            .and_then(Value::as_array)
            .expect("the saved profile's after_main objects")
            .iter()
            .find(|o| {
                o["object"]
                    .as_str()
                    .is_some_and(|p| p.rsplit('/').next() == Some(nm))
            })
            .cloned()
            .unwrap_or_else(|| panic!("{nm} not in the saved profile"))
    };
    for nm in &noisy {
        let (ob, oh) = (of(&b, nm), of(&h, nm));
        for t in ["mapping_ns", "relocation_ns", "initializers_ns"] {
            let ci = |o: &Value| -> Option<(f64, f64)> {
                let c = o.get(t)?.get("ci95")?;
                Some((c[0].as_f64()?, c[1].as_f64()?))
            };
            if let (Some(x), Some(y)) = (ci(&ob), ci(&oh)) {
                assert!(
                    x.0 <= y.1 && y.0 <= x.1,
                    "{nm} {t}: {x:?} and {y:?} do not overlap, yet within noise"
                );
            }
        }
    }
}

/// The same command on both sides: every object is on both sides, and the ones whose
/// intervals overlap are counted, not listed (with 10 rounds and 4 objects, some are).
#[test]
fn an_a_a_comparison_counts_its_objects_within_noise() {
    let test = "an_a_a_comparison_counts_its_objects_within_noise";
    if !tools(test, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = fixture(dir.path());
    let cmd = format!("{} AC", prog.to_str().unwrap());
    let Some(c) = compare(test, dir.path(), &cmd, &cmd, &[]) else {
        return;
    };
    let objects = after_main(&c.json);
    assert_eq!(
        objects.iter().map(name).collect::<Vec<_>>(),
        ld_debug_after_main(&prog, &["AC"]),
        "the objects, in load order"
    );
    assert!(
        objects.iter().any(|o| o["within_noise"] == true),
        "none of {} objects within noise in an A/A comparison:\n{}",
        objects.len(),
        c.text
    );
    assert!(!c.text.contains("removed (BASE only)") && !c.text.contains("added (HEAD only)"));
    check_listing(&c, &objects);
}

/// "libraries loaded after main" is the profile summary's part of that name on each side,
/// and "own work after main" is each per-object run's main → exit (with the children's CPU)
/// less its ld.so CPU after main, from the saved documents' raw runs.
#[test]
fn compare_s_parts_equal_the_profiles_parts() {
    let test = "compare_s_parts_equal_the_profiles_parts";
    if !tools(test, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = fixture(dir.path());
    let p = prog.to_str().unwrap();
    let Some(c) = compare(
        test,
        dir.path(),
        &format!("{p} ACE"),
        &format!("{p} D"),
        &[],
    ) else {
        return;
    };
    let loader = metric(&c.json, "after_main_libraries")["change"].clone();
    let own = metric(&c.json, "main_cpu")["change"].clone();
    assert!(!loader.is_null() && !own.is_null(), "{}", c.text);
    // Not judged, and its note says why in its own terms (not a wall time's).
    if loader["significant"] == true {
        let note = c
            .text
            .lines()
            .find(|l| {
                l.trim_start()
                    .starts_with("note: libraries loaded after main")
            })
            .unwrap_or_else(|| panic!("no note for a significant change:\n{}", c.text));
        assert!(note.contains("measured in the per-object runs"), "{note}");
    }
    for (side, doc) in [("base", &c.base_doc), ("head", &c.head_doc)] {
        let part = loader[format!("{side}_median")].as_f64().unwrap();
        // The profile's summary, as `report` prints it from the saved document.
        let r = ldcost(&["report", doc.to_str().unwrap()]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let want = format!("libraries loaded after main {:.3} ms", part / 1e6);
        assert!(
            r.stdout.contains(&want),
            "{side}: {want:?} not in:\n{}",
            r.stdout
        );
        // Own work: per per-object run (the runs that trace after main), main → exit less
        // its stops at the run's cost per stop (the median replay, bounded by its cheapest
        // segment per stop), plus the children, less the run's ld.so CPU after main (its
        // outermost dlopens, its dlcloses, its lazy binds), as docs/json-schema.md reads them.
        let d: Value = serde_json::from_str(&std::fs::read_to_string(doc).unwrap()).unwrap();
        let fallback = d
            .pointer("/profile/overhead/ns_per_stop_slope")
            .and_then(Value::as_f64)
            .or_else(|| {
                d.pointer("/profile/overhead/ns_per_stop")
                    .and_then(Value::as_f64)
            });
        let mut own_runs: Vec<f64> = Vec::new();
        let mut loader_runs: Vec<f64> = Vec::new();
        for r in d["profile"]["raw"].as_array().unwrap() {
            if r["instrumentation"] != "per-object" || r["after_main"].is_null() {
                continue;
            }
            let task = |s: &Value| s.pointer("/counters/task_clock_ns").and_then(Value::as_f64);
            let segs = r["segments"].as_array().unwrap();
            let mut replays: Vec<f64> = r["stop_costs_ns"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default();
            replays.sort_by(f64::total_cmp);
            let measured = median(&replays).or(fallback).expect("a cost per stop");
            let bound = segs
                .iter()
                .filter(|s| s["stops"].as_u64().unwrap_or(0) > 0)
                .filter_map(|s| Some(task(s)? / s["stops"].as_f64()?))
                .reduce(f64::min);
            let per_stop = bound.map_or(measured, |b| measured.min(b)).max(0.0);
            let main: f64 = segs
                .iter()
                .filter(|s| s["phase"] == "main-to-exit")
                .map(|s| (task(s).unwrap() - s["stops"].as_f64().unwrap() * per_stop).max(0.0))
                .sum();
            let children = r
                .pointer("/children/task_clock_ns")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            let a = &r["after_main"];
            let cpu = |v: &Value, ptr: &str| -> f64 {
                v.as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|x| x.pointer(ptr).and_then(Value::as_f64))
                    .sum()
            };
            let outer: Vec<Value> = a["opens"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|o| o.get("parent").is_none_or(Value::is_null))
                .cloned()
                .collect();
            let loader = cpu(&Value::Array(outer), "/cost/cpu_ns")
                + cpu(&a["closes"], "/cost/cpu_ns")
                + cpu(&a["lazy"], "/cpu_ns");
            loader_runs.push(loader);
            own_runs.push((main + children - loader).max(0.0));
        }
        own_runs.sort_by(f64::total_cmp);
        loader_runs.sort_by(f64::total_cmp);
        let got = own[format!("{side}_median")].as_f64().unwrap();
        let want = median(&own_runs).expect("per-object runs");
        assert!(
            (got - want).abs() < 1.0,
            "{side}: own work {got} ns, from the saved runs {want} ns"
        );
        let want_loader = median(&loader_runs).unwrap();
        assert!(
            (part - want_loader).abs() < 1.0,
            "{side}: ld.so after main {part} ns, from the saved runs {want_loader} ns"
        );
        assert!(part > 0.0 && got > 0.0, "{side}: both parts measured");
    }
}

/// The median of sorted values.
fn median(v: &[f64]) -> Option<f64> {
    let n = v.len();
    (n > 0).then(|| {
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    })
}

/// Arguments with spaces, quotes and a backtick: the text header and the Markdown title read
/// back, as a shell reads them, into the argv the target ran with.
#[test]
fn the_headers_quote_the_arguments_as_a_shell_reads_them() {
    let test = "the_headers_quote_the_arguments_as_a_shell_reads_them";
    if !tools(test, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = fixture(dir.path());
    let p = prog.to_str().unwrap().to_string();
    let argv_base = vec![p.clone(), "A C".into(), "it's".into(), String::new()];
    let argv_head = vec![p.clone(), "D".into(), "a \"b\" `c`".into(), "$home".into()];
    let line = |v: &[String]| shell_words::join(v);
    let Some(c) = compare(
        test,
        dir.path(),
        &line(&argv_base),
        &line(&argv_head),
        &["--format", "text"],
    ) else {
        return;
    };
    // The target ran with these arguments (the document's argv).
    let argv_of = |doc: &Path| -> Vec<String> {
        let d: Value = serde_json::from_str(&std::fs::read_to_string(doc).unwrap()).unwrap();
        d["profile"]["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(argv_of(&c.base_doc)[1..], argv_base[1..]);
    assert_eq!(argv_of(&c.head_doc)[1..], argv_head[1..]);
    let header = c.text.lines().next().unwrap();
    let rest = header
        .strip_prefix("ldcost compare: BASE ")
        .unwrap_or_else(|| panic!("{header}"));
    let (b, h) = rest.split_once(" → HEAD ").unwrap();
    assert_eq!(shell_words::split(b).unwrap(), argv_base, "{header}");
    assert_eq!(shell_words::split(h).unwrap(), argv_head, "{header}");
    // Markdown: the title's code spans, as a CommonMark reader sees them.
    let md = ldcost(&[
        "report",
        c.json_path.to_str().unwrap(),
        "--format",
        "markdown",
    ]);
    assert_eq!(md.code, 0, "{}", md.stderr);
    let title = md.stdout.lines().find(|l| l.contains("BASE")).unwrap();
    let spans: Vec<String> = pulldown_cmark::Parser::new(title)
        .filter_map(|e| match e {
            pulldown_cmark::Event::Code(t) => Some(t.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(spans.len(), 2, "{title}: {spans:?}");
    assert_eq!(shell_words::split(&spans[0]).unwrap(), argv_base, "{title}");
    assert_eq!(shell_words::split(&spans[1]).unwrap(), argv_head, "{title}");
    // And `report` of a side's saved profile: its header names the command the same way.
    let r = ldcost(&["report", c.base_doc.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let header = r
        .stdout
        .lines()
        .find(|l| l.starts_with("ldcost profile "))
        .unwrap_or_else(|| panic!("no header in:\n{}", r.stdout));
    let cmd = header
        .strip_prefix("ldcost profile ")
        .and_then(|h| h.rsplit_once(": 10 measured runs"))
        .unwrap_or_else(|| panic!("{header}"))
        .0;
    assert_eq!(
        shell_words::split(cmd).unwrap()[1..],
        argv_base[1..],
        "{header}"
    );
}
