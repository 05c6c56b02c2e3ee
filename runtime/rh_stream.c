/* rh_stream.c: RHEAPER_STREAM=HOST:PORT, the profile sent over TCP to
 * `rheaper collect` instead of written to a local file.
 *
 * The allocating threads never touch the network. In stream mode rh_file.c
 * gives chunks anonymous memory instead of file space, and every finished piece
 * of the profile (the file header, each sealed chunk, each MODULES snapshot,
 * the trailer) is pushed here onto a bounded in-memory queue: one spin lock, a
 * ring of entries, a futex wake. One sender thread, started lazily the first
 * time a recording has something to send (never under a runtime lock, never
 * before the constructors ran), pops the queue and writes each piece to the
 * collector with raw system calls; the wire protocol is FORMAT.md
 * "Streaming".
 *
 * File descriptors. The runtime may hold no fd the program can close, dup2 over
 * or reuse, and a socket has to stay open for the whole run. So the sender
 * thread gives itself a file descriptor table of its own (unshare(CLONE_FILES))
 * and closes every inherited copy in it at once (close_range): its socket then
 * lives in a table no other thread sees. The program's close_range, dup2 and
 * fd limits never meet it, and a fork child (which copies the forking thread's
 * table) never inherits it. POSIX record locks are owned per table, so closing
 * the copies releases none of the program's locks; for the microseconds between
 * unshare and close_range the copies keep the program's files referenced (a
 * pipe the program closes in that window reaches EOF a moment later). Where
 * unshare is refused (a seccomp sandbox), streaming stops with one warning.
 * Warnings cannot be written from the sender's own table (it has no fd 2): the
 * sender leaves the message here and asks for the control work (RH_CTL), so the
 * next hooked call of a program thread prints it; the exit handler prints what
 * is still pending.
 *
 * Delivery within a second. A chunk is queued only when it is sealed, and a
 * quiet thread's chunk may stay open for the rest of the run, so the sender
 * also sends what open chunks hold: every chunk a writer opens is registered
 * (rh_stream_chunk_opened) until its seal pushes it, and every
 * RH_SQ_FLUSH_NS the sender copies, under the queue's lock, the complete
 * records each registered chunk gained since the last time (its `used`,
 * stored after each record) and sends them as a partial chunk (FORMAT.md
 * "Streaming"); the collector writes them in place, where the sealed chunk
 * lands later. The lock keeps the memory mapped while it is copied: a chunk
 * leaves the registry under it before anyone unmaps it. Items queued before a
 * copy are sent before it, so a slot's chunks reach the collector in seq
 * order. A program killed loses at most the records of the last interval.
 *
 * Policy when the queue is full (RHEAPER_STREAM_QUEUE bytes of chunk memory):
 * recording stops with one warning and the recording is closed cleanly, like the
 * size limit: the chunk that did not fit and any later one are counted as lost,
 * and the trailer (which, like the header and MODULES, is never refused) says
 * why. A collector that cannot be reached, hangs up or does not confirm the end
 * gives one warning; tracking stops and the program runs on (MSG_NOSIGNAL: no
 * SIGPIPE). At exit the destructor waits up to RHEAPER_STREAM_TIMEOUT seconds
 * for the queue to drain and the collector to confirm.
 *
 * Lock order: rh_shared_lock, rh_prof_lock, then rh_sq.lock (a leaf; the
 * sender takes it alone, and rh_prof_lock only without it).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rh_recording.h"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

enum { RH_SQ_HDR = 1, RH_SQ_CHUNK = 2, RH_SQ_END = 3 };

/* One queued piece: a private anonymous mapping the queue owns. */
struct rh_sq_item {
    void *map;
    uint32_t map_size; /* bytes mapped (munmap) */
    uint32_t send_len; /* bytes to send from map */
    uint32_t acct;     /* bytes counted against the queue limit (0: exempt) */
    uint32_t kind;     /* RH_SQ_* */
    uint32_t epoch;    /* the recording (rh_epoch) it belongs to */
};

/* Entries kept free for pieces the limit never refuses (header, modules,
 * trailer, end). */
#define RH_SQ_RESERVE 64u

/* How often the sender sends what open chunks gained, and the most payload
 * bytes one partial chunk carries (a larger gain goes in several). */
