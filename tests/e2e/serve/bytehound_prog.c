/* bytehound_prog.c: the program the bytehound client test records
 * (bytehound_test.sh, bytehound_checks.jq). Its plan, which the client checks
 * through bytehound's REST calls:
 *   - foobar_2 -> foobar_1 -> foobar_0 -> malloc(123456), never freed: the
 *     largest block, and the program's only leak (glibc keeps the worker
 *     thread's thread-local block too);
 *   - seven(): 7 blocks of 64 bytes from one call site, all freed;
 *   - zeroed(): calloc(10, 100), freed;
 *   - grow(): malloc(1000), realloc to 2000, realloc to 3000, freed: one
 *     realloc chain of three blocks;
 *   - grow_many() in two threads at once: each grows its own block by
 *     realloc STEPS - 1 times, from base + 16 to base + 16 * STEPS bytes (base
 *     100 and 5000): two chains of STEPS blocks whose reallocs interleave;
 *   - map_rw(): an anonymous private read-write mmap of 5 pages, unmapped
 *     whole by unmap_it(); map_ro(): an anonymous shared read-only mmap of 3
 *     pages, never unmapped.
 * It prints nothing (stdio would add a buffer of its own to the profile).
 * Build with rheaper-cc -O0 -pthread: every function keeps its frame.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static void *volatile keep;

NOINLINE static void *foobar_0(size_t n)
{
    return malloc(n);
}

NOINLINE static void *foobar_1(size_t n)
{
    return foobar_0(n);
}

NOINLINE static void *foobar_2(size_t n)
{
    return foobar_1(n);
}

NOINLINE static void seven(void)
{
    void *p[7];
    for (int i = 0; i < 7; i++)
        p[i] = malloc(64);
    for (int i = 0; i < 7; i++)
        free(p[i]);
}

NOINLINE static void zeroed(void)
{
    void *p = calloc(10, 100);
    keep = p;
    free(p);
}

NOINLINE static void grow(void)
{
    char *p = malloc(1000);
    p = realloc(p, 2000);
    p = realloc(p, 3000);
    keep = p;
    free(p);
}

#define STEPS 50

NOINLINE static void *grow_many(void *arg)
{
    size_t base = (size_t)arg;
    char *p = malloc(base + 16);
    for (size_t k = 2; k <= STEPS; k++) {
        char *q = realloc(p, base + 16 * k);
        if (!q)
            break;
        p = q;
    }
    free(p);
    return NULL;
}

NOINLINE static void *map_rw(size_t len)
{
    return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

NOINLINE static void *map_ro(size_t len)
{
    return mmap(NULL, len, PROT_READ, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
}

NOINLINE static int unmap_it(void *p, size_t len)
{
    return munmap(p, len);
}

int main(void)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    keep = foobar_2(123456);
    seven();
    zeroed();
    grow();
    pthread_t t;
    if (pthread_create(&t, NULL, grow_many, (void *)(size_t)100))
        return 1;
    grow_many((void *)(size_t)5000);
    pthread_join(t, NULL);
    void *a = map_rw(5 * pg);
    if (a == MAP_FAILED || unmap_it(a, 5 * pg))
        return 1;
    if (map_ro(3 * pg) == MAP_FAILED)
        return 1;
    return 0;
}
