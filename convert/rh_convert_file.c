/* rh_convert_file.c: one whole conversion, rip file in, SQLite database out.
 *
 * Shared by rheaper-convert (rh_convert_main.c) and the rheaper command's
 * `convert` and `run` (rh_cli_main.c). It opens the rip file (rh_rip.c), merges
 * and pairs its events (rh_merge.c), symbolizes the stacks (rh_symbolize.c) and
 * writes the database (rh_db.c), printing each error as one line prefixed with
 * the calling program's name. Progress goes to stderr only when stderr is a
 * terminal. The database gets the profile's mode (a rip is 0600: heap
 * addresses, argv and paths are the program owner's), never wider than the
 * umask. SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ and the crash
 * signals remove the temp database on the way out; what SIGKILL leaves, the
 * next conversion to the same path removes (rh_db_tmp.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rh_convert.h"
#include "rh_core.h"
#include "rh_db.h"
#include "rh_symbolize.h"

/* Removes the temp database when the conversion is interrupted. */
static void rh_on_signal(int sig)
{
    const char *tmp = rh_db_temp_path();
    if (tmp[0])
        unlink(tmp);
    signal(sig, SIG_DFL);
    raise(sig);
}

struct rh_progress {
    const char *prog;
    int on;
    int last;
};

static void rh_show_progress(struct rh_progress *p, uint64_t done, uint64_t total)
{
    if (!p->on || !total)
        return;
    int pct = (int)(done * 100 / total);
    if (pct != p->last) {
        p->last = pct;
        fprintf(stderr, "\r%s: %3d%%", p->prog, pct);
        fflush(stderr);
    }
}

struct rh_sink_ctx {
    struct rh_db *db;
    struct rh_post *post; /* the per-stack row index (rh_postings.c) */
    struct rh_chains *chains; /* the realloc chains (rh_chains.c) */
    struct rh_progress prog;
};

static int rh_sink_row(void *ctx, const struct rh_row *row)
{
    return rh_db_row(((struct rh_sink_ctx *)ctx)->db, row);
}

static int rh_sink_ext(void *ctx, const struct rh_event *ev, int64_t t)
{
    return rh_db_ext(((struct rh_sink_ctx *)ctx)->db, ev, t);
}

static int rh_sink_cpu(void *ctx, int64_t t, uint32_t thread, uint64_t stack, uint64_t periods)
{
    return rh_db_cpu(((struct rh_sink_ctx *)ctx)->db, t, thread, stack, periods);
}

static int rh_sink_alloc(void *ctx, uint32_t si, uint64_t stack, uint64_t id, uint64_t size)
{
    return rh_post_add(((struct rh_sink_ctx *)ctx)->post, si, stack, id, size);
}

static int rh_sink_realloc(void *ctx, uint64_t prev, uint64_t id)
{
    return rh_chains_add(((struct rh_sink_ctx *)ctx)->chains, prev, id);
}

static void rh_sink_progress(void *ctx, uint64_t done, uint64_t total)
{
    rh_show_progress(&((struct rh_sink_ctx *)ctx)->prog, done, total);
}

/* Registers the modules of every snapshot with the symbolizer, latest snapshot
 * first (it is the one that covers an address when modules were reloaded).
 * paths: where a module whose recorded path does not hold it is looked for (by
 * build id under the debug directories, then --search DIR/basename, for
 * converting on another machine or after a rebuild); the symbolizer checks
 * each file's build id against the recorded one. */
static struct rh_symbolizer *rh_make_symbolizer(struct rh_rip *r,
                                                const struct rh_modfind_paths *paths)
{
    struct rh_symbolizer *s = rh_sym_new();
    if (!s)
        return NULL;
    rh_sym_set_paths(s, paths);
    for (size_t i = r->nmods; i-- > 0;) {
        if (rh_sym_add_module(s, &r->mods[i]) != 0)
            break;
    }
    return s;
}

/* Is the process that wrote r still running on this machine? Its pid is alive
 * and runs the recorded executable (when /proc lets us see it). */
static int rh_still_recording(const struct rh_rip *r)
{
    pid_t pid = (pid_t)r->hdr.pid;
    if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM))
        return 0;
    char link[64], exe[sizeof r->exe];
    snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(link, exe, sizeof exe - 1);
    if (n < 0)
        return errno == EACCES || errno == EPERM; /* alive, not ours to look at */
    exe[n] = 0;
    return !strcmp(exe, r->exe);
}

