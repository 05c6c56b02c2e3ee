/* sec_prog.c: the root program the runtime's security tests attack, built
 * with rheaper-cc.
 *
 * It does nothing until told: commands are single bytes read from fd 0 with
 * read(2), so it allocates nothing (and the runtime does not arm or create a
 * file) before its first command, and an attacker who knows its pid can
 * prepare the profile directory first. After each command it writes
 * "ok C N" (N: commands done) to fd 1 with write(2).
 *
 *   p  poke: one malloc(1) and free, so a pending toggle happens
 *   a  a batch: BATCH blocks of SIZE bytes, then freed; counted "on" when
 *      recording was on before and after it, "off" when off both times
 *   d  drop privileges to UID GID (argv[1], argv[2]): setgroups, setgid,
 *      setuid, as servers' workers do
 *   t  write zeros over the environment block, as setproctitle does
 *   q  print "batches on N off M mixed K" and exit 0
 *
 * The test compares the profile's rows of SIZE bytes with BATCH x on.
 */
#define _GNU_SOURCE
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rheaper.h"

#define BATCH 100
#define SIZE 4242

extern char **environ;
static void *volatile sink;

static void say(char c, long n)
{
    char line[64];
    int k = snprintf(line, sizeof line, "ok %c %ld\n", c, n);
    if (write(1, line, (size_t)k) != k)
        _exit(3);
}

__attribute__((noinline)) static void batch(void)
{
    void *p[BATCH];
    for (int i = 0; i < BATCH; i++) {
        p[i] = malloc(SIZE);
        memset(p[i], i, SIZE);
        sink = p[i];
    }
    for (int i = 0; i < BATCH; i++)
        free(p[i]);
}

/* Zeros the environment strings (contiguous after argv on the stack). */
static void clobber_environ(void)
{
    if (!environ || !environ[0])
        return;
    char *start = environ[0], *end = start;
    for (char **e = environ; *e; e++)
        if (*e + strlen(*e) + 1 > end)
            end = *e + strlen(*e) + 1;
    memset(start, 0, (size_t)(end - start));
}

int main(int argc, char **argv)
{
    long on = 0, off = 0, mixed = 0, n = 0;
    char c;
    while (read(0, &c, 1) == 1) {
        if (c == '\n' || c == ' ')
            continue;
        n++;
        if (c == 'p') {
            void *q = malloc(1);
            sink = q;
            free(q);
        } else if (c == 'a') {
            int before = rheaper_is_enabled();
            batch();
            int after = rheaper_is_enabled();
            if (before && after)
                on++;
            else if (!before && !after)
                off++;
            else
                mixed++;
        } else if (c == 'd') {
            if (argc < 3)
                return 2;
            gid_t g = (gid_t)atol(argv[2]);
            if (setgroups(1, &g) != 0 || setgid(g) != 0 || setuid((uid_t)atol(argv[1])) != 0)
                return 4;
        } else if (c == 't') {
            clobber_environ();
        } else if (c == 'q') {
            char line[128];
            int k =
                snprintf(line, sizeof line, "batches on %ld off %ld mixed %ld\n", on, off, mixed);
            if (write(1, line, (size_t)k) != k)
                return 3;
            return 0;
        } else {
            return 5;
        }
        say(c, n);
    }
    return 0;
}
