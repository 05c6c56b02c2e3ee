/* rh_record.c: event encoding, the hot path of every tracked call.
 *
 * The shims call rh_record_alloc / free / realloc / fail between rh_hook_begin
 * and rh_hook_end. A recorded event costs one frame-pointer walk and hash, one
 * stack-table probe and a few varints stored straight into the thread's chunk
 * (a MAP_SHARED file mapping), followed by a release store of the chunk's
 * `used`. Everything not needed on every call (first event of a thread, a full
 * chunk, a new stack, threads without a slot) sits behind rh_unlikely in cold
 * functions. The fast path itself (rh_record_*_inline and the rh_put_*
 * encoders) lives in rh_hot.h, so that the hot shims inline it; this file
 * holds its cold parts, the out-of-line rh_record_* (the same code, for the
 * other shims) and the shared path. Records follow FORMAT.md "Event records"
 * exactly: times are deltas
 * from the previous timed record of the chunk, addresses svarint deltas from the
 * previous address, in 16-byte units unless the record's A flag is set.
 *
 * errno: nothing on the fast path can change it (no system call, no libc call),
 * so the shims do not save it; every cold path that may call into libc or the
 * kernel (opening a file or chunk, a thread's first event, a new stack, the
 * shared path) saves and restores it itself (rh_record_* preserve errno).
 */
#include <errno.h>
#include <string.h>

#include "rh_hot.h"

/* A STACK record's fixed part: byte 0 and three varints. */
#define RH_STACK_FIXED (1 + 3 * 10)

/* Room for one event record in w, or -1 with the event counted as lost. */
static inline int rh_event_room(struct rh_writer *w, uint64_t t)
{
    if (rh_likely(rh_writer_reserve(w, RIP_MAX_EVENT_BYTES, t) == 0))
        return 0;
    __atomic_fetch_add(&rh_prof.lost, 1, __ATOMIC_RELAXED);
    return -1;
}

/* Finds (or defines) the stack id of this call. A new stack gets its STACK
 * record in w before the event that uses it. Returns 0 when the table is full or
 * no room could be made (counted as lost by the caller's event). */
/* Cold part of rh_stack_id: writes the STACK record of new stack id (walked
 * into wk) before the event that uses it. Keeps errno (the CFI prefix and a
 * new chunk may call into libc). */
static RH_COLD void rh_stack_define(struct rh_writer *w, uint32_t id, unsigned kind, void *fp,
                                    const struct rh_walk *wk, uint64_t t)
{
    int e = errno;
    if (kind >= RIP_DYN_KIND_BASE)
        rh_kind_announce(w, kind, t); /* its name, once per file (rh_pool.c) */
    if (rh_writer_reserve(w, RH_STACK_FIXED + (size_t)wk->nframes * 10, t) == 0) {
        uint8_t *q = w->pos;
        *q++ = RIP_OP_STACK;
        q = rip_put_varint(q, id);
        q = rip_put_varint(q, kind);
        q = rip_put_varint(q, ((uint64_t)wk->nframes << 1) | wk->cut);
        uint8_t *frames = q;
        q = rh_stack_encode(fp, wk->nframes, q);
        if (rh_unlikely(__atomic_load_n(&rh_reports_on, __ATOMIC_RELAXED)))
            rh_report_stack(id, frames, q, wk->nframes); /* in-process reports */
        w->pos = q;
        rh_writer_commit(w);
    } /* else the definition is lost with the file; nothing to do */
    errno = e;
}

/* Cold part of rh_stack_id: the home entry did not hold the stack (a
 * collision, a new stack or a full table). */
static RH_COLD uint32_t rh_stack_id_slow(struct rh_writer *w, unsigned kind, void *fp,
                                         const struct rh_walk *wk, uint64_t t)
{
    int is_new;
    uint32_t id = rh_stack_lookup(w->stacks, wk->hash, &is_new);
    if (rh_likely(!is_new)) {
        if (rh_unlikely(!id))
            __atomic_fetch_add(&rh_prof.lost, 1, __ATOMIC_RELAXED);
        return id;
    }
    rh_stack_define(w, id, kind, fp, wk, t);
    return id;
}

