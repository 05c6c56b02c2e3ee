/* test_symbolize.c: resolves the return addresses a real program recorded.
 *
 * Usage: test_symbolize TARGET SRCDIR pie|nopie
 * Runs TARGET (a build of sym_target.c and friends), reads its module map and
 * addresses from its stdout, registers the modules with the symbolizer and
 * checks every frame against what the sources say: function names (demangled for
 * C++), file basenames, the exact lines marked MARK(name) in SRCDIR, the order of
 * an inline chain and its inlined flags, a shared library whose DWARF sits in a
 * debuglink file, a stripped library named from .dynsym, and the cache.
 */
#define _GNU_SOURCE
#include "../../harness.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rh_symbolize.h"

#define MAXM 64

static struct rh_module mods[MAXM];
static char *paths[MAXM];
static uint8_t bids[MAXM][64];
static uint64_t rngs[MAXM][16];
static int nmods;
static const char *srcdir;

struct addr {
    char name[32];
    uint64_t a;
};
static struct addr addrs[16];
static int naddrs;

/* Returns the 1-based line of SRCDIR/file holding "MARK(name)", or -1. */
static int mark_line(const char *file, const char *name)
{
    char path[4096], want[128], buf[1024];
    snprintf(path, sizeof path, "%s/%s", srcdir, file);
    snprintf(want, sizeof want, "/* MARK(%s) */", name);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    int line = 0, found = -1;
    while (fgets(buf, sizeof buf, f)) {
        line++;
        if (strstr(buf, want)) {
            found = line;
            break;
        }
    }
    fclose(f);
    return found;
}

