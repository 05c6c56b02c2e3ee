/* rel.h: shared pieces of the reliability helper programs (tests/integration/reliability).
 *
 * The helpers are real programs built with rheaper-cc, profiled through
 * RHEAPER_ENABLE=1 by run.sh. Each one knows what it allocated: it states the
 * facts its profile must hold with EXPECT (tests/e2e/programs/expect.h) as it goes, so a
 * program that dies still leaves its expectations behind, and checks its own
 * memory so a profiler that corrupts the program is caught by the exit status.
 * Nothing here uses stdio on the hot paths: diagnostics go out with write(2).
 */
#ifndef RH_REL_H
#define RH_REL_H

#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "expect.h"

#define NOINLINE __attribute__((noinline))

/* Writes one diagnostic line to stderr (never starting with "rheaper:"). */
static void rel_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void rel_say(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof buf - 2)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    if (write(2, buf, (size_t)n) < 0)
        return;
}

/* Fills n bytes at p with a pattern derived from seed. */
static void rel_fill(void *p, size_t n, unsigned seed)
{
    unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        c[i] = (unsigned char)(seed * 31u + i * 7u);
}

/* 1 when the pattern rel_fill wrote is intact. */
static int rel_intact(const void *p, size_t n, unsigned seed)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != (unsigned char)(seed * 31u + i * 7u))
            return 0;
    return 1;
}

/* Sleeps ms milliseconds, resuming after signals. */
static void rel_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

#endif
