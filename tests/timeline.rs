//! `profile --timeline` and `profile --trace`, read by their consumers: a real XML parser
//! (roxmltree) reads the SVG, whose bars must carry the JSON report's phase figures exactly and
//! one row per object ldd lists, whose pieces must sit where the JSON's raw segments put them on
//! the target's own time (the median walls laid end to end, recomputed here), in the
//! trace's order, on an axis that ends at the phases' wall time the text prints, and whose exit
//! teardown must be the text summary's; the trace must have the trace-event format's required
//! fields and each event the wall time of its run's segment in the JSON; headless Chromium
//! renders the SVG (scripts/check-timeline) and the screenshot must show labelled bars.
//!
//! Needs ptrace and perf_event_open (exit 8 elsewhere: `SKIP`), cc for the fixture, chromium
//! for the screenshot. Set LDCOST_KEEP_TIMELINE=DIR to keep the SVG, trace, JSON and PNG.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{ldcost, skip, tools};
use serde_json::Value;

/// A program linked to libm (one library besides libc), so the timeline has per-object rows.
fn fixture(dir: &Path) -> PathBuf {
    common::write(
        dir,
        "prog.c",
        "#include <math.h>\n#include <stdio.h>\n\
         int main(int argc, char **argv) { printf(\"%f\\n\", cos((double)argc)); return 0; }\n",
    );
    common::cc(dir, &["-O1", "-o", "prog", "prog.c", "-lm"]);
    dir.join("prog")
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn attr(n: roxmltree::Node, name: &str) -> Option<f64> {
    n.attribute(name).map(|v| {
        v.parse::<f64>()
            .unwrap_or_else(|_| panic!("{name}={v} is not a number"))
    })
}

/// The measured runs of the JSON, in order: per-object runs not killed by SIGKILL (the runs
/// the phase medians are taken over).
fn measured(doc: &Value) -> Vec<&Value> {
    doc["profile"]["raw"]
        .as_array()
        .expect("raw runs")
        .iter()
        .filter(|r| r["instrumentation"] == "per-object")
        .filter(|r| !(r["ending"]["how"] == "killed" && r["ending"]["value"] == 9))
        .collect()
}

fn short(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// Per measured run, the segments of a phase row (its phase and object) in order: (position
/// among the run's segments, wall).
fn segments_of(doc: &Value, row: &Value) -> Vec<Vec<(f64, f64)>> {
    measured(doc)
        .iter()
        .map(|r| {
            r["segments"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .filter(|(_, s)| {
                    s["phase"] == row["phase"] && s["object"].as_str() == row["object"].as_str()
                })
                .map(|(i, s)| (i as f64, f(&s["wall_ns"])))
                .collect()
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty(), "a median of nothing");
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The figure after `before` in the text, up to " ms" ("the phases' wall time 0.815 ms").
fn printed<'a>(text: &'a str, before: &str) -> &'a str {
    let at = text
        .find(before)
        .unwrap_or_else(|| panic!("the text lacks {before:?}:\n{text}"))
        + before.len();
    let rest = &text[at..];
    &rest[..rest.find(" ms").expect("a figure in ms")]
}

#[test]
fn timeline_and_trace_carry_the_reports_figures() {
    let name = "timeline_and_trace_carry_the_reports_figures";
    if !tools(name, &["cc", "ldd"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = fixture(dir.path());
    let (svg, trace, json) = (
        dir.path().join("t.svg"),
        dir.path().join("t.trace.json"),
        dir.path().join("d.json"),
    );
    let o = ldcost(&[
        "profile",
        "-n",
        "3",
        "--no-ld-debug",
        "--quiet-target",
        "--json",
        json.to_str().unwrap(),
        "--timeline",
        svg.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        prog.to_str().unwrap(),
    ]);
    if o.code == 8 {
        skip(name, o.stderr.trim());
        return;
    }
    assert_eq!(o.code, 0, "{}", o.stderr);
    if let Ok(keep) = std::env::var("LDCOST_KEEP_TIMELINE") {
        for p in [&svg, &trace, &json] {
            std::fs::copy(p, Path::new(&keep).join(p.file_name().unwrap())).unwrap();
        }
    }
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let phases = doc["profile"]["phases"].as_array().expect("phases");

    // The SVG: well-formed XML, one bar per phase row of the JSON (and the exit teardown),
    // each carrying that row's figures as the JSON prints them.
    let text = std::fs::read_to_string(&svg).unwrap();
    let xml = roxmltree::Document::parse(&text).expect("the SVG is well-formed XML");
    let bars: Vec<roxmltree::Node> = xml
        .descendants()
        .filter(|n| n.attribute("class") == Some("ldcost-bar"))
        .collect();
    // The summary's exit teardown part: the CPU after the last stop, the uncounted teardown.
    let teardown = doc["profile"]["exit_uncounted_ns"].is_object()
        || doc["profile"]["children_task_clock_ns"].is_object();
    assert_eq!(
        bars.len(),
        phases.len() + teardown as usize,
        "one bar per phase row"
    );
    let mut last_start = 0.0;
    for p in phases {
        let object = p["object"].as_str();
        let bar = bars
            .iter()
            .find(|b| {
                b.attribute("data-key") == p["phase"].as_str()
                    && b.attribute("data-object") == object
            })
            .unwrap_or_else(|| panic!("no bar for {p}"));
        let cpu = &p["task_clock_ns"];
        if cpu.is_object() {
            assert_eq!(attr(*bar, "data-cpu-ns"), Some(f(&cpu["median"])), "{p}");
            assert_eq!(
                attr(*bar, "data-cpu-lo-ns"),
                Some(f(&cpu["ci95"][0])),
                "{p}"
            );
            assert_eq!(
                attr(*bar, "data-cpu-hi-ns"),
                Some(f(&cpu["ci95"][1])),
                "{p}"
            );
            // The hover title prints the text's figure (ms, three decimals).
            let title = bar
                .children()
                .find(|c| c.has_tag_name("title"))
                .and_then(|t| t.text())
                .expect("a title");
            let shown = format!("CPU {:.3} ms", f(&cpu["median"]) / 1e6);
            assert!(title.contains(&shown), "{title} lacks {shown}");
        }
        if p["wall_ns"].is_object() {
            assert_eq!(attr(*bar, "data-wall-ns"), Some(f(&p["wall_ns"]["median"])));
        }
        // Its pieces: the k-th segment of its phase and object in each run, lasting the
        // median of their walls; where they start is checked below, all rows at once.
        let per_run = segments_of(&doc, p);
        let parts = per_run.iter().map(Vec::len).max().unwrap();
        let pieces: Vec<roxmltree::Node> = bar
            .children()
            .filter(|n| n.attribute("class") == Some("ldcost-piece"))
            .collect();
        assert_eq!(pieces.len(), parts, "one piece per segment of a run: {p}");
        for (k, piece) in pieces.iter().enumerate() {
            let wall = median(
                per_run
                    .iter()
                    .filter_map(|v| v.get(k))
                    .map(|x| x.1)
                    .collect(),
            );
            assert_eq!(attr(*piece, "data-part"), Some((k + 1) as f64));
            assert_eq!(attr(*piece, "data-wall-ns"), Some(wall), "{p} part {k}");
        }
        assert_eq!(
            attr(*bar, "data-start-ns"),
            attr(pieces[0], "data-start-ns"),
            "{p}"
        );
    }
    // The starts, on the target's own time: every row's pieces laid end to end in the order
    // the runs record them (their median position among a run's segments; ties in the JSON's
    // phase order), each at the sum of the median walls of the pieces before it, recomputed
    // from the JSON's raw segments.
    let mut seq: Vec<(f64, usize, usize, f64)> = Vec::new();
    for (i, p) in phases.iter().enumerate() {
        let per_run = segments_of(&doc, p);
        let parts = per_run.iter().map(Vec::len).max().unwrap();
        for k in 0..parts {
            let of = || per_run.iter().filter_map(|v| v.get(k));
            seq.push((
                median(of().map(|x| x.0).collect()),
                i,
                k,
                median(of().map(|x| x.1).collect()),
            ));
        }
    }
    seq.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut at = 0.0;
    for (_, i, k, wall) in &seq {
        let p = &phases[*i];
        let bar = bars
            .iter()
            .find(|b| {
                b.attribute("data-key") == p["phase"].as_str()
                    && b.attribute("data-object") == p["object"].as_str()
            })
            .unwrap();
        let piece = bar
            .children()
            .find(|n| {
                n.attribute("class") == Some("ldcost-piece")
                    && attr(*n, "data-part") == Some((k + 1) as f64)
            })
            .unwrap_or_else(|| panic!("no piece {} for {p}", k + 1));
        assert_eq!(attr(piece, "data-start-ns"), Some(at), "{p} part {}", k + 1);
        at += wall;
    }
    // Rows in time order.
    for b in &bars {
        let s = attr(*b, "data-start-ns").expect("every row placed");
        assert!(s >= last_start, "rows out of time order at {s}");
        last_start = s;
    }
    // The axis ends at the phases' wall time: the sum of the JSON's wall medians, which the
    // text prints with three decimals.
    let axis = xml
        .descendants()
        .find(|n| n.attribute("id") == Some("ldcost-axis"))
        .expect("an axis");
    let wall_sum: f64 = phases
        .iter()
        .filter(|p| p["wall_ns"].is_object())
        .map(|p| f(&p["wall_ns"]["median"]))
        .sum();
    let axis_end = attr(axis, "data-end-ns").expect("the axis's end");
    assert_eq!(axis_end, wall_sum);
    assert_eq!(
        format!("{:.3}", axis_end / 1e6),
        printed(&o.stdout, "the phases' wall time ")
    );
    assert!(
        text.contains("ldcost's stops removed"),
        "the subtitle says the stops are removed"
    );
    if teardown {
        // The summary's exit teardown: the CPU after the last stop and the teardown the
        // counters miss, as the JSON's medians and as the text prints it.
        let b = bars
            .iter()
            .find(|b| b.attribute("data-phase") == Some("exit teardown"))
            .expect("an exit teardown row");
        let whole = [
            &doc["profile"]["children_task_clock_ns"],
            &doc["profile"]["exit_uncounted_ns"],
        ]
        .iter()
        .filter(|v| v.is_object())
        .map(|v| f(&v["median"]))
        .sum::<f64>();
        let cpu = attr(*b, "data-cpu-ns").expect("the teardown's CPU");
        assert_eq!(cpu, whole);
        assert_eq!(
            format!("{:.3}", cpu / 1e6),
            printed(&o.stdout, "exit teardown ")
        );
        let title = b
            .children()
            .find(|c| c.has_tag_name("title"))
            .and_then(|t| t.text())
            .unwrap();
        assert!(
            title.contains(&format!("CPU {:.3} ms", cpu / 1e6)),
            "{title}"
        );
    }
    // One relocation row per object ldd lists, when ld.so's internals were visible.
    if doc["profile"]["detail"]["level"] == "debug-symbols" {
        let libs = common::ldd(&prog, &[]).expect("ldd reads the fixture");
        for l in libs {
            let path = l.path.expect("found");
            let base = short(&path).to_string();
            assert!(
                bars.iter()
                    .any(|b| b.attribute("data-key") == Some("relocation")
                        && b.attribute("data-object").map(short) == Some(base.as_str())),
                "no relocation row for {base} (ldd lists it)"
            );
        }
    } else {
        skip(
            "timeline_rows_per_ldd_object",
            "ld.so's debug symbols are not installed: no per-object rows",
        );
    }

    // The trace: the trace-event format's required fields, a named track per measured run,
    // and each event the wall time of its run's segment.
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = t["traceEvents"].as_array().expect("traceEvents");
    let runs = measured(&doc);
    for e in events {
        for k in ["ph", "ts", "pid", "tid", "name"] {
            if e["ph"] != "M" || k != "ts" {
                assert!(!e[k].is_null(), "{k} missing in {e}");
            }
        }
        assert!(e["ph"] == "X" || e["ph"] == "M", "{e}");
        if e["ph"] == "X" {
            assert!(e["dur"].is_number() && e["ts"].is_number(), "{e}");
        }
    }
    for (i, r) in runs.iter().enumerate() {
        let tid = (i + 1) as u64;
        assert!(
            events.iter().any(|e| e["ph"] == "M"
                && e["name"] == "thread_name"
                && e["tid"] == tid
                && e["args"]["name"].is_string()),
            "track {tid} is named"
        );
        let xs: Vec<&Value> = events
            .iter()
            .filter(|e| e["ph"] == "X" && e["tid"] == tid)
            .collect();
        let segs = r["segments"].as_array().unwrap();
        assert_eq!(xs.len(), segs.len(), "one event per segment of run {tid}");
        let origin = f(&segs[0]["span_ns"][0]);
        for (e, s) in xs.iter().zip(segs) {
            assert_eq!(
                (f(&e["dur"]) * 1000.0).round(),
                f(&s["wall_ns"]),
                "{e} vs {s}"
            );
            assert_eq!(
                (f(&e["ts"]) * 1000.0).round(),
                f(&s["span_ns"][0]) - origin,
                "{e} vs {s}"
            );
            assert_eq!(e["cat"], s["phase"]);
            assert_eq!(e["args"]["wall_ns"], s["wall_ns"]);
            assert_eq!(e["args"]["cpu_raw_ns"], s["counters"]["task_clock_ns"]);
        }
        // The timeline's pieces come in the track's order: each event (the k-th of its phase
        // and object in the run) maps to the SVG's piece k of that row, and along the track
        // those pieces' starts never go back; the track's own times go forward.
        let mut seen: Vec<(String, Option<String>)> = Vec::new();
        let (mut last_piece, mut last_ts) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
        for e in &xs {
            let id = (
                e["cat"].as_str().unwrap().to_string(),
                e["args"]["object"].as_str().map(str::to_string),
            );
            let k = seen.iter().filter(|x| **x == id).count() + 1;
            seen.push(id.clone());
            let bar = bars
                .iter()
                .find(|b| {
                    b.attribute("data-key") == Some(id.0.as_str())
                        && b.attribute("data-object") == id.1.as_deref()
                })
                .unwrap_or_else(|| panic!("no row for {e}"));
            let piece = bar
                .children()
                .find(|n| {
                    n.attribute("class") == Some("ldcost-piece")
                        && attr(*n, "data-part") == Some(k as f64)
                })
                .unwrap_or_else(|| panic!("no piece {k} for {e}"));
            let at = attr(piece, "data-start-ns").unwrap();
            assert!(
                at >= last_piece,
                "piece {k} of {id:?} at {at} ns is drawn before the piece of the event before it ({last_piece} ns)"
            );
            last_piece = at;
            let ts = f(&e["ts"]);
            assert!(ts >= last_ts, "track {tid} goes back in time at {e}");
            last_ts = ts;
        }
    }
    assert!(
        t["otherData"]["clock"]
            .as_str()
            .is_some_and(|c| c.starts_with("real time")),
        "the trace says its clock: {}",
        t["otherData"]
    );

    // The picture, in headless Chromium.
    if !common::have("chromium") && std::env::var_os("CHROMIUM").is_none() {
        skip("timeline_screenshot", "chromium is not installed");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-timeline");
    let png = dir.path().join("t.png");
    let out = Command::new(&script)
        .arg(&svg)
        .arg(&png)
        .output()
        .expect("run scripts/check-timeline");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.code() == Some(2) {
        skip("timeline_screenshot", said.trim());
        return;
    }
    assert!(out.status.success(), "check-timeline failed:\n{said}");
    assert!(said.contains("png: not blank"), "{said}");
    assert!(
        said.contains(&format!("rows: {} rows", bars.len())),
        "{said}"
    );
    let pieces = xml
        .descendants()
        .filter(|n| n.attribute("class") == Some("ldcost-piece"))
        .count();
    assert!(
        said.contains(&format!(
            "pieces: {pieces} pieces, each with a bar inside the picture"
        )),
        "{said}"
    );
    if let Ok(keep) = std::env::var("LDCOST_KEEP_TIMELINE") {
        std::fs::copy(&png, Path::new(&keep).join("t.png")).unwrap();
    }
}

#[test]
fn check_timeline_fails_a_blank_picture() {
    let name = "check_timeline_fails_a_blank_picture";
    if !common::have("chromium") && std::env::var_os("CHROMIUM").is_none() {
        skip(name, "chromium is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("blank.svg");
    std::fs::write(
        &svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"400\" height=\"200\">\
         <rect width=\"400\" height=\"200\" fill=\"white\"/><g id=\"ldcost-bars\"></g></svg>\n",
    )
    .unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-timeline");
    let out = Command::new(&script).arg(&svg).output().expect("run it");
    let said = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(2) {
        skip(name, said.trim());
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("FAIL png: blank"), "{said}");
    assert!(said.contains("FAIL rows: 0 rows"), "{said}");
}

#[test]
fn bad_outputs_are_refused_like_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("same.json");
    let js = j.to_str().unwrap();
    // The same file as --json: refused before anything runs (exit 2).
    for opt in ["--timeline", "--trace"] {
        let o = ldcost(&["profile", "--json", js, opt, js, "/bin/true"]);
        assert_eq!(o.code, 2, "{opt}: {}", o.stderr);
        assert!(
            o.stderr
                .contains(&format!("refusing to write: --json and {opt} both name")),
            "{}",
            o.stderr
        );
        assert!(!j.exists(), "nothing written");
    }
    // A directory that is not there: refused before anything runs, naming the file.
    let missing = dir.path().join("no/such/t.svg");
    let o = ldcost(&[
        "profile",
        "--timeline",
        missing.to_str().unwrap(),
        "/bin/true",
    ]);
    assert_ne!(o.code, 0);
    assert!(
        o.stderr.contains(&missing.display().to_string()),
        "{}",
        o.stderr
    );
    // With --no-exec there is nothing to draw: a usage error.
    let o = ldcost(&[
        "profile",
        "--fork",
        "--no-exec",
        "--trace",
        "t.json",
        "/bin/true",
    ]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("--no-exec"), "{}", o.stderr);
}

#[test]
fn a_directory_as_file_is_a_write_error_and_nothing_is_left() {
    let name = "a_directory_as_file_is_a_write_error_and_nothing_is_left";
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("adir");
    std::fs::create_dir(&sub).unwrap();
    let o = ldcost(&[
        "profile",
        "-n",
        "1",
        "--no-reference",
        "--no-ld-debug",
        "--quiet-target",
        "--timeline",
        sub.to_str().unwrap(),
        "/bin/true",
    ]);
    if o.code == 8 {
        skip(name, o.stderr.trim());
        return;
    }
    // As --json DIR: exit 7, one line naming the path, no temporary file left.
    assert_eq!(o.code, 7, "{}", o.stderr);
    assert!(
        o.stderr.starts_with(&format!(
            "ldcost: error: cannot write {}: Is a directory",
            sub.display()
        )),
        "{}",
        o.stderr
    );
    assert_eq!(std::fs::read_dir(&sub).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

/// A program that loads a library after `main` (`dlopen`, whose constructor does some work).
fn dlopen_fixture(dir: &Path) -> (PathBuf, PathBuf) {
    common::write(
        dir,
        "after.c",
        "volatile double sink;\n\
         __attribute__((constructor)) static void warm(void) {\n\
           for (int i = 0; i < 200000; i++) sink += i * 0.5;\n\
         }\n\
         double after_value(void) { return sink; }\n",
    );
    common::cc(
        dir,
        &["-O1", "-shared", "-fPIC", "-o", "libafter.so", "after.c"],
    );
    common::write(
        dir,
        "opener.c",
        "#include <dlfcn.h>\n#include <stdio.h>\n\
         int main(int argc, char **argv) {\n\
           void *h = dlopen(argv[1], RTLD_NOW);\n\
           if (!h) { fprintf(stderr, \"%s\\n\", dlerror()); return 1; }\n\
           double (*v)(void) = (double (*)(void))dlsym(h, \"after_value\");\n\
           printf(\"%f\\n\", v ? v() : 0.0);\n\
           return 0;\n\
         }\n",
    );
    common::cc(dir, &["-O1", "-o", "opener", "opener.c", "-ldl"]);
    (dir.join("opener"), dir.join("libafter.so"))
}

/// The objects loaded after `main`: the SVG's `dlopen:` row carries, as its CPU, the median
/// over the measured runs of the JSON's raw figures (mapping + relocation + initializers of
/// that object, the calling thread's CPU), its pieces the kinds the runs recorded; the trace's
/// after-main events carry each run's own figures.
#[test]
fn objects_loaded_after_main_carry_the_recordings_figures() {
    let name = "objects_loaded_after_main_carry_the_recordings_figures";
    if !tools(name, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (prog, lib) = dlopen_fixture(dir.path());
    let (svg, trace, json) = (
        dir.path().join("t.svg"),
        dir.path().join("t.trace.json"),
        dir.path().join("d.json"),
    );
    let o = ldcost(&[
        "profile",
        "-n",
        "3",
        "--no-ld-debug",
        "--quiet-target",
        "--json",
        json.to_str().unwrap(),
        "--timeline",
        svg.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        prog.to_str().unwrap(),
        lib.to_str().unwrap(),
    ]);
    if o.code == 8 {
        skip(name, o.stderr.trim());
        return;
    }
    assert_eq!(o.code, 0, "{}", o.stderr);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let kinds = ["mapping", "relocation", "initializers"];
    // Per measured run, libafter.so's costs (None: the run did not record it).
    let per_run: Vec<Option<Vec<(&str, &Value)>>> = measured(&doc)
        .iter()
        .map(|r| {
            r["after_main"]["opens"]
                .as_array()?
                .iter()
                .flat_map(|o| o["objects"].as_array().into_iter().flatten())
                .find(|obj| {
                    obj["name"]
                        .as_str()
                        .is_some_and(|n| short(n) == "libafter.so")
                })
                .map(|obj| {
                    kinds
                        .iter()
                        .filter(|k| obj[**k].is_object())
                        .map(|k| (*k, &obj[*k]))
                        .collect()
                })
        })
        .collect();
    if per_run.iter().all(Option::is_none) {
        skip(
            name,
            "the measured runs recorded no object loaded after main (no after_main in the JSON's raw runs)",
        );
        return;
    }
    let cpu = median(
        per_run
            .iter()
            .flatten()
            .map(|c| c.iter().map(|(_, v)| f(&v["cpu_ns"])).sum())
            .collect(),
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    let svg_doc = roxmltree::Document::parse(&text).expect("the SVG parses");
    let rows: Vec<roxmltree::Node> = svg_doc
        .descendants()
        .filter(|n| n.attribute("data-key") == Some("after-main"))
        .collect();
    let row = rows
        .iter()
        .find(|n| {
            n.attribute("data-object")
                .is_some_and(|o| short(o) == "libafter.so")
        })
        .unwrap_or_else(|| panic!("no dlopen row for libafter.so in {text}"));
    assert_eq!(attr(*row, "data-cpu-ns"), Some(cpu));
    let label = row
        .descendants()
        .find(|n| n.attribute("class") == Some("ldcost-row-label"))
        .and_then(|n| n.text())
        .unwrap_or_default();
    assert_eq!(label, "dlopen: libafter.so");
    // Its pieces: the kinds the runs recorded, in ld.so's order, after main's start.
    let want: Vec<&str> = kinds
        .iter()
        .filter(|k| {
            per_run
                .iter()
                .flatten()
                .any(|c| c.iter().any(|(x, _)| x == *k))
        })
        .map(|k| if *k == "mapping" { "object-mapping" } else { k })
        .collect();
    let got: Vec<&str> = row
        .descendants()
        .filter_map(|n| n.attribute("data-kind"))
        .collect();
    assert_eq!(got, want);
    let main_start = svg_doc
        .descendants()
        .find(|n| n.attribute("data-key") == Some("main-to-exit"))
        .and_then(|n| attr(n, "data-start-ns"))
        .expect("a main to exit row");
    assert!(attr(*row, "data-start-ns").unwrap() >= main_start);
    // The trace: per run, libafter.so's events with that run's CPU and wall.
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events: Vec<&Value> = t["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["cat"]
                .as_str()
                .is_some_and(|c| c.starts_with("after-main-"))
        })
        .filter(|e| {
            e["args"]["object"]
                .as_str()
                .is_some_and(|o| short(o) == "libafter.so")
        })
        .collect();
    let recorded: Vec<&Value> = per_run
        .iter()
        .flatten()
        .flatten()
        .map(|(_, v)| *v)
        .collect();
    assert_eq!(events.len(), recorded.len());
    for (e, c) in events.iter().zip(&recorded) {
        assert_eq!(f(&e["args"]["cpu_ns"]), f(&c["cpu_ns"]));
        assert_eq!(f(&e["dur"]), f(&c["wall_ns"]) / 1000.0);
        assert_eq!(e["ph"], "X");
    }
    // The picture, in headless Chromium: the dlopen rows labelled, their pieces drawn.
    if !common::have("chromium") && std::env::var_os("CHROMIUM").is_none() {
        skip(
            "timeline_after_main_screenshot",
            "chromium is not installed",
        );
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-timeline");
    let out = Command::new(&script)
        .arg(&svg)
        .arg(dir.path().join("t.png"))
        .output()
        .expect("run scripts/check-timeline");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.code() == Some(2) {
        skip("timeline_after_main_screenshot", said.trim());
        return;
    }
    assert!(out.status.success(), "check-timeline failed:\n{said}");
    assert!(
        said.contains("each labelled and with a bar inside the picture"),
        "{said}"
    );
    assert!(
        said.contains("no row label or figure label overlaps another"),
        "{said}"
    );
}
