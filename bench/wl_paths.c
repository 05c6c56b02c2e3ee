/* wl_paths.c: benchmark workload 4, many distinct call paths.
 *
 *   wl_paths LEVELS ROUNDS
 *
 * Enumerates every LEVELS-bit number; for each, it descends LEVELS frames,
 * choosing at each level one of two different functions (step_a or step_b) by
 * the next bit, and allocates at the bottom. Each number is therefore a distinct
 * chain of return addresses: 2^LEVELS distinct call paths (LEVELS 17 gives
 * 131072), each visited ROUNDS times. step_a and step_b touch different
 * counters so gcc's identical-code folding cannot merge them. Prints nothing.
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long g_a, g_b, g_sink;

static void walk(int level, unsigned bits);

static __attribute__((noinline)) void step_a(int level, unsigned bits)
{
    walk(level - 1, bits >> 1);
    g_a++;
}

static __attribute__((noinline)) void step_b(int level, unsigned bits)
{
    walk(level - 1, bits >> 1);
    g_b++;
}

/* At level 0 one malloc+free pair; above it, one more frame chosen by bit 0. */
static __attribute__((noinline)) void walk(int level, unsigned bits)
{
    if (level == 0) {
        char *p = malloc(24 + (g_sink & 7) * 8);
        if (!p)
            abort();
        *(volatile char *)p = 1;
        g_sink += (unsigned long)p >> 4;
        free(p);
        return;
    }
    if (bits & 1)
        step_a(level, bits);
    else
        step_b(level, bits);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: wl_paths LEVELS ROUNDS\n");
        return 2;
    }
    int levels = atoi(argv[1]);
    int rounds = atoi(argv[2]);
    if (levels < 1 || levels > 24 || rounds < 1) {
        fprintf(stderr, "wl_paths: bad arguments\n");
        return 2;
    }
    for (int r = 0; r < rounds; r++)
        for (unsigned b = 0; b < (1u << levels); b++)
            walk(levels, b);
    return 0;
}
