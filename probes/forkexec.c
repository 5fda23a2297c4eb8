/*
 * forkexec.c: the fork() + execl() experiment of seed 003 (seeds/003_439cc606f831c39f.txt),
 * Sasha Pachev's and Dan Nelson's "Avg fork() + execl() time" for the 2x2 matrix
 * static/dynamic parent x static/dynamic child (1998-99). The seed gives only the results, not
 * the program; this is the experiment as described: the parent forks, the child execl()s the
 * child program, the parent waits for it; repeated `count` times.
 *
 * Build: cc -O2 -Wall -o forkexec forkexec.c [-static]
 * Run:   ./forkexec CHILD [count]      (count defaults to 1000)
 * Prints the seed's line and a machine-readable one:
 *   Avg fork() + execl() time = X.XX ms
 *   forkexec: N spawns, X.XXX us per spawn (wall)
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
        int status;
        pid_t pid = fork();

        if (pid < 0) {
            perror("fork");
            failures++;
            continue;
        }
        if (pid == 0) {
            execl(child, child, (char *)NULL);
            _exit(127); /* exec failed */
        }
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failures++;
        else
            spawns++;
    }
    wall = now_us() - start;
    if (spawns > 0) {
        printf("Avg fork() + execl() time = %.2f ms\n", wall / spawns / 1e3);
        printf("forkexec: %ld spawns, %.3f us per spawn (wall)\n", spawns, wall / spawns);
    }
    if (failures > 0) {
        fprintf(stderr, "forkexec: %ld of %ld spawns of %s failed\n", failures, count, child);
        return 1;
    }
    return 0;
}
