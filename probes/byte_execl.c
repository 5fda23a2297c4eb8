/*
 * byte_execl.c: the "Execl Throughput Test" of the BYTE UNIX Benchmarks 3.11, as run in seed
 * 002 (seeds/002_12036fb490721da6.txt: 59.1, 55.0 and 129.9 lps on a 486/33 under Linux
 * 0.97). BYTE's execl.c replaces itself with itself by execl() over and over, carrying the
 * count and the start time in its arguments, for a fixed number of seconds; the score is
 * execs per second ("lps"). No fork: each loop is one execve() of this program, its loading
 * (for a dynamic build: ld.so, every library) and its start-up to main(). Rewritten from the
 * description so that it builds against a modern libc.
 *
 * Build: cc -O2 -Wall -o byte_execl byte_execl.c [-static]
 * Run:   /ABSOLUTE/PATH/byte_execl [seconds]      (default 9, BYTE's duration for this test)
 *   (argv[0] is exec'd again, so it must be a path that names this program)
 * Prints one machine-readable line:
 *   byte_execl: N execs in S s, X lps (wall)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double
now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
    char secs[64], iter[32], start[64];
    double seconds, t0, wall;
    unsigned long n;

    if (argc == 4) {            /* a re-exec: SECONDS ITERATIONS START */
        seconds = atof(argv[1]);
        n = strtoul(argv[2], NULL, 10);
        t0 = atof(argv[3]);
    } else {                    /* the first call */
        seconds = argc > 1 ? atof(argv[1]) : 9.0;
        n = 0;
        t0 = now_s();
        if (seconds <= 0) {
            fprintf(stderr, "usage: %s [seconds > 0]\n", argv[0]);
            return 2;
        }
    }
    wall = now_s() - t0;
    if (wall >= seconds) {
        printf("byte_execl: %lu execs in %.3f s, %.1f lps (wall)\n", n, wall, n / wall);
        return 0;
    }
    snprintf(secs, sizeof secs, "%.6f", seconds);
    snprintf(iter, sizeof iter, "%lu", n + 1);
    snprintf(start, sizeof start, "%.9f", t0);
    execl(argv[0], argv[0], secs, iter, start, (char *)NULL);
    perror("execl");
    return 1;
}