#define RH_SQ_FLUSH_NS 250000000ull
#define RH_SQ_PART_MAX (1u << 20)
/* Open chunks the sender can follow: every slot's and the shared writer's. */
#define RH_SQ_OPEN_CAP (RH_MAX_TRACKERS + 16u)

/* An open chunk (FORMAT.md "Streaming", partial chunks). */
struct rh_sq_open {
    struct rip_chunk_header *h; /* NULL: a free entry */
    uint32_t sent;              /* payload bytes the collector has */
    uint32_t epoch;
};

static struct {
    int lock;                 /* spin lock: everything below but the sender's own */
    struct rh_sq_item *ring;  /* cap entries, mapped once */
    uint32_t cap, head, tail; /* items = tail - head */
    uint64_t bytes, peak;     /* accounted bytes queued, and their maximum */
    uint32_t epoch;           /* the recording being streamed */
    int cut;                  /* the queue overflowed: this recording stops */
    int failed;               /* the sender failed this recording */
    uint32_t ended;           /* epoch whose END the sender finished (or failed) */
    uint32_t wake;            /* futex: bumped at each push */
    uint32_t done;            /* futex: bumped when the sender ends a recording */
    int started;              /* 0 no thread, 1 running, 2 could not start */
    int warn_pending;         /* atomic: msg waits for a program thread to print */
    char msg[512];
    uint64_t close_events; /* events the last trailer counted */
    uint32_t close_epoch;  /* the recording whose END is queued (0: none) */
    struct rh_sq_open *open; /* RH_SQ_OPEN_CAP entries, mapped with the ring */
    uint32_t open_hi;        /* entries [0, open_hi) may be in use */
    uint32_t part_dropped;   /* chunks sent in part whose sealed form was refused */
} rh_sq;

/* ---- small helpers ---------------------------------------------------------- */

/* Leaves a warning for a program thread to print (see the file comment) and
 * asks for the control work. Only the first message of a recording is kept. */
