/* rh_live.h: the internal header of the terminal UI (`rheaper live`,
 * `rheaper view`) and of `rheaper list`.
 *
 * Two sources fill one model (struct rh_lv_model) that one ncurses UI draws:
 *   - rh_live_follow.c follows a rip file while the program writes it, read
 *     only: new chunks as the file grows, records of unsealed chunks up to
 *     their `used`, decoded by the converter's own stream decoder and paired
 *     by its merge (rh_stream_decode.c, rh_merge.c), stacks symbolized with its
 *     symbolizer and call sites found with its rule (rh_callsite.c);
 *   - rh_live_db.c reads a converted profile through the rheaper command's
 *     scope (rh_query_filter.c: stack_stats, thread_stats, timeline), never
 *     scanning allocations.
 * Prototypes are grouped under the file that defines them.
 */
#ifndef RH_LIVE_H
#define RH_LIVE_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>
#include <stdio.h>

/* The stack kind of a CPU sample's stack (frame 0 is the
 * interrupted PC). */
#define RH_LV_KIND_CPU 255

/* Per-second points of a site's trend (the sparkline): three minutes. */
#define RH_LV_TREND 180

/* One call site: the first frame of a stack that is not an allocator
 * wrapper (rh_callsite.c), named by function, file and line. */
struct rh_lv_site {
    char *label; /* "function file:line" (owned) */
    char *func;  /* function name, or the label when unknown (owned) */
    char *short_label; /* label with func's short form (rh_name_short), owned */
    int64_t live_bytes, live_blocks;
    int64_t peak_bytes; /* live at the profile's peak (so far, while following) */
    int64_t alloc_bytes, alloc_blocks, freed_bytes, freed_blocks;
    int64_t cpu_samples;
    int64_t trend[RH_LV_TREND]; /* live bytes, oldest first; the last is now */
    int ntrend;                 /* points filled (from the end) */
};

/* One thread: thread_summary's figures (docs/sql.md). */
struct rh_lv_thread {
    uint32_t id, tid;
    char name[17];
    int64_t alloc_blocks, alloc_bytes, freed_blocks, freed_bytes;
    int64_t others_blocks, others_bytes; /* its blocks freed by other threads */
    int64_t live_blocks, live_bytes;
    int64_t cpu_samples;
};

/* One point of the total live heap: at t (ns since start), `bytes` live
 * (the highest value reached in the point's interval). */
struct rh_lv_point {
    int64_t t, bytes;
};

struct rh_lv_model {
    char source[1100]; /* the path shown in the title */
    char exe[1100];
    char title[256]; /* the process title (setproctitle, argv rewritten): "" when unknown */
    int pid;
    int following;   /* 1: a running program (live), 0: a saved profile (view) */
    int ended;       /* following: the program has ended */
    char state[160]; /* one line: "running", "ended: ...", "complete", ... */
    int64_t duration_ns;
    int64_t live_bytes, live_blocks, peak_bytes, peak_t;
    int64_t alloc_blocks, alloc_bytes, freed_blocks, freed_bytes;
    uint64_t unknown_frees, events;
    struct rh_lv_site *sites;
    size_t nsites, capsites;
    struct rh_lv_thread *threads;
    size_t nthreads, capthreads;
    struct rh_lv_point *tl;
    size_t ntl, captl;
    struct rh_lv_point *rss; /* the process's RSS as the runtime sampled it */
    size_t nrss, caprss;
    int64_t rss_heap; /* the live heap at the last RSS sample */
    int64_t cpu_total;
    char skipped[512]; /* the allocator wrappers skipped, "" when none */
};

/* ---- rh_live_model.c: the model's memory and the JSON snapshot ----------- */

/* Frees every array of m (the struct itself stays). */
void rh_lv_model_clear(struct rh_lv_model *m);
/* Appends a site named label/func (and short_label: label with func's short
 * form when label starts with func); returns it or NULL on out of memory. */
struct rh_lv_site *rh_lv_site_add(struct rh_lv_model *m, const char *label, const char *func);
/* Appends a timeline point, merging with the last one when t is not later.
 * Returns 0 or -1 on out of memory. */
