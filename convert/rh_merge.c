/* rh_merge.c: the time-ordered merge of all streams and the pairing of blocks.
 *
 * Every stream yields its events in time order; a binary heap over the stream
 * heads merges them by (time, frees before allocations, stream index). A hash
 * map from address to live block turns the merged events into allocations
 * rows: a FREE of a live address completes its row, an ALLOC opens one. Rows go
 * to a sink (the SQLite writer, or nothing for the fuzzer) as soon as they are
 * complete, so memory grows with live blocks and distinct stacks, not events.
 * Anomalies are counted, never fatal: frees of unknown addresses, allocations
 * over a still-live address (its free was missed), failed allocations.
 * The same pass gives every event a distinct time (rh_merge_time) and flags
 * temporary allocations (rh_temporary_alloc/free), heaptrack's definition.
 */
#include <stdlib.h>
#include <string.h>

#include "rh_check.h"
#include "rh_core.h"

/* ---- live blocks --------------------------------------------------------- */

struct rh_live {
    uint64_t addr;
    uint64_t id; /* allocation number in merged order */
    int64_t t;
    uint64_t size;
    uint32_t stack;  /* index into rip->stacks */
    uint32_t thread; /* 0: empty slot */
};

struct rh_livemap {
    struct rh_live *tab;
    size_t cap, n;
};

static inline size_t rh_live_hash(uint64_t a)
{
    a = (a >> 4) * 0x9e3779b97f4a7c15ull;
    return (size_t)(a ^ (a >> 29));
}

static struct rh_live *rh_live_find(struct rh_livemap *m, uint64_t addr)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = rh_live_hash(addr) & mask;; i = (i + 1) & mask) {
        if (!m->tab[i].thread)
            return NULL;
        if (m->tab[i].addr == addr)
            return &m->tab[i];
    }
}

/* Removes e (a slot of m) with backward-shift deletion. */
static void rh_live_del(struct rh_livemap *m, struct rh_live *e)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)(e - m->tab);
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->tab[j].thread)
            break;
        size_t home = rh_live_hash(m->tab[j].addr) & mask;
        /* move j back to i if home is not cyclically in (i, j] */
        if ((j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j))) {
            m->tab[i] = m->tab[j];
            i = j;
        }
    }
    m->tab[i].thread = 0;
    m->n--;
}

/* Inserts a block whose address is not live. Returns 0 or -1 (out of memory). */
static int rh_live_add(struct rh_livemap *m, const struct rh_live *b)
{
    if ((m->n + 1) * 8 > m->cap * 5) {
        size_t ncap = m->cap ? m->cap * 2 : 4096;
        struct rh_live *tab = calloc(ncap, sizeof *tab);
        if (!tab)
            return -1;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->tab[i].thread)
                continue;
            size_t k = rh_live_hash(m->tab[i].addr) & (ncap - 1);
            while (tab[k].thread)
                k = (k + 1) & (ncap - 1);
            tab[k] = m->tab[i];
        }
        free(m->tab);
        m->tab = tab;
        m->cap = ncap;
    }
    size_t mask = m->cap - 1;
    size_t k = rh_live_hash(b->addr) & mask;
    while (m->tab[k].thread)
        k = (k + 1) & mask;
    m->tab[k] = *b;
    m->n++;
    return 0;
}

/* ---- the heap of stream heads ------------------------------------------- */

/* A stream's next event is evs[stream] (rh_merge_run); the heap holds its
 * sort key only, so moving an entry copies 16 bytes, not the event. */
struct rh_head {
    uint64_t time;
    uint64_t key; /* cls << 32 | stream */
};

static inline int rh_head_less(const struct rh_head *a, const struct rh_head *b)
{
    if (a->time != b->time)
        return a->time < b->time;
    return a->key < b->key;
}

static inline struct rh_head rh_head_of(const struct rh_event *ev, uint32_t stream)
{
    return (struct rh_head){ev->time, (uint64_t)ev->cls << 32 | stream};
}

static void rh_heap_down(struct rh_head *h, size_t n, size_t i)
{
    struct rh_head x = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && rh_head_less(&h[c + 1], &h[c]))
            c++;
        if (!rh_head_less(&h[c], &x))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/* ---- the merge ------------------------------------------------------------ */

