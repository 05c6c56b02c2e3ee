/* rh_query_sites.c: call sites and the leak score.
 *
 * A call site is the call-site frame of a stack (TEMP TABLE cs, built by the
 * scope): its function and file:line, or module+offset without debug
 * information. Stacks with the same function and line but different callers
 * are one site unless the caller asks for each stack; the file is named by
 * its last path component, so the same function and line in two files of
 * one name are one site. The leak score ranks the never-freed blocks of the
 * scope per site (TEMP TABLE leak_sites). Every reader gets the sites and
 * the scores as C rows from here (rh_sites_get, rh_leaks_get), and the
 * per-stack heap figures of an export (rh_stack_heap_stmt).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rh_schema.h"
#include "rh_query.h"

/* SQL: the basename of a path column. */
#define RH_BASE(c) "replace(" c ", rtrim(" c ", replace(" c ", '/', '')), '')"

/* Creates TEMP TABLE site: for every stack in scope the function and
 * location of its call-site frame (TEMP TABLE cs), and `site`, the group it
 * is counted in (one per function and location, or one per stack when
 * per_stack). */
int rh_make_sites(sqlite3 *db, int per_stack)
{
    char sql[2048];
    snprintf(
        sql, sizeof sql,
        "DROP TABLE IF EXISTS temp.site;"
        "CREATE TEMP TABLE site AS SELECT bt, function, location, %s AS site FROM"
        " (SELECT s.bt AS bt, coalesce(b.sym, '?\?') AS function,"
        " CASE WHEN b.file IS NOT NULL THEN " RH_BASE(
            "b.file") " || ':' ||"
                      " coalesce(b.line, '?') WHEN b.module IS NOT NULL THEN " RH_BASE(
                          "b.module") " || '+0x' || printf('%%x', b.address) ELSE printf('0x%%x', "
                                      "coalesce(b.address, 0))"
                                      " END AS location"
                                      " FROM temp.cs s"
                                      " LEFT JOIN backtraces b ON b.id = s.bt AND b.frame_no = s.frame);"
                                      "CREATE INDEX temp.site_bt ON site(bt);",
        per_stack ? "bt" : "dense_rank() OVER (ORDER BY function, location)");
    return rh_sql_exec(db, sql);
}


/* Scores every site's never-freed blocks and stores them in TEMP TABLE
 * leak_sites. The run [0, duration] is cut into nb equal buckets.
 *   coverage = buckets in which the site allocated a leaked block / nb
 *   fit      = R^2 of a least-squares line through the site's cumulative leaked
 *              bytes at the end of each bucket (0 when that curve is flat)
 *   score    = coverage * fit, from 0 to 1
 * A site that leaked all along grows like a line and covers every bucket
 * (score near 1); one block allocated once covers one bucket and gives a step
 * (score near 0), however large it is. Returns 0 or -1. */
/* The number of buckets of the scope's leak curve (TEMP TABLE slc), 0 when
 * there is none. */
