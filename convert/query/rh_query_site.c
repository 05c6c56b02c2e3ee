/* rh_query_site.c: the call-site table, one call site in detail, and the
 * heap over time split by call site.
 *
 * The web UI's call-site table lists one row per call site (the call-site
 * rule of the scope, rh_make_sites: function and file:line, as `rheaper top`
 * counts them), summed over the site's stacks from the scope's per-stack
 * figures (TEMP TABLE sstat) with the leak score of `rheaper leaks`. One site
 * in detail reads every row of the site in scope for its size and lifetime
 * histograms and its threads (SQL over `msel`, not a sample), and its line
 * over time from the scope's timeline. The heap over time by call site
 * carries the scope's sparse per-stack timeline (stls: a stack's bytes where
 * they changed) forward column by column.
 * When the scope has the per-stack classes (shist, sthr: the converter's
 * stack_hist and stack_threads, or the filtered pass's) and the rows of the
 * site are those of sel (no filter of bytehound's beyond the CLI's), the
 * histograms and threads are sums over the site's stacks: opening a site
 * reads no row. Without filters the lines over time come from the
 * converter's per-stack series (stack_series.heap, rh_db_series.c): a site's
 * line reads its own stacks' blobs, not the whole timeline; with them, from
 * the scope's packed columns (stlsb), decoded here rather than through SQL.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rh_names.h"
#include "rh_schema.h"
#include "rh_query.h"

#define RH_STR2(x) #x
#define RH_STR(x) RH_STR2(x)

/* The leak score from which a site is marked as a leak. */
#define RH_LEAK_BADGE "0.5"

/* 1 when TEMP sitetab was built for the scope db holds now: both carry the
 * same filter key (TEMP scopekey, kept by rh_qfilter_apply while the scope
 * is the same) and the same duration. A scope without a key never matches. */
static int rh_site_table_current(sqlite3 *db, int64_t duration_ns)
{
    sqlite3_stmt *st = NULL; /* no such tables: not current */
    int cur = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT 1 FROM temp.sitekey s, temp.scopekey k WHERE s.k = k.k"
                           " AND s.d = ?1 AND EXISTS (SELECT 1 FROM temp.sqlite_master"
                           " WHERE name = 'sitetab')",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, duration_ns);
        cur = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return cur;
}

int rh_site_table(sqlite3 *db, int64_t duration_ns)
{
    /* a page asks several views of one scope: the table is built once */
    if (rh_site_table_current(db, duration_ns))
        return 0;
    if (rh_sql_exec(db, "DROP TABLE IF EXISTS temp.sitekey") ||
        rh_leak_sites(db, RH_LEAK_BUCKETS, duration_ns))
        return -1;
    if (rh_sql_exec(
        db, "DROP TABLE IF EXISTS temp.sitetab;"
            "CREATE TEMP TABLE sitetab AS SELECT s.site AS site, min(s.function) AS function,"
            " min(s.location) AS location, count(*) AS stacks, sum(t.count) AS count,"
            " sum(t.bytes) AS bytes, sum(t.leaked_blocks) AS leaked_blocks,"
            " sum(t.leaked_bytes) AS leaked_bytes, sum(t.peak_bytes) AS peak_bytes,"
            " sum(t.temporary) AS temporary, min(t.first_alloc) AS first,"
            " max(t.last_alloc) AS last, round(coalesce(l.score, 0), 4) AS score,"
            " coalesce(l.score >= " RH_LEAK_BADGE " AND l.bytes > 0, 0) AS leak"
            " FROM temp.site s JOIN temp.sstat t ON t.bt = s.bt"
            " LEFT JOIN temp.leak_sites l ON l.site = s.site"
            " WHERE t.count > 0 GROUP BY s.site"))
        return -1;
    /* remembered only when the scope has a key */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "CREATE TEMP TABLE sitekey AS SELECT k, ?1 AS d FROM temp.scopekey",
                           -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return 0; /* no scopekey: nothing to remember */
    }
    sqlite3_bind_int64(st, 1, duration_ns);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : rh_sql_fail(db, "call sites");
    sqlite3_finalize(st);
    return rc;
}

/* Writes the rows of sql (bound to function and location) as a JSON array
 * through rh_print_stmt. Returns 0 or -1. */
