/* rh_writer.c: the writer of one chunk stream, and its chunks.
 *
 * A writer (struct rh_writer) is a slot's stream (its owner thread only) or
 * the shared one (under rh_shared_lock). It writes records at pos in its
 * current chunk, a mapping of the profile's chunk space (rh_file.c) or, when
 * streaming, anonymous memory the sender's queue takes over at seal
 * (rh_stream.c). Chunks grow from RH_FIRST_CHUNK bytes, doubling up to the
 * file's largest chunk, so short-lived threads stay small. Opening a chunk
 * fills its header and writes the thread's name (EVENTS) or SETTHREAD
 * (SHARED); sealing restates the name, computes the crc, sets the sealed flag
 * with a release store and gives the unused tail back. `used` is stored
 * (release) after each complete record, so a reader of a live file, or of a
 * process killed mid-record, sees whole records only. The fast path's
 * rh_writer_reserve and record commits are inline (rh_hot.h); this file holds
 * their cold halves.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "rh_recording.h"

/* The writer's periodic work (rh_writer_due) comes every RH_DUE_BYTES of
 * records (about 350 Lua events), the calibration refresh every RH_CALIB_DUES
 * of those (about 4 000 events, as the per-event countdown had it). */
#define RH_DUE_BYTES 2048u
#define RH_CALIB_DUES 12u

/* Bytes kept free at the end of every EVENTS chunk for the THREADNAME record
 * written at seal: op, subtype, length and 16 bytes of name. */
#define RH_NAME_RESERVE (3 + 16)

void rh_writer_threadname(struct rh_writer *w)
{
    char name[17];
    memset(name, 0, sizeof name);
    prctl(PR_GET_NAME, name, 0, 0, 0);
    size_t len = strnlen(name, 16);
    if ((size_t)(w->end - w->pos) < 3 + len)
        return;
    uint8_t *p = w->pos;
    *p++ = RIP_OP_EXT;
    *p++ = RIP_EXT_THREADNAME;
    *p++ = (uint8_t)len;
    memcpy(p, name, len);
    w->pos = p + len;
    rh_writer_commit(w);
}

/* ---- spare chunks (struct rh_spare, rh_types.h) ----------------------------
 * A fresh chunk of the file faults each of its pages in on first write, 5.5 us
 * a page here (docs/benchmarks.md), and supplying them in one madvise on the
 * recording thread costs as much. So a slot writer asks the runtime's helper
 * thread (rh_helper.c) for its next chunk as soon as it opened one: the
 * helper maps it (rh_file_map_chunk_locked, as the writer would), writes its
 * header and the thread's name as the writer would at open, publishes it in
 * the slot, then supplies its pages (MADV_POPULATE_WRITE) outside the lock.
 * The chunk is a valid open chunk of the slot's stream from the moment it is
 * mapped (a reader of a live file, or of a process killed then, sees it with
 * one name record and no event), and lies in the file after the writer's
 * current chunk, so the stream's file order holds. Its base time is the
 * helper's clock when made: earlier than the events the writer still puts in
 * its current chunk, which is harmless (times are deltas from it, and the
 * writer's next times are later still). A spare the writer cannot use (made
 * for another seq, thread or size: the writer opened a chunk itself
 * meanwhile) and the spares left at the file's close or a thread's exit are
 * sealed with their name record alone: an empty sealed chunk of the stream. */

#ifdef MADV_POPULATE_WRITE
#define RH_MADV_POPULATE_WRITE MADV_POPULATE_WRITE
#else
#define RH_MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* Bumped by each request; the helper thread waits on it (rh_spare_wait). */
static uint32_t rh_spare_word;
/* Set by each request, cleared at the next safe point (rh_spare_start_safe). */
RH_HIDDEN int rh_spare_want_helper;

static struct rh_spare *rh_writer_spare(struct rh_writer *w)
{
    return &((struct rh_slot *)((char *)w - offsetof(struct rh_slot, w)))->spare;
}

/* 1 when the writer's chunks come from the helper: a slot's stream of a file
 * (not streaming) and RHEAPER_PREFAULT not 0. */
static int rh_spare_used(const struct rh_writer *w)
{
    return w->type == RIP_CHUNK_EVENTS && rh_cfg.prefault && !rh_stream_on() &&
           !rh_prof.exit_flushed;
}

