//! The fixtures' C sources.

// ---------------------------------------------------------------------------------------------
// Fixture sources. Each is built as `cc -O0 [FLAGS] -o ldcpt-NAME NAME.c` (see Case::build);
// the `ldcpt-` prefix makes the fixtures' command names unique to this file, so the /proc scan
// can find them even as zombies (whose cmdline is empty).

/// Prints a line and exits 0. Built as PIE (`-pie -fPIE`), non-PIE (`-no-pie`), `-static`
/// and `-static-pie`.
pub(crate) const HELLO: &str = r#"#include <stdio.h>
int main(void) { puts("hello from an ldcost fixture"); return 0; }
"#;

/// Exits with status 3.
pub(crate) const EXIT3: &str = "int main(void) { return 3; }\n";

/// Dies of a real SIGSEGV: a store through a null pointer read from a volatile (so the
/// compiler can neither prove it null nor turn it into a trap instruction).
pub(crate) const SEGV: &str = r#"static int *volatile nowhere = 0;
int main(void) { *nowhere = 1; return 0; }
"#;

/// Sleeps 300 s in main: runs past any short --timeout and past [`super::harness::STOP_GUARD`],
/// so that a lost SIGINT or a --timeout not obeyed costs minutes, which no load explains.
pub(crate) const SLEEPER: &str = r#"#include <unistd.h>
int main(void) { sleep(300); return 0; }
"#;

/// Raises SIGWINCH (ignored by default) in a loop forever: traced, it spends its life in
/// signal-delivery stops, so /proc catches it in a ptrace stop (state `t`) at once, and its
/// tracer is busy at one stop after another.
pub(crate) const SIGSTORM: &str = r#"#include <signal.h>
int main(void) { for (;;) raise(SIGWINCH); }
"#;

/// Exits 0 at once, except with LD_DEBUG in its environment (ldcost's LD_DEBUG=statistics
/// run): then it sleeps 300 s in main.
pub(crate) const LD_DEBUG_SLEEPER: &str = r#"#include <stdlib.h>
#include <unistd.h>
int main(void) { if (getenv("LD_DEBUG")) sleep(300); return 0; }
"#;

/// Four threads created in main spin a little and are joined. Built with `-pthread`.
pub(crate) const THREADS: &str = r#"#include <pthread.h>
static void *spin(void *arg) {
    volatile unsigned long x = 0;
    for (unsigned long i = 0; i < 3000000; i++) x += i;
    return arg;
}
int main(void) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        if (pthread_create(&t[i], 0, spin, 0)) return 1;
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    return 0;
}
"#;

/// A shared library whose constructor starts a thread that dlopens libm and is joined: ld.so
/// code runs in a second thread while ld.so is still running initializers. Built with
/// `cc -O0 -shared -fPIC -pthread -o libldcptctor.so ctor.c`.
pub(crate) const CTOR_THREAD_LIB: &str = r#"#include <dlfcn.h>
#include <pthread.h>
static void *opener(void *arg) { return dlopen("libm.so.6", RTLD_NOW); }
static int opened;
__attribute__((constructor)) static void start(void) {
    pthread_t t;
    void *h = 0;
    if (pthread_create(&t, 0, opener, 0) == 0 && pthread_join(t, &h) == 0 && h) opened = 1;
}
int ldcpt_ctor_status(void) { return opened ? 0 : 4; }
"#;

/// A shared library whose constructor forks; the child carries on with the start-up (through
/// ld.so and the entry point) and returns 0 from main; the parent's main returns 0 only if
/// the child did. Built with `cc -O0 -shared -fPIC -o libldcptctor.so ctor.c`.
pub(crate) const CTOR_FORK_LIB: &str = r#"#include <sys/wait.h>
#include <unistd.h>
static pid_t child = -1;
__attribute__((constructor)) static void start(void) { child = fork(); }
int ldcpt_ctor_status(void) {
    if (child == 0) return 0;
    int st;
    if (child < 0 || waitpid(child, &st, 0) != child) return 2;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 3;
}
"#;

/// The program using either library: exits with `ldcpt_ctor_status()`. Built with
/// `cc -O0 -o ldcpt-usector usector.c -L. -lldcptctor -Wl,-rpath,$ORIGIN`.
pub(crate) const USE_CTOR: &str = r#"int ldcpt_ctor_status(void);
int main(void) { return ldcpt_ctor_status(); }
"#;

/// `deny SYSCALL PROGRAM ARGS...`: installs a seccomp filter that makes SYSCALL (`ptrace` or
/// `perf_event_open`) fail with EPERM, then execs PROGRAM: what a container's default seccomp
/// profile does to a tool that was not given CAP_SYS_PTRACE / CAP_PERFMON. The filter is
/// inherited by everything PROGRAM starts.
pub(crate) const DENY: &str = r#"#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
int main(int argc, char **argv) {
    if (argc < 3) return 2;
    long nr = strcmp(argv[1], "ptrace") == 0 ? SYS_ptrace : SYS_perf_event_open;
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = { sizeof f / sizeof f[0], f };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
        perror("deny: seccomp");
        return 99;
    }
    execv(argv[2], argv + 2);
    perror("deny: execv");
    return 127;
}
"#;

