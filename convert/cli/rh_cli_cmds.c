/* rh_cli_cmds.c: the rheaper commands that print tables: summary, top, leaks,
 * peak and query.
 *
 * Each opens the profile read-only (rh_query_db.c), applies the shared filters
 * into `sel` (rh_query_filter.c), asks the query library for its rows (the
 * call sites of rh_sites_get, the leak scores of rh_leaks_get) and prints
 * them through rh_print_cells() or rh_print_stmt(), so --json, --csv and the
 * filters mean the same everywhere.
 * A call site is frame 0 of a stack: its function and file:line (module+offset
 * without debug information); sites with the same function and line but
 * different callers are one site unless --stacks asks for each stack. The leak
 * score is defined at rh_leak_scores() and in docs/commands.md.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rh_cli.h"

/* SQL: the basename of a path column. */
#define RH_BASE(c) "replace(" c ", rtrim(" c ", replace(" c ", '/', '')), '')"
/* SQL: one frame of backtraces b as "function (file:line)". */
#define RH_FRAME_TEXT                                                                                                                                         \
    "coalesce(b.sym, '?\?') || ' (' || CASE WHEN b.file IS NOT NULL THEN " RH_BASE(                                                                           \
        "b.file") " || ':' || coalesce(b.line, '?') WHEN b.module IS NOT NULL THEN " RH_BASE("b."                                                             \
                                                                                             "mod"                                                            \
                                                                                             "ul"                                                             \
                                                                                             "e") " || '+0x' || printf('%x', b.address) ELSE printf('0x%x', " \
                                                                                                  "coalesce(b.address, 0)) END || ')'"

/* ---- arguments -------------------------------------------------------------- */

enum {
    RH_OPT_BY = 1,
    RH_OPT_N = 2,
    RH_OPT_STACKS = 4,
    RH_OPT_BUCKETS = 8,
    RH_OPT_SQL = 16,
    RH_OPT_THRESHOLD = 32,
    RH_OPT_BY_REGION = 64 /* --by region only (leaks) */
};

struct rh_args {
    const char *db, *sql, *by;
    struct rh_filter f;
    enum rh_fmt fmt;
    int n, stacks, buckets, filtered;
    double threshold; /* --threshold PCT: rows below PCT % of the samples are left out */
};

/* Parses a command's argv: DB (and SQL for query), the shared filters, --json
 * and --csv, and the options `allow` permits. Returns 0, or the exit status
 * (2) after printing one line. */
static int rh_parse(int argc, char **argv, unsigned allow, struct rh_args *a)
{
    const char *cmd = argv[0];
    memset(a, 0, sizeof *a);
    rh_filter_init(&a->f);
    a->by = "bytes";
    a->n = 10;
    a->buckets = RH_LEAK_BUCKETS;
    int npos = 0, dashdash = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!dashdash && s[0] == '-' && s[1]) {
            int r = rh_filter_arg(&a->f, argc, argv, &i);
            if (r < 0)
                return 2;
            if (r > 0) {
                a->filtered = 1;
                continue;
            }
            if (rh_fmt_arg(&a->fmt, argv, &i))
                continue;
            if (!strcmp(s, "--")) {
                dashdash = 1;
            } else if ((allow & RH_OPT_BY) && !strcmp(s, "--by") && i + 1 < argc) {
                a->by = argv[++i];
                if (strcmp(a->by, "bytes") && strcmp(a->by, "count") && strcmp(a->by, "leaked") &&
                    strcmp(a->by, "peak") && strcmp(a->by, "temporary") &&
                    strcmp(a->by, "region")) {
                    fprintf(stderr,
                            "rheaper: %s: --by '%s': expected bytes, count, leaked, peak, "
                            "temporary or region\n",
                            cmd, a->by);
                    return 2;
                }
            } else if ((allow & RH_OPT_BY_REGION) && !strcmp(s, "--by") && i + 1 < argc) {
                a->by = argv[++i];
                if (strcmp(a->by, "region")) {
                    fprintf(stderr, "rheaper: %s: --by '%s': expected region\n", cmd, a->by);
                    return 2;
                }
            } else if ((allow & RH_OPT_N) && (!strcmp(s, "-n") || !strcmp(s, "--limit")) &&
                       i + 1 < argc) {
                char *end;
                long v = strtol(argv[++i], &end, 10);
                if (*end || end == argv[i] || v < 0 || v > 1000000000) {
                    fprintf(stderr, "rheaper: %s: -n '%s': expected a count\n", cmd, argv[i]);
                    return 2;
                }
                a->n = (int)v;
            } else if ((allow & RH_OPT_BUCKETS) && !strcmp(s, "--buckets") && i + 1 < argc) {
                char *end;
                long v = strtol(argv[++i], &end, 10);
                if (*end || end == argv[i] || v < 2 || v > 10000) {
                    fprintf(stderr, "rheaper: %s: --buckets '%s': expected 2..10000\n", cmd,
                            argv[i]);
                    return 2;
                }
                a->buckets = (int)v;
            } else if ((allow & RH_OPT_THRESHOLD) && !strcmp(s, "--threshold") && i + 1 < argc) {
                char *end;
                double v = strtod(argv[++i], &end);
                if (*end == '%')
                    end++;
                if (*end || end == argv[i] || !(v >= 0 && v <= 100)) {
                    fprintf(stderr, "rheaper: %s: --threshold '%s': expected a percent 0..100\n",
                            cmd, argv[i]);
                    return 2;
                }
                a->threshold = v;
            } else if ((allow & RH_OPT_STACKS) && !strcmp(s, "--stacks")) {
                a->stacks = 1;
            } else {
                fprintf(stderr, "rheaper: %s: unknown option %s\n", cmd, s);
                return 2;
            }
            continue;
        }
        if (npos == 0) {
            a->db = s;
        } else if (npos == 1 && (allow & RH_OPT_SQL)) {
            a->sql = s;
        } else {
            fprintf(stderr, "rheaper: %s: unexpected argument '%s'\n", cmd, s);
            return 2;
        }
        npos++;
    }
    if (!a->db || ((allow & RH_OPT_SQL) && !a->sql)) {
        fprintf(stderr, "rheaper: %s: expected %s\n", cmd,
                (allow & RH_OPT_SQL) ? "DB \"SQL\"" : "DB");
        return 2;
    }
    return 0;
}

