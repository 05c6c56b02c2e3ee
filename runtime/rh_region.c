/* rh_region.c: region allocators declared in the user's allocator file.
 *
 * A region allocator (PostgreSQL's memory contexts, nginx's and APR's pools)
 * hands out chunks from a region and frees them one by one (pfree), all at
 * once (a reset), or with the region (a delete, which also deletes the
 * region's children). rheaper-cc generates a shim for each function of the
 * file's region roles (cc-wrapper/rh_cc_alloc.c) that calls the functions
 * here. The runtime keeps one table entry per live region: the program's
 * region pointer, the region's pool id (the tag of its chunks' addresses, as
 * for the client requests' pools), its name (a dynamic kind) and its place
 * in the tree of regions. It keeps nothing per chunk:
 *   - an allocation in region R is an ALLOC of the function's kind whose
 *     address carries R's tag (FORMAT.md "Regions");
 *   - a free of one chunk (pfree(p), which names no region) is a FREE of p
 *     tagged with pool id 0: the converter finds the live chunk at p;
 *   - a reset ends R's chunks (one POOLRESET) and, where the allocator says
 *     so, deletes R's children first; a delete ends the chunks of R and of
 *     every region below it, deepest first, and drops them from the table;
 *   - a region is announced by a timed REGION record (id, parent id, name)
 *     when it is created, renamed, moved or first used.
 * The real function runs without the runtime's guard, so the region
 * allocator's own malloc and free calls stay rows of their own; a region
 * function called inside another (apr_pcalloc over apr_palloc) is not
 * recorded twice (a per-thread depth).
 *
 * The table is static (no allocation), open addressing with tombstones so
 * that the tree's links (indices) never move, under one spin lock that is
 * never held while recording: the records are written after it is released.
 *
 * A chunk is the common event (PostgreSQL: about 1 200 palloc-family calls a
 * pgbench transaction against a few dozen creates, resets and deletes), so
 * its path takes no lock: a per-thread cache of the last regions used maps a
 * region pointer to its table entry and id, valid while the entry's sequence
 * number is the one it was read with (every change of an entry's key or id
 * takes a new number from one counter), and the event itself goes through the
 * record fast path inline (rh_hot.h), as the malloc shims' do, with one clock
 * read.
 */
/* rh_hook_begin starts the process through the session layer's hook. */
#define RH_CORE_ENTRY 1
#include <string.h>

#include "rh_hot.h"

#define RH_REGION_CAP 32768u /* power of two */
#define RH_REGION_BATCH 128u /* regions deleted per locked pass */
#define RH_EMPTY 0u
#define RH_TOMB 1u

struct rh_region {
    uintptr_t key;               /* the program's region pointer; RH_EMPTY, RH_TOMB */
    uint64_t seq;                /* rh_region_seq when key or id last changed */
    uint32_t id;                 /* pool id */
    uint32_t kind;               /* name, 0: none */
    int32_t parent, child, next; /* indices, -1: none */
};

/* The kind of a region function, one static instance per function in the
 * generated shim file (the same layout as rh_pool.c's rh_fam_kind). */
struct rh_fam_kind {
    const char *name;
    uint32_t kind;
};

static struct rh_region rh_regions[RH_REGION_CAP];
static uint32_t rh_region_used; /* entries not RH_EMPTY */
static int rh_region_lock;
static uint8_t rh_region_ids[65536 / 8]; /* pool ids of live regions */
/* The last sequence number given to an entry (under the lock; 64 bits: never
 * wraps, so an entry's number names one key and id for ever). */
static uint64_t rh_region_seq;

/* An entry's key or id changes: it takes the next sequence number, so that no
 * thread's cache (below) takes the entry for what it was. Under the lock. */
static inline void rh_region_touch(struct rh_region *e)
{
    __atomic_store_n(&e->seq, ++rh_region_seq, __ATOMIC_RELAXED);
}

