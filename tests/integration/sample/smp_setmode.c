/* smp_setmode.c: smp_setmode IN OUT MODE copies the rip file IN to OUT with
 * the sampling mode at header offset 88 set to MODE and the header checksum
 * recomputed (FORMAT.md "Sampling"), so that
 * tests/integration/sample/run.sh (case "modes") can show the converter a profile as the
 * older runtime wrote it (mode 2) and one of a mode it does not know.
 * Exits 1 with a message on any error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rip_format.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: smp_setmode IN OUT MODE\n");
        return 1;
    }
    FILE *in = fopen(argv[1], "rb");
    if (!in || fseek(in, 0, SEEK_END) != 0) {
        perror(argv[1]);
        return 1;
    }
    long n = ftell(in);
    rewind(in);
    unsigned char *buf = n >= (long)RIP_HEADER_SIZE ? malloc((size_t)n) : NULL;
    if (!buf || fread(buf, 1, (size_t)n, in) != (size_t)n) {
        fprintf(stderr, "%s: not a rip file or unreadable\n", argv[1]);
        return 1;
    }
    fclose(in);
    uint32_t mode = (uint32_t)strtoul(argv[3], NULL, 10), crc = 0;
    memcpy(buf + RIP_HDR_SAMPLE_MODE_OFF, &mode, 4);
    memcpy(buf + 72, &crc, 4); /* the checksum covers the header with crc = 0 */
    crc = rip_crc32c(0, buf, RIP_HEADER_SIZE);
    memcpy(buf + 72, &crc, 4);
    FILE *out = fopen(argv[2], "wb");
    if (!out || fwrite(buf, 1, (size_t)n, out) != (size_t)n || fclose(out) != 0) {
        perror(argv[2]);
        return 1;
    }
    free(buf);
    return 0;
}
