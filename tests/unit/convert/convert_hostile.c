/* convert_hostile.c: rheaper-convert on damaged and hostile input.
 *
 * In-process, on thousands of mutations of the reference profile (the reader,
 * decoder and merge without SQLite): truncation at many offsets, a flipped bit
 * at many offsets, random bytes over unsealed payloads. Nothing may crash or
 * hang, and a mutation of checksummed bytes (the file header, a sealed chunk)
 * or a truncation must never leave the profile looking clean.
 * Then through the real binary: a sample of the same mutations, random bytes,
 * an empty file, a directory, a missing path, huge length fields, events out of
 * order. The exit status is 0 or 1 (never a signal); a failure is one stderr
 * line naming the file and leaves no database and no temp file; a success on
 * damaged input has meta clean = 0.
 * Usage: convert_hostile RHEAPER-CONVERT
 */
#include "convtest.h"
#include "harness.h"
#include "rh_core.h"

static const char *conv;
static char dir[256];

/* ---- in-process ------------------------------------------------------------ */

struct outcome {
    int opened;
    int clean;
    uint64_t events, rows;
    uint64_t followed; /* events the growing-file reader decoded */
};

static int count_row(void *ctx, const struct rh_row *row)
{
    (void)row;
    (*(uint64_t *)ctx)++;
    return 0;
}

/* The same bytes read as a file still being written (the live view's
 * reader, rh_rip_follow_poll): they appear in three steps in a buffer of
 * zeros; every stream is drained after each poll. Returns the events decoded;
 * on damage it must only stop, never crash or hang. */
static uint64_t follow_mem(const uint8_t *buf, size_t len)
{
    uint8_t *g = calloc(1, len ? len : 1);
    struct rh_rip r;
    memset(&r, 0, sizeof r);
    rh_rip_follow_start(&r, g, "follow", NULL);
    uint64_t n = 0;
    size_t done = 0;
    for (int step = 1; g && step <= 3; step++) {
        size_t to = step == 3 ? len : len / 3 * (size_t)step;
        memcpy(g + done, buf + done, to - done);
        done = to;
        if (rh_rip_follow_poll(&r, to) < 0)
            break;
        struct rh_event ev;
        for (size_t i = 0; i < r.nstreams; i++)
            while (rh_stream_next(&r, &r.streams[i], &ev) == 1)
                n++;
    }
    rh_rip_close(&r);
    free(g);
    return n;
}

static struct outcome run_mem(const uint8_t *buf, size_t len)
{
    struct outcome o = {0};
    struct rh_rip r;
    memset(&r, 0, sizeof r);
    if (rh_rip_open_mem(&r, buf, len, "mem", NULL) == 0) {
        o.opened = 1;
        uint64_t rows = 0;
        struct rh_merge_sink sink = {count_row, NULL, &rows, NULL, NULL};
        struct rh_merge_stats st;
        if (rh_merge_run(&r, &sink, &st) == 0) {
            o.rows = rows;
            o.events = r.events;
        }
        o.clean = r.has_trailer && !r.damaged && !r.cut_short;
    }
    rh_rip_close(&r);
    o.followed = follow_mem(buf, len);
    return o;
}

/* Byte ranges covered by a checksum: the file header and sealed chunks' header
 * plus used payload. Marks them in cov[]. Returns unsealed payload ranges in
 * uns[] (offset, length pairs) for the random-bytes pass. */
static size_t classify(const struct rw_file *f, uint8_t *cov, size_t *uns, size_t maxuns)
{
    size_t n = 0;
    memset(cov, 0, f->len);
    memset(cov, 1, RIP_HEADER_SIZE);
    for (size_t off = RIP_HEADER_SIZE; off + RIP_CHUNK_HDR_SIZE <= f->len;) {
        struct rip_chunk_header h;
        memcpy(&h, f->buf + off, sizeof h);
        if (h.flags & RIP_CHUNK_F_SEALED)
            memset(cov + off, 1, RIP_CHUNK_HDR_SIZE + h.used);
        else if (n + 2 <= maxuns && h.used) {
            uns[n++] = off + RIP_CHUNK_HDR_SIZE;
            uns[n++] = h.used;
        }
        off += (RIP_CHUNK_HDR_SIZE + h.capacity + RIP_ALIGN - 1) & ~(size_t)(RIP_ALIGN - 1);
    }
    return n;
}

