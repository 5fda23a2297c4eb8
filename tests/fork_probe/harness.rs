//! The harness of the fork-probe tests: fixture sources, running ldcost and the fixtures,
//! one test case (lock, directory, /proc check), /proc scans and ELF oracles. The `use`s are
//! re-exported: `use super::harness::*` is the test modules' prelude.

pub(crate) use super::common::{
    cc, describe, processes, running_as_root, skip, stdout_of, tools, write, Exit, Proc,
};

pub(crate) use std::collections::BTreeMap;
pub(crate) use std::ffi::OsString;
pub(crate) use std::path::{Path, PathBuf};
pub(crate) use std::process::{Command, Stdio};
pub(crate) use std::sync::{mpsc, Mutex, MutexGuard, Once};
pub(crate) use std::time::{Duration, Instant};

pub(crate) use ldcost::attribute::fork_cost::ForkSection;
pub(crate) use ldcost::experiment::seeds::{self, Linkage, Seed};
pub(crate) use ldcost::report::Document;
pub(crate) use ldcost::trace::fork::ExitBinding;
pub(crate) use ldcost::trace::inject::Spawn;
pub(crate) use ldcost::trace::launch::Ending;
pub(crate) use nix::sys::signal::{kill, Signal};
pub(crate) use nix::unistd::Pid;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_ldcost");
/// No single ldcost run here may take longer (a hang is a failure).
pub(crate) const HANG: Duration = Duration::from_secs(300);

// ---------------------------------------------------------------------------------------------
// Fixture sources.

/// Live state across the injection point. `checkpoint` is four bytes of assembly that touch
/// nothing, called from an asm block that pins values in callee- and caller-saved general
/// registers, in xmm0/7/8/15, and a `long double` on the x87 stack; main keeps a 64 KiB stack
/// buffer, prints every value after the call and checks it against what it computed before,
/// runs an atexit handler and exits with status 7. argc, argv and envp are printed (live in
/// registers at `--at main` and on the stack at `--at entry`).
/// Built with `cc -O2 -mno-red-zone` (the asm block calls; no red zone may hold a value).
pub(crate) const REGS: &str = r#"#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__asm__(".text\n.globl checkpoint\n.type checkpoint,@function\ncheckpoint:\n"
        "\tnop\n\tnop\n\tnop\n\tret\n.size checkpoint,.-checkpoint\n");

static volatile unsigned long seed = 0x9e3779b97f4a7c15UL;
static int bad;

static void check(const char *what, unsigned long got, unsigned long want) {
    printf("%s %016lx\n", what, got);
    if (got != want) { printf("MISMATCH %s: %016lx != %016lx\n", what, got, want); bad = 1; }
}

static void at_exit(void) { printf("atexit handler ran, bad=%d\n", bad); fflush(stdout); }

