/* rh_export.h: the internal header of the export writers (convert/export/).
 *
 * The writers turn the scope the query library built (`sel` and its TEMP
 * tables) into files other tools read: SVG flamegraphs and timelines, folded
 * stacks, heaptrack's text format, pprof's protobuf and the HTML report.
 * `rheaper flamegraph|timeline|export|report` and the server share them.
 */
#ifndef RH_EXPORT_H
#define RH_EXPORT_H

#include "rh_query.h"


/* ---- rh_export_svg.c: flamegraph and timeline --------------------------- */

/* RH_FLAME_CPU: CPU samples (TEMP TABLE cpustat) instead of bytes.
 * RH_FLAME_FREED: the bytes of the scope, which the caller has narrowed to the
 * freed blocks (titled so). */
enum rh_flame_weight { RH_FLAME_ALL, RH_FLAME_LEAKED, RH_FLAME_PEAK, RH_FLAME_CPU, RH_FLAME_FREED };

/* Writes a self-contained interactive SVG flamegraph of `sel` (click to zoom,
 * hover for details). embedded = 1 omits the XML prolog for inlining in HTML.
 * Returns 0 or -1 (message printed). */
int rh_svg_flamegraph(sqlite3 *db, enum rh_flame_weight w, FILE *out, int embedded);

/* The label of a flamegraph frame named `name` drawn `px` pixels wide, as
 * every SVG flamegraph writes it (flamegraph, report, and any later export):
 * the whole name when it fits at 7 px per character plus 6 px of padding,
 * else its first characters and "..", or "" when fewer than 3 characters
 * fit. Counts UTF-8 code points and never splits one. Writes into buf (n
 * bytes) and returns buf. */
const char *rh_fg_label(const char *name, double px, char *buf, size_t n);

/* Writes folded stacks ("main;f;g 1234" per line, outermost first). */
int rh_folded(sqlite3 *db, enum rh_flame_weight w, FILE *out);

/* Writes an SVG chart of live bytes over time with the top call sites of
 * `sel` stacked. Returns 0 or -1. */
int rh_svg_timeline(sqlite3 *db, FILE *out, int embedded);

/* ---- rh_export_html.c: the report ---------------------------------------- */

/* Writes the scope as one self-contained HTML page (summary, timeline,
 * flamegraph, top call sites and leaks by call site, with their stacks) to
 * out; ctx is the database's path, shown in the header. Returns 0 or -1
 * after one line. */
int rh_report_write(sqlite3 *db, FILE *out, void *ctx);

/* ---- rh_export_pprof.c: pprof's profile.proto, gzipped ------------------- */

struct rh_pprof_opts {
    int heap, cpu; /* what to write (both by default; cpu only when sampled) */
    int at_peak;   /* in use at the peak rather than at the end of the range */
    int64_t to_ns; /* the range's end (--to), -1: the end of the run */
};
/* Writes the scope (heap samples per stack, CPU samples per stack) as a
 * gzipped pprof profile to out; ctx is a struct rh_pprof_opts. Returns 0 or
 * -1 after one line. */
int rh_pprof_write(sqlite3 *db, FILE *out, void *ctx);

/* ---- rh_export_heaptrack.c ---------------------------------------------- */

/* Writes heaptrack's text format of `sel` to out (ctx unused). 0 or -1. */
int rh_heaptrack_write(sqlite3 *db, FILE *out, void *ctx);

#endif
