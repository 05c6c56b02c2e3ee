/* expect.h: how an end-to-end test program states what its profile must hold.
 *
 * A test program counts its own allocations as it makes them and, at the end,
 * calls EXPECT(value, "SQL", ...) once per fact. Each call writes one line
 * "EXPECT<TAB>value<TAB>SQL" to the file named by $RH_EXPECT_FILE (stdout if
 * unset). tests/e2e/programs/check.sh runs each statement against the converted
 * database and compares the single value it returns. The values come from the
 * program's own counters and __LINE__, never from an earlier run, so a test
 * fails when a row is missing, doubled, mis-sized or put on the wrong line.
 *
 * Output uses snprintf into a stack buffer and write(2): no stdio buffer is
 * allocated, so printing the expectations adds no rows of its own.
 */
#ifndef RH_E2E_EXPECT_H
#define RH_E2E_EXPECT_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Keeps the compiler from deleting an allocation whose result looks unused
 * (gcc -O2 removes malloc/free pairs, g++ -O1 new/delete pairs). */
static void *volatile rh_e2e_sink;
#define KEEP(p) (rh_e2e_sink = (void *)(p))

static int rh_e2e_fd = -1;

/* EXPECT(value, fmt, ...): the SQL statement built from fmt must return value. */
static void EXPECT(long long value, const char *fmt, ...)
{
    char sql[2048], line[2200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    if (rh_e2e_fd < 0) {
        const char *path = getenv("RH_EXPECT_FILE");
        rh_e2e_fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : 1;
        if (rh_e2e_fd < 0)
            rh_e2e_fd = 1;
    }
    int n = snprintf(line, sizeof line, "EXPECT\t%lld\t%s\n", value, sql);
    if (n > 0 && write(rh_e2e_fd, line, (size_t)n) != n)
        _exit(99);
}

/* Common SQL fragments: blocks whose frame 0 is function F. */
#define AT_SYM(f) "bt IN (SELECT id FROM backtraces WHERE frame_no = 0 AND sym = '" f "')"

#endif
