/* titled.c: a server that sets its process title the way setproctitle does
 * (rewriting argv's memory, as PostgreSQL's backends do), allocates, and
 * waits (argv[1] seconds) so a viewer can follow it. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TITLE "worker: pgtest postgres [local] idle"

int main(int argc, char **argv)
{
    static void *volatile keep[64];
    int wait = argc > 1 ? atoi(argv[1]) : 0;
    for (int i = 0; i < 10; i++)
        keep[i] = malloc(64);
    /* argv's strings are contiguous: the title goes over them */
    char *start = argv[0], *end = argv[argc - 1] + strlen(argv[argc - 1]);
    size_t room = (size_t)(end - start);
    memset(start, 0, room);
    memcpy(start, TITLE, strlen(TITLE) < room ? strlen(TITLE) : room);
    for (int i = 10; i < 20; i++)
        keep[i] = malloc(64);
    for (int s = 0; s < wait * 10; s++)
        usleep(100000);
    return 0;
}
