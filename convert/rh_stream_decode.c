/* rh_stream_decode.c: decoding the records of one stream.
 *
 * A stream is the EVENTS chunks of one slot in file order, or all SHARED
 * chunks. rh_stream_next() decodes it lazily, record by record, straight from
 * the mapping, so memory does not grow with events. Delta state (time, address)
 * resets at every chunk. REALLOC is split into its free half (at t) and its
 * alloc half (at t + dt2, held back as a pending event). STACK and EXT records
 * are consumed as they pass: stack definitions go to the stack table, thread
 * names and SETTHREAD to the thread table. Time deltas are unsigned, so times
 * never decrease inside a chunk; a chunk whose base time lies before the end of
 * the previous chunk of its stream is counted as out of order and merged as it
 * comes (the merge never depends on order for safety, only for exact rows).
 * A record that does not decode ends its chunk with a warning naming its offset.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rh_check.h"
#include "rh_core.h"
#include "rh_util.h"

/* ---- tables ---------------------------------------------------------------- */

uint32_t rh_rip_stack(struct rh_rip *r, uint64_t id)
{
    uint32_t i = rh_map_get(&r->stack_map, id);
    if (i != UINT32_MAX)
        return i;
    if (r->nstacks >= UINT32_MAX - 1 ||
        rh_grow(&r->stacks, &r->capstacks, r->nstacks + 1, sizeof *r->stacks))
        return UINT32_MAX;
    i = (uint32_t)r->nstacks;
    if (rh_map_put(&r->stack_map, id, i))
        return UINT32_MAX;
    memset(&r->stacks[i], 0, sizeof r->stacks[i]);
    r->stacks[i].id = id;
    r->stacks[i].kind = RH_KIND_UNKNOWN;
    r->nstacks++;
    return i;
}

uint32_t rh_rip_thread(struct rh_rip *r, uint32_t tid)
{
    uint32_t i = rh_map_get(&r->thread_map, tid);
    if (i != UINT32_MAX)
        return i + 1;
    if (r->nthreads >= UINT32_MAX - 2 ||
        rh_grow(&r->threads, &r->capthreads, r->nthreads + 1, sizeof *r->threads))
        return 0;
    i = (uint32_t)r->nthreads;
    if (rh_map_put(&r->thread_map, tid, i))
        return 0;
    memset(&r->threads[i], 0, sizeof r->threads[i]);
    r->threads[i].tid = tid;
    r->nthreads++;
    return i + 1;
}

/* ---- record decoding ----------------------------------------------------- */

enum { RH_DEC_EVENT = 1, RH_DEC_NONE = 0, RH_DEC_BAD = -1, RH_DEC_OOM = -2 };

static inline int rh_get(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    return rip_get_varint(p, end, v);
}

/* Sets the current writer thread of s. Returns 0 or -1 on out-of-memory. */
static int rh_stream_set_tid(struct rh_rip *r, struct rh_stream *s, uint32_t tid)
{
    if (s->thread && s->tid == tid)
        return 0;
    uint32_t t = rh_rip_thread(r, tid);
    if (!t)
        return -1;
    s->tid = tid;
    s->thread = t;
    return 0;
}

/* Consumes a STACK record body. */
static int rh_dec_stack(struct rh_rip *r, const uint8_t **pp, const uint8_t *end)
{
    uint64_t id, kind, nc;
    if (rh_get(pp, end, &id) || rh_get(pp, end, &kind) || rh_get(pp, end, &nc))
        return RH_DEC_BAD;
    uint64_t n = nc >> 1;
    if (n > RIP_MAX_FRAMES)
        return RH_DEC_BAD;
    uint32_t si = rh_rip_stack(r, id);
    if (si == UINT32_MAX)
        return RH_DEC_OOM;
    struct rh_stack *st = &r->stacks[si];
    int keep = !st->defined;
    if (keep && rh_grow(&r->frames, &r->capframes, r->nframes + n, sizeof *r->frames))
        return RH_DEC_OOM;
    uint64_t prev = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t d;
        if (rh_get(pp, end, &d))
            return RH_DEC_BAD;
        prev += (uint64_t)rip_unzigzag(d);
        if (keep)
            r->frames[r->nframes + i] = prev;
    }
    if (keep) {
        st = &r->stacks[si];
        st->frames = r->nframes;
        st->nframes = (uint32_t)n;
        st->kind = kind > 0xffff ? 0xffff : (uint32_t)kind;
        st->cut = nc & 1;
        st->defined = 1;
        r->nframes += n;
    }
    return RH_DEC_NONE;
}

