/* rh_query_filter.c: the filters every rheaper command takes, and `sel`.
 *
 * One meaning across all commands (docs/commands.md):
 *   --from T / --to T      allocations made at or after / at or before T, in
 *                          seconds since tracking started, or N% of the run
 *   --function RE          some frame's function matches RE (POSIX extended);
 *   --file RE              some frame's source file matches RE;
 *   --not-function RE,     no frame matches; each option may be repeated, and
 *   --not-file RE          every one given must hold
 *   --min-size N / --max-size N   block size bounds, inclusive (k, M, G suffixes)
 *   --lifetime leaked|temporary|MIN..MAX   never freed; temporary; freed with
 *                          a lifetime in [MIN, MAX] (rh_parse_interval, the
 *                          one parser of lifetimes the URL's lifetime_min and
 *                          lifetime_max also use; either end may be left out)
 *   --thread T             made by thread T: threads.id, kernel tid or name
 *   --temporary-ms T       "temporary" means a lifetime under T ms instead of
 *                          heaptrack's definition (the allocations.temporary
 *                          column)
 *   --kind K / --not-kind K   the allocation function (kind) is one of the
 *                          --kind values / none of the --not-kind values: a
 *                          pool's name, malloc, je_malloc, ...
 *                          (docs/allocators.md: not counting pool bytes twice)
 * and two options that are not row filters but choose call sites:
 *   --skip-function RE     also skip frames whose function matches RE when
 *                          finding a stack's call site
 *   --no-skip              the call site is frame 0 (no wrapper skipped)
 * rh_filter_apply() builds the scope every reader uses (rh_query.h): per
 * stack figures, call sites, the peak and the rows that pass, with every value
 * bound as a parameter. Without row filters it only copies the converter's
 * aggregates; with them it resolves stack, kind and thread filters over the
 * distinct stacks and threads, turns time filters into an id range, and
 * computes the figures of the selection in one ordered pass over that range
 * (rh_query_pass.c). Two shortcuts keep the answers the pass gives: a filter
 * on stacks only whose stacks one converter group has is answered from the
 * aggregates (rh_query_stackscope.c), and row filters leave out the stacks
 * whose per-stack summaries allow no passing row (rh_prune_stacks). The TEMP tables it leaves are the contract of rh_query.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rh_db.h" /* rh_callsite_compute: the converter's call-site rule */
#include "rh_query.h"
#include "rh_schema.h"
#include "rh_util.h"
#include "rh_regex.h"
#include "rip_format.h"

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
/* The allocations view's weight column, or "1.0 AS weight" for a
 * database converted before sampling existed, whose view has none. */
static const char *rh_weight_col(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int has = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info('allocations') WHERE name = 'weight'",
                           -1, &st, NULL) == SQLITE_OK)
        has = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return has ? "weight" : "1.0 AS weight";
}

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

int rh_parse_interval(const char *s, size_t len, int64_t *ns)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, s, len);
    buf[len] = 0;
    double total = 0;
    const char *p = buf;
    while (*p) {
        if (*p < '0' || *p > '9')
            return -1;
        char *end;
        errno = 0;
        double num = strtod(p, &end);
        if (errno || !isfinite(num) || num > 1e12)
            return -1;
        const char *u = end;
        while ((*end >= 'a' && *end <= 'z') || (*end >= 'A' && *end <= 'Z'))
            end++;
        size_t ul = (size_t)(end - u);
        double mul;
        if (ul == 0 && !*end)
            mul = 1e9; /* a bare number, last: seconds */
        else if (ul == 1 && (*u == 'h' || *u == 'H'))
            mul = 3600e9;
        else if (ul == 1 && (*u == 'm' || *u == 'M'))
            mul = 60e9;
        else if (ul == 1 && (*u == 's' || *u == 'S'))
            mul = 1e9;
        else if (ul == 2 && !strncasecmp(u, "ms", 2))
            mul = 1e6;
        else if (ul == 2 && !strncasecmp(u, "us", 2))
            mul = 1e3;
        else if (ul == 2 && !strncasecmp(u, "ns", 2))
            mul = 1;
        else
            return -1;
        total += num * mul;
        if (total > 9e18)
            return -1;
        p = end;
    }
    *ns = (int64_t)llround(total);
    return 0;
}

/* 1 while a URL parameter goes through rh_filter_arg (rh_qfilter_param):
 * its caller reports a bad value under the parameter's own name, so the
 * parser's line naming the CLI option is not printed. */
static __thread int rh_filter_quiet;

void rh_filter_set_quiet(int on)
{
    rh_filter_quiet = on;
}

/* The parser's one line about a bad option, unless quiet. */
#define RH_FILTER_SAY(...)                                                                         \
    do {                                                                                           \
        if (!rh_filter_quiet)                                                                      \
            fprintf(stderr, __VA_ARGS__);                                                          \
    } while (0)

