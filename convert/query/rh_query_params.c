/* rh_query_params.c: bytehound's filter parameters, on top of the shared filters.
 *
 * bytehound's server takes its filters as URL parameters (from, to, lifetime,
 * size_min, function_regex, group_allocations_min, ...). Each of them that the
 * CLI also has is turned into the CLI's own option and handed to
 * rh_filter_arg() (rh_query_filter.c), so a URL parameter and a CLI flag fill the
 * same struct rh_filter with the same parser and rh_filter_apply() writes the
 * same SQL for both. What only bytehound has (address and backtrace depth
 * bounds, its lifetime modes and lifetime bounds, one backtrace id
 * `backtraces`, the group filters) is kept
 * beside it in struct rh_qfilter and applied by rh_qfilter_apply() on top of
 * `sel`, as the TEMP table or view `msel`. The call-site options skip_function
 * and no_skip, thread, kind and not_kind are rheaper's additions in the same
 * style. Regular expressions are POSIX extended (as in the CLI), bounded:
 * at most RH_QF_RE_MAX characters and no back-references, compiled and
 * matched by rh_regex.c under its memory and step limits, so a pattern
 * cannot grow or hang a server.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rh_query.h"
#include "rh_schema.h"
#include "rh_regex.h"

void rh_qfilter_init(struct rh_qfilter *q)
{
    memset(q, 0, sizeof *q);
    rh_filter_init(&q->f);
    q->addr_min = q->addr_max = -1;
    q->backtrace = -1;
    q->depth_min = q->depth_max = -1;
    q->life_min_ns = q->life_max_ns = -1;
    q->gint_min = q->gint_max = -1;
    q->galloc_min = q->galloc_max = -1;
    q->gleak_min = q->gleak_max = -1;
}

static int rh_qf_err(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

/* Parses an unsigned decimal (or 0x hex) integer that fits int64. */
static int rh_qf_uint(const char *s, int64_t *v)
{
    char *end;
    if (!*s || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    errno = 0;
    unsigned long long n = strtoull(s, &end, 0);
    if (errno || *end || n > (unsigned long long)INT64_MAX)
        return -1;
    *v = (int64_t)n;
    return 0;
}

/* "12" or "25%": a count, or a percentage when *pct is set. */
static int rh_qf_count_pct(const char *s, int64_t *v, int *pct)
{
    size_t n = strlen(s);
    *pct = n > 0 && s[n - 1] == '%';
    if (!*pct)
        return rh_qf_uint(s, v);
    char buf[32];
    if (n - 1 == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n - 1);
    buf[n - 1] = 0;
    return rh_qf_uint(buf, v) || *v > 100 ? -1 : 0;
}

int rh_qfilter_regex_ok(const char *re, char *err, size_t n)
{
    if (strlen(re) > RH_QF_RE_MAX)
        return rh_qf_err(err, n, "longer than %d characters", RH_QF_RE_MAX);
    for (const char *p = re; *p; p++)
        if (*p == '\\' && p[1]) {
            if (p[1] >= '1' && p[1] <= '9')
                return rh_qf_err(err, n, "back-references are not allowed");
            p++;
        }
    /* repetition counts multiply the automaton: keep them small */
    for (const char *p = re; *p; p++)
        if (*p == '{') {
            long a = strtol(p + 1, NULL, 10);
            const char *c = strchr(p, ',');
            long b = c && c < strchr(p, '}') ? strtol(c + 1, NULL, 10) : 0;
            if (a > 100 || b > 100)
                return rh_qf_err(err, n, "repetition counts above 100 are not allowed");
        }
    char msg[200];
    struct rh_re *r = rh_re_compile(re, msg, sizeof msg);
    if (!r)
        return rh_qf_err(err, n, "invalid regular expression: %s", msg);
    rh_re_free(r);
    return 0;
}

/* 1 when a parameter's name ends in "_min". */
static int rh_qf_is_min(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && !strcmp(name + n - 4, "_min");
}

/* Hands "--OPT VALUE" to the CLI's parser. Returns 1 or -1 (err filled). */
static int rh_qf_cli(struct rh_qfilter *q, const char *opt, const char *val, const char *name,
                     char *err, size_t n)
{
    char *argv[2] = {(char *)opt, (char *)val};
    int i = 0;
    int argc = val ? 2 : 1;
    rh_filter_set_quiet(1); /* the answer names the parameter, not the option */
    int r = rh_filter_arg(&q->f, argc, argv, &i);
    rh_filter_set_quiet(0);
    if (r != 1)
        return rh_qf_err(err, n, "bad value '%s' for %s", val ? val : "", name);
    return 1;
}

int rh_qfilter_param(struct rh_qfilter *q, const char *name, const char *val, char *err, size_t n)
{
    err[0] = 0;
    if (!val)
        val = "";
    /* bytehound's regexes and rheaper's call-site regex: bounded, then the CLI */
    static const struct {
        const char *name, *opt;
    } re[] = {{"function_regex", "--function"},
              {"source_regex", "--file"},
              {"negative_function_regex", "--not-function"},
              {"negative_source_regex", "--not-file"},
              {"skip_function", "--skip-function"}};
    for (size_t k = 0; k < sizeof re / sizeof re[0]; k++)
        if (!strcmp(name, re[k].name)) {
            char why[256];
            if (!*val)
                return 1; /* an empty form field: no filter */
            if (rh_qfilter_regex_ok(val, why, sizeof why))
                return rh_qf_err(err, n, "%s: %s", name, why);
            return rh_qf_cli(q, re[k].opt, val, name, err, n);
        }
    if (!*val)
        return 1; /* every other empty parameter is "unset", as a form sends it */
    if (!strcmp(name, "from") || !strcmp(name, "to")) {
        /* bytehound: whole seconds or N%; "to" in seconds covers that whole
         * second (to=2 is up to 2.999999999 s). Fractions are accepted too. */
        char *end;
        errno = 0;
        double d = strtod(val, &end);
        int pct = *end == '%';
        if (end == val || errno || !isfinite(d) || d < 0 || (*end && !(pct && !end[1])) ||
            (pct && d > 100) || d > 1e9)
            return rh_qf_err(err, n, "bad value '%s' for %s: seconds or a percentage", val, name);
        char buf[64];
        if (!pct && name[0] == 't' && d == floor(d))
            snprintf(buf, sizeof buf, "%.9f", d + 1 - 1e-9);
        else
            snprintf(buf, sizeof buf, "%s", val);
        return rh_qf_cli(q, name[0] == 'f' ? "--from" : "--to", buf, name, err, n);
    }
    if (!strcmp(name, "size_min") || !strcmp(name, "size_max"))
        return rh_qf_cli(q, rh_qf_is_min(name) ? "--min-size" : "--max-size", val, name, err, n);
    if (!strcmp(name, "thread"))
        return rh_qf_cli(q, "--thread", val, name, err, n);
    if (!strcmp(name, "kind") || !strcmp(name, "not_kind"))
        return rh_qf_cli(q, name[0] == 'k' ? "--kind" : "--not-kind", val, name, err, n);
    if (!strcmp(name, "temporary_ms"))
        return rh_qf_cli(q, "--temporary-ms", val, name, err, n);
    if (!strcmp(name, "no_skip")) {
        if (strcmp(val, "1") && strcmp(val, "true") && strcmp(val, "0") && strcmp(val, "false"))
            return rh_qf_err(err, n, "bad value '%s' for no_skip: 1 or 0", val);
        if (val[0] == '1' || val[0] == 't')
            return rh_qf_cli(q, "--no-skip", NULL, name, err, n);
        return 1;
    }
    if (!strcmp(name, "lifetime")) {
        static const char *const modes[] = {"all",
                                            "only_leaked",
                                            "only_not_deallocated_in_current_range",
                                            "only_deallocated_in_current_range",
                                            "only_temporary",
                                            "only_whole_group_leaked",
                                            "only_heaptrack_temporary",
                                            NULL};
        for (int k = 0; modes[k]; k++)
            if (!strcmp(val, modes[k])) {
                q->lifetime = k;
                if (k == 1)
                    return rh_qf_cli(q, "--lifetime", "leaked", name, err, n);
                if (k == 4) /* bytehound: every block that was freed */
                    return rh_qf_cli(q, "--lifetime", "..", name, err, n);
                if (k == 6) /* rheaper: heaptrack's temporary allocations */
                    return rh_qf_cli(q, "--lifetime", "temporary", name, err, n);
                return 1;
            }
        return rh_qf_err(err, n,
                         "bad value '%s' for lifetime: all, only_leaked,"
                         " only_not_deallocated_in_current_range,"
                         " only_deallocated_in_current_range, only_temporary,"
                         " only_whole_group_leaked or only_heaptrack_temporary",
                         val);
    }
    struct {
        const char *name;
        int64_t *v;
    } ints[] = {{"address_min", &q->addr_min},
                {"address_max", &q->addr_max},
                {"backtraces", &q->backtrace}};
    for (size_t k = 0; k < 3; k++)
        if (!strcmp(name, ints[k].name)) {
            if (rh_qf_uint(val, ints[k].v))
                return rh_qf_err(err, n, "bad value '%s' for %s: an address", val, name);
            return 1;
        }
    if (!strcmp(name, "backtrace_depth_min") || !strcmp(name, "backtrace_depth_max")) {
        int64_t v;
        if (rh_qf_uint(val, &v) || v > 100000)
            return rh_qf_err(err, n, "bad value '%s' for %s: a frame count", val, name);
        *(rh_qf_is_min(name) ? &q->depth_min : &q->depth_max) = v;
        return 1;
    }
    if (!strcmp(name, "lifetime_min") || !strcmp(name, "lifetime_max")) {
        if (rh_parse_interval(val, strlen(val), rh_qf_is_min(name) ? &q->life_min_ns : &q->life_max_ns))
            return rh_qf_err(err, n, "bad value '%s' for %s: an interval (e.g. 2, 250ms, 1m30s)",
                             val, name);
        return 1;
    }
    if (!strcmp(name, "group_interval_min") || !strcmp(name, "group_interval_max")) {
        int mn = rh_qf_is_min(name);
        size_t l = strlen(val);
        int64_t v;
        int pct = l && val[l - 1] == '%';
        if (pct ? rh_qf_count_pct(val, &v, &pct) : rh_parse_interval(val, strlen(val), &v))
            return rh_qf_err(err, n, "bad value '%s' for %s: an interval or a percentage", val,
                             name);
        *(mn ? &q->gint_min : &q->gint_max) = v;
        *(mn ? &q->gint_min_pct : &q->gint_max_pct) = pct;
        return 1;
    }
    static const char *const gnames[] = {"group_allocations_min", "group_allocations_max",
                                         "group_leaked_allocations_min",
                                         "group_leaked_allocations_max"};
    int64_t *gv[] = {&q->galloc_min, &q->galloc_max, &q->gleak_min, &q->gleak_max};
    int *gp[] = {&q->galloc_min_pct, &q->galloc_max_pct, &q->gleak_min_pct, &q->gleak_max_pct};
    for (int k = 0; k < 4; k++)
        if (!strcmp(name, gnames[k])) {
            if (rh_qf_count_pct(val, gv[k], gp[k]))
                return rh_qf_err(err, n, "bad value '%s' for %s: a count or a percentage", val,
                                 name);
            return 1;
        }
    return 0;
}

int rh_qfilter_extra(const struct rh_qfilter *q)
{
    return q->addr_min >= 0 || q->addr_max >= 0 || q->backtrace >= 0 || q->depth_min >= 0 ||
           q->depth_max >= 0 || q->life_min_ns >= 0 || q->life_max_ns >= 0 || q->lifetime == 2 ||
           q->lifetime == 3 || q->lifetime == 5 || rh_qfilter_group(q);
}

int rh_qfilter_group(const struct rh_qfilter *q)
{
    return q->gint_min >= 0 || q->gint_max >= 0 || q->galloc_min >= 0 || q->galloc_max >= 0 ||
           q->gleak_min >= 0 || q->gleak_max >= 0;
}

/* Writes every field of q that selects rows or call sites into buf (n
 * bytes), strings with their lengths, so two filters have the same key
 * exactly when they build the same scope. Returns 0, or -1 when it does not
 * fit. */
static int rh_qfilter_key(const struct rh_qfilter *q, char *buf, size_t n)
{
    const struct rh_filter *f = &q->f;
    size_t o = 0;
#define RH_KEY(...)                                                                                \
    do {                                                                                           \
        int k_ = snprintf(buf + o, n - o, __VA_ARGS__);                                            \
        if (k_ < 0 || (size_t)k_ >= n - o)                                                         \
            return -1;                                                                             \
        o += (size_t)k_;                                                                           \
    } while (0)
#define RH_KEY_STRS(tag, a, cnt)                                                                   \
    do {                                                                                           \
        RH_KEY("%s%d", tag, cnt);                                                                  \
        for (int i_ = 0; i_ < (cnt); i_++)                                                         \
            RH_KEY(":%zu:%s", strlen((a)[i_]), (a)[i_]);                                           \
    } while (0)
    RH_KEY("t%.17g,%d,%.17g,%d;s%lld,%lld;l%d,%lld,%lld;m%.17g;", f->from, f->from_pct, f->to,
           f->to_pct, (long long)f->min_size, (long long)f->max_size, f->lifetime,
           (long long)f->life_min_ns, (long long)f->life_max_ns, f->temporary_ms);
    RH_KEY_STRS("F", f->func_re, f->nfunc);
    RH_KEY_STRS("G", f->not_func_re, f->nnot_func);
    RH_KEY_STRS("S", f->file_re, f->nfile);
    RH_KEY_STRS("T", f->not_file_re, f->nnot_file);
    RH_KEY_STRS("K", f->kind, f->nkind);
    RH_KEY_STRS("L", f->not_kind, f->nnot_kind);
    RH_KEY_STRS("X", f->skip_re, f->nskip);
    RH_KEY("n%d;h", f->no_skip);
    if (f->thread)
        RH_KEY("%zu:%s", strlen(f->thread), f->thread);
    RH_KEY(";q%d,%lld,%lld,%lld,%lld,%lld,%lld,%lld", q->lifetime, (long long)q->addr_min,
           (long long)q->addr_max, (long long)q->backtrace, (long long)q->depth_min,
           (long long)q->depth_max, (long long)q->life_min_ns, (long long)q->life_max_ns);
    RH_KEY(";g%lld,%lld,%d,%d,%lld,%lld,%d,%d,%lld,%lld,%d,%d", (long long)q->gint_min,
           (long long)q->gint_max, q->gint_min_pct, q->gint_max_pct, (long long)q->galloc_min,
           (long long)q->galloc_max, q->galloc_min_pct, q->galloc_max_pct,
           (long long)q->gleak_min, (long long)q->gleak_max, q->gleak_min_pct, q->gleak_max_pct);
#undef RH_KEY_STRS
#undef RH_KEY
    return 0;
}

/* 1 when db's scope was built by rh_qfilter_apply from a filter with this
 * key and nothing has replaced it since (TEMP TABLE scopekey), and keeps as
 * much of the heap over time as chart asks for (enum rh_chart): a scope
 * built for a chart answers every other question too; one built from the
 * aggregates (a stack filter's, rh_query_stackscope.c) is built again for a
 * chart it lacks. */
static int rh_scope_is(sqlite3 *db, const char *key, int chart)
{
    sqlite3_stmt *st = NULL; /* no such table: nothing kept */
    int same = 0;
    if (sqlite3_prepare_v2(db, "SELECT k = ?1 AND chart >= ?2 FROM temp.scopekey", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, chart);
        same = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0) == 1;
    }
    sqlite3_finalize(st);
    return same;
}

