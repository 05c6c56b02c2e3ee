/* rh_cli.h: the internal header of the `rheaper` command.
 *
 * `rheaper` answers the common questions from a profile.db without writing SQL.
 * It runs after the profiled program, like rheaper-convert, and shares the
 * converter's code for `rheaper convert` and `rheaper run`. Every listing
 * command works on the allocations that pass the shared filters, which
 * rh_filter_apply() materializes as the TEMP table `sel`. Prototypes are
 * grouped under the file that defines them.
 */
#ifndef RH_CLI_H
#define RH_CLI_H

#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

/* ---- rh_cli_main.c: dispatch, usage ---------------------------------- */

/* Each subcommand: argv[0] is the subcommand's name. Returns the exit status:
 * 0 success, 1 failure (one line on stderr already printed), 2 usage error. */
int rh_cmd_run(int argc, char **argv);
int rh_cmd_convert(int argc, char **argv);
int rh_cmd_summary(int argc, char **argv);
int rh_cmd_top(int argc, char **argv);
int rh_cmd_leaks(int argc, char **argv);
int rh_cmd_peak(int argc, char **argv);
int rh_cmd_query(int argc, char **argv);
int rh_cmd_flamegraph(int argc, char **argv);
int rh_cmd_timeline(int argc, char **argv);
int rh_cmd_export(int argc, char **argv);
int rh_cmd_report(int argc, char **argv);
int rh_cmd_record(int argc, char **argv); /* rh_cli_record.c */

/* ---- rh_cli_db.c: opening a profile, shared figures ------------------ */

/* Opens an existing profile database read-only; never creates one. Fails with
 * one line on stderr ("rheaper: PATH: no such file", "... is not a rheaper
 * profile") and returns NULL. Registers the REGEXP function. */
sqlite3 *rh_cli_open(const char *path);

/* Whole-profile figures, computed over `sel` (the filtered allocations). */
struct rh_summary {
    char program[1024];
    int64_t pid;
    int64_t duration_ns;
    int64_t events;
    int64_t alloc_blocks, alloc_bytes;
    int64_t freed_blocks, freed_bytes;
    int64_t leaked_blocks, leaked_bytes;
    int64_t peak_bytes, peak_time_ns;
    int64_t temporary_blocks;
    int clean;
};

/* Fills s from the database and the `sel` table. Returns 0 or -1 (message
 * printed). */
int rh_summary_compute(sqlite3 *db, struct rh_summary *s);

/* Prints "rheaper: WHAT: SQLite error (MESSAGE)", SQLite's last message on db,
 * as the one line of a failed command. Returns -1. */
int rh_sql_fail(sqlite3 *db, const char *what);

/* ---- rh_cli_cmds.c: shared with the report ----------------------------- */

/* Default number of time buckets of the leak score (`rheaper leaks --buckets`). */
#define RH_LEAK_BUCKETS 20

/* Scores the never-freed blocks of `sel` per call site (frame 0's function and
 * line) exactly as `rheaper leaks` ranks them, into TEMP TABLE site(bt,
 * function, location, site) and TEMP TABLE leak_sites(site, score, coverage,
 * fit, blocks, bytes, first, last). Returns 0 or -1 (message printed). */
int rh_leak_sites(sqlite3 *db, int buckets, int64_t duration_ns);

/* ---- rh_cli_filter.c: the shared filters ------------------------------ */

/* The filters every command takes, with one meaning across all of them
 * (README, "The rheaper command"). Zero-initialize, then feed options. */
struct rh_filter {
    double from, to;          /* seconds, or percent when *_pct is set; < 0: unset */
    int from_pct, to_pct;
    const char *func_re[8], *not_func_re[8], *file_re[8], *not_file_re[8];
    int nfunc, nnot_func, nfile, nnot_file;
    int64_t min_size, max_size; /* < 0: unset */
    int lifetime;               /* 0 any, 1 leaked, 2 temporary, 3 range */
    int64_t life_min_ns, life_max_ns;
    const char *thread;         /* threads.id, tid or name; NULL: all */
    double temporary_ms;        /* < 0: heaptrack's definition */
    const char *kind[8], *not_kind[8]; /* --kind (any of), --not-kind (none of) */
    int nkind, nnot_kind;
    /* call sites, not row filters: more wrappers to skip, or none at all */
    const char *skip_re[8];
    int nskip, no_skip;
};