/* Consumes an EXT record body. */
static int rh_dec_ext(struct rh_rip *r, struct rh_stream *s, const uint8_t **pp, const uint8_t *end)
{
    uint64_t sub, len;
    if (rh_get(pp, end, &sub) || rh_get(pp, end, &len))
        return RH_DEC_BAD;
    if (len > RIP_MAX_EXT_LEN || len > (uint64_t)(end - *pp))
        return RH_DEC_BAD;
    const uint8_t *b = *pp;
    *pp += len;
    if (sub == RIP_EXT_THREADNAME) {
        if (!s->thread && rh_stream_set_tid(r, s, s->tid))
            return RH_DEC_OOM;
        /* the latest name in time wins, whichever stream carries it: the
         * names restated in the shared stream at the close (FORMAT.md) come
         * after the one a running thread's chunk opened with */
        struct rh_thread *t = &r->threads[s->thread - 1];
        if (!t->named || s->time >= t->name_time) {
            size_t n = len < 16 ? len : 16;
            memcpy(t->name, b, n);
            t->name[n] = 0;
            t->named = 1;
            t->name_time = s->time;
        }
    } else if (sub == RIP_EXT_KINDNAME) {
        const uint8_t *q = b;
        uint64_t kind;
        if (rh_get(&q, b + len, &kind))
            return RH_DEC_BAD;
        if (kind >= RIP_DYN_KIND_BASE && kind < 0xffff &&
            rh_kind_define((uint32_t)kind, q, (size_t)(b + len - q)))
            return RH_DEC_OOM;
    } else if (sub == RIP_EXT_POOLRESET) {
        /* a timed record: the caller applies byte 0's time delta */
        const uint8_t *q = b;
        uint64_t pool;
        if (rh_get(&q, b + len, &pool))
            return RH_DEC_BAD;
        s->ext_event.op = RH_EV_POOLRESET;
        s->ext_event.cls = 0; /* with the frees */
        s->ext_event.addr = pool;
        s->ext_event.stack = 0;
        s->ext_event.size = 0;
        return RH_DEC_EVENT;
    } else if (sub == RIP_EXT_REGION) {
        /* timed: a region's id, parent id, name kind and flags (FORMAT.md "Regions") */
        const uint8_t *q = b;
        uint64_t id, parent, kind, flags = 0, creator = 0;
        if (rh_get(&q, b + len, &id) || rh_get(&q, b + len, &parent) ||
            rh_get(&q, b + len, &kind) || (q < b + len && rh_get(&q, b + len, &flags)) ||
            (q < b + len && rh_get(&q, b + len, &creator)) || id > 0xffff || parent > 0xffff ||
            kind > 0xffff || creator > 0xffff)
            return RH_DEC_BAD;
        s->ext_event.op = RH_EV_REGION;
        s->ext_event.cls = 0; /* before the chunks allocated at the same time */
        s->ext_event.addr = id;
        s->ext_event.size = parent | ((flags & 1) << 16) | (creator << 17);
        s->ext_event.stack = kind;
        return RH_DEC_EVENT;
    } else if (sub == RIP_EXT_CPUSAMPLE) {
        /* timed, like POOLRESET; later bytes, if any, are skipped */
        const uint8_t *q = b;
        uint64_t stack, overrun = 0;
        if (rh_get(&q, b + len, &stack) || (q < b + len && rh_get(&q, b + len, &overrun)) ||
            overrun > 0xffffff)
            return RH_DEC_BAD;
        s->ext_event.op = RH_EV_CPU;
        s->ext_event.size = 1 + overrun; /* sampling periods it stands for */
        s->ext_event.cls = 1;
        s->ext_event.addr = 0;
        s->ext_event.stack = stack;
        r->cpu_samples++;
        return RH_DEC_EVENT;
    } else if (sub >= RIP_EXT_MMAP && sub <= RIP_EXT_MALLOPT) {
        /* mmap and mallopt, timed: the stack id here, the rest for rh_mmaps.c */
        const uint8_t *q = b;
        uint64_t stack;
        if (rh_get(&q, b + len, &stack))
            return RH_DEC_BAD;
        s->ext_event.op = RH_EV_EXT;
        s->ext_event.cls = sub == RIP_EXT_MUNMAP ? 0 : 1; /* an unmap sorts with the frees */
        s->ext_event.addr = 0;
        s->ext_event.size = 0;
        s->ext_event.stack = stack;
        s->ext_event.ext_sub = (uint8_t)sub;
        s->ext_event.ext = b;
        s->ext_event.ext_len = (uint32_t)len;
        return RH_DEC_EVENT;
    } else if (sub == RIP_EXT_MEMSAMPLE) {
        /* timed: a memory sample (FORMAT.md "Memory samples");
         * its body is decoded by rh_memory.c */
        s->ext_event.op = RH_EV_EXT;
        s->ext_event.cls = 1;
        s->ext_event.addr = 0;
        s->ext_event.size = 0;
        s->ext_event.stack = 0;
        s->ext_event.ext_sub = (uint8_t)sub;
        s->ext_event.ext = b;
        s->ext_event.ext_len = (uint32_t)len;
        r->mem_samples++;
        return RH_DEC_EVENT;
    } else if (sub == RIP_EXT_SETTHREAD && s->shared) {
        const uint8_t *q = b;
        uint64_t tid;
        if (rh_get(&q, b + len, &tid))
            return RH_DEC_BAD;
        if (rh_stream_set_tid(r, s, (uint32_t)tid))
            return RH_DEC_OOM;
    }
    return RH_DEC_NONE;
}

