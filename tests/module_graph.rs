//! One direction of dependencies: no cycle between the top-level modules of `src/`.
//!
//! In: every `src/**/*.rs` file. Out: the graph of top-level modules (`elf`, `deps`, `trace`,
//! …), one edge per `crate::x…` path (in `use` lines, grouped `use crate::{a, b}`, and inline
//! paths) and per `super::` chain that climbs to the crate root, and a failure that names the
//! cycle and the lines that make it. Comments, strings and char literals are blanked first, so
//! a doc link or a message that mentions `crate::x` is not an edge. Test modules count: a
//! `#[cfg(test)]` import still ties two rooms together. There is no allowlist.
//!
//! The parser is checked on inline fixtures below, so the test can fail: a two-module cycle, a
//! cycle through grouped imports, a cycle through `super::super::`, and the negative cases
//! (comments, strings, a `super::` that stays inside its room).
//!
//! The same graph enforces the seam between capture and analysis: the analysis modules
//! ([`ANALYSIS`]: attribution, reports, comparisons) read what a run captured through
//! `record` only, and never import a capture module ([`CAPTURE`]: the modules that touch live
//! processes and the kernel's perf interface). So every analysis can be tested, and re-run,
//! on a saved recording without root or the target. The drivers ([`DRIVERS`]: `run`,
//! `profile`, `experiment`) run the target and hand its recording on; they may import both
//! sides, and an analysis module imports no driver either (a driver imports capture, so an
//! analysis that reached its pure parts through it would sit one edge from the kernel).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Where an edge comes from: the file and the 1-based line.
#[derive(Debug, Clone)]
struct Site {
    file: String,
    line: usize,
}

/// Top-level module → (top-level module it uses → the first site that uses it).
type Graph = BTreeMap<String, BTreeMap<String, Site>>;

