/* rh_push_cmd.c: `rheaper push`, profiles into ClickHouse.
 *
 *     rheaper push PROFILE... --clickhouse URL [--database DB]
 *                 [--label KEY=VALUE]... [--quiet]
 *
 * PROFILE is a profile.db, or a rip file (rip-<pid>, or one received by
 * rheaper collect), which is first converted into a database in a private
 * temporary directory and removed after the push. Each profile is pushed on
 * its own (rh_push_db): one that fails is reported in one line and the next
 * is still pushed; the exit status is 1 when any failed. A profile the server
 * has already is reported as such and not sent again. The labels (host=,
 * service=, build=, anything) go into the `profiles` row; `host` defaults to
 * the sender of a collected profile, else to this machine's name.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rh_convert.h"
#include "rh_push.h"
#include "rh_safefile.h"
#include "rip_format.h"

static int rh_push_usage(void)
{
    fputs("usage: rheaper push PROFILE... --clickhouse URL [--database DB]\n"
          "                    [--label KEY=VALUE]... [--quiet]\n"
          "  sends each profile (a profile.db, or a rip converted first) to a ClickHouse\n"
          "  server's HTTP interface (http://HOST:8123/), into database DB (default\n"
          "  rheaper), creating the tables when missing. A profile already there is not\n"
          "  sent again. Credentials: RHEAPER_CLICKHOUSE_USER and RHEAPER_CLICKHOUSE_PASSWORD\n"
          "  or RHEAPER_CLICKHOUSE_PASSWORD_FILE (never on the command line).\n",
          stderr);
    return 2;
}

int rh_push_label_arg(const char *prog, const char *arg, struct rh_push_labels *l)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) {
        fprintf(stderr, "%s: --label %s: expected KEY=VALUE\n", prog, arg);
        return -1;
    }
    if (l->n == RH_PUSH_MAX_LABELS) {
        fprintf(stderr, "%s: at most %d labels\n", prog, RH_PUSH_MAX_LABELS);
        return -1;
    }
    char *k = strndup(arg, (size_t)(eq - arg));
    if (!k) {
        fprintf(stderr, "%s: out of memory\n", prog);
        return -1;
    }
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->key[i], k)) { /* the last one given wins */
            free(k);
            l->value[i] = eq + 1;
            return 0;
        }
    l->key[l->n] = k;
    l->value[l->n++] = eq + 1;
    return 0;
}

/* 1 when the file at path starts like a rip file, 0 when not, -1 when it is
 * not a regular file one may read (err says why: a FIFO, a device or a
 * symlink in a collector's directory cannot block or redirect a push). */
static int rh_push_is_rip(const char *path, char *err, size_t errlen)
{
    char magic[8];
    int fd = rh_safe_open(path, O_RDONLY, 0, RH_SAFE_REGULAR, 0, err, errlen);
    if (fd < 0)
        return -1;
    ssize_t n = pread(fd, magic, sizeof magic, 0);
    close(fd);
    return n == (ssize_t)sizeof magic && !memcmp(magic, RIP_MAGIC, sizeof magic);
}

int rh_push_path(const char *prog, const char *path, const struct rh_push_opts *o)
{
    char err[1200];
    char dir[4096] = "", db[4200] = "";
    const char *dbp = path;
    if (access(path, R_OK) != 0) {
        fprintf(stderr, "%s: %s: cannot read (%s)\n", prog, path, strerror(errno));
        return 1;
    }
    int isrip = rh_push_is_rip(path, err, sizeof err);
    if (isrip < 0) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return 1;
    }
    if (isrip) {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/rheaper-push.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            fprintf(stderr, "%s: %s: cannot create a directory (%s)\n", prog, dir, strerror(errno));
            return 1;
        }
        snprintf(db, sizeof db, "%s/profile.db", dir);
        if (rh_convert_file(prog, path, db, 0, 1, NULL) != 0) {
            fprintf(stderr, "%s: %s: not pushed (the conversion failed)\n", prog, path);
            rmdir(dir);
            return 1;
        }
        dbp = db;
    }
    int rc = 1;
    struct rh_ch *c = rh_ch_open(o->url, o->database ? o->database : "rheaper", err, sizeof err);
    if (!c) {
        fprintf(stderr, "%s: %s\n", prog, err);
    } else {
        struct rh_push_result r;
        if (rh_push_db(c, dbp, &o->labels, &r, err, sizeof err) != 0) {
            fprintf(stderr, "%s: %s: not pushed: %s\n", prog, path, err);
        } else {
            rc = 0;
            if (r.already && !o->quiet)
                printf("%s: %s: already in %s as profile %llu; nothing sent\n", prog, path, o->url,
                       (unsigned long long)r.profile);
            else if (!o->quiet)
                printf("%s: %s: pushed as profile %llu: %llu allocations, %llu rows in %.2f s"
                       " (allocations at %.0f rows/s)\n",
                       prog, path, (unsigned long long)r.profile, (unsigned long long)r.allocations,
                       (unsigned long long)r.rows, r.seconds,
                       r.alloc_seconds > 0 ? (double)r.allocations / r.alloc_seconds : 0.0);
            fflush(stdout);
        }
        rh_ch_close(c);
    }
    if (*dir) {
        unlink(db);
        rmdir(dir);
    }
    return rc;
}

int rh_cmd_push(int argc, char **argv)
{
    struct rh_push_opts o = {0};
    const char **paths = calloc((size_t)argc, sizeof *paths);
    int n = 0, dashdash = 0, rc = 0;
    if (!paths) {
        fprintf(stderr, "rheaper push: out of memory\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!dashdash && a[0] == '-' && a[1]) {
            if (!strcmp(a, "--clickhouse") && i + 1 < argc) {
                o.url = argv[++i];
            } else if (!strcmp(a, "--database") && i + 1 < argc) {
                o.database = argv[++i];
            } else if (!strcmp(a, "--label") && i + 1 < argc) {
                if (rh_push_label_arg("rheaper push", argv[++i], &o.labels)) {
                    rc = 2;
                    goto out;
                }
            } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
                o.quiet = 1;
            } else if (!strcmp(a, "--")) {
                dashdash = 1;
            } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
                rh_push_usage();
                goto out;
            } else {
                fprintf(stderr, "rheaper push: unknown option %s\n", a);
                rc = rh_push_usage();
                goto out;
            }
            continue;
        }
        paths[n++] = a;
    }
    if (!o.url || !n) {
        fprintf(stderr, "rheaper push: %s\n",
                !o.url ? "--clickhouse URL is required" : "expected at least one PROFILE");
        rc = rh_push_usage();
        goto out;
    }
    for (int i = 0; i < n; i++)
        if (rh_push_path("rheaper push", paths[i], &o) != 0)
            rc = 1;
out:
    for (int i = 0; i < o.labels.n; i++)
        free((char *)o.labels.key[i]);
    free(paths);
    return rc;
}
