/* zlib.c: every allocation zlib makes with its default allocator (inside
 * libz.so, no frame pointers) is a row, below deflateInit2_/inflateInit2_ and
 * main's calling line.
 *
 * The program learns how many blocks one deflateInit and one inflateInit
 * allocate by running them once with counting allocators (zalloc/zfree of its
 * own), then runs ROUNDS of each with zlib's defaults: exactly ROUNDS times as
 * many rows must sit below each init at its line, all freed. The whole count
 * matches valgrind's (run.sh: "VALGRIND").
 */
#include <zlib.h>

#include "expect.h"

#define ROUNDS 40
#define LEN 20000

static int counted;

static voidpf count_alloc(voidpf op, uInt items, uInt size)
{
    (void)op;
    counted++;
    return calloc(items, size);
}

static void count_free(voidpf op, voidpf p)
{
    (void)op;
    free(p);
}

static unsigned char src[LEN], packed[LEN + 1024], back[LEN];

int main(void)
{
    for (int i = 0; i < LEN; i++)
        src[i] = (unsigned char)("zlib allocates "[i % 15] + i / 1000);
    z_stream z;
    memset(&z, 0, sizeof z);
    z.zalloc = count_alloc;
    z.zfree = count_free;
    if (deflateInit(&z, 6) != Z_OK)
        return 1;
    int per_deflate = counted;
    deflateEnd(&z);
    memset(&z, 0, sizeof z);
    z.zalloc = count_alloc;
    z.zfree = count_free;
    counted = 0;
    if (inflateInit(&z) != Z_OK)
        return 1;
    z.next_in = (Bytef *)"x";
    z.avail_in = 0;
    inflateEnd(&z);
    /* (inflate would allocate its window lazily, but a one-shot Z_FINISH
     * into a buffer large enough never needs it) */
    int per_inflate = counted;

    int dline = 0, iline = 0;
    for (int r = 0; r < ROUNDS; r++) {
        memset(&z, 0, sizeof z);
        dline = __LINE__ + 1;
        if (deflateInit(&z, 6) != Z_OK)
            return 1;
        z.next_in = src, z.avail_in = LEN, z.next_out = packed, z.avail_out = sizeof packed;
        if (deflate(&z, Z_FINISH) != Z_STREAM_END)
            return 1;
        uLong plen = z.total_out;
        deflateEnd(&z);
        memset(&z, 0, sizeof z);
        iline = __LINE__ + 1;
        if (inflateInit(&z) != Z_OK)
            return 1;
        z.next_in = packed, z.avail_in = (uInt)plen, z.next_out = back, z.avail_out = LEN;
        if (inflate(&z, Z_FINISH) != Z_STREAM_END || memcmp(src, back, LEN) != 0)
            return 1;
        inflateEnd(&z);
    }
    EXPECT((long long)ROUNDS * per_deflate,
           "SELECT count(*) FROM allocations a WHERE dealloc_after IS NOT NULL AND bt IN "
           "(SELECT x.id FROM backtraces x JOIN backtraces y ON y.id = x.id AND "
           "y.frame_no > x.frame_no WHERE x.sym = 'deflateInit2_' AND y.sym = 'main' "
           "AND y.line = %d)",
           dline);
    EXPECT((long long)ROUNDS * per_inflate,
           "SELECT count(*) FROM allocations a WHERE dealloc_after IS NOT NULL AND bt IN "
           "(SELECT x.id FROM backtraces x JOIN backtraces y ON y.id = x.id AND "
           "y.frame_no > x.frame_no WHERE x.sym = 'inflateInit2_' AND y.sym = 'main' "
           "AND y.line = %d)",
           iline);
    EXPECT(0, "SELECT count(*) FROM stacks WHERE truncated != 0");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'unknown_frees'");
    if (write(1, "VALGRIND\n", 9) != 9)
        return 1;
    return 0;
}
