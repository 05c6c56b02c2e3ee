/* procs.lib.c: libwhole.so for procs.c: no rheaper, no frame pointers. */
#include <stdlib.h>
#include <string.h>

void *lib_alloc(size_t n)
{
    char *p = malloc(n);
    if (p)
        memset(p, 3, n);
    return p;
}
