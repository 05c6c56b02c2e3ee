/* sqlite.c: every allocation SQLite makes is a row, with SQLite's frames.
 *
 * 20 000 inserts through the system's libsqlite3 (-lsqlite3, no rheaper
 * inside, no frame pointers). The profile must hold as many rows as valgrind
 * counts allocations in the same program (run.sh checks it: "VALGRIND"), so
 * nothing SQLite, libc or the loader allocates is missed. The program's own
 * sqlite3_malloc calls, made from one known line, must appear with SQLite's
 * sqlite3Malloc frame (sqlite3_malloc tail-calls it, so its own frame is gone
 * from the machine stack) between the allocation and main at that line, with
 * whole (untruncated) stacks. Output goes through write(2): a stdio buffer
 * would be a (real) leak of libc's.
 */
#include <sqlite3.h>
#include <stdio.h>

#include "expect.h"

#define INSERTS 20000
#define OWN 500

int main(void)
{
    sqlite3 *db;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK)
        return 1;
    if (sqlite3_exec(db, "CREATE TABLE t(a INTEGER, b TEXT)", 0, 0, 0) != SQLITE_OK)
        return 1;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?, ?)", -1, &st, 0) != SQLITE_OK)
        return 1;
    for (int i = 0; i < INSERTS; i++) {
        char buf[64];
        snprintf(buf, sizeof buf, "row %d", i);
        sqlite3_bind_int(st, 1, i);
        sqlite3_bind_text(st, 2, buf, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) != SQLITE_DONE)
            return 1;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    int own_line = 0;
    for (int i = 0; i < OWN; i++) {
        own_line = __LINE__ + 1;
        void *p = sqlite3_malloc(100);
        KEEP(p);
        sqlite3_free(p);
    }
    sqlite3_close(db);

    EXPECT(OWN,
           "SELECT count(*) FROM allocations WHERE bt IN (SELECT a.id FROM backtraces a "
           "JOIN backtraces b ON b.id = a.id AND b.frame_no > a.frame_no "
           "WHERE a.sym = 'sqlite3Malloc' AND b.sym = 'main' AND b.line = %d)",
           own_line);
    EXPECT(0, "SELECT count(*) FROM stacks WHERE truncated != 0");
    /* SQLite's own allocating paths are named: the insert loop's step */
    EXPECT(1, "SELECT count(*) > 100 FROM allocations WHERE bt IN "
              "(SELECT id FROM backtraces WHERE sym = 'sqlite3_step')");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'unknown_frees'");
    /* one meta row per module says what it was symbolized with: Debian's
     * libsqlite3 has no debug info unless its -dbgsym package is installed */
    EXPECT(1, "SELECT count(*) FROM meta WHERE key LIKE 'debug:%%/libsqlite3.so%%' AND "
              "(value = 'no debug info: exported names from .dynsym' OR "
              "value LIKE 'debug info from /usr/lib/debug/%%')");
    EXPECT(1, "SELECT value = 'debug info' FROM meta WHERE key = 'debug:' || "
              "(SELECT value FROM meta WHERE key = 'program')");
    EXPECT(0, "SELECT count(*) FROM leaks");
    if (write(1, "VALGRIND\n", 9) != 9)
        return 1;
    return 0;
}
