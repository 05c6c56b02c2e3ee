/* rh_live_db.c: a saved profile in the terminal UI (`rheaper view`).
 *
 * The model is filled through the rheaper command's own scope
 * (rh_filter_apply without row filters: the converter's stack_stats and
 * call-site frames, rh_make_sites' grouping by call site, thread_stats and
 * the stored heap timeline), so every figure equals what `rheaper top`,
 * `summary` and `timeline` print, and nothing scans the allocations. The
 * sites are the query library's rows (rh_sites_get), the CPU samples per
 * function its rh_cpu_functions: this file only puts them in the model. A
 * site's live bytes are the bytes still live at the end of the run (its
 * leaked bytes); its trend is its live bytes over the whole run, from
 * timeline_stacks, in RH_LV_TREND points. CPU samples come from the tables
 * cpu_stack_stats and cpu_thread_stats when the profile has them (per
 * function of frame 0: where the samples landed).
 */
#include <stdlib.h>
#include <string.h>

#include "rh_query.h"
#include "rh_schema.h"
#include "rh_util.h"
#include "rh_live.h"

/* Sites and their trends. A site's number (rh_make_sites) need not match its
 * place in the model: stacks with CPU samples only, or none in scope, have a
 * number but no row here, so the numbers are mapped to model indexes.
 * Returns 0 or -1 (printed). */
static int rh_ldb_sites(sqlite3 *db, struct rh_lv_model *m, int64_t span)
{
    sqlite3_stmt *st = NULL;
    struct rh_site_query q = {.by = RH_SITES_SITE, .limit = -1};
    struct rh_site_row *rows = NULL;
    size_t nrows = 0;
    if (rh_sites_get(db, &q, &rows, &nrows))
        return -1;
    int64_t maxsite = 0;
    int64_t *num = NULL; /* num[i]: the site number of model site i */
    size_t capnum = 0;
    for (size_t r = 0; r < nrows; r++) {
        const struct rh_site_row *w = &rows[r];
        char label[1200];
        snprintf(label, sizeof label, "%s %s", w->function, w->location);
        struct rh_lv_site *s = rh_lv_site_add(m, label, w->function);
        if (!s || rh_grow(&num, &capnum, m->nsites, sizeof *num)) {
            rh_sites_free(rows, nrows);
            free(num);
            fprintf(stderr, "rheaper: view: out of memory\n");
            return -1;
        }
        num[m->nsites - 1] = maxsite = w->site;
        s->alloc_blocks = w->count;
        s->alloc_bytes = w->bytes;
        s->freed_blocks = w->freed_blocks;
        s->freed_bytes = w->freed_bytes;
        s->live_blocks = w->leaked_blocks;
        s->live_bytes = w->leaked_bytes;
        s->peak_bytes = w->peak_bytes;
    }
    rh_sites_free(rows, nrows);
    if (!m->nsites || span <= 0 || maxsite < 1 || maxsite > 100000000) {
        free(num);
        return 0; /* no trends without sites or a timeline */
    }
    /* idx[site number]: model index + 1, 0 for a site not in the model */
    int32_t *idx = calloc((size_t)maxsite + 1, sizeof *idx);
    if (!idx) {
        free(num);
        fprintf(stderr, "rheaper: view: out of memory\n");
        return -1;
    }
    for (size_t i = 0; i < m->nsites; i++)
        idx[num[i]] = (int32_t)i + 1;
    free(num);

    /* trends: per column, each stack's change of live bytes (sparse), summed
     * per site; point k holds the value at the end of its columns */
    /* stacks inherited from a fork's parent (ids from RH_INHERIT_STACK_BASE)
     * follow the profile's own in the arrays (rh_stack_slot) */
    int64_t maxlow = -1, maxhigh = -1, maxbt;
    if (sqlite3_prepare_v2(db,
                           "SELECT coalesce(max(CASE WHEN bt < ?1 THEN bt END), -1),"
                           " coalesce(max(CASE WHEN bt >= ?1 THEN bt - ?1 END), -1) FROM temp.site",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, (int64_t)RH_INHERIT_STACK_BASE);
        if (sqlite3_step(st) == SQLITE_ROW) {
            maxlow = sqlite3_column_int64(st, 0);
            maxhigh = sqlite3_column_int64(st, 1);
        }
    }
    sqlite3_finalize(st);
    maxbt = maxlow + 1 + maxhigh; /* the largest slot */
    if (maxbt < 0 || maxbt > 100000000) {
        free(idx);
        return 0;
    }
    int32_t *site_of = calloc((size_t)maxbt + 1, sizeof *site_of);
    int64_t *cur = calloc((size_t)maxbt + 1, sizeof *cur);
    int64_t *sum = calloc(m->nsites, sizeof *sum);
    sqlite3_stmt *tp = NULL;
    int rc = -1;
    if (!site_of || !cur || !sum) {
        fprintf(stderr, "rheaper: view: out of memory\n");
        goto out;
    }
    if (sqlite3_prepare_v2(db, "SELECT bt, site FROM temp.site", -1, &st, NULL) != SQLITE_OK)
        goto sqlfail;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t bt = rh_stack_slot(sqlite3_column_int64(st, 0), maxlow + 1);
        int64_t site = sqlite3_column_int64(st, 1);
        if (bt >= 0 && bt <= maxbt && site >= 1 && site <= maxsite)
            site_of[bt] = idx[site]; /* model index + 1, or 0 */
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT col, bt, at_end FROM timeline_stacks ORDER BY col", -1, &tp,
                           NULL) != SQLITE_OK)
        goto sqlfail;
    int prc = sqlite3_step(tp);
    for (int c = 1; c <= RH_AGG_COLUMNS; c++) {
        while (prc == SQLITE_ROW && sqlite3_column_int(tp, 0) <= c) {
            int64_t bt = rh_stack_slot(sqlite3_column_int64(tp, 1), maxlow + 1);
            int64_t ae = sqlite3_column_int64(tp, 2);
            if (bt >= 0 && bt <= maxbt && site_of[bt] >= 1 && (size_t)site_of[bt] <= m->nsites) {
                sum[site_of[bt] - 1] += ae - cur[bt];
                cur[bt] = ae;
            }
            prc = sqlite3_step(tp);
        }
        int k = (int)((int64_t)(c - 1) * RH_LV_TREND / RH_AGG_COLUMNS);
        for (size_t i = 0; i < m->nsites; i++) {
            m->sites[i].trend[k] = sum[i];
            m->sites[i].ntrend = k + 1;
        }
    }
    rc = 0;
    goto out;
