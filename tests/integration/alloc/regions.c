/* regions.c: a region allocator declared, not annotated (regions.alloc).
 *
 * The program uses a miniature of PostgreSQL's memory contexts (mcxt.h,
 * regions.lib.c) the way a backend does: a tree of contexts, chunks from
 * palloc in CurrentMemoryContext and from MemoryContextAlloc in a named
 * context, pfree, repalloc, a reset of a context with a child (the child is
 * deleted), a delete of a parent with children and grandchildren, and chunks
 * planted in a context that lives to the end. It states where every row ends:
 * a pfree'd chunk before the next marker, a chunk of a reset or deleted
 * context between the markers (plain malloc calls of distinct sizes) around
 * that reset or delete, the planted chunks never. The allocator's own
 * mallocs stay rows of kind malloc and no free is unknown. A context created
 * at a deleted one's address (the runtime caches regions per thread) gets
 * its own chunks.
 */
#define _GNU_SOURCE
#include "expect.h"

#include <stdlib.h>
#include <string.h>

#include "mcxt.h"

#define NOINLINE __attribute__((noinline))

/* A row of its own size, freed at once: a point in the merged order. */
NOINLINE static void marker(size_t size)
{
    void *p = malloc(size);
    KEEP(p);
    free(p);
}

#define BETWEEN(a, b) "dealloc_after > (SELECT alloc_after FROM allocations WHERE size = " #a ")" \
                      " AND dealloc_after < (SELECT alloc_after FROM allocations WHERE size = " #b ")"
#define AT_LINE "bt IN (SELECT id FROM backtraces WHERE frame_no = 0 AND line = %d)"

