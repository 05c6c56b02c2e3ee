/* cli_test.c: the rheaper command's figures, formats, filters and errors.
 *
 *     cli_test figures|errors BIN_DIR SRC_DIR WORK_DIR
 *
 * Builds cli_prog.c with rheaper-cc, profiles it with `rheaper run` and checks
 * what each command prints against the plan in cli_prog.h: summary totals, the
 * peak and its time window, per-thread figures, the order of `top` for every
 * --by, the leak ranking (the steady small leak above the large startup block),
 * `peak`, every shared filter with a known count, the database views, --json
 * (valid, read back with json_extract) and --csv. `errors` checks the one-line
 * messages and exit codes of bad input, that a missing database is never
 * created, and `rheaper convert`.
 */
#include "cli_prog.h"
#include "clitest.h"

static char db[512];

/* alloc_blocks of `rheaper summary DB --json FILTER...`. */
#define SUMMARY_BLOCKS(...) summary_field("$.alloc_blocks", __VA_ARGS__, NULL)
static long long summary_field(const char *path, ...)
{
    char *argv[32];
    int n = 0;
    argv[n++] = (char *)cl_rheaper;
    argv[n++] = "summary";
    argv[n++] = db;
    argv[n++] = "--json";
    va_list ap;
    va_start(ap, path);
    const char *a;
    while ((a = va_arg(ap, const char *)) && n < 31)
        argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    struct cl_run r;
    cl_exec(&r, argv);
    long long v = r.code == 0 && cl_json_valid(r.out) ? cl_jint(r.out, path) : -1;
    if (v == -1)
        fprintf(stderr, "summary %s failed: %s\n", argv[4] ? argv[4] : "", r.err);
    cl_free(&r);
    return v;
}

/* Checks that `top --by BY --json` lists the functions f1, f2, f3 first. */
static void check_top(const char *by, const char *f1, const char *f2, const char *f3)
{
    struct cl_run r;
    char buf[128];
    cl_rh(&r, "top", db, "--by", by, "--json", NULL);
    CHECK_EQ(r.code, 0);
    CHECK(cl_json_valid(r.out));
    const char *want[3] = {f1, f2, f3};
    for (int i = 0; i < 3; i++) {
        char path[32];
        snprintf(path, sizeof path, "$[%d].function", i);
        if (strcmp(cl_jstr(r.out, path, buf, sizeof buf), want[i])) {
            fprintf(stderr, "top --by %s: row %d is '%s', expected '%s'\n", by, i, buf, want[i]);
            CHECK(0);
        }
    }
    cl_free(&r);
}

/* The single value of `rheaper query DB SQL --csv` (second line). */
static long long query_int(const char *sql)
{
    struct cl_run r;
    cl_rh(&r, "query", db, sql, "--csv", NULL);
    long long v = -1;
    const char *nl = strchr(r.out, '\n');
    if (r.code == 0 && nl)
        v = atoll(nl + 1);
    else
        fprintf(stderr, "query %s failed: %s\n", sql, r.err);
    cl_free(&r);
    return v;
}

