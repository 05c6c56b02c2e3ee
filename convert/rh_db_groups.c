/* rh_db_groups.c: replays the events rh_agg_groups.c kept into the stack
 * groups and writes group_peaks, group_peak_stacks and stack_thread_stats
 * (rh_agg_groups.c says what they hold and why; docs/design.md, "Which
 * table answers which question"). Memory: one entry per (group, stack)
 * pair, per group and per stack; never per event.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "rh_core.h"
#include "rh_db.h"
#include "rh_util.h"

/* The replay's reader of the temp file. */
struct rh_grp_rd {
    FILE *f;
    uint8_t *buf;
    size_t len, pos;
    int eof, bad;
};

static int rh_grp_getv(struct rh_grp_rd *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int sh = 0; sh < 64; sh += 7) {
        if (r->pos == r->len) {
            r->len = fread(r->buf, 1, RH_GRP_BUF, r->f);
            r->pos = 0;
            if (!r->len) {
                if (sh)
                    r->bad = 1;
                r->eof = 1;
                return -1;
            }
        }
        uint8_t b = r->buf[r->pos++];
        x |= (uint64_t)(b & 0x7f) << sh;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    r->bad = 1;
    return -1;
}

/* One group: its definition, its stacks' count and hash, its live figures and
 * peak while the events replay. */
struct rh_grp_one {
    int type;
    char *name;
    int64_t nstacks;
    uint64_t hash;
    int64_t live, blocks, peak, peak_blocks, peak_t;
    uint64_t epoch;
    int touched;
};

/* One (group, stack) pair: the stack's figures at the group's latest peak. */
struct rh_grp_pair {
    uint32_t grp;
    uint64_t epoch;
    int64_t snap_bytes, snap_blocks;
};

static int rh_grp_fail(sqlite3 *db, char *err, size_t errlen)
{
    snprintf(err, errlen, "group peaks: SQLite error (%s)", sqlite3_errmsg(db));
    return -1;
}

struct rh_grp_w {
    struct rh_grp_one *gr;
    size_t ngr, capgr;
    uint32_t *pairs_si;  /* per pair (group-major): its stack index, UINT32_MAX: no events */
    int64_t *pairs_bt;   /* and its stack id */
    size_t np, capp, capp2;
    size_t *goff;        /* group g's pairs: goff[g] .. goff[g+1] */
    size_t capgoff;
    /* per stack index: its pairs (indices into the group-major arrays) */
    size_t *soff;
    uint32_t *sp;
    struct rh_grp_pair *pr;
    int64_t *live_b, *live_k;
};

static void rh_grp_w_free(struct rh_grp_w *w)
{
    for (size_t i = 0; i < w->ngr; i++)
        free(w->gr[i].name);
    free(w->gr);
    free(w->pairs_si);
    free(w->pairs_bt);
    free(w->goff);
    free(w->soff);
    free(w->sp);
    free(w->pr);
    free(w->live_b);
    free(w->live_k);
}

