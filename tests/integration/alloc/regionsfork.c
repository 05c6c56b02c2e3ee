/* regionsfork.c: a forked backend and the contexts it inherited, as
 * PostgreSQL's postmaster and its backends (regions.alloc). The parent
 * creates CacheMemoryContext and MessageContext with chunks in both and
 * forks; the child pfrees 3 inherited chunks, resets MessageContext (its 4
 * inherited chunks end there) and allocates 2 more in CacheMemoryContext.
 * The child's profile (the one with the expectations) has every inherited
 * chunk with its region, no unknown free, and exactly the child's leaks. */
#define _GNU_SOURCE
#include "expect.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mcxt.h"

static void marker(size_t size)
{
    void *p = malloc(size);
    KEEP(p);
    free(p);
}

int main(void)
{
    void *c[6];
    TopMemoryContext = AllocSetContextCreateInternal(NULL, "TopMemoryContext", 0, 8192, 8 << 20);
    MemoryContext cache = AllocSetContextCreateInternal(TopMemoryContext, "CacheMemoryContext", 0, 8192, 8 << 20);
    MemoryContext msg = AllocSetContextCreateInternal(TopMemoryContext, "MessageContext", 0, 8192, 8 << 20);
    for (int i = 0; i < 6; i++)
        c[i] = MemoryContextAlloc(cache, 40);
    MemoryContextSwitchTo(msg);
    for (int i = 0; i < 4; i++)
        KEEP(palloc(100));
    pid_t pid = fork();
    if (pid > 0) {
        int st;
        waitpid(pid, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    }
    for (int i = 0; i < 3; i++)
        pfree(c[i]);
    marker(1001);
    MemoryContextReset(msg);
    marker(1002);
    for (int i = 0; i < 2; i++)
        KEEP(MemoryContextAlloc(cache, 24));
    EXPECT((long long)getpid(), "SELECT value FROM meta WHERE key = 'pid'");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'unknown_frees'");
    EXPECT(3, "SELECT count(*) FROM allocations WHERE size = 40 AND dealloc_after < "
              "(SELECT alloc_after FROM allocations WHERE size = 1001)");
    EXPECT(4, "SELECT count(*) FROM allocations WHERE size = 100 AND dealloc_after > "
              "(SELECT alloc_after FROM allocations WHERE size = 1001) AND dealloc_after < "
              "(SELECT alloc_after FROM allocations WHERE size = 1002)");
    EXPECT(5, "SELECT count(*) FROM leaks WHERE id IN (SELECT id FROM region_blocks)");
    EXPECT(8, "SELECT count(*) FROM region_blocks rb JOIN regions g ON g.id = rb.region "
              "WHERE g.name = 'CacheMemoryContext'");
    EXPECT(4, "SELECT count(*) FROM region_blocks rb JOIN regions g ON g.id = rb.region "
              "WHERE g.name = 'MessageContext'");
    EXPECT(1, "SELECT count(*) FROM regions c JOIN regions p ON p.id = c.parent "
              "WHERE c.name = 'CacheMemoryContext' AND p.name = 'TopMemoryContext'");
    return 0;
}
