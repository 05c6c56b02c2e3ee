/* rh_chains.c: the realloc chains, table realloc_chains.
 *
 * bytehound's server groups the blocks that reallocs moved one into the next
 * into a chain (chain_length, position_in_chain, chain_lifetime,
 * chain_deallocation of its allocations). In the database a realloc ends one
 * row of alloc_rows and starts another (docs/sql.md); the merge (rh_merge.c)
 * pairs the two halves of each realloc in the thread that made it and hands
 * the link (prev, id) here through the sink, in increasing id order. The
 * links go to an unlinked temp file beside the database (rh_spill_open) as
 * varints of their differences, so memory does not grow with events; the
 * merge thread does not own the SQLite connection. rh_chains_write(), called
 * inside the conversion's transaction by rh_db_finish(), reads them back and
 * writes
 *
 *   realloc_chains(id INTEGER PRIMARY KEY, prev, first, pos)
 *
 * one row per block a realloc started: prev the row it replaced, first the
 * chain's first row (an allocation no realloc started), pos its place in the
 * chain (the first row is 0 and has no row here). first and pos come from
 * prev's own row, a primary-key lookup, since prev < id. The index
 * realloc_chains_first(first, pos) finds a chain's length and last row. The
 * table exists in every database converted since; an id may name a row that
 * culling (--min-lifetime) did not write.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "rh_db.h"
#include "rh_util.h"

struct rh_chains {
    char *near;    /* the database path the temp file goes beside */
    FILE *f;       /* the links; NULL until the first */
    uint64_t last; /* the id of the last link added */
    uint64_t n;    /* links added */
    int failed;    /* the temp file could not be made or written: errno */
};

struct rh_chains *rh_chains_new(const char *db_path)
{
    struct rh_chains *c = calloc(1, sizeof *c);
    if (c && !(c->near = strdup(db_path))) {
        free(c);
        c = NULL;
    }
    return c;
}

/* Appends v as a LEB128 varint. */
static void rh_chains_put(FILE *f, uint64_t v)
{
    while (v >= 0x80) {
        putc_unlocked((int)(v & 0x7f) | 0x80, f);
        v >>= 7;
    }
    putc_unlocked((int)v, f);
}

int rh_chains_add(struct rh_chains *c, uint64_t prev, uint64_t id)
{
    if (c->failed)
        return 0; /* said at write time; the rows are not lost */
    if (!c->f && !(c->f = rh_spill_open(c->near, "chains"))) {
        c->failed = errno ? errno : EIO;
        return 0;
    }
    if (id <= c->last || prev >= id)
        return 0; /* not in order: not a link the merge makes */
    rh_chains_put(c->f, id - c->last);
    rh_chains_put(c->f, id - prev);
    c->last = id;
    c->n++;
    return 0;
}

int rh_chains_write(struct rh_chains *c, sqlite3 *db, char *err, size_t errlen)
{
    if (sqlite3_exec(db,
                     "CREATE TABLE realloc_chains(id INTEGER PRIMARY KEY, prev INTEGER NOT NULL,"
                     " first INTEGER NOT NULL, pos INTEGER NOT NULL);",
                     NULL, NULL, NULL) != SQLITE_OK)
        goto sql_fail;
    if (c->failed || (c->f && (fflush(c->f) || ferror(c->f)))) {
        snprintf(err, errlen, "%s.chains.*: cannot write a temp file (%s)", c->near,
                 strerror(c->failed ? c->failed : errno));
        return -1;
    }
    if (c->n) {
        sqlite3_stmt *get = NULL, *ins = NULL;
        if (sqlite3_prepare_v2(db, "SELECT first, pos FROM realloc_chains WHERE id = ?1", -1,
                               &get, NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(db, "INSERT INTO realloc_chains VALUES(?1, ?2, ?3, ?4)", -1, &ins,
                               NULL) != SQLITE_OK) {
            sqlite3_finalize(get);
            goto sql_fail;
        }
        rewind(c->f);
        uint64_t id = 0;
        for (uint64_t i = 0; i < c->n; i++) {
            uint64_t did, dprev;
            if (rh_spill_get(c->f, &did) || rh_spill_get(c->f, &dprev)) {
                snprintf(err, errlen, "%s.chains.*: the temp file reads back short", c->near);
                sqlite3_finalize(get);
                sqlite3_finalize(ins);
                return -1;
            }
            id += did;
            uint64_t prev = id - dprev;
            int64_t first = (int64_t)prev, pos = 0;
            sqlite3_bind_int64(get, 1, (int64_t)prev);
            if (sqlite3_step(get) == SQLITE_ROW) {
                first = sqlite3_column_int64(get, 0);
                pos = sqlite3_column_int64(get, 1);
            }
            sqlite3_reset(get);
            sqlite3_bind_int64(ins, 1, (int64_t)id);
            sqlite3_bind_int64(ins, 2, (int64_t)prev);
            sqlite3_bind_int64(ins, 3, first);
            sqlite3_bind_int64(ins, 4, pos + 1);
            if (sqlite3_step(ins) != SQLITE_DONE) {
                sqlite3_finalize(get);
                sqlite3_finalize(ins);
                goto sql_fail;
            }
            sqlite3_reset(ins);
        }
        sqlite3_finalize(get);
        sqlite3_finalize(ins);
    }
    if (sqlite3_exec(db, "CREATE INDEX realloc_chains_first ON realloc_chains(first, pos);",
                     NULL, NULL, NULL) != SQLITE_OK)
        goto sql_fail;
    return 0;
sql_fail:
    snprintf(err, errlen, "realloc_chains: SQLite error (%s)", sqlite3_errmsg(db));
    return -1;
}

void rh_chains_free(struct rh_chains *c)
{
    if (!c)
        return;
    if (c->f)
        fclose(c->f);
    free(c->near);
    free(c);
}
