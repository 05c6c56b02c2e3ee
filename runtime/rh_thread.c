/* rh_thread.c: per-thread writers: slots, chunks, thread exit, the shared path
 * and fork.
 *
 * Each thread that records gets a slot (cold path, on its first event) from the
 * file's fixed slot array, and writes its events into its own chunk, a
 * MAP_SHARED mapping of the file; no lock is taken on the hot path. Chunks grow
 * from 16 KiB, doubling up to the configured maximum, so short-lived threads
 * stay small. A full chunk is sealed (flags, crc), its unused tail is released
 * and the next one is mapped. At thread exit a pthread key destructor, re-armed
 * until the last destructor round, seals the chunk and releases the slot; later
 * events of that thread, and events of threads that found no free slot, go
 * through the shared writer under rh_shared_lock.
 *
 * fork: the prepare handler takes rh_shared_lock and rh_prof_lock, so the child
 * sees no half-done chunk operation; the child drops every inherited chunk
 * mapping unsealed (they belong to the parent's file) and arms the lazy creation
 * of rip-<childpid>.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rh_runtime.h"

#define RH_FIRST_CHUNK 16384u
#define RH_CALIB_EVERY 4096u

/* The thread's relation to slots. */
enum { RH_TM_NONE = 0, RH_TM_SLOT = 1, RH_TM_NOSLOT = 2, RH_TM_RELEASED = 3 };

RH_HIDDEN __thread struct rh_slot *rh_tls_slot __attribute__((tls_model("local-exec")));
static __thread uint32_t rh_tls_tid __attribute__((tls_model("local-exec")));
static __thread uint8_t rh_tls_mode __attribute__((tls_model("local-exec")));
/* Epoch in which RH_TM_NOSLOT was decided: a new file retries. */
static __thread uint32_t rh_tls_noslot_epoch __attribute__((tls_model("local-exec")));

RH_HIDDEN int rh_shared_lock;
RH_HIDDEN struct rh_writer rh_shared = {.slot_id = RIP_SLOT_SHARED, .type = RIP_CHUNK_SHARED};

RH_HIDDEN uint32_t rh_runtime_tid;

static pthread_key_t rh_exit_key;
static int rh_thread_ready;

uint32_t rh_gettid(void)
{
    if (rh_unlikely(!rh_tls_tid))
        rh_tls_tid = (uint32_t)syscall(SYS_gettid);
    return rh_tls_tid;
}

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
    w->calib_left = RH_CALIB_EVERY;
    if (w->type == RIP_CHUNK_EVENTS) {
        rh_writer_threadname(w);
        w->end -= RH_NAME_RESERVE; /* room to restate the name at seal */
    } else
        rh_writer_setthread(w); /* the caller holds rh_shared_lock and writes next */
    if (rh_stream_on())
        rh_stream_chunk_opened(h, w->epoch); /* sent while open, within a second */
    return 0;
}

int rh_writer_open(struct rh_writer *w, uint64_t t)
{
    return rh_writer_open_as(w, t, 0);
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
        w->pos = w->end = NULL;
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
    w->pos = w->end = NULL;
    if (!locked)
        rh_spin_unlock(&rh_prof_lock);
}

/* Takes a free slot of the current file for the calling thread. Returns NULL
 * when all are held. Takes rh_prof_lock. */
static struct rh_slot *rh_slot_acquire(void)
{
    uint32_t tid = rh_gettid();
    struct rh_slot *got = NULL;
    rh_spin_lock(&rh_prof_lock);
    struct rh_slot *arr = rh_prof.slots;
    unsigned n = rh_prof.nslots;
    if (arr && rh_prof.open) {
        for (unsigned i = 0, k = tid % n; i < n; i++, k = k + 1 == n ? 0 : k + 1) {
            if (!__atomic_load_n(&arr[k].in_use, __ATOMIC_RELAXED)) {
                got = &arr[k];
                got->in_use = 1;
                struct rh_writer *w = &got->w;
                /* seq and prev_time continue the slot's stream. */
                w->chunk = NULL;
                w->pos = w->end = NULL;
                w->stacks = rh_prof.stacks;
                w->total_events = 0;
                w->next_size = RH_FIRST_CHUNK;
                w->epoch = rh_epoch;
                w->slot_id = k;
                w->tid = tid;
                w->type = RIP_CHUNK_EVENTS;
                break;
            }
        }
    }
    rh_spin_unlock(&rh_prof_lock);
    return got;
}

