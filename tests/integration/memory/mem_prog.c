/* mem_prog.c: programs whose memory the memory tests know.
 *
 *   mem_prog frag    fragments glibc's heap on purpose: 200 000 blocks of 256
 *                    bytes, every other one freed, then 20 000 requests of
 *                    1000 bytes that fit in none of the holes. RSS stays at
 *                    the high-water mark while the live heap is about half.
 *   mem_prog plain   no fragmentation: 16 384 blocks of 4 KiB, written and
 *                    kept. The heap explains RSS minus the fixed mappings.
 *   mem_prog churn   one site allocates and frees 64 KiB-blocks in a loop
 *                    (churn_site), two other sites allocate and keep.
 *
 * At the end each prints, on one line, what it reads itself at that moment:
 *   rss=<bytes> live=<bytes> arena=<mallinfo2.arena> in_use=<uordblks>
 *   free=<fordblks> mmapped=<hblkhd> fixed=<bytes>
 * fixed: the Rss of every mapping of /proc/self/smaps that is not the heap
 * (not [heap], not an anonymous private read-write mapping): the program
 * text, libraries, stack, vdso and the profile's own file mappings.
 * Nothing is allocated between that reading and exit.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile sink;
static char line[512];

static uint64_t statm_rss(void)
{
    unsigned long size = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%lu %lu", &size, &res) != 2)
        exit(2);
    fclose(f);
    return (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Rss of the mappings that are not the heap (see above), in bytes. */
static uint64_t fixed_rss(void)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        exit(2);
    uint64_t fixed = 0;
    int heap = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        int name = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &name) >= 3 &&
            strchr(line, '-') && name > 0) {
            const char *path = line + name;
            while (*path == ' ')
                path++;
            int anon = *path == '\n' || *path == 0;
            heap = !strncmp(path, "[heap]", 6) || (anon && perms[1] == 'w' && perms[3] == 'p');
            continue;
        }
        unsigned long kb;
        if (!heap && sscanf(line, "Rss: %lu kB", &kb) == 1)
            fixed += (uint64_t)kb * 1024;
    }
    fclose(f);
    return fixed;
}

static void report(uint64_t live)
{
    static char out[512];
    uint64_t fixed = fixed_rss();
    struct mallinfo2 mi = mallinfo2();
    uint64_t rss = statm_rss();
    int n = snprintf(out, sizeof out,
                     "rss=%llu live=%llu arena=%zu in_use=%zu free=%zu mmapped=%zu fixed=%llu\n",
                     (unsigned long long)rss, (unsigned long long)live, mi.arena, mi.uordblks,
                     mi.fordblks, mi.hblkhd, (unsigned long long)fixed);
    if (write(1, out, (size_t)n) != n)
        exit(2);
}

__attribute__((noinline)) static void *small_site(size_t n)
{
    return malloc(n);
}

__attribute__((noinline)) static void *large_site(size_t n)
{
    return malloc(n);
}

__attribute__((noinline)) static void churn_site(int rounds)
{
    for (int i = 0; i < rounds; i++) {
        char *p = malloc(65536);
        memset(p, i, 4096);
        sink = p;
        free(p);
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "frag";
    /* stdio's buffers and the smaps reader's FILE once, before measuring */
    fixed_rss();
    statm_rss();
    if (!strcmp(mode, "frag")) {
        enum { N = 200000, M = 20000 };
        static void *small[N], *large[M];
        for (int i = 0; i < N; i++) {
            small[i] = small_site(256);
            memset(small[i], 1, 256);
        }
        for (int i = 0; i < N; i += 2)
            free(small[i]);
        for (int i = 0; i < M; i++) {
            large[i] = large_site(1000);
            memset(large[i], 2, 1000);
        }
        sink = small[1];
        sink = large[0];
        report((uint64_t)(N / 2) * 256 + (uint64_t)M * 1000);
    } else if (!strcmp(mode, "plain")) {
        enum { N = 16384 };
        static void *b[N];
        for (int i = 0; i < N; i++) {
            b[i] = small_site(4096);
            memset(b[i], 3, 4096);
        }
        sink = b[N - 1];
        report((uint64_t)N * 4096);
    } else if (!strcmp(mode, "churn")) {
        static void *keep[2000];
        for (int r = 0; r < 20; r++) {
            churn_site(2000);
            for (int i = 0; i < 50; i++) {
                keep[r * 100 + i] = small_site(512);
                keep[r * 100 + 50 + i] = large_site(2048);
            }
            usleep(2000);
        }
        sink = keep[0];
        report((uint64_t)20 * 50 * (512 + 2048));
    } else {
        fprintf(stderr, "usage: mem_prog frag|plain|churn\n");
        return 2;
    }
    return 0;
}
