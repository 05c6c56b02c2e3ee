/* bench_symbolize.c: the symbolizer on a real library, this process's libc.
 *
 * Usage: bench_symbolize [N] [--check | --dump FILE]
 * Takes N distinct addresses spread evenly over libc's executable segment
 * (default 20000) and resolves them with a fresh symbolizer, 5 runs, printing
 * the median time; then 5 * N lookups (every address 5 times) to show the cache.
 * With libc6-dbg installed the DWARF comes from the separate debug file found by
 * build id under /usr/lib/debug/.build-id. With --check (the ctest entry, small
 * N, no timing asserted) it checks that every frame keeps libc as its module,
 * that qsort's body resolves to a qsort function, and, when the debug file is
 * installed, that most addresses got a source file from it. --dump writes every
 * frame of every address to FILE, so that a build with RH_SYM_FORCE_SCOPES
 * (libdw's dwarf_getscopes walk instead of the symbolizer's own function index)
 * can be compared with it.
 */
#define _GNU_SOURCE
#include "../../harness.h"
#include "sym_modules.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rh_symbolize.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

struct stats {
    int with_file, with_sym, inlined_frames, max_depth;
};

/* Resolves every address in a fresh symbolizer `passes` times; returns seconds. */
static double run(const struct rh_module *m, const uint64_t *addrs, int n, int passes,
                  struct stats *st, int check)
{
    memset(st, 0, sizeof *st);
    double t0 = now();
    struct rh_symbolizer *s = rh_sym_new();
    rh_sym_add_module(s, m);
    for (int p = 0; p < passes; p++) {
        for (int i = 0; i < n; i++) {
            struct rh_sym_frame f[64];
            int k = rh_sym_resolve(s, addrs[i], f, 64);
            if (p == 0) {
                st->with_file += f[0].file != NULL;
                st->with_sym += f[k - 1].sym != NULL;
                st->inlined_frames += k - 1;
                if (k > st->max_depth)
                    st->max_depth = k;
            }
            if (check && p == 0) {
                CHECK(k >= 1 && f[0].module && strcmp(f[0].module, m->path) == 0);
                CHECK_EQ(f[0].rel_addr, addrs[i] - m->base);
                CHECK_EQ(f[k - 1].inlined, 0);
            }
        }
    }
    rh_sym_free(s);
    return now() - t0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 20000;
    int check = argc > 2 && strcmp(argv[2], "--check") == 0;
    const char *dump = argc > 3 && strcmp(argv[2], "--dump") == 0 ? argv[3] : NULL;
    if (n < 1)
        n = 1;
    static struct symt_list l;
    symt_collect(&l);
    const struct symt_mod *libc = NULL;
    for (int i = 0; i < l.n; i++)
        if (strstr(l.mods[i].path, "/libc.so"))
            libc = &l.mods[i];
    CHECK(libc != NULL && libc->nranges >= 1);
    if (!libc || !libc->nranges)
        return rh_test_summary();
    struct rh_module m = {libc->base, libc->path,
                          libc->build_id_len ? libc->build_id : NULL, libc->build_id_len,
                          libc->ranges, libc->nranges};
    uint64_t lo = libc->ranges[0], hi = libc->ranges[1];
    uint64_t step = (hi - lo) / (uint64_t)n;
    if (step == 0)
        step = 1;
    uint64_t *addrs = malloc((size_t)n * sizeof *addrs);
    for (int i = 0; i < n; i++)
        addrs[i] = lo + 1 + (uint64_t)i * step;

    char dbg[256] = "";
    if (libc->build_id_len > 1) {
        int k = snprintf(dbg, sizeof dbg, "/usr/lib/debug/.build-id/%02x/", libc->build_id[0]);
        for (unsigned i = 1; i < libc->build_id_len; i++)
            k += snprintf(dbg + k, sizeof dbg - (size_t)k, "%02x", libc->build_id[i]);
        snprintf(dbg + k, sizeof dbg - (size_t)k, ".debug");
    }
    int have_dbg = dbg[0] && access(dbg, R_OK) == 0;

    struct stats st;
    double t[5];
    for (int r = 0; r < 5; r++)
        t[r] = run(&m, addrs, n, 1, &st, check && r == 0);
    qsort(t, 5, sizeof t[0], cmp_double);
    double t100 = run(&m, addrs, n, 5, &st, 0);
    printf("libc %s (debug file by build id: %s)\n", libc->path, have_dbg ? "yes" : "no");
    printf("%d distinct addresses: median %.3f s (min %.3f, max %.3f), %.1f us per address\n", n,
           t[2], t[0], t[4], t[2] * 1e6 / n);
    printf("%d lookups (%d distinct): %.3f s\n", 5 * n, n, t100);
    printf("with file: %d, with function: %d, inlined frames: %d, deepest chain: %d\n",
           st.with_file, st.with_sym, st.inlined_frames, st.max_depth);

    if (dump) {
        FILE *out = fopen(dump, "w");
        CHECK(out != NULL);
        struct rh_symbolizer *s = rh_sym_new();
        rh_sym_add_module(s, &m);
        for (int i = 0; out && i < n; i++) {
            struct rh_sym_frame f[64];
            int k = rh_sym_resolve(s, addrs[i], f, 64);
            fprintf(out, "%llx", (unsigned long long)(addrs[i] - m.base));
            for (int j = 0; j < k; j++)
                fprintf(out, " | %s %s:%d %d", f[j].sym ? f[j].sym : "?",
                        f[j].file ? f[j].file : "?", f[j].line, f[j].inlined);
            fputc('\n', out);
        }
        if (out)
            fclose(out);
        rh_sym_free(s);
    }
    if (check) {
        struct rh_symbolizer *s = rh_sym_new();
        rh_sym_add_module(s, &m);
        struct rh_sym_frame f[64];
        /* libc's own qsort, not a sanitizer's interceptor of the same name */
        void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
        void *q = h ? dlsym(h, "qsort") : NULL;
        CHECK(q != NULL);
        int k = rh_sym_resolve(s, (uint64_t)(uintptr_t)q + 1, f, 64);
        CHECK(k >= 1 && f[k - 1].sym && strstr(f[k - 1].sym, "qsort"));
        if (h)
            dlclose(h);
        rh_sym_free(s);
        CHECK(st.with_sym > n / 2);
        if (have_dbg)
            CHECK(st.with_file > n / 2);
        else
            printf("no %s: the by-build-id part is not checked\n", dbg[0] ? dbg : "build id");
    }
    free(addrs);
    return rh_test_summary();
}
