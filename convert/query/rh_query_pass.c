/* rh_query_pass.c: the figures of a filtered scope in one ordered pass in C.
 *
 * rh_filter_apply() (rh_query_filter.c) resolves the filters first: stack and
 * kind filters over the distinct stacks (a flag per stack), the thread filter
 * over the threads, time filters into a range of allocation ids (ids follow
 * allocation time). This file then reads the rows of that id range once, in
 * id order, straight from SQLite without copying them anywhere: either a
 * scan of the range (SQLite tests each row's stack first, rh_pass_bt), or,
 * when the selected stacks have few rows there, their ids merged from the
 * converter's per-stack index stack_rows and each row read by id
 * (rh_pass_use_index; docs/design.md). It checks the
 * remaining per-row conditions in C and replays the allocations and their
 * frees (a heap of pending frees ordered by time, frees first at equal times)
 * into the converter's own aggregate code (rh_aggregate.c). So a filtered
 * scope's per-stack and per-thread figures, peak, heap timeline and leak
 * curve are computed by the same code, with the same rules, as the
 * unfiltered ones the converter stored. Memory grows with distinct stacks and
 * with the selected blocks live at one time (plus the selected never-freed
 * ones), never with the rows read.
 *
 * The results go into the TEMP tables of the scope (rh_query.h): sstat, ssize,
 * tstat, stl, stls, slc, and the caller's scope row.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rh_query.h"
#include "rh_core.h"
#include "rh_schema.h"
#include "rh_util.h"

/* ---- pending frees: a min-heap on time ------------------------------------ */

struct rh_pfree {
    int64_t t, size;
    uint32_t si;
    uint8_t pool; /* a pool block (never sampled: weight 1) */
};

struct rh_pheap {
    struct rh_pfree *v;
    size_t n, cap;
};

static int rh_pheap_push(struct rh_pheap *h, struct rh_pfree e)
{
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 4096;
        struct rh_pfree *nv = realloc(h->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        h->v = nv;
        h->cap = nc;
    }
    size_t i = h->n++;
    while (i && h->v[(i - 1) / 2].t > e.t) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = e;
    return 0;
}

static void rh_pheap_pop(struct rh_pheap *h)
{
    struct rh_pfree e = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->v[c + 1].t < h->v[c].t)
            c++;
        if (h->v[c].t >= e.t)
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = e;
}

/* ---- writing the scope's tables ------------------------------------------- */

/* Binds n int64 values from ?1 on, steps and resets. Returns 0 or -1. */
static int rh_pass_ins(sqlite3_stmt *st, const int64_t *v, int n)
{
    for (int i = 0; i < n; i++)
        sqlite3_bind_int64(st, i + 1, v[i]);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* The scope's INSERTs by enum rh_agg_table, and ssize beside stack_stats. */
struct rh_pass_rows {
    sqlite3_stmt *st[RH_AGG_T_N], *sz;
    const int64_t *ids, *mm;
};

static int rh_pass_emit(void *ctx, enum rh_agg_table t, uint32_t si, const int64_t *v, int n)
{
    struct rh_pass_rows *r = ctx;
    if (rh_pass_ins(r->st[t], v, n))
        return -1;
    if (t != RH_AGG_T_STACKS)
        return 0;
    int64_t z[3] = {r->ids[si], r->mm[2 * si], r->mm[2 * si + 1]};
    return rh_pass_ins(r->sz, z, 3);
}

/* The filtered timeline's temp file failed (errno set): one line, and the
 * scope goes on without a stored timeline. */
static void rh_pass_tl_lost(struct rh_agg *a, const char *what)
{
    const char *tmp = getenv("TMPDIR");
    fprintf(stderr,
            "rheaper: filter: cannot %s a temp file in %s (%s); the timeline is replayed"
            " from the rows\n",
            what, tmp && *tmp ? tmp : "/tmp", strerror(errno));
    a->tl_ok = 0;
}

/* ---- stls: the scope's per-stack timeline, one BLOB per column -------------
 * A filtered scope's stls has a row per stack and column where the stack
 * changed: hundreds of thousands of rows that most commands never read, and
 * inserting them one by one into a keyed table cost as much as reading the
 * rows of the profile. So the pass stores one row per column in TEMP TABLE
 * stlsb(col, pts): the column's points by stack id, each as the varints bt,
 * zigzag at_max, zigzag at_end; and stls is a view that unpacks them with
 * the table-valued function rh_pts(pts) -> (bt, at_max, at_end). */

struct rh_pts_cur {
    sqlite3_vtab_cursor base;
    uint8_t *buf;
    size_t len, off, next;
    int64_t v[3];
    int eof;
    sqlite3_int64 row;
};

static int rh_pts_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                          sqlite3_vtab **out, char **err)
{
    (void)aux;
    (void)argc;
    (void)argv;
    (void)err;
    int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(bt, at_max, at_end, pts HIDDEN)");
    if (rc != SQLITE_OK)
        return rc;
    *out = sqlite3_malloc(sizeof **out);
    if (!*out)
        return SQLITE_NOMEM;
    memset(*out, 0, sizeof **out);
    return SQLITE_OK;
}

static int rh_pts_disconnect(sqlite3_vtab *v)
{
    sqlite3_free(v);
    return SQLITE_OK;
}