/* Checks that re compiles; prints one line and returns -1 when not. */
static int rh_check_regex(const char *opt, const char *re)
{
    char msg[256];
    struct rh_re *r = rh_re_compile(re, msg, sizeof msg);
    if (!r) {
        RH_FILTER_SAY("rheaper: %s '%s': bad regular expression (%s)\n", opt, re, msg);
        return -1;
    }
    rh_re_free(r);
    return 0;
}

static int rh_bad(const char *opt, const char *val, const char *want)
{
    RH_FILTER_SAY("rheaper: %s '%s': expected %s\n", opt, val, want);
    return -1;
}

int rh_filter_active(const struct rh_filter *f)
{
    return f->from >= 0 || f->to >= 0 || f->nfunc || f->nnot_func || f->nfile || f->nnot_file ||
           f->min_size >= 0 || f->max_size >= 0 || f->lifetime || f->thread ||
           f->temporary_ms >= 0 || f->nkind || f->nnot_kind;
}

int rh_filter_arg(struct rh_filter *f, int argc, char **argv, int *i)
{
    static const char *const opts[] = {
        "--from",     "--to",       "--function", "--not-function", "--file",
        "--not-file", "--min-size", "--max-size", "--lifetime",     "--thread",
        "--temporary-ms", "--skip-function", "--kind", "--not-kind", NULL};
    if (!strcmp(argv[*i], "--no-skip")) {
        f->no_skip = 1;
        return 1;
    }
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
            RH_FILTER_SAY("rheaper: %s needs a value\n", opt);
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
            RH_FILTER_SAY("rheaper: %s given more than 8 times\n", opt);
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
        if (dots > val && rh_parse_interval(val, (size_t)(dots - val), &f->life_min_ns))
            return rh_bad(opt, val, want);
        if (dots[2] && rh_parse_interval(dots + 2, strlen(dots + 2), &f->life_max_ns))
            return rh_bad(opt, val, want);
        f->lifetime = 3;
        break;
    }
    case 9:
        if (!*val)
            return rh_bad(opt, val, "a thread id, tid or name");
        f->thread = val;
        break;
    case 11:
        if (f->nskip >= 8) {
            RH_FILTER_SAY("rheaper: %s given more than 8 times\n", opt);
            return -1;
        }
        if (rh_check_regex(opt, val))
            return -1;
        f->skip_re[f->nskip++] = val;
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
    case 12:
    case 13: {
        const char **v = k == 12 ? f->kind : f->not_kind;
        int *n = k == 12 ? &f->nkind : &f->nnot_kind;
        if (!*val || *n == 8)
            return rh_bad(opt, val, "an allocation kind (at most 8 of each option)");
        v[(*n)++] = val;
        break;
    }
    }
    return 1;
}


/* ---- the scope ------------------------------------------------------------ */

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
    enum { RH_B_INT, RH_B_TEXT } t[64];
    int64_t i[64];
    const char *s[64];
    int n;
};

static void rh_bind_text(struct rh_binds *b, const char *v)
{
    b->t[b->n] = RH_B_TEXT;
    b->s[b->n++] = v;
}

/* The smallest row id whose alloc_after is >= t (or > t when strict), or one
 * past the last id: a binary search over the ids, which follow allocation
 * order (meta ids_time_ordered), so no index on time is needed. */
static int64_t rh_id_at(sqlite3 *db, int64_t t, int strict)
{
    int64_t lo = rh_sql_int(db, "SELECT min(id) FROM allocations", 0, 1);
    int64_t hi = rh_sql_int(db, "SELECT max(id) FROM allocations", 0, 0) + 1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT id, alloc_after FROM allocations WHERE id >= ?1 ORDER BY id"
                               " LIMIT 1", -1, &st, NULL) != SQLITE_OK)
        return lo;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        sqlite3_bind_int64(st, 1, mid);
        if (sqlite3_step(st) != SQLITE_ROW) {
            hi = mid;
        } else {
            int64_t id = sqlite3_column_int64(st, 0), at = sqlite3_column_int64(st, 1);
            if (strict ? at > t : at >= t)
                hi = mid;
            else
                lo = id + 1;
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return lo;
}

/* Runs sql (one statement) with the text values of b bound from ?1 on.
 * Returns 0 or -1. */
static int rh_run_texts(sqlite3 *db, const char *sql, const struct rh_binds *b)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return rh_sql_fail(db, "filter");
    for (int k = 0; k < b->n; k++)
        sqlite3_bind_text(st, k + 1, b->s[k], -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : rh_sql_fail(db, "filter");
}

/* Row filters on a profile with aggregates: the stacks that can hold a row
 * passing them, from the converter's per-stack summaries (stack_stats'
 * leaked, temporary and freed counts and first and last allocation,
 * stack_sizes' smallest and largest block, stack_threads' allocating
 * threads), into TEMP TABLE selbt (intersected with it when the stack
 * filters made one). The summaries count every row (culled ones too), so a
 * stack left out has no row that passes: the pass then reads only the
 * stacks left, through stack_rows when they are few (rh_query_pass.c).
 * Sets *pruned 1 when selbt holds fewer stacks than the profile has (else
 * it leaves things as they were). Returns 0 or -1. */
