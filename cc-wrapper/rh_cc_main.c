/* rh_cc_main.c: rheaper-cc and rheaper-c++, drop-in CC and CXX for profiling.
 *
 * One binary; the name it is run as chooses the language: a basename with "++"
 * (rheaper-c++) or ending in "cxx" is C++, anything else C. The underlying
 * compiler is $RHEAPER_CC (default "cc") or $RHEAPER_CXX (default "c++"): one
 * program name or path, no arguments (put a wrapper script there if needed).
 *
 * What it adds, around the user's arguments (which pass unchanged, in order):
 *   compiling (always, unless preprocessing or an info query):
 *     before: -fno-omit-frame-pointer, -mno-omit-leaf-frame-pointer (x86,
 *             AArch64), -marm (32-bit ARM), -fasynchronous-unwind-tables (MIPS,
 *             whose walk steps by CFI), -fno-optimize-sibling-calls, and
 *             -g1 (gcc) / -gline-tables-only (clang, when the compiler's name
 *             contains "clang", or RHEAPER_CC_FAMILY=clang) unless the user
 *             gave a -g level;
 *   linking an executable, after: -Wl,--wrap=SYM for every table function (the
 *     dynamic-only ones not with -static), -Wl,--export-dynamic-symbol=__wrap_SYM
 *     (not with -static), -static-libstdc++ for rheaper-c++ (below),
 *     -Wl,-u,OPERATOR for C++ links with a static libstdc++, -Wl,--eh-frame-hdr
 *     with -static (the runtime finds CFI through PT_GNU_EH_FRAME, which gcc
 *     and clang leave out of static links), then -x none and the runtime
 *     librheaper_rt.a as a whole archive (not -static: with librheaper_ip.a,
 *     which defines and exports the malloc family, and with a shared
 *     libstdc++ librheaper_ipcxx.a, the operators, plus their
 *     -Wl,--export-dynamic-symbol flags), -lpthread -ldl;
 *   linking a shared library (-shared), after: the wrap flags and
 *     librheaper_weak.a (weak fallbacks, one archive member per function);
 *   linking either, in front of every library the user names (-lNAME, -l NAME,
 *     a path to libX.a or libX.so[.N], one inside -Wl, or -Xlinker, a response
 *     file holding one), and once more after the user's arguments, in front
 *     of the libraries the driver adds: -Xlinker librheaper_weak.a.
 *
 * The link line is the plain build's: --wrap renames the program's undefined
 * references (malloc becomes __wrap_malloc), so when the linker reaches the
 * user's -ljemalloc nothing asks for its malloc any more. With --as-needed
 * (Debian's default) libjemalloc.so is then dropped from DT_NEEDED, the
 * program runs on glibc's allocator, and a weak __real_sdallocx is left NULL;
 * a libjemalloc.a gives no member at all. The weak fallbacks put the names
 * back where the user's references are: the linker takes the member of
 * __wrap_malloc from the archive only if the objects before that point call
 * malloc (a weak reference pulls nothing), and the member asks for malloc by
 * its real name (its strong __real_malloc), so the library that follows is
 * needed, or its archive member taken, exactly when the plain build would do
 * it. In an executable the runtime's strong __wrap_ functions later replace
 * the weak ones; a static allocator's malloc replaces the interposed one
 * (wrap/interpose_malloc.c defines it weak).
 *
 * A static libstdc++ by default: rheaper-c++ links executables with
 * -static-libstdc++ because a shared libstdc++.so calls malloc and operator new
 * internally, where --wrap cannot reach, so std::string, std::vector growth
 * inside the library and iostreams would be missing from the profile. Linked
 * statically, those calls are wrapped, and the runtime's CFI step recovers the
 * user frames above libstdc++'s frame-pointer-less code. Opt out with
 * RHEAPER_STATIC_LIBSTDCXX=0 or -shared-libstdc++ (rheaper's own option: it is
 * removed from the command, as the compilers do not know it; give it on the
 * command line, not in a response file). A C-driver link naming -lstdc++
 * keeps it shared: the compilers apply -static-libstdc++ only to the library
 * their C++ driver adds.
 *
 * The libraries are looked up in $RHEAPER_LIBDIR when set, else next to the
 * executable: <dir of /proc/self/exe>/../lib (the build tree), then the install
 * layout's libdir relative to bindir (RH_CC_REL_LIBDIR, baked in by CMake), and
 * its rheaper/ subdirectory. RHEAPER_CC_VERBOSE=1 prints the final command on
 * stderr. Exit status: the compiler's; 127 when it cannot be run, 1 when the
 * rheaper libraries cannot be found.
 */
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rh_cc.h"
#include "rh_link_flags.h"
#include "rh_wrap_gen.h"

