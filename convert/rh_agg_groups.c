/* rh_agg_groups.c: the peak of every stack set one stack filter term selects.
 *
 * A stack filter (--function, --file, --kind, the web UI's function and
 * source searches) selects a set of stacks. Every per-stack figure of that
 * set is a sum of the converter's per-stack aggregates, but its peak is not:
 * the stacks of the set reach their own highest bytes at different moments,
 * and the set's peak is the highest sum at one moment. So the converter
 * computes, for each set a single term names, the set's own peak:
 *   - a function: the stacks with a frame (inlined ones included) whose
 *     backtraces.sym is that name;
 *   - a source file (backtraces.file), a module (backtraces.module), a kind
 *     (stacks.kind): likewise.
 * The query library finds the group whose stacks are exactly the filter's
 * (same count, same hash of the ids, then every id checked against the
 * group's definition) and answers from it without reading a row
 * (rh_query_stackscope.c); any other stack set (--not-function, two terms,
 * a regex matching several functions with different stacks) reads its rows
 * as before.
 *
 * How: during the merge every event rh_agg_event() sees (stack index, time,
 * size, allocation or free) goes to an unlinked temp file beside the database
 * (rh_spill_open, about 6 bytes an event; memory stays flat). At the end,
 * after the stacks are symbolized and written, the groups come from
 * backtraces and stacks, and the file is replayed once: each event adds to
 * the live bytes and blocks of every group of its stack, and when the time
 * changes each group touched checks its peak, exactly as rh_aggregate.c does
 * for the whole profile (frees and allocations of one time settle before the
 * check, so the merged order and the rows' order agree). Each group's
 * stacks' bytes at its peak are snapshotted lazily, per (group, stack) pair,
 * with the group's epoch, as rh_aggregate.c does per stack.
 *
 * Beside it, per (stack, thread), thread_stats' eight figures of the
 * stack's rows, so a stack set's per-thread figures are sums too.
 *
 * This file keeps the events and the per-thread figures during the merge (no
 * SQLite here: it is part of the converter's core); rh_db_groups.c replays
 * them and writes the tables.
 *
 * Tables (written only when all of it succeeded; absent, readers read rows):
 *   group_peaks(id, type, name, stacks, stack_hash, peak_bytes, peak_blocks,
 *               peak_time)        type 0 function, 1 file, 2 module, 3 kind
 *   group_peak_stacks(grp, bt, blocks, bytes)   per group, its stacks holding
 *               blocks or bytes at its peak
 *   stack_thread_stats(bt, thread, alloc_blocks, alloc_bytes, freed_blocks,
 *               freed_bytes, freed_by_others_blocks, freed_by_others_bytes,
 *               live_blocks, live_bytes)
 * Sampled profiles get none of them (their estimates are rounded per stack,
 * the filtered pass's per row), and neither does a profile whose events went
 * back in time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rh_core.h"
#include "rh_util.h"

int rh_grp_open(struct rh_agg *a, const char *near)
{
    if (a->grp || a->bscale != 1)
        return 0;
    struct rh_grp *g = calloc(1, sizeof *g);
    if (!g)
        return -1;
    g->buf = malloc(RH_GRP_BUF);
    g->f = g->buf ? rh_spill_open(near, "ev") : NULL;
    if (!g->f) {
        free(g->buf);
        free(g);
        return -1;
    }
    g->last_t = INT64_MIN;
    a->grp = g;
    return 0;
}

void rh_grp_free(struct rh_grp *g)
{
    if (!g)
        return;
    if (g->f)
        fclose(g->f);
    free(g->buf);
    free(g->st);
    rh_map_free(&g->map);
    free(g);
}

static size_t rh_grp_put(uint8_t *b, uint64_t x)
{
    size_t n = 0;
    while (x >= 0x80) {
        b[n++] = (uint8_t)(x | 0x80);
        x >>= 7;
    }
    b[n++] = (uint8_t)x;
    return n;
}

void rh_grp_flush(struct rh_grp *g)
{
    if (g->len && fwrite(g->buf, 1, g->len, g->f) != g->len)
        g->broken = 1;
    g->len = 0;
}

void rh_grp_event(struct rh_grp *g, uint32_t si, int64_t t, uint64_t size, int is_alloc)
{
    if (g->broken)
        return;
    if (g->last_t != INT64_MIN && t < g->last_t) {
        g->broken = 1; /* the replay checks peaks when time changes: it must not go back */
        return;
    }
    if (g->len + 40 > RH_GRP_BUF)
        rh_grp_flush(g);
    uint64_t dt = g->last_t == INT64_MIN ? (uint64_t)t : (uint64_t)(t - g->last_t);
    if (g->last_t == INT64_MIN && t < 0) {
        g->broken = 1;
        return;
    }
    g->last_t = t;
    g->len += rh_grp_put(g->buf + g->len, si);
    g->len += rh_grp_put(g->buf + g->len, dt);
    g->len += rh_grp_put(g->buf + g->len, size << 1 | (uint64_t)(is_alloc != 0));
    if (size >> 62)
        g->broken = 1;
}

/* The (si, thread) entry, made when new; NULL when out of memory. */
static struct rh_grp_sthr *rh_grp_sthr(struct rh_grp *g, uint32_t si, uint32_t thread)
{
    uint64_t key = ((uint64_t)si << 32 | thread) + 1;
    uint32_t k = rh_map_get(&g->map, key);
    if (k != UINT32_MAX)
        return &g->st[k];
    if (rh_grow(&g->st, &g->capst, g->nst + 1, sizeof *g->st) ||
        rh_map_put(&g->map, key, (uint32_t)g->nst))
        return NULL;
    struct rh_grp_sthr *e = &g->st[g->nst++];
    memset(e, 0, sizeof *e);
    e->si = si;
    e->thread = thread;
    return e;
}

void rh_grp_row(struct rh_grp *g, const struct rh_row *row)
{
    if (g->broken)
        return;
    /* as rh_agg_row attributes them: allocation, others' frees and live
     * blocks to the allocating thread, frees to the freeing one; every
     * thread up to the higher of the two exists in the filtered pass */
    uint32_t ta = row->alloc_thread, td = row->dealloc_thread;
    struct rh_grp_sthr *ea = ta ? rh_grp_sthr(g, row->stack_index, ta) : NULL;
    if (ta && !ea)
        goto oom;
    struct rh_grp_sthr *ed = td ? rh_grp_sthr(g, row->stack_index, td) : NULL;
    if (td && !ed)
        goto oom;
    if (ta)
        ea = rh_grp_sthr(g, row->stack_index, ta); /* st may have moved */
    int64_t size = (int64_t)row->size;
    if (ea) {
        ea->v[0] += 1;
        ea->v[1] += size;
    }
    if (row->dealloc_ns >= 0) {
        if (ed) {
            ed->v[2] += 1;
            ed->v[3] += size;
        }
        if (ea && td != ta) {
            ea->v[4] += 1;
            ea->v[5] += size;
        }
    } else if (ea) {
        ea->v[6] += 1;
        ea->v[7] += size;
    }
    return;
oom:
    g->broken = 1;
}

uint64_t rh_grp_hash(int64_t id)
{
    uint64_t z = (uint64_t)id + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