struct rh_merge {
    struct rh_rip *r;
    const struct rh_merge_sink *sink;
    struct rh_merge_stats *st;
    struct rh_livemap live;
    int64_t prev_ns; /* time given to the previous event, -1 before the first */
    uint64_t pool_live; /* live blocks with a pool tag (RIP_IS_POOL_ADDR) */
    struct rh_temp_state temp;
    uint64_t nalloc; /* allocations merged so far: the next row id - 1 */
    double heap_bytes, heap_blocks; /* the live heap (weighted when sampled), for
                                       the memory table's rows */
    size_t calib_hint; /* rh_rip_ns_hint()'s segment */
    /* Per thread, the row id of the block its last realloc freed (0: none), for
     * the realloc chains: a thread's RFREE and RALLOC halves are consecutive
     * in its own stream, other threads' events may come between. */
    uint64_t *rfree_id;
    size_t rfree_cap;
};

/* Remembers (id != 0) or forgets (0) the block thread's realloc just freed.
 * Returns 0, or -1 when out of memory (the chain is then not linked, nothing
 * else is lost). */
static int rh_merge_rfree(struct rh_merge *m, uint32_t thread, uint64_t id)
{
    if (thread >= m->rfree_cap) {
        if (!id)
            return 0;
        size_t cap = m->rfree_cap ? m->rfree_cap : 64;
        while (cap <= thread)
            cap *= 2;
        uint64_t *v = realloc(m->rfree_id, cap * sizeof *v);
        if (!v)
            return -1;
        memset(v + m->rfree_cap, 0, (cap - m->rfree_cap) * sizeof *v);
        m->rfree_id = v;
        m->rfree_cap = cap;
    }
    m->rfree_id[thread] = id;
    return 0;
}

/* The time of the next merged event in ns since enable: the clock's, raised to
 * 1 ns after the previous event's when the clock did not advance (equal ticks,
 * or a stream out of order). Times are then strictly increasing in the merged
 * order, so ORDER BY time in the database is the recorded order (FORMAT.md,
 * "What rheaper-convert derives from the merged order"). */
static int64_t rh_merge_time(struct rh_merge *m, const struct rh_event *ev)
{
    int64_t t = rh_rip_ns_hint(m->r, ev->time, &m->calib_hint);
    if (t <= m->prev_ns) /* a hostile time at INT64_MAX stays there, never wraps */
        t = m->prev_ns < INT64_MAX ? m->prev_ns + 1 : INT64_MAX;
    m->prev_ns = t;
    return t;
}

/* Emits the row of block b, freed at t by thread (dealloc_ns -1: never). */
static int rh_merge_emit(struct rh_merge *m, const struct rh_live *b, int64_t t, uint32_t thread,
                         int temporary)
{
    if (!RH_ALWAYS(b->stack < m->r->nstacks, "live block %llu's stack index %u of %zu",
                   (unsigned long long)b->id, b->stack, m->r->nstacks))
        return -1;
    struct rh_stack *stk = &m->r->stacks[b->stack];
    struct rh_row row;
    row.alloc_ns = b->t;
    row.dealloc_ns = t;
    row.stack = stk->id;
    row.size = b->size;
    /* a pool block's address without its tag (runtime/rip_format.h) */
    row.addr = RIP_IS_POOL_ADDR(b->addr) ? b->addr & RIP_POOL_ADDR_MASK : b->addr;
    row.raw_addr = b->addr;
    row.alloc_thread = b->thread;
    row.dealloc_thread = thread;
    row.id = b->id;
    row.stack_index = b->stack;
    row.temporary = (uint8_t)temporary;
    if (stk->defined) {
        row.kind = stk->kind;
    } else {
        row.kind = RH_KIND_UNKNOWN;
        stk->provisional = 1;
    }
    m->st->rows++;
    if (RIP_IS_POOL_ADDR(b->addr) && rh_regions_note(m->r, b->id, b->addr, t >= 0))
        return -1;
    if (m->sink->agg && rh_agg_row(m->sink->agg, &row))
        return -1;
    return m->sink->row ? m->sink->row(m->sink->ctx, &row) : 0;
}

