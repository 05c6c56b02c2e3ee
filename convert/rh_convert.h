/* rh_convert.h: one whole conversion, rip file to SQLite profile.
 *
 * rheaper-convert runs after the profiled program. It reads a rip file
 * (rh_rip.c), merges the per-thread streams in time order and pairs frees with
 * allocations (rh_merge.c), symbolizes each distinct return address once with
 * libdw (rh_symbolize.c) and loads everything into SQLite (rh_db.c); this is
 * the entry point rheaper-convert, the rheaper command's `convert` and `run`,
 * `push` and `collect` call (rh_convert_file.c). The parts have their own
 * headers: rh_util.h (hash map, array growth, spill files), rh_core.h (the
 * SQLite-free core), rh_symbolize.h, rh_db.h (the database side).
 */
#ifndef RH_CONVERT_H
#define RH_CONVERT_H

#include <stdint.h>


/* Converts the rip file rip_path into the database db_path (refused when it
 * exists, unless force). Errors and, unless quiet, warnings are printed as one
 * line each, prefixed "PROG: ". search: NULL, or a NULL-terminated list of
 * directories where modules are looked for by file name after their recorded
 * paths and their build ids. Returns the exit status: 0 (a profile cut short included, with one
 * line saying so) or 1. */
int rh_convert_file(const char *prog, const char *rip_path, const char *db_path, int force,
                    int quiet, const char *const *search);

/* The same with every option of a conversion. */
struct rh_convert_opts {
    int force, quiet;
    const char *const *search;     /* --search: after the path and the build id */
    const char *const *debug_dirs; /* --debug-dir: searched by build id before /usr/lib/debug */
    int64_t min_lifetime_ns; /* --min-lifetime: cull rows of shorter-lived blocks; 0: none */
    const char *parent;      /* --parent: the parent's profile of a fork child; NULL: found */
};
int rh_convert_file_opts(const char *prog, const char *rip_path, const char *db_path,
                         const struct rh_convert_opts *o);
/* Parses --min-lifetime's value: a duration with a unit (ns, us, ms, s) into
 * ns. Returns 0 or -1. */
int rh_parse_lifetime_arg(const char *s, int64_t *ns);

#endif
