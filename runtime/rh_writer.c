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
    struct rip_chunk_header *h = rh_file_map_chunk_locked(size);
    if (!h) {
        if (!locked)
            rh_spin_unlock(&rh_prof_lock);
        return -1;
    }
    w->chunk = h;
    w->chunk_size = size;
    if (!locked)
        rh_spin_unlock(&rh_prof_lock);

    w->next_size = size >= max / 2 ? max : size * 2;
    uint64_t base = t > w->prev_time ? t : w->prev_time;
    h->magic = RIP_CHUNK_MAGIC;
    h->type = w->type;
    h->header_size = RIP_CHUNK_HDR_SIZE;
    h->capacity = size - RIP_CHUNK_HDR_SIZE;
    h->slot = w->slot_id;
    h->tid = w->type == RIP_CHUNK_EVENTS ? w->tid : 0;
    h->seq = w->seq++;
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