static int rh_leak_curve_buckets(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int nb = 0;
    if (sqlite3_prepare_v2(db, "SELECT leak_buckets FROM temp.scope", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        nb = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return nb;
}

int rh_leak_scores(sqlite3 *db, int nb, int64_t duration)
{
    if (rh_sql_exec(db, "DROP TABLE IF EXISTS temp.leak_sites;"
                    "CREATE TEMP TABLE leak_sites(site INTEGER PRIMARY KEY, score REAL,"
                    " coverage INTEGER, fit REAL, blocks INTEGER, bytes INTEGER, first INTEGER,"
                    " last INTEGER)"))
        return -1;
    if (duration <= 0)
        duration = 1;
    /* The leaked blocks per site and bucket: from the converter's leak curve
     * when the scope is unfiltered and the buckets are its own, else from the
     * rows of the scope. */
    int curve = nb == rh_leak_curve_buckets(db);
    sqlite3_stmt *q = rh_sql_prepare(
        db, curve ? "SELECT s.site, l.bucket AS k, sum(l.blocks), sum(l.bytes), min(l.first),"
                    " max(l.last), ?1, ?2 FROM temp.slc l JOIN site s ON s.bt = l.bt"
                    " GROUP BY s.site, k ORDER BY s.site, k"
                  : rh_sample_notice(db)
                  ? "SELECT s.site, min(?1 - 1, CAST(a.alloc_after * 1.0 * ?1 / ?2 AS INTEGER))"
                    " AS k, " RH_W_N("1") ", " RH_W_B("1") ", min(a.alloc_after),"
                    " max(a.alloc_after)"
                    " FROM sel a JOIN site s ON s.bt = a.bt WHERE a.dealloc_after IS NULL"
                    " GROUP BY s.site, k ORDER BY s.site, k"
                  : "SELECT s.site, min(?1 - 1, CAST(a.alloc_after * 1.0 * ?1 / ?2 AS INTEGER))"
                    " AS k, count(*), sum(a.size), min(a.alloc_after), max(a.alloc_after)"
                    " FROM sel a JOIN site s ON s.bt = a.bt WHERE a.dealloc_after IS NULL"
                    " GROUP BY s.site, k ORDER BY s.site, k");
    sqlite3_stmt *ins = rh_sql_prepare(db, "INSERT INTO leak_sites VALUES(?,?,?,?,?,?,?,?)");
    double *y = calloc((size_t)nb, sizeof *y);
    int rc = -1;
    if (!q || !ins || !y)
        goto out;
    sqlite3_bind_int64(q, 1, nb);
    sqlite3_bind_int64(q, 2, duration);
    int64_t cur = -1, blocks = 0, bytes = 0, first = 0, last = 0;
    int covered = 0, more = 1;
    while (more) {
        int r = sqlite3_step(q);
        if (r != SQLITE_ROW && r != SQLITE_DONE) {
            fprintf(stderr, "rheaper: SQL error: %s\n", sqlite3_errmsg(db));
            goto out;
        }
        more = r == SQLITE_ROW;
        int64_t site = more ? sqlite3_column_int64(q, 0) : -2;
        if (site != cur && cur >= 0) {
            /* finish the previous site: cumulative bytes, R^2 against bucket number */
            double acc = 0, sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
            for (int k = 0; k < nb; k++) {
                acc += y[k];
                sx += k;
                sy += acc;
                sxx += (double)k * k;
                syy += acc * acc;
                sxy += k * acc;
            }
            double n = nb, vx = n * sxx - sx * sx, vy = n * syy - sy * sy, cxy = n * sxy - sx * sy;
            double fit = vy > 1e-9 * n * syy && vx > 0 ? (cxy * cxy) / (vx * vy) : 0;
            if (fit > 1)
                fit = 1;
            double cov = (double)covered / nb;
            sqlite3_bind_int64(ins, 1, cur);
            sqlite3_bind_double(ins, 2, cov * fit);
            sqlite3_bind_int64(ins, 3, covered);
            sqlite3_bind_double(ins, 4, fit);
            sqlite3_bind_int64(ins, 5, blocks);
            sqlite3_bind_int64(ins, 6, bytes);
            sqlite3_bind_int64(ins, 7, first);
            sqlite3_bind_int64(ins, 8, last);
            int ri = sqlite3_step(ins);
            sqlite3_reset(ins);
            if (ri != SQLITE_DONE) {
                fprintf(stderr, "rheaper: SQL error: %s\n", sqlite3_errmsg(db));
                goto out;
            }
        }
        if (!more)
            break;
        if (site != cur) {
            cur = site;
            memset(y, 0, (size_t)nb * sizeof *y);
            blocks = bytes = 0;
            covered = 0;
            first = sqlite3_column_int64(q, 4);
        }
        int k = sqlite3_column_int(q, 1);
        if (k < 0)
            k = 0;
        y[k] += (double)sqlite3_column_int64(q, 3);
        covered++;
        blocks += sqlite3_column_int64(q, 2);
        bytes += sqlite3_column_int64(q, 3);
        last = sqlite3_column_int64(q, 5);
    }
    rc = 0;
out:
    free(y);
    sqlite3_finalize(q);
    sqlite3_finalize(ins);
    return rc;
}

int rh_leak_sites(sqlite3 *db, int buckets, int64_t duration_ns)
{
    return rh_make_sites(db, 0) || rh_leak_scores(db, buckets, duration_ns) ? -1 : 0;
}

/* ---- the call sites as rows ---------------------------------------------- */

/* The SQL of one figure of a site (a column of the grouped subquery). */
static const char *rh_site_order_col(enum rh_site_order by)
{
    switch (by) {
    case RH_SITES_COUNT:
        return "count";
    case RH_SITES_LEAKED:
        return "leaked_bytes";
    case RH_SITES_PEAK:
    case RH_SITES_AT_PEAK:
        return "peak_bytes";
    case RH_SITES_TEMPORARY:
        return "temporary";
    case RH_SITES_SITE:
        return "site";
    case RH_SITES_BYTES:
    default:
        return "bytes";
    }
}

/* A copy of column i's text ("" for NULL); NULL when out of memory. */
static char *rh_col_dup(sqlite3_stmt *st, int i)
{
    const char *t = (const char *)sqlite3_column_text(st, i);
    return strdup(t ? t : "");
}

int rh_sites_get(sqlite3 *db, const struct rh_site_query *q, struct rh_site_row **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    const char *col = rh_site_order_col(q->by);
    char where[128] = "", order[256];
    /* the peak command's view: only the stacks holding blocks at the peak */
    const char *stacks = q->by == RH_SITES_AT_PEAK ? " WHERE a.peak_blocks > 0" : "";
    if (q->by == RH_SITES_SITE)
        snprintf(order, sizeof order, "g.site");
    else if (q->by == RH_SITES_AT_PEAK)
        snprintf(order, sizeof order, "peak_bytes DESC, function, location");
    else
        snprintf(order, sizeof order, "g.%s DESC, bytes DESC, function, location", col);
    if (q->positive && q->by != RH_SITES_SITE)
        snprintf(where, sizeof where, " WHERE g.%s > 0", col);
    char sql[4096];
    snprintf(sql, sizeof sql,
             "SELECT g.site, function, location, stacks, count, bytes, freed_blocks, freed_bytes,"
             " leaked_blocks, leaked_bytes, peak_blocks, peak_bytes, temporary, first, last, g.bt,"
             " %s FROM (SELECT s.site AS site, min(s.function) AS function,"
             " min(s.location) AS location, count(*) AS stacks, sum(a.count) AS count,"
             " sum(a.bytes) AS bytes, sum(a.freed_blocks) AS freed_blocks,"
             " sum(a.freed_bytes) AS freed_bytes, sum(a.leaked_blocks) AS leaked_blocks,"
             " sum(a.leaked_bytes) AS leaked_bytes, sum(a.peak_blocks) AS peak_blocks,"
             " sum(a.peak_bytes) AS peak_bytes, sum(a.temporary) AS temporary,"
             " min(a.first_alloc) AS first, max(a.last_alloc) AS last, min(a.bt) AS bt"
             " FROM temp.sstat a JOIN temp.site s ON s.bt = a.bt%s GROUP BY s.site) g%s"
             "%s ORDER BY %s LIMIT ?1 OFFSET ?2",
             q->heaviest ? "h.bt" : "g.bt", stacks,
             /* each site's stack with the most bytes: one sort of the scope's stacks */
             q->heaviest ? " LEFT JOIN (SELECT site, bt FROM (SELECT s.site AS site, a.bt AS bt,"
                           " row_number() OVER (PARTITION BY s.site ORDER BY a.bytes DESC, a.bt)"
                           " AS rk FROM temp.sstat a JOIN temp.site s ON s.bt = a.bt) WHERE rk = 1)"
                           " h ON h.site = g.site"
                         : "",
             where, order);
    sqlite3_stmt *st = rh_sql_prepare(db, sql);
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, q->limit < 0 ? -1 : q->limit);
    sqlite3_bind_int64(st, 2, q->offset > 0 ? q->offset : 0);
    size_t cap = 0;
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            size_t c2 = cap ? cap * 2 : 64;
            struct rh_site_row *a = realloc(*rows, c2 * sizeof *a);
            if (!a)
                goto oom;
            *rows = a;
            cap = c2;
        }
        struct rh_site_row *w = &(*rows)[*n];
        memset(w, 0, sizeof *w);
        w->site = sqlite3_column_int64(st, 0);
        w->function = rh_col_dup(st, 1);
        w->location = rh_col_dup(st, 2);
        (*n)++;
        if (!w->function || !w->location)
            goto oom;
        int64_t *v[] = {&w->stacks,        &w->count,        &w->bytes,       &w->freed_blocks,
                        &w->freed_bytes,   &w->leaked_blocks, &w->leaked_bytes, &w->peak_blocks,
                        &w->peak_bytes,    &w->temporary,    &w->first,       &w->last,
                        &w->bt,            &w->bt_heaviest};
        for (int i = 0; i < (int)(sizeof v / sizeof v[0]); i++)
            *v[i] = sqlite3_column_int64(st, 3 + i);
    }
    sqlite3_finalize(st);
    if (r != SQLITE_DONE) {
        rh_sites_free(*rows, *n);
        *rows = NULL;
        *n = 0;
        return rh_sql_fail(db, "call sites");
    }
    return 0;
