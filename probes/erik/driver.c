/* The driver of ldcost's erik series (seed 004): a program linked against k tiny libraries
 * (cc -O2 -o driver-K driver.c -L. -Wl,--no-as-needed -lerik_0 ... -lerik_{K-1}) that maps
 * padding so that every point has the same footprint, then forks on command.
 *
 * argv: PAD_DIR PAD_COUNT EXTRA_VMAS EXTRA_PAGES TEXT RO RELRO DATA SPARSE MAX_N
 *   The driver re-executes itself with address-space randomisation off (as setarch -R does),
 *   so that every point has the same layout and hence the same page-table pages (with ASLR,
 *   VmPTE moves by a page or two from run to run as the spans straddle 2 MiB boundaries).
 *   PAD_DIR/pad_I.so for I < PAD_COUNT are copies of the tiny library, mapped the way ld.so
 *   maps an object (reserve the span, map each PT_LOAD with its protections, zero the bss
 *   tail, anonymous pages for the rest of the bss, write the RELRO pages as relocation does,
 *   mprotect RELRO read-only), but never entered in ld.so's lists. One more
 *   copy, PAD_DIR/pad_warm.so, is padded and unmapped again at every point, so that the C
 *   library pages the padding code faults in are resident at every point alike.
 *   EXTRA_VMAS anonymous mappings and EXTRA_PAGES written anonymous pages (in those mappings,
 *   or in this program's bss when EXTRA_VMAS is 0) match what ld.so allocates per library
 *   (link maps and scopes, in mappings of its own).
 * Every page of every library and pad mapping is then read, and every page still writable is
 * written, identically for both, so their resident pages are the same by construction.
 * Series C's one-kind padding (all 0 elsewhere), each VMA a page of PAD_DIR/pad_warm.so with an
 * unmapped page on each side so that none merges: TEXT r-x VMAs (read), RO r--p VMAs (read),
 * RELRO pairs (two pages mapped rw-p and written, the first then protected r--: a RELRO VMA
 * and a file-data VMA, as ld.so leaves an object's data), DATA rw-p VMAs (written: a private
 * copy, so an anon_vma and an anonymous page each), and SPARSE written anonymous pages 2 MiB
 * apart in one mapping (huge pages refused), so that each needs a page-table page of its own:
 * VmPTE grows by 4 kB per page where EXTRA_PAGES grows it by 4 kB per 512. fork() copies
 * page-table entries only for VMAs with an anon_vma (RELRO, DATA, SPARSE, EXTRA), not for
 * TEXT and RO: the kinds differ in what fork does with them.
 *
 * Protocol: prints "self vmas=V pte_kb=P anon_kb=A file_kb=F", then "ready", and waits on
 * stdin. "run V N": N forks, child _exit(0) (V=1, through a pointer bound at start-up),
 * exit(0) (V=2, bound lazily in each child: the parent never calls exit before "quit"), or
 * exit(0) through a pointer dlsym() found before the fork (V=3: _dl_fini without the lazy
 * binding; dlsym, not `= exit`, because a GOT reference would make ld bind the PLT call of
 * V=2 eagerly through .plt.got); one
 * line per fork "RT PARENT CHILD" in microseconds (round trip, parent's fork() call, child's
 * life from its first instruction to the parent's waitpid return), then "done". "quit" ends. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define EXTRA_MAX 8192
#define DOWN(x) ((x) & ~(PAGE - 1))
#define UP(x) (((x) + PAGE - 1) & ~(PAGE - 1))

static char extra[EXTRA_MAX * PAGE];
static void (*volatile fast_exit)(int) = _exit;
static void (*volatile bound_exit)(int);

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int prot_of(unsigned flags)
{
    return ((flags & PF_R) ? PROT_READ : 0) | ((flags & PF_W) ? PROT_WRITE : 0) |
           ((flags & PF_X) ? PROT_EXEC : 0);
}

/* Reads every page of every PT_LOAD; if `lib`, also writes every writable file page past RELRO
 * and the first page of the bss beyond the file (as a library's code writing its variables
 * would). Other objects (the C library, ld.so, this program) are read only where they are
 * file-backed, and wholly: which of their pages the kernel's fault-around maps depends on
 * their addresses, which differ between points, so all of them are made resident at every
 * point. Their pages have no anon_vma, so fork() does not copy their page-table entries. */
