/* plugin.c: a library the program dlopens by a relative path. Each function
 * allocates one block of a size of its own at a line it reports, so run.sh
 * can check the frames' function names and lines exactly. VARIANT changes the
 * code (a rebuild with another build id). */
#include <stdlib.h>

#ifndef VARIANT
#define VARIANT 0
#endif

void *volatile plugin_sink[4];

__attribute__((noinline)) int plugin_alpha(void)
{
    return (plugin_sink[0] = malloc(7001 + VARIANT), __LINE__);
}

__attribute__((noinline)) int plugin_beta(void)
{
    return (plugin_sink[1] = calloc(1, 7002 + VARIANT), __LINE__);
}

/* fills lines[] with the line of each allocation; returns how many */
int plugin_run(int *lines)
{
    lines[0] = plugin_alpha();
    lines[1] = plugin_beta();
    return 2;
}
