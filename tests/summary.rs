//! `profile`'s summary: first, short, and made of the tables' own numbers.
//!
//! | claim | oracle |
//! | --- | --- |
//! | the summary comes before any table; the default text of `profile /bin/ls` is ≤ 46 lines (about 41: the fixes found add their why lines, the section "Loaded after main" one) | the text, counted |
//! | the CPU per exec, each part's ms and share, the top objects' ms | the phase and object tables of the same text and the exit lines of `report --detail`, parsed |
//! | the relocations and lookups named for a top object | the object table's `relocations` and `lookups (deps)` columns |
//! | the printed summary equals the JSON's `summary`, and `fixes: none found` an empty `fixes` | the document, formatted at the printed precision |
//! | `--detail` shows what the default leaves out | the strings of those sections |
//! | Markdown: the summary is a list before the fenced report, with the same lines | pulldown-cmark's events |
//! | `summary` and `fixes` (also a hand-made fix) | docs/profile.schema.json, by the `jsonschema` crate |
//! | `report` of the document, and of it as version 2 (no `summary`, `fixes`) | the text `profile` printed |
//!
//! Profiling needs ptrace and perf_event_open: where ldcost is refused (exit 8) the tests print
//! `SKIP` (a failure under LDCOST_REQUIRE_ALL).

mod common;

use std::path::Path;

use common::{ldcost, skip};
use serde_json::Value;

/// The fields of a table row: its cells, split where two or more spaces are.
fn cells(line: &str) -> Vec<String> {
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect()
}

/// The rows of the table titled `title` (after its header line, to the first line that is
/// not a row: empty, or not starting with a space).
fn table(text: &str, title: &str) -> Vec<Vec<String>> {
    let mut lines = text.lines().skip_while(|l| *l != title).skip(2);
    let mut rows = Vec::new();
    for l in lines.by_ref() {
        if !l.starts_with(' ') || l.trim().is_empty() {
            break;
        }
        rows.push(cells(l));
    }
    assert!(!rows.is_empty(), "no table {title:?} in:\n{text}");
    rows
}

fn num(s: &str) -> f64 {
    s.trim_end_matches('%')
        .replace(',', "")
        .parse()
        .unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

/// The phase table's row for `phase`: (cpu ms, wall ms) as printed.
fn phase_row(rows: &[Vec<String>], phase: &str) -> Option<(String, String)> {
    let r = rows.iter().find(|r| r[0] == phase)?;
    let cpu = r[1..].iter().find(|c| c.parse::<f64>().is_ok())?.clone();
    let share = r.iter().position(|c| c.ends_with('%'))?;
    Some((cpu, r[share + 1].clone()))
}

/// "label 0.077 ms 10.9%" items of a summary line.
fn parts(line: &str) -> Vec<(String, f64, f64)> {
    // The list ends at its last share; a note in brackets may follow.
    let end = line.rfind('%').unwrap() + 1;
    line[..end]
        .split(" · ")
        .map(|item| {
            let w: Vec<&str> = item.rsplitn(4, ' ').collect();
            assert_eq!(w[1], "ms", "{item:?}");
            (w[3].to_string(), num(w[2]), num(w[0]))
        })
        .collect()
}

/// The phase rows each summary part is made of, as the summary's note says.
fn phases_of(part: &str) -> &'static [&'static str] {
    match part {
        "kernel exec" => &["kernel exec"],
        "CPU feature detection" => &["CPU feature detection"],
        "ld.so search & mapping" => &[
            "ld.so start, search and mapping",
            "search and mapping",
            "ld.so other",
        ],
        "relocation & symbol lookup" => &["relocation", "relocation + initializers"],
        "constructors" => &["initializers"],
        "the program (entry → exit)" => &["main to exit", "entry to main"],
        other => panic!("a part the summary should not have: {other:?}"),
    }
}

/// The figure of a `--detail` line starting with `prefix` and ending "...: 0.063 ms ...".
fn detail_ms(text: &str, prefix: &str) -> f64 {
    let l = text
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} line in:\n{text}"));
    let after = &l[l.find(": ").unwrap() + 2..];
    num(after.split(" ms").next().unwrap())
}

