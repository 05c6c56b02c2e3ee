/* convert_basic.c: rheaper-convert on profiles whose every row is known.
 *
 * Builds the reference profile of convtest.h (several slots, SHARED with
 * SETTHREAD, sealed and unsealed chunks, reallocs in place and moving (and
 * their chains, also when two threads' reallocs interleave), a
 * cross-thread free, address reuse at an equal time, a missed free, a FAIL, an
 * unknown free, a stack defined after its first use and one never defined),
 * once cut short and once with a trailer, converts both, and checks the rows,
 * threads, stacks, backtraces, modules, meta and the views through SQLite. Then
 * checks time calibration in-process on a TSC-style header.
 * Usage: convert_basic RHEAPER-CONVERT
 */
#include "convtest.h"
#include "harness.h"
#include "rh_core.h"

static const char *conv;

struct exp_row {
    long long size, alloc, dealloc, bt, athr, dthr, addr;
    const char *kind;
};

#define N (-1) /* NULL */
/* The strdup was recorded at 900, the same time as the free of its address in
 * another thread; the merge takes the free first and gives every event a
 * distinct time, so the allocation is at 901. */
static const struct exp_row expected[CT_ROWS] = {
    {16, 100, 400, 1, 1, 1, 0x10000, "malloc"},    {24, 150, 900, 4, 2, 2, 0x40000, "new"},
    {12, 160, 170, 6, 2, 2, 0x41000, "new[]"},     {32, 200, 500, 1, 1, 1, 0x10020, "malloc"},
    {100, 300, 450, 2, 1, 2, 0x10100, "calloc"},   {64, 510, 600, 3, 1, 1, 0x10020, "realloc"},
    {128, 605, 1000, 3, 1, 1, 0x20008, "realloc"}, {8, 901, N, 5, 3, N, 0x40000, "strdup"},
    {16, 950, N, 1, 3, N, 0x50000, "malloc"},      {16, 960, N, 1, 3, N, 0x50000, "malloc"},
    {7, 970, N, 9, 3, N, 0x60000, "unknown"},      {48, 1100, 1250, 1, 1, 5, 0x30000, "malloc"},
    {40, 1200, 1300, 1, 4, 5, 0x70000, "malloc"},
};

static void check_rows(sqlite3 *db)
{
    sqlite3_stmt *st;
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM allocations"), CT_ROWS);
    if (sqlite3_prepare_v2(db,
                           "SELECT size, alloc_after, ifnull(dealloc_after, -1), bt, alloc_thread,"
                           " ifnull(dealloc_thread, -1), addr, kind FROM allocations"
                           " ORDER BY alloc_after, id",
                           -1, &st, NULL) != SQLITE_OK) {
        CHECK(!"prepare");
        return;
    }
    int i = 0;
    while (sqlite3_step(st) == SQLITE_ROW && i < CT_ROWS) {
        const struct exp_row *e = &expected[i++];
        CHECK_EQ(sqlite3_column_int64(st, 0), e->size);
        CHECK_EQ(sqlite3_column_int64(st, 1), e->alloc);
        CHECK_EQ(sqlite3_column_int64(st, 2), e->dealloc);
        CHECK_EQ(sqlite3_column_int64(st, 3), e->bt);
        CHECK_EQ(sqlite3_column_int64(st, 4), e->athr);
        CHECK_EQ(sqlite3_column_int64(st, 5), e->dthr);
        CHECK_EQ(sqlite3_column_int64(st, 6), e->addr);
        const char *k = (const char *)sqlite3_column_text(st, 7);
        CHECK(k && !strcmp(k, e->kind));
        if (!k || strcmp(k, e->kind))
            fprintf(stderr, "row %d: kind %s, expected %s\n", i, k ? k : "NULL", e->kind);
    }
    CHECK_EQ(i, CT_ROWS);
    sqlite3_finalize(st);
    /* heaptrack's temporaries in the merged order of the rows above: the
     * new[] freed at 170 right after its allocation at 160, and the realloc
     * block freed at 600 (the realloc's free half) right after its allocation
     * at 510. The malloc(48) freed at 1250 follows a malloc(40) of the same
     * stack, not the same size: not temporary. */
    char buf[64];
    CHECK(!strcmp(ct_text(db,
                          "SELECT group_concat(size) FROM (SELECT size FROM allocations"
                          " WHERE temporary ORDER BY alloc_after)",
                          buf, sizeof buf),
                  "12,64"));
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM temporary"), 2);
}