/// Replaces comments, string literals and char literals by spaces (newlines kept, so line
/// numbers survive). Lifetimes (`'a`) are left alone.
fn blank_non_code(src: &str) -> Vec<char> {
    let c: Vec<char> = src.chars().collect();
    let mut out = c.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for ch in out.iter_mut().take(to.min(c.len())).skip(from) {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
    };
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            let end = c[i..]
                .iter()
                .position(|&x| x == '\n')
                .map_or(c.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if c[i] == '/' && next == Some('*') {
            // Block comments nest in Rust.
            let (mut j, mut depth) = (i + 2, 1);
            while j < c.len() && depth > 0 {
                if c[j] == '/' && c.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if c[j] == '*' && c.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if c[i] == 'r'
            && (next == Some('"') || next == Some('#'))
            && (i == 0 || !is_ident(c[i - 1]))
        {
            // Raw string r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (0..hashes).all(|h| c.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            blank(&mut out, i, j);
            i = j;
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < c.len() && c[j] != '"' {
                if c[j] == '\\' {
                    j += 1;
                }
                j += 1;
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if c[i] == '\'' {
            if next == Some('\\') {
                // '\n', '\'', '\u{..}'
                let mut j = i + 2;
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
                if c.get(i + 2) == Some(&'\'') {
                    j = i + 3; // '\''
                    while j < c.len() && c[j] != '\'' {
                        j += 1;
                    }
                }
                blank(&mut out, i, j + 1);
                i = j + 1;
            } else if c.get(i + 2) == Some(&'\'') {
                blank(&mut out, i, i + 3);
                i += 3;
            } else {
                i += 1; // a lifetime
            }
        } else {
            i += 1;
        }
    }
    out
}

fn is_ident(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// The module path of a file relative to `src/`: `trace/fork.rs` → [trace, fork],
/// `trace/mod.rs` → [trace], `lib.rs` → []. `main.rs` is the binary (it uses `ldcost::`),
/// not a module of the library: None.
fn module_path(rel: &Path) -> Option<Vec<String>> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    if parts.is_empty() && stem == "main" {
        return None;
    }
    if !(parts.is_empty() && stem == "lib") && stem != "mod" {
        parts.push(stem.to_string());
    }
    Some(parts)
}

/// The identifier starting at `i` (empty when there is none).
fn ident_at(c: &[char], i: usize) -> String {
    c[i.min(c.len())..]
        .iter()
        .take_while(|&&ch| is_ident(ch))
        .collect()
}

fn skip_ws(c: &[char], mut i: usize) -> usize {
    while i < c.len() && c[i].is_whitespace() {
        i += 1;
    }
    i
}

/// Whether the text at `i` is `word` followed by `::` (spaces allowed), not part of a longer
/// identifier. Returns the index after the `::`.
fn path_head(c: &[char], i: usize, word: &str) -> Option<usize> {
    let w: Vec<char> = word.chars().collect();
    if i > 0 && is_ident(c[i - 1]) {
        return None;
    }
    if c.len() < i + w.len() || c[i..i + w.len()] != w[..] {
        return None;
    }
    let j = skip_ws(c, i + w.len());
    (c.get(j) == Some(&':') && c.get(j + 1) == Some(&':')).then(|| skip_ws(c, j + 2))
}

/// The first identifiers of each item of a `{a, b::c, d::{e}}` group starting at `open`.
fn group_heads(c: &[char], open: usize) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut at_item_start = true;
    let mut i = open;
    while i < c.len() {
        match c[i] {
            '{' => {
                depth += 1;
                if depth == 1 {
                    at_item_start = true;
                }
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => at_item_start = true,
            ch if depth == 1 && at_item_start && is_ident(ch) => {
                heads.push(ident_at(c, i));
                at_item_start = false;
            }
            _ => {}
        }
        i += 1;
    }
    heads
}

/// The top-level module names a path names right after its root (`crate::` or the last
/// `super::`): one identifier, or the first identifier of each item of a `{…}` group.
fn heads_after(c: &[char], j: usize) -> Vec<String> {
    if c.get(j) == Some(&'{') {
        return group_heads(c, j);
    }
    let h = ident_at(c, j);
    if h.is_empty() {
        Vec::new()
    } else {
        vec![h]
    }
}

/// The top-level modules one file refers to, with the line of each reference. `path` is the
/// file's module path; inline `mod x { … }` blocks extend it where they are open.
fn references(text: &str, path: &[String]) -> Vec<(String, usize)> {
    let c = blank_non_code(text);
    let mut refs = Vec::new();
    // Inline modules: (name, brace depth at which its body opened).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut line = 1;
    let mut pending_mod: Option<String> = None;
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
        }
        if ch == '{' {
            depth += 1;
            if let Some(name) = pending_mod.take() {
                inline.push((name, depth));
            }
        } else if ch == '}' {
            if inline.last().is_some_and(|(_, d)| *d == depth) {
                inline.pop();
            }
            depth = depth.saturating_sub(1);
        } else if ch == ';' {
            pending_mod = None;
        }
        if i > 0 && is_ident(c[i - 1]) || !is_ident(ch) {
            i += 1;
            continue;
        }
        let word = ident_at(&c, i);
        if word == "mod" {
            let j = skip_ws(&c, i + 3);
            let name = ident_at(&c, j);
            if !name.is_empty() {
                pending_mod = Some(name);
            }
        } else if let Some(j) = path_head(&c, i, "crate") {
            for h in heads_after(&c, j) {
                refs.push((h, line));
            }
        } else if word == "super" {
            // Climb: the current module path is the file's plus the open inline modules.
            let mut here: Vec<String> = path
                .iter()
                .cloned()
                .chain(inline.iter().map(|(n, _)| n.clone()))
                .collect();
            let mut j = i;
            while let Some(k) = path_head(&c, j, "super") {
                here.pop();
                j = k;
            }
            if here.is_empty() && j != i {
                for h in heads_after(&c, j) {
                    refs.push((h, line));
                }
            }
            // Skip past the chain so the inner `super` words are not climbed again.
            let skipped = &c[i..j.max(i + 1)];
            line += skipped.iter().filter(|&&x| x == '\n').count();
            i = j.max(i + 1);
            continue;
        }
        i += word.len().max(1);
    }
    refs
}

/// Builds the graph from (path relative to src/, text) pairs. `tops` are the top-level
/// modules (declared in lib.rs); references to anything else (`crate::SomeFn`) are not edges.
fn graph(files: &[(PathBuf, String)], tops: &BTreeSet<String>) -> Graph {
    let mut g = Graph::new();
    for (rel, text) in files {
        let Some(path) = module_path(rel) else {
            continue;
        };
        let Some(from) = path.first() else {
            continue; // lib.rs: the root declares every module
        };
        for (to, line) in references(text, &path) {
            if &to == from || !tops.contains(&to) {
                continue;
            }
            g.entry(from.clone())
                .or_default()
                .entry(to)
                .or_insert_with(|| Site {
                    file: format!("src/{}", rel.display()),
                    line,
                });
        }
    }
    g
}

/// The first cycle found (depth-first, in name order), as the list of modules with the first
/// repeated at the end.
fn find_cycle(g: &Graph) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &Graph,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(pos) = stack.iter().position(|s| s == n) {
            let mut cyc = stack[pos..].to_vec();
            cyc.push(n.to_string());
            return Some(cyc);
        }
        if done.contains(n) {
            return None;
        }
        stack.push(n.to_string());
        for m in g.get(n).into_iter().flat_map(|e| e.keys()) {
            if let Some(c) = visit(m, g, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for n in g.keys() {
        if let Some(c) = visit(n, g, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}

/// "a -> b (src/a/x.rs:3) -> a (src/b.rs:9)".
fn describe(cycle: &[String], g: &Graph) -> String {
    let mut s = cycle[0].clone();
    for w in cycle.windows(2) {
        let site = &g[&w[0]][&w[1]];
        s += &format!(" -> {} ({}:{})", w[1], site.file, site.line);
    }
    s
}

/// The top-level modules declared in lib.rs (`pub mod x;` / `mod x;`).
fn top_modules(lib: &str) -> BTreeSet<String> {
    let c = blank_non_code(lib);
    let text: String = c.into_iter().collect();
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("pub(crate) mod "))
                .or_else(|| l.strip_prefix("mod "))?;
            Some(rest.trim_end_matches(';').trim().to_string())
        })
        .collect()
}

fn rs_files(dir: &Path, root: &Path, out: &mut Vec<(PathBuf, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rs_files(&p, root, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&p).expect("read source");
            out.push((p.strip_prefix(root).expect("under src").to_path_buf(), text));
        }
    }
}

#[test]
fn no_cycle_between_top_level_modules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rs_files(&src, &src, &mut files);
    let lib = files
        .iter()
        .find(|(p, _)| p == Path::new("lib.rs"))
        .map(|(_, t)| t.clone())
        .expect("src/lib.rs");
    let tops = top_modules(&lib);
    assert!(
        tops.len() >= 10 && tops.contains("trace") && tops.contains("error"),
        "lib.rs declares {tops:?}: the module list was not read"
    );
    let g = graph(&files, &tops);
    let edges: usize = g.values().map(|e| e.len()).sum();
    // The graph is not empty (a parser that finds nothing finds no cycle either).
    assert!(edges >= 20, "only {edges} edges between top-level modules");
    if let Some(cyc) = find_cycle(&g) {
        panic!(
            "cycle between top-level modules of src/: {}",
            describe(&cyc, &g)
        );
    }
}

