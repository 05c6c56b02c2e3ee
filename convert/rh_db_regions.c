/* rh_db_regions.c: the regions of region allocators in the database.
 *
 * What rh_regions.c kept while merging becomes the tables `regions` (id,
 * name, parent, created ns) and `region_blocks` (id = allocations.id of a
 * region chunk, region), and two views: `region_stats` (per region: chunks,
 * bytes, chunks and bytes never freed) and `region_timeline` (each region's
 * live bytes after each of its chunks' allocations and frees: "which region
 * grows" is one query). The tables exist, empty, in every database. The
 * allocator's own blocks (malloc calls inside a region function) get the kind
 * `region-blocks`.
 */
#include <sqlite3.h>
#include <stdio.h>

#include "rh_core.h"
#include "rh_db.h"

static const char rh_regions_schema[] =
    "CREATE TABLE regions(id INTEGER PRIMARY KEY, name TEXT, parent INTEGER, created INTEGER);"
    "CREATE TABLE region_blocks(id INTEGER PRIMARY KEY, region INTEGER NOT NULL);"
    "CREATE INDEX region_blocks_region ON region_blocks(region);"
    /* one row per region: its chunks, bytes, and what is still live at the end */
    "CREATE VIEW region_stats AS SELECT g.id AS region, g.name AS name, g.parent AS parent,"
    " count(a.id) AS blocks, coalesce(sum(a.size), 0) AS bytes,"
    " coalesce(sum(a.id IS NOT NULL AND a.dealloc_after IS NULL), 0) AS leaked_blocks,"
    " coalesce(sum(CASE WHEN a.id IS NOT NULL AND a.dealloc_after IS NULL THEN a.size ELSE 0 END),"
    " 0) AS leaked_bytes"
    " FROM regions g LEFT JOIN region_blocks rb ON rb.region = g.id"
    " LEFT JOIN allocations a ON a.id = rb.id GROUP BY g.id;"
    /* each region's live bytes after each of its events: which region grows */
    "CREATE VIEW region_timeline AS SELECT region, t, sum(d) OVER (PARTITION BY region ORDER BY t"
    " ROWS UNBOUNDED PRECEDING) AS live_bytes FROM ("
    " SELECT rb.region AS region, a.alloc_after AS t, a.size AS d FROM region_blocks rb"
    " JOIN allocations a ON a.id = rb.id UNION ALL"
    " SELECT rb.region, a.dealloc_after, -a.size FROM region_blocks rb"
    " JOIN allocations a ON a.id = rb.id WHERE a.dealloc_after IS NOT NULL);";

int rh_regions_write(sqlite3 *db, struct rh_rip *r, char *err, size_t errlen)
{
    struct rh_regions *g = r->regions;
    char *msg = NULL;
    if (sqlite3_exec(db, rh_regions_schema, NULL, NULL, &msg) != SQLITE_OK)
        goto fail;
    if (!g)
        return 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "INSERT INTO regions VALUES(?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
        goto fail;
    for (size_t i = 0; i < g->ndefs; i++) {
        const struct rh_region_def *d = &g->defs[i];
        sqlite3_bind_int64(st, 1, (sqlite3_int64)(i + 1));
        if (d->kind)
            sqlite3_bind_text(st, 2, rh_kind_name(d->kind), -1, SQLITE_TRANSIENT);
        else
            sqlite3_bind_null(st, 2);
        if (d->parent)
            sqlite3_bind_int64(st, 3, d->parent);
        else
            sqlite3_bind_null(st, 3);
        sqlite3_bind_int64(st, 4, d->created);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            goto fail;
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO region_blocks VALUES(?,?)", -1, &st, NULL) !=
        SQLITE_OK)
        goto fail;
    for (size_t i = 0; i < g->nblocks; i++) {
        sqlite3_bind_int64(st, 1, (sqlite3_int64)g->blocks[i].row);
        sqlite3_bind_int64(st, 2, g->blocks[i].region);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            goto fail;
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    /* The region allocators' own memory: a block from the malloc family whose
     * stack passes through a region function (the kind of a region chunk) is
     * the allocator's, not the program's; its kind says so, so that a listing
     * of chunks does not count the bytes twice. */
    if (sqlite3_exec(db,
                     "CREATE TEMP TABLE rh_region_fns AS SELECT DISTINCT st.kind AS fn FROM"
                     " region_blocks rb JOIN alloc_rows r ON r.id = rb.id"
                     " JOIN stacks st ON st.id = r.bt;",
                     NULL, NULL, &msg) != SQLITE_OK)
        goto fail;
    /* and the functions that create regions (their context headers) */
    if (sqlite3_prepare_v2(db, "INSERT INTO temp.rh_region_fns VALUES(?)", -1, &st, NULL) !=
        SQLITE_OK)
        goto fail;
    for (size_t i = 0; i < g->ncreators; i++) {
        sqlite3_bind_text(st, 1, rh_kind_name(g->creators[i]), -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) != SQLITE_DONE) {
            sqlite3_finalize(st);
            goto fail;
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (sqlite3_exec(db,
                     "UPDATE stacks SET kind = 'region-blocks' WHERE kind IN ('malloc', 'calloc',"
                     " 'realloc', 'posix_memalign', 'aligned_alloc', 'memalign', 'valloc',"
                     " 'pvalloc', 'reallocarray', 'new', 'new[]') AND id IN (SELECT b.id FROM"
                     " backtraces b WHERE b.sym IN (SELECT fn FROM temp.rh_region_fns));"
                     "DROP TABLE temp.rh_region_fns;",
                     NULL, NULL, &msg) != SQLITE_OK)
        goto fail;
    return 0;
fail:
    snprintf(err, errlen, "cannot write the regions (%s)", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return -1;
}