/* Decodes one record at s->p. Returns RH_DEC_EVENT with ev (and possibly
 * s->pending) filled, RH_DEC_NONE for a consumed STACK/EXT, RH_DEC_BAD for
 * damage (s->p unchanged) or RH_DEC_OOM. */
static int rh_dec_record(struct rh_rip *r, struct rh_stream *s, struct rh_event *ev)
{
    const uint8_t *p = s->p, *end = s->end;
    uint8_t b0 = *p++;
    unsigned op = b0 & RIP_B0_OP_MASK;
    uint64_t dt = b0 >> RIP_B0_DT_SHIFT;
    unsigned ashift = (b0 & RIP_B0_RAWADDR) ? 0 : 4;
    if (dt == RIP_B0_DT_VARINT && rh_get(&p, end, &dt))
        return RH_DEC_BAD;
    int rc = RH_DEC_EVENT;
    uint64_t stack = 0, size = 0, d, d2, dt2 = 0;
    switch (op) {
    case RIP_OP_ALLOC:
        if (rh_get(&p, end, &stack) || rh_get(&p, end, &size) || rh_get(&p, end, &d))
            return RH_DEC_BAD;
        s->addr += (uint64_t)rip_unzigzag(d) << ashift;
        ev->op = RH_EV_ALLOC;
        ev->cls = 1;
        ev->addr = s->addr;
        r->allocs++;
        break;
    case RIP_OP_FREE:
        if (rh_get(&p, end, &d))
            return RH_DEC_BAD;
        s->addr += (uint64_t)rip_unzigzag(d) << ashift;
        ev->op = RH_EV_FREE;
        ev->cls = 0;
        ev->addr = s->addr;
        r->frees++;
        break;
    case RIP_OP_REALLOC:
        if (rh_get(&p, end, &dt2) || rh_get(&p, end, &stack) || rh_get(&p, end, &size) ||
            rh_get(&p, end, &d) || rh_get(&p, end, &d2))
            return RH_DEC_BAD;
        s->addr += (uint64_t)rip_unzigzag(d) << ashift;
        ev->op = RH_EV_RFREE;
        ev->cls = 0;
        ev->addr = s->addr;
        s->addr += (uint64_t)rip_unzigzag(d2) << ashift;
        r->reallocs++;
        break;
    case RIP_OP_FAIL:
        if (rh_get(&p, end, &stack) || rh_get(&p, end, &size))
            return RH_DEC_BAD;
        ev->op = RH_EV_FAIL;
        ev->cls = 1;
        ev->addr = 0;
        break;
    case RIP_OP_STACK:
        rc = rh_dec_stack(r, &p, end);
        break;
    case RIP_OP_EXT:
        rc = rh_dec_ext(r, s, &p, end);
        if (rc == RH_DEC_EVENT) { /* POOLRESET, CPUSAMPLE, or the mmap/mallopt EXT 10..13 */
            ev->op = s->ext_event.op;
            ev->cls = s->ext_event.cls;
            ev->addr = s->ext_event.addr;
            stack = s->ext_event.stack;
            size = s->ext_event.size;
            if (ev->op == RH_EV_EXT) {
                ev->ext_sub = s->ext_event.ext_sub;
                ev->ext = s->ext_event.ext;
                ev->ext_len = s->ext_event.ext_len;
            }
        }
        break;
    default:
        return RH_DEC_BAD;
    }
    if (rc != RH_DEC_EVENT) {
        if (rc == RH_DEC_NONE) {
            s->p = p;
            /* an EXT this reader does not know may be timed (version 3):
             * its delta still counts; untimed ones carry 0 */
            if (op == RIP_OP_EXT)
                s->time += dt;
        }
        return rc;
    }
    if (!s->thread && rh_stream_set_tid(r, s, s->tid))
        return RH_DEC_OOM;
    if (!(op == RIP_OP_EXT && ev->op == RH_EV_EXT && ev->ext_sub == RIP_EXT_MEMSAMPLE))
        r->events++; /* a memory sample is timed but not an event of the program */
    s->time += dt;
    s->p = p;
    ev->time = s->time;
    ev->stack = stack;
    ev->size = size;
    ev->thread = s->thread;
    if (op == RIP_OP_REALLOC) {
        s->pending = *ev;
        s->pending.op = RH_EV_RALLOC;
        s->pending.cls = 1;
        s->pending.time = s->time + dt2;
        s->pending.addr = s->addr;
        s->have_pending = 1;
    }
    return RH_DEC_EVENT;
}

