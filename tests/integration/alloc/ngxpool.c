/* ngxpool.c: nginx's pools through the shipped allocator file
 * (share/rheaper/allocators/nginx.alloc), on a miniature with nginx's names
 * and signatures (ngxpool.lib.c). Every chunk is a row at the program's line,
 * never at a pool function; ngx_pfree ends a large chunk and not a small one
 * (declined: it lives to the reset); a reset and a destroy end the rest; the
 * chunks of a pool never destroyed are the only leaked pool rows. */
#define _GNU_SOURCE
#include "expect.h"

#include <stdlib.h>

#include "ngxpool.h"

#define NOINLINE __attribute__((noinline))
NOINLINE static void marker(size_t size)
{
    void *p = malloc(size);
    KEEP(p);
    free(p);
}

#define BETWEEN(a, b) "dealloc_after > (SELECT alloc_after FROM allocations WHERE size = " #a ")" \
                      " AND dealloc_after < (SELECT alloc_after FROM allocations WHERE size = " #b ")"
#define AT_LINE "bt IN (SELECT id FROM backtraces WHERE frame_no = 0 AND line = %d)"

int main(void)
{
    void *big[3], *s[20];
    ngx_pool_t *pool = ngx_create_pool(1024, NULL);
    int l_s = __LINE__ + 2;
    for (int i = 0; i < 20; i++)
        s[i] = ngx_palloc(pool, 32);
    int l_c = __LINE__ + 2;
    for (int i = 0; i < 5; i++)
        KEEP(ngx_pcalloc(pool, 16));
    int l_b = __LINE__ + 2;
    for (int i = 0; i < 3; i++)
        big[i] = ngx_palloc(pool, 4000);
    ngx_pfree(pool, big[0]);
    ngx_pfree(pool, big[1]);
    ngx_pfree(pool, s[0]); /* declined: stays until the reset */
    marker(1001);
    ngx_reset_pool(pool);
    marker(1002);
    int l_n = __LINE__ + 2;
    for (int i = 0; i < 4; i++)
        KEEP(ngx_pnalloc(pool, 10));
    ngx_pool_t *kept = ngx_create_pool(1024, NULL);
    int l_k = __LINE__ + 2;
    for (int i = 0; i < 6; i++)
        KEEP(ngx_palloc(kept, 24));
    marker(1003);
    ngx_destroy_pool(pool);
    marker(1004);

    EXPECT(20 + 5 + 3 + 4 + 6, "SELECT count(*) FROM region_blocks");
    EXPECT(0, "SELECT count(*) FROM allocations a JOIN region_blocks rb ON rb.id = a.id "
              "JOIN backtraces b ON b.id = a.bt AND b.frame_no = 0 WHERE b.sym LIKE 'ngx_%%'");
    EXPECT(20, "SELECT count(*) FROM allocations WHERE kind = 'ngx_palloc' AND " AT_LINE " AND "
               BETWEEN(1001, 1002), l_s);
    EXPECT(5, "SELECT count(*) FROM allocations WHERE kind = 'ngx_pcalloc' AND " AT_LINE " AND "
              BETWEEN(1001, 1002), l_c);
    EXPECT(2, "SELECT count(*) FROM allocations WHERE size = 4000 AND " AT_LINE " AND "
              "dealloc_after < (SELECT alloc_after FROM allocations WHERE size = 1001)", l_b);
    EXPECT(1, "SELECT count(*) FROM allocations WHERE size = 4000 AND " AT_LINE " AND "
              BETWEEN(1001, 1002), l_b);
    EXPECT(4, "SELECT count(*) FROM allocations WHERE kind = 'ngx_pnalloc' AND " AT_LINE " AND "
              BETWEEN(1003, 1004), l_n);
    EXPECT(6, "SELECT count(*) FROM leaks l JOIN region_blocks rb ON rb.id = l.id WHERE " AT_LINE, l_k);
    EXPECT(6, "SELECT count(*) FROM leaks l JOIN region_blocks rb ON rb.id = l.id");
    EXPECT(2, "SELECT count(*) FROM regions WHERE name = 'ngx_create_pool'");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'unknown_frees'");
    /* the pools' own memory: the large chunks from malloc and the blocks */
    EXPECT(3, "SELECT count(*) FROM allocations WHERE kind = 'region-blocks' AND size = 4000");
    EXPECT(1, "SELECT count(*) FROM leaks WHERE kind = 'region-blocks'"); /* the kept pool's own block */
    return 0;
}
