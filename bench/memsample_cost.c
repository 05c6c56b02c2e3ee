/* memsample_cost.c: what one memory sample's parts cost (memory_bench.sh).
 *
 * The runtime's memory sample (runtime/rh_memsample.c) is an open, read and
 * close of /proc/self/statm by raw system calls, then the allocator's
 * figures: glibc's mallinfo2, which takes every arena's lock and walks its
 * fastbins and bins. This program times each part the same way, median of
 * 9 rounds of many calls: statm; mallinfo2 on a heap of 100 000 blocks with
 * none free; and on the same heap after every other block was freed (100 000
 * free chunks of 256 bytes, the shape tests/integration/memory's frag program gives).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile uint64_t sink;

static void statm_once(void)
{
    char buf[160];
    int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/statm", O_RDONLY | O_CLOEXEC, 0);
    long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
    syscall(SYS_close, fd);
    sink += (uint64_t)n + (uint64_t)buf[0];
}

static void mallinfo_once(void)
{
    struct mallinfo2 mi = mallinfo2();
    sink += mi.fordblks;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ns per call of f: median of 9 rounds of `calls` calls */
static double cost(void (*f)(void), int calls)
{
    double r[9];
    for (int k = 0; k < 9; k++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < calls; i++)
            f();
        r[k] = (double)(now_ns() - t0) / calls;
    }
    qsort(r, 9, sizeof r[0], cmp);
    return r[4];
}

int main(void)
{
    enum { N = 200000 };
    static void *b[N];
    for (int i = 0; i < N; i++)
        b[i] = malloc(256);
    double statm = cost(statm_once, 2000);
    double clean = cost(mallinfo_once, 200);
    for (int i = 0; i < N; i += 2)
        free(b[i]);
    double frag = cost(mallinfo_once, 20);
    struct mallinfo2 mi = mallinfo2();
    printf("one memory sample's parts (median of 9 rounds)\n\n");
    printf("| part | us per call |\n|---|--:|\n");
    printf("| /proc/self/statm: openat, read, close (raw system calls) | %.2f |\n", statm / 1e3);
    printf("| mallinfo2, %d blocks in use, no free chunk | %.2f |\n", N, clean / 1e3);
    printf("| mallinfo2, %d blocks in use, %d free chunks (%zu bytes free) | %.2f |\n", N / 2,
           N / 2, mi.fordblks, frag / 1e3);
    return (int)(sink & 0);
}
