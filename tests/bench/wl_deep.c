/* wl_deep.c: benchmark workload 3, deep stacks.
 *
 *   wl_deep DEPTH COUNT
 *
 * Recurses DEPTH frames (noinline, not a tail call, so every level is a real
 * frame with its frame pointer) and then makes COUNT malloc+free pairs of mixed
 * sizes at the bottom, one pair per descent of 1000 pairs, so the frame-pointer
 * walk of every allocation is DEPTH + 2 frames deep. The benchmark runs it with
 * DEPTH 50. Prints nothing; exit status 0.
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long g_sink;

/* Makes n pairs at this depth. */
static __attribute__((noinline)) void leaf(long n, unsigned long seed)
{
    for (long i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        char *p = malloc(16 + (seed >> 58) * 8);
        if (!p)
            abort();
        *(volatile char *)p = 1;
        g_sink += (unsigned long)p;
        free(p);
    }
}

/* Descends `depth` more frames, then calls leaf. The add after the call keeps
 * it from being a tail call. */
static __attribute__((noinline)) unsigned long down(int depth, long n, unsigned long seed)
{
    if (depth == 0) {
        leaf(n, seed);
        return 1;
    }
    unsigned long r = down(depth - 1, n, seed + 1);
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
    for (long done = 0; done < count; done += 1000)
        down(depth, count - done < 1000 ? count - done : 1000, (unsigned long)done);
    return 0;
}
