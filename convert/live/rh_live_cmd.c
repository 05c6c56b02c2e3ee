/* rh_live_cmd.c: `rheaper live` and `rheaper view`.
 *
 *   rheaper live [--once --json] PID | RIP | -P NAME
 *   rheaper view [PROFILE.db | RIP]
 *
 * `live` follows a running program's profile (rh_live_follow.c). Given a PID
 * it finds the rip file the process is writing: the rip file the process has
 * mapped (/proc/PID/maps; the runtime writes through MAP_SHARED mappings of
 * it), else the one its control marker names while `rheaper record` has it
 * recording (DIR/rheaper-PID.ctl, as rh_cli_record.c reads it), else
 * DIR/rip-PID. `--once` reads what is written now and prints one snapshot
 * (`--json`: the JSON of rh_lv_model_json) instead of the UI.
 *
 * `view` opens a saved profile in the same UI. A rip file is first converted
 * into a temporary database in a fresh private directory, removed at exit,
 * so no existing file is ever touched. Without a profile it opens the most
 * recent one in the directories `rheaper list` reads (rh_list_newest).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rh_query.h"
#include "rh_convert.h"
#include "rh_core.h"
#include "rh_live.h"
#include "rh_safefile.h"

static int rh_live_usage(const char *msg)
{
    if (msg)
        fprintf(stderr, "rheaper live: %s\n", msg);
    fprintf(stderr, "usage: rheaper live [--once [--json]] PID|RIP|-P NAME\n");
    return 2;
}

/* 1 when path is a rip file whose header names pid (any pid when 0). With
 * t, the file must also belong to t's effective user or root and have one
 * link: a path found in a directory others can write is only the process's
 * profile if it is the process's file. */
static int rh_is_rip_of(const char *path, int pid, const struct rh_target *t)
{
    int fd = rh_safe_open(path, O_RDONLY, 0, t ? RH_SAFE_OWNER | RH_SAFE_ONE_LINK : 0,
                          t ? t->euid : 0, NULL, 0);
    if (fd < 0)
        return 0;
    uint8_t b[RIP_HEADER_SIZE];
    struct rip_file_header h;
    ssize_t n = pread(fd, b, sizeof b, 0);
    close(fd);
    return n > 0 && !rh_rip_header_check(b, (size_t)n, &h, NULL) &&
           (!pid || h.pid == (uint32_t)pid);
}

/* Finds the rip file process pid is writing, into out. Returns 0, or -1
 * after one line on stderr. */
static int rh_rip_of_pid(int pid, char *out, size_t n)
{
    char path[128], line[PATH_MAX + 256], best[PATH_MAX] = "";
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    struct rh_target t;
    int fd = rh_safe_open(path, O_RDONLY, 0, 0, 0, NULL, 0);
    FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
    if (!f || rh_proc_target(pid, &t) != 0) {
        if (f)
            fclose(f);
        else if (fd >= 0)
            close(fd);
        fprintf(stderr, "rheaper: live: no process %d (%s)\n", pid, strerror(errno));
        return -1;
    }
    /* 1. the file it has mapped: the last rip file in its map */
    while (fgets(line, sizeof line, f)) {
        char *p = strchr(line, '/');
        if (!p)
            continue;
        p[strcspn(p, "\n")] = 0;
        if (strstr(p, " (deleted)"))
            continue;
        if (!strcmp(p, best))
            continue;
        const char *b = strrchr(p, '/') + 1;
        if (strncmp(b, "rip", 3) && !strstr(b, "rip")) {
            /* profile names are templates; check the magic of any file
             * mapped shared and writable, which is how rips are mapped */
            if (!strstr(line, "rw-s"))
                continue;
        }
        if (rh_is_rip_of(p, pid, &t))
            snprintf(best, sizeof best, "%s", p);
    }
    fclose(f);
    if (best[0]) {
        snprintf(out, n, "%s", best);
        return 0;
    }
    /* 2. its profile directory: the marker of `rheaper record` (only one of
     * its own user naming it: rh_marker_read), or rip-PID */
    struct rh_env env;
    rh_proc_environ(pid, &env);
    const char *dir = env.dir;
    char cwd[PATH_MAX] = "", d[PATH_MAX + 8];
    snprintf(path, sizeof path, "/proc/%d/cwd", pid);
    ssize_t k = readlink(path, cwd, sizeof cwd - 1);
    if (k > 0)
        cwd[k] = 0;
    if (!*dir)
        dir = ".";
    if (dir[0] == '/')
        snprintf(d, sizeof d, "%s", dir);
    else
        snprintf(d, sizeof d, "%s/%s", cwd, dir);
    char mpath[PATH_MAX + 64], why[PATH_MAX + 256];
    struct rh_marker mk;
    snprintf(mpath, sizeof mpath, "%s/rheaper-%d.ctl", d, pid);
    if (rh_marker_read(mpath, &t, &mk, why, sizeof why) == 0 && !strcmp(mk.state, "recording") &&
        rh_is_rip_of(mk.profile, pid, &t)) {
        snprintf(out, n, "%s", mk.profile);
        return 0;
    }
    if (why[0])
        fprintf(stderr, "rheaper: live: ignored a marker that is not this process's: %s\n", why);
    snprintf(mpath, sizeof mpath, "%s/rip-%d", d, pid);
    if (rh_is_rip_of(mpath, pid, &t)) {
        snprintf(out, n, "%s", mpath);
        return 0;
    }
    fprintf(stderr,
            "rheaper: live: process %d is not recording a profile (no rip file mapped or in %s); "
            "start it with RHEAPER_ENABLE=1, or arm it and run `rheaper record -p %d`\n",
            pid, d, pid);
    return -1;
}

