/* rh_db_series.c: each stack's series over time (table stack_series), so that
 * a call site's line, the heap by call site and the allocations charts cost a
 * lookup of the site's stacks instead of a scan.
 *
 * The web UI draws three charts over time that split the scope by call site:
 * the heap (timeline_stacks, one row per stack and column where the stack's
 * bytes changed), the blocks allocated and the temporary blocks allocated
 * (heaptrack_gui's two charts, until now counted from every row). Both read
 * every stack of the profile even to draw one site. stack_series keeps one
 * row per stack with two blobs:
 *   heap    the stack's timeline_stacks points, in column order (copied from
 *           that table when the conversion ends)
 *   allocs  per column of the allocations charts (RH_AGG_EVENT_COLUMNS over
 *           the run, the column of an allocation at t being t * C / span
 *           rounded down, the last one taking t >= span), the stack's rows
 *           allocated in it and those of them that are temporary
 * counted here from every row the converter stores (rh_db_row). The blob
 * layout is docs/sql.md's "stack_series"; the query library decodes it
 * (rh_series_next). allocs is written only when it counts exactly the stored
 * rows with the span readers use: a full (not sampled) profile, nothing
 * culled, the run's span known before the merge and equal to its duration
 * (meta series_alloc_span_ns holds that span, 0 when allocs is absent).
 *
 * Memory grows with stacks, never with events: a stack keeps up to
 * RH_SER_SPARSE columns in place, then one counter pair per column.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rh_db.h"
#include "rh_schema.h"
#include "rh_util.h"

#define RH_SER_SPARSE 4
#define RH_SER_COLS RH_AGG_EVENT_COLUMNS

struct rh_ser_cell {
    uint32_t col, n, tmp;
};

struct rh_ser_stack {
    uint64_t bt;
    uint32_t nsp;                             /* cells used in sp (dense NULL) */
    struct rh_ser_cell sp[RH_SER_SPARSE];     /* the first columns seen */
    uint32_t *dense;                          /* n, tmp per column; NULL: sparse */
    int seen;
};

struct rh_series {
    int64_t span;
    struct rh_ser_stack *st; /* by stack index */
    size_t nst, capst;
    int bad; /* a counter would overflow or memory ran out: no allocs */
};

struct rh_series *rh_series_new(int64_t span_ns)
{
    struct rh_series *s = calloc(1, sizeof *s);
    if (s)
        s->span = span_ns;
    return s;
}

void rh_series_free(struct rh_series *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nst; i++)
        free(s->st[i].dense);
    free(s->st);
    free(s);
}

/* The allocations charts' column of time t (rh_events_sites_json's rule). */
static uint32_t rh_ser_col(const struct rh_series *s, int64_t t)
{
    if (t <= 0 || s->span <= 0)
        return 0;
    __int128 c = (__int128)t * RH_SER_COLS / s->span;
    return c >= RH_SER_COLS ? RH_SER_COLS - 1 : (uint32_t)c;
}

/* Adds one to *v; marks s bad instead of wrapping. */
static void rh_ser_inc(struct rh_series *s, uint32_t *v)
{
    if (*v == UINT32_MAX)
        s->bad = 1;
    else
        (*v)++;
}

int rh_series_row(struct rh_series *s, const struct rh_row *row)
{
    if (!s || s->bad)
        return 0;
    size_t si = row->stack_index;
    if (si >= s->nst) {
        if (rh_grow(&s->st, &s->capst, si + 1, sizeof *s->st)) {
            s->bad = 1; /* the charts read rows instead; the conversion goes on */
            return 0;
        }
        memset(s->st + s->nst, 0, (si + 1 - s->nst) * sizeof *s->st);
        s->nst = si + 1;
    }
    struct rh_ser_stack *k = &s->st[si];
    k->bt = row->stack;
    k->seen = 1;
    uint32_t c = rh_ser_col(s, row->alloc_ns);
    if (!k->dense) {
        uint32_t i = 0;
        while (i < k->nsp && k->sp[i].col != c)
            i++;
        if (i == k->nsp && i < RH_SER_SPARSE)
            k->sp[k->nsp++] = (struct rh_ser_cell){c, 0, 0};
        if (i < k->nsp) {
            rh_ser_inc(s, &k->sp[i].n);
            if (row->temporary)
                rh_ser_inc(s, &k->sp[i].tmp);
            return 0;
        }
        /* a fifth column: one counter pair per column from now on */
        k->dense = calloc(2 * RH_SER_COLS, sizeof *k->dense);
        if (!k->dense) {
            s->bad = 1;
            return 0;
        }
        for (uint32_t j = 0; j < k->nsp; j++) {
            k->dense[2 * k->sp[j].col] = k->sp[j].n;
            k->dense[2 * k->sp[j].col + 1] = k->sp[j].tmp;
        }
    }
    rh_ser_inc(s, &k->dense[2 * c]);
    if (row->temporary)
        rh_ser_inc(s, &k->dense[2 * c + 1]);
    return 0;
}

