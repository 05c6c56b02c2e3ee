/* rh_postings.c: the per-stack row index, table stack_rows.
 *
 * alloc_rows has no index on bt (it would cost about 10 bytes per row), so
 * "the rows of these stacks" would be a scan of every row. This file
 * writes a compact inverted index instead: per stack, its allocation ids in
 * increasing order, in chunks
 *
 *   stack_rows(bt, first_id, n, ids, PRIMARY KEY(bt, first_id)) WITHOUT ROWID
 *
 * where first_id is the chunk's first id, n the number of ids in it and ids
 * the other n - 1 ids as LEB128 varints of their differences to the id
 * before (docs/design.md). It costs about 2 bytes per row.
 *
 * The merge (rh_merge.c) numbers allocations in increasing order and hands
 * each (stack, id) to rh_post_add() through the sink: per stack, one small
 * buffer, grown to RH_POST_CHUNK bytes and then appended to an unlinked temp
 * file beside the database, so memory grows with distinct stacks only, never
 * with events. Each chunk in the file names the file offset of its stack's
 * chunk before it, so a stack's chunks form a chain that ends at the stack's
 * last one. The merge thread does not own the SQLite connection (rh_db.c's
 * writer thread does); rh_post_write(), called inside the conversion's
 * transaction by rh_db_finish(), writes the table in key order (stacks by
 * id, each stack's chunks by first id, read back along its chain), so the
 * table's pages are full and nothing is sorted: no TEMP table, no SQLite
 * sorter, whose memory grew with the index. An id may name a row that
 * culling (--min-lifetime) did not write: readers skip ids without a row.
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

#include "rh_check.h"
#include "rh_db.h"
#include "rh_util.h"

#define RH_POST_CHUNK 256 /* bytes of varints per chunk before it is flushed */
/* A chunk's record in the temp file: varints prev, first, n, len, then len
 * bytes of id differences. prev is 1 + the offset of the stack's chunk
 * before (0: none). len stays below RH_POST_CHUNK + 10. */
#define RH_POST_REC (4 * 10 + RH_POST_CHUNK + 10)

struct rh_post_stack {
    uint64_t bt;       /* the stack's id (stacks.id) */
    uint64_t first;    /* the chunk's first id; 0: no chunk open */
    uint64_t last;     /* the last id added */
    uint32_t n;        /* ids in the chunk, first included */
    uint32_t len, cap; /* bytes of varints in buf */
    uint8_t *buf;
    uint64_t min_size, max_size; /* over every id added (max 0: none yet) */
    int sized;
    uint64_t tail; /* 1 + the temp file offset of the last full chunk; 0: none */
};