static void in_process(void)
{
    struct rw_file f;
    ct_reference(&f, 1);
    struct outcome base = run_mem(f.buf, f.len);
    CHECK(base.opened);
    CHECK(base.clean);
    CHECK_EQ(base.events, CT_EVENTS);
    CHECK_EQ(base.rows, CT_ROWS);
    {
        /* the growing-file reader yields every event the whole file's streams
         * yield (a realloc is two: its free and its allocation) */
        struct rh_rip w;
        memset(&w, 0, sizeof w);
        uint64_t whole = 0;
        struct rh_event ev;
        if (rh_rip_open_mem(&w, f.buf, f.len, "whole", NULL) == 0)
            for (size_t i = 0; i < w.nstreams; i++)
                while (rh_stream_next(&w, &w.streams[i], &ev) == 1)
                    whole++;
        rh_rip_close(&w);
        CHECK(whole >= CT_EVENTS);
        CHECK_EQ(base.followed, whole);
    }

    uint8_t *buf = malloc(f.len), *cov = malloc(f.len);
    size_t uns[64];
    size_t nuns = classify(&f, cov, uns, 64);
    CHECK(nuns >= 4); /* the two unsealed event chunks */

    /* truncation: every 13th offset and around every chunk boundary */
    int trunc_clean = 0, trunc_runs = 0, trunc_more = 0;
    for (size_t cut = 0; cut < f.len; cut++) {
        size_t in = cut % RIP_ALIGN;
        if (cut % 13 && in > 2 && in != 63 && in != 64 && in != 65 && in < RIP_ALIGN - 2)
            continue;
        struct outcome o = run_mem(f.buf, cut);
        trunc_runs++;
        trunc_clean += o.clean;
        trunc_more += o.opened && o.events > CT_EVENTS;
    }
    CHECK(trunc_runs > 1000);
    CHECK_EQ(trunc_clean, 0);
    CHECK_EQ(trunc_more, 0);

    /* one flipped bit per offset, every third byte */
    int flip_runs = 0, covered_clean = 0;
    for (size_t off = 0; off < f.len; off += 3) {
        memcpy(buf, f.buf, f.len);
        buf[off] ^= (uint8_t)(1u << (off % 8));
        struct outcome o = run_mem(buf, f.len);
        flip_runs++;
        if (cov[off] && o.clean) {
            covered_clean++;
            fprintf(stderr, "flip at %zu (bit %zu) left the profile clean\n", off, off % 8);
        }
    }
    CHECK(flip_runs > 5000);
    CHECK_EQ(covered_clean, 0);

    /* random bytes over parts of the unsealed payloads */
    srand(4242);
    int rnd_runs = 0;
    for (int it = 0; it < 3000; it++) {
        memcpy(buf, f.buf, f.len);
        size_t k = (size_t)(rand() % (int)(nuns / 2)) * 2;
        size_t start = uns[k] + (size_t)rand() % uns[k + 1];
        size_t n = 1 + (size_t)rand() % 24;
        for (size_t i = start; i < start + n && i < uns[k] + uns[k + 1]; i++)
            buf[i] = (uint8_t)rand();
        struct outcome o = run_mem(buf, f.len);
        rnd_runs += o.opened;
    }
    CHECK_EQ(rnd_runs, 3000); /* the header is intact: it always opens */

    /* whole-file random bytes, with and without a valid magic */
    for (int it = 0; it < 200; it++) {
        size_t len = (size_t)rand() % (3 * RIP_ALIGN);
        for (size_t i = 0; i < len; i++)
            buf[i] = (uint8_t)rand();
        if (it & 1 && len >= 8)
            memcpy(buf, RIP_MAGIC, 8);
        struct outcome o = run_mem(buf, len);
        CHECK(!o.clean);
    }
    free(buf);
    free(cov);
    rw_free_file(&f);
}

/* ---- through the binary -------------------------------------------------- */

/* Converts rip into dir/out.db and checks the contract. expect: -1 either,
 * 0 success, 1 failure. Returns the exit code (or -1 on a signal). */
