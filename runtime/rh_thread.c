/* rh_thread.c: per-thread slots, a thread's first event, thread exit, and
 * the thread names restated at close.
 *
 * Each thread that records gets a slot (cold path, on its first event) from the
 * file's fixed slot array, and writes its events into its own chunk stream
 * (rh_writer.c); no lock is taken on the hot path. At thread exit a pthread
 * key destructor, re-armed until the last destructor round, seals the chunk
 * and releases the slot; later events of that thread, and events of threads
 * that found no free slot, go through the shared writer under rh_shared_lock.
 * A thread's first event creates a pending profile (the lazy start) through
 * the session layer's hook. In a fork child, rh_thread_fork_child drops the
 * inherited chunks unsealed (the fork handlers are rh_session.c's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "rh_recording.h"

/* The thread's relation to slots. */
enum { RH_TM_NONE = 0, RH_TM_SLOT = 1, RH_TM_NOSLOT = 2, RH_TM_RELEASED = 3 };

RH_HIDDEN __thread struct rh_slot *rh_tls_slot __attribute__((tls_model("local-exec")));
static __thread uint8_t rh_tls_mode __attribute__((tls_model("local-exec")));
/* Epoch in which RH_TM_NOSLOT was decided: a new file retries. */
static __thread uint32_t rh_tls_noslot_epoch __attribute__((tls_model("local-exec")));

RH_HIDDEN int rh_shared_lock;
RH_HIDDEN struct rh_writer rh_shared = {.slot_id = RIP_SLOT_SHARED, .type = RIP_CHUNK_SHARED};


static pthread_key_t rh_exit_key;
static int rh_thread_ready;

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
                w->pos = w->end = w->lim = NULL;
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
    rh_spare_drop_locked(s); /* made for this thread: the next holder is another */
    if (s->w.epoch == rh_epoch && rh_prof.open)
        rh_prof.events_released += s->w.total_events;
    s->w.total_events = 0;
    __atomic_store_n(&s->in_use, 0, __ATOMIC_RELEASE);
    rh_spin_unlock(&rh_prof_lock);
}

struct rh_slot *rh_thread_prepare(uint64_t t, int *drop)
{
    *drop = 0;
    if (!rh_session_call(RH_SES_FILE)) {
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
    /* No check that s->w.epoch == ep: a slot taken just now carries the epoch
     * of that moment, and another thread's disable and enable may have come
     * in between; rh_writer_open refuses a stale epoch, and the event is
     * dropped as any event racing a stop is. */
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
        if (arr[i].w.chunk) {
            (*open_chunks)++;
            /* each open chunk's committed records lie inside it */
            rh_assert_expensive(__atomic_load_n(&arr[i].w.chunk->used, __ATOMIC_ACQUIRE) <=
                                arr[i].w.chunk->capacity);
        }
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
            if (rh_writer_open_locked(w, t) != 0 || (size_t)(w->end - w->pos) < need)
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

void rh_thread_spares_drop_locked(void)
{
    struct rh_slot *arr = rh_prof.slots;
    for (unsigned i = 0; arr && i < rh_prof.nslots; i++)
        rh_spare_drop_locked(&arr[i]);
}

void rh_thread_init(void)
{
    if (rh_thread_ready)
        return;
    if (pthread_key_create(&rh_exit_key, rh_thread_exit_cb) == 0)
        rh_thread_ready = 1;
    else
        rh_warn("cannot create a thread key: thread-exit flushes happen at close instead");
}

void rh_thread_fork_child(void)
{
    struct rh_slot *arr = rh_prof.slots;
    for (unsigned i = 0; arr && i < rh_prof.nslots; i++) {
        if (arr[i].in_use)
            rh_writer_drop(&arr[i].w);
        arr[i].in_use = 0;
        rh_spare_forget(&arr[i]); /* the parent's chunk: unmapped, not sealed */
    }
    rh_writer_drop(&rh_shared);
    rh_shared.slot_id = RIP_SLOT_SHARED;
    rh_shared.type = RIP_CHUNK_SHARED;
    rh_tls_slot = NULL;
    rh_tls_mode = RH_TM_NONE;
    rh_gettid_forget();
}