struct rh_live_ctx {
    struct rh_follow *f;
    int finished; /* the end was read with final = 1 */
};

static int rh_live_refresh(void *ctx, struct rh_lv_model *m, const char *func_re, int force)
{
    struct rh_live_ctx *c = ctx;
    int ended = rh_follow_ended(c->f);
    int rc = rh_follow_poll(c->f, ended);
    if (rc < 0)
        return -1;
    if (rc == 0 && c->finished && m->sites && !force)
        return 0;
    c->finished = ended;
    return rh_follow_model(c->f, m, func_re) ? -1 : 1;
}

/* A saved profile: loaded again when the call-site filter changes. */
static int rh_view_refresh(void *ctx, struct rh_lv_model *m, const char *func_re, int force)
{
    const char *db = ctx;
    if (!force)
        return 0;
    char source[sizeof m->source];
    snprintf(source, sizeof source, "%s", m->source);
    rh_lv_model_clear(m);
    if (rh_lv_db_load(db, m, func_re))
        return -1;
    snprintf(m->source, sizeof m->source, "%s", source);
    return 1;
}

/* `--once`: the model m as one snapshot on stdout, JSON (rh_lv_model_json)
 * or the text tables (rh_lv_model_text). */
static void rh_live_once_print(const struct rh_lv_model *m, int json)
{
    if (json)
        rh_lv_model_json(m, stdout);
    else
        rh_lv_model_text(m, stdout);
}

int rh_cmd_live(int argc, char **argv)
{
    int once = 0, json = 0;
    const char *target = NULL, *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--once"))
            once = 1;
        else if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "-P")) {
            if (++i >= argc)
                return rh_live_usage("-P needs a process name");
            name = argv[i];
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            rh_live_usage(NULL);
            return 0;
        } else if (argv[i][0] == '-')
            return rh_live_usage("unknown option");
        else if (target)
            return rh_live_usage("one PID or rip file");
        else
            target = argv[i];
    }
    if (json && !once)
        return rh_live_usage("--json goes with --once");
    if (!!target == !!name)
        return rh_live_usage(name ? "give -P NAME or a PID, not both" : NULL);
    int pid = 0;
    char path[PATH_MAX];
    if (name) {
        pid = rh_proc_by_name("live", name);
        if (!pid)
            return 1;
    } else {
        char *end;
        long v = strtol(target, &end, 10);
        struct stat sb;
        if (*target && !*end && v > 0 && v < INT32_MAX && stat(target, &sb) != 0)
            pid = (int)v;
    }
    if (pid) {
        if (rh_rip_of_pid(pid, path, sizeof path))
            return 1;
    } else {
        snprintf(path, sizeof path, "%s", target);
    }
    struct rh_live_ctx c = {rh_follow_open(path, pid), 0};
    if (!c.f)
        return 1;
    struct rh_lv_model m;
    memset(&m, 0, sizeof m);
    int rc = 0;
    if (once) {
        if (rh_follow_poll(c.f, 1) < 0 || rh_follow_model(c.f, &m, NULL)) {
            rc = 1;
        } else if (!rh_follow_has_header(c.f)) {
            fprintf(stderr, "rheaper: %s: no rip file header (yet): not a profile\n", path);
            rc = 1;
        } else {
            rh_live_once_print(&m, json);
        }
    } else {
        if (rh_live_refresh(&c, &m, NULL, 1) < 0)
            rc = 1;
        else
            rc = rh_lv_ui_run(&m, rh_live_refresh, &c, 1);
    }
    if (fflush(stdout) != 0)
        rc = 1;
    rh_lv_model_clear(&m);
    rh_follow_close(c.f);
    return rc;
}

int rh_cmd_view(int argc, char **argv)
{
    const char *path = NULL;
    int once = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--once"))
            once = 1;
        else if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            path = NULL, argc = 0;
    }
    if (!argc || (json && !once)) {
        fprintf(stderr, "usage: rheaper view [PROFILE.db|RIP] [--once [--json]]\n");
        return 2;
    }
    char newest[PATH_MAX];
    if (!path) { /* the most recent profile here (rh_list_newest) */
        if (rh_list_newest(newest, sizeof newest))
            return 1;
        path = newest;
        fprintf(stderr, "rheaper: view: %s (the most recent profile)\n", path);
    }
    char tmpdir[PATH_MAX] = "", tmpdb[PATH_MAX + 16] = "";
    struct rh_lv_model m;
    memset(&m, 0, sizeof m);
    int rc = 1;
    if (rh_is_rip_of(path, 0, NULL)) {
        const char *t = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/rheaper-view.XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(tmpdir)) {
            fprintf(stderr, "rheaper: view: cannot create a temporary directory %s (%s)\n", tmpdir,
                    strerror(errno));
            return 1;
        }
        snprintf(tmpdb, sizeof tmpdb, "%s/profile.db", tmpdir);
        if (rh_convert_file("rheaper", path, tmpdb, 0, 1, NULL) != 0)
            goto out;
        if (rh_lv_db_load(tmpdb, &m, NULL))
            goto out;
        snprintf(m.source, sizeof m.source, "%s", path);
    } else if (rh_lv_db_load(path, &m, NULL)) {
        goto out;
    }
    if (once) {
        rh_live_once_print(&m, json);
        rc = fflush(stdout) != 0;
    } else {
        rc = rh_lv_ui_run(&m, rh_view_refresh, (void *)(tmpdb[0] ? tmpdb : path), 0);
    }
out:
    rh_lv_model_clear(&m);
    if (tmpdb[0])
        unlink(tmpdb);
    if (tmpdir[0])
        rmdir(tmpdir);
    return rc;
}
