/* rh_serve_api.c: the endpoints of `rheaper serve`: bytehound's REST API and
 * rheaper's additions.
 *
 *   /list                                   the profiles
 *   /data/ID/allocations?F&sort_by&order&count&skip
 *   /data/ID/allocation_groups?F&sort_by&order&count&skip
 *   /data/ID/allocation_ascii_tree?F        text: the call tree, outermost first
 *   /data/ID/export/flamegraph?F            SVG (rh_svg_flamegraph)
 *   /data/ID/export/flamegraph.pl?F         folded stacks (rh_folded)
 *   /data/ID/export/heaptrack?F             heaptrack's format (rh_heaptrack_write)
 *   /data/ID/export/pprof?F&kind&at         pprof's gzipped protobuf (rh_pprof_write)
 *   /data/ID/mmaps, /data/ID/mallopts       the mmaps and mallopts tables
 *   /data/ID/maps?id&with_regions&with_usage_history   bytehound's maps (mmaps)
 *   /data/ID/timeline?F, /threads?F, /leaks?F&count, /diff/OTHER?F&count
 *   /data/ID/memory?F&count                 RSS and the allocator beside the heap,
 *                                           the top churn sites (rh_query_memory.c)
 *   /data/ID/summary?F                      the overview's figures
 *   /data/ID/sites?F&sort_by&order&count&skip   one row per call site
 *   /data/ID/site?F&function&location       one call site in detail
 *   /data/ID/timeline_sites?F&count         the heap over time by call site
 *   /data/ID/tree?F&kind&function&cpu&sort_by&min_share&count   call trees
 *   /data/ID/cpu?F&count                    the CPU samples' top functions
 * ID is an id from /list or `last`. F are the filters (rh_query_params.c). The
 * JSON keeps bytehound's field names and shapes (its server-core protocol);
 * what rheaper does not know is null (docs/rest-api.md). Every answer
 * is built in memory, so lists are capped at the server's row cap; an
 * interrupted query (time budget) answers 503 with the budget.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rh_names.h"
#include "rh_serve.h"

/* One request in progress. */
struct rh_req {
    const struct rh_server *s;
    const struct rh_params *pr;
    struct rh_resp *r;
    sqlite3 *db;
    int pi; /* the profile's index */
    struct rh_qfilter q;
    const char *sort_by, *order;
    int64_t count, skip; /* count -1: not given */
    int64_t duration;
    FILE *out; /* the body being written (buf, len); an error replaces it */
    char *buf;
    size_t len;
    sqlite3_stmt *frames; /* the frames of one stack */
};

/* ---- helpers ------------------------------------------------------------------- */

/* The failure of a query: 503 when the budget ran out, 400 for a regex past
 * its limits, else 500. */
static int rh_q_fail(struct rh_req *q)
{
    if (rh_serve_over_budget())
        return rh_resp_error(q->r, 503, NULL,
                             "the query ran out of its time budget of %d ms; narrow the filters",
                             q->s->budget_ms);
    if (sqlite3_errcode(q->db) == SQLITE_INTERRUPT)
        return rh_resp_error(q->r, 503, NULL, "the server is stopping");
    /* a pattern past the regex engine's limits (rh_regex.c) is the request's
     * fault, not the server's */
    if (strstr(sqlite3_errmsg(q->db), "ran into its matching limit"))
        return rh_resp_error(q->r, 400, NULL, "%s", sqlite3_errmsg(q->db));
    return rh_resp_error(q->r, 500, NULL, "query failed: %s", sqlite3_errmsg(q->db));
}

/* bytehound's Timeval of a time in ns. */
static void rh_tv(FILE *o, int64_t ns)
{
    if (ns < 0)
        ns = 0;
    fprintf(o, "{\"secs\":%" PRId64 ",\"fract_nsecs\":%" PRId64 "}", ns / 1000000000,
            ns % 1000000000);
}

/* bytehound's timestamp_relative_p of a time in ns: its fraction of the run,
 * 0 to 1, printed as the shortest decimal that reads back (rh_fmt_real). */
static void rh_relp(FILE *o, const struct rh_req *q, int64_t ns)
{
    char num[40];
    fputs(rh_fmt_real(q->duration > 0 ? (double)ns / (double)q->duration : 0, 1, num, sizeof num),
          o);
}

/* The name of the allocation function a stack of kind `kind` called, for the
 * frame that ends a bytehound backtrace ("operator new" for new, ...), or NULL
 * when the kind is not known. */
static const char *rh_alloc_fn(const char *kind)
{
    if (!kind || !*kind || !strcmp(kind, "unknown"))
        return NULL;
    if (!strcmp(kind, "new"))
        return "operator new";
    if (!strcmp(kind, "new[]"))
        return "operator new[]";
    return kind;
}

static void rh_json_text_or_null(FILE *o, sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        fputs("null", o);
    else
        rh_json_string(o, (const char *)sqlite3_column_text(st, col));
}

static void rh_json_int_or_null(FILE *o, sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        fputs("null", o);
    else
        fprintf(o, "%" PRId64, (int64_t)sqlite3_column_int64(st, col));
}

/* Writes the frames of stack bt as bytehound's Frame list, in bytehound's
 * order: outermost first (the reverse of frame_no), then one frame for the
 * allocation function fn that the innermost frame called (NULL: none), as
 * bytehound's backtraces end in its malloc hook. The recorded stacks have no
 * allocator frame (the wraps record from the caller's frame), so that last
 * frame has only a function and "allocator": true; every other frame has
 * "allocator": false. Returns the number of recorded frames, or -1. */
static int rh_frames(struct rh_req *q, int64_t bt, const char *fn)
{
    if (!q->frames &&
        sqlite3_prepare_v2(q->db,
                           "SELECT coalesce(address, 0), module, sym, file, line, inlined"
                           " FROM backtraces WHERE id = ?1 ORDER BY frame_no DESC",
                           -1, &q->frames, NULL) != SQLITE_OK)
        return -1;
    sqlite3_stmt *st = q->frames;
    sqlite3_bind_int64(st, 1, bt);
    fputc('[', q->out);
    int n = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t a = sqlite3_column_int64(st, 0);
        fprintf(q->out,
                "%s{\"address\":%" PRId64 ",\"address_s\":\"%016" PRIX64 "\",\"count\":null,",
                n++ ? "," : "", a, (uint64_t)a);
        fputs("\"library\":", q->out);
        rh_json_text_or_null(q->out, st, 1);
        fputs(",\"function\":", q->out);
        rh_json_text_or_null(q->out, st, 2);
        fputs(",\"raw_function\":", q->out);
        rh_json_text_or_null(q->out, st, 2);
        if (sqlite3_column_type(st, 2) == SQLITE_TEXT) /* the name a page shows */
            rh_json_short_name(q->out, (const char *)sqlite3_column_text(st, 2));
        fputs(",\"source\":", q->out);
        rh_json_text_or_null(q->out, st, 3);
        fputs(",\"line\":", q->out);
        rh_json_int_or_null(q->out, st, 4);
        fprintf(q->out, ",\"column\":null,\"is_inline\":%s,\"allocator\":false}",
                sqlite3_column_int(st, 5) ? "true" : "false");
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return -1;
    if (fn) {
        fprintf(q->out, "%s{\"address\":0,\"address_s\":\"%016x\",\"count\":null,\"library\":null,"
                        "\"function\":", n ? "," : "", 0);
        rh_json_string(q->out, fn);
        fputs(",\"raw_function\":", q->out);
        rh_json_string(q->out, fn);
        fputs(",\"source\":null,\"line\":null,\"column\":null,\"is_inline\":false,"
              "\"allocator\":true}", q->out);
    }
    fputc(']', q->out);
    return n;
}

/* Parses count and skip. Returns 0 or -1 (400 set). */
static int rh_count_skip(struct rh_req *q, const char *k, const char *v, int *taken)
{
    *taken = 0;
    int64_t *dst = !strcmp(k, "count") ? &q->count : !strcmp(k, "skip") ? &q->skip : NULL;
    if (!dst)
        return 0;
    *taken = 1;
    char *end;
    unsigned long long x = strtoull(v ? v : "", &end, 10);
    if (!v || !*v || *end || *v == '-' || x > (unsigned long long)INT64_MAX / 2)
        return rh_resp_error(q->r, 400, k, "bad value '%s' for %s: a count", v ? v : "", k);
    *dst = (int64_t)x;
    return 0;
}

/* Takes the request's parameters: filters, and `own` (NULL-terminated names
 * this endpoint takes besides; sort_by, order, count and skip among them are
 * parsed here). Then applies the filters, keeping as much of the scope's
 * heap over time as chart asks (enum rh_chart). Returns 0 or -1 (r set). */
static int rh_take_params_for(struct rh_req *q, const char *const *own, int chart)
{
    rh_qfilter_init(&q->q);
    q->q.f.chart = chart;
    q->count = -1;
    for (int i = 0; i < q->pr->n; i++) {
        const char *k = q->pr->k[i], *v = q->pr->v[i];
        int mine = 0;
        for (int j = 0; own && own[j]; j++)
            if (!strcmp(k, own[j]))
                mine = 1;
        if (mine) {
            int taken;
            if (rh_count_skip(q, k, v, &taken))
                return -1;
            if (!strcmp(k, "sort_by"))
                q->sort_by = v;
            else if (!strcmp(k, "order"))
                q->order = v;
            continue;
        }
        char err[512];
        int r = rh_qfilter_param(&q->q, k, v, err, sizeof err);
        if (r < 0)
            return rh_resp_error(q->r, 400, k, "%s", err);
        if (r == 0)
            return rh_resp_error(q->r, 400, k, "unknown parameter '%s'", k);
    }
    if (q->order && strcmp(q->order, "asc") && strcmp(q->order, "dsc"))
        return rh_resp_error(q->r, 400, "order", "bad value '%s' for order: asc or dsc", q->order);
    if (q->q.backtrace >= 0) {
        sqlite3_stmt *st = NULL;
        int found = sqlite3_prepare_v2(q->db, "SELECT 1 FROM stacks WHERE id = ?1", -1, &st,
                                       NULL) == SQLITE_OK;
        if (found) {
            sqlite3_bind_int64(st, 1, q->q.backtrace);
            found = sqlite3_step(st) == SQLITE_ROW;
        }
        sqlite3_finalize(st);
        if (!found)
            return rh_resp_error(q->r, 404, "backtraces", "no stack with id %" PRId64,
                                 q->q.backtrace);
    }
    if (rh_qfilter_apply(q->db, &q->q))
        return rh_q_fail(q);
    return 0;
}

