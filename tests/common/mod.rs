//! Shared helpers of the integration tests: skipping with a printed, counted reason, building C
//! fixtures with the system compiler, and reading the independent oracles (ldd, readelf).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The skip helper shared with the library's unit tests: `skip(name, reason)` prints
/// `SKIP name: reason` uncaptured, counts it for tests/zz_skipped.rs's summary, and fails
/// instead when LDCOST_REQUIRE_ALL is set.
#[path = "../../src/test_skip.rs"]
pub mod skips;
#[allow(unused_imports)]
pub use skips::{require_all, skip};

/// Fixture pairs (before and after a fix) for each kind of fix `profile` predicts.
pub mod fix_fixtures;

/// C fixtures that load libraries after `main`, and LD_DEBUG=files/bindings read for them.
pub mod dlopen_fixtures;

/// Traced per-object runs of those fixtures and of other programs.
pub mod traced;

/// Whether `cmd` can be run.
pub fn have(cmd: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {cmd} >/dev/null 2>&1"))
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Checks the tools a test needs, printing a SKIP line (or failing under LDCOST_REQUIRE_ALL)
/// when one is missing. Use as `if !tools("name", &["cc", "ldd"]) { return; }`.
pub fn tools(name: &str, cmds: &[&str]) -> bool {
    for c in cmds {
        if !have(c) {
            skip(name, &format!("`{c}` is not installed"));
            return false;
        }
    }
    true
}

/// Runs `cc ARGS` in `dir`, panicking with the compiler's output on failure.
pub fn cc(dir: &Path, args: &[&str]) {
    let out = Command::new("cc")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run cc");
    assert!(
        out.status.success(),
        "cc {} failed:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes a C source file.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, text).unwrap();
    p
}

/// One line of ldd's output: the name asked for and the path (None: "not found").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LddLine {
    pub name: String,
    pub path: Option<String>,
}

/// Runs ldd on `target` with `env` set (and LD_LIBRARY_PATH removed unless given); returns the
/// lines in order without linux-vdso, or None when ldd refuses the target.
pub fn ldd(target: &Path, env: &[(&str, &str)]) -> Option<Vec<LddLine>> {
    let mut cmd = Command::new("ldd");
    cmd.arg(target)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_BIND_NOW");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    if text.contains("not a dynamic executable")
        || text.contains("statically linked")
        || err.contains("not a dynamic executable")
    {
        return None;
    }
    let mut lines = Vec::new();
    for l in text.lines() {
        let l = l.trim();
        if l.is_empty() || l.starts_with("linux-vdso") || l.starts_with("linux-gate") {
            continue;
        }
        if let Some((name, rest)) = l.split_once(" => ") {
            let rest = rest.trim();
            let path = if rest.starts_with("not found") {
                None
            } else {
                Some(
                    rest.rsplit_once(" (")
                        .map(|(p, _)| p)
                        .unwrap_or(rest)
                        .to_string(),
                )
            };
            lines.push(LddLine {
                name: name.to_string(),
                path,
            });
        } else if let Some((p, _)) = l.rsplit_once(" (") {
            lines.push(LddLine {
                name: p.to_string(),
                path: Some(p.to_string()),
            });
        }
    }
    Some(lines)
}

/// Output of a command, panicking if it cannot run.
pub fn stdout_of(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd).args(args).output().expect(cmd);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// DT_NEEDED entries as `readelf -dW` lists them.
pub fn readelf_needed(path: &Path) -> Vec<String> {
    stdout_of("readelf", &["-dW", path.to_str().unwrap()])
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| {
            let a = l.find('[')?;
            let b = l.rfind(']')?;
            Some(l[a + 1..b].to_string())
        })
        .collect()
}

