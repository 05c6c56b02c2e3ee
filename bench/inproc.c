/* inproc.c: the in-process interleaved benchmark of full recording's cost
 * (docs/benchmarks.md, "Cost of recording, measured in one process").
 *
 *   inproc --workload lua|synth [--script FILE] [--size N] [--rounds N]
 *          [--warmup N] [--dir DIR] [--modes LIST] [--keep]
 *
 * Whole-process A/B runs on a shared 2-core VM are noise: the same plain run
 * takes anywhere from 0.7 to 1.5 s within an hour. This driver instead holds
 * every variant in one process and runs a short workload (a Lua script, or
 * the synthetic malloc/free loop) round after round, every variant once per
 * round in a rotating order, timing each run with the thread's CPU clock
 * (CLOCK_THREAD_CPUTIME_ID: user + system time of this thread alone, page
 * faults included, other processes' time excluded). The minimum and the 10th
 * percentile of 100+ runs of a few milliseconds are what the machine gives
 * when it leaves the thread alone, and the variants see the same machine.
 *
 * bench/inproc.sh builds it: the workload's object is linked in three copies
 * of identical machine code, whose allocator calls differ:
 *   plain        glibc's __libc_malloc and friends, directly (no wrap, no
 *                interposition): what the program costs without rheaper;
 *   floor-*      bench/floor.c's recorder (its wrappers renamed), in its mode
 *                0 (pass-through), 1 (clock + 24-byte store) or 2 (clock +
 *                store + frame-pointer walk), switched with floor_set_mode;
 *   rheaper      the program's malloc as rheaper-cc links it (--wrap, the
 *                runtime linked in), with tracking off, on (full), sampled
 *                by bytes (RHEAPER_SAMPLE_BYTES=524288, which the driver puts
 *                in its environment and re-executes itself with) or sampled
 *                by rate (0.01), switched with rheaper_enable/rheaper_disable
 *                between runs; each recording goes to a new profile in DIR,
 *                removed after its run (--keep leaves the last full one).
 * The enable and disable are outside the timed part. In "full" a run is a new
 * recording's first milliseconds: its first chunks and every stack new to its
 * stack table are inside the timed part. "full-warm" runs the workload twice
 * in one recording and times the second run, the steady state of a long
 * recording (its stacks known, its chunks still fresh file pages).
 *
 * Prints a Markdown table (min, p10, median thread-CPU ms per run, their
 * ratios to tracking off, the median's ratio to plain, page faults per run)
 * and one line per mode, "ratio WORKLOAD MODE min X p10 Y median Z" (ratios
 * to tracking off), for scripts. Fails (exit 1, a "FAIL:" line) when a run
 * computes another result than the first run (every copy and mode must agree),
 * a recording cannot start, or a full recording writes no profile; it asserts
 * no timing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rheaper.h"

/* The copies (bench/inproc.sh renames each copy's entry point). */
int inproc_lua_plain(const char *src, size_t len, const char *name, long n, long long *sum);
int inproc_lua_floor(const char *src, size_t len, const char *name, long n, long long *sum);
int inproc_lua_rh(const char *src, size_t len, const char *name, long n, long long *sum);
long long inproc_synth_plain(long pairs);
long long inproc_synth_floor(long pairs);
long long inproc_synth_rh(long pairs);
void floor_set_mode(int m);

enum { M_PLAIN, M_OFF, M_FULL, M_WARM, M_SAMPLED, M_RATE, M_FPASS, M_FCLOCK, M_FWALK, M_COUNT };
static const char *const mode_name[M_COUNT] = {"plain",      "off",         "full",
                                               "full-warm",  "sampled",     "sampled-rate",
                                               "floor-pass", "floor-clock", "floor-walk"};
static const char *const mode_title[M_COUNT] = {
    "plain (glibc, no wraps)",
    "rheaper, tracking off",
    "rheaper, full recording (a new recording)",
    "rheaper, full recording (its second run)",
    "rheaper, sampled (`RHEAPER_SAMPLE_BYTES=524288`)",
    "rheaper, sampled (rate 0.01)",
    "floor: pass-through wrappers",
    "floor: clock + store",
    "floor: clock + store + walk",
};