/* ---- the per-thread cache of regions -------------------------------------
 * Direct-mapped by the region pointer, RH_RC_N entries per thread: a region
 * pointer, the index of its entry in rh_regions, the entry's sequence number
 * and the region's id as they were under the lock. An entry whose sequence
 * number is still the one cached still has that key and id (an entry changes
 * them only under the lock, with a new number), so a hit needs no lock and no
 * probe: one compare of the pointer and one load of the entry's number. The
 * program holds the region while it allocates from it, so a delete that
 * races with the hit is the program's own use after free. A fork child keeps
 * the table and its caches (same regions, same ids). */
#define RH_RC_N 8u
struct rh_rc_ent {
    uintptr_t key;
    uint64_t seq;
    uint32_t idx, id;
};
static __thread struct rh_rc_ent rh_tls_rc[RH_RC_N] __attribute__((tls_model("initial-exec")));

static inline struct rh_rc_ent *rh_rc_slot(uintptr_t key)
{
    return &rh_tls_rc[(uint32_t)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> 61) & (RH_RC_N - 1)];
}

/* A pool id no live region has (after 65535 ids the counter wraps, and a
 * long-lived region keeps its id). Under the lock. */
static uint32_t rh_region_new_id(void)
{
    for (int n = 0; n < 65536; n++) {
        uint32_t id = rh_pool_new_id();
        if (!(rh_region_ids[id >> 3] & (1u << (id & 7)))) {
            rh_region_ids[id >> 3] |= (uint8_t)(1u << (id & 7));
            return id;
        }
    }
    return 0;
}

static void rh_region_drop_id(uint32_t id)
{
    rh_region_ids[id >> 3] &= (uint8_t) ~(1u << (id & 7));
}
static __thread int rh_tls_region_depth __attribute__((tls_model("initial-exec")));

/* Set in a fork child: its profile must learn the regions it inherited. */
static int rh_region_reannounce;

void rh_region_fork(int phase)
{
    if (phase == 0) {
        rh_spin_lock(&rh_region_lock);
    } else if (phase == 1) {
        rh_spin_unlock(&rh_region_lock);
    } else {
        rh_region_lock = 0;
        rh_region_reannounce = 1;
    }
}

/* A fork child's first region call: announces every region it inherited,
 * first all as roots (so that each parent is known), then with their
 * parents. Records are written outside the lock, in batches. */
static RH_COLD void rh_region_announce_all(void)
{
    if (!__atomic_exchange_n(&rh_region_reannounce, 0, __ATOMIC_ACQ_REL))
        return;
    for (int pass = 0; pass < 2; pass++) {
        uint32_t at = 0;
        while (at < RH_REGION_CAP) {
            uint32_t ids[RH_REGION_BATCH], par[RH_REGION_BATCH], kinds[RH_REGION_BATCH], n = 0;
            rh_spin_lock(&rh_region_lock);
            for (; at < RH_REGION_CAP && n < RH_REGION_BATCH; at++) {
                const struct rh_region *e = &rh_regions[at];
                if (e->key == RH_EMPTY || e->key == RH_TOMB)
                    continue;
                ids[n] = e->id;
                par[n] = e->parent >= 0 ? rh_regions[e->parent].id : 0;
                kinds[n++] = e->kind;
            }
            rh_spin_unlock(&rh_region_lock);
            uint64_t t = rh_now();
            for (uint32_t k = 0; k < n; k++)
                if (pass == 0)
                    rh_record_region(ids[k], 0, kinds[k], 1, 0, t);
                else if (par[k])
                    rh_record_region(ids[k], par[k], kinds[k], 0, 0, t);
        }
    }
}

/* rh_hook_begin for the region calls, announcing inherited regions first. */
static inline int rh_region_begin(void)
{
    if (!rh_hook_begin())
        return 0;
    if (rh_unlikely(__atomic_load_n(&rh_region_reannounce, __ATOMIC_RELAXED)))
        rh_region_announce_all();
    return 1;
}

static inline uint32_t rh_region_hash(uintptr_t k)
{
    uint64_t h = ((uint64_t)k >> 4) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 40) & (RH_REGION_CAP - 1);
}

