/* rh_cli_pprof.c: `rheaper export --pprof OUT.pb.gz PROFILE [--heap|--cpu]
 * [--at peak|end] [filters]`: parses the command and hands the pprof writer
 * of convert/export/ (rh_pprof_write, shared with the server) to
 * rh_file_cmd_run().
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "rh_cli.h"

/* --to as ns since the start (rh_filter_window: seconds, or a percent of
 * the run); -1 when unset. */
static int64_t rh_pp_to_ns(const char *dbpath, const struct rh_filter *f)
{
    if (f->to < 0)
        return -1;
    sqlite3 *db = rh_query_open(dbpath);
    if (!db)
        return -1;
    int64_t from, to;
    rh_filter_window(db, f, &from, &to);
    sqlite3_close(db);
    return to;
}

/* export's own flags after --pprof: --heap, --cpu, --at peak|end. */
struct rh_pp_flags {
    struct rh_pprof_opts *o;
    int want_at; /* the next argument is --at's value */
    int bad;
};

static int rh_pp_flag(const char *a, void *ctx)
{
    struct rh_pp_flags *fl = ctx;
    if (fl->want_at) {
        fl->want_at = 0;
        if (!strcmp(a, "peak"))
            fl->o->at_peak = 1;
        else if (strcmp(a, "end") != 0)
            fl->bad = 1;
        return 1;
    }
    if (!strcmp(a, "--heap"))
        fl->o->heap = 1, fl->o->cpu = 0;
    else if (!strcmp(a, "--cpu"))
        fl->o->cpu = 1, fl->o->heap = 0;
    else if (!strcmp(a, "--at"))
        fl->want_at = 1;
    else if (!strcmp(a, "--at=peak"))
        fl->o->at_peak = 1;
    else if (!strcmp(a, "--at=end"))
        fl->o->at_peak = 0;
    else
        return 0;
    return 1;
}

int rh_cmd_export_pprof(int argc, char **argv)
{
    static const char usage[] =
        "usage: rheaper export --pprof OUT.pb.gz DB [--heap|--cpu] [--at peak|end] [filters]\n";
    /* argv[1] is --pprof or --pprof=OUT */
    const char *outp = NULL;
    int first = 2;
    if (!strncmp(argv[1], "--pprof=", 8)) {
        outp = argv[1] + 8;
    } else if (argc > 2) {
        outp = argv[2];
        first = 3;
    }
    if (!outp || !*outp) {
        fputs(usage, stderr);
        return 2;
    }
    struct rh_pprof_opts o = {1, 1, 0, -1};
    struct rh_pp_flags fl = {&o, 0, 0};
    /* "--at peak" is two arguments: join them for the shared parser */
    char **av = calloc((size_t)argc + 1, sizeof *av);
    if (!av)
        return 1;
    int n = 0;
    av[n++] = (char *)"export";
    for (int i = first; i < argc; i++) {
        if (!strcmp(argv[i], "--at") && i + 1 < argc) {
            if (!strcmp(argv[i + 1], "peak"))
                av[n++] = (char *)"--at=peak";
            else if (!strcmp(argv[i + 1], "end"))
                av[n++] = (char *)"--at=end";
            else {
                fprintf(stderr, "rheaper export: --at %s: expected peak or end\n", argv[i + 1]);
                free(av);
                return 2;
            }
            i++;
            continue;
        }
        av[n++] = argv[i];
    }
    struct rh_file_args fa;
    int rc = rh_file_args_parse(n, av, 1, 0, usage, rh_pp_flag, &fl, &fa);
    free(av);
    if (rc)
        return rc;
    if (fl.bad || fl.want_at) {
        fputs(usage, stderr);
        return 2;
    }
    if (fa.out) {
        fprintf(stderr, "rheaper export: --pprof names the output; -o is not used with it\n");
        return 2;
    }
    o.to_ns = rh_pp_to_ns(fa.pos[0], &fa.f);
    return rh_file_cmd_run(fa.pos[0], &fa.f, outp, rh_pprof_write, &o);
}
