/* rh_postings.c: the per-stack row index, table stack_rows.
 *
 * alloc_rows has no index on bt (it would cost about 10 bytes per row, issue
 * 8), so "the rows of these stacks" would be a scan of every row. This file
 * writes a compact inverted index instead: per stack, its allocation ids in
 * increasing order, in chunks
 *
 *   stack_rows(bt, first_id, n, ids, PRIMARY KEY(bt, first_id)) WITHOUT ROWID
 *
 * where first_id is the chunk's first id, n the number of ids in it and ids
 * the other n - 1 ids as LEB128 varints of their differences to the id
 * before (README "How the rows are stored"). It costs about 2 bytes per row.
 *
 * The merge (rh_merge.c) numbers allocations in increasing order and hands
 * each (stack, id) to rh_post_add() through the sink: per stack, one small
 * buffer, grown to RH_POST_CHUNK bytes and then appended to an unlinked temp
 * file beside the database, so memory grows with distinct stacks only, never
 * with events. The merge thread does not own the SQLite connection (rh_db.c's
 * writer thread does); rh_post_write(), called inside the conversion's
 * transaction by rh_db_finish(), loads the temp file and the last partial
 * chunks into the table, sorted by key through a TEMP table so the table's
 * pages are full. An id may name a row that culling (--min-lifetime) did not
 * write: readers skip ids without a row.
 *
 * Beside it, stack_sizes(bt, min_size, max_size): the smallest and largest
 * allocation of each stack, over every allocation like stack_stats (culled
 * ones included), for bytehound's all.min_size / all.max_size of a group.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "rh_convert.h"

#define RH_POST_CHUNK 256 /* bytes of varints per chunk before it is flushed */
#define RH_POST_SORT_KIB "4096" /* the sort's memory (KiB): rh_post_write() */

struct rh_post_stack {
    uint64_t bt;       /* the stack's id (stacks.id) */
    uint64_t first;    /* the chunk's first id; 0: no chunk open */
    uint64_t last;     /* the last id added */
    uint32_t n;        /* ids in the chunk, first included */
    uint32_t len, cap; /* bytes of varints in buf */
    uint8_t *buf;
    uint64_t min_size, max_size; /* over every id added (max 0: none yet) */
    int sized;
};

struct rh_post {
    struct rh_post_stack *st; /* by stack index (rip->stacks) */
    size_t nst, capst;
    FILE *f;         /* full chunks: varint bt, first, n, len, then len bytes */
    uint64_t chunks; /* in f */
    int failed;      /* a write to f failed (errno in err_no) */
    int err_no;
};

struct rh_post *rh_post_new(const char *db_path)
{
    struct rh_post *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->f = rh_spill_open(db_path, "rows"); /* "<db>.rows.XXXXXX", unlinked */
    if (!p->f) {
        free(p);
        return NULL;
    }
    return p;
}

/* Appends stack s's open chunk to the temp file and closes it. */
static void rh_post_spill(struct rh_post *p, struct rh_post_stack *s)
{
    uint8_t h[40];
    uint8_t *e = rip_put_varint(h, s->bt);
    e = rip_put_varint(e, s->first);
    e = rip_put_varint(e, s->n);
    e = rip_put_varint(e, s->len);
    size_t k = (size_t)(e - h);
    if (!p->failed && (fwrite(h, 1, k, p->f) != k || fwrite(s->buf, 1, s->len, p->f) != s->len)) {
        p->failed = 1;
        p->err_no = errno;
    }
    p->chunks++;
    s->first = 0;
    s->n = s->len = 0;
}

int rh_post_add(struct rh_post *p, uint32_t si, uint64_t bt, uint64_t id, uint64_t size)
{
    if (si >= p->nst) {
        if (rh_grow(&p->st, &p->capst, (size_t)si + 1, sizeof *p->st))
            return -1;
        memset(p->st + p->nst, 0, ((size_t)si + 1 - p->nst) * sizeof *p->st);
        p->nst = (size_t)si + 1;
    }
    struct rh_post_stack *s = &p->st[si];
    if (!s->sized || size < s->min_size)
        s->min_size = size;
    if (!s->sized || size > s->max_size)
        s->max_size = size;
    s->sized = 1;
    if (s->first && (s->bt != bt || id <= s->last)) /* cannot happen: ids increase */
        rh_post_spill(p, s);
    if (!s->first) {
        s->bt = bt;
        s->first = s->last = id;
        s->n = 1;
        return 0;
    }
    if (s->len + 10 > s->cap) {
        uint32_t nc = s->cap ? s->cap * 2 : 16;
        if (nc < s->len + 10)
            nc = s->len + 10;
        uint8_t *nb = realloc(s->buf, nc);
        if (!nb)
            return -1;
        s->buf = nb;
        s->cap = nc;
    }
    s->len = (uint32_t)(rip_put_varint(s->buf + s->len, id - s->last) - s->buf);
    s->last = id;
    s->n++;
    if (s->len >= RH_POST_CHUNK)
        rh_post_spill(p, s);
    return p->failed ? -1 : 0;
}

static int rh_post_exec(sqlite3 *db, const char *sql, char *err, size_t errlen)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK)
        return 0;
    snprintf(err, errlen, "stack_rows: %s", sqlite3_errmsg(db));
    return -1;
}

