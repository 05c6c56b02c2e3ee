/* rh_query_stackscope.c: the scope of a stack filter without reading a row.
 *
 * A filter that selects stacks only (--function, --not-function, --file,
 * --not-file, --kind, --not-kind and the web UI's function and source
 * searches, which mean the same) keeps every row of the stacks it selects and
 * none of the others. So each per-stack figure of its scope is the
 * converter's own for that stack: stack_stats, stack_sizes, leak_curve,
 * stack_hist and stack_threads, restricted to the selected stacks (TEMP
 * TABLE selbt), and the per-thread figures are sums of stack_thread_stats.
 * The peak is not a sum (the stacks reach their highest at different
 * moments): the converter computed it for every set of stacks one term
 * names, a function, a file, a module or a kind (group_peaks,
 * rh_agg_groups.c), with each stack's bytes at that peak
 * (group_peak_stacks). This file finds the group whose stacks are exactly
 * the selected ones: the same number of stacks and the same hash of their
 * ids, then checked id by id against the group's definition (every selected
 * stack has the group's function, file, module or kind, and there are as
 * many as the group has). Then the scope's tables are filled from those
 * tables, with the same columns, rows and order as the filtered pass
 * (rh_query_pass.c) would leave, and no row is read. For a reader that
 * draws the scope's heap over time by stack (stl, stls: a chart by call
 * site, a site's line, the timeline and report commands), the converter kept
 * each group's timeline (group_timeline, rh_db_groups.c): its columns with
 * events and their packed stack points, which fill stl (every column, the
 * ones without events carried from the one before, as rh_agg_end does) and
 * stlsb as the pass would. A group whose timeline was not kept (over the
 * converter's bound, or a group of every stack), and the server's event
 * columns (sctl), which no group keeps, are left to the pass.
 *
 * When no group matches (two terms, --not-function, a regex matching
 * functions whose stacks differ), or the profile has no group tables (an
 * older conversion, a sampled or culled profile, a fork child's with blocks
 * inherited from its parent), the caller runs the pass.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "rh_query.h"
#include "rh_schema.h"

/* The hash of a stack id, as the converter sums them (rh_grp_hash). */
static uint64_t rh_ss_hash(int64_t id)
{
    uint64_t z = (uint64_t)id + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Runs sql with ?1 bound to v (when v >= 0). Returns 0 or -1 after one line. */
static int rh_ss_run(sqlite3 *db, const char *sql, int64_t v)
{
    sqlite3_stmt *st = rh_sql_prepare(db, sql);
    if (!st)
        return -1;
    if (v >= 0)
        sqlite3_bind_int64(st, 1, v);
    int r = sqlite3_step(st);
    sqlite3_finalize(st);
    return r == SQLITE_DONE ? 0 : rh_sql_fail(db, "filter");
}

/* The group (group_peaks.id) whose stacks are exactly selbt's n stacks of
 * hash h, with its peak in *res; 0 when none, -1 on an SQLite error. */
static int64_t rh_ss_group(sqlite3 *db, int64_t n, uint64_t h, struct rh_pass_result *res)
{
    static const char *const member[4] = {
        "SELECT count(*) FROM temp.selbt WHERE bt IN (SELECT id FROM main.backtraces"
        " WHERE sym = ?1)",
        "SELECT count(*) FROM temp.selbt WHERE bt IN (SELECT id FROM main.backtraces"
        " WHERE file = ?1)",
        "SELECT count(*) FROM temp.selbt WHERE bt IN (SELECT id FROM main.backtraces"
        " WHERE module = ?1)",
        "SELECT count(*) FROM temp.selbt WHERE bt IN (SELECT id FROM main.stacks WHERE kind = ?1)",
    };
    sqlite3_stmt *st = rh_sql_prepare(db, "SELECT id, type, name, peak_bytes, peak_blocks,"
                                          " peak_time FROM main.group_peaks"
                                          " WHERE stacks = ?1 AND stack_hash = ?2 ORDER BY id");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, n);
    sqlite3_bind_int64(st, 2, (int64_t)h);
    int64_t found = 0;
    while (!found && sqlite3_step(st) == SQLITE_ROW) {
        int type = sqlite3_column_int(st, 1);
        const char *name = (const char *)sqlite3_column_text(st, 2);
        if (type < 0 || type > 3 || !name)
            continue;
        sqlite3_stmt *m = rh_sql_prepare(db, member[type]);
        if (!m)
            break;
        sqlite3_bind_text(m, 1, name, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(m) == SQLITE_ROW && sqlite3_column_int64(m, 0) == n) {
            found = sqlite3_column_int64(st, 0);
            res->peak_bytes = sqlite3_column_int64(st, 3);
            res->peak_blocks = sqlite3_column_int64(st, 4);
            res->peak_time = sqlite3_column_int64(st, 5);
        }
        sqlite3_finalize(m);
    }
    sqlite3_finalize(st);
    return found;
}

