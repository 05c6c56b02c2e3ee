/* priv_drop.c: a server's start, reduced: as root, a few allocations, then a
 * switch to an unprivileged user (setgid, setgroups, setuid, the order nginx
 * uses) and many more allocations. Every allocation has size 777, so the
 * test counts rows of that size: exactly PRE + POST.
 *
 *   priv_drop UID GID PRE POST
 *
 * Prints "ids UID GID" after the switch and "allocs N" at the end. */
#define _GNU_SOURCE
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *volatile sink;

int main(int argc, char **argv)
{
    if (argc != 5)
        return 2;
    unsigned uid = (unsigned)atoi(argv[1]), gid = (unsigned)atoi(argv[2]);
    long pre = atol(argv[3]), post = atol(argv[4]), n = 0;
    void *keep[64];
    for (long i = 0; i < pre; i++, n++) {
        void *p = malloc(777);
        sink = p;
        if (i < 64)
            keep[i] = p;
        else
            free(p);
    }
    if (setgid(gid) != 0 || setgroups(0, NULL) != 0 || setuid(uid) != 0) {
        perror("priv_drop: switching user");
        return 1;
    }
    printf("ids %u %u\n", (unsigned)geteuid(), (unsigned)getegid());
    for (long i = 0; i < post; i++, n++) {
        void *p = malloc(777);
        sink = p;
        free(p);
    }
    for (long i = 0; i < pre && i < 64; i++)
        free(keep[i]);
    printf("allocs %ld\n", n);
    return 0;
}
