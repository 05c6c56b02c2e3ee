/* execself.c: a process that allocates, then execs itself: two profiles of
 * one pid (rip-PID, rip-PID.1). `rheaper list` shows the first as exec'd,
 * right before the second, and no damaged row (execself.sh). With `orphan`,
 * the process forks first and the child execs once its parent has exited:
 * the new image has another parent than the old one's profile says. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    static void *volatile keep[64];
    if (argc > 1 && !strcmp(argv[1], "orphan")) {
        pid_t parent = getpid();
        if (fork() != 0)
            return 0; /* the parent exits at once */
        keep[63] = malloc(50); /* the child's profile names its parent */
        for (int i = 0; i < 5000 && getppid() == parent; i++)
            usleep(1000);
        argv[1] = "first";
    }
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
