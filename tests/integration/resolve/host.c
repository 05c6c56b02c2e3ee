/* host.c: dlopens ./plugin.so (a relative path, from the current directory),
 * runs it and prints "SITE size function line" for each of its allocations. */
#include <dlfcn.h>
#include <stdio.h>

int main(void)
{
    void *h = dlopen("./plugin.so", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    int (*run)(int *) = (int (*)(int *))dlsym(h, "plugin_run");
    int lines[2];
    if (!run || run(lines) != 2)
        return 1;
    printf("SITE 7001 plugin_alpha %d\nSITE 7002 plugin_beta %d\n", lines[0], lines[1]);
    return 0;
}
