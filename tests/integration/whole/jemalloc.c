/* jemalloc.c: a program linked with Debian's jemalloc (-ljemalloc) keeps
 * allocating through jemalloc, and every allocation is recorded.
 *
 * The executable's own malloc family (rheaper's interposition) forwards to
 * the next definition, jemalloc's: jemalloc's per-thread byte counter
 * ("thread.allocated") grows by at least what the program asked for, both for
 * the program's own calls and for allocations libc makes on its behalf
 * (the stream buffer and line getdelim allocates inside libc). The program
 * checks that itself (exit status 2 or 3).
 */
#include <jemalloc/jemalloc.h>
#include <sys/stat.h>

#include "expect.h"

#define N 100
#define SIZE 1000

static uint64_t allocated(void)
{
    uint64_t v = 0;
    size_t sz = sizeof v;
    if (mallctl("thread.allocated", &v, &sz, NULL, 0) != 0)
        return 0;
    return v;
}

int main(void)
{
    uint64_t a0 = allocated();
    int line = 0;
    void *keep[N];
    for (int i = 0; i < N; i++) {
        line = __LINE__ + 1;
        keep[i] = malloc(SIZE);
        KEEP(keep[i]);
    }
    uint64_t a1 = allocated();
    if (a1 < a0 + (uint64_t)N * SIZE)
        return 2; /* not jemalloc's memory */
    for (int i = 0; i < N; i++)
        free(keep[i]);
    /* libc allocates inside getdelim: through jemalloc as well */
    FILE *f = fopen("/proc/self/cmdline", "r");
    if (!f)
        return 1;
    char *buf = NULL;
    size_t cap = 0;
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0)
        return 1;
    uint64_t a2 = allocated();
    long got = getdelim(&buf, &cap, 0, f);
    if (got <= 0 || allocated() <= a2)
        return 3;
    free(buf);
    fclose(f);

    EXPECT(N, "SELECT count(*) FROM allocations WHERE size = %d AND dealloc_after IS NOT NULL "
              "AND bt IN (SELECT id FROM backtraces WHERE frame_no = 0 AND sym = 'main' "
              "AND line = %d)",
           SIZE, line);
    EXPECT(0, "SELECT value FROM meta WHERE key = 'unknown_frees'");
    /* nothing main allocated stays live (libjemalloc's dependency libstdc++
     * keeps its exception pool for good, before main) */
    EXPECT(0, "SELECT count(*) FROM leaks WHERE bt IN (SELECT id FROM backtraces "
              "WHERE sym = 'main')");
    /* the stream's buffer, allocated inside getdelim, freed by fclose */
    EXPECT(1, "SELECT count(*) FROM allocations WHERE kind = 'getdelim' AND size = %d "
              "AND dealloc_after IS NOT NULL", (int)sb.st_blksize);
    return 0;
}
