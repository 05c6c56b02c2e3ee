/* rh_db.h: the database side of the converter.
 *
 * Everything that writes or describes the SQLite profile: the database of a
 * conversion (rh_db.c: its temp file, schema, rows, stacks and meta), the
 * temp file's mode, lock and leftovers (rh_db_tmp.c), the aggregate tables
 * (rh_db_agg.c), call sites (rh_callsite.c), the memory, mmaps, regions,
 * stack_rows and realloc_chains tables, the rh_feed virtual table, and the
 * SQL of the views that readers run over their own tables too. It builds on
 * the SQLite-free core (rh_core.h) and takes real sqlite3 types.
 */
#ifndef RH_DB_H
#define RH_DB_H

#include <sqlite3.h>
#include <sys/types.h>

#include "rh_core.h"

struct rh_symbolizer;

/* ---- rh_postings.c: the per-stack row index (table stack_rows) ---------- */

struct rh_post;
/* A new index whose full chunks go to an unlinked temp file beside db_path.
 * NULL when the file cannot be made or memory is short. */
RH_HIDDEN struct rh_post *rh_post_new(const char *db_path);
/* Adds allocation id (greater than any added before) of `size` bytes of the
 * stack with index si and id bt. Returns 0, or -1 (out of memory, temp file
 * failed). */
RH_HIDDEN int rh_post_add(struct rh_post *p, uint32_t si, uint64_t bt, uint64_t id, uint64_t size);
/* Creates and fills tables stack_rows and stack_sizes in db (
 * inside the conversion's transaction). Returns 0, or -1 with err set. */
RH_HIDDEN int rh_post_write(struct rh_post *p, sqlite3 *db, char *err, size_t errlen);
RH_HIDDEN void rh_post_free(struct rh_post *p);
/* The index rh_db_finish() writes (NULL: none); the caller frees it after. */
struct rh_db;
RH_HIDDEN void rh_db_set_post(struct rh_db *db, struct rh_post *p);

/* ---- rh_chains.c: the realloc chains (table realloc_chains) --------------- */

struct rh_chains;
/* An empty list of links, kept in a temp file beside db_path made at the
 * first link (rh_spill_open). NULL when memory is short. */
RH_HIDDEN struct rh_chains *rh_chains_new(const char *db_path);
/* Adds one link: the realloc that ended row prev started row id (id greater
 * than any added before, prev < id). Returns 0: a temp file that cannot be
 * made or written fails rh_chains_write() instead, naming it. */
RH_HIDDEN int rh_chains_add(struct rh_chains *c, uint64_t prev, uint64_t id);
/* Creates and fills table realloc_chains in db ( inside the
 * conversion's transaction). Returns 0, or -1 with err set. */
RH_HIDDEN int rh_chains_write(struct rh_chains *c, sqlite3 *db, char *err, size_t errlen);
RH_HIDDEN void rh_chains_free(struct rh_chains *c);
/* The chains rh_db_finish() writes (NULL: none); the caller frees them after. */
RH_HIDDEN void rh_db_set_chains(struct rh_db *db, struct rh_chains *c);

/* ---- rh_db_series.c: each stack's series over time (table stack_series) -- */

struct rh_series;
/* An empty set of series whose allocations charts span span_ns (> 0). NULL
 * when memory is short (the charts then count rows). */
RH_HIDDEN struct rh_series *rh_series_new(int64_t span_ns);
/* Counts one stored row in its stack's allocations column. Returns 0: running
 * out of memory drops the allocs series, not the conversion. */
RH_HIDDEN int rh_series_row(struct rh_series *s, const struct rh_row *row);
/* Fills table stack_series and its meta keys (inside the conversion's
 * transaction, after rh_agg_write): the allocs blobs when allocs_ok (the rows
 * counted are every row stored and the span is the run's), the heap blobs
 * from timeline_stacks when heap_ok. s may be NULL (no allocs). Returns 0, or
 * -1 with err set. */
RH_HIDDEN int rh_series_write(struct rh_series *s, sqlite3 *db, int allocs_ok, int heap_ok,
                              char *err, size_t errlen);
RH_HIDDEN void rh_series_free(struct rh_series *s);

/* ---- rh_db_agg.c: the aggregate tables ----------------------------------- */

/* Writes the aggregate tables and their meta keys into db (
 * inside the conversion's transaction). Returns 0, or -1 with err set. */
RH_HIDDEN int rh_agg_write(struct rh_agg *a, sqlite3 *db, char *err, size_t errlen);
/* rh_agg_groups.c: replays the events kept by rh_grp_open into the groups
 * of the stacks written to db (backtraces, stacks) and writes group_peaks,
 * group_peak_stacks and stack_thread_stats; writes nothing (and returns 0)
 * when the events could not all be kept. Returns 0, or -1 with err set. */
