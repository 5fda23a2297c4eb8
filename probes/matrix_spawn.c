/*
 * matrix_spawn.c: the parent of seed 003's fork() + execl() matrix
 * (seeds/003_439cc606f831c39f.txt): static/dynamic parent x static/dynamic child, with fork(),
 * vfork() (Dan Nelson's "v" column) and posix_spawn(). Like probes/forkexec.c and
 * vforkexec.c, but one program for the three ways of creating the child, and a parent that can
 * be made large: "fork() overhead varies on the size of the process ... why copy your page
 * tables when you're going to throw them away in the next syscall?". With HEAP_MB > 0 the
 * parent maps that many MiB of anonymous memory with malloc() and writes every page before the
 * loop, so fork() has that many page-table entries to copy (vfork and posix_spawn share the
 * parent's address space and copy none).
 *
 * Build: cc -O2 -Wall -o matrix_spawn matrix_spawn.c [-static]
 * Run:   ./matrix_spawn fork|vfork|posix_spawn CHILD [count [HEAP_MB]]
 * Prints the seed's line and a machine-readable one:
 *   Avg fork() + execl() time = X.XX ms
 *   matrix_spawn: METHOD N spawns, X us per spawn (wall), heap H MiB
 * Exits 1 if a spawn failed (the child could not be executed, or exited non-zero).
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/types.h>
#include <sys/wait.h>

extern char **environ;

static double
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int
reaped_ok(pid_t pid)
{
    int status;

    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    return 0;
}

static int
with_fork(const char *child)
{
    pid_t pid = fork();

    if (pid < 0) {
        perror("fork");
        return -1;
    }
    if (pid == 0) {
        execl(child, child, (char *)NULL);
        _exit(127);
    }
    return reaped_ok(pid);
}

/* A function of its own: nothing of the caller's is live across vfork(). */
static int
with_vfork(const char *child)
{
    pid_t pid = vfork();

    if (pid < 0) {
        perror("vfork");
        return -1;
    }
    if (pid == 0) {
        execl(child, child, (char *)NULL);
        _exit(127);
    }
    return reaped_ok(pid);
}

static int
with_posix_spawn(const char *child)
{
    pid_t pid;
    char *argv[2];
    int e;

    argv[0] = (char *)child;
    argv[1] = NULL;
    e = posix_spawn(&pid, child, NULL, NULL, argv, environ);
    if (e != 0) {
        fprintf(stderr, "posix_spawn: %s\n", strerror(e));
        return -1;
    }
    return reaped_ok(pid);
}

int
main(int argc, char **argv)
{
    int (*spawn)(const char *);
    const char *method, *child;
    long count, heap_mb, i, spawns = 0, failures = 0;
    double start, wall;
    char *heap = NULL;

    if (argc < 3) {
        fprintf(stderr, "usage: %s fork|vfork|posix_spawn CHILD [count [HEAP_MB]]\n", argv[0]);
        return 2;
    }
    method = argv[1];
    child = argv[2];
    count = argc > 3 ? atol(argv[3]) : 1000;
    heap_mb = argc > 4 ? atol(argv[4]) : 0;
    if (strcmp(method, "fork") == 0)
        spawn = with_fork;
    else if (strcmp(method, "vfork") == 0)
        spawn = with_vfork;
    else if (strcmp(method, "posix_spawn") == 0)
        spawn = with_posix_spawn;
    else {
        fprintf(stderr, "%s: unknown method %s\n", argv[0], method);
        return 2;
    }
    if (heap_mb > 0) {
        heap = malloc((size_t)heap_mb << 20);
        if (heap == NULL) {
            perror("malloc");
            return 1;
        }
        /* Every page written: each has a page-table entry fork() must copy. */
        memset(heap, 1, (size_t)heap_mb << 20);
    }
    start = now_us();
    for (i = 0; i < count; i++) {
        if (spawn(child) == 0)
            spawns++;
        else
            failures++;
    }
    wall = now_us() - start;
    if (spawns > 0) {
        printf("Avg %s() + execl() time = %.2f ms\n", method, wall / spawns / 1e3);
        printf("matrix_spawn: %s %ld spawns, %.3f us per spawn (wall), heap %ld MiB\n", method,
               spawns, wall / spawns, heap_mb);
    }
    if (failures > 0) {
        fprintf(stderr, "matrix_spawn: %ld of %ld spawns of %s failed\n", failures, count, child);
        return 1;
    }
    /* The heap stays mapped to the end; its first byte keeps the compiler from dropping it. */
    return heap != NULL && heap[0] != 1;
}
