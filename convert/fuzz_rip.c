/* fuzz_rip.c: libFuzzer target for the rip reader.
 *
 * Feeds each input to the whole reading path that runs before SQLite: header
 * and chunk validation, checksums, MODULES and TRAILER parsing, the stream
 * decoders and the time-ordered merge with block pairing. Rows are only
 * counted. Then the same bytes as a file still being written, as the live
 * view reads one: they appear in three steps in a buffer of zeros, each step
 * polled twice (rh_rip_follow_poll) and its streams drained into the merge
 * fed one event at a time. Built with clang -fsanitize=fuzzer,address,undefined
 * when RHEAPER_FUZZ=ON (rh_check.h's checks abort here); seed it with real rip
 * files (the reader is silent here).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rh_core.h"

static int rh_fuzz_row(void *ctx, const struct rh_row *row)
{
    uint64_t *n = ctx;
    *n += row->size ? 1 : 2;
    return 0;
}

/* The input as a growing file (see above). */
static void rh_fuzz_follow(const uint8_t *data, size_t size)
{
    uint8_t *g = calloc(1, size ? size : 1);
    if (!g)
        return;
    struct rh_rip r;
    memset(&r, 0, sizeof r);
    rh_rip_follow_start(&r, g, "fuzz-follow", NULL);
    uint64_t rows = 0;
    struct rh_merge_sink sink = {.row = rh_fuzz_row, .ctx = &rows};
    struct rh_merge_stats st;
    struct rh_merge *m = rh_merge_new(&r, &sink, &st);
    size_t done = 0;
    for (int step = 1; m && step <= 3; step++) {
        size_t to = step == 3 ? size : size / 3 * (size_t)step;
        memcpy(g + done, data + done, to - done);
        done = to;
        for (int k = 0; k < 2; k++) {
            if (rh_rip_follow_poll(&r, to) < 0)
                goto out;
            struct rh_event ev;
            for (size_t i = 0; i < r.nstreams; i++)
                while (rh_stream_next(&r, &r.streams[i], &ev) == 1)
                    if (rh_merge_feed(m, &ev))
                        goto out;
        }
    }
out:
    rh_merge_free(m);
    r.mapped = 0;
    rh_rip_close(&r);
    free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rh_rip r;
    memset(&r, 0, sizeof r);
    if (rh_rip_open_mem(&r, data, size, "fuzz", NULL) == 0) {
        uint64_t rows = 0;
        struct rh_merge_sink sink = {.row = rh_fuzz_row, .ctx = &rows};
        struct rh_merge_stats st;
        rh_merge_run(&r, &sink, &st);
        for (size_t i = 0; i < r.nstacks; i++) /* touch what the DB writer reads */
            if (r.stacks[i].defined && r.stacks[i].nframes)
                rows += r.frames[r.stacks[i].frames + r.stacks[i].nframes - 1] & 1;
    }
    rh_rip_close(&r);
    rh_fuzz_follow(data, size);
    return 0;
}