/* ---- shared steps ------------------------------------------------------------- */

/* SQL of the whole stack of bt as one text, frames "f (file:line)" joined by
 * "; ", innermost first. */
#define RH_STACK_OF(bt)                                                                            \
    "(SELECT group_concat(fr, '; ') FROM (SELECT " RH_FRAME_TEXT " AS fr FROM backtraces b"        \
    " WHERE b.id = " bt " ORDER BY b.frame_no))"

/* Prints the rows of st (text mode, with a `stack` column last) as one line of
 * figures per site followed by its frames, one per line. */
static int rh_print_with_stacks(sqlite3_stmt *st, FILE *out)
{
    int nc = sqlite3_column_count(st), rc, row = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        fprintf(out, "%s#%d", row ? "\n" : "", row + 1);
        for (int i = 0; i < nc - 1; i++) {
            const char *v = (const char *)sqlite3_column_text(st, i);
            fprintf(out, "  %s=%s", sqlite3_column_name(st, i), v ? v : "");
        }
        fputc('\n', out);
        const char *s = (const char *)sqlite3_column_text(st, nc - 1);
        while (s && *s) {
            const char *e = strstr(s, "; ");
            int len = e ? (int)(e - s) : (int)strlen(s);
            fprintf(out, "    %.*s\n", len, s);
            s = e ? e + 2 : NULL;
        }
        row++;
    }
    if (rc != SQLITE_DONE) {
        fprintf(stderr, "rheaper: SQL error: %s\n", sqlite3_errmsg(sqlite3_db_handle(st)));
        return -1;
    }
    return 0;
}

/* Prints st to stdout as a asks (one stack per site with --stacks in text
 * mode), after the line `head` in text mode (NULL: none), and finalizes st.
 * Returns 0 or -1 after a message. */
static int rh_print(sqlite3_stmt *st, const struct rh_args *a, const char *head)
{
    int rc;
    if (a->fmt == RH_FMT_TEXT && head)
        fputs(head, stdout);
    if (a->stacks && a->fmt == RH_FMT_TEXT)
        rc = rh_print_with_stacks(st, stdout);
    else
        rc = rh_print_stmt(st, a->fmt, stdout);
    sqlite3_finalize(st);
    return rc;
}

/* What a listing command prints once `sel`, its summary and TEMP TABLE site
 * exist. Returns 0 or -1 after a message. */
typedef int rh_list_fn(sqlite3 *db, const struct rh_args *a, const struct rh_summary *s);

/* Runs a listing command: parses argv with the options `allow` permits, opens
 * the profile, builds `sel`, computes its summary and TEMP TABLE site (one
 * group per stack with --stacks), then calls list. Returns the exit status. */
static int rh_listing(int argc, char **argv, unsigned allow, rh_list_fn *list)
{
    struct rh_args a;
    int rc = rh_parse(argc, argv, allow, &a);
    if (rc)
        return rc;
    sqlite3 *db = rh_query_open(a.db);
    if (!db)
        return 1;
    struct rh_summary s;
    rc = 0;
    /* Chunks of region allocators lie inside the allocator's own blocks: top
     * and leaks list the chunks unless a kind filter asks otherwise. */
    if ((allow & (RH_OPT_BY | RH_OPT_BY_REGION)) && !a.f.nkind && !a.f.nnot_kind &&
        a.f.nnot_kind < 8 && rh_region_available(db)) {
        a.f.not_kind[a.f.nnot_kind++] = "region-blocks";
        fprintf(stderr, "rheaper: the region allocators' own blocks are left out (--kind "
                        "region-blocks shows them)\n");
    }
    if (rh_filter_apply(db, &a.f) || rh_summary_compute(db, &s) || rh_make_sites(db, a.stacks) ||
        list(db, &a, &s))
        rc = 1;
    sqlite3_close(db);
    return rc;
}

/* ---- top ------------------------------------------------------------------------ */

/* The frames of stack bt as one text, "f (file:line)" joined by "; ",
 * innermost first, into a cell (NULL when the stack has no frames). The
 * text lives in *keep (freed by the caller). Returns 0 or -1 after one line. */
