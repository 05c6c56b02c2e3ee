/* rh_query_events.c: allocations and temporary allocations over time by call
 * site, and the size classes of the scope.
 *
 * heaptrack_gui's "Allocations" and "Temporary Allocations" charts: how many
 * blocks were allocated (or allocated and freed at once, heaptrack's
 * temporary rule, the rows' `temporary`) up to each moment of the run, the
 * call sites that allocated the most stacked, then the rest. The sizes
 * histogram: blocks and bytes per power-of-two class, every class from the
 * smallest to the largest one used on the axis (empty ones at 0), for the
 * whole scope or for one call site. Both read the scope's rows (msel) after
 * rh_site_table, with the weights of a sampled profile (RH_W_N, RH_W_B),
 * unless aggregates answer: the charts over time sum the converter's
 * per-stack columns (stack_series.allocs, rh_db_series.c) when the scope is
 * made of whole stacks (no filter, or filters that keep every row of the
 * stacks they keep) and the sizes sum the per-stack classes (shist).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rh_schema.h"
#include "rh_names.h"
#include "rh_query.h"

/* The columns of the charts over time: as many as the heap chart's, and
 * those the converter counts per stack. */
#define RH_EV_COLS RH_AGG_EVENT_COLUMNS
_Static_assert(RH_AGG_EVENT_COLUMNS == RH_SCOPE_TL_COLS, "the charts share their columns");

/* The rows of one site (bound ?1 function, ?2 location) or of the scope. */
#define RH_EV_SITE_ROWS                                                                            \
    " FROM msel a JOIN temp.site s ON s.bt = a.bt WHERE s.function = ?1 AND s.location = ?2"

/* 1 when the charts over time of the scope can be summed from
 * stack_series.allocs: it counts every stored row in columns of this span,
 * msel is the view of sel (no filter of bytehound's beyond the CLI's), the
 * temporary rule is heaptrack's, and the scope keeps every row of each stack
 * it keeps (no filter; or each stack's count in scope is its count in the
 * profile: the filters chose stacks, not rows). *all: no filter. */
static int rh_ev_stored(sqlite3 *db, int64_t span, int *all)
{
    struct rh_scope sc;
    if (rh_scope_get(db, &sc) || !rh_table_exists(db, "stack_series") ||
        rh_meta_int(db, "series_alloc_span_ns", 0) != span ||
        rh_meta_int(db, "series_alloc_columns", 0) != RH_EV_COLS)
        return 0;
    sqlite3_stmt *st = rh_sql_prepare(
        db, "SELECT (SELECT type FROM temp.sqlite_master WHERE name = 'msel'),"
            " (SELECT count(*) FROM temp.sqlite_master WHERE name = 'selp')");
    if (!st)
        return 0;
    int ok = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) &&
             !strcmp((const char *)sqlite3_column_text(st, 0), "view");
    int selp = ok && sqlite3_column_int(st, 1) == 1;
    sqlite3_finalize(st);
    *all = !sc.rows;
    if (!ok || !sc.rows)
        return ok;
    if (!selp || rh_sql_int(db, "SELECT count(*) FROM temp.selp WHERE tmpns IS NOT NULL", 0, 1))
        return 0;
    return rh_sql_int(db,
                      "SELECT count(*) FROM temp.sstat t LEFT JOIN main.stack_stats m ON m.bt = t.bt"
                      " WHERE t.count > 0 AND (m.count IS NULL OR m.count <> t.count)",
                      0, 1) == 0;
}

/* Adds the stacks' allocs blobs to vals (n x (k + 1), in 1/4096 blocks as
 * the rows' RH_W_ROW_N of weight 1), each stack to its series sgrp[slot]
 * (ng: other call sites). Returns 0 or -1. */
static int rh_ev_blobs(sqlite3 *db, int all, int temporary, const unsigned char *sgrp,
                       int64_t nlow, int64_t nslots, int ng, int k, int64_t *vals)
{
    const int n = RH_EV_COLS;
    sqlite3_stmt *st = rh_sql_prepare(
        db, all ? "SELECT bt, allocs FROM main.stack_series WHERE allocs IS NOT NULL"
                : "SELECT x.bt, x.allocs FROM temp.sstat t JOIN main.stack_series x ON x.bt = t.bt"
                  " WHERE t.count > 0 AND x.allocs IS NOT NULL");
    if (!st)
        return -1;
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t bt = sqlite3_column_int64(st, 0);
        const unsigned char *p = sqlite3_column_blob(st, 1);
        const unsigned char *end = p + sqlite3_column_bytes(st, 1);
        int64_t slot = bt >= 0 ? rh_stack_slot(bt, nlow) : -1;
        int g = slot >= 0 && slot < nslots ? sgrp[slot] : ng;
        uint64_t col = 0, dc, nb, tb;
        while (p && p < end) {
            if (!rh_series_next(&p, end, &dc) || !rh_series_next(&p, end, &nb) ||
                !rh_series_next(&p, end, &tb) || (col += dc) >= (uint64_t)n) {
                fprintf(stderr, "rheaper: allocations over time: a damaged stack_series blob\n");
                sqlite3_finalize(st);
                return -1;
            }
            vals[col * (uint64_t)(k + 1) + (uint64_t)g] +=
                (int64_t)(temporary ? tb : nb) * RH_AGG_BSCALE;
        }
    }
    sqlite3_finalize(st);
    return r == SQLITE_DONE ? 0 : rh_sql_fail(db, "allocations over time");
}

