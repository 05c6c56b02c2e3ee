/* rh_bench.c: the benchmark driver: runs every variant of every workload
 * interleaved, measures each run, and writes one Markdown report.
 *
 * bench/bench.sh builds the workloads and calls this program; see
 * docs/benchmarks.md. Each workload is given as
 *
 *   --workload 'ID|TITLE|PAIRS|THREADS|PLAIN_BIN|RHEAPER_BIN|ARG ARG ...'
 *
 * (PAIRS > 0 marks a malloc+free loop: ns per pair is reported). The variants
 * are plain (PLAIN_BIN), off (RHEAPER_BIN, tracking off), on (RHEAPER_BIN with
 * RHEAPER_ENABLE=1), heaptrack and massif (both on PLAIN_BIN). For each workload
 * the driver runs round after round of A B C D E, so slow drift of the machine
 * hits every variant alike; then it runs rheaper-convert on the rip of the last
 * tracked run, interleaved with heaptrack_print on heaptrack's last trace.
 *
 * A run is measured from fork to wait4: wall with CLOCK_MONOTONIC, CPU as
 * user + sys of the child and everything it waited for (rusage), peak RSS as
 * the rusage maximum (for heaptrack that is the largest of its processes).
 * Events come from the rip file's TRAILER chunk; profile bytes from the size of
 * the files the run left. Medians, minima and maxima are over the runs.
 *
 * --events RIP prints the events of one rip file (its TRAILER) and exits.
 *
 * --check makes the exit status say whether every variant ran and produced
 * what it should (events > 0, a profile, a database); it asserts no timing.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rip_format.h"

#define RH_MAX_WL 16
#define RH_MAX_RUNS 64
#define RH_MAX_ARGS 32

enum { V_PLAIN, V_OFF, V_ON, V_HEAPTRACK, V_MASSIF, V_COUNT };
static const char *const rh_vname[V_COUNT] = {
    "plain", "rheaper-cc, tracking off", "rheaper-cc, `RHEAPER_ENABLE=1`", "heaptrack",
    "valgrind massif"};

/* One measured run. */
struct rh_run {
    double wall, cpu; /* seconds */
    long rss_kb;
    int ok;
};

/* All runs of one variant (or of one converter) of one workload. */
struct rh_series {
    struct rh_run run[RH_MAX_RUNS];
    int n;             /* runs done */
    int failed;        /* a run exited non-zero or was killed */
    int skipped;       /* not run; reason in why */
    char why[160];
    uint64_t events;   /* from the last run's rip (V_ON) */
    uint64_t bytes;    /* profile bytes of the last run */
};

struct rh_workload {
    char *id, *title;
    long pairs;
    int threads;
    char *plain, *rh;
    char *args[RH_MAX_ARGS];
    int nargs;
    struct rh_series v[V_COUNT];
    struct rh_series conv, htprint; /* rheaper-convert, heaptrack_print */
    uint64_t db_bytes;
    char rip[4096], ht[4096];
};

static struct rh_workload rh_wl[RH_MAX_WL];
static int rh_nwl;
static int rh_runs = 5;
static double rh_massif_limit = 120;
static const char *rh_work = ".", *rh_out, *rh_convert, *rh_heaptrack, *rh_htprint,
                  *rh_valgrind, *rh_machine = "";

static void rh_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rh_bench: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static double rh_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs argv with the extra environment entries env (NULL-terminated, "K=V" or
 * "K" to unset), stdout to /dev/null and stderr to errpath, killing it after
 * limit seconds (0: no limit). Fills r; returns 0 on exit status 0, 1 on a
 * non-zero exit or signal, 2 when killed at the limit. */
