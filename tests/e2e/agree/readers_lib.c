/* readers_lib.c: the call sites of readers_prog.c that live in a file of
 * their own, so that the --file and --not-file filters (source_regex,
 * negative_source_regex) split the profile along a line the program knows. */
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void *lib_cache(size_t n)
{
    char *p = malloc(n);
    memset(p, 1, 8);
    return p;
}

__attribute__((noinline)) void *lib_buffer(size_t n)
{
    char *p = malloc(n);
    memset(p, 2, 8);
    return p;
}

/* lib_twin has a namesake at the same line in twin/readers_lib.c: two files,
 * one call site (function and file name:line), as every reader counts it. */
__attribute__((noinline)) static void *lib_twin(size_t n)
{
    char *p = malloc(n);
    memset(p, 3, 8);
    return p;
}

void *twin_one(size_t n)
{
    return lib_twin(n);
}
