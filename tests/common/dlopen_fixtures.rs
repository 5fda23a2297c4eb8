//! C fixtures that load libraries after `main` (dlopen, dlclose, constructors that dlopen or
//! start threads, lazy binding), and the oracle for them: `LD_DEBUG=files` and
//! `LD_DEBUG=bindings` of the same program run untraced.

use std::path::{Path, PathBuf};
use std::process::Command;

/// How many distinct functions of libL libM's `m_run` calls (each one lazily bound once).
pub const LAZY_N: usize = 5;

/// How many dlopen/dlclose cycles the `cycles` mode makes.
pub const CYCLES: usize = 1000;

const PROG: &str = r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <iconv.h>
#include <link.h>
#include <pwd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static char path[4096];
static const char *lib(const char *name) {
    snprintf(path, sizeof path, "%s/%s", getenv("FIXDIR"), name);
    return path;
}
static void *open_or_say(const char *name, int mode) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", getenv("FIXDIR"), name);
    void *h = dlopen(p, mode);
    if (!h) fprintf(stderr, "dlopen %s: %s\n", name, dlerror());
    return h;
}
static pthread_barrier_t bar;
static void *opener(void *arg) {
    pthread_barrier_wait(&bar);
    return open_or_say((const char *)arg, RTLD_NOW);
}
static volatile sig_atomic_t got;
static volatile int sender_done, lost;
static void on_signal(int s) { (void)s; got++; }
#define SIGS 300
/* One SIGUSR1 at a time, each waited for (standard signals do not queue): a signal lost
   while its thread was held by the tracer is one never handled. */
