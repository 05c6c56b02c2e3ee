/* rh_live.c: the runtime's map of live recorded blocks.
 *
 * Two features need to know, at a free, whether and how a block was recorded:
 * sampling (a free is recorded only when its block was, rh_sample.c) and the
 * in-process reports (a free is charged to the stack and thread that
 * allocated the block, rh_report.c). Both use this map from address to
 * (size, stack id, thread index). It holds only what is recorded, so its
 * memory follows the live recorded blocks, never the events.
 *
 * Layout: RH_LV_STRIPES independent open-addressing tables (linear probing,
 * backward-shift deletion) in mmap'd memory, picked by the address's hash, so
 * threads rarely meet. Each stripe starts at 2^RH_LV_MIN_BITS entries and
 * doubles at half load up to 2^RH_LV_MAX_BITS; an outgrown table stays mapped
 * (a reader may still be probing it), so a stripe's memory is at most twice
 * its table (24 bytes an entry; 48 to 96 bytes per live block in all).
 * Lookups (rh_live_contains, made on every free while sampling) take no lock:
 * a stripe's sequence counter (a seqlock) makes them retry while a writer
 * moves entries. Inserts and deletes take the stripe's spin lock for a few
 * memory operations, never across a call that can block, fail or be
 * cancelled. A counting filter (rh_lv_filter, 64 Ki one-byte counters indexed
 * by the address's hash, 255 sticky) lets the record path skip the lookup for
 * most addresses that are not in the map, with one load
 * (rh_live_maybe, rh_hot.h). When a stripe cannot grow, the map is full: rh_live_full says
 * so and the callers stop adding (counted, with one warning line).
 */
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include "rh_hot.h"

#define RH_LV_STRIPES 64u
#define RH_LV_STRIPE_SHIFT 58 /* 64 - log2(RH_LV_STRIPES) */
#define RH_LV_MIN_BITS 8u
#define RH_LV_MAX_BITS 21u
#define RH_LV_K 0x9e3779b97f4a7c15ull

struct rh_lv_ent {
    uintptr_t key; /* 0 = empty */
    uint64_t size;
    uint32_t stack, thread;
};

struct rh_lv_table {
    struct rh_lv_ent *e;
    uint64_t mask;
    unsigned bits;
    uint64_t count;
};

struct rh_lv_stripe {
    int lock;
    uint32_t seq;             /* atomic: odd while a writer changes the table */
    struct rh_lv_table *cur;  /* atomic */
    struct rh_lv_table tabs[RH_LV_MAX_BITS + 1];
} __attribute__((aligned(RH_CACHE_LINE)));

static struct rh_lv_stripe rh_lv[RH_LV_STRIPES];
RH_HIDDEN uint8_t rh_lv_filter[1u << RH_LV_FILTER_BITS];
/* 1 while the map is kept: set before a recording starts by the sampler
 * (rh_sample_configure) and the reports (rh_report_init); read on every event. */
RH_HIDDEN int rh_live_on;
/* 1 when RHEAPER_REPORTS=1 or RHEAPER_REPORT_SIGNAL is set (rh_report_init):
 * the map then also keeps the reports' counters. */
RH_HIDDEN int rh_reports_on;

/* The filter's counter of a (rh_live_maybe's index); 255 sticks. */
static inline uint8_t *rh_lv_fslot(uintptr_t a)
{
    return &rh_lv_filter[((uint64_t)a * RH_LV_K) >> (64 - RH_LV_FILTER_BITS)];
}
static int rh_lv_is_full;  /* atomic */
static int64_t rh_lv_count; /* atomic: entries in all stripes */
static int64_t rh_lv_peak;  /* atomic: the most at once since the last clear */

static inline uint64_t rh_lv_hash(uintptr_t a)
{
    uint64_t h = (uint64_t)a * RH_LV_K;
    return h ^ (h >> 29);
}

static inline struct rh_lv_stripe *rh_lv_stripe_of(uint64_t h)
{
    return &rh_lv[(h * RH_LV_K) >> RH_LV_STRIPE_SHIFT];
}

static inline uint64_t rh_lv_home(const struct rh_lv_table *t, uint64_t h)
{
    return h & t->mask;
}

/* The first tables of all stripes (2^RH_LV_MIN_BITS entries each), mapped
 * together by the first insert of the process: one mmap instead of one per
 * stripe (64 system calls in the first seconds of a sampled recording). Pages
 * are touched only as stripes fill them. Atomic; never unmapped. */
static unsigned char *rh_lv_slab;

