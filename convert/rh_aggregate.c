/* rh_aggregate.c: the answers the rheaper command needs, computed while the
 * converter merges.
 *
 * rh_merge.c walks every event in time order once. It calls rh_agg_event()
 * for every allocation and every free of a known block, and rh_agg_row() for
 * every row it emits; rh_agg_end() comes after the last event. From these this
 * file keeps, in memory that grows with distinct stacks and threads (plus the
 * blocks still live at the end, for the leak curve), never with events:
 *   - per stack: allocations, bytes, freed and leaked blocks and bytes,
 *     temporary allocations (the row flag of rh_temporary_free()), first and
 *     last allocation, and the blocks and bytes live at the global peak;
 *   - per thread: the figures of the thread_summary view;
 *   - the peak: the highest live byte count and the first time it was reached;
 *   - the heap timeline: RH_AGG_COLUMNS columns over the run, each with the
 *     highest live bytes reached in it (so the chart's top is the exact peak)
 *     and, per stack, its live bytes at that moment;
 *   - the leak curve: per stack and leak bucket, the never-freed blocks;
 *   - a call site's detail: per stack, its rows by size class and lifetime
 *     class, and by allocating thread (sparse: the pairs that occur).
 * The timeline's per-stack figures grow with columns times stacks (2 M
 * points, 50 MB as an array, for the scale benchmark's 4096 stacks; gigabytes
 * for a server with 100 k stacks), so each column's go to an unlinked temp
 * file when the column closes (rh_spill.c) and are read back one column at a
 * time at the end (rh_agg_tl_next): memory holds one column's, at most one
 * per stack.
 * rh_db_agg.c stores them (docs/sql.md).
 *
 * Ties: the rows order the events of one time frees first (heap_timeline), the
 * merge may not when two ticks give the same ns. Live totals change in the
 * merged order, but the peak and the column maxima are checked only when the
 * time changes, where both orders agree.
 *
 * The bytes at the peak are snapshotted lazily: each new peak bumps an epoch;
 * a stack about to change whose snapshot is older saves its value first (it has
 * not changed since the peak). The timeline's per-column values work the same
 * way with a column epoch.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rh_check.h"
#include "rh_core.h"
#include "rh_schema.h"
#include "rh_util.h"

/* ---- sampling weights -------------------------------------------
 * On a sampled profile every figure here is an estimate: an event of a block
 * counts rh_sample_weight() blocks and round(size * weight) bytes (the same
 * integer at its allocation and at its free, so live totals return to zero).
 * Blocks are counted in 1/RH_AGG_BSCALE units and rounded when stored. */

/* Weights are capped at 2^24 (a probability below 6e-8: an absurd rate or a
 * damaged header), so that sums of estimates cannot overflow int64. */
#define RH_MAX_WEIGHT 16777216.0

double rh_sample_weight(const struct rh_rip *r, uint64_t size, uint64_t addr)
{
    if (!r || !r->sample_mode || RIP_IS_POOL_ADDR(addr))
        return 1.0;
    double w;
    if (r->sample_mode == RIP_SAMPLE_RATE)
        w = 1.0 / r->sample_rate;
    else if (!size || (r->sample_big && size >= r->sample_bytes))
        return 1.0; /* a big block under heapprofd's rule: always recorded */
    else /* the same operations as the view's SQL, so both round alike */
        w = 1.0 / (1.0 - exp(-(double)size / (double)r->sample_bytes));
    return w < RH_MAX_WEIGHT ? w : RH_MAX_WEIGHT;
}