static int rh_site_rows(sqlite3 *db, const char *sql, const char *function, const char *location,
                        FILE *o)
{
    sqlite3_stmt *st = rh_sql_prepare(db, sql);
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, function, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, location, -1, SQLITE_STATIC);
    int rc = rh_print_stmt(st, RH_FMT_JSON, o);
    sqlite3_finalize(st);
    return rc;
}

/* The rows of the site in scope, as a FROM clause over msel. */
#define RH_SITE_ROWS                                                                               \
    " FROM msel a JOIN temp.site s ON s.bt = a.bt WHERE s.function = ?1 AND s.location = ?2"

/* 1 when the site's histograms and threads can be summed from the scope's
 * per-stack classes: TEMP shist and sthr exist and msel is the view of sel
 * (rh_qfilter_apply makes it a table when bytehound's own filters narrow
 * the rows). */
static int rh_site_precomputed(sqlite3 *db)
{
    sqlite3_stmt *st = rh_sql_prepare(
        db, "SELECT (SELECT count(*) FROM temp.sqlite_master WHERE name IN ('shist', 'sthr')),"
            " (SELECT type FROM temp.sqlite_master WHERE name = 'msel')");
    if (!st)
        return 0;
    int pre = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 2 &&
              sqlite3_column_text(st, 1) && !strcmp((const char *)sqlite3_column_text(st, 1), "view");
    sqlite3_finalize(st);
    return pre;
}

/* The site's classes in scope, as a FROM clause over shist (or sthr). */
#define RH_SITE_CLASSES(T)                                                                         \
    " FROM temp." T " h JOIN temp.site s ON s.bt = h.bt WHERE s.function = ?1 AND s.location = ?2"

/* ,"sizes":[...]: blocks and bytes per power-of-two size class, every class
 * on the axis (rh_size_classes_json, the whole scope's histogram too). */
static int rh_site_sizes(sqlite3 *db, const char *function, const char *location, FILE *o)
{
    fputs(",\"sizes\":", o);
    return rh_size_classes_json(db, function, location, o);
}

/* ---- stack_series blobs (docs/sql.md) ------------------------------------ */

/* The next zigzag-coded value of a heap blob. */
static int rh_series_nexts(const unsigned char **p, const unsigned char *end, int64_t *v)
{
    uint64_t u;
    if (!rh_series_next(p, end, &u))
        return 0;
    *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return 1;
}

/* 1 when the scope's timeline is the converter's (no filter) and
 * stack_series holds its per-stack points. */
static int rh_site_series_stored(sqlite3 *db)
{
    struct rh_scope sc;
    return !rh_scope_get(db, &sc) && !sc.rows && sc.timeline && rh_table_exists(db, "stack_series") &&
           rh_meta_int(db, "series_heap", 0) == 1;
}

/* vals (ncol x (ng + 1)) from the stacks' heap blobs: the stacks of `one`
 * when one >= 0 (the site's line), else every stack with points. A stack's
 * value in a column is its bytes at the column's peak where it changed
 * there, else its bytes at the end of the last column where it changed (what
 * rh_site_series carries). Stacks without a site row count as site 0, as
 * there. Returns 0 or -1. */
static int rh_site_series_blobs(sqlite3 *db, const int64_t *site_group, int64_t nsites, int ng,
                                int64_t ncol, int64_t *vals, int64_t one)
{
    sqlite3_stmt *st = rh_sql_prepare(
        db, one < 0 ? "SELECT x.bt, coalesce(s.site, 0), x.heap FROM main.stack_series x"
                      " LEFT JOIN temp.site s ON s.bt = x.bt WHERE x.heap IS NOT NULL"
                    : "SELECT x.bt, s.site, x.heap FROM temp.site s JOIN main.stack_series x"
                      " ON x.bt = s.bt WHERE s.site = ?1 AND x.heap IS NOT NULL"
                      " UNION ALL SELECT x.bt, 0, x.heap FROM main.stack_series x WHERE ?1 = 0"
                      " AND x.heap IS NOT NULL AND x.bt NOT IN (SELECT bt FROM temp.site)");
    if (!st)
        return -1;
    if (one >= 0)
        sqlite3_bind_int64(st, 1, one);
    int r;
    const size_t w = (size_t)ng + 1;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t site = sqlite3_column_int64(st, 1);
        const unsigned char *p = sqlite3_column_blob(st, 2);
        const unsigned char *end = p + sqlite3_column_bytes(st, 2);
        int g = site >= 0 && site < nsites && site_group[site] >= 0 ? (int)site_group[site] : ng;
        if (sqlite3_column_int64(st, 0) < 0)
            continue;
        int64_t col = 0, carry = 0, c = 0, dc, at_max, at_end;
        while (p && p < end) {
            if (!rh_series_nexts(&p, end, &dc) || !rh_series_nexts(&p, end, &at_max) ||
                !rh_series_nexts(&p, end, &at_end) || dc < 0) {
                fprintf(stderr, "rheaper: timeline by site: a damaged stack_series blob\n");
                sqlite3_finalize(st);
                return -1;
            }
            col += dc; /* from 1, as timeline counts columns */
            if (col - 1 >= ncol)
                break;
            for (; c < col - 1; c++)
                vals[(size_t)c * w + (size_t)g] += carry;
            if (col >= 1) {
                vals[(size_t)c * w + (size_t)g] += at_max;
                c++;
            }
            carry = at_end;
        }
        for (; c < ncol; c++)
            vals[(size_t)c * w + (size_t)g] += carry;
    }
    sqlite3_finalize(st);
    return r == SQLITE_DONE ? 0 : rh_sql_fail(db, "timeline by site");
}

