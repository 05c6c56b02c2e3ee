/* pgmini.lib2.c: aset.c's part of pgmini.h: an AllocSet takes 8 KiB blocks
 * from malloc, its header from calloc in AllocSetContextCreateInternal (as
 * aset.c mallocs the header with the first block), and calls
 * MemoryContextCreate in the other object, as aset.c calls mcxt.c. */
#include <stdlib.h>

#include "pgmini.h"

#define BLOCK 8192

typedef struct AllocSetContext {
    MemoryContextData header;
    char *blocks[64];
    int nblocks;
    size_t used;
} AllocSetContext;

static void *AllocSetAlloc(MemoryContext context, Size size)
{
    AllocSetContext *set = (AllocSetContext *)context;
    size_t need = (16 + size + 15) & ~(size_t)15;
    if (!set->nblocks || set->used + need > BLOCK) {
        set->blocks[set->nblocks++] = malloc(BLOCK);
        set->used = 0;
    }
    char *chunk = set->blocks[set->nblocks - 1] + set->used;
    set->used += need;
    *(MemoryContext *)(chunk + 8) = context;
    return chunk + 16;
}

static void AllocSetFree(MemoryContext context, void *pointer)
{
    (void)context, (void)pointer; /* stays in its block until the reset */
}

static void AllocSetReset(MemoryContext context)
{
    AllocSetContext *set = (AllocSetContext *)context;
    for (int i = 0; i < set->nblocks; i++)
        free(set->blocks[i]);
    set->nblocks = 0;
}

static void AllocSetDelete(MemoryContext context)
{
    AllocSetReset(context);
    free(context);
}

static const MemoryContextMethods AllocSetMethods = {AllocSetAlloc, AllocSetFree, AllocSetReset,
                                                     AllocSetDelete};

MemoryContext AllocSetContextCreateInternal(MemoryContext parent, const char *name,
                                            Size minContextSize, Size initBlockSize,
                                            Size maxBlockSize)
{
    (void)minContextSize, (void)initBlockSize, (void)maxBlockSize;
    AllocSetContext *set = calloc(1, sizeof *set);
    MemoryContextCreate(&set->header, T_AllocSetContext, &AllocSetMethods, parent, name);
    return &set->header;
}