#ifndef RH_CC_REL_LIBDIR
#define RH_CC_REL_LIBDIR "../lib"
#endif

/* Nested rheaper-cc invocations beyond this are a loop (RHEAPER_CC=rheaper-cc). */
#define RH_CC_MAX_DEPTH 8

static const char *rh_tool = "rheaper-cc";

static const char *rh_basename(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* An argument vector that grows; exits with a message if memory runs out. */
struct rh_argv {
    const char **v;
    size_t n, cap;
};

static void rh_push(struct rh_argv *a, const char *s)
{
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 256;
        const char **v = realloc(a->v, cap * sizeof *v);
        if (!v) {
            fprintf(stderr, "%s: out of memory\n", rh_tool);
            exit(1);
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = s;
    a->v[a->n] = NULL;
}

/* Directory of the running executable (symlinks resolved), or "" when unknown. */
static void rh_self_dir(char *out, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    if (n <= 0) {
        out[0] = '\0';
        return;
    }
    out[n] = '\0';
    char *slash = strrchr(out, '/');
    if (slash)
        *slash = '\0';
    else
        out[0] = '\0';
}

/* a + b + c in a new malloc'd string; exits with a message if memory runs out. */
static char *rh_cat3(const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *s = malloc(la + lb + lc + 1);
    if (!s) {
        fprintf(stderr, "%s: out of memory\n", rh_tool);
        exit(1);
    }
    memcpy(s, a, la);
    memcpy(s + la, b, lb);
    memcpy(s + la + lb, c, lc + 1);
    return s;
}

/* Finds `lib` (a file name) in the candidate directories. Returns a malloc'd
 * path, or NULL after printing one line naming every directory tried. */
static char *rh_find_lib(const char *lib)
{
    char self[PATH_MAX];
    const char *env = getenv("RHEAPER_LIBDIR");
    char *dirs[3];
    int nd = 0;
    if (env && *env) {
        dirs[nd++] = rh_cat3(env, "", "");
    } else {
        rh_self_dir(self, sizeof self);
        if (self[0]) {
            dirs[nd++] = rh_cat3(self, "/", "../lib");
            if (strcmp(RH_CC_REL_LIBDIR, "../lib") != 0)
                dirs[nd++] = rh_cat3(self, "/", RH_CC_REL_LIBDIR);
            dirs[nd++] = rh_cat3(self, "/" RH_CC_REL_LIBDIR, "/rheaper");
        }
    }
    for (int i = 0; i < nd; i++) {
        char *path = rh_cat3(dirs[i], "/", lib);
        if (access(path, R_OK) == 0)
            return path;
        free(path);
    }
    fprintf(stderr, "%s: cannot find %s (looked in:", rh_tool, lib);
    for (int i = 0; i < nd; i++)
        fprintf(stderr, "%s %s", i ? "," : "", dirs[i]);
    fprintf(stderr, "%s); set RHEAPER_LIBDIR to its directory\n",
            nd ? "" : " nothing, /proc/self/exe is unreadable");
    return NULL;
}

/* The compile flags: frame pointers everywhere, no sibling calls, and line
 * tables unless the user chose a debug level. */
static void rh_add_compile_flags(struct rh_argv *a, const struct rh_cc_scan *s, int clang)
{
    rh_push(a, "-fno-omit-frame-pointer");
    /* the target's architecture decides (a cross build sets RH_CC_LEAF_FP):
     * gcc knows the flag for x86 and AArch64 only */
#if defined(RH_CC_LEAF_FP)
    if (RH_CC_LEAF_FP)
        rh_push(a, "-mno-omit-leaf-frame-pointer");
#elif defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
    rh_push(a, "-mno-omit-leaf-frame-pointer");
#endif
    /* 32-bit ARM: ARM code, whose frames keep a frame record at the frame
     * pointer (Thumb-2's, the usual default, keep none: runtime/rh_arch.h) */
#if defined(RH_CC_ARM_MODE)
    if (RH_CC_ARM_MODE)
        rh_push(a, "-marm");
#elif defined(__arm__)
    rh_push(a, "-marm");
#endif
    /* MIPS: gcc emits no .eh_frame for C there, and the stack walk steps
     * through MIPS64 frames by CFI (runtime/rh_arch.h) */
#if defined(RH_CC_UNWIND_TABLES)
    if (RH_CC_UNWIND_TABLES)
        rh_push(a, "-fasynchronous-unwind-tables");
#elif defined(__mips__)
    rh_push(a, "-fasynchronous-unwind-tables");
#endif
    rh_push(a, "-fno-optimize-sibling-calls");
    if (!s->has_g)
        rh_push(a, clang ? "-gline-tables-only" : "-g1");
}

/* The wrap flags of every table function; dynamic-only ones not when static. */
static void rh_add_wrap_flags(struct rh_argv *a, int is_static)
{
    for (size_t i = 0; rh_wrap_syms[i].name; i++) {
        if (is_static && (rh_wrap_syms[i].flags & RH_WRAP_F_DYNAMIC))
            continue;
        rh_push(a, rh_link_wrap_flags[i]);
    }
}

/* What librheaper_ip.a defines and a dynamic executable exports. */
static const char *const rh_ip_syms[] = {
    "malloc",        "free",     "calloc", "realloc", "reallocarray",       "posix_memalign",
    "aligned_alloc", "memalign", "valloc", "pvalloc", "malloc_usable_size", "dlopen",
    /* mmap recording: wrap/interpose_mmap.c */
    "mmap", "mmap64", "munmap", "mremap", "mallopt",
    NULL,
};

/* Executable link: wrap, export, C++ operators, the runtime. Returns 0, or -1
 * when the runtime archive cannot be found (message printed). */
static int rh_add_exe_link(struct rh_argv *a, const struct rh_cc_scan *s, int cxx,
                           int add_static_cxx)
{
    char *rt = rh_find_lib("librheaper_rt.a");
    if (!rt)
        return -1;
    rh_add_wrap_flags(a, s->is_static);
    for (size_t i = 0; !s->is_static && rh_wrap_syms[i].name; i++)
        rh_push(a, rh_link_export_flags[i]);
    if (add_static_cxx)
        rh_push(a, "-static-libstdc++");
    if (s->is_static)
        rh_push(a, "-Wl,--eh-frame-hdr");
    /* A static libstdc++ provides the operators only if something pulls them in:
     * the shims' weak references do not. (With a shared libstdc++ the weak
     * references bind by themselves, and bfd rejects -u there.) */
    if ((s->is_static && (cxx || s->cxx_lib)) || s->static_cxx || add_static_cxx)
        for (size_t i = 0; rh_link_cxx_undef_flags[i]; i++)
            rh_push(a, rh_link_cxx_undef_flags[i]);
    /* Dynamic links: the executable defines the malloc family (and, with a
     * shared libstdc++, the operators) so that shared libraries' and libc's own
     * allocations are seen too (wrap/interpose_*.c). */
    char *ip = NULL, *ipcxx = NULL;
    int shared_cxx = (cxx || s->cxx_lib) && !s->static_cxx && !add_static_cxx;
    if (!s->is_static) {
        ip = rh_find_lib("librheaper_ip.a");
        if (!ip || (shared_cxx && !(ipcxx = rh_find_lib("librheaper_ipcxx.a"))))
            return -1;
        for (size_t i = 0; rh_ip_syms[i]; i++)
            rh_push(a, rh_cat3("-Wl,--export-dynamic-symbol=", rh_ip_syms[i], ""));
        for (size_t i = 0; shared_cxx && rh_wrap_syms[i].name; i++)
            if (rh_wrap_syms[i].flags & RH_WRAP_F_CXX)
                rh_push(a, rh_cat3("-Wl,--export-dynamic-symbol=", rh_wrap_syms[i].name, ""));
    }
    rh_push(a, "-x"); /* a user's "-x c++" must not apply to the archive */
    rh_push(a, "none");
    rh_push(a, "-Wl,--whole-archive");
    rh_push(a, rt); /* stays allocated until exec */
    if (ip)
        rh_push(a, ip);
    if (ipcxx)
        rh_push(a, ipcxx);
    rh_push(a, "-Wl,--no-whole-archive");
    /* The interposed operators find the real ones in the shared C++ library
     * (dlsym RTLD_NEXT), but the executable now defines every operator itself,
     * so a linker run with --as-needed (Debian's default) would drop a library
     * the program calls for nothing else, and the first new would abort. */
    if (ipcxx) {
        rh_push(a, "-Wl,--push-state,--no-as-needed");
        rh_push(a, s->libcxx ? "-lc++" : "-lstdc++");
        rh_push(a, "-Wl,--pop-state");
    }
    rh_push(a, "-lpthread");
    rh_push(a, "-ldl");
    return 0;
}

/* Shared-library link: wrap flags and the weak fallbacks, no runtime. */
static int rh_add_so_link(struct rh_argv *a)
{
    char *weak = rh_find_lib("librheaper_weak.a");
    if (!weak)
        return -1;
    rh_add_wrap_flags(a, 0);
    rh_push(a, "-x");
    rh_push(a, "none");
    rh_push(a, weak);
    return 0;
}

/* Prints the command on stderr, each argument quoted for a POSIX shell when it
 * needs to be. */
static void rh_print_command(const char *const *v)
{
    fprintf(stderr, "%s:", rh_tool);
    for (size_t i = 0; v[i]; i++) {
        const char *s = v[i];
        int plain = *s != '\0';
        for (const char *p = s; *p; p++)
            if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                        "-_=+,./:@%^",
                        *p))
                plain = 0;
        if (plain) {
            fprintf(stderr, " %s", s);
            continue;
        }
        fputs(" '", stderr);
        for (const char *p = s; *p; p++) {
            if (*p == '\'')
                fputs("'\\''", stderr);
            else
                fputc(*p, stderr);
        }
        fputc('\'', stderr);
    }
    fputc('\n', stderr);
}

