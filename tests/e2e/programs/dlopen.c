/* dlopen.c: a program that loads an instrumented shared library at run time.
 *
 * The plugin (dlopen.plugin.c, built with rheaper-cc -shared) allocates through
 * its own call site; its rows must carry the plugin's function, file and
 * module, and main's own allocations must be recorded as usual.
 */
#include "expect.h"

#include <dlfcn.h>
#include <stdlib.h>

int main(void)
{
    const char *path = getenv("RH_PLUGIN");
    void *h = dlopen(path, RTLD_NOW);
    if (!h) {
        write(2, "dlopen failed\n", 14);
        return 2;
    }
    int (*work)(int) = (int (*)(int))dlsym(h, "plugin_work");
    int live = work(30);
    EXPECT(30, "SELECT count(*) FROM allocations WHERE size = 48 AND " AT_SYM("plugin_alloc"));
    EXPECT(live, "SELECT count(*) FROM leaks WHERE " AT_SYM("plugin_alloc"));
    EXPECT(1, "SELECT count(DISTINCT id) FROM backtraces WHERE frame_no = 0 AND sym = 'plugin_alloc' "
              "AND file LIKE '%%dlopen.plugin.c' AND module LIKE '%%plugin.so'");
    EXPECT(1, "SELECT count(*) FROM backtraces WHERE frame_no = 1 AND sym = 'plugin_work' AND module LIKE '%%plugin.so'");
    void *mine = malloc(4321);
    KEEP(mine);
    EXPECT(1, "SELECT count(*) FROM leaks WHERE size = 4321 AND " AT_SYM("main"));
    dlclose(h);
    return 0;
}
