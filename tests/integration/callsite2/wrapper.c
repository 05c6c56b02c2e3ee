/* wrapper.c: an x-allocator file shaped like git's: xmalloc (called from
 * several functions), and xcalloc and xstrdup that call calloc and strdup
 * themselves instead of forwarding to xmalloc; in this program each of those
 * two is called from functions of another file only. */
#include <stdlib.h>
#include <string.h>

#include "wrapper.h"

__attribute__((noinline)) void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        abort();
    return p;
}

__attribute__((noinline)) void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p)
        abort();
    return p;
}

__attribute__((noinline)) char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (!p)
        abort();
    return p;
}
