/* nofile.c: run under `prlimit --nofile=4`, the program opens one file.
 *
 * With fds 0-2 in use, the one fd the limit leaves is the program's: its
 * open must succeed (and get fd 3), whatever the runtime does. The program
 * allocates before, while and after it holds the file (what it allocates
 * while holding it fits the chunk the runtime has open; a chunk needed while
 * the program holds its last fd is counted lost, see docs/limits.md). Exit status 0 when the
 * open succeeded and every write was whole.
 */
#define _GNU_SOURCE
#include "expect.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

NOINLINE static void *before_alloc(size_t n) { return KEEP(malloc(n)); }
NOINLINE static char *while_alloc(size_t n) { return KEEP(malloc(n)); }
NOINLINE static void *after_alloc(size_t n) { return KEEP(malloc(n)); }

int main(void)
{
    close_range(3, ~0u, 0); /* whatever the caller leaked: fds 0-2 only */
    void *keep[200];
    for (int i = 0; i < 200; i++)
        keep[i] = before_alloc(32);
    int fd = open("data/out.txt", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        printf("open failed: %s\n", strerror(errno));
        return 1;
    }
    int bad = 0;
    for (int i = 0; i < 100; i++) {
        char *p = while_alloc(48);
        int n = snprintf(p, 48, "line %03d\n", i);
        if (write(fd, p, (size_t)n) != n)
            bad++;
        free(p);
    }
    close(fd);
    for (int i = 0; i < 200; i++) {
        free(after_alloc(64));
        free(keep[i]);
    }
    EXPECT(200, "SELECT count(*) FROM allocations WHERE size = 32 AND dealloc_after IS NOT NULL AND " AT_SYM("before_alloc"));
    EXPECT(100, "SELECT count(*) FROM allocations WHERE size = 48 AND dealloc_after IS NOT NULL AND " AT_SYM("while_alloc"));
    EXPECT(200, "SELECT count(*) FROM allocations WHERE size = 64 AND dealloc_after IS NOT NULL AND " AT_SYM("after_alloc"));
    /* EXPECT keeps its file open: the program holds one file at a time */
    close(rh_e2e_fd);
    printf("opened fd %d, %s\n", fd, bad ? "a write failed" : "all writes whole");
    return bad ? 1 : 0;
}
