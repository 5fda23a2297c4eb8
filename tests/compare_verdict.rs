//! The whole-run verdict of `compare`/`diff`, its gate, the Markdown for a PR and the
//! reconciliation line, through the real binary.
//!
//! | case | oracle |
//! | --- | --- |
//! | `compare 'python3 -c pass' 'python3 -S -c pass'` | the command lines given: the text's header names both, arguments included; the children's CPU by `getrusage(RUSAGE_CHILDREN)` over the same commands run directly (no ptrace, no perf): HEAD's total is lower; the verdict's total = start-up + own work + libraries after main + exit teardown per side (medians, to their rounding), own work after main faster, start-up not significant, libraries after main "not measured" (timed: the direction is printed, the structure asserted) |
//! | a program vs the same program with three more libraries (20,000 symbolic relocations) | Markdown rendered by pulldown-cmark: a heading naming BASE and HEAD by path, a table whose bold cells are exactly the changes the JSON calls significant and judged; with `--fail-above 1 --gate startup` the gate line says FAILED and the exit is 12 exactly when the JSON says `failed` |
//! | the same, text and Markdown | the reconciliation line's numbers, parsed, equal the JSON's reconciliation (to 0.1 µs) and add up: verdict = counted + correction + between; per-object = explained + unexplained; explained = Σ factors; the JSON's verdict figure is the verdict's start-up change and its per-object figure the attribution's |
//! | `--gate` without `--fail-above` | exit 2 (usage) |
//!
//! The runs need ptrace, perf_event_open, cc and python3: elsewhere the tests print `SKIP` (a
//! failure under LDCOST_REQUIRE_ALL).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{cc, ldcost, skip, tools, write};
use ldcost::compare::Comparison;

/// One compare at a time: two at once on a 2-CPU machine would each time the other.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn read(p: &Path) -> Comparison {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).expect("comparison JSON")
}

fn metric<'a>(c: &'a Comparison, key: &str) -> &'a ldcost::report::schema::comparison::Metric {
    c.verdict
        .metrics
        .iter()
        .find(|m| m.key == key)
        .unwrap_or_else(|| panic!("no metric {key}: {:?}", c.verdict.metrics))
}

/// CPU (user + system, ns) of `n` runs of `argv` as children of this process, by
/// getrusage(RUSAGE_CHILDREN): no ptrace, no perf.
fn children_cpu(argv: &[&str], n: usize) -> f64 {
    let usage = || {
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) }, 0);
        let t = |v: libc::timeval| v.tv_sec as f64 * 1e9 + v.tv_usec as f64 * 1e3;
        t(u.ru_utime) + t(u.ru_stime)
    };
    let before = usage();
    for _ in 0..n {
        let s = Command::new(argv[0]).args(&argv[1..]).status().unwrap();
        assert!(s.success());
    }
    usage() - before
}

