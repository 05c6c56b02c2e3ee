/* regex_test.c: the filters' bounded regex engine (convert/query/rh_regex.c)
 * keeps the POSIX extended dialect and its bounds.
 *
 * Every pattern of a list users write (alternation, anchors, classes, POSIX
 * bracket classes, GNU word boundaries, escapes, intervals, a backslash in a
 * bracket) is matched against C and C++ symbol names and source paths by
 * rh_re_match() and by glibc's regexec(); the answers must agree on every
 * pair. Then the bounds: nested counted repetitions, PCRE2-only syntax,
 * back-references and over-long patterns are refused when compiled, with a
 * reason, and an exponential match stops at the step limit (-1) instead of
 * running on.
 */
#include <regex.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "rh_regex.h"

static const char *const patterns[] = {
    "alloc",
    "^main$",
    "alloc|free",
    "^std::",
    "vector<int>",
    "[[:digit:]]+",
    "^_Z",
    "\\<make\\>",
    "\\bgrow",
    "x{2,3}",
    "a.c",
    "\\.c$",
    "(foo|bar)_[a-z]+",
    "^[^:]*$",
    "[\\]",
    "operator\\(\\)",
    "\\.\\./",
    "[[:upper:]][[:lower:]]+",
    "^$",
    "s{0,1}tr(dup)?",
    "ma*llo+c",
    "\\w+::\\w+",
    "[.]h$",
    "lib(c|m)\\.so",
    "\\d",
    "([a-z]+_){2}",
    "^/usr/include/c\\+\\+/",
    "ab|^cd|ef$",
};

static const char *const subjects[] = {
    "main",
    "malloc",
    "free",
    "rh_alloc_grow",
    "std::vector<int>::push_back",
    "_ZN3foo3barEv",
    "make_table",
    "remake",
    "xxx",
    "abc",
    "a\\c",
    "src/alloc.c",
    "foo_bar_baz",
    "operator()",
    "../lib/x.h",
    "Table",
    "",
    "strdup",
    "str",
    "mallooc",
    "libc.so.6",
    "/usr/include/c++/12/bits/vector.tcc",
    "d",
    "a1b2",
    "cd-ef",
    "x::y",
    "path/x.h",
    "group_hit_7",
};

int main(void)
{
    char err[200];
    /* the dialect: the same answer as glibc's POSIX extended matcher */
    for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++) {
        regex_t g;
        int gok = regcomp(&g, patterns[i], REG_EXTENDED | REG_NOSUB) == 0;
        struct rh_re *r = rh_re_compile(patterns[i], err, sizeof err);
        CHECK(gok);
        if (!r)
            fprintf(stderr, "pattern %s: not compiled: %s\n", patterns[i], err);
        CHECK(r != NULL);
        if (!gok || !r) {
            if (gok)
                regfree(&g);
            rh_re_free(r);
            continue;
        }
        for (size_t j = 0; j < sizeof subjects / sizeof subjects[0]; j++) {
            int want = regexec(&g, subjects[j], 0, NULL, 0) == 0;
            int got = rh_re_match(r, subjects[j]);
            if (got != want)
                fprintf(stderr, "/%s/ on '%s': %d, glibc %d\n", patterns[i], subjects[j], got,
                        want);
            CHECK_EQ(got, want);
        }
        regfree(&g);
        rh_re_free(r);
    }

    /* the bounds, each refused with a reason */
    static const struct {
        const char *pat, *why;
    } refused[] = {
        {"((a{1,100}){1,100}){1,100}", "too large"},
        {"(((a{1,100}){1,100}){1,100}){1,100}", "too large"},
        {"(?i)alloc", "not POSIX"},
        {"(*LIMIT_MATCH=1000000000)a", "not POSIX"},
        {"(a)\\1", "back-reference"},
        {"abc\\", "trailing backslash"},
        {"[[:alpha:", "unterminated"},
        {"((((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))))))))))", "nested"},
        {"(", "missing"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        err[0] = 0;
        struct rh_re *r = rh_re_compile(refused[i].pat, err, sizeof err);
        CHECK(r == NULL);
        if (!strstr(err, refused[i].why))
            fprintf(stderr, "/%s/: reason '%s', want '%s'\n", refused[i].pat, err, refused[i].why);
        CHECK(strstr(err, refused[i].why) != NULL);
        rh_re_free(r);
    }
    char longpat[300];
    memset(longpat, 'a', 257);
    longpat[257] = 0;
    CHECK(rh_re_compile(longpat, err, sizeof err) == NULL);
    CHECK(strstr(err, "longer than 256") != NULL);
    longpat[256] = 0;
    struct rh_re *r = rh_re_compile(longpat, err, sizeof err);
    CHECK(r != NULL);
    rh_re_free(r);

    /* an exponential match stops at the step limit, in well under a second */
    char text[80];
    memset(text, 'a', 60);
    text[60] = 0;
    r = rh_re_compile("^(a|aa)*[bc]$", err, sizeof err);
    CHECK(r != NULL);
    if (r) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        CHECK_EQ(rh_re_match(r, text), -1);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        printf("exponential match stopped after %.3f s\n", s);
        CHECK(s < 5.0);
        CHECK_EQ(rh_re_match(r, "aab"), 1); /* the same pattern on a short text */
        rh_re_free(r);
    }
    return rh_test_summary();
}
