/* regions.lib.c: the miniature memory-context allocator behind mcxt.h.
 *
 * Like PostgreSQL's AllocSet: a context takes 8 KiB blocks from malloc and
 * carves chunks from them, each chunk preceded by a header naming its
 * context; a chunk over 1 KiB gets a block of its own (freed by pfree), a
 * small chunk's pfree only marks it. A reset deletes the context's children
 * and frees its blocks; a delete also deletes the context itself. Children
 * are deleted by calls inside this file, which the linker never redirects,
 * as in PostgreSQL's mcxt.c.
 */
#include <stdlib.h>
#include <string.h>

#include "mcxt.h"

#define BLOCK 8192
#define LARGE 1024

struct block {
    struct block *next;
    size_t used;
    int large;
};

struct chunk {
    MemoryContext context;
    size_t size;
    struct block *own; /* a large chunk's block */
};

struct MemoryContextData {
    MemoryContext parent, firstchild, nextchild;
    const char *name;
    struct block *blocks;
};

MemoryContext CurrentMemoryContext;
MemoryContext TopMemoryContext;

MemoryContext AllocSetContextCreateInternal(MemoryContext parent, const char *name,
                                            Size minContextSize, Size initBlockSize,
                                            Size maxBlockSize)
{
    (void)minContextSize, (void)initBlockSize, (void)maxBlockSize;
    MemoryContext c = malloc(sizeof *c); /* like PostgreSQL: malloc, then set */
    memset(c, 0, sizeof *c);
    c->name = name;
    c->parent = parent;
    if (parent) {
        c->nextchild = parent->firstchild;
        parent->firstchild = c;
    }
    return c;
}

void *MemoryContextAlloc(MemoryContext context, Size size)
{
    size_t need = (sizeof(struct chunk) + size + 15) & ~(size_t)15;
    struct block *b;
    if (need > LARGE) {
        b = malloc(sizeof *b + need);
        b->large = 1;
        b->used = need;
    } else {
        b = context->blocks;
        if (!b || b->large || b->used + need > BLOCK - sizeof *b) {
            b = malloc(BLOCK);
            b->large = 0;
            b->used = 0;
        } else {
            goto carve;
        }
    }
    b->next = context->blocks;
    context->blocks = b;
    if (b->large) {
        struct chunk *ch = (struct chunk *)(b + 1);
        ch->context = context;
        ch->size = size;
        ch->own = b;
        return ch + 1;
    }
carve:;
    struct chunk *ch = (struct chunk *)((char *)(b + 1) + b->used);
    b->used += need;
    ch->context = context;
    ch->size = size;
    ch->own = NULL;
    return ch + 1;
}

void *MemoryContextAllocZero(MemoryContext context, Size size)
{
    return memset(MemoryContextAlloc(context, size), 0, size);
}

void *palloc(Size size)
{
    return MemoryContextAlloc(CurrentMemoryContext, size);
}

void *palloc0(Size size)
{
    return MemoryContextAllocZero(CurrentMemoryContext, size);
}

char *pstrdup(const char *in)
{
    size_t n = strlen(in) + 1;
    return memcpy(MemoryContextAlloc(CurrentMemoryContext, n), in, n);
}

void pfree(void *pointer)
{
    struct chunk *ch = (struct chunk *)pointer - 1;
    if (!ch->own)
        return; /* a small chunk stays in its block until the reset */
    MemoryContext c = ch->context;
    for (struct block **l = &c->blocks; *l; l = &(*l)->next)
        if (*l == ch->own) {
            *l = ch->own->next;
            free(ch->own);
            return;
        }
}

void *repalloc(void *pointer, Size size)
{
    struct chunk *ch = (struct chunk *)pointer - 1;
    void *n = MemoryContextAlloc(ch->context, size);
    memcpy(n, pointer, ch->size < size ? ch->size : size);
    pfree(pointer);
    return n;
}

static void unlink_child(MemoryContext c)
{
    if (!c->parent)
        return;
    for (MemoryContext *l = &c->parent->firstchild; *l; l = &(*l)->nextchild)
        if (*l == c) {
            *l = c->nextchild;
            break;
        }
    c->parent = NULL;
}

void MemoryContextReset(MemoryContext context)
{
    while (context->firstchild)
        MemoryContextDelete(context->firstchild);
    while (context->blocks) {
        struct block *b = context->blocks;
        context->blocks = b->next;
        free(b);
    }
}

void MemoryContextDelete(MemoryContext context)
{
    MemoryContextReset(context);
    unlink_child(context);
    free(context);
}

void MemoryContextSetParent(MemoryContext context, MemoryContext new_parent)
{
    unlink_child(context);
    context->parent = new_parent;
    if (new_parent) {
        context->nextchild = new_parent->firstchild;
        new_parent->firstchild = context;
    }
}
