/* fork.c: a child that goes on allocating writes its own profile, without
 * the parent's events (the parent's blocks live at the fork are imported by
 * the converter as inherited rows); a child that only execs leaves no
 * profile.
 */
#include "expect.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

NOINLINE void *parent_alloc(size_t n) { return malloc(n); }
NOINLINE void *child_alloc(size_t n) { return malloc(n); }

int main(void)
{
    int ppid = (int)getpid();
    for (int i = 0; i < 10; i++)
        KEEP(parent_alloc(100));

    pid_t c = fork();
    if (c == 0) {
        for (int i = 0; i < 7; i++)
            free(KEEP(child_alloc(200)));
        int me = (int)getpid();
        EXPECT(7, "@rip-%d SELECT count(*) FROM allocations WHERE size = 200 AND dealloc_after IS NOT NULL AND " AT_SYM("child_alloc"), me);
        /* the parent's 10 blocks live at the fork: imported from its
         * profile as the child's first rows, not as the child's own */
        EXPECT(0, "@rip-%d SELECT count(*) FROM allocations WHERE " AT_SYM("parent_alloc")
                  " AND id > (SELECT value FROM meta WHERE key = 'inherited_rows')", me);
        EXPECT(10, "@rip-%d SELECT count(*) FROM allocations WHERE size = 100 AND "
                   AT_SYM("parent_alloc")
                   " AND id <= (SELECT value FROM meta WHERE key = 'inherited_rows')", me);
        EXPECT(me, "@rip-%d SELECT value FROM meta WHERE key = 'pid'", me);
        exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    EXPECT(0, "SELECT %d", !(WIFEXITED(st) && WEXITSTATUS(st) == 0));

    /* a child that only execs */
    pid_t e = fork();
    if (e == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    waitpid(e, &st, 0);
    char name[64];
    snprintf(name, sizeof name, "rip-%d", (int)e);
    EXPECT(0, "SELECT %d /* a profile %s exists */", access(name, F_OK) == 0, name);

    for (int i = 0; i < 3; i++)
        KEEP(parent_alloc(100));
    EXPECT(13, "@rip-%d SELECT count(*) FROM allocations WHERE size = 100 AND " AT_SYM("parent_alloc"), ppid);
    EXPECT(0, "@rip-%d SELECT count(*) FROM allocations WHERE " AT_SYM("child_alloc"), ppid);
    return 0;
}