/* The index of region key, or -1. Under the lock. */
static int32_t rh_region_find(uintptr_t key)
{
    for (uint32_t i = rh_region_hash(key), n = 0; n < RH_REGION_CAP;
         i = (i + 1) & (RH_REGION_CAP - 1), n++) {
        if (rh_regions[i].key == RH_EMPTY)
            return -1;
        if (rh_regions[i].key == key)
            return (int32_t)i;
    }
    return -1;
}

/* Adds region key (not present) without a parent. Returns its index, or -1
 * when the table is full. Under the lock. */
static int32_t rh_region_add(uintptr_t key, uint32_t kind)
{
    if (rh_region_used >= RH_REGION_CAP - RH_REGION_CAP / 8)
        return -1;
    for (uint32_t i = rh_region_hash(key);; i = (i + 1) & (RH_REGION_CAP - 1)) {
        struct rh_region *e = &rh_regions[i];
        if (e->key == RH_EMPTY || e->key == RH_TOMB) {
            if (e->key == RH_EMPTY)
                rh_region_used++;
            e->key = key;
            e->id = rh_region_new_id();
            rh_region_touch(e);
            e->kind = kind;
            e->parent = e->child = e->next = -1;
            return (int32_t)i;
        }
    }
}

static void rh_region_unlink(int32_t i)
{
    struct rh_region *e = &rh_regions[i];
    if (e->parent >= 0) {
        int32_t *l = &rh_regions[e->parent].child;
        while (*l >= 0 && *l != i)
            l = &rh_regions[*l].next;
        if (*l == i)
            *l = e->next;
    }
    e->parent = e->next = -1;
}

static void rh_region_link(int32_t i, int32_t parent)
{
    rh_region_unlink(i);
    if (parent < 0 || parent == i)
        return;
    for (int32_t a = parent; a >= 0; a = rh_regions[a].parent)
        if (a == i)
            return; /* would make a cycle: keep it a root */
    rh_regions[i].parent = parent;
    rh_regions[i].next = rh_regions[parent].child;
    rh_regions[parent].child = i;
}

/* The index of region key, added (announce set) when unknown. Under the lock. */
static int32_t rh_region_get(uintptr_t key, int *announce)
{
    int32_t i = rh_region_find(key);
    if (i < 0) {
        i = rh_region_add(key, 0);
        *announce = i >= 0;
    }
    return i;
}

/* ---- what the generated shims call --------------------------------------- */

/* 1 when this call of a region function must be recorded: tracking may be on
 * and no region function of this thread is running. The shim then calls
 * rh_region_leave after the real call, or rh_region_alloc /
 * rh_region_realloc, which leave first. */
RH_HIDDEN int rh_region_enter(void)
{
    if (rh_likely(__atomic_load_n(&rh_state, __ATOMIC_RELAXED) == RH_OFF))
        return 0;
    if (rh_tls_region_depth || rh_guard)
        return 0;
    rh_tls_region_depth = 1;
    return 1;
}

RH_HIDDEN void rh_region_leave(void)
{
    rh_tls_region_depth = 0;
}

/* Region `region` was created by the function of k with parent `parent`
 * (NULL: a root) and the name `name` (NULL: the function's name). A region
 * already known at that address with another name or parent (its delete was
 * not seen) starts again; with the same ones it is the same creation. */
