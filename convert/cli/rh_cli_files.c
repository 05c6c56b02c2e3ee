/* rh_cli_files.c: the commands that write one file from the export writers:
 * `rheaper flamegraph`, `rheaper timeline` and `rheaper export heaptrack`.
 *
 * The writers themselves (convert/export/) are shared with the server; these
 * commands only parse their flags and hand the writer to rh_file_cmd_run().
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rh_cli.h"

/* ---- the commands ------------------------------------------------------------ */

/* flamegraph's own flags and what its writer draws. */
struct rh_flame_opts {
    enum rh_flame_weight w;
    int folded;
};

/* Takes --all, --leaked, --peak, --cpu and --folded (rh_file_args_parse's flag). */
static int rh_flame_flag(const char *a, void *ctx)
{
    struct rh_flame_opts *o = ctx;
    if (strcmp(a, "--all") == 0)
        o->w = RH_FLAME_ALL;
    else if (strcmp(a, "--leaked") == 0)
        o->w = RH_FLAME_LEAKED;
    else if (strcmp(a, "--peak") == 0)
        o->w = RH_FLAME_PEAK;
    else if (strcmp(a, "--cpu") == 0)
        o->w = RH_FLAME_CPU;
    else if (strcmp(a, "--folded") == 0)
        o->folded = 1;
    else
        return 0;
    return 1;
}

static int rh_flame_write(sqlite3 *db, FILE *out, void *ctx)
{
    const struct rh_flame_opts *o = ctx;
    return o->folded ? rh_folded(db, o->w, out) : rh_svg_flamegraph(db, o->w, out, 0);
}

int rh_cmd_flamegraph(int argc, char **argv)
{
    struct rh_flame_opts o = {RH_FLAME_ALL, 0};
    struct rh_file_args fa;
    int rc = rh_file_args_parse(
        argc, argv, 1, 0,
        "usage: rheaper flamegraph DB [--all|--leaked|--peak|--cpu] [--folded] [-o FILE]"
        " [filters]\n",
        rh_flame_flag, &o, &fa);
    return rc ? rc : rh_file_cmd_run(fa.pos[0], &fa.f, fa.out, rh_flame_write, &o);
}

static int rh_timeline_write(sqlite3 *db, FILE *out, void *ctx)
{
    (void)ctx;
    return rh_svg_timeline(db, out, 0);
}

int rh_cmd_timeline(int argc, char **argv)
{
    struct rh_file_args fa;
    int rc = rh_file_args_parse(
        argc, argv, 1, 0, "usage: rheaper timeline DB [-o FILE] [filters]\n", NULL, NULL, &fa);
    return rc ? rc : rh_file_cmd_run(fa.pos[0], &fa.f, fa.out, rh_timeline_write, NULL);
}


/* Does name end in suffix? */
static int rh_ends_with(const char *name, const char *suffix)
{
    size_t n = strlen(name), k = strlen(suffix);
    return n >= k && strcmp(name + n - k, suffix) == 0;
}

int rh_cmd_export(int argc, char **argv)
{
    if (argc > 1 && !strncmp(argv[1], "--pprof", 7)) /* pprof export: rh_cli_pprof.c */
        return rh_cmd_export_pprof(argc, argv);
    struct rh_file_args fa;
    int rc = rh_file_args_parse(argc, argv, 2, 1,
                                "usage: rheaper export heaptrack DB -o FILE [filters]\n", NULL,
                                NULL, &fa);
    if (rc)
        return rc;
    if (strcmp(fa.pos[0], "heaptrack") != 0) {
        fprintf(stderr, "rheaper export: unknown format %s (known: heaptrack)\n", fa.pos[0]);
        return 2;
    }
    if (rh_ends_with(fa.out, ".gz") || rh_ends_with(fa.out, ".zst")) {
        fprintf(stderr,
                "rheaper export: %s: heaptrack reads names ending in .gz or .zst as"
                " compressed, but rheaper writes plain text; choose another name\n",
                fa.out);
        return 2;
    }
    return rh_file_cmd_run(fa.pos[1], &fa.f, fa.out, rh_heaptrack_write, NULL);
}

/* `report DB -o report.html [filters]`: the page of rh_report_write(). */
int rh_cmd_report(int argc, char **argv)
{
    struct rh_file_args fa;
    int rc = rh_file_args_parse(
        argc, argv, 1, 1, "usage: rheaper report DB -o report.html [filters]\n", NULL, NULL, &fa);
    return rc ? rc : rh_file_cmd_run(fa.pos[0], &fa.f, fa.out, rh_report_write, (void *)fa.pos[0]);
}
