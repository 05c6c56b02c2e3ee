/* rh_query_tree.c: call trees of the scope, as heaptrack's views show them.
 *
 * Four trees over the stacks of the scope (TEMP TABLE cs gives each stack's
 * call-site frame, so allocator wrappers below it never appear):
 *   top-down    outermost frame first (main, then what it calls, ...)
 *   bottom-up   the call site first, then its callers, outward
 *   callers     of one function: rooted at it, then its callers outward
 *   callees     of one function: rooted at it, then what it calls inward
 * Frames are merged by function name along a path. Every node carries
 * inclusive figures (the stacks whose path passes through it) and self
 * figures (the stacks whose call site it is): bytes, blocks, leaked bytes,
 * bytes held at the scope's peak and temporary blocks, from the scope's
 * per-stack figures (TEMP TABLE sstat, the converter's aggregates or the
 * filtered pass); or CPU samples (TEMP TABLE cpustat). The tree is computed
 * here and written as JSON; the server serves it and the web UI draws it.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "rh_names.h"
#include "rh_query.h"

#define RH_TM 5 /* figures per node: bytes, count, leaked, peak, temporary */

struct rh_tn {
    int32_t name, loc;   /* interned strings */
    int32_t first, next; /* first child, next sibling; -1: none */
    int64_t incl[RH_TM], self[RH_TM];
};

struct rh_tt {
    struct rh_tn *v;
    int32_t n, cap;
    char **str; /* interned strings */
    int32_t nstr, capstr;
    int32_t *hash; /* open addressing over str, size hcap (power of two) */
    int32_t hcap;
};

static uint64_t rh_tt_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

/* The id of string s, added when new; -1 when out of memory. */
static int32_t rh_tt_intern(struct rh_tt *t, const char *s)
{
    if (t->nstr * 2 >= t->hcap) {
        int32_t nc = t->hcap ? t->hcap * 2 : 1024;
        int32_t *nh = malloc((size_t)nc * sizeof *nh);
        if (!nh)
            return -1;
        memset(nh, 0xff, (size_t)nc * sizeof *nh);
        for (int32_t i = 0; i < t->nstr; i++) {
            uint64_t k = rh_tt_hash(t->str[i]) & (uint64_t)(nc - 1);
            while (nh[k] >= 0)
                k = (k + 1) & (uint64_t)(nc - 1);
            nh[k] = i;
        }
        free(t->hash);
        t->hash = nh;
        t->hcap = nc;
    }
    uint64_t k = rh_tt_hash(s) & (uint64_t)(t->hcap - 1);
    while (t->hash[k] >= 0) {
        if (!strcmp(t->str[t->hash[k]], s))
            return t->hash[k];
        k = (k + 1) & (uint64_t)(t->hcap - 1);
    }
    if (t->nstr == t->capstr) {
        int32_t nc = t->capstr ? t->capstr * 2 : 1024;
        char **ns = realloc(t->str, (size_t)nc * sizeof *ns);
        if (!ns)
            return -1;
        t->str = ns;
        t->capstr = nc;
    }
    char *c = strdup(s);
    if (!c)
        return -1;
    t->str[t->nstr] = c;
    t->hash[k] = t->nstr;
    return t->nstr++;
}

/* The child of parent named name (added when new); -1 when out of memory. */
static int32_t rh_tt_child(struct rh_tt *t, int32_t parent, int32_t name, int32_t loc)
{
    int32_t last = -1;
    for (int32_t c = t->v[parent].first; c >= 0; c = t->v[c].next) {
        if (t->v[c].name == name)
            return c;
        last = c;
    }
    if (t->n == t->cap) {
        int32_t nc = t->cap * 2;
        struct rh_tn *nv = realloc(t->v, (size_t)nc * sizeof *nv);
        if (!nv)
            return -1;
        t->v = nv;
        t->cap = nc;
    }
    struct rh_tn *x = &t->v[t->n];
    memset(x, 0, sizeof *x);
    x->name = name;
    x->loc = loc;
    x->first = x->next = -1;
    if (last >= 0)
        t->v[last].next = t->n;
    else
        t->v[parent].first = t->n;
    return t->n++;
}

static void rh_tt_free(struct rh_tt *t)
{
    for (int32_t i = 0; i < t->nstr; i++)
        free(t->str[i]);
    free(t->str);
    free(t->hash);
    free(t->v);
}

/* The location of a frame: basename of its file and its line, else module
 * and offset, as the call-site table shows it. */
static void rh_tt_loc(sqlite3_stmt *fr, char *buf, size_t n)
{
    const char *file = (const char *)sqlite3_column_text(fr, 2);
    const char *mod = (const char *)sqlite3_column_text(fr, 4);
    if (file) {
        const char *b = strrchr(file, '/');
        if (sqlite3_column_type(fr, 3) == SQLITE_NULL)
            snprintf(buf, n, "%s:?", b ? b + 1 : file);
        else
            snprintf(buf, n, "%s:%" PRId64, b ? b + 1 : file, (int64_t)sqlite3_column_int64(fr, 3));
    } else if (mod) {
        const char *b = strrchr(mod, '/');
        snprintf(buf, n, "%s+0x%" PRIx64, b ? b + 1 : mod, (uint64_t)sqlite3_column_int64(fr, 5));
    } else {
        snprintf(buf, n, "0x%" PRIx64, (uint64_t)sqlite3_column_int64(fr, 5));
    }
}

