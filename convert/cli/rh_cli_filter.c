/* rh_cli_filter.c: the filters every rheaper command takes, and `sel`.
 *
 * One meaning across all commands (README, "The rheaper command"):
 *   --from T / --to T      allocations made at or after / at or before T, in
 *                          seconds since tracking started, or N% of the run
 *   --function RE          some frame's function matches RE (POSIX extended);
 *   --file RE              some frame's source file matches RE;
 *   --not-function RE,     no frame matches; each option may be repeated, and
 *   --not-file RE          every one given must hold
 *   --min-size N / --max-size N   block size bounds, inclusive (k, M, G suffixes)
 *   --lifetime leaked|temporary|MIN..MAX   never freed; temporary; freed with
 *                          a lifetime in [MIN, MAX] (ns, us, ms, s; either end
 *                          may be left out)
 *   --thread T             made by thread T: threads.id, kernel tid or name
 *   --temporary-ms T       "temporary" means a lifetime under T ms instead of
 *                          heaptrack's "freed before the same thread allocated
 *                          again"
 * rh_filter_apply() materializes the rows that pass as TEMP TABLE sel, with
 * every value bound as a parameter.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "rh_cli.h"

void rh_filter_init(struct rh_filter *f)
{
    memset(f, 0, sizeof *f);
    f->from = f->to = -1;
    f->min_size = f->max_size = -1;
    f->life_min_ns = -1;
    f->life_max_ns = -1;
    f->temporary_ms = -1;
}

/* Parses "12", "1.5", "25%" into *v (and *pct). Returns 0 or -1. */
static int rh_parse_time(const char *s, double *v, int *pct)
{
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (end == s || errno || !isfinite(d) || d < 0)
        return -1;
    *pct = 0;
    if (*end == '%') {
        *pct = 1;
        end++;
    } else if (*end == 's') {
        end++;
    }
    if (*end)
        return -1;
    *v = d;
    return 0;
}

/* Parses a size: digits with an optional k/K, m/M or g/G suffix (powers of
 * 1024) and an optional trailing B. Returns 0 or -1. */
static int rh_parse_size(const char *s, int64_t *v)
{
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9')
        return -1;
    unsigned long long n = strtoull(s, &end, 10);
    if (errno)
        return -1;
    unsigned long long mul = 1;
    switch (*end) {
    case 'k':
    case 'K':
        mul = 1ull << 10;
        end++;
        break;
    case 'm':
    case 'M':
        mul = 1ull << 20;
        end++;
        break;
    case 'g':
    case 'G':
        mul = 1ull << 30;
        end++;
        break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || n > (unsigned long long)INT64_MAX / mul)
        return -1;
    *v = (int64_t)(n * mul);
    return 0;
}

/* Parses a duration "250ms", "1.5s", "10us", "100ns" (a unit is required) into
 * ns. Returns 0 or -1. */
static int rh_parse_duration(const char *s, size_t len, int64_t *ns)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = 0;
    char *end;
    errno = 0;
    double d = strtod(buf, &end);
    if (end == buf || errno || !isfinite(d) || d < 0)
        return -1;
    double mul;
    if (!strcmp(end, "ns"))
        mul = 1;
    else if (!strcmp(end, "us"))
        mul = 1e3;
    else if (!strcmp(end, "ms"))
        mul = 1e6;
    else if (!strcmp(end, "s"))
        mul = 1e9;
    else
        return -1;
    if (d * mul > 9e18)
        return -1;
    *ns = (int64_t)llround(d * mul);
    return 0;
}

/* Checks that re compiles; prints one line and returns -1 when not. */
static int rh_check_regex(const char *opt, const char *re)
{
    regex_t r;
    int rc = regcomp(&r, re, REG_EXTENDED | REG_NOSUB);
    if (rc) {
        char msg[256];
        regerror(rc, &r, msg, sizeof msg);
        fprintf(stderr, "rheaper: %s '%s': bad regular expression (%s)\n", opt, re, msg);
        return -1;
    }
    regfree(&r);
    return 0;
}

static int rh_bad(const char *opt, const char *val, const char *want)
{
    fprintf(stderr, "rheaper: %s '%s': expected %s\n", opt, val, want);
    return -1;
}