/// The analysis modules: they read a recording (and ELF files), never a live run.
const ANALYSIS: &[&str] = &["attribute", "report", "compare"];
/// The capture modules: live processes (ptrace, procfs) and perf_event_open.
const CAPTURE: &[&str] = &["trace", "perf"];
/// The drivers: they run the target (through the capture modules) and hand the recording to
/// the analysis.
const DRIVERS: &[&str] = &["profile", "run", "experiment"];

/// Every edge from an analysis module to a capture module or a driver, as "attribute ->
/// trace (src/attribute/x.rs:3)", in name order.
fn seam_violations(g: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    for a in ANALYSIS {
        for c in CAPTURE.iter().chain(DRIVERS) {
            if let Some(site) = g.get(*a).and_then(|e| e.get(*c)) {
                out.push(format!("{a} -> {c} ({}:{})", site.file, site.line));
            }
        }
    }
    out
}

#[test]
fn analysis_modules_do_not_import_capture_modules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rs_files(&src, &src, &mut files);
    let lib = files
        .iter()
        .find(|(p, _)| p == Path::new("lib.rs"))
        .map(|(_, t)| t.clone())
        .expect("src/lib.rs");
    let tops = top_modules(&lib);
    // A renamed module would make the check vacuous: every name must still be declared.
    for m in ANALYSIS
        .iter()
        .chain(CAPTURE)
        .chain(DRIVERS)
        .chain(&["record"])
    {
        assert!(
            tops.contains(*m),
            "lib.rs no longer declares `{m}`: {tops:?}"
        );
    }
    let g = graph(&files, &tops);
    // The analysis modules' imports were read: each reads the recording.
    for a in ANALYSIS {
        assert!(
            g.get(*a).is_some_and(|e| e.contains_key("record")),
            "no edge {a} -> record was found: the parser missed the analysis modules' imports"
        );
    }
    let bad = seam_violations(&g);
    assert!(
        bad.is_empty(),
        "an analysis module imports a capture module or a driver (analysis reads what a run \
         captured through `record` only; move the captured type to src/record/, the pure \
         analysis out of the driver into the analysis modules, or the live work to a driver): \
         {}",
        bad.join("; ")
    );
}

