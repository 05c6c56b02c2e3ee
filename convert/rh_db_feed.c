/* rh_db_feed.c: rh_feed, a table-valued function over rows held in C memory.
 *
 * The converter inserts millions of rows. Executing one INSERT per row costs
 * more in SQLite's per-statement work (bind, step, halt, reset, a fresh
 * cursor that seeks the table again) than in storing the row. Instead the
 * converter fills an array of rows in C and inserts the whole batch with one
 * statement:
 *
 *     INSERT INTO t(a, b, c) SELECT c0, c1, c2 FROM rh_feed(?1)
 *
 * with ?1 bound by sqlite3_bind_pointer() to a struct rh_feed. rh_feed is an
 * eponymous-only virtual table (SQLite's documented extension API, like its
 * carray extension): it is registered on the converter's connection only and
 * never stored in the schema, so the database stays plain for the sqlite3
 * shell and for every other reader.
 *
 * The rows are int64 values, RH_FEED_COLS columns c0..c7 (a row uses the
 * first ncols), and each may be NULL (a bit per column). The values are read
 * while the statement runs; the caller keeps them unchanged until it is
 * reset.
 */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "rh_db.h"

/* The pointer type name sqlite3_bind_pointer() and sqlite3_value_pointer()
 * must agree on. */
#define RH_FEED_PTR "rh_feed"

struct rh_feed_cursor {
    sqlite3_vtab_cursor base;
    const struct rh_feed *f; /* NULL: no feed bound (no rows) */
    size_t i;                /* the current row */
};

static int rh_feed_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                           sqlite3_vtab **out, char **err)
{
    (void)aux;
    (void)argc;
    (void)argv;
    (void)err;
    int rc = sqlite3_declare_vtab(db, "CREATE TABLE x(c0, c1, c2, c3, c4, c5, c6, c7,"
                                      " feed HIDDEN)");
    if (rc != SQLITE_OK)
        return rc;
    sqlite3_vtab *v = sqlite3_malloc(sizeof *v);
    if (!v)
        return SQLITE_NOMEM;
    memset(v, 0, sizeof *v);
    *out = v;
    return SQLITE_OK;
}

static int rh_feed_disconnect(sqlite3_vtab *v)
{
    sqlite3_free(v);
    return SQLITE_OK;
}

static int rh_feed_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out)
{
    (void)v;
    struct rh_feed_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    *out = &c->base;
    return SQLITE_OK;
}

static int rh_feed_close(sqlite3_vtab_cursor *cur)
{
    sqlite3_free(cur);
    return SQLITE_OK;
}

/* Takes the feed from the hidden column's argument (idxNum 1), else none. */
static int rh_feed_filter(sqlite3_vtab_cursor *cur, int idx, const char *idxstr, int argc,
                          sqlite3_value **argv)
{
    (void)idxstr;
    struct rh_feed_cursor *c = (struct rh_feed_cursor *)cur;
    c->f = idx == 1 && argc == 1 ? sqlite3_value_pointer(argv[0], RH_FEED_PTR) : NULL;
    c->i = 0;
    return SQLITE_OK;
}

static int rh_feed_next(sqlite3_vtab_cursor *cur)
{
    ((struct rh_feed_cursor *)cur)->i++;
    return SQLITE_OK;
}

static int rh_feed_eof(sqlite3_vtab_cursor *cur)
{
    const struct rh_feed_cursor *c = (const struct rh_feed_cursor *)cur;
    return !c->f || c->i >= c->f->nrows;
}

static int rh_feed_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    const struct rh_feed_cursor *c = (const struct rh_feed_cursor *)cur;
    const struct rh_feed *f = c->f;
    if (col >= f->ncols || (f->nulls && (f->nulls[c->i] >> col & 1)))
        sqlite3_result_null(ctx);
    else
        sqlite3_result_int64(ctx, f->vals[c->i * (size_t)f->ncols + (size_t)col]);
    return SQLITE_OK;
}

static int rh_feed_rowid(sqlite3_vtab_cursor *cur, sqlite_int64 *rowid)
{
    *rowid = (sqlite_int64)((const struct rh_feed_cursor *)cur)->i + 1;
    return SQLITE_OK;
}

/* The plan: the feed argument (an equality on the hidden column) is needed;
 * without it the table is empty. */
static int rh_feed_best_index(sqlite3_vtab *v, sqlite3_index_info *info)
{
    (void)v;
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *k = &info->aConstraint[i];
        if (k->iColumn == RH_FEED_COLS && k->op == SQLITE_INDEX_CONSTRAINT_EQ) {
            if (!k->usable)
                return SQLITE_CONSTRAINT; /* try another plan */
            info->aConstraintUsage[i].argvIndex = 1;
            info->aConstraintUsage[i].omit = 1;
            info->idxNum = 1;
            info->estimatedCost = 1;
            return SQLITE_OK;
        }
    }
    info->idxNum = 0;
    info->estimatedCost = 1e12;
    return SQLITE_OK;
}

static const sqlite3_module rh_feed_module = {
    .iVersion = 0,
    .xCreate = NULL, /* eponymous-only: never CREATE VIRTUAL TABLE, never in the schema */
    .xConnect = rh_feed_connect,
    .xBestIndex = rh_feed_best_index,
    .xDisconnect = rh_feed_disconnect,
    .xDestroy = rh_feed_disconnect,
    .xOpen = rh_feed_open,
    .xClose = rh_feed_close,
    .xFilter = rh_feed_filter,
    .xNext = rh_feed_next,
    .xEof = rh_feed_eof,
    .xColumn = rh_feed_column,
    .xRowid = rh_feed_rowid,
};

int rh_feed_register(sqlite3 *db)
{
    return sqlite3_create_module(db, "rh_feed", &rh_feed_module, NULL) == SQLITE_OK ? 0 : -1;
}

int rh_feed_bind(sqlite3_stmt *stmt, const struct rh_feed *f)
{
    return sqlite3_bind_pointer(stmt, 1, (void *)f, RH_FEED_PTR, NULL) == SQLITE_OK ? 0 : -1;
}

int rh_feed_insert(sqlite3_stmt *st, const struct rh_feed *f)
{
    if (!f->nrows)
        return 0;
    if (rh_feed_bind(st, f))
        return -1;
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}
