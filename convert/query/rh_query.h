/* rh_query.h: the internal header of the query library (convert/query/).
 *
 * Every reader of a profile database asks this library: the `rheaper`
 * commands, `rheaper serve`, the live and terminal views and the exports
 * (convert/export/). It opens a profile, parses the filters (command-line
 * options and URL parameters) into one structure, builds the scope those
 * filters select (TEMP tables computed with the converter's aggregate code in
 * one ordered pass), and answers from it: call sites, the leak score, CPU
 * samples, memory samples, the comparison of two profiles, and the SQL and
 * JSON helpers every reader prints with. The programs keep only their
 * commands, pages and screens. Prototypes are grouped under the file that
 * defines them.
 */
#ifndef RH_QUERY_H
#define RH_QUERY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <sqlite3.h>

/* ---- rh_query_db.c: opening a profile, shared figures, SQL helpers ------ */

/* Opens an existing profile database read-only; never creates one. Fails with
 * one line on stderr ("rheaper: PATH: no such file", "... is not a rheaper
 * profile") and returns NULL. Registers the REGEXP function. */
sqlite3 *rh_query_open(const char *path);
/* Sets db's page cache (KiB) and memory map (bytes of the file mapped, 0:
 * none) for a long-running reader that holds several connections: mapped
 * pages count in its resident memory (`rheaper serve`). */
void rh_query_tune(sqlite3 *db, int cache_kib, int64_t mmap_bytes);

/* Reads one varint of a stack_series blob (docs/sql.md) at *p (< end) into
 * *v and moves *p past it. Returns 1, or 0 when the blob ends inside it. */
int rh_series_next(const unsigned char **p, const unsigned char *end, uint64_t *v);

