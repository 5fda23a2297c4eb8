//! `ldcost profile` as an unprivileged user at `perf_event_paranoid` 2:
//! perf refuses to count the kernel's share, so CPU time comes from /proc/PID/task/PID/schedstat
//! and faults from /proc/PID/task/PID/stat, read at each ptrace stop.
//!
//! The test profiles a C fixture as `nobody` (setpriv; needs root to switch user, and cc) and
//! as root, and checks: the same phases, every CPU and fault figure present (never a zero
//! for a phase that ran: the fixture's main burns CPU), the sources named, the "not
//! available" line naming perf_event_paranoid and the fix; and main's faults against the
//! fixture's own count (getrusage before and after touching 300 fresh pages). The 20%
//! agreement of the phases' CPU sum with the privileged run is a CPU-time ratio that load
//! moves: it is a PASS/FAIL row of benches/profile_checks.rs, not an assertion here.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::{as_user_binary, cc, running_as_root, skip, tools, write};
use serde_json::Value;

/// Built with `cc -O0 -Wl,-z,now -o faults faults.c`. Touches PAGES fresh anonymous pages (under 2 MiB, so no huge page can serve them) between
/// two getrusage calls, burns some CPU, prints the difference and exits without stdio
/// teardown.
const FIXTURE: &str = r#"
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>
#include <stdlib.h>
static long faults(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_minflt + r.ru_majflt;
}
int main(int argc, char **argv) {
    long pages = argc > 1 ? atol(argv[1]) : 0;
    /* Everything used after the second count runs once before the first (with -z now, no
       lazy binding either), so its pages are already there. */
    char buf[64];
    int n = snprintf(buf, sizeof buf, "faults %ld\n", 0L);
    write(1, buf, 0);
    long before = faults();
    char *p = mmap(0, 4096L * 300, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || pages > 300) return 2;
    for (long i = 0; i < pages; i++) p[i * 4096] = 1;
    volatile unsigned long x = 0;
    for (unsigned long i = 0; i < 3000000; i++) x += i;
    long after = faults();
    n = snprintf(buf, sizeof buf, "faults %ld\n", after - before);
    write(1, buf, n);
    _exit(0);
}
"#;

const PARANOID: &str = "/proc/sys/kernel/perf_event_paranoid";

/// Runs `ldcost profile` on `fixture` (as nobody when `unprivileged`); returns stdout, the
/// JSON document and the exit code.
fn profile(
    dir: &Path,
    ldcost: &Path,
    fixture: &Path,
    pages: &str,
    unprivileged: bool,
) -> (String, Value) {
    let json = dir.join(format!("{unprivileged}-{pages}.json"));
    let mut cmd = if unprivileged {
        let mut c = Command::new("setpriv");
        c.args(["--reuid", "nobody", "--regid", "nogroup", "--clear-groups"])
            .arg(ldcost);
        c
    } else {
        Command::new(ldcost)
    };
    cmd.current_dir(dir)
        .args(["profile", "-n", "3", "--no-ld-debug", "--json"])
        .arg(&json)
        .arg(fixture)
        .arg(pages);
    let out = cmd.output().expect("run ldcost");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "ldcost profile (unprivileged: {unprivileged}) failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("JSON written")).unwrap();
    (stdout, doc)
}

fn phases(doc: &Value) -> Vec<(String, Option<String>)> {
    doc["profile"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["phase"].as_str().unwrap().to_string(),
                p["object"].as_str().map(String::from),
            )
        })
        .collect()
}

fn median(v: &Value) -> Option<f64> {
    v.get("median").and_then(Value::as_f64)
}

