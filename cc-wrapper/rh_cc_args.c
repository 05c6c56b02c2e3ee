/* rh_cc_args.c: reads a compiler command line to decide what it does.
 *
 * rheaper-cc must act exactly like the compiler for preprocessing and info
 * queries, add only compile flags when nothing is linked, and add the runtime
 * when an executable is linked. This file classifies arguments one at a time,
 * including those inside @response files, which it reads with GCC's quoting
 * rules but never rewrites: the compiler gets the original @file argument.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rh_cc.h"

/* Nested response files deeper than this are not read (GCC stops at loops). */
#define RH_CC_RSP_DEPTH 16
/* Response files larger than this are not read for scanning. */
#define RH_CC_RSP_MAX (64u << 20)

/* clang-format off */
/* Options whose value is the next argument when not attached. */
static const char *const rh_cc_sep_opts[] = {
    "-o", "-x", "-D", "-U", "-I", "-L", "-l", "-include", "-imacros", "-isystem", "-idirafter",
    "-iprefix", "-iwithprefix", "-iwithprefixbefore", "-iquote", "-isysroot", "-imultilib",
    "-MF", "-MT", "-MQ", "-Xlinker", "-Xassembler", "-Xpreprocessor", "-Xclang", "-T", "-u",
    "-e", "-z", "-aux-info", "--param", "-target", "-arch", "-B", "-G", "-A", "-wrapper",
    "-dumpbase", "-dumpdir", "-dumpbase-ext", "--sysroot", "-specs", NULL,
};

/* -g options that do not set a debug level (a -g1 is still added with them). */
static const char *const rh_cc_g_modifiers[] = {
    "-gz", "-gsplit-dwarf", "-grecord-gcc-switches", "-gcolumn-info", "-gstrict-dwarf",
    "-gpubnames", "-ggnu-pubnames", "-gdescribe-dies", "-gstatement-frontiers",
    "-gvariable-location-views", "-ginline-points", "-gas-loc-support", "-gas-locview-support",
    "-gembed-source", "-gdwarf64", "-gdwarf32", NULL,
};
/* clang-format on */

static int rh_in_list(const char *a, const char *const *list)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(a, list[i]) == 0)
            return 1;
    return 0;
}

static int rh_starts(const char *a, const char *prefix)
{
    return strncmp(a, prefix, strlen(prefix)) == 0;
}

/* Is `a` a -g option that decides the amount of debug info? -g0 counts: it is
 * the user's choice. Modifiers (-gz, -gsplit-dwarf, -gno-*) do not. */
static int rh_is_debug_level(const char *a)
{
    if (!rh_starts(a, "-g"))
        return 0;
    if (rh_starts(a, "-gno-") || rh_starts(a, "-gz="))
        return 0;
    return !rh_in_list(a, rh_cc_g_modifiers);
}

struct rh_rsp_ctx {
    struct rh_cc_scan *s;
    int depth;
};

static void rh_rsp_arg(const char *arg, void *ctx)
{
    struct rh_rsp_ctx *c = ctx;
    rh_cc_scan_arg(c->s, arg, c->depth);
}

/* Reads response file `path` and scans its arguments. Returns 0, or -1 when it
 * cannot be read (the caller then treats "@path" as GCC does: an input). */
static int rh_scan_response(struct rh_cc_scan *s, const char *path, int depth)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (unsigned long long)st.st_size > RH_CC_RSP_MAX) {
        close(fd);
        return -1;
    }
    size_t len = (size_t)st.st_size, got = 0;
    char *buf = malloc(len + 1);
    if (!buf) {
        close(fd);
        return -1;
    }
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    struct rh_rsp_ctx ctx = {s, depth + 1};
    rh_cc_split_response(buf, got, rh_rsp_arg, &ctx);
    free(buf);
    return 0;
}

/* Whitespace that separates response file arguments (C isspace, locale-free). */
static int rh_rsp_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}