/* Whole-profile figures, computed over `sel` (the filtered allocations). */
struct rh_summary {
    char program[1024];
    char title[1025]; /* the process title at the end ("" when not recorded) */
    int64_t pid;
    int64_t ppid, fork_parent_pid; /* fork_parent_pid: 0 unless a fork child's first profile */
    int64_t inherited_rows;        /* blocks imported from the parent's profile */
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


/* Runs sql (statements without bound values). On failure prints
 * "rheaper: SQL error: MESSAGE" and returns -1; else 0. */
int rh_sql_exec(sqlite3 *db, const char *sql);
/* Prepares sql; NULL after the same one line. */
sqlite3_stmt *rh_sql_prepare(sqlite3 *db, const char *sql);
/* The integer of a one-value query sql (?1 bound to arg when sql has a
 * parameter); def when it fails, has no row or gives NULL. */
int64_t rh_sql_int(sqlite3 *db, const char *sql, int64_t arg, int64_t def);
/* The size of an array indexed by the stacks of TEMP TABLE site, through
 * rh_stack_slot (rh_schema.h: a fork child's inherited stacks have ids from
 * RH_INHERIT_STACK_BASE up): *nlow for rh_stack_slot, *nslots the array's
 * length. Returns 0, or -1 after one line naming `what` when the ids are not
 * those a conversion writes (more than twice as sparse as the profile's
 * stacks: the scope's own may be few). */
int rh_site_slots(sqlite3 *db, const char *what, int64_t *nlow, int64_t *nslots);
/* Drops the TEMP table or view `name` if there is one. Returns 0, or -1
 * after one line. */
int rh_temp_drop(sqlite3 *db, const char *name);
/* 1 when the main database has a table or view `name`, else 0. */
int rh_table_exists(sqlite3 *db, const char *name);
/* The one accessor of the meta table: the value of key as an integer or a
 * real (def when absent, NULL or on error), or as text into buf (n bytes;
 * returns buf, or NULL when absent). */
int64_t rh_meta_int(sqlite3 *db, const char *key, int64_t def);
double rh_meta_double(sqlite3 *db, const char *key, double def);
const char *rh_meta_text(sqlite3 *db, const char *key, char *buf, size_t n);
/* The value of key as a malloc'd copy of its text, whole (a command line
 * may hold NUL bytes between its arguments; *len, when len is not NULL, is
 * its length), or NULL when absent, NULL or out of memory. Every reader
 * outside this library asks meta through these four. */
char *rh_meta_dup(sqlite3 *db, const char *key, size_t *len);

/* What a list of profiles shows of one without building a scope: the
 * stored figures of the whole recording. */
struct rh_profile_info {
    int64_t duration_ns;
    int64_t allocations;                /* blocks allocated (estimates when sampled) */
    int64_t leaked_blocks, leaked_bytes; /* never freed */
    int64_t stacks, max_depth, cpu_samples;
    char architecture[32];              /* "unknown" when not recorded */
    char sample_mode[32];               /* meta sample_mode, when has_sample_mode */
    int has_sample_mode;
    char title[256]; /* the process title where the program set one (meta title
                        when it is not the command line it started with), else "" */
};
/* Fills p from meta and the converter's per-stack aggregates (stack_stats,
 * or the rows of a profile converted without them). Returns 0. */
int rh_profile_info(sqlite3 *db, struct rh_profile_info *p);

/* The scope's figures per kind (allocation function or pool name; TEMP
 * TABLE sstat by stacks.kind): kind, blocks, bytes, leaked_blocks, by bytes.
 * NULL after one line. */
sqlite3_stmt *rh_kinds_stmt(sqlite3 *db);

/* ---- rh_query_sites.c: call sites and the leak score -------------------- */

/* Default number of time buckets of the leak score (`rheaper leaks --buckets`). */
#define RH_LEAK_BUCKETS 20

/* Scores the never-freed blocks of `sel` per call site (frame 0's function and
 * line) exactly as `rheaper leaks` ranks them, into TEMP TABLE site(bt,
 * function, location, site) and TEMP TABLE leak_sites(site, score, coverage,
 * fit, blocks, bytes, first, last). Returns 0 or -1 (message printed). */
int rh_leak_sites(sqlite3 *db, int buckets, int64_t duration_ns);
/* The same scoring over the TEMP TABLE site the caller built (rh_make_sites,
 * per site or per stack), in nb buckets of [0, duration]. Returns 0 or -1. */
int rh_leak_scores(sqlite3 *db, int nb, int64_t duration);

/* Builds TEMP TABLE site(bt, function, location, site) over the scope's
 * stacks (temp.cs): one group per call site (function and file:line, or
 * module+offset), or per stack when per_stack. Returns 0 or -1 (printed). */
int rh_make_sites(sqlite3 *db, int per_stack);

/* The one definition of a call site, for every reader (the commands, the
 * report, the views, the SVG timeline and the server): the call-site frame
 * of a stack (TEMP TABLE cs: frame 0, or the first frame past the skipped
 * allocator wrappers), named by its function and its location, the file's
 * last path component and the line ("alloc.c:12"), or module+offset
 * ("libfoo.so+0x1a2b") without debug information, or the address. Stacks
 * with the same function and location are one site, whatever their callers
 * and whatever directory their file is in. */
struct rh_site_row {
    int64_t site;        /* its number in TEMP TABLE site */
    char *function, *location;
    int64_t stacks;      /* its stacks in the scope */
    int64_t count, bytes, freed_blocks, freed_bytes, leaked_blocks, leaked_bytes;
    int64_t peak_blocks, peak_bytes; /* held at the scope's peak */
    int64_t temporary, first, last;  /* first and last allocation, ns */
    int64_t bt;          /* its lowest stack id (the stack `top --stacks` shows) */
    int64_t bt_heaviest; /* its stack with the most bytes (the lowest id of equals) */
};

/* What the rows are ordered by: a figure, largest first, then bytes, then
 * function and location; or the site number (RH_SITES_SITE). RH_SITES_AT_PEAK
 * is `rheaper peak`'s view: only the stacks holding blocks at the peak are
 * summed, by peak bytes, then function and location. */
enum rh_site_order {
    RH_SITES_BYTES,
    RH_SITES_COUNT,
    RH_SITES_LEAKED,
    RH_SITES_PEAK,
    RH_SITES_TEMPORARY,
    RH_SITES_AT_PEAK,
    RH_SITES_SITE
};
struct rh_site_query {
    enum rh_site_order by;
    int64_t limit, offset; /* limit < 0: every row */
    int positive;          /* 1: only sites whose `by` figure is above 0 */
    int heaviest;          /* 1: fill bt_heaviest (one sort of the scope's stacks); else it is bt */
};

/* The call sites of the scope (TEMP TABLES site, from rh_make_sites, and
 * sstat) summed over their stacks, as q asks, into *rows (malloc'd) and *n.
 * Returns 0, or -1 after one line. Free with rh_sites_free(). */
int rh_sites_get(sqlite3 *db, const struct rh_site_query *q, struct rh_site_row **rows, size_t *n);
void rh_sites_free(struct rh_site_row *rows, size_t n);

/* One call site's leak score (after rh_leak_sites or rh_leak_scores): score
 * = coverage / buckets x fit, its never-freed blocks and bytes, their first
 * and last allocation (ns). */
struct rh_leak_row {
    int64_t site, bt; /* bt: the site's lowest stack id */
    char *function, *location;
    double score, fit;
    int coverage;
    int64_t blocks, bytes, first, last;
};
/* The scored sites by score, then leaked bytes, then function (as `rheaper
 * leaks` ranks them), limit rows (< 0: all) after offset. Returns 0 or -1
 * after one line. Free with rh_leaks_free(). */
int rh_leaks_get(sqlite3 *db, int64_t limit, int64_t offset, struct rh_leak_row **rows, size_t *n);
void rh_leaks_free(struct rh_leak_row *rows, size_t n);

/* Per stack of the scope: bt, count, bytes, and the blocks and bytes held
 * live: at the scope's peak (at_peak), at to_ns (>= 0: counted from the rows
 * of sel, weighed on a sampled profile), else at the end (the leaked ones).
 * The figures of a heap export (pprof's inuse). NULL after one line. */
sqlite3_stmt *rh_stack_heap_stmt(sqlite3 *db, int at_peak, int64_t to_ns);

/* ---- rh_query_filter.c: the filter and the scope ------------------------ */

/* The filters every command takes, with one meaning across all of them
 * (docs/commands.md). Zero-initialize, then feed options. */
/* How much of the scope's heap over time a reader needs (rh_filter.chart);
 * a scope built for a higher level answers every lower one. */
enum rh_chart { RH_CHART_NONE = 0, RH_CHART_SITES = 1, RH_CHART_EVENTS = 2 };

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
    /* What of the scope's heap over time the reader draws (enum
     * rh_chart): RH_CHART_SITES its timeline by stack (stl, stls: the
     * server's chart by site and a site's line, the timeline and report
     * commands), which a stack filter's scope has from the converter's group
     * timeline when one group has its stacks, else from the pass;
     * RH_CHART_EVENTS also the server's event columns (sctl), which only
     * the pass keeps; RH_CHART_NONE (what rh_filter_init and
     * rh_qfilter_init leave) for every other question */
    int chart;
};

