/* rh_convert_main.c: the rheaper-convert command line.
 *
 *     rheaper-convert [--force] [--quiet] RIP DB
 *
 * Reads the rip file RIP (rh_rip.c, rh_stream.c), merges and pairs its events
 * (rh_merge.c), symbolizes the stacks (rh_symbolize.c) and writes the SQLite
 * database DB (rh_db.c). Errors are one line, "rheaper-convert: PATH: what";
 * the exit status is 0 on success (a profile cut short included, with one line
 * saying so), 1 on failure and 2 on a usage error. Progress goes to stderr only
 * when stderr is a terminal.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rh_convert.h"

#ifndef RHEAPER_VERSION_STRING
#define RHEAPER_VERSION_STRING "0.0.0"
#endif

static const char rh_usage[] =
    "usage: rheaper-convert [--force] [--quiet] RIP DB\n"
    "Converts the rheaper profile RIP (rip-<pid>) into the SQLite database DB.\n"
    "  --force    overwrite DB if it exists\n"
    "  --quiet    no warnings or progress, errors only\n"
    "  --help     this text\n"
    "  --version  print the version\n";

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
    int on;
    int last;
};

static void rh_show_progress(void *ctx, uint64_t done, uint64_t total)
{
    struct rh_progress *p = ctx;
    if (!p->on || !total)
        return;
    int pct = (int)(done * 100 / total);
    if (pct != p->last) {
        p->last = pct;
        fprintf(stderr, "\rrheaper-convert: %3d%%", pct);
        fflush(stderr);
    }
}

struct rh_sink_ctx {
    struct rh_db *db;
    struct rh_progress prog;
};

static int rh_sink_row(void *ctx, const struct rh_row *row)
{
    return rh_db_row(((struct rh_sink_ctx *)ctx)->db, row);
}

static void rh_sink_progress(void *ctx, uint64_t done, uint64_t total)
{
    rh_show_progress(&((struct rh_sink_ctx *)ctx)->prog, done, total);
}

/* Registers the modules of every snapshot with the symbolizer, latest snapshot
 * first (it is the one that covers an address when modules were reloaded). */
static struct rh_symbolizer *rh_make_symbolizer(struct rh_rip *r)
{
    struct rh_symbolizer *s = rh_sym_new();
    if (!s)
        return NULL;
    for (size_t i = r->nmods; i-- > 0;)
        if (rh_sym_add_module(s, &r->mods[i]) != 0)
            break;
    return s;
}

/* One line saying what was not whole about the profile, if anything. */
static void rh_report_damage(const struct rh_rip *r, const struct rh_merge_stats *st)
{
    if (!r->cut_short && !r->damaged)
        return;
    char what[256] = "";
    size_t n = 0;
    if (r->cut_short)
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
            "rheaper-convert: %s: profile not clean: %s; converted %llu events, %llu block%s "
            "still live at the end\n",
            r->name, what, (unsigned long long)r->events, (unsigned long long)st->live_at_end,
            st->live_at_end == 1 ? "" : "s");
}

int main(int argc, char **argv)
{
    int force = 0, quiet = 0, dashdash = 0;
    const char *paths[2];
    int npaths = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!dashdash && a[0] == '-' && a[1]) {
            if (!strcmp(a, "--force") || !strcmp(a, "-f")) {
                force = 1;
            } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
                quiet = 1;
            } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
                fputs(rh_usage, stdout);
                return 0;
            } else if (!strcmp(a, "--version")) {
                printf("rheaper-convert %s (rip format %u)\n", RHEAPER_VERSION_STRING, RIP_VERSION);
                return 0;
            } else if (!strcmp(a, "--")) {
                dashdash = 1;
            } else {
                fprintf(stderr, "rheaper-convert: unknown option %s\n%s", a, rh_usage);
                return 2;
            }
            continue;
        }
        if (npaths == 2) {
            fprintf(stderr, "rheaper-convert: too many arguments\n%s", rh_usage);
            return 2;
        }
        paths[npaths++] = a;
    }
    if (npaths != 2) {
        fprintf(stderr, "rheaper-convert: expected RIP and DB\n%s", rh_usage);
        return 2;
    }
    const char *rip_path = paths[0], *db_path = paths[1];

    struct stat st;
    if (!force && lstat(db_path, &st) == 0) {
        fprintf(stderr, "rheaper-convert: %s exists; use --force to overwrite\n", db_path);
        return 1;
    }

    static struct rh_rip r;
    if (rh_rip_open_file(&r, rip_path, quiet ? NULL : stderr) != 0) {
        fprintf(stderr, "rheaper-convert: %s\n", r.err);
        rh_rip_close(&r);
        return 1;
    }

    char err[1024];
    struct rh_sink_ctx sc = {0};
    sc.prog.on = !quiet && isatty(2);
    sc.prog.last = -1;
    signal(SIGINT, rh_on_signal);
    signal(SIGTERM, rh_on_signal);
    signal(SIGHUP, rh_on_signal);
    sc.db = rh_db_create(db_path, err, sizeof err);
    if (!sc.db) {
        fprintf(stderr, "rheaper-convert: %s\n", err);
        rh_rip_close(&r);
        return 1;
    }

    struct rh_merge_sink sink = {rh_sink_row, rh_sink_progress, &sc};
    struct rh_merge_stats ms;
    int rc = rh_merge_run(&r, &sink, &ms);
    if (sc.prog.on)
        fputs("\r                       \r", stderr);
    if (rc) {
        if (r.oom || (rc == -1 && !rh_db_error(sc.db)[0]))
            fprintf(stderr, "rheaper-convert: %s: out of memory\n", rip_path);
        else
            fprintf(stderr, "rheaper-convert: %s\n", rh_db_error(sc.db));
        rh_db_abort(sc.db);
        rh_rip_close(&r);
        return 1;
    }

    struct rh_symbolizer *sym = rh_make_symbolizer(&r);
    rc = rh_db_finish(sc.db, &r, &ms, sym, force, err, sizeof err);
    rh_sym_free(sym);
    if (rc) {
        fprintf(stderr, "rheaper-convert: %s\n", err);
        rh_rip_close(&r);
        return 1;
    }
    if (!quiet)
        rh_report_damage(&r, &ms);
    rh_rip_close(&r);
    return 0;
}