static int rh_prune_stacks(sqlite3 *db, const struct rh_filter *f, int64_t dur, int have_selbt,
                           int *pruned)
{
    char cond[1024] = "1";
    int bad = 0;
    int64_t from = -1, to = -1;
    *pruned = 0;
    const char *force = getenv("RHEAPER_ROWS"), *off = getenv("RHEAPER_PRUNE");
    if ((force && !strcmp(force, "1")) || (off && !strcmp(off, "0")) ||
        rh_meta_int(db, "aggregates", 0) != 1 || rh_meta_int(db, "inherited_rows", 0) != 0 ||
        !rh_table_exists(db, "stack_stats"))
        return 0;
    if (f->from >= 0 || f->to >= 0)
        rh_filter_window_ns(f, dur, &from, &to);
    int sizes = (f->min_size >= 0 || f->max_size >= 0) && rh_table_exists(db, "stack_sizes");
    if (from >= 0)
        bad |= rh_cat(cond, sizeof cond, " AND s.last_alloc >= ?1");
    if (to >= 0)
        bad |= rh_cat(cond, sizeof cond, " AND s.first_alloc <= ?2");
    if (sizes && f->min_size >= 0)
        bad |= rh_cat(cond, sizeof cond, " AND z.max_size >= ?3");
    if (sizes && f->max_size >= 0)
        bad |= rh_cat(cond, sizeof cond, " AND z.min_size <= ?4");
    if (f->lifetime == 1)
        bad |= rh_cat(cond, sizeof cond, " AND s.leaked_blocks > 0");
    else if (f->lifetime == 2 && f->temporary_ms < 0)
        bad |= rh_cat(cond, sizeof cond, " AND s.temporary > 0");
    else if (f->lifetime == 3)
        bad |= rh_cat(cond, sizeof cond, " AND s.freed_blocks > 0");
    if (f->thread && rh_table_exists(db, "stack_threads"))
        bad |= rh_cat(cond, sizeof cond,
                      " AND s.bt IN (SELECT bt FROM main.stack_threads WHERE thread IN"
                      " (SELECT id FROM temp.selth))");
    if (!strcmp(cond, "1") || bad)
        return 0;
    char sql[2048];
    snprintf(sql, sizeof sql,
             "SELECT s.bt FROM main.stack_stats s%s WHERE %s%s",
             sizes ? " JOIN main.stack_sizes z ON z.bt = s.bt" : "", cond,
             have_selbt ? " AND s.bt IN (SELECT bt FROM temp.selbt)" : "");
    char ins[2300];
    snprintf(ins, sizeof ins, "INSERT INTO temp.selbt2 %s", sql);
    sqlite3_stmt *st = NULL;
    if (rh_sql_exec(db, "DROP TABLE IF EXISTS temp.selbt2;"
                        "CREATE TEMP TABLE selbt2(bt INTEGER PRIMARY KEY)") ||
        sqlite3_prepare_v2(db, ins, -1, &st, NULL) != SQLITE_OK)
        return rh_sql_fail(db, "filter");
    sqlite3_bind_int64(st, 1, from);
    sqlite3_bind_int64(st, 2, to);
    sqlite3_bind_int64(st, 3, f->min_size);
    sqlite3_bind_int64(st, 4, f->max_size);
    int r = sqlite3_step(st);
    sqlite3_finalize(st);
    if (r != SQLITE_DONE)
        return rh_sql_fail(db, "filter");
    int64_t left = rh_sql_int(db, "SELECT count(*) FROM temp.selbt2", 0, -1);
    int64_t before = have_selbt ? rh_sql_int(db, "SELECT count(*) FROM temp.selbt", 0, -1)
                                : rh_sql_int(db, "SELECT count(*) FROM main.stacks", 0, -1);
    if (left < 0 || before < 0)
        return -1;
    if (left < before) {
        if (rh_sql_exec(db, "DROP TABLE IF EXISTS temp.selbt;"
                            "ALTER TABLE temp.selbt2 RENAME TO selbt"))
            return -1;
        *pruned = 1;
        return 0;
    }
    return rh_sql_exec(db, "DROP TABLE temp.selbt2");
}

/* The row path: resolves f (stack and kind filters over the distinct stacks
 * into TEMP TABLE selbt, the thread into selth, time filters into an id
 * range), runs the pass (rh_query_pass.c) and creates the TEMP VIEW sel over
 * the same rows, its parameters bound into TEMP TABLE selp. Returns 0 or -1. */
static int rh_scope_rows(sqlite3 *db, const struct rh_filter *f, int ordered,
                         struct rh_pass_result *res, int64_t *span)
{
    char sql[4096], where[2048] = "a.id >= p.lo AND a.id < p.hi";
    int64_t dur = rh_filter_duration(db);
    int bad = 0, rc = -1;
    struct rh_pass ps = {.id_lo = 0, .id_hi = INT64_MAX, .ordered = ordered, .t_from = -1,
                         .t_to = -1, .min_size = f->min_size, .max_size = f->max_size,
                         .lifetime = f->lifetime, .life_min = f->life_min_ns,
                         .life_max = f->life_max_ns, .temporary_ns = -1, .span = dur};
    struct rh_map set = {0};
    int64_t threads[64];
    sqlite3_stmt *st = NULL;
    if (f->temporary_ms >= 0)
        ps.temporary_ns = (int64_t)llround(f->temporary_ms * 1e6);
    ps.time_step = rh_meta_int(db, "row_time_step", -1);
    ps.layout = ordered && ps.time_step >= 0;

