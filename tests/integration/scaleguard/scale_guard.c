/* scale_guard.c: the precomputed answers of the query library read no
 * allocation row and equal the row path's (tests/integration/scaleguard).
 *
 *   scale_guard PROFILE.db
 *
 * For each filter below (URL parameters, as the web UI sends them) it builds
 * the scope (rh_qfilter_apply) and asks what a page asks: the call-site
 * table, the top site's detail and the heap over time, then the same scope
 * again. An authorizer counts every statement that reads alloc_rows (the
 * allocations view reads it too). Checked:
 *   - unfiltered, building the scope reads no row;
 *   - the site's detail and the heap over time read no row (the
 *     converter's stack_hist and stack_threads, or the pass's shist, sthr
 *     and sctl), and the same filters a second time read none (the kept
 *     scope);
 *   - with those tables dropped, the same questions read rows (the check is
 *     not vacuous) and give byte for byte the same answer;
 *   - the site's size histogram counts as many rows as plain SQL over msel.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../harness.h"
#include "rh_query.h"

static long g_reads; /* statements prepared that read alloc_rows */

static int rh_auth(void *ctx, int action, const char *a, const char *b, const char *dbn,
                   const char *trigger)
{
    (void)ctx;
    (void)b;
    (void)dbn;
    (void)trigger;
    if (action == SQLITE_READ && a && !strcmp(a, "alloc_rows"))
        g_reads++;
    return SQLITE_OK;
}

/* Builds the scope of the URL query string qs ("a=1&b=2"). Returns 0 or -1. */
static int apply(sqlite3 *db, const char *qs)
{
    static char buf[1024];
    struct rh_qfilter q;
    rh_qfilter_init(&q);
    /* the heap over time as the server's /timeline asks for it (its event
     * columns), and a site's line */
    q.f.chart = RH_CHART_EVENTS;
    snprintf(buf, sizeof buf, "%s", qs);
    for (char *save = NULL, *kv = strtok_r(buf, "&", &save); kv; kv = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            return -1;
        *eq = 0;
        char err[256];
        if (rh_qfilter_param(&q, kv, eq + 1, err, sizeof err) != 1) {
            fprintf(stderr, "scale_guard: %s: %s\n", kv, err);
            return -1;
        }
    }
    return rh_qfilter_apply(db, &q);
}

/* The top site by bytes of sitetab into fn and loc. Returns 0 or -1. */
static int top_site(sqlite3 *db, char *fn, char *loc, size_t n)
{
    sqlite3_stmt *st = rh_sql_prepare(db, "SELECT function, location FROM temp.sitetab"
                                          " ORDER BY bytes DESC, site LIMIT 1");
    int rc = -1;
    if (st && sqlite3_step(st) == SQLITE_ROW) {
        snprintf(fn, n, "%s", (const char *)sqlite3_column_text(st, 0));
        snprintf(loc, n, "%s", (const char *)sqlite3_column_text(st, 1));
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

/* The site's detail as a malloc'd string (NULL on failure). */
static char *detail(sqlite3 *db, int64_t dur, const char *fn, const char *loc)
{
    char *s = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&s, &len);
    if (!o)
        return NULL;
    int rc = rh_site_table(db, dur) || rh_site_detail_json(db, fn, loc, 50, o);
    fclose(o);
    if (rc) {
        free(s);
        return NULL;
    }
    return s;
}

/* The sum of the "count" members of the detail's "sizes" list. */
static long long sizes_count(const char *d)
{
    const char *p = strstr(d, ",\"sizes\":["), *end = p ? strchr(p, ']') : NULL;
    long long n = 0;
    while (p && end && (p = strstr(p, "\"count\":")) && p < end) {
        p += 8;
        n += strtoll(p, NULL, 10);
    }
    return n;
}

/* 1 when the two timelines are equal in every column. */
static int same_timeline(const struct rh_timeline *a, const struct rh_timeline *b)
{
    if (a->n != b->n || a->n <= 0)
        return 0;
    for (int c = 0; c < a->n; c++)
        if (a->xs[c] != b->xs[c] || a->max_bytes[c] != b->max_bytes[c] ||
            a->end_bytes[c] != b->end_bytes[c] ||
            (a->end_count && b->end_count && a->end_count[c] != b->end_count[c]))
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: scale_guard PROFILE.db\n");
        return 2;
    }
    sqlite3 *db = rh_query_open(argv[1]);
    if (!db)
        return 2;
    int64_t dur = rh_meta_int(db, "duration_ns", 0);
    sqlite3_set_authorizer(db, rh_auth, NULL);
    static const char *const filters[] = {
        "",
        "function_regex=^step_3$",
        "negative_function_regex=step_3",
        "source_regex=wl_scale",
        "from=40%&to=60%",
        "size_min=100&size_max=2000",
        "lifetime=only_leaked",
        "lifetime=only_heaptrack_temporary",
        "thread=2",
        "function_regex=^step_3$&from=40%&to=60%",
    };
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++) {
        const char *f = filters[i];
        char fn[512], loc[512];
        g_reads = 0;
        CHECK(apply(db, f) == 0);
        long scope_reads = g_reads;
        if (!*f)
            CHECK_EQ(scope_reads, 0);
        /* what the page asks, from the precomputed tables */
        g_reads = 0;
        CHECK(rh_site_table(db, dur) == 0);
        CHECK(top_site(db, fn, loc, sizeof fn) == 0);
        char *pre = detail(db, dur, fn, loc);
        struct rh_timeline t1, t2;
        CHECK(rh_timeline_compute(db, dur, RH_SCOPE_TL_COLS, &t1) == 0);
        CHECK(pre != NULL);
        CHECK_EQ(g_reads, 0);
        /* the same filters again: the kept scope */
        g_reads = 0;
        CHECK(apply(db, f) == 0);
        CHECK_EQ(g_reads, 0);
        /* plain SQL: the rows of the site in scope */
        sqlite3_stmt *st =
            rh_sql_prepare(db, "SELECT count(*) FROM msel a JOIN temp.site s ON s.bt = a.bt"
                               " WHERE s.function = ?1 AND s.location = ?2");
        long long rows = -1;
        if (st) {
            sqlite3_bind_text(st, 1, fn, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 2, loc, -1, SQLITE_STATIC);
            if (sqlite3_step(st) == SQLITE_ROW)
                rows = sqlite3_column_int64(st, 0);
        }
        sqlite3_finalize(st);
        CHECK(pre && rows > 0 && sizes_count(pre) == rows);
        /* the row path: the same questions without the precomputed tables */
        CHECK(rh_temp_drop(db, "shist") == 0 && rh_temp_drop(db, "sthr") == 0 &&
              rh_temp_drop(db, "sctl") == 0 && rh_temp_drop(db, "scopekey") == 0);
        g_reads = 0;
        char *rowp = detail(db, dur, fn, loc);
        CHECK(rh_timeline_compute(db, dur, RH_SCOPE_TL_COLS, &t2) == 0);
        CHECK(g_reads > 0);
        CHECK(pre && rowp && !strcmp(pre, rowp));
        CHECK(same_timeline(&t1, &t2));
        printf("%-45s site %s %s: %lld rows; scope reads %ld, precomputed 0, row path %ld, %s\n",
               *f ? f : "(no filter)", fn, loc, rows, scope_reads, g_reads,
               pre && rowp && !strcmp(pre, rowp) ? "same answer" : "DIFFERENT");
        free(pre);
        free(rowp);
        rh_timeline_free(&t1);
        rh_timeline_free(&t2);
    }
    sqlite3_close(db);
    return rh_test_summary();
}