/* TEMP TABLE tstat: every thread from 1 to the highest that made or freed a
 * selected row, as the pass emits them (zeros where a thread has none). */
static int rh_ss_threads(sqlite3 *db)
{
    sqlite3_stmt *q = rh_sql_prepare(
        db, "SELECT thread, sum(alloc_blocks), sum(alloc_bytes), sum(freed_blocks),"
            " sum(freed_bytes), sum(freed_by_others_blocks), sum(freed_by_others_bytes),"
            " sum(live_blocks), sum(live_bytes) FROM main.stack_thread_stats"
            " WHERE bt IN (SELECT bt FROM temp.selbt) AND thread > 0 GROUP BY thread"
            " ORDER BY thread");
    sqlite3_stmt *ins = q ? rh_sql_prepare(db, "INSERT INTO temp.tstat VALUES(?,?,?,?,?,?,?,?,?)")
                          : NULL;
    int rc = -1, r;
    int64_t next = 1;
    if (!ins)
        goto out;
    while ((r = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t th = sqlite3_column_int64(q, 0);
        for (; next <= th; next++) {
            sqlite3_bind_int64(ins, 1, next);
            for (int k = 1; k < 9; k++)
                sqlite3_bind_int64(ins, k + 1, next == th ? sqlite3_column_int64(q, k) : 0);
            if (sqlite3_step(ins) != SQLITE_DONE) {
                rh_sql_fail(db, "filter");
                goto out;
            }
            sqlite3_reset(ins);
        }
    }
    rc = r == SQLITE_DONE ? 0 : rh_sql_fail(db, "filter");
out:
    sqlite3_finalize(q);
    sqlite3_finalize(ins);
    return rc;
}

/* 1 when group g's timeline was kept for the run's span (group_peaks.timeline,
 * meta group_timeline_span); 0 when not, or on an older profile. */
static int rh_ss_has_timeline(sqlite3 *db, int64_t g)
{
    if (!rh_table_exists(db, "group_timeline") ||
        rh_meta_int(db, "group_timeline_span", -1) != rh_meta_int(db, "duration_ns", -2))
        return 0;
    sqlite3_stmt *st = NULL;
    int on = sqlite3_prepare_v2(db, "SELECT timeline FROM main.group_peaks WHERE id = ?1", -1,
                                &st, NULL) == SQLITE_OK;
    if (on) {
        sqlite3_bind_int64(st, 1, g);
        on = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
    }
    sqlite3_finalize(st);
    return on;
}

/* TEMP stl (every column 1..RH_AGG_COLUMNS) and stlsb from group g's
 * timeline over span (g 0: no group, every column empty). Returns 0 or -1
 * after one line. */
static int rh_ss_timeline(sqlite3 *db, int64_t g, int64_t span)
{
    sqlite3_stmt *q = rh_sql_prepare(db, g ? "SELECT col, max_bytes, max_time, end_bytes"
                                             " FROM main.group_timeline WHERE grp = ?1"
                                             " ORDER BY col"
                                           : "SELECT 0, 0, 0, 0 WHERE 0");
    sqlite3_stmt *ins = q ? rh_sql_prepare(db, "INSERT INTO temp.stl VALUES(?,?,?,?,?,?)") : NULL;
    int rc = -1;
    if (!ins)
        goto out;
    if (g)
        sqlite3_bind_int64(q, 1, g);
    /* r: q's last step; on SQLITE_ROW, q holds the next column with events */
    int64_t carry = 0;
    int r = sqlite3_step(q);
    for (int c = 1; c <= RH_AGG_COLUMNS; c++) {
        int64_t v[6] = {c, (int64_t)((__int128)span * c / RH_AGG_COLUMNS), carry, 0, carry, 0};
        if (r == SQLITE_ROW && sqlite3_column_int64(q, 0) < c) {
            fprintf(stderr, "rheaper: filter: the group timeline's columns are out of order\n");
            goto out;
        }
        if (r == SQLITE_ROW && sqlite3_column_int64(q, 0) == c) {
            v[2] = sqlite3_column_int64(q, 1);
            v[3] = sqlite3_column_int64(q, 2);
            v[4] = carry = sqlite3_column_int64(q, 3);
            v[5] = 1;
            r = sqlite3_step(q);
        }
        for (int k = 0; k < 6; k++)
            sqlite3_bind_int64(ins, k + 1, v[k]);
        if (sqlite3_step(ins) != SQLITE_DONE)
            goto fail;
        sqlite3_reset(ins);
    }
    if (r == SQLITE_ROW) {
        fprintf(stderr, "rheaper: filter: the group timeline has a column past the last\n");
        goto out;
    }
    if (r != SQLITE_DONE)
        goto fail;
    rc = g ? rh_ss_run(db,
                       "INSERT INTO temp.stlsb SELECT col, pts FROM main.group_timeline"
                       " WHERE grp = ?1 AND pts IS NOT NULL ORDER BY col",
                       g)
           : 0;
    goto out;
fail:
    rh_sql_fail(db, "filter");
out:
    sqlite3_finalize(q);
    sqlite3_finalize(ins);
    return rc;
}

int rh_scope_stacks(sqlite3 *db, int want_tl, struct rh_pass_result *res)
{
    const char *force = getenv("RHEAPER_ROWS"), *off = getenv("RHEAPER_STACK_SCOPE");
    double rate;
    int64_t bytes;
    memset(res, 0, sizeof *res);
    if ((force && !strcmp(force, "1")) || (off && !strcmp(off, "0")) ||
        rh_meta_int(db, "aggregates", 0) != 1 || rh_meta_int(db, "min_lifetime_ns", 0) != 0 ||
        rh_meta_int(db, "inherited_rows", 0) != 0 ||
        rh_sample_params(db, &rate, &bytes) || !rh_table_exists(db, "group_peaks") ||
        !rh_table_exists(db, "group_peak_stacks") || !rh_table_exists(db, "stack_thread_stats") ||
        !rh_table_exists(db, "stack_sizes") || !rh_table_exists(db, "stack_hist") ||
        !rh_table_exists(db, "stack_threads"))
        return 0;
    /* the selected stacks' count and hash */
    sqlite3_stmt *st = rh_sql_prepare(db, "SELECT bt FROM temp.selbt");
    if (!st)
        return -1;
    int64_t n = 0;
    uint64_t h = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        h += rh_ss_hash(sqlite3_column_int64(st, 0));
        n++;
    }
    sqlite3_finalize(st);
    /* no stack selected: an empty scope, as the pass leaves it */
    int64_t g = n ? rh_ss_group(db, n, h, res) : 0;
    if (g < 0)
        return -1;
    if (n && !g)
        return 0;
    /* a chart by stack: from the group's timeline (none selected: every
     * column empty, as the pass leaves it), or by the pass */
    int tl = want_tl && (!n || rh_ss_has_timeline(db, g));
    if (want_tl && !tl)
        return 0;
    if (rh_pass_tables(db) || rh_ss_run(db, "CREATE TEMP TABLE sgroup(grp INTEGER)", -1) ||
        rh_ss_run(db, "INSERT INTO temp.sgroup VALUES(?1)", g) ||
        (tl && rh_ss_timeline(db, g, rh_meta_int(db, "duration_ns", 0))) ||
        rh_ss_run(db,
                  "INSERT INTO temp.sstat SELECT s.bt, s.count, s.bytes, s.freed_blocks,"
                  " s.freed_bytes, s.leaked_blocks, s.leaked_bytes, coalesce(p.blocks, 0),"
                  " coalesce(p.bytes, 0), s.temporary, s.first_alloc, s.last_alloc"
                  " FROM main.stack_stats s LEFT JOIN main.group_peak_stacks p"
                  " ON p.grp = ?1 AND p.bt = s.bt"
                  " WHERE s.bt IN (SELECT bt FROM temp.selbt) AND s.count > 0 ORDER BY s.bt",
                  g) ||
        rh_ss_run(db,
                  "INSERT INTO temp.ssize SELECT s.bt, coalesce(z.min_size, -1),"
                  " coalesce(z.max_size, -1) FROM temp.sstat s LEFT JOIN main.stack_sizes z"
                  " ON z.bt = s.bt ORDER BY s.bt",
                  -1) ||
        rh_ss_threads(db) ||
        rh_ss_run(db,
                  "INSERT INTO temp.slc SELECT bt, bucket, blocks, bytes, first, last"
                  " FROM main.leak_curve WHERE bt IN (SELECT bt FROM temp.selbt)"
                  " ORDER BY bt, bucket",
                  -1) ||
        rh_ss_run(db,
                  "INSERT INTO temp.shist SELECT bt, class, blocks, bytes FROM main.stack_hist"
                  " WHERE bt IN (SELECT bt FROM temp.selbt)",
                  -1) ||
        rh_ss_run(db,
                  "INSERT INTO temp.sthr SELECT bt, thread, blocks, bytes, leaked_bytes"
                  " FROM main.stack_threads WHERE bt IN (SELECT bt FROM temp.selbt)",
                  -1))
        return -1;
    res->rows = rh_sql_int(db, "SELECT coalesce(sum(count), 0) FROM temp.sstat", 0, 0);
    res->timeline = tl;
    res->last_event = 0; /* every event is within the run (meta duration_ns) */
    return 1;
}
