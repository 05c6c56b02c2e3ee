/* rh_clock.c: the tick source of event times, and its calibration.
 *
 * Every event carries a time, so the clock read is on the hot path: rdtsc costs
 * about 10 ns where clock_gettime costs about 24 (pitfalls.md). The runtime uses
 * the TSC when the CPU says it is invariant (cpuid 0x80000007 EDX bit 8), so all
 * cores share one rate and order events across threads; otherwise it falls back
 * to CLOCK_MONOTONIC ns. The converter turns ticks into ns with (tick, ns)
 * calibration pairs the runtime stores in the header, in each chunk and in the
 * trailer (FORMAT.md "Time").
 */
#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "rh_base.h"

RH_HIDDEN int rh_clock_tsc;
RH_HIDDEN uint32_t rh_clock_shift;
static int rh_clock_ready;
static uint64_t rh_tps;

uint64_t rh_now_slow(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rh_mono_ns(void)
{
    return rh_now_slow();
}

uint64_t rh_real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* 1 when the CPU has an invariant TSC. */
static int rh_has_invariant_tsc(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return 0;
    __cpuid(0x80000007u, a, b, c, d);
    return (d >> 8) & 1;
#else
    return 0;
#endif
}

void rh_clock_init(void)
{
    if (rh_clock_ready)
        return;
    rh_clock_tsc = rh_has_invariant_tsc();
    rh_clock_shift = rh_clock_tsc ? 4u : 0u;
    rh_clock_ready = 1;
}

uint32_t rh_clock_kind(void)
{
    return rh_clock_tsc ? RIP_CLOCK_TSC : RIP_CLOCK_MONO;
}

void rh_calib_pair(uint64_t *tick, uint64_t *ns)
{
    *tick = rh_now();
    *ns = rh_mono_ns();
}

uint64_t rh_ticks_per_sec(void)
{
    if (!rh_clock_tsc)
        return 1000000000u;
    if (rh_tps)
        return rh_tps;
    /* Spin about 1 ms: a rate good to ~1e-5, without sleeping. */
    uint64_t t0 = rh_now(), n0 = rh_mono_ns(), n1;
    do {
        n1 = rh_mono_ns();
    } while (n1 - n0 < 1000000u);
    uint64_t t1 = rh_now();
    if (t1 > t0 && n1 > n0)
        rh_tps = rh_arch_muldiv64(t1 - t0, 1000000000u, n1 - n0);
    return rh_tps;
}
