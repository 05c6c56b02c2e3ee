/* rh_memsample.c: samples of the process's memory beside the heap.
 *
 * While a recording runs, the runtime reads the process's resident memory
 * every RHEAPER_RSS_MS milliseconds (default 10, 0 turns it off) and once at
 * the end, and writes each reading as one timed EXT MEMSAMPLE record
 * (FORMAT.md "Memory samples"): RSS with its anonymous and
 * file-backed parts, and, when the allocator can say it, the allocator's own
 * totals (glibc's mallinfo2, jemalloc's stats through mallctl).
 *
 * No timer wakes a thread for it. The interval is driven by the events:
 * where a thread's writer reaches its fast limit (every 2 KiB of its
 * records, rh_writer_due) and at every other slow entry of the record path,
 * the event's time is compared with one shared deadline (rh_mem_next,
 * RH_MEM_CHECK in rh_recording.h); the fast path itself pays nothing for it.
 * The first check at or past the deadline moves the deadline
 * on with a compare-and-swap (so one thread takes each sample) and takes the
 * sample on its own thread, into its own chunk, after its event is complete.
 * A program that records no event for a while, or only a few, is sampled at
 * its next check and at the end; under sampling (RHEAPER_SAMPLE_BYTES) only recorded events
 * check the deadline, so samples follow the recorded events.
 *
 * Where a sample is taken matters: mallinfo2 takes each arena's mutex in turn
 * (glibc 2.36 __libc_mallinfo2: __libc_lock_lock(ar_ptr->mutex) around
 * int_mallinfo, which walks every fastbin and bin), so it may only run where
 * the calling thread holds no allocator lock. The deadline is checked on the
 * recording path of the malloc family's wrappers, which runs before the real
 * free or after the real allocation has returned: the calling thread holds
 * none of the allocator's locks, and no lock of the runtime either (the
 * shared stream's path, which runs under rh_shared_lock, never samples).
 * Signal handlers never sample (the CPU sampler's handler writes its own
 * record, never this one). The final sample is read by rheaper_disable and
 * the exit flush before they take the runtime's locks.
 *
 * Reading RSS allocates nothing and holds no file descriptor between
 * samples: open, read and close of /proc/self/statm by raw system calls
 * (rh_open_proc and rh_sys_read, none a cancellation point); statm's resident and
 * shared pages give RSS and its file-backed part (RssFile + RssShmem), the
 * rest is anonymous. mallinfo2's walk costs time in proportion to the free
 * chunks in the bins, so it is timed, and the allocator's figures are read
 * again only when the last read cost under 1 % of the time since: on a heap
 * with very many free chunks they are read less often than RSS.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <string.h>
#include <unistd.h>

#include "rh_recording.h"

/* glibc 2.33's mallinfo2 and jemalloc's mallctl, referenced weakly: a weak
 * reference pulls no member out of libc.a (a static program with an
 * allocator of its own would otherwise get libc's malloc.o and two
 * definitions of malloc), and a program without jemalloc has no mallctl. */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
#define RH_HAVE_MALLINFO2 1
extern struct mallinfo2 mallinfo2(void) __attribute__((weak));
#else
#define RH_HAVE_MALLINFO2 0 /* musl: no allocator figures but jemalloc's */
#endif
extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
    __attribute__((weak));

RH_HIDDEN uint64_t rh_mem_next = UINT64_MAX; /* event-time deadline; MAX: off */
static uint64_t rh_mem_period;               /* event-time units between samples */
static uint64_t rh_mem_alloc_next;           /* the allocator's figures' own deadline */
static uint64_t rh_mem_page = 4096;
/* rh_cfg.rss_ms of the current file, taken by rh_mem_start: rheaper_enable
 * replaces rh_cfg while threads of the last recording may still be taking a
 * sample. */
static unsigned rh_mem_ms;
static int rh_mem_source = -1; /* RH_MEM_SRC_*, -1 until the first sample decides */

/* The values of one sample, in record order after flags and interval. */
struct rh_mem_fig {
    uint64_t rss, anon, file;
    uint64_t a_system, a_in_use, a_free, a_mmapped, a_releasable;
};

/* Reads /proc/self/statm into f (bytes). Returns 0, or -1 when it cannot be
 * read (then f's RSS figures stay 0). The fd lives only inside this call. */
