/* callsite.c: the call-site rule's extensions (docs/call-sites.md), checked on
 * a program whose shape the test knows.
 *
 *   - Rule 4, an allocator layer (layer.c, like Redis's zmalloc.c):
 *     zrealloc_usable has two callers here (grow_list, grow_buf) and reaches
 *     realloc through ztryrealloc and zrealloc_internal in its own file,
 *     beside the wrapper zmalloc; the call sites are grow_list and grow_buf.
 *     layer_twice, another entry point of layer.c, and layer_pair under it
 *     are skipped too: the call site is main.
 *   - Not rule 4: this file holds a wrapper as well (xalloc, three callers),
 *     but node_new and build_tree, which reach it, are called from this same
 *     file: node_new stays the call site (a one-file program's helpers never
 *     become a layer). local_alloc, a helper with one caller, and two_lines,
 *     which allocates at two lines, stay call sites as before.
 *   - A stripped library (libstrip.so: only .dynsym): its static function has
 *     no symbol, so the call site is its exported caller lib_entry, and
 *     skipped_functions names "libstrip.so (no symbol)".
 * Each function allocates a size of its own, so SQL finds its rows by size.
 */
#include <stdlib.h>

#include "expect.h"

#define NOINLINE __attribute__((noinline))
void *zmalloc(size_t n);
void *zrealloc_usable(void *p, size_t n);
void *layer_twice(size_t n);
void *lib_entry(size_t n);

#define N 10
static void *keep[8 * N];
static int nkeep;

NOINLINE void make_a(void) { keep[nkeep++] = zmalloc(101); }
NOINLINE void make_b(void) { keep[nkeep++] = zmalloc(102); }
NOINLINE void make_c(void) { keep[nkeep++] = zmalloc(103); }

NOINLINE void grow_list(void)
{
    void *p = zrealloc_usable(NULL, 201);
    keep[nkeep++] = zrealloc_usable(p, 211);
}

NOINLINE void grow_buf(void)
{
    void *p = zrealloc_usable(NULL, 202);
    keep[nkeep++] = zrealloc_usable(p, 212);
}

static NOINLINE void *local_alloc(size_t n)
{
    void *p = malloc(n);
    KEEP(p);
    return p;
}

NOINLINE void uses_local(void) { keep[nkeep++] = local_alloc(301); }

/* a wrapper of this file (three callers), and a chain above it; its own
 * sink keeps gcc from folding it into local_alloc (identical code) */
static void *volatile x_sink;
static NOINLINE void *xalloc(size_t n)
{
    void *p = malloc(n);
    x_sink = p;
    return p;
}
NOINLINE void x1(void) { keep[nkeep++] = xalloc(701); }
NOINLINE void x2(void) { keep[nkeep++] = xalloc(702); }
static NOINLINE void *node_new(void)
{
    void *p = xalloc(703);
    KEEP(p);
    return p;
}
NOINLINE void build_tree(void) { keep[nkeep++] = node_new(); }

NOINLINE void two_lines(int which)
{
    if (which)
        keep[nkeep++] = malloc(401);
    else
        keep[nkeep++] = malloc(402);
}

/* "SELECT count(*) of the rows of size S whose call site is function F" */
#define AT_SITE "SELECT count(*) FROM allocations a JOIN stacks s ON s.id = a.bt JOIN backtraces b" \
                " ON b.id = s.id AND b.frame_no = s.callsite WHERE a.size = %d AND b.sym = '%s'"

int main(void)
{
    for (int i = 0; i < N; i++) {
        make_a(), make_b(), make_c();
        grow_list(), grow_buf();
        uses_local();
        two_lines(i & 1);
        keep[nkeep++] = layer_twice(501);
        keep[nkeep++] = lib_entry(601);
        x1(), x2(), build_tree();
        for (int k = 0; k < nkeep; k++)
            free(keep[k]);
        nkeep = 0;
    }
    EXPECT(N, AT_SITE, 101, "make_a");
    EXPECT(N, AT_SITE, 103, "make_c");
    EXPECT(N, AT_SITE, 201, "grow_list"); /* realloc(NULL): the malloc kind of the layer */
    EXPECT(N, AT_SITE, 211, "grow_list");
    EXPECT(N, AT_SITE, 212, "grow_buf");
    EXPECT(N, AT_SITE, 301, "local_alloc");
    EXPECT(N / 2, AT_SITE, 401, "two_lines");
    EXPECT(N / 2, AT_SITE, 402, "two_lines");
    EXPECT(N, AT_SITE, 501, "main");
    EXPECT(N, AT_SITE, 701, "x1");
    EXPECT(N, AT_SITE, 703, "node_new");
    EXPECT(N, AT_SITE, 601, "lib_entry");
    EXPECT(1, "SELECT count(*) FROM skipped_functions WHERE sym = 'zrealloc_usable'");
    EXPECT(1, "SELECT count(*) FROM skipped_functions WHERE sym = 'ztryrealloc'");
    EXPECT(1, "SELECT count(*) FROM skipped_functions WHERE sym = 'zrealloc_internal'");
    EXPECT(1, "SELECT count(*) FROM skipped_functions WHERE sym = 'libstrip.so (no symbol)'");
    EXPECT(1, "SELECT count(*) FROM skipped_functions WHERE sym = 'layer_twice'");
    EXPECT(1, "SELECT count(*) FROM skipped_functions WHERE sym = 'xalloc'");
    EXPECT(0, "SELECT count(*) FROM skipped_functions WHERE sym IN ('node_new', 'build_tree',"
              " 'local_alloc', 'two_lines', 'lib_entry', 'grow_list', 'grow_buf')");
    return 0;
}
