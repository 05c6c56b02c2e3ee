/* mmaps.lib.c: libwhole.so for mmaps.c, built without rheaper (as a system
 * library is): it maps and unmaps through the public symbols, which a dynamic
 * executable built with rheaper-cc defines (wrap/interpose_mmap.c). */
#include <stddef.h>
#include <sys/mman.h>

__attribute__((noinline)) int lib_map(size_t n)
{
    char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    p[0] = 1;
    if (munmap(p, n) != 0) /* not a tail call: frame 0 stays lib_map */
        return -1;
    return 0;
}
