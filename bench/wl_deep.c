/* wl_deep.c: benchmark workload 3, deep stacks.
 *
 *   wl_deep DEPTH COUNT
 *
 * COUNT times: recurses DEPTH frames (noinline, not a tail call, so every
 * level is a real frame with its frame pointer) and makes one malloc+free pair
 * of a varying size at the bottom, so every allocation follows a fresh descent
 * and its frame-pointer walk is DEPTH + 3 frames deep. The benchmark runs it
 * with DEPTH 50. Prints nothing; exit status 0.
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long g_sink;

/* Makes one pair at this depth. */
static __attribute__((noinline)) void leaf(unsigned long seed)
{
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    char *p = malloc(16 + (seed >> 58) * 8);
    if (!p)
        abort();
    *(volatile char *)p = 1;
    g_sink += (unsigned long)p;
    free(p);
}

/* Descends `depth` more frames, then calls leaf. The add after the call keeps
 * it from being a tail call. */
static __attribute__((noinline)) unsigned long down(int depth, unsigned long seed)
{
    if (depth == 0) {
        leaf(seed);
        return 1;
    }
    unsigned long r = down(depth - 1, seed + 1);
    g_sink += r;
    return r + 1;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: wl_deep DEPTH COUNT\n");
        return 2;
    }
    int depth = atoi(argv[1]);
    long count = atol(argv[2]);
    if (depth < 0 || depth > 10000 || count < 1) {
        fprintf(stderr, "wl_deep: bad arguments\n");
        return 2;
    }
    for (long i = 0; i < count; i++)
        down(depth, (unsigned long)i);
    return 0;
}