static void touch(unsigned long base, const ElfW(Phdr) *ph, int n, int lib)
{
    unsigned long relro_end = 0;
    for (int i = 0; i < n; i++)
        if (ph[i].p_type == PT_GNU_RELRO)
            relro_end = DOWN(base + ph[i].p_vaddr + ph[i].p_memsz);
    for (int i = 0; i < n; i++) {
        if (ph[i].p_type != PT_LOAD)
            continue;
        unsigned long a = DOWN(base + ph[i].p_vaddr);
        unsigned long fend = UP(base + ph[i].p_vaddr + ph[i].p_filesz);
        unsigned long e = lib ? UP(base + ph[i].p_vaddr + ph[i].p_memsz) : fend;
        for (; a < e; a += PAGE) {
            volatile char *c = (volatile char *)a;
            char v = *c;
            if (lib && (ph[i].p_flags & PF_W) && a >= relro_end && a <= fend)
                *c = v;
        }
    }
}

static int touch_objects(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    touch(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum,
          strstr(info->dlpi_name, "/liberik_") != NULL);
    return 0;
}

static void die(const char *what, const char *path)
{
    fprintf(stderr, "driver: %s %s\n", what, path);
    fflush(stderr);
    fast_exit(3);
}

/* Maps one padding file as ld.so maps a library (elf/dl-map-segments.h), then touches it;
 * returns the span mapped, in *span. */
static char *pad(const char *path, unsigned long *span)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ElfW(Ehdr) eh;
    ElfW(Phdr) ph[16];
    if (fd < 0 || pread(fd, &eh, sizeof eh, 0) != sizeof eh || eh.e_phnum > 16 ||
        pread(fd, ph, eh.e_phnum * sizeof *ph, eh.e_phoff) != (ssize_t)(eh.e_phnum * sizeof *ph))
        die("cannot read", path);
    int n = eh.e_phnum, first = -1, last = -1;
    for (int i = 0; i < n; i++)
        if (ph[i].p_type == PT_LOAD) {
            if (first < 0)
                first = i;
            last = i;
        }
    if (first < 0)
        die("no PT_LOAD in", path);
    unsigned long lo = DOWN(ph[first].p_vaddr), hi = UP(ph[last].p_vaddr + ph[last].p_memsz);
    char *m = mmap(NULL, hi - lo, prot_of(ph[first].p_flags), MAP_PRIVATE, fd,
                   DOWN(ph[first].p_offset));
    if (m == MAP_FAILED)
        die("cannot map", path);
    unsigned long base = (unsigned long)m - lo;
    for (int i = 0; i < n; i++) {
        if (ph[i].p_type != PT_LOAD)
            continue;
        unsigned long start = DOWN(base + ph[i].p_vaddr);
        unsigned long fend = UP(base + ph[i].p_vaddr + ph[i].p_filesz);
        unsigned long mend = UP(base + ph[i].p_vaddr + ph[i].p_memsz);
        if (i != first &&
            mmap((void *)start, fend - start, prot_of(ph[i].p_flags), MAP_PRIVATE | MAP_FIXED,
                 fd, DOWN(ph[i].p_offset)) == MAP_FAILED)
            die("cannot map segment of", path);
        if (ph[i].p_memsz > ph[i].p_filesz) {
            unsigned long zs = base + ph[i].p_vaddr + ph[i].p_filesz;
            if ((ph[i].p_flags & PF_W) && zs < fend)
                memset((void *)zs, 0, fend - zs);
            if (mend > fend &&
                mmap((void *)fend, mend - fend, prot_of(ph[i].p_flags),
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
                die("cannot map bss of", path);
        }
    }
    close(fd);
    /* Relocation: ld.so writes the RELRO pages, then protects them (_dl_protect_relro). */
    for (int i = 0; i < n; i++)
        if (ph[i].p_type == PT_GNU_RELRO) {
            unsigned long a = DOWN(base + ph[i].p_vaddr);
            unsigned long e = DOWN(base + ph[i].p_vaddr + ph[i].p_memsz);
            for (unsigned long p = a; p < e; p += PAGE)
                *(volatile char *)p = *(volatile char *)p;
            if (e > a && mprotect((void *)a, e - a, PROT_READ) != 0)
                die("cannot protect RELRO of", path);
        }
    touch(base, ph, n, 1);
    *span = hi - lo;
    return m;
}

/* An anonymous mapping of `pages` written pages, with an unmapped page on each side so that
 * it never merges with a neighbour (ld.so's own allocations are mappings of their own). */
static void extra_vma(long pages)
{
    unsigned long len = (pages + 2) * PAGE;
    char *r = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED || munmap(r, PAGE) != 0 || munmap(r + len - PAGE, PAGE) != 0 ||
        mprotect(r + PAGE, pages * PAGE, PROT_READ | PROT_WRITE) != 0)
        die("cannot map an extra anonymous area", "");
    for (long i = 0; i < pages; i++)
        r[(i + 1) * PAGE] = 1;
}