static void *sender(void *arg) {
    pthread_t to = *(pthread_t *)arg;
    for (int i = 0; i < SIGS && !lost; i++) {
        pthread_kill(to, SIGUSR1);
        int waited = 0;
        while (got <= i && waited++ < 20000) usleep(100);
        if (got <= i) lost = 1;
    }
    sender_done = 1;
    return 0;
}
void m_run(void);
int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "chain")) {
        if (!open_or_say("libA.so", RTLD_NOW | RTLD_LOCAL)) return 1;
        if (!open_or_say("libC.so", RTLD_LAZY | RTLD_GLOBAL)) return 1;
    } else if (!strcmp(mode, "already")) {
        if (!dlopen("libc.so.6", RTLD_NOW)) return 1;
        if (!open_or_say("libA.so", RTLD_NOW)) return 1;
        if (!open_or_say("libA.so", RTLD_NOW)) return 1;
    } else if (!strcmp(mode, "fail")) {
        if (dlopen(lib("missing/libnothere.so"), RTLD_NOW)) return 1;
        if (dlopen(lib("notelf.so"), RTLD_NOW)) return 1;
        if (!open_or_say("libB.so", RTLD_NOW)) return 1;
    } else if (!strcmp(mode, "ctor")) {
        if (!open_or_say("libD.so", RTLD_NOW)) return 1;
    } else if (!strcmp(mode, "threads")) {
        pthread_t t1, t2;
        pthread_barrier_init(&bar, NULL, 2);
        pthread_create(&t1, NULL, opener, "libA.so");
        pthread_create(&t2, NULL, opener, "libC.so");
        void *r1, *r2;
        pthread_join(t1, &r1);
        pthread_join(t2, &r2);
        if (!r1 || !r2) return 1;
    } else if (!strcmp(mode, "reopen")) {
        void *h = open_or_say("libA.so", RTLD_NOW);
        if (!h || dlclose(h)) return 1;
        if (!open_or_say("libA.so", RTLD_NOW)) return 1;
    } else if (!strcmp(mode, "spin")) {
        void *h = open_or_say("libS.so", RTLD_NOW);
        if (!h) return 1;
        void (*join)(void) = (void (*)(void))dlsym(h, "spin_join");
        if (!join) return 1;
        join();
    } else if (!strcmp(mode, "cycles")) {
        for (int i = 0; i < CYCLES; i++) {
            void *h = open_or_say("libB.so", RTLD_NOW);
            if (!h || dlclose(h)) return 1;
        }
    } else if (!strcmp(mode, "lazy")) {
        m_run();
    } else if (!strcmp(mode, "vfork")) {
        if (!open_or_say("libA.so", RTLD_NOW)) return 1;
        /* execl's first call, bound lazily in the child, in the parent's memory. */
        pid_t p = vfork();
        if (p == 0) {
            execl("/bin/true", "true", (char *)0);
            _exit(1);
        }
        int st;
        if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
        if (!open_or_say("libC.so", RTLD_NOW)) return 1;
    } else if (!strcmp(mode, "signals")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESTART;
        sigaction(SIGUSR1, &sa, 0);
        pthread_t self = pthread_self(), t;
        pthread_create(&t, 0, sender, &self);
        while (!sender_done) {
            void *h = open_or_say("libB.so", RTLD_NOW);
            if (!h || dlclose(h)) return 1;
        }
        pthread_join(t, 0);
        if (lost || got != SIGS) {
            fprintf(stderr, "%d of %d signals\n", (int)got, SIGS);
            return 1;
        }
    } else if (!strcmp(mode, "fork")) {
        if (!open_or_say("libA.so", RTLD_NOW)) return 1;
        pid_t p = fork();
        if (p == 0) {
            /* Untraced: an int3 of ldcost's left here would kill it with SIGTRAP. */
            if (!open_or_say("libC.so", RTLD_NOW)) _exit(1);
            m_run();
            _exit(0);
        }
        int st;
        if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return 1;
    } else if (!strcmp(mode, "iconv")) {
        /* UTF-16 is built into libc; ISO-8859-2 is a gconv module libc loads itself. */
        iconv_t cd = iconv_open("UTF-16", "ISO-8859-2");
        if (cd == (iconv_t)-1) return 1;
        iconv_close(cd);
    } else if (!strcmp(mode, "nss")) {
        /* A user no database has: every NSS module nsswitch.conf names for passwd after
           "files" (built into libc) is loaded by libc to ask it. */
        if (getpwnam("ldcost-no-such-user")) return 1;
    } else if (!strcmp(mode, "backtrace")) {
        /* The unwinder, libgcc_s, is loaded by libc on first use. */
        void *frames[8];
        if (backtrace(frames, 8) <= 0) return 1;
    } else if (!strcmp(mode, "scope_global") || !strcmp(mode, "scope_local")
               || !strcmp(mode, "deepbind")) {
        /* scope_val is defined by libG (opened first) and by libQ, libP's dependency: the
           definition libP binds to tells which scope ld.so searched first. */
        int global = strcmp(mode, "scope_local") != 0;
        int deep = !strcmp(mode, "deepbind");
        if (!open_or_say("libG.so", RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL))) return 1;
        void *h = open_or_say("libP.so", RTLD_NOW | (deep ? RTLD_DEEPBIND : 0));
        if (!h) return 1;
        int (*p)(void) = (int (*)(void))dlsym(h, "p");
        if (!p || p() != (global && !deep ? 1 : 2) + 4) return 1;
    } else if (!strcmp(mode, "dlmopen")) {
        /* A new namespace, then a second library into the same one: libN needs libB, which
           libA's load put in that namespace already. */
        void *h = dlmopen(LM_ID_NEWLM, lib("libA.so"), RTLD_NOW);
        if (!h) { fprintf(stderr, "dlmopen: %s\n", dlerror()); return 1; }
        Lmid_t ns;
        if (dlinfo(h, RTLD_DI_LMID, &ns) != 0) return 1;
        void *h2 = dlmopen(ns, lib("libN.so"), RTLD_NOW);
        if (!h2) { fprintf(stderr, "dlmopen 2: %s\n", dlerror()); return 1; }
    } else {
        return 2;
    }
    return 7;
}
"#;

const LIB_S: &str = r#"
#include <pthread.h>
#include <time.h>
static pthread_t th[4];
static double cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}
static void *spin(void *arg) {
    double t0 = cpu();
    volatile unsigned long x = 0;
    while (cpu() - t0 < 0.020) x++;
    return arg;
}
__attribute__((constructor)) static void start(void) {
    for (int i = 0; i < 4; i++) pthread_create(&th[i], 0, spin, 0);
}
void spin_join(void) {
    for (int i = 0; i < 4; i++) pthread_join(th[i], 0);
}
"#;

const LIB_D: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void start(void) {
    char p[4096];
    snprintf(p, sizeof p, "%s/libE.so", getenv("FIXDIR"));
    if (!dlopen(p, RTLD_NOW)) abort();
}
"#;

/// The built fixtures: the program (`prog MODE`, exit status 7 on success) and its libraries.
pub struct Fixtures {
    pub dir: tempfile::TempDir,
    pub prog: PathBuf,
}

