//! `ldcost diff BASE.json HEAD.json` through the real binary, on documents written by
//! `ldcost profile --json` here.
//!
//! | case | expectation |
//! | --- | --- |
//! | a document with itself | "no significant change", every change exactly 0, exit 0 |
//! | missing file, directory, non-JSON, truncated, schema 2, a `deps` document | one error line naming the file (+ a hint), exit 3 / 3 / 10 / 10 / 11 / 10 |
//! | another machine | exit 11 naming what differs; with `--force` exit 0 and the difference in the report |
//! | `--format json` | reads back into `Comparison` (deny_unknown_fields) |
//! | `--format markdown` | the title naming both sides first, then the verdict line, `<details>`, the reproducing command |
//! | `--fail-above` on a document with itself | exit 0 (no significant change never fails) |
//!
//! Profiling needs ptrace and perf_event_open: where ldcost is refused (exit 8) the tests print
//! `SKIP` (a failure under LDCOST_REQUIRE_ALL).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{ldcost, skip, Out};
use ldcost::compare::Comparison;

/// One `profile --json` document of /bin/true, made once (None: ldcost cannot profile here).
fn document() -> Option<&'static Path> {
    static DOC: OnceLock<Option<(tempfile::TempDir, PathBuf)>> = OnceLock::new();
    DOC.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("true.json");
        let o = ldcost(&[
            "profile",
            "/bin/true",
            "-n",
            "5",
            "--no-ld-debug",
            "--json",
            p.to_str().unwrap(),
        ]);
        if o.code == 8 {
            return None;
        }
        assert_eq!(o.code, 0, "profile failed: {}", o.stderr);
        Some((dir, p))
    })
    .as_ref()
    .map(|(_, p)| p.as_path())
}

fn doc_or_skip(name: &str) -> Option<&'static Path> {
    let d = document();
    if d.is_none() {
        skip(
            name,
            "ldcost profile is refused here (exit 8: ptrace or perf)",
        );
    }
    d
}

fn one_error_line(o: &Out, names: &str) {
    let lines: Vec<&str> = o.stderr.lines().collect();
    assert!(
        !lines.is_empty() && lines.len() <= 2,
        "one error line (+ hint): {}",
        o.stderr
    );
    assert!(lines[0].starts_with("ldcost: error: "), "{}", o.stderr);
    assert!(lines[0].contains(names), "{} should name {names}", lines[0]);
    if let Some(h) = lines.get(1) {
        assert!(h.starts_with("  hint: "), "{}", o.stderr);
    }
    assert!(o.stdout.is_empty(), "nothing on stdout: {}", o.stdout);
}

#[test]
fn a_document_with_itself_is_no_significant_change() {
    let Some(doc) = doc_or_skip("a_document_with_itself_is_no_significant_change") else {
        return;
    };
    let d = doc.to_str().unwrap();
    let o = ldcost(&["diff", d, d]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("verdict: no significant change"),
        "{}",
        o.stdout
    );
    let o = ldcost(&["diff", d, d, "--format", "json", "--fail-above", "0"]);
    assert_eq!(o.code, 0, "--fail-above 0 on A vs A: {}", o.stderr);
    let c: Comparison = serde_json::from_str(&o.stdout).expect("the comparison JSON reads back");
    assert_eq!(c.verdict.summary, "no significant change");
    assert!(!c.verdict.slower && !c.verdict.faster && !c.failed);
    let cpu = c
        .verdict
        .metrics
        .iter()
        .find(|m| m.key == "startup_cpu")
        .and_then(|m| m.change.as_ref())
        .expect("start-up CPU compared");
    assert_eq!(cpu.change_pct, 0.0);
    assert_eq!(cpu.base_n, 5);
    assert!(cpu.ci95_pct.0 <= 0.0 && cpu.ci95_pct.1 >= 0.0);
    assert!(cpu.p_value > 0.9, "{}", cpu.p_value);
    assert!(c.factors.objects_added.is_empty() && c.factors.objects_removed.is_empty());
    assert!(c.factors.objects.is_empty(), "no object differs");
    assert!(c.factors.totals.iter().all(|r| r.delta == Some(0.0)));
    assert!(c.machine_differences.is_empty());
}

