/* cpu_ratio.c: a program whose CPU shares are known, for the CPU sampling
 * test (tests/integration/cpu/run.sh).
 *
 * Work comes in units of the same fixed arithmetic. Each thread picks, unit by
 * unit with a fixed pseudo-random sequence, hot_unit with probability 3/4 and
 * cold_unit with 1/4, so CPU time splits 3:1 between the two functions
 * whatever the sampling period (a random order cannot alias with it). The
 * main thread does UNITS units and the second thread (named "half") UNITS / 2,
 * so the second thread uses half the CPU of the first: of all CPU time,
 * hot_unit 75 %, cold_unit 25 %, main 2/3 and "half" 1/3. It allocates one
 * block per thread at the start, and prints the units each function ran.
 * Its heap, for the pprof export's test: make_table keeps one block of
 * 1 MiB to the end (the top of inuse_space), churn allocates and frees 1000
 * blocks of 4 KiB (the top of alloc_space).
 *
 * usage: cpu_ratio UNITS
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile unsigned long sink;

/* One unit: about 50 us of integer work that the compiler cannot fold. */
#define UNIT_SPIN 20000

__attribute__((noinline)) static void hot_unit(void)
{
    unsigned long x = sink;
    for (int i = 0; i < UNIT_SPIN; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink = x;
}

/* The same work with other constants, so that gcc's identical code folding
 * cannot make the two functions one. */
__attribute__((noinline)) static void cold_unit(void)
{
    unsigned long x = sink;
    for (int i = 0; i < UNIT_SPIN; i++)
        x = x * 2862933555777941757ul + 3037000493ul;
    sink = x;
}

struct work {
    long units;
    unsigned seed;
    long hot, cold;
};

static void *run(void *v)
{
    struct work *w = v;
    char *p = malloc(64); /* the thread's one allocation */
    memset(p, 1, 64);
    sink += (unsigned long)p[3];
    unsigned s = w->seed;
    for (long i = 0; i < w->units; i++) {
        s = s * 1103515245u + 12345u;
        if ((s >> 16) % 4 != 0) {
            hot_unit();
            w->hot++;
        } else {
            cold_unit();
            w->cold++;
        }
    }
    free(p);
    return NULL;
}

__attribute__((noinline)) static char *make_table(size_t n)
{
    char *t = malloc(n);
    memset(t, 2, n);
    return t;
}

__attribute__((noinline)) static void churn(void)
{
    for (int i = 0; i < 1000; i++) {
        char *volatile b = malloc(4096);
        b[0] = (char)i;
        free(b);
    }
}

int main(int argc, char **argv)
{
    long units = argc > 1 ? atol(argv[1]) : 20000;
    struct work a = {units, 1u, 0, 0}, b = {units / 2, 7u, 0, 0};
    pthread_t t;
    if (pthread_create(&t, NULL, run, &b) != 0)
        return 1;
    pthread_setname_np(t, "half");
    char *volatile table = make_table(1 << 20);
    churn();
    run(&a);
    pthread_join(t, NULL);
    sink += (unsigned long)table[5];
    printf("hot %ld cold %ld main %ld half %ld\n", a.hot + b.hot, a.cold + b.cold, a.units,
           b.units);
    return 0;
}
