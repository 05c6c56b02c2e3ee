/* rh_sample.c: sampled recording (RHEAPER_SAMPLE_RATE, RHEAPER_SAMPLE_BYTES).
 *
 * A sampled profile records a subset of the allocations; the converter weighs
 * each recorded block by the inverse of the probability it had of being
 * recorded (FORMAT.md "Sampling"), so sums of size times
 * weight estimate the true figures. Two modes:
 *   - rate r: each allocation is recorded with probability r (Bernoulli);
 *   - bytes N: a block of N bytes or more is always recorded (weight 1) and
 *     does not touch the countdown, as Perfetto's heapprofd does; for smaller
 *     ones each thread counts down an exponentially distributed number of
 *     bytes with mean N (a Poisson process over allocated bytes, as tcmalloc,
 *     Go and heapprofd do) and a block is recorded when the countdown crosses
 *     it, so its probability is 1 - exp(-size/N). The header says so with
 *     mode RIP_SAMPLE_BYTES_BIG (profiles of the older rule, mode
 *     RIP_SAMPLE_BYTES, still convert with their own weights).
 *     The countdown is kept in two parts, rh_tls_sample_left = min(countdown,
 *     N) and the rest in rh_tls_sample_more, so the fast paths' one test
 *     "size < rh_tls_sample_left" also proves size < N: a big block can never
 *     pass them unrecorded, at no cost per call. Small blocks that use up the
 *     first part take the slow path once per N bytes to refill it.
 * Generations: every rh_sample_configure (a recording's start) bumps
 * rh_sample_gen. A thread's stream and countdown belong to the generation in
 * rh_tls_sample_key; the fast paths compare it with rh_sample_bkey /
 * rh_sample_rkey (the generation in the matching mode, else RH_SAMPLE_NOKEY),
 * where they used to compare the mode, so a thread whose state was drawn for
 * another recording (another mode, N or seed) takes the slow path and redraws
 * it, with no extra instruction on the fast path (the key sits beside the
 * countdown in struct rh_tls_sampler: one TLS address for both).
 * Randomness: a splitmix64 stream per thread, seeded from RHEAPER_SAMPLE_SEED
 * (or the clock) and the thread's sampling ordinal (the order in which threads
 * first reach the sampler in this recording), so a single-threaded run with a
 * seed is deterministic, and so is each recording of one. No libc rand, no
 * libm, no allocation.
 *
 * The frees of recorded blocks are recorded; the frees of the others cost no
 * event and are not unknown frees: rh_live.c's map holds the live recorded
 * blocks (its memory follows them, not the events), and the record path asks
 * it at every free (rh_live_note_free, rh_report.c). When the map is full the
 * sampler stops picking: such blocks are counted in the trailer's
 * sample_dropped (estimates then undercount). Pool client requests (tagged
 * addresses) are never sampled: they are always recorded, weight 1.
 */
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rh_recording.h"

RH_HIDDEN _Atomic int rh_sample_mode; /* _Atomic: set at enable while other threads read it */
RH_HIDDEN __thread struct rh_tls_sampler rh_tls_samp __attribute__((tls_model("local-exec")));
static __thread int64_t rh_tls_sample_more __attribute__((tls_model("local-exec")));
RH_HIDDEN __thread uint64_t rh_tls_rng __attribute__((tls_model("local-exec")));

RH_HIDDEN _Atomic uint64_t rh_sample_threshold; /* rate mode: take when next() < this */
RH_HIDDEN _Atomic uint64_t rh_sample_bkey = RH_SAMPLE_NOKEY;
RH_HIDDEN _Atomic uint64_t rh_sample_rkey = RH_SAMPLE_NOKEY;
static uint64_t rh_sample_gen; /* atomic (__atomic builtins): bumped by each rh_sample_configure */
static _Atomic uint64_t rh_sample_mean;      /* bytes mode: N */
static _Atomic uint64_t rh_sample_seed;
static uint32_t rh_sample_threads;   /* atomic: this generation's sampling ordinals handed out */

/* ---- randomness (RH_SS_K and rh_mix64: rh_recording.h) ------------------- */

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

/* Sets the thread's countdown to `total` bytes (>= 1): at most N of them in
 * rh_tls_sample_left, which the fast paths test, the rest aside. */
static void rh_countdown_set(int64_t total)
{
    int64_t n = (int64_t)rh_sample_mean;
    rh_tls_sample_left = total > n ? n : total;
    rh_tls_sample_more = total > n ? total - n : 0;
}

/* The thread's state for generation gen: a new stream (seed, ordinal in this
 * generation) and, in bytes mode, a new countdown. */