/* 1 when f selects rows (any filter but the call-site options). */
int rh_filter_active(const struct rh_filter *f);

/* Sets every field to "unset". */
void rh_filter_init(struct rh_filter *f);

/* If argv[*i] is a shared filter option, consumes it and its value (advancing
 * *i) and returns 1; returns 0 for other arguments and -1 after printing one
 * line for a bad value. */
int rh_filter_arg(struct rh_filter *f, int argc, char **argv, int *i);

/* 1: rh_filter_arg prints nothing about a bad value (its caller reports it
 * in its own terms, as the server does for URL parameters); 0: it prints
 * its one line. Per thread. */
void rh_filter_set_quiet(int on);
/* The one parser of lifetimes and intervals (--lifetime MIN..MAX, the URL's
 * lifetime_min/max and group_interval_*): the first len characters of s as a
 * sum of terms NUMBER UNIT, units h, m, s, ms, us, ns (case-insensitive),
 * NUMBER possibly fractional; a last term without a unit is seconds
 * ("250ms", "1.5s", "4h3m2s", "90"). Returns 0 with *ns set, or -1. */
int rh_parse_interval(const char *s, size_t len, int64_t *ns);
/* The run's duration in ns, the one every percent bound is a share of:
 * meta duration_ns, else the last allocation's or free's time. */
int64_t rh_filter_duration(sqlite3 *db);
/* The one place --from/--to (and the URL's from/to) become nanoseconds
 * since the start: seconds, or a percent of dur (rh_filter_duration).
 * -1 for an unset bound. */
void rh_filter_window_ns(const struct rh_filter *f, int64_t dur, int64_t *from_ns,
                         int64_t *to_ns);
/* rh_filter_window_ns against db's duration (read only when a bound is a
 * percent). */
void rh_filter_window(sqlite3 *db, const struct rh_filter *f, int64_t *from_ns, int64_t *to_ns);

/* Builds the scope every command reads, from f (docs/design.md,
 * "How the commands answer"). This is the contract other readers (the server, the
 * live view) rely on; every table is TEMP and replaced by the next call:
 *   cs(bt, frame)        each stack in scope and its call-site frame
 *                        (stacks.callsite, --skip-function, --no-skip)
 *   skipped(sym)         the wrapper functions the call sites passed over
 *   sstat(bt, ...)       per stack: stack_stats' columns over the rows that
 *                        pass f (count, bytes, freed/leaked blocks and bytes,
 *                        peak_blocks/peak_bytes at the scope's own peak,
 *                        temporary, first_alloc, last_alloc)
 *   ssize(bt, min_size, max_size)   per stack of sstat, the sizes of its
 *                        rows that pass f (only when scope.rows is 1)
 *   tstat(thread, ...)   per thread: thread_stats' columns over those rows
 *   stl, stls            the scope's heap timeline: timeline's and
 *                        timeline_stacks' columns (RH_AGG_COLUMNS columns
 *                        over scope.span), when scope.timeline is 1
 *   slc(bt, bucket, ...) the scope's leak curve: leak_curve's columns, in
 *                        scope.leak_buckets buckets of the run
 *   scope                one row: rows (1: computed from the rows), peak_bytes,
 *                        peak_blocks, peak_time, culled (meta
 *                        min_lifetime_ns), span, timeline, leak_buckets
 *   sel                  a VIEW of the rows that pass f: allocations' columns
 *                        plus `lifetime` (ns, NULL when leaked) and
 *                        `temporary` in the sense --temporary-ms selects. It
 *                        is never materialized: reading it scans the rows
 *                        (the selected id range), so commands read the
 *                        tables above instead
 *   shist(bt, class, blocks, bytes), sthr(bt, thread, blocks, bytes,
 *                        leaked_bytes)   per stack of the scope, its rows by
 *                        size class and lifetime class (stack_hist's
 *                        classes) and by allocating thread (0: none): a call
 *                        site's detail. Only when they count exactly the rows
 *                        of sel: absent on a sampled profile (estimates
 *                        rounded per stack) and, unfiltered, on a culled one
 *   sctl(col, span, max_bytes, end_bytes, end_count, active)   a filtered
 *                        scope's heap over time in RH_SCOPE_TL_COLS + 1
 *                        columns of [0, span], as rh_timeline_compute counts
 *                        it from msel (only when the pass read the rows in
 *                        time order)
 *   selbt, selth, selp   the resolved stack set, thread set and bound values
 *                        that sel and the pass use (only when filtered)
 * Without row filters on a profile with aggregates, sstat and tstat copy
 * stack_stats and thread_stats and stl, stls and slc are views of timeline,
 * timeline_stacks and leak_curve: nothing reads the rows. With filters (or
 * RHEAPER_ROWS=1, or a profile without aggregates), stack and kind filters
 * are resolved over the distinct stacks, the thread filter over threads, time
 * filters into an id range (binary search: ids follow time), and one ordered
 * pass over that id range (rh_query_pass.c) computes every table with the
 * converter's aggregate code. Filters on stacks only are answered from the
 * converter's per-stack and per-group tables without a row when one group
 * has exactly their stacks (rh_query_stackscope.c: then scope.timeline is 0
 * and there is no sctl); row filters read only the stacks whose per-stack
 * summaries allow a passing row. Prints the call-site line and the culled line
 * on stderr. All values are bound, never pasted into SQL. Returns 0, or -1
 * after printing one line. */
