/* log_prog.c: makes the runtime speak, for log.sh (RHEAPER_LOG).
 *
 *   log_prog DIR [UID]
 *
 * 1. rheaper_enable with a missing directory, three times: three warnings of
 *    one cause ("cannot use profile directory").
 * 2. With UID: switches to that user (as root), so the log file must follow.
 * 3. rheaper_enable with an empty directory name: a warning of a second cause.
 * 4. rheaper_enable into DIR, 100 allocations, rheaper_disable: the notice
 *    "wrote DIR/rip-PID".
 * Prints "rc R1 R2 R3 R4 R5" (the enable calls' results) on stdout. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rheaper.h"

static void *volatile sink;

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    struct rheaper_config bad = {0}, empty = {0}, good = {0};
    bad.profile_dir = "/nonexistent/rheaper-log-test";
    empty.profile_dir = "";
    good.profile_dir = argv[1];
    int r[5];
    for (int i = 0; i < 3; i++)
        r[i] = rheaper_enable(&bad);
    if (argc > 2) {
        unsigned uid = (unsigned)atoi(argv[2]);
        if (setuid(uid) != 0) {
            perror("log_prog: setuid");
            return 1;
        }
    }
    r[3] = rheaper_enable(&empty);
    r[4] = rheaper_enable(&good);
    for (int i = 0; i < 100; i++) {
        void *p = malloc(100);
        sink = p;
        free(p);
    }
    rheaper_disable();
    printf("rc %d %d %d %d %d\n", r[0], r[1], r[2], r[3], r[4]);
    return 0;
}
