/* stack_guard.c: a stack filter's scope reads no allocation row and gives the
 * row path's answers (tests/integration/stackguard).
 *
 *   stack_guard PROFILE.db
 *
 * For each stack filter below it builds the scope (rh_filter_apply) and asks
 * what `rheaper summary`, `top`, `peak` and `leaks` ask (the summary, the
 * call sites by bytes and at the peak, the leak score), counting with an
 * SQLite authorizer every statement that reads alloc_rows (the allocations
 * view reads it too). Then it asks the same with RHEAPER_ROWS=1, the
 * filtered pass over the rows. Checked:
 *   - for a filter whose stacks are one converter group's (a function, a
 *     file, a kind), the scope and the questions read no row;
 *   - the row path reads rows (the count is not vacuous);
 *   - both give the same summary (blocks, bytes, leaked, freed, temporary,
 *     peak and its time) and the same call sites with the same figures,
 *     in the same order, and the same leak scores;
 *   - the peak of xmalloc's group is the profile's peak without the decoy's
 *     megabyte (bench/wl_scale.c: every other block goes through xmalloc),
 *     and the filter ^step_3$ holds fewer bytes at its peak than that.
 * Then the same for a reader that draws the scope's heap over time by stack
 * (chart RH_CHART_SITES: the server's chart by site, a site's line, the
 * timeline and report commands): the chart by site's JSON and every column
 * of stl and stls must be the row path's, and a filter whose group kept its
 * timeline (group_peaks.timeline; at 1 M allocations ^step_3$ and
 * remember_session among them) must read no row for it; at least two do.
 * RHEAPER_STACK_SCOPE=0 in the environment turns the stack scope off: the
 * first check then fails, which shows it can.
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

/* What the four commands show of a scope, as one string (malloc'd). */
static char *answers(sqlite3 *db, struct rh_summary *s)
{
    char *out = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&out, &len);
    if (!o)
        return NULL;
    int bad = rh_summary_compute(db, s) || rh_make_sites(db, 0);
    fprintf(o, "summary %lld %lld %lld %lld %lld %lld %lld %lld %lld\n",
            (long long)s->alloc_blocks, (long long)s->alloc_bytes, (long long)s->freed_blocks,
            (long long)s->freed_bytes, (long long)s->leaked_blocks, (long long)s->leaked_bytes,
            (long long)s->temporary_blocks, (long long)s->peak_bytes, (long long)s->peak_time_ns);
    for (int by = 0; !bad && by < 2; by++) {
        struct rh_site_query q = {by ? RH_SITES_AT_PEAK : RH_SITES_BYTES, 20, 0, 0, 0};
        struct rh_site_row *rows = NULL;
        size_t n = 0;
        bad = rh_sites_get(db, &q, &rows, &n);
        for (size_t i = 0; !bad && i < n; i++)
            fprintf(o, "site %s %s %lld %lld %lld %lld %lld %lld %lld %lld\n", rows[i].function,
                    rows[i].location, (long long)rows[i].stacks, (long long)rows[i].count,
                    (long long)rows[i].bytes, (long long)rows[i].leaked_bytes,
                    (long long)rows[i].peak_blocks, (long long)rows[i].peak_bytes,
                    (long long)rows[i].first, (long long)rows[i].last);
        rh_sites_free(rows, n);
    }
    struct rh_leak_row *lk = NULL;
    size_t nl = 0;
    if (!bad)
        bad = rh_leak_sites(db, RH_LEAK_BUCKETS, s->duration_ns) ||
              rh_leaks_get(db, 20, 0, &lk, &nl);
    for (size_t i = 0; !bad && i < nl; i++)
        fprintf(o, "leak %s %s %.6f %d %lld %lld\n", lk[i].function, lk[i].location, lk[i].score,
                lk[i].coverage, (long long)lk[i].blocks, (long long)lk[i].bytes);
    rh_leaks_free(lk, nl);
    fclose(o);
    if (bad) {
        free(out);
        return NULL;
    }
    return out;
}

/* What a chart by stack shows of the scope: the chart by site (the server's
 * /timeline_sites), then every column of stl and the sums of stls by column,
 * as one string (malloc'd). */
