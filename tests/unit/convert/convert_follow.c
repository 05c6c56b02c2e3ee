/* convert_follow.c: the one rip reader on a file still being written.
 *
 * The live view follows a rip file through rh_rip_follow_poll (convert/rh_rip.c),
 * the same walk of the chunks the converter uses, with the rules of a
 * growing file. This test writes a known profile (ripwrite.c) into a buffer
 * that starts as zeros, as a reservation past a file's end does, and lets it
 * grow piece by piece: the header, half a chunk header, a chunk header whose
 * payload is not all there yet, then whole chunks. After every step it polls
 * and drains every stream as the follower does (rh_stream_next waits at the
 * end of what is written). At the end the followed profile must hold what
 * rh_rip_open_mem reads from the whole file: the same chunks, streams,
 * modules, trailer, and every event, with no damage. Then hostile growth: a
 * chunk header that stays wrong is damage only after the reader's patience
 * (40 polls), said in one line, and the walk stops there; a sealed chunk
 * whose checksum stays wrong is skipped after as long, and the walk goes on.
 * Last, the complete file's rules at its end, where the two modes part: a
 * tail shorter than a chunk header cuts the profile short, and is damage
 * only when it is not all zeros.
 */
#include "convtest.h"
#include "harness.h"
#include "rh_core.h"

#define TRIES 40 /* RH_FOLLOW_BAD_TRIES in rh_rip.c */

/* The reference profile: a module, two threads' chunks, a second chunk of
 * the first thread, a trailer. Returns the number of events written. */
static uint64_t rh_plan(struct rw_file *f)
{
    static const char cmd[] = "./grow";
    rw_new(f, 77, "/usr/bin/grow", cmd, sizeof cmd - 1);
    static const uint8_t bid[4] = {1, 2, 3, 4};
    rw_module(f, 0, "/usr/bin/grow", bid, 4, 0x400000, 0x500000);
    static const uint64_t fr[] = {0x401000, 0x402000};
    struct rw_chunk c;
    uint64_t ev = 0;
    rw_begin(&c, f, RIP_CHUNK_EVENTS, 0, 77, 0);
    rw_stack(&c, 1, 1, fr, 2, 0);
    for (int i = 0; i < 50; i++, ev++)
        rw_alloc(&c, 1000 + 10 * (uint64_t)i, 1, 16 + (uint64_t)i, 0x10000 + 64 * (uint64_t)i);
    rw_end(&c, 1, 1500);
    rw_begin(&c, f, RIP_CHUNK_EVENTS, 1, 78, 600);
    rw_stack(&c, 2, 1, fr, 1, 0);
    for (int i = 0; i < 30; i++, ev++)
        rw_alloc(&c, 1600 + 10 * (uint64_t)i, 2, 8, 0x20000 + 64 * (uint64_t)i);
    rw_end(&c, 1, 1900);
    rw_begin(&c, f, RIP_CHUNK_EVENTS, 0, 77, 2000);
    for (int i = 0; i < 50; i++, ev++)
        rw_free(&c, 2000 + 10 * (uint64_t)i, 0x10000 + 64 * (uint64_t)i);
    rw_end(&c, 1, 2500);
    rw_trailer(f, ev, 3000, 2, 0);
    return ev;
}

/* Every event the streams hold now. */
static uint64_t rh_drain(struct rh_rip *r)
{
    uint64_t n = 0;
    struct rh_event ev;
    for (size_t i = 0; i < r->nstreams; i++)
        while (rh_stream_next(r, &r->streams[i], &ev) == 1)
            n++;
    return n;
}

/* The offsets where chunks start in f, and the end; returns their number. */
static size_t rh_chunk_starts(const struct rw_file *f, size_t *at, size_t max)
{
    size_t n = 0;
    for (size_t off = RIP_HEADER_SIZE; off + RIP_CHUNK_HDR_SIZE <= f->len && n < max;) {
        struct rip_chunk_header h;
        memcpy(&h, f->buf + off, sizeof h);
        at[n++] = off;
        off += (RIP_CHUNK_HDR_SIZE + h.capacity + RIP_ALIGN - 1) & ~(size_t)(RIP_ALIGN - 1);
    }
    return n;
}

static void rh_grow_to(uint8_t *g, const struct rw_file *f, size_t from, size_t to)
{
    memcpy(g + from, f->buf + from, to - from);
}