RH_HIDDEN void rh_region_create(struct rh_fam_kind *k, void *region, void *parent, const char *name)
{
    if (!region || !rh_region_begin())
        return;
    uint32_t kind = rh_kind_intern_copy(name ? name : k->name);
    uint64_t t = rh_now();
    rh_spin_lock(&rh_region_lock);
    int32_t i = rh_region_find((uintptr_t)region);
    int32_t known_parent = parent ? rh_region_find((uintptr_t)parent) : -1;
    if (i >= 0 && rh_regions[i].kind == kind && rh_regions[i].parent == known_parent) {
        /* the same creation seen again, by an outer creating function
         * (AllocSetContextCreateInternal over MemoryContextCreate): only its
         * name is news, for the allocator's own blocks */
        uint32_t id = rh_regions[i].id;
        uint32_t ppid = known_parent >= 0 ? rh_regions[known_parent].id : 0;
        rh_spin_unlock(&rh_region_lock);
        rh_record_region(id, ppid, kind, 0, rh_kind_intern(k->name), t);
        rh_hook_end();
        return;
    }
    if (i >= 0) {
        rh_region_unlink(i);
        rh_region_drop_id(rh_regions[i].id);
        rh_regions[i].id = rh_region_new_id();
        rh_region_touch(&rh_regions[i]);
    } else {
        i = rh_region_add((uintptr_t)region, kind);
    }
    int32_t pi = -1, pann = 0, pid = 0;
    if (i >= 0) {
        rh_regions[i].kind = kind;
        if (parent) {
            pi = rh_region_get((uintptr_t)parent, &pann);
            if (pi >= 0)
                pid = (int32_t)rh_regions[pi].id;
        }
        rh_region_link(i, pi);
    }
    uint32_t id = i >= 0 ? rh_regions[i].id : 0;
    uint32_t ppid = pi >= 0 ? rh_regions[pi].id : 0;
    uint32_t pkind = pi >= 0 ? rh_regions[pi].kind : 0;
    rh_spin_unlock(&rh_region_lock);
    if (pann)
        rh_record_region((uint32_t)pid, 0, pkind, 1, 0, t);
    if (id)
        rh_record_region(id, ppid, kind, 1, rh_kind_intern(k->name), t);
    rh_hook_end();
}

/* Region `region` is now called `name`. */
RH_HIDDEN void rh_region_name(void *region, const char *name)
{
    if (!region || !name || !rh_region_begin())
        return;
    uint32_t kind = rh_kind_intern_copy(name);
    uint64_t t = rh_now();
    int ann = 0;
    rh_spin_lock(&rh_region_lock);
    int32_t i = rh_region_get((uintptr_t)region, &ann);
    uint32_t id = 0, parent = 0;
    if (i >= 0) {
        rh_regions[i].kind = kind;
        id = rh_regions[i].id;
        parent = rh_regions[i].parent >= 0 ? rh_regions[rh_regions[i].parent].id : 0;
    }
    rh_spin_unlock(&rh_region_lock);
    if (id)
        rh_record_region(id, parent, kind, (unsigned)ann, 0, t);
    rh_hook_end();
}

/* Region `region` moves under `parent` (NULL: becomes a root). */
RH_HIDDEN void rh_region_set_parent(void *region, void *parent)
{
    if (!region || !rh_region_begin())
        return;
    uint64_t t = rh_now();
    int ann = 0, pann = 0;
    rh_spin_lock(&rh_region_lock);
    int32_t i = rh_region_get((uintptr_t)region, &ann);
    int32_t pi = parent ? rh_region_get((uintptr_t)parent, &pann) : -1;
    uint32_t id = 0, pid = 0, kind = 0, pkind = 0, ppid = 0;
    if (i >= 0) {
        rh_region_link(i, pi);
        id = rh_regions[i].id;
        kind = rh_regions[i].kind;
        pid = rh_regions[i].parent >= 0 ? rh_regions[rh_regions[i].parent].id : 0;
    }
    if (pi >= 0) {
        pkind = rh_regions[pi].kind;
        ppid = rh_regions[pi].id;
    }
    rh_spin_unlock(&rh_region_lock);
    if (pann && ppid)
        rh_record_region(ppid, 0, pkind, 1, 0, t);
    if (id)
        rh_record_region(id, pid, kind, (unsigned)ann, 0, t);
    rh_hook_end();
}

/* The id of region `region` (not NULL) when the thread's cache misses: from
 * the table under the lock (the region added when unknown, and then announced
 * at t), and into the cache. 0 when the table is full. */