/* Seals spare chunk m (size bytes) as it is, its unused pages given back, and
 * unmaps it. Caller holds rh_prof_lock. */
static void rh_spare_retire_locked(void *m, uint32_t size)
{
    struct rip_chunk_header *h = m;
    uint8_t *payload = (uint8_t *)h + RIP_CHUNK_HDR_SIZE;
    struct rip_chunk_header copy;
    memcpy(&copy, h, sizeof copy);
    copy.flags |= RIP_CHUNK_F_SEALED;
    h->crc = rip_chunk_crc(&copy, payload);
    __atomic_store_n(&h->flags, copy.flags, __ATOMIC_RELEASE);
    uint64_t used_end =
        (RIP_CHUNK_HDR_SIZE + (uint64_t)h->used + RIP_ALIGN - 1) & ~(uint64_t)(RIP_ALIGN - 1);
    if (used_end < size)
        madvise((char *)h + used_end, size - used_end, MADV_REMOVE);
    rh_sys_munmap(m, size);
}

void rh_spare_drop_locked(struct rh_slot *s)
{
    uint32_t want = RH_SPARE_WANTED;
    __atomic_compare_exchange_n(&s->spare.req, &want, RH_SPARE_NONE, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_RELAXED);
    void *m = __atomic_exchange_n(&s->spare.map, NULL, __ATOMIC_ACQUIRE);
    if (!m)
        return;
    rh_spare_retire_locked(m, s->spare.size);
    if (s->spare.seq == s->w.seq && s->spare.epoch == s->w.epoch)
        s->w.seq++; /* the stream's next chunk follows the sealed spare */
}

void rh_spare_forget(struct rh_slot *s)
{
    void *m = __atomic_exchange_n(&s->spare.map, NULL, __ATOMIC_ACQUIRE);
    if (m)
        rh_sys_munmap(m, s->spare.size);
    __atomic_store_n(&s->spare.req, RH_SPARE_NONE, __ATOMIC_RELAXED);
}

/* Asks the helper for w's next chunk, when no request is pending (one the
 * helper has in hand is answered once it is done, and the chunk fits the
 * next seq or is sealed empty). Called by the owner after its chunk opened,
 * under rh_prof_lock; the caller wakes the helper (rh_spare_kick) after
 * unlocking when this returns 1. Keeps errno. */
static int rh_spare_request_locked(struct rh_writer *w, uint32_t max)
{
    struct rh_spare *sp = rh_writer_spare(w);
    if (__atomic_load_n(&sp->req, __ATOMIC_ACQUIRE) != RH_SPARE_NONE)
        return 0;
    int e = errno;
    sp->rq_size = w->next_size > max ? max : w->next_size;
    sp->rq_seq = w->seq;
    sp->rq_tid = w->tid;
    sp->rq_epoch = w->epoch;
    char name[17];
    memset(name, 0, sizeof name);
    prctl(PR_GET_NAME, name, 0, 0, 0);
    memcpy(sp->rq_name, name, sizeof sp->rq_name);
    __atomic_store_n(&sp->req, RH_SPARE_WANTED, __ATOMIC_RELEASE);
    errno = e;
    return 1;
}

int rh_spare_active(void)
{
    /* rh_cfg is replaced under rh_prof_lock by an enable (rh_enable_ctl),
     * which another thread may be doing while this one asks */
    rh_spin_lock(&rh_prof_lock);
    int on = rh_cfg.prefault && !rh_stream_on() && rh_prof.open && !rh_prof.exit_flushed;
    rh_spin_unlock(&rh_prof_lock);
    return on;
}

void rh_spare_start_safe(void)
{
    if (!__atomic_exchange_n(&rh_spare_want_helper, 0, __ATOMIC_ACQ_REL))
        return;
    int e = errno;
    (void)rh_session_call(RH_SES_HELPER);
    errno = e;
}

void rh_spare_kick(void)
{
    int e = errno;
    __atomic_add_fetch(&rh_spare_word, 1, __ATOMIC_RELEASE);
    rh_sys_futex_wake(&rh_spare_word);
    errno = e;
}

uint32_t rh_spare_seen(void)
{
    return __atomic_load_n(&rh_spare_word, __ATOMIC_ACQUIRE);
}