#[test]
fn nobody_profiles_from_proc_at_paranoid_2() {
    const NAME: &str = "nobody_profiles_from_proc_at_paranoid_2";
    if !running_as_root() {
        return skip(NAME, "needs root to run ldcost as `nobody` (setpriv)");
    }
    if !tools(NAME, &["cc", "setpriv"]) {
        return;
    }
    let level = std::fs::read_to_string(PARANOID).ok();
    if level.as_deref().map(str::trim) != Some("2") {
        return skip(
            NAME,
            &format!(
                "{PARANOID} is {:?}, not 2; the test does not change the sysctl",
                level.map(|l| l.trim().to_string())
            ),
        );
    }
    // A directory nobody can enter wherever the clone is, with ldcost in it, and one inside
    // it nobody may write to, with the fixture (built under any umask: made readable).
    let user = match as_user_binary() {
        Ok(u) => u,
        Err(e) => return skip(NAME, &e),
    };
    let work = user.writable("work");
    let dir = work.as_path();
    write(dir, "faults.c", FIXTURE);
    cc(dir, &["-O0", "-Wl,-z,now", "-o", "faults", "faults.c"]);
    let fixture = dir.join("faults");
    std::fs::set_permissions(&fixture, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ldcost = user.bin.clone();

    let (text, doc) = profile(dir, &ldcost, &fixture, "300", true);
    let (_, root_doc) = profile(dir, &ldcost, &fixture, "300", false);
    let p = &doc["profile"];

    // The sources, and what is missing with the setting that gives it.
    let counting = &p["counting"];
    assert_eq!(
        counting["sources"]["task-clock"], "proc-schedstat",
        "{counting}"
    );
    assert_eq!(
        counting["sources"]["page-faults"], "proc-stat",
        "{counting}"
    );
    assert_eq!(
        counting["sources"]["page-faults:u"], "perf-user-mode",
        "{counting}"
    );
    assert!(
        counting["sources"].get("page-faults:k").is_none(),
        "{counting}"
    );
    assert_eq!(counting["fallback"]["paranoid"], 2, "{counting}");
    assert!(root_doc["profile"]["counting"]["fallback"].is_null());
    let missing = text
        .lines()
        .find(|l| l.starts_with("not available unprivileged:"))
        .unwrap_or_else(|| panic!("no 'not available' line:\n{text}"));
    assert!(
        missing.contains("perf_event_paranoid is 2")
            && missing.contains("sysctl kernel.perf_event_paranoid=1")
            && missing.contains("CAP_PERFMON"),
        "{missing}"
    );
    assert!(text.contains("counting: unprivileged"), "{text}");
    assert!(text.contains("schedstat"), "{text}");

    // The same phases as the privileged run, each with its CPU time and faults.
    assert_eq!(phases(&doc), phases(&root_doc));
    for ph in p["phases"].as_array().unwrap() {
        assert!(
            median(&ph["task_clock_raw_ns"]).is_some_and(|v| v > 0.0),
            "a phase that ran has a CPU figure from schedstat: {ph}"
        );
        assert!(median(&ph["page_faults"]).is_some(), "{ph}");
    }
    // No reference without ptrace: not available, not zero.
    assert!(
        p["overhead"]["uninstrumented_ns"].is_null(),
        "{}",
        p["overhead"]
    );

    // Main's faults against the program's own count (see FIXTURE), within a page or two.
    let (text0, doc0) = profile(dir, &ldcost, &fixture, "0", true);
    let own = |text: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix("faults "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("the fixture's own count is not in the output:\n{text}"))
    };
    let main = |doc: &Value| -> Value {
        doc["profile"]["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|ph| ph["phase"] == "main-to-exit")
            .expect("a main-to-exit phase")
            .clone()
    };
    let (own300, own0) = (own(&text), own(&text0));
    assert!(own300 >= 300.0, "the fixture touched 300 pages: {own300}");
    let faults300 = median(&main(&doc)["page_faults"]).unwrap();
    let faults0 = median(&main(&doc0)["page_faults"]).unwrap();
    assert!(
        ((faults300 - faults0) - (own300 - own0)).abs() <= 2.0,
        "main to exit: ldcost {faults300} - {faults0} faults, the program counted \
         {own300} - {own0}"
    );
    let cpu = median(&main(&doc)["task_clock_raw_ns"]).unwrap();
    let root_cpu = median(&main(&root_doc)["task_clock_raw_ns"]);
    // For the record only (a CPU ratio: benches/profile_checks.rs judges it).
    eprintln!("main to exit: {cpu:.0} ns unprivileged, {root_cpu:?} ns privileged");
}

/// As `nobody` at paranoid 2 (counting falls back to /proc), a `ulimit -n` too low to open
/// /proc is that limit's refusal (exit 8, the `ulimit -n` hint), never perf's EACCES with the
/// paranoid level's hint: the refusal the fallback works around is not the cause.
#[test]
fn nobody_out_of_descriptors_is_told_to_raise_ulimit_n() {
    use std::os::unix::process::CommandExt;
    const NAME: &str = "nobody_out_of_descriptors_is_told_to_raise_ulimit_n";
    if !running_as_root() {
        return skip(NAME, "needs root to run ldcost as `nobody` (setpriv)");
    }
    if !tools(NAME, &["setpriv"]) {
        return;
    }
    let level = std::fs::read_to_string(PARANOID).ok();
    if level.as_deref().map(str::trim) != Some("2") {
        return skip(
            NAME,
            &format!(
                "{PARANOID} is {:?}, not 2; the test does not change the sysctl",
                level.map(|l| l.trim().to_string())
            ),
        );
    }
    let user = match as_user_binary() {
        Ok(u) => u,
        Err(e) => return skip(NAME, &e),
    };
    let (mut refused, mut ran) = (0, 0);
    for n in 4..=16u64 {
        let mut cmd = user.command();
        cmd.args(["--no-progress", "profile", "-n", "1", "/bin/true"]);
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: n,
                    rlim_max: n,
                };
                libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
                Ok(())
            });
        }
        let out = cmd.output().expect("setpriv");
        let err = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(8) => {
                let lines: Vec<&str> = err.lines().collect();
                assert_eq!(lines.len(), 2, "ulimit -n {n}: {err}");
                assert!(
                    lines[0].starts_with("ldcost: error: "),
                    "ulimit -n {n}: {err}"
                );
                assert!(!lines[0].contains("EACCES"), "ulimit -n {n}: {err}");
                assert!(
                    lines[1].contains("raise `ulimit -n`"),
                    "ulimit -n {n}: {err}"
                );
                refused += 1;
            }
            Some(0) => ran += 1,
            code => panic!("ulimit -n {n}: exit {code:?}: {err}"),
        }
    }
    assert!(refused > 0 && ran > 0, "refused {refused}, ran {ran}");
}
