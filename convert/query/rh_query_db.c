/* rh_query_db.c: opening a profile database for every reader, the
 * whole-profile figures every report starts from, and the SQL helpers of the
 * query library (one exec wrapper, one table probe, one meta accessor).
 *
 * rh_query_open() opens an existing profile.db read-only (it never creates one),
 * checks that it is a rheaper profile and registers REGEXP, implemented with
 * bounded POSIX extended regular expressions (rh_regex.c), for the --function and --file filters.
 * rh_summary_compute() reads the meta table and sums the per-stack figures
 * and takes the peak of the scope that rh_filter_apply() (rh_query_filter.c)
 * built: the converter's aggregates, or the figures of the filtered rows.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "rh_query.h"
#include "rh_regex.h"
#include "rh_schema.h"
#include "rip_format.h"

/* ---- REGEXP ------------------------------------------------------------- */

static void rh_regex_free(void *p)
{
    rh_re_free(p);
}

/* regexp(PATTERN, TEXT): 1 when TEXT matches the POSIX extended regular
 * expression PATTERN anywhere, 0 when not, NULL when TEXT is NULL. The
 * compiled pattern (rh_regex.c, bounded) is cached as auxiliary data of the
 * call site. A bad pattern, or a match past the engine's limits, is an SQL
 * error saying so. */
static void rh_regexp_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const char *text = (const char *)sqlite3_value_text(argv[1]);
    if (!text) {
        sqlite3_result_null(ctx);
        return;
    }
    struct rh_re *re = sqlite3_get_auxdata(ctx, 0), *tmp = NULL;
    const char *pat = (const char *)sqlite3_value_text(argv[0]);
    if (!re) {
        if (!pat) {
            sqlite3_result_null(ctx);
            return;
        }
        char msg[256], full[600];
        re = rh_re_compile(pat, msg, sizeof msg);
        if (!re) {
            snprintf(full, sizeof full, "bad regular expression '%s': %s", pat, msg);
            sqlite3_result_error(ctx, full, -1);
            return;
        }
        sqlite3_set_auxdata(ctx, 0, re, rh_regex_free);
        if (!sqlite3_get_auxdata(ctx, 0)) /* not cached (SQLite freed it): once more */
            re = tmp = rh_re_compile(pat, NULL, 0);
        if (!re) {
            sqlite3_result_error_nomem(ctx);
            return;
        }
    }
    int m = rh_re_match(re, text);
    rh_re_free(tmp);
    if (m < 0) {
        char full[600];
        snprintf(full, sizeof full,
                 "regular expression '%s' ran into its matching limit (steps, depth or memory)",
                 pat ? pat : "");
        sqlite3_result_error(ctx, full, -1);
        return;
    }
    sqlite3_result_int(ctx, m);
}

/* ---- opening -------------------------------------------------------------- */

sqlite3 *rh_query_open(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            fprintf(stderr, "rheaper: %s: no such file\n", path);
        else
            fprintf(stderr, "rheaper: %s: cannot open (%s)\n", path, strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        fprintf(stderr, "rheaper: %s: not a regular file\n", path);
        return NULL;
    }
    sqlite3 *db = NULL;
    /* one thread per connection: no mutex around every column read */
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        fprintf(stderr, "rheaper: %s: cannot open (%s)\n", path,
                db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return NULL;
    }
    /* A profile has the converter's tables and its format_version in meta. */
    sqlite3_stmt *st2 = NULL;
    int ok =
        sqlite3_prepare_v2(db,
                           "SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'view')"
                           " AND name IN ('allocations', 'backtraces', 'threads', 'meta')",
                           -1, &st2, NULL) == SQLITE_OK &&
        sqlite3_step(st2) == SQLITE_ROW && sqlite3_column_int(st2, 0) == 4;
    sqlite3_finalize(st2);
    st2 = NULL;
    if (ok)
        ok = rh_meta_int(db, "format_version", -1) >= 0;
    if (!ok) {
        fprintf(stderr, "rheaper: %s: is not a rheaper profile\n", path);
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_create_function(db, "regexp", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL, rh_regexp_fn,
                            NULL, NULL);
    sqlite3_busy_timeout(db, 2000);
    /* Filtered selections live in TEMP tables: keep them in memory. */
    sqlite3_exec(db, "PRAGMA temp_store = MEMORY; PRAGMA cache_size = -65536", NULL, NULL, NULL);
    /* Reads by id (stack_rows, rh_query_pass.c) jump around the file: map it
     * (read-only; the page cache is shared by every connection) rather
     * than copy each page into this connection's cache. */
    if (!getenv("RHEAPER_NO_MMAP"))
        sqlite3_exec(db, "PRAGMA mmap_size = 17179869184", NULL, NULL, NULL);
    return db;
}

/* stack_series blobs (docs/sql.md): one varint. */
int rh_series_next(const unsigned char **p, const unsigned char *end, uint64_t *v)
{
    uint64_t x = 0;
    for (int sh = 0; *p < end && sh < 64; sh += 7) {
        unsigned char b = *(*p)++;
        x |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) {
            *v = x;
            return 1;
        }
    }
    return 0;
}