    /* stacks first: which pass the --function/--file/--kind filters, over
     * the distinct stacks only */
    if (f->nfunc || f->nnot_func || f->nfile || f->nnot_file || f->nkind || f->nnot_kind) {
        char sw[4096] = "1";
        struct rh_binds sb = {.n = 0};
        const struct {
            const char *cond;
            const char *const *re;
            int n;
        } res_[] = {
            {" AND id IN (SELECT id FROM backtraces WHERE sym REGEXP ?)", f->func_re, f->nfunc},
            {" AND id NOT IN (SELECT id FROM backtraces WHERE sym REGEXP ?)", f->not_func_re,
             f->nnot_func},
            {" AND id IN (SELECT id FROM backtraces WHERE file REGEXP ?)", f->file_re, f->nfile},
            {" AND id NOT IN (SELECT id FROM backtraces WHERE file REGEXP ?)", f->not_file_re,
             f->nnot_file},
        };
        for (size_t r = 0; r < sizeof res_ / sizeof res_[0]; r++)
            for (int k = 0; k < res_[r].n; k++) {
                bad |= rh_cat(sw, sizeof sw, res_[r].cond);
                rh_bind_text(&sb, res_[r].re[k]);
            }
        /* kind is a stack's (stacks.kind) */
        for (int k = 0; k < f->nkind; k++) {
            bad |= rh_cat(sw, sizeof sw, k ? " OR kind = ?" : " AND (kind = ?");
            rh_bind_text(&sb, f->kind[k]);
        }
        if (f->nkind)
            bad |= rh_cat(sw, sizeof sw, ")");
        for (int k = 0; k < f->nnot_kind; k++) {
            bad |= rh_cat(sw, sizeof sw, " AND kind IS NOT ?");
            rh_bind_text(&sb, f->not_kind[k]);
        }
        snprintf(sql, sizeof sql, "INSERT INTO selbt SELECT id FROM stacks WHERE %s", sw);
        if (bad || rh_sql_exec(db, "CREATE TEMP TABLE selbt(bt INTEGER PRIMARY KEY)") ||
            rh_run_texts(db, sql, &sb))
            goto out;
        if (sqlite3_prepare_v2(db, "SELECT bt FROM temp.selbt", -1, &st, NULL) != SQLITE_OK) {
            rh_sql_fail(db, "filter");
            goto out;
        }
        while (sqlite3_step(st) == SQLITE_ROW)
            if (rh_map_put(&set, (uint64_t)sqlite3_column_int64(st, 0), 1)) {
                fprintf(stderr, "rheaper: filter: out of memory\n");
                goto out;
            }
        sqlite3_finalize(st);
        st = NULL;
        ps.stacks = &set;
        bad |= rh_cat(where, sizeof where, " AND a.bt IN (SELECT bt FROM temp.selbt)");
    }
    if (f->thread) {
        struct rh_binds tb = {.n = 0};
        rh_bind_text(&tb, f->thread);
        if (rh_sql_exec(db, "CREATE TEMP TABLE selth(id INTEGER PRIMARY KEY)") ||
            rh_run_texts(db,
                         "INSERT INTO selth SELECT id FROM threads WHERE CAST(id AS TEXT) = ?1"
                         " OR CAST(tid AS TEXT) = ?1 OR name = ?1",
                         &tb) ||
            sqlite3_prepare_v2(db, "SELECT id FROM temp.selth LIMIT 64", -1, &st, NULL)) {
            rh_sql_fail(db, "filter");
            goto out;
        }
        while (sqlite3_step(st) == SQLITE_ROW)
            threads[ps.nthreads++] = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        st = NULL;
        ps.threads = threads;
        ps.thread_filter = 1;
        bad |= rh_cat(where, sizeof where, " AND a.alloc_thread IN (SELECT id FROM temp.selth)");
    }
    if (f->from >= 0 || f->to >= 0) {
        int64_t from, to;
        rh_filter_window_ns(f, dur, &from, &to);
        if (ordered) {
            /* allocation order is time order: an id range */
            if (from >= 0)
                ps.id_lo = rh_id_at(db, from, 0);
            if (to >= 0)
                ps.id_hi = rh_id_at(db, to, 1);
        } else {
            ps.t_from = from;
            ps.t_to = to;
            if (from >= 0)
                bad |= rh_cat(where, sizeof where, " AND a.alloc_after >= p.tf");
            if (to >= 0)
                bad |= rh_cat(where, sizeof where, " AND a.alloc_after <= p.tt");
        }
    }
    /* row filters: only the stacks whose summaries allow a passing row */
    int pruned = 0;
    if (!bad && rh_prune_stacks(db, f, dur, ps.stacks != NULL, &pruned))
        goto out;
    if (pruned) {
        rh_map_free(&set);
        memset(&set, 0, sizeof set);
        if (sqlite3_prepare_v2(db, "SELECT bt FROM temp.selbt", -1, &st, NULL) != SQLITE_OK) {
            rh_sql_fail(db, "filter");
            goto out;
        }
        while (sqlite3_step(st) == SQLITE_ROW)
            if (rh_map_put(&set, (uint64_t)sqlite3_column_int64(st, 0), 1)) {
                fprintf(stderr, "rheaper: filter: out of memory\n");
                goto out;
            }
        sqlite3_finalize(st);
        st = NULL;
        if (!ps.stacks)
            bad |= rh_cat(where, sizeof where, " AND a.bt IN (SELECT bt FROM temp.selbt)");
        ps.stacks = &set;
    }
    if (f->min_size >= 0)
        bad |= rh_cat(where, sizeof where, " AND a.size >= p.mins");
    if (f->max_size >= 0)
        bad |= rh_cat(where, sizeof where, " AND a.size <= p.maxs");
    if (f->lifetime == 1)
        bad |= rh_cat(where, sizeof where, " AND a.dealloc_after IS NULL");
    else if (f->lifetime == 2)
        bad |= rh_cat(where, sizeof where, " AND tmp");
    else if (f->lifetime == 3) {
        bad |= rh_cat(where, sizeof where, " AND a.dealloc_after IS NOT NULL");
        if (f->life_min_ns >= 0)
            bad |= rh_cat(where, sizeof where, " AND a.dealloc_after - a.alloc_after >= p.lmin");
        if (f->life_max_ns >= 0)
            bad |= rh_cat(where, sizeof where, " AND a.dealloc_after - a.alloc_after <= p.lmax");
    }
    if (bad) {
        fprintf(stderr, "rheaper: too many filters\n");
        goto out;
    }
    /* stacks only: the converter's per-stack and per-group aggregates answer
     * without a row (rh_query_stackscope.c) when one group has exactly
     * these stacks; else the pass reads their rows */
    int stack_only = ps.stacks && f->chart < RH_CHART_EVENTS && !f->thread && f->from < 0 &&
                     f->to < 0 && f->min_size < 0 && f->max_size < 0 && !f->lifetime &&
                     f->temporary_ms < 0;
    int done = stack_only ? rh_scope_stacks(db, f->chart == RH_CHART_SITES, res) : 0;
    if (done < 0 || (!done && rh_pass_run(db, &ps, res)))
        goto out;
    *span = res->last_event > dur ? res->last_event : dur;