void rh_sample_weight_sql(const struct rh_rip *r, char *buf, size_t len)
{
    if (r->sample_mode == RIP_SAMPLE_RATE)
        snprintf(buf, len, "(CASE WHEN a.addr < 0 THEN 1.0 ELSE %.17g END)",
                 rh_sample_weight(r, 1, 0));
    else if (r->sample_mode == RIP_SAMPLE_BYTES && r->sample_big)
        snprintf(buf, len,
                 "(CASE WHEN a.addr < 0 OR a.size = 0 OR a.size >= %llu THEN 1.0"
                 " ELSE min(1.0 / (1.0 - exp(-a.size / %llu.0)), %.1f) END)",
                 (unsigned long long)r->sample_bytes, (unsigned long long)r->sample_bytes,
                 RH_MAX_WEIGHT);
    else if (r->sample_mode == RIP_SAMPLE_BYTES)
        snprintf(buf, len,
                 "(CASE WHEN a.addr < 0 OR a.size = 0 THEN 1.0"
                 " ELSE min(1.0 / (1.0 - exp(-a.size / %llu.0)), %.1f) END)",
                 (unsigned long long)r->sample_bytes, RH_MAX_WEIGHT);
    else
        snprintf(buf, len, "1.0");
}

/* Estimated bytes and scaled blocks of one event. */
static inline int64_t rh_agg_eb(const struct rh_agg *a, uint64_t size, uint64_t addr)
{
    if (a->bscale == 1)
        return (int64_t)size;
    return llround((double)size * rh_sample_weight(a->r, size, addr));
}

static inline int64_t rh_agg_ek(const struct rh_agg *a, uint64_t size, uint64_t addr)
{
    if (a->bscale == 1)
        return 1;
    return llround(rh_sample_weight(a->r, size, addr) * (double)a->bscale);
}

int64_t rh_agg_est_bytes(const struct rh_agg *a, uint64_t size, uint64_t addr)
{
    return rh_agg_eb(a, size, addr);
}

int64_t rh_agg_est_blocks(const struct rh_agg *a, uint64_t size, uint64_t addr)
{
    return rh_agg_ek(a, size, addr);
}

int64_t rh_agg_blocks(const struct rh_agg *a, int64_t scaled)
{
    if (a->bscale <= 1)
        return scaled;
    int64_t h = a->bscale / 2;
    return scaled >= 0 ? (scaled + h) / a->bscale : -((-scaled + h) / a->bscale);
}

struct rh_agg *rh_agg_new(struct rh_rip *r, int64_t span_ns)
{
    struct rh_agg *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->r = r;
    a->bscale = r && r->sample_mode ? RH_AGG_BSCALE : 1; /* r NULL: full profile */
    a->time_ordered = 1;
    a->last_alloc_t = INT64_MIN;
    a->span = span_ns;
    a->tl_ok = span_ns > 0;
    for (int c = 0; c <= RH_AGG_COLUMNS; c++)
        a->col[c].max_bytes = -1;
    return a;
}

void rh_agg_free(struct rh_agg *a)
{
    if (!a)
        return;
    free(a->st);
    free(a->th);
    free(a->touched);
    if (a->tlf)
        fclose(a->tlf);
    free(a->tlbuf);
    free(a->pts);
    free(a->lk);
    free(a->cpu_st);
    free(a->cpu_th);
    free(a->hist);
    rh_map_free(&a->hist_map);
    free(a->sthr);
    rh_map_free(&a->sthr_map);
    rh_grp_free(a->grp);
    free(a);
}

/* Makes *arr (n used, cap) hold index i, zero-filled. Returns 0 or -1. */
static int rh_agg_cpu_slot(int64_t **arr, size_t *n, size_t *cap, size_t i)
{
    if (i < *n)
        return 0;
    if (rh_grow(arr, cap, i + 1, sizeof **arr))
        return -1;
    memset(*arr + *n, 0, (i + 1 - *n) * sizeof **arr);
    *n = i + 1;
    return 0;
}

int rh_agg_cpu(struct rh_agg *a, uint32_t si, uint32_t thread, uint64_t periods)
{
    size_t ti = thread ? thread - 1 : 0;
    if (rh_agg_cpu_slot(&a->cpu_st, &a->ncpu_st, &a->capcpu_st, si) ||
        rh_agg_cpu_slot(&a->cpu_th, &a->ncpu_th, &a->capcpu_th, ti)) {
        a->oom = 1;
        return -1;
    }
    a->cpu_st[si] += (int64_t)periods;
    a->cpu_th[ti] += (int64_t)periods;
    a->cpu_total += (int64_t)periods;
    return 0;
}

