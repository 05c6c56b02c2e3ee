/* drop_fork.c: a daemon that drops privileges before it forks, the way
 * `memcached -d -u nobody` starts: as root it makes 3 allocations of 555
 * bytes, switches to UID/GID, forks (its worker's profile is created by the
 * child, as the new user), the worker makes 7 allocations of 666 bytes and
 * exits, the parent waits and exits.
 *
 *   drop_fork UID GID     (UID "-": a server started as its own user, no drop) */
#define _GNU_SOURCE
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile sink;

static void churn(int n, size_t size)
{
    for (int i = 0; i < n; i++) {
        void *p = malloc(size);
        sink = p;
        free(p);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    churn(3, 555);
    /* UID "-": started as its own user, nothing to drop */
    if (strcmp(argv[1], "-") && (setgroups(0, NULL) != 0 || setgid((gid_t)atoi(argv[2])) != 0 ||
                                 setuid((uid_t)atoi(argv[1])) != 0)) {
        perror("drop");
        return 1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        churn(7, 666);
        return 0;
    }
    int st = 0;
    waitpid(pid, &st, 0);
    printf("worker %d status %d\n", (int)pid, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}
