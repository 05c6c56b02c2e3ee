/* rh_db_agg.c: stores the aggregates of rh_aggregate.c in the database.
 *
 * Tables (docs/sql.md), written once at the end of a
 * conversion inside its transaction, with bound values only:
 *   stack_stats(bt, count, bytes, freed_blocks, freed_bytes, leaked_blocks,
 *               leaked_bytes, peak_blocks, peak_bytes, temporary, first_alloc,
 *               last_alloc)                      one row per stack
 *   thread_stats(thread, alloc_blocks, ..., live_bytes)   thread_summary's figures
 *   timeline(col, t, max_bytes, max_time, end_bytes, active)   the heap over time
 *   timeline_stacks(col, bt, at_max, at_end)     per stack, where it changed
 *   leak_curve(bt, bucket, blocks, bytes, first, last)   never-freed blocks
 *   stack_hist(bt, class, blocks, bytes)         rows by size and lifetime class
 *   stack_threads(bt, thread, blocks, bytes, leaked_bytes)   rows by thread
 *   cpu_stack_stats(stack_id, samples), cpu_thread_stats(thread, samples)
 *                                                CPU samples
 * and the meta keys peak_bytes, peak_blocks, peak_time_ns, timeline_columns,
 * leak_buckets, ids_time_ordered and aggregates.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rh_core.h"
#include "rh_db.h"
#include "rh_schema.h"

struct rh_aw {
    sqlite3 *db;
    char *err;
    size_t errlen;
};

static int rh_aw_fail(struct rh_aw *w, const char *what)
{
    snprintf(w->err, w->errlen, "%s: SQLite error (%s)", what, sqlite3_errmsg(w->db));
    return -1;
}

/* Prepares sql; NULL with err set. */
static sqlite3_stmt *rh_aw_prep(struct rh_aw *w, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK) {
        rh_aw_fail(w, "aggregates");
        return NULL;
    }
    return st;
}

/* Binds n int64 values from ?1 on, steps and resets. Returns 0 or -1. */
static int rh_aw_ins(struct rh_aw *w, sqlite3_stmt *st, const int64_t *v, int n)
{
    for (int i = 0; i < n; i++)
        sqlite3_bind_int64(st, i + 1, v[i]);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : rh_aw_fail(w, "aggregates");
}

/* The prepared INSERTs of the row tables, by enum rh_agg_table. */
struct rh_aw_rows {
    struct rh_aw *w;
    sqlite3_stmt *st[RH_AGG_T_N];
};

static int rh_aw_emit(void *ctx, enum rh_agg_table t, uint32_t si, const int64_t *v, int n)
{
    struct rh_aw_rows *r = ctx;
    (void)si;
    return rh_aw_ins(r->w, r->st[t], v, n);
}

/* stack_stats, thread_stats, timeline, leak_curve, stack_hist and
 * stack_threads, from rh_agg_rows. */
static int rh_aw_rows(struct rh_aw *w, struct rh_agg *a)
{
    static const char *const sql[RH_AGG_T_N] = {
        "INSERT INTO stack_stats VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
        "INSERT INTO thread_stats VALUES(?,?,?,?,?,?,?,?,?)",
        "INSERT INTO timeline VALUES(?,?,?,?,?,?)", "INSERT INTO leak_curve VALUES(?,?,?,?,?,?)",
        "INSERT INTO stack_hist VALUES(?,?,?,?)", "INSERT INTO stack_threads VALUES(?,?,?,?,?)"};
    struct rh_aw_rows r = {w, {NULL}};
    int rc = 0;
    for (int i = 0; i < RH_AGG_T_N && !rc; i++)
        if (!(r.st[i] = rh_aw_prep(w, sql[i])))
            rc = -1;
    if (!rc)
        rc = rh_agg_rows(a, NULL, rh_aw_emit, &r);
    for (int i = 0; i < RH_AGG_T_N; i++)
        sqlite3_finalize(r.st[i]);
    return rc;
}

/* Orders stack indexes by stack id. */
static const struct rh_agg *rh_pt_agg;
static int rh_si_cmp(const void *x, const void *y)
{
    uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
    uint64_t a = rh_pt_agg->r->stacks[i].id, b = rh_pt_agg->r->stacks[j].id;
    return a < b ? -1 : a > b;
}