/// Relocation counts per type as `readelf -rW` lists them; DT_RELR under "RELR".
pub fn readelf_reloc_counts(path: &Path) -> std::collections::BTreeMap<String, u64> {
    let mut m = std::collections::BTreeMap::new();
    let text = stdout_of("readelf", &["-rW", path.to_str().unwrap()]);
    for l in text.lines() {
        let t = l.trim();
        if let Some(n) = t.strip_suffix(" offsets") {
            if let Ok(n) = n.trim().parse::<u64>() {
                *m.entry("RELR".to_string()).or_default() += n;
            }
            continue;
        }
        let mut f = t.split_whitespace();
        let (Some(off), Some(_info), Some(ty)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if off.len() == 16 && off.chars().all(|c| c.is_ascii_hexdigit()) && ty.starts_with("R_") {
            *m.entry(ty.to_string()).or_default() += 1;
        }
    }
    m
}

/// Facts `readelf -lW -dW --dyn-syms -nW` states about one object, for per-object checks.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ReadelfFacts {
    pub dynsym: u64,
    pub defined: u64,
    pub undefined: u64,
    pub build_id: Option<String>,
    pub relro_size: u64,
    pub gnu_hash: bool,
    pub sysv_hash: bool,
    pub init: bool,
    pub init_array_bytes: u64,
    pub soname: Option<String>,
    pub interpreter: Option<String>,
}

pub fn readelf_facts(path: &Path) -> ReadelfFacts {
    let p = path.to_str().unwrap();
    let mut f = ReadelfFacts::default();
    let syms = stdout_of("readelf", &["-W", "--dyn-syms", p]);
    let mut in_dynsym = false;
    for l in syms.lines() {
        if l.starts_with("Symbol table '.dynsym'") {
            in_dynsym = true;
            continue;
        }
        if l.starts_with("Symbol table") {
            in_dynsym = false;
        }
        let cols: Vec<&str> = l.split_whitespace().collect();
        if !in_dynsym
            || cols.len() < 7
            || !cols[0].ends_with(':')
            || cols[0] == "0:"
            || cols[0] == "Num:"
        {
            continue;
        }
        f.dynsym += 1;
        if cols[6] == "UND" {
            f.undefined += 1;
        } else {
            f.defined += 1;
        }
    }
    for l in stdout_of("readelf", &["-nW", p]).lines() {
        if let Some((_, id)) = l.split_once("Build ID: ") {
            f.build_id = Some(id.trim().to_string());
        }
    }
    for l in stdout_of("readelf", &["-lW", p]).lines() {
        let cols: Vec<&str> = l.split_whitespace().collect();
        if cols.first() == Some(&"GNU_RELRO") {
            f.relro_size = u64::from_str_radix(cols[5].trim_start_matches("0x"), 16).unwrap();
        }
        if let Some(i) = l.find("[Requesting program interpreter: ") {
            let rest = &l[i + 33..];
            f.interpreter = Some(rest.trim_end_matches(']').to_string());
        }
    }
    for l in stdout_of("readelf", &["-dW", p]).lines() {
        if l.contains("(GNU_HASH)") {
            f.gnu_hash = true;
        } else if l.contains("(HASH)") {
            f.sysv_hash = true;
        } else if l.contains("(INIT)") {
            f.init = true;
        } else if l.contains("(INIT_ARRAYSZ)") {
            f.init_array_bytes = l.split_whitespace().nth(2).unwrap().parse().unwrap();
        } else if l.contains("(SONAME)") {
            let a = l.find('[').unwrap();
            f.soname = Some(l[a + 1..l.rfind(']').unwrap()].to_string());
        }
    }
    f
}

/// Whether our effective uid is 0 (`Uid:` in /proc/self/status: real, effective, ...).
pub fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// How a child started with piped stderr (and stdout) ended: exit code (None: killed by a
/// signal), stdout, stderr.
pub type Exit = (Option<i32>, Vec<u8>, String);

/// Hands `child` to a waiter thread that drains both pipes, reaps it, and then sends how it
/// ended; a test waits on the receiver with a bound and kills the pid when it runs out.
pub fn reap_on_thread(mut child: std::process::Child) -> std::sync::mpsc::Receiver<Exit> {
    use std::io::Read;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut err = child.stderr.take().expect("stderr");
        let reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let mut out = Vec::new();
        if let Some(mut o) = child.stdout.take() {
            let _ = o.read_to_end(&mut out);
        }
        let status = child.wait().ok();
        let err = reader.join().unwrap_or_default();
        let _ = tx.send((status.and_then(|s| s.code()), out, err));
    });
    rx
}

