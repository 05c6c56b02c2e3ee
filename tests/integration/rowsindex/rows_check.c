/* rows_check.c: checks a profile's stack_rows (docs/design.md) against
 * its rows, by decoding every chunk.
 *
 *   rows_check PROFILE.db [--culled]
 *
 * Without --culled the ids of each stack, decoded from its chunks in key
 * order, must be exactly the ids of alloc_rows with that bt, in increasing
 * order; with --culled (a --min-lifetime conversion) every row's id must be
 * among its stack's ids and each stack's id count must equal
 * stack_stats.count (every allocation, kept or culled). Every chunk's n must
 * match its varints. Prints "rows_check: N stacks, M ids" and exits 0, or
 * "FAIL: ..." lines and exits 1.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        printf("FAIL: " __VA_ARGS__);                                                              \
        putchar('\n');                                                                             \
        if (++fails > 20)                                                                          \
            exit(1);                                                                               \
    } while (0)

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: rows_check PROFILE.db [--culled]\n");
        return 2;
    }
    int culled = argc > 2 && !strcmp(argv[2], "--culled");
    sqlite3 *db = NULL;
    sqlite3_stmt *ch = NULL, *rw = NULL, *cnt = NULL;
    if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT bt, first_id, n, ids FROM stack_rows ORDER BY bt, first_id",
                           -1, &ch, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT bt, id FROM alloc_rows ORDER BY bt, id", -1, &rw, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT count FROM stack_stats WHERE bt = ?1", -1, &cnt, NULL) !=
            SQLITE_OK) {
        printf("FAIL: %s: %s\n", argv[1], db ? sqlite3_errmsg(db) : "cannot open");
        return 1;
    }
    /* the rows, in (bt, id) order, merged against the decoded ids */
    int have_row = sqlite3_step(rw) == SQLITE_ROW;
    int64_t rbt = have_row ? sqlite3_column_int64(rw, 0) : 0;
    int64_t rid = have_row ? sqlite3_column_int64(rw, 1) : 0;
    int64_t bt = -1, last = 0, nstack = 0, nids = 0, stack_ids = 0;
    int more = sqlite3_step(ch) == SQLITE_ROW;
    for (;;) {
        int64_t cbt = more ? sqlite3_column_int64(ch, 0) : INT64_MAX;
        if (cbt != bt) {
            /* stack bt ends: its rows must all have been matched */
            if (bt >= 0) {
                if (have_row && rbt == bt)
                    FAIL("stack %lld: row %lld is not in stack_rows", (long long)bt,
                         (long long)rid);
                while (have_row && rbt == bt) {
                    have_row = sqlite3_step(rw) == SQLITE_ROW;
                    rbt = have_row ? sqlite3_column_int64(rw, 0) : 0;
                    rid = have_row ? sqlite3_column_int64(rw, 1) : 0;
                }
                sqlite3_bind_int64(cnt, 1, bt);
                if (culled && sqlite3_step(cnt) == SQLITE_ROW &&
                    sqlite3_column_int64(cnt, 0) != stack_ids)
                    FAIL("stack %lld: %lld ids, stack_stats.count %lld", (long long)bt,
                         (long long)stack_ids, (long long)sqlite3_column_int64(cnt, 0));
                sqlite3_reset(cnt);
            }
            if (!more)
                break;
            if (have_row && rbt < cbt)
                FAIL("stack %lld has rows (id %lld) but no stack_rows", (long long)rbt,
                     (long long)rid);
            while (have_row && rbt < cbt) {
                have_row = sqlite3_step(rw) == SQLITE_ROW;
                rbt = have_row ? sqlite3_column_int64(rw, 0) : 0;
                rid = have_row ? sqlite3_column_int64(rw, 1) : 0;
            }
            bt = cbt;
            last = 0;
            stack_ids = 0;
            nstack++;
        }
        /* decode one chunk */
        int64_t id = sqlite3_column_int64(ch, 1), n = sqlite3_column_int64(ch, 2);
        const unsigned char *b = sqlite3_column_blob(ch, 3);
        int len = sqlite3_column_bytes(ch, 3), pos = 0;
        for (int64_t k = 0; k < n; k++) {
            if (k) {
                uint64_t d = 0;
                int shift = 0, end = 0;
                while (pos < len && shift < 64) {
                    d |= (uint64_t)(b[pos] & 0x7f) << shift;
                    shift += 7;
                    if (!(b[pos++] & 0x80)) {
                        end = 1;
                        break;
                    }
                }
                if (!end || !d) {
                    FAIL("stack %lld chunk %lld: bad varint at id %lld of %lld", (long long)bt,
                         (long long)sqlite3_column_int64(ch, 1), (long long)k, (long long)n);
                    break;
                }
                id += (int64_t)d;
            }
            if (id <= last)
                FAIL("stack %lld: id %lld after %lld", (long long)bt, (long long)id,
                     (long long)last);
            last = id;
            stack_ids++;
            nids++;
            if (have_row && rbt == bt && rid == id) {
                have_row = sqlite3_step(rw) == SQLITE_ROW;
                rbt = have_row ? sqlite3_column_int64(rw, 0) : 0;
                rid = have_row ? sqlite3_column_int64(rw, 1) : 0;
            } else if (!culled) {
                FAIL("stack %lld: id %lld has no row (next row: bt %lld id %lld)", (long long)bt,
                     (long long)id, (long long)rbt, (long long)rid);
            } else if (have_row && rbt == bt && rid < id) {
                FAIL("stack %lld: row %lld is not in stack_rows", (long long)bt, (long long)rid);
            }
        }
        if (pos != len)
            FAIL("stack %lld chunk %lld: %d bytes left over", (long long)bt,
                 (long long)sqlite3_column_int64(ch, 1), len - pos);
        more = sqlite3_step(ch) == SQLITE_ROW;
    }
    if (have_row)
        FAIL("row bt %lld id %lld is not in stack_rows", (long long)rbt, (long long)rid);
    if (!nids)
        FAIL("stack_rows is empty");
    sqlite3_finalize(ch);
    sqlite3_finalize(rw);
    sqlite3_finalize(cnt);
    sqlite3_close(db);
    printf("rows_check: %lld stacks, %lld ids\n", (long long)nstack, (long long)nids);
    return fails ? 1 : 0;
}
