/* query_test.c: the query library (convert/query/) on a profile the test
 * knows row by row.
 *
 * The test writes a rip file with tests/unit/convert's writer (ripwrite.c),
 * converts it with the real rheaper-convert (argv[1]) into query.db, and asks
 * the library what a person's command would ask: the meta values, the
 * scope of no filter and of a size, time and lifetime filter, the summary's
 * totals and peak, the heap over time, and the formatting helpers. Every
 * figure is computed by hand from the plan below; each scope is asked twice,
 * through the stored aggregates and with RHEAPER_ROWS=1 through the
 * library's own ordered pass over the rows, and both must give the plan's
 * numbers.
 *
 * The plan (one thread, pid 4242; times in ns since enable; trailer at 10 us):
 *   1000 alloc  A 100 B at 0x1000      4000 free 0x1000
 *   2000 alloc  B 200 B at 0x2000      5000 alloc B  50 B at 0x4000
 *   3000 alloc  A 300 B at 0x3000      6000 free 0x2000
 *   7000 alloc  A  64 B at 0x5000      7500 free 0x5000 (a temporary: the
 *                                      event before it allocated A, 64 B)
 * 5 allocations of 714 bytes, 3 frees of 364, 2 leaks of 350 (0x3000,
 * 0x4000); the heap peaks at 600 bytes at 3000 ns.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convtest.h"
#include "harness.h"
#include "rh_query.h"

#define PID 4242

static void rh_write_plan(const char *path)
{
    struct rw_file f;
    static const char cmd[] = "./plan\0--known";
    rw_new(&f, PID, "/usr/bin/plan", cmd, sizeof cmd - 1);
    struct rw_chunk c;
    rw_begin(&c, &f, RIP_CHUNK_EVENTS, 0, PID, 0);
    static const uint64_t fa[] = {0x401010, 0x401234}, fb[] = {0x402020, 0x401234};
    rw_stack(&c, 1, 1, fa, 2, 0); /* A: malloc */
    rw_stack(&c, 2, 1, fb, 2, 0); /* B: malloc */
    rw_alloc(&c, 1000, 1, 100, 0x1000);
    rw_alloc(&c, 2000, 2, 200, 0x2000);
    rw_alloc(&c, 3000, 1, 300, 0x3000);
    rw_free(&c, 4000, 0x1000);
    rw_alloc(&c, 5000, 2, 50, 0x4000);
    rw_free(&c, 6000, 0x2000);
    rw_alloc(&c, 7000, 1, 64, 0x5000);
    rw_free(&c, 7500, 0x5000);
    rw_end(&c, 1, 7500);
    rw_trailer(&f, 8, 10000, 2, 0);
    CHECK_EQ(rw_save(&f, path), 0);
    rw_free_file(&f);
}

struct rh_want {
    int64_t ab, aB, fb, fB, lb, lB, tmp, peak, peak_t;
};

/* Applies the filter of argv (NULL: none) and checks the summary against w,
 * through the aggregates and through the rows. */
