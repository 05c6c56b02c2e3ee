/* rh_cli_record.c: `rheaper record -p PID [-d DURATION] [-o DB] [--force]`.
 *
 * Records a running process that was built with rheaper-cc and started with
 * RHEAPER_ENABLE=signal (docs/record.md), without root:
 *
 *   1. The marker DIR/rheaper-PID.ctl (runtime/rh_control.c) must exist, name
 *      this process (pid and start time from /proc/PID/stat) and say "armed".
 *      It gives the signal, the recording count and the current profile. DIR
 *      is --dir, else searched (rh_rec_marker_dirs): the RHEAPER_PROFILE_DIR
 *      of /proc/PID/environ when readable and intact (servers overwrite it
 *      with their title), the process's working directory, then this
 *      command's RHEAPER_PROFILE_DIR and working directory. Without a marker
 *      the process is "not armed", whatever its environment says.
 *   2. The marker's state must be "armed" (not recording, not aside).
 *   3. Signal; wait until the marker shows a new recording (the toggle happens
 *      at the process's next allocation); wait DURATION or until Ctrl-C;
 *      signal again unless the recording already ended (size limit, exit);
 *      wait until the marker says it ended (the trailer is written by then);
 *      convert the profile with the converter library and print the summary.
 *
 * Sending a signal the process has no handler for would kill it, which is why
 * nothing is sent until the marker says the handler is rheaper's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rh_cli.h"
#include "rh_convert.h"

/* How long to wait for the process to act on a signal (its next allocation). */
#define RH_REC_ACK_SEC 10.0

struct rh_marker {
    int pid, sig;
    unsigned long long start;
    unsigned seq;
    char state[32];
    char end[32];
    char profile[PATH_MAX + 64];
};

static volatile sig_atomic_t rh_rec_interrupted;

static void rh_rec_on_int(int sig)
{
    (void)sig;
    rh_rec_interrupted = 1;
}

static double rh_rec_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void rh_rec_nap(void)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* DURATION: a number with an optional unit ms, s (default), m or h. */
static int rh_rec_duration(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0)
        return -1;
    if (!strcmp(end, "") || !strcmp(end, "s"))
        *out = v;
    else if (!strcmp(end, "ms"))
        *out = v / 1000;
    else if (!strcmp(end, "m") || !strcmp(end, "min"))
        *out = v * 60;
    else if (!strcmp(end, "h"))
        *out = v * 3600;
    else
        return -1;
    return 0;
}

/* Reads a whole small file; returns its length or -1. */
static ssize_t rh_rec_slurp(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = 0;
    while (n + 1 < size) {
        ssize_t r = read(fd, buf + n, size - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    return (ssize_t)n;
}

/* Field 22 of /proc/PID/stat, 0 when unreadable. */
static unsigned long long rh_rec_start(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (rh_rec_slurp(path, buf, sizeof buf) <= 0)
        return 0;
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    int field = 2;
    for (p++; *p; p++) {
        if (*p == ' ') {
            field++;
            continue;
        }
        if (field == 22)
            return strtoull(p, NULL, 10);
    }
    return 0;
}

/* Parses the marker at path. Returns 0, or -1 when missing or unreadable. */
static int rh_rec_marker(const char *path, struct rh_marker *m)
{
    char buf[PATH_MAX + 1024];
    if (rh_rec_slurp(path, buf, sizeof buf) <= 0)
        return -1;
    memset(m, 0, sizeof *m);
    if (strncmp(buf, "rheaper-control 1\n", 18) != 0)
        return -1;
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *v = strchr(line, ' ');
        if (!v)
            continue;
        *v++ = '\0';
        if (!strcmp(line, "pid"))
            m->pid = atoi(v);
        else if (!strcmp(line, "start"))
            m->start = strtoull(v, NULL, 10);
        else if (!strcmp(line, "signal"))
            m->sig = atoi(v);
        else if (!strcmp(line, "state"))
            snprintf(m->state, sizeof m->state, "%s", v);
        else if (!strcmp(line, "seq"))
            m->seq = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(line, "end"))
            snprintf(m->end, sizeof m->end, "%s", v);
        else if (!strcmp(line, "profile"))
            snprintf(m->profile, sizeof m->profile, "%s", v);
    }
    return m->pid > 0 && m->sig > 0 ? 0 : -1;
}

static int rh_rec_alive(int pid)
{
    return kill(pid, 0) == 0 || errno == EPERM;
}

