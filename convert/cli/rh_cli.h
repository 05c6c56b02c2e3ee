/* rh_cli.h: the internal header of the `rheaper` command.
 *
 * `rheaper` answers the common questions from a profile.db without writing SQL.
 * It runs after the profiled program, like rheaper-convert, and shares the
 * converter's code for `rheaper convert` and `rheaper run`. Every answer comes
 * from the query library (rh_query.h) and the export writers (rh_export.h);
 * the files here parse the commands and print. Prototypes are grouped under
 * the file that defines them.
 */
#ifndef RH_CLI_H
#define RH_CLI_H

#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

#include "rh_export.h"
#include "rh_live.h"
#include "rh_query.h"


/* ---- rh_cli_main.c: dispatch, usage ------------------------------------- */

/* Each subcommand: argv[0] is the subcommand's name. Returns the exit status:
 * 0 success, 1 failure (one line on stderr already printed), 2 usage error. */
int rh_cmd_run(int argc, char **argv);
int rh_cmd_convert(int argc, char **argv);
int rh_cmd_summary(int argc, char **argv);
int rh_cmd_top(int argc, char **argv);
int rh_cmd_churn(int argc, char **argv);
int rh_cmd_leaks(int argc, char **argv);
int rh_cmd_peak(int argc, char **argv);
int rh_cmd_query(int argc, char **argv);
int rh_cmd_flamegraph(int argc, char **argv);
int rh_cmd_timeline(int argc, char **argv);
int rh_cmd_export(int argc, char **argv);
int rh_cmd_report(int argc, char **argv);
int rh_cmd_record(int argc, char **argv); /* rh_cli_record.c */
int rh_cmd_collect(int argc, char **argv); /* rh_cli_collect.c */
int rh_cmd_mmaps(int argc, char **argv);  /* rh_cli_mmaps.c */
int rh_cmd_export_pprof(int argc, char **argv); /* rh_cli_pprof.c: export --pprof OUT DB */

/* ---- rh_cli_out.c: output format and the commands that write one file --- */
/* If argv[*i] is --json or --csv, sets *fmt, advances and returns 1, else 0. */
int rh_fmt_arg(enum rh_fmt *fmt, char **argv, int *i);


/* flamegraph, timeline, export and report: "CMD POS... [-o FILE] [filters]"
 * plus the command's own flags. */
struct rh_file_args {
    const char *pos[2]; /* the positional arguments in order (the DB last); NULL: not given */
    const char *out;    /* -o/--output FILE; NULL when not given */
    struct rh_filter f;
};

/* Parses such a command's argv (argv[0] names it in messages: "rheaper CMD:
 * ..."). Each argument is tried as a shared filter, then as -o/--output FILE,
 * then by flag(arg, ctx) (NULL: the command has no flags of its own), which
 * returns 1 when it took the argument; any other "-X" is an unknown option and
 * anything else a positional, at most npos (1 or 2) of them. When fewer than
 * npos were given, or need_out is set and -o was not, prints `usage` (a whole
 * line). Returns 0, or 2 after one line on stderr. */
int rh_file_args_parse(int argc, char **argv, int npos, int need_out, const char *usage,
                       int (*flag)(const char *arg, void *ctx), void *ctx,
                       struct rh_file_args *fa);

/* Runs such a command: opens the profile dbpath, builds `sel` from f, opens
 * outpath for writing (stdout for NULL or "-"), calls write(db, out, ctx),
 * which returns 0 or -1 after its own message, then flushes or closes the
 * output, reporting a failed write ("rheaper: PATH: write failed (...)") when
 * the writer succeeded. Returns the exit status: 0, or 1 after one line. */
int rh_file_cmd_run(const char *dbpath, const struct rh_filter *f, const char *outpath,
                    int (*write)(sqlite3 *db, FILE *out, void *ctx), void *ctx);

/* ---- rh_cli_diff.c ------------------------------------------------------ */
int rh_cmd_diff(int argc, char **argv);

/* ---- convert/serve/: `rheaper serve` ------------------------------------ */
int rh_cmd_serve(int argc, char **argv);

#endif
