/* rh_schema.h: what the profile database's writer and its readers share.
 *
 * The converter writes the SQLite profile (rh_db.h); the query library, the
 * programs and the export writers read it. What both sides must agree on
 * lives here and only here: the stored aggregates' sizes (timeline columns,
 * leak buckets, site histogram classes), the ids of inherited stacks, the
 * packing of alloc_rows.th, the block scale of sampled figures, and the SQL
 * of the views a reader runs over its own tables too. Macros and one inline
 * function only: no SQLite, no converter code, so any reader may include it.
 */
#ifndef RH_SCHEMA_H
#define RH_SCHEMA_H

#include <stdint.h>

/* ---- rows and stacks ------------------------------------------------------ */

/* Stacks imported from a parent's profile have ids from here up. */
#define RH_INHERIT_STACK_BASE (1ull << 40)

/* The index of stack id bt in an array indexed by stack: ids below
 * RH_INHERIT_STACK_BASE are their own index, inherited ids follow from nlow
 * (one more than the largest id below the base). */
static inline int64_t rh_stack_slot(int64_t bt, int64_t nlow)
{
    return bt < (int64_t)RH_INHERIT_STACK_BASE ? bt : nlow + (bt - (int64_t)RH_INHERIT_STACK_BASE);
}

/* alloc_rows.th (docs/design.md): temporary in bit 0, the
 * allocating thread in bits 1..23, the freeing thread from bit 24 when it is
 * another thread (else those bits are 0). rh_db.c writes it, the view
 * allocations and the rheaper command's pass (rh_query_pass.c) read it. */
#define RH_DB_THREAD_MASK 8388607u
#define RH_DB_DTH_SHIFT 24

/* ---- the aggregate tables (rh_aggregate.c, rh_db_agg.c) -------------------- */

/* The number of columns of the stored heap timeline and of leak buckets; the
 * rheaper command draws and scores with the same numbers (meta says which). */
#define RH_AGG_COLUMNS 600
#define RH_AGG_LEAK_BUCKETS 20

/* Classes of stack_hist: a row's size class k (0..64: the smallest k with
 * 2^k >= size) and its lifetime class (RH_HIST_LIFE + 0..8: under 1 us,
 * 10 us, ... 10 s, and 10 s or more; RH_HIST_LIFE + 9: never freed), the
 * classes a call site's detail shows (rh_query_site.c). */
#define RH_HIST_LIFE 100
#define RH_HIST_LEAKED (RH_HIST_LIFE + 9)

/* The columns of the allocations charts over time (stack_series.allocs,
 * rh_db_series.c; the charts of rh_query_events.c): an allocation at t falls
 * in column t * C / span rounded down, the last one taking t >= span. */
#define RH_AGG_EVENT_COLUMNS 300

/* ---- sampled profiles -------------------------------------------------------- */

/* Per row, exactly as the aggregates count an event (rh_aggregate.c): bytes
 * round(size * weight), blocks round(weight * RH_AGG_BSCALE) in 1/4096 units,
 * the sum rounded to blocks; so the row path (RH_W_* below) and the
 * aggregates agree. */
#define RH_AGG_BSCALE 4096

/* ---- views ---------------------------------------------------------------- */

/* Bodies of the views heap_timeline and thread_summary over the allocations
 * table T, as string literals: rh_db.c creates the views over `allocations`,
 * the rheaper command runs the same SQL over its filtered table `sel`.
 * heap_timeline: one row per event in the merge's order (at equal times frees
 * first), with the live bytes and blocks after it (a window function). */
#define RH_SQL_HEAP_TIMELINE(T)                                                                  \
    "SELECT time, event, id, size, sum(delta) OVER w AS live_bytes,"                             \
    " sum(cls * 2 - 1) OVER w AS live_blocks FROM"                                               \
    " (SELECT alloc_after AS time, 'alloc' AS event, 1 AS cls, id, size, size AS delta FROM " T    \
    " UNION ALL SELECT dealloc_after, 'free', 0, id, size, -size FROM " T                         \
    " WHERE dealloc_after IS NOT NULL)"                                                          \
    " WINDOW w AS (ORDER BY time, cls, id ROWS UNBOUNDED PRECEDING) ORDER BY time, cls, id"