void rh_spare_wait(uint32_t seen, unsigned ms)
{
    /* a request (or kick) since `seen` was read returns at once */
    rh_sys_futex_wait(&rh_spare_word, seen, ms);
}

int rh_spare_prepare(void)
{
    rh_spin_lock(&rh_prof_lock);
    struct rh_slot *arr = rh_prof.slots;
    unsigned n = rh_prof.nslots;
    struct rh_slot *s = NULL;
    if (arr && rh_prof.open && !rh_prof.exit_flushed && rh_cfg.prefault && !rh_stream_on())
        for (unsigned i = 0; i < n && !s; i++)
            if (__atomic_load_n(&arr[i].spare.req, __ATOMIC_ACQUIRE) == RH_SPARE_WANTED)
                s = &arr[i];
    if (!s) {
        rh_spin_unlock(&rh_prof_lock);
        return 0;
    }
    struct rh_spare *sp = &s->spare;
    __atomic_store_n(&sp->req, RH_SPARE_BUSY, __ATOMIC_RELAXED);
    uint32_t size = sp->rq_size;
    struct rip_chunk_header *h = NULL;
    if (sp->rq_epoch == rh_epoch && !__atomic_load_n(&sp->map, __ATOMIC_RELAXED) &&
        size >= RH_FIRST_CHUNK && size <= rh_prof.max_chunk)
        h = rh_file_map_chunk_locked(size);
    if (h) {
        /* the header and name record rh_writer_open would write */
        h->magic = RIP_CHUNK_MAGIC;
        h->type = RIP_CHUNK_EVENTS;
        h->header_size = RIP_CHUNK_HDR_SIZE;
        h->capacity = size - RIP_CHUNK_HDR_SIZE;
        h->slot = (uint32_t)(s - arr);
        h->tid = sp->rq_tid;
        h->seq = sp->rq_seq;
        h->base_time = rh_now() >> rh_clock_shift;
        rh_calib_pair(&h->calib_tick, &h->calib_ns);
        uint8_t *q = (uint8_t *)h + RIP_CHUNK_HDR_SIZE;
        size_t len = strnlen(sp->rq_name, sizeof sp->rq_name);
        q[0] = RIP_OP_EXT;
        q[1] = RIP_EXT_THREADNAME;
        q[2] = (uint8_t)len;
        memcpy(q + 3, sp->rq_name, len);
        __atomic_store_n(&h->used, (uint32_t)(3 + len), __ATOMIC_RELEASE);
        sp->size = size;
        sp->seq = sp->rq_seq;
        sp->tid = sp->rq_tid;
        sp->epoch = sp->rq_epoch;
        __atomic_store_n(&sp->map, h, __ATOMIC_RELEASE);
    }
    rh_spin_unlock(&rh_prof_lock);
    /* The pages after the header's, outside the lock. The chunk may be
     * taken meanwhile (its writer's faults and these meet harmlessly) or
     * sealed and unmapped (then this fails, or finds nothing to do). Kernels
     * before 5.14 answer EINVAL: the writer takes the faults as before. */
    if (h && size > 4096)
        madvise((char *)h + 4096, size - 4096, RH_MADV_POPULATE_WRITE);
    __atomic_store_n(&sp->req, RH_SPARE_NONE, __ATOMIC_RELEASE);
    return 1;
}

