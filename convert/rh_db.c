/* rh_db.c: the SQLite database rheaper-convert writes.
 *
 * The schema keeps the original rheaper's table and column names so its
 * documented queries work: allocations, backtraces, threads, modules, meta,
 * plus stacks, and the views leaks, callsites, heap_timeline, temporary,
 * callsites_by_function and thread_summary. The database is built in a
 * temp file next to the requested path (DB.tmp.XXXXXX) with journaling and
 * syncing off, in one transaction, with prepared statements and bound values
 * only (no data is ever pasted into SQL). The rows go in a batch per
 * statement, on a writer thread, through the virtual table rh_feed
 * (rh_db_feed.c), which is never stored in the file. Indexes and views come after the
 * load; then the file is renamed into place, never over an existing file
 * unless forced. Any failure removes the temp file, so a failed conversion
 * leaves nothing at the requested path; the temp file's mode, its lock and
 * the removal of a killed conversion's are rh_db_tmp.c's.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rh_core.h"
#include "rh_db.h"
#include "rh_schema.h"
#include "rh_symbolize.h"
#include "rh_modfind.h"

#ifndef RHEAPER_VERSION_STRING
#define RHEAPER_VERSION_STRING "0.0.0"
#endif

/* ---- kind names ------------------------------------------------------------ */

/* The kind numbers and names, generated from wrap/wrap_table.txt (the one
 * table the runtime's shims are generated from too). */
#define RH_WRAP_NO_PROTOTYPES
#include "rh_wrap_gen.h"

const char *rh_kind_name(uint32_t kind)
{
    const char *n = RH_KIND_NAME(kind);
    if (!n)
        n = rh_kind_dyn_name(kind);
    return n ? n : "unknown";
}

/* ---- the database handle ------------------------------------------------- */

/* Batches of rows between the merge and the writer thread: at most
 * RH_DB_NBATCH * RH_DB_BATCH rows wait (bounded memory, about 4 MB). */
#define RH_DB_BATCH 8192
#define RH_DB_NBATCH 8

struct rh_db {
    sqlite3 *db;
    sqlite3_stmt *ins;
    sqlite3_stmt *cpu_ins; /* cpu_samples, prepared at the first sample */
    struct rh_agg *agg;      /* NULL: no aggregate tables */
    struct rh_post *post;    /* NULL: no table stack_rows (rh_postings.c) */
    struct rh_chains *chains; /* NULL: no table realloc_chains (rh_chains.c) */
    struct rh_series *series; /* NULL: no table stack_series (rh_db_series.c) */
    int64_t min_lifetime_ns; /* culling (rheaper-convert --min-lifetime); 0: none */
    uint64_t culled;         /* rows not written by culling */
    /* Rows arrive in free order but their ids are in allocation order; a
     * ring of RH_DB_RING rows puts them back in id order before inserting,
     * so the table's pages fill up (rows of blocks that outlive the ring are
     * inserted late, out of order). */
    struct rh_row *ring;
    uint8_t *ring_full; /* per slot: 0 empty, 1 a row, 2 a culled row */
    uint64_t next_id; /* the smallest id not yet inserted or passed */
    uint64_t max_id; /* the largest id handed to the writer so far */
    struct rh_mmaps mm; /* the mmaps and mallopts tables (rh_mmaps.c) */
    struct rh_memory mem; /* the memory table (rh_memory.c) */
    /* The row layout (rh_db_view): alloc_rows.t = alloc_after - id *
     * time_step. */
    int64_t time_step;
    char path[PATH_MAX];
    char err[512];
    /* The writer thread (rh_db_row): the merge thread culls rows, puts them
     * in id order (the ring) and encodes them as alloc_rows' values into
     * batches; the writer inserts each batch with one execution of `ins`
     * (rh_feed, rh_db_feed.c), so the per-statement work is paid per batch,
     * and merging and SQLite share the two cores. */
    pthread_t writer;
    int writer_on;
    pthread_mutex_t mu;
    pthread_cond_t filled, emptied;
    int64_t *bvals[RH_DB_NBATCH]; /* the batches: RH_DB_BATCH rows of RH_DB_COLS values */
    uint8_t *bnulls[RH_DB_NBATCH]; /* per row: bit 0 when the id is the next rowid, bit 2
                                    * when life is NULL (rh_feed's NULL bits) */
    size_t fill[RH_DB_NBATCH];          /* rows in each: > 0 while queued */
    unsigned head, tail;                /* queue: batches head..tail-1 await the writer */
    size_t cur_n;                       /* rows in batch[tail % NBATCH], being filled */
    int done, failed;                   /* no more batches; the writer failed (err set) */
    int started;                        /* rh_db_row() set the above up */
    /* CPU samples and mmap/mallopt calls arrive on the merge
     * thread while the writer thread owns the connection (SQLite is
     * configured single-threaded): they wait here and are inserted by the
     * merge thread once the writer is idle (rh_db_side_flush), a batch at a
     * time, so the two threads never use the connection at once. */
    struct rh_db_side *side; /* RH_DB_SIDE entries */
    size_t side_n;
    double writer_cpu; /* CPU seconds the writer thread used (RHEAPER_CONVERT_STATS) */
};

#define RH_DB_SIDE 4096
struct rh_db_side {
    int64_t t;
    struct rh_event ev; /* RH_EV_EXT: the call; its body stays in the mapped rip */
    uint64_t stack, periods;
    uint32_t thread;
    uint8_t cpu; /* 1: a CPU sample (stack, periods, thread), 0: ev */
};

/* The temp file of the conversion in progress, for rh_db_temp_path(). */
static char rh_db_tmp[PATH_MAX + 16];
/* its descriptor, holding the flock that says the conversion is alive */
static int rh_db_tmpfd = -1;

static void rh_db_tmp_close(void)
{
    if (rh_db_tmpfd >= 0)
        close(rh_db_tmpfd);
    rh_db_tmpfd = -1;
}

const char *rh_db_temp_path(void)
{
    return rh_db_tmp;
}

static void rh_db_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void rh_db_seterr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* Runs SQL without bound values (schema and pragmas only). Returns 0 or -1
 * with err set. */
static int rh_db_exec(struct rh_db *d, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(d->db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    rh_db_seterr(err, errlen, "%s: SQLite error (%s)", rh_db_tmp, msg ? msg : "?");
    sqlite3_free(msg);
    return -1;
}

static int rh_db_prepare(struct rh_db *d, const char *sql, sqlite3_stmt **st, char *err,
                         size_t errlen)
{
    if (sqlite3_prepare_v2(d->db, sql, -1, st, NULL) == SQLITE_OK)
        return 0;
    rh_db_seterr(err, errlen, "%s: SQLite error (%s)", rh_db_tmp, sqlite3_errmsg(d->db));
    return -1;
}

/* Steps a statement to completion and resets it. Returns 0 or -1 with err. */
static int rh_db_step(struct rh_db *d, sqlite3_stmt *st, char *err, size_t errlen)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc == SQLITE_DONE || rc == SQLITE_ROW)
        return 0;
    rh_db_seterr(err, errlen, "%s: cannot write (%s)", rh_db_tmp, sqlite3_errmsg(d->db));
    return -1;
}

