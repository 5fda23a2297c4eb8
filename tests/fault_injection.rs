//! Fault injection: the target killed from outside, ldcost itself SIGKILLed mid-sampling, a
//! full disk and a read-only directory for the reports, `ulimit -v` and `ulimit -n` too low.
//! Each ends as one line (plus a hint) with a documented exit code, and leaves nothing
//! behind: no process of the target's tree, no stopped tracee, no perf event fd, no partial
//! report, no temp file. Root only (mounts, ptrace, system-wide sampling): skipped visibly
//! otherwise.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::QUICK;

const BIN: &str = env!("CARGO_BIN_EXE_ldcost");
/// The hang guard of every ldcost run here.
const GUARD: Duration = Duration::from_secs(120);

fn root(name: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { nix::libc::geteuid() } != 0 {
        common::skip(name, "needs root (mounts, ptrace, system-wide sampling)");
        return false;
    }
    true
}

/// Waits for `child` at most [`GUARD`], killing it and failing after that.
fn wait_guarded(child: &mut Child, what: &str) -> i32 {
    let t0 = Instant::now();
    loop {
        match child.try_wait().expect("try_wait") {
            Some(st) => return st.code().unwrap_or(-1),
            None if t0.elapsed() > GUARD => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what}: still running after {GUARD:?} (hang guard)");
            }
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

/// Runs ldcost to its end under the hang guard: (code, stderr).
fn run(args: &[&str], limits: &str) -> (i32, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = dir.path().join("err");
    // bash: dash keeps copies of redirected fds at 10 and up, which `ulimit -n 10` forbids.
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(format!("{limits} exec \"$0\" \"$@\""))
        .arg(BIN)
        .args(args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).expect("err file"))
        .spawn()
        .expect("spawn ldcost");
    let code = wait_guarded(&mut child, &args.join(" "));
    (code, std::fs::read_to_string(err).unwrap_or_default())
}

/// The pids of live (not zombie) processes whose command line holds `marker`.
fn with_marker(marker: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(marker))
                .unwrap_or(false)
                && state(*pid).is_some_and(|s| s != 'Z')
        })
        .collect()
}

fn state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

fn perf_fds(pid: i32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter(|l| l.to_string_lossy().contains("perf_event"))
                .count()
        })
        .unwrap_or(0)
}

