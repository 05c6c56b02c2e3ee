/* rh_query_cpu.c: the CPU samples of a profile, as every rheaper
 * command reads them.
 *
 * rh_cpu_scope() builds TEMP TABLE cpustat(bt, samples): the samples per
 * stack that pass the shared filters, beside sstat (the heap's), so that the
 * call sites (TEMP TABLE cs, frame 0 of a CPU stack unless --skip-function
 * moves it), `top cpu`, `flamegraph --cpu`, the summary's CPU line and the
 * report's CPU section all count the same samples. The filters mean what they
 * mean for the heap where they apply to a sample: --from/--to its time,
 * --thread the thread it interrupted, --function/--file/--not-function/
 * --not-file some frame of its stack. The filters that select blocks (sizes,
 * lifetimes, kinds, --temporary-ms) do not apply to samples: they leave the
 * CPU scope whole, and `top cpu` says so in one line. Without filters
 * cpustat is a copy of the converter's cpu_stack_stats (no pass over
 * cpu_samples). A profile without CPU samples (or converted before CPU sampling existed)
 * gives an empty cpustat.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rh_query.h"

int64_t rh_cpu_hz(sqlite3 *db)
{
    return rh_meta_int(db, "cpu_hz", 0);
}

int64_t rh_cpu_dropped(sqlite3 *db)
{
    return rh_meta_int(db, "cpu_samples_dropped", 0);
}

int rh_cpu_filter_blocks_only(const struct rh_filter *f)
{
    return f->min_size >= 0 || f->max_size >= 0 || f->lifetime || f->nkind || f->nnot_kind ||
           f->temporary_ms >= 0;
}

int rh_cpu_scope(sqlite3 *db, const struct rh_filter *f)
{
    if (sqlite3_exec(db,
                     "DROP TABLE IF EXISTS temp.cpustat;"
                     "CREATE TEMP TABLE cpustat(bt INTEGER PRIMARY KEY, samples INTEGER);",
                     NULL, NULL, NULL) != SQLITE_OK)
        return rh_sql_fail(db, "cpu");
    if (!rh_table_exists(db, "cpu_samples"))
        return 0;
    int stacks = f->nfunc || f->nnot_func || f->nfile || f->nnot_file;
    int rows = stacks || f->from >= 0 || f->to >= 0 || f->thread;
    if (!rows)
        return sqlite3_exec(db, "INSERT INTO cpustat SELECT stack_id, samples FROM cpu_stack_stats",
                            NULL, NULL, NULL) == SQLITE_OK
                   ? 0
                   : rh_sql_fail(db, "cpu");
    /* ?1 from (ns), ?2 to (ns), ?3 thread; the stack conditions bind from ?4 */
    char sql[4096];
    size_t n = (size_t)snprintf(sql, sizeof sql,
                                "INSERT INTO cpustat SELECT stack_id, sum(periods) FROM cpu_samples"
                                " WHERE (?1 IS NULL OR time >= ?1) AND (?2 IS NULL OR time <= ?2)"
                                " AND (?3 IS NULL OR thread IN (SELECT id FROM threads WHERE"
                                " CAST(id AS TEXT) = ?3 OR CAST(tid AS TEXT) = ?3 OR name = ?3))");
    const struct {
        const char *cond;
        const char *const *re;
        int n;
    } res[] = {
        {" AND stack_id IN (SELECT id FROM backtraces WHERE sym REGEXP ?%d)", f->func_re, f->nfunc},
        {" AND stack_id NOT IN (SELECT id FROM backtraces WHERE sym REGEXP ?%d)", f->not_func_re,
         f->nnot_func},
        {" AND stack_id IN (SELECT id FROM backtraces WHERE file REGEXP ?%d)", f->file_re, f->nfile},
        {" AND stack_id NOT IN (SELECT id FROM backtraces WHERE file REGEXP ?%d)", f->not_file_re,
         f->nnot_file},
    };
    const char *bind[40];
    int nb = 0;
    for (size_t r = 0; r < sizeof res / sizeof res[0]; r++)
        for (int k = 0; k < res[r].n && nb < 40 && n < sizeof sql - 128; k++) {
            n += (size_t)snprintf(sql + n, sizeof sql - n, res[r].cond, 4 + nb);
            bind[nb++] = res[r].re[k];
        }
    snprintf(sql + n, sizeof sql - n, " GROUP BY stack_id");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return rh_sql_fail(db, "cpu");
    int64_t from, to;
    rh_filter_window(db, f, &from, &to);
    if (from >= 0)
        sqlite3_bind_int64(st, 1, from);
    if (to >= 0)
        sqlite3_bind_int64(st, 2, to);
    if (f->thread)
        sqlite3_bind_text(st, 3, f->thread, -1, SQLITE_STATIC);
    for (int k = 0; k < nb; k++)
        sqlite3_bind_text(st, 4 + k, bind[k], -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : rh_sql_fail(db, "cpu");
}