static int rh_u64_cmp(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Writes timeline_stacks in key order (col, stack id), so the WITHOUT ROWID
 * table's pages fill up, a batch of rows per statement (rh_feed). The
 * points come back from rh_aggregate.c's temp file a column at a time, in
 * increasing column order (rh_agg_tl_next checks it: a timeline is dropped
 * when time goes back, so no column is closed twice); each column's points
 * are sorted by the rank of their stack's id among all stacks, a plain
 * integer, so the sort does not look stacks up. Memory: a few arrays of one
 * entry per stack. Returns 0 or -1. */
static int rh_aw_timeline_stacks(struct rh_aw *w, struct rh_agg *a)
{
    enum { BATCH = 4096 };
    size_t nst = a->nst ? a->nst : 1;
    sqlite3_stmt *sp =
        rh_aw_prep(w, "INSERT INTO timeline_stacks SELECT c0, c1, c2, c3 FROM rh_feed(?1)");
    uint32_t *order = malloc(nst * sizeof *order);
    uint32_t *rank = malloc(nst * sizeof *rank);
    uint64_t *keys = malloc(nst * sizeof *keys);
    int64_t *vals = malloc(BATCH * 4 * sizeof *vals);
    int rc = -1;
    if (!sp)
        goto out;
    if (!order || !rank || !keys || !vals) {
        snprintf(w->err, w->errlen, "aggregates: out of memory");
        goto out;
    }
    rh_pt_agg = a;
    for (size_t i = 0; i < a->nst; i++)
        order[i] = (uint32_t)i;
    qsort(order, a->nst, sizeof *order, rh_si_cmp);
    for (size_t i = 0; i < a->nst; i++)
        rank[order[i]] = (uint32_t)i;
    if (rh_agg_tl_rewind(a)) {
        snprintf(w->err, w->errlen, "timeline_stacks: cannot write its temp file (%s)",
                 strerror(errno));
        goto out;
    }
    struct rh_feed f = {vals, NULL, 0, 4};
    const struct rh_agg_point *pts;
    long n;
    while ((n = rh_agg_tl_next(a, &pts)) > 0) {
        for (long i = 0; i < n; i++)
            keys[i] = (uint64_t)rank[pts[i].si] << 32 | (uint64_t)i;
        qsort(keys, (size_t)n, sizeof *keys, rh_u64_cmp);
        for (long i = 0; i < n; i++) {
            const struct rh_agg_point *p = &pts[keys[i] & 0xffffffffu];
            int64_t *v = vals + f.nrows * 4;
            v[0] = p->col;
            v[1] = (int64_t)a->r->stacks[p->si].id;
            v[2] = p->at_max;
            v[3] = p->at_end;
            if (++f.nrows == BATCH) {
                if (rh_feed_insert(sp, &f)) {
                    rh_aw_fail(w, "aggregates");
                    goto out;
                }
                f.nrows = 0;
            }
        }
    }
    if (n < 0) {
        snprintf(w->err, w->errlen, "timeline_stacks: cannot read its temp file back (%s)",
                 strerror(errno));
        goto out;
    }
    if (rh_feed_insert(sp, &f)) {
        rh_aw_fail(w, "aggregates");
        goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(sp);
    free(order);
    free(rank);
    free(keys);
    free(vals);
    return rc;
}

/* CPU samples: cpu_stack_stats and cpu_thread_stats. */
static int rh_aw_cpu(struct rh_aw *w, struct rh_agg *a)
{
    sqlite3_stmt *st = rh_aw_prep(w, "INSERT INTO cpu_stack_stats VALUES(?,?)");
    sqlite3_stmt *th = rh_aw_prep(w, "INSERT INTO cpu_thread_stats VALUES(?,?)");
    int rc = st && th ? 0 : -1;
    for (size_t i = 0; i < a->ncpu_st && !rc; i++) {
        if (!a->cpu_st[i])
            continue;
        int64_t v[2] = {(int64_t)a->r->stacks[i].id, a->cpu_st[i]};
        rc = rh_aw_ins(w, st, v, 2);
    }
    for (size_t i = 0; i < a->ncpu_th && !rc; i++) {
        if (!a->cpu_th[i])
            continue;
        int64_t v[2] = {(int64_t)i + 1, a->cpu_th[i]};
        rc = rh_aw_ins(w, th, v, 2);
    }
    sqlite3_finalize(st);
    sqlite3_finalize(th);
    return rc;
}

static int rh_aw_meta(struct rh_aw *w, struct rh_agg *a)
{
    sqlite3_stmt *st = rh_aw_prep(w, "INSERT OR REPLACE INTO meta(key, value) VALUES(?,?)");
    if (!st)
        return -1;
    const struct {
        const char *k;
        int64_t v;
    } kv[] = {
        /* events that went back in time (a damaged profile): the rows and
         * the merge disagree on order, so commands read rows */
        {"aggregates", a->r->out_of_order ? 0 : 1},
        {"peak_bytes", a->peak},
        {"peak_blocks", rh_agg_blocks(a, a->peak_blocks)},
        {"peak_time_ns", a->peak_t},
        {"timeline_columns", a->tl_ok ? RH_AGG_COLUMNS : 0},
        {"leak_buckets", RH_AGG_LEAK_BUCKETS},
        {"ids_time_ordered", a->time_ordered},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof kv / sizeof kv[0] && !rc; i++) {
        sqlite3_bind_text(st, 1, kv[i].k, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, kv[i].v);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : rh_aw_fail(w, "meta");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

int rh_agg_write(struct rh_agg *a, sqlite3 *db, char *err, size_t errlen)
{
    struct rh_aw w = {db, err, errlen};
    if (a->oom) {
        snprintf(err, errlen, "aggregates: out of memory");
        return -1;
    }
    return rh_aw_rows(&w, a) || (a->tl_ok && rh_aw_timeline_stacks(&w, a)) || rh_aw_cpu(&w, a) ||
                   rh_aw_meta(&w, a) || rh_grp_write(a, db, err, errlen)
               ? -1
               : 0;
}
