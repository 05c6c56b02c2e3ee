/* pool.c: a two-level pool shaped like nginx's ngx_palloc.c. pool_create
 * takes a block (mem_align); pool_alloc serves small requests from the
 * current block (pool_alloc_small, inlined) and refills it with a new block
 * (pool_block, static), and large requests with mem_alloc, keeping their
 * header in the pool; pool_calloc zeroes what pool_alloc gives. Each pool
 * counts its blocks and large allocations, so the program knows how many
 * allocations each of its functions caused. */
#include <stdlib.h>
#include <string.h>

#include "pool.h"

#define POOL_BLOCK 1024

void *mem_align(size_t align, size_t size);
void *mem_alloc(size_t size);

static void *pool_block(struct pool *p, size_t size)
{
    char *b = mem_align(16, POOL_BLOCK);
    if (!b)
        return NULL;
    *(void **)b = p->blocks;
    p->blocks = b;
    p->nblocks++;
    p->cur = b + 16 + size;
    p->end = b + POOL_BLOCK;
    return b + 16;
}

static inline void *pool_alloc_small(struct pool *p, size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (p->cur && (size_t)(p->end - p->cur) >= size) {
        void *r = p->cur;
        p->cur += size;
        return r;
    }
    return pool_block(p, size);
}

static void *pool_alloc_large(struct pool *p, size_t size)
{
    void *m = mem_alloc(size);
    if (!m)
        return NULL;
    struct pool_large *l = pool_alloc_small(p, sizeof *l);
    if (!l)
        return NULL;
    l->mem = m;
    l->next = p->large;
    p->large = l;
    p->nlarge++;
    return m;
}

struct pool *pool_create(void)
{
    struct pool *p = mem_align(16, POOL_BLOCK);
    if (!p)
        return NULL;
    memset(p, 0, sizeof *p);
    p->cur = (char *)p + ((sizeof *p + 15) & ~(size_t)15);
    p->end = (char *)p + POOL_BLOCK;
    return p;
}

void *pool_alloc(struct pool *p, size_t size)
{
    if (size <= 512)
        return pool_alloc_small(p, size);
    return pool_alloc_large(p, size);
}

void *pool_calloc(struct pool *p, size_t size)
{
    void *r = pool_alloc(p, size);
    if (r)
        memset(r, 0, size);
    return r;
}

void pool_destroy(struct pool *p)
{
    for (struct pool_large *l = p->large; l; l = l->next)
        free(l->mem);
    void *b = p->blocks;
    while (b) {
        void *next = *(void **)b;
        free(b);
        b = next;
    }
    free(p);
}
