/* pgmini.h: PostgreSQL 15's memory-context API with its exact names and
 * signatures (utils/palloc.h, utils/memutils.h, nodes/memnodes.h), reduced:
 * mcxt.c's part is pgmini.lib.c, aset.c's part is in pgmini.c, so that
 * MemoryContextCreate is called across objects as in PostgreSQL. */
#ifndef PGMINI_H
#define PGMINI_H
#include <stddef.h>
typedef size_t Size;
typedef enum NodeTag { T_AllocSetContext = 1 } NodeTag;
typedef struct MemoryContextData *MemoryContext;
typedef struct MemoryContextMethods {
    void *(*alloc)(MemoryContext context, Size size);
    void (*free_p)(MemoryContext context, void *pointer);
    void (*reset)(MemoryContext context);
    void (*delete_context)(MemoryContext context);
} MemoryContextMethods;
typedef struct MemoryContextData {
    NodeTag type;
    const MemoryContextMethods *methods;
    MemoryContext parent, firstchild, nextchild;
    const char *name;
} MemoryContextData;
extern MemoryContext CurrentMemoryContext;
extern MemoryContext TopMemoryContext;
MemoryContext AllocSetContextCreateInternal(MemoryContext parent, const char *name,
                                            Size minContextSize, Size initBlockSize,
                                            Size maxBlockSize);
void MemoryContextCreate(MemoryContext node, NodeTag tag, const MemoryContextMethods *methods,
                         MemoryContext parent, const char *name);
void *MemoryContextAlloc(MemoryContext context, Size size);
void *palloc(Size size);
void *palloc0(Size size);
char *pstrdup(const char *in);
char *pnstrdup(const char *in, Size len);
void *repalloc(void *pointer, Size size);
void pfree(void *pointer);
void MemoryContextReset(MemoryContext context);
void MemoryContextResetOnly(MemoryContext context);
void MemoryContextDelete(MemoryContext context);
void MemoryContextDeleteChildren(MemoryContext context);
void *palloc_mul(Size s1, Size s2);
#endif