static inline uint32_t rh_stack_id(struct rh_writer *w, unsigned kind, void *fp, uint64_t t)
{
    struct rh_walk wk;
    struct rh_stack_table *tb = w->stacks;
    rh_stack_walk(fp, kind, tb->max_depth, &wk);
    /* collisions, insertions and a full table go to rh_stack_lookup */
    uint32_t hid = rh_stack_home_id(tb, wk.hash);
    if (rh_likely(hid))
        return hid;
    return rh_stack_id_slow(w, kind, fp, &wk, t);
}

/* rh_stack_id for the fast path, whose chunk had room for one event before the
 * walk: only a new stack's STACK record can take that room, so the cold part
 * reserves again after it. Returns RH_ID_LOST (nothing written, the loss
 * counted) when no room could be made. */
uint32_t rh_stack_id_slow_fast(struct rh_writer *w, unsigned kind, void *fp, uint64_t hash,
                               uint32_t nframes, uint32_t cut, uint64_t t)
{
    struct rh_walk wk = {hash, nframes, cut};
    uint32_t id = rh_stack_id_slow(w, kind, fp, &wk, t);
    return rh_event_room(w, t) == 0 ? id : RH_ID_LOST;
}

/* ---- encoders, shared by the slot and shared paths ---------------------- */

/* The rh_emit_* reserve room for one event, then write it with rh_put_*
 * (rh_hot.h). */
static inline void rh_emit_alloc(struct rh_writer *w, unsigned kind, void *p, size_t size,
                                 uint64_t t, void *fp)
{
    uint32_t id = rh_stack_id(w, kind, fp, t);
    if (rh_unlikely(rh_event_room(w, t) != 0))
        return;
    rh_put_alloc(w, id, p, size, t);
}

static inline void rh_emit_free(struct rh_writer *w, void *p, uint64_t t)
{
    if (rh_unlikely(rh_event_room(w, t) != 0))
        return;
    rh_put_free(w, p, t);
}

static inline void rh_emit_realloc(struct rh_writer *w, unsigned kind, void *old, void *p,
                                   size_t size, uint64_t t1, uint64_t t2, void *fp)
{
    uint32_t id = rh_stack_id(w, kind, fp, t1);
    if (rh_unlikely(rh_event_room(w, t1) != 0))
        return;
    rh_put_realloc(w, id, old, p, size, t1, t2);
}

static inline void rh_emit_fail(struct rh_writer *w, unsigned kind, size_t size, uint64_t t,
                                void *fp)
{
    uint32_t id = rh_stack_id(w, kind, fp, t);
    if (rh_unlikely(rh_event_room(w, t) != 0))
        return;
    uint8_t *q = rh_put_head(w, w->pos, RIP_OP_FAIL, 0, t);
    q = rip_put_varint(q, id);
    q = rip_put_varint(q, size);
    rh_event_done(w, q);
}

/* ---- the shared path ---------------------------------------------------- */

enum { RH_EV_ALLOC, RH_EV_FREE, RH_EV_REALLOC, RH_EV_FAIL, RH_EV_POOLRESET, RH_EV_REGION };

/* A timed EXT POOLRESET record for pool `id` (FORMAT.md "Allocator families and
 * pools"); counted as an event like a FREE. */
static inline void rh_emit_pool_reset(struct rh_writer *w, uint32_t id, uint64_t t)
{
    if (rh_unlikely(rh_event_room(w, t) != 0))
        return;
    uint8_t *q = rh_put_head(w, w->pos, RIP_OP_EXT, 0, t);
    uint8_t body[10];
    size_t n = (size_t)(rip_put_varint(body, id) - body);
    q = rip_put_varint(q, RIP_EXT_POOLRESET);
    q = rip_put_varint(q, n);
    memcpy(q, body, n);
    rh_event_done(w, q + n);
}

/* A timed EXT REGION record: region `id` (a pool id) now has parent region
 * `parent` (0: none) and the name of dynamic kind `kind` (0: none); flags bit
 * 0: the region was created now; creator: the kind named after the function
 * that created it (0: none), FORMAT.md "Regions". The names' KINDNAMEs go
 * first. */