void rh_query_tune(sqlite3 *db, int cache_kib, int64_t mmap_bytes)
{
    char sql[128];
    snprintf(sql, sizeof sql, "PRAGMA cache_size = -%d", cache_kib > 0 ? cache_kib : 2000);
    sqlite3_exec(db, sql, NULL, NULL, NULL);
    if (!getenv("RHEAPER_NO_MMAP")) {
        snprintf(sql, sizeof sql, "PRAGMA mmap_size = %lld",
                 (long long)(mmap_bytes > 0 ? mmap_bytes : 0));
        sqlite3_exec(db, sql, NULL, NULL, NULL);
    }
}

int rh_sql_fail(sqlite3 *db, const char *what)
{
    fprintf(stderr, "rheaper: %s: SQLite error (%s)\n", what, sqlite3_errmsg(db));
    return -1;
}

/* ---- SQL helpers ---------------------------------------------------------- */

int rh_sql_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    fprintf(stderr, "rheaper: SQL error: %s\n", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return -1;
}

sqlite3_stmt *rh_sql_prepare(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "rheaper: SQL error: %s\n", sqlite3_errmsg(db));
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

int rh_table_exists(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st = NULL;
    int yes = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT 1 FROM main.sqlite_master WHERE type IN ('table', 'view')"
                           " AND name = ?1",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        yes = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return yes;
}

