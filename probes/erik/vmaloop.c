/* The independent per-VMA measurement of ldcost's erik series: one process, one region of
 * N written anonymous pages, forked while the region is one VMA and while every other page is
 * read-only (N VMAs: mprotect splits it; making it all writable again merges it back). The
 * pages, and so the page-table entries fork() copies, are the same in both states: only the
 * number of VMAs differs. Built with: cc -O2 -o vmaloop vmaloop.c
 *
 * argv: N FORKS_PER_BLOCK BLOCKS. For each block, both states in turn; for each state, prints
 * "state STATE vmas=V" (lines of /proc/self/maps) once, then one line per fork:
 * "STATE RT PARENT" in microseconds (round trip; the parent's fork() call), STATE being
 * "merged" or "split". The child leaves with _exit(0) through a pointer bound at start-up. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL

static void (*volatile fast_exit)(int) = _exit;

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int count_vmas(void)
{
    char buf[4096];
    int n = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    while (fgets(buf, sizeof buf, f))
        if (strchr(buf, '\n'))
            n++;
    fclose(f);
    return n;
}

static int set_state(char *r, long n, int split)
{
    for (long i = 1; i < n; i += 2)
        if (mprotect(r + i * PAGE, PAGE, split ? PROT_READ : PROT_READ | PROT_WRITE) != 0)
            return -1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: vmaloop N FORKS_PER_BLOCK BLOCKS\n");
        return 2;
    }
    long n = atol(argv[1]), forks = atol(argv[2]), blocks = atol(argv[3]);
    if (n < 2 || forks < 1 || blocks < 1) {
        fprintf(stderr, "vmaloop: bad arguments\n");
        return 2;
    }
    char *r = mmap(NULL, n * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED) {
        perror("vmaloop: mmap");
        return 3;
    }
    for (long i = 0; i < n; i++)
        r[i * PAGE] = 1;
    static const char *names[2] = {"merged", "split"};
    for (long b = 0; b < blocks; b++)
        for (int split = 0; split < 2; split++) {
            if (set_state(r, n, split) != 0) {
                perror("vmaloop: mprotect");
                return 3;
            }
            printf("state %s vmas=%d\n", names[split], count_vmas());
            fflush(stdout);
            for (long i = 0; i < forks; i++) {
                double t0 = now_us();
                pid_t pid = fork();
                if (pid == 0)
                    fast_exit(0);
                double t1 = now_us();
                int st;
                if (pid < 0 || waitpid(pid, &st, 0) != pid) {
                    perror("vmaloop: fork");
                    return 3;
                }
                printf("%s %.3f %.3f\n", names[split], now_us() - t0, t1 - t0);
            }
            fflush(stdout);
        }
    return 0;
}