int rh_events_sites_json(sqlite3 *db, int k, int temporary, int64_t span, FILE *o)
{
    if (k < 1)
        k = 1;
    if (k > 32)
        k = 32;
    if (span < 1)
        span = 1;
    const int n = RH_EV_COLS;
    int64_t nsites = 1;
    sqlite3_stmt *st = rh_sql_prepare(db, "SELECT coalesce(max(site), 0) + 1 FROM temp.site");
    if (!st)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        nsites = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    int64_t *grp = malloc((size_t)nsites * sizeof *grp);
    int64_t *vals = calloc((size_t)n * (size_t)(k + 1), sizeof *vals);
    unsigned char *sgrp = NULL; /* per stack id: its series */
    char *fn[33] = {0}, *loc[33] = {0};
    int ng = 0, rc = -1, r;
    if (!grp || !vals) {
        fprintf(stderr, "rheaper: allocations over time: out of memory\n");
        goto out;
    }
    memset(grp, 0xff, (size_t)nsites * sizeof *grp);
    /* the top k sites by blocks allocated (or temporary blocks) */
    st = rh_sql_prepare(db, temporary ? "SELECT site, function, location FROM temp.sitetab"
                                        " WHERE temporary > 0 ORDER BY temporary DESC, count"
                                        " DESC, site LIMIT ?1"
                                      : "SELECT site, function, location FROM temp.sitetab"
                                        " ORDER BY count DESC, bytes DESC, site LIMIT ?1");
    if (!st)
        goto out;
    sqlite3_bind_int(st, 1, k);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t site = sqlite3_column_int64(st, 0);
        fn[ng] = strdup((const char *)sqlite3_column_text(st, 1));
        loc[ng] = strdup((const char *)sqlite3_column_text(st, 2));
        if (site >= 0 && site < nsites)
            grp[site] = ng;
        ng++;
    }
    sqlite3_finalize(st);
    /* each stack's series: its site's, else "other call sites" (ng) */
    int64_t nlow, nslots;
    if (rh_site_slots(db, "allocations over time", &nlow, &nslots))
        goto out;
    sgrp = malloc((size_t)(nslots ? nslots : 1));
    if (!sgrp) {
        fprintf(stderr, "rheaper: allocations over time: out of memory\n");
        goto out;
    }
    memset(sgrp, ng, (size_t)(nslots ? nslots : 1));
    st = rh_sql_prepare(db, "SELECT bt, site FROM temp.site");
    if (!st)
        goto out;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t bt = sqlite3_column_int64(st, 0), site = sqlite3_column_int64(st, 1);
        int64_t slot = bt >= 0 ? rh_stack_slot(bt, nlow) : -1;
        if (slot >= 0 && slot < nslots && site >= 0 && site < nsites && grp[site] >= 0)
            sgrp[slot] = (unsigned char)grp[site];
    }
    sqlite3_finalize(st);
    /* the converter's per-stack columns, when they are the scope's */
    int all = 0;
    if (rh_ev_stored(db, span, &all)) {
        if (rh_ev_blobs(db, all, temporary, sgrp, nlow, nslots, ng, k, vals))
            goto out;
        goto print;
    }
    /* one plain scan of the rows (no GROUP BY: no sort), each block added to
     * its column [c*span/n, (c+1)*span/n) and series, in 1/4096 units of its
     * weight; a block after span (a scope's last events) counts in the last
     * column */
    st = rh_sql_prepare(db, temporary ? "SELECT alloc_after, bt, " RH_W_ROW_N
                                        " FROM msel WHERE temporary"
                                      : "SELECT alloc_after, bt, " RH_W_ROW_N " FROM msel");
    if (!st)
        goto out;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t t = sqlite3_column_int64(st, 0), bt = sqlite3_column_int64(st, 1);
        int64_t c = t <= 0 ? 0 : (int64_t)((__int128)t * n / span);
        if (c >= n)
            c = n - 1;
        int64_t slot = bt >= 0 ? rh_stack_slot(bt, nlow) : -1;
        int g = slot >= 0 && slot < nslots ? sgrp[slot] : ng;
        vals[(size_t)c * (size_t)(k + 1) + (size_t)g] += sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    if (r != SQLITE_DONE) {
        rh_sql_fail(db, temporary ? "temporary allocations over time" : "allocations over time");
        goto out;
    }