/* Removes live block b and emits its row, freed at t by thread (t -1: the
 * block's free was missed and it stays live as far as rows tell). */
static int rh_merge_close(struct rh_merge *m, struct rh_live *b, int64_t t, uint32_t thread)
{
    struct rh_live copy = *b;
    if (RIP_IS_POOL_ADDR(b->addr) &&
        RH_ALWAYS(m->pool_live > 0, "a pool block at 0x%llx closes with no pool block live",
                  (unsigned long long)b->addr))
        m->pool_live--;
    {
        double w = rh_sample_weight(m->r, b->size, b->addr);
        m->heap_bytes -= w * (double)b->size;
        m->heap_blocks -= w;
    }
    rh_live_del(&m->live, b);
    int temporary = 0;
    if (t >= 0) {
        temporary = rh_temporary_free(&m->temp, copy.stack, copy.size);
        if (m->sink->agg && rh_agg_event(m->sink->agg, copy.stack, t, copy.size, copy.addr, 0))
            return -1;
    }
    return rh_merge_emit(m, &copy, t, thread, temporary);
}

/* Ends every live block of pool `pool` at t (a POOLRESET). Scans the live
 * blocks, so a reset costs O(live blocks) when any pool block is live and
 * nothing otherwise. Returns 0, -1 (out of memory) or the sink's rc. */
static int rh_merge_pool_reset(struct rh_merge *m, uint32_t pool, int64_t t, uint32_t thread)
{
    if (!m->pool_live)
        return 0;
    uint64_t *addrs = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < m->live.cap; i++) {
        const struct rh_live *e = &m->live.tab[i];
        if (!e->thread || !RIP_IS_POOL_ADDR(e->addr) || RIP_POOL_OF(e->addr) != pool)
            continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            uint64_t *a = realloc(addrs, nc * sizeof *a);
            if (!a) {
                free(addrs);
                return -1;
            }
            addrs = a;
            cap = nc;
        }
        addrs[n++] = e->addr;
    }
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        struct rh_live *b = rh_live_find(&m->live, addrs[i]);
        if (b)
            rc = rh_merge_close(m, b, t, thread);
    }
    free(addrs);
    return rc;
}