/// `NTH COUNT READY MODE`: appends a byte to COUNT (so it knows which of ldcost's runs it is);
/// every run exits 0 at once but the NTH: that one writes its pid to READY (a FIFO the test
/// blocks on, so no sleep is needed) and then, MODE `storm`, raises SIGWINCH forever (a traced
/// run spends its life in signal-delivery stops, where the test's SIGKILL finds it), or MODE
/// `sleep`, sleeps 300 s (past any short --timeout).
pub(crate) const NTH_RUN: &str = r#"#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc != 5) return 2;
    int fd = open(argv[2], O_WRONLY | O_APPEND | O_CREAT, 0600);
    if (fd < 0 || write(fd, "x", 1) != 1) return 2;
    close(fd);
    struct stat st;
    if (stat(argv[2], &st) != 0) return 2;
    if (st.st_size != atol(argv[1])) return 0;
    FILE *r = fopen(argv[3], "w");
    if (!r) return 2;
    fprintf(r, "%d\n", (int)getpid());
    fclose(r);
    if (strcmp(argv[4], "storm") == 0) for (;;) raise(SIGWINCH);
    sleep(300);
    return 0;
}
"#;

/// `OUT`: reads its standard input to the end, counting lines, lists its open descriptors
/// (/proc/self/fd, less the directory's own), and appends `lines=N fds=A,B,...` to OUT (every
/// run's observation, shown or not) and prints it.
pub(crate) const OBSERVER: &str = r#"#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    if (argc != 2) return 2;
    int lines = 0, c;
    while ((c = getchar()) != EOF) if (c == '\n') lines++;
    char seen[512] = "";
    DIR *d = opendir("/proc/self/fd");
    if (!d) return 2;
    int own = dirfd(d);
    int fds[64], n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 64) {
        if (e->d_name[0] == '.') continue;
        int fd = atoi(e->d_name);
        if (fd != own) fds[n++] = fd;
    }
    closedir(d);
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (fds[j] < fds[i]) { int t = fds[i]; fds[i] = fds[j]; fds[j] = t; }
    for (int i = 0; i < n; i++) {
        char b[16];
        snprintf(b, sizeof b, i ? ",%d" : "%d", fds[i]);
        strcat(seen, b);
    }
    FILE *o = fopen(argv[1], "a");
    if (!o) return 2;
    fprintf(o, "lines=%d fds=%s\n", lines, seen);
    fclose(o);
    printf("lines=%d fds=%s\n", lines, seen);
    return 0;
}
"#;

/// `READY`: writes its pid to READY (a FIFO), stops itself with SIGSTOP, and once resumed
/// prints whether its SIGCONT handler ran before raise() returned (the resumption came from a
/// SIGCONT, not from a stop that never happened).
pub(crate) const STOPPER: &str = r#"#include <signal.h>
#include <stdio.h>
#include <unistd.h>
static volatile sig_atomic_t continued = 0;
static void on_cont(int s) { (void)s; continued = 1; }
int main(int argc, char **argv) {
    if (argc != 2) return 2;
    signal(SIGCONT, on_cont);
    FILE *r = fopen(argv[1], "w");
    if (!r) return 2;
    fprintf(r, "%d\n", (int)getpid());
    fclose(r);
    raise(SIGSTOP);
    printf("resumed continued=%d\n", (int)continued);
    return 0;
}
"#;

/// The fork probe's child (`--child exec:`): writes its parent's pid (the target, in the fork
/// probe's loop) to the FIFO at READY when a reader waits there, and exits. Opened without
/// blocking, so the children after the reader has gone exit at once. `READY` is replaced by
/// the FIFO's path as a C string.
pub(crate) const PARENT_TELLER: &str = r#"#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int main(void) {
    int fd = open(READY, O_WRONLY | O_NONBLOCK);
    if (fd >= 0) {
        dprintf(fd, "%d\n", (int)getppid());
        close(fd);
    }
    _exit(0);
}
"#;

/// Sends itself 100 real-time signals in main and counts them in a handler: exits 7 when all
/// arrived, 1 otherwise (a signal nix's wait status cannot name must still reach it).
pub(crate) const RTSIG: &str = r#"#include <signal.h>
#include <unistd.h>
static volatile sig_atomic_t got;
static void on(int s) { (void)s; got++; }
int main(void) {
    signal(SIGRTMIN + 1, on);
    union sigval v = {0};
    for (int i = 0; i < 100; i++) sigqueue(getpid(), SIGRTMIN + 1, v);
    return got == 100 ? 7 : 1;
}
"#;
