/* test_cc_args.c: rheaper-cc's command-line reading (cc-wrapper/rh_cc_args.c).
 *
 * Response files are split with GCC's rules, and each command line gets the
 * mode that decides what rheaper-cc adds: nothing, compile flags, an
 * executable link or a shared-library link.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../harness.h"
#include "rh_cc.h"

struct split {
    int n;
    char args[16][64];
};

static void collect(const char *arg, void *ctx)
{
    struct split *s = ctx;
    if (s->n < 16)
        snprintf(s->args[s->n], sizeof s->args[0], "%s", arg);
    s->n++;
}

static void test_split(void)
{
    struct split s = {0};
    char buf[256];
    snprintf(buf, sizeof buf, "  -DA=\"a b\" 'x y'\\ z\n-c\t\"q\\\"d\" '' e\\\\f");
    rh_cc_split_response(buf, strlen(buf), collect, &s);
    CHECK_EQ(s.n, 6);
    CHECK_EQ(strcmp(s.args[0], "-DA=a b"), 0);
    CHECK_EQ(strcmp(s.args[1], "x y z"), 0);
    CHECK_EQ(strcmp(s.args[2], "-c"), 0);
    CHECK_EQ(strcmp(s.args[3], "q\"d"), 0);
    CHECK_EQ(strcmp(s.args[4], ""), 0);
    CHECK_EQ(strcmp(s.args[5], "e\\f"), 0);

    struct split e = {0};
    char empty[8] = " \n\t ";
    rh_cc_split_response(empty, strlen(empty), collect, &e);
    CHECK_EQ(e.n, 0);
}

/* Mode of a command line given as a NULL-terminated list of arguments. */
static enum rh_cc_mode mode_of(const char *const *argv, struct rh_cc_scan *out)
{
    struct rh_cc_scan s;
    memset(&s, 0, sizeof s);
    for (int i = 0; argv[i]; i++)
        rh_cc_scan_arg(&s, argv[i], 0);
    if (out)
        *out = s;
    return rh_cc_mode_of(&s);
}

#define MODE(expect, ...)                                                                          \
    do {                                                                                           \
        const char *const a_[] = {__VA_ARGS__, NULL};                                              \
        CHECK_EQ(mode_of(a_, NULL), expect);                                                       \
    } while (0)

static void test_modes(void)
{
    MODE(RH_CC_LINK_EXE, "x.c", "-o", "x");
    MODE(RH_CC_LINK_EXE, "x.o", "y.o", "-lm");
    MODE(RH_CC_COMPILE, "-c", "x.c");
    MODE(RH_CC_COMPILE, "-S", "x.c");
    MODE(RH_CC_COMPILE, "-fsyntax-only", "x.c");
    MODE(RH_CC_COMPILE, "-r", "a.o", "b.o", "-o", "c.o");
    MODE(RH_CC_COMPILE, "-v", "-c", "x.c");
    MODE(RH_CC_PASS, "-E", "x.c");
    MODE(RH_CC_PASS, "-M", "x.c");
    MODE(RH_CC_PASS, "-MM", "x.c");
    MODE(RH_CC_PASS, "--version");
    MODE(RH_CC_PASS, "-v");
    MODE(RH_CC_PASS, "-###");
    MODE(RH_CC_PASS, "-dumpmachine");
    MODE(RH_CC_PASS, "-print-file-name=libc.a");
    MODE(RH_CC_PASS, "-print-search-dirs");
    MODE(RH_CC_LINK_EXE, "-v", "x.c");
    MODE(RH_CC_LINK_EXE, "-MD", "x.c"); /* dependency files do not stop the link */
    MODE(RH_CC_LINK_SO, "-shared", "-fPIC", "x.c", "-o", "libx.so");
    /* An option's value is not an input or an option. */
    MODE(RH_CC_PASS, "-o", "-c", "-v");
    MODE(RH_CC_LINK_EXE, "-x", "c", "x.c", "-o", "-E");
    /* gcc's and clang's long spellings of the mode options (gcc.cc option_map) */
    MODE(RH_CC_COMPILE, "--compile", "x.c", "-o", "x.o");
    MODE(RH_CC_COMPILE, "--assemble", "x.c");
    MODE(RH_CC_PASS, "--preprocess", "x.c");
    MODE(RH_CC_LINK_SO, "--shared", "-fPIC", "x.c", "-o", "libx.so");
    MODE(RH_CC_LINK_EXE, "--output", "-c", "x.c");
    MODE(RH_CC_LINK_EXE, "--language", "c", "-", "-o", "x");

    struct rh_cc_scan s;
    const char *const st[] = {"-static", "x.c", "-l", "stdc++", NULL};
    CHECK_EQ(mode_of(st, &s), RH_CC_LINK_EXE);
    CHECK_EQ(s.is_static, 1);
    CHECK_EQ(s.cxx_lib, 1);
    CHECK_EQ(s.inputs, 1);
    const char *const g0[] = {"-g0", "-c", "x.c", NULL};
    mode_of(g0, &s);
    CHECK_EQ(s.has_g, 1);
    const char *const gz[] = {"-gz", "-gsplit-dwarf", "-c", "x.c", NULL};
    mode_of(gz, &s);
    CHECK_EQ(s.has_g, 0);
    const char *const gd[] = {"-gdwarf-4", "-c", "x.c", NULL};
    mode_of(gd, &s);
    CHECK_EQ(s.has_g, 1);
    const char *const sl[] = {"-static-libstdc++", "x.o", NULL};
    mode_of(sl, &s);
    CHECK_EQ(s.static_cxx, 1);
    CHECK_EQ(s.is_static, 0);
    const char *const lst[] = {"--static", "x.o", NULL};
    CHECK_EQ(mode_of(lst, &s), RH_CC_LINK_EXE);
    CHECK_EQ(s.is_static, 1);
}

