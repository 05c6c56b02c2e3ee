/* ngxpool.lib.c: a miniature of nginx's pools (src/core/ngx_palloc.c) with
 * the same function names and signatures: a pool is one block from
 * posix_memalign whose small allocations are carved from it (more blocks as
 * it fills), larger ones come from malloc and are listed; ngx_pfree frees
 * only a large one (NGX_OK) and declines a small one (NGX_DECLINED); a reset
 * frees the large ones and rewinds the blocks; a destroy frees everything. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ngxpool.h"

#define BLOCK 1024

struct large {
    struct large *next;
    void *alloc;
};

struct ngx_pool_s {
    char *last, *end;
    struct ngx_pool_s *next; /* more blocks */
    struct large *large;
    size_t max;
};

ngx_pool_t *ngx_create_pool(size_t size, ngx_log_t *log)
{
    (void)log;
    void *p = NULL;
    if (posix_memalign(&p, 16, size) != 0)
        return NULL;
    ngx_pool_t *pool = p;
    pool->last = (char *)(pool + 1);
    pool->end = (char *)p + size;
    pool->next = NULL;
    pool->large = NULL;
    pool->max = size - sizeof *pool;
    return pool;
}

static void *small(ngx_pool_t *pool, size_t size)
{
    for (ngx_pool_t *b = pool;; b = b->next) {
        char *m = (char *)(((uintptr_t)b->last + 15) & ~(uintptr_t)15);
        if ((size_t)(b->end - m) >= size) {
            b->last = m + size;
            return m;
        }
        if (!b->next) {
            void *n = NULL;
            if (posix_memalign(&n, 16, BLOCK) != 0)
                return NULL;
            b->next = n;
            b->next->last = (char *)(b->next + 1);
            b->next->end = (char *)n + BLOCK;
            b->next->next = NULL;
        }
    }
}

static void *large(ngx_pool_t *pool, size_t size)
{
    void *p = malloc(size);
    struct large *l = small(pool, sizeof *l);
    l->alloc = p;
    l->next = pool->large;
    pool->large = l;
    return p;
}

void *ngx_palloc(ngx_pool_t *pool, size_t size)
{
    return size <= pool->max / 2 ? small(pool, size) : large(pool, size);
}

void *ngx_pnalloc(ngx_pool_t *pool, size_t size)
{
    return size <= pool->max / 2 ? small(pool, size) : large(pool, size);
}

void *ngx_pcalloc(ngx_pool_t *pool, size_t size)
{
    return memset(ngx_palloc(pool, size), 0, size);
}

void *ngx_pmemalign(ngx_pool_t *pool, size_t size, size_t alignment)
{
    (void)alignment;
    return large(pool, size);
}

ngx_int_t ngx_pfree(ngx_pool_t *pool, void *p)
{
    for (struct large *l = pool->large; l; l = l->next)
        if (p == l->alloc) {
            free(l->alloc);
            l->alloc = NULL;
            return NGX_OK;
        }
    return NGX_DECLINED;
}

void ngx_reset_pool(ngx_pool_t *pool)
{
    for (struct large *l = pool->large; l; l = l->next)
        free(l->alloc);
    pool->large = NULL;
    pool->last = (char *)(pool + 1);
    for (ngx_pool_t *b = pool->next; b; b = b->next)
        b->last = (char *)(b + 1);
}

void ngx_destroy_pool(ngx_pool_t *pool)
{
    for (struct large *l = pool->large; l; l = l->next)
        free(l->alloc);
    for (ngx_pool_t *b = pool, *n; b; b = n) {
        n = b->next;
        free(b);
    }
}