oom:
    sqlite3_finalize(st);
    rh_sites_free(*rows, *n);
    *rows = NULL;
    *n = 0;
    fprintf(stderr, "rheaper: call sites: out of memory\n");
    return -1;
}

void rh_sites_free(struct rh_site_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].function);
        free(rows[i].location);
    }
    free(rows);
}

int rh_leaks_get(sqlite3 *db, int64_t limit, int64_t offset, struct rh_leak_row **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    sqlite3_stmt *st = rh_sql_prepare(
        db, "SELECT l.site, s.function, s.location, s.bt, l.score, l.coverage, l.fit, l.blocks,"
            " l.bytes, l.first, l.last FROM temp.leak_sites l JOIN"
            " (SELECT site, min(function) AS function, min(location) AS location,"
            " min(bt) AS bt FROM temp.site GROUP BY site) s ON s.site = l.site"
            " ORDER BY l.score DESC, l.bytes DESC, s.function LIMIT ?1 OFFSET ?2");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, limit < 0 ? -1 : limit);
    sqlite3_bind_int64(st, 2, offset > 0 ? offset : 0);
    size_t cap = 0;
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            size_t c2 = cap ? cap * 2 : 64;
            struct rh_leak_row *a = realloc(*rows, c2 * sizeof *a);
            if (!a)
                goto oom;
            *rows = a;
            cap = c2;
        }
        struct rh_leak_row *w = &(*rows)[*n];
        memset(w, 0, sizeof *w);
        w->site = sqlite3_column_int64(st, 0);
        w->function = rh_col_dup(st, 1);
        w->location = rh_col_dup(st, 2);
        (*n)++;
        if (!w->function || !w->location)
            goto oom;
        w->bt = sqlite3_column_int64(st, 3);
        w->score = sqlite3_column_double(st, 4);
        w->coverage = sqlite3_column_int(st, 5);
        w->fit = sqlite3_column_double(st, 6);
        w->blocks = sqlite3_column_int64(st, 7);
        w->bytes = sqlite3_column_int64(st, 8);
        w->first = sqlite3_column_int64(st, 9);
        w->last = sqlite3_column_int64(st, 10);
    }
    sqlite3_finalize(st);
    if (r != SQLITE_DONE) {
        rh_leaks_free(*rows, *n);
        *rows = NULL;
        *n = 0;
        return rh_sql_fail(db, "leaks");
    }
    return 0;
