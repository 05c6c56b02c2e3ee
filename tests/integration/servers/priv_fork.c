/* priv_fork.c: a prefork server's start, reduced: the parent (root) makes
 * PARENT allocations of 555 bytes, forks a worker that switches to an
 * unprivileged user before it allocates anything (so its profile must be
 * created then), makes CHILD allocations of 666 bytes and exits; the parent
 * waits for it, makes PARENT more allocations of 555 bytes and exits.
 *
 *   priv_fork UID GID PARENT CHILD
 *
 * Prints "child PID status S" and "parent allocs N". */
#define _GNU_SOURCE
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile sink;

static void churn(long n, size_t size)
{
    for (long i = 0; i < n; i++) {
        void *p = malloc(size);
        sink = p;
        free(p);
    }
}

int main(int argc, char **argv)
{
    if (argc != 5)
        return 2;
    unsigned uid = (unsigned)atoi(argv[1]), gid = (unsigned)atoi(argv[2]);
    long parent = atol(argv[3]), child = atol(argv[4]);
    churn(parent, 555);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        /* no allocation before the switch */
        if (setgid(gid) != 0 || setgroups(0, NULL) != 0 || setuid(uid) != 0)
            _exit(3);
        churn(child, 666);
        exit(0); /* the trailer is written by exit's handlers */
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        return 1;
    churn(parent, 555);
    printf("child %d status %d\n", (int)pid, WIFEXITED(st) ? WEXITSTATUS(st) : 128);
    printf("parent allocs %ld\n", 2 * parent);
    return 0;
}