    /* sel: the same rows, for SQL (query, export); its values in selp */
    int64_t pv[9] = {ps.id_lo, ps.id_hi, ps.t_from, ps.t_to, ps.min_size,
                     ps.max_size, ps.life_min, ps.life_max, ps.temporary_ns};
    if (rh_sql_exec(db, "CREATE TEMP TABLE selp(lo, hi, tf, tt, mins, maxs, lmin, lmax, tmpns)") ||
        sqlite3_prepare_v2(db, "INSERT INTO temp.selp VALUES(?,?,?,?,?,?,?,?,?)", -1, &st, NULL)) {
        rh_sql_fail(db, "filter");
        goto out;
    }
    for (int k = 0; k < 9; k++)
        if (k < 2 || pv[k] >= 0)
            sqlite3_bind_int64(st, k + 1, pv[k]);
    int r = sqlite3_step(st);
    sqlite3_finalize(st);
    st = NULL;
    if (r != SQLITE_DONE) {
        rh_sql_fail(db, "filter");
        goto out;
    }
    int n = snprintf(sql, sizeof sql,
                     "CREATE TEMP VIEW sel AS SELECT id, alloc_after, dealloc_after, bt, size,"
                     " addr, alloc_thread, dealloc_thread, kind, lifetime, tmp AS temporary, %s FROM"
                     " (SELECT a.*, a.dealloc_after - a.alloc_after AS lifetime,"
                     " CASE WHEN p.tmpns IS NOT NULL THEN a.dealloc_after IS NOT NULL AND"
                     " a.dealloc_after - a.alloc_after < p.tmpns ELSE a.temporary END AS tmp"
                     " FROM temp.selp p, main.allocations a WHERE %s)",
                     rh_weight_col(db), where);
    if (n < 0 || (size_t)n >= sizeof sql) {
        fprintf(stderr, "rheaper: too many filters\n");
        goto out;
    }
    rc = rh_sql_exec(db, sql);
out:
    sqlite3_finalize(st);
    rh_map_free(&set);
    return rc;
}
/* --skip-function over the converter's rule (rh_callsite_compute). */
struct rh_cs_skip {
    struct rh_re **re;
    int nre;
    sqlite3_stmt *site, *passed;
};