/* The realloc_chains rows as NEW<PREV@FIRST#POS, by the sizes of the rows, in
 * id order. */
#define RH_CHAINS_SQL                                                                              \
    "SELECT group_concat(x, ',') FROM (SELECT n.size || '<' || p.size || '@' || f.size || '#' ||" \
    " c.pos AS x FROM realloc_chains c JOIN allocations n ON n.id = c.id JOIN allocations p"      \
    " ON p.id = c.prev JOIN allocations f ON f.id = c.first ORDER BY c.id)"

static void check_tables(sqlite3 *db)
{
    char buf[256];
    /* threads */
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM threads"), 5);
    CHECK_EQ(ct_int(db, "SELECT tid FROM threads WHERE id = 1"), 1000);
    CHECK(!strcmp(ct_text(db, "SELECT name FROM threads WHERE id = 1", buf, sizeof buf), "main"));
    CHECK_EQ(ct_int(db, "SELECT tid FROM threads WHERE id = 2"), 1001);
    CHECK(!strcmp(ct_text(db, "SELECT name FROM threads WHERE tid = 1001", buf, sizeof buf),
                  "worker1"));
    CHECK_EQ(ct_int(db, "SELECT tid FROM threads WHERE id = 3"), 1002);
    CHECK(!strcmp(ct_text(db, "SELECT name FROM threads WHERE tid = 1002", buf, sizeof buf),
                  "<null>"));
    CHECK_EQ(ct_int(db, "SELECT id FROM threads WHERE tid = 1003"), 4);
    CHECK(
        !strcmp(ct_text(db, "SELECT name FROM threads WHERE tid = 1003", buf, sizeof buf), "late"));
    CHECK_EQ(ct_int(db, "SELECT id FROM threads WHERE tid = 1004"), 5);

    /* stacks and backtraces */
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM stacks"), 7); /* 1,2,3,4,5,6,9 */
    CHECK_EQ(ct_int(db, "SELECT depth FROM stacks WHERE id = 5"), 3);
    CHECK_EQ(ct_int(db, "SELECT truncated FROM stacks WHERE id = 5"), 1);
    CHECK_EQ(ct_int(db, "SELECT truncated FROM stacks WHERE id = 1"), 0);
    CHECK(!strcmp(ct_text(db, "SELECT kind FROM stacks WHERE id = 6", buf, sizeof buf), "new[]"));
    CHECK(!strcmp(ct_text(db, "SELECT kind FROM stacks WHERE id = 9", buf, sizeof buf), "<null>"));
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM backtraces WHERE id = 1"), 2);
    CHECK_EQ(ct_int(db, "SELECT max(frame_no) FROM backtraces WHERE id = 5"), 2);
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM backtraces WHERE id = 9"), 1);
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM backtraces WHERE id = 9 AND frame_no = 0 AND"
                        " file IS NULL AND sym IS NULL AND line IS NULL AND address IS NULL"),
             1);
    /* the module file does not exist: module + relative address, no symbol */
    CHECK(!strcmp(
        ct_text(db, "SELECT module FROM backtraces WHERE id = 1 AND frame_no = 0", buf, sizeof buf),
        "/nonexistent/rheaper-test/prog"));
    CHECK_EQ(ct_int(db, "SELECT address FROM backtraces WHERE id = 1 AND frame_no = 0"), 0x1000);
    CHECK_EQ(ct_int(db, "SELECT address FROM backtraces WHERE id = 1 AND frame_no = 1"), 0x1100);
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM backtraces WHERE id = 1 AND sym IS NULL"), 2);

    /* realloc chains: 32 -> 64 (in place) -> 128 (moved), one chain of three;
     * as NEW<PREV@FIRST#POS by the sizes of the rows */
    CHECK(!strcmp(ct_text(db, RH_CHAINS_SQL, buf, sizeof buf), "64<32@32#1,128<64@32#2"));

    /* modules */
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM modules"), 1);
    CHECK_EQ(ct_int(db, "SELECT base FROM modules"), 0x400000);
    CHECK(!strcmp(ct_text(db, "SELECT build_id FROM modules", buf, sizeof buf), "1234abcd"));

    /* views and indexes */
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM leaks"), 4);
    CHECK_EQ(ct_int(db, "SELECT sum(size) FROM leaks"), 8 + 16 + 16 + 7);
    CHECK_EQ(ct_int(db, "SELECT count FROM callsites WHERE bt = 1"), 6);
    CHECK_EQ(ct_int(db, "SELECT total_size FROM callsites WHERE bt = 1"), 168);
    CHECK_EQ(ct_int(db, "SELECT min_size FROM callsites WHERE bt = 1"), 16);
    CHECK_EQ(ct_int(db, "SELECT max_size FROM callsites WHERE bt = 1"), 48);
    CHECK_EQ(ct_int(db, "SELECT leaked_count FROM callsites WHERE bt = 1"), 2);
    CHECK_EQ(ct_int(db, "SELECT leaked_bytes FROM callsites WHERE bt = 1"), 32);
    CHECK_EQ(ct_int(db, "SELECT avg_lifetime * 10 FROM callsites WHERE bt = 1"), 2125);
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM callsites"), 7);
    CHECK(
        !strcmp(ct_text(db, "SELECT kind FROM callsites WHERE bt = 2", buf, sizeof buf), "calloc"));
    /* no index on alloc_rows: rows are found by id (time) ranges, stacks
     * are filtered in one pass (docs/design.md) */
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN"
                        " ('backtraces_id', 'backtraces_file_line')"),
             2);
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND"
                        " tbl_name = 'alloc_rows'"),
             0);

    /* meta */
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'events'"), CT_EVENTS);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'allocs'"), CT_ALLOCS);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'frees'"), CT_FREES);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'reallocs'"), CT_REALLOCS);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'failed_allocs'"), 1);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'unknown_frees'"), 1);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'overlapping_allocs'"), 1);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'undefined_stacks'"), 1);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'damaged_chunks'"), 0);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'pid'"), 1000);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'ppid'"), 1);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'format_version'"), RIP_VERSION);
    CHECK(!strcmp(ct_text(db, "SELECT value FROM meta WHERE key = 'program'", buf, sizeof buf),
                  "/opt/test/prog"));
    CHECK(!strcmp(ct_text(db, "SELECT value FROM meta WHERE key = 'args'", buf, sizeof buf),
                  "./prog --flag arg two"));
    CHECK(!strcmp(ct_text(db, "SELECT value FROM meta WHERE key = 'start_time'", buf, sizeof buf),
                  "2023-11-14T22:13:20.123456789Z"));
}