void rh_cc_split_response(char *buf, size_t len, void (*fn)(const char *arg, void *ctx), void *ctx)
{
    size_t i = 0;
    buf[len] = '\0';
    while (i < len) {
        while (i < len && rh_rsp_space(buf[i]))
            i++;
        if (i >= len)
            break;
        char *out = buf + i; /* the argument is rebuilt in place: it only shrinks */
        size_t o = 0;
        int squote = 0, dquote = 0, bsquote = 0;
        for (; i < len; i++) {
            char ch = buf[i];
            if (bsquote) {
                bsquote = 0;
                out[o++] = ch;
            } else if (ch == '\\') {
                bsquote = 1;
            } else if (squote) {
                if (ch == '\'')
                    squote = 0;
                else
                    out[o++] = ch;
            } else if (dquote) {
                if (ch == '"')
                    dquote = 0;
                else
                    out[o++] = ch;
            } else if (rh_rsp_space(ch)) {
                break;
            } else if (ch == '\'') {
                squote = 1;
            } else if (ch == '"') {
                dquote = 1;
            } else {
                out[o++] = ch;
            }
        }
        int at_end = i >= len;
        i++; /* past the separator */
        out[o] = '\0';
        fn(out, ctx);
        if (at_end)
            break;
    }
}

/* gcc's driver (and clang's) accept long spellings of some options and
 * translate them before anything else (gcc.cc option_map): "--compile" is -c,
 * "--output X" is -o X, and so on. Returns the short form, or a itself. */
static const char *rh_long_alias(const char *a)
{
    static const char *const map[][2] = {
        {"--compile", "-c"},   {"--assemble", "-S"}, {"--preprocess", "-E"},
        {"--shared", "-shared"}, {"--static", "-static"}, {"--output", "-o"},
        {"--language", "-x"},  {"--include", "-include"}, {"--define-macro", "-D"},
        {"--undefine-macro", "-U"}, {"--include-directory", "-I"}, {"--library-directory", "-L"},
        {"--imacros", "-imacros"}, {"--include-prefix", "-iprefix"},
        {"--include-with-prefix", "-iwithprefix"},
        {"--dependencies", "-M"}, {"--user-dependencies", "-MM"}, {"--verbose", "-v"},
        {"--for-linker", "-Xlinker"}, {"--force-link", "-u"}, {"--prefix", "-B"},
        {"--specs", "-specs"},
    };
    if (a[0] != '-' || a[1] != '-')
        return a;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(a, map[i][0]) == 0)
            return map[i][1];
    return a;
}

void rh_cc_scan_arg(struct rh_cc_scan *s, const char *a, int depth)
{
    if (s->skip_next) {
        if (s->skip_next == 2 && (strcmp(a, "stdc++") == 0 || strcmp(a, "c++") == 0)) {
            s->cxx_lib = 1; /* "-l stdc++" */
            s->libcxx |= strcmp(a, "c++") == 0;
        }
        s->skip_next = 0;
        return;
    }
    if (a[0] == '@' && a[1] != '\0') {
        if (depth < RH_CC_RSP_DEPTH && rh_scan_response(s, a + 1, depth) == 0)
            return;
        s->inputs++;
        return;
    }
    if (a[0] != '-' || a[1] == '\0') {
        s->inputs++; /* a file, or "-" for stdin */
        return;
    }
    a = rh_long_alias(a);
    if (strcmp(a, "-c") == 0 || strcmp(a, "-S") == 0 || strcmp(a, "-r") == 0 ||
        strcmp(a, "-fsyntax-only") == 0) {
        s->no_link = 1;
    } else if (strcmp(a, "-E") == 0 || strcmp(a, "-M") == 0 || strcmp(a, "-MM") == 0) {
        s->no_link = 1;
        s->preprocess = 1;
    } else if (strcmp(a, "-shared") == 0) {
        s->shared = 1;
    } else if (strcmp(a, "-static") == 0 || strcmp(a, "-static-pie") == 0) {
        s->is_static = 1;
    } else if (strcmp(a, "-static-libstdc++") == 0) {
        s->static_cxx = 1;
    } else if (strcmp(a, "-shared-libstdc++") == 0) {
        s->shared_cxx = 1;
    } else if (strcmp(a, "-stdlib=libc++") == 0) {
        s->libcxx = 1;
    } else if (strcmp(a, "-lstdc++") == 0 || strcmp(a, "-lc++") == 0) {
        s->cxx_lib = 1;
        s->libcxx |= strcmp(a, "-lc++") == 0;
    } else if (strcmp(a, "--version") == 0 || strcmp(a, "--help") == 0 || rh_starts(a, "--help=") ||
               strcmp(a, "-dumpversion") == 0 || strcmp(a, "-dumpfullversion") == 0 ||
               strcmp(a, "-dumpmachine") == 0 || strcmp(a, "-dumpspecs") == 0 ||
               rh_starts(a, "-print-") || rh_starts(a, "--print-")) {
        s->info = 1;
    } else if (strcmp(a, "-v") == 0 || strcmp(a, "-###") == 0) {
        s->verbose = 1;
    } else if (rh_is_debug_level(a)) {
        s->has_g = 1;
    } else if (rh_in_list(a, rh_cc_sep_opts)) {
        s->skip_next = strcmp(a, "-l") == 0 ? 2 : 1;
    }
}

