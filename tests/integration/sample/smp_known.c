/* smp_known.c: a program whose heap is known exactly, for the sampling tests
 * (tests/integration/sample/run.sh). Each call site is a function of its own, so the
 * converter's call sites name them:
 *   site_small:   200000 blocks of 48 bytes, all freed but 20000 (kept live)
 *   site_medium:  4000 blocks of 4096 bytes, half freed by a second thread
 *   site_big:     24 blocks of 1 MiB, all live at the end
 *   site_grow:    3000 blocks of 1000 bytes realloc'd to 3000, all live
 * It prints the true figures as "TRUE site count bytes live_count live_bytes"
 * lines, from its own bookkeeping, for the runner to compare with the
 * estimates of a sampled profile.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSMALL 200000
#define KEEP_SMALL 20000
#define NMED 4000
#define NBIG 24
#define NGROW 3000

static void *small_keep[KEEP_SMALL];
static void *med[NMED];
static void *big[NBIG];
static void *grow[NGROW];
static void *volatile sink;

static __attribute__((noinline)) void *site_small(void)
{
    void *p = malloc(48);
    memset(p, 1, 48);
    return p;
}

static __attribute__((noinline)) void *site_medium(void)
{
    void *p = malloc(4096);
    memset(p, 2, 64);
    return p;
}

static __attribute__((noinline)) void *site_big(void)
{
    void *p = malloc(1 << 20);
    memset(p, 3, 64);
    return p;
}

static __attribute__((noinline)) void *site_grow(void)
{
    void *p = malloc(1000);
    memset(p, 4, 64);
    return p;
}

static void *free_half(void *arg)
{
    (void)arg;
    for (int i = 0; i < NMED; i += 2)
        free(med[i]);
    return NULL;
}

int main(void)
{
    for (int i = 0; i < NSMALL; i++) {
        void *p = site_small();
        if (i % 10 == 0)
            small_keep[i / 10] = p;
        else
            free(p);
        sink = p;
    }
    for (int i = 0; i < NMED; i++)
        med[i] = site_medium();
    pthread_t t;
    if (pthread_create(&t, NULL, free_half, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 1;
    for (int i = 0; i < NBIG; i++)
        big[i] = site_big();
    for (int i = 0; i < NGROW; i++) {
        grow[i] = site_grow();
        void *q = realloc(grow[i], 3000);
        if (!q)
            return 1;
        grow[i] = q;
    }
    printf("TRUE site_small %d %d %d %d\n", NSMALL, NSMALL * 48, KEEP_SMALL, KEEP_SMALL * 48);
    printf("TRUE site_medium %d %d %d %d\n", NMED, NMED * 4096, NMED / 2, NMED / 2 * 4096);
    printf("TRUE site_big %d %d %d %d\n", NBIG, NBIG << 20, NBIG, NBIG << 20);
    /* a realloc'd block is one row of its final size from the realloc's site,
     * whose first allocation (1000 bytes) ended at the realloc */
    printf("TRUE site_grow_live %d %d\n", NGROW, NGROW * 3000);
    return 0;
}