#define MAX_ROUNDS 2000

struct series {
    double cpu[MAX_ROUNDS], wall[MAX_ROUNDS], faults[MAX_ROUNDS], bytes[MAX_ROUNDS];
    int n;
};

static struct series ser[M_COUNT];
static int want[M_COUNT];
static int is_lua = 1;
static long size_arg;
static const char *script_src, *script_name = "alloc.lua", *dir = ".";
static size_t script_len;
static int keep;
static char kept[4096];

static void fail(const char *fmt, const char *a)
{
    printf("FAIL: ");
    printf(fmt, a);
    printf("\n");
    fflush(stdout);
    exit(1);
}

static double now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The one place the statistics are computed: min, 10th percentile (the
 * nearest rank at or below 10 % of the way from the smallest) and median of
 * v[0..n), n >= 1. v is left as it was. */
static void stats(const double *v, int n, double *mn, double *p10, double *med)
{
    static double s[MAX_ROUNDS];
    memcpy(s, v, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_dbl);
    *mn = s[0];
    *p10 = s[(n - 1) / 10];
    *med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* One run of the workload in copy c (0 plain, 1 floor, 2 rheaper); returns
 * its checksum. */
static long long workload(int c)
{
    if (!is_lua)
        return c == 0   ? inproc_synth_plain(size_arg)
               : c == 1 ? inproc_synth_floor(size_arg)
                        : inproc_synth_rh(size_arg);
    long long sum = -1;
    int rc = c == 0   ? inproc_lua_plain(script_src, script_len, script_name, size_arg, &sum)
             : c == 1 ? inproc_lua_floor(script_src, script_len, script_name, size_arg, &sum)
                      : inproc_lua_rh(script_src, script_len, script_name, size_arg, &sum);
    if (rc != 0)
        fail("the Lua script failed in copy %s", c == 0 ? "plain" : c == 1 ? "floor" : "rheaper");
    return sum;
}

static long long expect_sum;
static int have_sum;

/* Runs mode m once; record: keep its figures. */
static void one(int m, int record)
{
    int copy = m == M_PLAIN ? 0 : m >= M_FPASS ? 1 : 2;
    if (copy == 1)
        floor_set_mode(m - M_FPASS);
    int rec = m == M_FULL || m == M_WARM || m == M_SAMPLED || m == M_RATE;
    if (rec) {
        struct rheaper_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.profile_dir = dir;
        /* 1.0 records everything even with RHEAPER_SAMPLE_BYTES set; 0 takes
         * the environment's sampling by bytes */
        cfg.sample_rate = m == M_FULL || m == M_WARM ? 1.0 : m == M_RATE ? 0.01 : 0.0;
        int rc = rheaper_enable(&cfg);
        if (rc != RHEAPER_OK)
            fail("rheaper_enable: %s", rheaper_strerror(rc));
    }
    /* full-warm: the same workload twice, from this one call site (another
     * call site would make every stack of the second run new); the last run
     * is timed */
    struct rusage r0, r1;
    double w0 = 0, t0 = 0, t1 = 0, w1 = 0;
    long long sum = 0;
    volatile int reps = m == M_WARM ? 2 : 1;
    for (int k = 0; k < reps; k++) {
        int timed = k == reps - 1;
        if (timed) {
            getrusage(RUSAGE_THREAD, &r0);
            w0 = now_ns(CLOCK_MONOTONIC);
            t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        }
        long long s1 = workload(copy);
        if (timed) {
            t1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
            w1 = now_ns(CLOCK_MONOTONIC);
            getrusage(RUSAGE_THREAD, &r1);
        } else if (have_sum && s1 != expect_sum) {
            fail("%s", "mode full-warm computed another result than the first run");
        }
        sum = s1;
    }
    double bytes = 0;
    if (rec) {
        if (rheaper_disable() != RHEAPER_OK)
            fail("rheaper_disable failed in mode %s", mode_name[m]);
        const char *p = rheaper_profile_path();
        struct stat st;
        if (!p || !*p || stat(p, &st) != 0)
            fail("no profile after a run in mode %s", mode_name[m]);
        bytes = (double)st.st_size;
        if (m == M_FULL && keep) {
            if (*kept)
                unlink(kept);
            snprintf(kept, sizeof kept, "%s", p);
        } else {
            unlink(p);
        }
    }
    if (!have_sum) {
        expect_sum = sum;
        have_sum = 1;
    } else if (sum != expect_sum) {
        fail("mode %s computed another result than the first run", mode_name[m]);
    }
    if (!record)
        return;
    struct series *s = &ser[m];
    s->cpu[s->n] = t1 - t0;
    s->wall[s->n] = w1 - w0;
    s->faults[s->n] = (double)((r1.ru_minflt - r0.ru_minflt) + (r1.ru_majflt - r0.ru_majflt));
    s->bytes[s->n] = bytes;
    s->n++;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail("cannot open the script %s", path);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

static void loadavg(char *out, size_t n)
{
    snprintf(out, n, "?");
    int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t k = read(fd, out, n - 1);
    close(fd);
    if (k <= 0)
        return;
    out[k] = 0;
    /* the three averages */
    char *p = out;
    for (int sp = 0; *p; p++)
        if (*p == ' ' && ++sp == 3)
            break;
    *p = 0;
}

/* The environment the driver runs in: sampling by bytes configured (only the
 * environment sets it), tracking not started by RHEAPER_ENABLE, the runtime's
 * "wrote ..." lines off. Re-executes itself once to get it. */
static void settle_env(char **argv)
{
    const char *e = getenv("RHEAPER_ENABLE");
    if (getenv("RHEAPER_SAMPLE_BYTES") && !(e && *e && strcmp(e, "0")))
        return;
    if (getenv("INPROC_REEXEC"))
        fail("%s", "the environment did not take RHEAPER_SAMPLE_BYTES");
    setenv("RHEAPER_SAMPLE_BYTES", "524288", 1);
    unsetenv("RHEAPER_SAMPLE_RATE");
    unsetenv("RHEAPER_ENABLE");
    if (!getenv("RHEAPER_LOG"))
        setenv("RHEAPER_LOG", "off", 1);
    setenv("INPROC_REEXEC", "1", 1);
    execv("/proc/self/exe", argv);
    fail("re-executing the driver: %s", strerror(errno));
}

int main(int argc, char **argv)
{
    settle_env(argv);
    int rounds = 150, warmup = 3;
    const char *script = NULL, *modes = NULL, *wl = "lua";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--keep")) {
            keep = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "inproc: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--workload"))
            wl = v;
        else if (!strcmp(a, "--script"))
            script = v;
        else if (!strcmp(a, "--size"))
            size_arg = atol(v);
        else if (!strcmp(a, "--rounds"))
            rounds = atoi(v);
        else if (!strcmp(a, "--warmup"))
            warmup = atoi(v);
        else if (!strcmp(a, "--dir"))
            dir = v;
        else if (!strcmp(a, "--modes"))
            modes = v;
        else {
            fprintf(stderr, "usage: inproc --workload lua|synth [--script FILE] [--size N] "
                            "[--rounds N] [--warmup N] [--dir DIR] [--modes LIST] [--keep]\n");
            return 2;
        }
    }
    if (!strcmp(wl, "synth"))
        is_lua = 0;
    else if (strcmp(wl, "lua"))
        fail("unknown workload %s (lua or synth)", wl);
    if (rounds < 1 || rounds > MAX_ROUNDS || warmup < 0)
        fail("%s", "--rounds must be 1 to 2000, --warmup 0 or more");
    if (!size_arg)
        size_arg = is_lua ? 5000 : 50000;
    if (is_lua) {
        if (!script)
            fail("%s", "--workload lua needs --script FILE");
        script_src = read_file(script, &script_len);
        const char *b = strrchr(script, '/');
        script_name = b ? b + 1 : script;
    }
    int nm = 0, order[M_COUNT];
    for (int m = 0; m < M_COUNT; m++) {
        if (modes) {
            char list[512];
            snprintf(list, sizeof list, ",%s,", modes);
            char key[64];
            snprintf(key, sizeof key, ",%s,", mode_name[m]);
            want[m] = strstr(list, key) != NULL;
        } else {
            want[m] = 1;
        }
        if (want[m])
            order[nm++] = m;
    }
    if (!want[M_OFF])
        fail("%s", "the modes must include off (the ratios' baseline)");

    char la0[128], la1[128];
    loadavg(la0, sizeof la0);
    struct rusage u0, u1;
    getrusage(RUSAGE_SELF, &u0);
    for (int r = 0; r < warmup + rounds; r++)
        for (int k = 0; k < nm; k++)
            one(order[(k + r) % nm], r >= warmup); /* rotate: no variant always first */
    getrusage(RUSAGE_SELF, &u1);
    loadavg(la1, sizeof la1);

    const struct series *off = &ser[M_OFF], *pl = want[M_PLAIN] ? &ser[M_PLAIN] : NULL;
    double omin, op10, omed, pmin = 0, pp10 = 0, pmed = 0, x, y, z;
    stats(off->cpu, off->n, &omin, &op10, &omed);
    if (pl)
        stats(pl->cpu, pl->n, &pmin, &pp10, &pmed);
    double owmin, owp10, owmed;
    stats(off->wall, off->n, &owmin, &owp10, &owmed);
    printf("workload %s, size %ld, %d rounds (+%d warm-up) of %d modes, rotating order\n",
           is_lua ? script_name : "synthetic loop", size_arg, rounds, warmup, nm);
    printf("load average before %s, after %s; involuntary context switches %ld\n", la0, la1,
           u1.ru_nivcsw - u0.ru_nivcsw);
    printf("checksum %lld (every run of every mode)\n\n", expect_sum);
    printf("| mode | min ms | p10 ms | median ms | min / off | p10 / off | median / off | "
           "median / plain | wall median / off | page faults per run | profile bytes |\n");
    printf("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (int k = 0; k < M_COUNT; k++) {
        if (!want[k])
            continue;
        const struct series *s = &ser[k];
        double mn, p10, med, wmn, wp10, wmed, fmn, fp10, fmed, bmn, bp10, bmed;
        stats(s->cpu, s->n, &mn, &p10, &med);
        stats(s->wall, s->n, &wmn, &wp10, &wmed);
        stats(s->faults, s->n, &fmn, &fp10, &fmed);
        stats(s->bytes, s->n, &bmn, &bp10, &bmed);
        char pr[32] = "", by[32] = "";
        if (pl)
            snprintf(pr, sizeof pr, "%.3f", med / pmed);
        if (bmed > 0)
            snprintf(by, sizeof by, "%.0f", bmed);
        printf("| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %s | %.3f | %.0f | %s |\n",
               mode_title[k], mn / 1e6, p10 / 1e6, med / 1e6, mn / omin, p10 / op10, med / omed, pr,
               wmed / owmed, fmed, by);
        if ((k == M_FULL || k == M_WARM) && bmed <= 0)
            fail("%s", "full recording wrote empty profiles");
    }
    printf("\n");
    for (int k = 0; k < M_COUNT; k++) {
        if (!want[k])
            continue;
        stats(ser[k].cpu, ser[k].n, &x, &y, &z);
        printf("ratio %s %s min %.3f p10 %.3f median %.3f\n", is_lua ? "lua" : "synth",
               mode_name[k], x / omin, y / op10, z / omed);
    }
    if (pl)
        printf("plain %s min %.3f p10 %.3f median %.3f ms\n", is_lua ? "lua" : "synth", pmin / 1e6,
               pp10 / 1e6, pmed / 1e6);
    if (*kept)
        printf("profile %s\n", kept);
    return 0;
}