oom:
    sqlite3_finalize(st);
    rh_leaks_free(*rows, *n);
    *rows = NULL;
    *n = 0;
    fprintf(stderr, "rheaper: leaks: out of memory\n");
    return -1;
}

void rh_leaks_free(struct rh_leak_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].function);
        free(rows[i].location);
    }
    free(rows);
}

sqlite3_stmt *rh_stack_heap_stmt(sqlite3 *db, int at_peak, int64_t to_ns)
{
    double rate;
    int64_t bytes;
    int sampled = !at_peak && to_ns >= 0 && rh_sample_params(db, &rate, &bytes) != 0;
    /* sstat holds the scope's aggregates: on a sampled profile they are
     * already the estimates (bytes sum(round(size * weight)), blocks in
     * 1/4096 units rounded per stack), as stack_stats stores them. Only the
     * heap at the end of a --to range is counted from the rows here, weighed
     * the same way on a sampled profile. */
    const char *sql =
        at_peak ? "SELECT bt, count, bytes, peak_blocks, peak_bytes FROM temp.sstat"
        : to_ns >= 0 && sampled
            ? "SELECT s.bt, s.count, s.bytes, coalesce(u.n, 0), coalesce(u.b, 0)"
              " FROM temp.sstat s LEFT JOIN (SELECT bt,"
              " (CAST(sum(round(weight * 4096)) AS INTEGER) + 2048) / 4096 AS n,"
              " CAST(sum(round(size * weight)) AS INTEGER) AS b"
              " FROM temp.sel WHERE dealloc_after IS NULL OR dealloc_after > ?1"
              " GROUP BY bt) u ON u.bt = s.bt"
        : to_ns >= 0
            ? "SELECT s.bt, s.count, s.bytes, coalesce(u.n, 0), coalesce(u.b, 0)"
              " FROM temp.sstat s LEFT JOIN (SELECT bt, count(*) AS n, sum(size) AS b"
              " FROM temp.sel WHERE dealloc_after IS NULL OR dealloc_after > ?1"
              " GROUP BY bt) u ON u.bt = s.bt"
            : "SELECT bt, count, bytes, leaked_blocks, leaked_bytes FROM temp.sstat";
    sqlite3_stmt *st = rh_sql_prepare(db, sql);
    if (st && to_ns >= 0 && !at_peak)
        sqlite3_bind_int64(st, 1, to_ns);
    return st;
}
