/* known.c: allocations whose stacks, sizes and lifetimes the program knows.
 *
 * Three call sites, each reached through its own noinline chain from main:
 *   main -> mid -> leaf_a   10 blocks of 100 bytes, each freed at once
 *   main -> leaf_b           5 blocks of 300 bytes, never freed
 *   main -> hold             4 blocks of 1000 bytes, live together, then freed
 * The leaks come first, so the peak is the leaks plus the four held blocks.
 * The program prints what the report commands must find, one fact a line:
 *   FOLDED <all|leaked|peak> <stack> <bytes>
 *   FIGURE <calls|peak|leaked> <value>
 * and tests/integration/report/*.sh compare those with rheaper's output.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, noclone))

static void *volatile sink; /* keeps every block used, so no pair is deleted */

NOINLINE static void *leaf_a(size_t n)
{
    void *p = malloc(n);
    sink = p;
    return p;
}

NOINLINE static void *mid(size_t n)
{
    void *p = leaf_a(n);
    memset(p, 1, n); /* work after the call: no tail call hides mid */
    return p;
}

NOINLINE static void *leaf_b(size_t n)
{
    void *p = malloc(n);
    sink = p;
    return p;
}

NOINLINE static void *hold(size_t n)
{
    void *p = malloc(n);
    sink = p;
    return p;
}

int main(void)
{
    long long leaked = 0, calls = 0, live = 0, peak = 0;
    for (int i = 0; i < 5; i++) {
        void *p = leaf_b(300);
        memset(p, 2, 300);
        leaked += 300, live += 300, calls++;
    }
    peak = live;
    for (int i = 0; i < 10; i++) {
        void *p = mid(100);
        calls++;
        if (live + 100 > peak)
            peak = live + 100;
        free(p);
    }
    void *held[4];
    for (int i = 0; i < 4; i++) {
        held[i] = hold(1000);
        memset(held[i], 3, 1000);
        live += 1000, calls++;
        if (live > peak)
            peak = live;
    }
    for (int i = 0; i < 4; i++) {
        free(held[i]);
        live -= 1000;
    }
    printf("FOLDED all main;mid;leaf_a %d\n", 10 * 100);
    printf("FOLDED all main;leaf_b %d\n", 5 * 300);
    printf("FOLDED all main;hold %d\n", 4 * 1000);
    printf("FOLDED leaked main;leaf_b %d\n", 5 * 300);
    printf("FOLDED peak main;leaf_b %d\n", 5 * 300);
    printf("FOLDED peak main;hold %d\n", 4 * 1000);
    printf("FIGURE calls %lld\n", calls);
    printf("FIGURE peak %lld\n", peak);
    printf("FIGURE leaked %lld\n", leaked);
    return 0;
}
