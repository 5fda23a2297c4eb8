//! erik's differential flame graphs (`ldcost experiment erik --quick`): k = 100 libraries
//! against k = 0 at the same footprint, the child leaving by `exit()` and by `_exit`.
//!
//! Oracles: the folded-diff file written beside each graph (`stack BASE HEAD`, samples per 1000
//! forks), merged into a tree here by hand as FlameGraph's flamegraph.pl does (a frame's colour
//! is HEAD − BASE of its own samples), to pick a frame that only k = 100 has and that must be
//! red wherever it is drawn; headless Chromium (scripts/check-flamegraph --diff --red NAME) to
//! see that inferno drew it red. The negated graph (k = 0's widths) must draw what only k = 0
//! has, blue: checked on synthetic stacks whose frames are known (its SVG read here, and in
//! Chromium), and on the real graph when the run has a frame only k = 0 has. Counts per fork, never times, are compared; the one share
//! asserted (the `_dl_fini` walk with 100 libraries against none) differs by far more than load
//! can move it.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{have, skip};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");

/// One node of the merged tree: its path from the root, BASE and HEAD own samples.
type Own = BTreeMap<Vec<String>, (i64, i64)>;

/// A frame's name as inferno shows it: without the `_[k]` (kernel) and other annotations.
fn shown(frame: &str) -> String {
    for a in ["_[k]", "_[j]", "_[i]", "_[w]"] {
        if let Some(s) = frame.strip_suffix(a) {
            return s.to_string();
        }
    }
    frame.to_string()
}

/// Parses `a;b;c BASE HEAD` lines into each node's own samples (the leaf of a line owns its
/// counts) and the set of frame names BASE has anywhere.
fn tree(folded: &str) -> (Own, std::collections::BTreeSet<String>) {
    let mut own = Own::new();
    let mut in_base = std::collections::BTreeSet::new();
    for l in folded.lines() {
        let w: Vec<&str> = l.rsplitn(3, ' ').collect();
        assert_eq!(w.len(), 3, "not a two-column folded line: {l:?}");
        let (h, b): (i64, i64) = (w[0].parse().unwrap(), w[1].parse().unwrap());
        let path: Vec<String> = w[2].split(';').map(shown).collect();
        if b > 0 {
            in_base.extend(path.iter().cloned());
        }
        // Every prefix is a node (with no own samples unless a line ends there).
        for i in 1..path.len() {
            own.entry(path[..i].to_vec()).or_default();
        }
        let e = own.entry(path).or_default();
        e.0 += b;
        e.1 += h;
    }
    (own, in_base)
}

