/* rh_hot.h: the runtime's inline hot path.
 *
 * What every recorded event runs without a call: the guard and state tests
 * (rh_hooks.h), the frame-pointer walk with its hash and the walk cache's
 * test, the probe of the stack's home entry, the sampler's countdown, the
 * live map's filter, and the event record written into the thread's chunk.
 * Part of the recording core (rh_recording.h declares the cold halves these call
 * and the data they read); included by the shims that record inline
 * (wrap/shims_malloc.c) and the core files that share the code.
 */
#ifndef RH_HOT_H
#define RH_HOT_H

#include "rh_recording.h"

/* ---- rh_stack.c: the walk, inline in the record fast path --------------
 * rh_stack_walk_inline is the frame-pointer part of the walk with its hash, so
 * that rh_record.c's fast path pays no call, no saved registers of its own and
 * no struct in memory for it while every frame keeps a frame record. The first
 * frame that does not (its function has no frame pointer: libc, libstdc++,
 * Debian's libraries), a walk that starts off the thread's stack (a signal
 * handler on sigaltstack, a coroutine) and a thread's first walk continue out
 * of line in rh_stack.c, which follows CFI and frame records in any order. */

/* The walk's hash: Horner's rule over the frames, innermost first, h = h * K
 * + ret (mod 2^64), so H = sum of ret_i * K^(n-1-i); then the kind, the frame
 * count and the cut flag, packed in one word, through one xor-multiply step,
 * and the high half folded into the low one. The outer frames' part of H does
 * not depend on the inner ones: H = (hash of frames 0..j-1) * K^(n-j) + (hash
 * of frames j..n-1), so a hit of the walk cache adds the cached hash of the
 * frames outer than the hit in one multiply and one add. Per frame: one
 * multiply and one add, off the chain of loads the walk follows. The final
 * step is a bijection of H for a given kind, count and cut, so two stacks
 * share a hash exactly as often as their sums do; the fold only spreads the
 * product's well-mixed high bits over the low ones, which pick the stack
 * table's entry. The hash never leaves the process (stack ids are the table's
 * insertion order), so it may change between versions. */
#define RH_WALK_K 0x9e3779b97f4a7c15ull
static inline uint64_t rh_walk_add(uint64_t h, uint64_t ret)
{
    return h * RH_WALK_K + ret;
}
/* The stack hash of a finished walk: frames hashed into h, n frames. */
static inline uint64_t rh_walk_final(uint64_t h, unsigned kind, uint32_t n, uint32_t cut)
{
    h = (h ^ (((uint64_t)kind << 32) | ((uint64_t)n << 1) | cut)) * RH_WALK_K;
    h ^= h >> 32;
    return h ? h : 1;
}

/* ---- the walk cache's test ------------------------------------------------ */

/* Whether a walk that ended k records after its start is kept in the cache:
 * deep enough to be worth it, short enough to fit, and the cache on. */
static inline int rh_wc_keeps(uint32_t k)
{
    return k + 1 >= RH_WC_MIN && k < RH_WC_CAP && __atomic_load_n(&rh_wc_on, __ATOMIC_RELAXED);
}

/* On a function that inlines rh_stack_walk_inline: its frame loop starts on a
 * 32-byte boundary. Where it happens to fall decides much of the walk's speed
 * (workload 3, 50 frames: 0.17 s tracked with the loop at an 8-byte boundary
 * across two 32-byte blocks, 0.14-0.15 s aligned; same instructions). gcc
 * only; elsewhere the compiler's default. */
#if defined(__GNUC__) && !defined(__clang__)
#define RH_WALK_ALIGNED __attribute__((optimize("align-loops=32")))
#else
#define RH_WALK_ALIGNED
#endif

/* rh_stack_walk, inline. The frame rules are those of rh_stack.c's
 * rh_ws_run for a frame-pointer frame (which rh_stack_encode follows: change
 * both together): the next frame record must be 8-aligned, at least 16 bytes
 * above the current one and inside the stack, its return address above 4096.
 * A saved rbp of 0 is the outermost frame; any other failure ends the walk
 * with cut = 1 (truncated), as does the depth limit, a down-counter. Per
 * frame: the rule-cache probe, then the step. The cached form (rh_stack.c's
 * rh_stack_walk_cached, when the thread's cache holds a deep stack) also
 * looks for the first record equal to a cached one, and hands the rest to
 * rh_wc_take; a walk of RH_WC_MIN frames or more that ends in the thread's own
 * stack (or the tail memo) fills the cache. */