int rh_filter_apply(sqlite3 *db, const struct rh_filter *f);

/* The columns of the server's heap over time (rh_timeline_compute) that a
 * filtered pass keeps beside the scope (TEMP TABLE sctl). */
#define RH_SCOPE_TL_COLS 300

/* The scope's figures (from TEMP TABLE scope): 1 when computed from rows. */
struct rh_scope {
    int rows;
    int64_t peak_bytes, peak_blocks, peak_time;
    int64_t span; /* the timeline's span: the run, or the scope's last event when later */
    int timeline; /* 1: TEMP stl/stls hold the scope's timeline over span */
};
int rh_scope_get(sqlite3 *db, struct rh_scope *sc);

/* Prints "rheaper: call sites skip allocator wrappers: f, g, ..." on stderr
 * once per process when the scope skipped any. */
void rh_scope_notice(sqlite3 *db);

/* ---- rh_query_pass.c: a filtered scope in one ordered pass -------------- */

struct rh_map;

/* What rh_pass_run() selects: rows with id_lo <= id < id_hi that pass every
 * condition given (a bound < 0 is unset). */
struct rh_pass {
    int64_t id_lo, id_hi;
    int ordered;                /* ids follow alloc_after (meta ids_time_ordered) */
    int64_t t_from, t_to;       /* alloc_after bounds, inclusive */
    int64_t min_size, max_size; /* inclusive */
    int lifetime;               /* 0 any, 1 leaked, 2 temporary, 3 freed within life_min..life_max */
    int64_t life_min, life_max;
    int64_t temporary_ns;       /* temporary = freed within this; < 0: the temporary column */
    const struct rh_map *stacks; /* the stack ids that pass; NULL: every stack */
    const int64_t *threads;      /* alloc_thread must be one of them when thread_filter */
    int nthreads, thread_filter;
    int64_t span; /* the run's length (meta duration_ns): timeline and leak buckets */
    int layout;   /* 1: read alloc_rows' compact layout (meta row_time_step) directly */
    int64_t time_step;
};

struct rh_pass_result {
    int64_t rows, peak_bytes, peak_blocks, peak_time;
    int64_t last_event; /* the latest allocation or free time of the rows */
    int timeline;       /* 1: stl and stls hold the scope's timeline */
    int indexed;        /* 1: the rows were read by id through stack_rows */
};

/* Reads the rows p selects once, in allocation order, and computes with the
 * converter's aggregate code (rh_aggregate.c) the scope's TEMP tables sstat,
 * tstat (thread_stats' columns), stl and stls (timeline's and
 * timeline_stacks' columns) and slc (leak_curve's), replacing any before,
 * and the figures in *res. Returns 0, or -1 after one line on stderr. */
int rh_pass_run(sqlite3 *db, const struct rh_pass *p, struct rh_pass_result *res);
/* Creates the scope's TEMP tables of rh_pass_run, empty (sstat, ssize,
 * tstat, stl, stlsb and the view stls, slc, shist, sthr), replacing any
 * before. Returns 0 or -1 after one line. */
int rh_pass_tables(sqlite3 *db);

/* ---- rh_query_stackscope.c: a stack filter's scope without rows -------- */

/* The scope of a filter that selects stacks only (TEMP TABLE selbt, built
 * by the caller), from the converter's per-stack aggregates and the peak of
 * the one stack group whose stacks are exactly selbt's (group_peaks,
 * rh_agg_groups.c): the tables of rh_pass_run but sctl; stl and stls from
 * the group's timeline (group_timeline, res->timeline 1) when want_tl is set
 * and the converter kept it, else left empty (res->timeline 0). Reads no
 * row; TEMP TABLE sgroup(grp) names the group. Returns 1 with the tables and
 * *res filled, 0 when the profile cannot answer so (no group tables, a
 * sampled or culled profile, no group with exactly those stacks, no timeline
 * of it when want_tl is set, RHEAPER_ROWS=1 or RHEAPER_STACK_SCOPE=0), -1
 * after one line. */