/* The scope's per-stack timeline points in column order, each with its
 * stack's site (0 for a stack without a site row): decoded from stlsb's
 * blobs when the scope keeps them (the filtered pass's, or a stack filter's
 * group timeline), which costs a few instructions a point; else through the
 * view stls joined to site (the converter's timeline_stacks). */
struct rh_pts_src {
    sqlite3_stmt *st;      /* stlsb (col, pts) by col, or the stls join */
    int blobs;             /* 1: st reads stlsb */
    int64_t *siteof;       /* by rh_stack_slot: the stack's site */
    int64_t nsiteof, nlow;
    const unsigned char *p, *end;
    int64_t col;
};

/* Opens s over the scope (nlow, nslots: rh_site_slots). Returns 0 or -1
 * after one line. */
static int rh_pts_src_open(sqlite3 *db, struct rh_pts_src *s, int64_t nlow, int64_t nslots)
{
    memset(s, 0, sizeof *s);
    s->nlow = nlow;
    s->blobs = rh_sql_int(db, "SELECT count(*) FROM temp.sqlite_master WHERE name = 'stlsb'"
                              " AND type = 'table'", 0, 0) > 0;
    if (!s->blobs) {
        s->st = rh_sql_prepare(
            db, "SELECT x.col, x.bt, x.at_max, x.at_end, coalesce(s.site, 0) FROM temp.stls x"
                " LEFT JOIN temp.site s ON s.bt = x.bt ORDER BY x.col");
        return s->st ? 0 : -1;
    }
    s->nsiteof = nslots;
    s->siteof = calloc((size_t)(nslots > 0 ? nslots : 1), sizeof *s->siteof);
    sqlite3_stmt *st = s->siteof ? rh_sql_prepare(db, "SELECT bt, site FROM temp.site") : NULL;
    if (!st) {
        if (!s->siteof)
            fprintf(stderr, "rheaper: timeline by site: out of memory\n");
        return -1;
    }
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t k = rh_stack_slot(sqlite3_column_int64(st, 0), nlow);
        if (k >= 0 && k < nslots)
            s->siteof[k] = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (r != SQLITE_DONE)
        return rh_sql_fail(db, "timeline by site");
    s->st = rh_sql_prepare(db, "SELECT col, pts FROM temp.stlsb ORDER BY col");
    return s->st ? 0 : -1;
}

/* The next point: 1 with *col (from 1), *bt, *at_max, *at_end and *site set;
 * 0 after the last; -1 after one line. */
