/* launch.c: runs a command with only fds 0-2 open.
 *
 *   launch CMD [ARG...]
 *
 * ctest and shells leak descriptors into the programs they start (ctest's
 * LastTest.log on fd 3, the shell's own above 9, which sh cannot close). A
 * hostile test program under `prlimit --nofile=4` must start the way a
 * program started by a login shell or a service manager does.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: launch CMD [ARG...]\n");
        return 2;
    }
    close_range(3, ~0u, 0);
    execvp(argv[1], argv + 1);
    perror(argv[1]);
    return 127;
}