/* Applies one merged event. Returns 0, -1 (out of memory) or the sink's rc. */
static int rh_merge_event(struct rh_merge *m, const struct rh_event *ev)
{
    int64_t t = rh_merge_time(m, ev);
    if (t > m->st->last_ns)
        m->st->last_ns = t;
    uint64_t addr = ev->addr;
    if (__builtin_expect(ev->op <= RH_EV_RALLOC && RIP_IS_POOL_ADDR(addr), 0))
        addr = rh_regions_resolve(m->r, ev->op, addr, ev->thread); /* pfree, repalloc */
    switch (ev->op) {
    case RH_EV_FREE:
    case RH_EV_RFREE: {
        struct rh_live *b = rh_live_find(&m->live, addr);
        if (ev->op == RH_EV_RFREE && m->sink->realloc)
            (void)rh_merge_rfree(m, ev->thread, b ? b->id : 0);
        if (!b) {
            m->st->unknown_frees++;
            return 0;
        }
        return rh_merge_close(m, b, t, ev->thread);
    }
    case RH_EV_ALLOC:
    case RH_EV_RALLOC: {
        uint32_t si = rh_rip_stack(m->r, ev->stack);
        if (si == UINT32_MAX)
            return -1;
        m->r->stacks[si].used = 1;
        struct rh_live *old = rh_live_find(&m->live, addr);
        if (old) {
            m->st->overlapping_allocs++;
            int rc = rh_merge_close(m, old, -1, 0);
            if (rc)
                return rc;
        }
        struct rh_live b = {addr, ++m->nalloc, t, ev->size, si, ev->thread ? ev->thread : 1};
        if (ev->op == RH_EV_RALLOC && m->sink->realloc && ev->thread < m->rfree_cap &&
            m->rfree_id[ev->thread]) {
            uint64_t prev = m->rfree_id[ev->thread];
            m->rfree_id[ev->thread] = 0;
            if (m->sink->realloc(m->sink->ctx, prev, b.id))
                return -1;
        }
        if (m->sink->alloc &&
            m->sink->alloc(m->sink->ctx, si, m->r->stacks[si].id, b.id, ev->size))
            return -1;
        rh_temporary_alloc(&m->temp, si, ev->size);
        if (m->sink->agg && rh_agg_event(m->sink->agg, si, t, ev->size, addr, 1))
            return -1;
        if (RIP_IS_POOL_ADDR(addr)) {
            m->pool_live++;
            if (rh_regions_opened(m->r, addr))
                return -1;
        }
        double w = rh_sample_weight(m->r, ev->size, addr);
        m->heap_bytes += w * (double)ev->size;
        m->heap_blocks += w;
        return rh_live_add(&m->live, &b);
    }
    case RH_EV_POOLRESET:
        return rh_merge_pool_reset(m, (uint32_t)ev->addr, t, ev->thread);
    case RH_EV_REGION:
        return rh_regions_define(m->r, (uint32_t)ev->addr, (uint32_t)(ev->size & 0xffff),
                                 (uint32_t)ev->stack, (int)((ev->size >> 16) & 1),
                                 (uint32_t)((ev->size >> 17) & 0xffff), t);
    case RH_EV_EXT: { /* an mmap/munmap/mremap/mallopt call */
        if (ev->ext_sub == RIP_EXT_MEMSAMPLE) { /* the heap at this moment, beside it */
            struct rh_event e = *ev;
            e.size = m->heap_bytes > 0 ? (uint64_t)(m->heap_bytes + 0.5) : 0;
            e.addr = m->heap_blocks > 0 ? (uint64_t)(m->heap_blocks + 0.5) : 0;
            return m->sink->ext ? m->sink->ext(m->sink->ctx, &e, t) : 0;
        }
        if (ev->stack) {
            uint32_t si = rh_rip_stack(m->r, ev->stack);
            if (si == UINT32_MAX)
                return -1;
            m->r->stacks[si].used = 1;
        }
        return m->sink->ext ? m->sink->ext(m->sink->ctx, ev, t) : 0;
    }
    case RH_EV_CPU: { /* a CPU sample, no block */
        uint32_t si = rh_rip_stack(m->r, ev->stack);
        if (si == UINT32_MAX)
            return -1;
        m->r->stacks[si].used = 1;
        if (m->sink->agg && rh_agg_cpu(m->sink->agg, si, ev->thread, ev->size))
            return -1;
        return m->sink->cpu ? m->sink->cpu(m->sink->ctx, t, ev->thread, ev->stack, ev->size) : 0;
    }
    case RH_EV_FAIL: {
        m->st->failed_allocs++;
        uint32_t si = rh_rip_stack(m->r, ev->stack);
        if (si == UINT32_MAX)
            return -1;
        return 0;
    }
    }
    return 0;
}

/* The blocks a fork child inherited (r->inherit, rh_inherit.c): live from
 * time 0 in the thread "inherited", rows 1..N, announced to the aggregates
 * and the row index like allocations. Returns 0, -1 or the sink's rc. */
static int rh_merge_seed(struct rh_merge *m)
{
    const struct rh_inherit *inh = m->r->inherit;
    if (!inh || !inh->nblocks)
        return 0;
    for (size_t i = 0; i < inh->nblocks; i++) {
        const struct rh_inh_block *ib = &inh->blocks[i];
        uint32_t si = inh->si[i];
        m->r->stacks[si].used = 1;
        if (rh_live_find(&m->live, ib->addr)) {
            m->st->overlapping_allocs++; /* two inherited blocks at one address: damage */
            continue;
        }
        struct rh_live b = {ib->addr, ++m->nalloc, 0, ib->size, si, inh->thread};
        if (m->sink->alloc &&
            m->sink->alloc(m->sink->ctx, si, m->r->stacks[si].id, b.id, ib->size))
            return -1;
        if (m->sink->agg && rh_agg_event(m->sink->agg, si, 0, ib->size, ib->addr, 1))
            return -1;
        if (RIP_IS_POOL_ADDR(ib->addr)) {
            m->pool_live++;
            if (rh_regions_opened(m->r, ib->addr)) /* a region chunk the child may pfree */
                return -1;
        }
        if (rh_live_add(&m->live, &b))
            return -1;
    }
    m->st->inherited = m->nalloc;
    m->prev_ns = 0; /* recorded events come after them */
    return 0;
}