struct rh_twr {
    FILE *o;
    const struct rh_tt *t;
    int nm;        /* figures written per node */
    int sort;      /* the figure children are ordered by */
    int64_t floor; /* nodes below this (inclusive, sort figure) are left out */
    int64_t left;  /* nodes still allowed */
    int truncated;
};

static int rh_tw_cmp(const void *x, const void *y, void *ctx)
{
    const struct rh_twr *w = ctx;
    const struct rh_tn *a = &w->t->v[*(const int32_t *)x], *b = &w->t->v[*(const int32_t *)y];
    if (a->incl[w->sort] != b->incl[w->sort])
        return a->incl[w->sort] > b->incl[w->sort] ? -1 : 1;
    return strcmp(w->t->str[a->name], w->t->str[b->name]);
}

static void rh_tw_figs(FILE *o, const int64_t *v, int n)
{
    fputc('[', o);
    for (int k = 0; k < n; k++)
        fprintf(o, "%s%" PRId64, k ? "," : "", v[k]);
    fputc(']', o);
}

/* Writes node i's children (sorted, pruned) as a JSON array. Returns 0 or -1
 * (out of memory). */
static int rh_tw_children(struct rh_twr *w, int32_t i, int depth)
{
    const struct rh_tt *t = w->t;
    int32_t nc = 0;
    for (int32_t c = t->v[i].first; c >= 0; c = t->v[c].next)
        nc++;
    int32_t *kids = malloc((size_t)(nc ? nc : 1) * sizeof *kids);
    if (!kids)
        return -1;
    nc = 0;
    for (int32_t c = t->v[i].first; c >= 0; c = t->v[c].next)
        kids[nc++] = c;
    qsort_r(kids, (size_t)nc, sizeof *kids, rh_tw_cmp, w);
    fputc('[', w->o);
    int wrote = 0, rc = 0;
    for (int32_t k = 0; k < nc && !rc; k++) {
        const struct rh_tn *x = &t->v[kids[k]];
        if (x->incl[w->sort] < w->floor || x->incl[w->sort] == 0 || depth > 256)
            continue;
        if (w->left <= 0) {
            w->truncated = 1;
            break;
        }
        w->left--;
        fputs(wrote++ ? ",{\"function\":" : "{\"function\":", w->o);
        rh_json_string(w->o, t->str[x->name]);
        rh_json_short_name(w->o, t->str[x->name]);
        fputs(",\"location\":", w->o);
        rh_json_string(w->o, t->str[x->loc]);
        fputs(",\"incl\":", w->o);
        rh_tw_figs(w->o, x->incl, w->nm);
        fputs(",\"self\":", w->o);
        rh_tw_figs(w->o, x->self, w->nm);
        fputs(",\"children\":", w->o);
        rc = rh_tw_children(w, kids[k], depth + 1);
        fputc('}', w->o);
    }
    fputc(']', w->o);
    free(kids);
    return rc;
}