/* Makes chunk idx current (delta state reset). */
static void rh_stream_enter(struct rh_rip *r, struct rh_stream *s, int32_t idx)
{
    struct rh_chunk *ch = &r->chunks[idx];
    s->cur = idx;
    s->p = ch->payload;
    s->end = ch->payload + ch->used;
    s->time = ch->base_time;
    s->addr = 0;
    if (s->shared || !s->thread || s->tid != ch->tid) {
        s->tid = ch->tid;
        s->thread = 0; /* looked up at the first event or name */
    }
}

/* Leaves the current chunk for the next one, or ends the stream. */
static void rh_stream_leave(struct rh_rip *r, struct rh_stream *s)
{
    struct rh_chunk *ch = &r->chunks[s->cur];
    r->bytes_done += RIP_CHUNK_HDR_SIZE + (uint64_t)ch->used;
    if (r->mapped) {
        /* done with these pages: keep resident memory independent of file size */
        uint64_t len =
            (RIP_CHUNK_HDR_SIZE + (uint64_t)ch->used + RIP_ALIGN - 1) & ~(uint64_t)(RIP_ALIGN - 1);
        madvise((void *)(r->base + ch->off), len, MADV_DONTNEED);
    }
    if (ch->next >= 0 && RH_ALWAYS((size_t)ch->next < r->nchunks,
                                   "chunk at offset %llu links to chunk %d of %zu",
                                   (unsigned long long)ch->off, ch->next, r->nchunks))
        rh_stream_enter(r, s, ch->next);
    else
        s->cur = -1;
}

/* Next event of the stream. Returns 1, 0 or -1. */
static int rh_stream_raw(struct rh_rip *r, struct rh_stream *s, struct rh_event *ev)
{
    if (s->have_pending) {
        *ev = s->pending;
        s->have_pending = 0;
        return 1;
    }
    for (;;) {
        if (s->cur < 0)
            return 0;
        if (s->p >= s->end) {
            if (s->follow && r->chunks[s->cur].next < 0)
                return 0; /* more may be written: stay (struct rh_stream) */
            rh_stream_leave(r, s);
            continue;
        }
        int rc = rh_dec_record(r, s, ev);
        if (rc == RH_DEC_EVENT)
            return 1;
        if (rc == RH_DEC_OOM) {
            r->oom = 1;
            return -1;
        }
        if (rc == RH_DEC_BAD && s->follow && r->chunks[s->cur].open)
            return 0; /* a record still being written: wait for it */
        if (rc == RH_DEC_BAD) {
            const struct rh_chunk *ch = &r->chunks[s->cur];
            rh_rip_warn(r,
                        "undecodable record at offset %llu (chunk at offset %llu); the rest "
                        "of that chunk is skipped",
                        (unsigned long long)(ch->off + RIP_CHUNK_HDR_SIZE + (s->p - ch->payload)),
                        (unsigned long long)ch->off);
            r->damaged = 1;
            s->p = s->end;
        }
    }
}

int rh_stream_next(struct rh_rip *r, struct rh_stream *s, struct rh_event *ev)
{
    if (s->cur < 0 && s->first >= 0) {
        rh_stream_enter(r, s, s->first);
        s->first = -1;
    }
    int rc = rh_stream_raw(r, s, ev);
    if (rc == 1) {
        if (ev->time < s->last_time)
            r->out_of_order++; /* a chunk's base time before the previous chunk's end */
        else
            s->last_time = ev->time;
    }
    return rc;
}
