/* c_basic.c: every C allocation function, each from its own call site.
 *
 * Each helper below is noinline and takes __LINE__ on the line of its call, so
 * the program knows frame 0's function and line for every block it makes.
 * Counts and sizes are computed while allocating and stated with EXPECT.
 */
#define _GNU_SOURCE
#include "expect.h"

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static int line_small, line_calloc, line_grow, line_leak, line_strdup;

NOINLINE void *make_small(size_t n) { line_small = __LINE__; return malloc(n); }
NOINLINE void *make_calloc(size_t n, size_t m) { line_calloc = __LINE__; return calloc(n, m); }
NOINLINE void *grow(void *p, size_t n) { line_grow = __LINE__; return realloc(p, n); }
NOINLINE void *leak_it(size_t n) { line_leak = __LINE__; return malloc(n); }
NOINLINE char *dup_it(const char *s) { line_strdup = __LINE__; return strdup(s); }

NOINLINE void *aligned_ones(int which)
{
    void *p = NULL;
    switch (which) {
    case 0: if (posix_memalign(&p, 64, 100) != 0) p = NULL; break;
    case 1: p = aligned_alloc(64, 128); break;
    case 2: p = memalign(32, 48); break;
    case 3: p = valloc(200); break;
    }
    return p;
}

int main(void)
{
    /* 1. 100 mallocs of 1..100 bytes; the even sizes are freed. */
    void *small[101];
    long long small_bytes = 0, small_leaked = 0, small_leaked_n = 0;
    for (int i = 1; i <= 100; i++) {
        small[i] = make_small((size_t)i);
        memset(small[i], 1, (size_t)i);
        small_bytes += i;
    }
    for (int i = 1; i <= 100; i++) {
        if (i % 2 == 0) free(small[i]);
        else { small_leaked += i; small_leaked_n++; KEEP(small[i]); }
    }
    EXPECT(100, "SELECT count(*) FROM allocations WHERE " AT_SYM("make_small"));
    EXPECT(small_bytes, "SELECT sum(size) FROM allocations WHERE " AT_SYM("make_small"));
    EXPECT(small_leaked_n, "SELECT count(*) FROM leaks WHERE " AT_SYM("make_small"));
    EXPECT(small_leaked, "SELECT sum(size) FROM leaks WHERE " AT_SYM("make_small"));
    EXPECT(100, "SELECT count(*) FROM allocations WHERE kind = 'malloc' AND " AT_SYM("make_small"));
    EXPECT(line_small, "SELECT DISTINCT line FROM backtraces WHERE frame_no = 0 AND sym = 'make_small'");
    EXPECT(1, "SELECT count(*) FROM backtraces WHERE frame_no = 0 AND sym = 'make_small' AND file LIKE '%%/c_basic.c'");
    /* the caller of make_small is main, at frame 1 */
    EXPECT(1, "SELECT count(DISTINCT b.sym) FROM backtraces b WHERE b.frame_no = 1 AND b.sym = 'main' AND b.id IN (SELECT bt FROM allocations WHERE " AT_SYM("make_small") ")");
    /* every freed block has a free time not before its allocation time */
    EXPECT(0, "SELECT count(*) FROM allocations WHERE dealloc_after < alloc_after");
    EXPECT(50, "SELECT count(*) FROM allocations WHERE dealloc_after IS NOT NULL AND " AT_SYM("make_small"));
    EXPECT(1, "SELECT count(*) FROM callsites WHERE sym = 'make_small' AND count = 100 AND total_size = 5050");

    /* 2. calloc: 7 blocks of 10 x 8 bytes, all freed. */
    for (int i = 0; i < 7; i++) {
        void *p = make_calloc(10, 8);
        KEEP(p);
        free(p);
    }
    EXPECT(7, "SELECT count(*) FROM allocations WHERE kind = 'calloc' AND size = 80 AND " AT_SYM("make_calloc"));
    EXPECT(line_calloc, "SELECT DISTINCT line FROM backtraces WHERE frame_no = 0 AND sym = 'make_calloc'");

    /* 3. A realloc chain of 10 steps from NULL: 10 rows of kind realloc. */
    void *p = NULL;
    long long grow_bytes = 0;
    for (int i = 1; i <= 10; i++) {
        p = grow(p, (size_t)i * 16);
        grow_bytes += i * 16;
    }
    free(p);
    EXPECT(10, "SELECT count(*) FROM allocations WHERE kind = 'realloc' AND " AT_SYM("grow"));
    EXPECT(grow_bytes, "SELECT sum(size) FROM allocations WHERE " AT_SYM("grow"));
    EXPECT(0, "SELECT count(*) FROM leaks WHERE " AT_SYM("grow"));
    EXPECT(line_grow, "SELECT DISTINCT line FROM backtraces WHERE frame_no = 0 AND sym = 'grow'");
    /* each step but the last was ended by the next realloc, not by free */
    EXPECT(10, "SELECT count(*) FROM allocations WHERE dealloc_after IS NOT NULL AND " AT_SYM("grow"));

    /* 4. The aligned family, one each, all leaked. */
    for (int w = 0; w < 4; w++)
        KEEP(aligned_ones(w));
    EXPECT(1, "SELECT count(*) FROM leaks WHERE kind = 'posix_memalign' AND size = 100 AND " AT_SYM("aligned_ones"));
    EXPECT(1, "SELECT count(*) FROM leaks WHERE kind = 'aligned_alloc' AND size = 128 AND " AT_SYM("aligned_ones"));
    EXPECT(1, "SELECT count(*) FROM leaks WHERE kind = 'memalign' AND size = 48 AND " AT_SYM("aligned_ones"));
    EXPECT(1, "SELECT count(*) FROM leaks WHERE kind = 'valloc' AND size = 200 AND " AT_SYM("aligned_ones"));

    /* 5. Three leaked 1000-byte blocks. */
    for (int i = 0; i < 3; i++)
        KEEP(leak_it(1000));
    EXPECT(3, "SELECT count(*) FROM leaks WHERE size = 1000 AND " AT_SYM("leak_it"));
    EXPECT(line_leak, "SELECT DISTINCT line FROM backtraces WHERE frame_no = 0 AND sym = 'leak_it'");

    /* 6. libc functions that return memory to free: one row each, at the
     *    caller's line, and the later free matches it. */
    char *s = dup_it("hello");
    EXPECT(1, "SELECT count(*) FROM allocations WHERE kind = 'strdup' AND size = 6 AND dealloc_after IS NOT NULL AND " AT_SYM("dup_it"));
    EXPECT(line_strdup, "SELECT DISTINCT line FROM backtraces WHERE frame_no = 0 AND sym = 'dup_it'");
    free(s);
    char *t = strndup("abcdefgh", 3);
    KEEP(t); /* clang would delete a strndup+free pair it turned into malloc+free */
    /* clang may turn strndup of a literal into malloc + memcpy: then the row is
     * what the binary really called (docs/limits.md) */
    EXPECT(1, "SELECT count(*) FROM allocations WHERE kind IN ('strndup', 'malloc') AND size = 4 AND dealloc_after IS NOT NULL AND " AT_SYM("main"));
    free(t);
    char *a = NULL;
    int alen = asprintf(&a, "value=%d", 12345);
    EXPECT(1, "SELECT count(*) FROM allocations WHERE kind = 'asprintf' AND size = %d AND dealloc_after IS NOT NULL AND " AT_SYM("main"), alen + 1);
    free(a);
    char *cwd = getcwd(NULL, 0);
    EXPECT(1, "SELECT count(*) FROM allocations WHERE kind = 'getcwd' AND size = %d AND dealloc_after IS NOT NULL", (int)strlen(cwd) + 1);
    free(cwd);
    char *rp = realpath(".", NULL);
    EXPECT(1, "SELECT count(*) FROM allocations WHERE kind = 'realpath' AND size = %d AND dealloc_after IS NOT NULL", (int)strlen(rp) + 1);
    free(rp);

    /* getline into a NULL buffer allocates; the program sees the capacity. */
    FILE *f = tmpfile();
    fputs("first line\nsecond line that is a little longer\n", f);
    rewind(f);
    char *line = NULL;
    size_t cap = 0;
    if (getline(&line, &cap, f) < 0) return 2;
    EXPECT(1, "SELECT count(*) FROM allocations WHERE kind = 'getline' AND size = %zu AND dealloc_after IS NOT NULL AND " AT_SYM("main"), cap);
    free(line);
    fclose(f);

    /* frees of pointers never seen allocated are not rows */
    EXPECT(0, "SELECT count(*) FROM allocations WHERE size < 0");
    return 0;
}