sqlfail:
    rc = rh_sql_fail(db, "view");
out:
    sqlite3_finalize(st);
    sqlite3_finalize(tp);
    free(site_of);
    free(cur);
    free(sum);
    free(idx);
    return rc;
}

/* CPU samples per function of frame 0 (of the stacks in which some frame
 * matches func_re, when given), and per thread, when recorded. */
static int rh_ldb_cpu(sqlite3 *db, struct rh_lv_model *m, const char *func_re)
{
    if (!rh_table_exists(db, "cpu_stack_stats"))
        return 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT coalesce(sum(samples), 0) FROM cpu_stack_stats", -1, &st,
                           NULL) != SQLITE_OK)
        return rh_sql_fail(db, "view: CPU samples");
    if (sqlite3_step(st) == SQLITE_ROW)
        m->cpu_total = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    struct rh_cpu_fn *fns = NULL;
    size_t nfn = 0;
    if (rh_cpu_functions(db, func_re, &fns, &nfn))
        return -1;
    for (size_t i = 0; i < nfn; i++) {
        const char *fn = fns[i].function, *file = fns[i].file;
        const char *base = file ? strrchr(file, '/') : NULL;
        char label[1200];
        if (file)
            snprintf(label, sizeof label, "%s %s", fn, base ? base + 1 : file);
        else
            snprintf(label, sizeof label, "%s", fn);
        struct rh_lv_site *s = rh_lv_site_add(m, label, fn);
        if (!s) {
            rh_cpu_functions_free(fns, nfn);
            return -1;
        }
        s->cpu_samples = fns[i].samples;
    }
    rh_cpu_functions_free(fns, nfn);
    if (!rh_table_exists(db, "cpu_thread_stats"))
        return 0;
    if (sqlite3_prepare_v2(db, "SELECT thread, samples FROM cpu_thread_stats", -1, &st, NULL) !=
        SQLITE_OK)
        return rh_sql_fail(db, "view: CPU samples");
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        for (size_t i = 0; i < m->nthreads; i++)
            if (m->threads[i].id == (uint32_t)id)
                m->threads[i].cpu_samples = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return 0;
}