static void *rh_lv_first_table(struct rh_lv_stripe *s, size_t bytes)
{
    unsigned char *slab = __atomic_load_n(&rh_lv_slab, __ATOMIC_ACQUIRE);
    if (!slab) {
        void *m = rh_sys_mmap(NULL, RH_LV_STRIPES * bytes, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return MAP_FAILED;
        unsigned char *expected = NULL;
        if (__atomic_compare_exchange_n(&rh_lv_slab, &expected, (unsigned char *)m, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            slab = m;
        } else { /* another stripe's first insert mapped it first */
            rh_sys_munmap(m, RH_LV_STRIPES * bytes);
            slab = expected;
        }
    }
    return slab + (size_t)(s - rh_lv) * bytes;
}

/* Maps table `bits` of stripe s (zeroed), with raw system calls (rh_sys_mmap:
 * the program's mmap is wrapped and recorded). NULL when mmap fails. */
static struct rh_lv_table *rh_lv_map(struct rh_lv_stripe *s, unsigned bits)
{
    struct rh_lv_table *t = &s->tabs[bits];
    if (!t->e) {
        size_t bytes = ((size_t)1 << bits) * sizeof(struct rh_lv_ent);
        void *m = bits == RH_LV_MIN_BITS
                      ? rh_lv_first_table(s, bytes)
                      : rh_sys_mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        t->e = m;
        t->mask = ((uint64_t)1 << bits) - 1;
        t->bits = bits;
    }
    return t;
}

static void rh_lv_put(struct rh_lv_table *t, const struct rh_lv_ent *v)
{
    uint64_t i = rh_lv_home(t, rh_lv_hash(v->key));
    while (t->e[i].key)
        i = (i + 1) & t->mask;
    t->e[i].size = v->size;
    t->e[i].stack = v->stack;
    t->e[i].thread = v->thread;
    __atomic_store_n(&t->e[i].key, v->key, __ATOMIC_RELAXED);
    t->count++;
}

static inline void rh_lv_write_begin(struct rh_lv_stripe *s)
{
    rh_spin_lock(&s->lock);
    __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void rh_lv_write_end(struct rh_lv_stripe *s)
{
    __atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
    rh_spin_unlock(&s->lock);
}

int rh_live_full(void)
{
    return __atomic_load_n(&rh_lv_is_full, __ATOMIC_RELAXED);
}

int rh_live_add(uintptr_t a, uint64_t size, uint32_t stack, uint32_t thread)
{
    uint64_t h = rh_lv_hash(a);
    struct rh_lv_stripe *s = rh_lv_stripe_of(h);
    struct rh_lv_ent v = {a, size, stack, thread};
    int ok = 1;
    rh_lv_write_begin(s);
    struct rh_lv_table *t = s->cur;
    if (!t)
        t = rh_lv_map(s, RH_LV_MIN_BITS);
    if (t && t->count + 1 > (t->mask + 1) / 2) {
        struct rh_lv_table *n = t->bits < RH_LV_MAX_BITS ? rh_lv_map(s, t->bits + 1) : NULL;
        if (n) {
            memset(n->e, 0, (n->mask + 1) * sizeof *n->e);
            n->count = 0;
            for (uint64_t i = 0; i <= t->mask; i++)
                if (t->e[i].key)
                    rh_lv_put(n, &t->e[i]);
        }
        t = n;
    }
    if (t) {
        __atomic_store_n(&s->cur, t, __ATOMIC_RELEASE);
        rh_lv_put(t, &v);
        uint8_t *f = rh_lv_fslot(a);
        if (__atomic_load_n(f, __ATOMIC_RELAXED) < 255)
            __atomic_fetch_add(f, 1, __ATOMIC_RELAXED);
    } else {
        ok = 0;
    }
    rh_lv_write_end(s);
    if (!ok) {
        if (!__atomic_exchange_n(&rh_lv_is_full, 1, __ATOMIC_RELAXED))
            rh_warn("the map of live recorded blocks is full (or out of memory): further "
                    "sampled blocks are not recorded, and reports miss further blocks");
        return 0;
    }
    int64_t c = __atomic_add_fetch(&rh_lv_count, 1, __ATOMIC_RELAXED);
    int64_t pk = __atomic_load_n(&rh_lv_peak, __ATOMIC_RELAXED);
    while (c > pk && !__atomic_compare_exchange_n(&rh_lv_peak, &pk, c, 1, __ATOMIC_RELAXED,
                                                  __ATOMIC_RELAXED))
        ;
    return 1;
}

/* Removes a from t (under the stripe's lock) into *out. Returns 0 if absent. */
static int rh_lv_remove_locked(struct rh_lv_table *t, uintptr_t a, struct rh_lv_ent *out)
{
    uint64_t i = rh_lv_home(t, rh_lv_hash(a));
    for (;;) {
        uintptr_t k = t->e[i].key;
        if (!k)
            return 0;
        if (k == a)
            break;
        i = (i + 1) & t->mask;
    }
    *out = t->e[i];
    uint64_t j = i;
    for (;;) {
        j = (j + 1) & t->mask;
        uintptr_t k = t->e[j].key;
        if (!k)
            break;
        uint64_t h = rh_lv_home(t, rh_lv_hash(k));
        /* the entry at j stays unless its home lies cyclically in (i, j] */
        int stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (!stays) {
            t->e[i].size = t->e[j].size;
            t->e[i].stack = t->e[j].stack;
            t->e[i].thread = t->e[j].thread;
            __atomic_store_n(&t->e[i].key, k, __ATOMIC_RELAXED);
            i = j;
        }
    }
    __atomic_store_n(&t->e[i].key, 0, __ATOMIC_RELAXED);
    t->count--;
    return 1;
}

/* 1 when a is in the map. Lock-free: a hit is certain (only a's own free
 * removes a, and a writer only moves entries), a miss only with the stripe's
 * sequence even and unchanged across the probe. */
static int rh_lv_contains(struct rh_lv_stripe *s, uintptr_t a, uint64_t h)
{
    unsigned spins = 0;
    for (;;) {
        uint32_t s1 = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
        if (!(s1 & 1)) {
            struct rh_lv_table *t = __atomic_load_n(&s->cur, __ATOMIC_ACQUIRE);
            if (!t)
                return 0;
            uint64_t i = rh_lv_home(t, h);
            for (uint64_t n = 0; n <= t->mask; n++) {
                uintptr_t k = __atomic_load_n(&t->e[i].key, __ATOMIC_RELAXED);
                if (k == a)
                    return 1;
                if (!k)
                    break;
                i = (i + 1) & t->mask;
            }
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) == s1)
                return 0;
        }
        if (++spins > 200)
            sched_yield();
        else
            rh_cpu_relax();
    }
}

int rh_live_take(uintptr_t a, uint64_t *size, uint32_t *stack, uint32_t *thread)
{
    uint64_t h = rh_lv_hash(a);
    struct rh_lv_stripe *s = rh_lv_stripe_of(h);
    if (rh_likely(!rh_lv_contains(s, a, h)))
        return 0;
    struct rh_lv_ent v;
    rh_lv_write_begin(s);
    int was = s->cur ? rh_lv_remove_locked(s->cur, a, &v) : 0;
    if (was) {
        uint8_t *f = rh_lv_fslot(a);
        if (__atomic_load_n(f, __ATOMIC_RELAXED) < 255)
            __atomic_fetch_sub(f, 1, __ATOMIC_RELAXED);
    }
    rh_lv_write_end(s);
    if (!was)
        return 0;
    __atomic_sub_fetch(&rh_lv_count, 1, __ATOMIC_RELAXED);
    *size = v.size;
    *stack = v.stack;
    *thread = v.thread;
    return 1;
}

void rh_live_clear(void)
{
    for (unsigned k = 0; k < RH_LV_STRIPES; k++) {
        struct rh_lv_stripe *s = &rh_lv[k];
        rh_lv_write_begin(s);
        struct rh_lv_table *t = s->cur;
        if (t && t->count) {
            memset(t->e, 0, (t->mask + 1) * sizeof *t->e);
            t->count = 0;
        }
        rh_lv_write_end(s);
    }
    memset(rh_lv_filter, 0, sizeof rh_lv_filter);
    __atomic_store_n(&rh_lv_count, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&rh_lv_peak, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&rh_lv_is_full, 0, __ATOMIC_RELAXED);
}

uint64_t rh_live_peak(void)
{
    int64_t p = __atomic_load_n(&rh_lv_peak, __ATOMIC_RELAXED);
    return p > 0 ? (uint64_t)p : 0;
}

void rh_live_fork(int phase)
{
    for (unsigned k = 0; k < RH_LV_STRIPES; k++) {
        if (phase == 0)
            rh_spin_lock(&rh_lv[k].lock);
        else if (phase == 1)
            rh_spin_unlock(&rh_lv[k].lock);
        else
            rh_lv[k].lock = 0;
    }
}
