/* pgmini.c: the shipped share/rheaper/allocators/postgresql.alloc on
 * PostgreSQL's own memory-context signatures (pgmini.h): aset.c's AllocSet in
 * pgmini.lib2.c (it calls MemoryContextCreate across objects, as aset.c
 * does), mcxt.c's entry points in pgmini.lib.c. The context headers and
 * blocks are the allocator's own (kind region-blocks), never a leak listed. Chunks from palloc, pstrdup, pnstrdup,
 * MemoryContextAlloc, repalloc and palloc_mul (palloc_array); pfree;
 * MemoryContextReset of a context
 * with a child; MemoryContextResetOnly; MemoryContextDeleteChildren (the
 * children end, the parent's chunks at its delete); a planted
 * MemoryContextAlloc(TopMemoryContext, 40) leak that must be the only leak. */
#define _GNU_SOURCE
#include "expect.h"

#include <stdlib.h>

#include "pgmini.h"

#define AT_LINE "bt IN (SELECT id FROM backtraces WHERE frame_no = 0 AND line = %d)"

int main(void)
{
    void *m[8], *e[5];
    TopMemoryContext = AllocSetContextCreateInternal(NULL, "TopMemoryContext", 0, 8192, 8 << 20);
    MemoryContext cache = AllocSetContextCreateInternal(TopMemoryContext, "CacheMemoryContext", 0, 8192, 8 << 20);
    MemoryContext msg = AllocSetContextCreateInternal(TopMemoryContext, "MessageContext", 0, 8192, 8 << 20);
    MemoryContext exec = AllocSetContextCreateInternal(msg, "ExecutorState", 0, 8192, 8 << 20);
    CurrentMemoryContext = msg;
    for (int i = 0; i < 8; i++)
        m[i] = palloc(100);
    for (int i = 0; i < 3; i++)
        KEEP(pstrdup("SELECT 1"));
    for (int i = 0; i < 2; i++)
        KEEP(pnstrdup("abcdefgh", 4));
    for (int i = 0; i < 5; i++)
        e[i] = MemoryContextAlloc(exec, 64);
    e[0] = repalloc(e[0], 128);
    pfree(m[0]);
    pfree(m[1]);
    for (int i = 0; i < 3; i++)
        KEEP(MemoryContextAlloc(cache, 200));
    int l_leak = __LINE__ + 2;
    for (int i = 0; i < 4; i++)
        KEEP(MemoryContextAlloc(TopMemoryContext, 40));
    MemoryContextReset(msg); /* ExecutorState goes with it */
    MemoryContextResetOnly(cache);
    /* a portal's context whose children are deleted (its own chunks stay
     * until it is deleted), and palloc_array's palloc_mul */
    MemoryContext portal = AllocSetContextCreateInternal(TopMemoryContext, "PortalContext", 0, 1024, 8 << 20);
    MemoryContext hold = AllocSetContextCreateInternal(portal, "PortalHoldContext", 0, 1024, 8 << 20);
    for (int i = 0; i < 3; i++)
        KEEP(MemoryContextAlloc(portal, 24));
    for (int i = 0; i < 2; i++)
        KEEP(MemoryContextAlloc(hold, 32));
    MemoryContextDeleteChildren(portal);
    void *volatile marker = malloc(77);
    free(marker);
    MemoryContextDelete(portal);
    void *arr = palloc_mul(8, 5);
    pfree(arr);

    EXPECT(8, "SELECT count(*) FROM allocations WHERE kind = 'palloc' AND size = 100");
    EXPECT(3, "SELECT count(*) FROM allocations WHERE kind = 'pstrdup' AND size = 9");
    EXPECT(2, "SELECT count(*) FROM allocations WHERE kind = 'pnstrdup' AND size = 5");
    EXPECT(1, "SELECT count(*) FROM allocations WHERE kind = 'repalloc' AND size = 128");
    EXPECT(5 + 3 + 4 + 5, "SELECT count(*) FROM allocations WHERE kind = 'MemoryContextAlloc'");
    EXPECT(8 + 3 + 2 + 1 + 12 + 5 + 1, "SELECT count(*) FROM region_blocks");
    /* MemoryContextDeleteChildren: the child's chunks end there, the
     * portal's own at its delete, after the marker */
    EXPECT(2, "SELECT count(*) FROM allocations WHERE size = 32 AND kind = 'MemoryContextAlloc' AND "
              "dealloc_after <= (SELECT alloc_after FROM allocations WHERE size = 77)");
    EXPECT(3, "SELECT count(*) FROM allocations WHERE size = 24 AND kind = 'MemoryContextAlloc' AND "
              "dealloc_after >= (SELECT alloc_after FROM allocations WHERE size = 77)");
    EXPECT(1, "SELECT count(*) FROM allocations a JOIN region_blocks rb ON rb.id = a.id JOIN regions r "
              "ON r.id = rb.region WHERE a.kind = 'palloc_mul' AND a.size = 40 AND "
              "a.dealloc_after IS NOT NULL AND r.name = 'MessageContext'");
    EXPECT(4, "SELECT count(*) FROM leaks WHERE id IN (SELECT id FROM region_blocks)");
    EXPECT(4, "SELECT count(*) FROM leaks WHERE size = 40 AND " AT_LINE, l_leak);
    EXPECT(0, "SELECT value FROM meta WHERE key = 'unknown_frees'");
    EXPECT(14, "SELECT blocks FROM region_stats WHERE name = 'MessageContext'");
    EXPECT(3, "SELECT blocks FROM region_stats WHERE name = 'CacheMemoryContext'");
    EXPECT(6, "SELECT blocks FROM region_stats WHERE name = 'ExecutorState'");
    EXPECT(0, "SELECT count(*) FROM leaks WHERE kind <> 'region-blocks' AND id NOT IN "
              "(SELECT id FROM region_blocks)");
    EXPECT(6, "SELECT count(*) FROM regions");
    EXPECT(1, "SELECT count(*) FROM regions c JOIN regions p ON p.id = c.parent "
              "WHERE c.name = 'ExecutorState' AND p.name = 'MessageContext'");
    return 0;
}