static inline void rh_emit_region(struct rh_writer *w, uint32_t id, uint32_t parent, unsigned kind,
                                  unsigned flags, unsigned creator, uint64_t t)
{
    if (kind)
        rh_kind_announce(w, kind, t);
    if (creator)
        rh_kind_announce(w, creator, t);
    if (rh_unlikely(rh_event_room(w, t) != 0))
        return;
    uint8_t *q = rh_put_head(w, w->pos, RIP_OP_EXT, 0, t);
    uint8_t body[30];
    uint8_t *b = rip_put_varint(body, id);
    b = rip_put_varint(b, parent);
    b = rip_put_varint(b, kind);
    b = rip_put_varint(b, flags);
    if (creator)
        b = rip_put_varint(b, creator);
    size_t n = (size_t)(b - body);
    q = rip_put_varint(q, RIP_EXT_REGION);
    q = rip_put_varint(q, n);
    memcpy(q, body, n);
    rh_event_done(w, q + n);
}

/* Locks the shared writer and readies it for an event of the calling thread:
 * current epoch, an open chunk, SETTHREAD (+ THREADNAME) when the thread
 * changed. Returns the time to use (taken under the lock, so the shared stream
 * never goes back), or 0 with the lock released when the event is lost. */
static uint64_t rh_shared_begin(void)
{
    rh_spin_lock(&rh_shared_lock);
    struct rh_writer *w = &rh_shared;
    uint64_t t = rh_now() >> rh_clock_shift;
    uint32_t ep = __atomic_load_n(&rh_epoch, __ATOMIC_ACQUIRE);
    if (w->epoch != ep) {
        if (w->chunk)
            rh_writer_seal(w, 0);
        rh_spin_lock(&rh_prof_lock);
        w->epoch = ep;
        w->stacks = rh_prof.stacks;
        rh_spin_unlock(&rh_prof_lock);
        w->seq = 0;
        w->total_events = 0;
        w->next_size = 0;
        w->tid = 0;
    }
    uint32_t tid = rh_gettid();
    /* Opening a chunk writes SETTHREAD itself; else switch thread here. */
    if (w->stacks && w->tid != tid && rh_writer_reserve(w, 64, t) == 0 && w->tid != tid)
        rh_writer_setthread(w);
    if (!w->stacks || w->tid != tid) {
        rh_spin_unlock(&rh_shared_lock);
        __atomic_fetch_add(&rh_prof.lost, 1, __ATOMIC_RELAXED);
        return 0;
    }
    return t ? t : 1;
}

/* The slow path for threads without a slot: the same records, under a lock. */
static RH_COLD void rh_shared_record(int ev, unsigned kind, void *old, void *p, size_t size,
                                     uint64_t t_before, void *fp)
{
    int e = errno;
    uint64_t t = rh_shared_begin();
    if (!t) {
        errno = e;
        return;
    }
    struct rh_writer *w = &rh_shared;
    switch (ev) {
    case RH_EV_ALLOC:
        rh_emit_alloc(w, kind, p, size, t, fp);
        break;
    case RH_EV_FREE:
        rh_emit_free(w, p, t);
        break;
    case RH_EV_REALLOC: {
        uint64_t t1 = t_before >> rh_clock_shift;
        rh_emit_realloc(w, kind, old, p, size, t1 < t ? t1 : t, t, fp);
        break;
    }
    case RH_EV_FAIL:
        rh_emit_fail(w, kind, size, t, fp);
        break;
    case RH_EV_POOLRESET:
        rh_emit_pool_reset(w, (uint32_t)size, t);
        break;
    case RH_EV_REGION:
        rh_emit_region(w, (uint32_t)size, (uint32_t)(uintptr_t)p & 0xffffu, kind,
                       (unsigned)(((uintptr_t)p >> 16) & 1u), (unsigned)((uintptr_t)p >> 17), t);
        break;
    }
    rh_spin_unlock(&rh_shared_lock);
    errno = e;
}

/* rh_thread_prepare, keeping errno (it may create the file, map a chunk or
 * take a slot). */
