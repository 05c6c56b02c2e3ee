/* strip.lib.c: libstrip.so, built without rheaper and stripped (only .dynsym
 * survives, as in Debian's libraries): lib_static_alloc has no symbol, its
 * exported caller lib_entry has one. */
#include <stdlib.h>

void *volatile strip_sink;

static __attribute__((noinline)) void *lib_static_alloc(size_t n)
{
    void *p = malloc(n);
    strip_sink = p;
    return p;
}

__attribute__((noinline)) void *lib_entry(size_t n)
{
    void *p = lib_static_alloc(n);
    strip_sink = p;
    return p;
}