int main(int argc, char **argv, char **envp) {
    atexit(at_exit);
    unsigned long s = seed;
    int nenv = 0;
    for (char **e = envp; *e; e++) nenv++;
    printf("argc %d argv0 %zu env %d\n", argc, strlen(argv[0]), nenv);
    static unsigned char copy[1 << 16];
    unsigned char big[1 << 16];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (unsigned char)(s >> (i % 56)) ^ (unsigned char)i;
    memcpy(copy, big, sizeof big);
    register unsigned long rbx __asm__("rbx") = s * 3;
    register unsigned long r12 __asm__("r12") = s ^ 0x1111111111111111UL;
    register unsigned long r13 __asm__("r13") = s + 0x2222;
    register unsigned long r14 __asm__("r14") = s * s;
    register unsigned long r15 __asm__("r15") = s >> 3;
    register unsigned long rdi __asm__("rdi") = s ^ 0x7777;
    register unsigned long r8 __asm__("r8") = s + 8;
    register unsigned long r10 __asm__("r10") = s + 10;
    register unsigned long r11 __asm__("r11") = s + 11;
    register double x0 __asm__("xmm0") = (double)(s % 1000003) * 1.25;
    register double x7 __asm__("xmm7") = (double)(s % 65537) * 0.1;
    register double x8 __asm__("xmm8") = (double)(s % 4099) * 7.5;
    register double x15 __asm__("xmm15") = -(double)(s % 8191) / 9.0;
    const double w0 = x0, w7 = x7, w8 = x8, w15 = x15;
    long double ld_in = (long double)(s % 1000033) / 7.0L, ld_out;
    __asm__ volatile("fldt %[in]\n\tcall checkpoint\n\tfstpt %[out]\n\t"
                     : [out] "=m"(ld_out), "+r"(rbx), "+r"(r12), "+r"(r13), "+r"(r14),
                       "+r"(r15), "+r"(rdi), "+r"(r8), "+r"(r10), "+r"(r11), "+x"(x0),
                       "+x"(x7), "+x"(x8), "+x"(x15)
                     : [in] "m"(ld_in)
                     : "rax", "rcx", "rdx", "rsi", "r9", "memory", "cc");
    /* Copy the outputs at once: the calls below clobber the caller-saved registers. */
    unsigned long g[9] = {rbx, r12, r13, r14, r15, rdi, r8, r10, r11};
    double got[4] = {x0, x7, x8, x15}, want[4] = {w0, w7, w8, w15};
    const unsigned long w[9] = {s * 3, s ^ 0x1111111111111111UL, s + 0x2222, s * s, s >> 3,
                                s ^ 0x7777, s + 8, s + 10, s + 11};
    const char *names[9] = {"rbx", "r12", "r13", "r14", "r15", "rdi", "r8", "r10", "r11"};
    for (int i = 0; i < 9; i++) check(names[i], g[i], w[i]);
    for (int i = 0; i < 4; i++) {
        unsigned long gb, wb;
        memcpy(&gb, &got[i], 8);
        memcpy(&wb, &want[i], 8);
        check("xmm", gb, wb);
    }
    printf("x87 %.12Lf\n", ld_out);
    if (ld_out != ld_in) { printf("MISMATCH x87\n"); bad = 1; }
    unsigned long sum = 0;
    for (size_t i = 0; i < sizeof big; i++) {
        sum = sum * 31 + big[i];
        if (big[i] != copy[i]) { printf("MISMATCH stack buffer at %zu\n", i); bad = 1; break; }
    }
    printf("stack checksum %016lx\n", sum);
    printf("%s\n", bad ? "BAD" : "all values intact");
    exit(7);
}
"#;

/// The target of the spawn matrix: prints one line. `posix_spawn` is referenced (never
/// called) so that a static build links it. Built dynamic and `-static`.
pub(crate) const TARGET: &str = r#"#include <spawn.h>
#include <stdio.h>
int (*volatile keep)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                     const posix_spawnattr_t *, char *const[], char *const[]) = posix_spawn;
int main(int argc, char **argv) { printf("target ran with %d args\n", argc); return 0; }
"#;

/// The same without posix_spawn: a static build has no posix_spawn to call.
pub(crate) const PLAIN: &str = r#"#include <stdio.h>
int main(void) { puts("plain target ran"); return 0; }
"#;

/// An exec child that proves it ran: appends one byte to the file named by
/// $LDCOST_TEST_TALLY (the exec'd child gets only argv[0] and the target's environment).
/// Built dynamic and `-static`.
pub(crate) const TALLY: &str = r#"#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
int main(void) {
    const char *p = getenv("LDCOST_TEST_TALLY");
    if (!p) return 3;
    int fd = open(p, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0 || write(fd, "x", 1) != 1) return 4;
    return close(fd) ? 5 : 0;
}
"#;

/// A target that prints its signal dispositions and mask as /proc/self/status has them
/// (SigBlk, SigIgn; read before any handler of its own is set), then calls `checkpoint`.
pub(crate) const SIGSTATE: &str = r#"#include <stdio.h>
#include <string.h>

__attribute__((noinline)) void checkpoint(void) { __asm__ volatile("" ::: "memory"); }

int main(void) {
    char l[256];
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(l, sizeof l, f))
        if (!strncmp(l, "SigBlk:", 7) || !strncmp(l, "SigIgn:", 7)) fputs(l, stdout);
    if (f) fclose(f);
    fflush(stdout);
    checkpoint();
    return 0;
}
"#;

/// A target that reads its `[stack]` mapping's Rss from /proc/self/smaps just before and just
/// after `checkpoint` (the same code, the same stack depth, both times) and prints both: what
/// the probe left resident in the target's stack, by the target's own reading.
pub(crate) const STACKRSS: &str = r#"#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) void checkpoint(void) { __asm__ volatile("" ::: "memory"); }

