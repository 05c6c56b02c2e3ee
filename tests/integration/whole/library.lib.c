/* library.lib.c: libwhole.so for library.c, built like a distribution's
 * library: no rheaper, no frame pointers (run.sh). */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

void *lib_alloc(size_t n)
{
    char *p = malloc(n);
    if (p)
        memset(p, 1, n);
    return p;
}

void lib_free(void *p)
{
    free(p);
}

/* dlopen from uninstrumented code: the runtime must still learn the module */
void *lib_load(const char *path)
{
    return dlopen(path, RTLD_NOW);
}
