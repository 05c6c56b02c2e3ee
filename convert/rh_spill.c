/* rh_spill.c: unlinked temp files for what the converter writes once during
 * the merge and reads back once at the end.
 *
 * Some of what the merge gathers is needed only when the tables are written
 * and grows with the run: rh_postings.c's full chunks of row ids per stack,
 * rh_aggregate.c's per-column stack figures of the heap timeline. Kept in
 * memory they would make the converter's peak grow with events (or with
 * columns times stacks); they go to a temp file instead, as LEB128 varints
 * (rip_put_varint) written by their owner through stdio. The timeline reads
 * its file back in order (rh_spill_get); stack_rows reads its records by
 * offset (pread, rh_postings.c).
 *
 * The file is made beside the output database ("<db>.<tag>.XXXXXX": the
 * database's file system, whose room the conversion needs anyway, where /tmp
 * is often a small tmpfs) and unlinked at once, so nothing is left behind
 * whatever happens to the converter. The rheaper command, which may read a
 * database in a directory it cannot write, asks for one in $TMPDIR (else
 * /tmp) instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rh_util.h"

FILE *rh_spill_open(const char *near, const char *tag)
{
    char path[4200];
    if (near) {
        snprintf(path, sizeof path, "%s.%s.XXXXXX", near, tag);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/rheaper-%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", tag);
    }
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    unlink(path); /* nothing to clean up, whatever happens */
    FILE *f = fdopen(fd, "w+");
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return f;
}

int rh_spill_get(FILE *f, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        int c = getc_unlocked(f);
        if (c == EOF || (shift == 63 && (c & 0x7e)))
            return -1;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}