static RH_COLD uint32_t rh_region_id_slow(uintptr_t region, uint64_t t)
{
    uint32_t id = 0, pid = 0, rkind = 0;
    int ann = 0;
    struct rh_rc_ent *c = rh_rc_slot(region);
    rh_spin_lock(&rh_region_lock);
    int32_t i = rh_region_get(region, &ann);
    if (i >= 0) {
        const struct rh_region *e = &rh_regions[i];
        id = e->id;
        rkind = e->kind;
        pid = e->parent >= 0 ? rh_regions[e->parent].id : 0;
        c->key = region;
        c->idx = (uint32_t)i;
        c->seq = e->seq;
        c->id = id;
    }
    rh_spin_unlock(&rh_region_lock);
    if (ann)
        rh_record_region(id, pid, rkind, 1, 0, t);
    return id;
}

/* The id of region `region` (NULL: 0), the thread's cache first. */
static inline uint32_t rh_region_id(void *region, uint64_t t)
{
    if (!region)
        return 0;
    uintptr_t key = (uintptr_t)region;
    const struct rh_rc_ent *c = rh_rc_slot(key);
    if (rh_likely(c->key == key &&
                  __atomic_load_n(&rh_regions[c->idx].seq, __ATOMIC_RELAXED) == c->seq))
        return c->id;
    return rh_region_id_slow(key, t);
}

/* The kind of the region function of k, named at its first recorded call. */
static inline uint32_t rh_region_kind(struct rh_fam_kind *k)
{
    uint32_t kind = __atomic_load_n(&k->kind, __ATOMIC_ACQUIRE);
    if (rh_unlikely(!kind)) {
        kind = rh_kind_intern(k->name);
        __atomic_store_n(&k->kind, kind, __ATOMIC_RELEASE);
    }
    return kind;
}

/* A chunk address as recorded: the region's tag (id 0: "the region of the
 * chunk at this address", for the converter to find) over the address. */
static inline void *rh_region_addr(uint32_t id, const void *p)
{
    return (void *)(uintptr_t)(RIP_POOL_TAG(id) | ((uintptr_t)p & RIP_POOL_ADDR_MASK));
}

/* rh_hook_begin for a region call whose shim saw tracking maybe on
 * (rh_region_enter), announcing inherited regions first. */
static inline int rh_region_begin_hot(void)
{
    if (!rh_hook_begin_hot(RH_GUARD_CALL))
        return 0;
    if (rh_unlikely(__atomic_load_n(&rh_region_reannounce, __ATOMIC_RELAXED)))
        rh_region_announce_all();
    return 1;
}

/* A chunk p of `size` bytes from region `region` (NULL p: a failure), by the
 * function of k; fp is the shim's frame. Leaves the region call first (the
 * shim's rh_region_leave). The event goes through the record fast path
 * inline, timed once after the real call. */
RH_HIDDEN RH_WALK_ALIGNED void rh_region_alloc(struct rh_fam_kind *k, void *region, void *p,
                                               size_t size, void *fp)
{
    rh_tls_region_depth = 0;
    if (!rh_region_begin_hot())
        return;
    uint32_t kind = rh_region_kind(k);
    if (rh_unlikely(!p)) {
        if (kind)
            rh_record_fail(kind, size, fp);
        rh_hook_end();
        return;
    }
    uint64_t t = rh_now();
    uint32_t id = rh_region_id(region, t);
    if (rh_likely(kind))
        rh_record_alloc_inline(kind, rh_region_addr(id, p), size, t, fp);
    rh_hook_end();
}

/* Chunk p (NULL: nothing) goes back to its region. Before the real call; the
 * shim leaves after it. */
RH_HIDDEN void rh_region_free(void *p)
{
    if (!p || !rh_region_begin_hot())
        return;
    rh_record_free_now(rh_region_addr(0, p));
    rh_hook_end();
}

/* Chunk old became p (size bytes; NULL p: failed, old stays) in old's region,
 * t0 taken before the real call. Leaves the region call first. */
