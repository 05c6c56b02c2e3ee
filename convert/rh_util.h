/* rh_util.h: the converter's small helpers that know nothing of the format.
 *
 * A u64 -> u32 hash map and the one array growth rule (rh_map.c), and temp
 * files written once and read back once (rh_spill.c). Every part of the
 * converter and the readers (convert/query/, the programs) may include it;
 * it includes nothing of theirs.
 */
#ifndef RH_UTIL_H
#define RH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifndef RH_HIDDEN
#define RH_HIDDEN __attribute__((visibility("hidden")))
#endif

/* ---- rh_map.c: u64 -> u32 hash map and array growth --------------------- */

/* Open-addressing map. Values must not be UINT32_MAX (the empty marker). */
struct rh_map {
    uint64_t *keys;
    uint32_t *vals;
    size_t cap; /* power of two, or 0 */
    size_t n;
};

/* Returns the value for key, or UINT32_MAX when absent. */
RH_HIDDEN uint32_t rh_map_get(const struct rh_map *m, uint64_t key);
/* Inserts or replaces. Returns 0, or -1 on out-of-memory (map unchanged). */
RH_HIDDEN int rh_map_put(struct rh_map *m, uint64_t key, uint32_t val);
RH_HIDDEN void rh_map_free(struct rh_map *m);

/* Makes room for `need` elements of `elem` bytes in *arr (capacity *cap,
 * doubled as needed). Returns 0, or -1 on out-of-memory (*arr unchanged). */
RH_HIDDEN int rh_grow(void *arr, size_t *cap, size_t need, size_t elem);

/* ---- rh_spill.c: unlinked temp files written once, read back once ------- */

/* A new temp file, open for writing and reading, already unlinked:
 * "<near>.<tag>.XXXXXX" beside near (the output database), or
 * "$TMPDIR/rheaper-<tag>.XXXXXX" (else /tmp) when near is NULL. NULL with
 * errno set when it cannot be made. */
RH_HIDDEN FILE *rh_spill_open(const char *near, const char *tag);
/* Reads one LEB128 varint from f (one reader thread: unlocked stdio).
 * Returns 0, or -1 at the end, when cut, or on a varint longer than 10 bytes. */
RH_HIDDEN int rh_spill_get(FILE *f, uint64_t *v);

#endif
