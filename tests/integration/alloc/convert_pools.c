/* convert_pools.c: rheaper-convert on the version 2 records of pools and named
 * kinds, written record by record (tests/unit/convert/ripwrite.c), so every row the
 * database must hold is known.
 *
 * Two threads, main (slot 0) and worker (slot 1):
 *   - worker uses stack 1 (kind 300) at 100 and 110, before main's stream
 *     defines it at 120 with KINDNAME 300 "string_arena": the rows must still
 *     read string_arena (names are resolved after everything is read);
 *   - pool 5's blocks (tagged addresses) at 0x10000 (worker, 100), 0x10040
 *     (worker, 110), 0x10080 (main, 130); main frees 0x10040 at 150;
 *   - pool 6's block at 0x10000 too (stack 2, kind 301 "node_arena"), and a
 *     malloc chunk (stack 3) at the same untagged address 0x10000: three live
 *     blocks at one address that must not pair with each other;
 *   - main's POOLRESET of pool 5 at 200 ends 0x10000 and 0x10080 of pool 5,
 *     freed by main; pool 6 and the malloc chunk stay live;
 *   - a KINDNAME with control characters (kind 302) reads with '?'.
 */
#include <stdio.h>
#include <string.h>

#include "convtest.h"
#include "harness.h"
#include "ripwrite.h"

static const char *conv;

#define P(pool, a) (RIP_POOL_TAG(pool) | (a))

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: convert_pools RHEAPER-CONVERT\n");
        return 2;
    }
    conv = argv[1];
    char dir[256], rip[512], out[512], buf[256];
    ct_scratch(dir, sizeof dir, "convert_pools");
    snprintf(rip, sizeof rip, "%s/rip-1", dir);
    snprintf(out, sizeof out, "%s/out.db", dir);

    struct rw_file f;
    rw_new(&f, 1, "pools", "pools", 5);
    const uint64_t fr[] = {0x401000, 0x401100};
    struct rw_chunk w, m;

    rw_begin(&w, &f, RIP_CHUNK_EVENTS, 1, 2, 0);
    rw_threadname(&w, "worker");
    rw_alloc(&w, 100, 1, 64, P(5, 0x10000));
    rw_alloc(&w, 110, 1, 64, P(5, 0x10040));
    rw_kindname(&w, 301, "node_arena");
    rw_stack(&w, 2, 301, fr, 1, 0);
    rw_alloc(&w, 112, 2, 48, P(6, 0x10000));
    rw_end(&w, 1, 300);

    rw_begin(&m, &f, RIP_CHUNK_EVENTS, 0, 1, 0);
    rw_threadname(&m, "main");
    rw_stack(&m, 3, 1, fr, 2, 0);
    rw_alloc(&m, 90, 3, 65536, 0x10000);
    rw_kindname(&m, 300, "string_arena");
    rw_stack(&m, 1, 300, fr, 2, 0);
    rw_alloc(&m, 130, 1, 32, P(5, 0x10080));
    rw_free(&m, 150, P(5, 0x10040));
    rw_pool_reset(&m, 200, 5);
    rw_kindname(&m, 302, "bad\nname\x01");
    rw_stack(&m, 4, 302, fr, 1, 0);
    rw_alloc(&m, 210, 4, 8, P(7, 0x20000));
    rw_end(&m, 1, 300);
    rw_trailer(&f, 9, 400, 4, 0);
    CHECK_EQ(rw_save(&f, rip), 0);
    rw_free_file(&f);

    struct ct_run r;
    const char *args[] = {rip, out, NULL};
    CHECK_EQ(ct_exec(&r, conv, args), 0);
    CHECK(ct_exited(&r, 0));
    if (!ct_exited(&r, 0))
        fprintf(stderr, "converter said:\n%s", r.err);
    sqlite3 *db = ct_open_db(out);
    CHECK(db != NULL);
    if (!db)
        return rh_test_summary();

    CHECK_EQ(ct_int(db, "SELECT count(*) FROM allocations"), 6);
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM allocations WHERE kind = 'string_arena'"), 3);
    CHECK_EQ(ct_int(db, "SELECT sum(size) FROM allocations WHERE kind = 'string_arena'"), 160);
    /* the reset ended both remaining blocks of pool 5 at 200, in main */
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM allocations WHERE kind = 'string_arena' AND "
                        "dealloc_after = 200 AND dealloc_thread = (SELECT id FROM threads WHERE "
                        "name = 'main')"), 2);
    CHECK_EQ(ct_int(db, "SELECT dealloc_after FROM allocations WHERE kind = 'string_arena' "
                        "AND addr = 65600"), 150);
    /* addresses come out untagged */
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM allocations WHERE addr = 65536"), 3);
    /* pool 6 and the malloc chunk at the same address stay live */
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM leaks WHERE kind = 'node_arena' AND size = 48"), 1);
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM leaks WHERE kind = 'malloc' AND size = 65536"), 1);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'unknown_frees'"), 0);
    CHECK(strcmp(ct_text(db, "SELECT kind FROM stacks WHERE id = 4", buf, sizeof buf),
                 "bad?name?") == 0);
    CHECK(strcmp(ct_text(db, "SELECT kind FROM stacks WHERE id = 1", buf, sizeof buf),
                 "string_arena") == 0);
    sqlite3_close(db);
    return rh_test_summary();
}