/* rheaper-c++'s static libstdc++ default and its opt-outs. */
static void test_static_cxx_default(void)
{
    struct rh_cc_scan s;
    const char *const exe[] = {"x.cc", "-o", "x", NULL};
    enum rh_cc_mode m = mode_of(exe, &s);
    CHECK_EQ(rh_cc_static_cxx_default(&s, m, 1, NULL), 1);
    CHECK_EQ(rh_cc_static_cxx_default(&s, m, 1, "1"), 1);
    CHECK_EQ(rh_cc_static_cxx_default(&s, m, 1, "0"), 0);  /* RHEAPER_STATIC_LIBSTDCXX=0 */
    CHECK_EQ(rh_cc_static_cxx_default(&s, m, 0, NULL), 0); /* the C driver */
    const char *const shared_cxx[] = {"x.cc", "-shared-libstdc++", NULL};
    m = mode_of(shared_cxx, &s);
    CHECK_EQ(s.shared_cxx, 1);
    CHECK_EQ(m, RH_CC_LINK_EXE);
    CHECK_EQ(rh_cc_static_cxx_default(&s, m, 1, NULL), 0);
    const char *const so[] = {"-shared", "-fPIC", "x.cc", "-o", "libx.so", NULL};
    m = mode_of(so, &s);
    CHECK_EQ(rh_cc_static_cxx_default(&s, m, 1, NULL), 0);
    const char *const obj[] = {"-c", "x.cc", NULL};
    m = mode_of(obj, &s);
    CHECK_EQ(rh_cc_static_cxx_default(&s, m, 1, NULL), 0);
    const char *const st[] = {"-static", "x.cc", NULL};
    m = mode_of(st, &s);
    CHECK_EQ(rh_cc_static_cxx_default(&s, m, 1, NULL), 0); /* -static has it already */
    const char *const sl[] = {"-static-libstdc++", "x.cc", NULL};
    m = mode_of(sl, &s);
    CHECK_EQ(rh_cc_static_cxx_default(&s, m, 1, NULL), 0); /* given once is enough */
    const char *const lcxx[] = {"-stdlib=libc++", "x.cc", NULL};
    m = mode_of(lcxx, &s);
    CHECK_EQ(rh_cc_static_cxx_default(&s, m, 1, NULL), 0);
    const char *const ver[] = {"--version", NULL};
    m = mode_of(ver, &s);
    CHECK_EQ(rh_cc_static_cxx_default(&s, m, 1, NULL), 0);
}