static int rh_stack_cell(sqlite3 *db, int64_t bt, struct rh_cell *c, char **keep)
{
    sqlite3_stmt *st = rh_sql_prepare(db, "SELECT " RH_STACK_OF("?1"));
    if (!st)
        return -1;
    sqlite3_bind_int64(st, 1, bt);
    c->type = RH_CELL_NULL;
    *keep = NULL;
    int r = sqlite3_step(st);
    if (r == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        *keep = strdup((const char *)sqlite3_column_text(st, 0));
        c->type = RH_CELL_TEXT;
        c->s = *keep;
    }
    sqlite3_finalize(st);
    if (r != SQLITE_ROW && r != SQLITE_DONE)
        return rh_sql_fail(db, "stack");
    return c->type == RH_CELL_TEXT && !*keep ? -1 : 0;
}

/* A cell's text as SQLite gives a column's (the --stacks text layout):
 * integers with %lld, reals as SQLite writes them ("1.0", "0.25"). */
static const char *rh_cell_sqltext(const struct rh_cell *c, char *buf, size_t n)
{
    if (c->type == RH_CELL_INT) {
        snprintf(buf, n, "%lld", (long long)c->i);
    } else if (c->type == RH_CELL_REAL) {
        snprintf(buf, n, "%.15g", c->d);
        if (!strpbrk(buf, ".eEni"))
            snprintf(buf + strlen(buf), n - strlen(buf), ".0");
    } else {
        return c->type == RH_CELL_TEXT && c->s ? c->s : "";
    }
    return buf;
}

/* Prints rows of cells (text mode, with a `stack` column last) as one line of
 * figures per site followed by its frames, one per line. */
static void rh_cells_with_stacks(const char *const *names, int nc, const struct rh_cell *cells,
                                 size_t nrows, FILE *out)
{
    char buf[64];
    for (size_t row = 0; row < nrows; row++) {
        const struct rh_cell *c = &cells[row * (size_t)nc];
        fprintf(out, "%s#%zu", row ? "\n" : "", row + 1);
        for (int i = 0; i < nc - 1; i++)
            fprintf(out, "  %s=%s", names[i], rh_cell_sqltext(&c[i], buf, sizeof buf));
        fputc('\n', out);
        const char *s = c[nc - 1].type == RH_CELL_TEXT ? c[nc - 1].s : NULL;
        while (s && *s) {
            const char *e = strstr(s, "; ");
            int len = e ? (int)(e - s) : (int)strlen(s);
            fprintf(out, "    %.*s\n", len, s);
            s = e ? e + 2 : NULL;
        }
    }
}

/* A table of rows the query library returned, being filled: nc cells per
 * row, the `stack` column last when stacks is set. */
struct rh_tab {
    const char *const *names;
    int nc, stacks;
    size_t nrows;
    struct rh_cell *cells;
    char **keep; /* the stack texts, one per row */
};

static int rh_tab_init(struct rh_tab *t, const char *const *names, int nc, int stacks,
                       size_t nrows)
{
    memset(t, 0, sizeof *t);
    t->names = names;
    t->nc = nc;
    t->stacks = stacks;
    t->nrows = nrows;
    t->cells = calloc(nrows * (size_t)nc + 1, sizeof *t->cells);
    t->keep = calloc(nrows + 1, sizeof *t->keep);
    if (!t->cells || !t->keep) {
        fprintf(stderr, "rheaper: out of memory\n");
        return -1;
    }
    return 0;
}

static void rh_tab_free(struct rh_tab *t)
{
    for (size_t r = 0; t->keep && r < t->nrows; r++)
        free(t->keep[r]);
    free(t->keep);
    free(t->cells);
}

static void rh_put_int(struct rh_cell *c, int64_t v)
{
    c->type = RH_CELL_INT;
    c->i = v;
}
static void rh_put_real(struct rh_cell *c, double v)
{
    c->type = RH_CELL_REAL;
    c->d = v;
}
static void rh_put_text(struct rh_cell *c, const char *v)
{
    c->type = RH_CELL_TEXT;
    c->s = v;
}

/* Prints the table as a asks (one stack per site with --stacks in text
 * mode), after the line `head` in text mode (NULL: none). Returns 0 or -1. */
static int rh_tab_print(const struct rh_tab *t, const struct rh_args *a, const char *head,
                        FILE *out)
{
    if (a->fmt == RH_FMT_TEXT && head)
        fputs(head, out);
    if (t->stacks && a->fmt == RH_FMT_TEXT) {
        rh_cells_with_stacks(t->names, t->nc, t->cells, t->nrows, out);
        return 0;
    }
    return rh_print_cells(t->names, t->nc, t->cells, t->nrows, a->fmt, out);
}

/* The call sites ordered by `by` (top's names), n rows, as a table of top's
 * columns (function, location, count, bytes, leaked_blocks, leaked_bytes,
 * peak_bytes, temporary, and stack with stacks). Returns 0 or -1. */
