/* server.c: a server that closes fds >= 3 at start-up, opens its log (fd 3)
 * and forks a worker that writes to it.
 *
 * The server allocates first (the profile is open), then closes every fd
 * above 2 with close_range, opens data/server.log O_APPEND (fd 3), logs while
 * allocating, and forks a worker that logs 2000 lines to the same fd. A fork
 * handler that closed "its" fd in the child would close the worker's log.
 * Exit status 0 only when every write was whole.
 */
#define _GNU_SOURCE
#include "expect.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

NOINLINE static char *server_msg(const char *who, int i)
{
    char *p = malloc(80);
    if (p)
        snprintf(p, 80, "%s line %05d\n", who, i);
    return p;
}

NOINLINE static char *worker_msg(int i)
{
    char *p = malloc(96);
    if (p)
        snprintf(p, 96, "worker line %05d\n", i);
    return p;
}

static int log_line(char *line)
{
    size_t len = strlen(line);
    ssize_t w = write(3, line, len);
    free(line);
    return w == (ssize_t)len ? 0 : 1;
}

int main(void)
{
    int bad = 0;
    for (int i = 0; i < 100; i++)
        free(server_msg("startup", i));
    close_range(3, ~0u, 0);
    if (open("data/server.log", O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644) != 3)
        return 10;
    for (int i = 0; i < 1000; i++)
        bad += log_line(server_msg("server", i));
    pid_t c = fork();
    if (c == 0) {
        int wbad = 0;
        for (int i = 0; i < 2000; i++)
            wbad += log_line(worker_msg(i));
        int me = (int)getpid();
        EXPECT(2000, "@rip-%d SELECT count(*) FROM allocations WHERE size = 96 AND dealloc_after IS NOT NULL AND " AT_SYM("worker_msg"), me);
        EXPECT(0, "@rip-%d SELECT count(*) FROM allocations WHERE " AT_SYM("server_msg"), me);
        exit(wbad ? 1 : 0);
    }
    int st = 0;
    if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        bad++;
    for (int i = 1000; i < 1500; i++)
        bad += log_line(server_msg("server", i));
    int me = (int)getpid();
    EXPECT(1600, "@rip-%d SELECT count(*) FROM allocations WHERE size = 80 AND dealloc_after IS NOT NULL AND " AT_SYM("server_msg"), me);
    EXPECT(0, "@rip-%d SELECT count(*) FROM allocations WHERE " AT_SYM("worker_msg"), me);
    printf("server: %s\n", bad ? "a write failed" : "all writes whole");
    return bad ? 1 : 0;
}