int rh_scope_stacks(sqlite3 *db, int want_tl, struct rh_pass_result *res);

/* Sampling: 1 when the profile is sampled (meta sample_mode); then
 * prints once per process "rheaper: sampled profile (...): blocks and bytes
 * are estimates ..." on stderr (unless RHEAPER_QUIET_NOTICES is set). */
/* The sampling of a profile from meta: RIP_SAMPLE_RATE (with *rate),
 * RIP_SAMPLE_BYTES (with *bytes), RIP_SAMPLE_BYTES_BIG (with *bytes: blocks of
 * *bytes or more were always recorded, meta sample_big_always = 1), or 0 for
 * a full profile. */
int rh_sample_params(sqlite3 *db, double *rate, int64_t *bytes);
int rh_sample_notice(sqlite3 *db);

/* ---- rh_query_out.c: tables, CSV, JSON ---------------------------------- */

enum rh_fmt { RH_FMT_TEXT, RH_FMT_CSV, RH_FMT_JSON };


/* Steps st to the end and prints its rows to out: aligned columns under a
 * header (text), RFC 4180 CSV with a header line, or one JSON array of objects
 * keyed by column name. Returns 0, or -1 after printing SQLite's message. */
int rh_print_stmt(sqlite3_stmt *st, enum rh_fmt fmt, FILE *out);

/* Formats d for CSV and JSON as a person reads it: the shortest decimal that
 * reads back (strtod) as the same double, with %.15g, %.16g or %.17g, so a
 * value rounded in the query (round(x, 2) = 0.74) prints as "0.74" and any
 * other value loses nothing. Non-finite values give "null" with json set,
 * else "inf", "-inf" or "nan". Returns buf. */
const char *rh_fmt_real(double d, int json, char *buf, size_t n);

/* Writes s as one RFC 4180 CSV field, quoted when it holds a comma, quote or
 * line end. */
void rh_csv_field(FILE *out, const char *s);
char *rh_sym_display(const char *s);

/* Formats a byte count for people: "812 B", "1.50 KiB", "3.25 MiB". */
const char *rh_human_bytes(int64_t b, char *buf, size_t n);

/* Writes s escaped for XML/HTML text and attributes: markup characters as
 * entities, control characters and invalid UTF-8 as '?', so any symbol or path
 * from the database keeps the document well-formed. */
void rh_markup_put(FILE *out, const char *s);

/* Writes s as a JSON string (quotes, backslashes and control characters
 * escaped; NULL as ""). */
void rh_json_string(FILE *out, const char *s);

/* One value of a row the library returned as C data, for printing. */
enum rh_cell_type { RH_CELL_NULL, RH_CELL_INT, RH_CELL_REAL, RH_CELL_TEXT };
struct rh_cell {
    enum rh_cell_type type;
    int64_t i;
    double d;
    const char *s;
};
/* Prints nrows rows of nc cells each (row-major) under the column names
 * exactly as rh_print_stmt() prints a statement of the same values and
 * types (text, CSV or JSON). Returns 0 or -1 after one line. */
int rh_print_cells(const char *const *names, int nc, const struct rh_cell *cells, size_t nrows,
                   enum rh_fmt fmt, FILE *out);
/* x rounded to digits decimals as SQLite's round() does, so a figure a
 * listing rounds prints as it did when the listing was SQL. */
double rh_round(double x, int digits);
/* ---- rh_query_cpu.c: CPU samples ---------------------------------------- */

/* Builds TEMP TABLE cpustat(bt, samples), the CPU samples per stack that pass
 * f (time, thread, function and file filters; the block filters do not apply
 * to samples). Called by rh_filter_apply before the call sites, which then
 * cover CPU stacks too (frame 0, or past --skip-function). Empty for a
 * profile without samples. Returns 0 or -1 after one line. */
int rh_cpu_scope(sqlite3 *db, const struct rh_filter *f);
/* 1 when f has a filter that selects blocks only (size, lifetime, kind,
 * --temporary-ms): it leaves the CPU samples whole. */
int rh_cpu_filter_blocks_only(const struct rh_filter *f);
/* Samples in cpustat; the profile's sampling rate (meta cpu_hz, 0: none). */
int64_t rh_cpu_total(sqlite3 *db);
/* Sampling periods the runtime could not write (meta cpu_samples_dropped):
 * every CPU figure counts without them. */
int64_t rh_cpu_dropped(sqlite3 *db);
int64_t rh_cpu_hz(sqlite3 *db);
/* The whole profile's CPU samples per function of frame 0 (where they
 * landed; cpu_stack_stats), of the stacks with a frame whose function
 * matches func_re when given: function ("??" unknown), a file of it (NULL:
 * none) and samples. Empty without samples. Returns 0 or -1 after one line;
 * free with rh_cpu_functions_free(). */
