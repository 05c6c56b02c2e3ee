/* rh_cli_diff.c: `rheaper diff A B`, the comparison of two profiles.
 *
 * How a slow leak is confirmed: record before, record after, and see which
 * call site grew. Each profile is filtered the same way (the shared filters,
 * or bytehound's URL filters for the server's /diff) and its allocations are
 * summed per call site, a call site being what `rheaper top` shows: the
 * function and file:line of the first frame past allocator wrappers (the
 * call-site rule of rh_filter_apply). Sites are matched by function and
 * location, since stack ids differ between two databases. Each site is then
 * "appeared" (only in B), "vanished" (only in A), "grew" or "shrank" (by
 * leaked bytes, else by bytes, else by count) or "same". rh_diff_compute() is
 * the one computation; the command and the server's /diff print it.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rh_cli.h"
#include "rh_convert.h"

/* Per-site figures of one database, sorted by (function, location). */
struct rh_dsite {
    char *function, *location;
    int64_t count, bytes, leaked_blocks, leaked_bytes;
};

static int rh_dsite_cmp(const void *x, const void *y)
{
    const struct rh_dsite *a = x, *b = y;
    int c = strcmp(a->function, b->function);
    return c ? c : strcmp(a->location, b->location);
}

/* Reads db's call sites under q into *out (sorted). Returns 0 or -1. */
static int rh_diff_sites(sqlite3 *db, const struct rh_qfilter *q, struct rh_dsite **out,
                         size_t *nout)
{
    *out = NULL;
    *nout = 0;
    if (rh_qfilter_apply(db, q) || rh_leak_sites(db, RH_LEAK_BUCKETS, 1))
        return -1;
    /* without bytehound's extra filters the per-stack figures of sstat are
     * those of msel; with them, sum the rows */
    const char *sql =
        rh_qfilter_extra(q)
            /* estimates on a sampled profile, as sstat's (RH_W_N, rh_convert.h) */
            ? "SELECT s.function, s.location, " RH_W_N("1") ", " RH_W_B("1") ","
              " " RH_W_N("m.dealloc_after IS NULL") ", " RH_W_B("m.dealloc_after IS NULL")
              " FROM msel m JOIN site s ON s.bt = m.bt GROUP BY s.function, s.location"
            : "SELECT s.function, s.location, sum(t.count), sum(t.bytes), sum(t.leaked_blocks),"
              " sum(t.leaked_bytes) FROM sstat t JOIN site s ON s.bt = t.bt"
              " WHERE t.count > 0 GROUP BY s.function, s.location";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return rh_sql_fail(db, "diff");
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*nout == cap) {
            cap = cap ? cap * 2 : 256;
            struct rh_dsite *nv = realloc(*out, cap * sizeof *nv);
            if (!nv) {
                rc = SQLITE_NOMEM;
                break;
            }
            *out = nv;
        }
        struct rh_dsite *d = &(*out)[(*nout)++];
        const char *f = (const char *)sqlite3_column_text(st, 0);
        const char *l = (const char *)sqlite3_column_text(st, 1);
        d->function = strdup(f ? f : "??");
        d->location = strdup(l ? l : "?");
        d->count = sqlite3_column_int64(st, 2);
        d->bytes = sqlite3_column_int64(st, 3);
        d->leaked_blocks = sqlite3_column_int64(st, 4);
        d->leaked_bytes = sqlite3_column_int64(st, 5);
        if (!d->function || !d->location) {
            rc = SQLITE_NOMEM;
            break;
        }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        fprintf(stderr, "rheaper: diff: %s\n",
                rc == SQLITE_NOMEM ? "out of memory" : sqlite3_errmsg(db));
        return -1;
    }
    qsort(*out, *nout, sizeof **out, rh_dsite_cmp);
    return 0;
}

static void rh_dsites_free(struct rh_dsite *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(v[i].function);
        free(v[i].location);
    }
    free(v);
}

static int64_t rh_abs64(int64_t v)
{
    return v < 0 ? -v : v;
}