static const char rh_schema[] =
    "PRAGMA journal_mode=OFF;"
    "PRAGMA synchronous=OFF;"
    "PRAGMA locking_mode=EXCLUSIVE;"
    "PRAGMA cache_size=-65536;"
    /* rheaper's mark in the header (RH_DB_APPLICATION_ID): a killed
     * conversion's temp file is removed only when it carries it */
    "PRAGMA application_id=1919447154;"
    /* The rows, compact (docs/design.md): the view
     * allocations (rh_db_view) gives the seed's columns back. */
    "CREATE TABLE alloc_rows(id INTEGER PRIMARY KEY, t INTEGER NOT NULL, life INTEGER,"
    " bt INTEGER NOT NULL, size INTEGER NOT NULL, addr INTEGER NOT NULL, th INTEGER NOT NULL);"
    "CREATE TABLE backtraces(id INTEGER NOT NULL, frame_no INTEGER NOT NULL, file TEXT,"
    " line INTEGER, sym TEXT, module TEXT, address INTEGER, inlined INTEGER NOT NULL DEFAULT 0,"
    " PRIMARY KEY(id, frame_no)) WITHOUT ROWID;"
    "CREATE TABLE stacks(id INTEGER PRIMARY KEY, kind TEXT, depth INTEGER, truncated INTEGER,"
    " callsite INTEGER NOT NULL DEFAULT 0);"
    /* Aggregates computed while merging (rh_aggregate.c, rh_db_agg.c). */
    "CREATE TABLE stack_stats(bt INTEGER PRIMARY KEY, count INTEGER, bytes INTEGER,"
    " freed_blocks INTEGER, freed_bytes INTEGER, leaked_blocks INTEGER, leaked_bytes INTEGER,"
    " peak_blocks INTEGER, peak_bytes INTEGER, temporary INTEGER, first_alloc INTEGER,"
    " last_alloc INTEGER);"
    "CREATE TABLE thread_stats(thread INTEGER PRIMARY KEY, alloc_blocks INTEGER,"
    " alloc_bytes INTEGER, freed_blocks INTEGER, freed_bytes INTEGER,"
    " freed_by_others_blocks INTEGER, freed_by_others_bytes INTEGER, live_blocks INTEGER,"
    " live_bytes INTEGER);"
    "CREATE TABLE timeline(col INTEGER PRIMARY KEY, t INTEGER, max_bytes INTEGER,"
    " max_time INTEGER, end_bytes INTEGER, active INTEGER);"
    "CREATE TABLE timeline_stacks(col INTEGER, bt INTEGER, at_max INTEGER, at_end INTEGER,"
    " PRIMARY KEY(col, bt)) WITHOUT ROWID;"
    "CREATE TABLE leak_curve(bt INTEGER, bucket INTEGER, blocks INTEGER, bytes INTEGER,"
    " first INTEGER, last INTEGER, PRIMARY KEY(bt, bucket)) WITHOUT ROWID;"
    /* a call site's detail: per stack, rows by size and lifetime class and
     * by allocating thread (rh_aggregate.c) */
    "CREATE TABLE stack_hist(bt INTEGER, class INTEGER, blocks INTEGER, bytes INTEGER,"
    " PRIMARY KEY(bt, class)) WITHOUT ROWID;"
    "CREATE TABLE stack_threads(bt INTEGER, thread INTEGER, blocks INTEGER, bytes INTEGER,"
    " leaked_bytes INTEGER, PRIMARY KEY(bt, thread)) WITHOUT ROWID;"
    /* each stack's series over time: its heap points and its allocations
     * per column, as blobs (rh_db_series.c, docs/sql.md) */
    "CREATE TABLE stack_series(bt INTEGER PRIMARY KEY, heap BLOB, allocs BLOB);"
    "CREATE TABLE skipped_functions(sym TEXT PRIMARY KEY, callers INTEGER, stacks INTEGER);"
    "CREATE TABLE threads(id INTEGER PRIMARY KEY, tid INTEGER, name TEXT);"
    "CREATE TABLE modules(id INTEGER PRIMARY KEY, path TEXT, base INTEGER, build_id TEXT,"
    " text_start INTEGER, text_end INTEGER);"
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
    /* CPU samples: one row per sample, and the aggregates */
    "CREATE TABLE cpu_samples(time INTEGER, thread INTEGER, stack_id INTEGER, periods INTEGER);"
    "CREATE TABLE cpu_stack_stats(stack_id INTEGER PRIMARY KEY, samples INTEGER);"
    "CREATE TABLE cpu_thread_stats(thread INTEGER PRIMARY KEY, samples INTEGER);"
    "BEGIN;";

static const char rh_post[] =
    "CREATE INDEX backtraces_id ON backtraces(id);"
    "CREATE INDEX backtraces_file_line ON backtraces(file, line);"
    "CREATE VIEW leaks AS SELECT * FROM allocations WHERE dealloc_after IS NULL;"
    "CREATE VIEW callsites AS SELECT a.bt AS bt, a.kind AS kind, count(*) AS count,"
    " sum(a.size) AS total_size, avg(a.size) AS avg_size, min(a.size) AS min_size,"
    " max(a.size) AS max_size,"
    " sum(a.dealloc_after IS NULL) AS leaked_count,"
    " sum(CASE WHEN a.dealloc_after IS NULL THEN a.size ELSE 0 END) AS leaked_bytes,"
    " avg(a.dealloc_after - a.alloc_after) AS avg_lifetime,"
    " b.sym AS sym, b.file AS file, b.line AS line"
    " FROM allocations a LEFT JOIN backtraces b ON b.id = a.bt AND b.frame_no = 0"
    " GROUP BY a.bt;"
    /* The views of the rheaper command (docs/commands.md). */
    "CREATE VIEW heap_timeline AS " RH_SQL_HEAP_TIMELINE("allocations") ";"
    "CREATE VIEW thread_summary AS " RH_SQL_THREAD_SUMMARY("allocations") ";"
    /* heaptrack's temporary allocations (rh_temporary_free in rh_core.h). */
    "CREATE VIEW temporary AS SELECT id, alloc_after, dealloc_after, bt, size, addr,"
    " alloc_thread, dealloc_thread, kind FROM allocations WHERE temporary = 1;"
    "CREATE VIEW callsites_by_function AS SELECT b.sym AS sym, min(b.file) AS file,"
    " count(*) AS count, sum(a.size) AS total_size, avg(a.size) AS avg_size,"
    " sum(a.dealloc_after IS NULL) AS leaked_count,"
    " sum(CASE WHEN a.dealloc_after IS NULL THEN a.size ELSE 0 END) AS leaked_bytes,"
    " count(DISTINCT a.bt) AS stacks"
    " FROM allocations a LEFT JOIN backtraces b ON b.id = a.bt AND b.frame_no = 0"
    " GROUP BY b.sym;";