int64_t rh_run_duration(const struct rh_rip *r, int64_t last_ns)
{
    int64_t duration = last_ns;
    if (r->has_trailer) {
        int64_t end = rh_rip_ns(r, r->tr_end_tick);
        if (r->tr_end_ns > r->hdr.start_mono_ns &&
            r->tr_end_ns - r->hdr.start_mono_ns < (uint64_t)INT64_MAX)
            end = (int64_t)(r->tr_end_ns - r->hdr.start_mono_ns);
        if (end > duration)
            duration = end;
    }
    return duration;
}

int rh_leak_bucket(int64_t t, int nb, int64_t duration)
{
    if (duration <= 0)
        duration = 1;
    /* the same double operations as SQLite's t * 1.0 * nb / duration */
    double x = (double)t * 1.0 * (double)nb / (double)duration;
    int64_t k = (int64_t)x;
    if (k > nb - 1)
        k = nb - 1;
    return (int)k;
}

/* The entry of stack index si, growing the table. NULL on out of memory. */
static struct rh_agg_stack *rh_agg_stk(struct rh_agg *a, uint32_t si)
{
    if (si >= a->nst) {
        if (rh_grow(&a->st, &a->capst, (size_t)si + 1, sizeof *a->st)) {
            a->oom = 1;
            return NULL;
        }
        memset(a->st + a->nst, 0, ((size_t)si + 1 - a->nst) * sizeof *a->st);
        for (size_t i = a->nst; i <= si; i++)
            a->st[i].first_ns = INT64_MAX;
        a->nst = (size_t)si + 1;
    }
    return &a->st[si];
}

/* The entry of threads.id `id` (1-based). NULL on out of memory or id 0. */
static struct rh_agg_thread *rh_agg_thr(struct rh_agg *a, uint32_t id)
{
    if (!id)
        return NULL;
    if (id > a->nth) {
        if (rh_grow(&a->th, &a->capth, id, sizeof *a->th)) {
            a->oom = 1;
            return NULL;
        }
        memset(a->th + a->nth, 0, (id - a->nth) * sizeof *a->th);
        a->nth = id;
    }
    return &a->th[id - 1];
}

/* Column of time t: ceil(t * C / span), within 1..C (rh_export_svg.c's rule). */
static uint32_t rh_agg_colof(const struct rh_agg *a, int64_t t)
{
    if (t <= 0 || a->span <= 0)
        return 1;
    __int128 c = ((__int128)t * RH_AGG_COLUMNS + a->span - 1) / a->span;
    if (c < 1)
        c = 1;
    if (c > RH_AGG_COLUMNS)
        c = RH_AGG_COLUMNS;
    return (uint32_t)c;
}

int rh_agg_tl_open(struct rh_agg *a, const char *near)
{
    a->tlf = rh_spill_open(near, "tl");
    return a->tlf ? 0 : -1;
}

/* Appends one column's n points, encoded in buf[0, len), to the temp file. A
 * failed write is remembered (rh_agg_tl_rewind reports it); nothing more is
 * written after it. */
static void rh_agg_tl_put(struct rh_agg *a, uint32_t n, const uint8_t *buf, size_t len)
{
    if (a->tl_errno)
        return;
    if (RH_NEVER(!a->tlf, "the timeline's temp file is not open (rh_agg_tl_open)")) {
        a->tl_errno = EBADF;
        return;
    }
    uint8_t h[20];
    size_t k = (size_t)(rip_put_varint(rip_put_varint(h, a->cur_col), n) - h);
    errno = 0;
    if (fwrite(h, 1, k, a->tlf) != k || fwrite(buf, 1, len, a->tlf) != len)
        a->tl_errno = errno ? errno : EIO;
    a->tl_ncols++;
}

/* Stores the per-stack values of the column being left: the stacks it
 * touched whose value at the column's maximum or at its end differs from the
 * last one stored, encoded in tlbuf (at most 30 bytes per touched stack),
 * then appended to the temp file in one go. */
