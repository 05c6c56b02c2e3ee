/* jemalloc.c: a program linked with Debian's libjemalloc (-ljemalloc) that
 * allocates through jemalloc's standard API (malloc, calloc, realloc, free,
 * which jemalloc defines under the libc names) and its flags-taking API
 * (mallocx, rallocx, xallocx, sdallocx, dallocx). It checks that jemalloc, not
 * glibc, served the blocks (mallctl answers, sallocx knows each block), and
 * states exact counts, sizes, frees and kinds with EXPECT.
 */
#define _GNU_SOURCE
#include "expect.h"

#include <jemalloc/jemalloc.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

NOINLINE void *std_alloc(size_t n) { return malloc(n); }
NOINLINE void *x_alloc(size_t n, int flags) { return mallocx(n, flags); }
NOINLINE void *x_small(void) { return mallocx(32, 0); }
NOINLINE void *x_grow(void *p, size_t n) { return rallocx(p, n, 0); }
NOINLINE size_t x_extend(void *p, size_t n) { return xallocx(p, n, 0, 0); }

int main(void)
{
    /* jemalloc is the allocator: its mallctl answers with its version. */
    const char *version = NULL;
    size_t vlen = sizeof version;
    if (mallctl("version", &version, &vlen, NULL, 0) != 0 || !version) {
        fprintf(stderr, "FAIL: mallctl(\"version\") did not answer: not jemalloc\n");
        return 1;
    }

    /* 1. 50 malloc of 10..500 bytes, 20 freed; each known to jemalloc. */
    void *a[50];
    long long a_bytes = 0, a_left = 0;
    for (int i = 0; i < 50; i++) {
        a[i] = std_alloc((size_t)(i + 1) * 10);
        memset(a[i], 1, (size_t)(i + 1) * 10);
        a_bytes += (i + 1) * 10;
        if (sallocx(a[i], 0) < (size_t)(i + 1) * 10) {
            fprintf(stderr, "FAIL: sallocx does not know a malloc block\n");
            return 1;
        }
    }
    for (int i = 0; i < 20; i++)
        free(a[i]);
    for (int i = 20; i < 50; i++) {
        a_left += (i + 1) * 10;
        KEEP(a[i]);
    }
    EXPECT(50, "SELECT count(*) FROM allocations WHERE kind = 'malloc' AND " AT_SYM("std_alloc"));
    EXPECT(a_bytes, "SELECT sum(size) FROM allocations WHERE " AT_SYM("std_alloc"));
    EXPECT(30, "SELECT count(*) FROM leaks WHERE " AT_SYM("std_alloc"));
    EXPECT(a_left, "SELECT sum(size) FROM leaks WHERE " AT_SYM("std_alloc"));

    /* 2. 40 mallocx: 10 zeroed, 10 aligned to 4096; 25 freed with sdallocx and
     * dallocx. */
    void *x[40];
    long long x_bytes = 0;
    for (int i = 0; i < 40; i++) {
        int flags = i < 10 ? MALLOCX_ZERO : i < 20 ? MALLOCX_ALIGN(4096) : 0;
        size_t n = 64 + (size_t)i * 3;
        x[i] = x_alloc(n, flags);
        memset(x[i], 2, n);
        x_bytes += (long long)n;
        if (i >= 10 && i < 20 && ((uintptr_t)x[i] & 4095)) {
            fprintf(stderr, "FAIL: MALLOCX_ALIGN not honoured\n");
            return 1;
        }
    }
    for (int i = 0; i < 15; i++)
        sdallocx(x[i], 64 + (size_t)i * 3, 0);
    for (int i = 15; i < 25; i++)
        dallocx(x[i], 0);
    for (int i = 25; i < 40; i++)
        KEEP(x[i]);
    EXPECT(40, "SELECT count(*) FROM allocations WHERE kind = 'mallocx' AND " AT_SYM("x_alloc"));
    EXPECT(x_bytes, "SELECT sum(size) FROM allocations WHERE " AT_SYM("x_alloc"));
    EXPECT(15, "SELECT count(*) FROM leaks WHERE " AT_SYM("x_alloc"));

    /* 3. rallocx: 8 blocks from mallocx grown to 1000 bytes and freed; the
     * mallocx rows end at the rallocx and 8 rallocx rows of 1000 follow. */
    void *r[8];
    for (int i = 0; i < 8; i++)
        r[i] = x_small();
    for (int i = 0; i < 8; i++) {
        r[i] = x_grow(r[i], 1000);
        memset(r[i], 3, 1000);
    }
    EXPECT(8, "SELECT count(*) FROM allocations WHERE kind = 'mallocx' AND size = 32 AND "
              AT_SYM("x_small") " AND dealloc_after IS NOT NULL");
    EXPECT(8, "SELECT count(*) FROM allocations WHERE kind = 'rallocx' AND size = 1000 AND "
              AT_SYM("x_grow") " AND dealloc_after IS NOT NULL");

    /* 4. xallocx shrinks in place: one more row of the new size, same address. */
    size_t got = x_extend(r[0], 500);
    EXPECT(got >= 500 ? 1 : 0, "SELECT count(*) FROM allocations WHERE kind = 'xallocx' AND size = 500");
    for (int i = 0; i < 8; i++)
        dallocx(r[i], 0);
    EXPECT(0, "SELECT count(*) FROM leaks WHERE kind IN ('rallocx', 'xallocx')");
    return 0;
}