static void rh_rng_init(uint64_t gen)
{
    uint32_t ord = __atomic_fetch_add(&rh_sample_threads, 1, __ATOMIC_RELAXED);
    rh_tls_rng = rh_mix64(rh_sample_seed ^ rh_mix64((uint64_t)ord + 1));
    rh_countdown_set(rh_sample_mode == RH_SAMPLE_BYTES ? rh_draw_bytes() : 0);
    rh_tls_sample_key = gen;
}

/* ---- entry points (rh_recording.h, rh_hot.h) ---------------------------------------- */

void rh_sample_configure(void)
{
    rh_sample_mode = rh_cfg.sample_mode;
    rh_sample_mean = rh_cfg.sample_bytes;
    rh_sample_threshold = rh_cfg.sample_threshold;
    rh_sample_seed = rh_cfg.sample_seeded ? rh_cfg.sample_seed : rh_real_ns() ^ (uint64_t)getpid();
    int live = rh_sample_mode != RH_SAMPLE_NONE || __atomic_load_n(&rh_reports_on, __ATOMIC_RELAXED);
    __atomic_store_n(&rh_live_on, live, __ATOMIC_RELAXED);
    /* the state word says it too (RH_LIVE), for the hot shims' one test */
    __atomic_store_n(&rh_state_live, live ? RH_LIVE : 0, __ATOMIC_RELAXED);
    /* every thread's stream and countdown are redrawn for this recording, at
     * its next call that reaches the sampler: the fast paths' keys no longer
     * match its rh_tls_sample_key (never RH_SAMPLE_NOKEY: gen stays small) */
    uint64_t gen = __atomic_add_fetch(&rh_sample_gen, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&rh_sample_threads, 0, __ATOMIC_RELAXED);
    rh_sample_bkey = rh_sample_mode == RH_SAMPLE_BYTES ? gen : RH_SAMPLE_NOKEY;
    rh_sample_rkey = rh_sample_mode == RH_SAMPLE_RATE ? gen : RH_SAMPLE_NOKEY;
}

void rh_sample_header(uint8_t *hdr)
{
    struct rip_file_header *h = (struct rip_file_header *)hdr;
    uint32_t mode = rh_sample_mode == RH_SAMPLE_RATE    ? RIP_SAMPLE_RATE
                    : rh_sample_mode == RH_SAMPLE_BYTES ? RIP_SAMPLE_BYTES_BIG
                                                        : 0,
             seeded = (uint32_t)rh_cfg.sample_seeded;
    uint64_t param = mode == RIP_SAMPLE_RATE ? rh_sample_threshold : rh_sample_mean;
    if (!mode)
        return;
    h->flags |= RIP_HDR_F_SAMPLED;
    memcpy(hdr + RIP_HDR_SAMPLE_MODE_OFF, &mode, 4);
    memcpy(hdr + RIP_HDR_SAMPLE_MODE_OFF + 4, &seeded, 4);
    memcpy(hdr + RIP_HDR_SAMPLE_PARAM_OFF, &param, 8);
}

/* A picked block can be recorded only while the live map has room (else its
 * free could not be told apart): 1, or 0 with the block counted dropped. */
static int rh_sample_room(void)
{
    if (rh_likely(!rh_live_full()))
        return 1;
    __atomic_fetch_add(&rh_prof.sample_dropped, 1, __ATOMIC_RELAXED);
    return 0;
}

int rh_sample_alloc_slow(void *p, size_t size)
{
    if ((intptr_t)p < 0)
        return 1; /* a pool request: always recorded */
    uint64_t gen = __atomic_load_n(&rh_sample_gen, __ATOMIC_RELAXED);
    if (rh_unlikely(rh_tls_sample_key != gen))
        rh_rng_init(gen);
    if (rh_sample_mode == RH_SAMPLE_RATE) {
        if (rh_rng_next() >= rh_sample_threshold)
            return 0;
        return rh_sample_room();
    }
    /* bytes mode: a block of N bytes or more is always taken, weight 1,
     * and leaves the countdown as it was (heapprofd's rule) */
    if (size >= rh_sample_mean)
        return rh_sample_room();
    /* size < N <= 2^40: no overflow */
    int64_t left = rh_tls_sample_left + rh_tls_sample_more - (int64_t)size;
    if (left > 0) {
        rh_countdown_set(left);
        return 0;
    }
    /* the countdown crossed this block: take it and start a fresh interval
     * (memoryless, so the block's probability is 1 - exp(-size/N)) */
    rh_countdown_set(rh_draw_bytes());
    return rh_sample_room();
}