/* rh_writer_open; `locked`: the caller holds rh_prof_lock already. */
static int rh_writer_open_as(struct rh_writer *w, uint64_t t, int locked)
{
    if (w->chunk)
        rh_writer_seal(w, locked);
    if (!locked)
        rh_spin_lock(&rh_prof_lock);
    if (w->epoch != rh_epoch || !rh_prof.open) {
        if (!locked)
            rh_spin_unlock(&rh_prof_lock);
        return -1;
    }
    uint32_t max = rh_prof.max_chunk;
    uint32_t size = w->next_size < RH_FIRST_CHUNK ? RH_FIRST_CHUNK : w->next_size;
    if (size > max)
        size = max;
    struct rip_chunk_header *h = NULL;
    int spare = rh_spare_used(w);
    if (spare) {
        /* The helper's chunk, when it was made for this one; a request not
         * taken yet is withdrawn (its chunk would lie after this one in the
         * file). Under rh_prof_lock the helper is never in the middle of a
         * chunk: it maps and publishes under it. */
        struct rh_spare *sp = rh_writer_spare(w);
        void *m = __atomic_exchange_n(&sp->map, NULL, __ATOMIC_ACQUIRE);
        if (m && sp->epoch == w->epoch && sp->seq == w->seq && sp->tid == w->tid &&
            sp->size == size)
            h = m;
        else if (m) {
            rh_spare_retire_locked(m, sp->size);
            if (sp->seq == w->seq && sp->epoch == w->epoch)
                w->seq++; /* that seq is the sealed spare's */
        }
        uint32_t want = RH_SPARE_WANTED;
        __atomic_compare_exchange_n(&sp->req, &want, RH_SPARE_NONE, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_RELAXED);
    }
    int taken = h != NULL;
    if (!h)
        h = rh_file_map_chunk_locked(size);
    if (!h) {
        if (!locked)
            rh_spin_unlock(&rh_prof_lock);
        return -1;
    }
    w->chunk = h;
    w->chunk_size = size;
    /* under the lock: a thread's exit or the close seals the slot's spare
     * and counts its seq (rh_spare_drop_locked) */
    uint32_t seq = w->seq++;
    w->next_size = size >= max / 2 ? max : size * 2;
    /* not for a thread's first chunk: a short-lived thread, or a program
     * that writes less than one chunk, leaves no spare behind */
    int asked = spare && w->total_events && rh_spare_request_locked(w, max);
    if (!locked)
        rh_spin_unlock(&rh_prof_lock);
    if (asked) {
        /* the helper starts at the thread's next safe point if none runs
         * (rh_spare_start_safe): this open may be an mmap's record inside an
         * allocator that holds its locks */
        __atomic_store_n(&rh_spare_want_helper, 1, __ATOMIC_RELEASE);
        rh_spare_kick();
    }

    if (taken) {
        /* header and name written by the helper (rh_spare_prepare) */
        w->prev_time = h->base_time;
        w->prev_addr = 0;
        w->pos = (uint8_t *)h + RIP_CHUNK_HDR_SIZE + h->used;
        w->end = (uint8_t *)h + RIP_CHUNK_HDR_SIZE + h->capacity - RH_NAME_RESERVE;
        w->calib_left = RH_CALIB_DUES;
        rh_writer_set_lim(w);
        return 0;
    }
    uint64_t base = t > w->prev_time ? t : w->prev_time;
    h->magic = RIP_CHUNK_MAGIC;
    h->type = w->type;
    h->header_size = RIP_CHUNK_HDR_SIZE;
    h->capacity = size - RIP_CHUNK_HDR_SIZE;
    h->slot = w->slot_id;
    h->tid = w->type == RIP_CHUNK_EVENTS ? w->tid : 0;
    h->seq = seq;
    h->base_time = base;
    rh_calib_pair(&h->calib_tick, &h->calib_ns);
    w->prev_time = base;
    w->prev_addr = 0;
    w->pos = (uint8_t *)h + RIP_CHUNK_HDR_SIZE;
    w->end = w->pos + h->capacity;
    w->calib_left = RH_CALIB_DUES;
    if (w->type == RIP_CHUNK_EVENTS) {
        rh_writer_threadname(w);
        w->end -= RH_NAME_RESERVE; /* room to restate the name at seal */
    } else
        rh_writer_setthread(w); /* the caller holds rh_shared_lock and writes next */
    rh_writer_set_lim(w);
    if (rh_stream_on())
        rh_stream_chunk_opened(h, w->epoch); /* sent while open, within a second */
    return 0;
}

int rh_writer_open(struct rh_writer *w, uint64_t t)
{
    return rh_writer_open_as(w, t, 0);
}

int rh_writer_open_locked(struct rh_writer *w, uint64_t t)
{
    return rh_writer_open_as(w, t, 1);
}

void rh_writer_setthread(struct rh_writer *w)
{
    uint32_t tid = rh_gettid();
    if (tid == __atomic_load_n(&rh_runtime_tid, __ATOMIC_ACQUIRE)) {
        /* the runtime's helper writes others' names only: it is no thread of the program */
        w->tid = 0;
        return;
    }
    uint8_t tmp[10];
    uint8_t n = (uint8_t)(rip_put_varint(tmp, tid) - tmp);
    if ((size_t)(w->end - w->pos) < 3u + n)
        return;
    uint8_t *q = w->pos;
    *q++ = RIP_OP_EXT;
    *q++ = RIP_EXT_SETTHREAD;
    *q++ = n;
    memcpy(q, tmp, n);
    w->pos = q + n;
    w->tid = tid;
    rh_writer_commit(w);
    rh_writer_threadname(w);
}