static void rh_agg_close_col(struct rh_agg *a)
{
    if (!a->cur_col)
        return;
    a->col[a->cur_col].end_bytes = a->total;
    if (rh_grow(&a->tlbuf, &a->captlbuf, a->ntouched * 30 + 1, 1)) {
        a->oom = 1;
        a->tl_ok = 0;
        return;
    }
    uint8_t *e = a->tlbuf;
    uint32_t n = 0;
    for (size_t i = 0; i < a->ntouched; i++) {
        struct rh_agg_stack *s = &a->st[a->touched[i]];
        int64_t at_max = s->col_epoch == a->col_epoch ? s->col_bytes : s->live_bytes;
        s->touched_col = 0;
        if (at_max == s->last_end && s->live_bytes == s->last_end)
            continue;
        /* live bytes of a stack are not negative, but zigzag costs nothing
         * and keeps any int64 exact */
        e = rip_put_varint(e, a->touched[i]);
        e = rip_put_varint(e, rip_zigzag(at_max));
        e = rip_put_varint(e, rip_zigzag(s->live_bytes));
        s->last_end = s->live_bytes;
        n++;
    }
    a->ntouched = 0;
    if (n)
        rh_agg_tl_put(a, n, a->tlbuf, (size_t)(e - a->tlbuf));
}

int rh_agg_tl_rewind(struct rh_agg *a)
{
    a->tl_nread = a->tl_last_col = 0;
    if (a->tl_errno) {
        errno = a->tl_errno;
        return -1;
    }
    if (!a->tlf) /* nothing was written */
        return 0;
    return fflush(a->tlf) || fseek(a->tlf, 0, SEEK_SET) ? -1 : 0;
}

long rh_agg_tl_next(struct rh_agg *a, const struct rh_agg_point **pts)
{
    if (a->tl_nread >= a->tl_ncols || !a->tlf)
        return 0;
    uint64_t col, n, si, m, e;
    if (rh_spill_get(a->tlf, &col) || rh_spill_get(a->tlf, &n) || col <= a->tl_last_col ||
        col > RH_AGG_COLUMNS || !n || n > a->nst)
        goto bad;
    if (rh_grow(&a->pts, &a->cappts, (size_t)n, sizeof *a->pts)) {
        errno = ENOMEM;
        return -1;
    }
    for (uint64_t k = 0; k < n; k++) {
        if (rh_spill_get(a->tlf, &si) || rh_spill_get(a->tlf, &m) || rh_spill_get(a->tlf, &e) ||
            si >= a->nst)
            goto bad;
        a->pts[k] =
            (struct rh_agg_point){(uint32_t)col, (uint32_t)si, rip_unzigzag(m), rip_unzigzag(e)};
    }
    a->tl_nread++;
    a->tl_last_col = (uint32_t)col;
    *pts = a->pts;
    return (long)n;
bad: /* cannot happen: the file is cut or damaged, or cannot be read */
    errno = ferror(a->tlf) && errno ? errno : EIO;
    return -1;
}

/* The events of time cur_t are all in: checks the peak and the column. */
static void rh_agg_group_end(struct rh_agg *a)
{
    if (a->total > a->peak) {
        a->peak = a->total;
        a->peak_blocks = a->total_blocks;
        a->peak_t = a->cur_t;
        a->epoch++;
    }
    if (a->cur_col) {
        struct rh_agg_col *c = &a->col[a->cur_col];
        c->active = 1;
        if (a->total > c->max_bytes) {
            c->max_bytes = a->total;
            c->max_time = a->cur_t;
            a->col_epoch++;
        }
    }
}