static int convert_checked(const char *rip, int expect, int damaged)
{
    char out[512];
    snprintf(out, sizeof out, "%s/out.db", dir);
    unlink(out);
    struct ct_run r;
    const char *args[] = {"--force", rip, out, NULL};
    ct_exec(&r, conv, args);
    int sig = WIFSIGNALED(r.status);
    CHECK(!sig);
    if (sig) {
        fprintf(stderr, "%s: killed by signal %d\n", rip, WTERMSIG(r.status));
        return -1;
    }
    int code = WEXITSTATUS(r.status);
    CHECK(code == 0 || code == 1);
    if (expect >= 0) {
        CHECK_EQ(code, expect);
        if (code != expect)
            fprintf(stderr, "%s: exit %d, stderr:\n%s", rip, code, r.err);
    }
    if (code == 1) {
        CHECK_EQ(r.err_lines, 1);
        CHECK(strstr(r.err, rip) != NULL);
        CHECK(!ct_exists(out));
    } else if (code == 0) {
        sqlite3 *db = ct_open_db(out);
        CHECK(db != NULL);
        if (db) {
            long long clean = ct_int(db, "SELECT value FROM meta WHERE key = 'clean'");
            if (damaged) {
                CHECK_EQ(clean, 0);
                CHECK(strstr(r.err, "profile not clean") != NULL);
            }
            CHECK(ct_int(db, "SELECT count(*) FROM allocations") >= 0);
            sqlite3_close(db);
        }
    }
    CHECK_EQ(ct_count_prefix(dir, "out.db.tmp"), 0);
    return code;
}

static void write_bytes(const char *path, const uint8_t *b, size_t n)
{
    FILE *fp = fopen(path, "wb");
    if (fp) {
        if (n)
            fwrite(b, 1, n, fp);
        fclose(fp);
    }
}

static void special_inputs(void)
{
    char p[512];
    struct rw_file f;
    ct_reference(&f, 1);

    /* sampled truncations and flips */
    snprintf(p, sizeof p, "%s/cut", dir);
    for (size_t cut = 0; cut < f.len; cut += f.len / 23 + 1) {
        write_bytes(p, f.buf, cut);
        convert_checked(p, cut < RIP_HEADER_SIZE ? 1 : 0, 1);
    }
    uint8_t *buf = malloc(f.len), *cov = malloc(f.len);
    size_t uns[64];
    classify(&f, cov, uns, 64);
    snprintf(p, sizeof p, "%s/flip", dir);
    for (size_t off = 5; off < f.len; off += f.len / 29 + 1) {
        memcpy(buf, f.buf, f.len);
        buf[off] ^= 0x10;
        write_bytes(p, buf, f.len);
        convert_checked(p, -1, cov[off]);
    }

    /* random bytes: not a rip */
    srand(7);
    for (size_t i = 0; i < 10000; i++)
        buf[i] = (uint8_t)rand();
    snprintf(p, sizeof p, "%s/random", dir);
    write_bytes(p, buf, 10000);
    CHECK_EQ(convert_checked(p, 1, 1), 1);

    /* empty, directory, missing */
    snprintf(p, sizeof p, "%s/empty", dir);
    write_bytes(p, buf, 0);
    convert_checked(p, 1, 1);
    snprintf(p, sizeof p, "%s/adir", dir);
    mkdir(p, 0755);
    convert_checked(p, 1, 1);
    snprintf(p, sizeof p, "%s/missing", dir);
    convert_checked(p, 1, 1);
    free(buf);
    free(cov);
    rw_free_file(&f);
}

/* Builds a profile with one good slot and then `bad` (a hostile record or
 * chunk), converts it, and checks the good rows survived when keep >= 0. */