static int rh_measure(char *const argv[], char *const env[], const char *errpath, double limit,
                      struct rh_run *r)
{
    double t0 = rh_now_s();
    pid_t pid = fork();
    if (pid < 0)
        rh_die("fork: %s", strerror(errno));
    if (pid == 0) {
        for (int i = 0; env && env[i]; i++) {
            char *eq = strchr(env[i], '=');
            if (eq) {
                char *name = strndup(env[i], (size_t)(eq - env[i]));
                setenv(name, eq + 1, 1);
            } else {
                unsetenv(env[i]);
            }
        }
        int out = open("/dev/null", O_WRONLY);
        int err = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
            _exit(126);
        execvp(argv[0], argv);
        dprintf(2, "rh_bench: exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status = 0, killed = 0;
    struct rusage ru;
    for (;;) {
        pid_t w = wait4(pid, &status, limit > 0 ? WNOHANG : 0, &ru);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            rh_die("wait4: %s", strerror(errno));
        if (limit > 0 && rh_now_s() - t0 > limit && !killed) {
            kill(pid, SIGKILL);
            killed = 1;
        }
        if (limit > 0)
            usleep(2000);
    }
    double t1 = rh_now_s();
    /* wait4's rusage covers the child and the descendants it waited for, so
     * heaptrack's helper processes count in CPU, and ru_maxrss is the largest
     * of them. */
    r->wall = t1 - t0;
    r->cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 +
             (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
    r->rss_kb = ru.ru_maxrss;
    r->ok = !killed && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (killed)
        return 2;
    return r->ok ? 0 : 1;
}

/* Removes every regular file in dir (the profiles of the previous run). */
static void rh_clean_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    closedir(d);
}

/* The first file in dir whose name starts with prefix: path in out, size
 * returned (0 when none). */
static uint64_t rh_find_file(const char *dir, const char *prefix, char *out, size_t outsz)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    uint64_t size = 0;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, prefix, strlen(prefix))) {
            struct stat st;
            snprintf(out, outsz, "%s/%s", dir, e->d_name);
            if (stat(out, &st) == 0) {
                size = (uint64_t)st.st_size;
                break;
            }
        }
    closedir(d);
    return size;
}

/* Events recorded in a rip file, from its TRAILER chunk (0 when there is
 * none: the run did not close its profile). */
static uint64_t rh_rip_events(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    struct stat st;
    uint64_t events = 0;
    if (fstat(fd, &st) == 0) {
        uint64_t off = RIP_HEADER_SIZE;
        struct rip_chunk_header h;
        while (off + sizeof h <= (uint64_t)st.st_size &&
               pread(fd, &h, sizeof h, (off_t)off) == (ssize_t)sizeof h &&
               h.magic == RIP_CHUNK_MAGIC) {
            if (h.type == RIP_CHUNK_TRAILER && h.used >= 8 &&
                pread(fd, &events, 8, (off_t)(off + RIP_CHUNK_HDR_SIZE)) != 8)
                events = 0;
            off += (RIP_CHUNK_HDR_SIZE + (uint64_t)h.capacity + RIP_ALIGN - 1) & ~(uint64_t)(RIP_ALIGN - 1);
        }
    }
    close(fd);
    return events;
}

