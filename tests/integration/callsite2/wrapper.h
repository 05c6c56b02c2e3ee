/* wrapper.h: the x-allocators of wrapper.c. */
#ifndef WRAPPER_H
#define WRAPPER_H
#include <stddef.h>
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
char *xstrdup(const char *s);
#endif
