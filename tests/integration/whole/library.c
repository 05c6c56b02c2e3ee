/* library.c: a library that allocates and frees across the program boundary.
 *
 * libwhole.so (library.lib.c) and plugin.so (library.plugin.c) are built
 * without rheaper and without frame pointers, as Debian builds its libraries.
 * Every allocation they make is a row whose frame 0 is their function and
 * whose next frame is main at the calling line; blocks the library allocates
 * and the program frees, and the reverse, are freed in the profile (no leak,
 * no unknown free). The plugin is dlopened by the library, not the program,
 * and its frames still name its function and module. malloc_usable_size
 * answers for recorded blocks as the allocator does (at least the size).
 */
#include <dlfcn.h>
#include <malloc.h>

#include "expect.h"

void *lib_alloc(size_t n);
void lib_free(void *p);
void *lib_load(const char *path);

#define LIB_N 30
#define PROG_N 20
#define PLUG_N 25

int main(void)
{
    int lib_line = 0, prog_line = 0, plug_line = 0;
    for (int i = 0; i < LIB_N; i++) {
        lib_line = __LINE__ + 1;
        void *q = lib_alloc(100 + (size_t)i);
        if (malloc_usable_size(q) < 100 + (size_t)i)
            return 2;
        free(q); /* the program frees the library's block */
    }
    for (int i = 0; i < PROG_N; i++) {
        prog_line = __LINE__ + 1;
        void *p = malloc(200);
        if (malloc_usable_size(p) < 200)
            return 3;
        lib_free(p); /* the library frees the program's block */
    }
    void *c = calloc(10, 30);
    if (!c || malloc_usable_size(c) < 300)
        return 4;
    free(c);
    if (malloc_usable_size(NULL) != 0)
        return 5;

    const char *path = getenv("RH_WHOLE_PLUGIN");
    void *h = path ? lib_load(path) : NULL;
    void *(*plug_alloc)(size_t) = h ? (void *(*)(size_t))dlsym(h, "plug_alloc") : NULL;
    if (!plug_alloc)
        return 6;
    for (int i = 0; i < PLUG_N; i++) {
        plug_line = __LINE__ + 1;
        void *p = plug_alloc(64);
        free(p);
    }

    EXPECT(LIB_N,
           "SELECT count(*) FROM allocations a WHERE dealloc_after IS NOT NULL AND kind = 'malloc' "
           "AND (SELECT sym FROM backtraces WHERE id = a.bt AND frame_no = 0) = 'lib_alloc' "
           "AND (SELECT sym || ':' || line FROM backtraces WHERE id = a.bt AND frame_no = 1) "
           "= 'main:%d'",
           lib_line);
    EXPECT(LIB_N, "SELECT count(*) FROM allocations WHERE size BETWEEN 100 AND %d "
                  "AND bt IN (SELECT id FROM backtraces WHERE sym = 'lib_alloc')",
           100 + LIB_N - 1);
    EXPECT(PROG_N,
           "SELECT count(*) FROM allocations a WHERE dealloc_after IS NOT NULL AND size = 200 "
           "AND (SELECT sym || ':' || line FROM backtraces WHERE id = a.bt AND frame_no = 0) "
           "= 'main:%d'",
           prog_line);
    EXPECT(PLUG_N,
           "SELECT count(*) FROM allocations a WHERE dealloc_after IS NOT NULL AND size = 64 "
           "AND (SELECT sym || '@' || replace(module, rtrim(module, replace(module, '/', '')), '') "
           "FROM backtraces WHERE id = a.bt AND frame_no = 0) = 'plug_alloc@plugin.so' "
           "AND (SELECT sym || ':' || line FROM backtraces WHERE id = a.bt AND frame_no = 1) "
           "= 'main:%d'",
           plug_line);
    EXPECT(1, "SELECT count(*) FROM allocations WHERE kind = 'calloc' AND size = 300");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'unknown_frees'");
    EXPECT(0, "SELECT count(*) FROM stacks WHERE truncated != 0");
    if (write(1, "VALGRIND\n", 9) != 9)
        return 1;
    return 0;
}