static int rh_top_table(sqlite3 *db, const char *by, int n, int stacks, struct rh_tab *t,
                        struct rh_site_row **rows, size_t *nrows)
{
    static const char *const names[] = {"function",     "location",   "count",
                                        "bytes",        "leaked_blocks", "leaked_bytes",
                                        "peak_bytes",   "temporary",  "stack"};
    memset(t, 0, sizeof *t);
    struct rh_site_query q = {.by = RH_SITES_BYTES, .limit = n, .positive = 1};
    q.by = !strcmp(by, "count")       ? RH_SITES_COUNT
           : !strcmp(by, "leaked")    ? RH_SITES_LEAKED
           : !strcmp(by, "peak")      ? RH_SITES_PEAK
           : !strcmp(by, "temporary") ? RH_SITES_TEMPORARY
                                      : RH_SITES_BYTES;
    if (rh_sites_get(db, &q, rows, nrows))
        return -1;
    int nc = stacks ? 9 : 8;
    if (rh_tab_init(t, names, nc, stacks, *nrows))
        return -1;
    for (size_t r = 0; r < *nrows; r++) {
        const struct rh_site_row *s = &(*rows)[r];
        struct rh_cell *c = &t->cells[r * (size_t)nc];
        rh_put_text(&c[0], s->function);
        rh_put_text(&c[1], s->location);
        rh_put_int(&c[2], s->count);
        rh_put_int(&c[3], s->bytes);
        rh_put_int(&c[4], s->leaked_blocks);
        rh_put_int(&c[5], s->leaked_bytes);
        rh_put_int(&c[6], s->peak_bytes);
        rh_put_int(&c[7], s->temporary);
        if (stacks && rh_stack_cell(db, s->bt, &c[8], &t->keep[r]))
            return -1;
    }
    return 0;
}

/* `top --by region`, `leaks --by region`: the regions of region allocators. */
static int rh_region_list(sqlite3 *db, const struct rh_args *a, int leaks)
{
    const char *cmd = leaks ? "leaks" : "top";
    if (!rh_region_available(db)) {
        fprintf(stderr,
                "rheaper: %s: %s has no region chunks (declare the region allocator in an "
                "allocator file, docs/allocators.md)\n",
                cmd, a->db);
        return -1;
    }
    if (a->filtered)
        fprintf(stderr, "rheaper: %s --by region: the filters are ignored here\n", cmd);
    sqlite3_stmt *st = rh_region_stmt(db, leaks, "bytes", a->n);
    return st ? rh_print(st, a, NULL) : -1;
}

static int rh_top_list(sqlite3 *db, const struct rh_args *a, const struct rh_summary *s)
{
    (void)s;
    if (!strcmp(a->by, "region"))
        return rh_region_list(db, a, 0);
    struct rh_tab t;
    struct rh_site_row *rows = NULL;
    size_t n = 0;
    int rc = rh_top_table(db, a->by, a->n, a->stacks, &t, &rows, &n);
    if (!rc)
        rc = rh_tab_print(&t, a, NULL, stdout);
    rh_tab_free(&t);
    rh_sites_free(rows, n);
    return rc;
}

/* `top cpu`: sites by CPU samples, over TEMP TABLE cpustat. */
static int rh_top_cpu_list(sqlite3 *db, const struct rh_args *a, const struct rh_summary *s)
{
    (void)s;
    if (rh_cpu_filter_blocks_only(&a->f))
        fprintf(stderr, "rheaper: top cpu: size, lifetime and kind filters select blocks, not"
                        " CPU samples; they are ignored here\n");
    if (!rh_cpu_total(db) && !rh_cpu_hz(db)) {
        fprintf(stderr, "rheaper: top cpu: %s has no CPU samples (record with"
                        " RHEAPER_CPU_HZ=99)\n",
                a->db);
        return -1;
    }
    int64_t dropped = rh_cpu_dropped(db);
    if (dropped > 0)
        fprintf(stderr, "rheaper: top cpu: %lld sampling periods were dropped by the runtime and"
                        " are in no figure (%lld samples kept)\n",
                (long long)dropped, (long long)rh_cpu_total(db));
    static const char *const names[] = {"function", "location", "samples", "percent", "seconds",
                                        "stack"};
    struct rh_cpu_site *rows = NULL;
    size_t n = 0;
    struct rh_tab t;
    memset(&t, 0, sizeof t);
    if (rh_cpu_sites_get(db, a->n, a->threshold, &rows, &n))
        return -1;
    int nc = a->stacks ? 6 : 5, rc = rh_tab_init(&t, names, nc, a->stacks, n);
    for (size_t r = 0; !rc && r < n; r++) {
        struct rh_cell *c = &t.cells[r * (size_t)nc];
        rh_put_text(&c[0], rows[r].function);
        rh_put_text(&c[1], rows[r].location);
        rh_put_int(&c[2], rows[r].samples);
        rh_put_real(&c[3], rows[r].percent);
        if (rows[r].has_seconds)
            rh_put_real(&c[4], rows[r].seconds);
        if (a->stacks)
            rc = rh_stack_cell(db, rows[r].bt, &c[5], &t.keep[r]);
    }
    if (!rc)
        rc = rh_tab_print(&t, a, NULL, stdout);
    rh_tab_free(&t);
    rh_cpu_sites_free(rows, n);
    return rc;
}

/* `top [heap|cpu] DB ...`: plain `top` is the heap's. */
int rh_cmd_top(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "cpu") || !strcmp(argv[1], "heap"))) {
        int cpu = !strcmp(argv[1], "cpu");
        argv[1] = argv[0];
        if (cpu)
            return rh_listing(argc - 1, argv + 1, RH_OPT_N | RH_OPT_STACKS | RH_OPT_THRESHOLD,
                              rh_top_cpu_list);
        argc--, argv++;
    }
    return rh_listing(argc, argv, RH_OPT_BY | RH_OPT_N | RH_OPT_STACKS, rh_top_list);
}