impl Fixtures {
    /// The environment the program needs (where its libraries are).
    pub fn env(&self) -> Vec<(String, String)> {
        vec![("FIXDIR".into(), self.dir.path().display().to_string())]
    }

    pub fn lib(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// Builds every fixture in a new temporary directory.
pub fn build() -> Fixtures {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let ds = d.display().to_string();
    let rpath = format!("-Wl,-rpath,{ds}");
    let lazy = "-Wl,-z,lazy";
    super::write(d, "libB.c", "int b(void) { return 2; }\n");
    super::write(
        d,
        "libA.c",
        "int b(void);\nint a(void) { return b() + 1; }\n",
    );
    super::write(d, "libC.c", "int c(void) { return 3; }\n");
    super::write(d, "libE.c", "int e(void) { return 5; }\n");
    super::write(d, "libD.c", LIB_D);
    super::write(
        d,
        "libN.c",
        "int b(void);\nint n(void) { return b() + 9; }\n",
    );
    super::write(d, "libG.c", "int scope_val = 1;\n");
    super::write(
        d,
        "libQ.c",
        "int scope_val = 2;\nint q(void) { return 4; }\n",
    );
    super::write(
        d,
        "libP.c",
        "extern int scope_val;\nint q(void);\nint p(void) { return scope_val + q(); }\n",
    );
    super::write(d, "libS.c", LIB_S);
    let ls: String = (1..=LAZY_N)
        .map(|i| format!("int l{i}(void) {{ return {i}; }}\n"))
        .collect();
    super::write(d, "libL.c", &ls);
    let decl: String = (1..=LAZY_N).map(|i| format!("int l{i}(void);\n")).collect();
    let calls: String = (1..=LAZY_N).map(|i| format!("s += l{i}();\n")).collect();
    super::write(
        d,
        "libM.c",
        &format!("{decl}volatile int s;\nvoid m_run(void) {{\n{calls}}}\n"),
    );
    super::write(d, "notelf.so", "this is not an ELF file\n");
    super::write(d, "prog.c", &PROG.replace("CYCLES", &CYCLES.to_string()));
    let shared = |out: &str, src: &str, extra: &[&str]| {
        let mut args = vec!["-shared", "-fPIC", "-O1", "-o", out, src];
        args.extend_from_slice(extra);
        super::cc(d, &args);
    };
    shared("libB.so", "libB.c", &[]);
    shared("libA.so", "libA.c", &["-L.", "-lB", &rpath]);
    shared("libC.so", "libC.c", &[]);
    shared("libE.so", "libE.c", &[]);
    shared("libD.so", "libD.c", &[]);
    shared("libG.so", "libG.c", &[]);
    shared("libQ.so", "libQ.c", &[]);
    shared("libP.so", "libP.c", &["-L.", "-lQ", &rpath]);
    shared("libN.so", "libN.c", &["-L.", "-lB", &rpath]);
    shared("libS.so", "libS.c", &["-pthread"]);
    shared("libL.so", "libL.c", &[lazy]);
    shared("libM.so", "libM.c", &["-L.", "-lL", &rpath, lazy]);
    super::cc(
        d,
        &[
            "-O1", "-o", "prog", "prog.c", "-pthread", "-ldl", "-L.", "-lM", &rpath, lazy,
        ],
    );
    let prog = d.join("prog");
    Fixtures { dir, prog }
}

/// What `LD_DEBUG=files` says happened after `main` (after "transferring control"): the
/// objects ld.so mapped ("file=X [N];  generating link map"), in order, and the objects whose
/// initializers it called ("calling init: X").
#[derive(Debug, Default)]
pub struct LdDebugFiles {
    pub mapped: Vec<String>,
    pub inits: Vec<String>,
    pub status: Option<i32>,
}

/// The text after the `PID:\t` prefix of an LD_DEBUG line, for the first process only.
fn ld_debug_lines(text: &str) -> Vec<String> {
    let mut first: Option<String> = None;
    let mut out = Vec::new();
    for l in text.lines() {
        let t = l.trim_start();
        let Some((pid, rest)) = t.split_once(':') else {
            continue;
        };
        if pid.is_empty() || !pid.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if first.get_or_insert_with(|| pid.to_string()) != pid {
            continue;
        }
        out.push(rest.trim().to_string());
    }
    out
}

/// The lines after ld.so's "transferring control" (what it did after the program started).
fn after_main_lines(text: &str) -> Vec<String> {
    ld_debug_lines(text)
        .into_iter()
        .skip_while(|l| !l.starts_with("transferring control:"))
        .skip(1)
        .collect()
}

/// Runs `argv` untraced with `LD_DEBUG=files` (output to a file) and reads it.
pub fn ld_debug_files(argv: &[&str], env: &[(String, String)]) -> LdDebugFiles {
    let (text, status) = ld_debug(argv, env, "files");
    let mut r = LdDebugFiles {
        status,
        ..Default::default()
    };
    for l in after_main_lines(&text) {
        if let Some(rest) = l.strip_prefix("file=") {
            if rest.ends_with("generating link map") {
                if let Some((name, _)) = rest.rsplit_once(" [") {
                    r.mapped.push(name.to_string());
                }
            }
        } else if let Some(rest) = l.strip_prefix("calling init: ") {
            r.inits.push(rest.to_string());
        }
    }
    r
}

/// Lazy bindings after `main` whose PLT slot is in `object` (`LD_DEBUG=bindings`' "binding
/// file OBJECT [0] to … normal symbol" lines after "transferring control").
pub fn ld_debug_binds(argv: &[&str], env: &[(String, String)], object: &Path) -> usize {
    let (text, _) = ld_debug(argv, env, "bindings");
    let want = format!("binding file {} [", object.display());
    after_main_lines(&text)
        .iter()
        .filter(|l| l.starts_with(&want) && l.contains("normal symbol"))
        .count()
}

fn ld_debug(argv: &[&str], env: &[(String, String)], what: &str) -> (String, Option<i32>) {
    let out = tempfile::tempdir().expect("tempdir");
    let base = out.path().join("ld");
    let mut child = Command::new(argv[0])
        .args(&argv[1..])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("LD_DEBUG", what)
        .env("LD_DEBUG_OUTPUT", &base)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run the oracle");
    let pid = child.id();
    let st = child.wait().expect("wait for the oracle");
    // LD_DEBUG_OUTPUT writes one file per process, named BASE.PID.
    let text = std::fs::read_to_string(out.path().join(format!("ld.{pid}"))).unwrap_or_default();
    (text, st.code())
}

/// What one object's relocation looked up, by glibc's own account.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RelocationLookups {
    /// The definer (file name) of each lookup that found one.
    pub definers: Vec<String>,
    /// Objects probed ("symbol=S;  lookup in file=F" lines), the lookups nothing answers
    /// included.
    pub probes: u64,
}

/// The lookups each object loaded after `main` made while it was relocated, by
/// `LD_DEBUG=reloc,symbols,bindings,files` of the program run untraced: per object X (file
/// name), the lines between "relocation processing: X" and the next "relocation processing"
/// or "calling init" (later lookups are `dlsym` and lazy binding, not relocation): each
/// "binding file X [N] to Y [N]: normal symbol" line's Y, and the "lookup in file" lines.
/// A binding of another object inside X's relocation (ld.so's own, for the vDSO) is left
/// out; the "lookup in file" lines do not say whose they are, so its probes are not.
/// `status`: the exit status the program must end with.
pub fn ld_debug_relocation_lookups(
    argv: &[&str],
    env: &[(String, String)],
    status: i32,
) -> std::collections::BTreeMap<String, RelocationLookups> {
    let base = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    let (text, got) = ld_debug(argv, env, "reloc,symbols,bindings,files");
    assert_eq!(got, Some(status), "the exit status untraced");
    let mut out: std::collections::BTreeMap<String, RelocationLookups> = Default::default();
    let mut current: Option<String> = None;
    for l in after_main_lines(&text) {
        if let Some(x) = l.strip_prefix("relocation processing: ") {
            let x = x.strip_suffix(" (lazy)").unwrap_or(x);
            let x = base(x);
            out.entry(x.clone()).or_default();
            current = Some(x);
        } else if l.starts_with("calling init: ") {
            current = None;
        } else if let Some(x) = &current {
            if l.starts_with("symbol=") && l.contains(";  lookup in file=") {
                out.entry(x.clone()).or_default().probes += 1;
            } else if let Some(rest) = l.strip_prefix("binding file ") {
                let (Some((from, rest)), true) =
                    (rest.split_once(" ["), rest.contains("normal symbol"))
                else {
                    continue;
                };
                let Some((_, rest)) = rest.split_once(" to ") else {
                    continue;
                };
                let Some((y, _)) = rest.split_once(" [") else {
                    continue;
                };
                if base(from) != *x {
                    continue;
                }
                out.entry(x.clone()).or_default().definers.push(base(y));
            }
        }
    }
    out
}