/* Seals the slot's chunk and gives the slot back; its event count moves to the
 * file's total when the slot belongs to the current file. */
static void rh_slot_release(struct rh_slot *s)
{
    rh_writer_seal(&s->w, 0);
    rh_spin_lock(&rh_prof_lock);
    if (s->w.epoch == rh_epoch && rh_prof.open)
        rh_prof.events_released += s->w.total_events;
    s->w.total_events = 0;
    __atomic_store_n(&s->in_use, 0, __ATOMIC_RELEASE);
    rh_spin_unlock(&rh_prof_lock);
}

struct rh_slot *rh_thread_prepare(uint64_t t, int *drop)
{
    *drop = 0;
    if (!rh_file_ensure()) {
        *drop = 1;
        return NULL;
    }
    uint32_t ep = __atomic_load_n(&rh_epoch, __ATOMIC_ACQUIRE);
    struct rh_slot *s = rh_tls_slot;
    if (s && s->w.epoch != ep) {
        rh_slot_release(s); /* a new file: the old slot array is stale */
        rh_tls_slot = s = NULL;
        rh_tls_mode = RH_TM_NONE;
    }
    if (!s) {
        if (rh_tls_mode == RH_TM_RELEASED)
            return NULL;
        if (rh_tls_mode == RH_TM_NOSLOT && rh_tls_noslot_epoch == ep)
            return NULL;
        s = rh_slot_acquire();
        if (!s) {
            rh_tls_mode = RH_TM_NOSLOT;
            rh_tls_noslot_epoch = ep;
            return NULL;
        }
        rh_tls_slot = s;
        rh_tls_mode = RH_TM_SLOT;
        rh_cpu_thread_known(); /* its CPU timer, if sampling */
        /* Arm the exit key unless it is armed already: a thread that moves to
         * a new file's slot inside its destructor rounds (another library's
         * key destructor records after an enable) must keep its round count,
         * or the count restarts at 1, never reaches RH_EXIT_ROUND before glibc
         * stops calling, and the slot stays held with its chunk open. */
        if (rh_thread_ready && !pthread_getspecific(rh_exit_key))
            pthread_setspecific(rh_exit_key, (void *)1);
    }
    if (!s->w.chunk && rh_writer_open(&s->w, t) != 0) {
        /* Still open: the chunk could not be mapped for want of an fd (EMFILE);
         * the event is lost, and counted, and the next one retries. */
        if (__atomic_load_n(&rh_prof.open, __ATOMIC_ACQUIRE))
            __atomic_fetch_add(&rh_prof.lost, 1, __ATOMIC_RELAXED);
        *drop = 1;
        return NULL;
    }
    return s;
}

/* The destructor round in which the thread's slot is released: the last one.
 * Under ThreadSanitizer one round earlier, since TSan's own key destructor
 * tears down the thread's sanitizer state in the last round, before ours. */
#if defined(__SANITIZE_THREAD__)
#define RH_EXIT_ROUND (PTHREAD_DESTRUCTOR_ITERATIONS - 1)
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RH_EXIT_ROUND (PTHREAD_DESTRUCTOR_ITERATIONS - 1)
#endif
#endif
#ifndef RH_EXIT_ROUND
#define RH_EXIT_ROUND PTHREAD_DESTRUCTOR_ITERATIONS
#endif