int rh_agg_event(struct rh_agg *a, uint32_t si, int64_t t, uint64_t size, uint64_t addr,
                 int is_alloc)
{
    struct rh_agg_stack *s = rh_agg_stk(a, si);
    if (!s)
        return -1;
    if (is_alloc) {
        if (t < a->last_alloc_t)
            a->time_ordered = 0;
        a->last_alloc_t = t;
    }
    if (!a->have_t || t != a->cur_t) {
        if (a->have_t)
            rh_agg_group_end(a);
        a->have_t = 1;
        a->cur_t = t;
        if (a->tl_ok) {
            if (t > a->span) {
                a->tl_ok = 0; /* an event past the trailer's end: no stored timeline */
            } else {
                /* (col_lo, col_hi]: the times of cur_col, saving a division */
                uint32_t c = t > a->col_lo && t <= a->col_hi ? a->cur_col : rh_agg_colof(a, t);
                if (c != a->cur_col) {
                    a->col_lo = c > 1 ? (int64_t)((__int128)a->span * (c - 1) / RH_AGG_COLUMNS)
                                      : INT64_MIN;
                    a->col_hi = (int64_t)((__int128)a->span * c / RH_AGG_COLUMNS);
                    if (c < a->cur_col)
                        a->tl_ok = 0; /* time went back (a damaged profile) */
                    rh_agg_close_col(a);
                    a->cur_col = c;
                }
            }
        }
    }
    if (s->epoch != a->epoch) {
        s->snap_bytes = s->live_bytes;
        s->snap_blocks = s->live_blocks;
        s->epoch = a->epoch;
    }
    if (a->tl_ok) {
        if (s->col_epoch != a->col_epoch) {
            s->col_bytes = s->live_bytes;
            s->col_epoch = a->col_epoch;
        }
        if (s->touched_col != a->cur_col) {
            if (rh_grow(&a->touched, &a->captouched, a->ntouched + 1, sizeof *a->touched)) {
                a->oom = 1;
                return -1;
            }
            a->touched[a->ntouched++] = si;
            s->touched_col = a->cur_col;
        }
    }
    if (a->grp)
        rh_grp_event(a->grp, si, t, size, is_alloc);
    int64_t d = rh_agg_eb(a, size, addr), db = rh_agg_ek(a, size, addr);
    if (!is_alloc) {
        d = -d;
        db = -db;
    }
    s->live_bytes += d;
    s->live_blocks += db;
    a->total += d;
    a->total_blocks += db;
    return 0;
}

/* Contract in rh_convert.h. */
void rh_agg_peak_now(const struct rh_agg *a, const struct rh_agg_stack *s, int64_t *bytes,
                     int64_t *blocks)
{
    /* the events of the current time not checked yet make a new peak: it is now */
    int now = a->have_t && a->total > a->peak;
    int snap = !now && s->epoch == a->epoch;
    *bytes = snap ? s->snap_bytes : s->live_bytes;
    *blocks = snap ? s->snap_blocks : s->live_blocks;
}

void rh_agg_end(struct rh_agg *a, int64_t duration_ns)
{
    if (a->have_t)
        rh_agg_group_end(a);
    if (a->tl_ok) {
        rh_agg_close_col(a);
        if (duration_ns != a->span)
            a->tl_ok = 0; /* the chart's span would differ */
    }
    /* carry the end state through columns without events */
    int64_t carry = 0;
    for (int c = 1; c <= RH_AGG_COLUMNS; c++) {
        if (a->col[c].active)
            carry = a->col[c].end_bytes;
        else
            a->col[c].end_bytes = a->col[c].max_bytes = carry;
    }
    for (size_t i = 0; i < a->nst; i++)
        rh_agg_peak_now(a, &a->st[i], &a->st[i].peak_bytes, &a->st[i].peak_blocks);
    a->duration = duration_ns;
    a->ended = 1;
}

/* The lifetime class of a block freed after life ns (stack_hist). */
static uint32_t rh_agg_life_class(int64_t life)
{
    uint32_t k = 0;
    for (int64_t lim = 1000; k < 8 && life >= lim; lim *= 10)
        k++;
    return RH_HIST_LIFE + k;
}

/* Adds nb blocks and size bytes to stack index si's class cls. Returns 0 or
 * -1 (out of memory, a->oom set). */