#[test]
fn python_without_site_is_faster_after_main_not_in_startup() {
    let name = "python_without_site_is_faster_after_main_not_in_startup";
    if !tools(name, &["python3"]) {
        return;
    }
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("c.json");
    let o = ldcost(&[
        "--no-progress",
        "compare",
        "python3 -c pass",
        "python3 -S -c pass",
        "--json",
        j.to_str().unwrap(),
    ]);
    if o.code == 8 {
        skip(name, "ldcost is refused ptrace or perf here (exit 8)");
        return;
    }
    assert_eq!(o.code, 0, "{}\n{}", o.stderr, o.stdout);
    let c = read(&j);
    // The text's header names each side by its whole command line, as it was given.
    let header = o.stdout.lines().next().unwrap_or_default();
    let (b, h) = header
        .strip_prefix("ldcost compare: BASE ")
        .and_then(|r| r.split_once(" → HEAD "))
        .unwrap_or_else(|| panic!("header: {header}"));
    assert!(
        b.contains("python3") && b.ends_with(" -c pass") && !b.contains("-S"),
        "{header}"
    );
    assert!(
        h.contains("python3") && h.ends_with(" -S -c pass"),
        "{header}"
    );
    // The oracle: the same commands, run directly, measured by the kernel's rusage. Interleaved
    // in five rounds so that load changes hit both sides.
    let (mut base, mut head) = (0.0, 0.0);
    for _ in 0..5 {
        base += children_cpu(&["python3", "-c", "pass"], 4);
        head += children_cpu(&["python3", "-S", "-c", "pass"], 4);
    }
    assert!(
        head < base,
        "rusage: HEAD {head} ns not below BASE {base} ns"
    );

    // Structure: every part present, the total their sum (medians of sums and sums of medians
    // differ, so per side within the parts' spread), libraries after main not measured.
    let total = metric(&c, "total_cpu").change.clone().expect("total CPU");
    let startup = metric(&c, "startup_cpu").change.clone().expect("start-up");
    let own = metric(&c, "main_cpu").change.clone().expect("own work");
    let exit = metric(&c, "exit_cpu")
        .change
        .clone()
        .expect("exit teardown");
    // ld.so's work after main is a part of its own, out of the own work.
    let loader = metric(&c, "after_main_libraries").change.clone();
    let (lb, lh) = loader
        .as_ref()
        .map_or((0.0, 0.0), |l| (l.base_median, l.head_median));
    for (t, parts) in [
        (
            total.base_median,
            startup.base_median + own.base_median + lb + exit.base_median,
        ),
        (
            total.head_median,
            startup.head_median + own.head_median + lh + exit.head_median,
        ),
    ] {
        assert!(
            (t - parts).abs() <= 0.25 * t,
            "total {t} vs Σ parts {parts}"
        );
    }
    let later = metric(&c, "after_main_libraries");
    assert!(!later.judged, "shown, never judged");
    // Whether either side loads libraries after main, by glibc's own account: a python3
    // whose site imports extension modules does (python3 -S may not).
    let loads_after_main = |args: &[&str]| {
        let out = std::process::Command::new("python3")
            .args(args)
            .env("LD_DEBUG", "files")
            .output()
            .expect("python3 runs");
        String::from_utf8_lossy(&out.stderr).contains("dynamically loaded by")
    };
    if loads_after_main(&["-c", "pass"]) || loads_after_main(&["-S", "-c", "pass"]) {
        // Measured by the per-object runs: a change, shown on its row.
        assert!(later.change.is_some(), "{later:?}");
        assert!(
            o.stdout.contains("libraries loaded after main"),
            "{}",
            o.stdout
        );
    } else {
        // No dlopen: "none" where the per-object runs saw the loader after main, "not
        // measured (why)" where they could not; never a change made of zeros.
        assert!(later.change.is_none());
        let why = later.missing.as_deref().unwrap();
        assert!(
            why.starts_with("not measured (") || why.starts_with("none ("),
            "{why:?}"
        );
        assert!(
            o.stdout
                .contains(&format!("libraries loaded after main  {why}")),
            "{}",
            o.stdout
        );
    }
    for m in ["total_cpu", "startup_cpu", "main_cpu", "exit_cpu"] {
        assert!(metric(&c, m).judged, "{m} judged");
    }
    assert!(!metric(&c, "startup_wall").judged);
    // The default gate set.
    let gated: Vec<&str> = c
        .verdict
        .metrics
        .iter()
        .filter(|m| m.gated)
        .map(|m| m.key.as_str())
        .collect();
    assert_eq!(gated, ["total_cpu", "startup_cpu"]);

    // Timed: HEAD faster in its own work after main, start-up not significant; the summary
    // names the own work first.
    let holds = own.significant
        && own.change_pct < 0.0
        && !startup.significant
        && c.verdict.faster
        && c.verdict.summary.starts_with("HEAD ")
        && c.verdict
            .summary
            .contains("faster in the program's own work after main")
        && c.verdict.summary.contains("start-up unchanged");
    eprintln!(
        "verdict: {}{}",
        c.verdict.summary,
        if holds {
            ""
        } else {
            "  (TIMED CHECK DID NOT HOLD HERE)"
        }
    );
    // Whatever the timing, the summary's first figure is the most changed significant part.
    if let Some(first) = c.verdict.summary.strip_prefix("HEAD ") {
        let parts = [
            ("start-up CPU (execve → main)", &startup),
            ("the program's own work after main", &own),
            ("exit teardown", &exit),
        ];
        let lead = parts
            .iter()
            .filter(|(_, ch)| ch.significant)
            .max_by(|a, b| {
                (a.1.head_median - a.1.base_median)
                    .abs()
                    .total_cmp(&(b.1.head_median - b.1.base_median).abs())
            });
        if let Some((label, _)) = lead {
            assert!(first.contains(&format!("in {label} (")), "{first}");
        }
    }
}

/// A library whose data table points at `n` exported variables: n symbolic relocations.
fn big_lib(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!("int v{i};\n"));
    }
    s.push_str("int *table[] = {");
    for i in 0..n {
        s.push_str(&format!("&v{i},"));
    }
    s.push_str("};\nint big_get(int i) { return *table[i]; }\n");
    s
}

