/* rh_sample.c: sampled recording (RHEAPER_SAMPLE_RATE, RHEAPER_SAMPLE_BYTES).
 *
 * A sampled profile records a subset of the allocations; the converter weighs
 * each recorded block by the inverse of the probability it had of being
 * recorded (FORMAT.md "Version 3: sampling (issue 9)"), so sums of size times
 * weight estimate the true figures. Two modes:
 *   - rate r: each allocation is recorded with probability r (Bernoulli);
 *   - bytes N: each thread counts down an exponentially distributed number of
 *     bytes with mean N (a Poisson process over allocated bytes, as tcmalloc,
 *     Go and heapprofd do); a block is recorded when the countdown crosses it,
 *     so its probability is 1 - exp(-size/N): big blocks are always seen.
 * Randomness: a splitmix64 stream per thread, seeded from RHEAPER_SAMPLE_SEED
 * (or the clock) and the thread's sampling ordinal (the order in which threads
 * first reach the sampler), so a single-threaded run with a seed is
 * deterministic. No libc rand, no libm, no allocation.
 *
 * The frees of recorded blocks are recorded; the frees of the others cost no
 * event and are not unknown frees. That needs the set of live recorded
 * addresses: an open-addressing table (linear probing, backward-shift
 * deletion) in mmap'd memory. Lookups, made on every free, take no lock: a
 * sequence counter (a seqlock) tells them to retry while a writer moves
 * entries. Inserts and deletes (recorded blocks only) take a spin lock held
 * for a few memory operations, never across a call that can block or die.
 * The table starts at 4096 slots and doubles at half load, so its memory
 * follows the live recorded blocks, not the events; an outgrown table stays
 * mapped (a reader may still be probing it), so the total is at most twice the
 * current table. At RH_SS_MAX_BITS (2^23 live recorded blocks) it is full:
 * one warning line, and further blocks that the sampler picks are not recorded
 * (counted in the trailer's sample_dropped; estimates then undercount).
 * Pool client requests (tagged addresses) are never sampled: they are always
 * recorded, weight 1.
 */
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rh_runtime.h"

RH_HIDDEN int rh_sample_mode;
RH_HIDDEN __thread int64_t rh_tls_sample_left __attribute__((tls_model("initial-exec")));
static __thread uint64_t rh_tls_rng __attribute__((tls_model("initial-exec")));
static __thread int rh_tls_rng_ok __attribute__((tls_model("initial-exec")));

static uint64_t rh_sample_threshold; /* rate mode: take when next() < this */
static uint64_t rh_sample_mean;      /* bytes mode: N */
static uint64_t rh_sample_seed;
static uint32_t rh_sample_threads;   /* atomic: sampling ordinals handed out */

/* ---- the set of live recorded addresses -------------------------------- */

#define RH_SS_MIN_BITS 12u
#define RH_SS_MAX_BITS 24u
#define RH_SS_K 0x9e3779b97f4a7c15ull

struct rh_sset {
    uintptr_t *slots; /* 0 = empty */
    uint64_t mask;
    unsigned bits;
    uint64_t count;
};

static struct rh_sset rh_ss_tables[RH_SS_MAX_BITS + 1]; /* one per size, kept mapped */
static struct rh_sset *rh_ss_cur;                       /* atomic: the current table */
static uint32_t rh_ss_seq;                              /* atomic: odd while written */
static int rh_ss_lock;
static int rh_ss_full_warned;
static uint64_t rh_ss_peak;

static inline uint64_t rh_ss_home(const struct rh_sset *t, uintptr_t a)
{
    return ((uint64_t)a * RH_SS_K) >> (64 - t->bits);
}

/* Maps the table of 2^bits slots. NULL when mmap fails. Under rh_ss_lock. */
static struct rh_sset *rh_ss_map(unsigned bits)
{
    struct rh_sset *t = &rh_ss_tables[bits];
    if (!t->slots) {
        size_t bytes = ((size_t)1 << bits) * sizeof(uintptr_t);
        void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        t->slots = m;
        t->mask = ((uint64_t)1 << bits) - 1;
        t->bits = bits;
    }
    return t;
}

static void rh_ss_put(struct rh_sset *t, uintptr_t a)
{
    uint64_t i = rh_ss_home(t, a);
    while (t->slots[i])
        i = (i + 1) & t->mask;
    __atomic_store_n(&t->slots[i], a, __ATOMIC_RELAXED);
    t->count++;
}

