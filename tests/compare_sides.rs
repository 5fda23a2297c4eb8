//! `ldcost compare` on a side that cannot be measured, and what it leaves behind.
//!
//! | case | oracle |
//! | --- | --- |
//! | a bad BASE or HEAD (missing, empty, text, truncated, aarch64, 32-bit, a library missing) | `ldcost profile` on the same file: the same exit code, the same message and hint, prefixed with the side (`HEAD: `); nothing runs |
//! | HEAD stops in ld.so (an undefined symbol under `-z now`: status 127) | run alone it exits 127; compare: exit 9 naming HEAD and the status, no verdict |
//! | HEAD killed by a signal in a library's initializer | run alone it dies by SIGSEGV; compare: exit 9 naming HEAD and the signal |
//! | HEAD killed by SIGSEGV in main | run alone it dies by SIGSEGV; compare: exit 0, a warning on stderr and in the comparison's notes |
//! | a double-forking target (each run leaves a daemon) | no process of the fixture left after compare, nor after a SIGINT mid-run (exit 130) |
//!
//! The runs need ptrace and perf_event_open: where ldcost is refused (exit 8) those tests
//! print `SKIP` (a failure under LDCOST_REQUIRE_ALL). The pre-checks need nothing.

mod common;

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{assert_no_leftovers, cc, processes, skip, tools, write};

/// One compare at a time: the leftover checks count every child of the test process, so a
/// compare still running for another test would read as left behind.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");
/// The hang guard of each ldcost run.
const GUARD: Duration = Duration::from_secs(180);
/// The quickest compare: two rounds, no warm-up, no reference runs, targets' output dropped.
const QUICK: &[&str] = &[
    "--no-progress",
    "compare",
    "--runs",
    "2",
    "--warmup",
    "0",
    "--no-reference",
    "--quiet-target",
];

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Out {
    let o = Command::new(BIN)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .stdin(Stdio::null())
        .output()
        .expect("run ldcost");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn executable(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write fixture");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    p
}

/// The bad targets `profile` refuses before running anything (`missing lib` only with cc).
fn bad_targets(dir: &Path, name: &str) -> Vec<PathBuf> {
    let elf = std::fs::read("/bin/true").expect("/bin/true");
    let mut arm = elf.clone();
    // e_machine at offset 18: EM_AARCH64 = 183.
    arm[18..20].copy_from_slice(&183u16.to_le_bytes());
    let mut elf32 = elf.clone();
    elf32[4] = 1; // EI_CLASS = ELFCLASS32
    let mut v = vec![
        executable(dir, "empty", b""),
        executable(dir, "text", b"just some words\n"),
        executable(dir, "trunc", &elf[..200.min(elf.len())]),
        executable(dir, "arm", &arm),
        executable(dir, "elf32", &elf32),
        dir.join("missing"),
    ];
    if tools(name, &["cc"]) {
        write(dir, "gone.c", "int gone(void) { return 0; }\n");
        write(
            dir,
            "needs.c",
            "int gone(void);\nint main(void) { return gone(); }\n",
        );
        cc(dir, &["-shared", "-fPIC", "-o", "libgone.so", "gone.c"]);
        let rpath = format!("-Wl,-rpath,{}", dir.display());
        cc(
            dir,
            &["-o", "needs-gone", "needs.c", "-L.", "-lgone", &rpath],
        );
        std::fs::remove_file(dir.join("libgone.so")).expect("rm libgone.so");
        v.push(dir.join("needs-gone"));
    }
    v
}

#[test]
fn a_bad_side_gets_profiles_code_and_message_naming_the_side() {
    let _g = serial();
    const NAME: &str = "a_bad_side_gets_profiles_code_and_message_naming_the_side";
    let tmp = tempfile::tempdir().expect("tempdir");
    for bad in bad_targets(tmp.path(), NAME) {
        let b = bad.to_str().expect("utf-8");
        let oracle = run(&["--no-progress", "profile", b]);
        let (what, hint) = oracle
            .stderr
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("ldcost: error: "))
            .map(|w| (w.to_string(), oracle.stderr.lines().nth(1)))
            .unwrap_or_else(|| panic!("profile {b}: no error line: {}", oracle.stderr));
        assert!(
            [1, 3, 4, 5, 6].contains(&oracle.code),
            "profile {b}: exit {}",
            oracle.code
        );
        for (side, args) in [("BASE", [b, "/bin/true"]), ("HEAD", ["/bin/true", b])] {
            let o = run(&[QUICK, &args].concat());
            assert_eq!(o.code, oracle.code, "compare {args:?}: {}", o.stderr);
            let lines: Vec<&str> = o.stderr.lines().collect();
            assert_eq!(
                lines.first().copied(),
                Some(format!("ldcost: error: {side}: {what}").as_str()),
                "compare {args:?}"
            );
            if hint.is_some_and(|h| h.contains("use --object-only")) {
                // A foreign program: compare has no --object-only; its hint says what fits.
                let h = lines.get(1).copied().unwrap_or_default();
                assert!(
                    h.starts_with("  hint: compare runs both programs")
                        && h.contains("ldcost deps --object-only"),
                    "compare {args:?}: {h}"
                );
            } else {
                assert_eq!(lines.get(1).copied(), hint, "compare {args:?}");
            }
            assert!(lines.len() <= 2, "compare {args:?}: {}", o.stderr);
            assert!(o.stdout.is_empty(), "a verdict was printed: {}", o.stdout);
        }
    }
}