int64_t rh_cpu_total(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int64_t v = 0;
    if (sqlite3_prepare_v2(db, "SELECT coalesce(sum(samples), 0) FROM temp.cpustat", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

sqlite3_stmt *rh_cpu_top_stmt(sqlite3 *db, int n, const char *stack_col)
{
    return rh_cpu_top_stmt_min(db, n, 0, stack_col);
}

sqlite3_stmt *rh_cpu_top_stmt_min(sqlite3 *db, int n, double min_percent, const char *stack_col)
{
    char sql[4096];
    /* percent of the samples in scope; seconds = samples / cpu_hz */
    snprintf(sql, sizeof sql,
             "SELECT function, location, samples, round(100.0 * samples / ?2, 2) AS percent,"
             " CASE WHEN ?3 > 0 THEN round(1.0 * samples / ?3, 3) END AS seconds%s%s FROM"
             " (SELECT min(s.function) AS function, min(s.location) AS location,"
             " sum(c.samples) AS samples, min(c.bt) AS bt"
             " FROM temp.cpustat c JOIN site s ON s.bt = c.bt GROUP BY s.site)"
             " WHERE samples > 0 AND 100.0 * samples >= ?4 * ?2"
             " ORDER BY samples DESC, function, location LIMIT ?1",
             stack_col ? ", " : "", stack_col ? stack_col : "");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        rh_sql_fail(db, "top cpu");
        return NULL;
    }
    int64_t total = rh_cpu_total(db);
    sqlite3_bind_int64(st, 1, n);
    sqlite3_bind_int64(st, 2, total > 0 ? total : 1);
    sqlite3_bind_int64(st, 3, rh_cpu_hz(db));
    sqlite3_bind_double(st, 4, min_percent);
    return st;
}

int rh_cpu_functions(sqlite3 *db, const char *func_re, struct rh_cpu_fn **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    if (!rh_table_exists(db, "cpu_stack_stats"))
        return 0;
    sqlite3_stmt *st =
        rh_sql_prepare(db, "SELECT coalesce(b.sym, '?\?'), min(b.file), sum(c.samples)"
                           " FROM cpu_stack_stats c LEFT JOIN backtraces b ON b.id = c.stack_id"
                           " AND b.frame_no = 0 WHERE ?1 IS NULL OR c.stack_id IN"
                           " (SELECT id FROM backtraces WHERE sym REGEXP ?1) GROUP BY 1");
    if (!st)
        return -1;
    sqlite3_bind_text(st, 1, func_re, -1, SQLITE_STATIC);
    size_t cap = 0;
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            size_t c2 = cap ? cap * 2 : 32;
            struct rh_cpu_fn *a = realloc(*rows, c2 * sizeof *a);
            if (!a)
                break;
            *rows = a;
            cap = c2;
        }
        struct rh_cpu_fn *w = &(*rows)[(*n)++];
        const char *fn = (const char *)sqlite3_column_text(st, 0);
        const char *file = (const char *)sqlite3_column_text(st, 1);
        w->function = strdup(fn ? fn : "??");
        w->file = file ? strdup(file) : NULL;
        w->samples = sqlite3_column_int64(st, 2);
        if (!w->function || (file && !w->file))
            break;
    }
    sqlite3_finalize(st);
    if (r != SQLITE_DONE) {
        if (r == SQLITE_ROW)
            fprintf(stderr, "rheaper: CPU samples: out of memory\n");
        else
            rh_sql_fail(db, "CPU samples");
        rh_cpu_functions_free(*rows, *n);
        *rows = NULL;
        *n = 0;
        return -1;
    }
    return 0;
}

void rh_cpu_functions_free(struct rh_cpu_fn *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].function);
        free(rows[i].file);
    }
    free(rows);
}

int rh_cpu_sites_get(sqlite3 *db, int n, double min_percent, struct rh_cpu_site **rows,
                     size_t *nrows)
{
    *rows = NULL;
    *nrows = 0;
    /* the rows of the one `top cpu` statement, with each site's lowest stack */
    sqlite3_stmt *st = rh_cpu_top_stmt_min(db, n, min_percent, "bt");
    if (!st)
        return -1;
    size_t cap = 0;
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        if (*nrows == cap) {
            size_t c2 = cap ? cap * 2 : 32;
            struct rh_cpu_site *a = realloc(*rows, c2 * sizeof *a);
            if (!a)
                break;
            *rows = a;
            cap = c2;
        }
        struct rh_cpu_site *w = &(*rows)[(*nrows)++];
        const char *f = (const char *)sqlite3_column_text(st, 0);
        const char *l = (const char *)sqlite3_column_text(st, 1);
        w->function = strdup(f ? f : "");
        w->location = strdup(l ? l : "");
        w->samples = sqlite3_column_int64(st, 2);
        w->percent = sqlite3_column_double(st, 3);
        w->has_seconds = sqlite3_column_type(st, 4) != SQLITE_NULL;
        w->seconds = sqlite3_column_double(st, 4);
        w->bt = sqlite3_column_int64(st, 5);
        if (!w->function || !w->location)
            break;
    }
    sqlite3_finalize(st);
    if (r != SQLITE_DONE) {
        if (r == SQLITE_ROW)
            fprintf(stderr, "rheaper: top cpu: out of memory\n");
        else
            rh_sql_fail(db, "top cpu");
        rh_cpu_sites_free(*rows, *nrows);
        *rows = NULL;
        *nrows = 0;
        return -1;
    }
    return 0;
}

void rh_cpu_sites_free(struct rh_cpu_site *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].function);
        free(rows[i].location);
    }
    free(rows);
}