/* Finds the value of NAME in the NUL-separated environment block env[0, n). */
static const char *rh_rec_env(const char *env, size_t n, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < n; i += strlen(env + i) + 1)
        if (!strncmp(env + i, name, len) && env[i + len] == '=')
            return env + i + len + 1;
    return NULL;
}

/* Makes rel absolute against the process's working directory into out.
 * Returns 0, or -1 when /proc/PID/cwd cannot be read. */
static int rh_rec_abs(int pid, const char *rel, char *out, size_t size)
{
    if (rel[0] == '/') {
        snprintf(out, size, "%s", rel);
        return 0;
    }
    char path[64], cwd[PATH_MAX];
    snprintf(path, sizeof path, "/proc/%d/cwd", pid);
    ssize_t k = readlink(path, cwd, sizeof cwd - 1);
    if (k < 0)
        return -1;
    cwd[k] = '\0';
    if (!strcmp(rel, "."))
        snprintf(out, size, "%s", cwd);
    else
        snprintf(out, size, "%s/%s", strcmp(cwd, "/") ? cwd : "", rel);
    return 0;
}

/* The directories where process pid's marker may be, in the order searched:
 * --dir DIR; RHEAPER_PROFILE_DIR from /proc/PID/environ when it is readable
 * and still holds it (a server's title may have overwritten it); the
 * process's working directory; this command's RHEAPER_PROFILE_DIR; this
 * command's working directory. Returns how many (duplicates dropped). */
static int rh_rec_marker_dirs(int pid, const char *opt, char dirs[5][PATH_MAX + 64])
{
    int n = 0;
    char cand[PATH_MAX + 64];
    static char env[1 << 20];
    char path[64];
    for (int step = 0; step < 5; step++) {
        cand[0] = '\0';
        if (step == 0 && opt) {
            snprintf(cand, sizeof cand, "%s", opt);
        } else if (step == 1) {
            snprintf(path, sizeof path, "/proc/%d/environ", pid);
            ssize_t en = rh_rec_slurp(path, env, sizeof env);
            const char *d = en > 0 ? rh_rec_env(env, (size_t)en, "RHEAPER_PROFILE_DIR") : NULL;
            if (en > 0 && rh_rec_abs(pid, d && *d ? d : ".", cand, sizeof cand) != 0)
                cand[0] = '\0';
        } else if (step == 2) {
            if (rh_rec_abs(pid, ".", cand, sizeof cand) != 0)
                cand[0] = '\0';
        } else if (step == 3) {
            const char *d = getenv("RHEAPER_PROFILE_DIR");
            if (d && *d)
                snprintf(cand, sizeof cand, "%s", d);
        } else if (step == 4) {
            if (!getcwd(cand, sizeof cand))
                cand[0] = '\0';
        }
        if (!cand[0])
            continue;
        int dup = 0;
        for (int i = 0; i < n; i++)
            dup |= !strcmp(dirs[i], cand);
        if (!dup)
            memcpy(dirs[n++], cand, sizeof cand);
    }
    return n;
}

static int rh_rec_usage(const char *msg)
{
    if (msg)
        fprintf(stderr, "rheaper: record: %s\n", msg);
    fprintf(stderr, "usage: rheaper record -p PID|-P NAME [-d DURATION] [-o DB] [--force] [--cpu-hz N]"
                    " [--dir DIR]\n"
                    "  DURATION: 2s, 500ms, 1m, 1h; without -d, until Ctrl-C\n"
                    "  -P NAME: the process's name, executable or title (ps) prefix\n"
                    "  --dir DIR: where its marker is (its RHEAPER_PROFILE_DIR); else searched\n"
                    "  --cpu-hz N: also sample CPU N times per second of each thread's CPU"
                    " time\n");
    return 2;
}

/* Writes DIR/rheaper-PID.cpu-hz holding hz (a temporary file renamed over
 * it, mode 0600). Returns 0, or 1 after one line. */