static int rh_pts_src_next(sqlite3 *db, struct rh_pts_src *s, int64_t *col, int64_t *bt,
                           int64_t *at_max, int64_t *at_end, int64_t *site)
{
    if (!s->blobs) {
        int r = sqlite3_step(s->st);
        if (r == SQLITE_DONE)
            return 0;
        if (r != SQLITE_ROW)
            return rh_sql_fail(db, "timeline by site");
        *col = sqlite3_column_int64(s->st, 0);
        *bt = sqlite3_column_int64(s->st, 1);
        *at_max = sqlite3_column_int64(s->st, 2);
        *at_end = sqlite3_column_int64(s->st, 3);
        *site = sqlite3_column_int64(s->st, 4);
        return 1;
    }
    while (s->p == s->end) {
        int r = sqlite3_step(s->st);
        if (r == SQLITE_DONE)
            return 0;
        if (r != SQLITE_ROW)
            return rh_sql_fail(db, "timeline by site");
        s->col = sqlite3_column_int64(s->st, 0);
        s->p = sqlite3_column_blob(s->st, 1);
        s->end = s->p ? s->p + sqlite3_column_bytes(s->st, 1) : NULL;
    }
    uint64_t id;
    if (!rh_series_next(&s->p, s->end, &id) || !rh_series_nexts(&s->p, s->end, at_max) ||
        !rh_series_nexts(&s->p, s->end, at_end) || id > INT64_MAX) {
        fprintf(stderr, "rheaper: timeline by site: a damaged point in column %" PRId64 "\n",
                s->col);
        return -1;
    }
    *col = s->col;
    *bt = (int64_t)id;
    int64_t k = rh_stack_slot(*bt, s->nlow);
    *site = k >= 0 && k < s->nsiteof ? s->siteof[k] : 0;
    return 1;
}

static void rh_pts_src_close(struct rh_pts_src *s)
{
    sqlite3_finalize(s->st);
    free(s->siteof);
    memset(s, 0, sizeof *s);
}

/* The heap over time of the scope by call site. Needs the scope's timeline
 * (stl, stls); sets *ok 0 without one. groups: for each site id of
 * TEMP TABLE site, its series (0..ng-1) or -1; one: the only site of a
 * series (its stacks are all that is read from stack_series), or -1. Writes
 * "xs", "total" and the series' values as JSON members. Returns 0 or -1. */
static int rh_site_series(sqlite3 *db, const int64_t *site_group, int64_t nsites, int ng, FILE *o,
                          const char *const *labels_json, int64_t one)
{
    sqlite3_stmt *cols = rh_sql_prepare(db, "SELECT t, max_bytes FROM temp.stl ORDER BY col");
    struct rh_pts_src src = {0};
    int64_t *xs = NULL, *tot = NULL, *vals = NULL, *endsum = NULL, *delta = NULL;
    int64_t *last = NULL; /* per stack id: its bytes at the end of the last column it changed */
    int64_t nlast = 0, ncol = 0, cap = 0;
    int rc = -1, r;
    int64_t nlow = 0, nslots = 0; /* last[] is indexed by rh_stack_slot */
    if (!cols || rh_site_slots(db, "timeline by site", &nlow, &nslots))
        goto out;
    while ((r = sqlite3_step(cols)) == SQLITE_ROW) {
        if (ncol == cap) {
            cap = cap ? cap * 2 : 512;
            int64_t *a = realloc(xs, (size_t)cap * sizeof *a), *b;
            if (a)
                xs = a;
            b = a ? realloc(tot, (size_t)cap * sizeof *b) : NULL;
            if (!b)
                goto oom;
            tot = b;
        }
        xs[ncol] = sqlite3_column_int64(cols, 0);
        tot[ncol++] = sqlite3_column_int64(cols, 1);
    }
    if (r != SQLITE_DONE)
        goto sqlfail;
    vals = calloc((size_t)(ncol ? ncol : 1) * (size_t)(ng + 1), sizeof *vals);
    endsum = calloc((size_t)ng + 1, sizeof *endsum);
    delta = calloc((size_t)ng + 1, sizeof *delta);
    if (!vals || !endsum || !delta)
        goto oom;
    if (rh_site_series_stored(db)) {
        if (rh_site_series_blobs(db, site_group, nsites, ng, ncol, vals, one))
            goto out;
        goto print;
    }
    if (rh_pts_src_open(db, &src, nlow, nslots))
        goto out;
    int64_t c = -1;
    int more = 1;
    while (more) {
        int64_t pcol = 0, bt = 0, at_max = 0, at_end = 0, site = 0;
        r = rh_pts_src_next(db, &src, &pcol, &bt, &at_max, &at_end, &site);
        if (r < 0)
            goto out;
        more = r == 1;
        /* stls counts columns from 1, as timeline does; c and vals from 0 */
        int64_t col = more ? pcol - 1 : ncol;
        /* finish the columns up to col: the changed ones take their deltas */
        while (c < col && c < ncol) {
            if (c >= 0)
                for (int g = 0; g <= ng; g++) {
                    vals[(size_t)c * (size_t)(ng + 1) + (size_t)g] = endsum[g] + delta[g];
                    delta[g] = 0;
                }
            c++;
            if (c < col && c < ncol)
                for (int g = 0; g <= ng; g++)
                    vals[(size_t)c * (size_t)(ng + 1) + (size_t)g] = endsum[g];
        }
        if (!more || col >= ncol)
            break;
        if (bt < 0)
            continue;
        bt = rh_stack_slot(bt, nlow); /* from here on, bt is its slot */
        if (bt >= nlast) {
            if (bt > 2 * nslots + 1024) {
                fprintf(stderr, "rheaper: timeline by site: a stack outside the profile's\n");
                goto out;
            }
            int64_t nn = bt * 2 + 1024;
            int64_t *a = realloc(last, (size_t)nn * sizeof *a);
            if (!a)
                goto oom;
            memset(a + nlast, 0, (size_t)(nn - nlast) * sizeof *a);
            last = a;
            nlast = nn;
        }
        int g = site >= 0 && site < nsites && site_group[site] >= 0 ? (int)site_group[site] : ng;
        /* delta[g] holds this column's at_max minus the levels carried, and
         * endsum the sum of at_end after the previous columns; at_max is
         * added to the column and at_end carried from now on */
        delta[g] += at_max - last[bt];
        endsum[g] += at_end - last[bt];
        delta[g] -= at_end - last[bt];
        last[bt] = at_end;
    }
print:
    fputs("\"xs\":[", o);
    for (int64_t k = 0; k < ncol; k++)
        fprintf(o, "%s%" PRId64, k ? "," : "", xs[k]);
    fputs("],\"total\":[", o);
    for (int64_t k = 0; k < ncol; k++)
        fprintf(o, "%s%" PRId64, k ? "," : "", tot[k]);
    fputs("],\"series\":[", o);
    for (int g = 0; g <= ng; g++) {
        if (!labels_json[g])
            continue;
        fprintf(o, "%s{%s,\"values\":[", g ? "," : "", labels_json[g]);
        for (int64_t k = 0; k < ncol; k++)
            fprintf(o, "%s%" PRId64, k ? "," : "", vals[(size_t)k * (size_t)(ng + 1) + (size_t)g]);
        fputs("]}", o);
    }
    fputc(']', o);
    rc = 0;
    goto out;
oom:
    fprintf(stderr, "rheaper: timeline by site: out of memory\n");
    goto out;
sqlfail:
    rh_sql_fail(db, "timeline by site");
out:
    sqlite3_finalize(cols);
    rh_pts_src_close(&src);
    free(xs);
    free(tot);
    free(vals);
    free(endsum);
    free(delta);
    free(last);
    return rc;
}