/* One line saying what was not whole about the profile, if anything. */
static void rh_report_damage(const char *prog, const struct rh_rip *r,
                             const struct rh_merge_stats *st)
{
    if (r->has_trailer && r->tr_end_reason == RIP_END_SIZE_LIMIT)
        fprintf(stderr,
                "%s: %s: cut at the size limit (RHEAPER_MAX_PROFILE_SIZE): the recording "
                "stopped there and the profile was closed cleanly\n",
                prog, r->name);
    if (r->has_trailer && r->tr_has_stream && r->tr_stream_state == RIP_STREAM_QUEUE_FULL)
        fprintf(stderr,
                "%s: %s: the stream's queue was full (RHEAPER_STREAM_QUEUE): the recording "
                "stopped there and the profile was closed cleanly; %llu events lost\n",
                prog, r->name, (unsigned long long)r->tr_lost);
    if (!r->cut_short && !r->damaged)
        return;
    char what[256] = "";
    size_t n = 0;
    if (r->cut_short && !r->has_trailer && rh_still_recording(r))
        n += snprintf(what + n, sizeof what - n,
                      "still being recorded by process %u, which is running (this is what it "
                      "wrote so far)",
                      (unsigned)r->hdr.pid);
    else if (r->cut_short)
        n += snprintf(what + n, sizeof what - n, "%s",
                      r->has_trailer ? "cut short"
                                     : "cut short (no trailer: the program did not "
                                       "close it)");
    if (r->damaged_chunks && n < sizeof what)
        n += snprintf(what + n, sizeof what - n, "%s%llu damaged chunk%s skipped", n ? ", " : "",
                      (unsigned long long)r->damaged_chunks, r->damaged_chunks == 1 ? "" : "s");
    else if (r->damaged && n < sizeof what)
        n += snprintf(what + n, sizeof what - n, "%sdamaged", n ? ", " : "");
    fprintf(stderr,
            "%s: %s: profile not clean: %s; converted %llu events, %llu block%s "
            "still live at the end\n",
            prog, r->name, what, (unsigned long long)r->events, (unsigned long long)st->live_at_end,
            st->live_at_end == 1 ? "" : "s");
}

int rh_convert_file(const char *prog, const char *rip_path, const char *db_path, int force,
                    int quiet, const char *const *search)
{
    struct rh_convert_opts o = {force, quiet, search, NULL, 0, NULL};
    return rh_convert_file_opts(prog, rip_path, db_path, &o);
}