static int figures(const char *bin, const char *src, const char *work)
{
    struct cl_run r;
    char buf[256], line[256];
    snprintf(db, sizeof db, "%s/p.db", work);

    /* rheaper run: the program's status passes through, the summary prints */
    CHECK_EQ(cl_profile(bin, src, work, "p.db", &r), 7);
    CHECK(strstr(r.err, "exited with status 7") != NULL);
    snprintf(line, sizeof line, "allocated      %lld bytes", MAIN_BYTES + WORKER_BYTES);
    CHECK(strstr(r.out, line) != NULL);
    CHECK(cl_exists(db));
    cl_free(&r);

    /* summary: totals, leaks, temporaries, peak */
    cl_rh(&r, "summary", db, "--json", NULL);
    CHECK_EQ(r.code, 0);
    CHECK(cl_json_valid(r.out));
    const char *j = r.out;
    CHECK_EQ(cl_jint(j, "$.alloc_blocks"), MAIN_BLOCKS + WORKER_BLOCKS);
    CHECK_EQ(cl_jint(j, "$.alloc_bytes"), MAIN_BYTES + WORKER_BYTES);
    CHECK_EQ(cl_jint(j, "$.leaked_blocks"), LEAKED_BLOCKS);
    CHECK_EQ(cl_jint(j, "$.leaked_bytes"), LEAKED_BYTES);
    CHECK_EQ(cl_jint(j, "$.freed_blocks"), MAIN_BLOCKS + WORKER_BLOCKS - LEAKED_BLOCKS);
    CHECK_EQ(cl_jint(j, "$.temporary_blocks"), TEMPORARY_BLOCKS);
    CHECK_EQ(cl_jint(j, "$.peak_bytes"), PEAK_BYTES);
    CHECK_EQ(cl_jint(j, "$.events"), query_int("SELECT value FROM meta WHERE key = 'events'"));
    CHECK(!strcmp(cl_jstr(j, "$.top[0].function", buf, sizeof buf), "startup_block"));
    CHECK(!strcmp(cl_jstr(j, "$.top[1].function", buf, sizeof buf), "peak_burst"));
    CHECK_EQ(cl_jint(j, "$.top[1].bytes"), (long long)BURST_N * BURST_SIZE);
    CHECK_EQ(cl_jint(j, "$.top[5]"), -999999); /* five sites, no more */
    /* the peak is reached by the burst's last block, before its first free */
    long long peak_t = cl_jint(j, "$.peak_time_ns");
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT max(alloc_after) FROM allocations WHERE size = %d",
             BURST_SIZE);
    CHECK_EQ(peak_t, query_int(sql));
    snprintf(sql, sizeof sql, "SELECT min(dealloc_after) FROM allocations WHERE size = %d",
             BURST_SIZE);
    CHECK(peak_t <= query_int(sql));
    CHECK(peak_t >= PAUSE_US * 1000LL); /* after the pause: the loop's middle */
    /* per thread: the main thread and the worker */
    CHECK_EQ(cl_jint(j, "$.threads[0].alloc_blocks"), MAIN_BLOCKS);
    CHECK_EQ(cl_jint(j, "$.threads[0].alloc_bytes"), MAIN_BYTES);
    CHECK_EQ(cl_jint(j, "$.threads[0].freed_blocks"),
             2 * STEADY_N + BURST_N + 1 + HANDOFF_N); /* it frees the worker's handoff */
    CHECK_EQ(cl_jint(j, "$.threads[0].freed_by_others_blocks"), 0);
    CHECK_EQ(cl_jint(j, "$.threads[0].live_bytes"),
             (long long)STARTUP_SIZE + STEADY_N * STEADY_SIZE);
    CHECK_EQ(cl_jint(j, "$.threads[1].alloc_blocks"), WORKER_BLOCKS);
    CHECK_EQ(cl_jint(j, "$.threads[1].alloc_bytes"), WORKER_BYTES);
    CHECK_EQ(cl_jint(j, "$.threads[1].freed_blocks"), 1);
    CHECK_EQ(cl_jint(j, "$.threads[1].freed_by_others_blocks"), HANDOFF_N);
    CHECK_EQ(cl_jint(j, "$.threads[1].freed_by_others_bytes"), HANDOFF_N * HANDOFF_SIZE);
    CHECK_EQ(cl_jint(j, "$.threads[1].live_bytes"), WLEAK_SIZE);
    cl_free(&r);

    /* summary as text and CSV */
    cl_rh(&r, "summary", db, NULL);
    CHECK_EQ(r.code, 0);
    snprintf(line, sizeof line, "peak           %lld bytes", PEAK_BYTES);
    CHECK(strstr(r.out, line) != NULL);
    snprintf(line, sizeof line, "leaked         %lld bytes", LEAKED_BYTES);
    CHECK(strstr(r.out, line) != NULL);
    cl_free(&r);
    cl_rh(&r, "summary", db, "--csv", NULL);
    CHECK(!strncmp(r.out, "key,value\nprogram,", 18));
    snprintf(line, sizeof line, "\nleaked_blocks,%d\n", LEAKED_BLOCKS);
    CHECK(strstr(r.out, line) != NULL);
    cl_free(&r);

    /* top: the order for each --by */
    check_top("bytes", "startup_block", "peak_burst", "leak_steady");
    check_top("count", "temp_churn", "leak_steady", "peak_burst");
    check_top("leaked", "startup_block", "leak_steady", "worker_leak");
    check_top("peak", "startup_block", "peak_burst", "held_block");
    check_top("temporary", "temp_churn", "peak_burst", "worker_tmp");
    cl_rh(&r, "top", db, "--by", "leaked", "--json", NULL);
    CHECK_EQ(cl_jint(r.out, "$[1].leaked_blocks"), STEADY_N);
    CHECK_EQ(cl_jint(r.out, "$[3]"), -999999); /* only sites that leaked */
    cl_free(&r);
    cl_rh(&r, "top", db, "-n", "2", "--json", NULL);
    CHECK_EQ(cl_jint(r.out, "$[1].count"), BURST_N);
    CHECK_EQ(cl_jint(r.out, "$[2]"), -999999);
    cl_free(&r);
    /* --stacks: the full stack, innermost first, down to main */
    cl_rh(&r, "top", db, "-n", "1", "--stacks", "--json", NULL);
    cl_jstr(r.out, "$[0].stack", buf, sizeof buf);
    CHECK(!strncmp(buf, "startup_block (cli_prog.c:", 26));
    CHECK(strstr(buf, "; main (cli_prog.c:") != NULL);
    cl_free(&r);
    cl_rh(&r, "top", db, "-n", "1", "--stacks", NULL);
    CHECK(strstr(r.out, "\n    main (cli_prog.c:") != NULL);
    cl_free(&r);
    /* --csv: header and one line per site (8 sites) */
    cl_rh(&r, "top", db, "--csv", NULL);
    CHECK(!strncmp(r.out,
                   "function,location,count,bytes,leaked_blocks,leaked_bytes,peak_bytes,"
                   "temporary\nstartup_block,cli_prog.c:",
                   86));
    int lines = 0;
    for (char *p = r.out; *p; p++)
        lines += *p == '\n';
    CHECK_EQ(lines, 1 + 8);
    cl_free(&r);

    /* leaks: the steady small leak outranks the large startup block */
    cl_rh(&r, "leaks", db, "--json", NULL);
    CHECK_EQ(r.code, 0);
    CHECK(cl_json_valid(r.out));
    CHECK(!strcmp(cl_jstr(r.out, "$[0].function", buf, sizeof buf), "leak_steady"));
    CHECK_EQ(cl_jint(r.out, "$[0].leaked_blocks"), STEADY_N);
    CHECK_EQ(cl_jint(r.out, "$[0].leaked_bytes"), STEADY_N * STEADY_SIZE);
    CHECK(cl_jdbl(r.out, "$[0].score") > 0.3);
    CHECK(!strcmp(cl_jstr(r.out, "$[2].function", buf, sizeof buf), "startup_block"));
    CHECK_EQ(cl_jint(r.out, "$[2].leaked_bytes"), STARTUP_SIZE);
    CHECK(cl_jdbl(r.out, "$[2].score") == 0); /* one block: a flat curve */
    CHECK_EQ(cl_jint(r.out, "$[3]"), -999999);
    cl_free(&r);

    /* peak: what was live at the peak */
    cl_rh(&r, "peak", db, "--json", NULL);
    CHECK_EQ(r.code, 0);
    CHECK(cl_json_valid(r.out));
    CHECK(!strcmp(cl_jstr(r.out, "$[0].function", buf, sizeof buf), "startup_block"));
    CHECK(!strcmp(cl_jstr(r.out, "$[1].function", buf, sizeof buf), "peak_burst"));
    CHECK_EQ(cl_jint(r.out, "$[1].blocks"), BURST_N);
    CHECK_EQ(cl_jint(r.out, "$[1].bytes"), (long long)BURST_N * BURST_SIZE);
    CHECK(!strcmp(cl_jstr(r.out, "$[3].function", buf, sizeof buf), "leak_steady"));
    CHECK_EQ(cl_jint(r.out, "$[3].blocks"), STEADY_N / 2);
    CHECK_EQ(cl_jint(r.out, "$[4]"), -999999);
    cl_free(&r);
    /* peak --csv: each site's percent of the peak is the query's
     * round(100 * bytes / peak, 2) as a person writes it ("48.64", "0.2",
     * "51"), not the double's 17 digits */
    cl_rh(&r, "peak", db, "--csv", NULL);
    CHECK(!strncmp(r.out, "function,location,blocks,bytes,percent\n", 39));
    {
        int sites = 0, short_form = 0;
        for (char *p = strchr(r.out, '\n'); p && p[1]; p = strchr(p + 1, '\n')) {
            long long bytes = -1;
            char pct[64] = "", want[64];
            /* function,location,blocks,bytes,percent: no commas in these names */
            if (sscanf(p + 1, "%*[^,],%*[^,],%*d,%lld,%63[^\n]", &bytes, pct) != 2)
                break;
            snprintf(want, sizeof want, "%.2f", 100.0 * (double)bytes / (double)PEAK_BYTES);
            char *e = want + strlen(want);
            while (e[-1] == '0')
                *--e = 0;
            if (e[-1] == '.')
                e[-1] = 0;
            if (strcmp(pct, want))
                fprintf(stderr, "peak --csv: %lld bytes: percent '%s', want '%s'\n", bytes, pct,
                        want);
            else
                short_form++;
            sites++;
        }
        CHECK_EQ(sites, 4);
        CHECK_EQ(short_form, 4);
    }
    cl_free(&r);
    cl_rh(&r, "peak", db, NULL);
    snprintf(line, sizeof line, "peak: %lld bytes", PEAK_BYTES);
    CHECK(!strncmp(r.out, line, strlen(line)));
    cl_free(&r);

    /* the shared filters, each with a count the plan gives */
    const long long all = MAIN_BLOCKS + WORKER_BLOCKS;
    CHECK_EQ(SUMMARY_BLOCKS("--function", "leak_steady"), STEADY_N);
    CHECK_EQ(SUMMARY_BLOCKS("--function", "^worker_", "--function", "tmp"), 1);
    CHECK_EQ(SUMMARY_BLOCKS("--not-function", "leak_steady|temp_churn"), all - 3 * STEADY_N);
    CHECK_EQ(SUMMARY_BLOCKS("--function", "^worker$"), WORKER_BLOCKS); /* any frame */
    CHECK_EQ(SUMMARY_BLOCKS("--file", "cli_prog\\.c$"), all);
    CHECK_EQ(SUMMARY_BLOCKS("--not-file", "cli_prog"), 0);
    CHECK_EQ(SUMMARY_BLOCKS("--min-size", "100000"), BURST_N + 1);
    CHECK_EQ(SUMMARY_BLOCKS("--min-size", "1k"), BURST_N + 2);
    CHECK_EQ(SUMMARY_BLOCKS("--max-size", "64"), 3 * STEADY_N);
    CHECK_EQ(SUMMARY_BLOCKS("--min-size", "65", "--max-size", "300"), HANDOFF_N + 2);
    CHECK_EQ(SUMMARY_BLOCKS("--lifetime", "leaked"), LEAKED_BLOCKS);
    CHECK_EQ(SUMMARY_BLOCKS("--lifetime", "temporary"), TEMPORARY_BLOCKS);
    CHECK_EQ(SUMMARY_BLOCKS("--lifetime", "0ns..1000s"), all - LEAKED_BLOCKS);
    /* held_block lives longer than the whole loop's sleeps */
    CHECK_EQ(SUMMARY_BLOCKS("--lifetime", "150ms..", "--function", "held_block"), 1);
    CHECK_EQ(SUMMARY_BLOCKS("--lifetime", "..150ms", "--function", "held_block"), 0);
    CHECK_EQ(SUMMARY_BLOCKS("--thread", "2"), WORKER_BLOCKS);
    snprintf(buf, sizeof buf, "%lld", query_int("SELECT tid FROM threads WHERE id = 2"));
    CHECK_EQ(SUMMARY_BLOCKS("--thread", buf), WORKER_BLOCKS);
    CHECK_EQ(SUMMARY_BLOCKS("--from", "0%", "--to", "100%"), all);
    CHECK_EQ(SUMMARY_BLOCKS("--to", EARLY_S), 2); /* before the pause ends */
    CHECK_EQ(SUMMARY_BLOCKS("--from", EARLY_S), all - 2);
    CHECK_EQ(summary_field("$.temporary_blocks", "--temporary-ms", "1000000", NULL),
             all - LEAKED_BLOCKS);
    CHECK_EQ(summary_field("$.temporary_blocks", "--temporary-ms", "0", NULL), 0);
    /* filters apply to the listings too */
    cl_rh(&r, "top", db, "--thread", "2", "--json", NULL);
    CHECK(!strcmp(cl_jstr(r.out, "$[0].function", buf, sizeof buf), "worker_handoff"));
    CHECK_EQ(cl_jint(r.out, "$[3]"), -999999);
    cl_free(&r);

    /* query: formats and the views */
    cl_rh(&r, "query", db, "SELECT 1 AS a, 'x,\"y' AS b, NULL AS c", "--csv", NULL);
    CHECK(!strcmp(r.out, "a,b,c\n1,\"x,\"\"y\",\n"));
    cl_free(&r);
    cl_rh(&r, "query", db, "SELECT 12 AS n, 'text' AS long_name UNION ALL SELECT 3, 'x'", NULL);
    CHECK(!strcmp(r.out, " n  long_name\n12  text\n 3  x\n"));
    cl_free(&r);
    cl_rh(&r, "query", db, "SELECT 1.5 AS r, NULL AS z, 'q\"' AS s", "--json", NULL);
    CHECK(cl_json_valid(r.out));
    CHECK(cl_jdbl(r.out, "$[0].r") == 1.5);
    CHECK(!strcmp(cl_jstr(r.out, "$[0].s", buf, sizeof buf), "q\""));
    cl_free(&r);
    /* reals in CSV and JSON: the shortest text that reads back as the same
     * double, so a rounded ratio reads as rounded and nothing is lost */
    cl_rh(&r, "query", db,
          "SELECT 0.74 AS r, round(2.0 / 3, 4) AS q, 0.1 + 0.2 AS s, 1e300 * 1e300 AS i", "--csv",
          NULL);
    CHECK(!strcmp(r.out, "r,q,s,i\n0.74,0.6667,0.30000000000000004,inf\n"));
    cl_free(&r);
    cl_rh(&r, "query", db,
          "SELECT 0.74 AS r, round(2.0 / 3, 4) AS q, 0.1 + 0.2 AS s, 1e300 * 1e300 AS i", "--json",
          NULL);
    CHECK(!strcmp(r.out, "[\n{\"r\":0.74,\"q\":0.6667,\"s\":0.30000000000000004,\"i\":null}\n]\n"));
    CHECK(cl_jdbl(r.out, "$[0].s") == 0.1 + 0.2);
    cl_free(&r);
    CHECK_EQ(query_int("SELECT count(*) FROM temporary"), TEMPORARY_BLOCKS);
    CHECK_EQ(query_int("SELECT max(live_bytes) FROM heap_timeline"), PEAK_BYTES);
    CHECK_EQ(query_int("SELECT count(*) FROM heap_timeline"), all + (all - LEAKED_BLOCKS));
    CHECK_EQ(query_int("SELECT live_bytes FROM heap_timeline LIMIT 1 OFFSET"
                       " (SELECT count(*) - 1 FROM heap_timeline)"),
             LEAKED_BYTES);
    CHECK_EQ(query_int("SELECT freed_by_others_bytes FROM thread_summary WHERE thread = 2"),
             HANDOFF_N * HANDOFF_SIZE);
    CHECK_EQ(query_int("SELECT count FROM callsites_by_function WHERE sym = 'temp_churn'"),
             2 * STEADY_N);
    /* sel in a query holds the filtered rows */
    cl_rh(&r, "query", db, "SELECT count(*) AS n FROM sel", "--min-size", "100000", "--csv", NULL);
    CHECK(!strcmp(r.out, "n\n11\n"));
    cl_free(&r);
    return rh_test_summary();
}

