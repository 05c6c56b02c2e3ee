/* rh_convert.h: the converter's internal header.
 *
 * rheaper-convert runs after the profiled program. It reads a rip file
 * (rh_rip.c), merges the per-thread streams in time order and pairs frees with
 * allocations (rh_merge.c), symbolizes each distinct return address once with
 * libdw (rh_symbolize.c) and loads everything into SQLite (rh_db.c). Prototypes
 * are grouped under the file that defines them.
 */
#ifndef RH_CONVERT_H
#define RH_CONVERT_H

#include <stddef.h>
#include <stdint.h>

/* ---- rh_symbolize.c ---------------------------------------------------- */

/* One loaded module as the MODULES chunks describe it (FORMAT.md). */
struct rh_module {
    uint64_t base;            /* load bias; 0 for a non-PIE executable */
    const char *path;         /* path recorded at run time */
    const uint8_t *build_id;  /* may be NULL */
    unsigned build_id_len;
    const uint64_t *ranges;   /* nranges pairs {start, end}, absolute addresses */
    unsigned nranges;
};

/* One resolved frame. Strings are owned by the symbolizer and live until
 * rh_sym_free(). file/sym are NULL and line 0 when unknown. */
struct rh_sym_frame {
    const char *module;  /* module path, NULL if the address is in no module */
    uint64_t rel_addr;   /* address relative to the module's base (the raw address if none) */
    const char *file;    /* full path as DWARF gives it */
    int line;
    const char *sym;     /* demangled function name */
    int inlined;         /* 1 for a frame produced by inline expansion (not the outermost) */
};

struct rh_symbolizer;

/* Creates an empty symbolizer. Returns NULL only on out-of-memory. */
struct rh_symbolizer *rh_sym_new(void);

/* Registers a module. The symbolizer copies what it keeps. Opening the ELF file
 * is deferred until the first address in it is resolved; a missing file, a file
 * whose build id differs from the recorded one, or a corrupt ELF/DWARF is
 * reported once on stderr (one line naming the path and the reason) and its
 * frames keep module + address with NULL file/line/sym. Never crashes on hostile
 * files. Returns 0, or -1 on out-of-memory. */
int rh_sym_add_module(struct rh_symbolizer *s, const struct rh_module *m);

/* Resolves one return address (absolute, as recorded; the symbolizer looks up
 * addr - 1). Writes up to `max` frames to out, innermost first: for an address
 * inside inlined code, the inlined callee first, then each caller at the line of
 * the call, ending with the real (outermost) function. Returns the number of
 * frames written (always >= 1 when max >= 1). Results are cached per address, so
 * resolving the same address again is cheap. */
int rh_sym_resolve(struct rh_symbolizer *s, uint64_t addr, struct rh_sym_frame *out, int max);

/* Frees everything, including all strings handed out. NULL is fine. */
void rh_sym_free(struct rh_symbolizer *s);

#endif