/* thread_summary: per thread, blocks and bytes it allocated, it freed (whoever
 * allocated them), of its own freed by other threads, and of its own still live
 * at the end. */
#define RH_SQL_THREAD_SUMMARY(T)                                                                 \
    "WITH a AS (SELECT alloc_thread AS th, count(*) AS n, sum(size) AS b,"                      \
    " sum(dealloc_thread IS NOT NULL AND dealloc_thread <> alloc_thread) AS on_,"               \
    " sum(CASE WHEN dealloc_thread <> alloc_thread THEN size ELSE 0 END) AS ob,"                \
    " sum(dealloc_after IS NULL) AS ln,"                                                        \
    " sum(CASE WHEN dealloc_after IS NULL THEN size ELSE 0 END) AS lb FROM " T                  \
    " GROUP BY alloc_thread),"                                                                   \
    " f AS (SELECT dealloc_thread AS th, count(*) AS n, sum(size) AS b FROM " T                 \
    " WHERE dealloc_thread IS NOT NULL GROUP BY dealloc_thread)"                                \
    " SELECT t.id AS thread, t.tid AS tid, t.name AS name,"                                      \
    " coalesce(a.n, 0) AS alloc_blocks, coalesce(a.b, 0) AS alloc_bytes,"                       \
    " coalesce(f.n, 0) AS freed_blocks, coalesce(f.b, 0) AS freed_bytes,"                       \
    " coalesce(a.on_, 0) AS freed_by_others_blocks, coalesce(a.ob, 0) AS freed_by_others_bytes," \
    " coalesce(a.ln, 0) AS live_blocks, coalesce(a.lb, 0) AS live_bytes"                        \
    " FROM threads t LEFT JOIN a ON a.th = t.id LEFT JOIN f ON f.th = t.id ORDER BY t.id"

/* RH_SQL_THREAD_SUMMARY on a sampled profile: the same columns as
 * estimates, each row weighing `weight` blocks and size * weight bytes. */
#define RH_W_ROW_B "CAST(round(size * weight) AS INTEGER)"
#define RH_W_ROW_N "CAST(round(weight * 4096) AS INTEGER)"
#define RH_W_N(c) "CAST(round(sum(CASE WHEN " c " THEN " RH_W_ROW_N " ELSE 0 END) / 4096.0) AS INTEGER)"
#define RH_W_B(c) "sum(CASE WHEN " c " THEN " RH_W_ROW_B " ELSE 0 END)"
#define RH_SQL_THREAD_SUMMARY_W(T)                                                               \
    "WITH a AS (SELECT alloc_thread AS th, " RH_W_N("1") " AS n, " RH_W_B("1") " AS b,"         \
    " " RH_W_N("dealloc_thread IS NOT NULL AND dealloc_thread <> alloc_thread") " AS on_,"      \
    " " RH_W_B("dealloc_thread <> alloc_thread") " AS ob,"                                      \
    " " RH_W_N("dealloc_after IS NULL") " AS ln,"                                               \
    " " RH_W_B("dealloc_after IS NULL") " AS lb FROM " T " GROUP BY alloc_thread),"             \
    " f AS (SELECT dealloc_thread AS th, " RH_W_N("1") " AS n, " RH_W_B("1") " AS b FROM " T    \
    " WHERE dealloc_thread IS NOT NULL GROUP BY dealloc_thread)"                                \
    " SELECT t.id AS thread, t.tid AS tid, t.name AS name,"                                      \
    " coalesce(a.n, 0) AS alloc_blocks, coalesce(a.b, 0) AS alloc_bytes,"                       \
    " coalesce(f.n, 0) AS freed_blocks, coalesce(f.b, 0) AS freed_bytes,"                       \
    " coalesce(a.on_, 0) AS freed_by_others_blocks, coalesce(a.ob, 0) AS freed_by_others_bytes," \
    " coalesce(a.ln, 0) AS live_blocks, coalesce(a.lb, 0) AS live_bytes"                        \
    " FROM threads t LEFT JOIN a ON a.th = t.id LEFT JOIN f ON f.th = t.id ORDER BY t.id"

#endif