/* pthread key destructor: re-arms itself until the last destructor round, so
 * frees done by other libraries' destructors are still recorded in the slot,
 * then seals and releases the slot. Later events use the shared path. */
static void rh_thread_exit_cb(void *v)
{
    uintptr_t round = (uintptr_t)v;
    if (round < RH_EXIT_ROUND) {
        pthread_setspecific(rh_exit_key, (void *)(round + 1));
        return;
    }
    int g = rh_guard_enter();
    struct rh_slot *s = rh_tls_slot;
    rh_tls_slot = NULL;
    rh_tls_mode = RH_TM_RELEASED;
    if (s)
        rh_slot_release(s);
    rh_guard_leave(g);
}

void rh_thread_seal_self_locked(void)
{
    struct rh_slot *s = rh_tls_slot;
    if (s && s->w.chunk)
        rh_writer_seal(&s->w, 1);
}

void rh_thread_totals_locked(uint64_t *events, uint32_t *open_chunks)
{
    struct rh_slot *arr = rh_prof.slots;
    for (unsigned i = 0; arr && i < rh_prof.nslots; i++) {
        if (!__atomic_load_n(&arr[i].in_use, __ATOMIC_ACQUIRE) || arr[i].w.epoch != rh_epoch)
            continue;
        *events += __atomic_load_n(&arr[i].w.total_events, __ATOMIC_RELAXED);
        if (arr[i].w.chunk)
            (*open_chunks)++;
    }
}

/* Reads the name of thread tid of this process (/proc/self/task/TID/comm,
 * what pthread_setname_np from any thread and prctl(PR_SET_NAME) set) into
 * name[16] without its newline. Raw system calls: no allocation, no stdio, no
 * cancellation point; the descriptor lives only inside this call. Returns the
 * length, or -1 (the thread is gone, /proc is not there: a chroot). */
static int rh_thread_comm(uint32_t tid, char name[16])
{
    char path[48];
    rh_fmt(path, sizeof path, "/proc/self/task/%u/comm", (unsigned)tid);
    int fd;
    do
        fd = rh_open_proc(path, O_RDONLY);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -1;
    char buf[32];
    ssize_t n;
    do
        n = rh_sys_read(fd, buf, sizeof buf);
    while (n < 0 && errno == EINTR);
    rh_sys_close(fd);
    if (n <= 0)
        return -1;
    size_t len = 0;
    while (len < (size_t)n && len < 16 && buf[len] != '\n' && buf[len] != '\0')
        len++;
    memcpy(name, buf, len);
    return (int)len;
}

void rh_thread_names_locked(void)
{
    struct rh_slot *arr = rh_prof.slots;
    struct rh_writer *w = &rh_shared;
    uint32_t self = rh_gettid();
    if (!arr || !rh_prof.open)
        return;
    if (w->epoch != rh_epoch) {
        /* the shared writer's first use in this recording (as rh_shared_begin) */
        if (w->chunk)
            rh_writer_seal(w, 1);
        w->epoch = rh_epoch;
        w->stacks = rh_prof.stacks;
        w->seq = 0;
        w->total_events = 0;
        w->next_size = 0;
        w->tid = 0;
    }
    for (unsigned i = 0; i < rh_prof.nslots; i++) {
        if (!__atomic_load_n(&arr[i].in_use, __ATOMIC_ACQUIRE) || arr[i].w.epoch != rh_epoch)
            continue;
        uint32_t tid = __atomic_load_n(&arr[i].w.tid, __ATOMIC_RELAXED);
        if (!tid || tid == self) /* the caller restates its own name at its seal */
            continue;
        char name[16];
        int len = rh_thread_comm(tid, name);
        if (len < 0)
            continue;
        uint8_t tmp[10];
        uint8_t n = (uint8_t)(rip_put_varint(tmp, tid) - tmp);
        size_t need = 3u + n + 3u + (size_t)len;
        if (!w->chunk || (size_t)(w->end - w->pos) < need) {
            uint64_t t = rh_now() >> rh_clock_shift;
            if (rh_writer_open_as(w, t, 1) != 0 || (size_t)(w->end - w->pos) < need)
                return;
        }
        uint8_t *q = w->pos;
        *q++ = RIP_OP_EXT;
        *q++ = RIP_EXT_SETTHREAD;
        *q++ = n;
        memcpy(q, tmp, n);
        q += n;
        *q++ = RIP_OP_EXT;
        *q++ = RIP_EXT_THREADNAME;
        *q++ = (uint8_t)len;
        memcpy(q, name, (size_t)len);
        w->pos = q + len;
        w->tid = tid; /* the next shared event of another thread switches back */
        rh_writer_commit(w);
    }
}

