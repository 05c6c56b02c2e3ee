/* skipctx.c: the `skip` case's AllocSetAlloc: a chunk over 256 bytes is a
 * malloc of its own, smaller ones are carved from 4 KiB blocks, each block a
 * malloc at another line. Two lines call malloc, so the call-site rule keeps
 * ctx_alloc as the site; --skip-function '^ctx_alloc$' passes it. */
#include <stdlib.h>

#include "skipctx.h"

long ctx_mallocs;
static char *blk;
static size_t used = 4096;

static void *ctx_alloc(size_t n)
{
    if (n > 256) {
        ctx_mallocs++;
        return malloc(n); /* a large chunk */
    }
    n = (n + 15) & ~(size_t)15;
    if (used + n > 4096) {
        ctx_mallocs++;
        blk = malloc(4096); /* a new block (the old one is kept: chunks live in it) */
        used = 0;
    }
    void *p = blk + used;
    used += n;
    return p;
}

const struct ctx_methods ctx_aset = {ctx_alloc};