/* rh_take_params_for an endpoint that does not draw the scope's heap over
 * time: a stack filter's scope then comes from the converter's aggregates
 * and reads no row (rh_query_stackscope.c). */
static int rh_take_params(struct rh_req *q, const char *const *own)
{
    return rh_take_params_for(q, own, 0);
}

/* The number of rows to list: count capped at the row cap; sets *capped. */
static int64_t rh_limit(const struct rh_req *q, int *capped)
{
    int64_t n = q->count < 0 ? q->s->row_cap : q->count;
    *capped = n > q->s->row_cap;
    return *capped ? q->s->row_cap : n;
}

static void rh_cap_note(struct rh_req *q, int capped)
{
    fprintf(q->out, ",\"row_cap\":%" PRId64 ",\"capped\":%s", q->s->row_cap,
            capped ? "true" : "false");
}

/* ---- /list ---------------------------------------------------------------------- */

static int rh_ep_list(const struct rh_server *s, struct rh_resp *r, FILE *o)
{
    fputc('[', o);
    for (int i = 0; i < s->np; i++) {
        sqlite3 *db = rh_serve_db(s, i);
        if (!db)
            return rh_resp_error(r, 500, NULL, "cannot open %s", s->p[i].path);
        struct rh_profile_info pi;
        rh_profile_info(db, &pi);
        fprintf(o, "%s{\"id\":\"%s\",\"executable\":", i ? "," : "", s->p[i].id);
        rh_json_string(o, s->p[i].name);
        /* from the program's ELF header at conversion; "unknown" without it */
        fputs(",\"architecture\":", o);
        rh_json_string(o, pi.architecture);
        fprintf(o,
                ",\"final_allocated\":%" PRId64 ",\"final_allocated_count\":%" PRId64
                ",\"runtime\":",
                pi.leaked_bytes, pi.leaked_blocks);
        rh_tv(o, pi.duration_ns);
        fprintf(o,
                ",\"unique_backtrace_count\":%" PRId64 ",\"maximum_backtrace_depth\":%" PRId64
                ",\"timestamp\":",
                pi.stacks, pi.max_depth);
        rh_tv(o, 0);
        fputs(",\"path\":", o);
        rh_json_string(o, s->p[i].path);
        fputs(",\"title\":", o);
        rh_json_string(o, pi.title);
        fprintf(o,
                ",\"allocations\":%" PRId64 ",\"cpu_hz\":%" PRId64 ",\"cpu_samples\":%" PRId64
                ",\"cpu_samples_dropped\":%" PRId64 ",\"sample_mode\":",
                pi.allocations, rh_cpu_hz(db), pi.cpu_samples, rh_cpu_dropped(db));
        if (pi.has_sample_mode)
            rh_json_string(o, pi.sample_mode);
        else
            fputs("null", o);
        fputc('}', o);
    }
    fputs("]\n", o);
    return 0;
}

/* ---- /allocations ----------------------------------------------------------------- */

/* bytehound's realloc chain fields of allocation id (chain_length,
 * position_in_chain, chain_lifetime, chain_deallocation), from the converter's
 * table realloc_chains (rh_chains.c) through *chain, prepared on first use; all
 * null in a database converted before it. chain_deallocation is the free of
 * the chain's last block, given on the other blocks of the chain (null on the
 * last, as bytehound's); chain_lifetime runs from the first block's allocation
 * to that free (null while the last block lives). Returns 0 or -1. */
static int rh_chain_fields(struct rh_req *q, sqlite3_stmt **chain, int64_t id)
{
    FILE *o = q->out;
    if (!*chain) {
        if (!rh_table_exists(q->db, "realloc_chains")) {
            fputs(",\"chain_length\":null,\"position_in_chain\":null,\"chain_lifetime\":null,"
                  "\"chain_deallocation\":null",
                  o);
            return 0;
        }
        if (sqlite3_prepare_v2(
                q->db,
                "WITH me AS (SELECT coalesce((SELECT first FROM realloc_chains WHERE id = ?1), ?1)"
                " AS first, coalesce((SELECT pos FROM realloc_chains WHERE id = ?1), 0) AS pos),"
                " ch AS (SELECT first, pos, coalesce((SELECT id FROM realloc_chains r"
                " WHERE r.first = me.first ORDER BY r.pos DESC LIMIT 1), first) AS last,"
                " 1 + coalesce((SELECT max(r.pos) FROM realloc_chains r WHERE r.first = me.first),"
                " 0) AS len FROM me)"
                " SELECT ch.pos, ch.len, ch.last, l.dealloc_after,"
                " (SELECT tid FROM threads WHERE id = l.dealloc_thread),"
                " (SELECT alloc_after FROM allocations WHERE id = ch.first)"
                " FROM ch LEFT JOIN allocations l ON l.id = ch.last",
                -1, chain, NULL) != SQLITE_OK)
            return -1;
    }
    sqlite3_bind_int64(*chain, 1, id);
    if (sqlite3_step(*chain) != SQLITE_ROW) {
        sqlite3_reset(*chain);
        return -1;
    }
    int64_t last = sqlite3_column_int64(*chain, 2);
    int freed = sqlite3_column_type(*chain, 3) != SQLITE_NULL;
    fprintf(o,
            ",\"chain_length\":%" PRId64 ",\"position_in_chain\":%" PRId64
            ",\"chain_lifetime\":",
            (int64_t)sqlite3_column_int64(*chain, 1), (int64_t)sqlite3_column_int64(*chain, 0));
    if (freed && sqlite3_column_type(*chain, 5) != SQLITE_NULL)
        rh_tv(o, sqlite3_column_int64(*chain, 3) - sqlite3_column_int64(*chain, 5));
    else
        fputs("null", o);
    fputs(",\"chain_deallocation\":", o);
    if (freed && last != id) {
        fputs("{\"timestamp\":", o);
        rh_tv(o, sqlite3_column_int64(*chain, 3));
        fputs(",\"thread\":", o);
        rh_json_int_or_null(o, *chain, 4);
        fputc('}', o);
    } else {
        fputs("null", o);
    }
    sqlite3_reset(*chain);
    return 0;
}

static int rh_has_weight(sqlite3 *db)
{
    return rh_sql_int(db,
                      "SELECT count(*) FROM pragma_table_info('allocations') WHERE name ="
                      " 'weight'",
                      0, 0) > 0;
}

static int rh_ep_allocations(struct rh_req *q)
{
    static const char *const own[] = {"sort_by", "order", "count", "skip", NULL};
    if (rh_take_params(q, own))
        return -1;
    const char *col = "m.alloc_after";
    if (q->sort_by) {
        if (!strcmp(q->sort_by, "timestamp"))
            col = "m.alloc_after";
        else if (!strcmp(q->sort_by, "address"))
            col = "m.addr";
        else if (!strcmp(q->sort_by, "size"))
            col = "m.size";
        else
            return rh_resp_error(q->r, 400, "sort_by",
                                 "bad value '%s' for sort_by: timestamp, address or size",
                                 q->sort_by);
    }
    const char *dir = q->order && !strcmp(q->order, "dsc") ? "DESC" : "ASC";
    int weight = rh_has_weight(q->db), capped;
    int64_t limit = rh_limit(q, &capped);
    int64_t total = rh_sql_int(q->db, "SELECT count(*) FROM msel", 0, -1);
    if (total < 0)
        return rh_q_fail(q);
    char sql[1024];
    snprintf(sql, sizeof sql,
             "SELECT m.addr, m.alloc_after, m.dealloc_after,"
             " (SELECT tid FROM threads WHERE id = m.alloc_thread),"
             " (SELECT tid FROM threads WHERE id = m.dealloc_thread), m.size, m.bt, m.kind,"
             " (SELECT frame FROM temp.cs WHERE bt = m.bt), %s, m.id"
             " FROM msel m ORDER BY %s %s, m.id %s LIMIT ?1 OFFSET ?2",
             weight ? "(SELECT weight FROM allocations a WHERE a.id = m.id)" : "1.0", col, dir,
             dir);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK)
        return rh_q_fail(q);
    sqlite3_bind_int64(st, 1, limit);
    sqlite3_bind_int64(st, 2, q->skip);
    FILE *o = q->out;
    sqlite3_stmt *chain = NULL;
    fputs("{\"allocations\":[", o);
    int n = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t addr = sqlite3_column_int64(st, 0), t = sqlite3_column_int64(st, 1);
        fprintf(o, "%s{\"address\":%" PRId64 ",\"address_s\":\"%016" PRIX64 "\",\"timestamp\":",
                n++ ? "," : "", addr, (uint64_t)addr);
        rh_tv(o, t);
        fputs(",\"timestamp_relative\":", o);
        rh_tv(o, t);
        fputs(",\"timestamp_relative_p\":", o);
        rh_relp(o, q, t);
        fputs(",\"thread\":", o);
        rh_json_int_or_null(o, st, 3);
        fprintf(o, ",\"size\":%" PRId64 ",\"backtrace_id\":%" PRId64 ",\"deallocation\":",
                (int64_t)sqlite3_column_int64(st, 5), (int64_t)sqlite3_column_int64(st, 6));
        if (sqlite3_column_type(st, 2) == SQLITE_NULL) {
            fputs("null", o);
        } else {
            fputs("{\"timestamp\":", o);
            rh_tv(o, sqlite3_column_int64(st, 2));
            fputs(",\"thread\":", o);
            rh_json_int_or_null(o, st, 4);
            fputc('}', o);
        }
        fputs(",\"backtrace\":", o);
        int nf = rh_frames(q, sqlite3_column_int64(st, 6),
                           rh_alloc_fn((const char *)sqlite3_column_text(st, 7)));
        if (nf < 0) {
            sqlite3_finalize(chain);
            sqlite3_finalize(st);
            return rh_q_fail(q);
        }
        fputs(",\"is_mmaped\":null,\"in_main_arena\":null,\"extra_space\":null", o);
        if (rh_chain_fields(q, &chain, sqlite3_column_int64(st, 10))) {
            sqlite3_finalize(chain);
            sqlite3_finalize(st);
            return rh_q_fail(q);
        }
        fputs(",\"kind\":", o);
        rh_json_text_or_null(o, st, 7);
        char num[40];
        fprintf(o, ",\"callsite\":%d,\"weight\":%s,\"id\":%" PRId64 "}",
                nf > 0 ? nf - 1 - sqlite3_column_int(st, 8) : 0,
                rh_fmt_real(sqlite3_column_double(st, 9), 1, num, sizeof num),
                (int64_t)sqlite3_column_int64(st, 10));
    }
    sqlite3_finalize(chain);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return rh_q_fail(q);
    fprintf(o, "],\"total_count\":%" PRId64, total);
    rh_cap_note(q, capped);
    fputs("}\n", o);
    return 0;
}

