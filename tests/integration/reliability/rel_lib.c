/* rel_lib.c: an instrumented shared library (rheaper-cc -shared) that the
 * lifecycle helper loads, allocates through and unloads while its blocks are
 * still live (tests/integration/reliability, dlclose case), and that the EINTR case loads
 * and unloads to make the runtime write module maps.
 */
#include <stdlib.h>

void *volatile rel_lib_sink;

/* Allocates n blocks of `size` bytes into out[]; frame 0 of each is here. */
__attribute__((noinline)) void rel_lib_alloc(void **out, int n, size_t size)
{
    for (int i = 0; i < n; i++) {
        out[i] = malloc(size);
        rel_lib_sink = out[i];
    }
}
