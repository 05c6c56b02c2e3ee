/* aprpool.c: APR's pools through the shipped allocator file
 * (share/rheaper/allocators/apr.alloc), on a miniature with APR's names and
 * signatures (aprpool.lib.c): pools named by their tags, a clear of a parent
 * that ends its chunks and destroys its subpool and the subpool's subpool, a
 * destroy, and a pool that lives on with planted chunks. */
#define _GNU_SOURCE
#include "expect.h"

#include <stdlib.h>

#include "aprpool.h"

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
#define IN_POOL(name) "id IN (SELECT rb.id FROM region_blocks rb JOIN regions g ON g.id = rb.region " \
                      "WHERE g.name = '" name "')"

int main(void)
{
    apr_pool_t *conn, *req, *sub, *global;
    apr_pool_create(&global, NULL);
    apr_pool_tag(global, "global");
    apr_pool_create(&conn, NULL);
    apr_pool_tag(conn, "connection");
    apr_pool_create(&req, conn);
    apr_pool_tag(req, "request");
    apr_pool_create(&sub, req);
    apr_pool_tag(sub, "subrequest");

    int l_c = __LINE__ + 2;
    for (int i = 0; i < 8; i++)
        KEEP(apr_palloc(conn, 100));
    int l_r = __LINE__ + 2;
    for (int i = 0; i < 12; i++)
        KEEP(apr_pcalloc(req, 700)); /* more than one node */
    int l_s = __LINE__ + 1;
    KEEP(apr_pstrdup(sub, "GET /index.html"));
    int l_g = __LINE__ + 2;
    for (int i = 0; i < 5; i++)
        KEEP(apr_palloc(global, 40));
    marker(1001);
    apr_pool_clear(conn); /* destroys request and subrequest */
    marker(1002);
    int l_c2 = __LINE__ + 2;
    for (int i = 0; i < 3; i++)
        KEEP(apr_palloc(conn, 50));
    marker(1003);
    apr_pool_destroy(conn);
    marker(1004);

    EXPECT(8 + 12 + 1 + 5 + 3, "SELECT count(*) FROM region_blocks");
    EXPECT(8, "SELECT count(*) FROM allocations WHERE " IN_POOL("connection") " AND " AT_LINE
              " AND " BETWEEN(1001, 1002), l_c);
    EXPECT(12, "SELECT count(*) FROM allocations WHERE kind = 'apr_pcalloc' AND " IN_POOL("request")
               " AND " AT_LINE " AND " BETWEEN(1001, 1002), l_r);
    EXPECT(16, "SELECT sum(size) FROM allocations WHERE kind = 'apr_pstrdup' AND " IN_POOL("subrequest")
               " AND " AT_LINE " AND " BETWEEN(1001, 1002), l_s);
    EXPECT(3, "SELECT count(*) FROM allocations WHERE " IN_POOL("connection") " AND " AT_LINE
              " AND " BETWEEN(1003, 1004), l_c2);
    EXPECT(5, "SELECT count(*) FROM leaks WHERE " IN_POOL("global") " AND " AT_LINE, l_g);
    EXPECT(5, "SELECT count(*) FROM leaks WHERE id IN (SELECT id FROM region_blocks)");
    EXPECT(1, "SELECT count(*) FROM regions c JOIN regions p ON p.id = c.parent "
              "WHERE c.name = 'subrequest' AND p.name = 'request'");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'unknown_frees'");
    return 0;
}
