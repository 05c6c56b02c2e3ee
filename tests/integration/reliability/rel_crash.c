/* rel_crash.c: a tracked program that dies: SIGKILL, abort() or SIGSEGV.
 *
 *   rel_crash sigkill|abort|segv
 *
 * The main thread and two worker threads allocate blocks of sizes only they
 * use, free a known share of them, state the counts (EXPECT), then the workers
 * park and main sleeps 100 ms and dies the chosen way. Nothing runs at exit, so
 * the profile has no trailer: run.sh converts it and checks that every event
 * made before the sleep is there, that the blocks still live at the end have
 * NULL dealloc_after, and that meta marks the profile as not clean.
 */
#include "rel.h"

#include <pthread.h>
#include <signal.h>

#define MAIN_N 600
#define WORKER_N 250

static void *volatile sink;

NOINLINE static void *crash_alloc(size_t n)
{
    void *p = malloc(n);
    sink = p;
    return p;
}

static int workers_ready;

/* Worker t allocates WORKER_N blocks of sizes 20000 + t*1000 + i, frees the
 * odd ones, then parks forever with its chunk open. */
static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < WORKER_N; i++) {
        void *p = crash_alloc((size_t)(20000 + t * 1000 + i));
        if (i & 1)
            free(p);
    }
    __atomic_add_fetch(&workers_ready, 1, __ATOMIC_RELEASE);
    for (;;)
        pause();
    return NULL;
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "";
    if (strcmp(how, "sigkill") && strcmp(how, "abort") && strcmp(how, "segv")) {
        rel_say("usage: rel_crash sigkill|abort|segv");
        return 2;
    }
    int live = 0;
    for (int i = 0; i < MAIN_N; i++) {
        void *p = crash_alloc((size_t)(3000 + i));
        if (i % 3 == 0)
            free(p);
        else
            live++;
    }
    /* a realloc chain: 10 blocks end, the last one stays */
    void *r = crash_alloc(5000);
    for (int i = 1; i <= 10; i++)
        r = realloc(r, (size_t)(5000 + i));
    sink = r;

    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) != 0)
            return 3;
    while (__atomic_load_n(&workers_ready, __ATOMIC_ACQUIRE) < 2)
        rel_sleep_ms(1);

    EXPECT(MAIN_N, "SELECT count(*) FROM allocations WHERE size BETWEEN 3000 AND %d",
           3000 + MAIN_N - 1);
    EXPECT(
        live,
        "SELECT count(*) FROM allocations WHERE size BETWEEN 3000 AND %d AND dealloc_after IS NULL",
        3000 + MAIN_N - 1);
    EXPECT(MAIN_N - live,
           "SELECT count(*) FROM allocations WHERE size BETWEEN 3000 AND %d AND dealloc_after >= "
           "alloc_after",
           3000 + MAIN_N - 1);
    EXPECT(11, "SELECT count(*) FROM allocations WHERE size BETWEEN 5000 AND 5010");
    EXPECT(1, "SELECT count(*) FROM allocations WHERE size = 5010 AND dealloc_after IS NULL");
    for (int t = 0; t < 2; t++) {
        EXPECT(WORKER_N, "SELECT count(*) FROM allocations WHERE size BETWEEN %d AND %d",
               20000 + t * 1000, 20000 + t * 1000 + WORKER_N - 1);
        EXPECT(WORKER_N / 2,
               "SELECT count(*) FROM allocations WHERE size BETWEEN %d AND %d AND dealloc_after IS "
               "NULL",
               20000 + t * 1000, 20000 + t * 1000 + WORKER_N - 1);
        EXPECT(1,
               "SELECT count(DISTINCT alloc_thread) FROM allocations WHERE size BETWEEN %d AND %d",
               20000 + t * 1000, 20000 + t * 1000 + WORKER_N - 1);
    }
    EXPECT(MAIN_N + 11 + 2 * WORKER_N, "SELECT count(*) FROM allocations WHERE " AT_SYM(
                                           "crash_alloc") " OR size BETWEEN 5001 AND 5010");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'clean'");
    EXPECT(1, "SELECT value FROM meta WHERE key = 'cut_short'");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'damaged'");

    rel_sleep_ms(100);
    if (!strcmp(how, "sigkill"))
        raise(SIGKILL);
    else if (!strcmp(how, "abort"))
        abort();
    else
        *(volatile int *)(uintptr_t)8 = 1;
    return 4;
}
