/* pgmini.lib.c: mcxt.c's part of pgmini.h: the tree of contexts and the
 * entry points, which call the context's methods (pgmini.c's AllocSet). A
 * chunk's header names its context, as in PostgreSQL. */
#include <string.h>

#include "pgmini.h"

MemoryContext CurrentMemoryContext;
MemoryContext TopMemoryContext;

void MemoryContextCreate(MemoryContext node, NodeTag tag, const MemoryContextMethods *methods,
                         MemoryContext parent, const char *name)
{
    node->type = tag;
    node->methods = methods;
    node->parent = parent;
    node->firstchild = NULL;
    node->name = name;
    node->nextchild = parent ? parent->firstchild : NULL;
    if (parent)
        parent->firstchild = node;
}

void *MemoryContextAlloc(MemoryContext context, Size size)
{
    return context->methods->alloc(context, size);
}

void *palloc(Size size)
{
    return CurrentMemoryContext->methods->alloc(CurrentMemoryContext, size);
}

void *palloc0(Size size)
{
    return memset(palloc(size), 0, size);
}

char *pstrdup(const char *in)
{
    size_t n = strlen(in) + 1;
    return memcpy(palloc(n), in, n);
}

char *pnstrdup(const char *in, Size len)
{
    len = strnlen(in, len);
    char *out = palloc(len + 1);
    memcpy(out, in, len);
    out[len] = 0;
    return out;
}

static MemoryContext chunk_context(void *pointer)
{
    return *(MemoryContext *)((char *)pointer - sizeof(void *));
}

void pfree(void *pointer)
{
    MemoryContext c = chunk_context(pointer);
    c->methods->free_p(c, pointer);
}

void *repalloc(void *pointer, Size size)
{
    MemoryContext c = chunk_context(pointer);
    void *n = c->methods->alloc(c, size);
    memcpy(n, pointer, size);
    c->methods->free_p(c, pointer);
    return n;
}

void MemoryContextResetOnly(MemoryContext context)
{
    context->methods->reset(context);
}

void MemoryContextDeleteChildren(MemoryContext context)
{
    while (context->firstchild)
        MemoryContextDelete(context->firstchild);
}

void MemoryContextReset(MemoryContext context)
{
    MemoryContextDeleteChildren(context);
    MemoryContextResetOnly(context);
}

/* palloc_array()'s function: palloc called inside this file */
void *palloc_mul(Size s1, Size s2)
{
    return palloc(s1 * s2);
}

void MemoryContextDelete(MemoryContext context)
{
    while (context->firstchild)
        MemoryContextDelete(context->firstchild);
    if (context->parent)
        for (MemoryContext *l = &context->parent->firstchild; *l; l = &(*l)->nextchild)
            if (*l == context) {
                *l = context->nextchild;
                break;
            }
    context->methods->delete_context(context);
}
