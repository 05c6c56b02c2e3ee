/* wl_synth.c: benchmark workload 1, a synthetic malloc/free loop.
 *
 *   wl_synth THREADS PAIRS
 *
 * Each of THREADS threads makes PAIRS malloc+free pairs of mixed sizes (8 bytes
 * to 4 KiB, drawn from a per-thread xorshift generator) over a ring of 64 live
 * blocks, so frees interleave with allocations the way a real program's do. The
 * benchmark driver divides the wall time by PAIRS for ns per pair (per thread).
 * Every block is written through a volatile pointer so the compiler cannot
 * delete a malloc/free pair. Exit status 0; prints nothing.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define RING 64

static long g_pairs;

/* One thread's loop: g_pairs pairs, seeded by the thread number in arg. */
static void *run(void *arg)
{
    uint64_t x = 0x9e3779b97f4a7c15ull ^ (uintptr_t)arg;
    void *ring[RING] = {0};
    for (long i = 0; i < g_pairs; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        unsigned slot = (unsigned)(x & (RING - 1));
        /* mostly small blocks, some up to 4 KiB */
        size_t size = (x >> 8) & 3 ? 8 + ((x >> 16) & 120) : 8 + ((x >> 16) & 4088);
        free(ring[slot]);
        char *p = malloc(size);
        if (!p)
            abort();
        *(volatile char *)p = (char)i;
        ring[slot] = p;
    }
    for (int i = 0; i < RING; i++)
        free(ring[i]);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: wl_synth THREADS PAIRS\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    g_pairs = atol(argv[2]);
    if (threads < 1 || threads > 64 || g_pairs < 1) {
        fprintf(stderr, "wl_synth: bad arguments\n");
        return 2;
    }
    pthread_t t[64];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&t[i], NULL, run, (void *)(uintptr_t)(i + 1)) != 0) {
            fprintf(stderr, "wl_synth: pthread_create failed\n");
            return 1;
        }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    return 0;
}