/// BASE: a program that does nothing; HEAD: the same linked with three more libraries.
fn fixture(dir: &Path) -> (PathBuf, PathBuf) {
    write(dir, "main.c", "int main(void) { return 0; }\n");
    write(dir, "big.c", &big_lib(20_000));
    write(dir, "small.c", "int small_get(void) { return 1; }\n");
    let mut mid = String::new();
    for i in 0..200 {
        mid.push_str(&format!("int m{i}(void) {{ return {i}; }}\n"));
    }
    write(dir, "mid.c", &mid);
    for l in ["big", "small", "mid"] {
        cc(
            dir,
            &[
                "-shared",
                "-fPIC",
                "-o",
                &format!("lib{l}.so"),
                &format!("{l}.c"),
            ],
        );
    }
    cc(dir, &["-o", "base", "main.c"]);
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    cc(
        dir,
        &[
            "-o",
            "head",
            "main.c",
            "-Wl,--no-as-needed",
            "-L.",
            "-lbig",
            "-lsmall",
            "-lmid",
            &rpath,
        ],
    );
    (dir.join("base"), dir.join("head"))
}

/// The signed µs figures of a reconciliation line, in order ("+33.1 µs", "− 17.5 µs").
fn figures(line: &str) -> Vec<f64> {
    let mut out = Vec::new();
    let words: Vec<&str> = line.split_whitespace().collect();
    for (i, w) in words.iter().enumerate() {
        if words.get(i + 1).is_some_and(|n| n.starts_with("µs")) {
            let sign = match words.get(i.wrapping_sub(1)) {
                Some(&"−") => -1.0,
                _ => 1.0,
            };
            if let Ok(v) = w.trim_start_matches('(').parse::<f64>() {
                out.push(sign * v);
            }
        }
    }
    out
}

fn check_reconciliation(line: &str, c: &Comparison) {
    let r = c
        .attribution
        .reconciliation
        .as_ref()
        .expect("a reconciliation in the JSON");
    let f = figures(line);
    let us = |ns: f64| (ns / 100.0).round() / 10.0;
    let mut want = vec![
        us(r.verdict_ns),
        us(r.counted_ns),
        us(r.stops_correction_ns),
        us(r.between_runs_ns),
        us(r.per_object_ns),
        us(r.explained_ns),
    ];
    want.extend(r.by_factor.iter().map(|x| us(x.ns)));
    want.push(us(r.unexplained_ns));
    assert_eq!(f.len(), want.len(), "{line}: {f:?} vs {want:?}");
    for (a, b) in f.iter().zip(&want) {
        assert!((a - b).abs() < 1e-9, "{line}: {f:?} vs {want:?}");
    }
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6;
    // As printed, the line adds up.
    assert!(close(f[0], f[1] + f[2] + f[3]), "verdict = Σ: {f:?}");
    assert!(
        close(f[4], f[1] + f[2]),
        "per-object = counted + correction: {f:?}"
    );
    let by: f64 = f[6..f.len() - 1].iter().sum();
    assert!(close(f[5], by), "explained = Σ factors: {f:?}");
    assert!(
        close(f[4], f[5] + f[f.len() - 1]),
        "per-object = explained + rest: {f:?}"
    );
    // Its figures are the report's: the verdict's start-up change, the attribution's.
    let v = metric(c, "startup_cpu").change.as_ref().unwrap();
    assert!((r.verdict_ns - (v.head_median - v.base_median)).abs() <= 50.0);
    let a = &c.attribution;
    assert!((r.per_object_ns - a.instrumented_delta_ns.unwrap()).abs() <= 50.0);
    assert!((r.explained_ns - a.explained_ns).abs() <= 50.0 * a.parts.len() as f64);
}