static int rh_qfilter_build(sqlite3 *db, const struct rh_qfilter *q);

/* The level of enum rh_chart the scope just built answers: the pass's and
 * an unfiltered scope's every level; one from the aggregates
 * (TEMP sgroup) RH_CHART_SITES with its group's timeline, else none. */
static int rh_scope_chart(sqlite3 *db)
{
    struct rh_scope sc;
    if (rh_scope_get(db, &sc))
        return RH_CHART_NONE;
    if (!sc.rows ||
        !rh_sql_int(db, "SELECT count(*) FROM temp.sqlite_master WHERE name = 'sgroup'", 0, 0))
        return RH_CHART_EVENTS;
    return sc.timeline ? RH_CHART_SITES : RH_CHART_NONE;
}

int rh_qfilter_apply(sqlite3 *db, const struct rh_qfilter *q)
{
    /* The server asks one connection again and again, often with the same
     * filters (a page's views): the scope it built last is kept, with the key
     * of its filter, and reused when the key is the same. */
    char key[8192];
    int keyed = rh_qfilter_key(q, key, sizeof key) == 0;
    if (keyed && rh_scope_is(db, key, q->f.chart))
        return 0;
    if (rh_temp_drop(db, "scopekey") || rh_qfilter_build(db, q))
        return -1;
    if (!keyed)
        return 0;
    sqlite3_stmt *st = NULL;
    if (rh_sql_exec(db, "CREATE TEMP TABLE scopekey(k TEXT, chart INTEGER)") ||
        sqlite3_prepare_v2(db, "INSERT INTO temp.scopekey VALUES(?1, ?2)", -1, &st, NULL) !=
            SQLITE_OK)
        return rh_sql_fail(db, "filter");
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, rh_scope_chart(db));
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : rh_sql_fail(db, "filter");
    sqlite3_finalize(st);
    return rc;
}