static int rh_mem_statm(struct rh_mem_fig *f)
{
    int fd = rh_open_proc("/proc/self/statm", O_RDONLY);
    if (fd < 0)
        return -1;
    char buf[160];
    ssize_t n = rh_sys_read(fd, buf, sizeof buf - 1);
    rh_sys_close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    uint64_t v[3] = {0, 0, 0};
    const char *p = buf;
    for (int i = 0; i < 3; i++) {
        while (*p == ' ')
            p++;
        if (*p < '0' || *p > '9')
            return -1;
        while (*p >= '0' && *p <= '9')
            v[i] = v[i] * 10 + (uint64_t)(*p++ - '0');
    }
    /* size, resident, shared (file-backed and shmem resident pages) */
    uint64_t page = __atomic_load_n(&rh_mem_page, __ATOMIC_RELAXED);
    f->rss = v[1] * page;
    f->file = (v[2] < v[1] ? v[2] : v[1]) * page;
    f->anon = f->rss - f->file;
    return 0;
}

/* jemalloc's totals: stats are refreshed by writing "epoch". Returns 0 or -1. */
static int rh_mem_jemalloc(struct rh_mem_fig *f)
{
    uint64_t epoch = 1;
    size_t len = sizeof epoch;
    if (mallctl("epoch", &epoch, &len, &epoch, sizeof epoch) != 0)
        return -1;
    size_t allocated = 0, resident = 0, mapped = 0, retained = 0;
    len = sizeof(size_t);
    if (mallctl("stats.allocated", &allocated, &len, NULL, 0) != 0 ||
        mallctl("stats.resident", &resident, &len, NULL, 0) != 0 ||
        mallctl("stats.mapped", &mapped, &len, NULL, 0) != 0)
        return -1;
    mallctl("stats.retained", &retained, &len, NULL, 0);
    f->a_system = resident;
    f->a_in_use = allocated;
    f->a_free = resident > allocated ? resident - allocated : 0;
    f->a_mmapped = mapped;
    f->a_releasable = retained;
    return 0;
}

/* The allocator's figures into f; returns the source (RIP_MEM_SRC_*). */
static int rh_mem_allocator(struct rh_mem_fig *f)
{
    /* Two threads may sample at once (a sample still being read when the
     * next deadline passes): the source is probed by either and stored
     * atomically, both find the same answer. */
    int src = __atomic_load_n(&rh_mem_source, __ATOMIC_RELAXED);
    if (src < 0) {
        /* jemalloc when the program has it; else glibc's, when its arenas hold
         * anything at all (a program whose malloc is not glibc's, linked
         * dynamically, still finds libc.so's mallinfo2 with empty arenas) */
        if (mallctl && rh_mem_jemalloc(f) == 0) {
            __atomic_store_n(&rh_mem_source, RIP_MEM_SRC_JEMALLOC, __ATOMIC_RELAXED);
            return RIP_MEM_SRC_JEMALLOC;
        }
        src = RIP_MEM_SRC_NONE;
#if RH_HAVE_MALLINFO2
        if (mallinfo2) {
            struct mallinfo2 mi = mallinfo2();
            if (mi.arena || mi.hblkhd)
                src = RIP_MEM_SRC_GLIBC;
        }
#endif
        __atomic_store_n(&rh_mem_source, src, __ATOMIC_RELAXED);
    }
    if (src == RIP_MEM_SRC_JEMALLOC)
        return rh_mem_jemalloc(f) == 0 ? RIP_MEM_SRC_JEMALLOC : RIP_MEM_SRC_NONE;
#if RH_HAVE_MALLINFO2
    if (src == RIP_MEM_SRC_GLIBC) {
        struct mallinfo2 mi = mallinfo2();
        f->a_system = mi.arena;
        f->a_in_use = mi.uordblks;
        f->a_free = mi.fordblks;
        f->a_mmapped = mi.hblkhd;
        f->a_releasable = mi.keepcost;
        return RIP_MEM_SRC_GLIBC;
    }
#endif
    return RIP_MEM_SRC_NONE;
}

/* Reads one sample and encodes its EXT MEMSAMPLE body into body (at least
 * RH_MEM_BODY bytes). t: the sample's event time. The allocator's figures
 * are read when final, or when their own deadline has come (the last read
 * took under 1 % of the time since). Returns the body's length. */
