/* rh_query_sites.c: call sites and the leak score.
 *
 * A call site is the call-site frame of a stack (TEMP TABLE cs, built by the
 * scope): its function and file:line, or module+offset without debug
 * information. Stacks with the same function and line but different callers
 * are one site unless the caller asks for each stack. The leak score ranks
 * the never-freed blocks of the scope per site; `rheaper leaks`, the report
 * and the server read it from TEMP TABLE leak_sites.
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
