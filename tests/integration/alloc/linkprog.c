/* linkprog.c: a program that calls only the standard malloc family and names
 * its allocator on the link line (-ljemalloc, -ltcmalloc_minimal, -lmimalloc,
 * or a path to the library's .so or .a): the case where the wraps rename
 * every reference the program makes to the allocator. Built with
 * -DRH_LINK_JE, -DRH_LINK_TC or -DRH_LINK_MI (tests/integration/alloc/check_link.sh).
 *
 * It also allocates through the allocator's own API (mallocx/sdallocx,
 * tc_malloc/tc_free, mi_malloc/mi_free), which the wraps rename as well.
 *
 * It proves the allocator in use is the named library's without asking the
 * linker for any other of its functions: the one it uses to ask is a weak
 * reference, which neither makes a shared library needed nor takes a member
 * out of an archive. So the answer is there only if the link kept the library
 * for the program's malloc, as the plain build does:
 *   jemalloc  mallctl("thread.allocated") grows by what the program allocates;
 *   tcmalloc  tc_mallinfo()'s bytes in use grow by a 4 MiB block;
 *   mimalloc  mi_is_in_heap_region() owns the program's block.
 * A dynamic link also checks that the definition of malloc after the
 * executable's (where rheaper's interposed malloc forwards) lies in the
 * library. It prints "allocator: NAME" and states exact rows with EXPECT.
 */
#define _GNU_SOURCE
#include "expect.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

/* FAM_ALLOC / FAM_FREE: the allocator's own API, which the wraps rename too
 * (a call of a weak NULL __real_ there was a crash with tracking off). */
#if defined(RH_LINK_JE)
#define RH_LIB_NAME "jemalloc"
#define RH_LIB_FILE "libjemalloc"
extern int mallctl(const char *, void *, size_t *, void *, size_t) __attribute__((weak));
extern void *mallocx(size_t, int);
extern void sdallocx(void *, size_t, int);
#define FAM_KIND "mallocx"
#define FAM_ALLOC(n) mallocx(n, 0)
#define FAM_FREE(p, n) sdallocx(p, n, 0)
#elif defined(RH_LINK_TC)
#define RH_LIB_NAME "tcmalloc"
#define RH_LIB_FILE "libtcmalloc"
extern struct mallinfo tc_mallinfo(void) __attribute__((weak));
extern void *tc_malloc(size_t);
extern void tc_free(void *);
#define FAM_KIND "tc_malloc"
#define FAM_ALLOC(n) tc_malloc(n)
#define FAM_FREE(p, n) tc_free(p)
#elif defined(RH_LINK_MI)
#define RH_LIB_NAME "mimalloc"
#define RH_LIB_FILE "libmimalloc"
extern _Bool mi_is_in_heap_region(const void *) __attribute__((weak));
extern void *mi_malloc(size_t);
extern void mi_free(void *);
#define FAM_KIND "mi_malloc"
#define FAM_ALLOC(n) mi_malloc(n)
#define FAM_FREE(p, n) mi_free(p)
#else
#error "define RH_LINK_JE, RH_LINK_TC or RH_LINK_MI"
#endif

NOINLINE void *lp_malloc(size_t n) { return malloc(n); }
NOINLINE void *lp_calloc(size_t n, size_t m) { return calloc(n, m); }
NOINLINE void *lp_realloc(void *p, size_t n) { return realloc(p, n); }
NOINLINE void *lp_family(size_t n) { return FAM_ALLOC(n); }

/* Fails the program with one line naming what is wrong. */
static int lp_fail(const char *what)
{
    fprintf(stderr, "FAIL: %s: the program does not run on %s\n", what, RH_LIB_NAME);
    return 1;
}

