/* userfam.c: calls the project's own allocator (userfam.lib.c), which
 * rheaper-cc wraps from the declarations of userfam.alloc. States exact
 * counts, sizes, frees and kinds (each row's kind is the function called).
 */
#define _GNU_SOURCE
#include "expect.h"

#include <stddef.h>
#include <string.h>

void *um_malloc(size_t n);
void *um_calloc(size_t count, size_t size);
void *um_realloc(void *p, size_t n);
void um_free(void *p);
size_t um_usable_size(void *p);
void *arena_alloc(void *arena, size_t size);
void arena_free(void *arena, void *ptr);
void *um_make_internal(int which, size_t n);

#define NOINLINE __attribute__((noinline))

NOINLINE static void *take(size_t n) { return um_malloc(n); }
NOINLINE static void *take_zeroed(size_t c, size_t n) { return um_calloc(c, n); }
NOINLINE static void *take16(void) { return um_malloc(16); }
NOINLINE static void *regrow(void *p, size_t n) { return um_realloc(p, n); }

int main(void)
{
    /* 1. 120 um_malloc of 1..120 bytes; 70 freed. */
    void *m[120];
    long long m_bytes = 0, m_left = 0;
    for (int i = 0; i < 120; i++) {
        m[i] = take((size_t)i + 1);
        memset(m[i], 1, (size_t)i + 1);
        m_bytes += i + 1;
        if (um_usable_size(m[i]) < (size_t)i + 1)
            return 2;
    }
    for (int i = 0; i < 70; i++)
        um_free(m[i]);
    for (int i = 70; i < 120; i++)
        m_left += i + 1;
    EXPECT(120, "SELECT count(*) FROM allocations WHERE kind = 'um_malloc' AND " AT_SYM("take"));
    EXPECT(m_bytes, "SELECT sum(size) FROM allocations WHERE kind = 'um_malloc' AND " AT_SYM("take"));
    EXPECT(50, "SELECT count(*) FROM leaks WHERE kind = 'um_malloc' AND " AT_SYM("take"));
    EXPECT(m_left, "SELECT sum(size) FROM leaks WHERE kind = 'um_malloc' AND " AT_SYM("take"));

    /* 2. 30 um_calloc(i + 1, 8): one row each (its inner um_malloc is not
     * another), all freed. */
    long long c_bytes = 0;
    for (int i = 0; i < 30; i++) {
        void *p = take_zeroed((size_t)i + 1, 8);
        c_bytes += (i + 1) * 8;
        um_free(p);
    }
    EXPECT(30, "SELECT count(*) FROM allocations WHERE kind = 'um_calloc'");
    EXPECT(c_bytes, "SELECT sum(size) FROM allocations WHERE kind = 'um_calloc'");
    EXPECT(0, "SELECT count(*) FROM leaks WHERE kind = 'um_calloc'");

    /* 3. 10 blocks grown from 16 to 400 bytes with um_realloc, then freed. */
    for (int i = 0; i < 10; i++) {
        void *p = take16();
        p = regrow(p, 400);
        memset(p, 2, 400);
        um_free(p);
    }
    EXPECT(10, "SELECT count(*) FROM allocations WHERE kind = 'um_realloc' AND size = 400 AND "
               "dealloc_after IS NOT NULL AND " AT_SYM("regrow"));
    EXPECT(10, "SELECT count(*) FROM allocations WHERE kind = 'um_malloc' AND size = 16 AND "
               "dealloc_after IS NOT NULL AND " AT_SYM("take16"));

    /* 4. the arena pair: 25 blocks of 96 bytes, 20 freed. */
    char arena[1];
    void *a[25];
    for (int i = 0; i < 25; i++)
        a[i] = arena_alloc(arena, 96);
    for (int i = 0; i < 20; i++)
        arena_free(arena, a[i]);
    EXPECT(25, "SELECT count(*) FROM allocations WHERE kind = 'arena_alloc' AND size = 96");
    EXPECT(5, "SELECT count(*) FROM leaks WHERE kind = 'arena_alloc'");

    /* 5. the functions that cannot be wrapped record nothing; their inner
     * um_malloc calls sit in the allocator's own object and are not seen
     * either. */
    KEEP(um_make_internal(0, 777));
    KEEP(um_make_internal(1, 778));
    EXPECT(0, "SELECT count(*) FROM allocations WHERE size IN (777, 778)");
    /* no row other than the allocator file's: the program never calls malloc */
    EXPECT(120 + 30 + 20 + 25, "SELECT count(*) FROM allocations WHERE kind LIKE 'um_%%' OR kind LIKE 'arena_%%'");
    return 0;
}