/* 1 when the scope has its timeline (stl, stls). */
static int rh_site_has_timeline(sqlite3 *db)
{
    struct rh_scope sc;
    return !rh_scope_get(db, &sc) && sc.timeline;
}

int rh_timeline_sites_json(sqlite3 *db, int k, FILE *o)
{
    if (k < 1)
        k = 1;
    if (k > 32)
        k = 32;
    int64_t nsites = 1;
    sqlite3_stmt *st = rh_sql_prepare(db, "SELECT coalesce(max(site), 0) + 1 FROM temp.site");
    if (!st)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        nsites = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    int64_t *grp = malloc((size_t)nsites * sizeof *grp);
    char *labels[33] = {0};
    int ng = 0, rc = -1;
    if (!grp)
        return -1;
    memset(grp, 0xff, (size_t)nsites * sizeof *grp);
    fputc('{', o);
    if (!rh_site_has_timeline(db)) {
        fputs("\"xs\":[],\"total\":[],\"series\":[],\"timeline\":false}\n", o);
        free(grp);
        return 0;
    }
    /* the top k sites by the bytes they held at the scope's peak, then by bytes */
    st = rh_sql_prepare(db, "SELECT site, function, location, peak_bytes FROM temp.sitetab"
                            " ORDER BY peak_bytes DESC, bytes DESC, site LIMIT ?1");
    if (!st)
        goto out;
    sqlite3_bind_int(st, 1, k);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t site = sqlite3_column_int64(st, 0);
        char *lab = NULL;
        size_t ln = 0;
        FILE *m = open_memstream(&lab, &ln);
        if (!m)
            break;
        fputs("\"function\":", m);
        rh_json_string(m, (const char *)sqlite3_column_text(st, 1));
        rh_json_short_name(m, (const char *)sqlite3_column_text(st, 1));
        fputs(",\"location\":", m);
        rh_json_string(m, (const char *)sqlite3_column_text(st, 2));
        fprintf(m, ",\"peak_bytes\":%" PRId64, (int64_t)sqlite3_column_int64(st, 3));
        fclose(m);
        if (site >= 0 && site < nsites)
            grp[site] = ng;
        labels[ng++] = lab;
    }
    sqlite3_finalize(st);
    labels[ng] = strdup("\"function\":\"other call sites\",\"location\":\"\"");
    rc = rh_site_series(db, grp, nsites, ng, o, (const char *const *)labels, -1);
    if (!rc)
        fputs(",\"timeline\":true}\n", o);