void rh_writer_seal(struct rh_writer *w, int locked)
{
    struct rip_chunk_header *h = w->chunk;
    if (!h)
        return;
    uint8_t *payload = (uint8_t *)h + RIP_CHUNK_HDR_SIZE;
    if (h->type == RIP_CHUNK_EVENTS && w->pos) {
        /* Programs name their threads after the first allocation, so the name
         * read at open is often the parent's: restate it in the reserved room.
         * Only the owner may: the name is read from the calling thread. */
        w->end += RH_NAME_RESERVE;
        if (w->tid == rh_gettid())
            rh_writer_threadname(w);
    }
    /* every record ended inside the chunk: the crc covers exactly them */
    if (!rh_assert(h->used <= h->capacity))
        h->used = h->capacity; /* released builds go on (tracking has stopped): the crc
                                  must not read past the chunk */
    rh_calib_pair(&h->calib_tick, &h->calib_ns);
    struct rip_chunk_header copy;
    memcpy(&copy, h, sizeof copy);
    copy.flags |= RIP_CHUNK_F_SEALED;
    h->crc = rip_chunk_crc(&copy, payload);
    __atomic_store_n(&h->flags, copy.flags, __ATOMIC_RELEASE);
    if (rh_stream_on()) {
        /* streaming: the queue owns the chunk's memory from here */
        rh_stream_push(h, w->chunk_size, w->epoch, 0);
        w->chunk = NULL;
        w->pos = w->end = w->lim = NULL;
        return;
    }
    /* Give the unused page-aligned tail back to the file system (a hole). */
    uint64_t used_end =
        (RIP_CHUNK_HDR_SIZE + (uint64_t)h->used + RIP_ALIGN - 1) & ~(uint64_t)(RIP_ALIGN - 1);
    if (used_end < w->chunk_size)
        madvise((char *)h + used_end, w->chunk_size - used_end, MADV_REMOVE);
    if (!locked)
        rh_spin_lock(&rh_prof_lock);
    rh_sys_munmap(h, w->chunk_size);
    w->chunk = NULL;
    w->pos = w->end = w->lim = NULL;
    if (!locked)
        rh_spin_unlock(&rh_prof_lock);
}

void rh_writer_drop(struct rh_writer *w)
{
    if (w->chunk)
        rh_sys_munmap(w->chunk, w->chunk_size);
    memset(w, 0, sizeof *w);
}

void rh_writer_commit(struct rh_writer *w)
{
    struct rip_chunk_header *h = w->chunk;
    __atomic_store_n(&h->used, (uint32_t)(w->pos - ((uint8_t *)h + RIP_CHUNK_HDR_SIZE)),
                     __ATOMIC_RELEASE);
}

/* Cold half of rh_writer_reserve: the chunk is full (or missing). Seals and
 * maps chunks (system calls), so it keeps the caller's errno. */
int rh_writer_reserve_slow(struct rh_writer *w, size_t need, uint64_t t)
{
    int e = errno;
    int rc = rh_writer_open(w, t);
    errno = e;
    if (rc != 0)
        return -1;
    /* a fresh chunk holds any one record (the largest is far below the
     * smallest chunk) */
    if (!rh_assert(w->pos + need <= w->end))
        return -1;
    return 0;
}

/* Refreshes the chunk's calibration pair (every RH_CALIB_DUES fast limits). */
void rh_writer_recalibrate(struct rh_writer *w)
{
    int e = errno;
    rh_calib_pair(&w->chunk->calib_tick, &w->chunk->calib_ns);
    w->calib_left = RH_CALIB_DUES;
    errno = e;
}

void rh_writer_set_lim(struct rh_writer *w)
{
    w->lim = (size_t)(w->end - w->pos) > RH_DUE_BYTES ? w->pos + RH_DUE_BYTES : w->end;
}

void rh_writer_due(struct rh_writer *w)
{
    if (--w->calib_left == 0)
        rh_writer_recalibrate(w);
    rh_writer_set_lim(w);
}