struct rh_post {
    struct rh_post_stack *st; /* by stack index (rip->stacks) */
    size_t nst, capst;
    FILE *f;         /* full chunks: records of RH_POST_REC bytes at most */
    uint64_t off;    /* bytes written to f */
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
    uint8_t *e = rip_put_varint(h, s->tail);
    e = rip_put_varint(e, s->first);
    e = rip_put_varint(e, s->n);
    e = rip_put_varint(e, s->len);
    size_t k = (size_t)(e - h);
    if (!p->failed && (fwrite(h, 1, k, p->f) != k || fwrite(s->buf, 1, s->len, p->f) != s->len)) {
        p->failed = 1;
        p->err_no = errno;
    }
    s->tail = p->off + 1;
    p->off += k + s->len;
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
    if (s->first && RH_NEVER(s->bt != bt || id <= s->last,
                             "stack index %u: id %llu (stack %llu) after %llu (stack %llu)", si,
                             (unsigned long long)id, (unsigned long long)bt,
                             (unsigned long long)s->last, (unsigned long long)s->bt))
        rh_post_spill(p, s); /* release: the chunk so far is kept, a new one starts */
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

/* One chunk's record of the temp file at offset off, into rec (at least
 * RH_POST_REC bytes): its fields, and *ids pointing at its id differences
 * inside rec. Reads only the header when want_ids is 0. Returns 0, or -1 when
 * the file is short or the record does not parse. */
static int rh_post_rec(struct rh_post *p, uint64_t off, uint8_t *rec, int want_ids, uint64_t *prev,
                       uint64_t *first, uint64_t *n, uint64_t *len, const uint8_t **ids)
{
    ssize_t got = pread(fileno(p->f), rec, want_ids ? RH_POST_REC : 40, (off_t)off);
    if (got <= 0)
        return -1;
    const uint8_t *q = rec, *end = rec + got;
    if (rip_get_varint(&q, end, prev) || rip_get_varint(&q, end, first) ||
        rip_get_varint(&q, end, n) || rip_get_varint(&q, end, len) || *prev > off ||
        *len >= RH_POST_CHUNK + 10 || (want_ids && *len > (uint64_t)(end - q)))
        return -1;
    *ids = q;
    return 0;
}

/* Prepares sql into *st. Returns 0, or -1 with err set. */
static int rh_post_prep(sqlite3 *db, const char *sql, sqlite3_stmt **st, char *err, size_t errlen)
{
    if (sqlite3_prepare_v2(db, sql, -1, st, NULL) == SQLITE_OK)
        return 0;
    snprintf(err, errlen, "stack_rows: %s", sqlite3_errmsg(db));
    return -1;
}

static const struct rh_post_stack *rh_post_sort_st;

static int rh_post_bt_cmp(const void *a, const void *b)
{
    uint64_t x = rh_post_sort_st[*(const uint32_t *)a].bt;
    uint64_t y = rh_post_sort_st[*(const uint32_t *)b].bt;
    return x < y ? -1 : x > y;
}

/* Inserts stack s's chunks into stack_rows by increasing first id: its chain
 * read backwards for the offsets (into *offs, grown as needed: 8 bytes per
 * chunk of this one stack, freed by the caller), then each record again.
 * Returns 0 or -1 with err set. */
static int rh_post_stack_rows(struct rh_post *p, sqlite3 *db, sqlite3_stmt *ins,
                              const struct rh_post_stack *s, uint64_t **offs, size_t *cap,
                              char *err, size_t errlen)
{
    uint8_t rec[RH_POST_REC];
    uint64_t prev, first, n, len;
    const uint8_t *ids;
    size_t k = 0;
    for (uint64_t at = s->tail; at; at = prev) {
        if (rh_grow(offs, cap, k + 1, sizeof **offs)) {
            snprintf(err, errlen, "stack_rows: out of memory");
            return -1;
        }
        (*offs)[k++] = at - 1;
        if (rh_post_rec(p, at - 1, rec, 0, &prev, &first, &n, &len, &ids) || prev >= at)
            goto cut;
    }
    while (k--) {
        if (rh_post_rec(p, (*offs)[k], rec, 1, &prev, &first, &n, &len, &ids))
            goto cut;
        sqlite3_bind_int64(ins, 1, (sqlite3_int64)s->bt);
        sqlite3_bind_int64(ins, 2, (sqlite3_int64)first);
        sqlite3_bind_int64(ins, 3, (sqlite3_int64)n);
        sqlite3_bind_blob(ins, 4, ids, (int)len, SQLITE_STATIC);
        int r = sqlite3_step(ins);
        sqlite3_reset(ins);
        if (r != SQLITE_DONE) {
            snprintf(err, errlen, "stack_rows: %s", sqlite3_errmsg(db));
            return -1;
        }
    }
    return 0;
cut:
    snprintf(err, errlen, "stack_rows: its temp file was cut short");
    return -1;
}

int rh_post_write(struct rh_post *p, sqlite3 *db, char *err, size_t errlen)
{
    sqlite3_stmt *ins = NULL;
    uint32_t *order = NULL;
    uint64_t *offs = NULL;
    size_t capoffs = 0;
    int rc = -1;
    for (size_t i = 0; i < p->nst; i++)
        if (p->st[i].first)
            rh_post_spill(p, &p->st[i]);
    if (p->failed || fflush(p->f) != 0) {
        snprintf(err, errlen, "stack_rows: cannot write its temp file (%s)",
                 strerror(p->failed ? p->err_no : errno));
        return -1;
    }
    if (!(order = malloc((p->nst ? p->nst : 1) * sizeof *order))) {
        snprintf(err, errlen, "stack_rows: out of memory");
        return -1;
    }
    size_t norder = 0;
    for (size_t i = 0; i < p->nst; i++)
        if (p->st[i].tail)
            order[norder++] = (uint32_t)i;
    rh_post_sort_st = p->st;
    qsort(order, norder, sizeof *order, rh_post_bt_cmp);
    if (rh_post_exec(db,
                     "CREATE TABLE stack_rows(bt INTEGER NOT NULL, first_id INTEGER NOT NULL,"
                     " n INTEGER NOT NULL, ids BLOB NOT NULL, PRIMARY KEY(bt, first_id))"
                     " WITHOUT ROWID;",
                     err, errlen) ||
        rh_post_prep(db, "INSERT INTO main.stack_rows VALUES(?,?,?,?)", &ins, err, errlen))
        goto out;
    for (size_t i = 0; i < norder; i++)
        if (rh_post_stack_rows(p, db, ins, &p->st[order[i]], &offs, &capoffs, err, errlen))
            goto out;
    sqlite3_finalize(ins);
    ins = NULL;
    if (rh_post_exec(db,
                     "CREATE TABLE stack_sizes(bt INTEGER PRIMARY KEY, min_size INTEGER,"
                     " max_size INTEGER);",
                     err, errlen) ||
        rh_post_prep(db, "INSERT OR REPLACE INTO stack_sizes VALUES(?,?,?)", &ins, err, errlen))
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
    free(order);
    free(offs);
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