RH_ALWAYS_INLINE void rh_stack_walk_body(void *fp, unsigned kind, unsigned max, struct rh_walk *w,
                                         const int cached)
{
    uintptr_t cur = (uintptr_t)fp;
    uintptr_t lo = rh_tls_stack_lo, hi = rh_tls_stack_hi;
    uintptr_t raw = ((const uintptr_t *)cur)[1];
    uintptr_t ret = rh_arch_ret(raw);
    uint64_t h = ret;
    uint32_t n = 1, cut = 0;
    struct rh_walk_rest o;
    if (rh_unlikely(cur < lo || hi < RH_FRAME_REC || cur > hi - RH_FRAME_REC)) {
        rh_stack_walk_far(cur, max, h, &o);
        h = o.h, n = o.n, cut = o.cut;
        goto done;
    }
    uintptr_t top = hi - RH_FRAME_REC;
    uint32_t left = max > 1 ? max - 1 : 0; /* frames still allowed */
    /* records before the current one: max - left - 1 */
    struct rh_wcache *wc = &rh_tls_wc;
    int m = cached ? (int)wc->d - 1 : -1;
    /* In the loop h holds the frames before the current record's: its
     * return address ret is added once the frame-pointer set has answered
     * for it, so that a return address of 4096 or less, which the set never
     * holds (rh_stack_bounds_compute keeps slot 0 from matching 0), is
     * tested on the miss's way out of line and not at every step. */
    h = 0;
    for (;;) {
        while (cached && m >= 0 && wc->fp[m] <= cur) {
            if (wc->fp[m] == cur && wc->raw[m] == raw &&
                rh_likely(rh_wc_take((uintptr_t)fp, m, max - left - 1, max - left, max,
                                     rh_walk_add(h, ret), &o))) {
                h = o.h, n = o.n, cut = o.cut;
                goto done;
            }
            m--;
        }
        if (rh_unlikely(!rh_unwind_fp_frame(ret))) {
            if (ret <= 4096u && cur != (uintptr_t)fp) {
                /* not a frame: the walk ends before it, cut, as if the step
                 * had not counted it */
                left++;
                cut = 1;
                break;
            }
            h = rh_walk_add(h, ret);
            /* the base of the stack (libc's start code, start_thread): its
             * frames from the tail memo, as rh_ws_run would take them */
            const struct rh_tail *tm = &rh_tls_tail;
            uint32_t mn = tm->n;
            if (rh_likely(mn && mn <= left && tm->pc == ret && tm->rsp == cur + RH_FRAME_REC)) {
                uint32_t k = max - left - 1;
                for (uint32_t i = 0; i < mn; i++)
                    h = rh_walk_add(h, tm->f[i]);
                left -= mn;
                if (rh_wc_keeps(k))
                    rh_wc_fill((uintptr_t)fp, k, cur, raw, rh_arch_rec_next(cur), tm->f,
                               mn, 0);
                break;
            }
            rh_stack_walk_cont(ret, cur + RH_FRAME_REC, rh_arch_rec_next(cur), lo, hi, max, h,
                               max - left, &o);
            h = o.h, n = o.n, cut = o.cut;
            goto done;
        }
        h = rh_walk_add(h, ret);
    step:;
        uintptr_t next = rh_arch_rec_next(cur);
        if (RH_WORD_MISALIGNED(next) || next < cur + RH_FRAME_REC || next > top) {
            uint32_t k = max - left - 1;
            cut = next != 0;
            if (rh_wc_keeps(k))
                rh_wc_fill((uintptr_t)fp, k, cur, raw, next, NULL, 0, cut);
            break;
        }
        uintptr_t nraw = ((const uintptr_t *)next)[1];
        ret = rh_arch_ret(nraw);
        /* the depth limit (max is far below 2^31): one decrement and its sign;
         * a return address of 4096 or less reaching it ends the walk with
         * the same count and cut as its own test would */
        if (rh_unlikely((int32_t)--left < 0)) {
            left = 0;
            cut = 1;
            break;
        }
        cur = next;
        raw = nraw;
        /* the uncached form's back edge is the frame-pointer set's test, so
         * its loop has no jump of its own (a miss goes round to the test at
         * the top again, which sends it out of line) */
        if (!cached && rh_likely(rh_unwind_fp_frame(ret))) {
            h = rh_walk_add(h, ret);
            goto step;
        }
    }
    n = max - left;
done:
    w->hash = rh_walk_final(h, kind, n, cut);
    w->nframes = n;
    w->cut = cut;
}