struct rh_cpu_fn {
    char *function, *file;
    int64_t samples;
};
int rh_cpu_functions(sqlite3 *db, const char *func_re, struct rh_cpu_fn **rows, size_t *n);
void rh_cpu_functions_free(struct rh_cpu_fn *rows, size_t n);
/* The `top cpu` statement over cpustat and TEMP TABLE site (rh_query_sites.c):
 * function, location, samples, percent (of the samples in scope), seconds
 * (samples / cpu_hz), and stack_col (SQL over bt, NULL: none) last; n rows.
 * NULL after one line. */
sqlite3_stmt *rh_cpu_top_stmt(sqlite3 *db, int n, const char *stack_col);
/* rh_cpu_top_stmt without the rows whose share of the samples in scope is
 * below min_percent (`top cpu --threshold PCT`; 0: every row). */
sqlite3_stmt *rh_cpu_top_stmt_min(sqlite3 *db, int n, double min_percent, const char *stack_col);
/* The rows of rh_cpu_top_stmt_min as C data: each call site's function and
 * location, samples, percent (of the samples in scope, rounded to 2
 * decimals), seconds (rounded to 3; has_seconds 0 without a sampling rate)
 * and its lowest stack id. Returns 0 or -1 after one line; free with
 * rh_cpu_sites_free(). */
struct rh_cpu_site {
    char *function, *location;
    int64_t samples;
    double percent, seconds;
    int has_seconds;
    int64_t bt;
};
int rh_cpu_sites_get(sqlite3 *db, int n, double min_percent, struct rh_cpu_site **rows,
                     size_t *nrows);
void rh_cpu_sites_free(struct rh_cpu_site *rows, size_t n);

/* ---- rh_query_params.c: bytehound's filter parameters (URLs) ------------ */

/* The longest regular expression a URL may carry. */
#define RH_QF_RE_MAX 256

/* bytehound's filters (its server's URL parameters): the CLI's struct plus
 * what only bytehound has. Zero the struct with rh_qfilter_init(). */
struct rh_qfilter {
    struct rh_filter f;          /* what the CLI also has, parsed by rh_filter_arg() */
    int lifetime;                /* 0 all, 1 only_leaked, 2 only_not_deallocated_in_current_range,
                                    3 only_deallocated_in_current_range, 4 only_temporary,
                                    5 only_whole_group_leaked, 6 only_heaptrack_temporary */
    int64_t addr_min, addr_max;  /* -1: unset */
    int64_t backtrace;           /* `backtraces`: one stack id; -1: unset */
    int64_t depth_min, depth_max;
    int64_t life_min_ns, life_max_ns;  /* bytehound's meaning: leaked passes min, fails max */
    int64_t gint_min, gint_max;        /* group interval: ns, or percent of the run */
    int gint_min_pct, gint_max_pct;
    int64_t galloc_min, galloc_max;    /* group allocations: count, or percent of all */
    int galloc_min_pct, galloc_max_pct;
    int64_t gleak_min, gleak_max;      /* group leaked: count, or percent of the group */
    int gleak_min_pct, gleak_max_pct;
};

void rh_qfilter_init(struct rh_qfilter *q);

/* Takes one URL parameter NAME=VALUE. Returns 1 when it is a filter (taken),
 * 0 when it is not a filter parameter, -1 when its value is bad: err (n
 * bytes) then says which parameter and why. An empty value means unset. */
int rh_qfilter_param(struct rh_qfilter *q, const char *name, const char *val, char *err,
                     size_t n);

/* 0 when re is a bounded, valid POSIX extended regular expression (at most
 * RH_QF_RE_MAX characters, no back-references, small repetition counts), else
 * -1 with the reason in err. */
int rh_qfilter_regex_ok(const char *re, char *err, size_t n);

/* 1 when q has filters beyond the CLI's (applied on top of sel); 1 from
 * rh_qfilter_group() when it has group filters. */
int rh_qfilter_extra(const struct rh_qfilter *q);
int rh_qfilter_group(const struct rh_qfilter *q);

/* rh_filter_apply(q->f), then TEMP TABLE gall(bt, count, bytes, leaked_blocks,
 * first_alloc, last_alloc) (each group over the whole profile) and `msel`:
 * the rows of sel that also pass bytehound's own filters (a view of sel when
 * there are none). The scope is kept with the key of q (TEMP TABLE scopekey):
 * a second call with the same filters on the same connection returns at
 * once, as long as no rh_filter_apply() came between. Callers build their
 * own tables over the scope (site, sitetab, grp, ...) anew each time and
 * never change the scope's. Returns 0 or -1 after one line on stderr. */
int rh_qfilter_apply(sqlite3 *db, const struct rh_qfilter *q);

/* ---- rh_query_diff.c: comparing two profiles ---------------------------- */

/* One call site of a comparison: its function and location (as `top` shows
 * them), its figures in A and B, and what happened: "grew", "shrank",
 * "appeared", "vanished" or "same" (by leaked bytes, then bytes, then count). */
