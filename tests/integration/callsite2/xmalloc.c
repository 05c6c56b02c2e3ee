/* xmalloc.c: x-allocators in a file of their own, as many C programs keep
 * them: xmalloc (called from several places), and xcalloc and xstrdup that
 * only forward to it; in this program each of those two has one caller. */
#include <stdlib.h>
#include <string.h>

#include "pool.h"

__attribute__((noinline)) void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    return p;
}

__attribute__((noinline)) void *xcalloc(size_t n, size_t size)
{
    void *p = xmalloc(n * size);
    memset(p, 0, n * size);
    return p;
}

__attribute__((noinline)) char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n);
    memcpy(p, s, n);
    return p;
}