/* Reads the groups and their stacks from db into w (group-major pairs). */
static int rh_grp_read_groups(sqlite3 *db, const struct rh_agg *a, const struct rh_map *idx,
                              struct rh_grp_w *w, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT DISTINCT 0, b.sym, b.id FROM backtraces b JOIN stacks s ON"
                           " s.id = b.id WHERE b.sym IS NOT NULL"
                           " UNION SELECT 1, b.file, b.id FROM backtraces b JOIN stacks s ON"
                           " s.id = b.id WHERE b.file IS NOT NULL"
                           " UNION SELECT 2, b.module, b.id FROM backtraces b JOIN stacks s ON"
                           " s.id = b.id WHERE b.module IS NOT NULL"
                           " UNION SELECT 3, kind, id FROM stacks WHERE kind IS NOT NULL"
                           " ORDER BY 1, 2, 3",
                           -1, &st, NULL) != SQLITE_OK)
        return rh_grp_fail(db, err, errlen);
    int r;
    (void)a;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        int type = sqlite3_column_int(st, 0);
        const char *name = (const char *)sqlite3_column_text(st, 1);
        int64_t bt = sqlite3_column_int64(st, 2);
        if (!name)
            continue;
        struct rh_grp_one *g = w->ngr ? &w->gr[w->ngr - 1] : NULL;
        if (!g || g->type != type || strcmp(g->name, name)) {
            if (rh_grow(&w->gr, &w->capgr, w->ngr + 1, sizeof *w->gr) ||
                rh_grow(&w->goff, &w->capgoff, w->ngr + 2, sizeof *w->goff))
                goto oom;
            g = &w->gr[w->ngr];
            memset(g, 0, sizeof *g);
            g->type = type;
            if (!(g->name = strdup(name)))
                goto oom;
            w->goff[w->ngr++] = w->np;
        }
        if (rh_grow(&w->pairs_si, &w->capp, w->np + 1, sizeof *w->pairs_si) ||
            rh_grow(&w->pairs_bt, &w->capp2, w->np + 1, sizeof *w->pairs_bt))
            goto oom;
        w->pairs_si[w->np] = rh_map_get(idx, (uint64_t)bt);
        w->pairs_bt[w->np++] = bt;
        g->nstacks++;
        g->hash += rh_grp_hash(bt);
    }
    sqlite3_finalize(st);
    if (r != SQLITE_DONE)
        return rh_grp_fail(db, err, errlen);
    if (rh_grow(&w->goff, &w->capgoff, w->ngr + 1, sizeof *w->goff))
        goto oom2;
    w->goff[w->ngr] = w->np;
    return 0;
oom:
    sqlite3_finalize(st);
oom2:
    snprintf(err, errlen, "group peaks: out of memory");
    return -1;
}

/* The replay: every event of the temp file into the groups of its stack. */
static int rh_grp_replay(struct rh_grp *g, size_t nsi, struct rh_grp_w *w)
{
    /* per stack index, its pairs */
    w->soff = calloc(nsi + 2, sizeof *w->soff);
    w->sp = malloc((w->np + 1) * sizeof *w->sp);
    w->pr = calloc(w->np + 1, sizeof *w->pr);
    w->live_b = calloc(nsi + 1, sizeof *w->live_b);
    w->live_k = calloc(nsi + 1, sizeof *w->live_k);
    uint32_t *touched = malloc((w->ngr + 1) * sizeof *touched);
    struct rh_grp_rd rd = {g->f, g->buf, 0, 0, 0, 0};
    if (!w->soff || !w->sp || !w->pr || !w->live_b || !w->live_k || !touched) {
        free(touched);
        return -1;
    }
    for (size_t p = 0; p < w->np; p++)
        if (w->pairs_si[p] < nsi)
            w->soff[w->pairs_si[p] + 1]++;
    for (size_t i = 0; i < nsi; i++)
        w->soff[i + 1] += w->soff[i];
    size_t *fill = calloc(nsi + 1, sizeof *fill);
    if (!fill) {
        free(touched);
        return -1;
    }
    for (size_t gi = 0; gi < w->ngr; gi++)
        for (size_t p = w->goff[gi]; p < w->goff[gi + 1]; p++) {
            uint32_t si = w->pairs_si[p];
            w->pr[p].grp = (uint32_t)gi;
            if (si < nsi)
                w->sp[w->soff[si] + fill[si]++] = (uint32_t)p;
        }
    free(fill);
    size_t nt = 0;
    int64_t t = 0, cur_t = 0;
    int have_t = 0;
    for (;;) {
        uint64_t si, dt, sz;
        if (rh_grp_getv(&rd, &si))
            break;
        if (rh_grp_getv(&rd, &dt) || rh_grp_getv(&rd, &sz)) {
            rd.bad = 1;
            break;
        }
        t = have_t ? cur_t + (int64_t)dt : (int64_t)dt;
        if (!have_t || t != cur_t) {
            /* the events of cur_t are all in: each touched group checks its peak */
            for (size_t k = 0; k < nt; k++) {
                struct rh_grp_one *o = &w->gr[touched[k]];
                if (o->live > o->peak) {
                    o->peak = o->live;
                    o->peak_blocks = o->blocks;
                    o->peak_t = cur_t;
                    o->epoch++;
                }
                o->touched = 0;
            }
            nt = 0;
            have_t = 1;
            cur_t = t;
        }
        if (si >= nsi)
            continue; /* a stack without groups */
        int64_t d = (int64_t)(sz >> 1), k = 1;
        if (!(sz & 1)) {
            d = -d;
            k = -1;
        }
        for (size_t q = w->soff[si]; q < w->soff[si + 1]; q++) {
            struct rh_grp_pair *pp = &w->pr[w->sp[q]];
            struct rh_grp_one *o = &w->gr[pp->grp];
            if (pp->epoch != o->epoch) {
                pp->snap_bytes = w->live_b[si];
                pp->snap_blocks = w->live_k[si];
                pp->epoch = o->epoch;
            }
            o->live += d;
            o->blocks += k;
            if (!o->touched) {
                o->touched = 1;
                touched[nt++] = pp->grp;
            }
        }
        w->live_b[si] += d;
        w->live_k[si] += k;
    }
    for (size_t k = 0; k < nt; k++) {
        struct rh_grp_one *o = &w->gr[touched[k]];
        if (o->live > o->peak) {
            o->peak = o->live;
            o->peak_blocks = o->blocks;
            o->peak_t = cur_t;
            o->epoch++;
        }
    }
    free(touched);
    return rd.bad || ferror(g->f) ? -1 : 0;
}

