/* rheaper.h: the public C API of the rheaper runtime.
 *
 * A program built with rheaper-cc has the runtime linked in. Tracking starts by
 * itself when RHEAPER_ENABLE=1 is set at startup; these calls let a program turn
 * it on and off around the part it wants to profile. Every call is safe from any
 * thread; none of them allocates through the wrapped allocator.
 */
#ifndef RHEAPER_H
#define RHEAPER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Mirrors rheaper's TrackerConfig. A zero field (NULL for profile_dir) means:
 * the matching RHEAPER_* environment variable, else the default. */
struct rheaper_config {
    unsigned max_stack_depth;           /* frames kept per stack; default 64 */
    unsigned max_trackers;              /* threads with their own buffer; default 1024 */
    unsigned tracker_event_buffer_size; /* events buffered per thread; default 32768 */
    const char *profile_dir;            /* where rip-<pid> goes; default "." */
    double sample_rate;                 /* 0 < r < 1: record each allocation with
                                           probability r (RHEAPER_SAMPLE_RATE);
                                           1: everything; 0: the environment */
    unsigned cpu_hz; /* CPU samples per second of each thread's CPU time; default 0 (off),
                        99 suggested (RHEAPER_CPU_HZ) */
};

enum {
    RHEAPER_OK = 0,
    RHEAPER_ERR_ALREADY = -1, /* tracking is already on */
    RHEAPER_ERR_DIR = -2,     /* profile directory missing or not writable */
    RHEAPER_ERR_FILE = -3,    /* the profile file could not be created */
    RHEAPER_ERR_NOMEM = -4,   /* the runtime could not map its own memory */
    RHEAPER_ERR_NOT_ENABLED = -5, /* rheaper_disable while off */
    RHEAPER_ERR_NO_REPORTS = -6,  /* reports need RHEAPER_REPORTS=1 at startup */
};

/* Starts tracking into a new profile file. cfg may be NULL. Returns RHEAPER_OK
 * or one of the errors above; on error nothing is tracked. */
int rheaper_enable(const struct rheaper_config *cfg);

/* Stops tracking, writes everything out and closes the profile (the trailer is
 * written and "rheaper: wrote ..." is printed on stderr). Returns RHEAPER_OK, or
 * RHEAPER_ERR_NOT_ENABLED. Enabling again starts a new file. */
int rheaper_disable(void);

/* 1 while tracking is on, else 0. */
int rheaper_is_enabled(void);

/* Path of the current profile, or of the last one closed; "" when there has
 * been none. The string stays valid until the next rheaper_enable. */
const char *rheaper_profile_path(void);

/* A static, human-readable description of an error code. */
const char *rheaper_strerror(int rc);

/* ---- Reports from inside the process (RHEAPER_REPORTS=1) ------------------
 *
 * With RHEAPER_REPORTS=1 in the environment (or RHEAPER_REPORT_SIGNAL), the
 * runtime counts, for what the current recording records, per thread and per
 * stack, and these calls write the figures to an fd: from any thread, without
 * allocating through the wrapped allocator and without stdio, function names
 * resolved from the modules' ELF symbol tables beside the raw addresses.
 * They return RHEAPER_OK, RHEAPER_ERR_NO_REPORTS, RHEAPER_ERR_NOMEM or
 * RHEAPER_ERR_FILE (a write failed; errno is kept as it was). */
enum { RHEAPER_REPORT_TEXT = 0, RHEAPER_REPORT_CSV = 1 };

/* Per thread: blocks and bytes allocated, freed (by the thread), freed by
 * other threads (of those it allocated), live. */
int rheaper_thread_report(int fd, int format);

/* Applied before any name is resolved: stacks with fewer bytes in use than
 * min_bytes_in_use are skipped from the counters alone; then only the stacks
 * left are named, and function_substring (NULL or "": any) must occur in the
 * name of one of their first 16 frames. max_stacks: at most that many (0: all). */
struct rheaper_report_filter {
    size_t min_bytes_in_use;
    const char *function_substring;
    unsigned max_stacks;
};

/* Per stack, largest bytes in use first: in-use bytes and blocks,
 * allocations, bytes, frees, freed bytes, and its frames. f may be NULL. */
int rheaper_callsite_report(int fd, int format, const struct rheaper_report_filter *f);

/* ---- Pools and arenas: client requests ------------------------------------
 *
 * For allocators rheaper cannot wrap (no per-block free, header-only, carved
 * out of one big malloc chunk), the allocator tells rheaper about its blocks,
 * in the spirit of valgrind's MALLOCLIKE_BLOCK / FREELIKE_BLOCK:
 *
 *     static struct rheaper_pool strings = RHEAPER_POOL_INIT("string_arena");
 *     p = carve(arena, n);  rheaper_alloc_event(p, n, &strings);
 *     ...                   rheaper_free_event(p, &strings);
 *     reset the arena:      rheaper_pool_reset(&strings);   (frees every block)
 *
 * Each block is a row whose kind is the pool's name; the pool's own chunk
 * from malloc stays a row of kind malloc (filter one or the other with
 * `rheaper ... --kind`, docs/allocators.md). One struct rheaper_pool per pool
 * instance: a reset ends the blocks of that instance only. Pools with equal
 * names share a kind. `name` must stay valid while the program runs (a string
 * literal). Zero-initialise the rh_ fields (RHEAPER_POOL_INIT does).
 *
 * Cost: while tracking is off each request is one load and a branch, inline;
 * a program not linked with the rheaper runtime (built without rheaper-cc)
 * compiles and links the same code and the requests do nothing (weak
 * references). Requests made inside another recorded call (a wrapped
 * allocator function calling them) are not recorded: the outer call is. */
struct rheaper_pool {
    const char *name;  /* the kind of the pool's rows */
    unsigned rh_kind;  /* the runtime's: zero */
    unsigned rh_id;    /* the runtime's: zero */
};
#define RHEAPER_POOL_INIT(name) {(name), 0u, 0u}

/* The runtime's side of the requests; call the inline functions below. */
extern int rheaper_tracking_ __attribute__((weak));
void rheaper_alloc_event_(void *ptr, size_t size, struct rheaper_pool *pool) __attribute__((weak));
void rheaper_free_event_(void *ptr, struct rheaper_pool *pool) __attribute__((weak));
void rheaper_pool_reset_(struct rheaper_pool *pool) __attribute__((weak));

/* 1 when a request may be recorded: the runtime is linked and not off. */
#define RHEAPER_REQUESTS_ON_() \
    (&rheaper_tracking_ != 0 && __builtin_expect(rheaper_tracking_ != 1, 0))

/* Macros, not inline functions: an inline function would show up as frame 0
 * of every pool block's stack. */

/* ptr (size bytes) was handed out by pool. */
#define rheaper_alloc_event(ptr, size, pool)                 \
    do {                                                     \
        if (RHEAPER_REQUESTS_ON_())                          \
            rheaper_alloc_event_((ptr), (size), (pool));     \
    } while (0)

/* The block at ptr went back to pool. */
#define rheaper_free_event(ptr, pool)                        \
    do {                                                     \
        if (RHEAPER_REQUESTS_ON_())                          \
            rheaper_free_event_((ptr), (pool));              \
    } while (0)

/* Every block of pool still live is freed (an arena reset or destroy). */
#define rheaper_pool_reset(pool)                             \
    do {                                                     \
        if (RHEAPER_REQUESTS_ON_())                          \
            rheaper_pool_reset_((pool));                     \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
