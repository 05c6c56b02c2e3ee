/* rh_cli_record.c: `rheaper record -p PID [-d DURATION] [-o DB] [--force]`.
 *
 * Records a running process that was built with rheaper-cc and started with
 * RHEAPER_ENABLE=signal (docs/record.md), without root:
 *
 *   1. /proc/PID/environ, when it is readable and intact (servers overwrite it
 *      with their title), must hold RHEAPER_ENABLE=signal; it also gives the
 *      process's RHEAPER_SIGNAL and RHEAPER_PROFILE_DIR.
 *   2. The marker DIR/rheaper-PID.ctl (runtime/rh_control.c) must exist, be a
 *      regular file with one link that belongs to the process's effective
 *      user or root, name this process (pid and start time from
 *      /proc/PID/stat, always compared) and say "armed". DIR is --dir, else
 *      searched (rh_rec_marker_dirs): the RHEAPER_PROFILE_DIR of the
 *      environment, the process's working directory, then this command's
 *      RHEAPER_PROFILE_DIR and working directory. Without such a marker the
 *      process is "not armed", whatever its environment says; a marker of
 *      another user is named and ignored.
 *   3. The signal is the runtime's own: RHEAPER_SIGNAL of the environment as
 *      the runtime parses it, else its default SIGRTMAX-5; the marker must
 *      agree. Only when the environment was overwritten does the marker's
 *      signal stand, and only one the runtime accepts for RHEAPER_SIGNAL. In
 *      every case /proc/PID/status must show the process catching it (SigCgt),
 *      so a signal it has no handler for is never sent.
 *   4. Signal; wait until the marker shows a new recording (the runtime's
 *      helper thread toggles within a second; without one, the process's next
 *      allocation does); wait DURATION or until Ctrl-C;
 *      signal again unless the recording already ended (size limit, exit);
 *      wait until the marker says it ended (the trailer is written by then);
 *      convert the profile with the converter library and print the summary.
 *      Before each signal the start time is compared again, so a pid that now
 *      names another process gets nothing.
 *
 * Every file is opened with rh_safe_open (no FIFO waited on, no symlink
 * followed, checked on the descriptor). The CPU rate request (--cpu-hz) is
 * written under a fresh O_EXCL name and renamed into place; it names the
 * process (pid and start time) so the runtime can check it is its own.
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
#include "rh_live.h"
#include "rh_safefile.h"

/* How long to wait for the process to act on a signal (the runtime's helper
 * thread acts within a second; without one, its next allocation). */
#define RH_REC_ACK_SEC 10.0

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