#[test]
fn markdown_for_a_pr_and_the_reconciliation_line() {
    let name = "markdown_for_a_pr_and_the_reconciliation_line";
    if !tools(name, &["cc"]) {
        return;
    }
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let (base, head) = fixture(dir.path());
    let (b, h) = (dir.path().join("b.json"), dir.path().join("h.json"));
    let o = ldcost(&[
        "--no-progress",
        "compare",
        base.to_str().unwrap(),
        head.to_str().unwrap(),
        "-n",
        "8",
        "--save-base",
        b.to_str().unwrap(),
        "--save-head",
        h.to_str().unwrap(),
    ]);
    if o.code == 8 {
        skip(name, "ldcost is refused ptrace or perf here (exit 8)");
        return;
    }
    assert_eq!(o.code, 0, "{}\n{}", o.stderr, o.stdout);
    let diff = |extra: &[&str]| {
        let mut a = vec!["diff", b.to_str().unwrap(), h.to_str().unwrap()];
        a.extend_from_slice(extra);
        ldcost(&a)
    };
    let gate = ["--fail-above", "1", "--gate", "startup"];
    let j = diff(&[&["--format", "json"][..], &gate[..]].concat());
    let c: Comparison = serde_json::from_str(&j.stdout).expect("JSON");
    assert_eq!(j.code, if c.failed { 12 } else { 0 }, "{}", j.stderr);
    assert_eq!(c.gate.as_deref(), Some("startup"));
    let gated: Vec<&str> = c
        .verdict
        .metrics
        .iter()
        .filter(|m| m.gated)
        .map(|m| m.key.as_str())
        .collect();
    assert_eq!(gated, ["startup_cpu"]);

    // Text: the reconciliation line.
    let t = diff(&[]);
    let line = t
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("reconciliation: "))
        .unwrap_or_else(|| panic!("no reconciliation line:\n{}", t.stdout));
    check_reconciliation(line, &c);

    // Markdown, rendered by a Markdown parser.
    let m = diff(&[&["--format", "markdown"][..], &gate[..]].concat());
    assert_eq!(m.code, j.code, "{}", m.stderr);
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut heading = None::<String>;
    let (mut in_heading, mut in_table, mut in_strong, mut in_cell) = (false, false, false, false);
    let mut rows: Vec<Vec<(String, bool)>> = Vec::new();
    let mut paragraphs: Vec<String> = Vec::new();
    let mut para: Option<String> = None;
    for e in Parser::new_ext(&m.stdout, Options::ENABLE_TABLES) {
        match e {
            Event::Start(Tag::Heading { .. }) => {
                in_heading = true;
                heading = Some(String::new());
            }
            Event::End(TagEnd::Heading(_)) => in_heading = false,
            Event::Start(Tag::Table(_)) => in_table = true,
            Event::End(TagEnd::Table) => in_table = false,
            Event::Start(Tag::TableRow) | Event::Start(Tag::TableHead) if in_table => {
                rows.push(Vec::new())
            }
            Event::Start(Tag::TableCell) => {
                in_cell = true;
                if let Some(r) = rows.last_mut() {
                    r.push((String::new(), false));
                }
            }
            Event::End(TagEnd::TableCell) => in_cell = false,
            Event::Start(Tag::Strong) => in_strong = true,
            Event::End(TagEnd::Strong) => in_strong = false,
            Event::Start(Tag::Paragraph) => para = Some(String::new()),
            Event::End(TagEnd::Paragraph) => paragraphs.extend(para.take()),
            Event::Text(s) | Event::Code(s) => {
                if in_heading {
                    heading.as_mut().unwrap().push_str(&s);
                } else if in_cell {
                    let cell = rows.last_mut().unwrap().last_mut().unwrap();
                    cell.0.push_str(&s);
                    cell.1 |= in_strong;
                } else if let Some(p) = para.as_mut() {
                    p.push_str(&s);
                }
            }
            _ => {}
        }
    }
    let heading = heading.expect("a heading");
    assert!(
        heading.contains(&format!("BASE {}", base.display()))
            && heading.contains(&format!("HEAD {}", head.display())),
        "{heading}"
    );
    // The verdict table: one row per verdict figure with a change, bold exactly where the
    // JSON says significant and judged.
    let verdict_rows: Vec<&Vec<(String, bool)>> = rows
        .iter()
        .filter(|r| r.len() == 7 && !r[0].0.is_empty())
        .collect();
    let mut seen = 0;
    for mt in &c.verdict.metrics {
        let Some(ch) = &mt.change else { continue };
        let row = verdict_rows
            .iter()
            .find(|r| r[0].0.trim_end_matches(" (not judged)") == mt.label)
            .unwrap_or_else(|| panic!("no row for {}: {rows:?}", mt.label));
        let bold: Vec<usize> = (0..row.len()).filter(|&i| row[i].1).collect();
        let want: Vec<usize> = if ch.significant && mt.judged {
            vec![3]
        } else {
            vec![]
        };
        assert_eq!(bold, want, "{}: {row:?}", mt.label);
        seen += 1;
    }
    assert!(seen >= 4, "{rows:?}");
    // Nothing else in any table is bold.
    let bold_elsewhere = rows
        .iter()
        .filter(|r| !verdict_rows.iter().any(|v| std::ptr::eq(*v, *r)))
        .any(|r| r.iter().any(|c| c.1));
    assert!(!bold_elsewhere, "{rows:?}");
    // The gate's result and the reconciliation line.
    let gate_line = paragraphs
        .iter()
        .find(|p| p.contains("Gate:"))
        .unwrap_or_else(|| panic!("no gate line: {paragraphs:?}"));
    assert!(
        gate_line.contains(if c.failed {
            "FAILED (exit 12)"
        } else {
            ": passed"
        }),
        "{gate_line}"
    );
    let rec = paragraphs
        .iter()
        .find_map(|p| p.strip_prefix("Reconciliation: "))
        .unwrap_or_else(|| panic!("no reconciliation: {paragraphs:?}"));
    check_reconciliation(rec.trim_end_matches('.'), &c);
}

#[test]
fn gate_needs_fail_above() {
    let o = ldcost(&["diff", "a.json", "b.json", "--gate", "total"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("--fail-above"), "{}", o.stderr);
}
