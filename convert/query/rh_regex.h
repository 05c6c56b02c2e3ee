/* rh_regex.h: the one regular-expression engine of every filter.
 *
 * --function, --file, their negations, --skip-function, the URL parameters
 * (function_regex, source_regex, skip_function, ...), SQL's REGEXP and the
 * terminal views' `/` filter all compile and match through these three
 * functions. The dialect is the POSIX extended one users write
 * (`alloc|free`, `^std::`, `[[:digit:]]+`, `\<word\>`), run by PCRE2 with
 * bounds: the pattern's length, its nesting, the compiled size, the memory
 * its compilation may take, and for each match a step, depth and heap limit.
 * A pattern past a bound is refused when compiled, with a reason; a match
 * past its limit says so instead of growing or running on.
 */
#ifndef RH_REGEX_H
#define RH_REGEX_H

#include <stddef.h>

/* the longest pattern accepted, in bytes */
#define RH_RE_MAX_LEN 256

struct rh_re;

/* Compiles the POSIX extended pattern pat. Returns the compiled pattern, or
 * NULL with a one-phrase reason in err ("longer than 256 characters",
 * "missing ) at offset 3", "too large when compiled", ...). */
__attribute__((visibility("hidden"))) struct rh_re *rh_re_compile(const char *pat, char *err,
                                                                  size_t errlen);

/* 1 when text matches re anywhere, 0 when not, -1 when the match ran into
 * its step, depth or memory limit (or memory ran out). Thread-safe for one
 * re per thread. */
__attribute__((visibility("hidden"))) int rh_re_match(struct rh_re *re, const char *text);

/* Frees re (NULL is fine). */
__attribute__((visibility("hidden"))) void rh_re_free(struct rh_re *re);

#endif
