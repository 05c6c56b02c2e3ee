/* before_main.c: allocations made before main are recorded.
 *
 * A constructor of the highest priority allocates 5 blocks; with
 * RHEAPER_ENABLE=1 they must all be rows. In a -static program libc itself
 * allocates before any constructor runs, and those must be recorded too.
 */
#include "expect.h"

#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

extern char _DYNAMIC[] __attribute__((weak)); /* NULL in a static program */

static void *early[5];

NOINLINE void *early_alloc(size_t n) { return malloc(n); }

__attribute__((constructor(101))) static void early_ctor(void)
{
    for (int i = 0; i < 5; i++)
        early[i] = early_alloc(64);
}

int main(void)
{
    for (int i = 0; i < 5; i++)
        free(early[i]);
    EXPECT(5, "SELECT count(*) FROM allocations WHERE size = 64 AND dealloc_after IS NOT NULL AND "
              AT_SYM("early_alloc"));
    EXPECT(1, "SELECT count(DISTINCT sym) FROM backtraces WHERE frame_no = 1 AND sym = 'early_ctor'");
    if (!_DYNAMIC)
        EXPECT(1, "SELECT count(*) > 0 FROM allocations WHERE alloc_after < (SELECT min(alloc_after) "
                  "FROM allocations WHERE " AT_SYM("early_alloc") ")");
    return 0;
}