int rh_post_write(struct rh_post *p, void *dbv, char *err, size_t errlen)
{
    sqlite3 *db = dbv;
    sqlite3_stmt *ins = NULL;
    int rc = -1;
    for (size_t i = 0; i < p->nst; i++)
        if (p->st[i].first)
            rh_post_spill(p, &p->st[i]);
    if (p->failed || fflush(p->f) != 0 || fseek(p->f, 0, SEEK_SET) != 0) {
        snprintf(err, errlen, "stack_rows: cannot write its temp file (%s)",
                 strerror(p->failed ? p->err_no : errno));
        return -1;
    }
    /* chunks arrive in no key order: a TEMP table, then sorted into place */
    if (rh_post_exec(db,
                     "CREATE TABLE stack_rows(bt INTEGER NOT NULL, first_id INTEGER NOT NULL,"
                     " n INTEGER NOT NULL, ids BLOB NOT NULL, PRIMARY KEY(bt, first_id))"
                     " WITHOUT ROWID;"
                     "CREATE TEMP TABLE rh_post_load(bt, first_id, n, ids);",
                     err, errlen) ||
        sqlite3_prepare_v2(db, "INSERT INTO temp.rh_post_load VALUES(?,?,?,?)", -1, &ins, NULL))
        goto out;
    uint8_t buf[RH_POST_CHUNK + 16];
    for (uint64_t c = 0; c < p->chunks; c++) {
        uint64_t bt, first, n, len;
        if (rh_spill_get(p->f, &bt) || rh_spill_get(p->f, &first) || rh_spill_get(p->f, &n) ||
            rh_spill_get(p->f, &len) || len > sizeof buf || fread(buf, 1, len, p->f) != len) {
            snprintf(err, errlen, "stack_rows: its temp file was cut short");
            goto out;
        }
        sqlite3_bind_int64(ins, 1, (sqlite3_int64)bt);
        sqlite3_bind_int64(ins, 2, (sqlite3_int64)first);
        sqlite3_bind_int64(ins, 3, (sqlite3_int64)n);
        sqlite3_bind_blob(ins, 4, buf, (int)len, SQLITE_STATIC);
        int r = sqlite3_step(ins);
        sqlite3_reset(ins);
        if (r != SQLITE_DONE) {
            snprintf(err, errlen, "stack_rows: %s", sqlite3_errmsg(db));
            goto out;
        }
    }
    sqlite3_finalize(ins);
    ins = NULL;
    /* SQLite's sorter keeps up to the main cache_size in memory before it
     * spills sorted runs to temp files (64 MB in rh_db.c): that would be
     * about 34 MB at 10 M allocations and 64 MB from 30 M on, memory that
     * grows with the run. With a small cache the sort is external and its
     * memory fixed (and no slower: measured 0.37 s against 0.38 s at 10 M);
     * the rows are all written by now, so the page cache is not missed. The
     * setting is restored afterwards. */
    sqlite3_int64 cache = 0;
    if (sqlite3_prepare_v2(db, "PRAGMA main.cache_size", -1, &ins, NULL) != SQLITE_OK ||
        sqlite3_step(ins) != SQLITE_ROW) {
        snprintf(err, errlen, "stack_rows: %s", sqlite3_errmsg(db));
        goto out;
    }
    cache = sqlite3_column_int64(ins, 0);
    sqlite3_finalize(ins);
    ins = NULL;
    char restore[64];
    snprintf(restore, sizeof restore, "PRAGMA main.cache_size=%lld;", (long long)cache);
    if (rh_post_exec(db, "PRAGMA main.cache_size=-" RH_POST_SORT_KIB ";", err, errlen) ||
        rh_post_exec(db,
                     "INSERT INTO main.stack_rows SELECT * FROM temp.rh_post_load"
                     " ORDER BY bt, first_id;",
                     err, errlen) ||
        rh_post_exec(db, restore, err, errlen) ||
        rh_post_exec(db,
                     "DROP TABLE temp.rh_post_load;"
                     "CREATE TABLE stack_sizes(bt INTEGER PRIMARY KEY, min_size INTEGER,"
                     " max_size INTEGER);",
                     err, errlen) ||
        sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO stack_sizes VALUES(?,?,?)", -1, &ins, NULL))
        goto out;
    for (size_t i = 0; i < p->nst; i++) {
        const struct rh_post_stack *s = &p->st[i];
        if (!s->sized)
            continue;
        sqlite3_bind_int64(ins, 1, (sqlite3_int64)s->bt);
        sqlite3_bind_int64(ins, 2, (sqlite3_int64)s->min_size);
        sqlite3_bind_int64(ins, 3, (sqlite3_int64)s->max_size);
        int r = sqlite3_step(ins);
        sqlite3_reset(ins);
        if (r != SQLITE_DONE) {
            snprintf(err, errlen, "stack_sizes: %s", sqlite3_errmsg(db));
            goto out;
        }
    }
    rc = 0;
out:
    sqlite3_finalize(ins);
    return rc;
}

void rh_post_free(struct rh_post *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nst; i++)
        free(p->st[i].buf);
    free(p->st);
    if (p->f)
        fclose(p->f);
    free(p);
}
