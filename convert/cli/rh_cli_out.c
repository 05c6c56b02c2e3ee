/* rh_cli_out.c: how the rheaper command prints rows and writes output files.
 *
 * Every listing goes through rh_print_stmt(), so --csv and --json mean the same
 * for all commands: text is aligned columns under a header (numbers right
 * aligned, NULL as empty), CSV is RFC 4180 quoting with a header line and LF
 * line ends, JSON is one array of objects keyed by column name (integers and
 * reals as numbers, NULL as null, text as strings, blobs as hex strings).
 * The commands that write one file (flamegraph, timeline, export, report) parse
 * their arguments and open, write and close their output through
 * rh_file_args_parse() and rh_file_cmd_run(), so -o and its errors mean the
 * same for all of them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rh_cli.h"

int rh_fmt_arg(enum rh_fmt *fmt, char **argv, int *i)
{
    if (!strcmp(argv[*i], "--json")) {
        *fmt = RH_FMT_JSON;
    } else if (!strcmp(argv[*i], "--csv")) {
        *fmt = RH_FMT_CSV;
    } else {
        return 0;
    }
    return 1;
}

/* ---- the commands that write one file ------------------------------------ */

int rh_file_args_parse(int argc, char **argv, int npos, int need_out, const char *usage,
                       int (*flag)(const char *arg, void *ctx), void *ctx, struct rh_file_args *fa)
{
    int n = 0;
    memset(fa, 0, sizeof *fa);
    rh_filter_init(&fa->f);
    for (int i = 1; i < argc; i++) {
        int r = rh_filter_arg(&fa->f, argc, argv, &i);
        if (r < 0)
            return 2;
        if (r > 0)
            continue;
        const char *a = argv[i];
        if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "rheaper %s: %s needs a file name\n", argv[0], a);
                return 2;
            }
            fa->out = argv[++i];
        } else if (flag && flag(a, ctx)) {
            continue;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "rheaper %s: unknown option %s\n", argv[0], a);
            return 2;
        } else if (n < npos) {
            fa->pos[n++] = a;
        } else {
            fprintf(stderr, "rheaper %s: unexpected argument %s\n", argv[0], a);
            return 2;
        }
    }
    if (n < npos || (need_out && !fa->out)) {
        fputs(usage, stderr);
        return 2;
    }
    return 0;
}

int rh_file_cmd_run(const char *dbpath, const struct rh_filter *f, const char *outpath,
                    int (*write)(sqlite3 *db, FILE *out, void *ctx), void *ctx)
{
    sqlite3 *db = rh_query_open(dbpath);
    if (!db)
        return 1;
    struct rh_filter g = *f;
    g.chart = RH_CHART_SITES; /* timeline and report draw the scope's heap over time */
    if (rh_filter_apply(db, &g) != 0) {
        sqlite3_close(db);
        return 1;
    }
    int to_stdout = !outpath || strcmp(outpath, "-") == 0;
    FILE *out = to_stdout ? stdout : fopen(outpath, "w");
    if (!out) {
        fprintf(stderr, "rheaper: %s: cannot write (%s)\n", outpath, strerror(errno));
        sqlite3_close(db);
        return 1;
    }
    int rc = write(db, out, ctx);
    /* A writer that fails on the stream says nothing (its SQL errors it does
     * report): an I/O error is named here, whatever the writer returned. */
    int bad = ferror(out);
    if (to_stdout ? fflush(out) != 0 : fclose(out) != 0)
        bad = 1;
    if (bad) {
        fprintf(stderr, "rheaper: %s: write failed (%s)\n", outpath ? outpath : "stdout",
                strerror(errno));
        rc = -1;
    }
    sqlite3_close(db);
    return rc ? 1 : 0;
}