out:
    for (int g = 0; g <= ng; g++)
        free(labels[g]);
    free(grp);
    return rc;
}

int rh_site_detail_json(sqlite3 *db, const char *function, const char *location, int nstacks,
                        FILE *o)
{
    sqlite3_stmt *st = rh_sql_prepare(db, "SELECT site FROM temp.site WHERE function = ?1 AND"
                                          " location = ?2 LIMIT 1");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, function, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, location, -1, SQLITE_STATIC);
    int64_t site = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    if (site < 0)
        return 1;
    fputs("{\"function\":", o);
    rh_json_string(o, function);
    rh_json_short_name(o, function);
    fputs(",\"location\":", o);
    rh_json_string(o, location);
    fputs(",\"figures\":", o);
    if (rh_site_rows(db,
                     "SELECT stacks, count, bytes, leaked_blocks, leaked_bytes, peak_bytes,"
                     " temporary, first, last, score, leak FROM temp.sitetab"
                     " WHERE function = ?1 AND location = ?2",
                     function, location, o))
        return -1;
    /* its stacks, largest first, each with its frames past the call site's */
    fputs(",\"stacks\":[", o);
    st = rh_sql_prepare(db, "SELECT t.bt, t.count, t.bytes, t.leaked_blocks, t.leaked_bytes,"
                            " t.peak_bytes FROM temp.sstat t JOIN temp.site s ON s.bt = t.bt"
                            " WHERE s.function = ?1 AND s.location = ?2 AND t.count > 0"
                            " ORDER BY t.bytes DESC, t.bt LIMIT ?3");
    sqlite3_stmt *fr = rh_sql_prepare(
        db, "SELECT coalesce(sym, '?\?'), CASE WHEN file IS NOT NULL THEN"
            " replace(file, rtrim(file, replace(file, '/', '')), '') || ':' || coalesce(line, '?')"
            " WHEN module IS NOT NULL THEN replace(module, rtrim(module, replace(module, '/', '')),"
            " '') || '+0x' || printf('%x', address) ELSE printf('0x%x', coalesce(address, 0)) END,"
            " frame_no >= coalesce((SELECT frame FROM temp.cs WHERE bt = ?1), 0), inlined"
            " FROM backtraces WHERE id = ?1 ORDER BY frame_no");
    if (!st || !fr) {
        sqlite3_finalize(st);
        sqlite3_finalize(fr);
        return -1;
    }
    sqlite3_bind_text(st, 1, function, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, location, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, nstacks > 0 ? nstacks : 50);
    int n = 0, r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t bt = sqlite3_column_int64(st, 0);
        fprintf(o,
                "%s{\"backtrace_id\":%" PRId64 ",\"count\":%" PRId64 ",\"bytes\":%" PRId64
                ",\"leaked_blocks\":%" PRId64 ",\"leaked_bytes\":%" PRId64
                ",\"peak_bytes\":%" PRId64 ",\"frames\":[",
                n++ ? "," : "", bt, (int64_t)sqlite3_column_int64(st, 1),
                (int64_t)sqlite3_column_int64(st, 2), (int64_t)sqlite3_column_int64(st, 3),
                (int64_t)sqlite3_column_int64(st, 4), (int64_t)sqlite3_column_int64(st, 5));
        sqlite3_bind_int64(fr, 1, bt);
        int m = 0;
        while (sqlite3_step(fr) == SQLITE_ROW) {
            fputs(m++ ? ",{\"function\":" : "{\"function\":", o);
            rh_json_string(o, (const char *)sqlite3_column_text(fr, 0));
            rh_json_short_name(o, (const char *)sqlite3_column_text(fr, 0));
            fputs(",\"location\":", o);
            rh_json_string(o, (const char *)sqlite3_column_text(fr, 1));
            fprintf(o, ",\"skipped\":%s,\"inlined\":%s}",
                    sqlite3_column_int(fr, 2) ? "false" : "true",
                    sqlite3_column_int(fr, 3) ? "true" : "false");
        }
        sqlite3_reset(fr);
        fputs("]}", o);
    }
    sqlite3_finalize(st);
    sqlite3_finalize(fr);
    if (r != SQLITE_DONE)
        return rh_sql_fail(db, "site stacks");
    fputc(']', o);
    int pre = rh_site_precomputed(db);
    if (rh_site_sizes(db, function, location, o))
        return -1;
    /* lifetimes by decade, the never-freed blocks apart */
    fputs(",\"lifetimes\":", o);