/* Steps the meta query of key; st is left on its row, or NULL. */
static sqlite3_stmt *rh_meta_row(sqlite3 *db, const char *key)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL) !=
        SQLITE_OK) {
        sqlite3_finalize(st);
        return NULL;
    }
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_type(st, 0) == SQLITE_NULL) {
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

int64_t rh_meta_int(sqlite3 *db, const char *key, int64_t def)
{
    sqlite3_stmt *st = rh_meta_row(db, key);
    if (!st)
        return def;
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

int64_t rh_sql_int(sqlite3 *db, const char *sql, int64_t arg, int64_t def)
{
    sqlite3_stmt *st = NULL;
    int64_t v = def;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_bind_parameter_count(st) >= 1)
            sqlite3_bind_int64(st, 1, arg);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
            v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

int rh_site_slots(sqlite3 *db, const char *what, int64_t *nlow, int64_t *nslots)
{
    *nlow = *nslots = 0;
    sqlite3_stmt *st = rh_sql_prepare(
        db, "SELECT coalesce(max(CASE WHEN bt < ?1 THEN bt END), -1),"
            " coalesce(max(CASE WHEN bt >= ?1 THEN bt - ?1 END), -1),"
            " (SELECT count(*) FROM main.stacks) FROM temp.site");
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, (int64_t)RH_INHERIT_STACK_BASE);
    int64_t low = -1, high = -1, n = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        low = sqlite3_column_int64(st, 0);
        high = sqlite3_column_int64(st, 1);
        n = sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    if (low < -1 || high < -1 || low > ((int64_t)1 << 31) || high > ((int64_t)1 << 31) ||
        low + high + 2 > 2 * n + 1024) {
        fprintf(stderr,
                "rheaper: %s: stack ids up to %" PRId64 " and base + %" PRId64
                " for %" PRId64 " stacks: not a profile rheaper-convert wrote\n",
                what, low, high, n);
        return -1;
    }
    *nlow = low + 1;
    *nslots = low + 1 + high + 1;
    return 0;
}

int rh_temp_drop(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st = NULL;
    char type[16] = "";
    if (sqlite3_prepare_v2(db, "SELECT type FROM temp.sqlite_master WHERE name = ?1", -1, &st,
                           NULL) != SQLITE_OK)
        return rh_sql_fail(db, "drop");
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(type, sizeof type, "%s", sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (strcmp(type, "table") && strcmp(type, "view"))
        return 0;
    char sql[128];
    snprintf(sql, sizeof sql, "DROP %s temp.%s", type, name);
    return rh_sql_exec(db, sql);
}

double rh_meta_double(sqlite3 *db, const char *key, double def)
{
    sqlite3_stmt *st = rh_meta_row(db, key);
    if (!st)
        return def;
    double v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

const char *rh_meta_text(sqlite3 *db, const char *key, char *buf, size_t n)
{
    sqlite3_stmt *st = rh_meta_row(db, key);
    if (!st || n == 0) {
        sqlite3_finalize(st);
        return NULL;
    }
    const unsigned char *t = sqlite3_column_text(st, 0);
    snprintf(buf, n, "%s", t ? (const char *)t : "");
    sqlite3_finalize(st);
    return buf;
}

char *rh_meta_dup(sqlite3 *db, const char *key, size_t *len)
{
    sqlite3_stmt *st = rh_meta_row(db, key);
    if (!st)
        return NULL;
    const unsigned char *t = sqlite3_column_text(st, 0);
    size_t n = (size_t)sqlite3_column_bytes(st, 0);
    char *v = malloc(n + 1);
    if (v) {
        if (n)
            memcpy(v, t, n);
        v[n] = 0;
        if (len)
            *len = n;
    }
    sqlite3_finalize(st);
    return v;
}

int rh_profile_info(sqlite3 *db, struct rh_profile_info *p)
{
    memset(p, 0, sizeof *p);
    p->duration_ns = rh_meta_int(db, "duration_ns", 0);
    /* the converter's per-stack aggregates when it wrote them (meta
     * aggregates = 1), else the rows themselves */
    if (rh_meta_int(db, "aggregates", 0) == 1) {
        p->leaked_bytes = rh_sql_int(db, "SELECT sum(leaked_bytes) FROM stack_stats", 0, 0);
        p->leaked_blocks = rh_sql_int(db, "SELECT sum(leaked_blocks) FROM stack_stats", 0, 0);
        p->allocations = rh_sql_int(db, "SELECT sum(count) FROM stack_stats", 0, 0);
    } else {
        p->leaked_bytes =
            rh_sql_int(db, "SELECT sum(size) FROM allocations WHERE dealloc_after IS NULL", 0, 0);
        p->leaked_blocks =
            rh_sql_int(db, "SELECT count(*) FROM allocations WHERE dealloc_after IS NULL", 0, 0);
        p->allocations = rh_sql_int(db, "SELECT count(*) FROM allocations", 0, 0);
    }
    p->stacks = rh_sql_int(db, "SELECT count(*) FROM stacks", 0, 0);
    p->max_depth = rh_sql_int(db, "SELECT max(depth) FROM stacks", 0, 0);
    p->cpu_samples = rh_sql_int(db, "SELECT coalesce(sum(samples), 0) FROM cpu_stack_stats", 0, 0);
    if (!rh_meta_text(db, "architecture", p->architecture, sizeof p->architecture))
        snprintf(p->architecture, sizeof p->architecture, "unknown");
    p->has_sample_mode =
        rh_meta_text(db, "sample_mode", p->sample_mode, sizeof p->sample_mode) != NULL;
    char cmd[sizeof p->title];
    if (!rh_meta_text(db, "title", p->title, sizeof p->title) ||
        (rh_meta_text(db, "command_line", cmd, sizeof cmd) && !strcmp(cmd, p->title)))
        p->title[0] = '\0';
    return 0;
}

sqlite3_stmt *rh_kinds_stmt(sqlite3 *db)
{
    return rh_sql_prepare(db, "SELECT coalesce(s.kind, 'unknown') AS kind, sum(t.count) AS blocks,"
                              " sum(t.bytes) AS bytes, sum(t.leaked_blocks) AS leaked_blocks"
                              " FROM temp.sstat t LEFT JOIN stacks s ON s.id = t.bt"
                              " GROUP BY 1 ORDER BY bytes DESC, kind");
}

/* ---- summary figures ------------------------------------------------------ */

/* Runs a one-row query and stores up to n integer columns in out[]. Returns 0,
 * or -1 after printing SQLite's message. A missing row leaves out[] alone. */
static int rh_row_ints(sqlite3 *db, const char *sql, int64_t *out[], int n)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "rheaper: SQL error: %s\n", sqlite3_errmsg(db));
        return -1;
    }
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        for (int i = 0; i < n && i < sqlite3_column_count(st); i++)
            if (out[i])
                *out[i] = sqlite3_column_int64(st, i);
    } else if (rc != SQLITE_DONE) {
        fprintf(stderr, "rheaper: SQL error: %s\n", sqlite3_errmsg(db));
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_finalize(st);
    return 0;
}

