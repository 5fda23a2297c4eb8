//! Shared by the sampler tests: the C fixtures and how they are built, a target launched
//! blocked before its exec, one sampled run, and small readers of stacks and hand-built
//! recordings.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;

use ldcost::perf::sampler::{
    Recording, Sample, Sampler, SamplerConfig, SymbolizedStack, TaskEvent, TaskKind,
};

use crate::common;

/// Held by the tests that sample every CPU or load them (see the module docs).
pub(crate) static MACHINE: Mutex<()> = Mutex::new(());

pub(crate) const CFLAGS: &[&str] = &["-O0", "-g", "-fno-omit-frame-pointer"];

/// C of `static volatile unsigned long sink;` and `void NAME(long ms)`, which spins until the
/// process has used `ms` ms of CPU (checked every ~0.3 ms): the leaf the sampler tests look for.
macro_rules! spin_fn {
    ($name:literal) => {
        concat!(
            "static volatile unsigned long sink;\n",
            "/* Spins until the process has used `ms` ms of CPU (checked every ~0.3 ms). */\n",
            "__attribute__((noinline)) void ",
            $name,
            "(long ms) {\n",
            r#"    struct timespec ts;
    long long target = ms * 1000000LL;
    for (;;) {
        for (int i = 0; i < 100000; i++) sink += i;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        if (ts.tv_sec * 1000000000LL + ts.tv_nsec >= target) break;
    }
}
"#
        )
    };
}

pub(crate) const SPIN_C: &str = concat!(
    r#"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>
"#,
    spin_fn!("spin_here"),
    r#"int main(int argc, char **argv) {
    spin_here(argc > 1 ? atol(argv[1]) : 300);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("cpu_us %ld\n", ru.ru_utime.tv_sec * 1000000L + ru.ru_utime.tv_usec +
                               ru.ru_stime.tv_sec * 1000000L + ru.ru_stime.tv_usec);
    return 0;
}
"#
);

pub(crate) const FORKER_C: &str = r#"
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#define SIZE (64UL << 20)
/* Forks N children one after the other; each touches 64 MiB of 4 KiB pages and _exits. */
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 200;
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p < 0) return 2;
        if (p == 0) {
            char *m = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m == MAP_FAILED) _exit(1);
            madvise(m, SIZE, MADV_NOHUGEPAGE);
            for (unsigned long o = 0; o < SIZE; o += 4096) m[o] = 1;
            _exit(0);
        }
        int st;
        if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
    }
    return 0;
}
"#;