/* Largest change of leaked bytes first, then of bytes, then of count. */
static int rh_drow_cmp(const void *x, const void *y)
{
    const struct rh_diff_row *a = x, *b = y;
    int64_t ka = rh_abs64(a->b_leaked_bytes - a->a_leaked_bytes),
            kb = rh_abs64(b->b_leaked_bytes - b->a_leaked_bytes);
    if (ka != kb)
        return ka > kb ? -1 : 1;
    ka = rh_abs64(a->b_bytes - a->a_bytes);
    kb = rh_abs64(b->b_bytes - b->a_bytes);
    if (ka != kb)
        return ka > kb ? -1 : 1;
    ka = rh_abs64(a->b_count - a->a_count);
    kb = rh_abs64(b->b_count - b->a_count);
    if (ka != kb)
        return ka > kb ? -1 : 1;
    int c = strcmp(a->function, b->function);
    return c ? c : strcmp(a->location, b->location);
}

static const char *rh_diff_status(const struct rh_diff_row *r)
{
    if (!r->a_count && r->b_count)
        return "appeared";
    if (r->a_count && !r->b_count)
        return "vanished";
    int64_t d = r->b_leaked_bytes != r->a_leaked_bytes ? r->b_leaked_bytes - r->a_leaked_bytes
                : r->b_bytes != r->a_bytes             ? r->b_bytes - r->a_bytes
                                                       : r->b_count - r->a_count;
    return d > 0 ? "grew" : d < 0 ? "shrank" : "same";
}

void rh_diff_free(struct rh_diff_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].function);
        free(rows[i].location);
    }
    free(rows);
}

int rh_diff_compute(sqlite3 *a, sqlite3 *b, const struct rh_qfilter *q, struct rh_diff_row **rows,
                    size_t *n)
{
    struct rh_dsite *sa = NULL, *sb = NULL;
    size_t na = 0, nb = 0;
    *rows = NULL;
    *n = 0;
    if (rh_diff_sites(a, q, &sa, &na) || rh_diff_sites(b, q, &sb, &nb)) {
        rh_dsites_free(sa, na);
        rh_dsites_free(sb, nb);
        return -1;
    }
    struct rh_diff_row *out = calloc(na + nb + 1, sizeof *out);
    if (!out) {
        rh_dsites_free(sa, na);
        rh_dsites_free(sb, nb);
        fprintf(stderr, "rheaper: diff: out of memory\n");
        return -1;
    }
    size_t i = 0, j = 0, k = 0;
    while (i < na || j < nb) {
        int c = i >= na ? 1 : j >= nb ? -1 : rh_dsite_cmp(&sa[i], &sb[j]);
        struct rh_diff_row *r = &out[k++];
        const struct rh_dsite *x = c <= 0 ? &sa[i] : NULL, *y = c >= 0 ? &sb[j] : NULL;
        const struct rh_dsite *name = x ? x : y;
        r->function = name->function;
        r->location = name->location;
        if (x) {
            r->a_count = x->count;
            r->a_bytes = x->bytes;
            r->a_leaked_blocks = x->leaked_blocks;
            r->a_leaked_bytes = x->leaked_bytes;
        }
        if (y) {
            r->b_count = y->count;
            r->b_bytes = y->bytes;
            r->b_leaked_blocks = y->leaked_blocks;
            r->b_leaked_bytes = y->leaked_bytes;
        }
        /* the row keeps one copy of the names; the other is freed */
        if (x && y) {
            free(y->function);
            free(y->location);
        }
        if (x)
            i++;
        if (y)
            j++;
        r->status = rh_diff_status(r);
    }
    free(sa);
    free(sb);
    qsort(out, k, sizeof *out, rh_drow_cmp);
    *rows = out;
    *n = k;
    return 0;
}

/* ---- the command ------------------------------------------------------------- */