/* ---- the blobs ------------------------------------------------------------ */

struct rh_ser_buf {
    uint8_t *p;
    size_t n, cap;
    int oom;
};

static void rh_ser_put(struct rh_ser_buf *b, uint64_t v)
{
    if (b->n + 10 > b->cap && rh_grow(&b->p, &b->cap, b->n + 10, 1)) {
        b->oom = 1;
        return;
    }
    while (v >= 0x80) {
        b->p[b->n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->p[b->n++] = (uint8_t)v;
}

/* Signed values zigzag-coded (docs/sql.md). */
static void rh_ser_puts(struct rh_ser_buf *b, int64_t v)
{
    rh_ser_put(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static int rh_ser_bt_cmp(const void *x, const void *y)
{
    const struct rh_ser_stack *a = *(const struct rh_ser_stack *const *)x,
                              *b = *(const struct rh_ser_stack *const *)y;
    return a->bt < b->bt ? -1 : a->bt > b->bt;
}

/* The allocs blobs, one row per stack that allocated. 0 or -1 (err set). */
static int rh_ser_allocs(struct rh_series *s, sqlite3 *db, char *err, size_t errlen)
{
    struct rh_ser_stack **ord = malloc((s->nst ? s->nst : 1) * sizeof *ord);
    sqlite3_stmt *ins = NULL;
    struct rh_ser_buf b = {0};
    size_t n = 0;
    int rc = -1;
    if (!ord) {
        snprintf(err, errlen, "stack_series: out of memory");
        return -1;
    }
    for (size_t i = 0; i < s->nst; i++)
        if (s->st[i].seen)
            ord[n++] = &s->st[i];
    qsort(ord, n, sizeof *ord, rh_ser_bt_cmp);
    if (sqlite3_prepare_v2(db, "INSERT INTO stack_series(bt, allocs) VALUES(?1, ?2)", -1, &ins,
                           NULL) != SQLITE_OK)
        goto sqlfail;
    for (size_t i = 0; i < n; i++) {
        const struct rh_ser_stack *k = ord[i];
        uint32_t prev = 0;
        b.n = 0;
        if (k->dense) {
            for (uint32_t c = 0; c < RH_SER_COLS; c++)
                if (k->dense[2 * c]) {
                    rh_ser_put(&b, c - prev);
                    rh_ser_put(&b, k->dense[2 * c]);
                    rh_ser_put(&b, k->dense[2 * c + 1]);
                    prev = c;
                }
        } else {
            struct rh_ser_cell cells[RH_SER_SPARSE];
            memcpy(cells, k->sp, k->nsp * sizeof *cells);
            for (uint32_t x = 1; x < k->nsp; x++) /* at most four: insertion sort */
                for (uint32_t y = x; y > 0 && cells[y - 1].col > cells[y].col; y--) {
                    struct rh_ser_cell t = cells[y];
                    cells[y] = cells[y - 1];
                    cells[y - 1] = t;
                }
            for (uint32_t j = 0; j < k->nsp; j++) {
                rh_ser_put(&b, cells[j].col - prev);
                rh_ser_put(&b, cells[j].n);
                rh_ser_put(&b, cells[j].tmp);
                prev = cells[j].col;
            }
        }
        if (b.oom) {
            snprintf(err, errlen, "stack_series: out of memory");
            goto out;
        }
        sqlite3_bind_int64(ins, 1, (int64_t)k->bt);
        sqlite3_bind_blob(ins, 2, b.p ? (const void *)b.p : "", (int)b.n, SQLITE_STATIC);
        if (sqlite3_step(ins) != SQLITE_DONE)
            goto sqlfail;
        sqlite3_reset(ins);
    }
    rc = 0;
    goto out;
sqlfail:
    snprintf(err, errlen, "stack_series: SQLite error (%s)", sqlite3_errmsg(db));
out:
    sqlite3_finalize(ins);
    free(ord);
    free(b.p);
    return rc;
}

/* The heap blobs, from timeline_stacks (already written), read in its own
 * order (column, then stack: no sort) into one growing buffer per stack.
 * 0 or -1 (err set). */
static int rh_ser_heap(sqlite3 *db, char *err, size_t errlen)
{
    sqlite3_stmt *q = NULL, *up = NULL;
    struct rh_map idx = {0}; /* stack id -> index into bufs */
    struct rh_ser_buf *bufs = NULL;
    int64_t *bts = NULL, *prev = NULL;
    size_t nb = 0, capb = 0, capt = 0, capp = 0;
    int rc = -1, r;
    if (sqlite3_prepare_v2(db, "SELECT bt, col, at_max, at_end FROM timeline_stacks", -1, &q,
                           NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT INTO stack_series(bt, heap) VALUES(?1, ?2)"
                           " ON CONFLICT(bt) DO UPDATE SET heap = excluded.heap",
                           -1, &up, NULL) != SQLITE_OK)
        goto sqlfail;
    while ((r = sqlite3_step(q)) == SQLITE_ROW) {
        int64_t bt = sqlite3_column_int64(q, 0), col = sqlite3_column_int64(q, 1);
        uint32_t i = rh_map_get(&idx, (uint64_t)bt);
        if (i == UINT32_MAX) {
            if (rh_grow(&bufs, &capb, nb + 1, sizeof *bufs) ||
                rh_grow(&bts, &capt, nb + 1, sizeof *bts) ||
                rh_grow(&prev, &capp, nb + 1, sizeof *prev) ||
                rh_map_put(&idx, (uint64_t)bt, (uint32_t)nb))
                goto oom;
            i = (uint32_t)nb++;
            memset(&bufs[i], 0, sizeof bufs[i]);
            bts[i] = bt;
            prev[i] = 0;
        }
        struct rh_ser_buf *b = &bufs[i];
        rh_ser_puts(b, col - prev[i]);
        rh_ser_puts(b, sqlite3_column_int64(q, 2));
        rh_ser_puts(b, sqlite3_column_int64(q, 3));
        prev[i] = col;
        if (b->oom)
            goto oom;
    }
    if (r != SQLITE_DONE)
        goto sqlfail;
    for (size_t i = 0; i < nb; i++) {
        sqlite3_bind_int64(up, 1, bts[i]);
        sqlite3_bind_blob(up, 2, bufs[i].p, (int)bufs[i].n, SQLITE_STATIC);
        if (sqlite3_step(up) != SQLITE_DONE)
            goto sqlfail;
        sqlite3_reset(up);
    }
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "stack_series: out of memory");
    goto out;
sqlfail:
    snprintf(err, errlen, "stack_series: SQLite error (%s)", sqlite3_errmsg(db));
out:
    sqlite3_finalize(q);
    sqlite3_finalize(up);
    for (size_t i = 0; i < nb; i++)
        free(bufs[i].p);
    free(bufs);
    free(bts);
    free(prev);
    rh_map_free(&idx);
    return rc;
}

int rh_series_write(struct rh_series *s, sqlite3 *db, int allocs_ok, int heap_ok, char *err,
                    size_t errlen)
{
    allocs_ok = allocs_ok && s && !s->bad && s->span > 0;
    if (allocs_ok && rh_ser_allocs(s, db, err, errlen))
        return -1;
    if (heap_ok && rh_ser_heap(db, err, errlen))
        return -1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "INSERT OR REPLACE INTO meta(key, value) VALUES('series_alloc_span_ns',"
                           " ?1), ('series_alloc_columns', ?2), ('series_heap', ?3)",
                           -1, &st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "stack_series: SQLite error (%s)", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_int64(st, 1, allocs_ok ? s->span : 0);
    sqlite3_bind_int(st, 2, RH_SER_COLS);
    sqlite3_bind_int(st, 3, heap_ok);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    if (rc)
        snprintf(err, errlen, "stack_series: SQLite error (%s)", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return rc;
}