/// Starts `program args` with stdin from /dev/null, stdout and stderr piped and LD_LIBRARY_PATH
/// removed (cargo sets it for tests; the oracles run without it), handed to
/// [`reap_on_thread`]: its pid and the receiver of how it ended.
pub fn spawn_reaped<S: AsRef<std::ffi::OsStr>>(
    program: &std::ffi::OsStr,
    args: &[S],
) -> std::io::Result<(i32, std::sync::mpsc::Receiver<Exit>)> {
    let child = Command::new(program)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    Ok((child.id() as i32, reap_on_thread(child)))
}

/// One process as /proc shows it.
#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: i32,
    pub comm: String,
    pub state: char,
    pub ppid: i32,
    /// The arguments joined by spaces (empty for zombies and kernel threads).
    pub cmdline: String,
}

/// Every process in /proc (a process that vanishes while we read is skipped).
pub fn processes() -> Vec<Proc> {
    let mut v = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return v;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...; comm may contain spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_string();
        let mut rest = stat[close + 1..].split_whitespace();
        let state = rest.next().and_then(|s| s.chars().next()).unwrap_or('?');
        let ppid = rest.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        let cmdline = std::fs::read(e.path().join("cmdline"))
            .map(|b| {
                String::from_utf8_lossy(&b)
                    .replace('\0', " ")
                    .trim()
                    .to_string()
            })
            .unwrap_or_default();
        v.push(Proc {
            pid,
            comm,
            state,
            ppid,
            cmdline,
        });
    }
    v
}

/// The quickest `ldcost profile`: one run, no warm-up, no reference, no LD_DEBUG pass, the
/// target's output discarded; a test appends its options and the target.
pub const QUICK: &[&str] = &[
    "profile",
    "-n",
    "1",
    "--warmup",
    "0",
    "--no-reference",
    "--no-ld-debug",
    "--quiet-target",
];

/// How an ldcost run ended: exit code (-1: killed by a signal), stdout, stderr.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the ldcost under test with `args` to completion, with LD_BIND_NOW and LD_LIBRARY_PATH
/// removed from its environment (cargo sets the latter for tests).
pub fn ldcost(args: &[&str]) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ldcost"));
    cmd.args(args)
        .env_remove("LD_BIND_NOW")
        .env_remove("LD_LIBRARY_PATH");
    out_of(&mut cmd)
}

/// Runs a prepared command to completion: its exit code and its output as text.
pub fn out_of(cmd: &mut Command) -> Out {
    let o = cmd.output().expect("run ldcost");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// The share of `argv`'s CPU time that `perf record -e cpu-clock` samples in the kernel.
pub fn perf_record_kernel_share(argv: &[&str]) -> Result<f64, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let data = dir.path().join("perf.data");
    let data = data.to_str().unwrap();
    let rec = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-F",
            "10000",
            "-o",
            data,
            "--",
        ])
        .args(argv)
        .output()
        .map_err(|e| e.to_string())?;
    if !rec.status.success() {
        return Err(format!("perf record: {rec:?}"));
    }
    let rep = Command::new("perf")
        .args([
            "report",
            "-i",
            data,
            "--stdio",
            "--sort",
            "dso",
            "-F",
            "overhead,dso",
        ])
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&rep.stdout);
    let pct: f64 = text
        .lines()
        .filter(|l| l.contains("[kernel.kallsyms]"))
        .filter_map(|l| {
            l.split_whitespace()
                .next()?
                .trim_end_matches('%')
                .parse::<f64>()
                .ok()
        })
        .sum();
    Ok(pct / 100.0)
}

