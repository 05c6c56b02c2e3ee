/* poolkinds.c: one annotated allocator function serving six pools, each with
 * its own name (kind), called from three functions of the program. The
 * annotation function allocates from one place for every kind, so it is a
 * wrapper however many kinds it serves: every row's call site is the
 * program's caller (the call-site rule keeps every kind a function serves). */
#define _GNU_SOURCE
#include "expect.h"

#include <stdlib.h>

#include "rheaper.h"

#define NOINLINE __attribute__((noinline))

static struct rheaper_pool pools[6] = {
    RHEAPER_POOL_INIT("pool_a"), RHEAPER_POOL_INIT("pool_b"), RHEAPER_POOL_INIT("pool_c"),
    RHEAPER_POOL_INIT("pool_d"), RHEAPER_POOL_INIT("pool_e"), RHEAPER_POOL_INIT("pool_f"),
};
static char arena[1 << 16];
static size_t used;

/* The annotation wrapper: one place records every pool's blocks. */
NOINLINE static void *pool_alloc_rh(int pool, size_t n)
{
    void *p = arena + used;
    used += (n + 15) & ~(size_t)15;
    rheaper_alloc_event(p, n, &pools[pool]);
    return p;
}

NOINLINE static void parse(void) { for (int k = 0; k < 6; k++) KEEP(pool_alloc_rh(k, 16)); }
NOINLINE static void plan(void) { for (int k = 0; k < 6; k++) KEEP(pool_alloc_rh(k, 32)); }
NOINLINE static void execute(void) { for (int k = 0; k < 6; k++) KEEP(pool_alloc_rh(k, 48)); }

#define SITE_IS(f) "(SELECT b.sym FROM stacks s JOIN backtraces b ON b.id = s.id AND " \
                   "b.frame_no = s.callsite WHERE s.id = a.bt) = '" f "'"

int main(void)
{
    for (int i = 0; i < 5; i++) {
        parse();
        plan();
        execute();
    }
    EXPECT(90, "SELECT count(*) FROM allocations WHERE kind LIKE 'pool_%%'");
    EXPECT(30, "SELECT count(*) FROM allocations a WHERE kind LIKE 'pool_%%' AND " SITE_IS("parse"));
    EXPECT(30, "SELECT count(*) FROM allocations a WHERE size = 32 AND " SITE_IS("plan"));
    EXPECT(30, "SELECT count(*) FROM allocations a WHERE size = 48 AND " SITE_IS("execute"));
    EXPECT(0, "SELECT count(*) FROM allocations a WHERE " SITE_IS("pool_alloc_rh"));
    EXPECT(1, "SELECT count(*) FROM skipped_functions WHERE sym = 'pool_alloc_rh'");
    return 0;
}