/* ---- /allocation_groups ------------------------------------------------------------ */

/* One AllocationGroupData from 8 columns starting at c: size, min_size,
 * max_size, min_t, max_t, leaked, count (min/max size may be NULL). */
static void rh_group_data(struct rh_req *q, sqlite3_stmt *st, int c)
{
    FILE *o = q->out;
    int64_t mn = sqlite3_column_int64(st, c + 3), mx = sqlite3_column_int64(st, c + 4);
    fprintf(o, "{\"size\":%" PRId64 ",\"min_size\":", (int64_t)sqlite3_column_int64(st, c));
    rh_json_int_or_null(o, st, c + 1);
    fputs(",\"max_size\":", o);
    rh_json_int_or_null(o, st, c + 2);
    fputs(",\"min_timestamp\":", o);
    rh_tv(o, mn);
    fputs(",\"min_timestamp_relative\":", o);
    rh_tv(o, mn);
    fputs(",\"min_timestamp_relative_p\":", o);
    rh_relp(o, q, mn);
    fputs(",\"max_timestamp\":", o);
    rh_tv(o, mx);
    fputs(",\"max_timestamp_relative\":", o);
    rh_tv(o, mx);
    fputs(",\"max_timestamp_relative_p\":", o);
    rh_relp(o, q, mx);
    fputs(",\"interval\":", o);
    rh_tv(o, mx - mn);
    fprintf(o, ",\"leaked_count\":%" PRId64 ",\"allocated_count\":%" PRId64 "}",
            (int64_t)sqlite3_column_int64(st, c + 5), (int64_t)sqlite3_column_int64(st, c + 6));
}

static int rh_ep_groups(struct rh_req *q)
{
    static const char *const own[] = {"sort_by", "order", "count", "skip", NULL};
    if (rh_take_params(q, own))
        return -1;
    static const struct {
        const char *key, *col;
    } keys[] = {
        {"only_matched.min_timestamp", "g.m_min_t"},
        {"only_matched.max_timestamp", "g.m_max_t"},
        {"only_matched.interval", "(g.m_max_t - g.m_min_t)"},
        {"only_matched.allocated_count", "g.m_count"},
        {"only_matched.leaked_count", "g.m_leaked"},
        {"only_matched.size", "g.m_size"},
        {"all.min_timestamp", "a.first_alloc"},
        {"all.max_timestamp", "a.last_alloc"},
        {"all.interval", "(a.last_alloc - a.first_alloc)"},
        {"all.allocated_count", "a.count"},
        {"all.leaked_count", "a.leaked_blocks"},
        {"all.size", "a.bytes"},
    };
    const char *col = "g.m_size";
    if (q->sort_by) {
        col = NULL;
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            if (!strcmp(q->sort_by, keys[k].key))
                col = keys[k].col;
        if (!col)
            return rh_resp_error(q->r, 400, "sort_by",
                                 "bad value '%s' for sort_by: only_matched.X or all.X, X one of"
                                 " min_timestamp, max_timestamp, interval, allocated_count,"
                                 " leaked_count, size",
                                 q->sort_by);
    }
    const char *dir = q->order && !strcmp(q->order, "dsc") ? "DESC" : "ASC";
    /* the matched figures per stack: the converter's when nothing filters rows */
    struct rh_scope sc;
    if (rh_scope_get(q->db, &sc))
        return rh_q_fail(q);
    /* the matched figures per stack (rh_query_groups.c) */
    if (rh_groups_build(q->db, &q->q))
        return rh_q_fail(q);
    int capped;
    int64_t limit = rh_limit(q, &capped);
    int64_t total = rh_sql_int(q->db, "SELECT count(*) FROM grp", 0, -1);
    char sql[2048];
    /* all.min_size / all.max_size are read per listed group by
     * rh_group_sizes (stack_sizes; on older profiles from the rows when
     * filtered, else null), not here. */
    const char *amin = "NULL", *amax = "NULL";
    snprintf(sql, sizeof sql,
             "WITH page AS MATERIALIZED (SELECT g.*, a.bytes, a.first_alloc, a.last_alloc,"
             " a.leaked_blocks, a.count, %s AS k FROM grp g JOIN gall a ON a.bt = g.bt"
             " ORDER BY k %s, g.bt %s LIMIT ?1 OFFSET ?2)"
             " SELECT g.bt, g.m_size, coalesce(g.m_min_size, %s), coalesce(g.m_max_size, %s),"
             " g.m_min_t, g.m_max_t, g.m_leaked, g.m_count, g.bytes, %s, %s,"
             " g.first_alloc, g.last_alloc, g.leaked_blocks, g.count,"
             " (SELECT frame FROM temp.cs WHERE bt = g.bt),"
             " (SELECT kind FROM stacks WHERE id = g.bt)"
             " FROM page g ORDER BY g.k %s, g.bt %s",
             col, dir, dir, amin, amax, amin, amax, dir, dir);
    sqlite3_stmt *st = NULL;
    if (total < 0 || sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK)
        return rh_q_fail(q);
    sqlite3_bind_int64(st, 1, limit);
    sqlite3_bind_int64(st, 2, q->skip);
    FILE *o = q->out;
    fputs("{\"allocations\":[", o);
    int n = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t bt = sqlite3_column_int64(st, 0);
        fprintf(o, "%s{\"all\":", n++ ? "," : "");
        /* all: bytes, mn, mx, first, last, leaked, count at columns 8.. */
        {
            /* reorder into rh_group_data's layout: size, min, max, min_t, max_t, leaked, count */
            FILE *oo = o;
            int64_t mn = sqlite3_column_int64(st, 11), mx = sqlite3_column_int64(st, 12);
            int64_t smin = -1, smax = -1;
            if (rh_group_sizes(q->db, bt, &smin, &smax, sc.rows)) {
                sqlite3_finalize(st);
                return rh_q_fail(q);
            }
            fprintf(oo,
                    "{\"size\":%" PRId64 ",\"min_size\":", (int64_t)sqlite3_column_int64(st, 8));
            if (smin >= 0)
                fprintf(oo, "%" PRId64 ",\"max_size\":%" PRId64, smin, smax);
            else
                fputs("null,\"max_size\":null", oo);
            fputs(",\"min_timestamp\":", oo);
            rh_tv(oo, mn);
            fputs(",\"min_timestamp_relative\":", oo);
            rh_tv(oo, mn);
            fputs(",\"min_timestamp_relative_p\":", oo);
            rh_relp(oo, q, mn);
            fputs(",\"max_timestamp\":", oo);
            rh_tv(oo, mx);
            fputs(",\"max_timestamp_relative\":", oo);
            rh_tv(oo, mx);
            fputs(",\"max_timestamp_relative_p\":", oo);
            rh_relp(oo, q, mx);
            fputs(",\"interval\":", oo);
            rh_tv(oo, mx - mn);
            fprintf(oo, ",\"leaked_count\":%" PRId64 ",\"allocated_count\":%" PRId64 "}",
                    (int64_t)sqlite3_column_int64(st, 13), (int64_t)sqlite3_column_int64(st, 14));
        }
        fputs(",\"only_matched\":", o);
        rh_group_data(q, st, 1);
        fprintf(o, ",\"backtrace_id\":%" PRId64 ",\"backtrace\":", bt);
        int nf = rh_frames(q, bt, rh_alloc_fn((const char *)sqlite3_column_text(st, 16)));
        if (nf < 0) {
            sqlite3_finalize(st);
            return rh_q_fail(q);
        }
        fprintf(o, ",\"callsite\":%d}", nf > 0 ? nf - 1 - sqlite3_column_int(st, 15) : 0);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return rh_q_fail(q);
    fprintf(o, "],\"total_count\":%" PRId64, total);
    rh_cap_note(q, capped);
    fputs("}\n", o);
    return 0;
}

/* ---- /allocation_ascii_tree ---------------------------------------------------------- */

struct rh_tnode {
    char *name;
    int64_t size, count, leaked;
    int first, next; /* first child, next sibling: indices, 0 = none */
};

struct rh_tree {
    struct rh_tnode *v;
    int n, cap, full;
};

static int rh_tree_child(struct rh_tree *t, int parent, const char *name)
{
    for (int c = t->v[parent].first; c; c = t->v[c].next)
        if (!strcmp(t->v[c].name, name))
            return c;
    if (t->n == t->cap) {
        if (t->cap >= 200000) {
            t->full = 1;
            return -1;
        }
        int nc = t->cap ? t->cap * 2 : 1024;
        struct rh_tnode *nv = realloc(t->v, (size_t)nc * sizeof *nv);
        if (!nv) {
            t->full = 1;
            return -1;
        }
        t->v = nv;
        t->cap = nc;
    }
    int k = t->n++;
    memset(&t->v[k], 0, sizeof t->v[k]);
    t->v[k].name = strdup(name);
    t->v[k].next = t->v[parent].first;
    t->v[parent].first = k;
    return t->v[k].name ? k : -1;
}

static int rh_tnode_cmp_size(const void *a, const void *b, void *ctx)
{
    const struct rh_tnode *v = ctx;
    int64_t x = v[*(const int *)a].size, y = v[*(const int *)b].size;
    return x > y ? -1 : x < y ? 1 : strcmp(v[*(const int *)a].name, v[*(const int *)b].name);
}

static void rh_tree_print(struct rh_tree *t, int node, int depth, FILE *o)
{
    int kids[4096], nk = 0;
    for (int c = t->v[node].first; c && nk < 4096; c = t->v[c].next)
        kids[nk++] = c;
    qsort_r(kids, (size_t)nk, sizeof kids[0], rh_tnode_cmp_size, t->v);
    for (int i = 0; i < nk; i++) {
        const struct rh_tnode *x = &t->v[kids[i]];
        fprintf(o, "%14" PRId64 " %10" PRId64 " %10" PRId64 "  %*s%s %s\n", x->size, x->count,
                x->leaked, depth * 2, "", i + 1 < nk ? "|-" : "`-", x->name);
        if (depth < 200)
            rh_tree_print(t, kids[i], depth + 1, o);
    }
}

