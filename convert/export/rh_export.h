/* rh_export.h: the internal header of the export writers (convert/export/).
 *
 * The writers turn the scope the query library built (`sel` and its TEMP
 * tables) into files other tools read: SVG flamegraphs and timelines, folded
 * stacks, heaptrack's text format. `rheaper flamegraph|timeline|export|report`
 * and the server share them.
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

/* ---- rh_export_heaptrack.c ---------------------------------------------- */

/* Writes heaptrack's text format of `sel` to out (ctx unused). 0 or -1. */
int rh_heaptrack_write(sqlite3 *db, FILE *out, void *ctx);

#endif
