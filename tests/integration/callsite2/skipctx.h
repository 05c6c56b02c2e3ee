/* skipctx.h: a memory-context-shaped allocator for the `skip` case of
 * run.sh: ctx_alloc (skipctx.c) mallocs at two lines, skipmcxt.c's my_palloc
 * and my_pstrdup call it through a method pointer, as PostgreSQL's palloc
 * calls AllocSetAlloc. */
#ifndef SKIPCTX_H
#define SKIPCTX_H
#include <stddef.h>

struct ctx_methods {
    void *(*alloc)(size_t n);
};
extern const struct ctx_methods ctx_aset;
extern long ctx_mallocs; /* malloc calls made by ctx_alloc so far */

void *my_palloc(size_t n);
char *my_pstrdup(const char *s);
#endif