static char *chart_answers(sqlite3 *db)
{
    char *out = NULL;
    size_t len = 0;
    FILE *o = open_memstream(&out, &len);
    if (!o)
        return NULL;
    int bad = rh_site_table(db, rh_meta_int(db, "duration_ns", 0)) ||
              rh_timeline_sites_json(db, 8, o);
    sqlite3_stmt *st = bad ? NULL
                           : rh_sql_prepare(db, "SELECT col, max_bytes, max_time, end_bytes, active"
                                                " FROM temp.stl ORDER BY col");
    while (st && sqlite3_step(st) == SQLITE_ROW)
        fprintf(o, "stl %lld %lld %lld %lld %lld\n", (long long)sqlite3_column_int64(st, 0),
                (long long)sqlite3_column_int64(st, 1), (long long)sqlite3_column_int64(st, 2),
                (long long)sqlite3_column_int64(st, 3), (long long)sqlite3_column_int64(st, 4));
    sqlite3_finalize(st);
    st = bad ? NULL
             : rh_sql_prepare(db, "SELECT col, count(*), sum(bt), sum(at_max), sum(at_end)"
                                  " FROM temp.stls GROUP BY col ORDER BY col");
    bad |= !st;
    while (st && sqlite3_step(st) == SQLITE_ROW)
        fprintf(o, "stls %lld %lld %lld %lld %lld\n", (long long)sqlite3_column_int64(st, 0),
                (long long)sqlite3_column_int64(st, 1), (long long)sqlite3_column_int64(st, 2),
                (long long)sqlite3_column_int64(st, 3), (long long)sqlite3_column_int64(st, 4));
    sqlite3_finalize(st);
    fclose(o);
    if (bad) {
        free(out);
        return NULL;
    }
    return out;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: stack_guard PROFILE.db\n");
        return 2;
    }
    sqlite3 *db = rh_query_open(argv[1]);
    if (!db)
        return 2;
    sqlite3_set_authorizer(db, rh_auth, NULL);
    /* the converter's groups: xmalloc's peak against the profile's */
    int64_t all = rh_meta_int(db, "peak_bytes", -1);
    int64_t xm = rh_sql_int(db, "SELECT peak_bytes FROM group_peaks WHERE type = 0 AND"
                                " name = 'xmalloc'", 0, -1);
    CHECK_EQ(xm, all - 1048576);
    static const struct {
        const char *opt[4];
    } filters[] = {
        {{"--function", "^step_3$"}},
        {{"--function", "step_3"}},
        {{"--function", "remember_session"}},
        {{"--function", "^xmalloc$"}},
        {{"--file", "wl_scale"}},
        {{"--kind", "malloc"}},
        {{"--function", "^nothing_matches$"}},
    };
    int64_t step3_peak = -1;
    int charts_kept = 0; /* filters whose chart came from a group's timeline */
    for (size_t i = 0; i < sizeof filters / sizeof filters[0]; i++) {
        char *args[6] = {"x"};
        int argn = 1;
        for (int k = 0; k < 4 && filters[i].opt[k]; k++)
            args[argn++] = (char *)filters[i].opt[k];
        struct rh_filter f;
        rh_filter_init(&f);
        for (int k = 1; k < argn; k++)
            CHECK_EQ(rh_filter_arg(&f, argn, args, &k), 1);
        /* the stack scope: no row */
        struct rh_summary s1, s2;
        g_reads = 0;
        CHECK_EQ(rh_filter_apply(db, &f), 0);
        char *pre = answers(db, &s1);
        long pre_reads = g_reads;
        CHECK(pre != NULL);
        CHECK_EQ(pre_reads, 0);
        /* the row path */
        setenv("RHEAPER_ROWS", "1", 1);
        g_reads = 0;
        CHECK_EQ(rh_filter_apply(db, &f), 0);
        char *rows = answers(db, &s2);
        long row_reads = g_reads;
        unsetenv("RHEAPER_ROWS");
        CHECK(rows != NULL);
        CHECK(row_reads > 0);
        CHECK(pre && rows && !strcmp(pre, rows));
        if (pre && rows && strcmp(pre, rows))
            fprintf(stderr, "stack scope:\n%s\nrow path:\n%s\n", pre, rows);
        if (i == 0)
            step3_peak = s1.peak_bytes;
        /* a chart by stack: from the group's timeline when it was kept */
        f.chart = RH_CHART_SITES;
        g_reads = 0;
        CHECK_EQ(rh_filter_apply(db, &f), 0);
        char *cpre = chart_answers(db);
        long cpre_reads = g_reads;
        int kept = rh_sql_int(db, "SELECT count(*) FROM temp.sqlite_master WHERE name = 'sgroup'",
                              0, 0) > 0;
        setenv("RHEAPER_ROWS", "1", 1);
        CHECK_EQ(rh_filter_apply(db, &f), 0);
        char *crows = chart_answers(db);
        unsetenv("RHEAPER_ROWS");
        CHECK(cpre != NULL && crows != NULL);
        CHECK(cpre && crows && !strcmp(cpre, crows));
        if (cpre && crows && strcmp(cpre, crows))
            fprintf(stderr, "chart, stack scope:\n%.2000s\nchart, row path:\n%.2000s\n", cpre,
                    crows);
        if (kept) {
            CHECK_EQ(cpre_reads, 0);
            charts_kept++;
        }
        printf("%s %-20s chart by stack: %s, statements reading rows %ld, %s\n",
               filters[i].opt[0], filters[i].opt[1],
               kept ? "the group's timeline" : "the pass", cpre_reads,
               cpre && crows && !strcmp(cpre, crows) ? "same answers" : "DIFFERENT");
        free(cpre);
        free(crows);
        printf("%s %-20s blocks %lld, peak %lld at %lld ns; statements reading rows: stack"
               " scope %ld, row path %ld, %s\n",
               filters[i].opt[0], filters[i].opt[1], (long long)s1.alloc_blocks,
               (long long)s1.peak_bytes, (long long)s1.peak_time_ns, pre_reads, row_reads,
               pre && rows && !strcmp(pre, rows) ? "same answers" : "DIFFERENT");
        free(pre);
        free(rows);
    }
    CHECK(step3_peak > 0 && step3_peak < xm);
    CHECK(charts_kept >= 2);
    sqlite3_close(db);
    return rh_test_summary();
}
