/* rh_query_region.c: the regions of region allocators (memory contexts,
 * pools) as one listing: `rheaper top --by region` and `rheaper leaks --by
 * region`.
 *
 * The converter stores each region (tables `regions`, `region_blocks`,
 * convert/rh_db_regions.c). Regions with one name (every query's
 * ExecutorState) are one row here: how many regions had the name, their
 * chunks and bytes, and the chunks and bytes never freed, by their reset,
 * delete or free. A database without the tables (written before regions
 * existed) has no regions.
 */
#include <stdio.h>
#include <string.h>

#include "rh_query.h"

int rh_region_available(sqlite3 *db)
{
    sqlite3_stmt *st = rh_sql_prepare(
        db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'region_blocks'");
    int ok = 0;
    if (st && sqlite3_step(st) == SQLITE_ROW)
        ok = sqlite3_column_int(st, 0) > 0;
    sqlite3_finalize(st);
    if (!ok)
        return 0;
    st = rh_sql_prepare(db, "SELECT EXISTS(SELECT 1 FROM region_blocks)");
    ok = st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return ok;
}

sqlite3_stmt *rh_region_stmt(sqlite3 *db, int leaks, const char *order, int n)
{
    const char *col = leaks || (order && !strcmp(order, "leaked")) ? "leaked_bytes"
                      : order && !strcmp(order, "count")           ? "blocks"
                                                                   : "bytes";
    char sql[2048];
    snprintf(sql, sizeof sql,
             "SELECT region, regions, blocks, bytes, leaked_blocks, leaked_bytes FROM"
             " (SELECT coalesce(g.name, 'region') AS region, count(DISTINCT g.id) AS regions,"
             " count(a.id) AS blocks, coalesce(sum(a.size), 0) AS bytes,"
             " coalesce(sum(a.id IS NOT NULL AND a.dealloc_after IS NULL), 0) AS leaked_blocks,"
             " coalesce(sum(CASE WHEN a.id IS NOT NULL AND a.dealloc_after IS NULL"
             " THEN a.size ELSE 0 END), 0) AS leaked_bytes"
             " FROM regions g LEFT JOIN region_blocks rb ON rb.region = g.id"
             " LEFT JOIN allocations a ON a.id = rb.id GROUP BY coalesce(g.name, 'region'))"
             " WHERE %s > 0 ORDER BY %s DESC, bytes DESC, region LIMIT ?1",
             leaks ? "leaked_blocks" : "blocks", col);
    sqlite3_stmt *st = rh_sql_prepare(db, sql);
    if (st)
        sqlite3_bind_int64(st, 1, n);
    return st;
}
