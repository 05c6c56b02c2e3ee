/* rows_order.c: every row reaches alloc_rows exactly, whichever way the
 * converter inserts it (the batched writer, convert/rh_db.c).
 *
 * The converter puts rows back in id order through a ring of 2^19 rows and
 * inserts them a batch per statement through the rh_feed virtual table
 * (rh_db_feed.c): an id that continues the table is appended (SQLite gives
 * the next rowid), a row after a gap (a culled row) or of a block that
 * outlived the ring keeps its explicit id. This test writes a profile of
 * RO_N allocations whose every row it knows:
 *   - most blocks are freed 5 ns after their allocation (culled below 1 us);
 *   - every 7th lives 3003 ns, freed after about 300 later allocations;
 *   - every 1000th is freed only after the last allocation, so the early
 *     ones outlive the ring (more than 2^19 allocations later);
 *   - every 1000th + 1 is never freed.
 * It converts it twice, in full and with --min-lifetime 1us, and compares
 * every row of the allocations view with what it wrote, checks the row
 * counts against meta, and that nothing of rh_feed is stored in the
 * database: a plain connection reads it, and knows no rh_feed table.
 *
 *   rows_order RHEAPER_CONVERT
 */
#include "convtest.h"
#include "harness.h"

#define RO_N 600000u
#define RO_STEP 10   /* ns between allocations */
#define RO_SHORT 5   /* life of most blocks */
#define RO_MEDIUM 3003

enum { RO_FREED_SHORT, RO_FREED_MEDIUM, RO_FREED_AT_END, RO_LEAKED };

static int ro_kind(uint32_t i)
{
    if (i % 1000 == 0)
        return RO_FREED_AT_END;
    if (i % 1000 == 1)
        return RO_LEAKED;
    return i % 7 == 3 ? RO_FREED_MEDIUM : RO_FREED_SHORT;
}

static uint64_t ro_alloc_t(uint32_t i)
{
    return (uint64_t)RO_STEP * i + RO_STEP;
}

static uint64_t ro_addr(uint32_t i)
{
    return 0x10000000ull + 64ull * i;
}

static uint64_t ro_size(uint32_t i)
{
    return 16 + i % 100;
}

/* Free time of block i, or 0 when it is never freed. Blocks freed at the
 * end go in allocation order after the last allocation. */
static uint64_t ro_free_t(uint32_t i)
{
    switch (ro_kind(i)) {
    case RO_FREED_SHORT:
        return ro_alloc_t(i) + RO_SHORT;
    case RO_FREED_MEDIUM:
        return ro_alloc_t(i) + RO_MEDIUM;
    case RO_FREED_AT_END:
        return ro_alloc_t(RO_N) + 7 + (uint64_t)RO_STEP * (i / 1000);
    }
    return 0;
}

struct ro_ev {
    uint64_t t;
    uint32_t i;
    uint8_t is_free;
};

static int ro_ev_cmp(const void *x, const void *y)
{
    const struct ro_ev *a = x, *b = y;
    return a->t < b->t ? -1 : a->t > b->t;
}

/* Writes the profile: one thread, two stacks (even and odd blocks). */
static uint64_t ro_write(const char *path)
{
    struct ro_ev *ev = malloc(2 * (size_t)RO_N * sizeof *ev);
    size_t n = 0;
    for (uint32_t i = 0; i < RO_N; i++) {
        ev[n++] = (struct ro_ev){ro_alloc_t(i), i, 0};
        if (ro_free_t(i))
            ev[n++] = (struct ro_ev){ro_free_t(i), i, 1};
    }
    qsort(ev, n, sizeof *ev, ro_ev_cmp); /* every time differs */
    struct rw_file f;
    static const char cmd[] = "./rows";
    rw_new(&f, 4242, "/opt/test/rows", cmd, sizeof cmd - 1);
    static const uint64_t s1[] = {0x401000, 0x401100}, s2[] = {0x401200};
    struct rw_chunk c;
    rw_begin(&c, &f, RIP_CHUNK_EVENTS, 0, 4242, 0);
    rw_stack(&c, 1, 1, s1, 2, 0);
    rw_stack(&c, 2, 1, s2, 1, 0);
    for (size_t k = 0; k < n; k++) {
        if (ev[k].is_free)
            rw_free(&c, ev[k].t, ro_addr(ev[k].i));
        else
            rw_alloc(&c, ev[k].t, 1 + ev[k].i % 2, ro_size(ev[k].i), ro_addr(ev[k].i));
    }
    uint64_t end = ev[n - 1].t;
    rw_end(&c, 1, end);
    rw_trailer(&f, n, end + 100, 2, 0);
    CHECK_EQ(rw_save(&f, path), 0);
    rw_free_file(&f);
    free(ev);
    return n;
}