int rh_lv_point_add(struct rh_lv_model *m, int64_t t, int64_t bytes);
/* Appends an RSS sample (bytes at t ns). Returns 0 or -1 on out of memory. */
int rh_lv_rss_add(struct rh_lv_model *m, int64_t t, int64_t bytes);
/* The orders of the sites: figures descending, ties (and NAME) by label. */
enum rh_lv_sort {
    RH_LV_BY_LIVE,
    RH_LV_BY_PEAK,
    RH_LV_BY_ALLOCATED,
    RH_LV_BY_COUNT,
    RH_LV_BY_FREED,
    RH_LV_BY_NAME,
    RH_LV_BY_SAMPLES
};
/* The sites one view lists, sorted `by`, as a malloc'd array (*n its length;
 * NULL on out of memory): cpu 0, the heap's (sites that allocated); cpu 1,
 * the CPU view's (functions with samples). The UI's sorts, the --once table
 * and the JSON (heap by live bytes, CPU by samples) all sort here. */
const struct rh_lv_site **rh_lv_sites_sorted(const struct rh_lv_model *m, int cpu,
                                             enum rh_lv_sort by, size_t *n);
/* Writes m as one JSON object (`rheaper live --once --json`): totals, the
 * heap's "sites" and the "cpu" functions apart, each in rh_lv_sites_sorted's
 * order, threads, the timeline and RSS. */
void rh_lv_model_json(const struct rh_lv_model *m, FILE *out);
/* Writes m as text (`rheaper live --once`): a title and totals line, the
 * heap's call sites under a header line, then the CPU functions apart. */
void rh_lv_model_text(const struct rh_lv_model *m, FILE *out);

/* ---- rh_live_follow.c: following a growing rip file ------------------------ */

struct rh_follow;

/* Opens the rip file at path for following, read only. Returns NULL after
 * one line on stderr ("rheaper: PATH: ..."). pid_hint: the process writing it
 * (0: the header's pid) whose end means the profile is finished. */
struct rh_follow *rh_follow_open(const char *path, int pid_hint);
/* Reads what was written since the last call: new chunks, new records of open
 * chunks, new modules and stacks (symbolized). `final`: read as if nothing
 * more will come (frees still waiting for their allocation count as
 * unknown). Returns 1 when something changed, 0 when not, -1 on a fatal
 * error (one line printed). */
int rh_follow_poll(struct rh_follow *f, int final);
/* 1 once the file header has been read (the file is a rip file). */
int rh_follow_has_header(const struct rh_follow *f);
/* 1 when the writing program has ended (its trailer was written and it is
 * gone, or it is gone without one). */
int rh_follow_ended(struct rh_follow *f);
/* Fills m from the current state (sites, threads, the heap over time, and
 * the trends: one point per second of the program's time). func_re (NULL:
 * none): only the call sites of stacks in which some frame's function
 * matches it (POSIX extended), as every command's --function; totals,
 * threads and the chart stay the whole profile's. Returns 0, or -1 (out of
 * memory, or a bad regex: printed). */
int rh_follow_model(struct rh_follow *f, struct rh_lv_model *m, const char *func_re);
void rh_follow_close(struct rh_follow *f);

/* ---- rh_live_db.c: a saved profile ---------------------------------------- */

/* Fills m from the profile database at path (read only) through the
 * command's scope. func_re (NULL: none) selects the call sites through the
 * shared --function filter (rh_filter_apply): some frame's function matches;
 * totals, threads and the chart stay the whole profile's. Returns 0, or -1
 * after one line on stderr. */
int rh_lv_db_load(const char *path, struct rh_lv_model *m, const char *func_re);

/* ---- rh_live_ui.c: the ncurses UI ------------------------------------------ */

/* Called by the UI to refresh the model with the call-site filter func_re
 * (NULL: none): about twice a second while following (force 0: only when
 * something new was read), and at once when the filter changes (force 1).
 * Returns 1 when m changed, 0 when not, -1 on a fatal error. */
