/* rh_db_groups.c: replays the events rh_agg_groups.c kept into the stack
 * groups and writes group_peaks, group_peak_stacks, group_timeline and
 * stack_thread_stats (rh_agg_groups.c says what they hold and why;
 * docs/design.md, "Which table answers which question"). Memory: one entry
 * per (group, stack) pair, per group and per stack; never per event.
 *
 * group_timeline is each group's heap over time as the filtered pass
 * (rh_query_pass.c) would compute it for a filter selecting exactly the
 * group's stacks, so the charts of a stack filter read no row: per group and
 * per column of the converter's timeline (RH_AGG_COLUMNS over the run) in
 * which the group has events, the highest live bytes after any time's events
 * (max_bytes, first reached at max_time), the live bytes at the column's end
 * (end_bytes) and, packed in pts, the points of its stacks whose bytes at the
 * maximum or at the end differ from the last stored: the rules of
 * rh_aggregate.c's timeline (rh_agg_group_end, rh_agg_close_col), applied
 * per group. Columns without events are the previous column's end, as there.
 * The table grows with groups times columns times their stacks, not with
 * events; it is bounded (RH_GTL_BUDGET_DIV): a group whose rows would pass
 * the bound gets none (group_peaks.timeline 0), and its charts replay rows.
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
    /* the open column of its heap over time (rh_gtl_*): 0 none yet */
    uint32_t col;
    int64_t col_max, col_max_t;
    uint64_t col_epoch;
    uint32_t *cp; /* the pairs touched in the open column */
    size_t ncp, capcp;
    uint64_t tl_bytes; /* its group_timeline rows so far */
    int tl_drop;       /* over the bound: no timeline */
};

/* One (group, stack) pair: the stack's figures at the group's latest peak. */
struct rh_grp_pair {
    uint32_t grp;
    uint64_t epoch;
    int64_t snap_bytes, snap_blocks;
};

/* One (group, stack) pair's part of the group's timeline, beside rh_grp_pair
 * (touched only for groups that keep one): the stack's bytes at the group's
 * column maximum (with the group's column epoch), the last end stored, the
 * column it is listed in (0: none). */
struct rh_gtl_pair {
    uint64_t col_epoch;
    int64_t col_bytes, last_end;
    uint32_t in_col;
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
    struct rh_gtl_pair *tp; /* per pair, when group timelines are kept */
    int64_t *live_b, *live_k;
};

