/* aprpool.lib.c: a miniature of APR's pools behind aprpool.h: a pool takes
 * 8 KiB nodes from malloc and carves allocations from them; subpools hang
 * from their parent; a clear destroys the subpools and frees all nodes but
 * the first; a destroy frees everything. */
#include <stdlib.h>
#include <string.h>

#include "aprpool.h"

#define NODE 8192

struct node {
    struct node *next;
    size_t used;
};

struct apr_pool_t {
    apr_pool_t *parent, *child, *sibling;
    const char *tag;
    struct node *nodes;
};

static struct node *new_node(size_t need)
{
    struct node *n = malloc(need > NODE ? need + sizeof *n : NODE);
    n->next = NULL;
    n->used = sizeof *n;
    return n;
}

apr_status_t apr_pool_create_ex(apr_pool_t **newpool, apr_pool_t *parent,
                                apr_abortfunc_t abort_fn, apr_allocator_t *allocator)
{
    (void)abort_fn, (void)allocator;
    apr_pool_t *p = calloc(1, sizeof *p);
    p->nodes = new_node(0);
    p->parent = parent;
    if (parent) {
        p->sibling = parent->child;
        parent->child = p;
    }
    *newpool = p;
    return APR_SUCCESS;
}

void apr_pool_tag(apr_pool_t *pool, const char *tag)
{
    pool->tag = tag;
}

void *apr_palloc(apr_pool_t *p, apr_size_t size)
{
    size = (size + 15) & ~(apr_size_t)15;
    struct node *n = p->nodes;
    if (n->used + size > NODE) {
        n = new_node(size + 16);
        n->next = p->nodes;
        p->nodes = n;
    }
    void *m = (char *)n + n->used;
    n->used += size;
    return m;
}

void *apr_pcalloc(apr_pool_t *p, apr_size_t size)
{
    return memset(apr_palloc(p, size), 0, size);
}

char *apr_pstrdup(apr_pool_t *p, const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(apr_palloc(p, n), s, n);
}

static void unlink_pool(apr_pool_t *p)
{
    if (!p->parent)
        return;
    for (apr_pool_t **l = &p->parent->child; *l; l = &(*l)->sibling)
        if (*l == p) {
            *l = p->sibling;
            break;
        }
}

void apr_pool_clear(apr_pool_t *p)
{
    while (p->child)
        apr_pool_destroy(p->child);
    while (p->nodes->next) {
        struct node *n = p->nodes;
        p->nodes = n->next;
        free(n);
    }
    p->nodes->used = sizeof *p->nodes;
}

void apr_pool_destroy(apr_pool_t *p)
{
    apr_pool_clear(p);
    unlink_pool(p);
    free(p->nodes);
    free(p);
}
