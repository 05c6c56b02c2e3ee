/* rh_query_memory.c: the process's memory beside the heap, and churn.
 *
 * One place answers the memory questions for every reader (summary, churn,
 * the timeline's SVG, the report, the server, the live view, the pprof
 * export):
 *
 * - rh_memory_figures: from the memory table (one row per memory sample the
 *   runtime took, with the live heap beside it, rh_memory.c), the peak RSS and
 *   when, the heap then and the share of RSS it explains, the allocator's
 *   bytes not in use (its arena minus what it hands out) at that peak and at
 *   the end (the recording's final sample, else its last);
 * - rh_churn_stmt: call sites ranked by bytes allocated and freed per second
 *   of the recording, with their short-lived blocks (the scope's `temporary`
 *   figure: heaptrack's definition, or a lifetime under --temporary-ms),
 *   over the scope's TEMP tables sstat and site.
 *
 * A profile recorded with RHEAPER_RSS_MS=0, or by an older runtime, has no
 * memory rows: the figures say so (samples 0) and the readers leave their
 * memory lines out.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rh_query.h"

#define RH_MEM_COLS "time, rss, rss_anon, rss_file, heap, alloc_system, alloc_in_use, alloc_free"

static void rh_mem_point(sqlite3_stmt *st, struct rh_mem_point *p)
{
    p->t = sqlite3_column_int64(st, 0);
    p->rss = sqlite3_column_int64(st, 1);
    p->anon = sqlite3_column_int64(st, 2);
    p->file = sqlite3_column_int64(st, 3);
    p->heap = sqlite3_column_int64(st, 4);
    p->has_alloc = sqlite3_column_type(st, 5) != SQLITE_NULL;
    p->a_system = sqlite3_column_int64(st, 5);
    p->a_in_use = sqlite3_column_int64(st, 6);
    p->a_free = sqlite3_column_int64(st, 7);
    p->share = p->rss > 0 ? (double)p->heap / (double)p->rss : 0.0;
    p->unexplained = p->rss > p->heap ? p->rss - p->heap : 0;
}

/* The allocator figures of the last row at or before t that has them (they
 * are read less often than RSS on a heap with very many free chunks). */
static void rh_mem_alloc_at(sqlite3 *db, struct rh_mem_point *p)
{
    if (p->has_alloc)
        return;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT alloc_system, alloc_in_use, alloc_free FROM memory"
                           " WHERE time <= ?1 AND alloc_system IS NOT NULL"
                           " ORDER BY time DESC LIMIT 1",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, p->t);
        if (sqlite3_step(st) == SQLITE_ROW) {
            p->has_alloc = 1;
            p->a_system = sqlite3_column_int64(st, 0);
            p->a_in_use = sqlite3_column_int64(st, 1);
            p->a_free = sqlite3_column_int64(st, 2);
        }
    }
    sqlite3_finalize(st);
}

int rh_memory_figures(sqlite3 *db, struct rh_memfig *f)
{
    memset(f, 0, sizeof f[0]);
    snprintf(f->allocator, sizeof f->allocator, "none");
    if (!rh_table_exists(db, "memory"))
        return 0;
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM memory WHERE rss IS NOT NULL", -1, &st,
                           NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW)
        goto fail;
    f->samples = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    st = NULL;
    if (!f->samples)
        return 0;
    /* the RSS peak (its first moment), and the last sample (the final one) */
    static const char *const at[2] = {
        "SELECT " RH_MEM_COLS " FROM memory WHERE rss IS NOT NULL ORDER BY rss DESC, time LIMIT 1",
        "SELECT " RH_MEM_COLS " FROM memory WHERE rss IS NOT NULL"
        " ORDER BY final DESC, time DESC LIMIT 1"};
    struct rh_mem_point *pt[2] = {&f->peak, &f->end};
    for (int i = 0; i < 2; i++) {
        if (sqlite3_prepare_v2(db, at[i], -1, &st, NULL) != SQLITE_OK ||
            sqlite3_step(st) != SQLITE_ROW)
            goto fail;
        rh_mem_point(st, pt[i]);
        sqlite3_finalize(st);
        st = NULL;
    }
    rh_mem_alloc_at(db, &f->peak);
    rh_mem_alloc_at(db, &f->end);
    rh_meta_text(db, "memory_allocator", f->allocator, sizeof f->allocator);
    f->interval_ms = rh_meta_int(db, "memory_interval_ms", f->interval_ms);
    rc = 0;
fail:
    if (rc)
        fprintf(stderr, "rheaper: memory table: SQLite error (%s)\n", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return rc;
}

