/* test_varint.c: the varint, zigzag and crc32c helpers of rip_format.h.
 *
 * Round trips at every 7-bit boundary, the exact bytes of known encodings, the
 * damage cases a reader must reject (truncated, longer than 10 bytes, a tenth
 * byte with bits beyond 64), and crc32c check values.
 */
#include <string.h>

#include "harness.h"
#include "rip_format.h"

static void roundtrip(uint64_t v)
{
    uint8_t buf[16];
    uint8_t *end = rip_put_varint(buf, v);
    const uint8_t *p = buf;
    uint64_t out = ~v;
    CHECK_EQ(rip_get_varint(&p, end, &out), 0);
    CHECK(out == v);
    CHECK(p == end);
    /* every shorter prefix is truncated damage */
    for (const uint8_t *e = buf; e < end; e++) {
        const uint8_t *q = buf;
        CHECK_EQ(rip_get_varint(&q, e, &out), -1);
        CHECK(q == buf);
    }
}

int main(void)
{
    for (unsigned k = 0; k < 64; k++) {
        roundtrip((uint64_t)1 << k);
        roundtrip(((uint64_t)1 << k) - 1);
        roundtrip(((uint64_t)1 << k) + 1);
    }
    roundtrip(UINT64_MAX);

    uint8_t buf[16];
    CHECK_EQ(rip_put_varint(buf, 0) - buf, 1);
    CHECK_EQ(buf[0], 0);
    CHECK_EQ(rip_put_varint(buf, 127) - buf, 1);
    CHECK_EQ(rip_put_varint(buf, 128) - buf, 2);
    CHECK_EQ(buf[0], 0x80);
    CHECK_EQ(buf[1], 0x01);
    CHECK_EQ(rip_put_varint(buf, 300) - buf, 2);
    CHECK_EQ(buf[0], 0xac);
    CHECK_EQ(buf[1], 0x02);
    CHECK_EQ(rip_put_varint(buf, UINT64_MAX) - buf, 10);
    CHECK_EQ(buf[9], 0x01);

    /* 11 bytes: too long */
    uint8_t longv[11];
    memset(longv, 0x80, 10);
    longv[10] = 0;
    const uint8_t *p = longv;
    uint64_t out;
    CHECK_EQ(rip_get_varint(&p, longv + 11, &out), -1);
    /* tenth byte carrying bits above 2^64 */
    uint8_t over[10];
    memset(over, 0xff, 9);
    over[9] = 0x02;
    p = over;
    CHECK_EQ(rip_get_varint(&p, over + 10, &out), -1);
    over[9] = 0x01;
    p = over;
    CHECK_EQ(rip_get_varint(&p, over + 10, &out), 0);
    CHECK(out == UINT64_MAX);

    /* zigzag */
    CHECK_EQ(rip_zigzag(0), 0);
    CHECK_EQ(rip_zigzag(-1), 1);
    CHECK_EQ(rip_zigzag(1), 2);
    CHECK_EQ(rip_zigzag(-2), 3);
    CHECK(rip_zigzag(INT64_MIN) == UINT64_MAX);
    int64_t samples[] = {0, 1, -1, 63, -64, 64, 1000000, -1000000, INT64_MAX, INT64_MIN};
    for (unsigned i = 0; i < sizeof samples / sizeof *samples; i++)
        CHECK(rip_unzigzag(rip_zigzag(samples[i])) == samples[i]);

    /* crc32c check values (RFC 3720 B.4 and the classic "123456789") */
    CHECK(rip_crc32c(0, "123456789", 9) == 0xe3069283u);
    uint8_t zeros[32] = {0}, ones[32];
    memset(ones, 0xff, sizeof ones);
    CHECK(rip_crc32c(0, zeros, 32) == 0x8a9136aau);
    CHECK(rip_crc32c(0, ones, 32) == 0x62a8ab43u);
    /* continuing a crc equals one pass */
    const char *msg = "the quick brown fox jumps over the lazy dog, twice over";
    size_t n = strlen(msg);
    CHECK(rip_crc32c(rip_crc32c(0, msg, 7), msg + 7, n - 7) == rip_crc32c(0, msg, n));
    CHECK_EQ(rip_crc32c(0, msg, 0), 0);
    return rh_test_summary();
}