/* The walk with the cache's search (rh_stack.c): out of line, so that the
 * inline walk of a stack the cache does not hold keeps its registers. */
RH_HIDDEN void rh_stack_walk_cached(void *fp, unsigned kind, unsigned max, struct rh_walk *w);

RH_ALWAYS_INLINE void rh_stack_walk_inline(void *fp, unsigned kind, unsigned max, struct rh_walk *w)
{
    if (rh_unlikely(rh_tls_wc.d >= RH_WC_MIN) && __atomic_load_n(&rh_wc_on, __ATOMIC_RELAXED))
        rh_stack_walk_cached(fp, kind, max, w);
    else
        rh_stack_walk_body(fp, kind, max, w, 0);
}

/* ---- rh_writer.c: room in the chunk -------------------------------------- */

/* Makes room for `need` bytes in w's chunk, opening a new chunk when full.
 * Returns 0, or -1 (the event is lost). */
static inline int rh_writer_reserve(struct rh_writer *w, size_t need, uint64_t t)
{
    if (rh_likely(w->chunk && (size_t)(w->end - w->pos) >= need))
        return 0;
    return rh_writer_reserve_slow(w, need, t);
}

/* ---- rh_sample.c: the sampler's decision ---------------------------------- */

/* The sampler's decision for a new block; bytes mode's common case (the
 * countdown not crossed, so the block is below N) inline: one TLS
 * subtraction. */
RH_ALWAYS_INLINE int rh_sample_alloc(void *p, size_t size)
{
    int64_t left = (int64_t)((uint64_t)rh_tls_sample_left - (uint64_t)size);
    if (rh_likely(rh_sample_bkey == rh_tls_sample_key && left > 0 && (intptr_t)p > 0 &&
                  (uint64_t)size >> 62 == 0)) {
        rh_tls_sample_left = left;
        return 0;
    }
    return rh_sample_alloc_slow(p, size);
}

/* ---- rh_live.c: the live map's filter ------------------------------------- */

/* A counting filter over the map's addresses: 0 means "certainly not in the
 * map", so the free of an unsampled block costs one load (rh_live.c). */
#define RH_LV_FILTER_BITS 16
extern RH_HIDDEN uint8_t rh_lv_filter[1u << RH_LV_FILTER_BITS];
RH_ALWAYS_INLINE int rh_live_maybe(const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
    return __atomic_load_n(&rh_lv_filter[h >> (64 - RH_LV_FILTER_BITS)], __ATOMIC_RELAXED) != 0;
}

/* ---- rh_record.c: the record fast path, inline in the hot shims ---------
 * The malloc, realloc, free and operator new/delete shims record through the
 * rh_record_*_inline below, so that the recording half of a shim and the fast
 * path are one function: no call, no second set of saved registers and no
 * argument moves between them (rh_record_* in rh_record.c are the same code,
 * out of line, for everything else). Whatever is not needed on every event
 * stays out of line and cold in rh_record.c: the slow entry points (a thread's
 * first event, a full chunk, another epoch, threads without a slot), a new or
 * colliding stack, the calibration refresh. The slow entry points take exactly
 * the arguments of rh_record_* (raw ticks), so a stand-in runtime (the shim
 * tests' mock) that never hands out a slot (rh_tls_slot NULL) sees through
 * them every event the hot shims record. Records follow FORMAT.md "Event
 * records" exactly; errno is kept (only the cold parts can change it, and they
 * restore it). */

/* Cold parts of the fast path (rh_record.c). */
RH_HIDDEN void rh_record_alloc_slow(unsigned kind, void *p, size_t size, uint64_t t_after,
                                    void *fp) RH_COLD;
RH_HIDDEN void rh_record_free_slow(void *p, uint64_t t_before) RH_COLD;
RH_HIDDEN void rh_record_realloc_slow(unsigned kind, void *old, void *p, size_t size,
                                      uint64_t t_before, uint64_t t_after, void *fp) RH_COLD;
/* The stack id when the home entry of the table did not hold the walked stack
 * (a collision, a new stack: its STACK record is written here, or a full
 * table). The fast path's chunk had room for one event before; this reserves
 * again after a STACK record. Returns RH_ID_LOST (nothing written, the loss
 * counted) when no room could be made. */
#define RH_ID_LOST UINT32_MAX
RH_HIDDEN uint32_t rh_stack_id_slow_fast(struct rh_writer *w, unsigned kind, void *fp,
                                         uint64_t hash, uint32_t nframes, uint32_t cut,
                                         uint64_t t) RH_COLD;