static int rh_rec_cpu_request(const char *dir, int pid, long hz)
{
    char path[PATH_MAX + 128], tmp[PATH_MAX + 160];
    snprintf(path, sizeof path, "%s/rheaper-%d.cpu-hz", dir, pid);
    snprintf(tmp, sizeof tmp, "%s/.rheaper-%d.cpu-hz.%d", dir, pid, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    char text[32];
    int n = snprintf(text, sizeof text, "%ld\n", hz);
    if (fd < 0 || write(fd, text, (size_t)n) != n || close(fd) != 0 || rename(tmp, path) != 0) {
        fprintf(stderr, "rheaper: record: cannot write %s: %s\n", path, strerror(errno));
        unlink(tmp);
        return 1;
    }
    return 0;
}

int rh_cmd_record(int argc, char **argv)
{
    int pid = 0, force = 0;
    const char *name = NULL, *dir_opt = NULL;
    long cpu_hz = -1; /* --cpu-hz; -1: the process's own RHEAPER_CPU_HZ */
    double duration = -1;
    const char *out = "profile.db";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if ((!strcmp(a, "-p") || !strcmp(a, "--pid")) && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v <= 0 || v > INT_MAX)
                return rh_rec_usage("-p expects a process id");
            pid = (int)v;
        } else if (!strcmp(a, "--dir") && i + 1 < argc) {
            dir_opt = argv[++i]; /* where the marker is: the process's RHEAPER_PROFILE_DIR */
        } else if (!strcmp(a, "-P") && i + 1 < argc) {
            name = argv[++i]; /* the process by name (rh_live_proc.c) */
        } else if ((!strcmp(a, "-d") || !strcmp(a, "--duration")) && i + 1 < argc) {
            if (rh_rec_duration(argv[++i], &duration) != 0)
                return rh_rec_usage("-d expects a duration such as 2s, 500ms or 1m");
        } else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(a, "--force") || !strcmp(a, "-f")) {
            force = 1;
        } else if (!strcmp(a, "--cpu-hz") && i + 1 < argc) {
            char *end;
            cpu_hz = strtol(argv[++i], &end, 10);
            if (*end || cpu_hz < 1 || cpu_hz > 10000)
                return rh_rec_usage("--cpu-hz expects a rate from 1 to 10000 (99 suggested)");
        } else {
            char msg[256];
            snprintf(msg, sizeof msg, "unknown argument %s", a);
            return rh_rec_usage(msg);
        }
    }
    if (pid && name)
        return rh_rec_usage("give -p PID or -P NAME, not both");
    if (name && !(pid = rh_proc_by_name("record", name)))
        return 1;
    if (!pid)
        return rh_rec_usage("-p PID (or -P NAME) is required");
    struct stat sb;
    if (!force && lstat(out, &sb) == 0) {
        fprintf(stderr, "rheaper: record: %s exists; use --force to overwrite\n", out);
        return 1;
    }
    if (kill(pid, 0) != 0) {
        if (errno == ESRCH)
            fprintf(stderr, "rheaper: record: no process %d\n", pid);
        else
            fprintf(stderr, "rheaper: record: process %d is not yours (%s): record works on "
                            "your own processes\n",
                    pid, strerror(errno));
        return 1;
    }

    /* 1. Where its marker is (the marker, which the runtime writes, is the
     * source of truth: a server may have overwritten its environment with
     * its title, and a worker that dropped privileges cannot be read). */
    char dirs[5][PATH_MAX + 64];
    int ndirs = rh_rec_marker_dirs(pid, dir_opt, dirs);
    char mpath[PATH_MAX + 128] = "";
    struct rh_marker m;
    int bad = 1;
    /* The runtime arms at the process's first allocation: allow it a second. */
    for (int tries = 0; tries < 50 && bad; tries++) {
        for (int i = 0; i < ndirs && bad; i++) {
            snprintf(mpath, sizeof mpath, "%s/rheaper-%d.ctl", dirs[i], pid);
            bad = rh_rec_marker(mpath, &m) != 0 || m.pid != pid ||
                  (m.start && m.start != rh_rec_start(pid));
        }
        if (bad)
            rh_rec_nap();
    }
    if (bad) {
        fprintf(stderr, "rheaper: record: process %d is not armed: no marker rheaper-%d.ctl in",
                pid, pid);
        for (int i = 0; i < ndirs; i++)
            fprintf(stderr, "%s %s", i ? "," : "", dirs[i]);
        fprintf(stderr, " (start it with RHEAPER_ENABLE=signal, built with rheaper-cc; give its "
                        "RHEAPER_PROFILE_DIR with --dir DIR); nothing was sent\n");
        return 1;
    }
    char dir[PATH_MAX + 64];
    snprintf(dir, sizeof dir, "%s", mpath);
    *strrchr(dir, '/') = 0;
    if (!strcmp(m.state, "aside")) {
        fprintf(stderr,
                "rheaper: record: process %d handles signal %d itself, so rheaper stood aside; "
                "restart it with another RHEAPER_SIGNAL; nothing was sent\n",
                pid, m.sig);
        return 1;
    }
    if (strcmp(m.state, "armed") != 0) {
        fprintf(stderr,
                "rheaper: record: process %d is already recording (to %s); not touching it\n",
                pid, m.profile);
        return 1;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = rh_rec_on_int;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    /* 3. Start, after the CPU rate request (the runtime reads and removes it
     * when it toggles on: runtime/rh_cpu.c rh_cpu_requested_hz). */
    if (cpu_hz > 0 && rh_rec_cpu_request(dir, pid, cpu_hz) != 0)
        return 1;
    unsigned seq0 = m.seq;
    if (kill(pid, m.sig) != 0) {
        fprintf(stderr, "rheaper: record: cannot signal process %d: %s\n", pid, strerror(errno));
        return 1;
    }
    double t0 = rh_rec_now();
    struct rh_marker cur = m;
    for (;;) {
        if (rh_rec_marker(mpath, &cur) == 0 && cur.seq > seq0)
            break;
        if (!rh_rec_alive(pid)) {
            fprintf(stderr, "rheaper: record: process %d exited before it started recording\n",
                    pid);
            return 1;
        }
        if (rh_rec_interrupted || rh_rec_now() - t0 > RH_REC_ACK_SEC) {
            fprintf(stderr,
                    "rheaper: record: process %d did not start recording within %.0f s: the "
                    "toggle happens at its next allocation (is it idle, or does it block signal "
                    "%d?); when it allocates it will record until signalled again\n",
                    pid, RH_REC_ACK_SEC, m.sig);
            return 1;
        }
        rh_rec_nap();
    }
    unsigned seq = cur.seq;
    char rip[sizeof cur.profile];
    snprintf(rip, sizeof rip, "%s", cur.profile);
    if (duration >= 0)
        fprintf(stderr, "rheaper: recording process %d into %s for %g s\n", pid, rip, duration);
    else
        fprintf(stderr, "rheaper: recording process %d into %s; Ctrl-C stops\n", pid, rip);

    /* Wait: the duration, Ctrl-C, or the recording ending on its own. */
    double t1 = rh_rec_now();
    int ended = 0;
    while (!rh_rec_interrupted && (duration < 0 || rh_rec_now() - t1 < duration)) {
        if (rh_rec_marker(mpath, &cur) != 0 || cur.seq != seq || strcmp(cur.state, "recording")) {
            ended = 1;
            break;
        }
        rh_rec_nap();
    }

    /* Stop, unless it already stopped (size limit, exit, the program itself). */
    if (!ended && rh_rec_alive(pid)) {
        if (kill(pid, m.sig) != 0) {
            fprintf(stderr, "rheaper: record: cannot signal process %d: %s\n", pid,
                    strerror(errno));
            return 1;
        }
        double t2 = rh_rec_now();
        for (;;) {
            if (rh_rec_marker(mpath, &cur) != 0 || cur.seq != seq ||
                strcmp(cur.state, "recording") != 0)
                break; /* closed (or the process is gone: its exit wrote the trailer) */
            if (!rh_rec_alive(pid))
                break;
            if (rh_rec_now() - t2 > RH_REC_ACK_SEC) {
                fprintf(stderr,
                        "rheaper: record: process %d did not stop recording within %.0f s (it "
                        "has not allocated since); %s stays open until it does\n",
                        pid, RH_REC_ACK_SEC, rip);
                return 1;
            }
            rh_rec_nap();
        }
    } else if (ended && !strcmp(cur.end, "size-limit") && cur.seq == seq) {
        fprintf(stderr, "rheaper: the recording stopped at RHEAPER_MAX_PROFILE_SIZE\n");
    }

    int rc = rh_convert_file("rheaper", rip, out, force, 0, NULL);
    if (rc) {
        fprintf(stderr, "rheaper: the profile stays in %s\n", rip);
        return rc;
    }
    fprintf(stderr, "rheaper: wrote %s (the profile stays in %s)\n", out, rip);
    char *sargv[] = {"summary", (char *)out, NULL};
    return rh_cmd_summary(2, sargv) != 0;
}