/* ---- churn ----------------------------------------------------------------------- */

/* `churn DB`: call sites by bytes allocated and freed per second, with their
 * short-lived blocks (rh_churn_stmt), after the memory the heap does not
 * explain when the profile has memory samples. */
static int rh_churn_list(sqlite3 *db, const struct rh_args *a, const struct rh_summary *s)
{
    sqlite3_stmt *st =
        rh_churn_stmt(db, a->n, s->duration_ns, a->stacks ? RH_STACK_OF("bt") " AS stack" : NULL);
    if (!st)
        return -1;
    char head[512] = "";
    if (a->fmt == RH_FMT_TEXT) {
        struct rh_memfig m;
        if (rh_memory_figures(db, &m) == 0 && m.samples) {
            char line[256];
            snprintf(head, sizeof head, "memory at the RSS peak (%.3f s): %s\n\n", m.peak.t / 1e9,
                     rh_memory_line(&m, &m.peak, line, sizeof line));
        }
    }
    return rh_print(st, a, head);
}

int rh_cmd_churn(int argc, char **argv)
{
    return rh_listing(argc, argv, RH_OPT_N | RH_OPT_STACKS, rh_churn_list);
}

/* ---- peak ------------------------------------------------------------------------ */

static int rh_peak_list(sqlite3 *db, const struct rh_args *a, const struct rh_summary *s)
{
    static const char *const names[] = {"function", "location", "blocks", "bytes", "percent",
                                        "stack"};
    struct rh_site_query q = {.by = RH_SITES_AT_PEAK, .limit = a->n};
    struct rh_site_row *rows = NULL;
    size_t n = 0;
    struct rh_tab t;
    memset(&t, 0, sizeof t);
    if (rh_sites_get(db, &q, &rows, &n))
        return -1;
    int nc = a->stacks ? 6 : 5, rc = rh_tab_init(&t, names, nc, a->stacks, n);
    int64_t denom = s->peak_bytes > 0 ? s->peak_bytes : 1;
    for (size_t r = 0; !rc && r < n; r++) {
        struct rh_cell *c = &t.cells[r * (size_t)nc];
        rh_put_text(&c[0], rows[r].function);
        rh_put_text(&c[1], rows[r].location);
        rh_put_int(&c[2], rows[r].peak_blocks);
        rh_put_int(&c[3], rows[r].peak_bytes);
        rh_put_real(&c[4], rh_round(100.0 * (double)rows[r].peak_bytes / (double)denom, 2));
        if (a->stacks)
            rc = rh_stack_cell(db, rows[r].bt, &c[5], &t.keep[r]);
    }
    char h[32], head[128];
    snprintf(head, sizeof head, "peak: %lld bytes (%s) at %.3f s\n", (long long)s->peak_bytes,
             rh_human_bytes(s->peak_bytes, h, sizeof h), s->peak_time_ns / 1e9);
    if (!rc)
        rc = rh_tab_print(&t, a, head, stdout);
    rh_tab_free(&t);
    rh_sites_free(rows, n);
    return rc;
}

int rh_cmd_peak(int argc, char **argv)
{
    return rh_listing(argc, argv, RH_OPT_N | RH_OPT_STACKS, rh_peak_list);
}

/* ---- leaks ------------------------------------------------------------------------ */

static int rh_leaks_list(sqlite3 *db, const struct rh_args *a, const struct rh_summary *s)
{
    if (!strcmp(a->by, "region"))
        return rh_region_list(db, a, 1);
    if (rh_leak_scores(db, a->buckets, s->duration_ns))
        return -1;
    static const char *const names[] = {"score",   "coverage", "fit",      "leaked_blocks",
                                        "leaked_bytes", "first_s", "last_s", "function",
                                        "location", "stack"};
    struct rh_leak_row *rows = NULL;
    size_t n = 0;
    struct rh_tab t;
    memset(&t, 0, sizeof t);
    if (rh_leaks_get(db, a->n, 0, &rows, &n))
        return -1;
    int nc = a->stacks ? 10 : 9, rc = rh_tab_init(&t, names, nc, a->stacks, n);
    char **cov = calloc(n + 1, sizeof *cov);
    if (!cov)
        rc = -1;
    for (size_t r = 0; !rc && r < n; r++) {
        const struct rh_leak_row *l = &rows[r];
        struct rh_cell *c = &t.cells[r * (size_t)nc];
        if (asprintf(&cov[r], "%d/%d", l->coverage, a->buckets) < 0) {
            cov[r] = NULL;
            rc = -1;
            break;
        }
        rh_put_real(&c[0], rh_round(l->score, 3));
        rh_put_text(&c[1], cov[r]);
        rh_put_real(&c[2], rh_round(l->fit, 3));
        rh_put_int(&c[3], l->blocks);
        rh_put_int(&c[4], l->bytes);
        rh_put_real(&c[5], rh_round((double)l->first / 1e9, 3));
        rh_put_real(&c[6], rh_round((double)l->last / 1e9, 3));
        rh_put_text(&c[7], l->function);
        rh_put_text(&c[8], l->location);
        if (a->stacks)
            rc = rh_stack_cell(db, l->bt, &c[9], &t.keep[r]);
    }
    char h[32], head[256];
    snprintf(head, sizeof head,
             "leaked: %lld bytes (%s) in %lld blocks; score = coverage x fit "
             "(man rheaper: the leak score)\n",
             (long long)s->leaked_bytes, rh_human_bytes(s->leaked_bytes, h, sizeof h),
             (long long)s->leaked_blocks);
    if (!rc)
        rc = rh_tab_print(&t, a, head, stdout);
    else if (!cov)
        fprintf(stderr, "rheaper: out of memory\n");
    for (size_t r = 0; cov && r < n; r++)
        free(cov[r]);
    free(cov);
    rh_tab_free(&t);
    rh_leaks_free(rows, n);
    return rc;
}