/* The fast path's writer: the calling thread's slot, of the current epoch,
 * with room for one event before its fast limit (a slot without a chunk has
 * pos == lim == NULL, so the room test covers it). NULL sends the event to a
 * slow entry point, which also does the writer's periodic work when only the
 * fast limit was reached (rh_writer_due). The difference is signed: records
 * written by the cold paths (STACK records, the slow entries) reserve against
 * end and may pass lim. */
RH_ALWAYS_INLINE struct rh_writer *rh_fast_writer(void)
{
    struct rh_slot *s = rh_tls_slot;
    if (rh_likely(s && s->w.epoch == __atomic_load_n(&rh_epoch, __ATOMIC_RELAXED) &&
                  s->w.lim - s->w.pos >= (ptrdiff_t)RIP_MAX_EVENT_BYTES))
        return &s->w;
    return NULL;
}

/* Ends an event record at q: the chunk's event count, then `used` (a release
 * store into the mapping, as rh_writer_commit). */
RH_ALWAYS_INLINE void rh_event_done(struct rh_writer *w, uint8_t *q)
{
    /* the record ended inside the room the fast path's test made for it */
    rh_assert_internal(q <= w->end);
    w->pos = q;
    struct rip_chunk_header *h = w->chunk;
    h->events++;
    /* read by rh_thread_totals_locked from another thread at close: a relaxed
     * atomic store keeps that read defined. On x86_64 one add to memory
     * (only this thread writes the count; an aligned 8-byte store is never
     * torn) instead of a load, an add and a store. */
#if defined(__x86_64__)
    __asm__("addq $1, %0" : "+m"(w->total_events));
#else
    __atomic_store_n(&w->total_events, w->total_events + 1, __ATOMIC_RELAXED);
#endif
    __atomic_store_n(&h->used, (uint32_t)(q - ((uint8_t *)h + RIP_CHUNK_HDR_SIZE)),
                     __ATOMIC_RELEASE);
    /* no countdown here: the calibration refresh and the memory samples'
     * deadline are checked where the writer reaches its fast limit
     * (rh_writer_due, every RH_DUE_BYTES of records) */
}

/* Writes byte 0 and the optional time varint for time t (event units, clamped so
 * the stream never goes back). Returns the position after them. */
RH_ALWAYS_INLINE uint8_t *rh_put_head(struct rh_writer *w, uint8_t *q, unsigned op, unsigned raw,
                                      uint64_t t)
{
    uint64_t dt = t > w->prev_time ? t - w->prev_time : 0;
    w->prev_time += dt;
    if (dt < RIP_B0_DT_VARINT) {
        *q++ = (uint8_t)(op | raw | (dt << RIP_B0_DT_SHIFT));
        return q;
    }
    *q++ = (uint8_t)(op | raw | (RIP_B0_DT_VARINT << RIP_B0_DT_SHIFT));
    return rip_put_varint(q, dt);
}

/* Address delta as an svarint, in 16-byte units unless raw. Not raw means d
 * is a multiple of 16, so the arithmetic shift is the exact quotient. */
RH_ALWAYS_INLINE uint8_t *rh_put_addr(uint8_t *q, int64_t d, unsigned raw)
{
    return rip_put_varint(q, rip_zigzag(raw ? d : d >> 4));
}

/* The rh_put_* write one event record at w->pos, which has room for
 * RIP_MAX_EVENT_BYTES, and end it. The _as forms take `live`, a constant:
 * 0 on the plain full recording's path (the state word said no live map,
 * RH_LIVE), where the live map's test is left out. */
RH_ALWAYS_INLINE void rh_put_alloc_as(struct rh_writer *w, uint32_t id, void *p, size_t size,
                                      uint64_t t, const int live)
{
    int64_t d = (int64_t)((uint64_t)(uintptr_t)p - w->prev_addr);
    unsigned raw = (d & 15) ? RIP_B0_RAWADDR : 0;
    uint8_t *q = rh_put_head(w, w->pos, RIP_OP_ALLOC, raw, t);
    q = rip_put_varint(q, id);
    q = rip_put_varint(q, size);
    q = rh_put_addr(q, d, raw);
    w->prev_addr = (uintptr_t)p;
    rh_event_done(w, q);
    if (live && rh_unlikely(__atomic_load_n(&rh_live_on, __ATOMIC_RELAXED)))
        rh_live_note_alloc(p, size, id);
}