sqlite3_stmt *rh_churn_stmt(sqlite3 *db, int n, int64_t duration_ns, const char *stack_col)
{
    char sql[4096];
    snprintf(sql, sizeof sql,
             "SELECT function, location,"
             " CAST(round(freed_bytes / ?3) AS INTEGER) AS churn_bytes_per_s,"
             " round(freed_blocks / ?3, 1) AS churn_blocks_per_s, freed_bytes, freed_blocks,"
             " temporary AS short_lived, count%s%s FROM"
             " (SELECT min(s.function) AS function, min(s.location) AS location,"
             " sum(a.freed_bytes) AS freed_bytes, sum(a.freed_blocks) AS freed_blocks,"
             " sum(a.temporary) AS temporary, sum(a.count) AS count, min(a.bt) AS bt"
             " FROM temp.sstat a JOIN site s ON s.bt = a.bt GROUP BY s.site)"
             " WHERE freed_blocks > 0"
             " ORDER BY freed_bytes DESC, temporary DESC, function, location LIMIT ?2",
             stack_col ? ", " : "", stack_col ? stack_col : "");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "rheaper: churn: SQLite error (%s)\n", sqlite3_errmsg(db));
        return NULL;
    }
    sqlite3_bind_int64(st, 2, n);
    sqlite3_bind_double(st, 3, duration_ns > 0 ? duration_ns / 1e9 : 1.0);
    return st;
}

const char *rh_memory_line(const struct rh_memfig *f, const struct rh_mem_point *p, char *buf,
                           size_t n)
{
    char r[32], h[32], u[32];
    snprintf(buf, n, "RSS %s, live heap %s: the heap explains %.1f%%, %s not explained",
             rh_human_bytes(p->rss, r, sizeof r), rh_human_bytes(p->heap, h, sizeof h),
             100.0 * p->share, rh_human_bytes(p->unexplained, u, sizeof u));
    (void)f;
    return buf;
}

int rh_memory_series(sqlite3 *db, const int64_t *xs, int n, int64_t *rss)
{
    for (int c = 0; c < n; c++)
        rss[c] = -1;
    if (!rh_table_exists(db, "memory") || n <= 0)
        return 0;
    /* one ordered scan: each sample counts for the first column whose end
     * time is at or after it (column 0 takes everything up to xs[0]) */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT time, rss FROM memory WHERE rss IS NOT NULL AND time <= ?1"
                           " ORDER BY time",
                           -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "rheaper: memory table: SQLite error (%s)\n", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_int64(st, 1, xs[n - 1]);
    int c = 0, filled = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t t = sqlite3_column_int64(st, 0), v = sqlite3_column_int64(st, 1);
        while (c < n - 1 && t > xs[c])
            c++;
        if (rss[c] < 0)
            filled++;
        if (v > rss[c])
            rss[c] = v;
    }
    sqlite3_finalize(st);
    return filled;
}

int rh_memory_columns(sqlite3 *db, int64_t span, int ncols, int64_t *rss)
{
    int64_t xs[ncols + 1];
    for (int c = 0; c <= ncols; c++)
        xs[c] = (int64_t)((__int128)(span > 0 ? span : 1) * c / ncols);
    return rh_memory_series(db, xs, ncols + 1, rss);
}

static void rh_mem_json_point(FILE *o, const char *name, const struct rh_mem_point *p)
{
    /* heap_share: the ratio rounded to 6 decimals, printed as a person writes
     * it (0.74, not 0.740000), as every real of the readers' JSON */
    char share[40];
    rh_fmt_real(round(p->share * 1e6) / 1e6, 1, share, sizeof share);
    fprintf(o,
            "\"%s\":{\"time_ns\":%lld,\"rss\":%lld,\"rss_anon\":%lld,\"rss_file\":%lld,"
            "\"heap\":%lld,\"heap_share\":%s,\"unexplained\":%lld",
            name, (long long)p->t, (long long)p->rss, (long long)p->anon, (long long)p->file,
            (long long)p->heap, share, (long long)p->unexplained);
    if (p->has_alloc)
        fprintf(o, ",\"alloc_system\":%lld,\"alloc_in_use\":%lld,\"alloc_free\":%lld",
                (long long)p->a_system, (long long)p->a_in_use, (long long)p->a_free);
    fputc('}', o);
}

void rh_memory_json(FILE *o, const struct rh_memfig *m)
{
    fprintf(o, "{\"samples\":%lld,\"interval_ms\":%lld,\"allocator\":", (long long)m->samples,
            (long long)m->interval_ms);
    rh_json_string(o, m->allocator); /* meta text: the profile's, not ours */
    if (m->samples) {
        fputc(',', o);
        rh_mem_json_point(o, "peak", &m->peak);
        fputc(',', o);
        rh_mem_json_point(o, "end", &m->end);
    }
    fputc('}', o);
}
