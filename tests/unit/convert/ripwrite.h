/* ripwrite.h: a test-only writer of rip files with known content.
 *
 * The converter tests build profiles event by event with this writer instead of
 * running a program, so they know every row the database must hold. It encodes
 * records exactly as runtime/FORMAT.md describes them, independently of the
 * runtime's own writer. Times are ns since enable: the clock is CLOCK_MONOTONIC
 * (tick = ns) with shift 0, and the enable time is RW_T0, unless a test sets the
 * header fields itself.
 */
#ifndef RIPWRITE_H
#define RIPWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "rip_format.h"

#define RW_T0 1000000000ull /* monotonic ns (and tick) at enable */

struct rw_file {
    uint8_t *buf; /* the whole file; header first */
    size_t len, cap;
    struct rip_file_header *hdr; /* points into buf after rw_new */
    unsigned unsealed;           /* unsealed EVENTS/SHARED chunks so far */
};

struct rw_chunk {
    struct rw_file *f;
    struct rip_chunk_header h;
    uint8_t *p; /* payload being built */
    size_t used, cap;
    uint64_t time, addr; /* delta state */
    uint32_t events;
};

/* A new file: header with pid, exe, NUL-separated cmdline (cmd_len bytes). */
void rw_new(struct rw_file *f, uint32_t pid, const char *exe, const char *cmd, size_t cmd_len);
/* Recomputes the header checksum (after a test edits header fields). */
void rw_header_crc(struct rw_file *f);

/* Starts a chunk. base is the base time in ns since enable. */
void rw_begin(struct rw_chunk *c, struct rw_file *f, int type, uint32_t slot, uint32_t tid,
              uint64_t base);
void rw_alloc(struct rw_chunk *c, uint64_t t, uint64_t stack, uint64_t size, uint64_t addr);
void rw_free(struct rw_chunk *c, uint64_t t, uint64_t addr);
void rw_realloc(struct rw_chunk *c, uint64_t t, uint64_t dt2, uint64_t stack, uint64_t size,
                uint64_t old_addr, uint64_t new_addr);
void rw_fail(struct rw_chunk *c, uint64_t t, uint64_t stack, uint64_t size);
void rw_stack(struct rw_chunk *c, uint64_t id, unsigned kind, const uint64_t *frames, unsigned n,
              int cut);
void rw_threadname(struct rw_chunk *c, const char *name);
void rw_setthread(struct rw_chunk *c, uint32_t tid);
/* Version 2 (FORMAT.md "Allocator families and pools"): names dynamic kind
 * `kind`; ends every live block of pool `pool` at t (a timed record). */
void rw_kindname(struct rw_chunk *c, uint64_t kind, const char *name);
void rw_pool_reset(struct rw_chunk *c, uint64_t t, uint64_t pool);
/* Raw payload bytes (for hostile records). */
void rw_raw(struct rw_chunk *c, const void *bytes, size_t n);
/* Appends the chunk to the file, sealed (with crc) or not. The capacity is the
 * payload rounded so the chunk fills whole 4096-byte pages. calib_ns: the
 * chunk's calibration pair (tick = ns), in ns since enable. */
void rw_end(struct rw_chunk *c, int sealed, uint64_t calib_ns);

/* Appends a MODULES chunk with one module. */
void rw_module(struct rw_file *f, uint64_t base, const char *path, const uint8_t *build_id,
               unsigned build_id_len, uint64_t start, uint64_t end);
/* Appends a TRAILER chunk; end_ns in ns since enable. Its count of chunks
 * still open is the number of unsealed event chunks written so far. */
void rw_trailer(struct rw_file *f, uint64_t events, uint64_t end_ns, uint64_t stacks,
                uint64_t lost);
/* Writes the file. Returns 0 or -1. */
int rw_save(const struct rw_file *f, const char *path);
void rw_free_file(struct rw_file *f);

#endif