int rh_summary_compute(sqlite3 *db, struct rh_summary *s)
{
    memset(s, 0, sizeof *s);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT key, value FROM meta", -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "rheaper: SQL error: %s\n", sqlite3_errmsg(db));
        return -1;
    }
    char args[sizeof s->program] = "";
    int quoted = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(st, 0);
        if (!k)
            continue;
        if (!strcmp(k, "program") && sqlite3_column_text(st, 1))
            snprintf(s->program, sizeof s->program, "%s", sqlite3_column_text(st, 1));
        else if (!strcmp(k, "args") && sqlite3_column_text(st, 1) && !quoted)
            snprintf(args, sizeof args, "%s", sqlite3_column_text(st, 1));
        else if (!strcmp(k, "command_line") && sqlite3_column_text(st, 1) &&
                 (quoted = 1)) /* quoted for a shell: preferred */
            snprintf(args, sizeof args, "%s", sqlite3_column_text(st, 1));
        else if (!strcmp(k, "pid"))
            s->pid = sqlite3_column_int64(st, 1);
        else if (!strcmp(k, "title") && sqlite3_column_text(st, 1))
            snprintf(s->title, sizeof s->title, "%s", sqlite3_column_text(st, 1));
        else if (!strcmp(k, "ppid"))
            s->ppid = sqlite3_column_int64(st, 1);
        else if (!strcmp(k, "fork_parent_pid"))
            s->fork_parent_pid = sqlite3_column_int64(st, 1);
        else if (!strcmp(k, "inherited_rows"))
            s->inherited_rows = sqlite3_column_int64(st, 1);
        else if (!strcmp(k, "duration_ns"))
            s->duration_ns = sqlite3_column_int64(st, 1);
        else if (!strcmp(k, "events"))
            s->events = sqlite3_column_int64(st, 1);
        else if (!strcmp(k, "clean"))
            s->clean = sqlite3_column_int(st, 1);
    }
    sqlite3_finalize(st);
    /* The command line when recorded (it starts with the program), quoted for
     * a shell when the converter stored it so (meta.command_line), else the
     * executable's path. */
    if (args[0])
        snprintf(s->program, sizeof s->program, "%s", args);

    /* Totals: sums of the per-stack figures of the scope (rh_filter_apply). */
    int64_t *tot[] = {&s->alloc_blocks,  &s->alloc_bytes,  &s->freed_blocks,    &s->freed_bytes,
                      &s->leaked_blocks, &s->leaked_bytes, &s->temporary_blocks};
    if (rh_row_ints(db,
                    "SELECT coalesce(sum(count), 0), coalesce(sum(bytes), 0),"
                    " coalesce(sum(freed_blocks), 0), coalesce(sum(freed_bytes), 0),"
                    " coalesce(sum(leaked_blocks), 0), coalesce(sum(leaked_bytes), 0),"
                    " coalesce(sum(temporary), 0) FROM temp.sstat",
                    tot, 7))
        return -1;
    /* The peak: the first time the live bytes reached their maximum. */
    struct rh_scope sc;
    if (rh_scope_get(db, &sc))
        return -1;
    s->peak_bytes = sc.peak_bytes;
    s->peak_time_ns = sc.peak_time;
    return 0;
}

