/* rlimit_as.c: run under `prlimit --as=209715200` (200 MiB), the program
 * allocates 170 MiB in one block.
 *
 * The plain build fits; the runtime's own mappings (its stack table above
 * all) must leave the program that room. Exit status 0 when the block was
 * allocated and usable.
 */
#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
#define BIG (170u << 20)

NOINLINE static void *small_alloc(size_t n) { return KEEP(malloc(n)); }
NOINLINE static char *big_alloc(size_t n) { return KEEP(malloc(n)); }

int main(void)
{
    for (int i = 0; i < 100; i++)
        free(small_alloc(128));
    char *big = big_alloc(BIG);
    if (!big) {
        printf("malloc(170 MiB) failed\n");
        return 1;
    }
    for (size_t off = 0; off < BIG; off += 1u << 20)
        big[off] = (char)off; /* touch one byte per MiB */
    free(big);
    EXPECT(100, "SELECT count(*) FROM allocations WHERE size = 128 AND " AT_SYM("small_alloc"));
    EXPECT(1, "SELECT count(*) FROM allocations WHERE size = %u AND dealloc_after IS NOT NULL AND " AT_SYM("big_alloc"), BIG);
    printf("malloc(170 MiB) succeeded\n");
    return 0;
}