enum rh_cc_mode rh_cc_mode_of(const struct rh_cc_scan *s)
{
    if (s->info || s->preprocess || (s->verbose && s->inputs == 0))
        return RH_CC_PASS;
    if (s->no_link)
        return RH_CC_COMPILE;
    if (s->shared)
        return RH_CC_LINK_SO;
    return RH_CC_LINK_EXE;
}

/* Whether one plain argument (not an option value) names a library file: a
 * path ending in .a, .so or .so.N (the version digits and dots only). */
static int rh_is_lib_path(const char *a)
{
    size_t n = strlen(a);
    if (n >= 2 && strcmp(a + n - 2, ".a") == 0)
        return 1;
    const char *so = NULL;
    for (const char *p = strstr(a, ".so"); p; p = strstr(p + 1, ".so"))
        so = p;
    if (!so)
        return 0;
    for (const char *p = so + 3; *p; p++)
        if (*p != '.' && (*p < '0' || *p > '9'))
            return 0;
    return so[3] == '\0' || so[3] == '.';
}

/* Linker options whose value is the next piece of a -Wl, list (a file name
 * there is not an input). */
static const char *const rh_ld_sep_opts[] = {
    "-soname", "-h", "-rpath", "-rpath-link", "-R", "-Map", "-T", "-o", "-e", "-u", "-y",
    "-z", "-a", "-A", "-m", "-b", "-F", "-f", "-G", "-I", "-dynamic-linker", "--version-script",
    "--dynamic-list", "--script", "--output", "--entry", "--undefined", "--trace-symbol",
    "--retain-symbols-file", "--wrap", "--defsym", "--just-symbols", "-L", "--library-path",
    NULL,
};

/* Whether a linker option string (the text after -Wl, split at commas, or a
 * -Xlinker value) names a library: -lNAME, -l NAME (the next piece) or a
 * library path that is not another option's value. */
static int rh_linker_names_lib(const char *opts, int split, int *ld_value)
{
    int want_next = 0, skip = *ld_value;
    const char *p = opts;
    int found = 0;
    *ld_value = 0;
    for (;;) {
        const char *end = split ? strchr(p, ',') : NULL;
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char piece[4096];
        if (n >= sizeof piece)
            n = sizeof piece - 1;
        memcpy(piece, p, n);
        piece[n] = '\0';
        if (want_next && n > 0)
            found = 1;
        want_next = strcmp(piece, "-l") == 0 || strcmp(piece, "--library") == 0;
        if (skip) {
            skip = 0;
        } else if (rh_in_list(piece, rh_ld_sep_opts)) {
            skip = 1;
        } else if ((n > 2 && strncmp(piece, "-l", 2) == 0) ||
                   strncmp(piece, "--library=", 10) == 0) {
            found = 1;
        } else if (n > 0 && p[0] != '-') {
            if (rh_is_lib_path(piece))
                found = 1;
        }
        if (!end) {
            *ld_value = skip; /* -Wl,-soname -Wl,libx.so.1: the value comes next */
            return found;
        }
        p = end + 1;
    }
}