RH_ALWAYS_INLINE void rh_put_alloc(struct rh_writer *w, uint32_t id, void *p, size_t size,
                                   uint64_t t)
{
    rh_put_alloc_as(w, id, p, size, t, 1);
}

RH_ALWAYS_INLINE void rh_put_free(struct rh_writer *w, void *p, uint64_t t)
{
    int64_t d = (int64_t)((uint64_t)(uintptr_t)p - w->prev_addr);
    unsigned raw = (d & 15) ? RIP_B0_RAWADDR : 0;
    uint8_t *q = rh_put_head(w, w->pos, RIP_OP_FREE, raw, t);
    q = rh_put_addr(q, d, raw);
    w->prev_addr = (uintptr_t)p;
    rh_event_done(w, q);
}

RH_ALWAYS_INLINE void rh_put_realloc_as(struct rh_writer *w, uint32_t id, void *old, void *p,
                                        size_t size, uint64_t t1, uint64_t t2, const int live)
{
    int64_t d1 = (int64_t)((uint64_t)(uintptr_t)old - w->prev_addr);
    int64_t d2 = (int64_t)((uint64_t)(uintptr_t)p - (uint64_t)(uintptr_t)old);
    unsigned raw = ((d1 | d2) & 15) ? RIP_B0_RAWADDR : 0;
    uint8_t *q = rh_put_head(w, w->pos, RIP_OP_REALLOC, raw, t1);
    uint64_t t = w->prev_time;
    q = rip_put_varint(q, t2 > t ? t2 - t : 0);
    q = rip_put_varint(q, id);
    q = rip_put_varint(q, size);
    q = rh_put_addr(q, d1, raw);
    q = rh_put_addr(q, d2, raw);
    w->prev_addr = (uintptr_t)p;
    rh_event_done(w, q);
    if (live && rh_unlikely(__atomic_load_n(&rh_live_on, __ATOMIC_RELAXED)))
        rh_live_note_alloc(p, size, id);
}

RH_ALWAYS_INLINE void rh_put_realloc(struct rh_writer *w, uint32_t id, void *old, void *p,
                                     size_t size, uint64_t t1, uint64_t t2)
{
    rh_put_realloc_as(w, id, old, p, size, t1, t2, 1);
}

/* The id in the home entry of hash in tb, or 0 when the stack is not there (a
 * collision, a new stack, an insertion not yet published). A known stack
 * usually sits in its home entry, so this probe answers most calls. */
RH_ALWAYS_INLINE uint32_t rh_stack_home_id(const struct rh_stack_table *tb, uint64_t hash)
{
    const struct rh_stack_entry *home = &tb->entries[hash & tb->mask];
    if (rh_likely(__atomic_load_n(&home->hash, __ATOMIC_ACQUIRE) == hash))
        return __atomic_load_n(&home->id, __ATOMIC_ACQUIRE);
    return 0;
}

/* The stack id of this call: the inline walk, then an inline probe of the
 * stack's home entry in the table (a known stack usually sits there). */
RH_ALWAYS_INLINE uint32_t rh_stack_id_fast(struct rh_writer *w, unsigned kind, void *fp, uint64_t t)
{
    struct rh_walk wk;
    struct rh_stack_table *tb = w->stacks;
    rh_stack_walk_inline(fp, kind, tb->max_depth, &wk);
    uint32_t hid = rh_stack_home_id(tb, wk.hash);
    if (rh_likely(hid))
        return hid;
    /* The walk's results go by value, so that wk never lives in memory. */
    return rh_stack_id_slow_fast(w, kind, fp, wk.hash, wk.nframes, wk.cut, t);
}

/* rh_record_alloc / free / realloc of rh_hooks.h, inline (same contract).
 * rh_record_free_inline requires p != NULL (the shims test it first). */
/* rh_record_alloc_inline without the sampler's decision: for a shim that
 * asked rh_sample_alloc itself (before reading the clock). */
RH_ALWAYS_INLINE void rh_record_alloc_core_as(unsigned kind, void *p, size_t size,
                                              uint64_t t_after, void *fp, const int live)
{
    struct rh_writer *w = rh_fast_writer();
    if (rh_unlikely(!w)) {
        rh_record_alloc_slow(kind, p, size, t_after, fp);
        return;
    }
    uint64_t t = t_after >> rh_clock_shift;
    uint32_t id = rh_stack_id_fast(w, kind, fp, t);
    if (rh_likely(id != RH_ID_LOST))
        rh_put_alloc_as(w, id, p, size, t, live);
}

