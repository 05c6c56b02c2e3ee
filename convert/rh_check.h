/* rh_check.h: the converter's "cannot happen" checks, ALWAYS and NEVER.
 *
 * A condition the code believes always holds (RH_ALWAYS) or never does
 * (RH_NEVER), at a place that still has a clean way out when it is wrong.
 * The check is tiered:
 *   - in checked builds (RH_CHECKED: Debug, sanitizer and fuzzer builds) a
 *     broken one prints what and where and aborts, so the tests and the
 *     fuzzer stop on it;
 *   - in a release build it prints one line, "rheaper: internal error at
 *     FILE:LINE (FUNCTION): CONDITION: DETAIL", and the expression gives the
 *     caller's failure path (RH_ALWAYS is 0, RH_NEVER is 1), which the caller
 *     takes: a damaged profile is never a crash.
 * Use them as conditions: `if (!RH_ALWAYS(i < n, "stack %u of %zu", i, n))
 * return -1;` or `if (RH_NEVER(p == NULL, "...")) goto fail;`. The detail is
 * a printf format with its arguments.
 */
#ifndef RH_CHECK_H
#define RH_CHECK_H

#ifndef RH_HIDDEN
#define RH_HIDDEN __attribute__((visibility("hidden")))
#endif

/* The failure of one check: prints the line (see above); aborts in a checked
 * build, else returns 0. */
RH_HIDDEN int rh_check_failed(const char *file, int line, const char *func, const char *cond,
                              const char *fmt, ...) __attribute__((format(printf, 5, 6), cold));

/* 1 in a checked build (rh_check.c was built with RH_CHECKED), else 0. */
RH_HIDDEN int rh_check_is_checked(void);

#define RH_ALWAYS(cond, ...)                                                                       \
    (__builtin_expect(!!(cond), 1)                                                                 \
         ? 1                                                                                       \
         : rh_check_failed(__FILE__, __LINE__, __func__, #cond, __VA_ARGS__))
#define RH_NEVER(cond, ...)                                                                        \
    (__builtin_expect(!!(cond), 0)                                                                 \
         ? !rh_check_failed(__FILE__, __LINE__, __func__, "never " #cond, __VA_ARGS__)             \
         : 0)

#endif
