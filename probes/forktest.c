/*
 * forktest.c, from seed 001 (seeds/001_072174e70058038d.txt): Chris Brannon's 2009 program
 * for "[9fans] impact of dynamic libraries on the speed of fork()". 25000 forks, the child
 * calls exit(42), the parent waits; then it prints "N forks per second" exactly as the seed
 * does.
 *
 * Two changes, both additions:
 * - the iteration count may be given as argv[1] (default 25000, the seed's);
 * - a second line gives wall-clock forks per second. The seed divides by clock(), which is the
 *   *parent's* CPU time (user + system), not the wall time of a fork + wait round trip: the
 *   time the child runs (its exit(), its page faults, the teardown of its address space) and
 *   the time the parent sleeps in wait() are not in it. Both figures are printed; ldcost says
 *   which is which.
 *
 * Build (the seed's transcript): cc -o forktest forktest.c [-static]
 *   or with unused libraries:    cc -o forktest forktest.c -Wl,--no-as-needed \
 *                                   -lm -lncurses -lpthread -lresolv -lssl -lreadline
 * Run:   ./forktest [count]
 */
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/types.h>
#include <sys/wait.h>

static double
wall_secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
    double elapsed_secs;
    int forks = 0;
    int count = argc > 1 ? atoi(argv[1]) : 25000;
    double wall_start = wall_secs();
    clock_t start = clock(), elapsed;
    int i;
    for(i = 0; i < count; i++) {
	int waitstatus;
	switch (fork()) {
	case -1:
	    perror("fork");
	    break;
	case 0:
	    exit(42);
	default:
	    wait(&waitstatus);
	    ++forks;
	    break;
	}
    }
    elapsed = clock() - start;
    elapsed_secs = (double)elapsed / CLOCKS_PER_SEC;
    printf("%g forks per second\n", (double)forks / elapsed_secs);
    printf("wall: %g forks per second\n", (double)forks / (wall_secs() - wall_start));
    exit(0);
}
