/* rh_regions.c: the regions of region allocators, while merging and in the
 * database.
 *
 * The runtime (runtime/rh_region.c) announces each region with a timed
 * REGION record (its pool id, its parent's pool id, its name as a dynamic
 * kind), tags each chunk's address with its region's pool id, tags a free of
 * one chunk (pfree) and a reallocation with pool id 0 ("the region of the
 * chunk at this address"), and ends a region's chunks with POOLRESET records
 * (a delete: the region's and every descendant's, deepest first). Here:
 *   - rh_regions_define numbers the regions in order of announcement (a pool
 *     id announced again after a delete is a new region);
 *   - rh_regions_resolve turns a pool-id-0 address into the tagged address of
 *     the live chunk there, so pfree pairs with its palloc, and repalloc's new
 *     chunk takes the old chunk's region;
 *   - rh_regions_note keeps, for each row that is a region chunk, its region;
 *     rh_db_regions.c stores them.
 * Memory grows with regions and with distinct chunk addresses.
 */
#include <stdlib.h>
#include <string.h>

#include "rh_core.h"
#include "rh_util.h"

static struct rh_regions *rh_regions_of(struct rh_rip *r)
{
    if (!r->regions) {
        r->regions = calloc(1, sizeof *r->regions);
        if (!r->regions)
            r->oom = 1;
    }
    return r->regions;
}

int rh_regions_define(struct rh_rip *r, uint32_t pool, uint32_t parent_pool, uint32_t kind,
                      int created, uint32_t creator, int64_t t)
{
    struct rh_regions *g = rh_regions_of(r);
    if (!g)
        return -1;
    if (creator) {
        size_t i = 0;
        while (i < g->ncreators && g->creators[i] != creator)
            i++;
        if (i == g->ncreators && i < sizeof g->creators / sizeof g->creators[0])
            g->creators[g->ncreators++] = creator;
    }
    if (pool == 0 || pool > 0xffff)
        return 0;
    uint32_t parent = parent_pool && parent_pool <= 0xffff ? g->cur[parent_pool] : 0;
    uint32_t id = g->cur[pool];
    if (id && !created) { /* renamed, moved, or announced again */
        if (kind)
            g->defs[id - 1].kind = kind;
        g->defs[id - 1].parent = parent != id ? parent : 0;
        return 0;
    }
    if (rh_grow(&g->defs, &g->capdefs, g->ndefs + 1, sizeof *g->defs)) {
        r->oom = 1;
        return -1;
    }
    g->defs[g->ndefs] = (struct rh_region_def){pool, parent, kind, t};
    g->cur[pool] = (uint32_t)++g->ndefs;
    return 0;
}

uint64_t rh_regions_resolve(struct rh_rip *r, int op, uint64_t addr, uint32_t thread)
{
    if (!RIP_IS_POOL_ADDR(addr) || RIP_POOL_OF(addr) != 0)
        return addr;
    struct rh_regions *g = r->regions;
    uint64_t a = addr & RIP_POOL_ADDR_MASK;
    if (!g)
        return a; /* pairs with nothing: an unknown free */
    uint32_t pool = 0;
    if (op == RH_EV_RALLOC) {
        pool = g->moved[thread & 255];
        g->moved[thread & 255] = 0;
    } else {
        uint32_t v = rh_map_get(&g->chunks, a);
        pool = v == UINT32_MAX ? 0 : v;
        if (op == RH_EV_RFREE)
            g->moved[thread & 255] = pool;
    }
    return pool ? (RIP_POOL_TAG(pool) | a) : addr;
}

int rh_regions_opened(struct rh_rip *r, uint64_t addr)
{
    if (!RIP_IS_POOL_ADDR(addr))
        return 0;
    uint32_t pool = RIP_POOL_OF(addr);
    if (!pool)
        return 0;
    /* every tagged block, also one inherited before its region is announced
     * (a fork child learns its regions at its first region call) */
    struct rh_regions *g = rh_regions_of(r);
    if (!g)
        return -1;
    if (rh_map_put(&g->chunks, addr & RIP_POOL_ADDR_MASK, pool)) {
        r->oom = 1;
        return -1;
    }
    return 0;
}

int rh_regions_note(struct rh_rip *r, uint64_t row, uint64_t addr, int closed)
{
    struct rh_regions *g = r->regions;
    if (!g || !RIP_IS_POOL_ADDR(addr))
        return 0;
    uint32_t pool = RIP_POOL_OF(addr);
    if (closed && pool && rh_map_get(&g->chunks, addr & RIP_POOL_ADDR_MASK) == pool &&
        rh_map_put(&g->chunks, addr & RIP_POOL_ADDR_MASK, 0)) {
        r->oom = 1;
        return -1;
    }
    uint32_t region = pool ? g->cur[pool] : 0;
    if (!region)
        return 0;
    if (rh_grow(&g->blocks, &g->capblocks, g->nblocks + 1, sizeof *g->blocks)) {
        r->oom = 1;
        return -1;
    }
    g->blocks[g->nblocks++] = (struct rh_region_block){row, region};
    return 0;
}

void rh_regions_free(struct rh_rip *r)
{
    struct rh_regions *g = r->regions;
    if (!g)
        return;
    free(g->defs);
    free(g->blocks);
    rh_map_free(&g->chunks);
    free(g);
    r->regions = NULL;
}