/// C of a program that forks `children` children in main, one after another; each execs
/// /bin/true and is waited for (exit 1 if one fails).
pub fn forker_source(children: u32) -> String {
    format!(
        r#"#include <sys/wait.h>
#include <unistd.h>
int main(void) {{
    for (int i = 0; i < {children}; i++) {{
        pid_t p = fork();
        if (p < 0) return 1;
        if (p == 0) {{ execl("/bin/true", "true", (char *)0); _exit(127); }}
        int st;
        if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
    }}
    return 0;
}}
"#
    )
}

/// The trimmed stdout of a command run without LD_LIBRARY_PATH, or None if it cannot run or fails.
pub fn output_of(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Processes that must not exist after a test: children of the test process, and any process
/// running one of `fixtures` (by its cmdline, or by its command name: zombies have no
/// cmdline, and the kernel truncates command names to 15 bytes).
pub fn leftovers(fixtures: &[PathBuf]) -> Vec<Proc> {
    let me = std::process::id() as i32;
    processes()
        .into_iter()
        .filter(|p| p.pid != me)
        .filter(|p| {
            p.ppid == me
                || fixtures.iter().any(|f| {
                    let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
                    let comm: String = name.bytes().take(15).map(char::from).collect();
                    p.cmdline.contains(&*f.to_string_lossy())
                        || (!comm.is_empty() && p.comm == comm)
                })
        })
        .collect()
}

/// The fork probe on seed 001's forktest: `profile EXE --fork N --child exit --at main
/// --no-exec --json JSON -- N` (forktest's own loop forks N too, after the probe).
pub fn forktest_probe_args<'a>(exe: &'a str, n: &'a str, json: &'a str) -> [&'a str; 13] {
    [
        "profile",
        exe,
        "--fork",
        n,
        "--child",
        "exit",
        "--at",
        "main",
        "--no-exec",
        "--json",
        json,
        "--",
        n,
    ]
}

/// `perf stat -x, -o FILE -e EVENTS -- ARGV` (LD_LIBRARY_PATH removed, output discarded): the
/// CSV it wrote to `file`.
pub fn perf_stat_csv(
    file: &Path,
    events: &str,
    argv: &[std::ffi::OsString],
) -> Result<String, String> {
    let st = Command::new("perf")
        .args(["stat", "-x,", "-o"])
        .arg(file)
        .args(["-e", events, "--"])
        .args(argv)
        .env_remove("LD_LIBRARY_PATH")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("perf: {e}"))?;
    if !st.success() {
        return Err(format!("perf stat exited with {st}"));
    }
    std::fs::read_to_string(file).map_err(|e| e.to_string())
}

/// Runs `cmd` with stdin from /dev/null and LD_LIBRARY_PATH removed to completion; its output
/// when it succeeds, else its status and stderr.
pub fn checked_output(cmd: &mut Command) -> Result<std::process::Output, String> {
    let out = cmd
        .env_remove("LD_LIBRARY_PATH")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(out)
}