static void rh_grp_w_free(struct rh_grp_w *w)
{
    for (size_t i = 0; i < w->ngr; i++) {
        free(w->gr[i].name);
        free(w->gr[i].cp);
    }
    free(w->gr);
    free(w->pairs_si);
    free(w->pairs_bt);
    free(w->goff);
    free(w->soff);
    free(w->sp);
    free(w->pr);
    free(w->tp);
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

/* ---- each group's heap over time (group_timeline) ------------------------ */

/* The bound on group_timeline: the bytes of its rows at most the temp file's
 * bytes (about 6 an event) divided by this, and at least RH_GTL_MIN_BYTES: at
 * most about 3 bytes an allocation, under a tenth of the database. */
#define RH_GTL_BUDGET_DIV 4
#define RH_GTL_MIN_BYTES (8u << 20)

struct rh_gtl {
    sqlite3_stmt *ins, *del;
    int64_t span;   /* the converter's timeline span (rh_agg's) */
    uint64_t budget, used;
    int on;         /* 0: no group timelines (a->tl_ok unset, or an error) */
    int64_t *sv;    /* one column's points: bt, at_max, at_end */
    size_t capsv;
    uint8_t *pk;    /* and packed, as rh_query_pass.c packs stlsb */
    size_t cappk;
};

/* The column of time t, as rh_aggregate.c's rh_agg_colof counts it. */
static uint32_t rh_gtl_colof(const struct rh_gtl *x, int64_t t)
{
    if (t <= 0 || x->span <= 0)
        return 1;
    __int128 c = ((__int128)t * RH_AGG_COLUMNS + x->span - 1) / x->span;
    return c < 1 ? 1u : c > RH_AGG_COLUMNS ? (uint32_t)RH_AGG_COLUMNS : (uint32_t)c;
}

static int rh_gtl_idx_cmp(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return a < b ? -1 : a > b;
}

/* Group gi passes the bound (or its row could not be stored): its rows go,
 * and it keeps no timeline. */
static void rh_gtl_drop(struct rh_gtl *x, struct rh_grp_w *w, size_t gi)
{
    struct rh_grp_one *o = &w->gr[gi];
    sqlite3_bind_int64(x->del, 1, (int64_t)gi + 1);
    if (sqlite3_step(x->del) != SQLITE_DONE)
        x->on = 0;
    sqlite3_reset(x->del);
    x->used -= o->tl_bytes;
    o->tl_bytes = 0;
    o->tl_drop = 1;
    free(o->cp);
    o->cp = NULL;
    o->ncp = o->capcp = 0;
}

/* Closes group gi's open column (rh_agg_close_col for the group): its row,
 * with the points of the stacks it touched whose value at the maximum or at
 * the end differs from the last stored, in stack id order. */
static void rh_gtl_close(struct rh_gtl *x, struct rh_grp_w *w, size_t gi)
{
    struct rh_grp_one *o = &w->gr[gi];
    if (!o->col || o->tl_drop)
        return;
    size_t n = 0;
    if (rh_grow(&x->sv, &x->capsv, 3 * (o->ncp + 1), sizeof *x->sv) ||
        rh_grow(&x->pk, &x->cappk, 30 * (o->ncp + 1), 1)) {
        x->on = 0;
        return;
    }
    /* the points go out by stack id: a group's pairs are in id order
     * (rh_grp_read_groups), so when many were touched they are walked in
     * place, else the few touched are sorted */
    size_t lo = w->goff[gi], hi = w->goff[gi + 1];
    int walk = o->ncp * 8 > hi - lo;
    if (!walk)
        qsort(o->cp, o->ncp, sizeof *o->cp, rh_gtl_idx_cmp);
    for (size_t i = 0, p; walk ? (i < hi - lo) : (i < o->ncp); i++) {
        p = walk ? lo + i : o->cp[i];
        struct rh_gtl_pair *pp = &w->tp[p];
        if (pp->in_col != o->col)
            continue; /* not touched in this column (walking the group) */
        int64_t live = w->live_b[w->pairs_si[p]];
        int64_t at_max = pp->col_epoch == o->col_epoch ? pp->col_bytes : live;
        pp->in_col = 0;
        if (at_max == pp->last_end && live == pp->last_end)
            continue;
        x->sv[3 * n] = w->pairs_bt[p];
        x->sv[3 * n + 1] = at_max;
        x->sv[3 * n + 2] = live;
        pp->last_end = live;
        n++;
    }
    o->ncp = 0;
    uint8_t *e = x->pk;
    for (size_t i = 0; i < n; i++) {
        e = rip_put_varint(e, (uint64_t)x->sv[3 * i]);
        for (int k = 1; k < 3; k++)
            e = rip_put_varint(e, rip_zigzag(x->sv[3 * i + k]));
    }
    size_t len = (size_t)(e - x->pk);
    int64_t v[5] = {(int64_t)gi + 1, o->col, o->col_max, o->col_max_t, o->live};
    for (int k = 0; k < 5; k++)
        sqlite3_bind_int64(x->ins, k + 1, v[k]);
    if (len)
        sqlite3_bind_blob(x->ins, 6, x->pk, (int)len, SQLITE_STATIC);
    else
        sqlite3_bind_null(x->ins, 6);
    int r = sqlite3_step(x->ins);
    sqlite3_reset(x->ins);
    if (r != SQLITE_DONE) {
        x->on = 0;
        return;
    }
    /* a row's cost: its blob and about 24 bytes of record and key */
    o->tl_bytes += len + 24;
    x->used += len + 24;
    /* over the bound: the largest timelines go first, so that many small
     * groups keep theirs rather than one large one */
    while (x->on && x->used > x->budget) {
        size_t big = gi;
        for (size_t k = 0; k < w->ngr; k++)
            if (!w->gr[k].tl_drop && w->gr[k].tl_bytes > w->gr[big].tl_bytes)
                big = k;
        if (w->gr[big].tl_drop)
            break;
        rh_gtl_drop(x, w, big);
    }
}

/* Pair q of group gi (stack si; the group keeps a timeline) is about to
 * change at a time of column c: opens the group's column c (closing the one
 * before) and snapshots the stack's bytes for the column's maximum, as
 * rh_agg_event does per stack. */
static void rh_gtl_touch(struct rh_gtl *x, struct rh_grp_w *w, size_t gi, size_t q, uint32_t si,
                         uint32_t c)
{
    struct rh_grp_one *o = &w->gr[gi];
    struct rh_gtl_pair *pp = &w->tp[q];
    if (o->col != c) {
        rh_gtl_close(x, w, gi);
        if (o->tl_drop)
            return;
        o->col = c;
        o->col_max = o->col_max_t = 0;
    }
    if (pp->col_epoch != o->col_epoch) {
        pp->col_bytes = w->live_b[si];
        pp->col_epoch = o->col_epoch;
    }
    if (pp->in_col != c) {
        if (rh_grow(&o->cp, &o->capcp, o->ncp + 1, sizeof *o->cp)) {
            x->on = 0;
            return;
        }
        o->cp[o->ncp++] = (uint32_t)q;
        pp->in_col = c;
    }
}

/* The events of time t are all in for group o (rh_agg_group_end's column
 * part). */
static void rh_gtl_settle(struct rh_grp_one *o, int64_t t)
{
    if (o->col && !o->tl_drop && o->live > o->col_max) {
        o->col_max = o->live;
        o->col_max_t = t;
        o->col_epoch++;
    }
}

/* Creates group_timeline and readies x (x->on 0 when a has no timeline).
 * Returns 0, or -1 on an SQLite error. */
static int rh_gtl_open(struct rh_gtl *x, sqlite3 *db, const struct rh_agg *a, uint64_t events_bytes)
{
    memset(x, 0, sizeof *x);
    if (!a->tl_ok || a->span <= 0)
        return 0;
    x->span = a->span;
    x->budget = events_bytes / RH_GTL_BUDGET_DIV;
    if (x->budget < RH_GTL_MIN_BYTES)
        x->budget = RH_GTL_MIN_BYTES;
    if (sqlite3_exec(db,
                     "CREATE TABLE group_timeline(grp INTEGER, col INTEGER, max_bytes INTEGER,"
                     " max_time INTEGER, end_bytes INTEGER, pts BLOB, PRIMARY KEY(grp, col))"
                     " WITHOUT ROWID;",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO group_timeline VALUES(?,?,?,?,?,?)", -1, &x->ins,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "DELETE FROM group_timeline WHERE grp = ?1", -1, &x->del, NULL) !=
            SQLITE_OK)
        return -1;
    x->on = 1;
    return 0;
}

static void rh_gtl_free(struct rh_gtl *x)
{
    sqlite3_finalize(x->ins);
    sqlite3_finalize(x->del);
    free(x->sv);
    free(x->pk);
    memset(x, 0, sizeof *x);
}

/* The replay: every event of the temp file into the groups of its stack,
 * and, when x->on, into their timelines. */
static int rh_grp_replay(struct rh_grp *g, size_t nsi, struct rh_grp_w *w, struct rh_gtl *x)
{
    /* per stack index, its pairs */
    w->soff = calloc(nsi + 2, sizeof *w->soff);
    w->sp = malloc((w->np + 1) * sizeof *w->sp);
    w->pr = calloc(w->np + 1, sizeof *w->pr);
    if (x->on && !(w->tp = calloc(w->np + 1, sizeof *w->tp)))
        x->on = 0; /* no memory for the timelines: none, the peaks go on */
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
    int64_t t = 0, cur_t = 0, col_lo = 1, col_hi = 0;
    uint32_t col = 0;
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
                if (x->on)
                    rh_gtl_settle(o, cur_t);
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
        /* the column of t, by division only when t leaves (col_lo, col_hi] */
        if (x->on && !(t > col_lo && t <= col_hi)) {
            col = rh_gtl_colof(x, t);
            col_lo = col > 1 ? (int64_t)((__int128)x->span * (col - 1) / RH_AGG_COLUMNS) : INT64_MIN;
            col_hi = col < RH_AGG_COLUMNS ? (int64_t)((__int128)x->span * col / RH_AGG_COLUMNS)
                                          : INT64_MAX;
        }
        for (size_t q = w->soff[si]; q < w->soff[si + 1]; q++) {
            struct rh_grp_pair *pp = &w->pr[w->sp[q]];
            struct rh_grp_one *o = &w->gr[pp->grp];
            if (x->on && !o->tl_drop)
                rh_gtl_touch(x, w, pp->grp, w->sp[q], (uint32_t)si, col);
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
        if (x->on)
            rh_gtl_settle(o, cur_t);
    }
    for (size_t gi = 0; x->on && gi < w->ngr; gi++)
        rh_gtl_close(x, w, gi);
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
                        struct rh_grp_w *w, size_t nsi, int tl, char *err, size_t errlen)
{
    sqlite3_stmt *gp = NULL, *gs = NULL, *ts = NULL;
    int64_t *v = NULL; /* a group's stacks at its peak: bt, blocks, bytes */
    size_t capv = 0;
    int rc = -1;
    if (sqlite3_exec(db,
                     "CREATE TABLE group_peaks(id INTEGER PRIMARY KEY, type INTEGER, name TEXT,"
                     " stacks INTEGER, stack_hash INTEGER, peak_bytes INTEGER, peak_blocks INTEGER,"
                     " peak_time INTEGER, timeline INTEGER);"
                     "CREATE TABLE group_peak_stacks(grp INTEGER, bt INTEGER, blocks INTEGER,"
                     " bytes INTEGER, PRIMARY KEY(grp, bt)) WITHOUT ROWID;"
                     "CREATE TABLE stack_thread_stats(bt INTEGER, thread INTEGER,"
                     " alloc_blocks INTEGER, alloc_bytes INTEGER, freed_blocks INTEGER,"
                     " freed_bytes INTEGER, freed_by_others_blocks INTEGER,"
                     " freed_by_others_bytes INTEGER, live_blocks INTEGER, live_bytes INTEGER,"
                     " PRIMARY KEY(bt, thread)) WITHOUT ROWID;",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO group_peaks VALUES(?,?,?,?,?,?,?,?,?)", -1, &gp,
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
        sqlite3_bind_int(gp, 9, tl && !o->tl_drop);
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
    long events_bytes;
    if (g->broken || a->oom || a->r->out_of_order || fflush(g->f) ||
        (events_bytes = ftell(g->f)) < 0 || fseek(g->f, 0, SEEK_SET))
        return 0; /* no tables: stack filters read their rows */
    /* stack id -> stack index, over the stacks with events */
    size_t nsi = a->nst < a->r->nstacks ? a->nst : a->r->nstacks;
    struct rh_map idx = {0};
    struct rh_grp_w w = {0};
    struct rh_gtl x;
    int rc = -1;
    if (rh_gtl_open(&x, db, a, (uint64_t)events_bytes)) {
        rh_grp_fail(db, err, errlen);
        goto out;
    }
    for (size_t i = 0; i < nsi; i++)
        if (rh_map_put(&idx, a->r->stacks[i].id, (uint32_t)i)) {
            snprintf(err, errlen, "group peaks: out of memory");
            goto out;
        }
    if (rh_grp_read_groups(db, a, &idx, &w, err, errlen))
        goto out;
    /* a group of every stack with events is the whole profile: its heap
     * over time is the converter's own timeline, not stored twice */
    for (size_t gi = 0; x.on && gi < w.ngr; gi++) {
        size_t with = 0;
        for (size_t p = w.goff[gi]; p < w.goff[gi + 1]; p++)
            with += w.pairs_si[p] < nsi;
        if (with == nsi)
            w.gr[gi].tl_drop = 1;
    }
    int had_tl = x.on;
    if (rh_grp_replay(g, nsi, &w, &x)) {
        /* the temp file failed: no tables */
        rc = had_tl && sqlite3_exec(db, "DROP TABLE group_timeline", NULL, NULL, NULL) != SQLITE_OK
                 ? rh_grp_fail(db, err, errlen)
                 : 0;
        goto out;
    }
    if (had_tl && !x.on && /* a timeline could not be stored: none at all */
        sqlite3_exec(db, "DROP TABLE group_timeline", NULL, NULL, NULL) != SQLITE_OK) {
        rh_grp_fail(db, err, errlen);
        goto out;
    }
    if (x.on) {
        char sql[96];
        snprintf(sql, sizeof sql,
                 "INSERT OR REPLACE INTO meta VALUES('group_timeline_span', %lld)",
                 (long long)x.span);
        if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
            rh_grp_fail(db, err, errlen);
            goto out;
        }
    }
    rc = rh_grp_store(db, a, g, &w, nsi, x.on, err, errlen);
out:
    rh_gtl_free(&x);
    rh_grp_w_free(&w);
    rh_map_free(&idx);
    return rc;
}