RH_HIDDEN int rh_grp_write(struct rh_agg *a, sqlite3 *db, char *err, size_t errlen);

/* ---- rh_callsite.c: call sites past allocator wrappers ------------------ */

/* Computes every stack's call site frame (stacks.callsite) from the
 * backtraces already written to db and records the functions it skipped in
 * table skipped_functions. Returns 0, or -1 with err set. */
RH_HIDDEN int rh_callsite_write(sqlite3 *db, char *err, size_t errlen);

/* The same rule for a reader (--skip-function): functions for which
 * skip(skip_arg, name) returns 1 are wrappers by declaration, and frames of
 * them before a stack's first frame of the program's own code belong to the
 * allocator, so the wrappers above them are recomputed. Calls site(arg,
 * stack, frame_no) for every allocation stack and passed(arg, name, callers,
 * stacks) for each function or system group passed over. Writes nothing.
 * Returns 0, or -1 (out of memory, SQLite error, a callback's -1). */
RH_HIDDEN int rh_callsite_compute(sqlite3 *db, int (*skip)(void *arg, const char *sym),
                                  void *skip_arg,
                                  int (*site)(void *arg, int64_t stack, int64_t frame_no),
                                  int (*passed)(void *arg, const char *name, int64_t callers,
                                                int64_t stacks),
                                  void *arg);

/* ---- rh_memory.c: the memory table (memory samples beside the heap) ------ */

struct rh_memory {
    sqlite3_stmt *ins; /* INSERT INTO memory */
    uint64_t rows, damaged;
    unsigned interval_ms; /* the last sample's RHEAPER_RSS_MS */
    int source;           /* RIP_MEM_SRC_* of the allocator's figures seen, 0 none */
};
/* Creates the memory table in db. 0, or -1 with err set. */
RH_HIDDEN int rh_memory_open(struct rh_memory *m, sqlite3 *db, char *err, size_t errlen);
/* One MEMSAMPLE event at t ns; ev->size holds the live heap's bytes and
 * ev->addr its blocks at that moment (weighted estimates on a sampled
 * profile), set by the merge. A body that does not decode is counted and
 * skipped. Returns 0, or -1 on an SQLite error. */
RH_HIDDEN int rh_memory_event(struct rh_memory *m, const struct rh_event *ev, int64_t t);
RH_HIDDEN void rh_memory_close(struct rh_memory *m);

/* ---- rh_mmaps.c: the mmaps and mallopts tables ------------------------ */

struct rh_mmaps {
    sqlite3_stmt *mm, *mo; /* prepared inserts */
    int64_t nmmaps, nmallopts, damaged;
};
/* Creates both tables in db and prepares their inserts.
 * Returns 0, or -1 with err set. */
RH_HIDDEN int rh_mmaps_open(struct rh_mmaps *m, sqlite3 *db, char *err, size_t errlen);
/* One row for the RH_EV_EXT event ev at t ns. Returns 0 or -1 (SQLite). */
RH_HIDDEN int rh_mmaps_event(struct rh_mmaps *m, const struct rh_event *ev, int64_t t);
RH_HIDDEN void rh_mmaps_close(struct rh_mmaps *m);

/* ---- rh_db_feed.c: batches of rows in one INSERT (rh_feed) -------------- */

/* Rows of int64 values for `INSERT INTO t(...) SELECT c0, c1, ... FROM
 * rh_feed(?1)`: nrows rows of ncols (<= RH_FEED_COLS) values each, row-major
 * in vals; nulls (NULL: none) has a byte per row whose bit c makes column c
 * NULL. */
#define RH_FEED_COLS 8
struct rh_feed {
    const int64_t *vals;
    const uint8_t *nulls;
    size_t nrows;
    int ncols;
};
/* Registers the eponymous-only virtual table rh_feed on db:
 * nothing is stored in the database. Returns 0 or -1. */
RH_HIDDEN int rh_feed_register(sqlite3 *db);
/* Binds f as parameter ?1 of stmt. Returns 0 or -1. */
RH_HIDDEN int rh_feed_bind(sqlite3_stmt *stmt, const struct rh_feed *f);
/* Binds f, steps stmt to its end and resets it: the batch is inserted.
 * Returns 0, or -1 (sqlite3_errmsg() says why). f must stay unchanged
 * during the call only. */
RH_HIDDEN int rh_feed_insert(sqlite3_stmt *stmt, const struct rh_feed *f);

/* ---- rh_db.c: the SQLite database --------------------------------------- */

struct rh_db;