struct rh_db *rh_db_create(const char *path, char *err, size_t errlen)
{
    struct rh_db *d = calloc(1, sizeof *d);
    if (!d) {
        rh_db_seterr(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    if (strlen(path) >= sizeof d->path - 1) {
        rh_db_seterr(err, errlen, "%s: path too long", path);
        free(d);
        return NULL;
    }
    strcpy(d->path, path);
    rh_dbtmp_sweep(path, "rheaper-convert");
    snprintf(rh_db_tmp, sizeof rh_db_tmp, "%s.tmp.XXXXXX", path);
    rh_db_tmp_close();
    rh_db_tmpfd = rh_dbtmp_create(rh_db_tmp);
    if (rh_db_tmpfd < 0) {
        rh_db_seterr(err, errlen, "%s: cannot create (%s)", rh_db_tmp, strerror(errno));
        rh_db_tmp[0] = 0;
        free(d);
        return NULL;
    }
    /* One thread uses SQLite: no mutexes, no allocation statistics. These fail
     * harmlessly (SQLITE_MISUSE) if SQLite was already initialized. */
    sqlite3_config(SQLITE_CONFIG_SINGLETHREAD);
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    if (sqlite3_open_v2(rh_db_tmp, &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        rh_db_seterr(err, errlen, "%s: cannot open as SQLite (%s)", rh_db_tmp,
                     d->db ? sqlite3_errmsg(d->db) : "out of memory");
        rh_db_abort(d);
        return NULL;
    }
    if (!rh_dbtmp_same(rh_db_tmpfd, rh_db_tmp)) {
        rh_db_seterr(err, errlen, "%s: replaced by another file while opening", rh_db_tmp);
        rh_db_tmp[0] = 0; /* not ours any more: not removed */
        rh_db_abort(d);
        return NULL;
    }
    if (rh_db_exec(d, rh_schema, err, errlen) || rh_feed_register(d->db) ||
        rh_db_prepare(d,
                      "INSERT INTO alloc_rows(id, t, life, bt, size, addr, th)"
                      " SELECT c0, c1, c2, c3, c4, c5, c6 FROM rh_feed(?1)",
                      &d->ins, err, errlen) ||
        rh_mmaps_open(&d->mm, d->db, err, errlen) || rh_memory_open(&d->mem, d->db, err, errlen)) {
        rh_db_abort(d);
        return NULL;
    }
    return d;
}


#define RH_DB_RING (1u << 19)
#define RH_DB_COLS 7 /* alloc_rows' columns, in the order of `ins` */

/* Inserts batch k's n rows with one statement (the connection is this
 * thread's). Returns 0 or -1 with d->err set. */
static int rh_db_insert_batch(struct rh_db *d, unsigned k, size_t n)
{
    struct rh_feed f = {d->bvals[k], d->bnulls[k], n, RH_DB_COLS};
    if (rh_feed_insert(d->ins, &f) == 0)
        return 0;
    rh_db_seterr(d->err, sizeof d->err, "%s: cannot write (%s)", rh_db_tmp, sqlite3_errmsg(d->db));
    return -1;
}

static int rh_db_hand_over(struct rh_db *d);

/* Encodes one row into the batch being filled, handed over when full.
 * Merge thread. Returns 0 or -1. */
static int rh_db_insert(struct rh_db *d, const struct rh_row *row)
{
    unsigned b = d->tail % RH_DB_NBATCH;
    int64_t *v = d->bvals[b] + d->cur_n * RH_DB_COLS;
    v[0] = (int64_t)row->id;
    v[1] = row->alloc_ns - (int64_t)row->id * d->time_step;
    v[2] = row->dealloc_ns - row->alloc_ns;
    v[3] = (int64_t)row->stack;
    v[4] = (int64_t)row->size;
    v[5] = (int64_t)row->addr;
    int64_t th = (int64_t)(row->alloc_thread & RH_DB_THREAD_MASK) << 1 | (row->temporary ? 1 : 0);
    if (row->dealloc_ns >= 0 && row->dealloc_thread != row->alloc_thread)
        th |= (int64_t)row->dealloc_thread << RH_DB_DTH_SHIFT;
    v[6] = th;
    /* life NULL: never freed; id NULL: SQLite gives the table's largest
     * rowid + 1, which is this id, by appending (no search for the key) */
    d->bnulls[b][d->cur_n] = (row->dealloc_ns >= 0 ? 0 : 1u << 2) | (row->id == d->max_id + 1);
    if (row->id > d->max_id)
        d->max_id = row->id;
    return ++d->cur_n == RH_DB_BATCH ? rh_db_hand_over(d) : 0;
}

/* Inserts the ring's rows from next_id on, up to `upto` (exclusive) or, when
 * upto is 0, while they are there. Returns 0 or -1. */
static int rh_db_ring_flush(struct rh_db *d, uint64_t upto)
{
    for (;;) {
        size_t k = d->next_id & (RH_DB_RING - 1);
        if (upto ? d->next_id >= upto : !d->ring_full[k])
            return 0;
        if (d->ring_full[k] == 1 && rh_db_insert(d, &d->ring[k]))
            return -1;
        d->ring_full[k] = 0;
        d->next_id++;
    }
}

/* Handles one row (merge thread): culls it or puts it in the ring that
 * hands rows over in id order. Returns 0 or -1 with d->err set. */
static int rh_db_row_now(struct rh_db *d, const struct rh_row *row)
{
    int culled = d->min_lifetime_ns > 0 && row->dealloc_ns >= 0 &&
                 row->dealloc_ns - row->alloc_ns < d->min_lifetime_ns;
    d->culled += (uint64_t)culled;
    if (!d->ring) {
        d->ring = malloc(RH_DB_RING * sizeof *d->ring);
        d->ring_full = calloc(RH_DB_RING, 1);
        d->next_id = 1;
        if (!d->ring || !d->ring_full) {
            rh_db_seterr(d->err, sizeof d->err, "%s: out of memory", rh_db_tmp);
            return -1;
        }
    }
    if (row->id < d->next_id) /* it outlived the ring */
        return culled ? 0 : rh_db_insert(d, row);
    if (row->id >= d->next_id + RH_DB_RING && rh_db_ring_flush(d, row->id - RH_DB_RING + 1))
        return -1;
    size_t k = row->id & (RH_DB_RING - 1);
    if (!culled)
        d->ring[k] = *row;
    d->ring_full[k] = culled ? 2 : 1; /* 2: culled, the flush passes it */
    return row->id == d->next_id ? rh_db_ring_flush(d, 0) : 0;
}

/* Inserts one CPU sample row now (the connection is this thread's). 0 or -1. */
static int rh_db_cpu_now(struct rh_db *d, int64_t t, uint32_t thread, uint64_t stack,
                         uint64_t periods)
{
    if (!d->cpu_ins && sqlite3_prepare_v2(d->db, "INSERT INTO cpu_samples VALUES(?,?,?,?)", -1,
                                          &d->cpu_ins, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_int64(d->cpu_ins, 1, t);
    sqlite3_bind_int64(d->cpu_ins, 2, thread);
    sqlite3_bind_int64(d->cpu_ins, 3, (sqlite3_int64)stack);
    sqlite3_bind_int64(d->cpu_ins, 4, (sqlite3_int64)periods);
    int rc = sqlite3_step(d->cpu_ins);
    sqlite3_reset(d->cpu_ins);
    if (rc == SQLITE_DONE)
        return 0;
fail:
    rh_db_seterr(d->err, sizeof d->err, "%s: cannot write (%s)", rh_db_tmp,
                 sqlite3_errmsg(d->db));
    return -1;
}

/* Waits until the writer thread has inserted every queued batch, so the
 * calling (merge) thread may use the connection until it queues another. */
static void rh_db_writer_idle(struct rh_db *d)
{
    if (!d->writer_on)
        return;
    pthread_mutex_lock(&d->mu);
    while (d->head != d->tail)
        pthread_cond_wait(&d->emptied, &d->mu);
    pthread_mutex_unlock(&d->mu);
}

/* Inserts the waiting CPU samples and mmap/mallopt calls once the writer is
 * idle. Returns 0 or -1 (d->err says why). */
static int rh_db_side_flush(struct rh_db *d)
{
    if (!d->side_n)
        return 0;
    rh_db_writer_idle(d);
    for (size_t i = 0; i < d->side_n; i++) {
        const struct rh_db_side *e = &d->side[i];
        if (e->cpu) {
            if (rh_db_cpu_now(d, e->t, e->thread, e->stack, e->periods))
                return -1;
        } else if (e->ev.ext_sub == RIP_EXT_MEMSAMPLE) {
            if (rh_memory_event(&d->mem, &e->ev, e->t) != 0) {
                rh_db_seterr(d->err, sizeof d->err, "%s: cannot write (%s)", rh_db_tmp,
                             sqlite3_errmsg(d->db));
                return -1;
            }
        } else if (rh_mmaps_event(&d->mm, &e->ev, e->t) != 0) {
            rh_db_seterr(d->err, sizeof d->err, "%s: cannot write (%s)", rh_db_tmp,
                         sqlite3_errmsg(d->db));
            return -1;
        }
    }
    d->side_n = 0;
    return 0;
}

/* Takes the next side entry, flushing when full. NULL after out of memory or
 * a failed flush (d->err says why). */
static struct rh_db_side *rh_db_side_slot(struct rh_db *d)
{
    if (!d->side && !(d->side = malloc(RH_DB_SIDE * sizeof *d->side))) {
        rh_db_seterr(d->err, sizeof d->err, "%s: out of memory", rh_db_tmp);
        return NULL;
    }
    if (d->side_n == RH_DB_SIDE && rh_db_side_flush(d))
        return NULL;
    struct rh_db_side *e = &d->side[d->side_n++];
    memset(e, 0, sizeof *e);
    return e;
}

int rh_db_cpu(void *ctx, int64_t t, uint32_t thread, uint64_t stack, uint64_t periods)
{
    struct rh_db_side *e = rh_db_side_slot(ctx);
    if (!e)
        return -1;
    e->cpu = 1;
    e->t = t;
    e->thread = thread;
    e->stack = stack;
    e->periods = periods;
    return 0;
}

int rh_db_ext(void *ctx, const struct rh_event *ev, int64_t t)
{
    struct rh_db_side *e = rh_db_side_slot(ctx);
    if (!e)
        return -1;
    e->ev = *ev;
    e->t = t;
    return 0;
}

/* CPU seconds the calling thread has used so far. */
static double rh_db_thread_cpu(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The writer thread: inserts queued batches until done. After a failure it
 * keeps taking batches (and drops them) so the merge never waits forever. */
static void *rh_db_writer(void *arg)
{
    struct rh_db *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (d->head == d->tail && !d->done)
            pthread_cond_wait(&d->filled, &d->mu);
        if (d->head == d->tail)
            break;
        unsigned k = d->head % RH_DB_NBATCH;
        size_t n = d->fill[k];
        int failed = d->failed;
        pthread_mutex_unlock(&d->mu);
        if (!failed)
            failed = rh_db_insert_batch(d, k, n) != 0;
        pthread_mutex_lock(&d->mu);
        d->failed |= failed;
        d->fill[k] = 0;
        d->head++;
        pthread_cond_signal(&d->emptied);
    }
    pthread_mutex_unlock(&d->mu);
    d->writer_cpu = rh_db_thread_cpu();
    return NULL;
}

/* Queues the batch being filled (when it holds rows), waiting for room;
 * without a writer thread, inserts it. Returns 0, or -1 once the writer
 * has failed (d->err says why). */
static int rh_db_hand_over(struct rh_db *d)
{
    if (!d->writer_on) {
        int rc = d->cur_n ? rh_db_insert_batch(d, d->tail % RH_DB_NBATCH, d->cur_n) : 0;
        d->cur_n = 0;
        return rc;
    }
    pthread_mutex_lock(&d->mu);
    if (d->cur_n) {
        d->fill[d->tail % RH_DB_NBATCH] = d->cur_n;
        d->tail++;
        pthread_cond_signal(&d->filled);
        while (d->tail - d->head >= RH_DB_NBATCH)
            pthread_cond_wait(&d->emptied, &d->mu);
    }
    int failed = d->failed;
    pthread_mutex_unlock(&d->mu);
    d->cur_n = 0;
    return failed ? -1 : 0;
}

/* Ends the writer thread after the queued batches. Returns 0, or -1 when it
 * failed (d->err says why). */
static int rh_db_writer_stop(struct rh_db *d)
{
    if (!d->writer_on)
        return 0;
    rh_db_hand_over(d);
    pthread_mutex_lock(&d->mu);
    d->done = 1;
    pthread_cond_signal(&d->filled);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->writer, NULL);
    d->writer_on = 0;
    return d->failed ? -1 : 0;
}

int rh_db_row(void *ctx, const struct rh_row *row)
{
    struct rh_db *d = ctx;
    if (!d->started) {
        /* the first row: the batches and the writer thread */
        d->started = 1;
        for (int k = 0; k < RH_DB_NBATCH; k++)
            if (!(d->bvals[k] = malloc(RH_DB_BATCH * RH_DB_COLS * sizeof *d->bvals[k])) ||
                !(d->bnulls[k] = malloc(RH_DB_BATCH))) {
                rh_db_seterr(d->err, sizeof d->err, "%s: out of memory", rh_db_tmp);
                return -1;
            }
        pthread_mutex_init(&d->mu, NULL);
        pthread_cond_init(&d->filled, NULL);
        pthread_cond_init(&d->emptied, NULL);
        d->writer_on = pthread_create(&d->writer, NULL, rh_db_writer, d) == 0;
    }
    if (d->series && rh_series_row(d->series, row))
        return -1;
    return rh_db_row_now(d, row); /* no writer thread: rh_db_hand_over() inserts */
}

/* Frees what carries rows to the writer thread: the ordering ring (about
 * 38 MB), the batches and the side queue. rh_db_finish() calls it as soon as
 * the last row is in, so that the finishing steps (stacks, aggregates,
 * stack_rows) do not stack their memory on top of it. Safe to call
 * twice, and with the writer thread stopped only. */
static void rh_db_free_rows(struct rh_db *d)
{
    for (int k = 0; k < RH_DB_NBATCH; k++) {
        free(d->bvals[k]);
        free(d->bnulls[k]);
        d->bvals[k] = NULL;
        d->bnulls[k] = NULL;
    }
    free(d->side);
    free(d->ring);
    free(d->ring_full);
    d->side = NULL;
    d->ring = NULL;
    d->ring_full = NULL;
}

void rh_db_abort(struct rh_db *d)
{
    if (!d)
        return;
    sqlite3_finalize(d->cpu_ins);
    if (d->writer_on) {
        d->cur_n = 0;
        rh_db_writer_stop(d);
    }
    rh_db_free_rows(d);
    sqlite3_finalize(d->ins);
    rh_mmaps_close(&d->mm);
    rh_memory_close(&d->mem);
    sqlite3_close(d->db);
    if (rh_db_tmp[0] && rh_dbtmp_same(rh_db_tmpfd, rh_db_tmp))
        unlink(rh_db_tmp);
    rh_db_tmp[0] = 0;
    rh_db_tmp_close();
    rh_series_free(d->series);
    free(d);
}

/* ---- finishing: stacks, backtraces, threads, modules, meta ---------------- */

static int rh_db_prefix(const char *s, const char *p)
{
    return s && !strncmp(s, p, strlen(p));
}

/* A frame of rheaper's own runtime, linked into the program: a function with
 * one of the runtime's reserved prefixes (rh_ inside, __wrap_ for the wrap
 * layer, rheaper_ for the API) whose source, when known, is one of the
 * runtime's files (rh_*.c, shims_*.c, interpose_*.c). They sit between the
 * program's frames where a wrapped call runs the program's code or libc's
 * allocating code (pthread_create's thread setup under
 * __wrap_pthread_create), and are never written: no stack shows the
 * runtime. */
static int rh_db_runtime_frame(const struct rh_sym_frame *f)
{
    if (!rh_db_prefix(f->sym, "rh_") && !rh_db_prefix(f->sym, "__wrap_") &&
        !rh_db_prefix(f->sym, "rheaper_"))
        return 0;
    if (!f->file)
        return 1;
    const char *base = strrchr(f->file, '/');
    base = base ? base + 1 : f->file;
    return rh_db_prefix(base, "rh_") || rh_db_prefix(base, "shims_") ||
           rh_db_prefix(base, "interpose_");
}

/* Contract in rh_db.h. */
int rh_db_stack_frames(sqlite3_stmt *bs, struct rh_symbolizer *sym, const struct rh_rip *r,
                       const struct rh_stack *st)
{
    enum { MAXF = 64 };
    struct rh_sym_frame fr[MAXF];
    int64_t frame_no = 0;
    int chain_cut = 0; /* an inline chain passed the symbolizer's cap */
    for (uint32_t f = 0; f < st->nframes && !chain_cut; f++) {
        uint64_t addr = r->frames[st->frames + f];
        int n = sym ? rh_sym_resolve(sym, addr, fr, MAXF) : 0;
        if (n <= 0) {
            memset(&fr[0], 0, sizeof fr[0]);
            fr[0].rel_addr = addr;
            n = 1;
        }
        /* The allocation function itself is never a frame: glibc's headers
         * inline getline() into a call to __getdelim, so frame 0 would
         * otherwise be an inlined "getline" above the user's code. */
        int k0 = 0;
        const char *kname = f == 0 ? rh_kind_name(st->kind) : NULL;
        while (kname && k0 < n - 1 && fr[k0].inlined && fr[k0].sym &&
               strcmp(fr[k0].sym, kname) == 0)
            k0++;
        for (int k = k0; k < n; k++) {
            if (rh_db_runtime_frame(&fr[k]))
                continue;
            sqlite3_bind_int64(bs, 1, (sqlite3_int64)st->id);
            sqlite3_bind_int64(bs, 2, frame_no++);
            sqlite3_bind_text(bs, 3, fr[k].file, -1, SQLITE_STATIC); /* NULL binds NULL */
            if ((fr[k].file || fr[k].sym) && fr[k].line > 0)
                sqlite3_bind_int64(bs, 4, fr[k].line);
            else
                sqlite3_bind_null(bs, 4);
            sqlite3_bind_text(bs, 5, fr[k].sym, -1, SQLITE_STATIC);
            sqlite3_bind_text(bs, 6, fr[k].module, -1, SQLITE_STATIC);
            sqlite3_bind_int64(bs, 7, (sqlite3_int64)fr[k].rel_addr);
            sqlite3_bind_int64(bs, 8, fr[k].inlined ? 1 : 0);
            int rc = sqlite3_step(bs);
            sqlite3_reset(bs);
            sqlite3_clear_bindings(bs);
            if (rc != SQLITE_DONE)
                return -1;
            chain_cut |= fr[k].chain_cut;
        }
    }
    return chain_cut;
}

/* Writes stacks and backtraces of every used stack. Counts undefined ones. */
static int rh_db_stacks(struct rh_db *d, struct rh_rip *r, struct rh_symbolizer *sym,
                        uint64_t *undefined, char *err, size_t errlen)
{
    sqlite3_stmt *ss = NULL, *bs = NULL;
    int rc = -1;
    if (rh_db_prepare(d, "INSERT OR IGNORE INTO stacks(id, kind, depth, truncated) VALUES(?,?,?,?)",
                      &ss, err, errlen) ||
        rh_db_prepare(d,
                      "INSERT OR IGNORE INTO backtraces(id, frame_no, file, line, sym, module,"
                      " address, inlined) VALUES(?,?,?,?,?,?,?,?)",
                      &bs, err, errlen))
        goto out;
    *undefined = 0;
    for (size_t i = 0; i < r->nstacks; i++) {
        const struct rh_stack *st = &r->stacks[i];
        if (!st->used)
            continue;
        sqlite3_bind_int64(ss, 1, (sqlite3_int64)st->id);
        if (st->defined)
            sqlite3_bind_text(ss, 2, rh_kind_name(st->kind), -1, SQLITE_STATIC);
        sqlite3_bind_int64(ss, 3, st->nframes);
        sqlite3_bind_int64(ss, 4, st->cut);
        if (rh_db_step(d, ss, err, errlen))
            goto out;
        if (!st->defined) {
            if (st->id)
                (*undefined)++;
            sqlite3_bind_int64(bs, 1, (sqlite3_int64)st->id);
            sqlite3_bind_int64(bs, 2, 0);
            sqlite3_bind_int64(bs, 8, 0);
            if (rh_db_step(d, bs, err, errlen))
                goto out;
            continue;
        }
        int chain_cut = rh_db_stack_frames(bs, sym, r, st);
        if (chain_cut < 0) {
            rh_db_seterr(err, errlen, "%s: cannot write (%s)", rh_db_tmp, sqlite3_errmsg(d->db));
            goto out;
        }
        /* Past the cap the stack ends at the last inlined frame kept: its real
         * function and every caller are unknown, so it is marked truncated. */
        if (chain_cut && !st->cut) {
            char sql[96];
            snprintf(sql, sizeof sql, "UPDATE stacks SET truncated = 1 WHERE id = %llu",
                     (unsigned long long)st->id);
            if (sqlite3_exec(d->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
                snprintf(err, errlen, "marking stack %llu truncated: %s",
                         (unsigned long long)st->id, sqlite3_errmsg(d->db));
                goto out;
            }
        }
    }
    rc = 0;
out:
    sqlite3_finalize(ss);
    sqlite3_finalize(bs);
    return rc;
}

static int rh_db_threads_modules(struct rh_db *d, struct rh_rip *r, char *err, size_t errlen)
{
    sqlite3_stmt *ts = NULL, *ms = NULL;
    int rc = -1;
    if (rh_db_prepare(d, "INSERT INTO threads(id, tid, name) VALUES(?,?,?)", &ts, err, errlen) ||
        rh_db_prepare(d,
                      "INSERT INTO modules(id, path, base, build_id, text_start, text_end)"
                      " VALUES(?,?,?,?,?,?)",
                      &ms, err,
                      errlen))
        goto out;
    for (size_t i = 0; i < r->nthreads; i++) {
        sqlite3_bind_int64(ts, 1, (sqlite3_int64)(i + 1));
        sqlite3_bind_int64(ts, 2, r->threads[i].tid);
        if (r->threads[i].named)
            sqlite3_bind_text(ts, 3, r->threads[i].name, -1, SQLITE_STATIC);
        if (rh_db_step(d, ts, err, errlen))
            goto out;
    }
    int64_t id = 0;
    for (size_t i = 0; i < r->nmods; i++) {
        const struct rh_module *m = &r->mods[i];
        int dup = 0; /* the same module in several snapshots: one row */
        for (size_t j = 0; j < i && !dup; j++)
            dup = r->mods[j].base == m->base && !strcmp(r->mods[j].path, m->path) &&
                  r->mods[j].build_id_len == m->build_id_len &&
                  (!m->build_id_len || !memcmp(r->mods[j].build_id, m->build_id, m->build_id_len));
        if (dup)
            continue;
        char hex[2 * 255 + 1];
        for (unsigned k = 0; k < m->build_id_len; k++)
            snprintf(hex + 2 * k, 3, "%02x", m->build_id[k]);
        hex[2 * m->build_id_len] = 0;
        sqlite3_bind_int64(ms, 1, ++id);
        sqlite3_bind_text(ms, 2, m->path, -1, SQLITE_STATIC);
        sqlite3_bind_int64(ms, 3, (sqlite3_int64)m->base);
        if (m->build_id_len)
            sqlite3_bind_text(ms, 4, hex, -1, SQLITE_TRANSIENT);
        /* For pprof's mappings: the span of its executable ranges */
        uint64_t lo = UINT64_MAX, hi = 0;
        for (unsigned k = 0; k < m->nranges; k++) {
            lo = m->ranges[2 * k] < lo ? m->ranges[2 * k] : lo;
            hi = m->ranges[2 * k + 1] > hi ? m->ranges[2 * k + 1] : hi;
        }
        if (m->nranges) {
            sqlite3_bind_int64(ms, 5, (sqlite3_int64)lo);
            sqlite3_bind_int64(ms, 6, (sqlite3_int64)hi);
        }
        if (rh_db_step(d, ms, err, errlen))
            goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(ts);
    sqlite3_finalize(ms);
    return rc;
}

struct rh_meta {
    struct rh_db *d;
    sqlite3_stmt *st;
    char *err;
    size_t errlen;
    int rc;
};

/* The writers of meta rows: (key, v) unless an earlier write failed (m->rc
 * then keeps that failure). The readers are the query library's rh_meta_int
 * and rh_meta_text (convert/query/rh_query_db.c). */
static void rh_meta_put_int(struct rh_meta *m, const char *key, int64_t v)
{
    if (m->rc)
        return;
    sqlite3_bind_text(m->st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(m->st, 2, v);
    m->rc = rh_db_step(m->d, m->st, m->err, m->errlen);
}

static void rh_meta_put_text(struct rh_meta *m, const char *key, const char *v)
{
    if (m->rc)
        return;
    sqlite3_bind_text(m->st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(m->st, 2, v, -1, SQLITE_TRANSIENT);
    m->rc = rh_db_step(m->d, m->st, m->err, m->errlen);
}

/* The architecture of the profiled program, from its ELF header (e_machine
 * in the file's own byte order, e_ident's class for MIPS): the name the
 * server reports, or NULL when the file cannot be read or is none we name.
 * The path comes from the profile: opened as the symbolizer opens modules
 * (rh_modfind_open), so a FIFO there never blocks the conversion. */
static const char *rh_elf_arch(const char *path)
{
    unsigned char h[20];
    char real[RH_MODFIND_PATH], why[RH_MODFIND_PATH + 64];
    int fd = path && *path ? rh_modfind_open(path, real, sizeof real, why, sizeof why) : -1;
    if (fd < 0)
        return NULL;
    ssize_t n = pread(fd, h, sizeof h, 0);
    close(fd);
    if (n != (ssize_t)sizeof h || memcmp(h, ELFMAG, SELFMAG) != 0)
        return NULL;
    unsigned m = h[EI_DATA] == ELFDATA2MSB ? (unsigned)h[18] << 8 | h[19]
                                           : (unsigned)h[19] << 8 | h[18];
    int is64 = h[EI_CLASS] == ELFCLASS64;
    switch (m) {
    case EM_X86_64: return "x86_64";
    case EM_386: return "x86";
    case EM_AARCH64: return "aarch64";
    case EM_ARM: return "arm";
    case EM_MIPS: return is64 ? "mips64" : "mips";
    case EM_RISCV: return is64 ? "riscv64" : "riscv32";
    case EM_PPC64: return "powerpc64";
    case EM_S390: return "s390x";
    default: return NULL;
    }
}

static int rh_db_meta(struct rh_db *d, struct rh_rip *r, const struct rh_merge_stats *st,
                      uint64_t undefined, char *err, size_t errlen)
{
    struct rh_meta m = {d, NULL, err, errlen, 0};
    if (rh_db_prepare(d, "INSERT OR REPLACE INTO meta(key, value) VALUES(?,?)", &m.st, err, errlen))
        return -1;
    char when[64];
    time_t secs = (time_t)(r->hdr.start_realtime_ns / 1000000000ull);
    struct tm tm;
    if (gmtime_r(&secs, &tm) && tm.tm_year < 8000) {
        size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(when + n, sizeof when - n, ".%09lluZ",
                 (unsigned long long)(r->hdr.start_realtime_ns % 1000000000ull));
    } else {
        snprintf(when, sizeof when, "unknown");
    }
    int64_t duration = rh_run_duration(r, st->last_ns);
    int clean = r->has_trailer && !r->damaged && !r->cut_short;
    rh_meta_put_text(&m, "program", r->exe);
    const char *arch = rh_elf_arch(r->exe); /* no row when the program is not at hand */
    if (arch)
        rh_meta_put_text(&m, "architecture", arch);
    rh_meta_put_text(&m, "args", r->args);
    rh_meta_put_text(&m, "command_line", r->cmdline);
    rh_meta_put_int(&m, "pid", r->hdr.pid);
    rh_meta_put_int(&m, "ppid", r->hdr.ppid);
    rh_meta_put_text(&m, "start_time", when);
    rh_meta_put_int(&m, "duration_ns", duration);
    rh_meta_put_int(&m, "format_version", r->hdr.version);
    rh_meta_put_int(&m, "events", (int64_t)r->events);
    rh_meta_put_int(&m, "allocs", (int64_t)r->allocs);
    rh_meta_put_int(&m, "frees", (int64_t)r->frees);
    rh_meta_put_int(&m, "reallocs", (int64_t)r->reallocs);
    rh_meta_put_int(&m, "failed_allocs", (int64_t)st->failed_allocs);
    rh_meta_put_int(&m, "unknown_frees", (int64_t)st->unknown_frees);
    rh_meta_put_int(&m, "overlapping_allocs", (int64_t)st->overlapping_allocs);
    rh_meta_put_int(&m, "clean", clean);
    rh_meta_put_int(&m, "cut_short", r->cut_short);
    rh_meta_put_int(&m, "damaged_chunks", (int64_t)r->damaged_chunks);
    rh_meta_put_int(&m, "damaged", r->damaged);
    rh_meta_put_int(&m, "undefined_stacks", (int64_t)undefined);
    rh_meta_put_int(&m, "out_of_order_events", (int64_t)r->out_of_order);
    rh_meta_put_int(&m, "rows", (int64_t)(st->rows - d->culled));
    rh_meta_put_int(&m, "min_lifetime_ns", d->min_lifetime_ns);
    rh_meta_put_int(&m, "culled_rows", (int64_t)d->culled);
    if (r->has_trailer) {
        rh_meta_put_int(&m, "events_lost", (int64_t)r->tr_lost);
        rh_meta_put_int(&m, "events_recorded", (int64_t)r->tr_events);
    } else {
        rh_meta_put_text(&m, "events_lost", NULL);
    }
    /* v2 trailers only: a v1 profile did not count it */
    if (r->has_trailer && r->tr_has_reentered)
        rh_meta_put_int(&m, "reentered_unrecorded", (int64_t)r->tr_reentered);
    /* servers: who the process was (FORMAT.md "Servers") */
    if (r->has_trailer && r->tr_has_title) {
        rh_meta_put_text(&m, "title", r->title);
        rh_meta_put_text(&m, "process_name", r->comm);
        rh_meta_put_int(&m, "credentials_changed", (r->tr_flags & RIP_TR_F_CREDENTIALS) != 0);
    }
    if (r->has_trailer && r->tr_has_end_reason && r->tr_end_reason >= RIP_END_CHROOT)
        rh_meta_put_text(&m, "end_reason",
                     r->tr_end_reason == RIP_END_CHROOT        ? "chroot"
                     : r->tr_end_reason == RIP_END_CREDENTIALS ? "credentials"
                     : r->tr_end_reason == RIP_END_EXEC        ? "exec"
                                                               : "unknown");
    if (r->inherit) { /* rows 1..inherited_rows: blocks inherited at the fork */
        rh_meta_put_int(&m, "inherited_rows", (int64_t)st->inherited);
        rh_meta_put_int(&m, "inherited_bytes", (int64_t)r->inherit->bytes);
        rh_meta_put_text(&m, "inherited_from", r->inherit->path);
        rh_meta_put_int(&m, "inherited_profiles", (int64_t)r->inherit->profiles);
        rh_meta_put_int(&m, "inherited_stack_base", (int64_t)RH_INHERIT_STACK_BASE);
    }
    if (r->has_origin) {
        rh_meta_put_int(&m, "fork_parent_pid", r->origin_ppid);
        rh_meta_put_text(&m, "fork_parent_profile", r->origin_path);
        /* the fork's time on this profile's clock: ns before its start */
        rh_meta_put_int(&m, "fork_ns", (int64_t)r->origin_mono_ns - (int64_t)r->hdr.start_mono_ns);
    }
    /* 1 when RHEAPER_MAX_PROFILE_SIZE ended the recording (clean) */
    if (r->has_trailer && r->tr_has_end_reason)
        rh_meta_put_int(&m, "cut_at_size_limit", r->tr_end_reason == RIP_END_SIZE_LIMIT);
    /* Streaming: a profile received by rheaper collect, and how it was sent */
    if (r->hdr.flags & RIP_HDR_F_STREAMED) {
        char peer[64];
        rh_rip_peer(r, peer, sizeof peer);
        rh_meta_put_text(&m, "streamed_from", peer);
    }
    if (r->has_trailer && r->tr_has_stream && r->tr_stream_state != RIP_STREAM_LOCAL) {
        rh_meta_put_int(&m, "stream_queue_full", r->tr_stream_state == RIP_STREAM_QUEUE_FULL);
        rh_meta_put_int(&m, "stream_queue_peak", (int64_t)r->tr_stream_peak);
    }
    /* CPU sampling, when it was on (no keys: it was off) */
    if (r->cpu_hz || r->cpu_samples) {
        rh_meta_put_int(&m, "cpu_hz", r->cpu_hz);
        rh_meta_put_int(&m, "cpu_samples", (int64_t)r->cpu_samples);
        if (r->has_trailer && r->tr_has_cpu)
            rh_meta_put_int(&m, "cpu_samples_dropped", (int64_t)r->tr_cpu_dropped);
    }
    /* memory samples (rh_memory.c): keys only when the recording took them */
    if (d->mem.rows) {
        rh_meta_put_int(&m, "memory_samples", (int64_t)d->mem.rows);
        rh_meta_put_int(&m, "memory_interval_ms", d->mem.interval_ms);
        rh_meta_put_text(&m, "memory_allocator",
                     d->mem.source == RIP_MEM_SRC_GLIBC      ? "glibc"
                     : d->mem.source == RIP_MEM_SRC_JEMALLOC ? "jemalloc"
                                                             : "none");
        if (d->mem.damaged)
            rh_meta_put_int(&m, "memory_samples_damaged", (int64_t)d->mem.damaged);
    }
    /* Sampling: every figure of the aggregates is an estimate */
    if (r->sample_mode == RIP_SAMPLE_RATE) {
        rh_meta_put_text(&m, "sample_mode", "rate");
        if (!m.rc) {
            sqlite3_bind_text(m.st, 1, "sample_rate", -1, SQLITE_STATIC);
            sqlite3_bind_double(m.st, 2, r->sample_rate);
            m.rc = rh_db_step(m.d, m.st, m.err, m.errlen);
        }
    } else if (r->sample_mode == RIP_SAMPLE_BYTES) {
        rh_meta_put_text(&m, "sample_mode", "bytes");
        rh_meta_put_int(&m, "sample_bytes", (int64_t)r->sample_bytes);
        /* 1: blocks >= sample_bytes were always recorded, weight 1 */
        rh_meta_put_int(&m, "sample_big_always", r->sample_big);
    }
    if (r->sample_mode) {
        rh_meta_put_int(&m, "sample_seeded", r->sample_seeded);
        if (r->has_trailer && r->tr_has_sample) {
            rh_meta_put_int(&m, "sample_dropped", (int64_t)r->tr_sample_dropped);
            rh_meta_put_int(&m, "sample_peak_live", (int64_t)r->tr_sample_peak);
        }
    }
    rh_meta_put_text(&m, "rheaper_version", RHEAPER_VERSION_STRING);
    sqlite3_finalize(m.st);
    return m.rc;
}

/* One meta row per module, "debug:PATH", saying what its frames were
 * symbolized with (rh_sym_module_debug): debug info (and from which separate
 * file), symbol-table names only, or nothing. */
static int rh_db_meta_debug(struct rh_db *d, struct rh_symbolizer *sym, char *err, size_t errlen)
{
    if (!sym)
        return 0;
    struct rh_meta m = {d, NULL, err, errlen, 0};
    if (rh_db_prepare(d, "INSERT OR REPLACE INTO meta(key, value) VALUES(?,?)", &m.st, err, errlen))
        return -1;
    for (size_t i = 0; i < rh_sym_nmodules(sym) && !m.rc; i++) {
        char buf[4096 + 64], key[4096 + 16];
        const char *path;
        const char *what = rh_sym_module_debug(sym, i, &path, buf, sizeof buf);
        snprintf(key, sizeof key, "debug:%s", path ? path : "?");
        rh_meta_put_text(&m, key, what);
    }
    sqlite3_finalize(m.st);
    return m.rc;
}

/* Moves the finished temp file to d->path. */
static int rh_db_place(struct rh_db *d, int force, char *err, size_t errlen)
{
    if (!rh_dbtmp_same(rh_db_tmpfd, rh_db_tmp)) {
        rh_db_seterr(err, errlen, "%s: replaced by another file; not moved to %s", rh_db_tmp,
                     d->path);
        rh_db_tmp[0] = 0;
        return -1;
    }
    if (force) {
        if (rename(rh_db_tmp, d->path) == 0)
            return 0;
        rh_db_seterr(err, errlen, "%s: cannot replace (%s)", d->path, strerror(errno));
        return -1;
    }
    if (renameat2(AT_FDCWD, rh_db_tmp, AT_FDCWD, d->path, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno == EINVAL || errno == ENOSYS || errno == ENOTSUP) {
        /* no RENAME_NOREPLACE here: link() fails rather than replace, too */
        if (link(rh_db_tmp, d->path) == 0) {
            unlink(rh_db_tmp);
            return 0;
        }
    }
    if (errno == EEXIST)
        rh_db_seterr(err, errlen, "%s exists; use --force to overwrite", d->path);
    else
        rh_db_seterr(err, errlen, "%s: cannot create (%s)", d->path, strerror(errno));
    return -1;
}

/* Creates the view allocations over alloc_rows, which stores each row in
 * fewer bytes (docs/design.md): t = alloc_after - id *
 * time_step (a run's allocations come at a steady rate, so t stays small),
 * life = dealloc_after - alloc_after (NULL: never freed), th = temporary |
 * alloc_thread << 1 | dealloc_thread << 24 (the last only when another
 * thread freed it: usually th is one byte), kind from stacks. addr stays as
 * it is: a join on it (address reuse) can then use an automatic index, which
 * SQLite cannot build on an expression. The step is written into the view as
 * a number (an int64 value, not input text) and into meta as row_time_step.
 * weight is the inverse of the row's probability of being
 * recorded: 1.0 on a full profile. Returns 0 or -1. */
static int rh_db_view(struct rh_db *d, const struct rh_rip *r, char *err, size_t errlen)
{
    char sql[1536], w[256];
    rh_sample_weight_sql(r, w, sizeof w); /* 1.0 on a full profile */
    long long step = (long long)d->time_step;
    snprintf(sql, sizeof sql,
             "CREATE VIEW allocations AS SELECT a.id AS id, a.t + a.id * %lld AS alloc_after,"
             " a.t + a.id * %lld + a.life AS dealloc_after, a.bt AS bt, a.size AS size,"
             " a.addr AS addr, (a.th >> 1) & 8388607 AS alloc_thread,"
             " CASE WHEN a.life IS NOT NULL THEN coalesce(nullif(a.th >> 24, 0),"
             " (a.th >> 1) & 8388607) END AS dealloc_thread,"
             " coalesce((SELECT s.kind FROM stacks s WHERE s.id = a.bt), 'unknown') AS kind,"
             " a.th & 1 AS temporary, %s AS weight FROM alloc_rows a;"
             "INSERT OR REPLACE INTO meta(key, value) VALUES('row_time_step', %lld);",
             step, step, w, step);
    return rh_db_exec(d, sql, err, errlen);
}

void rh_db_set_time_step(struct rh_db *d, int64_t step_ns)
{
    d->time_step = step_ns > 0 ? step_ns : 0;
}

int rh_db_finish(struct rh_db *d, struct rh_rip *r, const struct rh_merge_stats *st,
                 struct rh_symbolizer *sym, int force, char *err, size_t errlen)
{
    uint64_t undefined = 0;
    /* RHEAPER_CONVERT_STATS (benchmarks, bench/): one line with each
     * thread's CPU time, to tell which thread bounds the conversion. */
    const char *stats = getenv("RHEAPER_CONVERT_STATS");
    double merge_cpu = rh_db_thread_cpu();
    if ((d->ring && rh_db_ring_flush(d, d->next_id + RH_DB_RING)) || rh_db_hand_over(d) ||
        rh_db_writer_stop(d) || rh_db_side_flush(d)) {
        snprintf(err, errlen, "%s", d->err);
        goto fail;
    }
    rh_db_free_rows(d);
    sqlite3_finalize(d->ins);
    d->ins = NULL;
    rh_mmaps_close(&d->mm);
    rh_memory_close(&d->mem);
    sqlite3_finalize(d->cpu_ins);
    d->cpu_ins = NULL;
    if (rh_db_stacks(d, r, sym, &undefined, err, errlen) ||
        rh_db_threads_modules(d, r, err, errlen) || rh_db_meta(d, r, st, undefined, err, errlen) ||
        rh_db_meta_debug(d, sym, err, errlen) ||
        (d->agg && rh_agg_write(d->agg, d->db, err, errlen)) ||
        (d->agg && rh_series_write(d->series, d->db,
                                   d->agg->tl_ok && d->agg->bscale == 1 && d->min_lifetime_ns == 0,
                                   d->agg->tl_ok, err, errlen)) ||
        (d->post && rh_post_write(d->post, d->db, err, errlen)) ||
        (d->chains && rh_chains_write(d->chains, d->db, err, errlen)) ||
        rh_db_view(d, r, err, errlen) || rh_db_exec(d, rh_post, err, errlen) ||
        rh_callsite_write(d->db, err, errlen) || rh_regions_write(d->db, r, err, errlen) ||
        rh_db_exec(d, "COMMIT;", err, errlen))
        goto fail;
    if (sqlite3_close(d->db) != SQLITE_OK) {
        rh_db_seterr(err, errlen, "%s: cannot close (%s)", rh_db_tmp, sqlite3_errmsg(d->db));
        goto fail;
    }
    d->db = NULL;
    if (stats && *stats && strcmp(stats, "0"))
        fprintf(stderr,
                "rheaper-convert: stats: merge thread %.3f s CPU, writer thread %.3f s CPU,"
                " finishing %.3f s CPU\n",
                merge_cpu, d->writer_cpu, rh_db_thread_cpu() - merge_cpu);
    if (rh_db_place(d, force, err, errlen))
        goto fail;
    rh_db_tmp[0] = 0;
    rh_db_tmp_close();
    rh_series_free(d->series);
    free(d);
    return 0;
fail:
    rh_db_abort(d);
    return -1;
}

void rh_db_set_agg(struct rh_db *d, struct rh_agg *agg, int64_t min_lifetime_ns)
{
    d->agg = agg;
    d->min_lifetime_ns = min_lifetime_ns;
    rh_series_free(d->series);
    /* out of memory: no allocs series, the charts count rows */
    d->series = agg && agg->span > 0 && min_lifetime_ns == 0 ? rh_series_new(agg->span) : NULL;
}

void rh_db_set_post(struct rh_db *d, struct rh_post *p)
{
    d->post = p;
}

void rh_db_set_chains(struct rh_db *d, struct rh_chains *c)
{
    d->chains = c;
}

const char *rh_db_error(const struct rh_db *d)
{
    return d->err;
}