static inline void rh_ss_write_begin(void)
{
    rh_spin_lock(&rh_ss_lock);
    __atomic_store_n(&rh_ss_seq, rh_ss_seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void rh_ss_write_end(void)
{
    __atomic_store_n(&rh_ss_seq, rh_ss_seq + 1, __ATOMIC_RELEASE);
    rh_spin_unlock(&rh_ss_lock);
}

/* Adds a. Returns 1, or 0 when the table is full (or cannot grow): the block
 * is then not recorded and counted. */
static int rh_ss_insert(uintptr_t a)
{
    int ok = 1;
    rh_ss_write_begin();
    struct rh_sset *t = rh_ss_cur;
    if (!t)
        t = rh_ss_map(RH_SS_MIN_BITS);
    if (t && t->count + 1 > (t->mask + 1) / 2) {
        struct rh_sset *n = t->bits < RH_SS_MAX_BITS ? rh_ss_map(t->bits + 1) : NULL;
        if (n) {
            memset(n->slots, 0, (n->mask + 1) * sizeof(uintptr_t));
            n->count = 0;
            for (uint64_t i = 0; i <= t->mask; i++)
                if (t->slots[i])
                    rh_ss_put(n, t->slots[i]);
        }
        t = n;
    }
    if (t) {
        __atomic_store_n(&rh_ss_cur, t, __ATOMIC_RELEASE);
        rh_ss_put(t, a);
        if (t->count > rh_ss_peak)
            rh_ss_peak = t->count;
    } else {
        ok = 0;
    }
    rh_ss_write_end();
    if (!ok) {
        __atomic_fetch_add(&rh_prof.sample_dropped, 1, __ATOMIC_RELAXED);
        if (!__atomic_exchange_n(&rh_ss_full_warned, 1, __ATOMIC_RELAXED))
            rh_warn("the set of live sampled blocks is full (%llu); further sampled blocks "
                    "are not recorded, so estimates undercount",
                    (unsigned long long)(1ull << (RH_SS_MAX_BITS - 1)));
    }
    return ok;
}

/* Removes one copy of a from t (under the lock): backward-shift deletion. */
static int rh_ss_remove_locked(struct rh_sset *t, uintptr_t a)
{
    uint64_t i = rh_ss_home(t, a);
    for (;;) {
        uintptr_t v = t->slots[i];
        if (!v)
            return 0;
        if (v == a)
            break;
        i = (i + 1) & t->mask;
    }
    uint64_t j = i;
    for (;;) {
        j = (j + 1) & t->mask;
        uintptr_t v = t->slots[j];
        if (!v)
            break;
        uint64_t k = rh_ss_home(t, v);
        /* v may move to the hole at i unless its home lies cyclically in (i, j] */
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            __atomic_store_n(&t->slots[i], v, __ATOMIC_RELAXED);
            i = j;
        }
    }
    __atomic_store_n(&t->slots[i], 0, __ATOMIC_RELAXED);
    t->count--;
    return 1;
}

/* 1 when a is in the set. Lock-free: retries while a writer is active. A hit
 * is certain even if torn (a writer only moves entries), a miss only with an
 * unchanged, even sequence. */
static int rh_ss_contains(uintptr_t a)
{
    unsigned spins = 0;
    for (;;) {
        uint32_t s1 = __atomic_load_n(&rh_ss_seq, __ATOMIC_ACQUIRE);
        if (!(s1 & 1)) {
            struct rh_sset *t = __atomic_load_n(&rh_ss_cur, __ATOMIC_ACQUIRE);
            if (!t)
                return 0;
            uint64_t i = rh_ss_home(t, a);
            for (uint64_t n = 0; n <= t->mask; n++) {
                uintptr_t v = __atomic_load_n(&t->slots[i], __ATOMIC_RELAXED);
                if (v == a)
                    return 1;
                if (!v)
                    break;
                i = (i + 1) & t->mask;
            }
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (__atomic_load_n(&rh_ss_seq, __ATOMIC_RELAXED) == s1)
                return 0;
        }
        if (++spins > 200)
            sched_yield();
        else
            rh_cpu_relax();
    }
}

/* Takes a out of the set. Returns 1 when it was there (a recorded block). */
static int rh_ss_take(uintptr_t a)
{
    if (rh_likely(!rh_ss_contains(a)))
        return 0;
    rh_ss_write_begin();
    int was = rh_ss_cur ? rh_ss_remove_locked(rh_ss_cur, a) : 0;
    rh_ss_write_end();
    return was;
}

/* ---- randomness ---------------------------------------------------------- */

static inline uint64_t rh_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t rh_rng_next(void)
{
    rh_tls_rng += RH_SS_K;
    return rh_mix64(rh_tls_rng);
}

/* Natural logarithm of x in (0, 1], to about 1e-12: the exponent, then
 * 2 atanh((m-1)/(m+1)) for the mantissa m in [0.707, 1.414]. No libm. */
static double rh_ln(double x)
{
    uint64_t b;
    memcpy(&b, &x, 8);
    int e = (int)((b >> 52) & 0x7ff) - 1023;
    b = (b & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    double m;
    memcpy(&m, &b, 8);
    if (m > 1.4142135623730951) {
        m *= 0.5;
        e++;
    }
    double s = (m - 1.0) / (m + 1.0), s2 = s * s;
    double p = 1.0 / 15;
    p = 1.0 / 13 + s2 * p;
    p = 1.0 / 11 + s2 * p;
    p = 1.0 / 9 + s2 * p;
    p = 1.0 / 7 + s2 * p;
    p = 1.0 / 5 + s2 * p;
    p = 1.0 / 3 + s2 * p;
    p = 1.0 + s2 * p;
    return e * 0.6931471805599453 + 2.0 * s * p;
}

/* An exponentially distributed byte count with mean N, at least 1. */
static int64_t rh_draw_bytes(void)
{
    double u = ((double)(rh_rng_next() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    double d = -rh_ln(u) * (double)rh_sample_mean;
    if (d > 4e18)
        d = 4e18;
    return (int64_t)d + 1;
}

static void rh_rng_init(void)
{
    uint32_t ord = __atomic_fetch_add(&rh_sample_threads, 1, __ATOMIC_RELAXED);
    rh_tls_rng = rh_mix64(rh_sample_seed ^ rh_mix64((uint64_t)ord + 1));
    rh_tls_rng_ok = 1;
    if (rh_sample_mode == RH_SAMPLE_BYTES)
        rh_tls_sample_left = rh_draw_bytes();
}

/* ---- rh_runtime.h entry points --------------------------------------------- */

void rh_sample_configure(void)
{
    rh_sample_mode = rh_cfg.sample_mode;
    rh_sample_mean = rh_cfg.sample_bytes;
    rh_sample_threshold = rh_cfg.sample_threshold;
    rh_sample_seed = rh_cfg.sample_seeded ? rh_cfg.sample_seed : rh_real_ns() ^ (uint64_t)getpid();
    /* a thread's countdown from another mode or mean is redrawn */
    rh_tls_rng_ok = 0;
    rh_tls_sample_left = 0;
}

void rh_sample_file_start(void)
{
    rh_ss_write_begin();
    struct rh_sset *t = rh_ss_cur;
    if (t && t->count) {
        memset(t->slots, 0, (t->mask + 1) * sizeof(uintptr_t));
        t->count = 0;
    }
    rh_ss_peak = 0;
    rh_ss_write_end();
}

void rh_sample_header(uint8_t *hdr)
{
    struct rip_file_header *h = (struct rip_file_header *)hdr;
    uint32_t mode = (uint32_t)rh_sample_mode, seeded = (uint32_t)rh_cfg.sample_seeded;
    uint64_t param = mode == RH_SAMPLE_RATE ? rh_sample_threshold : rh_sample_mean;
    if (!mode)
        return;
    h->flags |= RIP_HDR_F_SAMPLED;
    memcpy(hdr + RIP_HDR_SAMPLE_MODE_OFF, &mode, 4);
    memcpy(hdr + RIP_HDR_SAMPLE_MODE_OFF + 4, &seeded, 4);
    memcpy(hdr + RIP_HDR_SAMPLE_PARAM_OFF, &param, 8);
}

uint64_t rh_sample_peak(void)
{
    return __atomic_load_n(&rh_ss_peak, __ATOMIC_RELAXED);
}

int rh_sample_alloc_slow(void *p, size_t size)
{
    if ((intptr_t)p < 0)
        return 1; /* a pool request: always recorded */
    if (rh_unlikely(!rh_tls_rng_ok))
        rh_rng_init();
    if (rh_sample_mode == RH_SAMPLE_RATE) {
        if (rh_rng_next() >= rh_sample_threshold)
            return 0;
        return rh_ss_insert((uintptr_t)p);
    }
    int64_t left = rh_tls_sample_left - (int64_t)(size > INT64_MAX / 2 ? INT64_MAX / 2 : size);
    if (left > 0) {
        rh_tls_sample_left = left;
        return 0;
    }
    /* the countdown crossed this block: take it and start a fresh interval
     * (memoryless, so the block's probability is 1 - exp(-size/N)) */
    rh_tls_sample_left = rh_draw_bytes();
    return rh_ss_insert((uintptr_t)p);
}

int rh_sample_free_slow(void *p)
{
    if ((intptr_t)p < 0)
        return 1;
    return rh_ss_take((uintptr_t)p);
}

void rh_sample_realloc(unsigned kind, void *old, void *p, size_t size, uint64_t t_before,
                       uint64_t t_after, void *fp)
{
    int was = rh_sample_free_slow(old);
    int now = rh_sample_alloc(p, size);
    if (was && now)
        rh_record_realloc_slow(kind, old, p, size, t_before, t_after, fp);
    else if (was)
        rh_record_free_slow(old, t_before);
    else if (now)
        rh_record_alloc_slow(kind, p, size, t_after, fp);
}

void rh_sample_fork(int phase)
{
    if (phase == 0)
        rh_spin_lock(&rh_ss_lock);
    else if (phase == 1)
        rh_spin_unlock(&rh_ss_lock);
    else
        rh_ss_lock = 0;
}