static int rh_pts_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out)
{
    (void)v;
    struct rh_pts_cur *c = sqlite3_malloc(sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    *out = &c->base;
    return SQLITE_OK;
}

static int rh_pts_close(sqlite3_vtab_cursor *cur)
{
    struct rh_pts_cur *c = (struct rh_pts_cur *)cur;
    free(c->buf);
    sqlite3_free(c);
    return SQLITE_OK;
}

/* Decodes the point at c->off into c->v (eof at the end or on a damaged
 * varint). */
static void rh_pts_decode(struct rh_pts_cur *c)
{
    size_t o = c->off;
    for (int k = 0; k < 3; k++) {
        uint64_t x = 0;
        int sh = 0;
        for (;;) {
            if (o >= c->len || sh > 63) {
                c->eof = 1;
                return;
            }
            uint8_t b = c->buf[o++];
            x |= (uint64_t)(b & 0x7f) << sh;
            sh += 7;
            if (!(b & 0x80))
                break;
        }
        c->v[k] = k ? (int64_t)(x >> 1) ^ -(int64_t)(x & 1) : (int64_t)x;
    }
    c->next = o;
}

static int rh_pts_filter(sqlite3_vtab_cursor *cur, int idx, const char *idxstr, int argc,
                         sqlite3_value **argv)
{
    (void)idxstr;
    struct rh_pts_cur *c = (struct rh_pts_cur *)cur;
    free(c->buf);
    c->buf = NULL;
    c->len = c->off = 0;
    c->row = 0;
    c->eof = 1;
    if (idx != 1 || argc < 1)
        return SQLITE_OK;
    int n = sqlite3_value_bytes(argv[0]);
    const void *b = sqlite3_value_blob(argv[0]);
    if (n <= 0 || !b)
        return SQLITE_OK;
    if (!(c->buf = malloc((size_t)n)))
        return SQLITE_NOMEM;
    memcpy(c->buf, b, (size_t)n);
    c->len = (size_t)n;
    c->eof = 0;
    rh_pts_decode(c);
    return SQLITE_OK;
}

static int rh_pts_next(sqlite3_vtab_cursor *cur)
{
    struct rh_pts_cur *c = (struct rh_pts_cur *)cur;
    c->off = c->next;
    c->row++;
    rh_pts_decode(c);
    return SQLITE_OK;
}

static int rh_pts_eof(sqlite3_vtab_cursor *cur)
{
    return ((struct rh_pts_cur *)cur)->eof;
}

static int rh_pts_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    struct rh_pts_cur *c = (struct rh_pts_cur *)cur;
    if (col >= 0 && col < 3)
        sqlite3_result_int64(ctx, c->v[col]);
    else
        sqlite3_result_null(ctx);
    return SQLITE_OK;
}

static int rh_pts_rowid(sqlite3_vtab_cursor *cur, sqlite_int64 *rowid)
{
    *rowid = ((struct rh_pts_cur *)cur)->row;
    return SQLITE_OK;
}

/* Only with pts given (an equality on the hidden column). */
static int rh_pts_best_index(sqlite3_vtab *v, sqlite3_index_info *info)
{
    (void)v;
    for (int i = 0; i < info->nConstraint; i++)
        if (info->aConstraint[i].usable && info->aConstraint[i].iColumn == 3 &&
            info->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_EQ) {
            info->aConstraintUsage[i].argvIndex = 1;
            info->aConstraintUsage[i].omit = 1;
            info->idxNum = 1;
            info->estimatedCost = 10;
            info->estimatedRows = 1000;
            return SQLITE_OK;
        }
    info->idxNum = 0;
    info->estimatedCost = 1e12;
    return SQLITE_OK;
}

static const sqlite3_module rh_pts_module = {
    .iVersion = 0,
    .xCreate = NULL, /* eponymous-only */
    .xConnect = rh_pts_connect,
    .xBestIndex = rh_pts_best_index,
    .xDisconnect = rh_pts_disconnect,
    .xDestroy = rh_pts_disconnect,
    .xOpen = rh_pts_open,
    .xClose = rh_pts_close,
    .xFilter = rh_pts_filter,
    .xNext = rh_pts_next,
    .xEof = rh_pts_eof,
    .xColumn = rh_pts_column,
    .xRowid = rh_pts_rowid,
};

/* Appends x as a LEB128 varint to b (room checked by the caller). */
static size_t rh_pts_put(uint8_t *b, uint64_t x)
{
    size_t n = 0;
    while (x >= 0x80) {
        b[n++] = (uint8_t)(x | 0x80);
        x >>= 7;
    }
    b[n++] = (uint8_t)x;
    return n;
}