static void rh_sq_warn_later(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void rh_sq_warn_later(const char *fmt, ...)
{
    if (__atomic_load_n(&rh_sq.warn_pending, __ATOMIC_ACQUIRE) == 1)
        return; /* one not printed yet: it is the first of its recording */
    va_list ap;
    va_start(ap, fmt);
    rh_vfmt(rh_sq.msg, sizeof rh_sq.msg, fmt, ap);
    va_end(ap);
    __atomic_store_n(&rh_sq.warn_pending, 1, __ATOMIC_RELEASE);
    rh_ctl_request();
}

/* Pops and unmaps every queued item, and forgets the open chunks (their
 * writers still own them). Caller holds rh_sq.lock. */
static void rh_sq_clear_locked(void)
{
    while (rh_sq.head != rh_sq.tail) {
        struct rh_sq_item *it = &rh_sq.ring[rh_sq.head++ % rh_sq.cap];
        rh_sys_munmap(it->map, it->map_size);
    }
    rh_sq.head = rh_sq.tail = 0;
    rh_sq.bytes = 0;
    for (uint32_t i = 0; rh_sq.open && i < rh_sq.open_hi; i++)
        __atomic_store_n(&rh_sq.open[i].h, NULL, __ATOMIC_RELAXED);
    rh_sq.open_hi = 0;
}

/* Maps the ring once per process (the fork child keeps its copy). Caller
 * holds rh_sq.lock. Returns 0 or -1. */
static int rh_sq_ring_locked(void)
{
    if (rh_sq.ring)
        return 0;
    /* a power of two, so that `index % cap` stays continuous when the
     * 32-bit head and tail wrap (a long run pushes billions of chunks) */
    uint64_t want = rh_cfg.stream_queue / RIP_ALIGN + 2 * RH_SQ_RESERVE, cap = 256;
    while (cap < want && cap < (1u << 22))
        cap <<= 1;
    void *m = rh_sys_mmap(NULL, (size_t)cap * sizeof(struct rh_sq_item), PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    void *o =
        rh_sys_mmap(NULL, (size_t)RH_SQ_OPEN_CAP * sizeof(struct rh_sq_open),
                    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (o == MAP_FAILED) {
        rh_sys_munmap(m, (size_t)cap * sizeof(struct rh_sq_item));
        return -1;
    }
    rh_sq.ring = m;
    rh_sq.cap = (uint32_t)cap;
    rh_sq.open = o;
    rh_sq.open_hi = 0;
    return 0;
}

/* ---- pushing (program threads) --------------------------------------------- */

/* The queue limit: RHEAPER_STREAM_QUEUE, but room for 4 of the largest chunks
 * at least (RHEAPER_BUFFER_SIZE can make one chunk 64 MiB). */
static uint64_t rh_sq_limit(void)
{
    uint64_t floor = 4ull * rh_prof.max_chunk;
    return rh_cfg.stream_queue > floor ? rh_cfg.stream_queue : floor;
}

int rh_stream_begin_locked(const uint8_t *hdr, uint32_t epoch)
{
    void *m = rh_sys_mmap(NULL, RIP_HEADER_SIZE, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    memcpy(m, hdr, RIP_HEADER_SIZE);
    rh_spin_lock(&rh_sq.lock);
    if (rh_sq_ring_locked() != 0) {
        rh_spin_unlock(&rh_sq.lock);
        rh_sys_munmap(m, RIP_HEADER_SIZE);
        return -1;
    }
    /* A new recording. An older one's items stay queued in front of this
     * header (a disable and enable in a row): the sender finishes that
     * connection first. */
    rh_sq.epoch = epoch;
    rh_sq.cut = 0;
    rh_sq.failed = 0;
    rh_sq.peak = 0;
    rh_sq.part_dropped = 0;
    rh_sq.ring[rh_sq.tail++ % rh_sq.cap] =
        (struct rh_sq_item){m, RIP_HEADER_SIZE, RIP_HEADER_SIZE, 0, RH_SQ_HDR, epoch};
    __atomic_add_fetch(&rh_sq.wake, 1, __ATOMIC_RELEASE);
    rh_spin_unlock(&rh_sq.lock);
    rh_sys_futex_wake(&rh_sq.wake);
    return 0;
}

/* The queue is full: stop this recording (once) and close it cleanly at the
 * next hooked call, as the size limit does. Caller holds rh_sq.lock. */
static void rh_sq_cut_locked(void)
{
    if (rh_sq.cut)
        return;
    rh_sq.cut = 1;
    rh_warn("stream to %s: queue full (RHEAPER_STREAM_QUEUE=%llu bytes; the collector or the "
            "network is slower than the program); recording stopped, the profile is closed "
            "cleanly",
            rh_cfg.stream, (unsigned long long)rh_sq_limit());
    rh_state_set(RH_OFF);
    __atomic_store_n(&rh_prof.limit_hit, 1, __ATOMIC_RELEASE);
    rh_ctl_request();
}

void rh_stream_chunk_opened(void *map, uint32_t epoch)
{
    rh_spin_lock(&rh_sq.lock);
    if (rh_sq.open && epoch == rh_sq.epoch && !rh_sq.failed) {
        for (uint32_t i = 0; i < RH_SQ_OPEN_CAP; i++) {
            struct rh_sq_open *e = &rh_sq.open[i];
            if (e->h)
                continue;
            e->sent = 0;
            e->epoch = epoch;
            __atomic_store_n(&e->h, (struct rip_chunk_header *)map, __ATOMIC_RELAXED);
            if (i >= rh_sq.open_hi)
                __atomic_store_n(&rh_sq.open_hi, i + 1, __ATOMIC_RELAXED);
            break;
        }
        /* none free: that chunk is sent when sealed, as every chunk was */
    }
    rh_spin_unlock(&rh_sq.lock);
}

/* Forgets the open chunk at map, if registered. Caller holds rh_sq.lock.
 * Returns 1 when parts of it were sent (the collector holds it open). */
static int rh_sq_forget_open_locked(const void *map)
{
    for (uint32_t i = 0; rh_sq.open && i < rh_sq.open_hi; i++)
        if (rh_sq.open[i].h == map) {
            int sent = rh_sq.open[i].sent != 0 && rh_sq.open[i].epoch == rh_sq.epoch;
            __atomic_store_n(&rh_sq.open[i].h, NULL, __ATOMIC_RELAXED);
            while (rh_sq.open_hi && !rh_sq.open[rh_sq.open_hi - 1].h)
                rh_sq.open_hi--;
            return sent;
        }
    return 0;
}

void rh_stream_push(void *map, uint32_t map_size, uint32_t epoch, int exempt)
{
    struct rip_chunk_header *h = map;
    uint32_t send_len = RIP_CHUNK_HDR_SIZE + h->used;
    uint32_t acct = (send_len + RIP_ALIGN - 1) & ~(RIP_ALIGN - 1);
    if (acct < map_size) /* the untouched tail goes back at once (the sender
                            copies open chunks below `used` only) */
        madvise((char *)map + acct, map_size - acct, MADV_DONTNEED);
    int queued = 0;
    rh_spin_lock(&rh_sq.lock);
    /* out of the registry under the lock: the sender copies open chunks
     * under it, and this one is unmapped below when it is not queued */
    int in_part = rh_sq_forget_open_locked(map);
    if (rh_sq.ring && epoch == rh_sq.epoch && !rh_sq.failed) {
        uint32_t items = rh_sq.tail - rh_sq.head;
        int full = exempt ? items >= rh_sq.cap
                          : (rh_sq.cut || items + RH_SQ_RESERVE >= rh_sq.cap ||
                             rh_sq.bytes + acct > rh_sq_limit());
        if (!full) {
            rh_sq.ring[rh_sq.tail++ % rh_sq.cap] =
                (struct rh_sq_item){map, map_size, send_len, exempt ? 0 : acct, RH_SQ_CHUNK, epoch};
            if (!exempt) {
                rh_sq.bytes += acct;
                if (rh_sq.bytes > rh_sq.peak)
                    rh_sq.peak = rh_sq.bytes;
            }
            queued = 1;
            __atomic_add_fetch(&rh_sq.wake, 1, __ATOMIC_RELEASE);
        } else if (!exempt) {
            rh_sq_cut_locked();
            /* the collector keeps what its parts brought, unsealed: the
             * trailer counts it with the open chunks (FORMAT.md) */
            rh_sq.part_dropped += (uint32_t)in_part;
        }
    }
    rh_spin_unlock(&rh_sq.lock);
    if (queued) {
        rh_sys_futex_wake(&rh_sq.wake);
        return;
    }
    if (h->type == RIP_CHUNK_EVENTS || h->type == RIP_CHUNK_SHARED)
        __atomic_fetch_add(&rh_prof.lost, h->events, __ATOMIC_RELAXED);
    rh_sys_munmap(map, map_size);
}

void rh_stream_end_locked(uint32_t epoch)
{
    rh_spin_lock(&rh_sq.lock);
    if (rh_sq.ring && epoch == rh_sq.epoch && !rh_sq.failed &&
        rh_sq.tail - rh_sq.head < rh_sq.cap) {
        rh_sq.ring[rh_sq.tail++ % rh_sq.cap] = (struct rh_sq_item){NULL, 0, 0, 0, RH_SQ_END, epoch};
        __atomic_add_fetch(&rh_sq.wake, 1, __ATOMIC_RELEASE);
    }
    rh_spin_unlock(&rh_sq.lock);
    rh_sys_futex_wake(&rh_sq.wake);
}

void rh_stream_trailer_fields(uint8_t *t)
{
    rh_spin_lock(&rh_sq.lock);
    uint32_t state = rh_sq.cut ? RIP_STREAM_QUEUE_FULL : RIP_STREAM_SENT;
    uint64_t peak = rh_sq.peak;
    uint32_t dropped = rh_sq.part_dropped;
    rh_spin_unlock(&rh_sq.lock);
    uint32_t open_chunks;
    memcpy(&open_chunks, t + 40, 4);
    open_chunks += dropped;
    memcpy(t + 40, &open_chunks, 4);
    memcpy(t + RIP_TRAILER_STREAM_OFF, &state, 4);
    memcpy(t + RIP_TRAILER_STREAM_OFF + 8, &peak, 8);
}

/* ---- the sender thread --------------------------------------------------- */

static int rh_sq_sock = -1; /* in the sender's own fd table only */
static uint64_t rh_sq_sent; /* bytes sent on the current connection */
static uint32_t rh_sq_conn_epoch; /* the recording of the current connection */
static uint8_t *rh_sq_part;       /* a partial chunk being sent: header and payload */

/* Sends all of buf (MSG_NOSIGNAL, raw sendto: never SIGPIPE, never a
 * cancellation point). Returns 0 or an errno value. */
static int rh_sq_send(const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t w = rh_sys_send(rh_sq_sock, p, len, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN ? ETIMEDOUT : errno;
        }
        p += w;
        len -= (size_t)w;
        rh_sq_sent += (uint64_t)w;
    }
    return 0;
}

static void rh_sq_disconnect(void)
{
    if (rh_sq_sock >= 0)
        rh_sys_close(rh_sq_sock);
    rh_sq_sock = -1;
}

/* The recording `epoch` cannot be streamed: one warning (printed later by a
 * program thread), tracking off, the queue of that recording dropped. Never
 * touches the socket: the sender closes it first (rh_sq_fail), a program
 * thread has none in its table. */
static void rh_sq_fail_common(uint32_t epoch, const char *what, int err)
{
    rh_spin_lock(&rh_prof_lock);
    if (rh_epoch == epoch && rh_prof.open) {
        rh_state_set(RH_OFF);
        __atomic_store_n(&rh_prof.open, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&rh_prof.pending, 0, __ATOMIC_RELAXED);
    }
    rh_spin_unlock(&rh_prof_lock);
    rh_spin_lock(&rh_sq.lock);
    if (rh_sq.epoch == epoch && !rh_sq.failed) {
        /* the current recording: its queue goes, later pieces are dropped */
        rh_sq.failed = 1;
        rh_sq_clear_locked();
    }
    if (rh_sq.ended != epoch) {
        const char *e = err ? rh_arch_strerror(err) : NULL;
        rh_sq_warn_later("stream to collector %s: %s%s%s; tracking stopped (the program runs on)",
                         rh_cfg.stream, what, e ? ": " : "", e ? e : "");
    }
    rh_sq.ended = epoch;
    __atomic_add_fetch(&rh_sq.done, 1, __ATOMIC_RELEASE);
    rh_spin_unlock(&rh_sq.lock);
    rh_sys_futex_wake(&rh_sq.done);
}

/* rh_sq_fail_common, from the sender: its connection is closed first. */
static void rh_sq_fail(uint32_t epoch, const char *what, int err)
{
    rh_sq_disconnect();
    rh_sq_fail_common(epoch, what, err);
}

/* Opens the connection of a new recording and sends the hello and the file
 * header. Returns 0 or an errno value (what names the step). */
static int rh_sq_connect(const uint8_t *hdr, const char **what)
{
    rh_sq_disconnect();
    rh_sq_sent = 0;
    *what = "cannot connect";
    int fd = (int)rh_sys_socket(rh_stream_addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return errno;
    rh_sq_sock = fd;
    /* a collector that stops reading cannot hold the sender forever */
    struct timeval tv = {(time_t)rh_cfg.stream_timeout, 0};
    rh_sys_setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    rh_sys_setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    while (rh_sys_connect(fd, &rh_stream_addr, rh_stream_addrlen) != 0) {
        if (errno != EINTR)
            return errno == EINPROGRESS ? ETIMEDOUT : errno;
    }
    *what = "cannot send";
    uint8_t hello[RIP_STREAM_HELLO_SIZE] = {0};
    memcpy(hello, RIP_STREAM_MAGIC, 8);
    uint32_t v = RIP_STREAM_WIRE_VERSION;
    memcpy(hello + 8, &v, 4);
    int err = rh_sq_send(hello, sizeof hello);
    return err ? err : rh_sq_send(hdr, RIP_HEADER_SIZE);
}

/* 1 when the collector has hung up or sent anything (it sends nothing before
 * the end): the connection is gone. */
static int rh_sq_peer_gone(void)
{
    struct pollfd p = {rh_sq_sock, POLLIN | POLLRDHUP, 0};
    struct timespec zero = {0, 0};
    long r = rh_sys_ppoll(&p, 1, &zero);
    return r > 0 && p.revents;
}

/* Ends the connection: half-close, then the collector's confirmation of every
 * byte (FORMAT.md). Returns 0 or an errno value. */
static int rh_sq_finish(const char **what)
{
    *what = "the collector did not confirm the end of the stream";
    if (rh_sys_shutdown(rh_sq_sock, SHUT_WR) != 0)
        return errno;
    uint8_t ack[RIP_STREAM_ACK_SIZE];
    size_t got = 0;
    uint64_t deadline = rh_mono_ns() + (uint64_t)rh_cfg.stream_timeout * 1000000000ull;
    while (got < sizeof ack) {
        uint64_t now = rh_mono_ns();
        if (now >= deadline)
            return ETIMEDOUT;
        uint64_t left = deadline - now;
        struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
        struct pollfd p = {rh_sq_sock, POLLIN, 0};
        long r = rh_sys_ppoll(&p, 1, &ts);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? errno : ETIMEDOUT;
        ssize_t n =
            rh_sys_recv(rh_sq_sock, ack + got, sizeof ack - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : ECONNRESET;
        got += (size_t)n;
    }
    uint64_t n;
    memcpy(&n, ack + 8, 8);
    if (memcmp(ack, RIP_STREAM_ACK_MAGIC, 8) != 0 || n != rh_sq_sent)
        return EPROTO;
    rh_sq_disconnect();
    return 0;
}

static void rh_sq_handle(const struct rh_sq_item *it);

/* Pops and handles the item at the head if it was queued before position
 * `upto` (any item when all is set). Returns 1 when one was handled. */
static int rh_sq_pop(uint32_t upto, int all)
{
    rh_spin_lock(&rh_sq.lock);
    /* !all (a partial copy waiting behind the queue): sealed chunks only. A
     * recording's END would end the connection under the waiting copy, and a
     * HDR start the next one; the sender's loop takes those after the copy */
    if (rh_sq.head == rh_sq.tail || (!all && (int32_t)(upto - rh_sq.head) <= 0) ||
        (!all && rh_sq.ring[rh_sq.head % rh_sq.cap].kind != RH_SQ_CHUNK)) {
        rh_spin_unlock(&rh_sq.lock);
        return 0;
    }
    struct rh_sq_item it = rh_sq.ring[rh_sq.head++ % rh_sq.cap];
    rh_sq.bytes -= it.acct;
    rh_spin_unlock(&rh_sq.lock);
    rh_sq_handle(&it);
    if (it.map)
        rh_sys_munmap(it.map, it.map_size);
    return 1;
}

/* Sends what each open chunk of the connection's recording gained since the
 * last time, as partial chunks (FORMAT.md "Streaming"): a copy of its header
 * with RIP_CHUNK_F_PART set, `reserved` the payload offset of the first byte
 * sent and `used` the end, then those bytes. The copy is taken under the
 * queue's lock, so the chunk stays mapped (rh_stream_push forgets it first).
 * drain: send the items queued before each copy first (a slot's earlier,
 * sealed chunks precede its open one); at the end of a recording, where all
 * of them were sent, 0. */
static void rh_sq_partials(int drain)
{
    if (rh_sq_sock < 0)
        return;
    if (!rh_sq_part) {
        void *m = rh_sys_mmap(NULL, RIP_CHUNK_HDR_SIZE + RH_SQ_PART_MAX, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return; /* sealed chunks still go */
        rh_sq_part = m;
    }
    uint32_t epoch = rh_sq_conn_epoch;
    uint32_t hi = __atomic_load_n(&rh_sq.open_hi, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < hi && i < RH_SQ_OPEN_CAP; i++) {
        if (!__atomic_load_n(&rh_sq.open[i].h, __ATOMIC_RELAXED))
            continue;
        uint32_t from, to, upto;
        for (;;) {
            rh_spin_lock(&rh_sq.lock);
            struct rh_sq_open *e = &rh_sq.open[i];
            struct rip_chunk_header *h = e->h;
            uint32_t used = h ? __atomic_load_n(&h->used, __ATOMIC_ACQUIRE) : 0;
            if (!h || e->epoch != epoch || rh_sq.failed || used > h->capacity || used <= e->sent) {
                rh_spin_unlock(&rh_sq.lock);
                break;
            }
            from = e->sent;
            to = used - from > RH_SQ_PART_MAX ? from + RH_SQ_PART_MAX : used;
            memcpy(rh_sq_part, h, RIP_CHUNK_HDR_SIZE);
            memcpy(rh_sq_part + RIP_CHUNK_HDR_SIZE, (uint8_t *)h + RIP_CHUNK_HDR_SIZE + from,
                   to - from);
            e->sent = to;
            upto = rh_sq.tail;
            rh_spin_unlock(&rh_sq.lock);
            while (drain && rh_sq_pop(upto, 0))
                ;
            if (rh_sq_sock < 0 || rh_sq_conn_epoch != epoch)
                return; /* the connection ended while the queue went out */
            struct rip_chunk_header *c = (struct rip_chunk_header *)rh_sq_part;
            /* open as far as the collector knows; a pair of this moment (the
             * writer may be refreshing its own) */
            c->flags = (uint8_t)((c->flags & ~RIP_CHUNK_F_SEALED) | RIP_CHUNK_F_PART);
            c->crc = 0;
            c->used = to;
            c->reserved = from;
            rh_calib_pair(&c->calib_tick, &c->calib_ns);
            int err = rh_sq_send(rh_sq_part, RIP_CHUNK_HDR_SIZE + (size_t)(to - from));
            if (err) {
                rh_sq_fail(epoch, "cannot send", err);
                return;
            }
        }
    }
}

/* Handles one popped item. Runs without any lock. */
static void rh_sq_handle(const struct rh_sq_item *it)
{
    const char *what = "cannot send";
    int err = 0;
    switch (it->kind) {
    case RH_SQ_HDR:
        err = rh_sq_connect(it->map, &what);
        if (!err)
            rh_sq_conn_epoch = it->epoch;
        break;
    case RH_SQ_CHUNK:
        if (rh_sq_sock < 0)
            return;
        if (rh_sq_peer_gone()) {
            what = "the collector went away";
            err = 0;
            rh_sq_fail(it->epoch, what, 0);
            return;
        }
        err = rh_sq_send(it->map, it->send_len);
        break;
    case RH_SQ_END:
        if (rh_sq_sock < 0)
            return;
        if (rh_sq_peer_gone()) {
            rh_sq_fail(it->epoch, "the collector went away", 0);
            return;
        }
        rh_sq_partials(0); /* the chunks of threads still running, as a file keeps them */
        if (rh_sq_sock < 0)
            return;
        err = rh_sq_finish(&what);
        if (!err) {
            rh_spin_lock(&rh_sq.lock);
            rh_sq.ended = it->epoch;
            __atomic_add_fetch(&rh_sq.done, 1, __ATOMIC_RELEASE);
            rh_spin_unlock(&rh_sq.lock);
            rh_sys_futex_wake(&rh_sq.done);
        }
        break;
    }
    if (err)
        rh_sq_fail(it->epoch, what, err);
}

/* Gives the thread a descriptor table of its own, empty. Returns 0 or errno. */
static int rh_sq_private_fds(void)
{
    if (rh_sys_unshare_files() != 0)
        return errno;
    if (rh_sys_close_range(0u, ~0u, 0u) != 0) {
        struct rlimit rl;
        unsigned max = 65536;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < max)
            max = (unsigned)rl.rlim_cur;
        for (unsigned fd = 0; fd < max; fd++)
            rh_sys_close((int)fd);
    }
    return 0;
}

static void *rh_sq_main(void *arg)
{
    (void)arg;
    rh_guard_enter(); /* whatever it calls passes through unrecorded */
    int old;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
    int err = rh_sq_private_fds();
    if (err) {
        rh_sq_fail(__atomic_load_n(&rh_sq.epoch, __ATOMIC_ACQUIRE),
                   "cannot give the sender a descriptor table of its own (unshare)", err);
        __atomic_store_n(&rh_sq.started, 2, __ATOMIC_RELEASE);
        return NULL; /* later recordings fail at rh_stream_start */
    }
    uint64_t next_flush = rh_mono_ns() + RH_SQ_FLUSH_NS;
    for (;;) {
        rh_spin_lock(&rh_sq.lock);
        uint32_t seen = __atomic_load_n(&rh_sq.wake, __ATOMIC_ACQUIRE);
        int empty = rh_sq.head == rh_sq.tail;
        rh_spin_unlock(&rh_sq.lock);
        if (!empty)
            rh_sq_pop(0, 1);
        uint64_t now = rh_mono_ns();
        if (now >= next_flush) {
            /* busy or idle, what open chunks hold goes out every interval */
            rh_sq_partials(1);
            next_flush = now + RH_SQ_FLUSH_NS;
            continue;
        }
        if (empty)
            rh_sys_futex_wait(&rh_sq.wake, seen, (unsigned)((next_flush - now) / 1000000u) + 1);
    }
    return NULL;
}

int rh_stream_start(void)
{
    if (!rh_stream_on())
        return 0;
    int expected = 0;
    if (!__atomic_compare_exchange_n(&rh_sq.started, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        if (expected == 2)
            rh_sq_fail_common(rh_sq.epoch, "no sender thread (it could not start)", 0);
        return expected == 1 ? 0 : -1;
    }
    /* The thread starts with every signal blocked: the program's handlers
     * never run on it (they would see the sender's descriptor table). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 256 * 1024); /* touched: a few pages */
    pthread_t t;
    int err = rh_sys_thread_create(&t, &at, rh_sq_main, NULL);
    if (err == EINVAL) { /* a program whose static TLS does not fit in that */
        pthread_attr_setstacksize(&at, 0);
        pthread_attr_destroy(&at);
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        err = rh_sys_thread_create(&t, &at, rh_sq_main, NULL);
    }
    pthread_attr_destroy(&at);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        __atomic_store_n(&rh_sq.started, 2, __ATOMIC_RELEASE);
        rh_sq_fail_common(rh_sq.epoch, "cannot start the sender thread", err);
        return -1;
    }
    return 0;
}

/* ---- control work, exit, fork --------------------------------------------- */

int rh_stream_ctl(void)
{
    if (__atomic_load_n(&rh_sq.warn_pending, __ATOMIC_ACQUIRE) == 1 &&
        __atomic_compare_exchange_n(&rh_sq.warn_pending, &(int){1}, 2, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        rh_warn("%s", rh_sq.msg);
        return 1;
    }
    return 0;
}

void rh_stream_closed_locked(uint64_t events)
{
    rh_spin_lock(&rh_sq.lock);
    rh_sq.close_events = events;
    rh_sq.close_epoch = rh_sq.epoch;
    rh_spin_unlock(&rh_sq.lock);
}

int rh_stream_exit(void)
{
    if (!rh_stream_on())
        return 0;
    rh_spin_lock(&rh_sq.lock);
    uint32_t epoch = rh_sq.close_epoch;
    rh_sq.close_epoch = 0; /* reported once */
    int wait = epoch && epoch == rh_sq.epoch && !rh_sq.failed;
    rh_spin_unlock(&rh_sq.lock);
    if (wait && __atomic_load_n(&rh_sq.started, __ATOMIC_ACQUIRE) == 1) {
        uint64_t deadline = rh_mono_ns() + (uint64_t)rh_cfg.stream_timeout * 1000000000ull;
        for (;;) {
            uint32_t seen = __atomic_load_n(&rh_sq.done, __ATOMIC_ACQUIRE);
            if (__atomic_load_n(&rh_sq.ended, __ATOMIC_ACQUIRE) == epoch)
                break;
            uint64_t now = rh_mono_ns();
            if (now >= deadline) {
                rh_sq_warn_later("stream to collector %s: not finished after %u s at exit "
                                 "(RHEAPER_STREAM_TIMEOUT); the rest of the profile is lost",
                                 rh_cfg.stream, rh_cfg.stream_timeout);
                break;
            }
            uint64_t left = (deadline - now) / 1000000u + 1;
            rh_sys_futex_wait(&rh_sq.done, seen, left > 100 ? 100 : (unsigned)left);
        }
        rh_spin_lock(&rh_sq.lock);
        int ok = rh_sq.ended == epoch && !(rh_sq.epoch == epoch && rh_sq.failed);
        rh_spin_unlock(&rh_sq.lock);
        if (ok)
            rh_notice("streamed %llu events to collector %s",
                      (unsigned long long)rh_sq.close_events, rh_cfg.stream);
    }
    return rh_stream_ctl();
}

void rh_stream_fork(int phase)
{
    if (phase == 0) {
        rh_spin_lock(&rh_sq.lock);
        return;
    }
    if (phase == 1) {
        rh_spin_unlock(&rh_sq.lock);
        return;
    }
    /* child: the parent sends its own queue; the child has no sender and no
     * socket (the sender's table was never the forking thread's) */
    if (rh_sq.ring)
        rh_sq_clear_locked();
    rh_sq.epoch = 0;
    rh_sq.cut = rh_sq.failed = 0;
    rh_sq.ended = 0;
    rh_sq.close_epoch = 0;
    rh_sq.started = 0;
    rh_sq.warn_pending = 0;
    rh_sq_sock = -1;
    rh_sq.lock = 0;
}