static int rh_ep_ascii_tree(struct rh_req *q)
{
    if (rh_take_params(q, NULL))
        return -1;
    q->r->type = "text/plain; charset=utf-8";
    struct rh_tree t = {NULL, 0, 0, 0};
    t.v = calloc(1024, sizeof *t.v);
    if (!t.v)
        return rh_resp_error(q->r, 500, NULL, "out of memory");
    t.cap = 1024;
    t.n = 1;
    t.v[0].name = NULL;
    sqlite3_stmt *st = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(
            q->db,
            "SELECT s.bt, s.bytes, s.count, s.leaked_blocks, coalesce(b.sym, '?\?') || ' (' ||"
            " CASE WHEN b.file IS NOT NULL THEN b.file || ':' || coalesce(b.line, '?')"
            " ELSE coalesce(b.module, '?') || '+' || printf('0x%x', coalesce(b.address, 0)) END"
            " || ')' FROM sstat s JOIN backtraces b ON b.id = s.bt WHERE s.count > 0"
            " ORDER BY s.bt, b.frame_no DESC",
            -1, &st, NULL) != SQLITE_OK)
        goto out;
    int64_t cur = -1, size = 0, count = 0, leaked = 0;
    int node = 0, r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW && !t.full) {
        int64_t bt = sqlite3_column_int64(st, 0);
        if (bt != cur) {
            cur = bt;
            node = 0;
            size = sqlite3_column_int64(st, 1);
            count = sqlite3_column_int64(st, 2);
            leaked = sqlite3_column_int64(st, 3);
            t.v[0].size += size;
            t.v[0].count += count;
            t.v[0].leaked += leaked;
        }
        node = rh_tree_child(&t, node, (const char *)sqlite3_column_text(st, 4));
        if (node < 0)
            break;
        t.v[node].size += size;
        t.v[node].count += count;
        t.v[node].leaked += leaked;
    }
    if (!t.full && r != SQLITE_DONE)
        goto out;
    fprintf(q->out, "%14s %10s %10s  %s\n", "SIZE", "COUNT", "LEAKED", "FRAME (outermost first)");
    fprintf(q->out, "%14" PRId64 " %10" PRId64 " %10" PRId64 "  all\n", t.v[0].size, t.v[0].count,
            t.v[0].leaked);
    rh_tree_print(&t, 0, 0, q->out);
    if (t.full)
        fprintf(q->out, "(tree cut at %d nodes)\n", t.n);
    rc = 0;
out:
    sqlite3_finalize(st);
    for (int i = 0; i < t.n; i++)
        free(t.v[i].name);
    free(t.v);
    return rc ? rh_q_fail(q) : 0;
}

/* ---- the web UI's views: summary, call sites, trees, CPU ----------------------------- */

/* The value of parameter name of the request, or NULL. */
static const char *rh_param(const struct rh_req *q, const char *name)
{
    for (int i = 0; i < q->pr->n; i++)
        if (!strcmp(q->pr->k[i], name))
            return q->pr->v[i] ? q->pr->v[i] : "";
    return NULL;
}

/* /data/ID/summary?F: the overview's figures of the scope (rh_summary_compute,
 * as `rheaper summary` prints them) and its CPU samples. */
static int rh_ep_summary(struct rh_req *q)
{
    if (rh_take_params(q, NULL))
        return -1;
    struct rh_summary sm;
    if (rh_summary_compute(q->db, &sm))
        return rh_q_fail(q);
    FILE *o = q->out;
    fputs("{\"program\":", o);
    rh_json_string(o, sm.program);
    fputs(",\"title\":", o);
    rh_json_string(o, sm.title);
    fprintf(o,
            ",\"pid\":%" PRId64 ",\"duration_ns\":%" PRId64 ",\"alloc_blocks\":%" PRId64
            ",\"alloc_bytes\":%" PRId64 ",\"freed_blocks\":%" PRId64 ",\"freed_bytes\":%" PRId64
            ",\"leaked_blocks\":%" PRId64 ",\"leaked_bytes\":%" PRId64 ",\"peak_bytes\":%" PRId64
            ",\"peak_time_ns\":%" PRId64 ",\"temporary_blocks\":%" PRId64
            ",\"cpu_samples\":%" PRId64 ",\"cpu_hz\":%" PRId64 ",\"cpu_dropped\":%" PRId64 "}\n",
            sm.pid, sm.duration_ns, sm.alloc_blocks, sm.alloc_bytes, sm.freed_blocks,
            sm.freed_bytes, sm.leaked_blocks, sm.leaked_bytes, sm.peak_bytes, sm.peak_time_ns,
            sm.temporary_blocks, rh_cpu_total(q->db), rh_cpu_hz(q->db), rh_cpu_dropped(q->db));
    return 0;
}

/* /data/ID/sites?F&sort_by&order&count&skip: one row per call site
 * (rh_site_table), sorted by one of its columns. */
static int rh_ep_sites(struct rh_req *q)
{
    static const char *const own[] = {"sort_by", "order", "count", "skip", NULL};
    static const char *const cols[] = {
        "bytes", "count", "leaked_bytes", "leaked_blocks", "peak_bytes", "temporary", "score",
        "first", "last",  "stacks",       "function",      "location",   NULL};
    if (rh_take_params(q, own))
        return -1;
    const char *col = q->sort_by ? NULL : "bytes";
    for (int k = 0; q->sort_by && cols[k]; k++)
        if (!strcmp(q->sort_by, cols[k]))
            col = cols[k];
    if (!col)
        return rh_resp_error(q->r, 400, "sort_by",
                             "bad value '%s' for sort_by: one of bytes, count, leaked_bytes,"
                             " leaked_blocks, peak_bytes, temporary, score, first, last, stacks,"
                             " function, location",
                             q->sort_by);
    const char *dir = q->order && !strcmp(q->order, "asc") ? "ASC" : "DESC";
    if (rh_site_table(q->db, q->duration))
        return rh_q_fail(q);
    int capped;
    int64_t limit = rh_limit(q, &capped);
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT function, location, stacks, count, bytes, leaked_blocks, leaked_bytes,"
             " peak_bytes, temporary, first, last, score, leak FROM temp.sitetab"
             " ORDER BY %s %s, bytes DESC, function, location LIMIT ?1 OFFSET ?2",
             col, dir);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK)
        return rh_q_fail(q);
    sqlite3_bind_int64(st, 1, limit);
    sqlite3_bind_int64(st, 2, q->skip);
    fprintf(q->out, "{\"total_count\":%" PRId64 ",\"sort_by\":\"%s\",\"order\":\"%s\",\"sites\":",
            rh_sql_int(q->db, "SELECT count(*) FROM temp.sitetab", 0, 0), col,
            dir[0] == 'A' ? "asc" : "dsc");
    int rc = rh_print_stmt(st, RH_FMT_JSON, q->out);
    sqlite3_finalize(st);
    if (rc)
        return rh_q_fail(q);
    rh_cap_note(q, capped);
    fputs("}\n", q->out);
    return 0;
}

/* /data/ID/site?F&function&location&count: one call site in detail
 * (rh_site_detail_json); 404 when the scope has no such site. */
static int rh_ep_site(struct rh_req *q)
{
    static const char *const own[] = {"function", "location", "count", NULL};
    if (rh_take_params_for(q, own, RH_CHART_SITES))
        return -1;
    const char *fn = rh_param(q, "function"), *loc = rh_param(q, "location");
    if (!fn || !*fn)
        return rh_resp_error(q->r, 400, "function", "the call site's function is required");
    if (!loc)
        return rh_resp_error(q->r, 400, "location", "the call site's location is required");
    if (rh_site_table(q->db, q->duration))
        return rh_q_fail(q);
    int rc = rh_site_detail_json(q->db, fn, loc, q->count > 0 ? (int)q->count : 50, q->out);
    if (rc > 0)
        return rh_resp_error(q->r, 404, "function", "no call site %s at %s in this scope", fn, loc);
    return rc ? rh_q_fail(q) : 0;
}

/* /data/ID/timeline_sites?F&count: the heap over time by call site
 * (rh_timeline_sites_json), the top `count` (default 8) sites stacked. */
static int rh_ep_timeline_sites(struct rh_req *q)
{
    static const char *const own[] = {"count", NULL};
    if (rh_take_params_for(q, own, RH_CHART_SITES))
        return -1;
    if (rh_site_table(q->db, q->duration) ||
        rh_timeline_sites_json(q->db, q->count > 0 ? (int)q->count : 8, q->out))
        return rh_q_fail(q);
    return 0;
}

/* /data/ID/timeline_allocations?F&count&temporary: blocks allocated (or,
 * temporary=1, temporary blocks) up to each moment by call site
 * (rh_events_sites_json), the top `count` (default 8) sites stacked. */
static int rh_ep_timeline_allocations(struct rh_req *q)
{
    static const char *const own[] = {"count", "temporary", NULL};
    if (rh_take_params(q, own))
        return -1;
    const char *v = rh_param(q, "temporary");
    if (v && strcmp(v, "0") && strcmp(v, "1"))
        return rh_resp_error(q->r, 400, "temporary", "bad value '%s' for temporary: 0 or 1", v);
    struct rh_scope sc;
    int64_t span = !rh_scope_get(q->db, &sc) && sc.span > 0 ? sc.span : q->duration;
    if (rh_site_table(q->db, q->duration) ||
        rh_events_sites_json(q->db, q->count > 0 ? (int)q->count : 8, v && !strcmp(v, "1"), span,
                             q->out))
        return rh_q_fail(q);
    return 0;
}

/* /data/ID/sizes?F&function&location: the size classes of the scope, or of
 * one call site when function is given (rh_size_classes_json). */
static int rh_ep_sizes(struct rh_req *q)
{
    static const char *const own[] = {"function", "location", NULL};
    if (rh_take_params(q, own))
        return -1;
    const char *fn = rh_param(q, "function"), *loc = rh_param(q, "location");
    if (fn && !*fn)
        fn = NULL;
    if (rh_site_table(q->db, q->duration))
        return rh_q_fail(q);
    fputs("{\"sizes\":", q->out);
    if (rh_size_classes_json(q->db, fn, loc ? loc : "", q->out))
        return rh_q_fail(q);
    fputs("}\n", q->out);
    return 0;
}

/* /data/ID/tree?F&kind&function&cpu&sort_by&min_share&count: a call tree
 * (rh_tree_json). */
