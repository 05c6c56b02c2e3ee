/* smp_gen.c: two sampled recordings started through the C API, one after the
 * other, of the same work done by a second thread (tests/integration/sample/run.sh, case
 * "generation"). Run with RHEAPER_SAMPLE_BYTES and RHEAPER_SAMPLE_SEED and
 * without RHEAPER_ENABLE: main turns tracking on, lets the worker run one
 * round, waits for it and turns tracking off, twice.
 *
 * Each rheaper_enable starts a new sampling generation (runtime/rh_sample.c):
 * the worker, which is not the thread that called it, must draw its random
 * stream and countdown again from the seed at its next allocation, so both
 * recordings take the same blocks. Without that it would go on with the
 * countdown left over from the first recording and take others.
 *
 * Main allocates nothing while a recording is on, so the worker is the only
 * thread that reaches the sampler (sampling ordinal 0 in both recordings).
 * Each round: NROUND blocks of 16..2015 bytes (below N = 4096), all freed, and
 * every 1000th block NBIG_SIZE bytes (at least N: always recorded). Prints
 * "TRUE round count big_count big_bytes".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rheaper.h"

#define NROUND 20000
#define NBIG_SIZE 5000

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go, done, rounds_left = 2;
static void *volatile sink;

static __attribute__((noinline)) void *gen_block(size_t n)
{
    void *p = malloc(n);
    memset(p, 5, 16);
    return p;
}

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&mu);
        while (!go && rounds_left)
            pthread_cond_wait(&cv, &mu);
        if (!rounds_left) {
            pthread_mutex_unlock(&mu);
            return NULL;
        }
        go = 0;
        pthread_mutex_unlock(&mu);
        for (int i = 0; i < NROUND; i++) {
            size_t n = i % 1000 == 999 ? NBIG_SIZE : 16 + (size_t)(i * 7919 % 2000);
            void *p = gen_block(n);
            sink = p;
            free(p);
        }
        pthread_mutex_lock(&mu);
        done = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
}

int main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0)
        return 1;
    for (int r = 0; r < 2; r++) {
        int rc = rheaper_enable(NULL);
        if (rc != RHEAPER_OK) {
            fprintf(stderr, "rheaper_enable: %s\n", rheaper_strerror(rc));
            return 1;
        }
        pthread_mutex_lock(&mu);
        go = 1;
        done = 0;
        pthread_cond_broadcast(&cv);
        while (!done)
            pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
        if (rheaper_disable() != RHEAPER_OK)
            return 1;
    }
    pthread_mutex_lock(&mu);
    rounds_left = 0;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    printf("TRUE round %d %d %d\n", NROUND, NROUND / 1000, NROUND / 1000 * NBIG_SIZE);
    return 0;
}