static void convert_reference(const char *dir, int trailer)
{
    char rip[4096], out[4096];
    struct rw_file f;
    ct_reference(&f, trailer);
    snprintf(rip, sizeof rip, "%s/rip-%d", dir, trailer);
    snprintf(out, sizeof out, "%s/out-%d.db", dir, trailer);
    CHECK_EQ(rw_save(&f, rip), 0);
    rw_free_file(&f);

    struct ct_run r;
    const char *args[] = {rip, out, NULL};
    CHECK_EQ(ct_exec(&r, conv, args), 0);
    CHECK(ct_exited(&r, 0));
    if (!ct_exited(&r, 0))
        fprintf(stderr, "converter said:\n%s", r.err);
    /* not clean without the trailer: one line says so, naming the file */
    char *line = strstr(r.err, "profile not clean");
    if (trailer) {
        CHECK(line == NULL);
    } else {
        CHECK(line != NULL);
        CHECK(strstr(r.err, rip) != NULL);
        CHECK(line && strstr(line, "cut short") != NULL);
    }
    sqlite3 *db = ct_open_db(out);
    CHECK(db != NULL);
    if (!db)
        return;
    check_rows(db);
    check_tables(db);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'clean'"), trailer ? 1 : 0);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'cut_short'"), trailer ? 0 : 1);
    CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'duration_ns'"), trailer ? 2000 : 1300);
    if (trailer)
        CHECK_EQ(ct_int(db, "SELECT value FROM meta WHERE key = 'events_lost'"), 0);
    sqlite3_close(db);
    CHECK_EQ(ct_count_prefix(dir, trailer ? "out-1.db.tmp" : "out-0.db.tmp"), 0);
}