pub(crate) const TREE_C: &str = concat!(
    r#"
#include <stdio.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
"#,
    spin_fn!("grandchild_spin"),
    r#"/* root -> child -> grandchild; the child reports the grandchild's pid and CPU time (wait4). */
int main(void) {
    pid_t c = fork();
    if (c == 0) {
        pid_t g = fork();
        if (g == 0) { grandchild_spin(250); _exit(0); }
        int st;
        struct rusage ru;
        if (wait4(g, &st, 0, &ru) != g) _exit(1);
        printf("grandchild %d cpu_us %ld\n", g, ru.ru_utime.tv_sec * 1000000L + ru.ru_utime.tv_usec +
                                                 ru.ru_stime.tv_sec * 1000000L + ru.ru_stime.tv_usec);
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    printf("child %d\n", c);
    return 0;
}
"#
);

/// Builds a fixture into `dir` and returns its path.
pub(crate) fn build(dir: &Path, name: &str, source: &str) -> PathBuf {
    common::write(dir, &format!("{name}.c"), source);
    let mut args: Vec<&str> = CFLAGS.to_vec();
    let c = format!("{name}.c");
    args.extend(["-o", name, &c]);
    common::cc(dir, &args);
    dir.join(name)
}

/// A target launched blocked before its exec; killed if dropped unfinished.
///
/// std's `Command::spawn` returns only once the child has exec'd (it waits on a close-on-exec
/// pipe for an exec error), so the child cannot block in `pre_exec`. Instead `sh` blocks in
/// `read` on a pipe from us and then `exec`s the target, which keeps the pid.
pub(crate) struct Target {
    child: Option<Child>,
    go: Option<std::process::ChildStdin>,
}

impl Target {
    pub(crate) fn spawn(program: &Path, args: &[&str]) -> Target {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("read go && exec \"$0\" \"$@\" </dev/null")
            .arg(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let go = child.stdin.take();
        Target {
            child: Some(child),
            go,
        }
    }

    pub(crate) fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    /// Lets the target exec.
    pub(crate) fn release(&mut self) {
        if let Some(mut w) = self.go.take() {
            w.write_all(b"go\n").unwrap();
        }
    }

    /// Waits for the target; returns its stdout, asserting it succeeded.
    pub(crate) fn finish(mut self) -> String {
        let mut child = self.child.take().unwrap();
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(status.success(), "target failed: {status:?}\n{out}");
        out
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Whether this machine lets us sample system-wide; prints SKIP otherwise.
pub(crate) fn privileged(name: &str) -> bool {
    if !ldcost::perf::is_perf_privileged() {
        common::skip(name, "system-wide sampling needs root or CAP_PERFMON");
        return false;
    }
    common::tools(name, &["cc"])
}

/// Samples `cmd` (blocked, then released) until it exits; returns the recording and stdout.
pub(crate) fn sample_run(
    name: &str,
    cfg: &SamplerConfig,
    program: &Path,
    args: &[&str],
) -> Option<(Recording, String, i32)> {
    let mut target = Target::spawn(program, args);
    let pid = target.pid();
    let sampler = match Sampler::start(cfg, pid) {
        Ok(s) => s,
        Err(e) if e.is_denied() => {
            common::skip(name, &format!("{e} ({})", e.hint().unwrap_or_default()));
            return None;
        }
        Err(e) => panic!("{e}: {:?}", e.hint()),
    };
    target.release();
    let out = target.finish();
    let rec = sampler.stop().unwrap();
    Some((rec, out, pid))
}

/// `key N` from a line of the fixture's output.
pub(crate) fn field(out: &str, key: &str) -> i64 {
    out.split_whitespace()
        .skip_while(|w| *w != key)
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no `{key}` in {out:?}"))
}

pub(crate) fn share(part: usize, whole: usize) -> f64 {
    part as f64 / whole.max(1) as f64
}

pub(crate) fn user_leaf_is(st: &SymbolizedStack, name: &str) -> bool {
    st.user_leaf().is_some_and(|f| &*f.name == name)
}

/// `count` of `stacks` have `leaf` as their leaf: more than half, and no other leaf has more.
pub(crate) fn assert_majority_leaf(stacks: &[SymbolizedStack], count: usize, leaf: &str) {
    let hist = leaf_histogram(stacks);
    assert!(
        share(count, stacks.len()) > 0.5 && hist.first().is_some_and(|(_, n)| *n <= count),
        "{count} of {} samples with the leaf {leaf}: {hist:?}",
        stacks.len()
    );
}

pub(crate) fn leaf_histogram(stacks: &[SymbolizedStack]) -> Vec<(String, usize)> {
    let mut m: BTreeMap<String, usize> = BTreeMap::new();
    for s in stacks {
        *m.entry(s.leaf().map_or("-".into(), |f| f.label()))
            .or_default() += 1;
    }
    let mut v: Vec<_> = m.into_iter().collect();
    v.sort_by_key(|e| std::cmp::Reverse(e.1));
    v.truncate(12);
    v
}

/// Kills and reaps a process we started if the test ends before it exits.
pub(crate) struct KillOnDrop(pub(crate) Option<Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[inline(never)]
pub(crate) fn sampler_test_marker() -> usize {
    std::hint::black_box(42)
}

pub(crate) fn sample(t: u64, pid: i32, user: Vec<u64>) -> Sample {
    Sample {
        time_ns: t,
        pid,
        tid: pid,
        cpu: 0,
        kernel: vec![],
        user,
        period: 1_000_000,
        weight_ns: 1_000_000,
    }
}

pub(crate) fn task(
    t: u64,
    kind: TaskKind,
    pid: i32,
    ppid: Option<i32>,
    comm: Option<&str>,
) -> TaskEvent {
    TaskEvent {
        time_ns: t,
        kind,
        pid,
        tid: pid,
        ppid,
        ptid: ppid,
        comm: comm.map(str::to_string),
    }
}

/// The samples of `pid` whose leaf is `spin_here`, in `perf script` of `data` and in ldcost's
/// `rec`: (perf's share, perf's samples, ldcost's share, ldcost's samples).
pub(crate) fn spin_leaf_shares(
    data: &Path,
    pid: i32,
    rec: &Recording,
) -> Result<(f64, usize, f64, usize), String> {
    let script = Command::new("perf")
        .args([
            "script",
            "-F",
            "pid,ip,sym",
            "-G",
            "--pid",
            &pid.to_string(),
            "-i",
        ])
        .arg(data)
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&script.stdout);
    let leaves: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    let perf_spin = leaves.iter().filter(|s| **s == "spin_here").count();
    let stacks = ldcost::perf::sampler::symbolize(
        rec,
        &rec.maps_at_start,
        &ldcost::symbolize::default_debug_roots(),
    );
    let ours_spin = stacks
        .iter()
        .filter(|s| s.leaf().is_some_and(|f| &*f.name == "spin_here"))
        .count();
    Ok((
        share(perf_spin, leaves.len()),
        leaves.len(),
        share(ours_spin, stacks.len()),
        stacks.len(),
    ))
}