/// Builds the fixtures of the run-time cases; None (skipped) without cc.
fn built(name: &str, dir: &Path) -> Option<()> {
    if !tools(name, &["cc"]) {
        return None;
    }
    // An undefined symbol under -z now: ld.so stops at relocation with status 127.
    write(dir, "f.c", "int f(void) { return 0; }\n");
    write(dir, "g.c", "int g(void) { return 0; }\n");
    write(dir, "m.c", "int f(void);\nint main(void) { return f(); }\n");
    cc(dir, &["-shared", "-fPIC", "-o", "libl.so", "f.c"]);
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    cc(
        dir,
        &[
            "-o",
            "unlinkable",
            "m.c",
            "-L.",
            "-ll",
            &rpath,
            "-Wl,-z,now",
        ],
    );
    cc(dir, &["-shared", "-fPIC", "-o", "libl.so", "g.c"]);
    // A library whose initializer crashes: killed inside ld.so, before the entry point.
    write(
        dir,
        "c.c",
        "#include <signal.h>\n__attribute__((constructor)) static void c(void) { raise(SIGSEGV); }\nint h(void) { return 0; }\n",
    );
    write(
        dir,
        "mc.c",
        "int h(void);\nint main(void) { return h(); }\n",
    );
    cc(dir, &["-shared", "-fPIC", "-o", "libcrash.so", "c.c"]);
    cc(dir, &["-o", "ctor-crash", "mc.c", "-L.", "-lcrash", &rpath]);
    // A program that crashes in main.
    write(
        dir,
        "s.c",
        "#include <signal.h>\nint main(void) { raise(SIGSEGV); return 0; }\n",
    );
    cc(dir, &["-o", "main-crash", "s.c"]);
    Some(())
}

/// Whether ldcost may trace and count here (else the test is skipped).
fn can_profile(name: &str) -> bool {
    let o = run(&["--no-progress", "profile", "--runs", "1", "/bin/true"]);
    if o.code == 8 {
        skip(
            name,
            "ldcost profile is refused here (exit 8: ptrace or perf)",
        );
        return false;
    }
    assert_eq!(o.code, 0, "profile /bin/true: {}", o.stderr);
    true
}

#[test]
fn a_side_that_never_reaches_its_entry_point_is_an_error() {
    let _g = serial();
    const NAME: &str = "a_side_that_never_reaches_its_entry_point_is_an_error";
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    if built(NAME, dir).is_none() || !can_profile(NAME) {
        return;
    }
    // The oracle: the programs run alone.
    let alone = |p: &str| {
        Command::new(dir.join(p))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run fixture")
    };
    assert_eq!(alone("unlinkable").code(), Some(127));
    assert_eq!(alone("ctor-crash").signal(), Some(11));
    for (p, says) in [
        ("unlinkable", "exited with status 127"),
        ("ctor-crash", "killed by signal 11"),
    ] {
        let path = dir.join(p);
        let t = path.to_str().expect("utf-8");
        let o = run(&[QUICK, &["/bin/true", t]].concat());
        assert_eq!(o.code, 9, "{p}: {}", o.stderr);
        let first = o.stderr.lines().next().unwrap_or("");
        assert!(first.starts_with("ldcost: error: HEAD: "), "{p}: {first}");
        assert!(first.contains(says) && first.contains(t), "{p}: {first}");
        assert!(
            first.contains("before reaching its entry point"),
            "{p}: {first}"
        );
        assert!(
            o.stdout.is_empty(),
            "{p}: a verdict was printed: {}",
            o.stdout
        );
    }
}