fn fixture(files: &[(&str, &str)]) -> (Graph, BTreeSet<String>) {
    let files: Vec<(PathBuf, String)> = files
        .iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect();
    let lib = &files
        .iter()
        .find(|(p, _)| p == Path::new("lib.rs"))
        .unwrap()
        .1;
    let tops = top_modules(lib);
    (graph(&files, &tops), tops)
}

#[test]
fn module_graph_finds_a_two_module_cycle() {
    let (g, _) = fixture(&[
        ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
        ("a/mod.rs", "//! a\nuse crate::b::Thing;\n"),
        ("b.rs", "fn f() {\n    let _ = crate::a::x();\n}\n"),
        ("c.rs", "use crate::a;\n"),
    ]);
    let cyc = find_cycle(&g).expect("a -> b -> a is a cycle");
    assert_eq!(cyc, ["a", "b", "a"]);
    assert_eq!(
        describe(&cyc, &g),
        "a -> b (src/a/mod.rs:2) -> a (src/b.rs:2)"
    );
}

#[test]
fn module_graph_reads_grouped_imports_and_super_chains() {
    // Grouped: a uses {b, c}; c climbs from c/x/y.rs to the root and uses a.
    let (g, _) = fixture(&[
        ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
        (
            "a.rs",
            "use crate::{\n    b::One,\n    c::{self, Two},\n};\n",
        ),
        ("b.rs", ""),
        ("c/x/y.rs", "use super::super::super::a::Three;\n"),
    ]);
    assert!(g["a"].contains_key("b") && g["a"].contains_key("c"));
    assert_eq!(find_cycle(&g).unwrap(), ["a", "c", "a"]);
    // An inline test module adds a level: super::super from c/mod.rs's tests reaches the root.
    let (g, _) = fixture(&[
        ("lib.rs", "pub mod a;\npub mod c;\n"),
        ("a.rs", "use crate::c;\n"),
        (
            "c/mod.rs",
            "#[cfg(test)]\nmod tests {\n    use super::super::a;\n}\n",
        ),
    ]);
    assert_eq!(find_cycle(&g).unwrap(), ["a", "c", "a"]);
}