int rh_tree_json(sqlite3 *db, const struct rh_tree_opts *opt, FILE *out)
{
    static const char *const kinds[] = {"top-down", "bottom-up", "callers", "callees"};
    static const char *const heap_cols[] = {"bytes", "count", "leaked", "peak", "temporary"};
    int cpu = opt->cpu, nm = cpu ? 1 : RH_TM;
    if ((opt->kind == RH_TREE_CALLERS || opt->kind == RH_TREE_CALLEES) &&
        (!opt->function || !*opt->function)) {
        fprintf(stderr, "rheaper: tree: callers and callees need a function\n");
        return -1;
    }
    struct rh_tt t;
    memset(&t, 0, sizeof t);
    t.cap = 1024;
    t.v = calloc((size_t)t.cap, sizeof *t.v);
    int32_t root_name = t.v ? rh_tt_intern(&t, "all") : -1;
    int32_t fn_id = opt->function && root_name >= 0 ? rh_tt_intern(&t, opt->function) : -1;
    if (root_name < 0 || (opt->function && fn_id < 0)) {
        rh_tt_free(&t);
        fprintf(stderr, "rheaper: tree: out of memory\n");
        return -1;
    }
    t.n = 1;
    t.v[0].name = t.v[0].loc = root_name;
    t.v[0].first = t.v[0].next = -1;
    sqlite3_stmt *st = rh_sql_prepare(
        db, cpu ? "SELECT bt, samples, 0, 0, 0, 0 FROM temp.cpustat WHERE samples > 0 ORDER BY bt"
                : "SELECT bt, bytes, count, leaked_bytes, peak_bytes, temporary FROM temp.sstat"
                  " WHERE count > 0 ORDER BY bt");
    sqlite3_stmt *fr = rh_sql_prepare(
        db, "SELECT frame_no, coalesce(sym, '?\?'), file, line, module, coalesce(address, 0)"
            " FROM backtraces WHERE id = ?1 AND frame_no >= coalesce((SELECT frame FROM temp.cs"
            " WHERE bt = ?1), 0) ORDER BY frame_no");
    int32_t *names = NULL, *locs = NULL;
    size_t capf = 0;
    int rc = -1, r;
    int64_t total[RH_TM] = {0};
    if (!st || !fr)
        goto out;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t w[RH_TM];
        for (int k = 0; k < RH_TM; k++)
            w[k] = sqlite3_column_int64(st, 1 + k);
        sqlite3_bind_int64(fr, 1, sqlite3_column_int64(st, 0));
        size_t nf = 0;
        while ((r = sqlite3_step(fr)) == SQLITE_ROW) {
            if (nf == capf) {
                size_t nc = capf ? capf * 2 : 256;
                int32_t *a = realloc(names, nc * sizeof *a), *b;
                if (a)
                    names = a;
                b = a ? realloc(locs, nc * sizeof *b) : NULL;
                if (!b)
                    goto oom;
                locs = b;
                capf = nc;
            }
            char loc[512];
            rh_tt_loc(fr, loc, sizeof loc);
            names[nf] = rh_tt_intern(&t, (const char *)sqlite3_column_text(fr, 1));
            locs[nf] = rh_tt_intern(&t, loc);
            if (names[nf] < 0 || locs[nf] < 0)
                goto oom;
            nf++;
        }
        sqlite3_reset(fr);
        if (r != SQLITE_DONE)
            goto sqlfail;
        if (!nf)
            continue;
        /* the path: frame indices lo to hi (by step) from the tree's root
         * level outward; index 0, the call site, takes the self figures */
        long lo = 0, hi = (long)nf - 1, step = 1, self_at = 0;
        if (opt->kind == RH_TREE_TOPDOWN) {
            lo = (long)nf - 1;
            hi = 0;
            step = -1;
        } else if (opt->kind == RH_TREE_CALLERS) {
            lo = -1;
            for (size_t k = 0; k < nf && lo < 0; k++)
                if (names[k] == fn_id)
                    lo = (long)k;
            if (lo < 0)
                continue;
        } else if (opt->kind == RH_TREE_CALLEES) {
            lo = -1;
            for (long k = (long)nf - 1; k >= 0 && lo < 0; k--)
                if (names[k] == fn_id)
                    lo = k;
            if (lo < 0)
                continue;
            hi = 0;
            step = -1;
        }
        int32_t node = 0;
        for (int k = 0; k < nm; k++)
            t.v[0].incl[k] += w[k];
        for (long k = lo;; k += step) {
            node = rh_tt_child(&t, node, names[k], locs[k]);
            if (node < 0)
                goto oom;
            for (int m = 0; m < nm; m++) {
                t.v[node].incl[m] += w[m];
                if (k == self_at)
                    t.v[node].self[m] += w[m];
            }
            if (k == hi)
                break;
        }
        for (int k = 0; k < nm; k++)
            total[k] += w[k];
    }
    if (r != SQLITE_DONE)
        goto sqlfail;
    {
        struct rh_twr wr = {out, &t, nm, opt->sort >= 0 && opt->sort < nm ? opt->sort : 0, 0,
                            opt->max_nodes > 0 ? opt->max_nodes : 20000, 0};
        if (opt->min_share > 0)
            wr.floor = (int64_t)((double)total[wr.sort] * opt->min_share);
        fprintf(out, "{\"kind\":\"%s\",\"cpu\":%s,\"function\":", kinds[opt->kind],
                cpu ? "true" : "false");
        if (opt->function)
            rh_json_string(out, opt->function);
        else
            fputs("null", out);
        fputs(",\"columns\":[", out);
        for (int k = 0; k < nm; k++)
            fprintf(out, "%s\"%s\"", k ? "," : "", cpu ? "samples" : heap_cols[k]);
        fprintf(out, "],\"sort\":\"%s\",\"total\":", cpu ? "samples" : heap_cols[wr.sort]);
        rh_tw_figs(out, total, nm);
        fputs(",\"children\":", out);
        if (rh_tw_children(&wr, 0, 0))
            goto oom;
        fprintf(out, ",\"nodes\":%" PRId64 ",\"truncated\":%s}\n",
                (opt->max_nodes > 0 ? opt->max_nodes : 20000) - wr.left,
                wr.truncated ? "true" : "false");
    }
    rc = 0;
    goto out;
oom:
    fprintf(stderr, "rheaper: tree: out of memory\n");
    goto out;
sqlfail:
    rh_sql_fail(db, "tree");
out:
    sqlite3_finalize(st);
    sqlite3_finalize(fr);
    free(names);
    free(locs);
    rh_tt_free(&t);
    return rc;
}