static int rh_cs_skip_match(void *arg, const char *sym)
{
    struct rh_cs_skip *k = arg;
    for (int i = 0; i < k->nre; i++)
        if (rh_re_match(k->re[i], sym) == 1) /* past its limit: not skipped */
            return 1;
    return 0;
}

static int rh_cs_skip_site(void *arg, int64_t stack, int64_t frame)
{
    struct rh_cs_skip *k = arg;
    sqlite3_bind_int64(k->site, 1, stack);
    sqlite3_bind_int64(k->site, 2, frame);
    int r = sqlite3_step(k->site);
    sqlite3_reset(k->site);
    return r == SQLITE_DONE ? 0 : -1;
}

static int rh_cs_skip_passed(void *arg, const char *name, int64_t callers, int64_t stacks)
{
    struct rh_cs_skip *k = arg;
    (void)callers;
    (void)stacks;
    sqlite3_bind_text(k->passed, 1, name, -1, SQLITE_TRANSIENT);
    int r = sqlite3_step(k->passed);
    sqlite3_reset(k->passed);
    return r == SQLITE_DONE ? 0 : -1;
}

/* --skip-function on a profile with stored call sites: the converter's rule
 * again over every allocation stack, the matching functions wrappers by
 * declaration, so the wrappers above them are recomputed (skipping
 * AllocSetAlloc passes palloc and MemoryContextAlloc too, up to their
 * callers). The new sites go into TEMP TABLE csnew, then into cs; skipped
 * holds what was passed over. Returns 0 or -1. */
static int rh_callsites_recompute(sqlite3 *db, struct rh_re **re, int nre)
{
    struct rh_cs_skip k = {re, nre, NULL, NULL};
    int rc = -1;
    if (rh_sql_exec(db, "DROP TABLE IF EXISTS temp.csnew;"
                        "CREATE TEMP TABLE csnew(bt INTEGER PRIMARY KEY, frame INTEGER);"
                        "DELETE FROM temp.skipped;"))
        return -1;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO csnew VALUES(?1, ?2)", -1, &k.site, NULL) ||
        sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO skipped VALUES(?1)", -1, &k.passed, NULL))
        rh_sql_fail(db, "call sites");
    else if (rh_callsite_compute(db, rh_cs_skip_match, &k, rh_cs_skip_site, rh_cs_skip_passed,
                                 &k))
        fprintf(stderr, "rheaper: call sites: out of memory or SQL error\n");
    else if (!rh_sql_exec(db, "UPDATE cs SET frame = (SELECT n.frame FROM csnew n WHERE n.bt ="
                              " cs.bt) WHERE bt IN (SELECT bt FROM csnew)"))
        rc = 0;
    sqlite3_finalize(k.site);
    sqlite3_finalize(k.passed);
    return rc;
}

/* Fills TEMP TABLE cs: every stack of sstat with its call-site frame, and
 * TEMP TABLE skipped with the functions passed over. Returns 0 or -1. */