#[test]
fn module_graph_ignores_comments_strings_and_local_super() {
    let (g, _) = fixture(&[
        ("lib.rs", "//! [`crate::b`]\npub mod a;\npub mod b;\n"),
        (
            "a/mod.rs",
            "//! see [`crate::b`]\n/* crate::b::X */\nconst S: &str = \"crate::b::Y\";\nconst R: &str = r#\"crate::b\"#;\nconst C: char = '\"';\nfn f<'a>(x: &'a str) {}\nuse crate::bx;\nmod inner { use super::super::b; }\n",
        ),
        ("a/z.rs", "use super::Thing;\n"),
        ("b.rs", "use crate::a::X;\n"),
    ]);
    // The only real edges: a -> b through the inline module's super::super, and b -> a.
    assert_eq!(g["b"].keys().collect::<Vec<_>>(), ["a"]);
    assert_eq!(g["a"].keys().collect::<Vec<_>>(), ["b"]);
    assert_eq!(g["a"]["b"].line, 8);
    // Without that line there is no cycle.
    let (g, _) = fixture(&[
        ("lib.rs", "pub mod a;\npub mod b;\n"),
        (
            "a/mod.rs",
            "//! see [`crate::b`]\nconst S: &str = \"crate::b::Y\";\nuse crate::bx;\n",
        ),
        ("b.rs", "use crate::a::X;\n"),
    ]);
    assert!(find_cycle(&g).is_none(), "{g:?}");
}

#[test]
fn seam_check_finds_an_analysis_module_importing_a_capture_module() {
    let (g, _) = fixture(&[
        (
            "lib.rs",
            "pub mod attribute;\npub mod compare;\npub mod experiment;\npub mod perf;\npub mod profile;\npub mod record;\npub mod report;\npub mod run;\npub mod stats;\npub mod trace;\n",
        ),
        (
            "attribute/fork.rs",
            "use crate::record::fork::ForkRun;\nuse crate::trace::fork::At;\n",
        ),
        (
            "report/text.rs",
            "use crate::record::Ending;\nfn f() {\n    let _ = crate::perf::sampler::symbolize();\n}\n",
        ),
        // Allowed: capture and drivers import the recording and each other.
        ("trace/fork.rs", "pub use crate::record::fork::ForkRun;\n"),
        ("perf/mod.rs", "use crate::record::samples::Recording;\n"),
        ("run/mod.rs", "use crate::trace::fork;\nuse crate::attribute::fork;\n"),
        ("record/mod.rs", ""),
        // A driver's pure parts reached through the driver: refused like capture.
        (
            "compare/verdict.rs",
            "use crate::record::Run;\nuse crate::{profile::ProfileSection, stats};\n",
        ),
        (
            "attribute/profile.rs",
            "fn f() {\n    let _ = crate::experiment::run();\n}\n",
        ),
        ("profile/mod.rs", "use crate::trace::fork;\nuse crate::attribute::fork;\n"),
        ("experiment/mod.rs", "use crate::run;\n"),
    ]);
    assert_eq!(
        seam_violations(&g),
        [
            "attribute -> trace (src/attribute/fork.rs:2)",
            "attribute -> experiment (src/attribute/profile.rs:2)",
            "report -> perf (src/report/text.rs:3)",
            "compare -> profile (src/compare/verdict.rs:2)",
        ]
    );
    // The same analysis modules through the recording only: nothing to report.
    let (g, _) = fixture(&[
        (
            "lib.rs",
            "pub mod attribute;\npub mod record;\npub mod report;\npub mod trace;\n",
        ),
        (
            "attribute/fork.rs",
            "use crate::record::fork::{At, ForkRun};\n",
        ),
        (
            "report/text.rs",
            "//! not [`crate::trace`]\nuse crate::record::Ending;\n",
        ),
        ("trace/fork.rs", "pub use crate::record::fork::ForkRun;\n"),
        ("record/mod.rs", ""),
    ]);
    assert!(seam_violations(&g).is_empty(), "{g:?}");
}