static void hostile_record(const char *name, const uint8_t *rec, size_t n, int huge_capacity,
                           int modules_bomb)
{
    struct rw_file f;
    struct rw_chunk c;
    static const uint64_t fr[] = {0x1234};
    rw_new(&f, 50, "/bin/x", "x", 1);
    rw_begin(&c, &f, RIP_CHUNK_EVENTS, 0, 50, 0);
    rw_stack(&c, 1, 1, fr, 1, 0);
    rw_alloc(&c, 10, 1, 100, 0x1000);
    rw_free(&c, 20, 0x1000);
    rw_end(&c, 1, 20);
    if (rec) {
        rw_begin(&c, &f, RIP_CHUNK_EVENTS, 1, 51, 30);
        rw_alloc(&c, 30, 1, 5, 0x2000);
        rw_raw(&c, rec, n);
        rw_alloc(&c, 40, 1, 6, 0x3000); /* lost behind the bad record */
        rw_end(&c, 0, 40);
    }
    if (modules_bomb) {
        rw_begin(&c, &f, RIP_CHUNK_MODULES, RIP_SLOT_SHARED, 0, 0);
        uint8_t m[12] = {0};
        uint32_t count = 0x7fffffff;
        memcpy(m + 8, &count, 4);
        rw_raw(&c, m, sizeof m);
        rw_end(&c, 1, 0);
    }
    if (huge_capacity) {
        rw_begin(&c, &f, RIP_CHUNK_EVENTS, 2, 52, 0);
        rw_end(&c, 0, 0);
        struct rip_chunk_header *h = (struct rip_chunk_header *)(f.buf + f.len - RIP_ALIGN);
        h->capacity = 0xffffffffu;
    }
    rw_trailer(&f, 3, 100, 1, 0);
    char p[512], out[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    rw_save(&f, p);
    rw_free_file(&f);
    CHECK_EQ(convert_checked(p, 0, 1), 0);
    snprintf(out, sizeof out, "%s/out.db", dir);
    sqlite3 *db = ct_open_db(out);
    if (db) {
        CHECK_EQ(ct_int(db, "SELECT count(*) FROM allocations WHERE size = 100 AND"
                            " alloc_after = 10 AND dealloc_after = 20"),
                 1);
        if (rec)
            CHECK_EQ(ct_int(db, "SELECT count(*) FROM allocations WHERE size = 5"), 1);
        sqlite3_close(db);
    }
}

static void huge_fields(void)
{
    /* STACK with 2^40 frames */
    uint8_t stack[] = {RIP_OP_STACK, 7, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40};
    hostile_record("huge-nframes", stack, sizeof stack, 0, 0);
    /* EXT of length 2^32 */
    uint8_t ext[] = {RIP_OP_EXT, 1, 0x80, 0x80, 0x80, 0x80, 0x10, 'a'};
    hostile_record("huge-ext", ext, sizeof ext, 0, 0);
    /* an 11-byte varint as a size */
    uint8_t var[] = {RIP_OP_ALLOC, 1,    0xff, 0xff, 0xff, 0xff, 0xff,
                     0xff,         0xff, 0xff, 0xff, 0xff, 0x01, 0};
    hostile_record("long-varint", var, sizeof var, 0, 0);
    /* op 0 and op 7 */
    uint8_t op0[] = {0};
    hostile_record("op0", op0, 1, 0, 0);
    /* a chunk claiming 4 GiB of capacity, and a module list of 2^31 modules */
    hostile_record("huge-capacity", NULL, 0, 1, 0);
    hostile_record("module-bomb", NULL, 0, 0, 1);
}

/* Events out of order: slot 0's second chunk starts before its first ended. */
static void out_of_order(void)
{
    struct rw_file f;
    struct rw_chunk c;
    static const uint64_t fr[] = {0x1234};
    rw_new(&f, 60, "/bin/x", "x", 1);
    rw_begin(&c, &f, RIP_CHUNK_EVENTS, 0, 60, 1000);
    rw_stack(&c, 1, 1, fr, 1, 0);
    rw_alloc(&c, 1000, 1, 10, 0x1000);
    rw_alloc(&c, 1100, 1, 20, 0x2000);
    rw_end(&c, 1, 1100);
    rw_begin(&c, &f, RIP_CHUNK_EVENTS, 0, 60, 500);
    rw_free(&c, 500, 0x1000);
    rw_free(&c, 600, 0x2000);
    rw_end(&c, 1, 600);
    rw_trailer(&f, 4, 2000, 1, 0);
    char p[512], out[512];
    snprintf(p, sizeof p, "%s/disorder", dir);
    rw_save(&f, p);
    rw_free_file(&f);
    CHECK_EQ(convert_checked(p, 0, 0), 0);
    snprintf(out, sizeof out, "%s/out.db", dir);
    sqlite3 *db = ct_open_db(out);
    if (db) {
        CHECK_EQ(ct_int(db, "SELECT count(*) FROM allocations"), 2);
        CHECK(ct_int(db, "SELECT value FROM meta WHERE key = 'out_of_order_events'") >= 1);
        sqlite3_close(db);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: convert_hostile RHEAPER-CONVERT\n");
        return 2;
    }
    conv = argv[1];
    ct_scratch(dir, sizeof dir, "convert_hostile");
    in_process();
    special_inputs();
    huge_fields();
    out_of_order();
    return rh_test_summary();
}
