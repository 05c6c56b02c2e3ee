/* mcxt.h: a miniature of PostgreSQL's memory-context API (utils/palloc.h,
 * utils/memutils.h): the same function names and signatures, a much simpler
 * allocator behind them (mcxt.lib.c). */
#ifndef MCXT_H
#define MCXT_H
#include <stddef.h>

typedef size_t Size;
typedef struct MemoryContextData *MemoryContext;

extern MemoryContext CurrentMemoryContext;
extern MemoryContext TopMemoryContext;

MemoryContext AllocSetContextCreateInternal(MemoryContext parent, const char *name,
                                            Size minContextSize, Size initBlockSize,
                                            Size maxBlockSize);
void *MemoryContextAlloc(MemoryContext context, Size size);
void *MemoryContextAllocZero(MemoryContext context, Size size);
void *palloc(Size size);
void *palloc0(Size size);
void *repalloc(void *pointer, Size size);
void pfree(void *pointer);
char *pstrdup(const char *in);
void MemoryContextReset(MemoryContext context);
void MemoryContextDelete(MemoryContext context);
void MemoryContextSetParent(MemoryContext context, MemoryContext new_parent);

static inline MemoryContext MemoryContextSwitchTo(MemoryContext context)
{
    MemoryContext old = CurrentMemoryContext;
    CurrentMemoryContext = context;
    return old;
}
#endif