static void rh_check_scope(sqlite3 *db, const char *what, char **argv, int argc,
                           const struct rh_want *w)
{
    for (int rows = 0; rows < 2; rows++) {
        if (rows)
            setenv("RHEAPER_ROWS", "1", 1);
        else
            unsetenv("RHEAPER_ROWS");
        struct rh_filter f;
        rh_filter_init(&f);
        for (int i = 0; i < argc; i++)
            CHECK_EQ(rh_filter_arg(&f, argc, argv, &i), 1);
        CHECK_EQ(rh_filter_active(&f), argc > 0);
        CHECK_EQ(rh_filter_apply(db, &f), 0);
        struct rh_summary s;
        CHECK_EQ(rh_summary_compute(db, &s), 0);
        int64_t got[] = {s.alloc_blocks,     s.alloc_bytes,   s.freed_blocks,
                         s.freed_bytes,      s.leaked_blocks, s.leaked_bytes,
                         s.temporary_blocks, s.peak_bytes,    s.peak_time_ns};
        int64_t want[] = {w->ab, w->aB, w->fb, w->fB, w->lb, w->lB, w->tmp, w->peak, w->peak_t};
        static const char *const name[] = {"alloc blocks", "alloc bytes",   "freed blocks",
                                           "freed bytes",  "leaked blocks", "leaked bytes",
                                           "temporary",    "peak bytes",    "peak time"};
        for (int k = 0; k < 9; k++) {
            CHECK_EQ(got[k], want[k]);
            if (got[k] != want[k])
                fprintf(stderr, "  %s (%s): %s %lld, want %lld\n", what,
                        rows ? "rows" : "aggregates", name[k], (long long)got[k],
                        (long long)want[k]);
        }
        CHECK_EQ(s.pid, PID);
        CHECK_EQ(s.duration_ns, 10000);
        struct rh_scope sc;
        CHECK_EQ(rh_scope_get(db, &sc), 0);
        /* the stored aggregates answer an unfiltered scope; any filter (or
         * RHEAPER_ROWS) is the pass over the rows */
        CHECK_EQ(sc.rows, rows || argc > 0);
    }
    unsetenv("RHEAPER_ROWS");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: query_test RHEAPER-CONVERT\n");
        return 2;
    }
    rh_write_plan("query.rip");
    unlink("query.db");
    struct ct_run run;
    const char *args[] = {"query.rip", "query.db", NULL};
    CHECK_EQ(ct_exec(&run, argv[1], args), 0);
    CHECK(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
    if (run.err[0])
        fprintf(stderr, "rheaper-convert said: %s", run.err);

    /* opening: a profile, and not a missing file (one line, NULL) */
    CHECK(rh_query_open("no-such-profile.db") == NULL);
    sqlite3 *db = rh_query_open("query.db");
    CHECK(db != NULL);
    if (!db)
        return rh_test_summary();

    /* meta, as the converter stored it */
    CHECK_EQ(rh_meta_int(db, "pid", -1), PID);
    CHECK_EQ(rh_meta_int(db, "allocs", -1), 5);
    CHECK_EQ(rh_meta_int(db, "frees", -1), 3);
    CHECK_EQ(rh_meta_int(db, "duration_ns", -1), 10000);
    CHECK_EQ(rh_meta_int(db, "clean", -1), 1);
    CHECK_EQ(rh_meta_int(db, "no_such_key", -7), -7);
    char buf[256];
    const char *prog = rh_meta_text(db, "program", buf, sizeof buf);
    CHECK(prog && strcmp(prog, "/usr/bin/plan") == 0);
    CHECK(rh_meta_text(db, "no_such_key", buf, sizeof buf) == NULL);
    CHECK_EQ(rh_sql_int(db, "SELECT count(*) FROM stacks WHERE id = ?1", 2, -1), 1);
    CHECK_EQ(rh_sql_int(db, "SELECT sum(size) FROM allocations WHERE bt = ?1", 1, -1), 464);
    CHECK_EQ(rh_sql_int(db, "SELECT no_such_column FROM meta", 0, -3), -3);

    /* scopes: no filter, then a size, a time and a lifetime filter */
    struct rh_want all = {5, 714, 3, 364, 2, 350, 1, 600, 3000};
    rh_check_scope(db, "no filter", NULL, 0, &all);
    /* >= 100 B: 100, 200, 300 (the 100 and 200 freed) */
    char *size[] = {"--min-size", "100"};
    struct rh_want big = {3, 600, 2, 300, 1, 300, 0, 600, 3000};
    rh_check_scope(db, "--min-size 100", size, 2, &big);
    /* allocated from 25 % of the run on (2.5 us): 300 (leaked), 50 (leaked),
     * 64 (temporary); their heap peaks at 414 B at 7000 ns */
    char *late[] = {"--from", "25%"};
    struct rh_want after = {3, 414, 1, 64, 2, 350, 1, 414, 7000};
    rh_check_scope(db, "--from 25%", late, 2, &after);
    char *leaked[] = {"--lifetime", "leaked"};
    struct rh_want lk = {2, 350, 0, 0, 2, 350, 0, 350, 5000};
    rh_check_scope(db, "--lifetime leaked", leaked, 2, &lk);

    /* the heap over time of the whole run, 10 columns of 1 us: the maximum
     * of each column and the live bytes at its end */
    struct rh_filter f;
    rh_filter_init(&f);
    CHECK_EQ(rh_filter_apply(db, &f), 0);
    struct rh_timeline t;
    CHECK_EQ(rh_timeline_compute(db, 10000, 10, &t), 0);
    CHECK(t.n >= 10);
    /* whatever the columns, the highest maximum is the peak and the live
     * bytes at the end are the leaks */
    int64_t hi = 0;
    for (int i = 0; i < t.n; i++)
        hi = t.max_bytes[i] > hi ? t.max_bytes[i] : hi;
    CHECK_EQ(hi, 600);
    CHECK_EQ(t.n ? t.end_bytes[t.n - 1] : -1, 350);
    rh_timeline_free(&t);

    /* the helpers the programs present with */
    int64_t ns = 0;
    CHECK_EQ(rh_parse_interval("250ms", 5, &ns), 0);
    CHECK_EQ(ns, 250000000);
    CHECK_EQ(rh_parse_interval("2.5us", 5, &ns), 0);
    CHECK_EQ(ns, 2500);
    CHECK(rh_parse_interval("fast", 4, &ns) != 0);
    CHECK(strcmp(rh_human_bytes(1023, buf, sizeof buf), "1023 B") == 0);
    CHECK(strcmp(rh_human_bytes(1536, buf, sizeof buf), "1.50 KiB") == 0);
    CHECK(strcmp(rh_human_bytes(3 << 20, buf, sizeof buf), "3.00 MiB") == 0);

    sqlite3_close(db);
    return rh_test_summary();
}