/* Name of an allocation kind number ("malloc", "new[]", ...), "unknown" if none.
 * Kinds from RIP_DYN_KIND_BASE up are named by the file's KINDNAME records. */
RH_HIDDEN const char *rh_kind_name(uint32_t kind);

/* Creates DB.tmp.XXXXXX next to `path`, the schema, an open transaction and the
 * row statement. Returns NULL with a one-line message in err. */
RH_HIDDEN struct rh_db *rh_db_create(const char *path, char *err, size_t errlen);
/* The merge sink: inserts one allocations row. Returns 0 or -1. */
RH_HIDDEN int rh_db_row(void *db, const struct rh_row *row);
/* The merge's ext sink: one mmaps or mallopts row. Returns 0 or -1. */
RH_HIDDEN int rh_db_ext(void *db, const struct rh_event *ev, int64_t t);
/* Writes stacks, backtraces (through sym, which may be NULL), threads,
 * modules and meta; builds indexes and views; commits; renames the temp file to
 * the requested path (over an existing file only with force). Returns 0, or -1
 * with a one-line message in err; the db is freed and the temp file removed in
 * both cases. */
RH_HIDDEN int rh_db_finish(struct rh_db *db, struct rh_rip *r, const struct rh_merge_stats *st,
                           struct rh_symbolizer *sym, int force, char *err, size_t errlen);
/* Aggregates to store at rh_db_finish() (NULL: none), and culling: rows of
 * blocks freed after living less than min_lifetime_ns are not written (0:
 * every row). */
RH_HIDDEN void rh_db_set_agg(struct rh_db *db, struct rh_agg *agg, int64_t min_lifetime_ns);
/* The merge sink's CPU sample: inserts one cpu_samples row.
 * Returns 0 or -1. */
RH_HIDDEN int rh_db_cpu(void *db, int64_t t, uint32_t thread, uint64_t stack, uint64_t periods);
/* Inserts stack st's frames with bs, an INSERT INTO backtraces(id, frame_no,
 * file, line, sym, module, address, inlined): each return address expanded
 * into its inline chain (sym NULL: unresolved), innermost first, without an
 * inlined frame named like the allocation function itself at frame 0, and
 * without frames of rheaper's own runtime (rh_db_runtime_frame). The
 * converter and the live view (convert/live/) write stacks this one way.
 * Returns 1 when an inline chain passed the symbolizer's cap (the stack ends
 * there: truncated), 0, or -1 when a step failed (sqlite3_errmsg says why). */
RH_HIDDEN int rh_db_stack_frames(sqlite3_stmt *bs, struct rh_symbolizer *sym,
                                 const struct rh_rip *r, const struct rh_stack *st);
/* The row layout's time step (ns per allocation id, docs/design.md): any value
 * is exact, one near the run's mean time between
 * allocations stores the fewest bytes. Call before the first row. */
RH_HIDDEN void rh_db_set_time_step(struct rh_db *db, int64_t step_ns);
/* The message of the last failed rh_db_row(). */
RH_HIDDEN const char *rh_db_error(const struct rh_db *db);
/* Abandons the conversion: closes and removes the temp file. NULL is fine. */
RH_HIDDEN void rh_db_abort(struct rh_db *db);
/* Temp file of the conversion in progress ("" if none), for a signal handler. */
RH_HIDDEN const char *rh_db_temp_path(void);

/* ---- rh_db_tmp.c: the temp database's mode, lock and leftovers ---------- */

/* The mode of the databases rh_db_create() makes from now on (the profile's
 * own mode; 0600 until set), narrowed by the umask. */
RH_HIDDEN void rh_db_set_mode(mode_t mode);

/* Creates the temp file named by tmpl (".XXXXXX" at its end, replaced),
 * exclusively locked and with rh_db_set_mode()'s mode. Returns its fd (kept
 * open: the lock says the conversion is alive) or -1 with errno. */
RH_HIDDEN int rh_dbtmp_create(char *tmpl);

/* Removes the PATH.tmp.XXXXXX files of conversions that were killed (this
 * user's, SQLite's header, no lock held), one line each on stderr after
 * prog. Returns how many. */
RH_HIDDEN int rh_dbtmp_sweep(const char *path, const char *prog);

/* 1 when path still names the file open at fd. */
RH_HIDDEN int rh_dbtmp_same(int fd, const char *path);

/* ---- rh_db_regions.c: the region tables -------------------------------- */

/* Creates the region tables and views in db and fills them (rh_db_regions.c).
 * Returns 0 or -1 with err set. */
RH_HIDDEN int rh_regions_write(sqlite3 *db, struct rh_rip *r, char *err, size_t errlen);

#endif