int main(void)
{
    void *a[10], *b[6];
    TopMemoryContext = AllocSetContextCreateInternal(NULL, "TopMemoryContext", 0, 8192, 8 << 20);
    MemoryContext msg = AllocSetContextCreateInternal(TopMemoryContext, "MessageContext", 0, 8192, 8 << 20);
    MemoryContext exec = AllocSetContextCreateInternal(msg, "ExecutorState", 0, 8192, 8 << 20);
    MemoryContext expr = AllocSetContextCreateInternal(exec, "ExprContext", 0, 8192, 8 << 20);
    MemoryContext cache = AllocSetContextCreateInternal(TopMemoryContext, "CacheMemoryContext", 0, 8192, 8 << 20);

    MemoryContextSwitchTo(msg);
    int l_a = __LINE__ + 2;
    for (int i = 0; i < 10; i++)
        a[i] = palloc(100);
    for (int i = 0; i < 4; i++)
        pfree(a[i]);
    marker(1001);

    int l_b = __LINE__ + 2;
    for (int i = 0; i < 6; i++)
        b[i] = MemoryContextAlloc(exec, 200);
    MemoryContextSwitchTo(expr);
    int l_c = __LINE__ + 2;
    for (int i = 0; i < 3; i++)
        KEEP(palloc0(48));
    int l_d = __LINE__ + 2;
    for (int i = 0; i < 2; i++)
        KEEP(MemoryContextAlloc(exec, 5000));
    int l_e = __LINE__ + 1;
    b[0] = repalloc(b[0], 400);
    marker(1002);
    int l_f = __LINE__ + 2;
    for (int i = 0; i < 7; i++)
        KEEP(MemoryContextAlloc(cache, 40));

    marker(1003);
    MemoryContextReset(exec); /* deletes ExprContext, empties ExecutorState */
    marker(1004);
    int l_g = __LINE__ + 2;
    for (int i = 0; i < 4; i++)
        KEEP(MemoryContextAlloc(exec, 64));
    marker(1005);
    MemoryContextDelete(msg); /* and ExecutorState below it */
    marker(1006);
    MemoryContextSwitchTo(TopMemoryContext);

    /* A context created where a deleted one was (the allocator reuses the
     * header's address at once): its chunks are its own, not the deleted
     * one's, although the runtime's per-thread cache last saw that address
     * with the first context's id. */
    MemoryContext r1 = AllocSetContextCreateInternal(TopMemoryContext, "ReuseFirst", 0, 8192, 8 << 20);
    for (int i = 0; i < 5; i++)
        KEEP(MemoryContextAlloc(r1, 72));
    MemoryContextDelete(r1);
    marker(1007);
    MemoryContext r2 = AllocSetContextCreateInternal(TopMemoryContext, "ReuseSecond", 0, 8192, 8 << 20);
    if (r2 != r1) {
        fprintf(stderr, "FAIL: the second context is not at the first one's address\n");
        return 1;
    }
    for (int i = 0; i < 3; i++)
        KEEP(MemoryContextAlloc(r2, 88));
    marker(1008);
    MemoryContextDelete(r2);
    marker(1009);

    const char *K = "kind IN ('palloc', 'palloc0', 'MemoryContextAlloc', 'repalloc')";
    EXPECT(10 + 6 + 3 + 2 + 1 + 7 + 4 + 5 + 3, "SELECT count(*) FROM allocations WHERE %s", K);
    EXPECT(10, "SELECT count(*) FROM allocations WHERE kind = 'palloc' AND size = 100 AND " AT_LINE, l_a);
    EXPECT(4, "SELECT count(*) FROM allocations WHERE " AT_LINE " AND dealloc_after < "
              "(SELECT alloc_after FROM allocations WHERE size = 1001)", l_a);
    EXPECT(6, "SELECT count(*) FROM allocations WHERE " AT_LINE " AND " BETWEEN(1005, 1006), l_a);
    EXPECT(6, "SELECT count(*) FROM allocations WHERE size = 200 AND " AT_LINE, l_b);
    /* b[0] ended at its repalloc, before marker 1002; the other five at the reset */
    EXPECT(1, "SELECT count(*) FROM allocations WHERE " AT_LINE " AND dealloc_after < "
              "(SELECT alloc_after FROM allocations WHERE size = 1002)", l_b);
    EXPECT(5, "SELECT count(*) FROM allocations WHERE " AT_LINE " AND " BETWEEN(1003, 1004), l_b);
    EXPECT(3, "SELECT count(*) FROM allocations WHERE kind = 'palloc0' AND size = 48 AND " AT_LINE
              " AND " BETWEEN(1003, 1004), l_c);
    EXPECT(2, "SELECT count(*) FROM allocations WHERE size = 5000 AND " AT_LINE " AND "
              BETWEEN(1003, 1004), l_d);
    EXPECT(1, "SELECT count(*) FROM allocations WHERE kind = 'repalloc' AND size = 400 AND " AT_LINE
              " AND " BETWEEN(1003, 1004), l_e);
    EXPECT(4, "SELECT count(*) FROM allocations WHERE size = 64 AND " AT_LINE " AND "
              BETWEEN(1005, 1006), l_g);
    /* the planted chunks, and only they, are leaked region chunks */
    EXPECT(7, "SELECT count(*) FROM leaks WHERE %s", K);
    EXPECT(7, "SELECT count(*) FROM leaks WHERE size = 40 AND " AT_LINE, l_f);
    /* every chunk has its region: a name, a parent */
    EXPECT(33 + 5 + 3, "SELECT count(*) FROM region_blocks");
    EXPECT(5, "SELECT count(*) FROM allocations a JOIN region_blocks rb ON rb.id = a.id JOIN regions g "
              "ON g.id = rb.region WHERE g.name = 'ReuseFirst' AND a.size = 72 AND "
              "dealloc_after < (SELECT alloc_after FROM allocations WHERE size = 1007)");
    EXPECT(3, "SELECT count(*) FROM allocations a JOIN region_blocks rb ON rb.id = a.id JOIN regions g "
              "ON g.id = rb.region WHERE g.name = 'ReuseSecond' AND a.size = 88 AND " BETWEEN(1008, 1009));
    EXPECT(10, "SELECT count(*) FROM region_blocks rb JOIN regions g ON g.id = rb.region "
               "WHERE g.name = 'MessageContext'");
    EXPECT(6 + 2 + 1 + 4, "SELECT count(*) FROM region_blocks rb JOIN regions g ON g.id = rb.region "
                          "WHERE g.name = 'ExecutorState'");
    EXPECT(3, "SELECT count(*) FROM region_blocks rb JOIN regions g ON g.id = rb.region "
              "WHERE g.name = 'ExprContext'");
    EXPECT(7, "SELECT leaked_blocks FROM region_stats WHERE name = 'CacheMemoryContext'");
    EXPECT(0, "SELECT leaked_blocks + blocks FROM region_stats WHERE name = 'TopMemoryContext'");
    EXPECT(280, "SELECT leaked_bytes FROM region_stats WHERE name = 'CacheMemoryContext'");
    EXPECT(1, "SELECT count(*) FROM regions c JOIN regions p ON p.id = c.parent "
              "WHERE c.name = 'ExprContext' AND p.name = 'ExecutorState'");
    EXPECT(1, "SELECT count(*) FROM regions c JOIN regions p ON p.id = c.parent "
              "WHERE c.name = 'ExecutorState' AND p.name = 'MessageContext'");
    EXPECT(280, "SELECT live_bytes FROM region_timeline t JOIN regions g ON g.id = t.region "
                "WHERE g.name = 'CacheMemoryContext' ORDER BY t.t DESC LIMIT 1");
    /* the allocator's own blocks: rows of kind region-blocks, all freed but the ones
     * of the contexts that live on (Top, Cache: their headers, Cache's block) */
    EXPECT(0, "SELECT value FROM meta WHERE key = 'unknown_frees'");
    EXPECT(2, "SELECT count(*) FROM allocations WHERE kind = 'region-blocks' AND size = 8192 AND "
              BETWEEN(1005, 1006));
    EXPECT(1, "SELECT count(*) FROM leaks WHERE kind = 'region-blocks' AND size = 8192");
    EXPECT(2, "SELECT count(*) FROM leaks WHERE kind = 'region-blocks' AND size <> 8192"); /* headers */
    return 0;
}
