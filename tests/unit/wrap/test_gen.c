/* test_gen.c: the generated wrap code agrees with wrap/wrap_table.txt.
 *
 * Usage: test_gen TABLE GEN_DIR. Parses the table independently of
 * gen_wrap.py and checks that every "fn" line appears, in order, in
 * rh_wrap_syms[], the wrap and export flag arrays, the RH_WRAP_TABLE X-macro
 * (with its kind number) and rheaper_wrap.flags; that every "kind" has a unique
 * number and its name in rh_wrap_kind_names[]; and that every table function
 * has both prototypes (taking their addresses compiles only if declared).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../harness.h"
#include "rh_link_flags.h"
#include "rh_wrap_gen.h"

#define MAX_FN 256

struct tfn {
    char sym[128];
    char kind[64]; /* "-" for none */
};

static struct tfn fns[MAX_FN];
static int nfn;
static char knames[256][64];
static int kseen[256];

/* Trims spaces at both ends, in place. */
static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

static int parse_table(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        char *l = trim(line);
        if (strncmp(l, "kind ", 5) == 0) {
            int num;
            char name[64];
            CHECK_EQ(sscanf(l + 5, "%d %63s", &num, name), 2);
            CHECK(num > 0 && num < 256);
            if (num <= 0 || num >= 256)
                continue;
            CHECK_EQ(kseen[num], 0); /* kind numbers are unique */
            kseen[num]++;
            snprintf(knames[num], sizeof knames[num], "%s", name);
        } else if (strncmp(l, "afn ", 4) == 0 && nfn < MAX_FN) {
            /* an allocator family's function: kind NUM named SYM, and fn SYM */
            int num;
            char sym[128];
            CHECK_EQ(sscanf(l + 4, "%d %127s", &num, sym), 2);
            CHECK(num > 0 && num < 256);
            if (num <= 0 || num >= 256)
                continue;
            CHECK_EQ(kseen[num], 0);
            kseen[num]++;
            snprintf(knames[num], sizeof knames[num], "%.63s", sym);
            snprintf(fns[nfn].sym, sizeof fns[nfn].sym, "%s", sym);
            snprintf(fns[nfn].kind, sizeof fns[nfn].kind, "%.63s", sym);
            nfn++;
        } else if (strncmp(l, "fn ", 3) == 0 && nfn < MAX_FN) {
            char *bar1 = strchr(l, '|');
            char *bar2 = bar1 ? strchr(bar1 + 1, '|') : NULL;
            CHECK(bar1 && bar2);
            if (!bar1 || !bar2)
                continue;
            *bar1 = *bar2 = '\0';
            snprintf(fns[nfn].sym, sizeof fns[nfn].sym, "%s", trim(l + 3));
            snprintf(fns[nfn].kind, sizeof fns[nfn].kind, "%s", trim(bar1 + 1));
            nfn++;
        }
    }
    fclose(f);
    return 0;
}

static int kind_number(const char *name)
{
    for (int k = 1; k < 256; k++)
        if (kseen[k] && strcmp(knames[k], name) == 0)
            return k;
    return -1;
}

struct xrow {
    const char *sym;
    int kind;
    unsigned flags;
};

#define ROW(sym, kind, flags) {#sym, kind, flags},
static const struct xrow xrows[] = {RH_WRAP_TABLE(ROW)};
#undef ROW

/* Each function has both prototypes: taking their addresses needs them. */
#define ADDR(sym, kind, flags) (void)sizeof(&__real_##sym), (void)sizeof(&__wrap_##sym),
static void prototypes_exist(void)
{
    RH_WRAP_TABLE(ADDR)(void) 0;
}
#undef ADDR