struct rh_diff_row {
    char *function, *location;
    int64_t a_count, a_bytes, a_leaked_blocks, a_leaked_bytes, a_peak_bytes;
    int64_t b_count, b_bytes, b_leaked_blocks, b_leaked_bytes, b_peak_bytes;
    const char *status;
};

/* What a comparison ranks and judges by: leaked bytes (the default), bytes
 * held at each profile's peak, bytes allocated, or blocks. */
enum rh_diff_by { RH_DIFF_LEAKED, RH_DIFF_PEAK, RH_DIFF_BYTES, RH_DIFF_COUNT };

/* Compares the call sites (the call-site rule of the scope) of the two
 * databases, each filtered by q (rh_qfilter_apply). Fills *rows (malloc'd,
 * sorted by the change of the `by` figure, then of bytes and count, largest
 * first) and *n. A site whose figure changed by at most noise_pct percent of
 * the larger side is "same". Returns 0 or -1 after one line on stderr. Free
 * with rh_diff_free(). After it, each database's scope is q's (peaks from
 * rh_scope_get). */
int rh_diff_compute(sqlite3 *a, sqlite3 *b, const struct rh_qfilter *q, enum rh_diff_by by,
                    double noise_pct, struct rh_diff_row **rows, size_t *n);
void rh_diff_free(struct rh_diff_row *rows, size_t n);

/* ---- rh_query_tree.c: call trees ---------------------------------------- */

enum rh_tree_kind { RH_TREE_TOPDOWN, RH_TREE_BOTTOMUP, RH_TREE_CALLERS, RH_TREE_CALLEES };

struct rh_tree_opts {
    enum rh_tree_kind kind;
    const char *function; /* callers and callees: the function they are rooted at */
    int cpu;              /* 1: CPU samples (cpustat) instead of the heap figures */
    int sort;             /* children ordered by figure: 0 bytes, 1 count, 2 leaked, 3 peak,
                             4 temporary (0 with cpu) */
    double min_share;     /* nodes below this share of the total are left out */
    int max_nodes;        /* at most this many nodes (0: 20000); "truncated" says when cut */
};

/* Writes the call tree of the scope (TEMP tables cs and sstat, or cpustat)
 * as one JSON object: kind, cpu, function, columns (the figures' names:
 * bytes, count, leaked, peak, temporary; or samples), sort, total, children
 * (each node: function, location, incl and self arrays in the columns'
 * order, children), nodes and truncated. Frames are merged by function
 * along a path; self is the figures of the stacks whose call site the node
 * is. Returns 0, or -1 after one line on stderr. */
int rh_tree_json(sqlite3 *db, const struct rh_tree_opts *opt, FILE *out);

/* ---- rh_query_site.c: the call-site table, one site, heap by site ------- */

/* Builds TEMP TABLE site (per call site) and leak_sites (rh_leak_sites),
 * then TEMP TABLE sitetab(site, function, location, stacks, count, bytes,
 * leaked_blocks, leaked_bytes, peak_bytes, temporary, first, last, score,
 * leak): one row per call site of the scope, summed over its stacks (sstat),
 * with its leak score and leak = 1 when the score marks it as a leak.
 * Returns 0 or -1 (printed). */
int rh_site_table(sqlite3 *db, int64_t duration_ns);

/* Writes the scope's heap over time by call site (after rh_site_table) as
 * one JSON object: xs (column end times, ns), total (the scope's live bytes
 * at each column's peak), series (the k sites that held the most at the
 * scope's peak, then "other call sites": function, location, values) and
 * timeline (false, with empty lists, when the scope has no timeline).
 * Returns 0 or -1. */
int rh_timeline_sites_json(sqlite3 *db, int k, FILE *out);

/* Writes one call site of sitetab in detail as a JSON object: figures, its
 * nstacks largest stacks with their frames, histograms of size (power-of-two
 * classes) and lifetime (decades, leaked apart) over every row of the site
 * in scope (msel), its threads, and its line over time (timeline: xs, total,
 * series). Returns 0, 1 when the scope has no such site (nothing written),
 * or -1 after one line. */
int rh_site_detail_json(sqlite3 *db, const char *function, const char *location, int nstacks,
                        FILE *out);

/* ---- rh_query_groups.c: bytehound's groups, threads, the heap over time -- */

/* After rh_qfilter_apply(q): TEMP TABLE grp(bt, m_count, m_size, m_min_size,
 * m_max_size, m_min_t, m_max_t, m_leaked), the matched figures of each stack
 * with a matched row (bytehound's only_matched): from the scope's sstat and
 * ssize (or stack_sizes), or summed from msel when bytehound's own filters
 * narrowed the rows. Returns 0 or -1 (SQLite's message on db). */
int rh_groups_build(sqlite3 *db, const struct rh_qfilter *q);

/* The smallest and largest size of stack bt's allocations (bytehound's
 * all.min_size / max_size) into *mn, *mx (-1: not known): from the
 * converter's stack_sizes; on an older profile without it, when rows is set
 * (a filtered scope), from SQL over its rows. Returns 0 or -1. */
int rh_group_sizes(sqlite3 *db, int64_t bt, int64_t *mn, int64_t *mx, int rows);

