//! `ldcost compare --sample`: the sampled exec runs of BASE and HEAD are interleaved, as the
//! measured rounds are (drift on a loaded machine falls on both sides alike).
//!
//! | case | oracle |
//! | --- | --- |
//! | two copies of a C program that appends its own name to a log at every start, `-n 2 --no-reference --sample --sample-runs 4` | the programs' own log: its last 8 lines (the sampled runs come last) are 4 of each side, in pairs of one BASE and one HEAD (B H, H B, …), so no side runs twice in a row across pairs; each side's breakdown has 4 units |
//!
//! Nothing timed is asserted: only the order of the runs. Needs ptrace and perf_event_open:
//! where ldcost is refused (exit 8) the test prints `SKIP` (a failure under
//! LDCOST_REQUIRE_ALL).

mod common;

use common::{cc, ldcost, skip, tools, write};

/// Appends argv[0]'s last path component and a newline to LOG (O_APPEND: one write each).
const MAIN: &str = r#"#include <fcntl.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    (void)argc;
    const char *name = strrchr(argv[0], '/');
    name = name ? name + 1 : argv[0];
    char line[64];
    size_t n = strlen(name);
    if (n > sizeof line - 1) n = sizeof line - 1;
    memcpy(line, name, n);
    line[n] = '\n';
    int fd = open(LOG, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd >= 0) { write(fd, line, n + 1); close(fd); }
    return 0;
}
"#;

#[test]
fn sampled_runs_alternate_between_base_and_head() {
    let name = "sampled_runs_alternate_between_base_and_head";
    if !tools(name, &["cc"]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let log = dir.join("order.log");
    write(dir, "main.c", MAIN);
    let define = format!("-DLOG=\"{}\"", log.display());
    cc(dir, &["-O2", &define, "-o", "base", "main.c"]);
    cc(dir, &["-O2", &define, "-o", "head", "main.c"]);
    let p = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let k = 4;
    let o = ldcost(&[
        "compare",
        &p("base"),
        &p("head"),
        "-n",
        "2",
        "--no-reference",
        "--sample",
        "--sample-runs",
        &k.to_string(),
        "--save-base",
        &p("b.json"),
        "--save-head",
        &p("h.json"),
        "--format",
        "json",
    ]);
    if o.code == 8 {
        return skip(name, "ldcost is refused ptrace or perf here (exit 8)");
    }
    assert_eq!(o.code, 0, "{}", o.stderr);
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.len() >= 2 * k,
        "{} starts logged: {text}",
        lines.len()
    );
    let tail = &lines[lines.len() - 2 * k..];
    for pair in tail.chunks(2) {
        let mut p = pair.to_vec();
        p.sort();
        assert_eq!(
            p,
            ["base", "head"],
            "sampled runs not interleaved (last {} starts: {tail:?})",
            2 * k
        );
    }
    // The sampled runs are those: each side's breakdown pooled k runs.
    for f in ["b.json", "h.json"] {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap();
        let b = &v["profile"]["breakdown"];
        assert_eq!(b["units"].as_u64(), Some(k as u64), "{f}: {b}");
    }
}
