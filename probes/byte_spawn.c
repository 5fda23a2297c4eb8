/*
 * byte_spawn.c: the "Process Creation Test" of the BYTE UNIX Benchmarks 3.11, as run in seed 002
 * (seeds/002_12036fb490721da6.txt: 64.2, 57.9 and 102.1 lps on a 486/33 under Linux 0.97).
 * BYTE's spawn.c forks for a fixed number of seconds; the child exits at once, the parent
 * waits for it; the score is loops per second ("lps"). The seed printed only scores; this is
 * the loop as BYTE 3.11 describes it (alarm() ends the run), rewritten so that it builds
 * against a modern libc.
 *
 * Build: cc -O2 -Wall -o byte_spawn byte_spawn.c [-static]
 * Run:   ./byte_spawn [seconds]        (default 10, BYTE's duration)
 * Prints one machine-readable line:
 *   byte_spawn: N loops in S s, X lps (wall)
 * where S is CLOCK_MONOTONIC from the first fork to the end of the last wait.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>

static volatile sig_atomic_t done;

static void
on_alarm(int sig)
{
    (void)sig;
    done = 1;
}

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
    double seconds = argc > 1 ? atof(argv[1]) : 10.0;
    unsigned long loops = 0;
    double start, wall;
    struct sigaction sa;
    struct itimerval it;

    if (seconds <= 0) {
        fprintf(stderr, "usage: %s [seconds > 0]\n", argv[0]);
        return 2;
    }
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(SIGALRM, &sa, NULL);
    start = now_s();
    /* BYTE used alarm(); setitimer() allows the fractions of a second of a quick run. */
    it.it_interval.tv_sec = 0;
    it.it_interval.tv_usec = 0;
    it.it_value.tv_sec = (time_t)seconds;
    it.it_value.tv_usec = (suseconds_t)((seconds - (time_t)seconds) * 1e6);
    setitimer(ITIMER_REAL, &it, NULL);
    while (!done) {
        int status;
        pid_t pid = fork();

        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0)
            exit(0);
        while (waitpid(pid, &status, 0) != pid)
            ;
        loops++;
    }
    wall = now_s() - start;
    printf("byte_spawn: %lu loops in %.3f s, %.1f lps (wall)\n", loops, wall, loops / wall);
    return 0;
}
