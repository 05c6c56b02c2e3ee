/* layer.c: an allocator layer in a file of its own, shaped like Redis's
 * zmalloc.c (tests/integration/callsite/callsite.c describes the test). zmalloc is called
 * from three functions of callsite.c: a wrapper by rule 3. zrealloc_usable is
 * called from two, and reaches realloc through ztryrealloc and
 * zrealloc_internal, both in this file: rule 4 makes all three wrappers.
 * layer_twice is an entry point too (called from callsite.c, allocating
 * through this file only), so layer_pair, called only from it, is a wrapper
 * by rule 3: the call site is layer_twice's caller. */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
void *volatile layer_sink;

NOINLINE void *zmalloc(size_t n)
{
    void *p = malloc(n);
    layer_sink = p;
    return p;
}

static NOINLINE void *zrealloc_internal(void *p, size_t n)
{
    void *r = realloc(p, n);
    layer_sink = r;
    return r;
}

NOINLINE void *ztryrealloc(void *p, size_t n)
{
    void *r = zrealloc_internal(p, n);
    layer_sink = r;
    return r;
}

NOINLINE void *zrealloc_usable(void *p, size_t n)
{
    void *r = ztryrealloc(p, n);
    layer_sink = r;
    return r;
}

/* reached from this file only */
static NOINLINE void *layer_pair(size_t n)
{
    void *r = zmalloc(n);
    layer_sink = r;
    return r;
}

NOINLINE void *layer_twice(size_t n)
{
    void *r = layer_pair(n);
    layer_sink = r;
    return r;
}
