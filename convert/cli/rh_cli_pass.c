/* rh_cli_pass.c: the figures of a filtered scope in one ordered pass in C.
 *
 * rh_filter_apply() (rh_cli_filter.c) resolves the filters first: stack and
 * kind filters over the distinct stacks (a flag per stack), the thread filter
 * over the threads, time filters into a range of allocation ids (ids follow
 * allocation time). This file then reads the rows of that id range once, in
 * id order, straight from SQLite without copying them anywhere, checks the
 * remaining per-row conditions in C and replays the allocations and their
 * frees (a heap of pending frees ordered by time, frees first at equal times)
 * into the converter's own aggregate code (rh_aggregate.c). So a filtered
 * scope's per-stack and per-thread figures, peak, heap timeline and leak
 * curve are computed by the same code, with the same rules, as the
 * unfiltered ones the converter stored. Memory grows with distinct stacks and
 * with the selected blocks live at one time (plus the selected never-freed
 * ones), never with the rows read.
 *
 * The results go into the TEMP tables of the scope (rh_cli.h): sstat, tstat,
 * stl, stls, slc, and the caller's scope row.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rh_cli.h"
#include "rh_convert.h"

/* ---- pending frees: a min-heap on time ------------------------------------ */

struct rh_pfree {
    int64_t t, size;
    uint32_t si;
    uint8_t pool; /* a pool block (never sampled: weight 1, issue 9) */
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

static int rh_pass_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    fprintf(stderr, "rheaper: SQL error: %s\n", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return -1;
}

/* Binds n int64 values from ?1 on, steps and resets. Returns 0 or -1. */
static int rh_pass_ins(sqlite3_stmt *st, const int64_t *v, int n)
{
    for (int i = 0; i < n; i++)
        sqlite3_bind_int64(st, i + 1, v[i]);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static int rh_leak_order(const void *x, const void *y)
{
    const struct rh_agg_leak *a = x, *b = y;
    if (a->si != b->si)
        return a->si < b->si ? -1 : 1;
    return a->t < b->t ? -1 : a->t > b->t;
}

/* Writes the aggregates a (stack index i is stack id ids[i]) into the TEMP
 * tables sstat, tstat, stl, stls and slc, created empty by the caller.
 * Returns 0 or -1 after a message. */
static int rh_pass_store(sqlite3 *db, struct rh_agg *a, const int64_t *ids)
{
    sqlite3_stmt *ss = NULL, *ts = NULL, *tl = NULL, *tp = NULL, *lc = NULL;
    int rc = -1;
    if (sqlite3_prepare_v2(db, "INSERT INTO temp.sstat VALUES(?,?,?,?,?,?,?,?,?,?,?,?)", -1, &ss,
                           NULL) ||
        sqlite3_prepare_v2(db, "INSERT INTO temp.tstat VALUES(?,?,?,?,?,?,?,?,?)", -1, &ts, NULL) ||
        sqlite3_prepare_v2(db, "INSERT INTO temp.stl VALUES(?,?,?,?,?,?)", -1, &tl, NULL) ||
        sqlite3_prepare_v2(db, "INSERT INTO temp.stls VALUES(?,?,?,?)", -1, &tp, NULL) ||
        sqlite3_prepare_v2(db, "INSERT INTO temp.slc VALUES(?,?,?,?,?,?)", -1, &lc, NULL))
        goto out;
    /* one transaction on the TEMP database for all of them */
    if (rh_pass_exec(db, "SAVEPOINT rh_pass"))
        goto out;
    for (size_t i = 0; i < a->nst; i++) {
        const struct rh_agg_stack *s = &a->st[i];
        if (!s->count)
            continue;
        /* block counts in 1/bscale units on a sampled profile (issue 9) */
        int64_t v[12] = {ids[i],
                         rh_agg_blocks(a, s->count),
                         s->bytes,
                         rh_agg_blocks(a, s->freed_blocks),
                         s->freed_bytes,
                         rh_agg_blocks(a, s->leaked_blocks),
                         s->leaked_bytes,
                         rh_agg_blocks(a, s->peak_blocks),
                         s->peak_bytes,
                         rh_agg_blocks(a, s->temporary),
                         s->first_ns,
                         s->last_ns};
        if (rh_pass_ins(ss, v, 12))
            goto out;
    }
    for (size_t i = 0; i < a->nth; i++) {
        const struct rh_agg_thread *t = &a->th[i];
        int64_t v[9] = {(int64_t)i + 1,
                        rh_agg_blocks(a, t->alloc_blocks),
                        t->alloc_bytes,
                        rh_agg_blocks(a, t->freed_blocks),
                        t->freed_bytes,
                        rh_agg_blocks(a, t->others_blocks),
                        t->others_bytes,
                        rh_agg_blocks(a, t->live_blocks),
                        t->live_bytes};
        if (rh_pass_ins(ts, v, 9))
            goto out;
    }
    for (int c = 1; a->tl_ok && c <= RH_AGG_COLUMNS; c++) {
        const struct rh_agg_col *k = &a->col[c];
        int64_t v[6] = {c, (int64_t)((__int128)a->span * c / RH_AGG_COLUMNS), k->max_bytes,
                        k->max_time, k->end_bytes, k->active};
        if (rh_pass_ins(tl, v, 6))
            goto out;
    }
    for (size_t i = 0; a->tl_ok && i < a->npts; i++) {
        const struct rh_agg_point *p = &a->pts[i];
        int64_t v[4] = {p->col, ids[p->si], p->at_max, p->at_end};
        if (rh_pass_ins(tp, v, 4))
            goto out;
    }
    /* the leak curve, as rh_db_agg.c stores it */
    const int nb = RH_AGG_LEAK_BUCKETS;
    if (a->nlk > 1)
        qsort(a->lk, a->nlk, sizeof *a->lk, rh_leak_order);
    for (size_t i = 0; i < a->nlk;) {
        uint32_t si = a->lk[i].si;
        int k = rh_leak_bucket(a->lk[i].t, nb, a->duration);
        int64_t v[6] = {ids[si], k, 0, 0, a->lk[i].t, a->lk[i].t};
        while (i < a->nlk && a->lk[i].si == si && rh_leak_bucket(a->lk[i].t, nb, a->duration) == k) {
            v[2] += a->lk[i].blocks;
            v[3] += a->lk[i].size;
            v[5] = a->lk[i].t;
            i++;
        }
        v[2] = rh_agg_blocks(a, v[2]);
        if (rh_pass_ins(lc, v, 6))
            goto out;
    }
    rc = 0;
out:
    sqlite3_exec(db, "RELEASE rh_pass", NULL, NULL, NULL);
    if (rc)
        fprintf(stderr, "rheaper: filter: SQLite error (%s)\n", sqlite3_errmsg(db));
    sqlite3_finalize(ss);
    sqlite3_finalize(ts);
    sqlite3_finalize(tl);
    sqlite3_finalize(tp);
    sqlite3_finalize(lc);
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
    sqlite3_stmt *st;
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
                          sqlite3_column_int64(st, 2),
                          size,
                          (uint32_t)th,
                          (uint32_t)dth,
                          (uint8_t)tmp,
                          sqlite3_column_int64(st, p->layout ? 5 : 7) < 0};
    return 1;
}

/* The reader thread: steps the statement, fills batches, hands them over. */
static void *rh_pass_reader(void *arg)
{
    struct rh_pq *q = arg;
    size_t n = 0;
    int r, stop = 0;
    while (!stop && (r = sqlite3_step(q->st)) == SQLITE_ROW) {
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
 * sample_bytes, sample_big_always, issue 9) in a zeroed rh_rip for the
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

int rh_pass_run(sqlite3 *db, const struct rh_pass *p, struct rh_pass_result *res)
{
    memset(res, 0, sizeof *res);
    if (rh_pass_exec(db, "DROP TABLE IF EXISTS temp.sstat; DROP TABLE IF EXISTS temp.tstat;"
                         "DROP TABLE IF EXISTS temp.stl; DROP TABLE IF EXISTS temp.stls;"
                         "DROP TABLE IF EXISTS temp.slc;"
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
                         "CREATE TEMP TABLE stls(col, bt, at_max, at_end,"
                         " PRIMARY KEY(col, bt)) WITHOUT ROWID;"
                         "CREATE TEMP TABLE slc(bt, bucket, blocks, bytes, first, last);"))
        return -1;
    /* Every stack gets a dense index: the aggregates are arrays. */
    struct rh_map idx = {0};
    int64_t *ids = NULL;
    uint8_t *ok = NULL; /* per index: the stack passes the stack filters */
    size_t nids = 0, capids = 0, capok = 0, ndirect = 0;
    uint32_t *direct = NULL; /* stack id -> index for ids below ndirect */
    struct rh_agg *a = NULL;
    struct rh_rip *samp = NULL; /* the sampling parameters of a sampled profile */
    struct rh_pheap h = {0};
    sqlite3_stmt *st = NULL;
    struct rh_pq q = {0};
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
    /* a sampled profile (issue 9): the aggregates weigh each row as the
     * converter did, from the sampling parameters in meta */
    if (rh_pass_sampling(db, &samp))
        goto oom;
    a = rh_agg_new(samp, p->span);
    if (!a)
        goto oom;
    /* The rows of the id range in allocation order: by id when ids follow
     * time, else sorted by SQLite (a damaged profile). A profile with the
     * compact layout (meta row_time_step) is read from alloc_rows and
     * decoded here, as the view allocations would (rh_db.c). */
    const char *sql =
        p->layout ? "SELECT t + id * ?3, life, bt, size, th, addr FROM alloc_rows"
                    " WHERE id >= ?1 AND id < ?2 ORDER BY id"
        : p->ordered ? "SELECT alloc_after, dealloc_after - alloc_after, bt, size, alloc_thread,"
                       " dealloc_thread, temporary, addr FROM allocations"
                       " WHERE id >= ?1 AND id < ?2 ORDER BY id"
                     : "SELECT alloc_after, dealloc_after - alloc_after, bt, size, alloc_thread,"
                       " dealloc_thread, temporary, addr FROM allocations"
                       " WHERE id >= ?1 AND id < ?2 ORDER BY alloc_after, id";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        rh_sql_fail(db, "filter");
        goto out;
    }
    sqlite3_bind_int64(st, 1, p->id_lo);
    sqlite3_bind_int64(st, 2, p->id_hi);
    if (p->layout)
        sqlite3_bind_int64(st, 3, p->time_step);
    int64_t last_t = 0;
    for (int k = 0; k < RH_PASS_NBATCH; k++)
        if (!(q.b[k] = malloc(RH_PASS_BATCH * sizeof *q.b[k])))
            goto oom;
    q.p = p;
    q.st = st;
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
            /* frees due by now come first (frees first at equal times) */
            while (h.n && h.v[0].t <= w->ta) {
                if (rh_agg_event(a, h.v[0].si, h.v[0].t, (uint64_t)h.v[0].size,
                                 h.v[0].pool ? RIP_POOL_TAG(1) : 0, 0))
                    goto oom;
                rh_pheap_pop(&h);
            }
            if (rh_agg_event(a, si, w->ta, (uint64_t)w->size, w->pool ? RIP_POOL_TAG(1) : 0, 1))
                goto oom;
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
    if (q.rc != SQLITE_DONE) {
        rh_sql_fail(db, "filter");
        goto out;
    }
    while (h.n) {
        if (rh_agg_event(a, h.v[0].si, h.v[0].t, (uint64_t)h.v[0].size,
                         h.v[0].pool ? RIP_POOL_TAG(1) : 0, 0))
            goto oom;
        rh_pheap_pop(&h);
    }
    rh_agg_end(a, p->span);
    if (a->oom)
        goto oom;
    res->peak_bytes = a->peak;
    res->peak_blocks = rh_agg_blocks(a, a->peak_blocks);
    res->peak_time = a->peak_t;
    res->last_event = last_t;
    res->timeline = a->tl_ok;
    rc = rh_pass_store(db, a, ids);
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
    rh_agg_free(a);
    free(samp);
    rh_map_free(&idx);
    free(ids);
    free(ok);
    free(direct);
    free(h.v);
    return rc;
}