/* `n` VMAs of `pages` pages of pad_warm.so each (its first pages), mapped with `prot`, every
 * page read or (when writable) written, an unmapped page between neighbours; with `relro`,
 * each VMA's first page is then protected read-only (a RELRO head and a data tail). */
static void kind_vmas(const char *file, long n, long pages, int prot, int relro)
{
    if (n == 0)
        return;
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    unsigned long step = (pages + 1) * PAGE, len = n * step + PAGE;
    char *r = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fd < 0 || r == MAP_FAILED)
        die("cannot map one-kind padding of", file);
    for (long i = 0; i < n; i++) {
        char *v = r + PAGE + i * step;
        if (mmap(v, pages * PAGE, prot, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED)
            die("cannot map a page of", file);
        for (long p = 0; p < pages; p++) {
            volatile char *c = (volatile char *)(v + p * PAGE);
            char x = *c;
            if (prot & PROT_WRITE)
                *c = x;
        }
        if (relro && mprotect(v, PAGE, PROT_READ) != 0)
            die("cannot protect the head of", file);
    }
    for (long i = 0; i <= n; i++)
        if (munmap(r + i * step, PAGE) != 0)
            die("cannot unmap a gap in", file);
    close(fd);
}

/* `n` written anonymous pages 2 MiB apart (a page-table page each), without huge pages. */
static void sparse_pages(long n)
{
    if (n == 0)
        return;
    unsigned long huge = 512 * PAGE, len = (n + 1) * huge;
    char *r = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED || madvise(r, len, MADV_NOHUGEPAGE) != 0)
        die("cannot map the sparse area", "");
    char *a = (char *)(((unsigned long)r + huge - 1) & ~(huge - 1));
    for (long i = 0; i < n; i++)
        a[i * huge] = 1;
}

static long status_kb(const char *status, const char *field)
{
    const char *p = strstr(status, field);
    return p ? atol(p + strlen(field)) : -1;
}

static void self_report(void)
{
    static char buf[1 << 16];
    int vmas = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (f) {
        while (fgets(buf, sizeof buf, f))
            if (strchr(buf, '\n'))
                vmas++;
        fclose(f);
    }
    /* Counted before the buffer below is read, so the FILE of the maps read is gone. */
    int fd = open("/proc/self/status", O_RDONLY);
    ssize_t len = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    buf[len > 0 ? len : 0] = 0;
    if (fd >= 0)
        close(fd);
    printf("self vmas=%d pte_kb=%ld anon_kb=%ld file_kb=%ld\n", vmas, status_kb(buf, "VmPTE:"),
           status_kb(buf, "RssAnon:"), status_kb(buf, "RssFile:"));
}