/* Compares every row with the profile; culled: rows of blocks that lived
 * less than 1 us are absent. */
static void ro_check(const char *db_path, uint64_t events, int culled)
{
    sqlite3 *db = ct_open_db(db_path);
    CHECK(db != NULL);
    if (!db)
        return;
    sqlite3_stmt *st;
    CHECK_EQ(sqlite3_prepare_v2(db,
                                "SELECT id, alloc_after, dealloc_after, size, addr, bt,"
                                " alloc_thread, dealloc_thread FROM allocations ORDER BY id",
                                -1, &st, NULL),
             SQLITE_OK);
    uint32_t i = 0;
    uint64_t rows = 0, bad = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (culled)
            while (i < RO_N && ro_kind(i) == RO_FREED_SHORT)
                i++;
        if (i >= RO_N) {
            bad++;
            break;
        }
        uint64_t ft = ro_free_t(i);
        int ok = sqlite3_column_int64(st, 0) == (sqlite3_int64)i + 1 &&
                 sqlite3_column_int64(st, 1) == (sqlite3_int64)ro_alloc_t(i) &&
                 (ft ? sqlite3_column_int64(st, 2) == (sqlite3_int64)ft
                     : sqlite3_column_type(st, 2) == SQLITE_NULL) &&
                 sqlite3_column_int64(st, 3) == (sqlite3_int64)ro_size(i) &&
                 sqlite3_column_int64(st, 4) == (sqlite3_int64)ro_addr(i) &&
                 sqlite3_column_int64(st, 5) == 1 + i % 2 && sqlite3_column_int64(st, 6) == 1 &&
                 (ft ? sqlite3_column_int64(st, 7) == 1 : sqlite3_column_type(st, 7) == SQLITE_NULL);
        if (!ok && bad++ < 5)
            fprintf(stderr, "%s: row %u differs (id %lld)\n", db_path, i + 1,
                    (long long)sqlite3_column_int64(st, 0));
        rows++;
        i++;
    }
    CHECK_EQ(rc, SQLITE_DONE);
    sqlite3_finalize(st);
    CHECK_EQ(bad, 0);
    uint64_t want = 0, nculled = 0;
    for (uint32_t k = 0; k < RO_N; k++) {
        if (culled && ro_kind(k) == RO_FREED_SHORT)
            nculled++;
        else
            want++;
    }
    CHECK_EQ(rows, want);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'rows'"), want);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'culled_rows'"), nculled);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'events'"), events);
    /* the aggregates count every event, culled or not */
    CHECK_EQ(ct_int(db, "SELECT sum(count) FROM stack_stats"), RO_N);
    CHECK_EQ(ct_int(db, "SELECT sum(leaked_blocks) FROM stack_stats"), RO_N / 1000);
    /* nothing of the converter's virtual table is in the database */
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM sqlite_master WHERE sql LIKE '%rh_feed%'"
                        " OR name LIKE '%rh_feed%'"),
             0);
    CHECK(sqlite3_prepare_v2(db, "SELECT * FROM rh_feed", -1, &st, NULL) != SQLITE_OK);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: rows_order RHEAPER_CONVERT\n");
        return 2;
    }
    char dir[256], rip[512], full[512], cull[512];
    ct_scratch(dir, sizeof dir, "rows_order");
    snprintf(rip, sizeof rip, "%s/rip-4242", dir);
    snprintf(full, sizeof full, "%s/full.db", dir);
    snprintf(cull, sizeof cull, "%s/culled.db", dir);
    uint64_t events = ro_write(rip);

    struct ct_run r;
    const char *a1[] = {rip, full, NULL};
    CHECK_EQ(ct_exec(&r, argv[1], a1), 0);
    CHECK(ct_exited(&r, 0));
    if (!ct_exited(&r, 0))
        fprintf(stderr, "%s", r.err);
    ro_check(full, events, 0);

    const char *a2[] = {rip, cull, "--min-lifetime", "1us", NULL};
    CHECK_EQ(ct_exec(&r, argv[1], a2), 0);
    CHECK(ct_exited(&r, 0));
    if (!ct_exited(&r, 0))
        fprintf(stderr, "%s", r.err);
    ro_check(cull, events, 1);
    return rh_test_summary();
}