static const char *base_name(const char *p)
{
    if (!p)
        return "(null)";
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int ends_with(const char *s, const char *suffix)
{
    if (!s)
        return 0;
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static uint64_t find_addr(const char *name)
{
    for (int i = 0; i < naddrs; i++)
        if (strcmp(addrs[i].name, name) == 0)
            return addrs[i].a;
    fprintf(stderr, "address %s not reported\n", name);
    return 0;
}

/* Parses the target's output. Returns 0 or -1. */
static int run_target(const char *target)
{
    FILE *p = popen(target, "r");
    if (!p)
        return -1;
    char line[8192];
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = 0;
        if (line[0] == 'M' && nmods < MAXM) {
            struct rh_module *m = &mods[nmods];
            char *s = line + 2, *e;
            m->base = strtoull(s, &e, 16);
            s = e + 1;
            e = strchr(s, ' ');
            if (!e)
                return -1;
            unsigned bl = 0;
            if (*s != '-')
                for (; s + 1 < e && bl < 64; s += 2) {
                    unsigned v;
                    sscanf(s, "%2x", &v);
                    bids[nmods][bl++] = (uint8_t)v;
                }
            m->build_id = bl ? bids[nmods] : NULL;
            m->build_id_len = bl;
            s = e + 1;
            m->nranges = (unsigned)strtoul(s, &e, 10);
            if (m->nranges > 8)
                return -1;
            for (unsigned r = 0; r < 2 * m->nranges; r++) {
                s = e + 1;
                rngs[nmods][r] = strtoull(s, &e, 16);
            }
            m->ranges = rngs[nmods];
            paths[nmods] = strdup(e + 1);
            m->path = paths[nmods];
            nmods++;
        } else if (line[0] == 'A' && naddrs < 16) {
            char n[32];
            unsigned long long a;
            if (sscanf(line, "A %31s %llx", n, &a) == 2) {
                snprintf(addrs[naddrs].name, sizeof addrs[naddrs].name, "%s", n);
                addrs[naddrs].a = a;
                naddrs++;
            }
        }
    }
    return pclose(p) == 0 ? 0 : -1;
}

/* Checks one frame: function, file basename (NULL for none), marked line. */
static void check_frame(const struct rh_sym_frame *f, const char *sym, const char *file,
                        const char *mark, int inlined)
{
    int want_line = mark ? mark_line(file, mark) : 0;
    CHECK(want_line >= 0);
    CHECK(f->sym && strcmp(f->sym, sym) == 0);
    if (file)
        CHECK(f->file && strcmp(base_name(f->file), file) == 0);
    else
        CHECK(f->file == NULL);
    CHECK_EQ(f->line, want_line);
    CHECK_EQ(f->inlined, inlined);
    if (!f->sym || strcmp(f->sym, sym) || f->line != want_line)
        fprintf(stderr, "  want %s %s:%d, got %s %s:%d\n", sym, file ? file : "-", want_line,
                f->sym ? f->sym : "(null)", base_name(f->file), f->line);
}

static const struct rh_module *module_of(uint64_t a)
{
    for (int i = 0; i < nmods; i++)
        for (unsigned r = 0; r < mods[i].nranges; r++)
            if (a >= mods[i].ranges[2 * r] && a < mods[i].ranges[2 * r + 1])
                return &mods[i];
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s TARGET SRCDIR pie|nopie\n", argv[0]);
        return 2;
    }
    srcdir = argv[2];
    int pie = strcmp(argv[3], "pie") == 0;
    CHECK(run_target(argv[1]) == 0);
    CHECK(nmods >= 4);
    CHECK_EQ(naddrs, 6);
    if (nmods < 1 || naddrs < 6)
        return rh_test_summary();
    /* the main program comes first in dl_iterate_phdr's list */
    CHECK(ends_with(mods[0].path, base_name(argv[1])));
    if (pie)
        CHECK(mods[0].base != 0);
    else
        CHECK_EQ(mods[0].base, 0);

    struct rh_symbolizer *s = rh_sym_new();
    CHECK(s != NULL);
    for (int i = 0; i < nmods; i++)
        CHECK_EQ(rh_sym_add_module(s, &mods[i]), 0);
    /* registering a snapshot twice changes nothing */
    for (int i = 0; i < nmods; i++)
        CHECK_EQ(rh_sym_add_module(s, &mods[i]), 0);

    struct rh_sym_frame f[16];
    int n;

    uint64_t a = find_addr("plain");
    n = rh_sym_resolve(s, a, f, 16);
    CHECK_EQ(n, 1);
    check_frame(&f[0], "caller_plain", "sym_target.c", "plain", 0);
    CHECK(f[0].module && strcmp(f[0].module, mods[0].path) == 0);
    CHECK_EQ(f[0].rel_addr, a - mods[0].base);

    /* the inline chain: innermost first, each caller at its call line */
    a = find_addr("inl");
    n = rh_sym_resolve(s, a, f, 16);
    CHECK_EQ(n, 3);
    if (n == 3) {
        check_frame(&f[0], "inl_inner", "sym_target.c", "inl_inner", 1);
        check_frame(&f[1], "inl_outer", "sym_target.c", "inl_outer", 1);
        check_frame(&f[2], "caller_inl", "sym_target.c", "caller_inl", 0);
        for (int i = 0; i < 3; i++)
            CHECK_EQ(f[i].rel_addr, a - mods[0].base);
    }
    /* max = 1 keeps the innermost frame; the cache keeps all three */
    struct rh_sym_frame one;
    CHECK_EQ(rh_sym_resolve(s, a, &one, 1), 1);
    CHECK(one.sym && strcmp(one.sym, "inl_inner") == 0);
    CHECK_EQ(rh_sym_resolve(s, a, f, 16), 3);
    CHECK_EQ(rh_sym_resolve(s, a, f, 0), 0);

    a = find_addr("cxx");
    n = rh_sym_resolve(s, a, f, 16);
    CHECK_EQ(n, 1);
    check_frame(&f[0], "ns::Klass::method(int)", "sym_target_cxx.cpp", "method", 0);

    /* a shared library, its DWARF found through .gnu_debuglink */
    a = find_addr("lib");
    const struct rh_module *lm = module_of(a);
    CHECK(lm && ends_with(lm->path, "libsymlib.so"));
    n = rh_sym_resolve(s, a, f, 16);
    CHECK_EQ(n, 1);
    check_frame(&f[0], "lib_entry", "sym_lib.c", "lib_entry", 0);
    if (lm) {
        CHECK(f[0].module && strcmp(f[0].module, lm->path) == 0);
        CHECK_EQ(f[0].rel_addr, a - lm->base);
        CHECK(lm->base != 0);
    }

    /* a stripped library: names from .dynsym, demangled, no file or line */
    a = find_addr("nodebug");
    n = rh_sym_resolve(s, a, f, 16);
    CHECK_EQ(n, 1);
    check_frame(&f[0], "nodebug_func", NULL, NULL, 0);
    lm = module_of(a);
    CHECK(lm && ends_with(lm->path, "libsymnodebug.so"));
    a = find_addr("nodebug_cxx");
    n = rh_sym_resolve(s, a, f, 16);
    CHECK_EQ(n, 1);
    check_frame(&f[0], "nd::Thing::run(long)", NULL, NULL, 0);

    /* the cache hands back the very same strings */
    a = find_addr("cxx");
    struct rh_sym_frame g;
    rh_sym_resolve(s, a, f, 16);
    for (int i = 0; i < 1000; i++)
        rh_sym_resolve(s, a, &g, 1);
    CHECK(g.sym == f[0].sym && g.file == f[0].file && g.line == f[0].line);

    /* an address in no module */
    n = rh_sym_resolve(s, 0x10, f, 16);
    CHECK_EQ(n, 1);
    CHECK(f[0].module == NULL && f[0].sym == NULL && f[0].file == NULL && f[0].line == 0);
    CHECK_EQ(f[0].rel_addr, 0x10);

    rh_sym_free(s);
    rh_sym_free(NULL);
    for (int i = 0; i < nmods; i++)
        free(paths[i]);
    return rh_test_summary();
}