#[test]
fn a_side_killed_after_its_entry_point_is_a_warning_in_the_report() {
    let _g = serial();
    const NAME: &str = "a_side_killed_after_its_entry_point_is_a_warning_in_the_report";
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    if built(NAME, dir).is_none() || !can_profile(NAME) {
        return;
    }
    let crash = dir.join("main-crash");
    let alone = Command::new(&crash).status().expect("run fixture");
    assert_eq!(alone.signal(), Some(11));
    let json = dir.join("c.json");
    let args = [
        "/bin/true",
        crash.to_str().expect("utf-8"),
        "--json",
        json.to_str().expect("utf-8"),
    ];
    let o = run(&[QUICK, &args].concat());
    assert_eq!(o.code, 0, "{}", o.stderr);
    // Two measured rounds, no reference runs: both of HEAD's runs were killed.
    let warning = "HEAD: the target was killed by signal 11 (SIGSEGV) in 2 traced runs";
    assert!(
        o.stderr.contains(&format!("ldcost: warning: {warning}")),
        "{}",
        o.stderr
    );
    assert!(
        o.stdout.contains(warning),
        "not in the report: {}",
        o.stdout
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("read json")).expect("json");
    let notes: Vec<&str> = doc["verdict"]["notes"]
        .as_array()
        .expect("verdict.notes")
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        notes.iter().any(|n| n.contains(warning)),
        "not in the JSON: {notes:?}"
    );
}

/// A program whose every run leaves a daemon: it forks, the child forks again, starts a new
/// session and sleeps, the child and the program exit at once.
const DOUBLE_FORK: &str = r#"#include <unistd.h>
int main(void) {
    if (fork() == 0) {
        if (fork() == 0) { setsid(); sleep(300); _exit(0); }
        _exit(0);
    }
    return 0;
}
"#;

/// A child killed and reaped if the test ends early (a failed assertion must not leave the
/// ldcost it started running for the next test's leftover check).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The double-forking program as `exe` (each test its own name: the leftovers are found by it).
fn daemon_fixture(name: &str, dir: &Path, exe: &str) -> Option<PathBuf> {
    if !tools(name, &["cc"]) {
        return None;
    }
    write(dir, "dfork.c", DOUBLE_FORK);
    cc(dir, &["-o", exe, "dfork.c"]);
    Some(dir.join(exe))
}

/// Daemons of `fixture` alive now (by command name: a fork keeps its parent's).
fn daemons(fixture: &Path) -> usize {
    let comm = fixture.file_name().and_then(|n| n.to_str()).unwrap_or("");
    processes()
        .iter()
        .filter(|p| p.comm == comm && p.state != 'Z')
        .count()
}

#[test]
fn compare_of_a_double_forking_target_leaves_no_process() {
    let _g = serial();
    const NAME: &str = "compare_of_a_double_forking_target_leaves_no_process";
    let tmp = tempfile::tempdir().expect("tempdir");
    let Some(t) = daemon_fixture(NAME, tmp.path(), "dfork-done") else {
        return;
    };
    if !can_profile(NAME) {
        return;
    }
    let ts = t.to_str().expect("utf-8");
    let o = run(&[QUICK, &[ts, ts]].concat());
    assert_eq!(o.code, 0, "{}", o.stderr);
    // At least each side's two measured runs' daemons (each side's exec-chain discovery run
    // leaves one too, and a middle child may not have exited yet): killed, and counted under
    // the side that left them.
    for side in ["BASE", "HEAD"] {
        let killed: usize = o
            .stderr
            .lines()
            .find_map(|l| {
                l.strip_prefix("ldcost: warning: ")?
                    .strip_prefix(side)?
                    .strip_prefix(": ")?
                    .strip_suffix(" processes the target left running were killed")?
                    .parse()
                    .ok()
            })
            .unwrap_or_else(|| panic!("no count of {side}'s killed processes: {}", o.stderr));
        assert!(killed >= 2, "{side}: {}", o.stderr);
    }
    assert_eq!(
        o.stderr.matches("the target left running").count(),
        2,
        "one line per side, none unnamed: {}",
        o.stderr
    );
    assert_no_leftovers(&[t]);
}