static void rh_test_growth(void)
{
    struct rw_file f;
    uint64_t written = rh_plan(&f);

    struct rh_rip ref;
    memset(&ref, 0, sizeof ref);
    CHECK_EQ(rh_rip_open_mem(&ref, f.buf, f.len, "whole", NULL), 0);
    uint64_t ref_events = rh_drain(&ref);
    CHECK_EQ(ref_events, written);

    uint8_t *g = calloc(1, f.len);
    struct rh_rip r;
    memset(&r, 0, sizeof r);
    rh_rip_follow_start(&r, g, "grow", NULL);
    uint64_t seen = 0;
    CHECK_EQ(rh_rip_follow_poll(&r, 0), 0); /* nothing written yet */
    CHECK_EQ(r.walk.header, 0);
    rh_grow_to(g, &f, 0, RIP_HEADER_SIZE);
    CHECK_EQ(rh_rip_follow_poll(&r, RIP_HEADER_SIZE), 1);
    CHECK_EQ(r.walk.header, 1);
    CHECK_EQ(r.hdr.pid, 77);

    size_t at[16];
    size_t n = rh_chunk_starts(&f, at, 16);
    CHECK_EQ(n, 5); /* MODULES, 3 x EVENTS, TRAILER */
    size_t done = RIP_HEADER_SIZE;
    for (size_t k = 0; k < n; k++) {
        size_t end = k + 1 < n ? at[k + 1] : f.len;
        /* half a chunk header: the reader waits, and says nothing */
        rh_grow_to(g, &f, done, at[k] + RIP_CHUNK_HDR_SIZE / 2);
        CHECK_EQ(rh_rip_follow_poll(&r, at[k] + RIP_CHUNK_HDR_SIZE / 2), 0);
        /* the header and part of the payload: not whole yet, still waiting */
        size_t part = at[k] + RIP_CHUNK_HDR_SIZE + 8;
        rh_grow_to(g, &f, at[k] + RIP_CHUNK_HDR_SIZE / 2, part);
        CHECK_EQ(rh_rip_follow_poll(&r, part), 0);
        /* the whole chunk: taken */
        rh_grow_to(g, &f, part, end);
        CHECK_EQ(rh_rip_follow_poll(&r, end), 1);
        done = end;
        seen += rh_drain(&r);
        CHECK_EQ(r.damaged, 0);
    }
    CHECK_EQ(rh_rip_follow_poll(&r, f.len), 0); /* nothing new */
    CHECK_EQ(r.nchunks, ref.nchunks);
    CHECK_EQ(r.nstreams, ref.nstreams);
    CHECK_EQ(r.nmods, ref.nmods);
    CHECK_EQ(r.has_trailer, 1);
    CHECK_EQ(r.tr_events, written);
    CHECK_EQ(seen, written);
    CHECK_EQ(r.events, ref.events);
    CHECK_EQ(r.nstacks, ref.nstacks);
    CHECK_EQ(r.damaged, 0);
    CHECK_EQ(rh_rip_ns(&r, 2500), rh_rip_ns(&ref, 2500));
    r.mapped = 0;
    rh_rip_close(&r);
    rh_rip_close(&ref);
    free(g);
    rw_free_file(&f);
}

/* warnings printed to w since it was made */
static int rh_lines(FILE *w)
{
    fflush(w);
    rewind(w);
    int n = 0, c;
    while ((c = fgetc(w)) != EOF)
        n += c == '\n';
    return n;
}

static void rh_test_hostile(void)
{
    struct rw_file f;
    rh_plan(&f);
    size_t at[16];
    size_t n = rh_chunk_starts(&f, at, 16);

    /* 1. the second chunk's magic stays wrong: waited for, then damage */
    uint8_t *g = malloc(f.len);
    memcpy(g, f.buf, f.len);
    g[at[1]] ^= 0x55;
    FILE *w = tmpfile();
    struct rh_rip r;
    memset(&r, 0, sizeof r);
    rh_rip_follow_start(&r, g, "bad-magic", w);
    CHECK_EQ(rh_rip_follow_poll(&r, f.len), 1); /* header and MODULES */
    for (int i = 2; i < TRIES; i++)
        rh_rip_follow_poll(&r, f.len);
    CHECK_EQ(r.damaged, 0); /* a header being written is not damage yet */
    CHECK_EQ(r.walk.stuck, 0);
    CHECK_EQ(rh_lines(w), 0);
    rh_rip_follow_poll(&r, f.len);
    CHECK_EQ(r.damaged, 1);
    CHECK_EQ(r.walk.stuck, 1);
    CHECK_EQ(rh_lines(w), 1);
    for (int i = 0; i < 10; i++)
        rh_rip_follow_poll(&r, f.len);
    CHECK_EQ(rh_lines(w), 1); /* said once */
    CHECK_EQ(r.nchunks, 0);   /* nothing past it */
    fclose(w);
    r.mapped = 0;
    rh_rip_close(&r);

    /* 2. a sealed chunk's payload byte stays wrong: skipped after as long,
     * the walk goes on to the chunks after it */
    memcpy(g, f.buf, f.len);
    g[at[2] + RIP_CHUNK_HDR_SIZE + 3] ^= 0x01;
    w = tmpfile();
    memset(&r, 0, sizeof r);
    rh_rip_follow_start(&r, g, "bad-crc", w);
    for (int i = 0; i < TRIES + 2; i++)
        rh_rip_follow_poll(&r, f.len);
    CHECK_EQ(r.damaged, 1);
    CHECK_EQ(r.damaged_chunks, 1);
    CHECK_EQ(r.walk.stuck, 0);
    CHECK_EQ(r.nchunks, 2); /* the first and third EVENTS chunks */
    CHECK_EQ(r.has_trailer, 1);
    CHECK_EQ(rh_lines(w), 1);
    fclose(w);
    r.mapped = 0;
    rh_rip_close(&r);
    free(g);
    (void)n;
    rw_free_file(&f);
}

/* A complete file with `extra` bytes of value `fill` after its trailer. */
static void rh_test_tail(size_t extra, uint8_t fill, int cut, int damaged)
{
    struct rw_file f;
    rh_plan(&f);
    uint8_t *b = malloc(f.len + extra);
    memcpy(b, f.buf, f.len);
    memset(b + f.len, fill, extra);
    struct rh_rip r;
    memset(&r, 0, sizeof r);
    CHECK_EQ(rh_rip_open_mem(&r, b, f.len + extra, "tail", NULL), 0);
    CHECK_EQ(r.has_trailer, 1);
    CHECK_EQ(r.cut_short, cut);
    CHECK_EQ(r.damaged, damaged);
    rh_rip_close(&r);
    free(b);
    rw_free_file(&f);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    rh_test_growth();
    rh_test_hostile();
    rh_test_tail(0, 0, 0, 0);     /* the file as written: clean */
    rh_test_tail(32, 0, 1, 0);    /* 32 zero bytes: cut short, no damage */
    rh_test_tail(32, 0xab, 1, 1); /* 32 other bytes: a partial header, damage */
    rh_test_tail(4096, 0, 1, 0);  /* a zero header: a chunk not written */
    return rh_test_summary();
}