static RH_COLD struct rh_slot *rh_prepare(uint64_t t, int *drop)
{
    int e = errno;
    struct rh_slot *s = rh_thread_prepare(t, drop);
    errno = e;
    return s;
}

/* The calling thread's writable slot, or NULL (shared path or dropped). */
static inline struct rh_slot *rh_ready(uint64_t t, int *drop)
{
    struct rh_slot *s = rh_tls_slot;
    *drop = 0;
    if (rh_likely(s && s->w.chunk && s->w.epoch == __atomic_load_n(&rh_epoch, __ATOMIC_RELAXED)))
        return s;
    return rh_prepare(t, drop);
}

/* ---- rh_hooks.h entry points -------------------------------------------- */

/* The slow entry points of the fast path (rh_hot.h): a thread's first
 * event, a full chunk, a new file, the shared path. Exactly the checks and
 * records of before the fast path; they take rh_record_*'s arguments. */
/* The calling thread's writer when the fast path stopped at its fast limit
 * only (the chunk has room, the epoch is current): its periodic work is done
 * here (rh_writer_due), and the event is written as the fast path would. */
static inline struct rh_writer *rh_due_writer(void)
{
    struct rh_slot *s = rh_tls_slot;
    if (s && s->w.chunk && s->w.epoch == __atomic_load_n(&rh_epoch, __ATOMIC_RELAXED) &&
        (size_t)(s->w.end - s->w.pos) >= RIP_MAX_EVENT_BYTES) {
        rh_writer_due(&s->w);
        return &s->w;
    }
    return NULL;
}

/* After a slow entry's event: the memory samples' deadline, in the writer the
 * event went to (the thread's slot; none for the shared stream, which runs
 * under a lock and never samples). */
static inline void rh_slow_mem_check(uint64_t t)
{
    struct rh_slot *s = rh_tls_slot;
    if (s && s->w.chunk && s->w.epoch == __atomic_load_n(&rh_epoch, __ATOMIC_RELAXED))
        RH_MEM_CHECK(&s->w, t);
}

/* After a slow entry's event: the helper's start, when a chunk request
 * waits for it and this is a safe point. `safe`: the event is a call of the
 * malloc family or the libc functions that allocate (the wrap table's
 * kinds below mmap's, a free under the malloc family's guard), whose real
 * function has returned (or not begun): no allocator lock is held by this
 * thread, and creating a thread, which allocates, cannot wait on one. Not an
 * mmap's record, a pool's or a region's (their callers may hold locks). */
static inline void rh_slow_helper_check(int safe)
{
    if (rh_unlikely(__atomic_load_n(&rh_spare_want_helper, __ATOMIC_RELAXED)) && safe)
        rh_spare_start_safe();
}

/* The wrap table's kinds of allocating calls, malloc (1) up to its mmap
 * family (RIP_KIND_MMAP_FIRST on): the C allocator, the C++ operators, the
 * libc functions that allocate. Pools and regions have dynamic kinds
 * (RIP_DYN_KIND_BASE up). */
static inline int rh_kind_safe(unsigned kind)
{
    return kind >= 1 && kind < RIP_KIND_MMAP_FIRST;
}

void rh_record_alloc_slow(unsigned kind, void *p, size_t size, uint64_t t_after, void *fp)
{
    uint64_t t = t_after >> rh_clock_shift;
    struct rh_writer *w = rh_due_writer();
    if (w) {
        uint32_t id = rh_stack_id_fast(w, kind, fp, t);
        if (rh_likely(id != RH_ID_LOST))
            rh_put_alloc(w, id, p, size, t);
    } else {
        int drop;
        struct rh_slot *s = rh_ready(t, &drop);
        if (rh_likely(s))
            rh_emit_alloc(&s->w, kind, p, size, t, fp);
        else if (!drop)
            rh_shared_record(RH_EV_ALLOC, kind, NULL, p, size, 0, fp);
    }
    rh_slow_mem_check(t);
    rh_slow_helper_check(rh_kind_safe(kind));
}