/// Frames only HEAD has whose every node gained own samples (so inferno paints each red),
/// by the largest own samples of one node (the widest red frame), largest first. Names
/// check-flamegraph cannot pass are left out.
fn red_only_in_head(folded: &str) -> Vec<(String, i64)> {
    let (own, in_base) = tree(folded);
    let mut by_name: BTreeMap<String, (bool, i64)> = BTreeMap::new();
    for (path, (b, h)) in &own {
        let name = path.last().unwrap().clone();
        let e = by_name.entry(name).or_insert((true, 0));
        e.0 &= h > b;
        e.1 = e.1.max(*h);
    }
    let mut v: Vec<(String, i64)> = by_name
        .into_iter()
        .filter(|(n, (all_red, _))| {
            *all_red
                && !in_base.contains(n)
                && path_depth_ok(n)
                && !n.contains(['"', '\\', '<', '&', '|', '~'])
        })
        .map(|(n, (_, h))| (n, h))
        .collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

/// The section and category roots are not frames of the program.
fn path_depth_ok(name: &str) -> bool {
    name != "fork" && !name.starts_with('[')
}

/// HEAD's and BASE's samples per 1000 forks in lines through any of `frames`.
fn through(folded: &str, frames: &[&str]) -> (i64, i64) {
    let mut t = (0, 0);
    for l in folded.lines() {
        let w: Vec<&str> = l.rsplitn(3, ' ').collect();
        if w[2].split(';').any(|f| frames.contains(&f)) {
            t.0 += w[1].parse::<i64>().unwrap();
            t.1 += w[0].parse::<i64>().unwrap();
        }
    }
    t
}

/// Frames only BASE has whose every node lost own samples (so the negated graph paints each
/// blue), by the largest own samples of one node, largest first.
fn blue_only_in_base(folded: &str) -> Vec<(String, i64)> {
    // The same tree with the columns swapped: what only HEAD has there only BASE has here.
    let swapped: String = folded
        .lines()
        .map(|l| {
            let w: Vec<&str> = l.rsplitn(3, ' ').collect();
            format!("{} {} {}\n", w[2], w[0], w[1])
        })
        .collect();
    red_only_in_head(&swapped)
}

fn check_flamegraph(svg: &Path, red: &[&str]) -> (Option<i32>, String) {
    check_colours(svg, red, &[])
}

fn check_colours(svg: &Path, red: &[&str], blue: &[&str]) -> (Option<i32>, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-flamegraph");
    let png = svg.with_extension("png");
    let mut cmd = Command::new(script);
    cmd.arg(svg).arg(&png).arg("--diff");
    for r in red {
        cmd.args(["--red", r]);
    }
    for b in blue {
        cmd.args(["--blue", b]);
    }
    let out = cmd.output().expect("run scripts/check-flamegraph");
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn the_exit_graph_paints_red_what_only_a_hundred_libraries_do() {
    let name = "the_exit_graph_paints_red_what_only_a_hundred_libraries_do";
    if !have("cc") {
        skip(name, "`cc` is not installed");
        return;
    }
    let keep = tempfile::tempdir().unwrap();
    let dir = keep.path().join("out");
    let out = Command::new(BIN)
        .args(["experiment", "erik", "--quick", "--out"])
        .arg(&dir)
        .output()
        .expect("run ldcost");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let section = &results["experiments"][0]["section"];
    let graphs = section["flamegraphs"].as_array().unwrap();
    if graphs.is_empty() {
        // The sampler was refused (no root, perf_event_paranoid): the report names why.
        let why: Vec<String> = section["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["what"].as_str().unwrap().contains("differential"))
            .map(|s| s["reason"].to_string())
            .collect();
        assert!(!why.is_empty(), "no graph and no reason");
        skip(name, &format!("no differential graph: {}", why.join("; ")));
        return;
    }
    let files: Vec<&str> = graphs
        .iter()
        .map(|g| g["file_name"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        [
            "erik-diff-exit.svg",
            "erik-diff-exit-k0.svg",
            "erik-diff-_exit.svg",
            "erik-diff-_exit-k0.svg"
        ]
    );
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    for f in &files {
        let svg = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(svg.trim_end().ends_with("</svg>"), "{f}");
        assert!(md.contains(&format!("]({f})")), "{f} linked from report.md");
        assert!(
            html.contains(&format!("<object data=\"{f}\"")),
            "{f} in report.html"
        );
    }
    // Each side's forks: the blocks sampled (6 of 50 in --quick), on both sides.
    let diff = section["data"]["diff"].as_array().unwrap();
    for d in diff {
        assert_eq!(
            d["negated_file"].as_str().unwrap(),
            d["file"].as_str().unwrap().replace(".svg", "-k0.svg")
        );
        assert_eq!(d["base"]["libs"], 0);
        assert_eq!(d["head"]["libs"], 100);
        assert_eq!(d["base"]["forks"], 300, "{d}");
        assert_eq!(d["head"]["forks"], 300, "{d}");
        assert!(d["head"]["samples"].as_u64().unwrap() > 0);
    }

    summary_and_population(section, &md, &dir);

    let folded = std::fs::read_to_string(dir.join("erik-diff-exit.folded")).unwrap();
    // The walk over every object at exit (ld.so's _dl_fini and the destructors it calls in
    // each library) holds many times more samples per fork with 100 libraries than with none.
    let (b, h) = through(
        &folded,
        &["_dl_fini", "_dl_call_fini", "__do_global_dtors_aux"],
    );
    println!("_dl_fini walk: k = 0 {b}, k = 100 {h} samples per 1000 forks");
    assert!(h > 2 * b.max(1), "k = 0 {b}, k = 100 {h}");

    let red = red_only_in_head(&folded);
    println!(
        "frames only k = 100 has, red wherever drawn: {:?}",
        &red[..red.len().min(5)]
    );
    assert!(!red.is_empty(), "no frame only k = 100 has:\n{folded}");
    // The negated graphs: k = 0's widths, the same red; what only k = 0 has is drawn, blue,
    // and is not drawn in the first graph. Which frames only k = 0 has is up to the sampler
    // (the synthetic test below always checks one); those narrower than a thousandth of the
    // graph are left out, as inferno may not draw them.
    let mut blue_tops = Vec::new();
    for exit in ["exit", "_exit"] {
        let neg_name = format!("erik-diff-{exit}-k0.svg");
        let folded = std::fs::read_to_string(dir.join(format!("erik-diff-{exit}.folded"))).unwrap();
        let plain = std::fs::read_to_string(dir.join(format!("erik-diff-{exit}.svg"))).unwrap();
        let neg = std::fs::read_to_string(dir.join(&neg_name)).unwrap();
        assert!(
            neg.contains("drawn with k = 0&apos;s widths")
                || neg.contains("drawn with k = 0's widths"),
            "{neg_name} title"
        );
        let base_total: i64 = folded
            .lines()
            .map(|l| l.rsplit(' ').nth(1).unwrap().parse::<i64>().unwrap())
            .sum();
        let blue: Vec<(String, i64)> = blue_only_in_base(&folded)
            .into_iter()
            .filter(|(_, v)| *v * 1000 >= base_total)
            .collect();
        println!(
            "{neg_name}: frames only k = 0 has, blue wherever drawn: {:?}",
            &blue[..blue.len().min(5)]
        );
        let top: Vec<String> = blue.iter().take(2).map(|(n, _)| n.clone()).collect();
        for t in &top {
            let f = fills(&neg, t);
            assert!(!f.is_empty(), "{t} not drawn in {neg_name}");
            for c in &f {
                let (r, g, b) = rgb(c);
                assert!(b == 255 && r == g && r < 250, "{t} in {neg_name}: {c}");
            }
            assert!(
                fills(&plain, t).is_empty(),
                "{t} drawn with k = 100's widths"
            );
        }
        blue_tops.push((neg_name, top));
    }
    if !have("chromium") && !have("chromium-browser") {
        skip(
            name,
            "chromium is not installed: the colours are checked in the SVG text only",
        );
        return;
    }
    let top: Vec<&str> = red.iter().take(2).map(|(n, _)| n.as_str()).collect();
    let (code, said) = check_flamegraph(&dir.join("erik-diff-exit.svg"), &top);
    assert_eq!(code, Some(0), "check-flamegraph --red {top:?}:\n{said}");
    for t in &top {
        assert!(said.contains(&format!("\"{t}\" is red")), "{said}");
    }
    // The _exit graph is a working differential graph too (search, zoom, reset).
    let (code, said) = check_flamegraph(&dir.join("erik-diff-_exit.svg"), &[]);
    assert_eq!(
        code,
        Some(0),
        "check-flamegraph erik-diff-_exit.svg:\n{said}"
    );
    for (svg, top) in &blue_tops {
        let top: Vec<&str> = top.iter().map(String::as_str).collect();
        let (code, said) = check_colours(&dir.join(svg), &[], &top);
        assert_eq!(
            code,
            Some(0),
            "check-flamegraph {svg} --blue {top:?}:\n{said}"
        );
        for t in &top {
            assert!(said.contains(&format!("\"{t}\" is blue")), "{said}");
        }
    }
}

/// The fill of every frame named `name` in an inferno SVG (`<title>NAME (…` then its rect).
fn fills(svg: &str, name: &str) -> Vec<String> {
    let key = format!("<title>{name} (");
    svg.match_indices(&key)
        .filter_map(|(i, _)| {
            let rest = &svg[i..];
            let f = rest.find("fill=\"")? + 6;
            Some(rest[f..].split('"').next()?.to_string())
        })
        .collect()
}

fn rgb(fill: &str) -> (u32, u32, u32) {
    let v: Vec<u32> = fill
        .trim_start_matches("rgb(")
        .trim_end_matches(')')
        .split(',')
        .map(|x| x.trim().parse().unwrap())
        .collect();
    (v[0], v[1], v[2])
}

#[test]
fn the_negated_graph_draws_what_only_base_has_blue() {
    use ldcost::attribute::categories::Category;
    use ldcost::attribute::FoldedStack;
    use ldcost::report::flamegraph::{diff, FlameOptions};
    let st = |frames: &[&str], count| FoldedStack {
        category: Category::ExitTeardown,
        section: "fork".into(),
        frames: frames.iter().map(|f| f.to_string()).collect(),
        count,
    };
    // Per 100 forks each: `shared` 100 → 150 (red), `only_base` 40 → none, `only_head` none
    // → 30.
    let base = [st(&["exit", "shared"], 100), st(&["exit", "only_base"], 40)];
    let head = [st(&["exit", "shared"], 150), st(&["exit", "only_head"], 30)];
    let u = diff::Units { exec: 0, fork: 100 };
    let opts = FlameOptions::default();
    let mut plain = Vec::new();
    diff::write_diff_svg(&base, u, &head, u, diff::Widths::Head, &opts, &mut plain).unwrap();
    let plain = String::from_utf8(plain).unwrap();
    let mut neg = Vec::new();
    diff::write_diff_svg(&base, u, &head, u, diff::Widths::Base, &opts, &mut neg).unwrap();
    let neg = String::from_utf8(neg).unwrap();

    // HEAD's widths: only_base is not drawn, only_head is, red.
    assert!(fills(&plain, "only_base").is_empty(), "{plain}");
    let (r, g, b) = rgb(&fills(&plain, "only_head")[0]);
    assert!(r == 255 && g == b && g < 250, "only_head: {r},{g},{b}");
    // BASE's widths: only_base is drawn, blue; only_head is not; shared stays red.
    assert!(fills(&neg, "only_head").is_empty(), "{neg}");
    let f = fills(&neg, "only_base");
    assert_eq!(f.len(), 1, "{neg}");
    let (r, g, b) = rgb(&f[0]);
    assert!(b == 255 && r == g && r < 250, "only_base: {r},{g},{b}");
    let (r, g, b) = rgb(&fills(&neg, "shared")[0]);
    assert!(r == 255 && g == b && g < 250, "shared: {r},{g},{b}");
    // Its width is BASE's: 40 of BASE's 140 per 1000 forks (400 of 1400).
    assert!(
        neg.contains("<title>only_base (400 samples per 1000"),
        "{neg}"
    );
    assert!(
        neg.contains("widths: BASE"),
        "subtitle says which graph it is"
    );
    assert!(!plain.contains("widths: BASE"), "{plain}");

    if !have("chromium") && !have("chromium-browser") {
        skip(
            "the_negated_graph_draws_what_only_base_has_blue",
            "chromium is not installed: the colours are checked in the SVG only",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("neg.svg");
    std::fs::write(&path, &neg).unwrap();
    let (code, said) = check_colours(&path, &["shared"], &["only_base"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("\"only_base\" is blue"), "{said}");
}

#[test]
fn the_tree_gives_a_frame_its_own_samples_only() {
    // do_lookup_x: own samples 0 → 30 in one node, 5 → 5 in another: not red everywhere.
    // _dl_call_fini: only HEAD, own samples in its one node: red. `mid` only HEAD but never a
    // leaf: neutral in the graph, so not a candidate.
    let t = "fork;lazy binding;_dl_fixup;do_lookup_x 0 30\n\
             fork;lazy binding;do_lookup_x 5 5\n\
             fork;ld.so: other;_dl_call_fini 0 12\n\
             fork;ld.so: other;mid;leaf_[k] 0 3\n\
             fork;exit: teardown;zap_[k] 0 4\n\
             fork;exit: teardown;x;zap_[k] 0 9\n\
             fork;ld.so: other;leaf 1 0\n";
    let red = red_only_in_head(t);
    // `leaf_[k]` is shown as `leaf`, which BASE has; `zap_[k]` is red in both its nodes.
    assert_eq!(
        red,
        vec![("_dl_call_fini".to_string(), 12), ("zap".to_string(), 9)]
    );
    assert_eq!(through(t, &["do_lookup_x"]), (5, 35));
    // `leaf` only BASE has as `leaf`, but HEAD draws `leaf_[k]` as `leaf` too: no candidate.
    assert!(blue_only_in_base(t).is_empty());
    let t = "fork;exit: teardown;only0 4 0\nfork;exit: teardown;both 3 1\n";
    assert_eq!(blue_only_in_base(t), vec![("only0".to_string(), 4)]);
}

/// The median as ldcost's tables take it (the mean of the middle two of an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The Summary opens with erik's verdict (results.json's `erik.verdict` finding, its
/// conclusion the one the fitted intervals in `data.fits` choose); no plot title holds a
/// conclusion; and the table beside the graphs describes the graphs' own forks: its samples
/// per 1000 forks are the folded files' column sums (what inferno drew), its forks and samples
/// `data.diff`'s, its measured-rounds column the medians of the points' own samples.
fn summary_and_population(section: &Value, md: &str, dir: &Path) {
    use ldcost::experiment::erik::verdict::{conclusion, Effect};
    let findings = section["findings"].as_array().unwrap();
    let verdict = findings
        .iter()
        .find(|f| f["key"] == "erik.verdict")
        .expect("a verdict finding");
    let text = verdict["text"].as_str().unwrap();
    let first = md
        .split("## Summary\n\n")
        .nth(1)
        .and_then(|r| r.lines().next())
        .unwrap();
    assert!(first.starts_with("erik's question"), "{first}");
    assert!(first.contains("µs per VMA") && first.contains("µs per library"));
    assert_eq!(first.replace("\\|", "|"), text);
    // The sides, recomputed from the fits' intervals in the data.
    let fit = |exit: &str, measure: &str| {
        section["data"]["fits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["exit"] == exit && f["measure"] == measure)
            .unwrap()
            .clone()
    };
    let effect = |f: &Value, c: usize| Effect {
        value: f["coef"][c].as_f64().unwrap(),
        ci: [
            f["ci95"][c][0].as_f64().unwrap(),
            f["ci95"][c][1].as_f64().unwrap(),
        ],
    };
    let fork = fit("_exit", "parent");
    let chosen = conclusion(
        effect(&fork, 2).side(),
        effect(&fork, 1).side(),
        effect(&fit("_exit", "round_trip"), 1).side(),
        effect(&fit("exit", "round_trip"), 1).side(),
    );
    assert!(text.ends_with(&chosen), "{text}\nwanted: {chosen}");
    assert!(text.contains(&format!("{:.3} [", effect(&fork, 2).value)));
    for f in findings {
        let t = f["text"].as_str().unwrap();
        assert!(!t.contains("significant"), "{t}");
        if f["key"]
            .as_str()
            .unwrap()
            .starts_with("erik.per_library_us")
            && f["interval"][1].as_f64().unwrap() < 0.0
        {
            assert!(t.contains("below zero: "), "{t}");
        }
    }
    for p in section["plots"].as_array().unwrap() {
        let title = p["title"].as_str().unwrap();
        for w in ["erik is right", "flat", "hypothesis", "holds", "So "] {
            assert!(!title.contains(w), "plot title with a conclusion: {title}");
        }
        let caption = p["caption"].as_str().expect("a caption");
        assert!(caption.contains(" µs at "), "{caption}");
        if p["file_name"] == "erik-libraries.svg" {
            assert!(caption.ends_with(&chosen), "{caption}");
        }
    }

    let table = section["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"] == ldcost::experiment::erik::diff::POPULATION_TITLE)
        .expect("the table beside the graphs");
    let rows = table["rows"].as_array().unwrap();
    let cell = |r: &Value, i: usize| r[i].as_str().unwrap().to_string();
    let points = section["data"]["points"].as_array().unwrap();
    for d in section["data"]["diff"].as_array().unwrap() {
        let exit = d["exit"].as_str().unwrap();
        let label = if exit == "exit" { "exit()" } else { "_exit" };
        let e = ["_exit", "exit", "exit_bound"]
            .iter()
            .position(|x| *x == exit)
            .unwrap();
        let folded = std::fs::read_to_string(dir.join(format!("erik-diff-{exit}.folded"))).unwrap();
        let (mut b, mut h) = (0i64, 0i64);
        for l in folded.lines() {
            let mut w = l.rsplitn(3, ' ');
            h += w.next().unwrap().parse::<i64>().unwrap();
            b += w.next().unwrap().parse::<i64>().unwrap();
        }
        for (side, total) in [("base", b), ("head", h)] {
            let libs = d[side]["libs"].as_u64().unwrap();
            let r = rows
                .iter()
                .find(|r| cell(r, 0) == label && cell(r, 1) == libs.to_string())
                .unwrap_or_else(|| panic!("no row {label} k = {libs}: {table}"));
            let (forks, samples) = (
                d[side]["forks"].as_u64().unwrap(),
                d[side]["samples"].as_u64().unwrap(),
            );
            assert_eq!(cell(r, 2), forks.to_string());
            assert_eq!(cell(r, 3), samples.to_string());
            assert_eq!(
                cell(r, 4),
                total.to_string(),
                "the graph's total, per 1000 forks"
            );
            // Per fork both: the folded lines are rounded one by one, and the samples
            // outside any category (none here) are left out.
            let per = samples as f64 * 1000.0 / forks as f64;
            assert!(
                (total as f64 - per).abs() <= 0.05 * per + folded.lines().count() as f64,
                "{label} k = {libs}: graph {total}, samples {per:.0} per 1000 forks"
            );
            let p = points
                .iter()
                .find(|p| p["point"]["series"] == "A" && p["point"]["libs"] == libs)
                .unwrap();
            let rt = median(
                p["samples"][e]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s["round_trip"].as_f64().unwrap())
                    .collect(),
            );
            assert_eq!(cell(r, 7), format!("{rt:.1}"), "{label} k = {libs}");
        }
    }
}