static int rh_pts_cmp(const void *x, const void *y)
{
    const int64_t *a = x, *b = y;
    return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* Writes the aggregates a (stack index i is stack id ids[i]) into the TEMP
 * tables sstat, tstat, stl, stls and slc, created empty by the caller.
 * Returns 0 or -1 after a message. */
static int rh_pass_store(sqlite3 *db, struct rh_agg *a, const int64_t *ids, const int64_t *mm)
{
    struct rh_pass_rows r = {{NULL}, NULL, ids, mm};
    sqlite3_stmt *tp = NULL;
    int64_t *sv = NULL; /* one column's points: bt, at_max, at_end */
    uint8_t *pk = NULL; /* and packed (at most 30 bytes a point) */
    size_t capsv = 0, cappk = 0;
    int rc = -1;
    /* the tables of rh_agg_rows, in the order of enum rh_agg_table */
    if (sqlite3_prepare_v2(db, "INSERT INTO temp.sstat VALUES(?,?,?,?,?,?,?,?,?,?,?,?)", -1,
                           &r.st[RH_AGG_T_STACKS], NULL) ||
        sqlite3_prepare_v2(db, "INSERT INTO temp.ssize VALUES(?,?,?)", -1, &r.sz, NULL) ||
        sqlite3_prepare_v2(db, "INSERT INTO temp.tstat VALUES(?,?,?,?,?,?,?,?,?)", -1,
                           &r.st[RH_AGG_T_THREADS], NULL) ||
        sqlite3_prepare_v2(db, "INSERT INTO temp.stl VALUES(?,?,?,?,?,?)", -1,
                           &r.st[RH_AGG_T_TIMELINE], NULL) ||
        sqlite3_prepare_v2(db, "INSERT INTO temp.stlsb VALUES(?1, ?2)", -1, &tp, NULL) ||
        sqlite3_prepare_v2(db, "INSERT INTO temp.slc VALUES(?,?,?,?,?,?)", -1,
                           &r.st[RH_AGG_T_LEAKS], NULL) ||
        sqlite3_prepare_v2(db, "INSERT INTO temp.shist VALUES(?,?,?,?)", -1,
                           &r.st[RH_AGG_T_HIST], NULL) ||
        sqlite3_prepare_v2(db, "INSERT INTO temp.sthr VALUES(?,?,?,?,?)", -1,
                           &r.st[RH_AGG_T_STHREADS], NULL))
        goto out;
    /* one transaction on the TEMP database for all of them */
    if (rh_sql_exec(db, "SAVEPOINT rh_pass"))
        goto out;
    /* stacks, threads, timeline and leak curve as the converter stores them */
    if (rh_agg_rows(a, ids, rh_pass_emit, &r))
        goto out;
    /* the per-column stack figures, read back from the aggregates' temp
     * file a column at a time; if it failed, the scope has no stored
     * timeline (the caller reads a->tl_ok) and the chart replays the rows */
    const struct rh_agg_point *pts;
    long n = 0;
    if (a->tl_ok && rh_agg_tl_rewind(a)) {
        rh_pass_tl_lost(a, "write");
    } else {
        while (a->tl_ok && (n = rh_agg_tl_next(a, &pts)) > 0) {
            /* the column's points by stack id, then packed */
            if (rh_grow(&sv, &capsv, (size_t)n * 3, sizeof *sv) ||
                rh_grow(&pk, &cappk, (size_t)n * 30, 1)) {
                fprintf(stderr, "rheaper: filter: out of memory\n");
                goto out;
            }
            for (long i = 0; i < n; i++) {
                sv[3 * i] = ids[pts[i].si];
                sv[3 * i + 1] = pts[i].at_max;
                sv[3 * i + 2] = pts[i].at_end;
            }
            qsort(sv, (size_t)n, 3 * sizeof *sv, rh_pts_cmp);
            size_t len = 0;
            for (long i = 0; i < n; i++) {
                len += rh_pts_put(pk + len, (uint64_t)sv[3 * i]);
                for (int k = 1; k < 3; k++)
                    len += rh_pts_put(pk + len, ((uint64_t)sv[3 * i + k] << 1) ^
                                                    (uint64_t)(sv[3 * i + k] >> 63));
            }
            sqlite3_bind_int64(tp, 1, pts[0].col);
            sqlite3_bind_blob(tp, 2, pk, (int)len, SQLITE_STATIC);
            int r = sqlite3_step(tp);
            sqlite3_reset(tp);
            if (r != SQLITE_DONE)
                goto out;
        }
        if (n < 0)
            rh_pass_tl_lost(a, "read back");
    }
    rc = 0;
out:
    sqlite3_exec(db, "RELEASE rh_pass", NULL, NULL, NULL);
    if (rc)
        fprintf(stderr, "rheaper: filter: SQLite error (%s)\n", sqlite3_errmsg(db));
    for (int i = 0; i < RH_AGG_T_N; i++)
        sqlite3_finalize(r.st[i]);
    sqlite3_finalize(r.sz);
    sqlite3_finalize(tp);
    free(sv);
    free(pk);
    return rc;
}

/* ---- the reader thread ----------------------------------------------------- */

/* One row as the pass needs it, decoded, with the per-row conditions met. */
struct rh_prow {
    int64_t ta, td, bt, size; /* td < 0: never freed */
    uint32_t th, dth;
    uint8_t tmp;
    uint8_t pool; /* addr < 0: a pool block, weight 1 on a sampled profile */
};

/* Batches of rows from the reader thread (SQLite) to the pass (the
 * aggregates), so both run at once on two cores. At most RH_PASS_NBATCH
 * batches wait: memory stays bounded. */
#define RH_PASS_BATCH 4096
#define RH_PASS_NBATCH 8

struct rh_pq {
    const struct rh_pass *p;
    sqlite3_stmt *st;          /* the scan; or, with ix, the lookup of one id (?1) */
    struct rh_pass_ix *ix;     /* NULL: scan st; else the ids of the selected stacks */
    pthread_mutex_t mu;
    pthread_cond_t filled, emptied;
    struct rh_prow *b[RH_PASS_NBATCH];
    size_t fill[RH_PASS_NBATCH];
    unsigned head, tail; /* batches head..tail-1 are full */
    int done, stop;      /* the reader finished; the pass wants it to stop */
    int rc;              /* the reader's last sqlite3_step() result */
};

/* Decodes the current row of q->st and checks the conditions that need
 * nothing but the row. Returns 1 when it passes, with *o filled. */
static int rh_pass_decode(const struct rh_pass *p, sqlite3_stmt *st, struct rh_prow *o)
{
    /* the stack first: on a stack filter most rows fail it, and SQLite
     * decodes only the columns asked for */
    int64_t bt = sqlite3_column_int64(st, 2);
    if (p->stacks && rh_map_get(p->stacks, (uint64_t)bt) == UINT32_MAX)
        return 0;
    int64_t ta = sqlite3_column_int64(st, 0);
    int freed = sqlite3_column_type(st, 1) != SQLITE_NULL;
    int64_t td = freed ? ta + sqlite3_column_int64(st, 1) : -1;
    int64_t size = sqlite3_column_int64(st, 3);
    int64_t th, dth = 0, tcol;
    if (p->layout) {
        int64_t v = sqlite3_column_int64(st, 4);
        th = (v >> 1) & RH_DB_THREAD_MASK;
        tcol = v & 1;
        if (freed)
            dth = (v >> RH_DB_DTH_SHIFT) ? (v >> RH_DB_DTH_SHIFT) : th;
    } else {
        th = sqlite3_column_int64(st, 4);
        dth = freed ? sqlite3_column_int64(st, 5) : 0;
        tcol = sqlite3_column_int64(st, 6);
    }
    if ((p->t_from >= 0 && ta < p->t_from) || (p->t_to >= 0 && ta > p->t_to))
        return 0;
    if ((p->min_size >= 0 && size < p->min_size) || (p->max_size >= 0 && size > p->max_size))
        return 0;
    if (p->thread_filter) {
        int k = 0;
        while (k < p->nthreads && p->threads[k] != th)
            k++;
        if (k == p->nthreads)
            return 0;
    }
    int tmp = p->temporary_ns >= 0 ? freed && td - ta < p->temporary_ns : tcol != 0;
    if ((p->lifetime == 1 && freed) || (p->lifetime == 2 && !tmp))
        return 0;
    if (p->lifetime == 3 && (!freed || (p->life_min >= 0 && td - ta < p->life_min) ||
                             (p->life_max >= 0 && td - ta > p->life_max)))
        return 0;
    *o = (struct rh_prow){ta,
                          td,
                          bt,
                          size,
                          (uint32_t)th,
                          (uint32_t)dth,
                          (uint8_t)tmp,
                          sqlite3_column_int64(st, p->layout ? 5 : 7) < 0};
    return 1;
}

/* ---- the selected stacks' ids from stack_rows ---------------------------------- */

/* One selected stack's ids: the chunk of stack_rows being read. */
struct rh_ixcur {
    int64_t bt;
    int64_t id;       /* the current id */
    int64_t after;    /* the next chunk is the first with first_id > after */
    uint32_t left;    /* ids of the chunk after the current one */
    uint32_t pos, len;
    uint8_t buf[512]; /* the chunk's varints (the converter writes ~256 bytes) */
};

/* The ids of the selected stacks in [lo, hi), merged in increasing order: a
 * min-heap of cursors, one per stack, each holding one chunk. Memory grows
 * with the selected stacks, not with their rows. */
struct rh_pass_ix {
    struct rh_ixcur *c;
    uint32_t *heap; /* cursor indices, a min-heap on c[].id */
    size_t n, nheap;
    int64_t lo, hi;
    sqlite3_stmt *chunk; /* ?1 bt, ?2 after: first_id, n, ids of the next chunk */
    int rc;              /* SQLITE_DONE, or the failing step's result */
};

/* Reads cursor c's next id into c->id. Returns 1 when there is one (below
 * ix->hi), 0 when the stack has no more, -1 on an SQLite error (ix->rc). */
static int rh_ix_next(struct rh_pass_ix *ix, struct rh_ixcur *c)
{
    for (;;) {
        if (c->left) {
            uint64_t d = 0;
            const uint8_t *q = c->buf + c->pos;
            if (rip_get_varint(&q, c->buf + c->len, &d) == 0)
                c->pos = (uint32_t)(q - c->buf);
            c->left--;
            if (!d) { /* a damaged chunk (cut, or a zero step): skip the rest of it */
                c->left = 0;
                continue;
            }
            c->id += (int64_t)d;
        } else {
            sqlite3_bind_int64(ix->chunk, 1, c->bt);
            sqlite3_bind_int64(ix->chunk, 2, c->after);
            int r = sqlite3_step(ix->chunk);
            if (r != SQLITE_ROW) {
                sqlite3_reset(ix->chunk);
                if (r == SQLITE_DONE)
                    return 0;
                ix->rc = r;
                return -1;
            }
            int len = sqlite3_column_bytes(ix->chunk, 2);
            const void *blob = sqlite3_column_blob(ix->chunk, 2);
            c->id = c->after = sqlite3_column_int64(ix->chunk, 0);
            int64_t n = sqlite3_column_int64(ix->chunk, 1);
            c->len = len > 0 && (size_t)len <= sizeof c->buf && blob ? (uint32_t)len : 0;
            if (c->len)
                memcpy(c->buf, blob, c->len);
            c->pos = 0;
            c->left = n > 1 && c->len ? (uint32_t)(n - 1) : 0;
            sqlite3_reset(ix->chunk);
        }
        if (c->id >= ix->hi)
            return 0;
        if (c->id >= ix->lo)
            return 1;
    }
}

static void rh_ix_sift(struct rh_pass_ix *ix, size_t i)
{
    for (;;) {
        size_t m = i, l = 2 * i + 1, r = l + 1;
        if (l < ix->nheap && ix->c[ix->heap[l]].id < ix->c[ix->heap[m]].id)
            m = l;
        if (r < ix->nheap && ix->c[ix->heap[r]].id < ix->c[ix->heap[m]].id)
            m = r;
        if (m == i)
            return;
        uint32_t t = ix->heap[i];
        ix->heap[i] = ix->heap[m];
        ix->heap[m] = t;
        i = m;
    }
}

/* Positions every cursor on its first id in [lo, hi) and builds the heap.
 * Returns 0, or -1 on an SQLite error (ix->rc). */
static int rh_ix_start(sqlite3 *db, struct rh_pass_ix *ix)
{
    sqlite3_stmt *before = NULL;
    ix->rc = SQLITE_DONE;
    if (sqlite3_prepare_v2(db,
                           "SELECT first_id, n, ids FROM stack_rows WHERE bt = ?1 AND first_id > ?2"
                           " ORDER BY first_id LIMIT 1",
                           -1, &ix->chunk, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "SELECT max(first_id) FROM stack_rows WHERE bt = ?1 AND first_id <= ?2",
                           -1, &before, NULL) != SQLITE_OK) {
        sqlite3_finalize(before);
        ix->rc = SQLITE_ERROR;
        return -1;
    }
    for (size_t i = 0; i < ix->n; i++) {
        struct rh_ixcur *c = &ix->c[i];
        /* the chunk holding lo starts at or before it */
        sqlite3_bind_int64(before, 1, c->bt);
        sqlite3_bind_int64(before, 2, ix->lo);
        c->after = -1;
        if (sqlite3_step(before) == SQLITE_ROW && sqlite3_column_type(before, 0) != SQLITE_NULL)
            c->after = sqlite3_column_int64(before, 0) - 1;
        sqlite3_reset(before);
        int r = rh_ix_next(ix, c);
        if (r < 0) {
            sqlite3_finalize(before);
            return -1;
        }
        if (r)
            ix->heap[ix->nheap++] = (uint32_t)i;
    }
    sqlite3_finalize(before);
    for (size_t i = ix->nheap / 2; i-- > 0;)
        rh_ix_sift(ix, i);
    return 0;
}

/* The next id of the merge into *id. Returns 1, 0 at the end, -1 on error. */
static int rh_ix_pop(struct rh_pass_ix *ix, int64_t *id)
{
    if (!ix->nheap)
        return 0;
    struct rh_ixcur *c = &ix->c[ix->heap[0]];
    *id = c->id;
    int r = rh_ix_next(ix, c);
    if (r < 0)
        return -1;
    if (!r)
        ix->heap[0] = ix->heap[--ix->nheap];
    rh_ix_sift(ix, 0);
    return 1;
}

/* The next row of the reader's source: the scan's next row, or the next
 * selected id's row (ids without a row, culled ones, are skipped). Returns
 * SQLITE_ROW with q->st on it, SQLITE_DONE, or an error. */
static int rh_pass_step(struct rh_pq *q)
{
    if (!q->ix)
        return sqlite3_step(q->st);
    for (;;) {
        int64_t id;
        sqlite3_reset(q->st);
        int r = rh_ix_pop(q->ix, &id);
        if (r <= 0)
            return r < 0 ? q->ix->rc : SQLITE_DONE;
        sqlite3_bind_int64(q->st, 1, id);
        r = sqlite3_step(q->st);
        if (r != SQLITE_DONE)
            return r;
    }
}

/* SQL function rh_pass_bt(bt): 1 when stack bt is in the pass's stack set
 * (the function's user data, a struct rh_map). */
static void rh_pass_bt_fn(sqlite3_context *cx, int n, sqlite3_value **v)
{
    (void)n;
    const struct rh_map *m = sqlite3_user_data(cx);
    sqlite3_result_int(cx, rh_map_get(m, (uint64_t)sqlite3_value_int64(v[0])) != UINT32_MAX);
}

/* The reader thread: steps the statement, fills batches, hands them over. */
static void *rh_pass_reader(void *arg)
{
    struct rh_pq *q = arg;
    size_t n = 0;
    int r, stop = 0;
    while (!stop && (r = rh_pass_step(q)) == SQLITE_ROW) {
        if (!rh_pass_decode(q->p, q->st, &q->b[q->tail % RH_PASS_NBATCH][n]))
            continue;
        if (++n < RH_PASS_BATCH)
            continue;
        pthread_mutex_lock(&q->mu);
        q->fill[q->tail % RH_PASS_NBATCH] = n;
        q->tail++;
        pthread_cond_signal(&q->filled);
        while (q->tail - q->head >= RH_PASS_NBATCH && !q->stop)
            pthread_cond_wait(&q->emptied, &q->mu);
        stop = q->stop;
        pthread_mutex_unlock(&q->mu);
        n = 0;
    }
    pthread_mutex_lock(&q->mu);
    if (n && !stop) {
        q->fill[q->tail % RH_PASS_NBATCH] = n;
        q->tail++;
    }
    q->rc = stop ? SQLITE_DONE : r;
    q->done = 1;
    pthread_cond_signal(&q->filled);
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* ---- the pass -------------------------------------------------------------- */

/* A sampled profile's parameters (meta sample_mode, sample_rate,
 * sample_bytes, sample_big_always) in a zeroed rh_rip for the
 * aggregates' weights: *out stays NULL on a full profile. Returns 0, or -1
 * when out of memory. */
static int rh_pass_sampling(sqlite3 *db, struct rh_rip **out)
{
    double rate;
    int64_t bytes;
    int mode = rh_sample_params(db, &rate, &bytes);
    *out = NULL;
    if (!mode)
        return 0;
    if (!(*out = calloc(1, sizeof **out)))
        return -1;
    (*out)->sample_mode = mode == RIP_SAMPLE_BYTES_BIG ? RIP_SAMPLE_BYTES : (uint32_t)mode;
    (*out)->sample_big = mode == RIP_SAMPLE_BYTES_BIG;
    (*out)->sample_rate = rate;
    (*out)->sample_bytes = (uint64_t)bytes;
    return 0;
}

/* How many rows a scan reads for each row one lookup by id reads in the same
 * time, measured on the 10 M scale profile (docs/design.md);
 * RHEAPER_PASS_INDEX=0 or 1 forces the scan or the index. */
#define RH_PASS_LOOKUP_COST 30

/* Decides whether the selected stacks (ok[i] for stack ids[i]) are read
 * through stack_rows: when the profile has it and their ids in the range,
 * times RH_PASS_LOOKUP_COST, are fewer than the range's ids. Then fills ix
 * with one cursor per selected stack (ix->c non-NULL). Returns 0, or -1 when
 * out of memory. */
static int rh_pass_use_index(sqlite3 *db, const struct rh_pass *p, const int64_t *ids,
                             const uint8_t *ok, size_t nids, struct rh_pass_ix *ix)
{
    const char *force = getenv("RHEAPER_PASS_INDEX");
    if (force && !strcmp(force, "0"))
        return 0;
    sqlite3_stmt *st = NULL;
    int64_t maxid = -1, est = 0, nsel = 0;
    if (sqlite3_prepare_v2(db, "SELECT (SELECT max(id) FROM alloc_rows),"
                               " (SELECT 1 FROM sqlite_master WHERE name = 'stack_rows')",
                           -1, &st, NULL) != SQLITE_OK) {
        /* an older profile (no alloc_rows or no stack_rows): scan */
        sqlite3_finalize(st);
        return 0;
    }
    int have = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 1) == 1;
    maxid = have ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    st = NULL;
    if (!have)
        return 0;
    int64_t lo = p->id_lo, hi = p->id_hi < maxid + 1 ? p->id_hi : maxid + 1;
    if (hi <= lo)
        return 0;
    /* the selected stacks' ids in [lo, hi), by their chunks' first ids */
    if (sqlite3_prepare_v2(db,
                           "SELECT sum(n) FROM stack_rows WHERE bt = ?1 AND first_id >= ?2"
                           " AND first_id < ?3",
                           -1, &st, NULL) != SQLITE_OK)
        return 0;
    for (size_t i = 0; i < nids; i++) {
        if (!ok[i])
            continue;
        nsel++;
        sqlite3_bind_int64(st, 1, ids[i]);
        sqlite3_bind_int64(st, 2, lo);
        sqlite3_bind_int64(st, 3, hi);
        if (sqlite3_step(st) == SQLITE_ROW)
            est += sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        if (!(force && !strcmp(force, "1")) && est * RH_PASS_LOOKUP_COST >= hi - lo)
            break;
    }
    sqlite3_finalize(st);
    if (!(force && !strcmp(force, "1")) && est * RH_PASS_LOOKUP_COST >= hi - lo)
        return 0;
    ix->c = calloc((size_t)nsel + 1, sizeof *ix->c);
    ix->heap = calloc((size_t)nsel + 1, sizeof *ix->heap);
    if (!ix->c || !ix->heap)
        return -1;
    for (size_t i = 0; i < nids; i++)
        if (ok[i])
            ix->c[ix->n++].bt = ids[i];
    ix->lo = lo;
    ix->hi = hi;
    return 0;
}

/* The server's heap over time (rh_timeline_compute: RH_SCOPE_TL_COLS + 1
 * columns of [0, span], each with the highest live bytes reached after any
 * event in it, and the live bytes and blocks after its last), kept beside
 * the aggregates while the pass replays the events in time order, so a
 * filtered chart reads no row again. Blocks in 1/4096 units as the SQL
 * path counts them (RH_W_N). */
struct rh_pass_ctl {
    int64_t span, live, nlive;
    int k; /* the column of the last event: times only grow */
    int64_t max[RH_SCOPE_TL_COLS + 1], end[RH_SCOPE_TL_COLS + 1], cnt[RH_SCOPE_TL_COLS + 1];
    uint8_t act[RH_SCOPE_TL_COLS + 1];
};

/* One event at t of a block of size bytes at addr (alloc: 1, free: 0). */
static void rh_pass_ctl_event(struct rh_pass_ctl *c, const struct rh_agg *a, int64_t t,
                              uint64_t size, uint64_t addr, int alloc)
{
    const int cols = RH_SCOPE_TL_COLS;
    int64_t d = (int64_t)size, w = RH_AGG_BSCALE;
    if (a->bscale != 1) {
        d = rh_agg_est_bytes(a, size, addr);
        w = rh_agg_est_blocks(a, size, addr) * (RH_AGG_BSCALE / a->bscale);
    }
    /* column k = ceil(t * cols / span) within 0..cols: t * cols <= k * span
     * and, for k > 0, t * cols > (k - 1) * span; found by stepping on from
     * the last event's column, or by division if time went back */
    int k = c->k;
    __int128 tc = (__int128)t * cols;
    if (k > 0 && tc <= (__int128)(k - 1) * c->span) {
        __int128 c128 = (tc + c->span - 1) / c->span;
        k = c128 < 0 ? 0 : c128 > cols ? cols : (int)c128;
    } else {
        while (k < cols && tc > (__int128)k * c->span)
            k++;
    }
    c->k = k;
    c->live += alloc ? d : -d;
    c->nlive += alloc ? w : -w;
    if (!c->act[k] || c->live > c->max[k])
        c->max[k] = c->live;
    c->act[k] = 1;
    c->end[k] = c->live;
    c->cnt[k] = c->nlive >= 0 ? (c->nlive + 2048) / 4096 : -((-c->nlive + 2048) / 4096);
}

/* TEMP TABLE sctl(col, span, max_bytes, end_bytes, end_count, active) from c. */
static int rh_pass_ctl_store(sqlite3 *db, const struct rh_pass_ctl *c)
{
    sqlite3_stmt *st = NULL;
    if (rh_sql_exec(db, "CREATE TEMP TABLE sctl(col INTEGER PRIMARY KEY, span, max_bytes,"
                        " end_bytes, end_count, active)") ||
        sqlite3_prepare_v2(db, "INSERT INTO temp.sctl VALUES(?,?,?,?,?,?)", -1, &st, NULL))
        return rh_sql_fail(db, "filter");
    int rc = 0;
    for (int k = 0; k <= RH_SCOPE_TL_COLS && !rc; k++) {
        int64_t v[6] = {k, c->span, c->max[k], c->end[k], c->cnt[k], c->act[k]};
        rc = rh_pass_ins(st, v, 6) ? rh_sql_fail(db, "filter") : 0;
    }
    sqlite3_finalize(st);
    return rc;
}

int rh_pass_tables(sqlite3 *db)
{
    /* stls unpacks stlsb with rh_pts (above); registering again replaces it */
    if (sqlite3_create_module(db, "rh_pts", &rh_pts_module, NULL) != SQLITE_OK)
        return rh_sql_fail(db, "filter");
    if (rh_temp_drop(db, "shist") || rh_temp_drop(db, "sthr") || rh_temp_drop(db, "sctl") ||
        rh_temp_drop(db, "stls") || rh_temp_drop(db, "stlsb") ||
        rh_sql_exec(db, "DROP TABLE IF EXISTS temp.sstat; DROP TABLE IF EXISTS temp.tstat;"
                         "DROP TABLE IF EXISTS temp.stl;"
                         "DROP TABLE IF EXISTS temp.slc; DROP TABLE IF EXISTS temp.ssize;"
                         /* the columns of stack_stats, thread_stats, timeline,
                          * timeline_stacks and leak_curve (rh_db.c) */
                         "CREATE TEMP TABLE sstat(bt INTEGER PRIMARY KEY, count, bytes,"
                         " freed_blocks, freed_bytes, leaked_blocks, leaked_bytes, peak_blocks,"
                         " peak_bytes, temporary, first_alloc, last_alloc);"
                         "CREATE TEMP TABLE tstat(thread INTEGER PRIMARY KEY, alloc_blocks,"
                         " alloc_bytes, freed_blocks, freed_bytes, freed_by_others_blocks,"
                         " freed_by_others_bytes, live_blocks, live_bytes);"
                         "CREATE TEMP TABLE stl(col INTEGER PRIMARY KEY, t, max_bytes, max_time,"
                         " end_bytes, active);"
                         "CREATE TEMP TABLE stlsb(col INTEGER PRIMARY KEY, pts BLOB);"
                         "CREATE TEMP VIEW stls AS SELECT b.col AS col, p.bt AS bt,"
                         " p.at_max AS at_max, p.at_end AS at_end"
                         " FROM temp.stlsb b, rh_pts(b.pts) p;"
                         "CREATE TEMP TABLE slc(bt, bucket, blocks, bytes, first, last);"
                         "CREATE TEMP TABLE ssize(bt INTEGER PRIMARY KEY, min_size, max_size);"
                         /* stack_hist's and stack_threads' columns */
                         "CREATE TEMP TABLE shist(bt, class, blocks, bytes,"
                         " PRIMARY KEY(bt, class)) WITHOUT ROWID;"
                         "CREATE TEMP TABLE sthr(bt, thread, blocks, bytes, leaked_bytes,"
                         " PRIMARY KEY(bt, thread)) WITHOUT ROWID;"))
        return -1;
    return 0;
}

int rh_pass_run(sqlite3 *db, const struct rh_pass *p, struct rh_pass_result *res)
{
    memset(res, 0, sizeof *res);
    if (rh_pass_tables(db))
        return -1;
    /* Every stack gets a dense index: the aggregates are arrays. */
    struct rh_map idx = {0};
    int64_t *ids = NULL;
    uint8_t *ok = NULL; /* per index: the stack passes the stack filters */
    int64_t *mm = NULL; /* per index: min and max size of its rows read */
    size_t nids = 0, capids = 0, capok = 0, capmm = 0, nmm = 0, ndirect = 0;
    uint32_t *direct = NULL; /* stack id -> index for ids below ndirect */
    struct rh_agg *a = NULL;
    struct rh_rip *samp = NULL; /* the sampling parameters of a sampled profile */
    struct rh_pass_ctl *ctl = NULL; /* the server's chart (sctl), or NULL */
    struct rh_pheap h = {0};
    sqlite3_stmt *st = NULL;
    struct rh_pq q = {0};
    struct rh_pass_ix ix = {0};
    int in_txn = 0; /* 1: this pass began a read transaction */
    pthread_t reader;
    int reading = 0; /* the reader thread runs */
    int rc = -1;
    if (sqlite3_prepare_v2(db, "SELECT id FROM stacks ORDER BY id", -1, &st, NULL) != SQLITE_OK) {
        rh_sql_fail(db, "filter");
        goto out;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (rh_grow(&ids, &capids, nids + 1, sizeof *ids) ||
            rh_grow(&ok, &capok, nids + 1, 1) || rh_map_put(&idx, (uint64_t)id, (uint32_t)nids))
            goto oom;
        ok[nids] = !p->stacks || rh_map_get(p->stacks, (uint64_t)id) != UINT32_MAX;
        ids[nids++] = id;
    }
    sqlite3_finalize(st);
    st = NULL;
    /* stack ids are small numbers in practice: an array beside the map */
    int64_t maxid = 0;
    for (size_t i = 0; i < nids; i++)
        maxid = ids[i] > maxid ? ids[i] : maxid;
    if (maxid < (int64_t)(4 * nids + 1024)) {
        ndirect = (size_t)maxid + 1;
        direct = malloc(ndirect * sizeof *direct);
        if (!direct)
            goto oom;
        for (size_t i = 0; i < ndirect; i++)
            direct[i] = rh_map_get(&idx, i);
    }
    /* a sampled profile: the aggregates weigh each row as the
     * converter did, from the sampling parameters in meta */
    if (rh_pass_sampling(db, &samp))
        goto oom;
    a = rh_agg_new(samp, p->span);
    /* the server's chart, when the rows come in time order (ids follow
     * time: allocations by id, frees from the heap, every time distinct) */
    if (a && p->ordered && p->t_from < 0 && p->t_to < 0) {
        ctl = calloc(1, sizeof *ctl);
        if (!ctl)
            goto oom;
        ctl->span = p->span > 0 ? p->span : 1;
    }
    if (!a)
        goto oom;
    /* the timeline's per-column stack figures go to a temp file; in $TMPDIR,
     * as the database's directory may not be writable */
    if (a->tl_ok && rh_agg_tl_open(a, NULL))
        rh_pass_tl_lost(a, "make");
    /* The rows of the id range in allocation order: by id when ids follow
     * time, else sorted by SQLite (a damaged profile). A profile with the
     * compact layout (meta row_time_step) is read from alloc_rows and
     * decoded here, as the view allocations would (rh_db.c). */
    /* Few rows of a selected few stacks: their ids from stack_rows, each
     * row read by its id, instead of a scan of the range. */
    if (p->ordered && p->stacks && rh_pass_use_index(db, p, ids, ok, nids, &ix))
        goto oom;
    const char *sql =
        ix.c ? (p->layout ? "SELECT t + id * ?3, life, bt, size, th, addr FROM alloc_rows"
                            " WHERE id = ?1"
                          : "SELECT alloc_after, dealloc_after - alloc_after, bt, size,"
                            " alloc_thread, dealloc_thread, temporary, addr FROM allocations"
                            " WHERE id = ?1")
        : p->layout ? "SELECT t + id * ?3, life, bt, size, th, addr FROM alloc_rows"
                    " WHERE id >= ?1 AND id < ?2%s ORDER BY id"
        : p->ordered ? "SELECT alloc_after, dealloc_after - alloc_after, bt, size, alloc_thread,"
                       " dealloc_thread, temporary, addr FROM allocations"
                       " WHERE id >= ?1 AND id < ?2%s ORDER BY id"
                     : "SELECT alloc_after, dealloc_after - alloc_after, bt, size, alloc_thread,"
                       " dealloc_thread, temporary, addr FROM allocations"
                       " WHERE id >= ?1 AND id < ?2%s ORDER BY alloc_after, id";
    /* A scan under a stack filter tests each row's stack inside SQLite
     * (rh_pass_bt): a row that fails costs one column, not six. */
    char scan[512];
    if (!ix.c) {
        int bt_fn = p->stacks && sqlite3_create_function(db, "rh_pass_bt", 1, SQLITE_UTF8,
                                                         (void *)p->stacks, rh_pass_bt_fn, NULL,
                                                         NULL) == SQLITE_OK;
        snprintf(scan, sizeof scan, sql, bt_fn ? " AND rh_pass_bt(bt)" : "");
        sql = scan;
    }
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        rh_sql_fail(db, "filter");
        goto out;
    }
    if (!ix.c) {
        sqlite3_bind_int64(st, 1, p->id_lo);
        sqlite3_bind_int64(st, 2, p->id_hi);
    } else if (rh_ix_start(db, &ix)) {
        rh_sql_fail(db, "filter");
        goto out;
    }
    res->indexed = ix.c != NULL;
    if (p->layout)
        sqlite3_bind_int64(st, 3, p->time_step);
    int64_t last_t = 0;
    for (int k = 0; k < RH_PASS_NBATCH; k++)
        if (!(q.b[k] = malloc(RH_PASS_BATCH * sizeof *q.b[k])))
            goto oom;
    q.p = p;
    q.st = st;
    q.ix = ix.c ? &ix : NULL;
    /* One read transaction for all the lookups: without it every statement
     * takes and drops SQLite's file lock (two fcntl calls and an fstat per
     * row read by id). */
    if (sqlite3_get_autocommit(db)) {
        if (rh_sql_exec(db, "BEGIN"))
            goto out;
        in_txn = 1;
    }
    pthread_mutex_init(&q.mu, NULL);
    pthread_cond_init(&q.filled, NULL);
    pthread_cond_init(&q.emptied, NULL);
    if (pthread_create(&reader, NULL, rh_pass_reader, &q) != 0) {
        fprintf(stderr, "rheaper: filter: cannot start a thread\n");
        goto out;
    }
    reading = 1;
    for (;;) {
        pthread_mutex_lock(&q.mu);
        while (q.head == q.tail && !q.done)
            pthread_cond_wait(&q.filled, &q.mu);
        if (q.head == q.tail) {
            pthread_mutex_unlock(&q.mu);
            break;
        }
        const struct rh_prow *b = q.b[q.head % RH_PASS_NBATCH];
        size_t n = q.fill[q.head % RH_PASS_NBATCH];
        pthread_mutex_unlock(&q.mu);
        for (size_t i = 0; i < n; i++) {
            const struct rh_prow *w = &b[i];
            int64_t bt = w->bt;
            uint32_t si = bt >= 0 && bt < (int64_t)ndirect ? direct[bt]
                                                            : rh_map_get(&idx, (uint64_t)bt);
            if (si == UINT32_MAX) {
                /* a row whose stack has no stacks row: an index of its own */
                if (rh_grow(&ids, &capids, nids + 1, sizeof *ids) ||
                    rh_grow(&ok, &capok, nids + 1, 1) ||
                    rh_map_put(&idx, (uint64_t)bt, (uint32_t)nids))
                    goto oom;
                si = (uint32_t)nids;
                ok[nids] = !p->stacks || rh_map_get(p->stacks, (uint64_t)bt) != UINT32_MAX;
                ids[nids++] = bt;
            }
            if (!ok[si])
                continue;
            if (2 * nids > nmm) { /* new stacks: sizes unset (-1) */
                if (rh_grow(&mm, &capmm, 2 * nids, sizeof *mm))
                    goto oom;
                for (; nmm < 2 * nids; nmm++)
                    mm[nmm] = -1;
            }
            if (mm[2 * si] < 0 || w->size < mm[2 * si])
                mm[2 * si] = w->size;
            if (w->size > mm[2 * si + 1])
                mm[2 * si + 1] = w->size;
            /* frees due by now come first (frees first at equal times) */
            while (h.n && h.v[0].t <= w->ta) {
                if (rh_agg_event(a, h.v[0].si, h.v[0].t, (uint64_t)h.v[0].size,
                                 h.v[0].pool ? RIP_POOL_TAG(1) : 0, 0))
                    goto oom;
                if (ctl)
                    rh_pass_ctl_event(ctl, a, h.v[0].t, (uint64_t)h.v[0].size,
                                      h.v[0].pool ? RIP_POOL_TAG(1) : 0, 0);
                rh_pheap_pop(&h);
            }
            if (rh_agg_event(a, si, w->ta, (uint64_t)w->size, w->pool ? RIP_POOL_TAG(1) : 0, 1))
                goto oom;
            if (ctl)
                rh_pass_ctl_event(ctl, a, w->ta, (uint64_t)w->size, w->pool ? RIP_POOL_TAG(1) : 0,
                                  1);
            struct rh_row row = {.alloc_ns = w->ta,
                                 .dealloc_ns = w->td,
                                 .stack_index = si,
                                 .size = (uint64_t)w->size,
                                 .addr = w->pool ? RIP_POOL_TAG(1) : 0,
                                 .alloc_thread = w->th,
                                 .dealloc_thread = w->dth,
                                 .temporary = w->tmp};
            if (rh_agg_row(a, &row))
                goto oom;
            if (w->td >= 0 && rh_pheap_push(&h, (struct rh_pfree){w->td, w->size, si, w->pool}))
                goto oom;
            if (w->ta > last_t)
                last_t = w->ta;
            if (w->td > last_t)
                last_t = w->td;
            res->rows++;
        }
        pthread_mutex_lock(&q.mu);
        q.head++;
        pthread_cond_signal(&q.emptied);
        pthread_mutex_unlock(&q.mu);
    }
    pthread_join(reader, NULL);
    reading = 0;
    if (q.rc != SQLITE_DONE || (ix.c && ix.rc != SQLITE_DONE)) {
        rh_sql_fail(db, "filter");
        goto out;
    }
    while (h.n) {
        if (rh_agg_event(a, h.v[0].si, h.v[0].t, (uint64_t)h.v[0].size,
                         h.v[0].pool ? RIP_POOL_TAG(1) : 0, 0))
            goto oom;
        if (ctl)
            rh_pass_ctl_event(ctl, a, h.v[0].t, (uint64_t)h.v[0].size,
                              h.v[0].pool ? RIP_POOL_TAG(1) : 0, 0);
        rh_pheap_pop(&h);
    }
    rh_agg_end(a, p->span);
    if (a->oom)
        goto oom;
    res->peak_bytes = a->peak;
    res->peak_blocks = rh_agg_blocks(a, a->peak_blocks);
    res->peak_time = a->peak_t;
    res->last_event = last_t;
    if (2 * nids > nmm) { /* every stack gets a pair, even without rows */
        if (rh_grow(&mm, &capmm, 2 * nids, sizeof *mm))
            goto oom;
        for (; nmm < 2 * nids; nmm++)
            mm[nmm] = -1;
    }
    rc = rh_pass_store(db, a, ids, mm);
    res->timeline = a->tl_ok; /* after the store: its temp file may fail */
    if (!rc && ctl)
        rc = rh_pass_ctl_store(db, ctl);
    goto out;
oom:
    fprintf(stderr, "rheaper: filter: out of memory\n");
out:
    if (reading) {
        pthread_mutex_lock(&q.mu);
        q.stop = 1;
        pthread_cond_signal(&q.emptied);
        pthread_mutex_unlock(&q.mu);
        pthread_join(reader, NULL);
    }
    for (int k = 0; k < RH_PASS_NBATCH; k++)
        free(q.b[k]);
    sqlite3_finalize(st);
    sqlite3_finalize(ix.chunk);
    /* rh_pass_bt's user data (the caller's stack set) ends with the pass */
    sqlite3_create_function(db, "rh_pass_bt", 1, SQLITE_UTF8, NULL, NULL, NULL, NULL);
    if (in_txn == 1 && !sqlite3_get_autocommit(db))
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    free(ix.c);
    free(ix.heap);
    rh_agg_free(a);
    free(samp);
    rh_map_free(&idx);
    free(ids);
    free(ok);
    free(mm);
    free(direct);
    free(h.v);
    free(ctl);
    return rc;
}