int main(int argc, char **argv)
{
    if (argc != 11) {
        fprintf(stderr, "usage: driver PAD_DIR PAD_COUNT EXTRA_VMAS EXTRA_PAGES TEXT RO RELRO "
                        "DATA SPARSE MAX_N\n");
        return 2;
    }
    int persona = personality(0xffffffff);
    if (persona != -1 && !(persona & ADDR_NO_RANDOMIZE) &&
        personality(persona | ADDR_NO_RANDOMIZE) != -1) {
        execv("/proc/self/exe", argv);
        /* Not re-executed: carry on randomised (the footprint table shows the effect). */
    }
    bound_exit = (void (*)(int))dlsym(RTLD_DEFAULT, "exit");
    if (!bound_exit)
        die("dlsym cannot find", "exit");
    int pads = atoi(argv[2]), vmas = atoi(argv[3]);
    long extra_pages = atol(argv[4]), max_n = atol(argv[10]);
    long text = atol(argv[5]), ro = atol(argv[6]), relro = atol(argv[7]), data = atol(argv[8]),
         sparse = atol(argv[9]);
    if (pads < 0 || vmas < 0 || extra_pages < 0 || extra_pages > EXTRA_MAX || max_n < 1 ||
        (vmas > 0 && extra_pages < vmas) || text < 0 || ro < 0 || relro < 0 || data < 0 ||
        sparse < 0 || text + ro + relro + data > 20000 || sparse > 4096) {
        fprintf(stderr, "driver: bad arguments\n");
        return 2;
    }
    char path[4096];
    unsigned long span;
    snprintf(path, sizeof path, "%s/pad_warm.so", argv[1]);
    char *warm = pad(path, &span);
    munmap(warm, span);
    for (int i = 0; i < pads; i++) {
        snprintf(path, sizeof path, "%s/pad_%d.so", argv[1], i);
        pad(path, &span);
    }
    dl_iterate_phdr(touch_objects, NULL);
    if (vmas == 0)
        for (long i = 0; i < extra_pages; i++)
            ((volatile char *)extra)[i * PAGE] = 1;
    double *samples = malloc(max_n * 3 * sizeof *samples);
    volatile double *child_start =
        mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (!samples || child_start == MAP_FAILED)
        die("out of memory", "");
    memset(samples, 0, max_n * 3 * sizeof *samples);
    *child_start = 0;
    /* Last, so that nothing mapped later lands in the holes around them. */
    for (int i = 0; i < vmas; i++)
        extra_vma(i == 0 ? extra_pages - (vmas - 1) : 1);
    snprintf(path, sizeof path, "%s/pad_warm.so", argv[1]);
    kind_vmas(path, text, 1, PROT_READ | PROT_EXEC, 0);
    kind_vmas(path, ro, 1, PROT_READ, 0);
    kind_vmas(path, relro, 2, PROT_READ | PROT_WRITE, 1);
    kind_vmas(path, data, 1, PROT_READ | PROT_WRITE, 0);
    sparse_pages(sparse);
    self_report();
    printf("ready\n");
    fflush(stdout);

    char line[128];
    while (fgets(line, sizeof line, stdin)) {
        int variant;
        long n;
        if (strncmp(line, "quit", 4) == 0)
            break;
        if (sscanf(line, "run %d %ld", &variant, &n) != 2 || n < 1 || n > max_n ||
            variant < 1 || variant > 3) {
            printf("error bad command\n");
            fflush(stdout);
            continue;
        }
        for (long i = 0; i < n; i++) {
            double t0 = now_us();
            pid_t pid = fork();
            if (pid == 0) {
                *child_start = now_us();
                if (variant == 1)
                    fast_exit(0);
                if (variant == 3)
                    bound_exit(0);
                exit(0);
            }
            double t1 = now_us();
            int st;
            if (pid < 0 || waitpid(pid, &st, 0) != pid)
                die("fork or waitpid failed", "");
            double t2 = now_us();
            samples[3 * i] = t2 - t0;
            samples[3 * i + 1] = t1 - t0;
            samples[3 * i + 2] = t2 - *child_start;
        }
        for (long i = 0; i < n; i++)
            printf("%.3f %.3f %.3f\n", samples[3 * i], samples[3 * i + 1], samples[3 * i + 2]);
        printf("done\n");
        fflush(stdout);
    }
    return 0;
}
