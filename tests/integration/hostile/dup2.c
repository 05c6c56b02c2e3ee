/* dup2.c: dup2() of a pipe or a file onto fds 3..20, then allocating and
 * writing to each of them.
 *
 *   dup2 pipe|rdwr|append|wronly
 *
 * The program allocates first (the profile is open), then makes fds 3..20
 * copies of one target: the write end of a pipe (drained into data/dup.out),
 * or data/dup.out opened O_RDWR, O_APPEND or O_WRONLY. 500 rounds then write
 * one line to each fd, allocating around every write, so the runtime opens
 * chunks while the program owns every low fd number. Exit status 0 only when
 * every write was whole and the output reads back as written.
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
#define ROUNDS 500
#define LO 3
#define HI 20

NOINLINE static char *dup_line(int fd, int r)
{
    char *p = malloc(48);
    if (p)
        snprintf(p, 48, "fd %02d round %03d\n", fd, r);
    return p;
}

NOINLINE static void *dup_scratch(size_t n)
{
    void *p = malloc(n);
    if (p)
        memset(p, 2, n);
    return p;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "pipe";
    void *early = dup_scratch(1000);
    int pipe_mode = !strcmp(mode, "pipe");
    int target, rd = -1, out = -1;
    if (pipe_mode) {
        int p[2];
        if (pipe(p))
            return 10;
        rd = fcntl(p[0], F_DUPFD_CLOEXEC, 40);
        target = fcntl(p[1], F_DUPFD_CLOEXEC, 41);
        close(p[0]);
        close(p[1]);
        out = open("data/dup.out", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        out = fcntl(out, F_DUPFD_CLOEXEC, 42);
    } else {
        int flags = !strcmp(mode, "rdwr") ? O_RDWR | O_TRUNC
                    : !strcmp(mode, "append") ? O_WRONLY | O_APPEND
                                              : O_WRONLY | O_TRUNC;
        int fd = open("data/dup.out", flags | O_CREAT, 0644);
        target = fcntl(fd, F_DUPFD_CLOEXEC, 41);
        close(fd);
    }
    if (target < 0 || (pipe_mode && (rd < 0 || out < 0)))
        return 11;
    for (int fd = LO; fd <= HI; fd++)
        if (dup2(target, fd) != fd)
            return 12;
    int bad = 0;
    char buf[4096];
    for (int r = 0; r < ROUNDS; r++) {
        size_t pending = 0;
        for (int fd = LO; fd <= HI; fd++) {
            char *line = dup_line(fd, r);
            void *s = dup_scratch(64 + (size_t)fd);
            size_t len = strlen(line);
            if (write(fd, line, len) != (ssize_t)len)
                bad++;
            pending += len;
            free(s);
            free(line);
        }
        while (pipe_mode && pending) {
            ssize_t n = read(rd, buf, pending < sizeof buf ? pending : sizeof buf);
            if (n <= 0 || write(out, buf, (size_t)n) != n) {
                bad++;
                break;
            }
            pending -= (size_t)n;
        }
    }
    for (int fd = LO; fd <= HI; fd++)
        close(fd);
    /* the output reads back as written */
    int chk = open("data/dup.out", O_RDONLY);
    for (int r = 0; chk >= 0 && r < ROUNDS && !bad; r++)
        for (int fd = LO; fd <= HI; fd++) {
            char want[48], got[48];
            int n = snprintf(want, sizeof want, "fd %02d round %03d\n", fd, r);
            if (read(chk, got, (size_t)n) != n || memcmp(got, want, (size_t)n)) {
                bad++;
                break;
            }
        }
    char extra;
    if (chk < 0 || read(chk, &extra, 1) != 0)
        bad++;
    close(chk);
    free(early);
    int n = ROUNDS * (HI - LO + 1);
    EXPECT(n, "SELECT count(*) FROM allocations WHERE size = 48 AND dealloc_after IS NOT NULL AND " AT_SYM("dup_line"));
    EXPECT(n + 1, "SELECT count(*) FROM allocations WHERE dealloc_after IS NOT NULL AND " AT_SYM("dup_scratch"));
    printf("dup2 (%s): %s\n", mode, bad ? "a write or the read-back failed" : "all writes whole");
    return bad ? 1 : 0;
}