struct Run {
    text: String,
    doc: Value,
    path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

fn profile(test: &str, extra: &[&str]) -> Option<Run> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ls.json");
    let mut args = vec!["profile", "/bin/ls", "--quiet-target"];
    args.extend_from_slice(extra);
    args.extend(["--json", path.to_str().unwrap()]);
    let o = ldcost(&args);
    if o.code == 8 {
        skip(
            test,
            "ldcost profile is refused here (exit 8: ptrace or perf)",
        );
        return None;
    }
    assert_eq!(o.code, 0, "ldcost {}: {}", args.join(" "), o.stderr);
    let doc = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    Some(Run {
        text: o.stdout,
        doc,
        path,
        _dir: dir,
    })
}

fn report(path: &Path, extra: &[&str]) -> String {
    let mut args = vec!["report", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = ldcost(&args);
    assert_eq!(o.code, 0, "ldcost {}: {}", args.join(" "), o.stderr);
    o.stdout
}

/// The summary's lines, without its title and indentation.
fn summary_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for l in text.lines() {
        if l.is_empty() {
            break;
        }
        out.push(
            l.strip_prefix("Summary: ")
                .unwrap_or(l)
                .trim_start()
                .to_string(),
        );
    }
    out
}

#[test]
fn the_summary_comes_first_and_is_made_of_the_tables_numbers() {
    let test = "the_summary_comes_first_and_is_made_of_the_tables_numbers";
    let Some(run) = profile(test, &[]) else {
        return;
    };
    let text = &run.text;
    // First, and short.
    assert!(text.starts_with("Summary: CPU per exec "), "{text}");
    assert!(
        text.find("Summary").unwrap() < text.find("Phases (start-up order; ld.so start and ld.so other run in pieces between the others)").unwrap(),
        "{text}"
    );
    let lines = text.lines().count();
    assert!(lines <= 46, "{lines} lines by default:\n{text}");

    let detail = report(&run.path, &["--detail"]);
    let s = summary_lines(text);
    let rows = table(
        text,
        "Phases (start-up order; ld.so start and ld.so other run in pieces between the others)",
    );
    // The whole: every part's table rows added up.
    let first = &s[0];
    let cpu = num(first
        .strip_prefix("CPU per exec ")
        .unwrap()
        .split(" ms")
        .next()
        .unwrap());
    let mut all: Vec<(String, f64, f64)> = Vec::new();
    for l in &s {
        if let Some(rest) = l.strip_prefix("start-up: ").or(l.strip_prefix("then: ")) {
            all.extend(parts(rest));
        }
    }
    assert_eq!(all.len(), 7, "seven parts: {s:?}");
    let mut total = 0.0;
    let mut wall = 0.0;
    for (label, ms, share) in &all {
        // Rows added up: each is rounded to 0.001 ms on its own, and so is the summary's part.
        let mut rows_added = 2.0;
        let expect = if label == "exit teardown" {
            detail_ms(&detail, "CPU after the last stop")
                + detail_ms(&detail, "Exit teardown after the per-task counters stop")
        } else {
            let found: Vec<(String, String)> = phases_of(label)
                .iter()
                .filter_map(|p| phase_row(&rows, p))
                .collect();
            assert!(!found.is_empty(), "no row of {label:?} in the phase table");
            wall += found.iter().map(|(_, w)| num(w)).sum::<f64>();
            rows_added = found.len() as f64 + 1.0;
            found.iter().map(|(c, _)| num(c)).sum()
        };
        assert!(
            (ms - expect).abs() <= 0.0005 * rows_added + 0.0001,
            "{label}: {ms} ms in the summary, {expect} ms in the tables"
        );
        total += ms;
        let from_ms = ms / cpu * 100.0;
        assert!(
            (share - from_ms).abs() <= 0.05 + 0.0006 / cpu * 100.0,
            "{label}: {share}% vs {ms} of {cpu} ms"
        );
    }
    assert!((total - cpu).abs() <= 0.004, "parts {total} vs whole {cpu}");
    let shares: f64 = all.iter().map(|p| p.2).sum();
    assert!((shares - 100.0).abs() <= 0.35, "shares add up to {shares}%");
    let printed_wall = num(first
        .split("the phases' wall time ")
        .nth(1)
        .unwrap()
        .split(" ms")
        .next()
        .unwrap());
    assert!(
        (printed_wall - wall).abs() <= 0.005,
        "wall {printed_wall} vs {wall}"
    );
    // The caveat, when the parts stray from the runs without ptrace by more than 10%: their
    // CPU per exec is --detail's "without ptrace, per exec" figure, and the excess the whole
    // less it.
    let without = num(detail
        .lines()
        .find_map(|l| {
            l.trim_start()
                .strip_prefix("without ptrace, per exec as the summary counts it: ")
        })
        .expect("a \"without ptrace, per exec\" line in --detail")
        .split(" ms")
        .next()
        .unwrap());
    let caveat = s.iter().find(|l| l.starts_with("caveat: "));
    let ratio = cpu / without;
    if let Some(c) = caveat {
        let took = num(c
            .split("take ")
            .nth(1)
            .unwrap()
            .split(" ms")
            .next()
            .unwrap());
        assert_eq!(took, without, "{c}");
        if ratio > 1.1 {
            let up_to = num(c
                .split("up to ")
                .nth(1)
                .unwrap()
                .split(" ms")
                .next()
                .unwrap());
            assert!((up_to - (cpu - without)).abs() <= 0.0015, "{c} ({cpu} ms)");
        }
    }
    // At the printed precision a ratio next to 1.10 may go either way.
    if !(1.09..=1.11).contains(&ratio) && !(0.89..=0.91).contains(&ratio) {
        assert_eq!(
            caveat.is_some(),
            !(0.9..=1.1).contains(&ratio),
            "{cpu} ms against {without} ms without ptrace: {s:?}"
        );
    }

    // The top objects: their rows of the object table, costliest first.
    let objects = table(text, "Objects, by cost (relocation and initializers)");
    let header: Vec<String> = cells(
        text.lines()
            .skip_while(|l| *l != "Objects, by cost (relocation and initializers)")
            .nth(1)
            .unwrap(),
    );
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let mut sums: Vec<(String, f64)> = Vec::new();
    for r in &objects {
        let ms = num(&r[col("cpu ms")]);
        match sums.iter_mut().find(|(o, _)| *o == r[0]) {
            Some(x) => x.1 += ms,
            None => sums.push((r[0].clone(), ms)),
        }
    }
    let tops: Vec<&String> = s.iter().filter(|l| l.starts_with("top object ")).collect();
    assert_eq!(tops.len(), 3.min(sums.len()), "{s:?}");
    let mut last = f64::INFINITY;
    for t in &tops {
        // "top object 1: libc.so.6: 0.051 ms, most in relocation 0.047 ms, 1,339 relocations, 71 lookups"
        let rest = t.split_once(": ").unwrap().1;
        let (name, rest) = rest.split_once(": ").unwrap();
        let ms = num(rest.split(" ms").next().unwrap());
        let sum = sums.iter().find(|(o, _)| o == name).unwrap().1;
        assert!((ms - sum).abs() <= 0.0011, "{name}: {ms} vs rows {sum}");
        assert!(ms <= last + 0.0011, "ranked: {tops:?}");
        last = ms;
        for (o, x) in &sums {
            assert!(
                o == name
                    || *x <= ms + 0.0011
                    || tops.iter().any(|t| t.contains(&format!(": {o}: "))),
                "{o} ({x} ms) costs more than top object {name} ({ms} ms)"
            );
        }
        // "most in relocation 0.047 ms, ...": the phase, then its ms.
        let most = rest.split("most in ").nth(1).unwrap();
        let (phase, dom_ms) = most.split(" ms").next().unwrap().rsplit_once(' ').unwrap();
        let row = objects
            .iter()
            .find(|r| r[0] == name && r[1] == phase)
            .unwrap_or_else(|| panic!("no row {name} {phase}"));
        assert_eq!(row[col("cpu ms")], dom_ms, "{t}");
        let reloc = objects
            .iter()
            .find(|r| r[0] == name && r[1] == "relocation")
            .unwrap();
        // The relocation row's counts (the columns right-aligned after faults).
        let n = reloc.len();
        let has_glibc = header.iter().any(|h| h == "bindings (glibc)");
        let (relocs, lookups) = if has_glibc {
            (&reloc[n - 3], &reloc[n - 2])
        } else {
            (&reloc[n - 2], &reloc[n - 1])
        };
        assert!(
            t.contains(&format!(
                ", {} relocations, {} lookups",
                thousands(relocs),
                thousands(lookups)
            )),
            "{t} vs the table's {relocs} relocations, {lookups} lookups"
        );
    }

    // The JSON's summary, at the printed precision.
    let e = &run.doc["summary"]["exec"];
    assert_eq!(
        format!("{:.3}", e["cpu_ns"].as_f64().unwrap() / 1e6),
        format!("{cpu:.3}")
    );
    let jparts = e["parts"].as_array().unwrap();
    assert_eq!(jparts.len(), all.len());
    for (j, (label, ms, share)) in jparts.iter().zip(&all) {
        assert_eq!(j["label"], label.as_str());
        assert_eq!(
            format!("{:.3}", j["ns"].as_f64().unwrap() / 1e6),
            format!("{ms:.3}")
        );
        assert_eq!(
            format!("{:.1}", j["share"].as_f64().unwrap() * 100.0),
            format!("{share:.1}")
        );
    }
    let jtops = e["top_objects"].as_array().unwrap();
    assert_eq!(jtops.len(), tops.len());
    for (j, t) in jtops.iter().zip(&tops) {
        let name = j["object"].as_str().unwrap().rsplit('/').next().unwrap();
        assert!(
            t.contains(&format!(
                ": {name}: {:.3} ms, most in {} {:.3} ms",
                j["ns"].as_f64().unwrap() / 1e6,
                j["dominant_phase"].as_str().unwrap(),
                j["dominant_ns"].as_f64().unwrap() / 1e6
            )),
            "{t} vs {j}"
        );
    }
    // The fixes: each summary line is the JSON's fix at the printed precision, in the JSON's
    // ranking (exec side first, savings before trade-offs, largest saving first), and its
    // reason is under "Why these fixes"; with none, one line says what was looked for.
    let jfixes = run.doc["fixes"].as_array().expect("fixes array");
    let mut ranked: Vec<&serde_json::Value> = jfixes.iter().collect();
    // A change to a system library ranks after the changes the user can make.
    let system = |f: &serde_json::Value| {
        f["caveat"]
            .as_str()
            .is_some_and(|c| c.contains("rebuilt only by its distribution"))
    };
    let costs = |f: &serde_json::Value| f["saving_ns"].as_f64().unwrap() < 0.0;
    ranked.sort_by(|a, b| {
        (a["side"] == "fork")
            .cmp(&(b["side"] == "fork"))
            .then(costs(a).cmp(&costs(b)))
            .then(system(a).cmp(&system(b)))
            .then(
                b["saving_ns"]
                    .as_f64()
                    .unwrap()
                    .total_cmp(&a["saving_ns"].as_f64().unwrap()),
            )
    });
    // Savings are "fix N", changes that cost "trade-off N" (ranked after the savings).
    let fix_lines: Vec<&String> = s
        .iter()
        .filter(|l| l.contains(" fix ") || l.contains(" trade-off "))
        .collect();
    assert_eq!(fix_lines.len(), ranked.len(), "{s:?}");
    if ranked.is_empty() {
        assert!(
            s.iter()
                .any(|l| l.starts_with("fixes: none found (checked: unused direct dependencies")),
            "{s:?}"
        );
    }
    let whole = run.doc["summary"]["exec"]["cpu_ns"].as_f64().unwrap();
    for (line, f) in fix_lines.iter().zip(&ranked) {
        let ns = f["saving_ns"].as_f64().unwrap();
        // A fix's share is of the CPU per exec the summary states, not of another whole.
        if f["side"] == "exec" {
            let share = f["share"].as_f64().unwrap();
            assert!(
                (share - ns / whole).abs() < 1e-9,
                "share {share} is not {ns} / the summary's {whole}"
            );
        }
        let verb = if ns < 0.0 { "costs" } else { "saves" };
        let want = format!(
            "{verb} {:.1} µs per {} ({:.1}%",
            ns.abs() / 1e3,
            f["side"].as_str().unwrap(),
            f["share"].as_f64().unwrap().abs() * 100.0
        );
        assert!(line.contains(&want), "{line} lacks {want}");
        assert_eq!(line.contains(" trade-off "), ns < 0.0, "{line}");
        if let Some(ci) = f["ci95_ns"].as_array() {
            // A cost's interval is printed as the cost, positive.
            let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
            let (a, b) = if ns < 0.0 { (-hi, -lo) } else { (lo, hi) };
            let want = format!("95% CI [{:.1}, {:.1}] µs", a / 1e3, b / 1e3);
            assert!(line.contains(&want), "{line} lacks {want}");
        }
        let change = format!("predicted: {}", f["change"].as_str().unwrap());
        assert!(line.contains(&change), "{line} lacks {change}");
        let reason = f["reason"].as_str().unwrap();
        assert!(
            text.contains(reason),
            "the reason {reason} is not in the report"
        );
    }
}