RH_HIDDEN RH_WALK_ALIGNED void rh_region_realloc(struct rh_fam_kind *k, void *old, void *p,
                                                 size_t size, uint64_t t0, void *fp)
{
    rh_tls_region_depth = 0;
    if (!rh_region_begin_hot())
        return;
    uint32_t kind = rh_region_kind(k);
    if (!kind) {
    } else if (!p) {
        rh_record_fail(kind, size, fp);
    } else if (!old) {
        rh_record_alloc_inline(kind, rh_region_addr(0, p), size, rh_now(), fp);
    } else {
        rh_record_realloc_inline(kind, rh_region_addr(0, old), rh_region_addr(0, p), size, t0,
                                 rh_now(), fp);
    }
    rh_hook_end();
}

/* Marks entry i deleted. A deleted entry just before an empty one ends no
 * probe chain that a live key needs (every chain through it stops at the
 * empty one next), so it and the deleted entries before it become empty
 * again: deletes then give their room back, and a long run that creates and
 * deletes regions for ever (a server's contexts per query) never fills the
 * table with tombstones. Under the lock. */
static void rh_region_tomb(int32_t i)
{
    uint32_t k = (uint32_t)i;
    rh_regions[k].key = RH_TOMB;
    rh_region_touch(&rh_regions[k]);
    if (rh_regions[(k + 1) & (RH_REGION_CAP - 1)].key != RH_EMPTY)
        return;
    while (rh_regions[k].key == RH_TOMB) {
        rh_regions[k].key = RH_EMPTY;
        rh_region_used--;
        k = (k - 1) & (RH_REGION_CAP - 1);
    }
}

/* Removes up to RH_REGION_BATCH regions of the subtree of index top (top
 * itself last, and only when with_top), deepest first, writing their ids to
 * ids. Returns how many; *done set when the subtree is gone. Under the lock. */
static uint32_t rh_region_take(int32_t top, int with_top, uint32_t *ids, int *done)
{
    uint32_t n = 0;
    *done = 0;
    while (n < RH_REGION_BATCH) {
        int32_t i = top;
        while (rh_regions[i].child >= 0)
            i = rh_regions[i].child;
        if (i == top) {
            if (with_top) {
                ids[n++] = rh_regions[i].id;
                rh_region_drop_id(rh_regions[i].id);
                rh_region_unlink(i);
                rh_region_tomb(i);
            }
            *done = 1;
            break;
        }
        ids[n++] = rh_regions[i].id;
        rh_region_drop_id(rh_regions[i].id);
        rh_region_unlink(i);
        rh_region_tomb(i);
    }
    return n;
}

/* Ends the chunks of region `region` (unless keep_self) and, with
 * children_too, deletes its children first (delete_self: the region goes
 * too). Before the real call. */
static void rh_region_end(void *region, int children_too, int delete_self, int keep_self)
{
    if (!region || !rh_region_begin())
        return;
    uint32_t ids[RH_REGION_BATCH];
    int done = 0;
    uint32_t self = 0;
    while (!done) {
        uint64_t t = rh_now();
        rh_spin_lock(&rh_region_lock);
        int32_t i = rh_region_find((uintptr_t)region);
        uint32_t n = 0;
        if (i < 0) {
            done = 1;
        } else if (!children_too && !delete_self) {
            self = rh_regions[i].id;
            done = 1;
        } else {
            if (!delete_self)
                self = rh_regions[i].id;
            n = rh_region_take(i, delete_self, ids, &done);
        }
        rh_spin_unlock(&rh_region_lock);
        for (uint32_t k = 0; k < n; k++)
            rh_record_pool_reset(ids[k], t);
    }
    if (self && !keep_self)
        rh_record_pool_reset(self, rh_now());
    rh_hook_end();
}

/* delete_children: 0 the region's chunks end; 1 its children are deleted
 * first; 2 only its children are deleted, its own chunks stay (PostgreSQL's
 * MemoryContextDeleteChildren). */
RH_HIDDEN void rh_region_reset(void *region, int delete_children)
{
    rh_region_end(region, delete_children != 0, 0, delete_children == 2);
}

RH_HIDDEN void rh_region_delete(void *region)
{
    rh_region_end(region, 1, 1, 0);
}
