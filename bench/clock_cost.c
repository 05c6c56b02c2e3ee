/* clock_cost.c: what one event-time read costs on this machine, in ns
 * (bench/breakdown.sh). callgrind counts the time-stamp counter read as
 * one instruction, whatever it costs; this measures it: the median over 7
 * rounds of 2 000 000 back-to-back reads of rdtsc (x86_64) and of
 * clock_gettime(CLOCK_MONOTONIC), each read's value folded into a sum so none
 * can be dropped. Back-to-back reads are the worst case: inside a shim the
 * counter read overlaps with the work around it. Prints "rdtsc NS" (x86_64
 * only) and "clock_gettime NS".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define ROUNDS 7
#define READS 2000000

static volatile uint64_t g_sink;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ns per read of clock `which` (0 rdtsc, 1 clock_gettime), median of ROUNDS. */
static double per_read(int which)
{
    double r[ROUNDS];
    for (int k = 0; k < ROUNDS; k++) {
        uint64_t sum = 0;
        double t0 = now_s();
        for (int i = 0; i < READS; i++) {
#if defined(__x86_64__)
            if (which == 0) {
                uint32_t lo, hi;
                __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
                sum += ((uint64_t)hi << 32) | lo;
                continue;
            }
#endif
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            sum += (uint64_t)ts.tv_nsec;
        }
        r[k] = (now_s() - t0) / READS * 1e9;
        g_sink = sum;
    }
    qsort(r, ROUNDS, sizeof r[0], cmp);
    return r[ROUNDS / 2];
}

int main(void)
{
#if defined(__x86_64__)
    printf("rdtsc %.1f\n", per_read(0));
#endif
    printf("clock_gettime %.1f\n", per_read(1));
    return 0;
}