static int rh_ldb_threads(sqlite3 *db, struct rh_lv_model *m)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(
            db,
            "SELECT t.id, t.tid, t.name, coalesce(s.alloc_blocks, 0), coalesce(s.alloc_bytes, 0),"
            " coalesce(s.freed_blocks, 0), coalesce(s.freed_bytes, 0),"
            " coalesce(s.freed_by_others_blocks, 0), coalesce(s.freed_by_others_bytes, 0),"
            " coalesce(s.live_blocks, 0), coalesce(s.live_bytes, 0)"
            " FROM threads t LEFT JOIN thread_stats s ON s.thread = t.id ORDER BY t.id",
            -1, &st, NULL) != SQLITE_OK)
        return rh_sql_fail(db, "view: threads");
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (rh_grow(&m->threads, &m->capthreads, m->nthreads + 1, sizeof *m->threads)) {
            sqlite3_finalize(st);
            return -1;
        }
        struct rh_lv_thread *t = &m->threads[m->nthreads++];
        memset(t, 0, sizeof *t);
        t->id = (uint32_t)sqlite3_column_int64(st, 0);
        t->tid = (uint32_t)sqlite3_column_int64(st, 1);
        const char *name = (const char *)sqlite3_column_text(st, 2);
        snprintf(t->name, sizeof t->name, "%s", name ? name : "");
        t->alloc_blocks = sqlite3_column_int64(st, 3);
        t->alloc_bytes = sqlite3_column_int64(st, 4);
        t->freed_blocks = sqlite3_column_int64(st, 5);
        t->freed_bytes = sqlite3_column_int64(st, 6);
        t->others_blocks = sqlite3_column_int64(st, 7);
        t->others_bytes = sqlite3_column_int64(st, 8);
        t->live_blocks = sqlite3_column_int64(st, 9);
        t->live_bytes = sqlite3_column_int64(st, 10);
    }
    sqlite3_finalize(st);
    return 0;
}

/* The heap over the whole run: each stored column's highest live bytes. */
static int rh_ldb_timeline(sqlite3 *db, struct rh_lv_model *m)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT t, CASE WHEN active THEN max_bytes ELSE end_bytes END"
                           " FROM timeline ORDER BY col",
                           -1, &st, NULL) != SQLITE_OK)
        return rh_sql_fail(db, "view: timeline");
    int rc = 0;
    if (rh_lv_point_add(m, 0, 0))
        rc = -1;
    while (!rc && sqlite3_step(st) == SQLITE_ROW)
        rc = rh_lv_point_add(m, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
    sqlite3_finalize(st);
    if (rc)
        return rc;
    /* the process's RSS, when the recording sampled it (the memory table) */
    if (sqlite3_prepare_v2(db,
                           "SELECT time, rss, heap FROM memory WHERE rss IS NOT NULL"
                           " ORDER BY time",
                           -1, &st, NULL) != SQLITE_OK)
        return 0; /* a profile without the table */
    while (!rc && sqlite3_step(st) == SQLITE_ROW) {
        rc = rh_lv_rss_add(m, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
        m->rss_heap = sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    return rc;
}

int rh_lv_db_load(const char *path, struct rh_lv_model *m, const char *func_re)
{
    if (func_re && !*func_re)
        func_re = NULL;
    sqlite3 *db = rh_query_open(path);
    if (!db)
        return -1;
    struct rh_filter f;
    struct rh_summary s;
    rh_filter_init(&f);
    int rc = -1;
    if (rh_filter_apply(db, &f) || rh_summary_compute(db, &s) || rh_make_sites(db, 0))
        goto out;
    snprintf(m->source, sizeof m->source, "%s", path);
    snprintf(m->exe, sizeof m->exe, "%s", s.program);
    snprintf(m->title, sizeof m->title, "%s", s.title);
    m->pid = (int)s.pid;
    m->following = 0;
    m->ended = 1;
    snprintf(m->state, sizeof m->state, "%s",
             s.clean ? "saved profile" : "saved profile (cut short)");
    m->duration_ns = s.duration_ns;
    m->alloc_blocks = s.alloc_blocks;
    m->alloc_bytes = s.alloc_bytes;
    m->freed_blocks = s.freed_blocks;
    m->freed_bytes = s.freed_bytes;
    m->live_blocks = s.leaked_blocks;
    m->live_bytes = s.leaked_bytes;
    m->peak_bytes = s.peak_bytes;
    m->peak_t = s.peak_time_ns;
    m->events = (uint64_t)s.events;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT group_concat(sym, ', ') FROM (SELECT sym FROM temp.skipped"
                           " ORDER BY sym LIMIT 8)",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(m->skipped, sizeof m->skipped, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (rh_ldb_threads(db, m) || rh_ldb_timeline(db, m))
        goto out;
    if (func_re) {
        /* the call sites of the --function scope, built afresh on a new
         * connection as any command builds it; the rest stays whole */
        sqlite3_close(db);
        if (!(db = rh_query_open(path)))
            return -1;
        f.func_re[0] = func_re;
        f.nfunc = 1;
        if (rh_filter_apply(db, &f) || rh_make_sites(db, 0))
            goto out;
    }
    if (rh_ldb_sites(db, m, s.duration_ns) || rh_ldb_cpu(db, m, func_re))
        goto out;
    rc = 0;
out:
    sqlite3_close(db);
    return rc;
}