static int errors(const char *bin, const char *src, const char *work)
{
    struct cl_run r;
    char missing[512], notdb[512], rip[512], c_db[512], prog[512], nodb[512];
    snprintf(db, sizeof db, "%s/p.db", work);
    snprintf(missing, sizeof missing, "%s/missing.db", work);
    snprintf(notdb, sizeof notdb, "%s/not-a-db.txt", work);
    snprintf(c_db, sizeof c_db, "%s/c.db", work);
    snprintf(nodb, sizeof nodb, "%s/plain.db", work);
    CHECK_EQ(cl_profile(bin, src, work, "p.db", &r), 7);
    cl_free(&r);

    /* a missing database: one line, exit 1, never created */
    const char *ro[] = {"summary", "top", "leaks", "peak"};
    for (int i = 0; i < 4; i++) {
        cl_rh(&r, ro[i], missing, NULL);
        CHECK_EQ(r.code, 1);
        CHECK_EQ(r.err_lines, 1);
        CHECK(strstr(r.err, "no such file") != NULL);
        CHECK(!cl_exists(missing));
        cl_free(&r);
    }
    cl_rh(&r, "query", missing, "SELECT 1", NULL);
    CHECK_EQ(r.code, 1);
    CHECK(!cl_exists(missing));
    cl_free(&r);

    /* not a profile: a text file, and an SQLite database without the schema */
    FILE *fp = fopen(notdb, "w");
    fputs("hello\n", fp);
    fclose(fp);
    cl_rh(&r, "summary", notdb, NULL);
    CHECK_EQ(r.code, 1);
    CHECK_EQ(r.err_lines, 1);
    CHECK(strstr(r.err, "is not a rheaper profile") != NULL);
    cl_free(&r);
    sqlite3 *pl;
    sqlite3_open(nodb, &pl);
    sqlite3_exec(pl, "CREATE TABLE t(x)", NULL, NULL, NULL);
    sqlite3_close(pl);
    cl_rh(&r, "top", nodb, NULL);
    CHECK_EQ(r.code, 1);
    CHECK_EQ(r.err_lines, 1);
    CHECK(strstr(r.err, "is not a rheaper profile") != NULL);
    cl_free(&r);

    /* unknown options, commands and bad values: usage errors, one line */
    cl_rh(&r, "top", db, "--bogus", NULL);
    CHECK_EQ(r.code, 2);
    CHECK_EQ(r.err_lines, 1);
    CHECK(strstr(r.err, "--bogus") != NULL);
    cl_free(&r);
    cl_rh(&r, "frobnicate", db, NULL);
    CHECK_EQ(r.code, 2);
    CHECK_EQ(r.err_lines, 1);
    cl_free(&r);
    const char *bad[][2] = {{"--by", "size"},         {"--function", "("},   {"--lifetime", "long"},
                            {"--lifetime", "1d..2d"}, {"--min-size", "big"}, {"--from", "-1"},
                            {"--temporary-ms", "x"},  {"-n", "many"}};
    for (int i = 0; i < 8; i++) {
        cl_rh(&r, "top", db, bad[i][0], bad[i][1], NULL);
        CHECK_EQ(r.code, 2);
        CHECK_EQ(r.err_lines, 1);
        CHECK(strstr(r.err, bad[i][0]) != NULL);
        cl_free(&r);
    }
    cl_rh(&r, "summary", db, "--thread", NULL);
    CHECK_EQ(r.code, 2);
    CHECK_EQ(r.err_lines, 1);
    cl_free(&r);

    /* failing SQL: SQLite's message; the database is read-only */
    cl_rh(&r, "query", db, "SELECT * FROM nope", NULL);
    CHECK_EQ(r.code, 1);
    CHECK_EQ(r.err_lines, 1);
    CHECK(strstr(r.err, "no such table: nope") != NULL);
    cl_free(&r);
    cl_rh(&r, "query", db, "DELETE FROM alloc_rows", NULL);
    CHECK_EQ(r.code, 1);
    CHECK(strstr(r.err, "readonly") != NULL);
    cl_free(&r);
    CHECK_EQ(query_int("SELECT count(*) FROM allocations"), MAIN_BLOCKS + WORKER_BLOCKS);

    /* run: an existing output is refused before the program runs; a missing
     * program is one failure */
    snprintf(prog, sizeof prog, "%s/prog", work);
    cl_rh(&r, "run", "-o", db, "--", prog, NULL);
    CHECK_EQ(r.code, 1);
    CHECK(strstr(r.err, "exists; use --force") != NULL);
    CHECK(strstr(r.err, "exited") == NULL);
    cl_free(&r);
    snprintf(prog, sizeof prog, "%s/no-such-program", work);
    cl_rh(&r, "run", "-o", c_db, "--", prog, NULL);
    CHECK_EQ(r.code, 1);
    CHECK(strstr(r.err, "cannot run") != NULL);
    CHECK(!cl_exists(c_db));
    cl_free(&r);

    /* run under a profile name template: the profile is found by the pid in
     * its header, whatever RHEAPER_PROFILE_NAME called it */
    snprintf(prog, sizeof prog, "%s/prog", work);
    char named_db[600];
    snprintf(named_db, sizeof named_db, "%s/named.db", work);
    setenv("RHEAPER_PROFILE_NAME", "%e-run-%n.rip", 1);
    cl_rh(&r, "run", "-o", named_db, "--", prog, NULL);
    unsetenv("RHEAPER_PROFILE_NAME");
    CHECK_EQ(r.code, 7);
    CHECK(strstr(r.err, "exited with status 7") != NULL);
    CHECK(strstr(r.err, "wrote no profile") == NULL);
    CHECK(cl_exists(named_db));
    cl_free(&r);
    cl_rh(&r, "summary", named_db, "--json", NULL);
    CHECK_EQ(r.code, 0);
    CHECK_EQ(cl_jint(r.out, "$.alloc_blocks"), MAIN_BLOCKS + WORKER_BLOCKS);
    cl_free(&r);

    /* convert: the same as rheaper-convert on a profile written directly */
    snprintf(prog, sizeof prog, "%s/prog", work);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("RHEAPER_ENABLE", "1", 1);
        setenv("RHEAPER_PROFILE_DIR", work, 1);
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        execl(prog, prog, (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 7);
    snprintf(rip, sizeof rip, "%s/rip-%d", work, (int)pid);
    cl_rh(&r, "convert", rip, c_db, NULL);
    CHECK_EQ(r.code, 0);
    cl_free(&r);
    cl_rh(&r, "summary", c_db, "--json", NULL);
    CHECK_EQ(cl_jint(r.out, "$.alloc_blocks"), MAIN_BLOCKS + WORKER_BLOCKS);
    CHECK_EQ(cl_jint(r.out, "$.peak_bytes"), PEAK_BYTES);
    cl_free(&r);
    cl_rh(&r, "convert", rip, c_db, NULL);
    CHECK_EQ(r.code, 1);
    CHECK_EQ(r.err_lines, 1);
    CHECK(strstr(r.err, "exists; use --force") != NULL);
    cl_free(&r);
    cl_rh(&r, "convert", rip, c_db, "--force", NULL);
    CHECK_EQ(r.code, 0);
    cl_free(&r);
    cl_rh(&r, "convert", notdb, missing, NULL);
    CHECK_EQ(r.code, 1);
    CHECK_EQ(r.err_lines, 1);
    CHECK(!cl_exists(missing));
    cl_free(&r);
    cl_rh(&r, "convert", rip, NULL);
    CHECK_EQ(r.code, 2);
    cl_free(&r);

    /* an output that cannot be written (a full device): one line naming it */
    static const char *const writers[][3] = {{"report", NULL, NULL},
                                             {"flamegraph", NULL, NULL},
                                             {"timeline", NULL, NULL},
                                             {"export", "heaptrack", NULL}};
    for (size_t k = 0; k < sizeof writers / sizeof writers[0]; k++) {
        if (writers[k][1])
            cl_rh(&r, writers[k][0], writers[k][1], c_db, "-o", "/dev/full", NULL);
        else
            cl_rh(&r, writers[k][0], c_db, "-o", "/dev/full", NULL);
        CHECK_EQ(r.code, 1);
        CHECK_EQ(r.err_lines, 1);
        CHECK(strstr(r.err, "/dev/full: write failed") != NULL);
        cl_free(&r);
    }
    return rh_test_summary();
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: cli_test figures|errors BIN_DIR SRC_DIR WORK_DIR\n");
        return 2;
    }
    /* every profiled run here (rheaper run, the direct one) records the
     * program's own blocks, which cli_prog.h plans: libc's (stdio, thread
     * TLS) stay out */
    setenv("RHEAPER_SCOPE", "program", 1);
    static char rh[512];
    snprintf(rh, sizeof rh, "%s/rheaper", argv[2]);
    cl_rheaper = rh;
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", argv[4], argv[4]);
    if (system(cmd) != 0)
        return 2;
    if (!strcmp(argv[1], "figures"))
        return figures(argv[2], argv[3], argv[4]);
    if (!strcmp(argv[1], "errors"))
        return errors(argv[2], argv[3], argv[4]);
    return 2;
}
