/* wl_sqlite.c: benchmark workload 5, allocations made mostly inside a system
 * shared library (docs/benchmarks.md).
 *
 *   wl_sqlite N
 *
 * Inserts N rows into an indexed in-memory SQLite table through the system's
 * libsqlite3 (no rheaper inside, no frame pointers), then runs a grouping
 * query over them. Nearly every allocation is SQLite's own, reached through
 * the executable's interposed malloc and walked back through SQLite's frames
 * by CFI. Prints the row count it read back.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000;
    sqlite3 *db;
    sqlite3_stmt *st;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
        sqlite3_exec(db, "CREATE TABLE t(a INTEGER, b TEXT); CREATE INDEX tb ON t(b)", 0, 0, 0) ||
        sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?, ?)", -1, &st, 0) != SQLITE_OK)
        return 1;
    for (long i = 0; i < n; i++) {
        char buf[64];
        snprintf(buf, sizeof buf, "row %ld of the benchmark", (i * 7919) % n);
        sqlite3_bind_int64(st, 1, i);
        sqlite3_bind_text(st, 2, buf, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) != SQLITE_DONE)
            return 1;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    long rows = 0;
    if (sqlite3_prepare_v2(db, "SELECT b, count(*) FROM t GROUP BY b", -1, &st, 0) != SQLITE_OK)
        return 1;
    while (sqlite3_step(st) == SQLITE_ROW)
        rows++;
    sqlite3_finalize(st);
    sqlite3_close(db);
    printf("%ld\n", rows);
    return rows == n ? 0 : 1;
}
