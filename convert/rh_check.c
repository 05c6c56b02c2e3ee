/* rh_check.c: what a broken RH_ALWAYS or RH_NEVER does (rh_check.h).
 *
 * One line on stderr naming the file, line, function, the condition and the
 * caller's detail; then, in a checked build (RH_CHECKED defined: Debug,
 * sanitizer and fuzzer builds), abort() so that the tests and the fuzzer stop
 * at the broken belief, and in a release build a return of 0 so that the
 * caller fails cleanly (the profile is said to be damaged, the command ends
 * with its error) instead of crashing. The converter is a tool run after the
 * profiled program, so stdio is fine here.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rh_check.h"

int rh_check_is_checked(void)
{
#ifdef RH_CHECKED
    return 1;
#else
    return 0;
#endif
}

int rh_check_failed(const char *file, int line, const char *func, const char *cond, const char *fmt,
                    ...)
{
    const char *base = strrchr(file, '/');
    char detail[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rheaper: internal error at %s:%d (%s): %s: %s\n", base ? base + 1 : file, line,
            func, cond, detail);
    fflush(stderr);
    if (rh_check_is_checked())
        abort();
    return 0;
}