#[test]
fn compare_interrupted_mid_run_leaves_no_process() {
    let _g = serial();
    const NAME: &str = "compare_interrupted_mid_run_leaves_no_process";
    let tmp = tempfile::tempdir().expect("tempdir");
    let Some(t) = daemon_fixture(NAME, tmp.path(), "dfork-int") else {
        return;
    };
    if !can_profile(NAME) {
        return;
    }
    let ts = t.to_str().expect("utf-8");
    let args: Vec<&str> = QUICK
        .iter()
        .map(|a| if *a == "2" { "1000" } else { a })
        .collect();
    let mut guard = KillOnDrop(
        Command::new(BIN)
            .args(args)
            .args([ts, ts])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ldcost"),
    );
    let child = &mut guard.0;
    // Mid-run: once a run's daemon is alive (it sleeps 300 s; compare kills each side's
    // leftovers after each run, so one is alive at a time, for part of a run).
    let t0 = Instant::now();
    while daemons(&t) < 1 {
        assert!(
            t0.elapsed() < GUARD,
            "no daemon seen: the runs never started"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT");
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if t0.elapsed() > GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ldcost still running after SIGINT (hang guard)");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    assert_no_leftovers(&[t]);
}

/// Counts its starts in COUNT (argv[1]); on start N (argv[3]) writes its pid to the FIFO
/// READY (argv[2]) and sleeps, to be killed; else exits 0.
const NTH_START: &str = r#"#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc != 4) return 2;
    int fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (fd < 0 || write(fd, "x", 1) != 1) return 2;
    close(fd);
    struct stat st;
    if (stat(argv[1], &st) != 0) return 2;
    if (st.st_size != atol(argv[3])) return 0;
    FILE *r = fopen(argv[2], "w");
    if (!r) return 2;
    fprintf(r, "%d\n", (int)getpid());
    fclose(r);
    sleep(300);
    return 0;
}
"#;

/// One HEAD run SIGKILLed from outside mid-run: left out of HEAD's statistics and counted
/// (stderr, the report's notes, the JSON's `head.left_out`), HEAD's start-up figures from one
/// run fewer than BASE's, exit 0.
#[test]
fn a_head_run_sigkilled_from_outside_is_left_out_and_counted() {
    let _g = serial();
    const NAME: &str = "a_head_run_sigkilled_from_outside_is_left_out_and_counted";
    if !tools(NAME, &["cc"]) || !can_profile(NAME) {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    write(dir, "nth.c", NTH_START);
    cc(dir, &["-o", "nth", "nth.c"]);
    let ready = dir.join("ready");
    nix::unistd::mkfifo(&ready, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let json = dir.join("c.json");
    let s = |p: &Path| p.to_str().expect("utf-8").to_string();
    // The exec-chain discovery run is HEAD's first start: start 3 is a measured run.
    let args: Vec<String> = [
        "--no-progress",
        "compare",
        "--runs",
        "4",
        "--warmup",
        "0",
        "--no-reference",
        "--quiet-target",
        "--timeout",
        "600",
        "--json",
    ]
    .iter()
    .map(|a| a.to_string())
    .chain([
        s(&json),
        "/bin/true".into(),
        s(&dir.join("nth")),
        "--".into(),
        s(&dir.join("count")),
        s(&ready),
        "3".into(),
    ])
    .collect();
    let child = Command::new(BIN)
        .args(&args)
        .env_remove("LD_LIBRARY_PATH")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ldcost");
    let pid: i32 = std::fs::read_to_string(&ready)
        .expect("the fixture's pid")
        .trim()
        .parse()
        .expect("a pid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("SIGKILL the HEAD run");
    let o = child.wait_with_output().expect("ldcost ends");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let warning = "HEAD: 1 of 4 measured runs killed by SIGKILL: left out";
    assert!(
        stderr.contains(&format!("ldcost: warning: {warning}")),
        "{stderr}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("read json")).expect("json");
    assert_eq!(
        doc["head"]["left_out"],
        serde_json::json!([{"instrumentation": "per-object", "why": "killed by SIGKILL", "count": 1, "of": 4}])
    );
    assert!(doc["base"].get("left_out").is_none(), "{}", doc["base"]);
    assert_eq!(
        (doc["base"]["runs"].as_u64(), doc["head"]["runs"].as_u64()),
        (Some(4), Some(3))
    );
    let cpu = doc["verdict"]["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .find(|m| m["key"] == "startup_cpu")
        .expect("start-up CPU");
    assert_eq!(
        (
            cpu["change"]["base_n"].as_u64(),
            cpu["change"]["head_n"].as_u64()
        ),
        (Some(4), Some(3)),
        "{cpu}"
    );
    let notes = doc["verdict"]["notes"].to_string();
    assert!(notes.contains(warning), "{notes}");
}
