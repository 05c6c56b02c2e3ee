/* rh_stack.c: frame-pointer stack walks and the global stack table.
 *
 * Every event names a stack id; each distinct (kind, frames) stack is defined
 * once per file by a STACK record. The walk follows the saved frame pointers
 * from the shim's frame and hashes as it goes, so a known stack costs one walk,
 * one hash and one table probe; only a new stack is walked a second time, to
 * encode its frames straight into the writer's chunk.
 *
 * Safety: the walk never faults. It reads a frame only when the frame pointer is
 * 8-aligned, inside this thread's stack [lo, hi) with 16 bytes to spare, and
 * strictly above the previous one; a return address <= 4096 ends it. A walk that
 * starts outside the thread's stack (sigaltstack, coroutines) keeps frame 0 only.
 *
 * Identity: two stacks with the same 64-bit hash are treated as the same stack.
 * With a good mix the chance of a collision among a million stacks is ~3e-8;
 * the cost of one is a wrong (but well-formed) stack for some events.
 *
 * The table is lock-free open addressing: a new hash is claimed with one CAS on
 * the entry's hash, then its id (from an atomic counter, from 1) is published
 * with a release store. A reader that finds the hash with id 0 spins briefly.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "rh_runtime.h"

#define RH_STACK_TABLE_BITS 21

extern void *__libc_stack_end;

RH_HIDDEN __thread uintptr_t rh_tls_stack_lo __attribute__((tls_model("initial-exec")));
RH_HIDDEN __thread uintptr_t rh_tls_stack_hi __attribute__((tls_model("initial-exec")));

/* The table's size in bits. Every mapping counts against RLIMIT_AS, even a
 * MAP_NORESERVE or PROT_NONE one, so under a finite limit the table takes at
 * most 1/64 of it (200 MiB: 2^17 slots, 2 MiB); a full table costs new stacks
 * (counted lost, one warning), never the program's own memory. */
static unsigned rh_stack_table_bits(void)
{
    unsigned bits = RH_STACK_TABLE_BITS;
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        uint64_t budget = (uint64_t)rl.rlim_cur / 64;
        while (bits > 12 && ((uint64_t)sizeof(struct rh_stack_entry) << bits) > budget)
            bits--;
    }
    return bits;
}

struct rh_stack_table *rh_stack_table_new(void)
{
    size_t n = (size_t)1 << rh_stack_table_bits();
    size_t bytes = sizeof(struct rh_stack_table) + n * sizeof(struct rh_stack_entry);
    bytes = (bytes + 4095) & ~(size_t)4095;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct rh_stack_table *t = m;
    t->entries = (struct rh_stack_entry *)((char *)m + 64);
    t->mask = n - 1;
    t->limit = n / 4 * 3;
    t->count = 0;
    t->next_id = 1;
    t->warned = 0;
    return t;
}

/* Computes the calling thread's stack bounds. The main thread's stack ends at
 * __libc_stack_end (no allocation); other threads ask pthread_getattr_np, which
 * allocates: the caller has the guard set, so those calls pass untracked. */
void rh_stack_bounds_compute(void)
{
    int e = errno; /* rh_record_* keep errno; getrlimit and pthread_* may not */
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    uintptr_t main_top = (uintptr_t)__libc_stack_end;
    uintptr_t lim = 8u << 20;
    struct rlimit rl;
    if (getrlimit(RLIMIT_STACK, &rl) == 0)
        lim = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 30) ? (1u << 30)
                                                                       : (uintptr_t)rl.rlim_cur;
    uintptr_t lo = 1, hi = 1; /* unknown: walks keep frame 0 only */
    if (main_top && here < main_top && main_top - here <= lim) {
        hi = main_top;
        lo = main_top - lim;
    } else {
        /* its allocations (and pthread_attr_destroy's free) pass through as
         * the runtime's own, not as a re-entry (RH_GUARD_LEAF counts those) */
        int g = rh_guard;
        rh_guard = RH_GUARD_CALL;
        rh_barrier();
        pthread_attr_t a;
        if (pthread_getattr_np(pthread_self(), &a) == 0) {
            void *addr;
            size_t size;
            if (pthread_attr_getstack(&a, &addr, &size) == 0 && here >= (uintptr_t)addr &&
                here < (uintptr_t)addr + size) {
                lo = (uintptr_t)addr;
                hi = (uintptr_t)addr + size;
            }
            pthread_attr_destroy(&a);
        }
        rh_barrier();
        rh_guard = g;
    }
    rh_tls_stack_lo = lo;
    rh_tls_stack_hi = hi;
    errno = e;
}

void rh_stack_bounds(uintptr_t *lo, uintptr_t *hi)
{
    if (rh_unlikely(!rh_tls_stack_hi))
        rh_stack_bounds_compute();
    *lo = rh_tls_stack_lo;
    *hi = rh_tls_stack_hi;
}