static int rh_rec_alive(int pid)
{
    return kill(pid, 0) == 0 || errno == EPERM;
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
 * --dir DIR; RHEAPER_PROFILE_DIR of its environment (e; "." when unset) when
 * the environment is intact; the process's working directory; this command's
 * RHEAPER_PROFILE_DIR; this command's working directory. Returns how many
 * (duplicates dropped). */
static int rh_rec_marker_dirs(int pid, const char *opt, const struct rh_env *e,
                              char dirs[5][PATH_MAX + 64])
{
    int n = 0;
    char cand[PATH_MAX + 64];
    for (int step = 0; step < 5; step++) {
        cand[0] = '\0';
        if (step == 0 && opt) {
            snprintf(cand, sizeof cand, "%s", opt);
        } else if (step == 1) {
            if (e->state != RH_ENV_UNKNOWN &&
                rh_rec_abs(pid, e->dir[0] ? e->dir : ".", cand, sizeof cand) != 0)
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

/* Sends sig to the process t names, after checking that its pid still names
 * it (start time) and that it still catches sig. Returns 0, or 1 after one
 * line. */
static int rh_rec_signal(const struct rh_target *t, int sig)
{
    struct rh_target now;
    if (rh_proc_target(t->pid, &now) != 0 || now.start != t->start) {
        fprintf(stderr,
                "rheaper: record: process %d is gone (its pid no longer names the "
                "process that was armed); nothing was sent\n",
                t->pid);
        return 1;
    }
    if (!rh_proc_catches(&now, sig)) {
        fprintf(stderr,
                "rheaper: record: process %d no longer catches signal %d; nothing was "
                "sent\n",
                t->pid, sig);
        return 1;
    }
    if (kill(t->pid, sig) != 0) {
        fprintf(stderr, "rheaper: record: cannot signal process %d: %s\n", t->pid, strerror(errno));
        return 1;
    }
    return 0;
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

/* Writes DIR/rheaper-PID.cpu-hz holding hz and naming the process (pid and
 * start time: the runtime takes the request only when both are its own, and
 * only from its own user or root): a fresh O_EXCL temporary name renamed over
 * it, mode 0600. Returns 0, or 1 after one line. */
static int rh_rec_cpu_request(const char *dir, const struct rh_target *t, long hz)
{
    char path[PATH_MAX + 128], tmp[PATH_MAX + 160], err[PATH_MAX + 256];
    snprintf(path, sizeof path, "%s/rheaper-%d.cpu-hz", dir, t->pid);
    snprintf(tmp, sizeof tmp, "%s/.rheaper-%d.cpu-hz.%d", dir, t->pid, (int)getpid());
    int fd =
        rh_safe_open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600, RH_SAFE_REGULAR, 0, err, sizeof err);
    if (fd < 0) {
        fprintf(stderr, "rheaper: record: cannot write the CPU rate request: %s\n", err);
        return 1;
    }
    char text[128];
    int n = snprintf(text, sizeof text, "%ld\npid %d\nstart %llu\n", hz, t->pid, t->start);
    int bad = write(fd, text, (size_t)n) != n;
    bad |= close(fd) != 0;
    if (bad || rename(tmp, path) != 0) {
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

    /* 1. Its environment, when intact, says whether it was started armed. */
    struct rh_target tgt;
    if (rh_proc_target(pid, &tgt) != 0) {
        fprintf(stderr, "rheaper: record: cannot read /proc/%d (status and stat): %s\n", pid,
                strerror(errno));
        return 1;
    }
    struct rh_env env;
    rh_proc_environ(pid, &env);
    if (env.state == RH_ENV_OFF) {
        fprintf(stderr,
                "rheaper: record: process %d is not armed: its environment (/proc/%d/environ) "
                "has no RHEAPER_ENABLE=signal (start it with RHEAPER_ENABLE=signal, built with "
                "rheaper-cc); nothing was sent\n",
                pid, pid);
        return 1;
    }

    /* 2. Where its marker is (the marker, which the runtime writes, is the
     * source of truth: a server may have overwritten its environment with
     * its title, and a worker that dropped privileges cannot be read). */
    char dirs[5][PATH_MAX + 64];
    int ndirs = rh_rec_marker_dirs(pid, dir_opt, &env, dirs);
    char mpath[PATH_MAX + 128] = "", why[PATH_MAX + 256] = "", lastwhy[PATH_MAX + 256] = "";
    struct rh_marker m;
    int bad = 1;
    /* The runtime arms at the process's first allocation: allow it a second. */
    for (int tries = 0; tries < 50 && bad; tries++) {
        for (int i = 0; i < ndirs && bad; i++) {
            snprintf(mpath, sizeof mpath, "%s/rheaper-%d.ctl", dirs[i], pid);
            bad = rh_marker_read(mpath, &tgt, &m, why, sizeof why) != 0;
            if (bad && why[0])
                memcpy(lastwhy, why, sizeof why);
        }
        if (bad)
            rh_rec_nap();
    }
    if (bad) {
        if (lastwhy[0])
            fprintf(stderr, "rheaper: record: ignored a marker that is not this process's: %s\n",
                    lastwhy);
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

    /* 3. The runtime's own signal, which the process must be catching. */
    int sig = env.state == RH_ENV_ARMED ? env.sig : m.sig;
    if (env.state == RH_ENV_ARMED && m.sig != sig) {
        fprintf(stderr,
                "rheaper: record: the marker %s names signal %d, but the process's "
                "RHEAPER_SIGNAL gives %d; nothing was sent\n",
                mpath, m.sig, sig);
        return 1;
    }
    if (!rh_ctl_signal_ok(sig)) {
        fprintf(stderr,
                "rheaper: record: the marker %s names signal %d, which rheaper never uses; "
                "nothing was sent\n",
                mpath, sig);
        return 1;
    }
    if (!rh_proc_catches(&tgt, sig)) {
        fprintf(stderr,
                "rheaper: record: process %d does not catch signal %d (no handler: rheaper's is "
                "not installed), so it would be killed or stopped; nothing was sent\n",
                pid, sig);
        return 1;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = rh_rec_on_int;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    /* 4. Start, after the CPU rate request (the runtime reads and removes it
     * when it toggles on: runtime/rh_cpu.c rh_cpu_requested_hz). */
    if (cpu_hz > 0 && rh_rec_cpu_request(dir, &tgt, cpu_hz) != 0)
        return 1;
    unsigned seq0 = m.seq;
    if (rh_rec_signal(&tgt, sig) != 0)
        return 1;
    double t0 = rh_rec_now();
    struct rh_marker cur = m;
    for (;;) {
        int mr = rh_marker_read(mpath, &tgt, &cur, why, sizeof why);
        if (mr == 0 && cur.seq > seq0)
            break;
        if (mr == 0 && cur.failed > m.failed) {
            /* the toggle was taken and the start failed: nothing is pending,
             * so no second signal (it would be a new request) */
            fprintf(stderr,
                    "rheaper: record: process %d could not start recording (its stderr, or "
                    "RHEAPER_LOG, says why: the profile directory %s must let its user create "
                    "files); nothing is pending\n",
                    pid, dir);
            return 1;
        }
        if (!rh_rec_alive(pid)) {
            fprintf(stderr, "rheaper: record: process %d exited before it started recording\n",
                    pid);
            return 1;
        }
        if (rh_rec_interrupted || rh_rec_now() - t0 > RH_REC_ACK_SEC) {
            /* A second signal cancels the pending one (toggles that arrive
             * together pair off in the runtime), so a process that allocates
             * later does not start a recording nobody stops. */
            int cancelled = rh_rec_signal(&tgt, sig) == 0;
            if (cancelled && rh_marker_read(mpath, &tgt, &cur, why, sizeof why) == 0 &&
                cur.seq > seq0)
                cancelled = 0; /* it started just now: the second signal stops it */
            fprintf(stderr,
                    "rheaper: record: process %d did not start recording within %.0f s: the "
                    "toggle happens within a second through the runtime's helper thread, or at "
                    "its next allocation where it could not start one (is it idle, or does it "
                    "block signal %d? its stderr says why a start failed); %s\n",
                    pid, RH_REC_ACK_SEC, sig,
                    cancelled ? "the request is cancelled: it will not start later"
                              : "it started as the request was given up and is stopped again");
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
        int r = rh_marker_read(mpath, &tgt, &cur, why, sizeof why);
        if (r != 0 && why[0] && rh_rec_alive(pid)) {
            /* a file that is not the process's own took the marker's place
             * (someone else can write the directory): says nothing; the
             * window goes on and ends with the runtime's signal */
            rh_rec_nap();
            continue;
        }
        if (r != 0 || cur.seq != seq || strcmp(cur.state, "recording")) {
            ended = 1;
            break;
        }
        rh_rec_nap();
    }

    /* Stop, unless it already stopped (size limit, exit, the program itself). */
    if (!ended && rh_rec_alive(pid)) {
        if (rh_rec_signal(&tgt, sig) != 0)
            return 1;
        double t2 = rh_rec_now();
        for (;;) {
            if (rh_marker_read(mpath, &tgt, &cur, why, sizeof why) != 0 || cur.seq != seq ||
                strcmp(cur.state, "recording") != 0)
                break; /* closed (or the process is gone: its exit wrote the trailer) */
            if (!rh_rec_alive(pid))
                break;
            if (rh_rec_now() - t2 > RH_REC_ACK_SEC) {
                fprintf(stderr,
                        "rheaper: record: process %d did not stop recording within %.0f s (no "
                        "helper thread, and it has not allocated since); %s stays open until it "
                        "does\n",
                        pid, RH_REC_ACK_SEC, rip);
                return 1;
            }
            rh_rec_nap();
        }
    } else if (ended && !strcmp(cur.end, "size-limit") && cur.seq == seq) {
        fprintf(stderr, "rheaper: the recording stopped at RHEAPER_MAX_PROFILE_SIZE\n");
    }

    /* the profile the marker names must be the process's own file */
    char err[PATH_MAX + 256];
    int rfd =
        rh_safe_open(rip, O_RDONLY, 0, RH_SAFE_OWNER | RH_SAFE_ONE_LINK, tgt.euid, err, sizeof err);
    if (rfd < 0) {
        fprintf(stderr, "rheaper: record: not converting the profile the marker names: %s\n", err);
        return 1;
    }
    close(rfd);
    int rc = rh_convert_file("rheaper", rip, out, force, 0, NULL);
    if (rc) {
        fprintf(stderr, "rheaper: the profile stays in %s\n", rip);
        return rc;
    }
    fprintf(stderr, "rheaper: wrote %s (the profile stays in %s)\n", out, rip);
    char *sargv[] = {"summary", (char *)out, NULL};
    return rh_cmd_summary(2, sargv) != 0;
}
