/* rh_query_groups.c: bytehound's per-stack groups, the threads and the heap
 * over time of a scope built by rh_qfilter_apply.
 *
 * The server's /allocation_groups, /threads and /timeline answer from here.
 * Each figure comes from the scope's tables when they describe the matched
 * rows (sstat, ssize, tstat: the converter's aggregates, or the filtered
 * pass), and is summed from `msel` only when bytehound's own filters
 * (address, depth, group and lifetime modes) narrowed the rows further, with
 * the converter's weights (RH_W_N, RH_W_B, rh_schema.h) on a sampled
 * profile.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rh_schema.h"
#include "rh_query.h"

/* 1 when sql's first column of its first row is 1. */
static int rh_g_true(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int v = sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
    sqlite3_finalize(st);
    return v;
}

int rh_groups_build(sqlite3 *db, const struct rh_qfilter *q)
{
    struct rh_scope sc;
    if (rh_scope_get(db, &sc))
        return -1;
    /* Filtered by the shared filters only (msel is sel): the matched
     * figures are the pass's (sstat, ssize), computed while it read the
     * scope's rows once. bytehound's own filters (msel a table) are grouped
     * from msel's rows. */
    int has_sizes =
        rh_g_true(db, "SELECT count(*) FROM main.sqlite_master WHERE name = 'stack_sizes'");
    int from_pass = sc.rows && !rh_qfilter_extra(q) &&
                    rh_g_true(db, "SELECT count(*) FROM sqlite_temp_master WHERE name = 'ssize'");
    const char *grp =
        from_pass
            ? "CREATE TEMP TABLE grp AS SELECT s.bt AS bt, s.count AS m_count, s.bytes AS m_size,"
              " z.min_size AS m_min_size, z.max_size AS m_max_size, s.first_alloc AS m_min_t,"
              " s.last_alloc AS m_max_t, s.leaked_blocks AS m_leaked"
              " FROM sstat s JOIN ssize z ON z.bt = s.bt WHERE s.count > 0"
        : sc.rows ? "CREATE TEMP TABLE grp AS SELECT bt, " RH_W_N("1") " AS m_count,"
                  " sum(" RH_W_ROW_B ") AS m_size,"
                  " min(size) AS m_min_size, max(size) AS m_max_size, min(alloc_after) AS m_min_t,"
                  " max(alloc_after) AS m_max_t, " RH_W_N("dealloc_after IS NULL") " AS m_leaked"
                  " FROM msel GROUP BY bt"
        : has_sizes
            ? "CREATE TEMP TABLE grp AS SELECT s.bt AS bt, s.count AS m_count, s.bytes AS m_size,"
              " z.min_size AS m_min_size, z.max_size AS m_max_size, s.first_alloc AS m_min_t,"
              " s.last_alloc AS m_max_t, s.leaked_blocks AS m_leaked"
              " FROM sstat s LEFT JOIN main.stack_sizes z ON z.bt = s.bt WHERE s.count > 0"
                : "CREATE TEMP TABLE grp AS SELECT bt, count AS m_count, bytes AS m_size,"
                  " NULL AS m_min_size, NULL AS m_max_size, first_alloc AS m_min_t,"
                  " last_alloc AS m_max_t, leaked_blocks AS m_leaked FROM sstat WHERE count > 0";
    if (sqlite3_exec(db, "DROP TABLE IF EXISTS temp.grp", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(db, grp, NULL, NULL, NULL) != SQLITE_OK)
        return -1;
    return 0;
}

int rh_group_sizes(sqlite3 *db, int64_t bt, int64_t *mn, int64_t *mx, int rows)
{
    sqlite3_stmt *st = NULL;
    *mn = *mx = -1;
    /* the converter's (stack_sizes, every allocation) */
    if (sqlite3_prepare_v2(db, "SELECT min_size, max_size FROM main.stack_sizes WHERE bt = ?1", -1,
                           &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, bt);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            *mn = sqlite3_column_int64(st, 0);
            *mx = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
        return r == SQLITE_ROW || r == SQLITE_DONE ? 0 : -1;
    }
    sqlite3_finalize(st);
    st = NULL;
    /* an older profile: from the rows, when a filter reads them anyway */
    if (!rows)
        return 0;
    if (sqlite3_prepare_v2(db, "SELECT min(size), max(size) FROM main.allocations WHERE bt = ?1", -1,
                           &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, bt);
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *mn = sqlite3_column_int64(st, 0);
        *mx = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return r == SQLITE_ROW ? 0 : -1;
}

sqlite3_stmt *rh_threads_stmt(sqlite3 *db, const struct rh_qfilter *q)
{
    /* The scope's thread table (the converter's, or the C pass's for its
     * filters) answers unless bytehound's own filters narrowed the rows
     * (msel): then msel is summed with the same weights. A block counts for
     * the thread that allocated it; leaked is live at the end. Both are
     * estimates on a sampled profile. */
    const char *sql =
        rh_qfilter_extra(q)
            ? "SELECT t.id, t.tid, t.name, coalesce(x.n, 0), coalesce(x.b, 0),"
              " coalesce(x.ln, 0), coalesce(x.lb, 0) FROM threads t LEFT JOIN"
              " (SELECT alloc_thread AS th, " RH_W_N("1") " AS n, sum(" RH_W_ROW_B ") AS b,"
              " " RH_W_N("dealloc_after IS NULL") " AS ln,"
              " sum(CASE WHEN dealloc_after IS NULL THEN " RH_W_ROW_B " ELSE 0 END) AS lb"
              " FROM msel GROUP BY alloc_thread) x ON x.th = t.id ORDER BY t.id"
            : "SELECT t.id, t.tid, t.name, coalesce(x.alloc_blocks, 0),"
              " coalesce(x.alloc_bytes, 0), coalesce(x.live_blocks, 0),"
              " coalesce(x.live_bytes, 0) FROM threads t LEFT JOIN temp.tstat x"
              " ON x.thread = t.id ORDER BY t.id";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return NULL;
    return st;
}

void rh_timeline_free(struct rh_timeline *t)
{
    free(t->xs);
    free(t->max_bytes);
    free(t->end_bytes);
    free(t->end_count);
    memset(t, 0, sizeof *t);
}

/* Appends (x, max, end) to t's stored columns. Returns 0 or -1. */
static int rh_tl_push(struct rh_timeline *t, int *cap, int64_t x, int64_t mx, int64_t end)
{
    if (t->n == *cap) {
        int nc = *cap ? *cap * 2 : 512;
        int64_t *a = realloc(t->xs, (size_t)nc * sizeof *a);
        if (!a)
            return -1;
        t->xs = a;
        a = realloc(t->max_bytes, (size_t)nc * sizeof *a);
        if (!a)
            return -1;
        t->max_bytes = a;
        a = realloc(t->end_bytes, (size_t)nc * sizeof *a);
        if (!a)
            return -1;
        t->end_bytes = a;
        *cap = nc;
    }
    t->xs[t->n] = x;
    t->max_bytes[t->n] = mx;
    t->end_bytes[t->n++] = end;
    return 0;
}

int rh_timeline_compute(sqlite3 *db, int64_t span, int cols, struct rh_timeline *t)
{
    memset(t, 0, sizeof *t);
    struct rh_scope sc;
    if (rh_scope_get(db, &sc))
        return -1;
    /* Without row filters the converter's timeline table answers (its
     * columns' end times, highest and ending live bytes); it keeps no block
     * counts, so end_count stays NULL. */
    if (!sc.rows && rh_meta_int(db, "timeline_columns", 0) > 0) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(db, "SELECT t, max_bytes, end_bytes FROM timeline ORDER BY col", -1,
                               &st, NULL) != SQLITE_OK)
            return -1;
        int cap = 0, r;
        while ((r = sqlite3_step(st)) == SQLITE_ROW)
            if (rh_tl_push(t, &cap, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                           sqlite3_column_int64(st, 2))) {
                r = SQLITE_NOMEM;
                break;
            }
        sqlite3_finalize(st);
        if (r != SQLITE_DONE) {
            rh_timeline_free(t);
            return -1;
        }
        t->stored = 1;
        return 0;
    }
    /* Else the heap over time of msel in cols + 1 columns: for each, its end
     * time, the highest live bytes within it and the live bytes and blocks
     * at its end. One ordered pass over the allocations and frees, or the
     * same columns the filtered pass kept (sctl) when msel is sel. */
    if (span <= 0)
        span = 1;
    int n = cols + 1;
    t->n = n;
    t->xs = calloc((size_t)n, sizeof *t->xs);
    t->max_bytes = calloc((size_t)n, sizeof *t->max_bytes);
    t->end_bytes = calloc((size_t)n, sizeof *t->end_bytes);
    t->end_count = calloc((size_t)n, sizeof *t->end_count);
    char *act = calloc((size_t)n, 1);
    sqlite3_stmt *st = NULL;
    int rc = -1, r;
    if (!t->xs || !t->max_bytes || !t->end_bytes || !t->end_count || !act)
        goto out;
    if (cols == RH_SCOPE_TL_COLS &&
        sqlite3_prepare_v2(db,
                           "SELECT col, max_bytes, end_bytes, end_count, active FROM temp.sctl"
                           " WHERE span = ?1 AND (SELECT type FROM temp.sqlite_master"
                           " WHERE name = 'msel') = 'view' ORDER BY col",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, span);
        int got = 0;
        while ((r = sqlite3_step(st)) == SQLITE_ROW) {
            int c = sqlite3_column_int(st, 0);
            if (c < 0 || c >= n)
                continue;
            t->max_bytes[c] = sqlite3_column_int64(st, 1);
            t->end_bytes[c] = sqlite3_column_int64(st, 2);
            t->end_count[c] = sqlite3_column_int64(st, 3);
            act[c] = (char)sqlite3_column_int(st, 4);
            got++;
        }
        sqlite3_finalize(st);
        st = NULL;
        if (r != SQLITE_DONE)
            goto out;
        if (got == n)
            goto carry;
        memset(act, 0, (size_t)n);
        memset(t->max_bytes, 0, (size_t)n * sizeof *t->max_bytes);
        memset(t->end_bytes, 0, (size_t)n * sizeof *t->end_bytes);
        memset(t->end_count, 0, (size_t)n * sizeof *t->end_count);
    }
    if (sqlite3_prepare_v2(db,
                           /* d: estimated bytes, w: estimated 1/4096 blocks
                            * (RH_W_N, rh_schema.h), the converter's weights */
                           "SELECT t, d, w FROM (SELECT alloc_after AS t, 1 AS k, " RH_W_ROW_B
                           " AS d, CAST(round(weight * 4096) AS INTEGER) AS w, id FROM msel"
                           " UNION ALL SELECT dealloc_after, 0, -" RH_W_ROW_B ","
                           " -CAST(round(weight * 4096) AS INTEGER), id FROM msel"
                           " WHERE dealloc_after IS NOT NULL) ORDER BY t, k, id",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    int64_t live = 0, nlive = 0;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t x = sqlite3_column_int64(st, 0), d = sqlite3_column_int64(st, 1),
                w = sqlite3_column_int64(st, 2);
        __int128 c128 = ((__int128)x * cols + span - 1) / span;
        int c = c128 < 0 ? 0 : c128 > cols ? cols : (int)c128;
        live += d;
        nlive += w;
        if (!act[c] || live > t->max_bytes[c])
            t->max_bytes[c] = live;
        act[c] = 1;
        t->end_bytes[c] = live;
        t->end_count[c] = nlive >= 0 ? (nlive + 2048) / 4096 : -((-nlive + 2048) / 4096);
    }
    if (r != SQLITE_DONE)
        goto out;
carry:
    /* columns without events carry the level before them */
    for (int c = 1; c < n; c++)
        if (!act[c]) {
            t->max_bytes[c] = t->end_bytes[c] = t->end_bytes[c - 1];
            t->end_count[c] = t->end_count[c - 1];
        }
    for (int c = 0; c < n; c++)
        t->xs[c] = (int64_t)((__int128)span * c / cols);
    rc = 0;
out:
    sqlite3_finalize(st);
    free(act);
    if (rc)
        rh_timeline_free(t);
    return rc;
}