/* ---- the run's time bounds, the scope's row, the sampling rule -------------
 * (read by the filter, the filtered pass and the CPU scope, which call each
 * other only downwards, to here) */

/* Duration of the run from meta, in ns (0 when unknown). */
int64_t rh_filter_duration(sqlite3 *db)
{
    int64_t d = rh_meta_int(db, "duration_ns", 0);
    if (d <= 0)
        d = rh_sql_int(db, "SELECT max(max(alloc_after), coalesce(max(dealloc_after), 0))"
                           " FROM allocations",
                       0, 0);
    return d;
}

void rh_filter_window_ns(const struct rh_filter *f, int64_t dur, int64_t *from_ns,
                         int64_t *to_ns)
{
    *from_ns = f->from < 0 ? -1
                           : (int64_t)llround(f->from_pct ? f->from / 100.0 * (double)dur
                                                          : f->from * 1e9);
    *to_ns = f->to < 0 ? -1
                       : (int64_t)llround(f->to_pct ? f->to / 100.0 * (double)dur : f->to * 1e9);
}

void rh_filter_window(sqlite3 *db, const struct rh_filter *f, int64_t *from_ns, int64_t *to_ns)
{
    int64_t dur = f->from_pct || f->to_pct ? rh_filter_duration(db) : 0;
    rh_filter_window_ns(f, dur, from_ns, to_ns);
}

int rh_scope_get(sqlite3 *db, struct rh_scope *sc)
{
    memset(sc, 0, sizeof *sc);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT rows, peak_bytes, peak_blocks, peak_time, span, timeline"
                           " FROM temp.scope",
                           -1, &st, NULL) != SQLITE_OK)
        return rh_sql_fail(db, "scope");
    if (sqlite3_step(st) == SQLITE_ROW) {
        sc->rows = sqlite3_column_int(st, 0);
        sc->peak_bytes = sqlite3_column_int64(st, 1);
        sc->peak_blocks = sqlite3_column_int64(st, 2);
        sc->peak_time = sqlite3_column_int64(st, 3);
        sc->span = sqlite3_column_int64(st, 4);
        sc->timeline = sqlite3_column_int(st, 5);
    }
    sqlite3_finalize(st);
    return 0;
}

int rh_sample_params(sqlite3 *db, double *rate, int64_t *bytes)
{
    int mode = 0;
    *rate = 0;
    *bytes = 0;
    char m[32];
    if (!rh_meta_text(db, "sample_mode", m, sizeof m))
        return 0; /* no sampling (or no meta): a full profile */
    *rate = rh_meta_double(db, "sample_rate", 0);
    *bytes = rh_meta_int(db, "sample_bytes", 0);
    if (!strcmp(m, "rate") && *rate > 0)
        mode = RIP_SAMPLE_RATE;
    else if (!strcmp(m, "bytes") && *bytes > 0)
        mode = rh_meta_int(db, "sample_big_always", 0) == 1 ? RIP_SAMPLE_BYTES_BIG
                                                              : RIP_SAMPLE_BYTES;
    return mode;
}