static int rh_callsites(sqlite3 *db, const struct rh_filter *f, int have_callsite)
{
    struct rh_re *re[8];
    int nre = 0, rc = -1;
    for (; nre < f->nskip; nre++)
        if (!(re[nre] = rh_re_compile(f->skip_re[nre], NULL, 0)))
            goto out;
    if (rh_sql_exec(db, "DROP TABLE IF EXISTS temp.cs; DROP TABLE IF EXISTS temp.skipped;"
                     "CREATE TEMP TABLE cs(bt INTEGER PRIMARY KEY, frame INTEGER);"
                     "CREATE TEMP TABLE skipped(sym TEXT PRIMARY KEY);"))
        goto out;
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO cs SELECT s.bt, %s FROM sstat s LEFT JOIN stacks k ON k.id = s.bt",
             f->no_skip || !have_callsite ? "0" : "coalesce(k.callsite, 0)");
    if (rh_sql_exec(db, sql))
        goto out;
    /* CPU samples' stacks: frame 0, or past --skip-function below */
    if (rh_sql_exec(db, "INSERT OR IGNORE INTO cs SELECT bt, 0 FROM temp.cpustat"))
        goto out;
    if (!f->no_skip && have_callsite &&
        rh_sql_exec(db, "INSERT OR IGNORE INTO skipped SELECT sym FROM main.skipped_functions"
                     " WHERE sym IS NOT NULL"))
        goto out;
    if (!nre) {
        rc = 0;
        goto out;
    }
    /* --skip-function: the rule recomputed over the allocation stacks; the
     * other stacks (CPU samples', a profile without stored sites) walk on
     * from their frame past the matching frames */
    int recomputed = !f->no_skip && have_callsite;
    if (recomputed && rh_callsites_recompute(db, re, nre))
        goto out;
    sqlite3_stmt *q = NULL, *fr = NULL, *up = NULL, *sk = NULL;
    if (sqlite3_prepare_v2(db,
                           recomputed ? "SELECT bt, frame FROM cs WHERE bt NOT IN (SELECT bt FROM"
                                        " temp.csnew)"
                                      : "SELECT bt, frame FROM cs",
                           -1, &q, NULL) ||
        sqlite3_prepare_v2(db,
                           "SELECT frame_no, sym FROM backtraces WHERE id = ?1 AND frame_no >= ?2"
                           " ORDER BY frame_no",
                           -1, &fr, NULL) ||
        sqlite3_prepare_v2(db, "UPDATE cs SET frame = ?2 WHERE bt = ?1", -1, &up, NULL) ||
        sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO skipped VALUES(?1)", -1, &sk, NULL)) {
        rh_sql_fail(db, "call sites");
    } else {
        /* read all (bt, frame) first: cs is updated on the way */
        int64_t *v = NULL;
        size_t nv = 0, cap = 0;
        int ok = 1;
        while (ok && sqlite3_step(q) == SQLITE_ROW) {
            if (nv + 2 > cap) {
                cap = cap ? cap * 2 : 1024;
                int64_t *nvp = realloc(v, cap * sizeof *v);
                if (!nvp) {
                    ok = 0;
                    break;
                }
                v = nvp;
            }
            v[nv++] = sqlite3_column_int64(q, 0);
            v[nv++] = sqlite3_column_int64(q, 1);
        }
        for (size_t i = 0; ok && i < nv; i += 2) {
            sqlite3_bind_int64(fr, 1, v[i]);
            sqlite3_bind_int64(fr, 2, v[i + 1]);
            int64_t frame = v[i + 1], last = -1;
            int moving = 1;
            char name[512] = "";
            while (sqlite3_step(fr) == SQLITE_ROW) {
                int64_t no = sqlite3_column_int64(fr, 0);
                const char *sym = (const char *)sqlite3_column_text(fr, 1);
                if (last >= 0 && moving) {
                    /* the previous frame matched and this one exists: skip it */
                    frame = no;
                    sqlite3_bind_text(sk, 1, name, -1, SQLITE_TRANSIENT);
                    sqlite3_step(sk);
                    sqlite3_reset(sk);
                }
                last = -1;
                if (!moving)
                    break;
                int match = 0;
                for (int k = 0; sym && k < nre && !match; k++)
                    match = rh_re_match(re[k], sym) == 1; /* past its limit: not skipped */
                if (!match) {
                    moving = 0;
                    break;
                }
                last = no;
                snprintf(name, sizeof name, "%s", sym);
            }
            sqlite3_reset(fr);
            if (frame != v[i + 1]) {
                sqlite3_bind_int64(up, 1, v[i]);
                sqlite3_bind_int64(up, 2, frame);
                ok = sqlite3_step(up) == SQLITE_DONE;
                sqlite3_reset(up);
            }
        }
        free(v);
        if (ok)
            rc = 0;
        else
            fprintf(stderr, "rheaper: call sites: out of memory or SQL error\n");
    }
    sqlite3_finalize(q);
    sqlite3_finalize(fr);
    sqlite3_finalize(up);
    sqlite3_finalize(sk);
out:
    for (int k = 0; k < nre; k++)
        rh_re_free(re[k]);
    return rc;
}