int rh_cmd_leaks(int argc, char **argv)
{
    return rh_listing(argc, argv, RH_OPT_N | RH_OPT_STACKS | RH_OPT_BUCKETS | RH_OPT_BY_REGION,
                      rh_leaks_list);
}

/* ---- summary ---------------------------------------------------------------------- */

static void rh_json_kv_str(FILE *out, const char *k, const char *v)
{
    fprintf(out, "\"%s\":", k);
    rh_json_string(out, v);
    fputc(',', out);
}

/* The per-thread figures of the scope (TEMP TABLE tstat: the converter's
 * thread_stats, or the filtered pass's). */
static const char *rh_thread_sql(sqlite3 *db)
{
    (void)db;
    return "SELECT t.id AS thread, t.tid AS tid, t.name AS name,"
           " coalesce(s.alloc_blocks, 0) AS alloc_blocks,"
           " coalesce(s.alloc_bytes, 0) AS alloc_bytes,"
           " coalesce(s.freed_blocks, 0) AS freed_blocks,"
           " coalesce(s.freed_bytes, 0) AS freed_bytes,"
           " coalesce(s.freed_by_others_blocks, 0) AS freed_by_others_blocks,"
           " coalesce(s.freed_by_others_bytes, 0) AS freed_by_others_bytes,"
           " coalesce(s.live_blocks, 0) AS live_blocks, coalesce(s.live_bytes, 0) AS live_bytes"
           " FROM threads t LEFT JOIN temp.tstat s ON s.thread = t.id ORDER BY t.id";
}

/* Prints the whole-profile figures, the top 5 sites and the threads, as text,
 * CSV (figures only) or one JSON object. */
/* The summary's memory lines (text), and the top churn site beside the
 * memory the heap does not explain. */
static void rh_mem_text(sqlite3 *db, const struct rh_memfig *m, int64_t duration_ns)
{
    char line[256], a[32], b[32];
    printf("memory         peak RSS at %.3f s: %s\n", m->peak.t / 1e9,
           rh_memory_line(m, &m->peak, line, sizeof line));
    printf("               at the end (%.3f s): %s\n", m->end.t / 1e9,
           rh_memory_line(m, &m->end, line, sizeof line));
    if (m->peak.has_alloc || m->end.has_alloc) {
        printf("allocator      %s: arena bytes not in use %s at the RSS peak, %s at the end"
               " (arena %s)\n",
               m->allocator, m->peak.has_alloc ? rh_human_bytes(m->peak.a_free, a, sizeof a) : "?",
               m->end.has_alloc ? rh_human_bytes(m->end.a_free, b, sizeof b) : "?",
               m->end.has_alloc ? rh_human_bytes(m->end.a_system, line, sizeof line) : "?");
    }
    sqlite3_stmt *c = rh_churn_stmt(db, 1, duration_ns, NULL);
    if (c && sqlite3_step(c) == SQLITE_ROW)
        printf("top churn      %s (%s): %s/s allocated and freed, %lld short-lived blocks\n",
               (const char *)sqlite3_column_text(c, 0), (const char *)sqlite3_column_text(c, 1),
               rh_human_bytes(sqlite3_column_int64(c, 2), a, sizeof a),
               (long long)sqlite3_column_int64(c, 6));
    sqlite3_finalize(c);
}

