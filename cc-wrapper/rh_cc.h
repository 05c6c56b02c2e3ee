/* rh_cc.h: the internal interface of rheaper-cc / rheaper-c++ (cc-wrapper/).
 *
 * rheaper-cc is a build-time program: it looks at the compiler arguments it is
 * given (reading, never rewriting, @response files), decides whether the
 * command compiles, links an executable, links a shared library or only asks
 * the compiler something, adds rheaper's flags accordingly and execs the real
 * compiler with every user argument unchanged and in order.
 */
#ifndef RH_CC_H
#define RH_CC_H

#include <stddef.h>

/* What a scan of the command line found. All fields are counts or 0/1. */
struct rh_cc_scan {
    int no_link;    /* -c, -S, -E, -M, -MM, -fsyntax-only or -r */
    int preprocess; /* -E, -M or -MM: the output must be the compiler's own */
    int info;       /* --version, --help, -dump*, -print-*: an information query */
    int verbose;    /* -v or -###: an info query when there are no inputs */
    int shared;     /* -shared */
    int is_static;  /* -static or -static-pie */
    int has_g;      /* a -g option that sets the debug level (-g0 included) */
    int cxx_lib;    /* -lstdc++ or -lc++ (a C++ link through the C driver) */
    int static_cxx; /* -static-libstdc++ */
    int shared_cxx; /* -shared-libstdc++ (rheaper's own opt-out, not passed on) */
    int libcxx;     /* -stdlib=libc++ or -lc++ (libc++'s static archive is often not installed) */
    int inputs;     /* arguments that are not options (source, object files) */
    int skip_next;  /* internal: the next argument belongs to an option (2: to -l) */
};

/* The kind of command, from a finished scan. */
enum rh_cc_mode {
    RH_CC_PASS,     /* add nothing at all: preprocess-only or an info query */
    RH_CC_COMPILE,  /* compile flags only */
    RH_CC_LINK_EXE, /* compile flags, then wrap flags and the runtime */
    RH_CC_LINK_SO,  /* compile flags, then wrap flags and the weak fallbacks */
};

/* ---- rh_cc_args.c ---- */

/* Classifies one argument into *s. Arguments starting with '@' are response
 * files: when readable their contents are scanned (GCC's quoting rules, nested
 * files up to a fixed depth), otherwise the argument counts as an input, as GCC
 * would take it. Never modifies the argument or the file. */
void rh_cc_scan_arg(struct rh_cc_scan *s, const char *arg, int depth);

/* Splits a response file's text into arguments with GCC's rules: whitespace
 * separates, single and double quotes group, a backslash takes the next
 * character literally (inside quotes too). Calls fn(arg, ctx) for each. buf is
 * the file content, modified in place (arguments are NUL-terminated inside it;
 * it must have room for one extra byte at buf[len]). */
void rh_cc_split_response(char *buf, size_t len, void (*fn)(const char *arg, void *ctx), void *ctx);

/* The mode of a command whose arguments have all been scanned. */
enum rh_cc_mode rh_cc_mode_of(const struct rh_cc_scan *s);

/* Whether rheaper-c++ adds -static-libstdc++: a C++ driver (cxx) linking an
 * executable that is not already -static or -static-libstdc++, unless the user
 * opted out with -shared-libstdc++ or env_value (RHEAPER_STATIC_LIBSTDCXX) "0",
 * or chose -stdlib=libc++.
 * libstdc++.so has no wrapped calls: its allocations (std::string, iostreams)
 * are only seen when it is linked in. Returns 1 or 0. */
int rh_cc_static_cxx_default(const struct rh_cc_scan *s, enum rh_cc_mode mode, int cxx,
                             const char *env_value);

/* Whether the command-line unit starting at argument `a` (`next` is the
 * argument after it, or NULL) names a library for the linker: -lNAME, -l NAME,
 * -l:FILE, a path ending in .a, .so or .so.N, a -Wl, or -Xlinker argument
 * holding one, or a response file (@FILE, read as rh_cc_scan_arg does, depth
 * its nesting) containing one. *used is set to the number of arguments the
 * unit takes (2 for an option with a separate value: -l NAME, -Xlinker X,
 * -o lib.so, whose value is the output, not a library). *ld_value (0 before
 * the first argument) carries a linker option still waiting for its value
 * from one unit to the next (-Wl,-soname -Wl,libx.so.1, -Xlinker -soname
 * -Xlinker libx.so.1): such a value is no library, and nothing may be put in
 * front of it. */
int rh_cc_names_library(const char *a, const char *next, int *used, int *ld_value, int depth);

/* ---- rh_cc_alloc.c: the user's allocator families ---- */

/* Reads one allocator file (--rheaper-allocator=FILE, $RHEAPER_ALLOCATORS).
 * Returns 0, or -1 after printing one line per error (FILE:LINE: ...). */
int rh_cc_alloc_read(const char *tool, const char *path);
/* Number of functions declared so far. */
size_t rh_cc_alloc_count(void);
/* For an executable link: checks each declared function against the object
 * files and archives objs[0, nobjs) with nm (sources != 0: the command also
 * compiles source files, whose symbols nm cannot see), warns about each one
 * that cannot be wrapped with the reason, and compiles the shims of the others
 * into a temporary directory (its path in tmpdir, "" when none was made).
 * On return *obj_out is the object to link (NULL when there is none) and
 * (*wrap_flags)[0, *nwrap) the -Wl,--wrap flags. Returns 0, or -1 (message
 * printed). */
int rh_cc_alloc_prepare(const char *tool, const char *compiler, const char *const *objs,
                        size_t nobjs, int sources, char *tmpdir, size_t tmpcap,
                        const char **obj_out, char ***wrap_flags, size_t *nwrap);
/* Removes the temporary directory of rh_cc_alloc_prepare and its files. */
void rh_cc_alloc_cleanup(const char *tmpdir);

#endif
