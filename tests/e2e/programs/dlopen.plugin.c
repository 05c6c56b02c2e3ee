/* dlopen.plugin.c: an instrumented shared library, loaded with dlopen by
 * dlopen.c. Its allocations must be recorded with its own frames. */
#include <stdlib.h>

static void *volatile sink;

__attribute__((noinline)) void *plugin_alloc(size_t n) { return malloc(n); }

/* Makes n blocks of 48 bytes and frees the even ones; returns how many are
 * still live. */
int plugin_work(int n)
{
    static void *keep[1000];
    int live = 0;
    for (int i = 0; i < n && i < 1000; i++) {
        keep[i] = plugin_alloc(48);
        sink = keep[i];
        if (i % 2 == 0) free(keep[i]);
        else live++;
    }
    return live;
}