/* The next frame record above cur, or 0 when the walk must stop: next must be
 * 8-aligned and in (cur, hi - 16], and its return address above 4096. The
 * range test is one unsigned compare: next - cur - 1 < hi - 16 - cur. These
 * are the rules of rh_stack_walk_inline's loop (rh_runtime.h): change both
 * together, or an encoded stack would differ from its walk. */
static inline uintptr_t rh_next_frame(uintptr_t cur, uintptr_t hi)
{
    uintptr_t next = ((const uintptr_t *)cur)[0];
    if ((next & 7u) || next - cur - 1 >= hi - 16 - cur)
        return 0;
    if (((const uintptr_t *)next)[1] <= 4096u)
        return 0;
    return next;
}

/* The CFI prefix of a walk (contract in rh_runtime.h). */
void rh_stack_walk_cfi(uintptr_t cur, uintptr_t lo, uintptr_t hi, unsigned max, uint64_t h,
                       struct rh_walk_cfi *o)
{
    uintptr_t pre[RH_UNWIND_MAX_PREFIX], resume;
    uint32_t cut = 0;
    int e = errno; /* a rule-cache miss may look at modules */
    uint32_t np = rh_unwind_prefix(cur, lo, hi, max, pre, &resume, &cut);
    errno = e;
    *o = (struct rh_walk_cfi){cur, h, 1, 0, 1};
    if (!np)
        return; /* frame 0 keeps a frame record after all: the plain walk */
    for (uint32_t i = 1; i < np; i++)
        h = rh_walk_step(h, pre[i]);
    o->n = np;
    o->cut = cut || (resume && np >= max);
    o->h = h;
    if (!resume || o->cut) {
        o->go = 0;
        return;
    }
    o->h = rh_walk_step(h, ((const uintptr_t *)resume)[1]);
    o->n = np + 1;
    o->cur = resume;
}

void rh_stack_walk(void *fp, unsigned kind, unsigned max, struct rh_walk *w)
{
    rh_stack_walk_inline(fp, kind, max, w);
}

uint8_t *rh_stack_encode(void *fp, uint32_t nframes, uint8_t *p)
{
    uintptr_t lo, hi;
    rh_stack_bounds(&lo, &hi);
    uintptr_t cur = (uintptr_t)fp;
    uint64_t prev = 0;
    uint32_t i = 0;
    /* The same CFI prefix as rh_stack_walk (deterministic for one stack). */
    uintptr_t pre[RH_UNWIND_MAX_PREFIX], resume = 0;
    uint32_t cut, np = 0;
    if (cur >= lo && hi >= 16 && cur <= hi - 16)
        np = rh_unwind_prefix(cur, lo, hi, nframes, pre, &resume, &cut);
    if (rh_unlikely(np)) {
        for (; i < np && i < nframes; i++) {
            p = rip_put_varint(p, rip_zigzag((int64_t)(pre[i] - prev)));
            prev = pre[i];
        }
        if (i >= nframes || !resume)
            return p;
        cur = resume; /* frame i is cur[1]; the loop below reads it first */
    }
    for (uint32_t first = i; i < nframes; i++) {
        if (i != first) {
            uintptr_t next = rh_next_frame(cur, hi);
            rh_assert_internal(next != 0);
            if (!next)
                break;
            cur = next;
        }
        uint64_t ret = ((const uintptr_t *)cur)[1];
        p = rip_put_varint(p, rip_zigzag((int64_t)(ret - prev)));
        prev = ret;
    }
    return p;
}

uint32_t rh_stack_lookup(struct rh_stack_table *t, uint64_t hash, int *is_new)
{
    uint64_t i = hash & t->mask;
    *is_new = 0;
    for (;;) {
        struct rh_stack_entry *e = &t->entries[i];
        uint64_t h = __atomic_load_n(&e->hash, __ATOMIC_ACQUIRE);
        if (h == hash) {
            uint32_t id;
            unsigned spins = 0;
            while (!(id = __atomic_load_n(&e->id, __ATOMIC_ACQUIRE))) {
                if (++spins > 100)
                    sched_yield();
                else
                    rh_cpu_relax();
            }
            return id;
        }
        if (h == 0) {
            if (__atomic_load_n(&t->count, __ATOMIC_RELAXED) >= t->limit) {
                if (!__atomic_exchange_n(&t->warned, 1, __ATOMIC_RELAXED))
                    rh_warn("stack table full (%llu stacks); new stacks are recorded as id 0",
                            (unsigned long long)t->limit);
                return 0;
            }
            uint64_t expected = 0;
            if (__atomic_compare_exchange_n(&e->hash, &expected, hash, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                __atomic_fetch_add(&t->count, 1, __ATOMIC_RELAXED);
                uint32_t id = __atomic_fetch_add(&t->next_id, 1, __ATOMIC_RELAXED);
                __atomic_store_n(&e->id, id, __ATOMIC_RELEASE);
                *is_new = 1;
                return id;
            }
            if (expected == hash)
                continue; /* someone inserted our hash here: read its id */
        }
        i = (i + 1) & t->mask;
    }
}