static int rh_summary_list(sqlite3 *db, const struct rh_args *a, const struct rh_summary *s)
{
    sqlite3_stmt *thr = NULL, *kinds = NULL;
    struct rh_tab top;
    struct rh_site_row *toprows = NULL;
    size_t ntop = 0;
    int rc = -1;
    memset(&top, 0, sizeof top);
    /* One line per kind (allocation function or pool name): a pool's blocks
     * sit inside chunks of another kind, so "allocated" counts those bytes
     * twice; --kind / --not-kind pick one side (docs/allocators.md). */
    if (rh_top_table(db, "bytes", 5, 0, &top, &toprows, &ntop) ||
        !(thr = rh_sql_prepare(db, rh_thread_sql(db))) || !(kinds = rh_kinds_stmt(db)))
        goto out;
    const struct {
        const char *k;
        int64_t v;
    } figs[] = {
        {"pid", s->pid},
        {"duration_ns", s->duration_ns},
        {"events", s->events},
        {"alloc_blocks", s->alloc_blocks},
        {"alloc_bytes", s->alloc_bytes},
        {"freed_blocks", s->freed_blocks},
        {"freed_bytes", s->freed_bytes},
        {"leaked_blocks", s->leaked_blocks},
        {"leaked_bytes", s->leaked_bytes},
        {"peak_bytes", s->peak_bytes},
        {"peak_time_ns", s->peak_time_ns},
        {"temporary_blocks", s->temporary_blocks},
        {"clean", s->clean},
        {"cpu_samples", rh_cpu_total(db)}, /* CPU sampling: last, only when sampled */
    };
    int64_t cpu_hz = rh_cpu_hz(db);
    size_t nfig = sizeof figs / sizeof figs[0] - (cpu_hz ? 0 : 1);
    struct rh_memfig mem;
    if (rh_memory_figures(db, &mem))
        goto out;
    if (a->fmt == RH_FMT_CSV) {
        printf("key,value\nprogram,");
        rh_csv_field(stdout, s->program); /* the command line may hold commas or quotes */
        putchar('\n');
        if (s->title[0]) {
            printf("title,");
            rh_csv_field(stdout, s->title);
            putchar('\n');
        }
        for (size_t i = 0; i < nfig; i++)
            printf("%s,%lld\n", figs[i].k, (long long)figs[i].v);
        if (mem.samples) {
            printf("rss_peak,%lld\nrss_peak_time_ns,%lld\nheap_at_rss_peak,%lld\n"
                   "rss_end,%lld\nheap_end,%lld\n",
                   (long long)mem.peak.rss, (long long)mem.peak.t, (long long)mem.peak.heap,
                   (long long)mem.end.rss, (long long)mem.end.heap);
            if (mem.peak.has_alloc && mem.end.has_alloc)
                printf("alloc_free_at_rss_peak,%lld\nalloc_free_end,%lld\n",
                       (long long)mem.peak.a_free, (long long)mem.end.a_free);
        }
        rc = 0;
        goto out;
    }
    if (a->fmt == RH_FMT_JSON) {
        putchar('{');
        rh_json_kv_str(stdout, "program", s->program);
        if (s->title[0])
            rh_json_kv_str(stdout, "title", s->title);
        for (size_t i = 0; i < nfig; i++)
            printf("\"%s\":%lld,", figs[i].k, (long long)figs[i].v);
        printf("\"top\":");
        if (rh_print_cells(top.names, top.nc, top.cells, top.nrows, RH_FMT_JSON, stdout))
            goto out;
        printf(",\"threads\":");
        if (rh_print_stmt(thr, RH_FMT_JSON, stdout))
            goto out;
        printf(",\"kinds\":");
        if (rh_print_stmt(kinds, RH_FMT_JSON, stdout))
            goto out;
        if (mem.samples) {
            printf(",\"memory\":");
            rh_memory_json(stdout, &mem);
        }
        printf("}\n");
        rc = 0;
        goto out;
    }
    char h[32];
    printf("program        %s\n", s->program);
    if (s->title[0] && strcmp(s->title, s->program) != 0)
        printf("title          %s\n", s->title); /* what ps showed at the end */
    printf("pid            %lld\n", (long long)s->pid);
    if (s->fork_parent_pid)
        printf("parent         %lld (forked from its recording; %lld blocks inherited)\n",
               (long long)s->fork_parent_pid, (long long)s->inherited_rows);
    printf("duration       %.3f s%s\n", s->duration_ns / 1e9,
           s->clean ? "" : " (profile not clean: cut short or damaged)");
    printf("events         %lld\n", (long long)s->events);
    printf("allocated      %lld bytes (%s) in %lld blocks\n", (long long)s->alloc_bytes,
           rh_human_bytes(s->alloc_bytes, h, sizeof h), (long long)s->alloc_blocks);
    printf("freed          %lld bytes (%s) in %lld blocks\n", (long long)s->freed_bytes,
           rh_human_bytes(s->freed_bytes, h, sizeof h), (long long)s->freed_blocks);
    printf("peak           %lld bytes (%s) at %.3f s\n", (long long)s->peak_bytes,
           rh_human_bytes(s->peak_bytes, h, sizeof h), s->peak_time_ns / 1e9);
    printf("leaked         %lld bytes (%s) in %lld blocks\n", (long long)s->leaked_bytes,
           rh_human_bytes(s->leaked_bytes, h, sizeof h), (long long)s->leaked_blocks);
    printf("temporary      %lld blocks (%.1f%% of allocations)\n", (long long)s->temporary_blocks,
           s->alloc_blocks ? 100.0 * s->temporary_blocks / s->alloc_blocks : 0.0);
    /* Calls that re-entered the runtime (signal handlers) and passed
     * through unrecorded; one line, only when there were any */
    int64_t reentered = rh_meta_int(db, "reentered_unrecorded", 0);
    if (reentered > 0)
        printf("unrecorded     %lld calls re-entered the allocator (signal handlers) and were "
               "not recorded\n",
               (long long)reentered);
    if (cpu_hz) { /* CPU sampling: one CPU line, its top site as `top cpu` ranks it */
        int64_t n = rh_cpu_total(db);
        printf("cpu            %lld samples at %lld Hz (%.3f s of CPU), %lld dropped", (long long)n,
               (long long)cpu_hz, (double)n / (double)cpu_hz, (long long)rh_cpu_dropped(db));
        sqlite3_stmt *c = rh_cpu_top_stmt(db, 1, NULL);
        if (c && sqlite3_step(c) == SQLITE_ROW)
            printf(", top %s (%s) %.1f%%", (const char *)sqlite3_column_text(c, 0),
                   (const char *)sqlite3_column_text(c, 1), sqlite3_column_double(c, 3));
        sqlite3_finalize(c);
        putchar('\n');
    }
    if (mem.samples)
        rh_mem_text(db, &mem, s->duration_ns);
    printf("\ntop 5 call sites by bytes\n");
    if (rh_print_cells(top.names, top.nc, top.cells, top.nrows, RH_FMT_TEXT, stdout))
        goto out;
    printf("\nthreads\n");
    if (rh_print_stmt(thr, RH_FMT_TEXT, stdout))
        goto out;
    printf("\nby kind (pool blocks lie inside other rows' chunks: see --kind)\n");
    if (rh_print_stmt(kinds, RH_FMT_TEXT, stdout))
        goto out;
    rc = 0;
out:
    rh_tab_free(&top);
    rh_sites_free(toprows, ntop);
    sqlite3_finalize(thr);
    sqlite3_finalize(kinds);
    return rc;
}

