/* filters_lib.c: the second source file of filters_prog.c, so that the file
 * filters (--file, --not-file, source_regex) select some of its blocks. */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void *lib_alloc(size_t n)
{
    char *p = malloc(n);
    if (p)
        memset(p, 7, n < 16 ? n : 16);
    return p;
}