/* ---- fork --------------------------------------------------------------- */

/* The forking thread's guard, set across fork so that a sampling signal
 * between prepare and parent/child (locks held) is dropped, not deadlocked. */
static __thread int rh_tls_fork_guard __attribute__((tls_model("local-exec")));
/* The prepare handler created the pending profile (rh_file_create_for_fork_locked). */
static __thread int rh_tls_fork_created __attribute__((tls_model("local-exec")));

static void rh_fork_prepare(void)
{
    rh_tls_fork_guard = rh_guard_enter();
    rh_spin_lock(&rh_shared_lock);
    rh_spin_lock(&rh_prof_lock);
    rh_origin_fork_prepare();
    rh_tls_fork_created = rh_file_create_for_fork_locked();
    rh_kinds_fork(0);
    rh_live_fork(0);
    rh_stream_fork(0);
    rh_cpu_fork(0); /* last: a close holds the two above when it stops the timers */
}

static void rh_fork_parent(void)
{
    rh_stream_fork(1);
    rh_cpu_fork(1);
    rh_live_fork(1);
    rh_kinds_fork(1);
    rh_spin_unlock(&rh_prof_lock);
    rh_spin_unlock(&rh_shared_lock);
    if (rh_tls_fork_created)
        rh_file_created_after_fork(); /* its module map, now that no lock is held */
    rh_guard_leave(rh_tls_fork_guard);
}

/* Drops a chunk mapping without sealing it: it is the parent's. */
static void rh_writer_drop(struct rh_writer *w)
{
    if (w->chunk)
        rh_sys_munmap(w->chunk, w->chunk_size);
    memset(w, 0, sizeof *w);
}

static void rh_fork_child(void)
{
    struct rh_slot *arr = rh_prof.slots;
    for (unsigned i = 0; arr && i < rh_prof.nslots; i++) {
        if (arr[i].in_use)
            rh_writer_drop(&arr[i].w);
        arr[i].in_use = 0;
    }
    rh_writer_drop(&rh_shared);
    rh_shared.slot_id = RIP_SLOT_SHARED;
    rh_shared.type = RIP_CHUNK_SHARED;
    rh_tls_slot = NULL;
    rh_tls_mode = RH_TM_NONE;
    rh_tls_tid = 0;
    rh_origin_fork_child(rh_prof.open && rh_recording(__atomic_load_n(&rh_state, __ATOMIC_RELAXED)));
    rh_file_forget_in_child();
    rh_exit_fork_child();
    rh_origin_fork_child_done();
    rh_prof_lock = 0;
    rh_shared_lock = 0;
    rh_kinds_fork(2);
    rh_stream_fork(2);
    rh_cpu_fork(2);
    rh_live_fork(2);
    rh_guard_leave(rh_tls_fork_guard);
}

void rh_thread_init(void)
{
    if (rh_thread_ready)
        return;
    if (pthread_key_create(&rh_exit_key, rh_thread_exit_cb) == 0)
        rh_thread_ready = 1;
    else
        rh_warn("cannot create a thread key: thread-exit flushes happen at close instead");
    pthread_atfork(rh_fork_prepare, rh_fork_parent, rh_fork_child);
}