/* Guards against RHEAPER_CC naming rheaper-cc itself: counts nesting levels in
 * RHEAPER_CC_DEPTH. Returns 0, or -1 (message printed) beyond the limit. */
static int rh_check_depth(void)
{
    const char *d = getenv("RHEAPER_CC_DEPTH");
    int depth = d ? atoi(d) : 0;
    if (depth >= RH_CC_MAX_DEPTH) {
        fprintf(stderr,
                "%s: RHEAPER_CC/RHEAPER_CXX runs rheaper-cc again (loop); "
                "point it at the real compiler\n",
                rh_tool);
        return -1;
    }
    char buf[16];
    snprintf(buf, sizeof buf, "%d", depth + 1);
    setenv("RHEAPER_CC_DEPTH", buf, 1);
    return 0;
}

static int rh_has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

static int rh_is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

#define RH_ALLOC_OPT "--rheaper-allocator="

/* Reads the allocator files of the command line and $RHEAPER_ALLOCATORS.
 * Returns 0, or -1 (messages printed). */
static int rh_read_allocator_files(int argc, char **argv)
{
    int rc = 0;
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], RH_ALLOC_OPT, strlen(RH_ALLOC_OPT)) == 0 &&
            rh_cc_alloc_read(rh_tool, argv[i] + strlen(RH_ALLOC_OPT)) != 0)
            rc = -1;
    const char *env = getenv("RHEAPER_ALLOCATORS");
    if (env && *env) {
        char *list = strdup(env), *save = NULL;
        for (char *f = list ? strtok_r(list, ":", &save) : NULL; f; f = strtok_r(NULL, ":", &save))
            if (rh_cc_alloc_read(rh_tool, f) != 0)
                rc = -1;
        free(list);
    }
    return rc;
}