static char buf[1 << 20];

__attribute__((noinline)) static long stack_rss_kb(void) {
    int fd = open("/proc/self/smaps", O_RDONLY);
    if (fd < 0) return -1;
    long n = 0, r;
    while ((r = read(fd, buf + n, sizeof buf - 1 - n)) > 0) n += r;
    close(fd);
    buf[n] = 0;
    char *s = strstr(buf, "[stack]");
    char *rss = s ? strstr(s, "\nRss:") : 0;
    long kb = -1;
    if (rss) sscanf(rss + 1, "Rss: %ld", &kb);
    return kb;
}

int main(void) {
    long before = stack_rss_kb();
    checkpoint();
    long after = stack_rss_kb();
    printf("stack rss before %ld after %ld\n", before, after);
    return 0;
}
"#;

/// A target that reads its own /proc/self/maps and VmPTE with raw syscalls (no allocation, so
/// no new mapping after the count), prints what it counted and then calls `checkpoint`.
pub(crate) const SELFMAPS: &str = r#"#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) void checkpoint(void) { __asm__ volatile("" ::: "memory"); }

static char buf[1 << 20];
static char texts[64][512];

static long slurp(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    long n = 0, r;
    while ((r = read(fd, buf + n, sizeof buf - 1 - n)) > 0) n += r;
    close(fd);
    buf[n] = 0;
    return n;
}

int main(void) {
    printf("selfmaps: start\n"); /* stdio's buffer first: printing later adds no mapping */
    fflush(stdout);
    long n = slurp("/proc/self/maps");
    long lines = 0, text = 0, heap = 0, stack = 0, objects = 0;
    for (char *l = buf; l < buf + n;) {
        char *e = strchr(l, '\n');
        if (!e) break;
        *e = 0;
        lines++;
        char perms[8] = {0}, path[512] = {0};
        sscanf(l, "%*s %7s %*s %*s %*s %511[^\n]", perms, path);
        if (strcmp(perms, "r-xp") == 0 && path[0] == '/') {
            text++;
            int seen = 0;
            for (long i = 0; i < objects; i++) seen |= strcmp(texts[i], path) == 0;
            if (!seen && objects < 64) strcpy(texts[objects++], path);
        }
        heap += strcmp(path, "[heap]") == 0;
        stack += strcmp(path, "[stack]") == 0;
        l = e + 1;
    }
    slurp("/proc/self/status");
    char *p = strstr(buf, "VmPTE:");
    long pte_kb = -1;
    if (p) sscanf(p, "VmPTE: %ld", &pte_kb);
    printf("maps %ld file_text %ld heap %ld stack %ld objects %ld vmpte_kb %ld\n", lines, text,
           heap, stack, objects, pte_kb);
    fflush(stdout);
    checkpoint();
    return 0;
}
"#;

/// A SIGCHLD handler that reaps and counts; with argument `block` every signal is blocked
/// before `checkpoint`. After it the program prints its signal state (pending SIGCHLD on a
/// line of its own), forks three children of its own and reaps them (through sigwait when
/// blocked, the handler otherwise), and prints the reap count: 3 in a plain run.
pub(crate) const SIGS: &str = r#"#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) void checkpoint(void) { __asm__ volatile("" ::: "memory"); }

static volatile sig_atomic_t calls, reaps;

static void on_chld(int sig) {
    (void)sig;
    calls++;
    while (waitpid(-1, 0, WNOHANG) > 0) reaps++;
}