static void rh_diff_print(const struct rh_diff_row *r, size_t n, size_t limit, int all,
                          enum rh_fmt fmt, FILE *out)
{
    static const char *const cols[] = {"status",         "function",        "location",
                                       "a_count",        "b_count",         "a_bytes",
                                       "b_bytes",        "a_leaked_blocks", "b_leaked_blocks",
                                       "a_leaked_bytes", "b_leaked_bytes",  "delta_leaked_bytes"};
    if (fmt == RH_FMT_CSV) {
        for (size_t c = 0; c < 12; c++)
            fprintf(out, "%s%s", c ? "," : "", cols[c]);
        fputc('\n', out);
    } else if (fmt == RH_FMT_JSON) {
        fputc('[', out);
    } else {
        fprintf(out, "%-9s %12s %12s %12s %12s %12s  %s\n", "status", "count", "d_count", "bytes",
                "d_bytes", "d_leaked_b", "call site");
    }
    size_t shown = 0;
    for (size_t i = 0; i < n && shown < limit; i++) {
        if (!all && !strcmp(r[i].status, "same"))
            continue;
        const struct rh_diff_row *x = &r[i];
        int64_t v[9] = {
            x->a_count,        x->b_count,         x->a_bytes,
            x->b_bytes,        x->a_leaked_blocks, x->b_leaked_blocks,
            x->a_leaked_bytes, x->b_leaked_bytes,  x->b_leaked_bytes - x->a_leaked_bytes};
        if (fmt == RH_FMT_CSV) {
            fprintf(out, "%s,", x->status);
            rh_csv_field(out, x->function);
            fputc(',', out);
            rh_csv_field(out, x->location);
            for (int c = 0; c < 9; c++)
                fprintf(out, ",%" PRId64, v[c]);
            fputc('\n', out);
        } else if (fmt == RH_FMT_JSON) {
            fprintf(out, "%s{\"status\":\"%s\",\"function\":", shown ? "," : "", x->status);
            rh_json_string(out, x->function);
            fputs(",\"location\":", out);
            rh_json_string(out, x->location);
            for (int c = 0; c < 9; c++)
                fprintf(out, ",\"%s\":%" PRId64, cols[c + 3], v[c]);
            fputc('}', out);
        } else {
            fprintf(out,
                    "%-9s %12" PRId64 " %+12" PRId64 " %12" PRId64 " %+12" PRId64 " %+12" PRId64
                    "  %s %s\n",
                    x->status, x->b_count, x->b_count - x->a_count, x->b_bytes,
                    x->b_bytes - x->a_bytes, v[8], x->function, x->location);
        }
        shown++;
    }
    if (fmt == RH_FMT_JSON)
        fputs("]\n", out);
}

void rh_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", out);
        else if (*p == '\t')
            fputs("\\t", out);
        else if (*p < 0x20 || *p == 0x7f)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

int rh_cmd_diff(int argc, char **argv)
{
    struct rh_qfilter q;
    rh_qfilter_init(&q);
    enum rh_fmt fmt = RH_FMT_TEXT;
    const char *path[2] = {NULL, NULL};
    int npos = 0, all = 0;
    long limit = 50;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (s[0] == '-' && s[1]) {
            int r = rh_filter_arg(&q.f, argc, argv, &i);
            if (r < 0)
                return 2;
            if (r > 0 || rh_fmt_arg(&fmt, argv, &i))
                continue;
            if (!strcmp(s, "--all")) {
                all = 1;
            } else if ((!strcmp(s, "-n") || !strcmp(s, "--limit")) && i + 1 < argc) {
                char *end;
                limit = strtol(argv[++i], &end, 10);
                if (*end || end == argv[i] || limit < 0) {
                    fprintf(stderr, "rheaper: diff: -n '%s': expected a count\n", argv[i]);
                    return 2;
                }
            } else {
                fprintf(stderr, "rheaper: diff: unknown option %s\n", s);
                return 2;
            }
            continue;
        }
        if (npos == 2) {
            fprintf(stderr, "rheaper: diff: expected two profiles (A B), got a third: %s\n", s);
            return 2;
        }
        path[npos++] = s;
    }
    if (npos != 2) {
        fprintf(stderr, "usage: rheaper diff A.db B.db [-n N] [--all] [--json|--csv] [filters]\n");
        return 2;
    }
    sqlite3 *a = rh_cli_open(path[0]);
    if (!a)
        return 1;
    sqlite3 *b = rh_cli_open(path[1]);
    if (!b) {
        sqlite3_close(a);
        return 1;
    }
    struct rh_diff_row *rows = NULL;
    size_t n = 0;
    int rc = rh_diff_compute(a, b, &q, &rows, &n);
    if (!rc) {
        if (fmt == RH_FMT_TEXT)
            printf("call sites of %s (A) against %s (B); delta = B - A\n", path[0], path[1]);
        rh_diff_print(rows, n, (size_t)limit, all, fmt, stdout);
    }
    rh_diff_free(rows, n);
    sqlite3_close(a);
    sqlite3_close(b);
    return rc ? 1 : (fflush(stdout) ? 1 : 0);
}
