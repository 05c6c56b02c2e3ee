/* priv_chroot.c: a server that chroots after its start (as root): BEFORE
 * allocations of 333 bytes, chroot(DIR), then AFTER allocations of 444
 * bytes. The runtime closes the recording cleanly just before the chroot,
 * with one line, so the profile holds exactly the BEFORE rows.
 *
 *   priv_chroot DIR BEFORE AFTER
 *
 * Prints "chroot 0" (the call's result) and "allocs N". */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
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
    if (argc != 4)
        return 2;
    long before = atol(argv[2]), after = atol(argv[3]);
    churn(before, 333);
    int rc = chroot(argv[1]);
    if (rc == 0 && chdir("/") != 0)
        return 1;
    churn(after, 444);
    printf("chroot %d\nallocs %ld\n", rc, before + after);
    return 0;
}