static int rh_grp_sthr_cmp(const void *x, const void *y)
{
    const int64_t *a = x, *b = y;
    return a[0] != b[0] ? (a[0] < b[0] ? -1 : 1) : (a[1] < b[1] ? -1 : a[1] > b[1]);
}

static int rh_grp_bt_cmp(const void *x, const void *y)
{
    const int64_t *a = x, *b = y;
    return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* Writes the three tables from w and g. */
static int rh_grp_store(sqlite3 *db, const struct rh_agg *a, struct rh_grp *g,
                        struct rh_grp_w *w, size_t nsi, char *err, size_t errlen)
{
    sqlite3_stmt *gp = NULL, *gs = NULL, *ts = NULL;
    int64_t *v = NULL; /* a group's stacks at its peak: bt, blocks, bytes */
    size_t capv = 0;
    int rc = -1;
    if (sqlite3_exec(db,
                     "CREATE TABLE group_peaks(id INTEGER PRIMARY KEY, type INTEGER, name TEXT,"
                     " stacks INTEGER, stack_hash INTEGER, peak_bytes INTEGER, peak_blocks INTEGER,"
                     " peak_time INTEGER);"
                     "CREATE TABLE group_peak_stacks(grp INTEGER, bt INTEGER, blocks INTEGER,"
                     " bytes INTEGER, PRIMARY KEY(grp, bt)) WITHOUT ROWID;"
                     "CREATE TABLE stack_thread_stats(bt INTEGER, thread INTEGER,"
                     " alloc_blocks INTEGER, alloc_bytes INTEGER, freed_blocks INTEGER,"
                     " freed_bytes INTEGER, freed_by_others_blocks INTEGER,"
                     " freed_by_others_bytes INTEGER, live_blocks INTEGER, live_bytes INTEGER,"
                     " PRIMARY KEY(bt, thread)) WITHOUT ROWID;",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO group_peaks VALUES(?,?,?,?,?,?,?,?)", -1, &gp,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO group_peak_stacks VALUES(?,?,?,?)", -1, &gs, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO stack_thread_stats VALUES(?,?,?,?,?,?,?,?,?,?)", -1,
                           &ts, NULL) != SQLITE_OK)
        goto sqlfail;
    for (size_t gi = 0; gi < w->ngr; gi++) {
        const struct rh_grp_one *o = &w->gr[gi];
        sqlite3_bind_int64(gp, 1, (int64_t)gi + 1);
        sqlite3_bind_int(gp, 2, o->type);
        sqlite3_bind_text(gp, 3, o->name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(gp, 4, o->nstacks);
        sqlite3_bind_int64(gp, 5, (int64_t)o->hash);
        sqlite3_bind_int64(gp, 6, o->peak);
        sqlite3_bind_int64(gp, 7, o->peak_blocks);
        sqlite3_bind_int64(gp, 8, o->peak_t);
        if (sqlite3_step(gp) != SQLITE_DONE)
            goto sqlfail;
        sqlite3_reset(gp);
        size_t n = 0;
        for (size_t p = w->goff[gi]; p < w->goff[gi + 1]; p++) {
            uint32_t si = w->pairs_si[p];
            if (si >= nsi)
                continue;
            const struct rh_grp_pair *pp = &w->pr[p];
            /* changed since the peak: its snapshot; else what it holds now */
            int snap = pp->epoch == o->epoch;
            int64_t bytes = snap ? pp->snap_bytes : w->live_b[si];
            int64_t blocks = snap ? pp->snap_blocks : w->live_k[si];
            if (!bytes && !blocks)
                continue;
            if (rh_grow(&v, &capv, 3 * (n + 1), sizeof *v))
                goto oom;
            v[3 * n] = w->pairs_bt[p];
            v[3 * n + 1] = blocks;
            v[3 * n + 2] = bytes;
            n++;
        }
        qsort(v, n, 3 * sizeof *v, rh_grp_bt_cmp);
        for (size_t i = 0; i < n; i++) {
            sqlite3_bind_int64(gs, 1, (int64_t)gi + 1);
            for (int k = 0; k < 3; k++)
                sqlite3_bind_int64(gs, k + 2, v[3 * i + k]);
            if (sqlite3_step(gs) != SQLITE_DONE)
                goto sqlfail;
            sqlite3_reset(gs);
        }
    }
    /* per (stack id, thread), in key order */
    free(v);
    v = NULL;
    capv = 0;
    if (rh_grow(&v, &capv, 10 * (g->nst + 1), sizeof *v))
        goto oom;
    for (size_t i = 0; i < g->nst; i++) {
        const struct rh_grp_sthr *e = &g->st[i];
        v[10 * i] = e->si < a->r->nstacks ? (int64_t)a->r->stacks[e->si].id : -1;
        v[10 * i + 1] = e->thread;
        memcpy(&v[10 * i + 2], e->v, sizeof e->v);
    }
    qsort(v, g->nst, 10 * sizeof *v, rh_grp_sthr_cmp);
    for (size_t i = 0; i < g->nst; i++) {
        if (v[10 * i] < 0)
            continue;
        for (int k = 0; k < 10; k++)
            sqlite3_bind_int64(ts, k + 1, v[10 * i + k]);
        if (sqlite3_step(ts) != SQLITE_DONE)
            goto sqlfail;
        sqlite3_reset(ts);
    }
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "group peaks: out of memory");
    goto out;
sqlfail:
    rh_grp_fail(db, err, errlen);
out:
    sqlite3_finalize(gp);
    sqlite3_finalize(gs);
    sqlite3_finalize(ts);
    free(v);
    return rc;
}

int rh_grp_write(struct rh_agg *a, sqlite3 *db, char *err, size_t errlen)
{
    struct rh_grp *g = a->grp;
    if (!g)
        return 0;
    rh_grp_flush(g);
    if (g->broken || a->oom || a->r->out_of_order || fflush(g->f) || fseek(g->f, 0, SEEK_SET))
        return 0; /* no tables: stack filters read their rows */
    /* stack id -> stack index, over the stacks with events */
    size_t nsi = a->nst < a->r->nstacks ? a->nst : a->r->nstacks;
    struct rh_map idx = {0};
    struct rh_grp_w w = {0};
    int rc = -1;
    for (size_t i = 0; i < nsi; i++)
        if (rh_map_put(&idx, a->r->stacks[i].id, (uint32_t)i)) {
            snprintf(err, errlen, "group peaks: out of memory");
            goto out;
        }
    if (rh_grp_read_groups(db, a, &idx, &w, err, errlen))
        goto out;
    if (rh_grp_replay(g, nsi, &w)) {
        rc = 0; /* the temp file failed: no tables */
        goto out;
    }
    rc = rh_grp_store(db, a, g, &w, nsi, err, errlen);
out:
    rh_grp_w_free(&w);
    rh_map_free(&idx);
    return rc;
}
