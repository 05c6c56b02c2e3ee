/* fuzz_rip.c: libFuzzer target for the rip reader.
 *
 * Feeds each input to the whole reading path that runs before SQLite: header
 * and chunk validation, checksums, MODULES and TRAILER parsing, the stream
 * decoders and the time-ordered merge with block pairing. Rows are only
 * counted. Built with clang -fsanitize=fuzzer,address,undefined when
 * RHEAPER_FUZZ=ON; seed it with real rip files (the reader is silent here).
 */
#include <stdint.h>
#include <string.h>

#include "rh_core.h"

static int rh_fuzz_row(void *ctx, const struct rh_row *row)
{
    uint64_t *n = ctx;
    *n += row->size ? 1 : 2;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rh_rip r;
    memset(&r, 0, sizeof r);
    if (rh_rip_open_mem(&r, data, size, "fuzz", NULL) == 0) {
        uint64_t rows = 0;
        struct rh_merge_sink sink = {rh_fuzz_row, NULL, &rows, NULL, NULL};
        struct rh_merge_stats st;
        rh_merge_run(&r, &sink, &st);
        for (size_t i = 0; i < r.nstacks; i++) /* touch what the DB writer reads */
            if (r.stacks[i].defined && r.stacks[i].nframes)
                rows += r.frames[r.stacks[i].frames + r.stacks[i].nframes - 1] & 1;
    }
    rh_rip_close(&r);
    return 0;
}