fn thousands(s: &str) -> String {
    let n: u64 = s.parse().unwrap();
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What the default text leaves out, `--detail` (and `-v`, and `report --detail`) shows.
#[test]
fn detail_shows_the_moved_sections() {
    let test = "detail_shows_the_moved_sections";
    let Some(plain) = profile(test, &[]) else {
        return;
    };
    let Some(detail) = profile(test, &["-v"]) else {
        return;
    };
    let moved = [
        "figures: CPU time of the target process",
        "Instrumentation's own cost",
        "Cross-check with glibc",
        "Exit teardown after the per-task counters stop",
        "Whole process",
        "exec runs pinned",
    ];
    for m in moved {
        assert!(
            !plain.text.contains(m),
            "{m:?} without --detail:\n{}",
            plain.text
        );
        assert!(
            detail.text.contains(m),
            "{m:?} not with -v:\n{}",
            detail.text
        );
        assert!(
            report(&plain.path, &["--detail"]).contains(m),
            "{m:?} not in report --detail"
        );
    }
    assert!(detail.text.contains("    min    max"), "{}", detail.text);
    assert!(!plain.text.contains("    min    max"), "{}", plain.text);
    assert!(plain.text.contains("--detail (-v) adds"), "{}", plain.text);
}

/// `report --format markdown`: the summary is a list before the fenced report, item for item
/// the text's summary lines.
#[test]
fn the_markdown_summary_is_a_list_before_the_report() {
    use pulldown_cmark::{Event, Parser, Tag, TagEnd};
    let test = "the_markdown_summary_is_a_list_before_the_report";
    let Some(run) = profile(test, &[]) else {
        return;
    };
    let md = report(&run.path, &["--format", "markdown"]);
    let mut items: Vec<String> = Vec::new();
    let (mut in_item, mut list_seen, mut before_code) = (false, false, true);
    for ev in Parser::new(&md) {
        match ev {
            Event::Start(Tag::List(_)) if before_code => list_seen = true,
            Event::Start(Tag::Item) if before_code => {
                in_item = true;
                items.push(String::new());
            }
            Event::End(TagEnd::Item) => in_item = false,
            Event::Text(t) if in_item => items.last_mut().unwrap().push_str(&t),
            Event::Start(Tag::CodeBlock(_)) => before_code = false,
            _ => {}
        }
    }
    assert!(list_seen, "no list before the report:\n{md}");
    assert!(!before_code, "no fenced report:\n{md}");
    assert_eq!(items, summary_lines(&run.text), "{md}");
}

/// `summary` and `fixes` as written, and a fix of each side made by hand, validate against
/// docs/profile.schema.json; `report` of the document and of it as version 2 (without
/// them) prints what `profile` printed.
#[test]
fn the_sections_validate_and_report_prints_the_same_summary() {
    use ldcost::attribute::fixes::{Fix, FixKind, FixSide};
    let test = "the_sections_validate_and_report_prints_the_same_summary";
    let Some(run) = profile(test, &[]) else {
        return;
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/profile.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = jsonschema::draft202012::new(&schema).unwrap();
    let errors = |d: &Value| v.iter_errors(d).map(|e| e.to_string()).collect::<Vec<_>>();
    assert!(
        run.doc["summary"]["exec"].is_object(),
        "{}",
        run.doc["summary"]
    );
    assert!(errors(&run.doc).is_empty(), "{:?}", errors(&run.doc));
    let mut doc = run.doc.clone();
    let fixes: Vec<ldcost::report::schema::summary::Fix> = [FixSide::Exec, FixSide::Fork]
        .into_iter()
        .map(|side| {
            Fix {
                kind: FixKind::UnusedDependency,
                side,
                objects: vec!["/usr/lib/libfoo.so.1".into()],
                saving_ns: 1234.5,
                ci95_ns: Some((1000.0, 1500.0)),
                share: 0.01,
                change: "-Wl,--as-needed".into(),
                reason: "no relocation binds to it".into(),
                caveat: None,
            }
            .into()
        })
        .collect();
    doc["fixes"] = serde_json::to_value(&fixes).unwrap();
    assert!(errors(&doc).is_empty(), "{:?}", errors(&doc));
    doc["fixes"][0]["kind"] = "guess".into();
    assert!(
        !errors(&doc).is_empty(),
        "a kind the docs do not list passes"
    );

    assert_eq!(report(&run.path, &[]), run.text);
    let mut old = run.doc.clone();
    old["schema_version"] = 2.into();
    let o = old.as_object_mut().unwrap();
    o.remove("summary");
    o.remove("fixes");
    let old_path = run.path.with_file_name("v2.json");
    std::fs::write(&old_path, serde_json::to_string(&old).unwrap()).unwrap();
    assert_eq!(
        report(&old_path, &[]),
        run.text,
        "report of a version-2 document"
    );
}

/// With `--fork`, the fork line's parent and child CPU are the per-fork table's medians, their
/// shares and the CPU per fork follow from them, and the JSON holds the same.
#[test]
fn the_fork_line_is_the_per_fork_tables_cpu() {
    let test = "the_fork_line_is_the_per_fork_tables_cpu";
    let Some(run) = profile(test, &["-n", "2", "--fork=300"]) else {
        return;
    };
    let text = &run.text;
    let s = summary_lines(text);
    let line = s
        .iter()
        .find(|l| l.starts_with("fork: CPU per fork "))
        .unwrap_or_else(|| panic!("no fork line: {s:?}"));
    let row = |name: &str| -> String {
        let l = text
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no row {name:?} in:\n{text}"));
        cells(l)[1].clone()
    };
    let (parent, child) = (row("parent CPU"), row("child CPU (incl. exit teardown)"));
    let (p, c) = (num(&parent), num(&child));
    let total = p + c;
    let expect = format!(
        "= parent {parent} µs {:.1}% + child {child} µs {:.1}%",
        p / total * 100.0,
        c / total * 100.0
    );
    // The shares come from the unrounded medians: allow the last digit.
    let got = line.split(" (incl.").next().unwrap();
    assert!(
        got.ends_with(&expect) || {
            let shares: Vec<f64> = got
                .split_whitespace()
                .filter(|w| w.ends_with('%'))
                .map(num)
                .collect();
            shares.len() == 2
                && (shares[0] - p / total * 100.0).abs() <= 0.2
                && (shares[1] - c / total * 100.0).abs() <= 0.2
                && got.contains(&format!("parent {parent} µs "))
                && got.contains(&format!("child {child} µs "))
        },
        "{line} vs the table's parent {parent} µs, child {child} µs"
    );
    let whole = num(line
        .strip_prefix("fork: CPU per fork ")
        .unwrap()
        .split(" µs")
        .next()
        .unwrap());
    assert!(
        (whole - total).abs() <= 0.11,
        "{whole} vs {parent} + {child}"
    );
    assert!(
        line.contains(&format!("; {whole:.1} ms per 1000 forks")),
        "{line}"
    );
    let f = &run.doc["summary"]["fork"];
    assert_eq!(
        format!("{:.1}", f["cpu_ns"].as_f64().unwrap() / 1e3),
        format!("{whole:.1}")
    );
    assert_eq!(
        format!("{:.1}", f["parent_cpu_ns"].as_f64().unwrap() / 1e3),
        parent
    );
    assert_eq!(
        format!("{:.1}", f["child_cpu_ns"].as_f64().unwrap() / 1e3),
        child
    );
}

/// `profile --fork --no-exec` reads no dependency closure: its summary claims as checked only
/// the fix kinds whose inputs the run has. /bin/true is too small for the fork/vfork A/B, so
/// nothing is looked for; a program that touches 48 MiB before main gets the A/B, and fork
/// then exec is the one kind named, as a fix or as checked. Oracle: the document's own
/// sections (no `deps` objects; `fork.spawn_ab` present or not) and its `fixes`.
#[test]
fn fork_only_claims_only_what_it_looked_for() {
    let test = "fork_only_claims_only_what_it_looked_for";
    if !common::tools(test, &["cc"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    common::write(
        dir.path(),
        "big.c",
        "#include <string.h>\n\
         static char big[48 << 20];\n\
         __attribute__((constructor)) static void touch(void) { memset(big, 1, sizeof big); }\n\
         int main(void) { return big[12345] - 1; }\n",
    );
    common::cc(dir.path(), &["-O1", "-o", "big", "big.c"]);
    let big = dir.path().join("big");
    let json = dir.path().join("fork.json");
    for (target, ab) in [("/bin/true", false), (big.to_str().unwrap(), true)] {
        let o = ldcost(&[
            "profile",
            target,
            "--quiet-target",
            "--fork=200",
            "--no-exec",
            "--json",
            json.to_str().unwrap(),
        ]);
        if o.code == 8 {
            return skip(
                test,
                "ldcost profile is refused here (exit 8: ptrace or perf)",
            );
        }
        assert_eq!(o.code, 0, "{target}: {}", o.stderr);
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let objects = doc["deps"]["closure"]["objects"]
            .as_array()
            .or_else(|| doc["deps"]["objects"].as_array())
            .map_or(0, Vec::len);
        assert_eq!(objects, 0, "{target}: a closure in a --no-exec document");
        assert_eq!(
            doc["fork"]["spawn_ab"].is_object(),
            ab,
            "{target}: spawn_ab {}",
            doc["fork"]["spawn_ab"]
        );
        let s = summary_lines(&o.stdout);
        let fixes = doc["fixes"].as_array().unwrap();
        assert!(
            fixes.iter().all(|f| f["kind"] == "spawn"),
            "{target}: {fixes:?}"
        );
        let claims = s.iter().filter(|l| l.starts_with("fixes: ")).count()
            + s.iter().filter(|l| l.starts_with("fork fix ")).count();
        assert_eq!(claims, 1.max(fixes.len()), "{target}: {s:?}");
        for l in &s {
            assert!(!l.contains("unused direct"), "{target}: {l}");
            assert!(!l.contains("DT_RELR"), "{target}: {l}");
        }
        if !ab {
            assert!(
                s.iter().any(|l| l.starts_with("fixes: none looked for (")),
                "{target}: {s:?}"
            );
        } else if fixes.is_empty() {
            assert!(
                s.contains(&"fixes: none found (checked: fork vs vfork/posix_spawn)".to_string()),
                "{target}: {s:?}"
            );
        } else {
            assert!(
                s.iter()
                    .any(|l| l.starts_with("fork fix 1: ") && l.contains("posix_spawn")),
                "{target}: {s:?}"
            );
        }
    }
}