print:;
    /* the counts up to each column's end, as heaptrack_gui draws them */
    int64_t sum[33] = {0}, tot = 0;
    fprintf(o, "{\"what\":\"%s\",\"cumulative\":true,\"xs\":[",
            temporary ? "temporary" : "allocations");
    for (int c = 0; c < n; c++)
        fprintf(o, "%s%" PRId64, c ? "," : "", (int64_t)((__int128)(c + 1) * span / n));
    fputs("],\"total\":[", o);
    for (int c = 0; c < n; c++) {
        for (int g = 0; g <= ng; g++)
            tot += vals[(size_t)c * (size_t)(k + 1) + (size_t)g];
        fprintf(o, "%s%" PRId64, c ? "," : "", (tot + 2048) / 4096);
    }
    fputs("],\"series\":[", o);
    for (int g = 0; g <= ng; g++) {
        fputs(g ? ",{\"function\":" : "{\"function\":", o);
        rh_json_string(o, g < ng ? fn[g] : "other call sites");
        rh_json_short_name(o, g < ng ? fn[g] : "other call sites");
        fputs(",\"location\":", o);
        rh_json_string(o, g < ng ? loc[g] : "");
        fputs(",\"values\":[", o);
        for (int c = 0; c < n; c++) {
            sum[g] += vals[(size_t)c * (size_t)(k + 1) + (size_t)g];
            fprintf(o, "%s%" PRId64, c ? "," : "", (sum[g] + 2048) / 4096);
        }
        fputs("]}", o);
    }
    fputs("]}\n", o);
    rc = 0;
out:
    for (int g = 0; g < ng; g++) {
        free(fn[g]);
        free(loc[g]);
    }
    free(grp);
    free(sgrp);
    free(vals);
    return rc;
}

/* 1 when the classes can be summed from the scope's per-stack classes
 * (TEMP shist, present only when it counts exactly the rows of sel, and msel
 * is the view of sel). */
static int rh_ev_precomputed(sqlite3 *db)
{
    sqlite3_stmt *st =
        rh_sql_prepare(db, "SELECT (SELECT count(*) FROM temp.sqlite_master WHERE name = 'shist'),"
                           " (SELECT type FROM temp.sqlite_master WHERE name = 'msel')");
    if (!st)
        return 0;
    int pre = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1 &&
              sqlite3_column_text(st, 1) &&
              !strcmp((const char *)sqlite3_column_text(st, 1), "view");
    sqlite3_finalize(st);
    return pre;
}

int rh_size_classes_json(sqlite3 *db, const char *function, const char *location, FILE *o)
{
    int pre = rh_ev_precomputed(db), site = function != NULL;
    const char *sql;
    if (pre)
        sql = site ? "SELECT h.class, sum(h.blocks), sum(h.bytes) FROM temp.shist h"
                     " JOIN temp.site s ON s.bt = h.bt WHERE s.function = ?1 AND s.location = ?2"
                     " AND h.class <= 64 GROUP BY h.class"
                   : "SELECT h.class, sum(h.blocks), sum(h.bytes) FROM temp.shist h"
                     " WHERE h.class <= 64 GROUP BY h.class";
    else
        sql = site ? "SELECT a.size, " RH_W_N("1") ", " RH_W_B("1") RH_EV_SITE_ROWS
                  " GROUP BY a.size"
                   : "SELECT a.size, " RH_W_N("1") ", " RH_W_B("1") " FROM msel a GROUP BY a.size";
    sqlite3_stmt *st = rh_sql_prepare(db, sql);
    if (!st)
        return -1;
    if (site) {
        sqlite3_bind_text(st, 1, function, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, location ? location : "", -1, SQLITE_STATIC);
    }
    int64_t cnt[65] = {0}, byt[65] = {0};
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        uint64_t sz = (uint64_t)sqlite3_column_int64(st, 0);
        int c = 0;
        if (pre)
            c = sz <= 64 ? (int)sz : 64;
        else
            while (c < 64 && ((uint64_t)1 << c) < sz)
                c++;
        cnt[c] += sqlite3_column_int64(st, 1);
        byt[c] += sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    if (r != SQLITE_DONE)
        return rh_sql_fail(db, "size classes");
    int lo = 0, hi = 64;
    while (lo < 65 && !cnt[lo] && !byt[lo])
        lo++;
    while (hi >= 0 && !cnt[hi] && !byt[hi])
        hi--;
    fputc('[', o);
    for (int c = lo; c <= hi; c++)
        fprintf(o, "%s{\"max_size\":%" PRIu64 ",\"count\":%" PRId64 ",\"bytes\":%" PRId64 "}",
                c > lo ? "," : "", c < 64 ? (uint64_t)1 << c : UINT64_MAX, cnt[c], byt[c]);
    fputc(']', o);
    return 0;
}