RH_ALWAYS_INLINE void rh_record_alloc_core(unsigned kind, void *p, size_t size, uint64_t t_after,
                                           void *fp)
{
    rh_record_alloc_core_as(kind, p, size, t_after, fp, 1);
}

/* The plain full recording's alloc (state exactly RH_ON: no sampler, no live
 * map), for the hot shims' plain halves. */
RH_ALWAYS_INLINE void rh_record_alloc_plain(unsigned kind, void *p, size_t size, uint64_t t_after,
                                            void *fp)
{
    rh_record_alloc_core_as(kind, p, size, t_after, fp, 0);
}

RH_ALWAYS_INLINE void rh_record_alloc_inline(unsigned kind, void *p, size_t size, uint64_t t_after,
                                             void *fp)
{
    if (rh_unlikely(rh_sample_mode) && !rh_sample_alloc(p, size))
        return;
    rh_record_alloc_core(kind, p, size, t_after, fp);
}

/* Whether the free of p is recorded while the live map is kept: the filter
 * answers most unsampled frees with one load. */
RH_ALWAYS_INLINE int rh_live_free_recorded(void *p)
{
    if (rh_live_maybe(p) || (intptr_t)p < 0)
        return rh_live_note_free(p);
    return !rh_sample_mode;
}

RH_ALWAYS_INLINE void rh_record_free_core(void *p, uint64_t t_before)
{
    struct rh_writer *w = rh_fast_writer();
    if (rh_likely(w)) {
        uint64_t t = t_before >> rh_clock_shift;
        rh_put_free(w, p, t);
    } else {
        rh_record_free_slow(p, t_before);
    }
}

RH_ALWAYS_INLINE void rh_record_free_inline(void *p, uint64_t t_before)
{
    if (rh_unlikely(__atomic_load_n(&rh_live_on, __ATOMIC_RELAXED)) && !rh_live_free_recorded(p))
        return;
    rh_record_free_core(p, t_before);
}

/* The plain full recording's free (state exactly RH_ON): no live map. */
RH_ALWAYS_INLINE void rh_record_free_plain(void *p)
{
    rh_record_free_core(p, rh_now());
}

/* rh_record_free_inline(p, rh_now()), reading the clock only when the free is
 * recorded (an unsampled free costs no clock read). */
RH_ALWAYS_INLINE void rh_record_free_now(void *p)
{
    if (rh_unlikely(__atomic_load_n(&rh_live_on, __ATOMIC_RELAXED)) && !rh_live_free_recorded(p))
        return;
    rh_record_free_core(p, rh_now());
}

/* The recording of a realloc's two halves once the live map has had its say:
 * live = 0 on the plain full recording's path. */
RH_ALWAYS_INLINE void rh_record_realloc_core_as(unsigned kind, void *old, void *p, size_t size,
                                                uint64_t t_before, uint64_t t_after, void *fp,
                                                const int live)
{
    struct rh_writer *w = rh_fast_writer();
    if (rh_unlikely(!w)) {
        rh_record_realloc_slow(kind, old, p, size, t_before, t_after, fp);
        return;
    }
    uint64_t t1 = t_before >> rh_clock_shift, t2 = t_after >> rh_clock_shift;
    uint32_t id = rh_stack_id_fast(w, kind, fp, t1);
    if (rh_likely(id != RH_ID_LOST))
        rh_put_realloc_as(w, id, old, p, size, t1, t2, live);
}

/* The plain full recording's realloc (state exactly RH_ON). */
RH_ALWAYS_INLINE void rh_record_realloc_plain(unsigned kind, void *old, void *p, size_t size,
                                              uint64_t t_before, uint64_t t_after, void *fp)
{
    rh_record_realloc_core_as(kind, old, p, size, t_before, t_after, fp, 0);
}

RH_ALWAYS_INLINE void rh_record_realloc_inline(unsigned kind, void *old, void *p, size_t size,
                                               uint64_t t_before, uint64_t t_after, void *fp)
{
    if (rh_unlikely(__atomic_load_n(&rh_live_on, __ATOMIC_RELAXED))) {
        if (rh_sample_mode) {
            int was = rh_live_free_recorded(old), now = rh_sample_alloc(p, size);
            if (rh_unlikely(was | now))
                rh_sample_realloc_rec(kind, old, p, size, was, now, t_before, t_after, fp);
            return;
        }
        rh_live_note_free(old);
    }
    rh_record_realloc_core_as(kind, old, p, size, t_before, t_after, fp, 1);
}

#endif
