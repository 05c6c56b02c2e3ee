/* pool.c: an arena allocator made visible with rheaper.h's client requests.
 *
 * The arena takes 64 KiB chunks from malloc and carves blocks out of them; it
 * has no per-block free, only a reset that drops every block. Each carved block
 * is announced with rheaper_alloc_event, a few are given back with
 * rheaper_free_event, and rheaper_pool_reset ends the rest. Two arenas with
 * different names run side by side, so a reset of one must leave the other's
 * blocks live. The program states exact counts, sizes, frees and kinds; the
 * chunks stay rows of kind malloc.
 */
#define _GNU_SOURCE
#include "expect.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rheaper.h"

#define NOINLINE __attribute__((noinline))
#define CHUNK 65536

struct arena {
    char *chunks[64];
    int nchunks;
    size_t used; /* in the last chunk */
    struct rheaper_pool pool;
};

NOINLINE static void *arena_chunk(void) { return malloc(CHUNK); }

/* Carves n bytes (16-aligned) from the arena. */
NOINLINE static void *arena_alloc(struct arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (a->nchunks == 0 || a->used + n > CHUNK) {
        a->chunks[a->nchunks++] = arena_chunk();
        a->used = 0;
    }
    void *p = a->chunks[a->nchunks - 1] + a->used;
    a->used += n;
    rheaper_alloc_event(p, n, &a->pool);
    return p;
}

NOINLINE static void arena_give_back(struct arena *a, void *p)
{
    rheaper_free_event(p, &a->pool);
}

/* Drops every block: the chunks stay for reuse. */
NOINLINE static void arena_reset(struct arena *a)
{
    rheaper_pool_reset(&a->pool);
    a->nchunks = a->nchunks ? 1 : 0;
    a->used = 0;
}

NOINLINE static void arena_destroy(struct arena *a)
{
    rheaper_pool_reset(&a->pool);
    for (int i = 0; i < a->nchunks; i++)
        free(a->chunks[i]);
    a->nchunks = 0;
}

int main(void)
{
    struct arena strs = {.pool = RHEAPER_POOL_INIT("string_arena")};
    struct arena nodes = {.pool = RHEAPER_POOL_INIT("node_arena")};

    /* Round 1: 300 string blocks of 16..4800 bytes (rounded to 16), 50 given
     * back, then a reset ends the other 250. */
    void *s1[300];
    long long s1_bytes = 0, s1_chunks = 0;
    for (int i = 0; i < 300; i++) {
        int before = strs.nchunks;
        s1[i] = arena_alloc(&strs, (size_t)(i + 1) * 16);
        memset(s1[i], 'a', (size_t)(i + 1) * 16);
        s1_bytes += (i + 1) * 16;
        s1_chunks += strs.nchunks - before;
    }
    for (int i = 0; i < 50; i++)
        arena_give_back(&strs, s1[i * 6]);

    /* 100 node blocks of 48 bytes, live across the string arena's reset. */
    for (int i = 0; i < 100; i++)
        memset(arena_alloc(&nodes, 48), 'n', 48);

    arena_reset(&strs);

    /* Round 2: 40 string blocks of 32 bytes; 10 stay live at exit. */
    void *s2[40];
    for (int i = 0; i < 40; i++)
        s2[i] = arena_alloc(&strs, 32);
    for (int i = 0; i < 30; i++)
        arena_give_back(&strs, s2[i]);

    /* The node arena is destroyed: reset and its chunks freed. */
    arena_destroy(&nodes);

    EXPECT(340, "SELECT count(*) FROM allocations WHERE kind = 'string_arena'");
    EXPECT(s1_bytes + 40 * 32, "SELECT sum(size) FROM allocations WHERE kind = 'string_arena'");
    EXPECT(10, "SELECT count(*) FROM leaks WHERE kind = 'string_arena'");
    EXPECT(320, "SELECT sum(size) FROM leaks WHERE kind = 'string_arena'");
    /* 300 + 40 blocks: 250 ended by the reset at one time, 80 given back */
    EXPECT(250, "SELECT count(*) FROM allocations WHERE kind = 'string_arena' AND dealloc_after = "
                "(SELECT max(dealloc_after) FROM allocations WHERE kind = 'string_arena' AND size > 32)");
    EXPECT(100, "SELECT count(*) FROM allocations WHERE kind = 'node_arena' AND size = 48");
    EXPECT(0, "SELECT count(*) FROM leaks WHERE kind = 'node_arena'");
    /* the node blocks outlived the string reset */
    EXPECT(100, "SELECT count(*) FROM allocations n WHERE n.kind = 'node_arena' AND n.dealloc_after > "
                "(SELECT min(dealloc_after) FROM allocations WHERE kind = 'string_arena' AND size > 32 "
                "GROUP BY dealloc_after ORDER BY count(*) DESC LIMIT 1)");
    /* every block's frame 0 is arena_alloc, and its address lies in a chunk */
    EXPECT(440, "SELECT count(*) FROM allocations WHERE kind LIKE '%%_arena' AND " AT_SYM("arena_alloc"));
    EXPECT(440, "SELECT count(*) FROM allocations p WHERE p.kind LIKE '%%_arena' AND EXISTS (SELECT 1 FROM "
                "allocations c WHERE c.kind = 'malloc' AND p.addr >= c.addr AND p.addr < c.addr + c.size)");
    /* the chunks stay rows of kind malloc */
    EXPECT(s1_chunks + 1, "SELECT count(*) FROM allocations WHERE kind = 'malloc' AND size = %d AND "
                          AT_SYM("arena_chunk"), CHUNK);
    KEEP(s2[39]);
    return 0;
}
