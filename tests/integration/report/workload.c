/* workload.c: a program with a heap shape worth drawing, whose totals it knows.
 *
 * A startup table allocated once and kept, a cache that leaks a little every
 * round, temporary buffers freed at once, a tree built up and torn down, a
 * buffer grown with realloc, and one phase in a second thread (run while main
 * waits, so the live total is the same in every run). The program counts its
 * own allocation calls, leaked bytes and live-byte peak, and prints them as
 *   FIGURE <calls|peak|leaked> <value>
 * for tests/integration/report to compare with rheaper summary, the timeline's maximum and
 * heaptrack_print reading the heaptrack export.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline, noclone))

static void *volatile sink;
static long long calls, live, peak, leaked;

static void note_alloc(size_t n)
{
    calls++;
    live += (long long)n;
    if (live > peak)
        peak = live;
}

static void note_free(size_t n)
{
    live -= (long long)n;
}

/* Lets the timeline have a time axis worth the name. */
static void pause_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

NOINLINE static void *startup_table(size_t n)
{
    void *p = calloc(n, 1);
    sink = p;
    note_alloc(n);
    return p;
}

NOINLINE static void *cache_entry(size_t n)
{
    void *p = malloc(n);
    memset(p, 5, n);
    note_alloc(n);
    return p;
}

NOINLINE static void scratch_buffer(size_t n)
{
    char *p = malloc(n);
    note_alloc(n);
    memset(p, 7, n);
    sink = p;
    free(p);
    note_free(n);
}

struct node {
    struct node *l, *r;
    char payload[48];
};

NOINLINE static struct node *build_tree(int depth)
{
    if (depth == 0)
        return NULL;
    struct node *n = malloc(sizeof *n);
    note_alloc(sizeof *n);
    n->l = build_tree(depth - 1);
    n->r = build_tree(depth - 1);
    sink = n;
    return n;
}

NOINLINE static void free_tree(struct node *n)
{
    if (!n)
        return;
    free_tree(n->l);
    free_tree(n->r);
    free(n);
    note_free(sizeof *n);
}

NOINLINE static void grow_buffer(int steps)
{
    char *p = NULL;
    size_t n = 0;
    for (int i = 1; i <= steps; i++) {
        size_t m = (size_t)i * 4096;
        char *q = realloc(p, m);
        /* realloc ends one block and starts another: one call, a new size */
        if (p)
            note_free(n);
        note_alloc(m);
        memset(q + n, 1, m - n);
        p = q, n = m;
    }
    sink = p;
    free(p);
    note_free(n);
}

static void *worker(void *arg)
{
    (void)arg;
    struct node *t = build_tree(9);
    pause_ms(5);
    free_tree(t);
    return NULL;
}

int main(void)
{
    void *table = startup_table(64 * 1024);
    sink = table;
    for (int round = 0; round < 20; round++) {
        void *c = cache_entry(512 + 64 * (size_t)round);
        sink = c;
        leaked += 512 + 64 * round;
        for (int i = 0; i < 25; i++)
            scratch_buffer(256 + (size_t)i * 32);
        if (round == 8) {
            struct node *t = build_tree(11);
            pause_ms(4);
            free_tree(t);
        }
        if (round == 14)
            grow_buffer(24);
        if (round == 17) {
            pthread_t th;
            if (pthread_create(&th, NULL, worker, NULL) == 0)
                pthread_join(th, NULL);
        }
        pause_ms(2);
    }
    leaked += 64 * 1024;
    printf("FIGURE calls %lld\n", calls);
    printf("FIGURE peak %lld\n", peak);
    printf("FIGURE leaked %lld\n", leaked);
    return 0;
}