static int rh_ep_tree(struct rh_req *q)
{
    static const char *const own[] = {"kind",      "function", "cpu", "sort_by",
                                      "min_share", "count",    NULL};
    static const char *const kinds[] = {"top-down", "bottom-up", "callers", "callees", NULL};
    static const char *const sorts[] = {"bytes", "count", "leaked", "peak", "temporary", NULL};
    if (rh_take_params(q, own))
        return -1;
    struct rh_tree_opts t = {RH_TREE_TOPDOWN, NULL, 0, 0, 0, 0};
    const char *v = rh_param(q, "kind");
    if (v) {
        int k = 0;
        while (kinds[k] && strcmp(kinds[k], v))
            k++;
        if (!kinds[k])
            return rh_resp_error(q->r, 400, "kind",
                                 "bad value '%s' for kind: top-down, bottom-up, callers or callees",
                                 v);
        t.kind = (enum rh_tree_kind)k;
    }
    t.function = rh_param(q, "function");
    if ((t.kind == RH_TREE_CALLERS || t.kind == RH_TREE_CALLEES) && (!t.function || !*t.function))
        return rh_resp_error(q->r, 400, "function", "kind=%s needs a function", kinds[t.kind]);
    if (t.function && !*t.function)
        t.function = NULL;
    v = rh_param(q, "cpu");
    if (v && strcmp(v, "0") && strcmp(v, "1"))
        return rh_resp_error(q->r, 400, "cpu", "bad value '%s' for cpu: 0 or 1", v);
    t.cpu = v && !strcmp(v, "1");
    if (q->sort_by) {
        int k = 0;
        while (sorts[k] && strcmp(sorts[k], q->sort_by))
            k++;
        if (!sorts[k] || (t.cpu && k))
            return rh_resp_error(q->r, 400, "sort_by",
                                 "bad value '%s' for sort_by: bytes, count, leaked, peak or"
                                 " temporary (none with cpu=1)",
                                 q->sort_by);
        t.sort = k;
    }
    v = rh_param(q, "min_share");
    if (v) {
        char *end;
        t.min_share = strtod(v, &end);
        if (end == v || *end || !(t.min_share >= 0 && t.min_share <= 1))
            return rh_resp_error(q->r, 400, "min_share",
                                 "bad value '%s' for min_share: a fraction 0..1", v);
    }
    if (q->count > 0)
        t.max_nodes = q->count > q->s->row_cap ? (int)q->s->row_cap : (int)q->count;
    return rh_tree_json(q->db, &t, q->out) ? rh_q_fail(q) : 0;
}

/* /data/ID/cpu?F&count: the CPU samples of the scope: rate, samples,
 * dropped periods and the top `count` (default 50) functions by samples
 * (rh_cpu_top_stmt, as `rheaper top cpu`). */
static int rh_ep_cpu(struct rh_req *q)
{
    static const char *const own[] = {"count", NULL};
    if (rh_take_params(q, own))
        return -1;
    if (rh_make_sites(q->db, 0))
        return rh_q_fail(q);
    sqlite3_stmt *st = rh_cpu_top_stmt(q->db, q->count > 0 ? (int)q->count : 50, NULL);
    if (!st)
        return rh_q_fail(q);
    fprintf(q->out, "{\"hz\":%" PRId64 ",\"samples\":%" PRId64 ",\"dropped\":%" PRId64 ",\"top\":",
            rh_cpu_hz(q->db), rh_cpu_total(q->db), rh_cpu_dropped(q->db));
    int rc = rh_print_stmt(st, RH_FMT_JSON, q->out);
    sqlite3_finalize(st);
    if (rc)
        return rh_q_fail(q);
    fputs("}\n", q->out);
    return 0;
}

/* ---- exports ------------------------------------------------------------------------ */

/* The flamegraphs' `mode`: what the frames' widths count. freed is the
 * bytes of the scope's freed blocks (bytehound's lifetime=only_temporary is
 * set); "temporary" is heaptrack's word here (lifetime=only_heaptrack_temporary),
 * so the mode of that name, which showed every freed block, is refused with
 * its new name. */
static int rh_flame_mode(struct rh_req *q, enum rh_flame_weight *w)
{
    static const struct {
        const char *name;
        enum rh_flame_weight w;
    } modes[] = {{"allocated", RH_FLAME_ALL},
                 {"leaked", RH_FLAME_LEAKED},
                 {"peak", RH_FLAME_PEAK},
                 {"freed", RH_FLAME_FREED},
                 {"cpu", RH_FLAME_CPU}};
    const char *v = rh_param(q, "mode");
    *w = RH_FLAME_ALL;
    if (!v)
        return 0;
    if (!strcmp(v, "temporary"))
        return rh_resp_error(q->r, 400, "mode",
                             "mode=temporary is now mode=freed (the bytes of every freed block);"
                             " for the temporary blocks use lifetime=only_heaptrack_temporary");
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++)
        if (!strcmp(v, modes[k].name)) {
            *w = modes[k].w;
            return 0;
        }
    return rh_resp_error(q->r, 400, "mode",
                         "bad value '%s' for mode: allocated, leaked, peak, freed or cpu", v);
}

static int rh_ep_export(struct rh_req *q, const char *what)
{
    static const char *const own[] = {"mode", NULL};
    enum rh_flame_weight w = RH_FLAME_ALL;
    if (strcmp(what, "heaptrack") && rh_flame_mode(q, &w))
        return -1;
    if (w == RH_FLAME_FREED) {
        /* the freed blocks: set the lifetime filter unless one is set */
        for (int i = 0; i < q->pr->n; i++)
            if (!strcmp(q->pr->k[i], "lifetime") && q->pr->v[i] && *q->pr->v[i] &&
                strcmp(q->pr->v[i], "only_temporary"))
                return rh_resp_error(q->r, 400, "lifetime",
                                     "mode=freed selects the freed blocks"
                                     " (lifetime=only_temporary); lifetime=%s contradicts it",
                                     q->pr->v[i]);
    }
    if (rh_take_params(q, strcmp(what, "heaptrack") ? own : NULL))
        return -1;
    if (w == RH_FLAME_FREED && q->q.lifetime != 4) {
        char err[256];
        if (rh_qfilter_param(&q->q, "lifetime", "only_temporary", err, sizeof err) < 0)
            return rh_resp_error(q->r, 400, "lifetime", "%s", err);
        if (rh_qfilter_apply(q->db, &q->q))
            return rh_q_fail(q);
    }
    int rc;
    if (!strcmp(what, "flamegraph")) {
        q->r->type = "image/svg+xml";
        rc = rh_svg_flamegraph(q->db, w, q->out, 0);
    } else if (!strcmp(what, "flamegraph.pl")) {
        q->r->type = "text/plain; charset=utf-8";
        rc = rh_folded(q->db, w, q->out);
    } else {
        q->r->type = "text/plain; charset=utf-8";
        rc = rh_heaptrack_write(q->db, q->out, NULL);
    }
    return rc ? rh_q_fail(q) : 0;
}

/* /data/ID/export/pprof?F&kind&at: the scope as pprof's gzipped protobuf,
 * written by the export of `rheaper export --pprof` (rh_pprof_write): kind
 * heap or cpu (default both), at end (default: in use at the end of the
 * range, `to`, or of the run) or peak. Only the command line's filters
 * apply: bytehound's own ones are refused. */
static int rh_ep_pprof(struct rh_req *q)
{
    static const char *const own[] = {"kind", "at", NULL};
    if (rh_take_params(q, own))
        return -1;
    if (rh_qfilter_extra(&q->q))
        return rh_resp_error(q->r, 400, NULL,
                             "export/pprof takes the filters of `rheaper export --pprof`;"
                             " bytehound's own (group_*, backtrace*, address_*, ...) do not apply");
    struct rh_pprof_opts o = {1, 1, 0, -1};
    const char *kind = rh_param(q, "kind"), *at = rh_param(q, "at");
    if (kind && !strcmp(kind, "heap"))
        o.cpu = 0;
    else if (kind && !strcmp(kind, "cpu"))
        o.heap = 0;
    else if (kind && *kind)
        return rh_resp_error(q->r, 400, "kind", "bad value '%s' for kind: heap or cpu", kind);
    if (at && !strcmp(at, "peak"))
        o.at_peak = 1;
    else if (at && *at && strcmp(at, "end"))
        return rh_resp_error(q->r, 400, "at", "bad value '%s' for at: end or peak", at);
    if (!o.heap && !rh_cpu_hz(q->db) && !rh_cpu_total(q->db))
        return rh_resp_error(q->r, 404, "kind", "kind=cpu: the profile has no CPU samples");
    if (q->q.f.to >= 0) {
        int64_t from;
        rh_filter_window(q->db, &q->q.f, &from, &o.to_ns);
    }
    q->r->type = "application/octet-stream";
    return rh_pprof_write(q->db, q->out, &o) ? rh_q_fail(q) : 0;
}

/* ---- mmaps, mallopts ------------------------------------------------------------------ */

static int rh_ep_mmaps(struct rh_req *q)
{
    static const char *const own[] = {"count", "skip", NULL};
    if (rh_take_params(q, own))
        return -1;
    FILE *o = q->out;
    int capped;
    int64_t limit = rh_limit(q, &capped);
    fputs("{\"operations\":[", o);
    int n = 0;
    if (rh_table_exists(q->db, "mmaps")) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(q->db,
                               "SELECT op, time, (SELECT tid FROM threads WHERE id = m.thread),"
                               " address, length, new_address, new_length, prot, flags, fd,"
                               " offset, result, stack_id FROM mmaps m ORDER BY time, id"
                               " LIMIT ?1 OFFSET ?2",
                               -1, &st, NULL) != SQLITE_OK)
            return rh_q_fail(q);
        sqlite3_bind_int64(st, 1, limit);
        sqlite3_bind_int64(st, 2, q->skip);
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *op = (const char *)sqlite3_column_text(st, 0);
            op = op ? op : "?";
            int is_mmap = !strcmp(op, "mmap");
            /* mmap: the block is the result; munmap: the argument */
            int64_t ptr = sqlite3_column_int64(st, is_mmap ? 5 : 3);
            if (is_mmap && sqlite3_column_type(st, 5) == SQLITE_NULL)
                ptr = sqlite3_column_int64(st, 3);
            int64_t prot = sqlite3_column_int64(st, 7), fl = sqlite3_column_int64(st, 8);
            fprintf(o, "%s{", n++ ? "," : "");
            rh_json_string(o, op);
            fputs(":{\"timestamp\":", o);
            rh_tv(o, sqlite3_column_int64(st, 1));
            fprintf(o,
                    ",\"pointer\":%" PRId64 ",\"pointer_s\":\"0x%" PRIx64 "\",\"length\":%" PRId64
                    ",\"backtrace_id\":%" PRId64 ",\"backtrace\":",
                    ptr, (uint64_t)ptr, (int64_t)sqlite3_column_int64(st, 4),
                    (int64_t)sqlite3_column_int64(st, 12));
            if (rh_frames(q, sqlite3_column_int64(st, 12), op) < 0) {
                sqlite3_finalize(st);
                return rh_q_fail(q);
            }
            if (is_mmap) {
                int64_t req = sqlite3_column_int64(st, 3);
                fprintf(
                    o,
                    ",\"requested_address\":%" PRId64 ",\"requested_address_s\":\"0x%" PRIx64
                    "\",\"is_readable\":%s,\"is_writable\":%s,\"is_executable\":%s,"
                    "\"is_semaphore\":%s,\"grows_down\":%s,\"grows_up\":%s,\"is_shared\":%s,"
                    "\"is_private\":%s,\"is_fixed\":%s,\"is_anonymous\":%s,"
                    "\"is_uninitialized\":%s,\"offset\":%" PRId64 ",\"file_descriptor\":%" PRId64,
                    req, (uint64_t)req, prot & 1 ? "true" : "false", prot & 2 ? "true" : "false",
                    prot & 4 ? "true" : "false", prot & 8 ? "true" : "false",
                    prot & 0x01000000 ? "true" : "false", prot & 0x02000000 ? "true" : "false",
                    fl & 1 ? "true" : "false", fl & 2 ? "true" : "false",
                    fl & 0x10 ? "true" : "false", fl & 0x20 ? "true" : "false",
                    fl & 0x4000000 ? "true" : "false", (int64_t)sqlite3_column_int64(st, 10),
                    (int64_t)sqlite3_column_int64(st, 9));
            } else if (!strcmp(op, "mremap")) {
                fputs(",\"new_address\":", o);
                rh_json_int_or_null(o, st, 5);
                fputs(",\"new_length\":", o);
                rh_json_int_or_null(o, st, 6);
                fprintf(o, ",\"flags\":%" PRId64, (int64_t)fl);
            }
            fputs(",\"thread\":", o);
            rh_json_int_or_null(o, st, 2);
            fprintf(o, ",\"result\":%" PRId64 "}}", (int64_t)sqlite3_column_int64(st, 11));
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return rh_q_fail(q);
    }
    fputc(']', o);
    rh_cap_note(q, capped);
    fputs("}\n", o);
    return 0;
}

