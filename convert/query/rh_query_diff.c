/* rh_query_diff.c: the comparison of two profiles, per call site.
 *
 * How a slow leak is confirmed: record before, record after, and see which
 * call site grew. Each profile is filtered the same way (the shared filters,
 * or bytehound's URL filters for the server's /diff) and its allocations are
 * summed per call site, a call site being what `rheaper top` shows: the
 * function and file:line of the first frame past allocator wrappers (the
 * call-site rule of rh_filter_apply). Sites are matched by function and
 * location, since stack ids differ between two databases. Each site is then
 * "appeared" (only in B), "vanished" (only in A), "grew" or "shrank" (by
 * leaked bytes, held at the peak, bytes or count as asked, then by bytes
 * and count), or "same" when the change is within the noise threshold (a
 * percentage of the larger side). rh_diff_compute() is
 * the one computation; the command and the server's /diff print it.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rh_query.h"
#include "rh_schema.h"

/* Per-site figures of one database, sorted by (function, location). */
struct rh_dsite {
    char *function, *location;
    int64_t count, bytes, leaked_blocks, leaked_bytes, peak_bytes;
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
            /* estimates on a sampled profile, as sstat's (RH_W_N, rh_schema.h) */
            ? "SELECT s.function, s.location, " RH_W_N("1") ", " RH_W_B("1") ","
              " " RH_W_N("m.dealloc_after IS NULL") ", " RH_W_B("m.dealloc_after IS NULL") ","
              " (SELECT sum(t.peak_bytes) FROM sstat t JOIN site x ON x.bt = t.bt"
              " WHERE x.function = s.function AND x.location = s.location)"
              " FROM msel m JOIN site s ON s.bt = m.bt GROUP BY s.function, s.location"
            : "SELECT s.function, s.location, sum(t.count), sum(t.bytes), sum(t.leaked_blocks),"
              " sum(t.leaked_bytes), sum(t.peak_bytes) FROM sstat t JOIN site s ON s.bt = t.bt"
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
        d->peak_bytes = sqlite3_column_int64(st, 6);
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

/* The figure of row r in A (side 0) or B (side 1) that key k names. */
static int64_t rh_dfig(const struct rh_diff_row *r, int side, enum rh_diff_by k)
{
    switch (k) {
    case RH_DIFF_BYTES:
        return side ? r->b_bytes : r->a_bytes;
    case RH_DIFF_COUNT:
        return side ? r->b_count : r->a_count;
    case RH_DIFF_PEAK:
        return side ? r->b_peak_bytes : r->a_peak_bytes;
    default:
        return side ? r->b_leaked_bytes : r->a_leaked_bytes;
    }
}

/* The keys a comparison orders by: the one asked for, then bytes, count. */
static void rh_dkeys(enum rh_diff_by by, enum rh_diff_by k[3])
{
    k[0] = by;
    k[1] = by == RH_DIFF_BYTES ? RH_DIFF_COUNT : RH_DIFF_BYTES;
    k[2] = by == RH_DIFF_COUNT || by == RH_DIFF_BYTES ? RH_DIFF_LEAKED : RH_DIFF_COUNT;
}

/* Largest change of the chosen figure first, then of bytes, then of count. */
static int rh_drow_cmp(const void *x, const void *y, void *ctx)
{
    const struct rh_diff_row *a = x, *b = y;
    enum rh_diff_by k[3];
    rh_dkeys(*(const enum rh_diff_by *)ctx, k);
    for (int i = 0; i < 3; i++) {
        int64_t ka = rh_abs64(rh_dfig(a, 1, k[i]) - rh_dfig(a, 0, k[i])),
                kb = rh_abs64(rh_dfig(b, 1, k[i]) - rh_dfig(b, 0, k[i]));
        if (ka != kb)
            return ka > kb ? -1 : 1;
    }
    int c = strcmp(a->function, b->function);
    return c ? c : strcmp(a->location, b->location);
}

/* appeared, vanished; else grew or shrank by the first key that changed
 * beyond noise_pct percent of the larger side, else same. */
static const char *rh_diff_status(const struct rh_diff_row *r, enum rh_diff_by by,
                                  double noise_pct)
{
    if (!r->a_count && r->b_count)
        return "appeared";
    if (r->a_count && !r->b_count)
        return "vanished";
    enum rh_diff_by k[3];
    rh_dkeys(by, k);
    for (int i = 0; i < 3; i++) {
        int64_t va = rh_dfig(r, 0, k[i]), vb = rh_dfig(r, 1, k[i]);
        if (va == vb)
            continue;
        int64_t big = va > vb ? va : vb;
        if ((double)rh_abs64(vb - va) * 100.0 <= noise_pct * (double)big)
            return "same";
        return vb > va ? "grew" : "shrank";
    }
    return "same";
}

void rh_diff_free(struct rh_diff_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].function);
        free(rows[i].location);
    }
    free(rows);
}

int rh_diff_compute(sqlite3 *a, sqlite3 *b, const struct rh_qfilter *q, enum rh_diff_by by,
                    double noise_pct, struct rh_diff_row **rows, size_t *n)
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
            r->a_peak_bytes = x->peak_bytes;
        }
        if (y) {
            r->b_count = y->count;
            r->b_bytes = y->bytes;
            r->b_leaked_blocks = y->leaked_blocks;
            r->b_leaked_bytes = y->leaked_bytes;
            r->b_peak_bytes = y->peak_bytes;
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
        r->status = rh_diff_status(r, by, noise_pct);
    }
    free(sa);
    free(sb);
    qsort_r(out, k, sizeof *out, rh_drow_cmp, &by);
    *rows = out;
    *n = k;
    return 0;
}