static int rh_agg_hist_add(struct rh_agg *a, uint32_t si, uint32_t cls, int64_t nb, int64_t size)
{
    uint64_t key = (uint64_t)si << 8 | cls;
    uint32_t i = rh_map_get(&a->hist_map, key);
    if (i == UINT32_MAX) {
        if (a->nhist >= UINT32_MAX - 1 ||
            rh_grow(&a->hist, &a->caphist, a->nhist + 1, sizeof *a->hist) ||
            rh_map_put(&a->hist_map, key, (uint32_t)a->nhist)) {
            a->oom = 1;
            return -1;
        }
        i = (uint32_t)a->nhist++;
        a->hist[i] = (struct rh_agg_hist){si, cls, 0, 0};
    }
    a->hist[i].blocks += nb;
    a->hist[i].bytes += size;
    return 0;
}

/* A row's share of its stack's figures by allocating thread. Returns 0 or -1. */
static int rh_agg_sthr_add(struct rh_agg *a, const struct rh_row *row, int64_t nb, int64_t size)
{
    uint64_t key = (uint64_t)row->stack_index << 32 | row->alloc_thread;
    uint32_t i = rh_map_get(&a->sthr_map, key);
    if (i == UINT32_MAX) {
        if (a->nsthr >= UINT32_MAX - 1 ||
            rh_grow(&a->sthr, &a->capsthr, a->nsthr + 1, sizeof *a->sthr) ||
            rh_map_put(&a->sthr_map, key, (uint32_t)a->nsthr)) {
            a->oom = 1;
            return -1;
        }
        i = (uint32_t)a->nsthr++;
        a->sthr[i] = (struct rh_agg_sthr){row->stack_index, row->alloc_thread, 0, 0, 0};
    }
    a->sthr[i].blocks += nb;
    a->sthr[i].bytes += size;
    if (row->dealloc_ns < 0)
        a->sthr[i].leaked_bytes += size;
    return 0;
}

int rh_agg_row(struct rh_agg *a, const struct rh_row *row)
{
    struct rh_agg_stack *s = rh_agg_stk(a, row->stack_index);
    /* Grow the thread table to the larger id before taking either pointer:
     * a block freed by a thread that appeared after its allocating thread
     * would otherwise move the table under the first pointer. */
    uint32_t hi = row->alloc_thread > row->dealloc_thread ? row->alloc_thread : row->dealloc_thread;
    (void)rh_agg_thr(a, hi);
    struct rh_agg_thread *ta = rh_agg_thr(a, row->alloc_thread);
    struct rh_agg_thread *td = rh_agg_thr(a, row->dealloc_thread);
    if (!s || a->oom)
        return -1;
    if (a->grp)
        rh_grp_row(a->grp, row);
    int64_t size = rh_agg_eb(a, row->size, row->addr), nb = rh_agg_ek(a, row->size, row->addr);
    uint32_t sk = 0;
    while (sk < 64 && ((uint64_t)1 << sk) < row->size)
        sk++;
    if (rh_agg_hist_add(a, row->stack_index, sk, nb, size) ||
        rh_agg_hist_add(a, row->stack_index,
                        row->dealloc_ns < 0 ? RH_HIST_LEAKED
                                            : rh_agg_life_class(row->dealloc_ns - row->alloc_ns),
                        nb, size) ||
        rh_agg_sthr_add(a, row, nb, size))
        return -1;
    s->count += nb;
    s->bytes += size;
    if (row->alloc_ns < s->first_ns)
        s->first_ns = row->alloc_ns;
    if (row->alloc_ns > s->last_ns)
        s->last_ns = row->alloc_ns;
    s->temporary += row->temporary ? nb : 0;
    if (ta) {
        ta->alloc_blocks += nb;
        ta->alloc_bytes += size;
    }
    if (row->dealloc_ns >= 0) {
        s->freed_blocks += nb;
        s->freed_bytes += size;
        if (td) {
            td->freed_blocks += nb;
            td->freed_bytes += size;
        }
        if (ta && row->dealloc_thread != row->alloc_thread) {
            ta->others_blocks += nb;
            ta->others_bytes += size;
        }
        return 0;
    }
    s->leaked_blocks += nb;
    s->leaked_bytes += size;
    if (ta) {
        ta->live_blocks += nb;
        ta->live_bytes += size;
    }
    if (rh_grow(&a->lk, &a->caplk, a->nlk + 1, sizeof *a->lk)) {
        a->oom = 1;
        return -1;
    }
    a->lk[a->nlk++] = (struct rh_agg_leak){row->stack_index, row->alloc_ns, size, nb};
    return 0;
}