static void test_response_files(void)
{
    char dir[] = "/tmp/rh-cc-args-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char inner[64], outer[64], at_inner[80], at_outer[80];
    snprintf(inner, sizeof inner, "%s/inner.rsp", dir);
    snprintf(outer, sizeof outer, "%s/outer.rsp", dir);
    snprintf(at_inner, sizeof at_inner, "@%s", inner);
    snprintf(at_outer, sizeof at_outer, "@%s", outer);
    FILE *f = fopen(inner, "w");
    fputs("-DX='a b'\n\"-c\"\n", f);
    fclose(f);
    f = fopen(outer, "w");
    fprintf(f, "-O2 %s\n", at_inner);
    fclose(f);

    /* -c hidden two response files deep still means "compile only". */
    const char *const a[] = {at_outer, "x.c", NULL};
    CHECK_EQ(mode_of(a, NULL), RH_CC_COMPILE);
    /* An unreadable @file is an input, as GCC takes it. */
    struct rh_cc_scan s;
    const char *const b[] = {"@/nonexistent/rh.rsp", "-o", "x", NULL};
    CHECK_EQ(mode_of(b, &s), RH_CC_LINK_EXE);
    CHECK_EQ(s.inputs, 1);
    /* A response file that names itself stops at the depth limit. */
    f = fopen(inner, "w");
    fprintf(f, "%s -E\n", at_inner);
    fclose(f);
    const char *const c[] = {at_inner, "x.c", NULL};
    CHECK_EQ(mode_of(c, NULL), RH_CC_PASS);
    unlink(inner);
    unlink(outer);
    rmdir(dir);
}

/* Which arguments of a command line name a library: returns a string with
 * one character per argument unit, 'L' for a library, '.' otherwise, and the
 * units' lengths as digits after a '+' when a unit takes two arguments. */
static const char *libs_of(const char *const *argv)
{
    static char out[64];
    size_t o = 0;
    int n = 0, ld_value = 0;
    while (argv[n])
        n++;
    for (int i = 0; i < n && o + 3 < sizeof out;) {
        int used = 1;
        int lib = rh_cc_names_library(argv[i], i + 1 < n ? argv[i + 1] : NULL, &used, &ld_value, 0);
        out[o++] = lib ? 'L' : '.';
        if (used == 2)
            out[o++] = '+';
        i += used;
    }
    out[o] = '\0';
    return out;
}

#define LIBS(expect, ...)                                                                          \
    do {                                                                                           \
        const char *const argv_[] = {__VA_ARGS__, NULL};                                           \
        const char *got_ = libs_of(argv_);                                                         \
        if (strcmp(got_, expect) != 0)                                                             \
            fprintf(stderr, "libraries of %s...: got %s, want %s\n", argv_[0], got_, expect);      \
        CHECK_EQ(strcmp(got_, expect), 0);                                                         \
    } while (0)

static void test_libraries(void)
{
    LIBS(".L", "x.c", "-ljemalloc");
    LIBS(".L+", "x.o", "-l", "jemalloc");
    LIBS("L", "-l:libjemalloc.so.2");
    LIBS("..LL", "x.o", "y.o", "/usr/lib/libtcmalloc.so", "libz.a");
    LIBS("L.", "libfoo.so.1.2", "foo.sos");
    LIBS(".+.", "-o", "libout.so", "x.o");         /* the output, not an input */
    LIBS(".+.", "-L", "/usr/lib/x.a", "x.o");      /* an option's value */
    LIBS("L", "-Wl,--as-needed,-ljemalloc");
    LIBS("L", "-Wl,-l,jemalloc");
    LIBS(".", "-Wl,-soname,libx.so.1");              /* soname is not an input */
    LIBS("L", "-Wl,--start-group,libx.a,liby.a,--end-group");
    LIBS("L+", "-Xlinker", "-lm");
    LIBS(".+", "-Xlinker", "--gc-sections");
    LIBS("..", "-O2", "-Wl,--as-needed");
    /* libtool's and the hand-split spellings: the soname is -soname's value */
    LIBS("..L", "-Wl,-soname", "-Wl,libx.so.1", "-lm");
    LIBS(".+.+L", "-Xlinker", "-soname", "-Xlinker", "libx.so.1", "libz.a");
    LIBS("..L", "-Wl,-rpath", "-Wl,/opt/lib.a", "-Wl,-lz");

    char dir[] = "/tmp/rh-cc-libs-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char rsp[64], at[80], rsp2[64], at2[80];
    snprintf(rsp, sizeof rsp, "%s/libs.rsp", dir);
    snprintf(rsp2, sizeof rsp2, "%s/none.rsp", dir);
    snprintf(at, sizeof at, "@%s", rsp);
    snprintf(at2, sizeof at2, "@%s", rsp2);
    FILE *f = fopen(rsp, "w");
    fputs("x.o -o prog '-ljemalloc'\n", f);
    fclose(f);
    f = fopen(rsp2, "w");
    fputs("x.o -o libnot.so\n", f);
    fclose(f);
    LIBS("L.", at, at2);
    unlink(rsp);
    unlink(rsp2);
    rmdir(dir);
}

int main(void)
{
    test_split();
    test_libraries();
    test_modes();
    test_static_cxx_default();
    test_response_files();
    return rh_test_summary();
}