#define RH_MEM_BODY (10 * 10)
static size_t rh_mem_body(uint8_t *body, uint64_t t, int final)
{
    struct rh_mem_fig f;
    memset(&f, 0, sizeof f);
    unsigned flags = final ? RIP_MEM_F_FINAL : 0;
    if (rh_mem_statm(&f) != 0)
        flags |= RIP_MEM_F_NO_RSS;
    int src = RIP_MEM_SRC_NONE;
    if (final || t >= __atomic_load_n(&rh_mem_alloc_next, __ATOMIC_RELAXED)) {
        uint64_t t0 = rh_now();
        src = rh_mem_allocator(&f);
        uint64_t cost = (rh_now() - t0) >> rh_clock_shift;
        uint64_t period = __atomic_load_n(&rh_mem_period, __ATOMIC_RELAXED);
        uint64_t wait = cost * 100 > period ? cost * 100 : period;
        __atomic_store_n(&rh_mem_alloc_next, t + wait, __ATOMIC_RELAXED);
    }
    flags |= (unsigned)src << RIP_MEM_SRC_SHIFT;
    uint8_t *q = rip_put_varint(body, flags);
    q = rip_put_varint(q, __atomic_load_n(&rh_mem_ms, __ATOMIC_RELAXED));
    q = rip_put_varint(q, f.rss);
    q = rip_put_varint(q, f.anon);
    q = rip_put_varint(q, f.file);
    if (src != RIP_MEM_SRC_NONE) {
        q = rip_put_varint(q, f.a_system);
        q = rip_put_varint(q, f.a_in_use);
        q = rip_put_varint(q, f.a_free);
        q = rip_put_varint(q, f.a_mmapped);
        q = rip_put_varint(q, f.a_releasable);
    }
    return (size_t)(q - body);
}

void rh_mem_start(void)
{
    long pg = sysconf(_SC_PAGESIZE); /* reads the auxiliary vector, no allocation */
    if (pg > 0)
        __atomic_store_n(&rh_mem_page, (uint64_t)pg, __ATOMIC_RELAXED);
    __atomic_store_n(&rh_mem_ms, rh_cfg.rss_ms, __ATOMIC_RELAXED);
    if (!rh_cfg.rss_ms) {
        __atomic_store_n(&rh_mem_next, UINT64_MAX, __ATOMIC_RELAXED);
        return;
    }
    uint64_t tps = rh_ticks_per_sec();
    if (!tps)
        tps = 1000000000u;
    uint64_t period = rh_arch_muldiv64(tps, rh_cfg.rss_ms, 1000u) >> rh_clock_shift;
    __atomic_store_n(&rh_mem_period, period ? period : 1, __ATOMIC_RELAXED);
    __atomic_store_n(&rh_mem_alloc_next, 0, __ATOMIC_RELAXED);
    /* the first recorded event takes the first sample */
    __atomic_store_n(&rh_mem_next, 0, __ATOMIC_RELEASE);
}

void rh_mem_stop(void)
{
    __atomic_store_n(&rh_mem_next, UINT64_MAX, __ATOMIC_RELEASE);
}

int rh_mem_enabled(void)
{
    return rh_cfg.rss_ms != 0;
}

void rh_mem_due(struct rh_writer *w, uint64_t t)
{
    uint64_t next = __atomic_load_n(&rh_mem_next, __ATOMIC_RELAXED);
    if (t < next || !__atomic_compare_exchange_n(
                        &rh_mem_next, &next, t + __atomic_load_n(&rh_mem_period, __ATOMIC_RELAXED),
                        0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return; /* another thread took this sample */
    int e = errno;
    uint8_t body[RH_MEM_BODY];
    size_t len = rh_mem_body(body, t, 0);
    rh_emit_ext_raw(w, RIP_EXT_MEMSAMPLE, body, len, t);
    errno = e;
}

void rh_mem_final(void)
{
    if (!__atomic_load_n(&rh_mem_ms, __ATOMIC_RELAXED))
        return;
    if (__atomic_exchange_n(&rh_mem_next, UINT64_MAX, __ATOMIC_ACQ_REL) == UINT64_MAX)
        return; /* not sampling this file (off, or the final sample is taken) */
    /* Only into a stream the calling thread already writes: a thread that
     * recorded nothing (a main thread that only joins its workers) would
     * otherwise open a chunk, or switch the shared stream, for it alone;
     * then the last periodic sample is the end. */
    if (!rh_thread_recording())
        return;
    int e = errno;
    uint64_t now = rh_now();
    uint8_t body[RH_MEM_BODY];
    size_t len = rh_mem_body(body, now >> rh_clock_shift, 1);
    rh_record_ext_raw(RIP_EXT_MEMSAMPLE, body, len, now);
    errno = e;
}
