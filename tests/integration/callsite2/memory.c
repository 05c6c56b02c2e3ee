/* memory.c: the bottom of the test's pool (like nginx's ngx_alloc.c):
 * mem_alloc (malloc) and mem_align (posix_memalign), each from one line. */
#include <stdlib.h>

void *volatile mem_sink;

__attribute__((noinline)) void *mem_alloc(size_t size)
{
    void *p = malloc(size);
    mem_sink = p;
    return p;
}

__attribute__((noinline)) void *mem_align(size_t align, size_t size)
{
    void *p = NULL;
    if (posix_memalign(&p, align, size) != 0)
        return NULL;
    mem_sink = p;
    return p;
}
