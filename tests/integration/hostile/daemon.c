/* daemon.c: a daemon that closes every fd and reopens its log on fd 3.
 *
 *   daemon wronly|rdwr|append|pipe
 *
 * The parent forks the daemon and waits for it (so the test is synchronous).
 * The daemon reads its configuration (an allocation: the profile is open from
 * here), then closes every fd with a close() loop and close_range, reopens
 * /dev/null on 0-2 and opens its log, which gets fd 3: data/daemon.log opened
 * O_WRONLY, O_RDWR or O_APPEND, or the write end of a pipe whose read end it
 * drains into data/daemon.log. It then writes 10 001 lines while allocating,
 * so the runtime opens many chunks while fd 3 is the daemon's. Exit status 0
 * only when every write was whole and the log reads back as written.
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
#define LINES 10001

NOINLINE static char *daemon_line(int i)
{
    char *p = malloc(64);
    if (p)
        snprintf(p, 64, "line %05d of the daemon's log\n", i);
    return p;
}

NOINLINE static void *daemon_scratch(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 1, n);
    return p;
}

/* Writes all of buf to fd; 0 or -1. */
static int write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Moves len bytes from the pipe's read end to the log. */
static int drain(int rd, int log, size_t len)
{
    char buf[4096];
    while (len) {
        ssize_t r = read(rd, buf, len < sizeof buf ? len : sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || write_all(log, buf, (size_t)r))
            return -1;
        len -= (size_t)r;
    }
    return 0;
}

NOINLINE static char *daemon_config(void)
{
    return strdup("loglevel=info");
}

static int daemon_main(const char *mode)
{
    /* a daemon reads its configuration before it detaches: the runtime has
     * started its profile by then */
    char *conf = daemon_config();
    for (int fd = 0; fd < 1024; fd++)
        close(fd);
    close_range(3, ~0u, 0);
    for (int i = 0; i < 3; i++)
        if (open("/dev/null", O_RDWR) != i)
            return 10;
    int pipe_mode = !strcmp(mode, "pipe");
    int rd = -1, log = 3;
    if (pipe_mode) {
        int p[2];
        if (pipe(p) || p[0] != 3 || p[1] != 4)
            return 11;
        rd = fcntl(p[0], F_DUPFD_CLOEXEC, 10); /* the read end moves away ... */
        if (rd < 0 || dup2(p[1], 3) != 3)      /* ... and fd 3 is the write end */
            return 12;
        close(4);
        log = open("data/daemon.log", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (log < 0)
            return 13;
    } else {
        int flags = !strcmp(mode, "wronly") ? O_WRONLY | O_TRUNC
                    : !strcmp(mode, "rdwr") ? O_RDWR | O_TRUNC
                                            : O_WRONLY | O_APPEND;
        if (open("data/daemon.log", flags | O_CREAT, 0644) != 3)
            return 14;
    }
    int bad = 0;
    size_t pending = 0;
    for (int i = 0; i < LINES; i++) {
        char *line = daemon_line(i);
        void *s = daemon_scratch(100 + (size_t)(i % 200));
        size_t len = strlen(line);
        if (write_all(3, line, len))
            bad++;
        pending += len;
        free(s);
        free(line);
        if (pipe_mode && (pending > 16384 || i == LINES - 1)) {
            if (drain(rd, log, pending))
                bad++;
            pending = 0;
        }
    }
    /* the log must read back exactly as written */
    int chk = open("data/daemon.log", O_RDONLY);
    char want[64], got[64];
    for (int i = 0; chk >= 0 && i < LINES; i++) {
        int n = snprintf(want, sizeof want, "line %05d of the daemon's log\n", i);
        if (read(chk, got, (size_t)n) != n || memcmp(got, want, (size_t)n)) {
            bad++;
            break;
        }
    }
    if (chk < 0 || read(chk, got, 1) != 0)
        bad++;
    close(chk);
    free(conf);
    int me = (int)getpid();
    EXPECT(LINES, "@rip-%d SELECT count(*) FROM allocations WHERE size = 64 AND dealloc_after IS NOT NULL AND " AT_SYM("daemon_line"), me);
    EXPECT(LINES, "@rip-%d SELECT count(*) FROM allocations WHERE dealloc_after IS NOT NULL AND " AT_SYM("daemon_scratch"), me);
    EXPECT(0, "@rip-%d SELECT count(*) FROM allocations WHERE dealloc_after IS NULL AND (" AT_SYM("daemon_scratch") " OR " AT_SYM("daemon_line") ")", me);
    EXPECT(1, "@rip-%d SELECT count(*) FROM allocations WHERE size = 14 AND dealloc_after IS NOT NULL AND " AT_SYM("daemon_config"), me);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "wronly";
    pid_t c = fork();
    if (c == 0)
        exit(daemon_main(mode));
    int st = 0;
    if (c < 0 || waitpid(c, &st, 0) != c)
        return 3;
    printf("daemon (%s) exited with %d\n", mode, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 4;
}