/* Adds the user's allocator shims to an executable link: the object files and
 * archives of the command are checked with nm. tmpdir receives the temporary
 * directory to remove after the link. Returns 0 or -1. */
static int rh_add_user_allocators(struct rh_argv *a, const char *compiler, int argc, char **argv,
                                  char *tmpdir, size_t tmpcap)
{
    const char **objs = calloc((size_t)argc + 1, sizeof *objs);
    size_t nobjs = 0;
    int sources = 0;
    if (!objs)
        return -1;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "-o") == 0 || strcmp(s, "-x") == 0 || strcmp(s, "-MF") == 0) {
            i++;
            continue;
        }
        if (s[0] == '-' || s[0] == '@' || !rh_is_file(s))
            continue;
        if (rh_has_suffix(s, ".o") || rh_has_suffix(s, ".a") || rh_has_suffix(s, ".lo"))
            objs[nobjs++] = s;
        else if (!rh_has_suffix(s, ".so") && !strstr(s, ".so."))
            sources = 1; /* a source file compiled by this very command */
    }
    const char *obj = NULL;
    char **flags = NULL;
    size_t nflags = 0;
    int rc = rh_cc_alloc_prepare(rh_tool, compiler, objs, nobjs, sources, tmpdir, tmpcap, &obj,
                                 &flags, &nflags);
    free(objs);
    if (rc != 0)
        return -1;
    for (size_t i = 0; i < nflags; i++)
        rh_push(a, flags[i]);
    if (obj) {
        rh_push(a, "-x");
        rh_push(a, "none");
        rh_push(a, obj);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *self = rh_basename(argc > 0 ? argv[0] : "rheaper-cc");
    size_t sl = strlen(self);
    int cxx = strstr(self, "++") != NULL || (sl >= 3 && strcmp(self + sl - 3, "cxx") == 0);
    rh_tool = cxx ? "rheaper-c++" : "rheaper-cc";

    const char *compiler = getenv(cxx ? "RHEAPER_CXX" : "RHEAPER_CC");
    /* a cross build (RHEAPER_TARGET_ONLY) bakes in the target's compilers */
#if !defined(RH_CC_DEFAULT_CC)
#define RH_CC_DEFAULT_CC "cc"
#define RH_CC_DEFAULT_CXX "c++"
#endif
    if (!compiler || !*compiler)
        compiler = cxx ? RH_CC_DEFAULT_CXX : RH_CC_DEFAULT_CC;
    const char *family = getenv("RHEAPER_CC_FAMILY");
    int clang = family && *family ? strcmp(family, "clang") == 0
                                  : strstr(rh_basename(compiler), "clang") != NULL;

    struct rh_cc_scan scan;
    memset(&scan, 0, sizeof scan);
    for (int i = 1; i < argc; i++)
        rh_cc_scan_arg(&scan, argv[i], 0);
    enum rh_cc_mode mode = rh_cc_mode_of(&scan);

    if (rh_check_depth() != 0)
        return 1;

    struct rh_argv a = {0};
    rh_push(&a, compiler);
    if (mode != RH_CC_PASS)
        rh_add_compile_flags(&a, &scan, clang);
    /* Links: the weak fallbacks go in front of every library the user names,
     * so that a library keeps the place it has in the plain build (below). */
    char *weak = NULL, *rt = NULL;
    if (mode == RH_CC_LINK_EXE && !(rt = rh_find_lib("librheaper_rt.a")))
        return 1; /* the runtime is the one a user misses first: named first */
    free(rt);
    if ((mode == RH_CC_LINK_EXE || mode == RH_CC_LINK_SO) &&
        !(weak = rh_find_lib("librheaper_weak.a")))
        return 1;
    for (int i = 1, lib_left = 0, ld_value = 0; i < argc; i++) {
        if (lib_left == 0 && weak) {
            int used = 1;
            if (rh_cc_names_library(argv[i], i + 1 < argc ? argv[i + 1] : NULL, &used, &ld_value,
                                    0)) {
                rh_push(&a, "-Xlinker");
                rh_push(&a, weak);
            }
            lib_left = used;
        }
        if (lib_left > 0)
            lib_left--;
        if (strcmp(argv[i], "-shared-libstdc++") != 0 && /* ours: the compilers reject them */
            strncmp(argv[i], RH_ALLOC_OPT, strlen(RH_ALLOC_OPT)) != 0)
            rh_push(&a, argv[i]);
    }
    if (weak) {
        /* and in front of the libraries the driver adds (libc, libstdc++) */
        rh_push(&a, "-Xlinker");
        rh_push(&a, weak);
    }
    char tmpdir[PATH_MAX] = "";
    if (mode == RH_CC_LINK_EXE || mode == RH_CC_LINK_SO) {
        if (rh_read_allocator_files(argc, argv) != 0)
            return 1;
        if (rh_cc_alloc_count() && mode == RH_CC_LINK_SO)
            fprintf(stderr, "%s: note: allocator files apply to executables; %s\n", rh_tool,
                    "the shared library's calls are wrapped when the executable is linked");
        else if (rh_cc_alloc_count() &&
                 rh_add_user_allocators(&a, compiler, argc, argv, tmpdir, sizeof tmpdir) != 0) {
            rh_cc_alloc_cleanup(tmpdir);
            return 1;
        }
    }
    int static_cxx = rh_cc_static_cxx_default(&scan, mode, cxx, getenv("RHEAPER_STATIC_LIBSTDCXX"));
    if (mode == RH_CC_LINK_EXE && rh_add_exe_link(&a, &scan, cxx, static_cxx) != 0)
        return 1;
    if (mode == RH_CC_LINK_SO && rh_add_so_link(&a) != 0)
        return 1;

    const char *verbose = getenv("RHEAPER_CC_VERBOSE");
    if (verbose && *verbose && strcmp(verbose, "0") != 0)
        rh_print_command(a.v);
    fflush(NULL);
    if (tmpdir[0]) {
        /* the generated shims' directory goes after the link: run it as a child */
        pid_t pid = fork();
        if (pid == 0) {
            execvp(compiler, (char *const *)a.v);
            fprintf(stderr, "%s: cannot run compiler '%s': %s\n", rh_tool, compiler, strerror(errno));
            _exit(errno == ENOENT ? 127 : 126);
        }
        int st = 0;
        int ok = pid > 0 && waitpid(pid, &st, 0) == pid;
        rh_cc_alloc_cleanup(tmpdir);
        if (!ok)
            return 126;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    execvp(compiler, (char *const *)a.v);
    int e = errno;
    fprintf(stderr, "%s: cannot run compiler '%s': %s\n", rh_tool, compiler, strerror(e));
    return e == ENOENT ? 127 : 126;
}