int rh_convert_file_opts(const char *prog, const char *rip_path, const char *db_path,
                         const struct rh_convert_opts *o)
{
    int force = o->force, quiet = o->quiet;
    const struct rh_modfind_paths paths = {o->search, o->debug_dirs};
    struct stat st;
    if (!force && lstat(db_path, &st) == 0) {
        fprintf(stderr, "%s: %s exists; use --force to overwrite\n", prog, db_path);
        return 1;
    }

    static struct rh_rip r;
    memset(&r, 0, sizeof r);
    if (rh_rip_open_file(&r, rip_path, quiet ? NULL : stderr) != 0) {
        fprintf(stderr, "%s: %s\n", prog, r.err);
        rh_rip_close(&r);
        return 1;
    }

    /* A fork child's first profile: the blocks it inherited, from the
     * parent's profile (rh_inherit.c); without it, one line and as before. */
    static struct rh_inherit inh;
    char imsg[1200];
    int ik = rh_inherit_load(&r, rip_path, o->parent, &inh, imsg, sizeof imsg);
    if (ik < 0 && !quiet)
        fprintf(stderr, "%s: %s: %s\n", prog, rip_path, imsg);
    if (ik == 0 && rh_inherit_apply(&r, &inh) != 0) {
        fprintf(stderr, "%s: %s: out of memory\n", prog, rip_path);
        rh_inherit_free(&inh);
        rh_rip_close(&r);
        return 1;
    }

    char err[1024];
    struct rh_sink_ctx sc = {0};
    sc.prog.prog = prog;
    sc.prog.on = !quiet && isatty(2);
    sc.prog.last = -1;
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGXFSZ,
                               SIGBUS, SIGSEGV, SIGILL, SIGFPE,  SIGABRT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        /* a signal the caller ignores stays ignored (nohup, a pipeline) */
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        signal(sigs[i], rh_on_signal);
    }
    /* private as the profile is: its permission bits, 0600 when unknown */
    rh_db_set_mode(r.file_mode ? r.file_mode : 0600);
    sc.db = rh_db_create(db_path, err, sizeof err);
    if (!sc.db) {
        fprintf(stderr, "%s: %s\n", prog, err);
        rh_rip_close(&r);
        rh_inherit_free(&inh);
        return 1;
    }

    /* The span of the stored timeline: the run's length when the trailer
     * gives it before the merge. */
    struct rh_agg *agg = rh_agg_new(&r, r.has_trailer ? rh_run_duration(&r, 0) : 0);
    if (!agg) {
        fprintf(stderr, "%s: %s: out of memory\n", prog, rip_path);
        rh_db_abort(sc.db);
        rh_rip_close(&r);
        rh_inherit_free(&inh);
        return 1;
    }
    /* the timeline's per-column stack figures go to a temp file beside the
     * database (rh_aggregate.c), like the row index's chunks */
    if (rh_agg_tl_open(agg, db_path)) {
        fprintf(stderr, "%s: %s.tl.*: cannot make a temp file (%s)\n", prog, db_path,
                strerror(errno));
        rh_db_abort(sc.db);
        rh_agg_free(agg);
        rh_rip_close(&r);
        rh_inherit_free(&inh);
        return 1;
    }
    /* the stack groups' peaks (rh_agg_groups.c): without them, stack
     * filters read rows */
    if (!o->min_lifetime_ns)
        (void)rh_grp_open(agg, db_path);
    rh_db_set_agg(sc.db, agg, o->min_lifetime_ns);
    sc.post = rh_post_new(db_path);
    if (!sc.post) {
        fprintf(stderr, "%s: %s.rows.*: cannot make a temp file (%s)\n", prog, db_path,
                strerror(errno));
        rh_db_abort(sc.db);
        rh_agg_free(agg);
        rh_post_free(sc.post);
        rh_rip_close(&r);
        rh_inherit_free(&inh);
        return 1;
    }
    rh_db_set_post(sc.db, sc.post);
    sc.chains = rh_chains_new(db_path);
    if (!sc.chains) {
        fprintf(stderr, "%s: out of memory\n", prog);
        rh_db_abort(sc.db);
        rh_agg_free(agg);
        rh_post_free(sc.post);
        rh_rip_close(&r);
        rh_inherit_free(&inh);
        return 1;
    }
    rh_db_set_chains(sc.db, sc.chains);
    /* The mean time between allocations, from the trailer (its events are
     * allocations and frees, about half each): rows then store small times. */
    if (r.has_trailer && r.tr_events >= 2)
        rh_db_set_time_step(sc.db, rh_run_duration(&r, 0) / (int64_t)(r.tr_events / 2));
    struct rh_merge_sink sink = {rh_sink_row, rh_sink_progress, &sc, agg, rh_sink_ext,
                                 rh_sink_cpu, rh_sink_alloc, rh_sink_realloc};
    struct rh_merge_stats ms;
    int rc = rh_merge_run(&r, &sink, &ms);
    if (sc.prog.on)
        fputs("\r                       \r", stderr);
    if (rc) {
        if (r.oom || (rc == -1 && !rh_db_error(sc.db)[0]))
            fprintf(stderr, "%s: %s: out of memory\n", prog, rip_path);
        else
            fprintf(stderr, "%s: %s\n", prog, rh_db_error(sc.db));
        rh_db_abort(sc.db);
        rh_agg_free(agg);
        rh_post_free(sc.post);
        rh_chains_free(sc.chains);
        rh_rip_close(&r);
        rh_inherit_free(&inh);
        return 1;
    }

    struct rh_symbolizer *sym = rh_make_symbolizer(&r, &paths);
    rc = rh_db_finish(sc.db, &r, &ms, sym, force, err, sizeof err);
    rh_sym_free(sym);
    rh_agg_free(agg);
    rh_post_free(sc.post);
    rh_chains_free(sc.chains);
    if (rc) {
        fprintf(stderr, "%s: %s\n", prog, err);
        rh_rip_close(&r);
        rh_inherit_free(&inh);
        return 1;
    }
    if (!quiet)
        rh_report_damage(prog, &r, &ms);
    if (!quiet && o->min_lifetime_ns > 0)
        fprintf(stderr,
                "%s: %s: culled: rows only for blocks that lived at least %.6g s or were "
                "never freed (aggregates count every event)\n",
                prog, db_path, o->min_lifetime_ns / 1e9);
    rh_rip_close(&r);
    rh_inherit_free(&inh);
    return 0;
}

int rh_parse_lifetime_arg(const char *s, int64_t *ns)
{
    char *end;
    double d = strtod(s, &end);
    if (end == s || !isfinite(d) || d < 0)
        return -1;
    double mul = !strcmp(end, "ns") ? 1 : !strcmp(end, "us") ? 1e3 : !strcmp(end, "ms") ? 1e6
                                      : !strcmp(end, "s")    ? 1e9
                                                             : -1;
    if (mul < 0 || d * mul > 9e18)
        return -1;
    *ns = (int64_t)llround(d * mul);
    return 0;
}