typedef int (*rh_lv_refresh_fn)(void *ctx, struct rh_lv_model *m, const char *func_re, int force);

/* Runs the UI on m until `q`. follow: refresh periodically (a running
 * program), else only when the filter changes. Returns the exit status. */
int rh_lv_ui_run(struct rh_lv_model *m, rh_lv_refresh_fn refresh, void *ctx, int follow);

/* ---- rh_live_cmd.c, rh_live_list.c: the subcommands ------------------------ */

int rh_cmd_live(int argc, char **argv);
int rh_cmd_view(int argc, char **argv);
int rh_cmd_list(int argc, char **argv);
/* The most recent profile for `rheaper view` without an argument: of the
 * files in the directories `list` reads by default (the current directory
 * and RHEAPER_PROFILE_DIR), the profile databases (SQLite files with
 * rheaper's tables) and the rip files no process is recording, the one
 * modified last (ties: the first name). Writes its path into out and returns
 * 0, or -1 after one line on stderr when there is none. */
int rh_list_newest(char *out, size_t n);

/* ---- rh_live_proc.c: a process by name ----------------------------------- */

/* The pid of the one running process (not this one) whose /proc/PID/comm or
 * executable base name is `name`. When none or several match, prints one
 * line "rheaper: CMD: ..." (and the matches, one per line) and returns 0. */
int rh_proc_by_name(const char *cmd, const char *name);

/* ---- rh_live_marker.c: the process and its control marker ---------------- */

/* The marker DIR/rheaper-PID.ctl (runtime/rh_control.c), parsed. */
struct rh_marker {
    int pid, sig;
    unsigned long long start;
    unsigned seq;
    char state[32];
    char end[32];
    char profile[PATH_MAX + 64];
    unsigned failed; /* starts the signal asked for that the runtime could not make */
};

/* What /proc/PID says about the process now. */
struct rh_target {
    int pid;
    uid_t euid;                /* its effective user: the owner of its files */
    unsigned long long start;  /* start time, clock ticks (never 0 when read) */
    unsigned long long sigcgt; /* signals it catches: bit sig-1 */
};

/* What the process's environment says (/proc/PID/environ). */
enum { RH_ENV_UNKNOWN, RH_ENV_ARMED, RH_ENV_OFF };
struct rh_env {
    int state;          /* RH_ENV_*: UNKNOWN when unreadable or overwritten */
    int sig;            /* the runtime's signal by this environment; 0 when UNKNOWN */
    char dir[PATH_MAX]; /* RHEAPER_PROFILE_DIR ("" when unset or UNKNOWN) */
};

/* Field 22 of /proc/PID/stat (start time in clock ticks), 0 when unreadable. */
unsigned long long rh_proc_start(int pid);
/* Reads t for pid (/proc/PID/status and stat). Returns 0, or -1 when the
 * process is gone or unreadable. */
int rh_proc_target(int pid, struct rh_target *t);
/* 1 when t catches sig (a handler is installed, per SigCgt). */
int rh_proc_catches(const struct rh_target *t, int sig);
/* Reads the marker at path for t: accepted only when it is a regular file
 * with one link of t's effective user (brought up to date in t->euid) or
 * root, naming t's pid and start time. Returns 0, or -1 with the reason in
 * why ("" when the file is missing). */
int rh_marker_read(const char *path, struct rh_target *t, struct rh_marker *m, char *why,
                   size_t whylen);
/* 1 when the runtime accepts sig for RHEAPER_SIGNAL. */
int rh_ctl_signal_ok(int sig);
/* RHEAPER_SIGNAL's value as the runtime reads it (its default SIGRTMAX-5 for
 * a value it would ignore). */
int rh_ctl_parse_signal(const char *s);
/* Reads pid's environment into e (RH_ENV_UNKNOWN when unreadable or written
 * over by a process title). */
void rh_proc_environ(int pid, struct rh_env *e);

/* The process title of running process pid (/proc/PID/cmdline, its NULs
 * as spaces, control bytes as '?') into out; "" when unreadable. */
void rh_lv_proc_title(int pid, char *out, size_t n);

#endif