#define RH_LIFE_LABELS                                                                             \
    "SELECT CASE k WHEN 0 THEN '<1 us' WHEN 1 THEN '<10 us' WHEN 2 THEN"                           \
    " '<100 us' WHEN 3 THEN '<1 ms' WHEN 4 THEN '<10 ms' WHEN 5 THEN '<100 ms'"                    \
    " WHEN 6 THEN '<1 s' WHEN 7 THEN '<10 s' WHEN 8 THEN '>=10 s' ELSE 'leaked'"                   \
    " END AS label, count, bytes FROM "
    if (rh_site_rows(db,
                     pre ? RH_LIFE_LABELS "(SELECT h.class - " RH_STR(RH_HIST_LIFE) " AS k,"
                               " sum(h.blocks) AS count, sum(h.bytes) AS bytes" RH_SITE_CLASSES(
                                   "shist") " AND h.class >= " RH_STR(RH_HIST_LIFE)
                               " GROUP BY h.class) ORDER BY k"
                         : RH_LIFE_LABELS
                     "(SELECT CASE WHEN a.lifetime IS NULL THEN 9"
                     " WHEN a.lifetime < 1000 THEN 0 WHEN a.lifetime < 10000 THEN 1"
                     " WHEN a.lifetime < 100000 THEN 2 WHEN a.lifetime < 1000000 THEN 3"
                     " WHEN a.lifetime < 10000000 THEN 4 WHEN a.lifetime < 100000000 THEN 5"
                     " WHEN a.lifetime < 1000000000 THEN 6 WHEN a.lifetime < 10000000000 THEN 7"
                     " ELSE 8 END AS k, " RH_W_N("1") " AS count, " RH_W_B("1") " AS bytes"
                     RH_SITE_ROWS " GROUP BY k) ORDER BY k",
                     function, location, o))
        return -1;
#undef RH_LIFE_LABELS
    fputs(",\"threads\":", o);
    if (rh_site_rows(db,
                     pre ? "SELECT nullif(h.thread, 0) AS id, t.tid, t.name, sum(h.blocks) AS count,"
                           " sum(h.bytes) AS bytes, sum(h.leaked_bytes) AS leaked_bytes"
                           " FROM temp.sthr h JOIN temp.site s ON s.bt = h.bt"
                           " LEFT JOIN threads t ON t.id = h.thread"
                           " WHERE s.function = ?1 AND s.location = ?2"
                           " GROUP BY h.thread ORDER BY bytes DESC, id"
                         : "SELECT a.alloc_thread AS id, t.tid, t.name, " RH_W_N("1") " AS count,"
                           " " RH_W_B("1") " AS bytes, " RH_W_B("a.dealloc_after IS NULL")
                           " AS leaked_bytes FROM msel a JOIN temp.site s ON s.bt = a.bt"
                           " LEFT JOIN threads t ON t.id = a.alloc_thread"
                           " WHERE s.function = ?1 AND s.location = ?2"
                           " GROUP BY a.alloc_thread ORDER BY bytes DESC, id",
                     function, location, o))
        return -1;
    fputs(",\"timeline\":{", o);
    if (rh_site_has_timeline(db)) {
        int64_t *grp = malloc((size_t)(site + 1) * sizeof *grp);
        if (!grp)
            return -1;
        memset(grp, 0xff, (size_t)(site + 1) * sizeof *grp);
        grp[site] = 0;
        const char *labels[2] = {"\"function\":\"site\"", NULL};
        int rc = rh_site_series(db, grp, site + 1, 1, o, labels, site);
        free(grp);
        if (rc)
            return -1;
    }
    fputs("}}\n", o);
    return 0;
}