int rh_filter_arg(struct rh_filter *f, int argc, char **argv, int *i)
{
    static const char *const opts[] = {
        "--from",     "--to",       "--function", "--not-function", "--file",         "--not-file",
        "--min-size", "--max-size", "--lifetime", "--thread",       "--temporary-ms", NULL};
    const char *a = argv[*i], *val = NULL;
    int k;
    size_t alen = 0;
    for (k = 0; opts[k]; k++) {
        alen = strlen(opts[k]);
        if (!strncmp(a, opts[k], alen) && (a[alen] == 0 || a[alen] == '='))
            break;
    }
    if (!opts[k])
        return 0;
    const char *opt = opts[k];
    if (a[alen] == '=') {
        val = a + alen + 1;
    } else {
        if (*i + 1 >= argc) {
            fprintf(stderr, "rheaper: %s needs a value\n", opt);
            return -1;
        }
        val = argv[++*i];
    }
    switch (k) {
    case 0:
        if (rh_parse_time(val, &f->from, &f->from_pct))
            return rh_bad(opt, val, "seconds or a percentage (e.g. 1.5 or 25%)");
        break;
    case 1:
        if (rh_parse_time(val, &f->to, &f->to_pct))
            return rh_bad(opt, val, "seconds or a percentage (e.g. 1.5 or 75%)");
        break;
    case 2:
    case 3:
    case 4:
    case 5: {
        const char **arr = k == 2   ? f->func_re
                           : k == 3 ? f->not_func_re
                           : k == 4 ? f->file_re
                                    : f->not_file_re;
        int *n = k == 2 ? &f->nfunc : k == 3 ? &f->nnot_func : k == 4 ? &f->nfile : &f->nnot_file;
        if (*n >= 8) {
            fprintf(stderr, "rheaper: %s given more than 8 times\n", opt);
            return -1;
        }
        if (rh_check_regex(opt, val))
            return -1;
        arr[(*n)++] = val;
        break;
    }
    case 6:
        if (rh_parse_size(val, &f->min_size))
            return rh_bad(opt, val, "a size in bytes (k, M, G suffixes allowed)");
        break;
    case 7:
        if (rh_parse_size(val, &f->max_size))
            return rh_bad(opt, val, "a size in bytes (k, M, G suffixes allowed)");
        break;
    case 8: {
        if (!strcmp(val, "leaked")) {
            f->lifetime = 1;
            break;
        }
        if (!strcmp(val, "temporary")) {
            f->lifetime = 2;
            break;
        }
        const char *dots = strstr(val, "..");
        const char *want = "leaked, temporary or MIN..MAX with units ns, us, ms, s "
                           "(e.g. 1ms..2s, ..500us)";
        if (!dots)
            return rh_bad(opt, val, want);
        f->life_min_ns = f->life_max_ns = -1;
        if (dots > val && rh_parse_duration(val, (size_t)(dots - val), &f->life_min_ns))
            return rh_bad(opt, val, want);
        if (dots[2] && rh_parse_duration(dots + 2, strlen(dots + 2), &f->life_max_ns))
            return rh_bad(opt, val, want);
        f->lifetime = 3;
        break;
    }
    case 9:
        if (!*val)
            return rh_bad(opt, val, "a thread id, tid or name");
        f->thread = val;
        break;
    case 10: {
        char *end;
        errno = 0;
        double d = strtod(val, &end);
        if (end == val || *end || errno || !isfinite(d) || d < 0)
            return rh_bad(opt, val, "milliseconds (e.g. 5 or 0.5)");
        f->temporary_ms = d;
        break;
    }
    }
    return 1;
}

/* Appends text to the SQL buffer; returns -1 when it does not fit. */
static int rh_cat(char *sql, size_t cap, const char *s)
{
    size_t n = strlen(sql), m = strlen(s);
    if (n + m >= cap)
        return -1;
    memcpy(sql + n, s, m + 1);
    return 0;
}

/* Parameters in the order the WHERE clause uses them. */
struct rh_binds {
    enum { RH_B_INT, RH_B_DBL, RH_B_TEXT } t[64];
    int64_t i[64];
    double d[64];
    const char *s[64];
    int n;
};

static void rh_bind_int(struct rh_binds *b, int64_t v)
{
    b->t[b->n] = RH_B_INT;
    b->i[b->n++] = v;
}

static void rh_bind_text(struct rh_binds *b, const char *v)
{
    b->t[b->n] = RH_B_TEXT;
    b->s[b->n++] = v;
}

