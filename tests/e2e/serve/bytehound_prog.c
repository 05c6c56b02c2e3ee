/* bytehound_prog.c: the program the bytehound client test records
 * (bytehound_test.sh, bytehound_client.py). Its plan, which the client checks
 * through bytehound's REST calls:
 *   - foobar_2 -> foobar_1 -> foobar_0 -> malloc(123456), never freed: the
 *     largest block, and the only one that leaks;
 *   - seven(): 7 blocks of 64 bytes from one call site, all freed;
 *   - zeroed(): calloc(10, 100), freed;
 *   - grow(): malloc(1000), realloc to 2000, realloc to 3000, freed: one
 *     realloc chain of three blocks;
 *   - map_rw(): an anonymous private read-write mmap of 5 pages, unmapped
 *     whole by unmap_it(); map_ro(): an anonymous shared read-only mmap of 3
 *     pages, never unmapped.
 * It prints nothing (stdio would add a buffer of its own to the profile).
 * Build with rheaper-cc -O0: every function keeps its frame.
 */
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
    void *a = map_rw(5 * pg);
    if (a == MAP_FAILED || unmap_it(a, 5 * pg))
        return 1;
    if (map_ro(3 * pg) == MAP_FAILED)
        return 1;
    return 0;
}