/* The scope of q (rh_qfilter_apply's contract), built anew. */
static int rh_qfilter_build(sqlite3 *db, const struct rh_qfilter *q)
{
    /* A connection answers many requests (the server): drop the last scope's
     * sel, which may be a view, before rh_filter_apply() makes a new one. */
    if (rh_temp_drop(db, "sel") || rh_temp_drop(db, "msel") || rh_filter_apply(db, &q->f))
        return -1;
    if (rh_sql_exec(db, "DROP TABLE IF EXISTS temp.gall;"))
        return -1;
    /* gall: every group's figures over the whole profile (bytehound's "all") */
    int agg = rh_table_exists(db, "stack_stats") && rh_meta_int(db, "aggregates", 0) == 1;
    if (rh_sql_exec(db, agg ? "CREATE TEMP TABLE gall AS SELECT bt, count, bytes, leaked_blocks,"
                             " first_alloc, last_alloc FROM main.stack_stats"
                           : "CREATE TEMP TABLE gall AS SELECT bt, count(*) AS count,"
                             " sum(size) AS bytes, sum(dealloc_after IS NULL) AS leaked_blocks,"
                             " min(alloc_after) AS first_alloc, max(alloc_after) AS last_alloc"
                             " FROM main.allocations GROUP BY bt") ||
        rh_sql_exec(db, "CREATE UNIQUE INDEX temp.gall_bt ON gall(bt)"))
        return -1;
    if (!rh_qfilter_extra(q))
        return rh_sql_exec(db, "CREATE TEMP VIEW msel AS SELECT * FROM sel");

    char where[2048] = "1";
    size_t w = 1;
#define RH_W(...) w += (size_t)snprintf(where + w, sizeof where - w, __VA_ARGS__)
    int64_t dur = rh_filter_duration(db);
    if (q->addr_min >= 0)
        RH_W(" AND addr >= %lld", (long long)q->addr_min);
    if (q->addr_max >= 0)
        RH_W(" AND addr <= %lld", (long long)q->addr_max);
    if (q->backtrace >= 0)
        RH_W(" AND bt = %lld", (long long)q->backtrace);
    if (q->depth_min >= 0 || q->depth_max >= 0)
        /* the depth is the length of the backtrace bytehound's JSON lists,
         * inlined frames included */
        RH_W(" AND bt IN (SELECT id FROM backtraces GROUP BY id HAVING count(*) BETWEEN %lld AND"
             " %lld)",
             (long long)(q->depth_min < 0 ? 0 : q->depth_min),
             (long long)(q->depth_max < 0 ? INT64_MAX : q->depth_max));
    /* bytehound: a leaked block passes lifetime_min and fails lifetime_max */
    if (q->life_min_ns >= 0)
        RH_W(" AND (dealloc_after IS NULL OR dealloc_after - alloc_after >= %lld)",
             (long long)q->life_min_ns);
    if (q->life_max_ns >= 0)
        RH_W(" AND dealloc_after IS NOT NULL AND dealloc_after - alloc_after <= %lld",
             (long long)q->life_max_ns);
    if (q->lifetime == 2 || q->lifetime == 3) {
        /* the current range ends at `to` (its resolved time), else never */
        int64_t from, end;
        rh_filter_window_ns(&q->f, dur, &from, &end);
        if (end < 0)
            end = INT64_MAX;
        if (q->lifetime == 2)
            RH_W(" AND (dealloc_after IS NULL OR dealloc_after > %lld)", (long long)end);
        else
            RH_W(" AND dealloc_after IS NOT NULL AND dealloc_after <= %lld", (long long)end);
    }
    if (q->lifetime == 5)
        RH_W(" AND dealloc_after IS NULL AND bt IN (SELECT bt FROM gall WHERE leaked_blocks ="
             " count)");
    if (rh_qfilter_group(q)) {
        int64_t total = rh_sql_int(db, "SELECT sum(count) FROM gall", 0, 0);
        RH_W(" AND bt IN (SELECT bt FROM gall WHERE 1");
        if (q->galloc_min >= 0)
            RH_W(" AND count >= %lld",
                 (long long)(q->galloc_min_pct ? q->galloc_min * total / 100 : q->galloc_min));
        if (q->galloc_max >= 0)
            RH_W(" AND count <= %lld",
                 (long long)(q->galloc_max_pct ? q->galloc_max * total / 100 : q->galloc_max));
        /* bytehound: a percentage of the group's own allocations, truncated */
        if (q->gleak_min >= 0)
            RH_W(q->gleak_min_pct ? " AND leaked_blocks >= CAST(count * %lld / 100.0 AS INTEGER)"
                                  : " AND leaked_blocks >= %lld",
                 (long long)q->gleak_min);
        if (q->gleak_max >= 0)
            RH_W(q->gleak_max_pct ? " AND leaked_blocks <= CAST(count * %lld / 100.0 AS INTEGER)"
                                  : " AND leaked_blocks <= %lld",
                 (long long)q->gleak_max);
        if (q->gint_min >= 0)
            RH_W(" AND last_alloc - first_alloc >= %lld",
                 (long long)(q->gint_min_pct ? q->gint_min * dur / 100 : q->gint_min));
        if (q->gint_max >= 0)
            RH_W(" AND last_alloc - first_alloc <= %lld",
                 (long long)(q->gint_max_pct ? q->gint_max * dur / 100 : q->gint_max));
        RH_W(")");
    }
#undef RH_W
    if (w >= sizeof where) {
        fprintf(stderr, "rheaper: too many filters\n");
        return -1;
    }
    /* msel holds the rows; sel becomes a view of it and sstat is summed
     * again, so every writer that reads sel or sstat (flamegraph, heaptrack,
     * leaks) sees bytehound's filters too. The scope's peak is that of msel's
     * rows (the highest running sum of their allocations and frees in time
     * order, first reached), and the peak columns are taken at its time, as
     * the pass takes them for the CLI's filters. The pass's timeline and
     * leak curve do not know bytehound's filters: timeline = 0 and
     * leak_buckets = 0 make their readers compute them from sel's rows. */
    /* sstat's figures are estimates on a sampled profile, summed
     * as the converter and the C pass sum them (RH_W_N, rh_schema.h) */
    char sql[8192];
    snprintf(sql, sizeof sql,
             "CREATE TEMP TABLE msel AS SELECT * FROM sel WHERE %s ORDER BY id;"
             "CREATE INDEX temp.msel_bt ON msel(bt);"
             "WITH ev(t, d) AS (SELECT alloc_after, " RH_W_ROW_B " FROM msel UNION ALL"
             " SELECT dealloc_after, -" RH_W_ROW_B " FROM msel WHERE dealloc_after IS NOT NULL),"
             " run AS (SELECT t, sum(d) OVER (ORDER BY t ROWS UNBOUNDED PRECEDING) AS live FROM ev),"
             " top AS (SELECT live, t FROM run ORDER BY live DESC, t LIMIT 1)"
             " UPDATE temp.scope SET peak_bytes = coalesce((SELECT live FROM top), 0),"
             " peak_time = coalesce((SELECT t FROM top), 0);"
             "DROP TABLE temp.sstat;"
             "CREATE TEMP TABLE sstat AS SELECT bt, " RH_W_N("1") " AS count,"
             " sum(" RH_W_ROW_B ") AS bytes,"
             " " RH_W_N("dealloc_after IS NOT NULL") " AS freed_blocks,"
             " sum(CASE WHEN dealloc_after IS NOT NULL THEN " RH_W_ROW_B " ELSE 0 END) AS freed_bytes,"
             " " RH_W_N("dealloc_after IS NULL") " AS leaked_blocks,"
             " sum(CASE WHEN dealloc_after IS NULL THEN " RH_W_ROW_B " ELSE 0 END) AS leaked_bytes,"
             " " RH_W_N("alloc_after <= p.t AND (dealloc_after IS NULL OR dealloc_after > p.t)")
             " AS peak_blocks,"
             " sum(CASE WHEN alloc_after <= p.t AND (dealloc_after IS NULL OR"
             " dealloc_after > p.t) THEN " RH_W_ROW_B " ELSE 0 END) AS peak_bytes,"
             " " RH_W_N("temporary") " AS temporary, min(alloc_after) AS first_alloc,"
             " max(alloc_after) AS last_alloc"
             " FROM msel, (SELECT peak_time AS t FROM temp.scope) p GROUP BY bt;"
             "UPDATE temp.scope SET rows = 1, timeline = 0, leak_buckets = 0,"
             " peak_blocks = (SELECT coalesce(sum(peak_blocks), 0) FROM temp.sstat);",
             where);
    if (rh_sql_exec(db, sql) || rh_temp_drop(db, "sel"))
        return -1;
    return rh_sql_exec(db, "CREATE TEMP VIEW sel AS SELECT * FROM msel");
}