/* Runs variant v of workload w once. */
static void rh_run_variant(struct rh_workload *w, int v)
{
    struct rh_series *s = &w->v[v];
    if (s->skipped)
        return;
    char dir[4096], err[4096], outf[4096];
    snprintf(dir, sizeof dir, "%s/%s-%d", rh_work, w->id, v);
    mkdir(dir, 0755);
    rh_clean_dir(dir);
    snprintf(err, sizeof err, "%s.stderr", dir);
    char *argv[RH_MAX_ARGS + 8];
    char *env[4] = {"RHEAPER_ENABLE", NULL, NULL, NULL};
    char pdir[4200];
    int a = 0;
    double limit = 0;
    switch (v) {
    case V_PLAIN:
        argv[a++] = w->plain;
        break;
    case V_OFF:
        argv[a++] = w->rh;
        break;
    case V_ON:
        env[0] = "RHEAPER_ENABLE=1";
        snprintf(pdir, sizeof pdir, "RHEAPER_PROFILE_DIR=%s", dir);
        env[1] = pdir;
        argv[a++] = w->rh;
        break;
    case V_HEAPTRACK:
        snprintf(outf, sizeof outf, "%s/heaptrack", dir);
        argv[a++] = (char *)rh_heaptrack;
        argv[a++] = "-o";
        argv[a++] = outf;
        argv[a++] = w->plain;
        break;
    case V_MASSIF:
        snprintf(outf, sizeof outf, "--massif-out-file=%s/massif.out", dir);
        argv[a++] = (char *)rh_valgrind;
        argv[a++] = "-q";
        argv[a++] = "--tool=massif";
        argv[a++] = outf;
        argv[a++] = w->plain;
        limit = rh_massif_limit;
        break;
    }
    for (int i = 0; i < w->nargs; i++)
        argv[a++] = w->args[i];
    argv[a] = NULL;
    struct rh_run *r = &s->run[s->n];
    int rc = rh_measure(argv, env, err, limit, r);
    if (rc == 2) {
        s->skipped = 1;
        snprintf(s->why, sizeof s->why, "skipped: a run took more than %.0f s", limit);
        s->n = 0;
        return;
    }
    if (rc != 0) {
        s->failed = 1;
        fprintf(stderr, "rh_bench: %s / %s failed; see %s\n", w->id, rh_vname[v], err);
        return;
    }
    s->n++;
    char path[4096];
    if (v == V_ON) {
        s->bytes = rh_find_file(dir, "rip-", path, sizeof path);
        s->events = rh_rip_events(path);
        snprintf(w->rip, sizeof w->rip, "%s", path);
    } else if (v == V_HEAPTRACK) {
        s->bytes = rh_find_file(dir, "heaptrack", path, sizeof path);
        snprintf(w->ht, sizeof w->ht, "%s", path);
    } else if (v == V_MASSIF) {
        s->bytes = rh_find_file(dir, "massif", path, sizeof path);
    }
}

/* Converts w's last rip (and runs heaptrack_print on its trace), once. */
static void rh_run_convert(struct rh_workload *w)
{
    char db[4200], err[4200];
    snprintf(db, sizeof db, "%s/%s.db", rh_work, w->id);
    snprintf(err, sizeof err, "%s/%s-convert.stderr", rh_work, w->id);
    if (!w->conv.skipped && w->rip[0]) {
        unlink(db);
        char *argv[] = {(char *)rh_convert, "--quiet", w->rip, db, NULL};
        if (rh_measure(argv, NULL, err, 0, &w->conv.run[w->conv.n]) == 0) {
            w->conv.n++;
            struct stat st;
            w->db_bytes = stat(db, &st) == 0 ? (uint64_t)st.st_size : 0;
        } else {
            w->conv.failed = 1;
            fprintf(stderr, "rh_bench: rheaper-convert of %s failed; see %s\n", w->rip, err);
        }
    }
    if (!w->htprint.skipped && w->ht[0]) {
        snprintf(err, sizeof err, "%s/%s-htprint.stderr", rh_work, w->id);
        char *argv[] = {(char *)rh_htprint, w->ht, NULL};
        if (rh_measure(argv, NULL, err, 0, &w->htprint.run[w->htprint.n]) == 0)
            w->htprint.n++;
        else
            w->htprint.failed = 1;
    }
}

static int rh_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median, min and max of field `which` (0 wall, 1 cpu, 2 rss) over s's runs. */
static double rh_stat(const struct rh_series *s, int which, double *mn, double *mx)
{
    double v[RH_MAX_RUNS];
    for (int i = 0; i < s->n; i++)
        v[i] = which == 0   ? s->run[i].wall
               : which == 1 ? s->run[i].cpu
                            : (double)s->run[i].rss_kb;
    qsort(v, (size_t)s->n, sizeof v[0], rh_cmp_double);
    if (mn)
        *mn = s->n ? v[0] : 0;
    if (mx)
        *mx = s->n ? v[s->n - 1] : 0;
    if (!s->n)
        return 0;
    return s->n % 2 ? v[s->n / 2] : (v[s->n / 2 - 1] + v[s->n / 2]) / 2;
}

static struct rh_workload *rh_find_wl(const char *id)
{
    for (int i = 0; i < rh_nwl; i++)
        if (!strcmp(rh_wl[i].id, id))
            return &rh_wl[i];
    return NULL;
}

/* Ratio of variant v's median to plain's for field which (0 wall, 1 cpu). */
static double rh_ratio(const struct rh_workload *w, int v, int which)
{
    double p = rh_stat(&w->v[V_PLAIN], which, NULL, NULL);
    double x = rh_stat(&w->v[v], which, NULL, NULL);
    return p > 0 && w->v[v].n ? x / p : 0;
}