static void check_flags_file(const char *path)
{
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f)
        return;
    static char lines[2 * MAX_FN][256];
    int n = 0;
    while (n < 2 * MAX_FN && fgets(lines[n], sizeof lines[n], f))
        trim(lines[n]), n++;
    fclose(f);
    CHECK_EQ(n, 2 * nfn);
    for (int i = 0; i < nfn; i++) {
        char want[256];
        int found_wrap = 0, found_export = 0;
        snprintf(want, sizeof want, "-Wl,--wrap=%.127s", fns[i].sym);
        for (int j = 0; j < n; j++)
            found_wrap += strcmp(lines[j], want) == 0;
        snprintf(want, sizeof want, "-Wl,--export-dynamic-symbol=__wrap_%.127s", fns[i].sym);
        for (int j = 0; j < n; j++)
            found_export += strcmp(lines[j], want) == 0;
        CHECK_EQ(found_wrap, 1);
        CHECK_EQ(found_export, 1);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_gen TABLE GEN_DIR\n");
        return 2;
    }
    if (parse_table(argv[1]) != 0)
        return 1;
    prototypes_exist();
    CHECK(nfn > 40);
    CHECK_EQ(nfn, RH_WRAP_FN_COUNT);
    CHECK_EQ((int)(sizeof xrows / sizeof xrows[0]), nfn);

    int kmax = 0, kcount = 0;
    for (int k = 1; k < 256; k++) {
        if (!kseen[k])
            continue;
        kmax = k;
        kcount++;
        const char *name = RH_KIND_NAME(k);
        CHECK(name != NULL && strcmp(name, knames[k]) == 0);
    }
    CHECK_EQ(kmax, RH_KIND_MAX);
    CHECK_EQ(kcount, RH_KIND_COUNT);
    for (int k = 0; k <= RH_KIND_MAX; k++)
        CHECK_EQ(rh_wrap_kind_names[k] != NULL, kseen[k] != 0);
    CHECK(RH_KIND_NAME(RH_KIND_MAX + 1) == NULL);
    /* Fixed by the rip format: spot-check the numbers and the enum naming. */
    CHECK_EQ(RH_KIND_MALLOC, 1);
    CHECK_EQ(RH_KIND_NEW_ARRAY, 11);
    CHECK_EQ(RH_KIND_STRDUP, 20);
    const char *na = RH_KIND_NAME(RH_KIND_NEW_ARRAY);
    CHECK(na && strcmp(na, "new[]") == 0);

    for (int i = 0; i < nfn; i++) {
        char want[512];
        CHECK(rh_wrap_syms[i].name && strcmp(rh_wrap_syms[i].name, fns[i].sym) == 0);
        CHECK(strcmp(xrows[i].sym, fns[i].sym) == 0);
        int k = strcmp(fns[i].kind, "-") == 0 ? 0 : kind_number(fns[i].kind);
        CHECK(k >= 0);
        CHECK_EQ(xrows[i].kind, k);
        int cxx = strncmp(fns[i].sym, "_Z", 2) == 0;
        CHECK_EQ((xrows[i].flags & RH_WRAP_F_CXX) != 0, cxx);
        CHECK_EQ(rh_wrap_syms[i].flags, xrows[i].flags);
        snprintf(want, sizeof want, "-Wl,--wrap=%.127s", fns[i].sym);
        CHECK(rh_link_wrap_flags[i] && strcmp(rh_link_wrap_flags[i], want) == 0);
        snprintf(want, sizeof want, "-Wl,--export-dynamic-symbol=__wrap_%.127s", fns[i].sym);
        CHECK(rh_link_export_flags[i] && strcmp(rh_link_export_flags[i], want) == 0);
    }
    CHECK(rh_wrap_syms[nfn].name == NULL);
    CHECK(rh_link_wrap_flags[nfn] == NULL);
    CHECK(rh_link_export_flags[nfn] == NULL);
    int ncxx = 0;
    for (int i = 0; i < nfn; i++)
        ncxx += strncmp(fns[i].sym, "_Z", 2) == 0;
    CHECK_EQ(ncxx, 20);
    int nu = 0;
    while (rh_link_cxx_undef_flags[nu])
        nu++;
    CHECK_EQ(nu, ncxx);
    /* dlopen, dlclose and initgroups (which drags NSS into a static link) are
     * the dynamic-only ones. */
    for (int i = 0; i < nfn; i++) {
        int dl = strcmp(fns[i].sym, "dlopen") == 0 || strcmp(fns[i].sym, "dlclose") == 0 ||
                 strcmp(fns[i].sym, "initgroups") == 0;
        CHECK_EQ((xrows[i].flags & RH_WRAP_F_DYNAMIC) != 0, dl);
    }

    char path[8192];
    snprintf(path, sizeof path, "%.4000s/rheaper_wrap.flags", argv[2]);
    check_flags_file(path);
    return rh_test_summary();
}