int main(int argc, char **argv) {
    int block = argc > 1 && strcmp(argv[1], "block") == 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_chld;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGCHLD, &sa, 0);
    sigset_t all, now, pending;
    sigfillset(&all);
    if (block) sigprocmask(SIG_BLOCK, &all, 0);
    checkpoint();
    sigpending(&pending);
    sigprocmask(SIG_BLOCK, 0, &now);
    struct sigaction cur;
    sigaction(SIGCHLD, 0, &cur);
    printf("SIGCHLD pending after checkpoint: %d\n", sigismember(&pending, SIGCHLD));
    printf("after checkpoint: blocked SIGCHLD %d SIGTERM %d SIGUSR1 %d, handler ours %d, "
           "calls %d, reaps %d\n", sigismember(&now, SIGCHLD), sigismember(&now, SIGTERM),
           sigismember(&now, SIGUSR1), cur.sa_handler == on_chld, (int)calls, (int)reaps);
    fflush(stdout);
    for (int i = 0; i < 3; i++)
        if (fork() == 0) _exit(0);
    if (block) {
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        while (reaps < 3) { int sig; sigwait(&chld, &sig); on_chld(sig); }
    } else {
        /* Not `while (reaps < 3) pause();`: a SIGCHLD handled between the test and pause()
           leaves pause() waiting for ever (it has happened in a full suite run). */
        sigset_t chld, old;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        sigprocmask(SIG_BLOCK, &chld, &old);
        while (reaps < 3) sigsuspend(&old);
        sigprocmask(SIG_SETMASK, &old, 0);
    }
    printf("end: reaps %d\n", (int)reaps);
    return 0;
}
"#;

/// Four threads compute a fixed result, then spin on a volatile flag while main calls
/// `checkpoint`; main then stops and joins them and prints their results.
/// Built with `-pthread`.
pub(crate) const THREADS: &str = r#"#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

__attribute__((noinline)) void checkpoint(void) { __asm__ volatile("" ::: "memory"); }

static atomic_int ready;
static volatile int stop;
static unsigned long results[4];

static void *work(void *arg) {
    long id = (long)arg;
    unsigned long x = (unsigned long)id + 1;
    for (int i = 0; i < 1000000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    results[id] = x;
    atomic_fetch_add(&ready, 1);
    while (!stop) x++;
    return 0;
}

int main(void) {
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        if (pthread_create(&t[i], 0, work, (void *)i)) return 1;
    while (atomic_load(&ready) < 4) ;
    checkpoint();
    stop = 1;
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], 0);
        printf("thread %d: %016lx\n", i, results[i]);
    }
    return 0;
}
"#;

/// A tiny stack: RLIMIT_STACK is set to 64 KiB, and `checkpoint` runs on an 8 KiB
/// makecontext stack with a PROT_NONE guard page right below and less than 512 bytes left
/// above it: anything the probe pushed on the target's stack would fault.
pub(crate) const TINY: &str = r#"#include <alloca.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <ucontext.h>

__attribute__((noinline)) void checkpoint(void) { __asm__ volatile("" ::: "memory"); }

#define STACK 8192
static ucontext_t main_ctx, small_ctx;
static char *stack_lo;
static long headroom;

static void on_small_stack(void) {
    char here;
    volatile char *p = alloca((size_t)(&here - stack_lo) - 256);
    p[0] = 1;
    char *sp;
    __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
    headroom = sp - stack_lo;
    checkpoint();
}

int main(void) {
    struct rlimit rl = {64 * 1024, 64 * 1024};
    if (setrlimit(RLIMIT_STACK, &rl)) { perror("setrlimit"); return 1; }
    char *m = mmap(0, 4096 + STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED || mprotect(m, 4096, PROT_NONE)) { perror("mmap"); return 1; }
    stack_lo = m + 4096;
    getcontext(&small_ctx);
    small_ctx.uc_stack.ss_sp = stack_lo;
    small_ctx.uc_stack.ss_size = STACK;
    small_ctx.uc_link = &main_ctx;
    makecontext(&small_ctx, on_small_stack, 0);
    if (swapcontext(&main_ctx, &small_ctx)) { perror("swapcontext"); return 1; }
    getrlimit(RLIMIT_STACK, &rl);
    printf("back from an %d-byte stack with %s than 512 bytes left; RLIMIT_STACK %lu KiB\n",
           STACK, headroom < 512 ? "less" : "more", (unsigned long)rl.rlim_cur / 1024);
    return 0;
}
"#;

/// `never_called` exists but is not called; main prints a line and returns 0.
pub(crate) const NEVER: &str = r#"#include <stdio.h>
__attribute__((noinline)) void never_called(void) { __asm__ volatile("" ::: "memory"); puts("called"); }
int main(int argc, char **argv) { if (argc > 5) never_called(); puts("done"); return 0; }
"#;

