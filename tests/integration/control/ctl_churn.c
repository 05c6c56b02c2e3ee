/* ctl_churn.c: ctl_churn N THREADS: each thread allocates N blocks of 100
 * bytes, keeping one in 4 (freed at the end) and freeing the rest at once.
 * Enough events to reach a small RHEAPER_MAX_PROFILE_SIZE. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static long n;

static void *churn(void *arg)
{
    (void)arg;
    void **keep = calloc((size_t)n / 4 + 1, sizeof *keep);
    long k = 0;
    for (long i = 0; i < n; i++) {
        char *p = malloc(100);
        memset(p, 1, 100);
        if (i % 4 == 0)
            keep[k++] = p;
        else
            free(p);
    }
    for (long i = 0; i < k; i++)
        free(keep[i]);
    free(keep);
    return NULL;
}

int main(int argc, char **argv)
{
    n = argc > 1 ? atol(argv[1]) : 100000;
    int t = argc > 2 ? atoi(argv[2]) : 2;
    pthread_t th[16];
    for (int i = 0; i < t && i < 16; i++)
        pthread_create(&th[i], NULL, churn, NULL);
    for (int i = 0; i < t && i < 16; i++)
        pthread_join(th[i], NULL);
    return 0;
}