static int rh_live_cmp(const void *a, const void *b)
{
    const struct rh_live *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

int rh_merge_run(struct rh_rip *r, const struct rh_merge_sink *sink, struct rh_merge_stats *st)
{
    struct rh_merge m = {.r = r, .sink = sink, .st = st, .prev_ns = -1};
    memset(st, 0, sizeof *st);
    int rc = 0;
    struct rh_head *heap = calloc(r->nstreams ? r->nstreams : 1, sizeof *heap);
    struct rh_event *evs = calloc(r->nstreams ? r->nstreams : 1, sizeof *evs);
    if (!heap || !evs) {
        free(heap);
        free(evs);
        return -1;
    }
    size_t n = 0;
    for (size_t i = 0; i < r->nstreams; i++) {
        int k = rh_stream_next(r, &r->streams[i], &evs[i]);
        if (k < 0) {
            rc = -1;
            goto out;
        }
        if (k)
            heap[n++] = rh_head_of(&evs[i], (uint32_t)i);
    }
    for (size_t i = n / 2; i-- > 0;)
        rh_heap_down(heap, n, i);
    rc = rh_merge_seed(&m);
    if (rc)
        goto out;

    uint64_t count = 0;
    while (n) {
        uint32_t si = (uint32_t)heap[0].key;
        rc = rh_merge_event(&m, &evs[si]);
        if (rc)
            goto out;
        int k = rh_stream_next(r, &r->streams[si], &evs[si]);
        if (k < 0) {
            rc = -1;
            goto out;
        }
        if (k)
            heap[0] = rh_head_of(&evs[si], si);
        else
            heap[0] = heap[--n];
        if (n)
            rh_heap_down(heap, n, 0);
        if (sink->progress && !(++count & 0xfffff))
            sink->progress(sink->ctx, r->bytes_done, r->size);
    }

    /* blocks still live: rows without a free, in allocation order */
    if (sink->agg)
        rh_agg_end(sink->agg, rh_run_duration(r, st->last_ns));
    st->live_at_end = m.live.n;
    size_t k = 0;
    for (size_t i = 0; i < m.live.cap; i++)
        if (m.live.tab[i].thread)
            m.live.tab[k++] = m.live.tab[i];
    if (k > 1)
        qsort(m.live.tab, k, sizeof *m.live.tab, rh_live_cmp);
    for (size_t i = 0; i < k; i++) {
        rc = rh_merge_emit(&m, &m.live.tab[i], -1, 0, 0);
        if (rc)
            goto out;
    }
out:
    if (r->oom && !rc)
        rc = -1;
    free(heap);
    free(evs);
    free(m.live.tab);
    free(m.rfree_id);
    return rc;
}

/* ---- one event at a time (convert/live/) ---------------------------------- */

struct rh_merge *rh_merge_new(struct rh_rip *r, const struct rh_merge_sink *sink,
                              struct rh_merge_stats *st)
{
    struct rh_merge *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    memset(st, 0, sizeof *st);
    m->r = r;
    m->sink = sink;
    m->st = st;
    m->prev_ns = -1;
    return m;
}

int rh_merge_feed(struct rh_merge *m, const struct rh_event *ev)
{
    int rc = rh_merge_event(m, ev);
    if (!rc && m->r->oom)
        rc = -1;
    return rc;
}

int rh_merge_is_live(struct rh_merge *m, uint64_t addr)
{
    if (RIP_IS_POOL_ADDR(addr) && RIP_POOL_OF(addr) == 0) /* pfree: the chunk at addr */
        addr = rh_regions_resolve(m->r, RH_EV_FREE, addr, 0);
    return rh_live_find(&m->live, addr) != NULL;
}

void rh_merge_free(struct rh_merge *m)
{
    if (!m)
        return;
    free(m->live.tab);
    free(m->rfree_id);
    free(m);
}