/// Returns from main without ever naming `exit`: the executable has no GOT slot for it.
pub(crate) const NO_EXIT: &str = "int main(void) { return 0; }\n";

// ---------------------------------------------------------------------------------------------
// Running ldcost and the fixtures.

#[derive(Debug)]
pub(crate) struct Finished {
    /// None: killed by a signal.
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// A process started by a test; dropping it SIGKILLs and reaps it unless it was waited for.
pub(crate) struct Spawned {
    pub(crate) pid: i32,
    pub(crate) done: Option<mpsc::Receiver<Exit>>,
}

impl Spawned {
    /// Starts `program args` with `env` added and LD_LIBRARY_PATH removed (cargo sets it for
    /// tests; the plain runs the output is compared with run without it too).
    pub(crate) fn start(program: &Path, args: &[OsString], env: &[(&str, &Path)]) -> Spawned {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env_remove("LD_LIBRARY_PATH")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        let pid = child.id() as i32;
        let rx = super::common::reap_on_thread(child);
        Spawned {
            pid,
            done: Some(rx),
        }
    }

    pub(crate) fn wait(mut self, limit: Duration) -> Finished {
        let rx = self.done.take().expect("not waited yet");
        match rx.recv_timeout(limit) {
            Ok((code, out, stderr)) => Finished {
                code,
                stdout: String::from_utf8_lossy(&out).into_owned(),
                stderr,
            },
            Err(_) => {
                let _ = kill(Pid::from_raw(self.pid), Signal::SIGKILL);
                let _ = rx.recv_timeout(Duration::from_secs(30));
                panic!("process {} did not end within {limit:?}: killed", self.pid);
            }
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if let Some(rx) = self.done.take() {
            if rx.try_recv().is_err() {
                let _ = kill(Pid::from_raw(self.pid), Signal::SIGKILL);
                let _ = rx.recv_timeout(Duration::from_secs(30));
            }
        }
    }
}

pub(crate) fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

/// The fork section of a JSON report.
pub(crate) fn read_fork(json: &Path) -> ForkSection {
    let text = std::fs::read(json).unwrap_or_else(|e| panic!("{}: {e}", json.display()));
    let doc: Document = serde_json::from_slice(&text).expect("a JSON Document");
    assert_eq!(doc.command, "profile");
    doc.fork.expect("the document has a fork section").into()
}

/// `ldcost profile TARGET FORK_ARGS... --no-exec --json J -- TARGET_ARGS` with `env` added.
/// Returns how ldcost ended and, if it wrote one, the fork section.
pub(crate) fn profile(
    case: &Case,
    target: &Path,
    fork_args: &[&str],
    target_args: &[&str],
    env: &[(&str, &Path)],
) -> (Finished, Option<ForkSection>) {
    let json = case.dir().join("fork.json");
    let _ = std::fs::remove_file(&json);
    let mut args = os(&["profile"]);
    args.push(target.into());
    args.extend(os(fork_args));
    args.extend(os(&["--no-exec", "--json"]));
    args.push(json.clone().into());
    args.push("--".into());
    args.extend(os(target_args));
    let out = Spawned::start(Path::new(BIN), &args, env).wait(HANG);
    let fork = json.exists().then(|| read_fork(&json));
    (out, fork)
}

/// Runs a fixture without ldcost.
pub(crate) fn plain(target: &Path, args: &[&str], env: &[(&str, &Path)]) -> Finished {
    Spawned::start(target, &os(args), env).wait(HANG)
}

/// A successful fork run: exit 0, `n` children that all exited 0, no loop error, and the
/// target's stdout first on ldcost's, followed by the report.
pub(crate) fn assert_forked(out: &Finished, fork: &Option<ForkSection>, n: u64) -> ForkSection {
    assert_eq!(out.code, Some(0), "ldcost failed:\n{}", out.stderr);
    let f = fork.clone().expect("a fork section");
    assert_eq!((f.iterations, f.completed), (n, n), "{:?}", f.error);
    assert_eq!(f.error, None);
    assert_eq!(
        f.child_endings,
        BTreeMap::from([("exited 0".to_string(), n)]),
        "every child exits 0"
    );
    f
}

/// ldcost's stdout is the target's, then the report: returns the target's part.
pub(crate) fn target_part(out: &Finished) -> &str {
    // The report opens with its summary (or, in older layouts, the fork section).
    let i = ["Summary: ", "fork cost: "]
        .iter()
        .filter_map(|m| out.stdout.find(m))
        .min()
        .unwrap_or_else(|| panic!("no report on stdout:\n{}", out.stdout));
    &out.stdout[..i]
}

/// An error exit: the code, `ldcost: error: ...` naming `names`, at most one hint line.
pub(crate) fn assert_error(out: &Finished, code: i32, names: &str) {
    assert_eq!(out.code, Some(code), "stderr:\n{}", out.stderr);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert!(
        lines
            .first()
            .is_some_and(|l| l.starts_with("ldcost: error: ")),
        "one error line first: {:?}",
        out.stderr
    );
    assert!(lines[0].contains(names), "{:?} names {names:?}", lines[0]);
    assert!(
        lines.len() == 1 || (lines.len() == 2 && lines[1].starts_with("  hint: ")),
        "an error line and at most a hint: {:?}",
        out.stderr
    );
}

// ---------------------------------------------------------------------------------------------
// One test case: the lock, a temporary directory, the fixtures and the /proc check.

pub(crate) static SERIAL: Mutex<()> = Mutex::new(());
pub(crate) static SUBREAPER: Once = Once::new();

pub(crate) struct Case {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) fixtures: Vec<PathBuf>,
    pub(crate) _serial: MutexGuard<'static, ()>,
}

impl Case {
    /// None (after printing SKIP) when this machine cannot run the fork tests.
    pub(crate) fn new(name: &str) -> Option<Case> {
        // The lock first: nothing a test starts (even `sh -c command -v`) may appear among
        // the children of this process while another test scans or reaps them.
        let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        if !tools(name, &["cc", "readelf"]) {
            return None;
        }
        if !running_as_root() {
            skip(name, "needs root (ptrace of the fixtures and their /proc)");
            return None;
        }
        let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope");
        if scope.is_ok_and(|s| s.trim() == "3") {
            skip(name, "kernel.yama.ptrace_scope is 3: ptrace is disabled");
            return None;
        }
        SUBREAPER.call_once(|| {
            nix::sys::prctl::set_child_subreaper(true).expect("PR_SET_CHILD_SUBREAPER");
        });
        Some(Case {
            dir: tempfile::tempdir().expect("tempdir"),
            fixtures: Vec::new(),
            _serial: serial,
        })
    }

    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `cc -O2 FLAGS -o ldcfp-NAME NAME.c`; the absolute path.
    pub(crate) fn build(&mut self, name: &str, source: &str, flags: &[&str]) -> PathBuf {
        let src = format!("{name}.c");
        write(self.dir(), &src, source);
        let out = format!("ldcfp-{name}");
        let mut args = vec!["-O2", "-Wall"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["-o", &out, &src]);
        cc(self.dir(), &args);
        let p = self.dir().join(out);
        self.fixtures.push(p.clone());
        p
    }