/* Realloc chains when two threads' reallocs interleave: thread 2000's realloc
 * at 200 takes until 500 (its free half at 200, its alloc half at 500), and
 * thread 2001 reallocs (300 -> 310) and mallocs (400) in between. Each new
 * block is linked to the block its own thread's realloc freed:
 *   2000: 10 @100 -> 20 @500 -> 30 @610, freed at 700
 *   2001: 40 @150 -> 50 @310, freed at 800; 60 @400 (a malloc), freed at 810 */
static void check_chains_interleaved(const char *dir)
{
    char rip[4096], out[4096], buf[256];
    struct rw_file f;
    rw_new(&f, 2000, "/opt/test/prog", "./prog", 6);
    static const uint64_t s1[] = {0x401000}, s3[] = {0x401300};
    struct rw_chunk c;
    rw_begin(&c, &f, RIP_CHUNK_EVENTS, 0, 2000, 0);
    rw_stack(&c, 1, 1, s1, 1, 0);
    rw_stack(&c, 3, 3, s3, 1, 0);
    rw_alloc(&c, 100, 1, 10, 0xa000);
    rw_realloc(&c, 200, 300, 3, 20, 0xa000, 0xb000);
    rw_realloc(&c, 600, 10, 3, 30, 0xb000, 0xc000);
    rw_free(&c, 700, 0xc000);
    rw_end(&c, 1, 700);
    rw_begin(&c, &f, RIP_CHUNK_EVENTS, 1, 2001, 150);
    rw_alloc(&c, 150, 1, 40, 0xd000);
    rw_realloc(&c, 300, 10, 3, 50, 0xd000, 0xe000);
    rw_alloc(&c, 400, 1, 60, 0xf000);
    rw_free(&c, 800, 0xe000);
    rw_free(&c, 810, 0xf000);
    rw_end(&c, 1, 810);
    rw_trailer(&f, 9, 1000, 2, 0);
    snprintf(rip, sizeof rip, "%s/rip-chains", dir);
    snprintf(out, sizeof out, "%s/chains.db", dir);
    CHECK_EQ(rw_save(&f, rip), 0);
    rw_free_file(&f);
    struct ct_run r;
    const char *args[] = {rip, out, NULL};
    CHECK_EQ(ct_exec(&r, conv, args), 0);
    CHECK(ct_exited(&r, 0));
    sqlite3 *db = ct_open_db(out);
    CHECK(db != NULL);
    if (!db)
        return;
    CHECK_EQ(ct_int(db, "SELECT count(*) FROM allocations"), 6);
    const char *got = ct_text(db, RH_CHAINS_SQL, buf, sizeof buf);
    CHECK(!strcmp(got, "50<40@40#1,20<10@10#1,30<20@10#2"));
    if (strcmp(got, "50<40@40#1,20<10@10#1,30<20@10#2"))
        fprintf(stderr, "realloc_chains: %s\n", got);
    sqlite3_close(db);
}

/* Calibration: TSC-like ticks (2 per ns), tick_shift 1, pairs from the
 * header, a chunk and the trailer; interpolation, and extrapolation with the
 * widest span's rate. */
