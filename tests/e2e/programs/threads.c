/* threads.c: 8 threads, cross-thread frees and realloc chains.
 *
 * Each worker allocates BLOCKS blocks of a size unique to it and hands every
 * other one to the next worker, which frees it; each worker also grows one
 * block through a realloc chain. Rows, sizes, threads and frees must all match
 * exactly, and no block may be freed before it was allocated.
 */
#define _GNU_SOURCE
#include "expect.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
#define NTHREADS 8
#define BLOCKS 2000

static void *handoff[NTHREADS][BLOCKS];
static pthread_barrier_t barrier;
static atomic_long total_bytes;

NOINLINE void *worker_alloc(size_t n) { return malloc(n); }
NOINLINE void *worker_grow(void *p, size_t n) { return realloc(p, n); }
NOINLINE void *worker_reuse(size_t n) { return malloc(n); }

/* Phase 2: after freeing the next thread's blocks, each worker allocates
 * blocks of that thread's size again; glibc hands many of the just-freed
 * addresses back, so the same address is freed in one thread and allocated in
 * another. The program counts those reuses itself. */
static void *reused[NTHREADS][BLOCKS / 2];
static atomic_long reuse_hits;

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    size_t size = 32 + (size_t)id; /* unique per thread */
    void *mine[BLOCKS / 2];
    int nmine = 0;
    for (int i = 0; i < BLOCKS; i++) {
        if (i == 1) { /* named after its first allocation, as programs do */
            char name[16];
            snprintf(name, sizeof name, "worker-%d", id);
            pthread_setname_np(pthread_self(), name);
        }
        void *p = worker_alloc(size);
        KEEP(p);
        atomic_fetch_add(&total_bytes, (long)size);
        if (i % 2) handoff[id][i] = p;
        else mine[nmine++] = p;
    }
    void *g = NULL;
    for (int i = 1; i <= 20; i++)
        g = worker_grow(g, (size_t)i * 100);
    free(g);
    pthread_barrier_wait(&barrier);
    int from = (id + 1) % NTHREADS; /* free the next thread's blocks */
    for (int i = 1; i < BLOCKS; i += 2)
        free(handoff[from][i]);
    for (int i = 0; i < nmine; i++)
        free(mine[i]);
    size_t from_size = 32 + (size_t)from;
    for (int i = 0; i < BLOCKS / 2; i++) {
        void *p = worker_reuse(from_size);
        reused[id][i] = p;
        for (int j = 1; j < BLOCKS; j += 2)
            if (handoff[from][j] == p) {
                atomic_fetch_add(&reuse_hits, 1);
                break;
            }
    }
    for (int i = 0; i < BLOCKS / 2; i++)
        free(reused[id][i]);
    return NULL;
}

int main(void)
{
    pthread_t th[NTHREADS];
    pthread_barrier_init(&barrier, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);

    const char *at = "bt IN (SELECT id FROM backtraces WHERE frame_no = 0 AND sym = 'worker_alloc')";
    EXPECT(NTHREADS * BLOCKS, "SELECT count(*) FROM allocations WHERE %s", at);
    EXPECT(atomic_load(&total_bytes), "SELECT sum(size) FROM allocations WHERE %s", at);
    EXPECT(0, "SELECT count(*) FROM allocations WHERE dealloc_after IS NULL AND %s", at);
    /* each thread's blocks have one size and one allocating thread */
    EXPECT(NTHREADS, "SELECT count(DISTINCT alloc_thread) FROM allocations WHERE %s", at);
    EXPECT(NTHREADS, "SELECT count(*) FROM (SELECT size FROM allocations WHERE %s GROUP BY size HAVING count(DISTINCT alloc_thread) = 1 AND count(*) = %d)", at, BLOCKS);
    /* half of every thread's blocks were freed by another thread */
    EXPECT(NTHREADS * BLOCKS / 2, "SELECT count(*) FROM allocations WHERE alloc_thread <> dealloc_thread AND %s", at);
    EXPECT(0, "SELECT count(*) FROM allocations WHERE dealloc_after < alloc_after");
    /* address reuse across threads: every reuse the program saw is a row whose
     * address was allocated before by another thread and freed by this one,
     * and no two blocks at one address ever overlap in time */
    EXPECT(1, "SELECT %ld > 0", atomic_load(&reuse_hits));
    EXPECT(atomic_load(&reuse_hits),
           "SELECT count(*) FROM allocations b WHERE b.bt IN (SELECT id FROM backtraces WHERE frame_no = 0 "
           "AND sym = 'worker_reuse') AND EXISTS (SELECT 1 FROM allocations a WHERE a.addr = b.addr "
           "AND a.alloc_thread <> b.alloc_thread AND a.dealloc_thread = b.alloc_thread AND %s)", at);
    EXPECT(0, "SELECT count(*) FROM allocations a JOIN allocations b ON a.addr = b.addr AND a.id <> b.id "
              "AND b.alloc_after >= a.alloc_after AND (a.dealloc_after IS NULL OR b.alloc_after < a.dealloc_after)");
    /* each worker's rows carry the name it gave itself */
    EXPECT(NTHREADS, "SELECT count(DISTINCT t.name) FROM threads t JOIN allocations a ON a.alloc_thread = t.id "
                     "WHERE t.name LIKE 'worker-%%' AND a.size = 32 + substr(t.name, 8) AND %s", at);
    /* realloc chains: 20 rows per thread */
    EXPECT(NTHREADS * 20, "SELECT count(*) FROM allocations WHERE kind = 'realloc' AND bt IN (SELECT id FROM backtraces WHERE frame_no = 0 AND sym = 'worker_grow')");
    EXPECT(0, "SELECT count(*) FROM leaks WHERE bt IN (SELECT id FROM backtraces WHERE frame_no = 0 AND sym = 'worker_grow')");
    return 0;
}
