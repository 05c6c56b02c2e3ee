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

#include "rh_runtime.h"

RH_HIDDEN _Atomic int rh_sample_mode; /* _Atomic: set at enable while other threads read it */
RH_HIDDEN __thread int64_t rh_tls_sample_left __attribute__((tls_model("initial-exec")));
RH_HIDDEN __thread uint64_t rh_tls_rng __attribute__((tls_model("initial-exec")));
RH_HIDDEN __thread int rh_tls_rng_ok __attribute__((tls_model("initial-exec")));

RH_HIDDEN _Atomic uint64_t rh_sample_threshold; /* rate mode: take when next() < this */
static _Atomic uint64_t rh_sample_mean;      /* bytes mode: N */
static _Atomic uint64_t rh_sample_seed;
static uint32_t rh_sample_threads;   /* atomic: sampling ordinals handed out */

/* ---- randomness (RH_SS_K and rh_mix64: rh_runtime.h) ------------------- */

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
    __atomic_store_n(&rh_live_on, rh_sample_mode != RH_SAMPLE_NONE || __atomic_load_n(&rh_reports_on, __ATOMIC_RELAXED),
                     __ATOMIC_RELAXED);
    /* a thread's countdown from another mode or mean is redrawn */
    rh_tls_rng_ok = 0;
    rh_tls_sample_left = 0;
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
    if (rh_unlikely(!rh_tls_rng_ok))
        rh_rng_init();
    if (rh_sample_mode == RH_SAMPLE_RATE) {
        if (rh_rng_next() >= rh_sample_threshold)
            return 0;
        return rh_sample_room();
    }
    int64_t left = rh_tls_sample_left - (int64_t)(size > INT64_MAX / 2 ? INT64_MAX / 2 : size);
    if (left > 0) {
        rh_tls_sample_left = left;
        return 0;
    }
    /* the countdown crossed this block: take it and start a fresh interval
     * (memoryless, so the block's probability is 1 - exp(-size/N)) */
    rh_tls_sample_left = rh_draw_bytes();
    return rh_sample_room();
}

void rh_sample_realloc_rec(unsigned kind, void *old, void *p, size_t size, int was, int now,
                           uint64_t t_before, uint64_t t_after, void *fp)
{
    /* a shim that skipped the clock (the old block could not have been
     * recorded, rh_live_maybe) passes 0: then only an ALLOC can follow */
    if (!t_after)
        t_after = rh_now();
    if (!t_before)
        t_before = t_after;
    if (was && now)
        rh_record_realloc_slow(kind, old, p, size, t_before, t_after, fp);
    else if (was)
        rh_record_free_slow(old, t_before);
    else if (now)
        rh_record_alloc_slow(kind, p, size, t_after, fp);
}
