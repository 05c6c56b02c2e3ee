/* rip_crc.c: crc32c (Castagnoli) for rip chunk and header checksums.
 *
 * Shared by the runtime (sealing chunks inside the profiled program) and the
 * converter (checking them), so it depends on nothing but the compiler: a
 * table-driven implementation, and the SSE4.2 crc32 instruction when cpuid says
 * the CPU has it. cpuid is asked directly rather than through
 * __builtin_cpu_supports, whose data may not be initialised yet when the runtime
 * seals a chunk before constructors run. No allocation, async-signal-safe.
 */
#include <string.h>

#include "rip_format.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#define RIP_CRC32C_POLY 0x82f63b78u /* reflected Castagnoli polynomial */

static uint32_t rip_crc_table[256];
static int rip_crc_table_ready; /* atomic: table filled */
static int rip_crc_hw = -1;     /* atomic: -1 unknown, 0 no SSE4.2, 1 SSE4.2 */

/* Fills the table. Idempotent: racing callers write identical values. */
static void rip_crc_init_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (RIP_CRC32C_POLY & (0u - (c & 1u)));
        rip_crc_table[i] = c;
    }
    __atomic_store_n(&rip_crc_table_ready, 1, __ATOMIC_RELEASE);
}

/* Table-driven update of the inverted crc c. */
static uint32_t rip_crc_sw(uint32_t c, const uint8_t *p, size_t len)
{
    if (!__atomic_load_n(&rip_crc_table_ready, __ATOMIC_ACQUIRE))
        rip_crc_init_table();
    while (len--)
        c = rip_crc_table[(c ^ *p++) & 0xffu] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__)
/* SSE4.2 update of the inverted crc c: 8 bytes per instruction. */
__attribute__((target("sse4.2"))) static uint32_t rip_crc_hw32(uint32_t c, const uint8_t *p,
                                                               size_t len)
{
    uint64_t c64 = c;
    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c64 = __builtin_ia32_crc32di(c64, v);
        p += 8;
        len -= 8;
    }
    c = (uint32_t)c64;
    while (len--)
        c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}

static int rip_crc_detect(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    return (c >> 20) & 1;
}
#endif

uint32_t rip_crc32c(uint32_t crc, const void *buf, size_t len)
{
    uint32_t c = ~crc;
    const uint8_t *p = (const uint8_t *)buf;
#if defined(__x86_64__)
    int hw = __atomic_load_n(&rip_crc_hw, __ATOMIC_RELAXED);
    if (hw < 0) {
        hw = rip_crc_detect();
        __atomic_store_n(&rip_crc_hw, hw, __ATOMIC_RELAXED);
    }
    if (hw)
        return ~rip_crc_hw32(c, p, len);
#endif
    return ~rip_crc_sw(c, p, len);
}

uint32_t rip_chunk_crc(const struct rip_chunk_header *h, const uint8_t *payload)
{
    struct rip_chunk_header copy;
    memcpy(&copy, h, sizeof copy);
    copy.crc = 0;
    uint32_t c = rip_crc32c(0, &copy, sizeof copy);
    return rip_crc32c(c, payload, copy.used);
}