static void check_calibration(void)
{
    struct rw_file f;
    rw_new(&f, 7, "x", "x", 1);
    f.hdr->clock_kind = RIP_CLOCK_TSC;
    f.hdr->tick_shift = 1;
    f.hdr->start_tick = 1000;
    f.hdr->start_mono_ns = 5000;
    rw_header_crc(&f);
    struct rw_chunk c;
    rw_begin(&c, &f, RIP_CHUNK_EVENTS, 0, 7, 0);
    rw_end(&c, 1, 0);
    /* patch the chunk's pair: tick 3000 <-> ns 6000, then re-seal */
    struct rip_chunk_header *h = (struct rip_chunk_header *)(f.buf + RIP_HEADER_SIZE);
    h->calib_tick = 3000;
    h->calib_ns = 6000;
    h->crc = rip_chunk_crc(h, f.buf + RIP_HEADER_SIZE + RIP_CHUNK_HDR_SIZE);
    rw_trailer(&f, 0, 0, 0, 0);
    h = (struct rip_chunk_header *)(f.buf + f.len - RIP_ALIGN);
    uint8_t *pl = f.buf + f.len - RIP_ALIGN + RIP_CHUNK_HDR_SIZE;
    uint64_t end_tick = 5000, end_ns = 7000;
    memcpy(pl + 8, &end_tick, 8);
    memcpy(pl + 16, &end_ns, 8);
    h->calib_tick = 5000;
    h->calib_ns = 7000;
    h->crc = rip_chunk_crc(h, pl);

    struct rh_rip r;
    memset(&r, 0, sizeof r);
    CHECK_EQ(rh_rip_open_mem(&r, f.buf, f.len, "calib", stderr), 0);
    CHECK_EQ(r.damaged, 0);
    CHECK_EQ(r.has_trailer, 1);
    CHECK_EQ(rh_rip_ns(&r, 500), 0);     /* tick 1000: enable */
    CHECK_EQ(rh_rip_ns(&r, 1000), 500);  /* tick 2000: half way to (3000, 6000) */
    CHECK_EQ(rh_rip_ns(&r, 2000), 1500); /* tick 4000: between (3000,6000), (5000,7000) */
    CHECK_EQ(rh_rip_ns(&r, 3500), 3000); /* tick 7000: 7000 + 2000 * (2000/4000) */
    CHECK_EQ(rh_rip_ns(&r, 100), 0);     /* before enable: clamped, never negative */
    int64_t prev = -1, mono = 1;
    for (uint64_t t = 0; t < 5000; t += 7) {
        int64_t ns = rh_rip_ns(&r, t);
        mono &= ns >= prev;
        prev = ns;
    }
    CHECK(mono);
    rh_rip_close(&r);
    rw_free_file(&f);
}

/* The trailer's open-chunk count: a clean close seals every chunk but those of
 * running threads, so more unsealed chunks before the trailer than it counts is
 * damage. Chunks after the trailer were opened by threads still running
 * through the exit flush (the file stays open) and may stay unsealed: clean. */
static void check_open_chunks(void)
{
    for (int after = 0; after < 2; after++) {
        struct rw_file f;
        rw_new(&f, 7, "x", "x", 1);
        struct rw_chunk c;
        rw_begin(&c, &f, RIP_CHUNK_EVENTS, 0, 7, 0);
        rw_alloc(&c, 10, 0, 16, 0x1000);
        rw_end(&c, 1, 10);
        if (!after) { /* unsealed before the trailer, which counts none */
            rw_begin(&c, &f, RIP_CHUNK_EVENTS, 1, 8, 0);
            rw_alloc(&c, 20, 0, 32, 0x2000);
            rw_end(&c, 0, 20);
            f.unsealed = 0;
        }
        rw_trailer(&f, 2, 100, 0, 0);
        rw_begin(&c, &f, RIP_CHUNK_EVENTS, 0, 7, 110); /* opened after the close */
        rw_alloc(&c, 120, 0, 48, 0x3000);
        rw_end(&c, 0, 120);
        rw_begin(&c, &f, RIP_CHUNK_SHARED, RIP_SLOT_SHARED, 0, 110);
        rw_setthread(&c, 9);
        rw_alloc(&c, 130, 0, 64, 0x4000);
        rw_end(&c, 0, 130);
        struct rh_rip r;
        memset(&r, 0, sizeof r);
        CHECK_EQ(rh_rip_open_mem(&r, f.buf, f.len, "open-chunks", NULL), 0);
        CHECK_EQ(r.has_trailer, 1);
        CHECK_EQ(r.cut_short, 0);
        CHECK_EQ(r.damaged, after ? 0 : 1);
        rh_rip_close(&r);
        rw_free_file(&f);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: convert_basic RHEAPER-CONVERT\n");
        return 2;
    }
    conv = argv[1];
    char dir[256];
    ct_scratch(dir, sizeof dir, "convert_basic");
    convert_reference(dir, 0);
    convert_reference(dir, 1);
    check_chains_interleaved(dir);
    check_calibration();
    check_open_chunks();
    return rh_test_summary();
}
