/* execself.c: a process that allocates, then execs itself: two profiles of
 * one pid (rip-PID, rip-PID.1). `rheaper list` shows the first as exec'd,
 * right before the second, and no damaged row (execself.sh). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    static void *volatile keep[64];
    int second = argc > 1 && !strcmp(argv[1], "second");
    for (int i = 0; i < (second ? 20 : 10); i++)
        keep[i] = malloc(100 + (size_t)i);
    if (!second) {
        char *av[] = {argv[0], "second", NULL};
        execv("/proc/self/exe", av);
        return 1;
    }
    return 0;
}