/* Duration of the run from meta, in ns (0 when unknown). */
static int64_t rh_duration(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int64_t d = 0;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'duration_ns'", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        d = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (d <= 0) {
        st = NULL;
        if (sqlite3_prepare_v2(db,
                               "SELECT max(max(alloc_after), coalesce(max(dealloc_after), 0))"
                               " FROM allocations",
                               -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            d = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return d;
}

int rh_filter_apply(sqlite3 *db, const struct rh_filter *f)
{
    char sql[8192] = "", where[6144] = "1";
    struct rh_binds b = {.n = 0};
    int64_t dur = (f->from_pct || f->to_pct) ? rh_duration(db) : 0;
    int bad = 0;

    if (f->from >= 0) {
        bad |= rh_cat(where, sizeof where, " AND alloc_after >= ?");
        rh_bind_int(&b,
                    (int64_t)llround(f->from_pct ? f->from / 100.0 * (double)dur : f->from * 1e9));
    }
    if (f->to >= 0) {
        bad |= rh_cat(where, sizeof where, " AND alloc_after <= ?");
        rh_bind_int(&b, (int64_t)llround(f->to_pct ? f->to / 100.0 * (double)dur : f->to * 1e9));
    }
    /* --function, --not-function, --file, --not-file: any frame of the stack */
    const struct {
        const char *cond;
        const char *const *re;
        int n;
    } res[] = {
        {" AND bt IN (SELECT id FROM backtraces WHERE sym REGEXP ?)", f->func_re, f->nfunc},
        {" AND bt NOT IN (SELECT id FROM backtraces WHERE sym REGEXP ?)", f->not_func_re,
         f->nnot_func},
        {" AND bt IN (SELECT id FROM backtraces WHERE file REGEXP ?)", f->file_re, f->nfile},
        {" AND bt NOT IN (SELECT id FROM backtraces WHERE file REGEXP ?)", f->not_file_re,
         f->nnot_file},
    };
    for (size_t r = 0; r < sizeof res / sizeof res[0]; r++) {
        for (int k = 0; k < res[r].n; k++) {
            bad |= rh_cat(where, sizeof where, res[r].cond);
            rh_bind_text(&b, res[r].re[k]);
        }
    }
    if (f->min_size >= 0) {
        bad |= rh_cat(where, sizeof where, " AND size >= ?");
        rh_bind_int(&b, f->min_size);
    }
    if (f->max_size >= 0) {
        bad |= rh_cat(where, sizeof where, " AND size <= ?");
        rh_bind_int(&b, f->max_size);
    }
    if (f->lifetime == 1) {
        bad |= rh_cat(where, sizeof where, " AND dealloc_after IS NULL");
    } else if (f->lifetime == 2) {
        bad |= rh_cat(where, sizeof where, " AND temporary");
    } else if (f->lifetime == 3) {
        bad |= rh_cat(where, sizeof where, " AND dealloc_after IS NOT NULL");
        if (f->life_min_ns >= 0) {
            bad |= rh_cat(where, sizeof where, " AND dealloc_after - alloc_after >= ?");
            rh_bind_int(&b, f->life_min_ns);
        }
        if (f->life_max_ns >= 0) {
            bad |= rh_cat(where, sizeof where, " AND dealloc_after - alloc_after <= ?");
            rh_bind_int(&b, f->life_max_ns);
        }
    }
    if (f->thread) {
        bad |= rh_cat(where, sizeof where,
                      " AND alloc_thread IN (SELECT id FROM threads WHERE CAST(id AS TEXT) = ?1"
                      " OR CAST(tid AS TEXT) = ?1 OR name = ?1)");
    }
    if (bad) {
        fprintf(stderr, "rheaper: too many filters\n");
        return -1;
    }

    /* `temporary` is the converter's flag (allocations.temporary, heaptrack's
     * definition), or a lifetime under the --temporary-ms threshold ?2 in ns.
     * ?1 is the thread (or NULL). */
    snprintf(sql, sizeof sql,
             "DROP TABLE IF EXISTS temp.sel;"
             "CREATE TEMP TABLE sel AS SELECT id, alloc_after, dealloc_after, bt, size, addr,"
             " alloc_thread, dealloc_thread, kind, 0 AS lifetime, 0 AS temporary"
             " FROM allocations WHERE 0;");
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "rheaper: SQL error: %s\n", msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return -1;
    }
    int n = snprintf(sql, sizeof sql,
                     "INSERT INTO sel SELECT * FROM (SELECT id, alloc_after, dealloc_after, bt,"
                     " size, addr, alloc_thread, dealloc_thread, kind,"
                     " dealloc_after - alloc_after AS lifetime,"
                     " CASE WHEN ?2 IS NOT NULL THEN dealloc_after IS NOT NULL AND"
                     " dealloc_after - alloc_after < ?2"
                     " ELSE temporary END AS temporary FROM allocations)"
                     " WHERE %s ORDER BY id",
                     where);
    if (n < 0 || (size_t)n >= sizeof sql) {
        fprintf(stderr, "rheaper: too many filters\n");
        return -1;
    }
    /* Number the plain ? placeholders from ?3 on, so ?1 and ?2 stay fixed. */
    char numbered[9216];
    size_t o = 0;
    int next = 3;
    for (const char *p = sql; *p && o + 8 < sizeof numbered; p++) {
        if (*p == '?' && !(p[1] >= '0' && p[1] <= '9'))
            o += (size_t)snprintf(numbered + o, sizeof numbered - o, "?%d", next++);
        else
            numbered[o++] = *p;
    }
    numbered[o] = 0;

    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, numbered, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "rheaper: SQL error: %s\n", sqlite3_errmsg(db));
        return -1;
    }
    if (f->thread)
        sqlite3_bind_text(st, 1, f->thread, -1, SQLITE_STATIC);
    if (f->temporary_ms >= 0)
        sqlite3_bind_int64(st, 2, (int64_t)llround(f->temporary_ms * 1e6));
    for (int k = 0; k < b.n; k++) {
        if (b.t[k] == RH_B_INT)
            sqlite3_bind_int64(st, 3 + k, b.i[k]);
        else if (b.t[k] == RH_B_DBL)
            sqlite3_bind_double(st, 3 + k, b.d[k]);
        else
            sqlite3_bind_text(st, 3 + k, b.s[k], -1, SQLITE_STATIC);
    }
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        fprintf(stderr, "rheaper: SQL error: %s\n", sqlite3_errmsg(db));
        return -1;
    }
    if (sqlite3_exec(db, "CREATE INDEX temp.sel_bt ON sel(bt)", NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "rheaper: SQL error: %s\n", msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}