    /// One of the seeds' programs (`seeds::build`), or None after a SKIP naming what to
    /// install.
    pub(crate) fn seed(&mut self, test: &str, seed: Seed, linkage: Linkage) -> Option<PathBuf> {
        match seeds::build(seed, linkage, &[], self.dir()) {
            Ok(p) => {
                self.fixtures.push(p.clone());
                Some(p)
            }
            Err(e) => {
                skip(test, &e.to_string());
                None
            }
        }
    }

    /// Nothing of this test may be left: no process in this test process's tree (see
    /// [`descendants`]). Processes elsewhere on the machine that happen to run a program of
    /// the same name (another test binary's or a benchmark's forktest) are not ours and are
    /// not looked at.
    pub(crate) fn finish(self) {
        assert_no_descendants(Duration::from_secs(5));
    }
}

/// The processes of this test process's tree: its children and theirs, down to the leaves.
/// Everything a test starts is in it: ldcost and the target are our children, their children
/// below them, and anything orphaned on the way is reparented to us (PR_SET_CHILD_SUBREAPER,
/// set by [`Case::new`]).
pub(crate) fn descendants() -> Vec<Proc> {
    let me = std::process::id() as i32;
    let all = processes();
    let mut tree = vec![me];
    let mut out: Vec<Proc> = Vec::new();
    let mut grew = true;
    while grew {
        grew = false;
        for p in &all {
            if p.pid != me && tree.contains(&p.ppid) && !tree.contains(&p.pid) {
                tree.push(p.pid);
                out.push(p.clone());
                grew = true;
            }
        }
    }
    out
}

/// Waits up to `limit` for this test process's tree to be empty; fails naming what is left
/// (alive, stopped or an unreaped zombie).
pub(crate) fn assert_no_descendants(limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let left = descendants();
        if left.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            panic!(
                "processes left behind (state T/t = stopped, Z = zombie, R/S/D = alive):\n{}",
                describe(&left)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---------------------------------------------------------------------------------------------
// /proc.

/// After ldcost was killed: everything it orphaned was reparented here (subreaper). Waits
/// until every such process is dead (a zombie), at most `limit`, then reaps them. Fails if
/// one is still alive or stopped then.
pub(crate) fn reap_orphans(limit: Duration) -> usize {
    let me = std::process::id() as i32;
    let deadline = Instant::now() + limit;
    loop {
        let mine: Vec<Proc> = processes().into_iter().filter(|p| p.ppid == me).collect();
        if mine.iter().all(|p| p.state == 'Z') {
            for p in &mine {
                let _ = nix::sys::wait::waitpid(Pid::from_raw(p.pid), None);
            }
            return mine.len();
        }
        if Instant::now() > deadline {
            panic!(
                "orphans still alive or stopped {limit:?} after ldcost ended:\n{}",
                describe(&mine)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The children of every thread of `pid`.
pub(crate) fn children_of(pid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<i32>>()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// ELF oracles.

/// `readelf -sW`: the value of the first defined symbol `name` (FUNC or NOTYPE).
pub(crate) fn symbol_value(exe: &Path, name: &str) -> Option<u64> {
    stdout_of("readelf", &["-sW", exe.to_str().unwrap()])
        .lines()
        .find_map(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            let sym = c.get(7)?.split('@').next()?;
            (c.len() >= 8 && sym == name && c[6] != "UND")
                .then(|| u64::from_str_radix(c[1], 16).ok())
                .flatten()
        })
}

/// `readelf -hW`: the entry point address.
pub(crate) fn elf_entry(exe: &Path) -> u64 {
    let h = stdout_of("readelf", &["-hW", exe.to_str().unwrap()]);
    let v = h
        .lines()
        .find_map(|l| l.trim().strip_prefix("Entry point address:"))
        .expect("an entry point");
    u64::from_str_radix(v.trim().trim_start_matches("0x"), 16).unwrap()
}

/// `readelf -hW`: ET_DYN (PIE: loaded at a random bias) or not.
pub(crate) fn is_pie(exe: &Path) -> bool {
    stdout_of("readelf", &["-hW", exe.to_str().unwrap()]).contains("DYN (")
}

/// `readelf -rW`: the type and offset of the relocation of `exit`, if any.
pub(crate) fn exit_reloc(exe: &Path) -> Option<(String, u64)> {
    stdout_of("readelf", &["-rW", exe.to_str().unwrap()])
        .lines()
        .find_map(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            (c.len() >= 5 && c[4].split('@').next() == Some("exit"))
                .then(|| Some((c[2].to_string(), u64::from_str_radix(c[0], 16).ok()?)))
                .flatten()
        })
}

/// `readelf -dW` asks for immediate binding (DT_FLAGS BIND_NOW or DT_FLAGS_1 NOW).
pub(crate) fn binds_now(exe: &Path) -> bool {
    stdout_of("readelf", &["-dW", exe.to_str().unwrap()])
        .lines()
        .any(|l| l.contains("BIND_NOW") || (l.contains("(FLAGS_1)") && l.contains(" NOW")))
}

/// The at_address of a run at a symbol agrees with the symbol table: equal for a fixed-address
/// executable, the same page offset for a PIE (loaded at a page-aligned bias).
pub(crate) fn assert_at_symbol(exe: &Path, at_address: u64, value: u64, what: &str) {
    if is_pie(exe) {
        assert_eq!(
            at_address.wrapping_sub(value) % 4096,
            0,
            "{what}: {at_address:#x} vs symbol {value:#x}"
        );
    } else {
        assert_eq!(at_address, value, "{what}");
    }
}