/* ---- /maps: bytehound's memory maps -------------------------------------------- */

/* bytehound's MapSource of the mmaps call at columns c (time), c + 1 (thread
 * tid), c + 2 (stack id), its backtrace ending in fn. Returns 0 or -1. */
static int rh_map_source(struct rh_req *q, sqlite3_stmt *st, int c, const char *fn)
{
    FILE *o = q->out;
    int64_t t = sqlite3_column_int64(st, c);
    fputs("{\"timestamp\":", o);
    rh_tv(o, t);
    fputs(",\"timestamp_relative\":", o);
    rh_tv(o, t);
    fputs(",\"timestamp_relative_p\":", o);
    rh_relp(o, q, t);
    fputs(",\"thread\":", o);
    rh_json_int_or_null(o, st, c + 1);
    fprintf(o, ",\"backtrace_id\":%" PRId64 ",\"backtrace\":", (int64_t)sqlite3_column_int64(st, c + 2));
    if (rh_frames(q, sqlite3_column_int64(st, c + 2), fn) < 0)
        return -1;
    fputc('}', o);
    return 0;
}

/* /data/ID/maps?id&with_regions&with_usage_history&sort_by&order&count&skip:
 * bytehound's Map list, one map per successful mmap of the mmaps table. A map
 * ends (deallocation) at the first later successful munmap that covers all of
 * it; its one region (with_regions) is the whole map, and the region's
 * deallocation sources are the successful munmaps that overlapped it up to
 * that end. rheaper samples no per-map usage: usage_history is empty and
 * peak_rss, inode, major and minor are null. Without an mmaps table (a profile
 * of a program whose mmap calls were not recorded) the list is empty. */
static int rh_ep_maps(struct rh_req *q)
{
    int64_t id = -1;
    int regions = 0, usage = 0;
    q->count = -1;
    for (int i = 0; i < q->pr->n; i++) {
        const char *k = q->pr->k[i], *v = q->pr->v[i] ? q->pr->v[i] : "";
        int taken;
        if (rh_count_skip(q, k, v, &taken))
            return -1;
        if (taken)
            continue;
        if (!strcmp(k, "with_regions") || !strcmp(k, "with_usage_history")) {
            if (strcmp(v, "true") && strcmp(v, "false"))
                return rh_resp_error(q->r, 400, k, "bad value '%s' for %s: true or false", v, k);
            *(!strcmp(k, "with_regions") ? &regions : &usage) = !strcmp(v, "true");
        } else if (!strcmp(k, "id")) {
            char *end;
            unsigned long long x = strtoull(v, &end, 10);
            if (!*v || *end || *v == '-' || x > (unsigned long long)INT64_MAX)
                return rh_resp_error(q->r, 400, k, "bad value '%s' for id: a map id", v);
            id = (int64_t)x;
        } else if (!strcmp(k, "sort_by")) {
            q->sort_by = v;
        } else if (!strcmp(k, "order")) {
            q->order = v;
        } else {
            return rh_resp_error(q->r, 400, k,
                                 "parameter '%s' is not supported by /maps (id, with_regions,"
                                 " with_usage_history, sort_by, order, count, skip)",
                                 k);
        }
    }
    const char *col = "m.time";
    if (q->sort_by && !strcmp(q->sort_by, "address"))
        col = "m.addr";
    else if (q->sort_by && !strcmp(q->sort_by, "size"))
        col = "m.length";
    else if (q->sort_by && strcmp(q->sort_by, "timestamp"))
        return rh_resp_error(q->r, 400, "sort_by",
                             "bad value '%s' for sort_by: timestamp, address or size", q->sort_by);
    if (q->order && strcmp(q->order, "asc") && strcmp(q->order, "dsc"))
        return rh_resp_error(q->r, 400, "order", "bad value '%s' for order: asc or dsc", q->order);
    const char *dir = q->order && !strcmp(q->order, "dsc") ? "DESC" : "ASC";
    FILE *o = q->out;
    int capped;
    int64_t limit = rh_limit(q, &capped), total = 0;
    fputs("{\"maps\":[", o);
    if (rh_table_exists(q->db, "mmaps")) {
        /* the maps, each with the munmap that ends it (columns 9..) */
        static const char maps_sql[] =
            "WITH mp AS (SELECT id, time, thread, coalesce(new_address, address) AS addr, length,"
            " prot, flags, offset, stack_id FROM mmaps WHERE op = 'mmap' AND result = 0"
            " AND (?3 < 0 OR id = ?3)),"
            " m AS (SELECT mp.*, (SELECT x.id FROM mmaps x WHERE x.op = 'munmap' AND x.result = 0"
            " AND x.time > mp.time AND x.address <= mp.addr"
            " AND x.address + x.length >= mp.addr + mp.length ORDER BY x.time, x.id LIMIT 1)"
            " AS end_id FROM mp)"
            " SELECT m.id, m.time, (SELECT tid FROM threads WHERE id = m.thread), m.stack_id,"
            " m.addr, m.length, m.prot, m.flags, m.offset,"
            " u.time, (SELECT tid FROM threads WHERE id = u.thread), u.stack_id, u.id"
            " FROM m LEFT JOIN mmaps u ON u.id = m.end_id"
            " ORDER BY %s %s, m.id %s LIMIT ?1 OFFSET ?2";
        char sql[sizeof maps_sql + 64];
        snprintf(sql, sizeof sql, maps_sql, col, dir, dir);
        /* the munmaps that overlapped a map [?1, ?2) from ?3 up to its end ?4 */
        static const char parts_sql[] =
            "SELECT address, length, time, (SELECT tid FROM threads WHERE id = x.thread), stack_id"
            " FROM mmaps x WHERE op = 'munmap' AND result = 0 AND time > ?3 AND time <= ?4"
            " AND address < ?2 AND address + length > ?1 ORDER BY time, id";
        total = rh_sql_int(q->db,
                           "SELECT count(*) FROM mmaps WHERE op = 'mmap' AND result = 0"
                           " AND (?1 < 0 OR id = ?1)",
                           id, -1);
        sqlite3_stmt *st = NULL, *parts = NULL;
        if (total < 0 || sqlite3_prepare_v2(q->db, sql, -1, &st, NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(q->db, parts_sql, -1, &parts, NULL) != SQLITE_OK) {
            sqlite3_finalize(st);
            return rh_q_fail(q);
        }
        sqlite3_bind_int64(st, 1, limit);
        sqlite3_bind_int64(st, 2, q->skip);
        sqlite3_bind_int64(st, 3, id);
        int n = 0, rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            int64_t t = sqlite3_column_int64(st, 1), addr = sqlite3_column_int64(st, 4),
                    len = sqlite3_column_int64(st, 5), prot = sqlite3_column_int64(st, 6),
                    fl = sqlite3_column_int64(st, 7);
            int ended = sqlite3_column_type(st, 12) != SQLITE_NULL;
            const char *r_ = prot & 1 ? "true" : "false", *w_ = prot & 2 ? "true" : "false",
                       *x_ = prot & 4 ? "true" : "false", *sh = fl & 1 ? "true" : "false";
            fprintf(o,
                    "%s{\"id\":%" PRId64 ",\"address\":%" PRId64 ",\"address_s\":\"%016" PRIX64
                    "\",\"timestamp\":",
                    n++ ? "," : "", (int64_t)sqlite3_column_int64(st, 0), addr, (uint64_t)addr);
            rh_tv(o, t);
            fputs(",\"timestamp_relative\":", o);
            rh_tv(o, t);
            fputs(",\"timestamp_relative_p\":", o);
            rh_relp(o, q, t);
            fprintf(o, ",\"size\":%" PRId64 ",\"source\":", len);
            int bad = rh_map_source(q, st, 1, "mmap");
            fputs(",\"deallocation\":", o);
            if (!bad && ended) {
                fputs("{\"timestamp\":", o);
                rh_tv(o, sqlite3_column_int64(st, 9));
                fputs(",\"source\":", o);
                bad = rh_map_source(q, st, 9, "munmap");
                fputc('}', o);
            } else {
                fputs("null", o);
            }
            fprintf(o,
                    ",\"is_readable\":%s,\"is_writable\":%s,\"is_executable\":%s,\"is_shared\":%s,"
                    "\"name\":\"\",\"peak_rss\":null,\"graph_preview_url\":null,\"graph_url\":null",
                    r_, w_, x_, sh);
            if (!bad && regions) {
                fprintf(o, ",\"regions\":[{\"address\":%" PRId64 ",\"address_s\":\"%016" PRIX64
                           "\",\"timestamp\":",
                        addr, (uint64_t)addr);
                rh_tv(o, t);
                fputs(",\"timestamp_relative\":", o);
                rh_tv(o, t);
                fputs(",\"timestamp_relative_p\":", o);
                rh_relp(o, q, t);
                fprintf(o, ",\"size\":%" PRId64 ",\"deallocation\":", len);
                if (ended) {
                    fputs("{\"timestamp\":", o);
                    rh_tv(o, sqlite3_column_int64(st, 9));
                    fputs(",\"sources\":[", o);
                    sqlite3_bind_int64(parts, 1, addr);
                    sqlite3_bind_int64(parts, 2, addr + len);
                    sqlite3_bind_int64(parts, 3, t);
                    sqlite3_bind_int64(parts, 4, sqlite3_column_int64(st, 9));
                    int k = 0, prc;
                    while (!bad && (prc = sqlite3_step(parts)) == SQLITE_ROW) {
                        fprintf(o, "%s{\"address\":%" PRId64 ",\"length\":%" PRId64 ",\"source\":",
                                k++ ? "," : "", (int64_t)sqlite3_column_int64(parts, 0),
                                (int64_t)sqlite3_column_int64(parts, 1));
                        bad = rh_map_source(q, parts, 2, "munmap");
                        fputc('}', o);
                    }
                    if (!bad && prc != SQLITE_DONE)
                        bad = -1;
                    sqlite3_reset(parts);
                    fputs("]}", o);
                } else {
                    fputs("null", o);
                }
                fprintf(o,
                        ",\"is_readable\":%s,\"is_writable\":%s,\"is_executable\":%s,"
                        "\"is_shared\":%s,\"file_offset\":%" PRId64
                        ",\"inode\":null,\"major\":null,\"minor\":null,\"name\":\"\"}]",
                        r_, w_, x_, sh, (int64_t)sqlite3_column_int64(st, 8));
            }
            if (usage)
                fputs(",\"usage_history\":[]", o);
            fputc('}', o);
            if (bad) {
                sqlite3_finalize(parts);
                sqlite3_finalize(st);
                return rh_q_fail(q);
            }
        }
        sqlite3_finalize(parts);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return rh_q_fail(q);
    }
    fprintf(o, "],\"total_count\":%" PRId64, total);
    rh_cap_note(q, capped);
    fputs("}\n", o);
    return 0;
}