/* Whether the allocator serving malloc is the named library's (see above). */
static int lp_check_allocator(void)
{
#if defined(RH_LINK_JE)
    if (!mallctl)
        return lp_fail("mallctl is not linked");
    uint64_t before = 0, after = 0;
    size_t len = sizeof before;
    if (mallctl("thread.allocated", &before, &len, NULL, 0) != 0)
        return lp_fail("mallctl(\"thread.allocated\") failed");
    void *volatile p = malloc(100000);
    memset(p, 1, 100000);
    len = sizeof after;
    mallctl("thread.allocated", &after, &len, NULL, 0);
    free(p);
    if (after - before < 100000)
        return lp_fail("jemalloc did not count malloc(100000)");
#elif defined(RH_LINK_TC)
    if (!tc_mallinfo)
        return lp_fail("tc_mallinfo is not linked");
    struct mallinfo before = tc_mallinfo();
    void *volatile p = malloc(4 << 20);
    memset(p, 1, 4 << 20);
    struct mallinfo after = tc_mallinfo();
    free(p);
    if ((long long)after.uordblks - before.uordblks < (4 << 20))
        return lp_fail("tcmalloc did not count malloc(4 MiB)");
#elif defined(RH_LINK_MI)
    if (!mi_is_in_heap_region)
        return lp_fail("mi_is_in_heap_region is not linked");
    void *volatile p = malloc(1000);
    memset(p, 1, 1000);
    int ours = mi_is_in_heap_region(p);
    free(p);
    if (!ours)
        return lp_fail("mimalloc does not own a malloc block");
#endif
#if !defined(RH_LINK_STATIC)
    Dl_info info;
    void *next = dlsym(RTLD_NEXT, "malloc");
    if (!next || !dladdr(next, &info) || !info.dli_fname || !strstr(info.dli_fname, RH_LIB_FILE))
        return lp_fail("the next malloc is not in " RH_LIB_FILE);
#endif
    return 0;
}

int main(void)
{
    if (lp_check_allocator() != 0)
        return 1;

    /* 1. 40 malloc of 16..640 bytes, 15 freed. */
    void *a[40];
    long long a_bytes = 0, a_left = 0;
    for (int i = 0; i < 40; i++) {
        size_t n = (size_t)(i + 1) * 16;
        a[i] = lp_malloc(n);
        memset(a[i], 2, n);
        a_bytes += (long long)n;
    }
    for (int i = 0; i < 15; i++)
        free(a[i]);
    for (int i = 15; i < 40; i++) {
        a_left += (i + 1) * 16;
        KEEP(a[i]);
    }

    /* 2. 12 calloc(count i+1, 24 bytes), all freed. */
    long long c_bytes = 0;
    for (int i = 0; i < 12; i++) {
        void *p = lp_calloc((size_t)i + 1, 24);
        KEEP(p);
        c_bytes += (i + 1) * 24;
        free(p);
    }

    /* 3. One block grown by realloc 8 times, 100 bytes a step; kept. */
    void *r = NULL;
    for (int i = 1; i <= 8; i++) {
        r = lp_realloc(r, (size_t)i * 100);
        memset(r, 3, (size_t)i * 100);
    }
    KEEP(r);

    /* 4. 6 blocks of 300 bytes from the allocator's own API, 4 freed by it. */
    void *f[6];
    for (int i = 0; i < 6; i++) {
        f[i] = lp_family(300);
        memset(f[i], 4, 300);
    }
    for (int i = 0; i < 4; i++)
        FAM_FREE(f[i], 300);
    KEEP(f[4]);
    KEEP(f[5]);

    EXPECT(40, "SELECT count(*) FROM allocations WHERE kind = 'malloc' AND " AT_SYM("lp_malloc"));
    EXPECT(a_bytes, "SELECT sum(size) FROM allocations WHERE " AT_SYM("lp_malloc"));
    EXPECT(25, "SELECT count(*) FROM leaks WHERE " AT_SYM("lp_malloc"));
    EXPECT(a_left, "SELECT sum(size) FROM leaks WHERE " AT_SYM("lp_malloc"));
    EXPECT(12, "SELECT count(*) FROM allocations WHERE kind = 'calloc' AND " AT_SYM("lp_calloc"));
    EXPECT(c_bytes, "SELECT sum(size) FROM allocations WHERE " AT_SYM("lp_calloc"));
    EXPECT(0, "SELECT count(*) FROM leaks WHERE " AT_SYM("lp_calloc"));
    EXPECT(8, "SELECT count(*) FROM allocations WHERE kind = 'realloc' AND " AT_SYM("lp_realloc"));
    EXPECT(1, "SELECT count(*) FROM leaks WHERE " AT_SYM("lp_realloc"));
    EXPECT(800, "SELECT sum(size) FROM leaks WHERE " AT_SYM("lp_realloc"));
    EXPECT(6, "SELECT count(*) FROM allocations WHERE kind = '" FAM_KIND "' AND size = 300 AND "
              AT_SYM("lp_family"));
    EXPECT(2, "SELECT count(*) FROM leaks WHERE " AT_SYM("lp_family"));
    printf("allocator: %s\n", RH_LIB_NAME);
    return 0;
}