/* ---- the rows of the aggregate tables ------------------------------------- */

static int rh_agg_leak_cmp(const void *x, const void *y)
{
    const struct rh_agg_leak *a = x, *b = y;
    if (a->si != b->si)
        return a->si < b->si ? -1 : 1;
    return a->t < b->t ? -1 : a->t > b->t;
}

int rh_agg_rows(struct rh_agg *a, const int64_t *ids, rh_agg_emit_fn emit, void *ctx)
{
#define RH_ID(i) (ids ? ids[i] : (int64_t)a->r->stacks[i].id)
    for (size_t i = 0; i < a->nst; i++) {
        const struct rh_agg_stack *s = &a->st[i];
        if (!s->count)
            continue;
        /* block counts in 1/bscale units on a sampled profile */
        int64_t v[12] = {RH_ID(i),
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
        if (emit(ctx, RH_AGG_T_STACKS, (uint32_t)i, v, 12))
            return -1;
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
        if (emit(ctx, RH_AGG_T_THREADS, 0, v, 9))
            return -1;
    }
    for (int c = 1; a->tl_ok && c <= RH_AGG_COLUMNS; c++) {
        const struct rh_agg_col *k = &a->col[c];
        int64_t v[6] = {c, (int64_t)((__int128)a->span * c / RH_AGG_COLUMNS), k->max_bytes,
                        k->max_time, k->end_bytes, k->active};
        if (emit(ctx, RH_AGG_T_TIMELINE, 0, v, 6))
            return -1;
    }
    /* the leak curve: per stack, its never-freed blocks in time buckets */
    const int nb = RH_AGG_LEAK_BUCKETS;
    if (a->nlk > 1)
        qsort(a->lk, a->nlk, sizeof *a->lk, rh_agg_leak_cmp);
    for (size_t i = 0; i < a->nlk;) {
        /* rows of one stack are sorted by time, so buckets come in order */
        uint32_t si = a->lk[i].si;
        int k = rh_leak_bucket(a->lk[i].t, nb, a->duration);
        int64_t v[6] = {RH_ID(si), k, 0, 0, a->lk[i].t, a->lk[i].t};
        while (i < a->nlk && a->lk[i].si == si && rh_leak_bucket(a->lk[i].t, nb, a->duration) == k) {
            v[2] += a->lk[i].blocks;
            v[3] += a->lk[i].size;
            v[5] = a->lk[i].t;
            i++;
        }
        v[2] = rh_agg_blocks(a, v[2]);
        if (emit(ctx, RH_AGG_T_LEAKS, si, v, 6))
            return -1;
    }
    /* a call site's detail: blocks rounded per stack and class (exact on a
     * full profile, where readers use them) */
    for (size_t i = 0; i < a->nhist; i++) {
        const struct rh_agg_hist *h = &a->hist[i];
        int64_t v[4] = {RH_ID(h->si), h->cls, rh_agg_blocks(a, h->blocks), h->bytes};
        if (emit(ctx, RH_AGG_T_HIST, h->si, v, 4))
            return -1;
    }
    for (size_t i = 0; i < a->nsthr; i++) {
        const struct rh_agg_sthr *t = &a->sthr[i];
        int64_t v[5] = {RH_ID(t->si), t->thread, rh_agg_blocks(a, t->blocks), t->bytes,
                        t->leaked_bytes};
        if (emit(ctx, RH_AGG_T_STHREADS, t->si, v, 5))
            return -1;
    }
#undef RH_ID
    return 0;
}