/// One line a process: pid, ppid, state, comm and cmdline.
pub fn describe(left: &[Proc]) -> String {
    left.iter()
        .map(|p| {
            format!(
                "  pid {} ppid {} state {} comm {:?} cmdline {:?}",
                p.pid, p.ppid, p.state, p.comm, p.cmdline
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Fails if a child of the test process or a fixture process remains (in any state: stopped
/// T/t, zombie Z, running or sleeping). Polls /proc for up to 5 s first: a process SIGKILLed
/// a moment ago may still be on its way out.
pub fn assert_no_leftovers(fixtures: &[PathBuf]) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let left = leftovers(fixtures);
        if left.is_empty() {
            return;
        }
        if std::time::Instant::now() > deadline {
            panic!(
                "processes left behind (state T/t = stopped, Z = zombie, R/S/D = alive):\n{}",
                describe(&left)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The faults execve takes, ns per exec: the fault cells (`*_fault`) of the phase × category
/// table's `kernel exec` row in a profile's `breakdown` (faults are their own category whoever
/// takes them). Shared by tests/exec_kernel.rs and benches/profile_checks.rs.
pub fn execve_fault_ns(breakdown: &serde_json::Value) -> f64 {
    breakdown["phase_table"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["span"] == "kernel exec")
        .flat_map(|r| r["categories"].as_array().into_iter().flatten())
        .filter(|c| {
            c["category"]
                .as_str()
                .is_some_and(|k| k.ends_with("_fault"))
        })
        .filter_map(|c| c["ns_per_exec_or_fork"].as_f64())
        .sum()
}

/// A directory another user (`nobody`) can reach, holding a copy of the ldcost binary and
/// whatever fixtures a test copies in: wherever the clone is (a clone under a 0700 directory,
/// /root or a `mktemp -d`, cannot be entered by anyone else), and whatever the umask (the
/// copies are made 0755/0644 explicitly). Removed on drop.
pub struct AsUser {
    dir: tempfile::TempDir,
    /// The copy of the ldcost binary.
    pub bin: PathBuf,
}

/// Whether every directory from `/` down to `dir` lets others search it (o+x).
fn searchable_by_others(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    dir.ancestors()
        .all(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// The [`AsUser`] directory, made in the first of TMPDIR, /tmp and /dev/shm that others can
/// reach; Err: why none could be made (the caller skips with it).
pub fn as_user_binary() -> Result<AsUser, String> {
    use std::os::unix::fs::PermissionsExt;
    let bases = [std::env::temp_dir(), "/tmp".into(), "/dev/shm".into()];
    let Some(base) = bases.iter().find(|b| searchable_by_others(b)) else {
        return Err(format!(
            "no temp directory another user can enter (tried {})",
            bases.map(|b| b.display().to_string()).join(", ")
        ));
    };
    let dir = tempfile::Builder::new()
        .prefix("ldcost-as-user-")
        .tempdir_in(base)
        .map_err(|e| format!("cannot make a directory in {}: {e}", base.display()))?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("chmod {}: {e}", dir.path().display()))?;
    let bin = dir.path().join("ldcost");
    install(Path::new(env!("CARGO_BIN_EXE_ldcost")), &bin, 0o755)?;
    Ok(AsUser { dir, bin })
}

/// Copies `from` to `to` with `mode` in another process (`install`): a copy written by this
/// process has a write descriptor that a child forked meanwhile by another test thread holds
/// until it execs, and an exec of the copy then fails with ETXTBSY ("Text file busy").
fn install(from: &Path, to: &Path, mode: u32) -> Result<(), String> {
    let out = std::process::Command::new("install")
        .arg("-m")
        .arg(format!("{mode:o}"))
        .arg(from)
        .arg(to)
        .output()
        .map_err(|e| format!("cannot run install: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cannot copy {} to {}: {}",
            from.display(),
            to.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl AsUser {
    /// The directory (mode 0755): fixtures and outputs of the other user go here.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Copies `file` in as `name`, readable by all (0755 if it was executable, else 0644).
    pub fn copy(&self, file: &Path, name: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let to = self.dir.path().join(name);
        let exec = std::fs::metadata(file).expect("stat").permissions().mode() & 0o111 != 0;
        let mode = if exec { 0o755 } else { 0o644 };
        install(file, &to, mode).expect("copy a fixture for another user");
        to
    }

    /// A directory in it that `nobody` may write to (mode 0777), for its outputs.
    pub fn writable(&self, name: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let d = self.dir.path().join(name);
        std::fs::create_dir(&d).expect("mkdir");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        d
    }

    /// `setpriv` running the copied ldcost as nobody:nogroup with no supplementary groups, in
    /// this directory; the caller adds ldcost's arguments.
    pub fn command(&self) -> Command {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"])
            .arg(&self.bin)
            .current_dir(self.dir.path());
        c
    }
}

/// A tmpfs mounted on a fresh temporary directory (root only), unmounted on drop: a small
/// file system to fill up.
pub struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    /// Mounts with `opts` (`size=2m`); None when the mount is refused.
    pub fn mount(opts: &str) -> Option<Tmpfs> {
        let d = tempfile::tempdir().ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", opts, "none"])
            .arg(d.path())
            .status()
            .ok()?
            .success();
        ok.then_some(Tmpfs(d))
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}