static const char *rh_mallopt_name(int64_t p)
{
    switch (p) {
    case 1:
        return "M_MXFAST";
    case -1:
        return "M_TRIM_THRESHOLD";
    case -2:
        return "M_TOP_PAD";
    case -3:
        return "M_MMAP_THRESHOLD";
    case -4:
        return "M_MMAP_MAX";
    case -5:
        return "M_CHECK_ACTION";
    case -6:
        return "M_PERTURB";
    case -7:
        return "M_ARENA_TEST";
    case -8:
        return "M_ARENA_MAX";
    }
    return NULL;
}

static int rh_ep_mallopts(struct rh_req *q)
{
    static const char *const own[] = {"count", "skip", NULL};
    if (rh_take_params(q, own))
        return -1;
    FILE *o = q->out;
    int capped;
    int64_t limit = rh_limit(q, &capped);
    fputc('[', o);
    if (rh_table_exists(q->db, "mallopts")) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(q->db,
                               "SELECT time, (SELECT tid FROM threads WHERE id = m.thread), param,"
                               " value, result, stack_id FROM mallopts m ORDER BY time, id"
                               " LIMIT ?1 OFFSET ?2",
                               -1, &st, NULL) != SQLITE_OK)
            return rh_q_fail(q);
        sqlite3_bind_int64(st, 1, limit);
        sqlite3_bind_int64(st, 2, q->skip);
        int rc, n = 0;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            int64_t p = sqlite3_column_int64(st, 2);
            fprintf(o, "%s{\"timestamp\":", n++ ? "," : "");
            rh_tv(o, sqlite3_column_int64(st, 0));
            fputs(",\"thread\":", o);
            rh_json_int_or_null(o, st, 1);
            fprintf(o, ",\"backtrace_id\":%" PRId64 ",\"backtrace\":",
                    (int64_t)sqlite3_column_int64(st, 5));
            if (rh_frames(q, sqlite3_column_int64(st, 5), "mallopt") < 0) {
                sqlite3_finalize(st);
                return rh_q_fail(q);
            }
            fprintf(o, ",\"raw_param\":%" PRId64 ",\"param\":", p);
            if (rh_mallopt_name(p))
                fprintf(o, "\"%s\"", rh_mallopt_name(p));
            else
                fputs("null", o);
            fprintf(o, ",\"value\":%" PRId64 ",\"result\":%" PRId64 "}",
                    (int64_t)sqlite3_column_int64(st, 3), (int64_t)sqlite3_column_int64(st, 4));
        }
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return rh_q_fail(q);
    }
    fputs("]\n", o);
    return 0;
}

/* ---- rheaper's: timeline, threads, leaks, diff ------------------------------------------ */

/* The heap over time in RH_TL_COLS columns (rh_timeline_compute): xs,
 * max_size, end_size, end_count (null per column when the converter's
 * timeline answered: it keeps bytes, not counts), rss beside them when the
 * profile sampled it, and stored. */
#define RH_TL_COLS RH_SCOPE_TL_COLS

/* ,"rss":[...] beside the timeline's n columns ending at xs: the highest RSS
 * sampled in each (rh_memory_series), null where none; nothing without
 * memory samples. Returns 0 or -1. */
static int rh_timeline_rss(struct rh_req *q, const int64_t *xs, int n)
{
    int64_t *rss = malloc((size_t)(n > 0 ? n : 1) * sizeof *rss);
    if (!rss)
        return -1;
    int got = n > 0 ? rh_memory_series(q->db, xs, n, rss) : 0;
    if (got > 0) {
        fputs(",\"rss\":[", q->out);
        for (int c = 0; c < n; c++) {
            if (rss[c] >= 0)
                fprintf(q->out, "%s%" PRId64, c ? "," : "", rss[c]);
            else
                fputs(c ? ",null" : "null", q->out);
        }
        fputc(']', q->out);
    }
    free(rss);
    return got < 0 ? -1 : 0;
}

static int rh_ep_timeline(struct rh_req *q)
{
    if (rh_take_params_for(q, NULL, RH_CHART_EVENTS))
        return -1;
    struct rh_timeline t;
    if (rh_timeline_compute(q->db, q->duration, RH_TL_COLS, &t))
        return rh_q_fail(q);
    FILE *o = q->out;
    const char *names[] = {"xs", "max_size", "end_size", "end_count"};
    const int64_t *cols[] = {t.xs, t.max_bytes, t.end_bytes, t.end_count};
    fputc('{', o);
    for (int k = 0; k < 4; k++) {
        fprintf(o, "%s\"%s\":[", k ? "," : "", names[k]);
        for (int c = 0; c < t.n; c++) {
            if (cols[k])
                fprintf(o, "%s%" PRId64, c ? "," : "", cols[k][c]);
            else
                fputs(c ? ",null" : "null", o);
        }
        fputc(']', o);
    }
    int rc = rh_timeline_rss(q, t.xs, t.n);
    fprintf(o, ",\"stored\":%s}\n", t.stored ? "true" : "false");
    rh_timeline_free(&t);
    return rc ? rh_q_fail(q) : 0;
}

/* /data/ID/memory?F&count: the process's memory beside the heap (the
 * figures of `rheaper summary`, rh_memory_json) and the top `count` (default
 * 10) churn sites of the scope, as `rheaper churn --json` lists them. */
static int rh_ep_memory(struct rh_req *q)
{
    static const char *const own[] = {"count", NULL};
    if (rh_take_params(q, own))
        return -1;
    struct rh_memfig m;
    if (rh_memory_figures(q->db, &m) || rh_make_sites(q->db, 0))
        return rh_q_fail(q);
    sqlite3_stmt *c = rh_churn_stmt(q->db, q->count >= 0 ? (int)q->count : 10, q->duration, NULL);
    if (!c)
        return rh_q_fail(q);
    fputs("{\"memory\":", q->out);
    rh_memory_json(q->out, &m);
    fputs(",\"churn\":", q->out);
    int rc = rh_print_stmt(c, RH_FMT_JSON, q->out);
    sqlite3_finalize(c);
    if (rc)
        return rh_q_fail(q);
    fputs("}\n", q->out);
    return 0;
}

static int rh_ep_threads(struct rh_req *q)
{
    if (rh_take_params(q, NULL))
        return -1;
    /* the scope's threads (rh_query_groups.c) */
    sqlite3_stmt *st = rh_threads_stmt(q->db, &q->q);
    if (!st)
        return rh_q_fail(q);
    FILE *o = q->out;
    fputs("{\"threads\":[", o);
    int n = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        fprintf(o, "%s{\"id\":%" PRId64 ",\"tid\":", n++ ? "," : "",
                (int64_t)sqlite3_column_int64(st, 0));
        rh_json_int_or_null(o, st, 1);
        fputs(",\"name\":", o);
        rh_json_text_or_null(o, st, 2);
        fprintf(o,
                ",\"allocated_count\":%" PRId64 ",\"allocated_size\":%" PRId64
                ",\"leaked_count\":%" PRId64 ",\"leaked_size\":%" PRId64 "}",
                (int64_t)sqlite3_column_int64(st, 3), (int64_t)sqlite3_column_int64(st, 4),
                (int64_t)sqlite3_column_int64(st, 5), (int64_t)sqlite3_column_int64(st, 6));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return rh_q_fail(q);
    fputs("]}\n", o);
    return 0;
}

static int rh_ep_leaks(struct rh_req *q)
{
    static const char *const own[] = {"count", "skip", NULL};
    if (rh_take_params(q, own))
        return -1;
    if (rh_leak_sites(q->db, RH_LEAK_BUCKETS, q->duration))
        return rh_q_fail(q);
    int capped;
    int64_t limit = rh_limit(q, &capped);
    struct rh_leak_row *rows = NULL;
    size_t n = 0;
    if (rh_leaks_get(q->db, limit, q->skip, &rows, &n))
        return rh_q_fail(q);
    FILE *o = q->out;
    fprintf(o, "{\"buckets\":%d,\"leaks\":[", RH_LEAK_BUCKETS);
    for (size_t i = 0; i < n; i++) {
        const struct rh_leak_row *l = &rows[i];
        fprintf(o,
                "%s{\"score\":%.4f,\"coverage\":%d,\"fit\":%.4f,\"leaked_count\":%" PRId64
                ",\"leaked_size\":%" PRId64 ",\"first\":",
                i ? "," : "", l->score, l->coverage, l->fit, l->blocks, l->bytes);
        rh_tv(o, l->first);
        fputs(",\"last\":", o);
        rh_tv(o, l->last);
        fputs(",\"function\":", o);
        rh_json_string(o, l->function);
        if (l->function)
            rh_json_short_name(o, l->function);
        fputs(",\"location\":", o);
        rh_json_string(o, l->location);
        fprintf(o, ",\"backtrace_id\":%" PRId64 "}", l->bt);
    }
    rh_leaks_free(rows, n);
    fputc(']', o);
    rh_cap_note(q, capped);
    fputs("}\n", o);
    return 0;
}

