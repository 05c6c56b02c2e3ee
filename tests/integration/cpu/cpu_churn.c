/* cpu_churn.c: allocation-heavy threads under a fast CPU sampler, for the
 * handler's safety (tests/integration/cpu/run.sh case churn).
 *
 * Two threads each make ROUNDS rounds of 8 mallocs and 8 frees (sizes
 * 16..128), so much of their CPU time is spent inside the runtime, where a
 * sample cannot be written at once: the thread's chunk may be half-way
 * through a record. Every block is freed but the one kept per thread (size
 * 4242). The test checks the exact rows, a clean profile, that samples were
 * written and that few periods were dropped.
 *
 * usage: cpu_churn ROUNDS
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long rounds;

static void *churn(void *v)
{
    (void)v;
    char *volatile keep = malloc(4242);
    keep[0] = 1;
    for (long r = 0; r < rounds; r++) {
        char *volatile b[8];
        for (int i = 0; i < 8; i++) {
            b[i] = malloc(16 + 16 * (size_t)i);
            b[i][0] = (char)r;
        }
        for (int i = 0; i < 8; i++)
            free(b[i]);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    rounds = argc > 1 ? atol(argv[1]) : 100000;
    pthread_t t;
    if (pthread_create(&t, NULL, churn, NULL) != 0)
        return 1;
    churn(NULL);
    pthread_join(t, NULL);
    printf("rows %ld\n", 2 * (8 * rounds + 1));
    return 0;
}