fn kill_all(pids: &[i32]) {
    for &p in pids {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(p),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Waits (bounded) until no live process holds `marker`; returns those still alive.
fn settle(marker: &str) -> Vec<i32> {
    let t0 = Instant::now();
    loop {
        let left = with_marker(marker);
        if left.is_empty() || t0.elapsed() > Duration::from_secs(5) {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A FIFO the target writes its pid (and its child's) into: the test blocks on it instead of
/// sleeping.
fn fifo(dir: &Path) -> PathBuf {
    let p = dir.join("fifo");
    nix::unistd::mkfifo(&p, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    p
}

fn read_pids(fifo: &Path) -> Vec<i32> {
    let mut s = String::new();
    std::fs::File::open(fifo)
        .expect("open fifo")
        .read_to_string(&mut s)
        .expect("read fifo");
    s.split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn the_target_killed_from_outside_is_one_warning_and_nothing_is_left() {
    const NAME: &str = "the_target_killed_from_outside_is_one_warning_and_nothing_is_left";
    if !root(NAME) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let f = fifo(dir.path());
    let marker = format!("ldcost-fi-killed-{}", std::process::id());
    let script = format!("sleep 300 & echo $$ $! > {}; wait; : {marker}", f.display());
    let err = dir.path().join("err");
    // --no-follow: the target runs once (no exec-chain discovery run before the measured one).
    let mut child = Command::new(BIN)
        .args(QUICK)
        .arg("--no-follow")
        .args(["/bin/sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).expect("err file"))
        .spawn()
        .expect("spawn");
    let pids = read_pids(&f);
    assert_eq!(pids.len(), 2, "{pids:?}");
    kill_all(&pids[..1]);
    let code = wait_guarded(&mut child, NAME);
    let err = std::fs::read_to_string(err).unwrap_or_default();
    // Documented: a target that dies of a signal is reported, not an ldcost failure.
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("killed by signal 9"))
        .collect();
    assert_eq!(lines.len(), 1, "{err}");
    // The orphaned `sleep 300` was ldcost's to kill (it is the tree's subreaper).
    assert!(
        err.contains("1 process the target left running was killed"),
        "{err}"
    );
    for p in &pids {
        assert!(state(*p).is_none_or(|s| s == 'Z'), "pid {p} is still alive");
    }
}

#[test]
fn ldcost_sigkilled_mid_sampling_leaves_no_tracee_and_no_perf_fd() {
    const NAME: &str = "ldcost_sigkilled_mid_sampling_leaves_no_tracee_and_no_perf_fd";
    if !root(NAME) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let f = fifo(dir.path());
    let marker = format!("ldcost-fi-sigkill-{}", std::process::id());
    let script = format!("sleep 300 & echo $$ $! > {}; wait; : {marker}", f.display());
    let mut args: Vec<&str> = QUICK.to_vec();
    // --no-follow: the run that discovers an exec chain would be one more run of the script.
    args.extend([
        "--no-follow",
        "--sample",
        "--sample-runs",
        "3",
        "/bin/sh",
        "-c",
        &script,
    ]);
    // ldcost's own TMPDIR: whatever it leaves there is seen.
    let tmpdir = dir.path().join("tmp");
    std::fs::create_dir(&tmpdir).expect("mkdir");
    let mut child = Command::new(BIN)
        .args(&args)
        .env("TMPDIR", &tmpdir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let me = child.id() as i32;
    // The measured run: end it from outside, then the first sampled run starts.
    let measured = read_pids(&f);
    kill_all(&measured[..1]);
    let sampled = read_pids(&f);
    assert_eq!(sampled.len(), 2, "{sampled:?}");
    let sampling = std::fs::read_dir(format!("/proc/{me}/task"))
        .map(|d| {
            d.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
                .any(|c| c.trim() == "ldcost-sampler")
        })
        .unwrap_or(false);
    let fds = perf_fds(me);
    child.kill().expect("SIGKILL ldcost");
    child.wait().expect("reap ldcost");
    if !sampling || fds == 0 {
        kill_all(&with_marker(&marker));
        common::skip(NAME, "the sampler did not run (perf refused?)");
        return;
    }
    // The target was a tracee (PTRACE_O_EXITKILL, PR_SET_PDEATHSIG): it dies with ldcost.
    let t0 = Instant::now();
    while state(sampled[0]).is_some_and(|s| s != 'Z') && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        state(sampled[0]).is_none_or(|s| s == 'Z'),
        "the sampled target {} survived ldcost",
        sampled[0]
    );
    // What may survive, as far as the kernel allows: the target's own untraced child
    // (`sleep 300`, not ptraced, so no EXITKILL; PDEATHSIG covers only the direct child). It
    // must not be stopped and must hold no perf event.
    let left: Vec<i32> = [measured[1], sampled[1]]
        .into_iter()
        .filter(|p| state(*p).is_some_and(|s| s != 'Z'))
        .collect();
    for &p in &left {
        let s = state(p).unwrap_or('?');
        assert!(s != 'T' && s != 't', "pid {p} is left stopped ({s})");
        assert_eq!(perf_fds(p), 0, "pid {p} holds perf events");
    }
    eprintln!("NOTE {NAME}: survivors after SIGKILL of ldcost (untraced grandchildren): {left:?}");
    kill_all(&left);
    assert!(files_in(&tmpdir).is_empty(), "{:?}", files_in(&tmpdir));
    assert!(settle(&marker).is_empty());
}

#[test]
fn a_full_disk_is_exit_7_and_no_partial_report() {
    const NAME: &str = "a_full_disk_is_exit_7_and_no_partial_report";
    if !root(NAME) {
        return;
    }
    let Some(fs) = common::Tmpfs::mount("size=64k") else {
        common::skip(NAME, "mount -t tmpfs failed");
        return;
    };
    // Leave a few KiB: less than any report.
    std::fs::write(fs.path().join("fill"), vec![0u8; 60 * 1024]).expect("fill");
    let json = fs.path().join("r.json");
    let svg = fs.path().join("r.svg");
    for (flag, out, extra) in [
        ("--json", &json, &[][..]),
        ("--flamegraph", &svg, &["--sample-runs", "2"][..]),
    ] {
        let mut args: Vec<&str> = QUICK.to_vec();
        args.extend(extra);
        args.extend([flag, out.to_str().expect("utf-8"), "/bin/true"]);
        let (code, err) = run(&args, "");
        assert_eq!(code, 7, "{flag}: {err}");
        assert_eq!(err.lines().count(), 2, "{err}");
        assert!(err.contains("No space left on device"), "{err}");
        assert_eq!(files_in(fs.path()), vec!["fill".to_string()], "{flag}");
    }
}

/// Every option that writes a file, as (name, arguments with `OUT` where the file goes):
/// the fewest runs each allows. `BASE`/`HEAD` are saved profile documents.
const OUTPUTS: &[(&str, &[&str])] = &[
    ("deps --json", &["deps", "--json", "OUT", "/bin/true"]),
    ("profile --json", &["--json", "OUT", "/bin/true"]),
    (
        "profile --folded",
        &["--sample-runs", "2", "--folded", "OUT", "/bin/true"],
    ),
    (
        "profile --flamegraph",
        &["--sample-runs", "2", "--flamegraph", "OUT", "/bin/true"],
    ),
    ("diff --json", &["diff", "--json", "OUT", "BASE", "HEAD"]),
    (
        "compare --json",
        &["COMPARE", "--json", "OUT", "/bin/true", "/bin/true"],
    ),
    (
        "compare --save-base",
        &["COMPARE", "--save-base", "OUT", "/bin/true", "/bin/true"],
    ),
    (
        "compare --save-head",
        &["COMPARE", "--save-head", "OUT", "/bin/true", "/bin/true"],
    ),
    (
        "compare --flamegraph-diff",
        &[
            "COMPARE",
            "--sample-runs",
            "2",
            "--flamegraph-diff",
            "OUT",
            "/bin/true",
            "/bin/true",
        ],
    ),
    (
        "compare --folded-diff",
        &[
            "COMPARE",
            "--sample-runs",
            "2",
            "--folded-diff",
            "OUT",
            "/bin/true",
            "/bin/true",
        ],
    ),
];

/// The command line of one [`OUTPUTS`] case writing to `out`.
fn output_case(args: &[&str], out: &Path, docs: &(PathBuf, PathBuf)) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    if args[0] != "deps" && args[0] != "diff" && args[0] != "COMPARE" {
        v.extend(QUICK.iter().map(|s| s.to_string()));
    }
    for a in args {
        match *a {
            "OUT" => v.push(out.display().to_string()),
            "BASE" => v.push(docs.0.display().to_string()),
            "HEAD" => v.push(docs.1.display().to_string()),
            "COMPARE" => v.extend(
                [
                    "compare",
                    "-n",
                    "2",
                    "--warmup",
                    "0",
                    "--no-reference",
                    "--quiet-target",
                ]
                .map(String::from),
            ),
            a => v.push(a.into()),
        }
    }
    v
}

/// Two saved profile documents of /bin/true, for `diff`.
fn saved_docs(dir: &Path) -> (PathBuf, PathBuf) {
    let docs = (dir.join("base.json"), dir.join("head.json"));
    for d in [&docs.0, &docs.1] {
        let mut args: Vec<&str> = QUICK.to_vec();
        args.extend(["--json", d.to_str().expect("utf-8"), "/bin/true"]);
        let (code, err) = run(&args, "");
        assert_eq!(code, 0, "{err}");
    }
    docs
}

/// Fills the file system at `dir` to the last byte.
fn fill(dir: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(dir.join("fill")).expect("fill");
    let block = vec![0u8; 4096];
    while f.write_all(&block).and_then(|_| f.sync_all()).is_ok() {}
}

#[test]
fn every_output_on_a_full_disk_keeps_the_old_file_and_exits_7() {
    const NAME: &str = "every_output_on_a_full_disk_keeps_the_old_file_and_exits_7";
    if !root(NAME) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = saved_docs(dir.path());
    let Some(fs) = common::Tmpfs::mount("size=256k") else {
        common::skip(NAME, "mount -t tmpfs failed");
        return;
    };
    let out = fs.path().join("out");
    let old = b"the user's old file\n";
    std::fs::write(&out, old).expect("old file");
    fill(fs.path());
    for (what, args) in OUTPUTS {
        let argv = output_case(args, &out, &docs);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let (code, err) = run(&argv, "");
        assert_eq!(code, 7, "{what}: {err}");
        let first = err.lines().next().unwrap_or("");
        assert!(
            first.starts_with("ldcost: error:")
                && first.contains(&out.display().to_string())
                && first.contains("No space left on device")
                && !first.contains("at path"),
            "{what}: {err}"
        );
        assert_eq!(
            err.lines().nth(1),
            Some("  hint: the file system is full; free space or write the report elsewhere"),
            "{what}: {err}"
        );
        assert_eq!(std::fs::read(&out).expect("old file"), old, "{what}");
        assert_eq!(files_in(fs.path()), vec!["fill", "out"], "{what}");
    }
}

#[test]
fn every_output_to_dev_full_is_exit_7() {
    const NAME: &str = "every_output_to_dev_full_is_exit_7";
    if !root(NAME) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = saved_docs(dir.path());
    for (what, args) in OUTPUTS {
        let argv = output_case(args, Path::new("/dev/full"), &docs);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let (code, err) = run(&argv, "");
        assert_eq!(code, 7, "{what}: {err}");
        let first = err.lines().next().unwrap_or("");
        assert!(
            first.starts_with("ldcost: error: cannot write /dev/full: No space left on device"),
            "{what}: {err}"
        );
    }
}

#[test]
fn a_read_only_directory_is_exit_7_and_no_file() {
    const NAME: &str = "a_read_only_directory_is_exit_7_and_no_file";
    if !root(NAME) {
        return;
    }
    let Some(fs) = common::Tmpfs::mount("ro,size=64k") else {
        common::skip(NAME, "mount -t tmpfs -o ro failed");
        return;
    };
    let json = fs.path().join("r.json");
    let mut args: Vec<&str> = QUICK.to_vec();
    args.extend(["--json", json.to_str().expect("utf-8"), "/bin/true"]);
    let (code, err) = run(&args, "");
    assert_eq!(code, 7, "{err}");
    assert!(
        err.lines()
            .next()
            .is_some_and(|l| l.contains("Read-only file system")),
        "{err}"
    );
    assert!(files_in(fs.path()).is_empty());
}

#[test]
fn a_low_ulimit_v_refuses_sampling_with_exit_8_and_a_hint() {
    const NAME: &str = "a_low_ulimit_v_refuses_sampling_with_exit_8_and_a_hint";
    if !root(NAME) {
        return;
    }
    let marker = format!("ldcost-fi-ulimit-v-{}", std::process::id());
    let mut args: Vec<&str> = QUICK.to_vec();
    args.extend(["--sample", "/bin/sh", "-c", ": ", &marker]);
    // 200 MiB of address space: ldcost runs, the default budget (256 MiB) does not fit.
    let (code, err) = run(&args, "ulimit -v 204800;");
    assert_eq!(code, 8, "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].contains("ulimit -v") && lines[1].contains("--sample-budget"),
        "{err}"
    );
    assert!(settle(&marker).is_empty(), "nothing was launched");
}

#[test]
fn a_low_ulimit_n_is_one_line_exit_8_and_nothing_left() {
    const NAME: &str = "a_low_ulimit_n_is_one_line_exit_8_and_nothing_left";
    if !root(NAME) {
        return;
    }
    let marker = format!("ldcost-fi-ulimit-n-{}", std::process::id());
    // --no-follow: the measured run, which opens the counters, is the first.
    let mut args: Vec<&str> = QUICK.to_vec();
    args.push("--no-follow");
    let script = format!("sleep 300; : {marker}");
    args.extend(["/bin/sh", "-c", &script]);
    let (code, err) = run(&args, "ulimit -n 10;");
    assert_eq!(code, 8, "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(lines[0].contains("Too many open files"), "{err}");
    assert!(lines[1].contains("ulimit -n"), "{err}");
    let left = settle(&marker);
    kill_all(&left);
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// The direct children of `pid` (from /proc/*/stat).
fn children(pid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    s[s.rfind(')')? + 1..]
                        .split_whitespace()
                        .nth(1)?
                        .parse::<i32>()
                        .ok()
                })
                == Some(pid)
        })
        .collect()
}

/// SIGINT to ldcost in one phase: exit 130, no process of the tree, no report, no temp dir.
fn interrupt_in(name: &str, extra: &[&str], phase: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = fifo(dir.path());
    let json = dir.path().join("r.json");
    let script = format!("sleep 300 & echo $$ $! > {}; wait", f.display());
    let mut args: Vec<&str> = QUICK.to_vec();
    args.extend(extra);
    args.extend(["--json", json.to_str().expect("utf-8")]);
    let fork = extra.contains(&"--fork");
    let target_args: Vec<String> = if fork {
        // The fork probe at sh's main: a loop of a million forks, never the script.
        vec!["/bin/sh".into(), "-c".into(), ":".into()]
    } else {
        vec!["/bin/sh".into(), "-c".into(), script]
    };
    let tmpdir = dir.path().join("tmp");
    std::fs::create_dir(&tmpdir).expect("mkdir");
    let mut child = Command::new(BIN)
        .args(&args)
        .args(&target_args)
        .env("TMPDIR", &tmpdir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let me = child.id() as i32;
    let mut tree = Vec::new();
    if fork {
        // Wait (bounded) until the target has forked: the loop is running.
        let t0 = Instant::now();
        loop {
            let kids = children(me);
            let grand: Vec<i32> = kids.iter().flat_map(|k| children(*k)).collect();
            if !grand.is_empty() {
                tree.extend(kids);
                break;
            }
            assert!(t0.elapsed() < GUARD, "{name}: the fork loop never started");
            std::thread::sleep(Duration::from_millis(5));
        }
    } else {
        let first = read_pids(&f);
        tree.extend(&first);
        if phase == "sampling" {
            // End the measured run from outside; the sampled run starts next.
            kill_all(&first[..1]);
            tree.extend(read_pids(&f));
        }
    }
    let t0 = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(me),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT");
    let code = wait_guarded(&mut child, name);
    let took = t0.elapsed();
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    eprintln!(
        "NOTE {name}: exit {code} {:.0} ms after SIGINT ({phase})",
        took.as_secs_f64() * 1e3
    );
    assert_eq!(code, 130, "{phase}: {err}");
    assert!(err.contains("interrupted"), "{err}");
    // Nothing left: every pid of the tree seen is gone (or a zombie of a dead parent).
    for p in &tree {
        assert!(
            state(*p).is_none_or(|s| s == 'Z'),
            "{phase}: pid {p} survived the interrupt"
        );
    }
    assert!(!json.exists(), "{phase}: a partial report was left");
    assert!(
        files_in(&tmpdir).is_empty(),
        "{phase}: left in TMPDIR: {:?}",
        files_in(&tmpdir)
    );
}

#[test]
fn sigint_during_the_measured_runs_exits_130_and_leaves_nothing() {
    const NAME: &str = "sigint_during_the_measured_runs_exits_130_and_leaves_nothing";
    if root(NAME) {
        interrupt_in(NAME, &[], "measured runs");
    }
}

#[test]
fn sigint_during_sampling_exits_130_and_leaves_nothing() {
    const NAME: &str = "sigint_during_sampling_exits_130_and_leaves_nothing";
    if root(NAME) {
        interrupt_in(NAME, &["--sample", "--sample-runs", "3"], "sampling");
    }
}

#[test]
fn sigint_during_the_fork_loop_exits_130_and_leaves_nothing() {
    const NAME: &str = "sigint_during_the_fork_loop_exits_130_and_leaves_nothing";
    if root(NAME) {
        interrupt_in(NAME, &["--fork", "1000000", "--no-exec"], "fork loop");
    }
}