int rh_filter_apply(sqlite3 *db, const struct rh_filter *f)
{
    const char *force = getenv("RHEAPER_ROWS");
    int agg = rh_meta_int(db, "aggregates", 0) == 1;
    int ordered = agg && rh_meta_int(db, "ids_time_ordered", 0) == 1;
    int have_callsite = agg; /* profiles with aggregates have stacks.callsite */
    int rows = !agg || rh_filter_active(f) || (force && !strcmp(force, "1"));
    int64_t culled = rh_meta_int(db, "min_lifetime_ns", 0);
    int64_t peak = 0, blocks = 0, pt = 0, span = 0;
    int timeline = 0;
    rh_sample_notice(db); /* one line on a sampled profile: figures are estimates */
    static const char *const temps[] = {"sel",   "sstat", "ssize", "tstat", "stl",
                                        "stls",  "slc",   "scope", "selbt", "selth",
                                        "selp",  "shist", "sthr",  "scopekey",
                                        "sctl",  "stlsb", "sitekey", "sgroup", NULL};
    for (int k = 0; temps[k]; k++)
        if (rh_temp_drop(db, temps[k]))
            return -1;
    if (rows) {
        struct rh_pass_result res;
        if (rh_scope_rows(db, f, ordered, &res, &span))
            return -1;
        /* estimates are rounded per stack and class: a sampled site's
         * detail sums its rows instead */
        if (rh_sample_params(db, &(double){0}, &(int64_t){0}) &&
            (rh_temp_drop(db, "shist") || rh_temp_drop(db, "sthr")))
            return -1;
        peak = res.peak_bytes;
        blocks = res.peak_blocks;
        pt = res.peak_time;
        timeline = res.timeline;
    } else {
        char view[512];
        snprintf(view, sizeof view,
                 "CREATE TEMP VIEW sel AS SELECT id, alloc_after, dealloc_after, bt,"
                 " size, addr, alloc_thread, dealloc_thread, kind,"
                 " dealloc_after - alloc_after AS lifetime, temporary, %s FROM allocations",
                 rh_weight_col(db));
        if (rh_sql_exec(db, view) ||
            rh_sql_exec(db, "CREATE TEMP TABLE sstat AS SELECT * FROM main.stack_stats;"
                         "CREATE TEMP TABLE tstat AS SELECT * FROM main.thread_stats;"
                         "CREATE TEMP VIEW stl AS SELECT * FROM main.timeline;"
                         "CREATE TEMP VIEW stls AS SELECT * FROM main.timeline_stacks;"
                         "CREATE TEMP VIEW slc AS SELECT * FROM main.leak_curve;"))
            return -1;
        /* a call site's detail from the converter's per-stack classes,
         * when they count exactly the stored rows: every row was kept */
        if (rh_table_exists(db, "stack_hist") && rh_table_exists(db, "stack_threads") &&
            culled == 0 && !rh_sample_params(db, &(double){0}, &(int64_t){0}) &&
            rh_sql_exec(db, "CREATE TEMP VIEW shist AS SELECT * FROM main.stack_hist;"
                            "CREATE TEMP VIEW sthr AS SELECT * FROM main.stack_threads;"))
            return -1;
        peak = rh_meta_int(db, "peak_bytes", 0);
        blocks = rh_meta_int(db, "peak_blocks", 0);
        pt = rh_meta_int(db, "peak_time_ns", 0);
        span = rh_filter_duration(db);
        timeline = rh_meta_int(db, "timeline_columns", 0) == RH_AGG_COLUMNS;
    }
    sqlite3_stmt *st = NULL;
    if (rh_sql_exec(db, "CREATE TEMP TABLE scope(rows INTEGER, peak_bytes INTEGER,"
                     " peak_blocks INTEGER, peak_time INTEGER, culled INTEGER, span INTEGER,"
                     " timeline INTEGER, leak_buckets INTEGER)") ||
        sqlite3_prepare_v2(db, "INSERT INTO scope VALUES(?,?,?,?,?,?,?,?)", -1, &st, NULL) !=
            SQLITE_OK)
        return rh_sql_fail(db, "filter");
    sqlite3_bind_int(st, 1, rows);
    sqlite3_bind_int64(st, 2, peak);
    sqlite3_bind_int64(st, 3, blocks);
    sqlite3_bind_int64(st, 4, pt);
    sqlite3_bind_int64(st, 5, culled);
    sqlite3_bind_int64(st, 6, span);
    sqlite3_bind_int(st, 7, timeline);
    sqlite3_bind_int(st, 8, rows ? RH_AGG_LEAK_BUCKETS : (int)rh_meta_int(db, "leak_buckets", 0));
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return rh_sql_fail(db, "filter");
    if (rh_cpu_scope(db, f) || rh_callsites(db, f, have_callsite))
        return -1;
    if (culled > 0 && !getenv("RHEAPER_QUIET_NOTICES"))
        fprintf(stderr,
                "rheaper: culled profile: rows only for blocks that lived at least %.6g s or were"
                " never freed; figures without filters count every event, filtered ones see the"
                " rows kept\n",
                culled / 1e9);
    rh_scope_notice(db);
    return 0;
}



int rh_sample_notice(sqlite3 *db)
{
    static int said;
    double rate;
    int64_t bytes;
    int mode = rh_sample_params(db, &rate, &bytes);
    if (!mode)
        return 0;
    if (!said && !getenv("RHEAPER_QUIET_NOTICES")) {
        char line[160];
        if (mode == RIP_SAMPLE_RATE)
            snprintf(line, sizeof line, "each allocation recorded with probability %g", rate);
        else if (mode == RIP_SAMPLE_BYTES_BIG)
            snprintf(line, sizeof line,
                     "one sample per %lld allocated bytes on average, blocks of that size"
                     " or more all",
                     (long long)bytes);
        else
            snprintf(line, sizeof line, "one sample per %lld allocated bytes on average",
                     (long long)bytes);
        fprintf(stderr,
                "rheaper: sampled profile (%s): blocks and bytes are estimates"
                " (each row weighs 1/probability)\n",
                line);
    }
    said = 1;
    return 1;
}

void rh_scope_notice(sqlite3 *db)
{
    static int said;
    if (said || getenv("RHEAPER_QUIET_NOTICES"))
        return;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT sym FROM temp.skipped ORDER BY sym", -1, &st, NULL) !=
        SQLITE_OK)
        return;
    char line[1024];
    size_t n = 0;
    int k = 0, more = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *s = (const char *)sqlite3_column_text(st, 0);
        if (!s)
            continue;
        if (n + strlen(s) + 64 >= sizeof line) {
            more++;
            continue;
        }
        n += (size_t)snprintf(line + n, sizeof line - n, "%s%s", k++ ? ", " : "", s);
    }
    sqlite3_finalize(st);
    if (!k)
        return;
    said = 1;
    if (more)
        snprintf(line + n, sizeof line - n, " and %d more", more);
    fprintf(stderr, "rheaper: call sites skip allocator wrappers: %s (--no-skip shows frame 0)\n",
            line);
}
