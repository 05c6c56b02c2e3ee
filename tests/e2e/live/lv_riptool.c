/* lv_riptool.c: puts a finished rip file back into the state a reader sees
 * while the program still writes it (tests/e2e/live/run.sh, case torn-record).
 *
 *   lv_riptool tear FILE      the EVENTS chunk with the most events becomes
 *                             open again (SEALED cleared) with `used` one
 *                             byte short, so its last record is cut in the
 *                             middle, and the TRAILER chunk's header is
 *                             zeroed (not written yet); prints the chunk's
 *                             offset and its real `used`
 *   lv_riptool used FILE OFF N   sets `used` of the chunk at OFF to N
 *
 * Offsets and fields are runtime/FORMAT.md's chunk header.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rip_format.h"

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    FILE *f = fopen(argv[2], "r+b");
    if (!f)
        return 1;
    if (!strcmp(argv[1], "used") && argc == 5) {
        uint32_t n = (uint32_t)strtoul(argv[4], NULL, 10);
        fseek(f, strtol(argv[3], NULL, 10) + 12, SEEK_SET);
        fwrite(&n, 4, 1, f);
        return fclose(f) != 0;
    }
    if (strcmp(argv[1], "tear"))
        return 2;
    long off = RIP_HEADER_SIZE, best = -1;
    uint32_t best_events = 0;
    struct rip_chunk_header h, bh;
    while (fseek(f, off, SEEK_SET) == 0 && fread(&h, sizeof h, 1, f) == 1 &&
           h.magic == RIP_CHUNK_MAGIC) {
        if (h.type == RIP_CHUNK_TRAILER) {
            static const struct rip_chunk_header zero;
            fseek(f, off, SEEK_SET);
            fwrite(&zero, sizeof zero, 1, f);
            break;
        }
        if (h.type == RIP_CHUNK_EVENTS && h.events > best_events && h.used > 1) {
            best = off;
            best_events = h.events;
            bh = h;
        }
        off += (long)((RIP_CHUNK_HDR_SIZE + h.capacity + RIP_ALIGN - 1) & ~(RIP_ALIGN - 1));
    }
    if (best < 0)
        return 1;
    printf("%ld %u\n", best, bh.used);
    bh.flags &= (uint8_t)~RIP_CHUNK_F_SEALED;
    bh.used -= 1;
    fseek(f, best, SEEK_SET);
    fwrite(&bh, sizeof bh, 1, f);
    return fclose(f) != 0;
}
