//! The binary end to end: `ldcost deps` text and JSON on real targets, read back with
//! deny_unknown_fields, and the numbers checked against ldd and LD_DEBUG-independent sums.

mod common;

use std::process::Command;

use common::*;
use ldcost::report::{Document, SCHEMA_VERSION};

fn ldcost(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ldcost"))
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_BIND_NOW")
        .output()
        .unwrap()
}

#[test]
fn json_to_stdout_reads_back_and_adds_up() {
    let out = ldcost(&["deps", "--json", "-", "/bin/ls"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Document =
        serde_json::from_slice(&out.stdout).expect("stdout is only the JSON document");
    assert_eq!(doc.schema_version, SCHEMA_VERSION);
    assert_eq!(doc.command, "deps");
    let deps = doc.deps.unwrap();
    let objs = &deps.closure.objects;
    assert_eq!(deps.totals.objects, objs.len() as u64);
    assert_eq!(
        deps.totals.startup_lookups,
        objs.iter()
            .map(|o| o.info.relocations.startup_lookups)
            .sum::<u64>()
    );
    assert_eq!(
        deps.totals.relocations_total,
        objs.iter().map(|o| o.info.relocations.total).sum::<u64>()
    );
    // The same closure ldd reports.
    if tools("json_ldd", &["ldd"]) {
        let ldd = ldd(std::path::Path::new("/bin/ls"), &[]).unwrap();
        let theirs: Vec<String> = ldd.iter().filter_map(|l| l.path.clone()).collect();
        let ours: Vec<String> = objs[1..]
            .iter()
            .filter(|o| o.in_scope)
            .map(|o| o.path.clone())
            .collect();
        assert_eq!(ours, theirs);
    }
    // readelf agrees on every object's relocation types.
    if tools("json_readelf", &["readelf"]) {
        for o in objs {
            assert_eq!(
                o.info.relocations.by_type,
                readelf_reloc_counts(std::path::Path::new(&o.path)),
                "{}",
                o.path
            );
        }
    }
}

#[test]
fn text_report_tree_and_flat() {
    let tree = ldcost(&["deps", "/bin/ls"]);
    assert_eq!(tree.status.code(), Some(0));
    let t = String::from_utf8_lossy(&tree.stdout);
    // Each DT_NEEDED entry of /bin/ls (readelf) is a direct child of the root, with the path
    // ldd resolves it to.
    if tools("text_report_tree", &["ldd", "readelf"]) {
        let ls = std::path::Path::new("/bin/ls");
        let resolved = ldd(ls, &[]).expect("ldd lists /bin/ls");
        let needed = readelf_needed(ls);
        assert!(
            !needed.is_empty(),
            "readelf -dW /bin/ls lists NEEDED entries"
        );
        for name in needed {
            let path = resolved
                .iter()
                .find(|l| l.name == name)
                .and_then(|l| l.path.clone())
                .unwrap_or_else(|| panic!("ldd resolves {name}: {resolved:?}"));
            let child = format!("── {name} => {path} ");
            assert!(
                t.lines()
                    .any(|l| (l.starts_with("├") || l.starts_with("└")) && l.contains(&child)),
                "/bin/ls's DT_NEEDED {name} is a direct child `{child}` of the root:\n{t}"
            );
        }
    }
    assert!(t.contains("Relocation types over the closure"));
    assert!(t.contains("R_X86_64_JUMP_SLOT"));
    assert!(t.contains("of start-up symbol lookups come from"));
    let flat = ldcost(&["deps", "--flat", "/bin/ls"]);
    let f = String::from_utf8_lossy(&flat.stdout);
    assert!(f.contains("Load order (the global symbol lookup scope)"));
    assert!(!f.contains("Dependency tree"));
    // Both views carry the same tables.
    let tail = |s: &str| s[s.find("Objects (in load order)").unwrap()..].to_string();
    assert_eq!(tail(&t), tail(&f));
}

#[test]
fn json_file_and_text_together() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("r.json");
    let out = ldcost(&["deps", "--json", p.to_str().unwrap(), "/bin/true"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("ldcost deps /bin/true"));
    let doc: Document = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    assert_eq!(doc.target, "/bin/true");
}

#[test]
fn help_documents_exit_codes() {
    let out = ldcost(&["deps", "--help"]);
    let h = String::from_utf8_lossy(&out.stdout);
    for code in ["0 ", "1 ", "2 ", "3 ", "4 ", "5 ", "6 ", "7 ", "70 "] {
        assert!(
            h.contains(&format!("  {code}")),
            "exit code {code} undocumented"
        );
    }
}

/// Colour on a terminal (a pty from util-linux `script`), none when piped or with NO_COLOR.
#[test]
fn colour_only_on_a_terminal() {
    if !tools("colour_only_on_a_terminal", &["script"]) {
        return;
    }
    let bin = env!("CARGO_BIN_EXE_ldcost");
    let on_tty = |no_color: bool| -> String {
        let mut c = Command::new("script");
        c.args(["-qc", &format!("{bin} deps /bin/true"), "/dev/null"])
            .env("TERM", "xterm")
            .env_remove("NO_COLOR");
        if no_color {
            c.env("NO_COLOR", "1");
        }
        String::from_utf8_lossy(&c.output().unwrap().stdout).into_owned()
    };
    let tty = on_tty(false);
    assert!(tty.contains("\x1b[1mDependency tree"), "{tty:?}");
    assert!(!on_tty(true).contains('\x1b'));
    let piped = ldcost(&["deps", "/bin/true"]);
    assert!(!String::from_utf8_lossy(&piped.stdout).contains('\x1b'));
}

/// With `--no-ld-debug` there is no glibc figure to show, so the report shows no
/// "glibc n/a" cross-check and no empty glibc column; `deps`' prediction is still printed,
/// under a title saying it is not cross-checked, with the document's own figures.
#[test]
fn no_ld_debug_leaves_out_the_glibc_cross_check() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("ls.json");
    let out = ldcost(&[
        "profile",
        "/bin/ls",
        "-n",
        "1",
        "--no-ld-debug",
        "--quiet-target",
        "--json",
        json.to_str().unwrap(),
    ]);
    if out.status.code() == Some(8) {
        skip(
            "no_ld_debug_leaves_out_the_glibc_cross_check",
            "ldcost profile is refused here (exit 8: ptrace or perf)",
        );
        return;
    }
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for absent in [
        "Cross-check",
        "glibc n/a",
        "bindings (glibc)",
        "n/a from cache",
    ] {
        assert!(
            !text.contains(absent),
            "{absent:?} under --no-ld-debug:\n{text}"
        );
    }
    let doc: Document = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let p = doc.profile.expect("a profile section");
    assert!(p.ld_debug.is_none(), "no LD_DEBUG run");
    let pr = p.prediction.expect("deps' prediction of /bin/ls");
    let expected = [
        "Predicted by ldcost deps (glibc's LD_DEBUG=statistics not gathered: no cross-check)"
            .to_string(),
        format!(
            "  symbol lookups at start-up: {} (+{} from cache)",
            pr.lookups, pr.cache_hits
        ),
        format!(
            "  relative relocations: {} (DT_RELACOUNT {})",
            pr.relative_total, pr.relacount
        ),
        format!("  PLT slots left to lazy binding: {}", pr.lazy_deferred),
    ];
    for line in expected {
        assert!(text.contains(&line), "{line:?} in:\n{text}");
    }
    assert!(
        text.contains("lookups (deps)"),
        "the per-object table stays:\n{text}"
    );
}

/// A timeout while the target has not reached `--at` is not a fork loop that ran
/// too long: the message says --at was not reached, and the hint does not say "lower --fork".
#[test]
fn a_timeout_before_the_injection_point_names_at() {
    let out = ldcost(&[
        "profile",
        "--fork=10",
        "--at",
        "exit",
        "--timeout",
        "0.5",
        "--no-exec",
        "/bin/sleep",
        "--",
        "5",
    ]);
    if out.status.code() == Some(8) {
        skip(
            "a_timeout_before_the_injection_point_names_at",
            "ldcost profile is refused here (exit 8: ptrace)",
        );
        return;
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "one error line and a hint: {err}");
    assert!(
        lines[0].starts_with("ldcost: error: ") && lines[0].contains("before reaching --at exit"),
        "{err}"
    );
    assert!(
        lines[1].starts_with("  hint: ") && lines[1].contains("--timeout"),
        "{err}"
    );
    assert!(!err.contains("lower --fork"), "no fork ran: {err}");
    assert!(out.stdout.is_empty(), "nothing was measured");
}
