/*
 * vforkexec.c: the "v" column of seed 003 (seeds/003_439cc606f831c39f.txt): the fork() +
 * execl() experiment of forkexec.c run with vfork() instead ("why copy your page tables when
 * you're going to throw them away in the next syscall?"). The parent is suspended until the
 * child has exec'd or exited; the child touches nothing but execl() and _exit().
 *
 * Build: cc -O2 -Wall -o vforkexec vforkexec.c [-static]
 * Run:   ./vforkexec CHILD [count]     (count defaults to 1000)
 * Prints the seed's line and a machine-readable one:
 *   Avg vfork() + execl() time = X.XX ms
 *   vforkexec: N spawns, X.XXX us per spawn (wall)
 * Exits 1 if a spawn failed (the child could not be executed, or exited non-zero).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/types.h>
#include <sys/wait.h>

static double
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/*
 * One vfork() + execl() + wait: 0 if the child ran and exited 0. A function of its own so
 * that no variable of the loop is live across vfork() (the child shares the parent's stack
 * until it execs; gcc warns, rightly, that such variables might be clobbered).
 */
static int
spawn(const char *child)
{
    int status;
    pid_t pid = vfork();

    if (pid < 0) {
        perror("vfork");
        return -1;
    }
    if (pid == 0) {
        execl(child, child, (char *)NULL);
        _exit(127); /* exec failed */
    }
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    return 0;
}

int
main(int argc, char **argv)
{
    const char *child;
    long count, i, spawns = 0, failures = 0;
    double start, wall;

    if (argc < 2) {
        fprintf(stderr, "usage: %s CHILD [count]\n", argv[0]);
        return 2;
    }
    child = argv[1];
    count = argc > 2 ? atol(argv[2]) : 1000;
    start = now_us();
    for (i = 0; i < count; i++) {
        if (spawn(child) == 0)
            spawns++;
        else
            failures++;
    }
    wall = now_us() - start;
    if (spawns > 0) {
        printf("Avg vfork() + execl() time = %.2f ms\n", wall / spawns / 1e3);
        printf("vforkexec: %ld spawns, %.3f us per spawn (wall)\n", spawns, wall / spawns);
    }
    if (failures > 0) {
        fprintf(stderr, "vforkexec: %ld of %ld spawns of %s failed\n", failures, count, child);
        return 1;
    }
    return 0;
}