/* ns per malloc+free pair per thread: wall median / pairs. */
static double rh_ns_pair(const struct rh_workload *w, int v)
{
    if (!w || w->pairs <= 0 || !w->v[v].n)
        return 0;
    return rh_stat(&w->v[v], 0, NULL, NULL) * 1e9 / (double)w->pairs;
}

static void rh_report_workload(FILE *f, const struct rh_workload *w)
{
    fprintf(f, "\n### %s\n\n", w->title);
    fprintf(f, "| variant | wall median (s) | wall min–max | wall / plain | CPU median (s) | "
               "CPU min–max | CPU / plain | peak RSS (MiB) | events | profile bytes | "
               "bytes/event |\n");
    fprintf(f, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    const struct rh_series *on = &w->v[V_ON];
    for (int v = 0; v < V_COUNT; v++) {
        const struct rh_series *s = &w->v[v];
        if (s->skipped || !s->n) {
            fprintf(f, "| %s | %s |  |  |  |  |  |  |  |  |  |\n", rh_vname[v],
                    s->skipped ? s->why : "failed");
            continue;
        }
        double wmn, wmx, cmn, cmx;
        double wm = rh_stat(s, 0, &wmn, &wmx), cm = rh_stat(s, 1, &cmn, &cmx);
        double rss = rh_stat(s, 2, NULL, NULL) / 1024.0;
        fprintf(f, "| %s | %.3f | %.3f–%.3f | %.2f | %.3f | %.3f–%.3f | %.2f | %.1f |", rh_vname[v],
                wm, wmn, wmx, rh_ratio(w, v, 0), cm, cmn, cmx, rh_ratio(w, v, 1), rss);
        if (v == V_ON)
            fprintf(f, " %llu | %llu | %.2f |\n", (unsigned long long)s->events,
                    (unsigned long long)s->bytes,
                    s->events ? (double)s->bytes / (double)s->events : 0.0);
        else if ((v == V_HEAPTRACK || v == V_MASSIF) && s->bytes)
            fprintf(f, " (%llu)¹ | %llu | %.2f¹ |\n", (unsigned long long)on->events,
                    (unsigned long long)s->bytes,
                    on->events ? (double)s->bytes / (double)on->events : 0.0);
        else
            fprintf(f, " — | — | — |\n");
    }
}

static void rh_report(FILE *f)
{
    fprintf(f, "## Benchmark results\n\n");
    fprintf(f, "%d interleaved runs per variant (medians; min–max beside them)%s%s.\n", rh_runs,
            rh_machine[0] ? "; " : "", rh_machine);
    for (int i = 0; i < rh_nwl; i++)
        rh_report_workload(f, &rh_wl[i]);
    fprintf(f, "\n¹ heaptrack's and massif's own output files, divided by the events rheaper "
               "recorded for the same workload (those tools count no frees or times).\n");

    fprintf(f, "\n### Conversion (%d runs each, interleaved)\n\n", rh_runs);
    fprintf(f, "| workload | events | rheaper-convert wall (s) | min–max | events/s | peak RSS "
               "(MiB) | database bytes | heaptrack_print wall (s) | heaptrack_print peak RSS "
               "(MiB) |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (int i = 0; i < rh_nwl; i++) {
        const struct rh_workload *w = &rh_wl[i];
        if (!w->conv.n) {
            fprintf(f, "| %s | %s |  |  |  |  |  |  |  |\n", w->id,
                    w->conv.failed ? "failed" : "no profile");
            continue;
        }
        double mn, mx, m = rh_stat(&w->conv, 0, &mn, &mx);
        fprintf(f, "| %s | %llu | %.3f | %.3f–%.3f | %.2f M | %.1f | %llu |", w->id,
                (unsigned long long)w->v[V_ON].events, m, mn, mx,
                m > 0 ? (double)w->v[V_ON].events / m / 1e6 : 0.0,
                rh_stat(&w->conv, 2, NULL, NULL) / 1024.0, (unsigned long long)w->db_bytes);
        if (w->htprint.n)
            fprintf(f, " %.3f | %.1f |\n", rh_stat(&w->htprint, 0, NULL, NULL),
                    rh_stat(&w->htprint, 2, NULL, NULL) / 1024.0);
        else
            fprintf(f, " — | — |\n");
    }

    /* ns per pair: the synthetic workloads "synth-1t" and "synth-2t". */
    const struct rh_workload *w1 = rh_find_wl("synth-1t"), *w2 = rh_find_wl("synth-2t");
    if (w1 && w2) {
        fprintf(f, "\n### ns per malloc+free pair (workload 1, wall median / pairs per thread)\n\n"
                   "| variant | 1 thread | 2 threads, per thread | 2 threads / 1 thread |\n"
                   "|---|--:|--:|--:|\n");
        for (int v = 0; v < V_COUNT; v++) {
            double a = rh_ns_pair(w1, v), b = rh_ns_pair(w2, v);
            if (a > 0 && b > 0)
                fprintf(f, "| %s | %.1f | %.1f | %.2f |\n", rh_vname[v], a, b, b / a);
            else
                fprintf(f, "| %s | — | — | — |\n", rh_vname[v]);
        }
    }

    /* The benchmark's targets, from the figures above. */
    const struct rh_workload *lua = rh_find_wl("lua"), *deep = rh_find_wl("deep");
    const struct rh_workload *tw = lua && lua->v[V_ON].n ? lua : w1;
    if (!tw)
        return;
    fprintf(f, "\n### Targets (workload `%s` unless named)\n\n| figure | target | measured |\n"
               "|---|--:|--:|\n", tw->id);
    fprintf(f, "| tracked / plain, wall | ≤ 1.5 | %.2f |\n", rh_ratio(tw, V_ON, 0));
    fprintf(f, "| tracked / plain, CPU | ≤ 1.5 | %.2f |\n", rh_ratio(tw, V_ON, 1));
    fprintf(f, "| tracking off / plain, wall | ≤ 1.02 | %.3f |\n", rh_ratio(tw, V_OFF, 0));
    fprintf(f, "| rip bytes per event | ≤ 6 | %.2f |\n",
            tw->v[V_ON].events ? (double)tw->v[V_ON].bytes / (double)tw->v[V_ON].events : 0.0);
    double cm = rh_stat(&tw->conv, 0, NULL, NULL);
    fprintf(f, "| rheaper-convert events/s | ≥ 1.5 M | %.2f M |\n",
            cm > 0 ? (double)tw->v[V_ON].events / cm / 1e6 : 0.0);
    if (w1 && w2 && rh_ns_pair(w1, V_ON) > 0)
        fprintf(f, "| 2 threads / 1 thread, ns per pair per thread (tracked) | ≤ 1.3 | %.2f |\n",
                rh_ns_pair(w2, V_ON) / rh_ns_pair(w1, V_ON));
    if (deep)
        fprintf(f, "| workload 3 (deep) tracked / plain, wall | ≤ 2.0 | %.2f |\n",
                rh_ratio(deep, V_ON, 0));
}

/* --check: every variant that was not skipped ran every round, the tracked
 * run recorded events and left a profile, and the conversion produced a
 * database. Returns the number of problems (each printed). */
static int rh_check(void)
{
    int bad = 0;
    for (int i = 0; i < rh_nwl; i++) {
        struct rh_workload *w = &rh_wl[i];
        for (int v = 0; v < V_COUNT; v++) {
            struct rh_series *s = &w->v[v];
            if (s->skipped) {
                printf("rh_bench: note: %s / %s %s\n", w->id, rh_vname[v], s->why);
                continue;
            }
            if (s->failed || s->n != rh_runs) {
                printf("FAIL: %s / %s ran %d of %d times\n", w->id, rh_vname[v], s->n, rh_runs);
                bad++;
            }
        }
        if (!w->v[V_ON].events || !w->v[V_ON].bytes) {
            printf("FAIL: %s: the tracked run recorded no events\n", w->id);
            bad++;
        }
        if (w->conv.n != rh_runs || !w->db_bytes) {
            printf("FAIL: %s: rheaper-convert did not produce a database\n", w->id);
            bad++;
        }
    }
    return bad;
}

/* Splits 'ID|TITLE|PAIRS|THREADS|PLAIN|RH|ARGS' into a workload. */
static void rh_parse_workload(char *spec)
{
    if (rh_nwl == RH_MAX_WL)
        rh_die("too many workloads");
    struct rh_workload *w = &rh_wl[rh_nwl++];
    char *f[7];
    for (int i = 0; i < 7; i++) {
        f[i] = strsep(&spec, "|");
        if (!f[i])
            rh_die("--workload needs 7 fields separated by |");
    }
    w->id = f[0];
    w->title = f[1];
    w->pairs = atol(f[2]);
    w->threads = atoi(f[3]);
    w->plain = f[4];
    w->rh = f[5];
    for (char *t; (t = strsep(&f[6], " "));)
        if (*t) {
            if (w->nargs == RH_MAX_ARGS)
                rh_die("too many arguments in workload %s", w->id);
            w->args[w->nargs++] = t;
        }
}

int main(int argc, char **argv)
{
    int check = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--check")) {
            check = 1;
            continue;
        }
        if (!val)
            rh_die("%s needs a value", a);
        i++;
        if (!strcmp(a, "--events")) { /* breakdown.sh: a rip file's events */
            printf("%llu\n", (unsigned long long)rh_rip_events(val));
            return 0;
        }
        if (!strcmp(a, "--runs"))
            rh_runs = atoi(val);
        else if (!strcmp(a, "--work"))
            rh_work = val;
        else if (!strcmp(a, "--out"))
            rh_out = val;
        else if (!strcmp(a, "--convert"))
            rh_convert = val;
        else if (!strcmp(a, "--heaptrack"))
            rh_heaptrack = *val ? val : NULL;
        else if (!strcmp(a, "--heaptrack-print"))
            rh_htprint = *val ? val : NULL;
        else if (!strcmp(a, "--valgrind"))
            rh_valgrind = *val ? val : NULL;
        else if (!strcmp(a, "--massif-limit"))
            rh_massif_limit = atof(val);
        else if (!strcmp(a, "--machine"))
            rh_machine = val;
        else if (!strcmp(a, "--workload"))
            rh_parse_workload(argv[i]);
        else
            rh_die("unknown option %s", a);
    }
    if (rh_runs < 1 || rh_runs > RH_MAX_RUNS || !rh_out || !rh_convert || !rh_nwl)
        rh_die("usage: rh_bench --runs N --out FILE --convert PATH [--work DIR] "
               "[--heaptrack PATH] [--heaptrack-print PATH] [--valgrind PATH] "
               "[--massif-limit S] [--machine TEXT] [--check] --workload SPEC ...");
    mkdir(rh_work, 0755);
    for (int i = 0; i < rh_nwl; i++) {
        struct rh_workload *w = &rh_wl[i];
        if (!rh_heaptrack) {
            w->v[V_HEAPTRACK].skipped = 1;
            snprintf(w->v[V_HEAPTRACK].why, sizeof w->v[0].why, "skipped: heaptrack not found");
        }
        if (!rh_valgrind) {
            w->v[V_MASSIF].skipped = 1;
            snprintf(w->v[V_MASSIF].why, sizeof w->v[0].why, "skipped: valgrind not found");
        }
        if (!rh_htprint)
            w->htprint.skipped = 1;
        for (int r = 0; r < rh_runs; r++) {
            fprintf(stderr, "rh_bench: %s round %d/%d\n", w->id, r + 1, rh_runs);
            for (int v = 0; v < V_COUNT; v++)
                rh_run_variant(w, v);
        }
        for (int r = 0; r < rh_runs; r++)
            rh_run_convert(w);
    }
    FILE *f = fopen(rh_out, "w");
    if (!f)
        rh_die("cannot write %s: %s", rh_out, strerror(errno));
    rh_report(f);
    if (fclose(f) != 0)
        rh_die("cannot write %s: %s", rh_out, strerror(errno));
    rh_report(stdout);
    return check ? (rh_check() ? 1 : 0) : 0;
}