void rh_record_free_slow(void *p, uint64_t t_before)
{
    uint64_t t = t_before >> rh_clock_shift;
    struct rh_writer *w = rh_due_writer();
    if (w) {
        rh_put_free(w, p, t);
    } else {
        int drop;
        struct rh_slot *s = rh_ready(t, &drop);
        if (rh_likely(s))
            rh_emit_free(&s->w, p, t);
        else if (!drop)
            rh_shared_record(RH_EV_FREE, 0, NULL, p, 0, t_before, NULL);
    }
    rh_slow_mem_check(t);
    rh_slow_helper_check(rh_guard == RH_GUARD_LEAF);
}

void rh_record_realloc_slow(unsigned kind, void *old, void *p, size_t size, uint64_t t_before,
                            uint64_t t_after, void *fp)
{
    uint64_t t1 = t_before >> rh_clock_shift, t2 = t_after >> rh_clock_shift;
    struct rh_writer *w = rh_due_writer();
    if (w) {
        uint32_t id = rh_stack_id_fast(w, kind, fp, t1);
        if (rh_likely(id != RH_ID_LOST))
            rh_put_realloc(w, id, old, p, size, t1, t2);
    } else {
        int drop;
        struct rh_slot *s = rh_ready(t1, &drop);
        if (rh_likely(s))
            rh_emit_realloc(&s->w, kind, old, p, size, t1, t2, fp);
        else if (!drop)
            rh_shared_record(RH_EV_REALLOC, kind, old, p, size, t_before, fp);
    }
    rh_slow_mem_check(t2);
    rh_slow_helper_check(rh_kind_safe(kind));
}

/* Out of line, for the shims that are not hot and for the runtime's tests; the
 * hot shims inline the same code (rh_record_*_inline). */
RH_WALK_ALIGNED void rh_record_alloc(unsigned kind, void *p, size_t size, uint64_t t_after, void *fp)
{
    rh_record_alloc_inline(kind, p, size, t_after, fp);
}

void rh_record_free(void *p, uint64_t t_before)
{
    if (p)
        rh_record_free_inline(p, t_before);
}

RH_WALK_ALIGNED void rh_record_realloc(unsigned kind, void *old, void *p, size_t size, uint64_t t_before,
                       uint64_t t_after, void *fp)
{
    rh_record_realloc_inline(kind, old, p, size, t_before, t_after, fp);
}

void rh_record_fail(unsigned kind, size_t size, void *fp)
{
    uint64_t t = rh_now() >> rh_clock_shift;
    int drop;
    struct rh_slot *s = rh_ready(t, &drop);
    if (rh_likely(s))
        rh_emit_fail(&s->w, kind, size, t, fp);
    else if (!drop)
        rh_shared_record(RH_EV_FAIL, kind, NULL, NULL, size, 0, fp);
}

/* ---- timed EXT records with a stack -------------------------- */

/* Writes EXT `sub` with body {stack id, v[0..n)} into w at t. Its room is
 * reserved whole (up to 1 + 3 * 10 + 9 * 10 bytes), else it is lost. */
static void rh_emit_ext(struct rh_writer *w, unsigned kind, unsigned sub, const uint64_t *v,
                        unsigned n, uint64_t t, void *fp)
{
    uint32_t id = rh_stack_id(w, kind, fp, t);
    uint8_t body[10 * 9];
    uint8_t *b = rip_put_varint(body, id);
    for (unsigned i = 0; i < n && i < 8; i++)
        b = rip_put_varint(b, v[i]);
    size_t len = (size_t)(b - body);
    if (rh_unlikely(rh_writer_reserve(w, 1 + 3 * 10 + len, t) != 0)) {
        __atomic_fetch_add(&rh_prof.lost, 1, __ATOMIC_RELAXED);
        return;
    }
    uint8_t *q = rh_put_head(w, w->pos, RIP_OP_EXT, 0, t);
    q = rip_put_varint(q, sub);
    q = rip_put_varint(q, len);
    memcpy(q, body, len);
    rh_event_done(w, q + len);
}

int rh_thread_recording(void)
{
    struct rh_slot *s = rh_tls_slot;
    return s && s->w.chunk && s->w.epoch == __atomic_load_n(&rh_epoch, __ATOMIC_RELAXED);
}

