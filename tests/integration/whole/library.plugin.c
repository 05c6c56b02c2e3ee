/* library.plugin.c: plugin.so for library.c, loaded by libwhole.so. */
#include <stdlib.h>

void *plug_alloc(size_t n)
{
    volatile char *p = malloc(n);
    if (p)
        p[0] = 2;
    return (void *)p;
}