int rh_cmd_summary(int argc, char **argv)
{
    return rh_listing(argc, argv, 0, rh_summary_list);
}

/* ---- query ------------------------------------------------------------------------- */

/* The authorizer of rh_query_prepare(): sets *(int *)ctx when the statement
 * reads the TEMP table sel (any letter case). Allows everything. */
static int rh_query_auth(void *ctx, int action, const char *a1, const char *a2, const char *db,
                         const char *trigger)
{
    (void)a2, (void)trigger;
    /* db is NULL for a table read without columns (count(*)); a profile has
     * no other table of that name */
    if (action == SQLITE_READ && a1 && !sqlite3_stricmp(a1, "sel") &&
        (!db || !sqlite3_stricmp(db, "temp")))
        *(int *)ctx = 1;
    return SQLITE_OK;
}

/* Prepares the first statement of sql into *st (NULL when only whitespace or
 * a comment is left) and *tail. `sel` is filled only for a statement that
 * reads it, as SQLite's authorizer reports while preparing (an empty sel
 * stands in until then), or for one that does not prepare without the
 * scope's other TEMP tables (rh_query.h), never by looking at the text;
 * *built says whether it is filled. Returns 0, or 1 after one line on stderr. */
static int rh_query_prepare(sqlite3 *db, const struct rh_args *a, const char *sql,
                            sqlite3_stmt **st, const char **tail, int *built)
{
    int reads_sel = 0;
    sqlite3_set_authorizer(db, rh_query_auth, &reads_sel);
    int rc = sqlite3_prepare_v2(db, sql, -1, st, tail);
    sqlite3_set_authorizer(db, NULL, NULL);
    /* a statement that names a table of the scope (temp.cs, sstat, ...) does
     * not prepare before the scope exists: build it and try once more */
    if (((rc == SQLITE_OK && reads_sel) || rc != SQLITE_OK) && !*built) {
        sqlite3_finalize(*st);
        *st = NULL;
        if (rh_filter_apply(db, &a->f))
            return 1;
        *built = 1;
        rc = sqlite3_prepare_v2(db, sql, -1, st, tail);
    }
    if (rc != SQLITE_OK) {
        fprintf(stderr, "rheaper: SQL error: %s\n", sqlite3_errmsg(db));
        return 1;
    }
    return 0;
}

int rh_cmd_query(int argc, char **argv)
{
    struct rh_args a;
    int rc = rh_parse(argc, argv, RH_OPT_SQL, &a);
    if (rc)
        return rc;
    /* a statement may read any table of the scope, its heap over time (stl,
     * stls, sctl) among them: a stack filter's scope is then the pass's */
    a.f.chart = RH_CHART_EVENTS;
    sqlite3 *db = rh_query_open(a.db);
    if (!db)
        return 1;
    /* sel can cost a pass over allocations (a filter, or a profile without
     * aggregates): built at once when a filter was given, otherwise only when
     * a statement reads it (rh_query_prepare). */
    int built = 0;
    if (a.filtered) {
        if (rh_filter_apply(db, &a.f)) {
            sqlite3_close(db);
            return 1;
        }
        built = 1;
    } else if (sqlite3_exec(db, "CREATE TEMP TABLE sel AS SELECT *, 0 AS lifetime FROM"
                                " allocations WHERE 0", NULL, NULL, NULL) != SQLITE_OK) {
        fprintf(stderr, "rheaper: SQL error: %s\n", sqlite3_errmsg(db));
        sqlite3_close(db);
        return 1;
    }
    const char *sql = a.sql;
    rc = 0;
    while (sql && *sql) {
        sqlite3_stmt *st = NULL;
        const char *tail = NULL;
        if (rh_query_prepare(db, &a, sql, &st, &tail, &built)) {
            rc = 1;
            break;
        }
        if (!st) /* only whitespace or a comment left */
            break;
        /* The profile is opened read-only: say so for a statement that would
         * change it, rather than pass on SQLite's bare message. */
        int ro = sqlite3_stmt_readonly(st);
        int r = rh_print_stmt(st, a.fmt, stdout);
        if (r && !ro && sqlite3_errcode(db) == SQLITE_READONLY)
            fprintf(stderr, "rheaper: query opens the profile read-only; to change it, use the"
                            " sqlite3 shell on a copy\n");
        sqlite3_finalize(st);
        if (r) {
            rc = 1;
            break;
        }
        sql = tail;
    }
    sqlite3_close(db);
    return rc;
}