void rh_record_ext(unsigned kind, unsigned sub, const uint64_t *v, unsigned n, uint64_t t_after,
                   void *fp)
{
    uint64_t t = t_after >> rh_clock_shift;
    int drop;
    struct rh_slot *s = rh_ready(t, &drop);
    if (rh_likely(s)) {
        rh_emit_ext(&s->w, kind, sub, v, n, t, fp);
    } else if (!drop) {
        int e = errno;
        uint64_t ts = rh_shared_begin();
        if (ts) {
            rh_emit_ext(&rh_shared, kind, sub, v, n, ts, fp);
            rh_spin_unlock(&rh_shared_lock);
        }
        errno = e;
    }
}

/* Every block of pool `id` ends at t_before (rheaper_pool_reset, rh_pool.c). */
void rh_record_pool_reset(uint32_t id, uint64_t t_before)
{
    uint64_t t = t_before >> rh_clock_shift;
    int drop;
    struct rh_slot *s = rh_ready(t, &drop);
    if (rh_likely(s))
        rh_emit_pool_reset(&s->w, id, t);
    else if (!drop)
        rh_shared_record(RH_EV_POOLRESET, 0, NULL, NULL, id, t_before, NULL);
}

/* Region `id` has parent `parent` and name kind `kind` from t_before on
 * (rh_region.c). */
void rh_record_region(uint32_t id, uint32_t parent, unsigned kind, unsigned flags,
                      unsigned creator, uint64_t t_before)
{
    uint64_t t = t_before >> rh_clock_shift;
    int drop;
    struct rh_slot *s = rh_ready(t, &drop);
    if (rh_likely(s))
        rh_emit_region(&s->w, id, parent, kind, flags, creator, t);
    else if (!drop)
        rh_shared_record(RH_EV_REGION, kind, NULL, (void *)(uintptr_t)(parent | ((uintptr_t)(flags & 1u) << 16) |
                                                      ((uintptr_t)creator << 17)), id,
                         t_before, NULL);
}

/* ---- timed EXT records without a stack (memory samples) ----------------- */

/* Timed, but not an event of the program: the chunk's and the trailer's
 * event counts leave it out (FORMAT.md "Memory samples"). A record
 * that finds no room is dropped without counting a loss. */
void rh_emit_ext_raw(struct rh_writer *w, unsigned sub, const uint8_t *body, size_t len, uint64_t t)
{
    if (rh_unlikely(rh_writer_reserve(w, 1 + 3 * 10 + len, t) != 0))
        return;
    uint8_t *q = rh_put_head(w, w->pos, RIP_OP_EXT, 0, t);
    q = rip_put_varint(q, sub);
    q = rip_put_varint(q, len);
    memcpy(q, body, len);
    w->pos = q + len;
    rh_writer_commit(w);
}

void rh_record_ext_raw(unsigned sub, const uint8_t *body, size_t len, uint64_t t_after)
{
    uint64_t t = t_after >> rh_clock_shift;
    int drop;
    struct rh_slot *s = rh_ready(t, &drop);
    if (rh_likely(s)) {
        rh_emit_ext_raw(&s->w, sub, body, len, t);
    } else if (!drop) {
        int e = errno;
        uint64_t ts = rh_shared_begin();
        if (ts) {
            rh_emit_ext_raw(&rh_shared, sub, body, len, ts);
            rh_spin_unlock(&rh_shared_lock);
        }
        errno = e;
    }
}

/* ---- sampling ----------------------------------------------------------- */

void rh_sample_realloc_rec(unsigned kind, void *old, void *p, size_t size, int was, int now,
                           uint64_t t_before, uint64_t t_after, void *fp)
{
    /* a shim that skipped the clock (the old block could not have been
     * recorded, rh_live_maybe) passes 0: then only an ALLOC can follow */
    if (!t_after)
        t_after = rh_now();
    if (!t_before)
        t_before = t_after;
    if (was && now)
        rh_record_realloc_slow(kind, old, p, size, t_before, t_after, fp);
    else if (was)
        rh_record_free_slow(old, t_before);
    else if (now)
        rh_record_alloc_slow(kind, p, size, t_after, fp);
}
