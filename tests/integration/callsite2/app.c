/* app.c: the program around pool.c, memory.c and xmalloc.c (run.sh describes
 * the test). Every function here counts the allocations it causes: one per
 * pool_create, one per mem_alloc or x-allocation, and for pool allocations
 * the blocks and large allocations its pool gained during the call. It prints
 * "SITE function count" for each, and "SITE2 two_lines" for the function
 * that allocates at two lines, which must stay a call site of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool.h"

#define NOINLINE __attribute__((noinline))
void *mem_alloc(size_t size);
static void *volatile keep;

enum { ACCEPT, REQUEST, PARSE_LINE, PARSE_URI, READ_BODY, HEADERS, MAKE_BUF, ADD_HEADER,
       READ_FILE, LOG_OPEN, COPY_A, COPY_B, USE_XCALLOC, USE_XSTRDUP, TWO_LINES, NSITES };
static const char *const names[NSITES] = {
    "accept_conn", "new_request", "parse_line", "parse_uri", "read_body", "parse_headers",
    "make_buf", "add_header", "read_file", "log_open", "copy_a", "copy_b", "use_xcalloc",
    "use_xstrdup", "two_lines"};
static long count[NSITES];

/* the pool's allocations so far: its blocks and large allocations */
static long pool_allocs(const struct pool *p)
{
    return p->nblocks + p->nlarge;
}
#define POOL_CALL(site, p, expr)                                                             \
    do {                                                                                     \
        long before_ = pool_allocs(p);                                                       \
        keep = (expr);                                                                       \
        count[site] += pool_allocs(p) - before_;                                             \
    } while (0)

NOINLINE struct pool *accept_conn(void)
{
    count[ACCEPT]++;
    return pool_create();
}
NOINLINE struct pool *new_request(void)
{
    count[REQUEST]++;
    return pool_create();
}
NOINLINE void parse_line(struct pool *p, int i) { POOL_CALL(PARSE_LINE, p, pool_alloc(p, 40 + i % 50)); }
NOINLINE void parse_uri(struct pool *p, int i) { POOL_CALL(PARSE_URI, p, pool_alloc(p, 100 + i % 300)); }
NOINLINE void read_body(struct pool *p, int i) { POOL_CALL(READ_BODY, p, pool_alloc(p, 600 + i)); }
NOINLINE void parse_headers(struct pool *p, int i) { POOL_CALL(HEADERS, p, pool_calloc(p, 24 + i % 90)); }
NOINLINE void make_buf(struct pool *p, int i) { POOL_CALL(MAKE_BUF, p, pool_calloc(p, 200 + i % 700)); }
NOINLINE void add_header(struct pool *p, int i) { POOL_CALL(ADD_HEADER, p, pool_calloc(p, 8 + i % 30)); }

NOINLINE void *read_file(int i)
{
    count[READ_FILE]++;
    return mem_alloc(4000 + i);
}
NOINLINE void *log_open(int i)
{
    count[LOG_OPEN]++;
    return mem_alloc(300 + i);
}
NOINLINE void *copy_a(int i)
{
    count[COPY_A]++;
    return xmalloc(10 + i);
}
NOINLINE void *copy_b(int i)
{
    count[COPY_B]++;
    return xmalloc(20 + i);
}
NOINLINE void *use_xcalloc(int i)
{
    count[USE_XCALLOC]++;
    return xcalloc(3, 8 + i);
}
NOINLINE char *use_xstrdup(int i)
{
    count[USE_XSTRDUP]++;
    return xstrdup(i & 1 ? "an odd string" : "an even one");
}
/* allocates at two lines: stays a call site (two of them) */
NOINLINE void *two_lines(int i)
{
    count[TWO_LINES]++;
    if (i & 1)
        return xmalloc(50);
    return xmalloc(60);
}

int main(void)
{
    for (int c = 0; c < 20; c++) {
        struct pool *conn = accept_conn();
        for (int r = 0; r < 5; r++) {
            int i = c * 5 + r;
            struct pool *req = new_request();
            for (int k = 0; k < 6; k++) {
                parse_line(req, i + k);
                parse_uri(req, i * 7 + k);
                parse_headers(req, i + 3 * k);
                add_header(conn, i + k);
            }
            read_body(req, i);
            make_buf(req, i);
            free(read_file(i));
            free(log_open(i));
            free(copy_a(i));
            free(copy_b(i));
            free(use_xcalloc(i));
            free(use_xstrdup(i));
            free(two_lines(i));
            pool_destroy(req);
        }
        pool_destroy(conn);
    }
    for (int s = 0; s < NSITES; s++)
        printf("SITE %s %ld\n", names[s], count[s]);
    return 0;
}