/* The arguments of a response file, collected for rh_cc_names_library. */
struct rh_lib_rsp {
    const char **v;
    size_t n, cap;
    int oom;
};

static void rh_lib_rsp_arg(const char *arg, void *ctx)
{
    struct rh_lib_rsp *r = ctx;
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        const char **v = realloc(r->v, cap * sizeof *v);
        if (!v) {
            r->oom = 1;
            return;
        }
        r->v = v;
        r->cap = cap;
    }
    r->v[r->n++] = arg;
}

/* rh_cc_names_library for the arguments of response file `path`. */
static int rh_rsp_names_library(const char *path, int depth)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rh_is_lib_path(path); /* not a response file: GCC takes "@path" as a file */
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (unsigned long long)st.st_size > RH_CC_RSP_MAX) {
        close(fd);
        return 0;
    }
    size_t len = (size_t)st.st_size, got = 0;
    char *buf = malloc(len + 1);
    if (!buf) {
        close(fd);
        return 1; /* cannot tell: one more archive on the line costs nothing */
    }
    while (got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    struct rh_lib_rsp r = {0};
    rh_cc_split_response(buf, got, rh_lib_rsp_arg, &r);
    int found = r.oom, ld_value = 0;
    for (size_t i = 0; !found && i < r.n;) {
        int used = 1;
        found = rh_cc_names_library(r.v[i], i + 1 < r.n ? r.v[i + 1] : NULL, &used, &ld_value,
                                    depth + 1);
        i += (size_t)used;
    }
    free(r.v);
    free(buf);
    return found;
}

int rh_cc_names_library(const char *a, const char *next, int *used, int *ld_value, int depth)
{
    *used = 1;
    int value = *ld_value; /* this unit's first linker piece is an option's value */
    *ld_value = 0;
    if (value) {
        /* nothing may come between a linker option and its value: the unit
         * is passed over (its value is consumed, the rest is rarely a library) */
        if (strncmp(a, "-Wl,", 4) == 0)
            rh_linker_names_lib(a + 4, 1, &value);
        else if (strcmp(a, "-Xlinker") == 0 && next)
            *used = 2;
        return 0;
    }
    if (a[0] == '@' && a[1] != '\0')
        return depth < RH_CC_RSP_DEPTH && rh_rsp_names_library(a + 1, depth);
    if (a[0] != '-' || a[1] == '\0')
        return a[0] != '-' && rh_is_lib_path(a);
    a = rh_long_alias(a);
    if (strcmp(a, "-l") == 0) {
        *used = next ? 2 : 1;
        return 1;
    }
    if (a[1] == 'l')
        return 1; /* -lNAME, -l:FILE */
    if (strncmp(a, "-Wl,", 4) == 0)
        return rh_linker_names_lib(a + 4, 1, ld_value);
    if (strcmp(a, "-Xlinker") == 0) {
        *used = next ? 2 : 1;
        return next && rh_linker_names_lib(next, 0, ld_value);
    }
    if (rh_in_list(a, rh_cc_sep_opts) && next)
        *used = 2; /* -o lib.so: the output, not an input */
    return 0;
}

int rh_cc_static_cxx_default(const struct rh_cc_scan *s, enum rh_cc_mode mode, int cxx,
                             const char *env_value)
{
    /* Only the C++ driver: gcc and clang apply -static-libstdc++ to the library
     * their C++ driver adds, never to a -lstdc++ the user names (clang warns). */
    if (mode != RH_CC_LINK_EXE || !cxx || s->is_static || s->static_cxx || s->shared_cxx ||
        s->libcxx)
        return 0;
    if (env_value && strcmp(env_value, "0") == 0)
        return 0;
    return 1;
}