/* 1 when f selects rows (any filter but the call-site options). */
int rh_filter_active(const struct rh_filter *f);

/* Sets every field to "unset". */
void rh_filter_init(struct rh_filter *f);

/* If argv[*i] is a shared filter option, consumes it and its value (advancing
 * *i) and returns 1; returns 0 for other arguments and -1 after printing one
 * line for a bad value. */
int rh_filter_arg(struct rh_filter *f, int argc, char **argv, int *i);

/* Builds the scope every command reads, from f (README, "How the rheaper
 * command answers"):
 *   TEMP TABLE cs(bt, frame)       each stack in scope and its call-site frame
 *                                  (stacks.callsite, --skip-function, --no-skip)
 *   TEMP TABLE sstat(bt, ...)      per stack: the columns of stack_stats over
 *                                  the rows that pass f
 *   TEMP TABLE scope(...)          one row: rows (1 when computed from rows),
 *                                  peak_bytes, peak_blocks, peak_time, culled
 *   sel                            the rows that pass f (all columns of
 *                                  allocations plus `lifetime` in ns, NULL when
 *                                  leaked; `temporary` in the sense
 *                                  --temporary-ms selects)
 * Without row filters on a converted profile with aggregates, sstat is
 * stack_stats and sel a TEMP VIEW of allocations that nothing reads unless
 * asked (query, export): no command scans the rows. With filters, stack
 * filters are resolved over the distinct stacks, rows are selected through the
 * bt index and time filters through the allocation-ordered ids, and the peak
 * is found in C in one ordered pass. RHEAPER_ROWS=1 in the environment forces
 * the row path (the tests compare both). Prints the call-site line and the
 * culled line on stderr. All values are bound, never pasted into SQL.
 * Returns 0, or -1 after printing one line. */
int rh_filter_apply(sqlite3 *db, const struct rh_filter *f);

/* The scope's figures (from TEMP TABLE scope): 1 when computed from rows. */
struct rh_scope {
    int rows;
    int64_t peak_bytes, peak_blocks, peak_time;
};
int rh_scope_get(sqlite3 *db, struct rh_scope *sc);

/* Prints "rheaper: call sites skip allocator wrappers: f, g, ..." on stderr
 * once per process when the scope skipped any. */
void rh_scope_notice(sqlite3 *db);

/* Sampling (issue 9): 1 when the profile is sampled (meta sample_mode); then
 * prints once per process "rheaper: sampled profile (...): blocks and bytes
 * are estimates ..." on stderr (unless RHEAPER_QUIET_NOTICES is set). */
int rh_sample_notice(sqlite3 *db);

/* ---- rh_cli_out.c: tables, CSV, JSON ---------------------------------- */

enum rh_fmt { RH_FMT_TEXT, RH_FMT_CSV, RH_FMT_JSON };

/* If argv[*i] is --json or --csv, sets *fmt, advances and returns 1, else 0. */
int rh_fmt_arg(enum rh_fmt *fmt, char **argv, int *i);

/* Steps st to the end and prints its rows to out: aligned columns under a
 * header (text), RFC 4180 CSV with a header line, or one JSON array of objects
 * keyed by column name. Returns 0, or -1 after printing SQLite's message. */
int rh_print_stmt(sqlite3_stmt *st, enum rh_fmt fmt, FILE *out);

/* Writes s as one RFC 4180 CSV field, quoted when it holds a comma, quote or
 * line end. */
void rh_csv_field(FILE *out, const char *s);

/* Formats a byte count for people: "812 B", "1.50 KiB", "3.25 MiB". */
const char *rh_human_bytes(int64_t b, char *buf, size_t n);

/* Writes s escaped for XML/HTML text and attributes: markup characters as
 * entities, control characters and invalid UTF-8 as '?', so any symbol or path
 * from the database keeps the document well-formed. */
void rh_markup_put(FILE *out, const char *s);

/* ---- rh_cli_out.c: the commands that write one file --------------------- */

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

/* ---- rh_cli_svg.c: flamegraph and timeline ----------------------------- */

enum rh_flame_weight { RH_FLAME_ALL, RH_FLAME_LEAKED, RH_FLAME_PEAK };

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

#endif
