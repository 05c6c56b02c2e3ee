/* cross_cfi_nofp.c: functions built the way Debian builds its C library and
 * libstdc++ (-O2 -fomit-frame-pointer, by the plain cross compiler, not
 * rheaper-cc): they keep no frame record, so a frame-pointer walk that meets
 * one misses its caller. cross_cfi.c calls them; check_cross_cfi.sh checks the
 * caller chains the CFI walk finds through them.
 */
#include <stdlib.h>

extern void *volatile cfi_sink;

/* Allocates size bytes: frame 0 of a stack, without a frame record. */
__attribute__((noinline)) void *n_alloc(size_t size)
{
    void *p = malloc(size); /* @n_alloc */
    cfi_sink = p;
    return p;
}

/* Calls n_alloc from a frame without a record, with locals of its own. */
__attribute__((noinline)) void *n_mid(size_t size)
{
    char buf[40];
    for (int i = 0; i < 40; i++)
        buf[i] = (char)(size + (size_t)i);
    cfi_sink = buf;
    void *p = n_alloc(size + (size_t)(buf[3] - buf[2]) - 1); /* @n_mid */
    cfi_sink = buf;
    return p;
}

/* Calls back into the program (a library taking a callback: qsort, bsearch,
 * a hash table's visitor). */
__attribute__((noinline)) void *n_apply(void *(*fn)(size_t), size_t size)
{
    void *p = fn(size); /* @n_apply */
    cfi_sink = p;
    return p;
}
