/* rh_symbolize.h: symbolizing return addresses with libdw.
 *
 * The symbolizer (rh_symbolize.c, with rh_modfind.c finding the files)
 * turns the return addresses of the recorded stacks into frames: module,
 * file, line, function, inline chains. The converter (rh_db.c) and the live
 * view (convert/live/) use it; it knows nothing of the rip file or SQLite.
 */
#ifndef RH_SYMBOLIZE_H
#define RH_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>


/* One loaded module as the MODULES chunks describe it (FORMAT.md). */
struct rh_module {
    uint64_t base;           /* load bias; 0 for a non-PIE executable */
    const char *path;        /* path recorded at run time */
    const uint8_t *build_id; /* may be NULL */
    unsigned build_id_len;
    const uint64_t *ranges; /* nranges pairs {start, end}, absolute addresses */
    unsigned nranges;
};

/* One resolved frame. Strings are owned by the symbolizer and live until
 * rh_sym_free(). file/sym are NULL and line 0 when unknown. */
struct rh_sym_frame {
    const char *module; /* module path, NULL if the address is in no module */
    uint64_t rel_addr;  /* address relative to the module's base (the raw address if none) */
    const char *file;   /* full path as DWARF gives it */
    int line;
    const char *sym; /* demangled function name */
    int inlined;     /* 1 for a frame produced by inline expansion (not the outermost) */
    int chain_cut;   /* 1 on the last frame when the inline chain passed the symbolizer's
                        cap: its callers are missing (the stack is shown truncated) */
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

/* Where module files are looked for besides their recorded paths: search
 * (rheaper-convert --search) and debug_dirs (--debug-dir, before
 * /usr/lib/debug), NULL-terminated lists or NULL. rh_modfind.c. */
struct rh_modfind_paths {
    const char *const *search;
    const char *const *debug_dirs;
};

/* Sets the places rh_sym_add_module's modules are looked for: the recorded
 * path, then the build id under the debug directories, then each search
 * directory (DIR/basename); the first file whose build id is the recorded one
 * is read. The lists must outlive s. */
void rh_sym_set_paths(struct rh_symbolizer *s, const struct rh_modfind_paths *p);

/* The registered modules, and for module i (0 <= i < rh_sym_nmodules) its path
 * in *path and what its frames were resolved with: "debug info", "debug info
 * from DEBUGFILE" (a separate file, /usr/lib/debug/.build-id/ or
 * .gnu_debuglink), "no debug info: names from .symtab", "...: exported names
 * from .dynsym", "no debug info, no symbols", "not read (no frame in it)" or
 * "unreadable (see the warning)". The text lives in buf or is static. */
size_t rh_sym_nmodules(const struct rh_symbolizer *s);
const char *rh_sym_module_debug(struct rh_symbolizer *s, size_t i, const char **path, char *buf,
                                size_t len);

#endif
