/*
 * forktime - execute many forks for timing
 *
 * From seed 000 (seeds/000_1b3ec4cf5ab103e9.txt): geoff's 1989 benchmark, run as
 * `time ./forktime 1000` static and dynamic on SunOS 3.5 and 4.0. The loop below is the seed's,
 * in ANSI C (the K&R definition, `#define NULL 0` and `long atol();` give warnings or errors
 * with a modern libc). The seed printed nothing and was timed by the shell's `time`; ldcost
 * needs the same three figures from the program itself, so after the loop it prints one
 * machine-readable line:
 *
 *   forktime: N forks, W us per fork (wall), parent cpu P us per fork (user U, sys S),
 *   children cpu C us per fork (user U, sys S)
 *
 * (one line). Wall time is CLOCK_MONOTONIC around the loop. "parent cpu" is getrusage(RUSAGE_SELF)
 * after the loop less before it (start-up is not a fork): mostly the fork() and wait() system
 * calls. "children cpu" is the same difference of getrusage(RUSAGE_CHILDREN): what the reaped
 * children spent (their exit, their page faults). The user/sys split is the kernel's
 * tick-sampled ratio applied to the precise run time (cputime_adjust in kernel/sched/cputime.c),
 * and where one side has no tick at all the whole time goes to the other: a child that lives
 * less than a tick is reported as all user time, and the parent's user time often reads 0.
 * Only the sums are exact.
 *
 * Build: cc -O2 -Wall -o forktime forktime.c [-static]
 * Run:   ./forktime [count]      (count defaults to 1000, as in the seed)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>

static double
now_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double
tv_us(struct timeval tv)
{
        return tv.tv_sec * 1e6 + tv.tv_usec;
}

int
main(int argc, char **argv)
{
        register long count = 1000;
        long forks = 0;
        double start, wall;
        struct rusage self0, children0, self, children;

        if (argc > 1)
                count = atol(argv[1]);
        /* The loop's share only: the process's start-up (exec, ld.so) is not a fork. */
        getrusage(RUSAGE_SELF, &self0);
        getrusage(RUSAGE_CHILDREN, &children0);
        start = now_us();
        while (count-- > 0) {
                register int pid = fork();

                if (pid < 0)
                        perror(argv[0]);
                else if (pid == 0)      /* child */
                        _exit(0);
                else {
                        register int deadpid;

                        while ((deadpid = wait((int *)NULL)) != pid && deadpid != -1)
                                ;
                        forks++;
                }
        }
        wall = now_us() - start;
        getrusage(RUSAGE_SELF, &self);
        getrusage(RUSAGE_CHILDREN, &children);
        if (forks > 0) {
                double pu = (tv_us(self.ru_utime) - tv_us(self0.ru_utime)) / forks;
                double ps = (tv_us(self.ru_stime) - tv_us(self0.ru_stime)) / forks;
                double cu = (tv_us(children.ru_utime) - tv_us(children0.ru_utime)) / forks;
                double cs = (tv_us(children.ru_stime) - tv_us(children0.ru_stime)) / forks;

                printf("forktime: %ld forks, %.3f us per fork (wall), "
                       "parent cpu %.3f us per fork (user %.3f, sys %.3f), "
                       "children cpu %.3f us per fork (user %.3f, sys %.3f)\n",
                       forks, wall / forks, pu + ps, pu, ps, cu + cs, cu, cs);
        } else
                printf("forktime: 0 forks\n");
        /* _exit() does not flush stdio, so flush the line first. */
        fflush(stdout);
        _exit(0);
}
