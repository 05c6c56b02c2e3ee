/* pool.h: the test's nginx-shaped pool (pool.c) and x-allocators (xmalloc.c). */
#include <stddef.h>

struct pool_large {
    void *mem;
    struct pool_large *next;
};
struct pool {
    char *cur, *end;
    void *blocks;
    struct pool_large *large;
    int nblocks, nlarge; /* blocks taken after the first, large allocations */
};

struct pool *pool_create(void);
void *pool_alloc(struct pool *p, size_t size);
void *pool_calloc(struct pool *p, size_t size);
void pool_destroy(struct pool *p);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
char *xstrdup(const char *s);