#[test]
fn markdown_has_the_pr_comment_shape() {
    let Some(doc) = doc_or_skip("markdown_has_the_pr_comment_shape") else {
        return;
    };
    let d = doc.to_str().unwrap();
    let o = ldcost(&["diff", d, d, "--format", "markdown"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let md = o.stdout;
    let first = md.lines().next().unwrap();
    assert!(
        first.starts_with("### ldcost diff: BASE `/bin/true`"),
        "{first}"
    );
    assert!(md.contains("\n⚪ no significant change\n"), "{md}");
    assert!(md.contains("| start-up CPU |"), "{md}");
    let (open, close) = (
        md.find("<details>").expect("details"),
        md.find("</details>").expect("/details"),
    );
    assert!(open < close);
    assert!(md[open..close].contains("Static model of each side"));
    assert!(md.contains(&format!(
        "```sh\nldcost diff {d} {d} --format markdown\n```"
    )));
}

fn edited(
    name: &str,
    f: impl FnOnce(&mut serde_json::Value),
) -> Option<(tempfile::TempDir, PathBuf)> {
    let doc = doc_or_skip(name)?;
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(doc).unwrap()).unwrap();
    f(&mut v);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("edited.json");
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    Some((dir, p))
}

#[test]
fn another_machine_is_refused_unless_forced() {
    let Some((_dir, other)) = edited("another_machine_is_refused_unless_forced", |v| {
        v["machine"]["kernel_release"] = "1.2.3-other".into();
        v["machine"]["hostname_digest"] = "0000000000000000".into();
    }) else {
        return;
    };
    let d = document().unwrap().to_str().unwrap();
    let o = ldcost(&["diff", d, other.to_str().unwrap()]);
    assert_eq!(o.code, 11, "{}", o.stderr);
    one_error_line(&o, "different machines");
    assert!(o.stderr.contains("1.2.3-other") && o.stderr.contains("host digest"));
    let o = ldcost(&["diff", d, other.to_str().unwrap(), "--force"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stderr.contains("different machines"), "{}", o.stderr);
    assert!(
        o.stdout.contains("1.2.3-other"),
        "the report says what differs"
    );
    // A document without a machine record (an older ldcost) is not silently comparable.
    let (_d2, old) = edited("another_machine_is_refused_unless_forced", |v| {
        v.as_object_mut().unwrap().remove("machine");
    })
    .unwrap();
    let o = ldcost(&["diff", old.to_str().unwrap(), d]);
    assert_eq!(o.code, 11, "{}", o.stderr);
    assert!(o.stderr.contains("not recorded in BASE"), "{}", o.stderr);
}

#[test]
fn the_machine_record_is_this_machine() {
    let Some(doc) = doc_or_skip("the_machine_record_is_this_machine") else {
        return;
    };
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(doc).unwrap()).unwrap();
    let m = &v["machine"];
    let uname = common::stdout_of("uname", &["-r"]);
    assert_eq!(m["kernel_release"].as_str().unwrap(), uname.trim());
    let ldd = Command::new("ldd").arg("--version").output().unwrap();
    let first = String::from_utf8_lossy(&ldd.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    let glibc = m["glibc"].as_str().unwrap();
    assert!(
        first.ends_with(glibc),
        "ldd --version says {first:?}, we say {glibc}"
    );
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let digest = m["hostname_digest"].as_str().unwrap();
    assert_eq!(digest.len(), 16);
    assert!(!digest.contains(host.trim()), "a digest, not the name");
    assert_eq!(digest, ldcost::record::hostname_digest(host.trim()));
    let cpu = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    assert!(cpu.contains(m["cpu_model"].as_str().unwrap()));
}

#[test]
fn bad_input_has_one_line_and_a_documented_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    std::fs::write(p("text.json"), "hello, not json\n").unwrap();
    std::fs::write(p("empty.json"), "").unwrap();
    std::fs::create_dir(p("adir")).unwrap();
    let missing = p("missing.json");
    let s = |x: &Path| x.to_str().unwrap().to_string();
    // BASE is read first: a bad BASE is reported whatever HEAD is.
    let cases: Vec<(String, i32, &str)> = vec![
        (s(&missing), 3, "does not exist"),
        (s(&p("adir")), 3, "is a directory"),
        (s(&p("text.json")), 10, "not JSON"),
        (s(&p("empty.json")), 10, "truncated"),
    ];
    for (base, code, what) in &cases {
        let o = ldcost(&["diff", base, &s(&missing)]);
        assert_eq!(o.code, *code, "{base}: {}", o.stderr);
        one_error_line(&o, base);
        assert!(o.stderr.contains(what), "{base}: {}", o.stderr);
    }
    let Some(doc) = doc_or_skip("bad_input_has_one_line_and_a_documented_exit_code") else {
        return;
    };
    let d = s(doc);
    // HEAD missing, HEAD a directory.
    let o = ldcost(&["diff", &d, &s(&missing)]);
    assert_eq!(o.code, 3);
    one_error_line(&o, &s(&missing));
    let o = ldcost(&["diff", &d, &s(&p("adir"))]);
    assert_eq!(o.code, 3);
    one_error_line(&o, "adir");
    // Truncated in the middle.
    let text = std::fs::read_to_string(doc).unwrap();
    std::fs::write(p("cut.json"), &text[..text.len() / 2]).unwrap();
    let o = ldcost(&["diff", &d, &s(&p("cut.json"))]);
    assert_eq!(o.code, 10, "{}", o.stderr);
    one_error_line(&o, "cut.json");
    assert!(o.stderr.contains("truncated"), "{}", o.stderr);
    // Another schema version.
    let (_d1, v999) = edited("schema", |v| v["schema_version"] = 999.into()).unwrap();
    let o = ldcost(&["diff", &s(&v999), &d]);
    assert_eq!(o.code, 11, "{}", o.stderr);
    one_error_line(&o, "schema version 999");
    // A `deps` document has nothing measured.
    let deps = p("deps.json");
    let o = ldcost(&["deps", "/bin/true", "--json", &s(&deps)]);
    assert_eq!(o.code, 0);
    let o = ldcost(&["diff", &d, &s(&deps)]);
    assert_eq!(o.code, 10, "{}", o.stderr);
    one_error_line(&o, "deps.json");
    // Valid JSON, not an ldcost document.
    std::fs::write(p("other.json"), "{\"a\": 1}").unwrap();
    let o = ldcost(&["diff", &d, &s(&p("other.json"))]);
    assert_eq!(o.code, 10, "{}", o.stderr);
    one_error_line(&o, "other.json");
}

#[test]
fn help_documents_the_new_exit_codes() {
    for cmd in ["diff", "compare"] {
        let o = ldcost(&[cmd, "--help"]);
        assert_eq!(o.code, 0);
        for code in ["10 ", "11 ", "12 "] {
            assert!(
                o.stdout.contains(&format!("  {code}")),
                "{cmd} --help: exit code {code}undocumented"
            );
        }
        assert!(o.stdout.contains("--fail-above"), "{cmd} --help");
    }
}

// ---------------------------------------------------------------------------------------------
// The differential flame graph (src/report/flamegraph/diff.rs) on a fixture pair: BASE sampled
// over 10 execs, HEAD over 20; HEAD has a library BASE lacks (`libextra.so`'s initializer), and
// `do_lookup_x` costs the same per exec on both sides (20 samples / 10 execs, 40 / 20).

use ldcost::attribute::categories::Category;
use ldcost::attribute::FoldedStack;
use ldcost::report::flamegraph::diff::{folded_diff, write_diff_svg, Units, Widths};
use ldcost::report::flamegraph::FlameOptions;

fn st(category: Category, frames: &[&str], count: u64) -> FoldedStack {
    FoldedStack {
        category,
        section: "exec".into(),
        frames: frames.iter().map(|f| f.to_string()).collect(),
        count,
    }
}

const LOOKUP: &[&str] = &["_dl_start", "_dl_relocate_object", "do_lookup_x"];
const EXTRA: &[&str] = &["_dl_init", "call_init", "extra_init"];
const KERNEL: &[&str] = &["do_syscall_64", "__x64_sys_execve", "load_elf_binary"];

fn pair() -> (Vec<FoldedStack>, Units, Vec<FoldedStack>, Units) {
    let base = vec![
        st(Category::SymbolLookup, LOOKUP, 20),
        st(Category::ExecKernel, KERNEL, 30),
    ];
    let head = vec![
        st(Category::SymbolLookup, LOOKUP, 40),
        st(Category::ExecKernel, KERNEL, 90),
        st(Category::Initializers, EXTRA, 50),
    ];
    let u = |exec| Units { exec, fork: 0 };
    (base, u(10), head, u(20))
}

/// The folded-diff's columns, against the fixture's own counts: samples per 1000 execs.
#[test]
fn folded_diff_columns_are_the_fixture_counts_per_thousand_execs() {
    let (b, bu, h, hu) = pair();
    let text = folded_diff(&b, bu, &h, hu).unwrap();
    let rows: Vec<(String, u64, u64)> = text
        .lines()
        .map(|l| {
            let mut it = l.rsplitn(3, ' ');
            let head: u64 = it.next().unwrap().parse().unwrap();
            let base: u64 = it.next().unwrap().parse().unwrap();
            (it.next().unwrap().to_string(), base, head)
        })
        .collect();
    let row = |leaf: &str| rows.iter().find(|r| r.0.ends_with(leaf)).unwrap().clone();
    assert_eq!(rows.len(), 3, "{text}");
    // 20 / 10 execs and 40 / 20: 2000 per 1000 execs on both sides.
    assert_eq!(row("do_lookup_x").1, 20 * 1000 / 10);
    assert_eq!(row("do_lookup_x").2, 40 * 1000 / 20);
    assert_eq!(row("load_elf_binary").1, 30 * 1000 / 10);
    assert_eq!(row("load_elf_binary").2, 90 * 1000 / 20);
    assert_eq!(
        (row("extra_init").1, row("extra_init").2),
        (0, 50 * 1000 / 20)
    );
    // Rooted as --flamegraph: section, then the category's label.
    let label = Category::Initializers.label();
    assert_eq!(
        row("extra_init").0,
        format!("exec;{label};_dl_init;call_init;extra_init")
    );
}

/// inferno-flamegraph and FlameGraph's flamegraph.pl read the folded-diff as a differential
/// profile: extra_init's title carries a positive delta, do_lookup_x's none.
#[test]
fn flamegraph_tools_read_the_folded_diff() {
    let name = "flamegraph_tools_read_the_folded_diff";
    let tools: Vec<&str> = ["flamegraph.pl", "inferno-flamegraph"]
        .into_iter()
        .filter(|t| common::have(t))
        .collect();
    if tools.is_empty() {
        return skip(
            name,
            "neither flamegraph.pl nor inferno-flamegraph is installed",
        );
    }
    let (b, bu, h, hu) = pair();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.folded");
    std::fs::write(&path, folded_diff(&b, bu, &h, hu).unwrap()).unwrap();
    for tool in tools {
        let res = Command::new(tool).arg(&path).output().unwrap();
        let stderr = String::from_utf8_lossy(&res.stderr);
        assert!(res.status.success(), "{tool}: {stderr}");
        let svg = String::from_utf8_lossy(&res.stdout);
        let title = |leaf: &str| {
            let i = svg
                .find(&format!("<title>{leaf} ("))
                .unwrap_or_else(|| panic!("{tool}: no {leaf}"));
            svg[i..i + svg[i..].find("</title>").unwrap()].to_string()
        };
        // 2500 of HEAD's 9000 per 1000 execs (27.78%), all of it new.
        assert!(
            title("extra_init").contains("+27.78%"),
            "{tool}: {}",
            title("extra_init")
        );
        let lookup = title("do_lookup_x");
        assert!(
            lookup.contains("2,000") || lookup.contains("2000"),
            "{tool}: {lookup}"
        );
        assert!(
            !lookup.contains('+') && !lookup.contains("-"),
            "{tool}: {lookup}"
        );
    }
}

/// The differential graph renders in headless Chromium, search and zoom work
/// (scripts/check-flamegraph --diff), the frame only HEAD has is red and the frame that costs
/// the same per exec is neutral.
#[test]
fn chromium_renders_the_differential_graph_head_only_red() {
    let name = "chromium_renders_the_differential_graph_head_only_red";
    if !common::have("chromium") {
        return skip(name, "chromium is not installed (apt-get install chromium)");
    }
    let (b, bu, h, hu) = pair();
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("diff.svg");
    let opts = FlameOptions {
        title: "fixture".into(),
        subtitle: None,
    };
    let mut out = Vec::new();
    write_diff_svg(&b, bu, &h, hu, Widths::Head, &opts, &mut out).unwrap();
    std::fs::write(&svg, &out).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-flamegraph");
    let res = Command::new(&script)
        .arg(&svg)
        .args(["--term", "do_lookup_x", "--diff"])
        .args(["--red", "extra_init", "--neutral", "do_lookup_x"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&res.stdout);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(
        res.status.success(),
        "check-flamegraph failed:\n{stdout}\n{stderr}"
    );
    for line in [
        "search: \"do_lookup_x\" highlighted 1 of 1",
        "zoom:",
        "reset:",
        "colour: \"extra_init\" is red in all 1 frames",
        "colour: \"do_lookup_x\" is neutral in all 1 frames",
    ] {
        assert!(stdout.contains(line), "no `{line}` in:\n{stdout}");
    }
    // The script itself can fail: asked to call the neutral frame red, it must.
    let res = Command::new(&script)
        .arg(&svg)
        .args(["--diff", "--red", "do_lookup_x"])
        .output()
        .unwrap();
    assert_eq!(
        res.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&res.stdout)
    );
}

/// `diff --flamegraph-diff`: documents hold no sampled stacks; one line, exit 10, nothing
/// written.
#[test]
fn diff_flamegraph_diff_of_documents_is_refused() {
    let Some(doc) = doc_or_skip("diff_flamegraph_diff_of_documents_is_refused") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("d.svg");
    let d = doc.to_str().unwrap();
    for flag in ["--flamegraph-diff", "--folded-diff"] {
        let o = ldcost(&["diff", d, d, flag, svg.to_str().unwrap()]);
        assert_eq!(o.code, 10, "{}", o.stderr);
        one_error_line(&o, "holds no sampled stacks");
        assert!(!svg.exists());
    }
}