/* After rh_qfilter_apply(q): per thread (every row of `threads`, by id): id,
 * tid, name, blocks and bytes allocated, blocks and bytes still live at the
 * end, over the matched rows. NULL on error (SQLite's message on db). */
sqlite3_stmt *rh_threads_stmt(sqlite3 *db, const struct rh_qfilter *q);

/* The heap over time of the scope: n columns ending at xs[c] ns, the
 * highest live bytes in each and the live bytes (and blocks, end_count;
 * NULL when stored) at its end. stored: the converter's timeline answered
 * (no row filter); else one ordered pass over msel in cols + 1 even columns
 * of [0, span]. */
struct rh_timeline {
    int n, stored;
    int64_t *xs, *max_bytes, *end_bytes, *end_count;
};
/* Fills t after rh_qfilter_apply. Returns 0 or -1 (t empty). */
int rh_timeline_compute(sqlite3 *db, int64_t span, int cols, struct rh_timeline *t);
void rh_timeline_free(struct rh_timeline *t);

/* ---- rh_query_memory.c: the process's memory beside the heap, churn ----- */

/* One memory sample as the readers show it (bytes; time in ns). */
struct rh_mem_point {
    int64_t t, rss, anon, file, heap;
    int has_alloc;                      /* the allocator's figures are known */
    int64_t a_system, a_in_use, a_free; /* alloc_free: the arena's bytes not in use */
    double share;                       /* heap / rss */
    int64_t unexplained;                /* rss - heap, at least 0 */
};
struct rh_memfig {
    int64_t samples; /* memory rows with RSS; 0: the profile has none */
    int64_t interval_ms;
    char allocator[16];            /* glibc, jemalloc or none */
    struct rh_mem_point peak, end; /* the highest RSS (first of equals), the last sample */
};
/* Fills f from the memory table. Returns 0 (f->samples 0 when there is
 * none) or -1 after one line on stderr. */
int rh_memory_figures(sqlite3 *db, struct rh_memfig *f);
/* Call sites by bytes allocated and freed per second of duration_ns, with
 * their short-lived (temporary) blocks; over TEMP tables sstat and site.
 * stack_col: an extra last column's SQL, or NULL. NULL after one line. */
sqlite3_stmt *rh_churn_stmt(sqlite3 *db, int n, int64_t duration_ns, const char *stack_col);

/* Region allocators (rh_query_region.c). rh_region_available: 1 when db has
 * region chunks. rh_region_stmt: one row per region name (region, regions,
 * blocks, bytes, leaked_blocks, leaked_bytes), the n largest by bytes (order
 * "count": by chunks, "leaked" or leaks set: by bytes never freed, only
 * names with such chunks). NULL on error (message printed). */
int rh_region_available(sqlite3 *db);
sqlite3_stmt *rh_region_stmt(sqlite3 *db, int leaks, const char *order, int n);
/* The RSS beside a timeline: for each of the n columns ending at xs[c] ns
 * (increasing), the highest RSS sampled in (xs[c-1], xs[c]] (column 0: up to
 * xs[0]), -1 where no sample fell. Returns the columns filled (0 without
 * memory rows) or -1 after one line. */
int rh_memory_series(sqlite3 *db, const int64_t *xs, int n, int64_t *rss);
/* The same over ncols + 1 even columns ending at span * c / ncols. */
int rh_memory_columns(sqlite3 *db, int64_t span, int ncols, int64_t *rss);
/* f as one JSON object: samples, interval_ms, allocator, and when there are
 * samples, peak and end (time_ns, rss, rss_anon, rss_file, heap, heap_share,
 * unexplained, and alloc_system, alloc_in_use, alloc_free when known). */
void rh_memory_json(FILE *o, const struct rh_memfig *f);
/* "RSS X, live heap Y: the heap explains Z%, W not explained" into buf. */
const char *rh_memory_line(const struct rh_memfig *f, const struct rh_mem_point *p, char *buf,
                           size_t n);

/* ---- rh_query_events.c: allocations over time by site, size classes ----- */

/* After rh_site_table: the scope's blocks allocated (temporary 0) or its
 * temporary blocks (temporary 1, heaptrack's rule) over time, as one JSON
 * object: xs (the end times of RH_SCOPE_TL_COLS even columns of [0, span],
 * ns), total and series (the k sites that allocated the most blocks, or the
 * most temporary ones, then "other call sites": function, short, location,
 * values), each the count up to the column's end (cumulative: true).
 * Returns 0 or -1 after one line. */
int rh_events_sites_json(sqlite3 *db, int k, int temporary, int64_t span, FILE *out);

/* After rh_site_table: the size classes of the scope's blocks (function
 * NULL) or of one call site's, as a JSON array of {max_size, count, bytes}
 * per power-of-two class (a block of size s is in the smallest class with
 * max_size >= s), every class from the smallest used to the largest used,
 * empty ones with 0. Returns 0 or -1 after one line. */
int rh_size_classes_json(sqlite3 *db, const char *function, const char *location, FILE *out);

#endif
