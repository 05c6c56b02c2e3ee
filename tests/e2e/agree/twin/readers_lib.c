/* twin/readers_lib.c: the namesake of ../readers_lib.c's lib_twin, at the
 * same line (25) of a file of the same name in another directory. The
 * readers count the two as one call site, lib_twin at readers_lib.c:25,
 * the call-site rule of the query library (a site is its function and its
 * file's name and line, whatever directory the file is in); a reader that
 * grouped by the file's whole path would list two.
 *
 * The lines below only bring lib_twin's allocation to line 25.
 *
 *
 *
 *
 *
 *
 *
 *
 *
 *
 */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void *lib_twin(size_t n)
{
    char *p = malloc(n);
    memset(p, 4, 8);
    return p;
}

void *twin_two(size_t n)
{
    return lib_twin(n);
}