static int rh_find_profile(const struct rh_server *s, const char *id, size_t len)
{
    if (len == 4 && !strncmp(id, "last", 4))
        return s->np - 1;
    for (int i = 0; i < s->np; i++)
        if (strlen(s->p[i].id) == len && !strncmp(s->p[i].id, id, len))
            return i;
    return -1;
}

static int rh_ep_diff(struct rh_req *q, const char *other)
{
    int oi = rh_find_profile(q->s, other, strlen(other));
    if (oi < 0)
        return rh_resp_error(q->r, 404, NULL, "no profile with id '%s' (see /list)", other);
    static const char *const own[] = {"count", "skip", "by", "noise", NULL};
    static const char *const bys[] = {"leaked", "peak", "bytes", "count", NULL};
    /* the filters are checked here; rh_diff_compute applies them to both */
    if (rh_take_params(q, own))
        return -1;
    enum rh_diff_by by = RH_DIFF_LEAKED;
    const char *v = rh_param(q, "by");
    if (v) {
        int k = 0;
        while (bys[k] && strcmp(bys[k], v))
            k++;
        if (!bys[k])
            return rh_resp_error(q->r, 400, "by",
                                 "bad value '%s' for by: leaked, peak, bytes or count", v);
        by = (enum rh_diff_by)k;
    }
    double noise = 1.0;
    v = rh_param(q, "noise");
    if (v) {
        char *end;
        noise = strtod(v, &end);
        if (end == v || *end || !(noise >= 0 && noise <= 100))
            return rh_resp_error(q->r, 400, "noise", "bad value '%s' for noise: a percentage 0-100",
                                 v);
    }
    sqlite3 *b = rh_serve_db(q->s, oi);
    if (!b)
        return rh_resp_error(q->r, 500, NULL, "cannot open profile %s", other);
    struct rh_diff_row *rows = NULL;
    size_t n = 0;
    if (rh_diff_compute(q->db, b, &q->q, by, noise, &rows, &n))
        return rh_q_fail(q);
    struct rh_scope pa, pb;
    if (rh_scope_get(q->db, &pa) || rh_scope_get(b, &pb)) {
        rh_diff_free(rows, n);
        return rh_q_fail(q);
    }
    int capped;
    int64_t limit = rh_limit(q, &capped);
    FILE *o = q->out;
    fprintf(o,
            "{\"a\":\"%s\",\"b\":\"%s\",\"by\":\"%s\",\"noise\":%g,\"peak\":{\"a\":%" PRId64
            ",\"b\":%" PRId64 ",\"a_time_ns\":%" PRId64 ",\"b_time_ns\":%" PRId64
            "},\"total_count\":%zu,\"sites\":[",
            q->s->p[q->pi].id, q->s->p[oi].id, bys[by], noise, pa.peak_bytes, pb.peak_bytes,
            pa.peak_time, pb.peak_time, n);
    int64_t shown = 0;
    for (size_t i = (size_t)q->skip; i < n && shown < limit; i++, shown++) {
        const struct rh_diff_row *x = &rows[i];
        fprintf(o, "%s{\"status\":\"%s\",\"function\":", shown ? "," : "", x->status);
        rh_json_string(o, x->function);
        rh_json_short_name(o, x->function);
        fputs(",\"location\":", o);
        rh_json_string(o, x->location);
        fprintf(o,
                ",\"a\":{\"count\":%" PRId64 ",\"size\":%" PRId64 ",\"leaked_count\":%" PRId64
                ",\"leaked_size\":%" PRId64 ",\"peak_size\":%" PRId64 "},\"b\":{\"count\":%" PRId64
                ",\"size\":%" PRId64 ",\"leaked_count\":%" PRId64 ",\"leaked_size\":%" PRId64
                ",\"peak_size\":%" PRId64 "},\"delta\":{\"count\":%" PRId64 ",\"size\":%" PRId64
                ",\"leaked_size\":%" PRId64 ",\"peak_size\":%" PRId64 "}}",
                x->a_count, x->a_bytes, x->a_leaked_blocks, x->a_leaked_bytes, x->a_peak_bytes,
                x->b_count, x->b_bytes, x->b_leaked_blocks, x->b_leaked_bytes, x->b_peak_bytes,
                x->b_count - x->a_count, x->b_bytes - x->a_bytes,
                x->b_leaked_bytes - x->a_leaked_bytes, x->b_peak_bytes - x->a_peak_bytes);
    }
    rh_diff_free(rows, n);
    fputc(']', o);
    rh_cap_note(q, capped);
    fputs("}\n", o);
    return 0;
}

/* ---- routing ------------------------------------------------------------------------------ */

/* The routing key of a request to endpoint ep (rh_serve_route): its
 * parameters that are filters, sorted, without those the endpoints take for
 * themselves, so that a page's views with one filter share one connection's
 * scope. Only a hint: a scope is reused only when its exact key matches
 * (rh_qfilter_apply). malloc'd, NULL when out of memory. */
static char *rh_route_key(const char *ep, const struct rh_params *pr)
{
    static const char *const own[] = {"sort_by", "order", "count", "skip", "function",
                                      "location", "cpu", "min_share", "at", "id",
                                      "with_regions", "with_usage_history", "by", "noise",
                                      NULL};
    struct rh_params f = {.n = 0};
    for (int i = 0; i < pr->n; i++) {
        int mine = 0;
        for (int j = 0; own[j] && !mine; j++)
            mine = !strcmp(pr->k[i], own[j]);
        /* these two are an endpoint's own there, filters elsewhere */
        if (!strcmp(pr->k[i], "temporary") && !strcmp(ep, "timeline_allocations"))
            mine = 1;
        if (!strcmp(pr->k[i], "kind") && (!strcmp(ep, "tree") || !strcmp(ep, "export/pprof")))
            mine = 1;
        if (!mine) {
            f.k[f.n] = pr->k[i];
            f.v[f.n++] = pr->v[i];
        }
    }
    return rh_cache_key("", &f);
}

int rh_api_handle(const struct rh_server *s, const char *path, const struct rh_params *pr,
                  struct rh_resp *r)
{
    struct rh_req q;
    memset(&q, 0, sizeof q);
    q.s = s;
    q.pr = pr;
    q.r = r;
    r->status = 200;
    r->type = "application/json";
    q.out = open_memstream(&q.buf, &q.len);
    if (!q.out)
        return rh_resp_error(r, 500, NULL, "out of memory");
    int rc = 0;
    if (!strcmp(path, "/list")) {
        if (pr->n) {
            rc = rh_resp_error(r, 400, pr->k[0], "/list takes no parameters");
            goto done;
        }
        rh_serve_route("");
        rc = rh_ep_list(s, r, q.out);
        goto done;
    }
    /* /data/ID/REST */
    const char *id = path + 6, *slash = strchr(id, '/');
    if (!slash) {
        rc = rh_resp_error(r, 404, NULL, "no such endpoint: %s", path);
        goto done;
    }
    q.pi = rh_find_profile(s, id, (size_t)(slash - id));
    if (q.pi < 0) {
        rc = rh_resp_error(r, 404, NULL, "no profile with id '%.*s' (see /list)",
                           (int)(slash - id) > 64 ? 64 : (int)(slash - id), id);
        goto done;
    }
    const char *ep = slash + 1;
    char *route = rh_route_key(ep, pr);
    rh_serve_route(route ? route : "");
    free(route);
    q.db = rh_serve_db(s, q.pi);
    if (!q.db) {
        rc = rh_serve_over_budget()
                 ? rh_resp_error(r, 503, NULL,
                                 "the query ran out of its time budget of %d ms; narrow the filters",
                                 s->budget_ms)
                 : rh_resp_error(r, 500, NULL, "cannot open %s", s->p[q.pi].path);
        goto done;
    }
    q.duration = rh_meta_int(q.db, "duration_ns", 0);
    if (!strcmp(ep, "allocations"))
        rc = rh_ep_allocations(&q);
    else if (!strcmp(ep, "allocation_groups"))
        rc = rh_ep_groups(&q);
    else if (!strcmp(ep, "allocation_ascii_tree"))
        rc = rh_ep_ascii_tree(&q);
    else if (!strcmp(ep, "export/flamegraph") || !strcmp(ep, "export/flamegraph.pl") ||
             !strcmp(ep, "export/heaptrack"))
        rc = rh_ep_export(&q, ep + 7);
    else if (!strcmp(ep, "export/pprof"))
        rc = rh_ep_pprof(&q);
    else if (!strcmp(ep, "mmaps"))
        rc = rh_ep_mmaps(&q);
    else if (!strcmp(ep, "maps"))
        rc = rh_ep_maps(&q);
    else if (!strcmp(ep, "mallopts"))
        rc = rh_ep_mallopts(&q);
    else if (!strcmp(ep, "timeline"))
        rc = rh_ep_timeline(&q);
    else if (!strcmp(ep, "threads"))
        rc = rh_ep_threads(&q);
    else if (!strcmp(ep, "memory"))
        rc = rh_ep_memory(&q);
    else if (!strcmp(ep, "leaks"))
        rc = rh_ep_leaks(&q);
    else if (!strcmp(ep, "summary"))
        rc = rh_ep_summary(&q);
    else if (!strcmp(ep, "sites"))
        rc = rh_ep_sites(&q);
    else if (!strcmp(ep, "site"))
        rc = rh_ep_site(&q);
    else if (!strcmp(ep, "timeline_sites"))
        rc = rh_ep_timeline_sites(&q);
    else if (!strcmp(ep, "timeline_allocations"))
        rc = rh_ep_timeline_allocations(&q);
    else if (!strcmp(ep, "sizes"))
        rc = rh_ep_sizes(&q);
    else if (!strcmp(ep, "tree"))
        rc = rh_ep_tree(&q);
    else if (!strcmp(ep, "cpu"))
        rc = rh_ep_cpu(&q);
    else if (!strncmp(ep, "diff/", 5) && ep[5])
        rc = rh_ep_diff(&q, ep + 5);
    else
        rc = rh_resp_error(r, 404, NULL, "no such endpoint: %s", ep);
done:
    sqlite3_finalize(q.frames);
    fclose(q.out);
    if (rc) {
        free(q.buf); /* the error's body is in r */
    } else {
        r->body = q.buf;
        r->len = q.len;
    }
    return 0;
}
