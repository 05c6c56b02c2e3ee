/* rh_live_marker.c: who a running process is, and the control files that
 * speak for it, as `rheaper record` and `rheaper live` read them.
 *
 * A process is its pid and its start time (/proc/PID/stat field 22): a pid
 * alone may name a later process. The marker DIR/rheaper-PID.ctl that the
 * runtime keeps (runtime/rh_control.c) sits in a directory other users may
 * write, so it is believed only when it is a regular file with one link that
 * belongs to the process's effective user or root (rh_safe_open: no FIFO
 * waited on, no symlink followed) and names that pid and that start time,
 * both always compared. The environment (/proc/PID/environ) says whether
 * the process was started armed and with which signal, unless a server wrote
 * its title over it. The signal a tool sends is the runtime's own
 * (rh_ctl_parse_signal follows runtime/rh_config.c) and only one the
 * process catches (SigCgt of /proc/PID/status).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rh_live.h"
#include "rh_safefile.h"

/* Reads a whole small file of /proc (or a file the caller trusts by its
 * place); returns its length or -1. */
static ssize_t rh_proc_slurp(const char *path, char *buf, size_t size)
{
    return rh_safe_read_small(path, buf, size, RH_SAFE_REGULAR, 0, NULL, 0);
}

/* Field 22 of /proc/PID/stat, 0 when unreadable. */
unsigned long long rh_proc_start(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (rh_proc_slurp(path, buf, sizeof buf) <= 0)
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

/* Reads t for pid from /proc/PID/status and /proc/PID/stat. Returns 0, or -1
 * when the process is gone or unreadable. */
int rh_proc_target(int pid, struct rh_target *t)
{
    char path[64], buf[8192];
    memset(t, 0, sizeof *t);
    t->pid = pid;
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    if (rh_proc_slurp(path, buf, sizeof buf) <= 0)
        return -1;
    int have_uid = 0, have_sig = 0;
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        unsigned long r, e;
        unsigned long long m;
        if (sscanf(line, "Uid: %lu %lu", &r, &e) == 2)
            t->euid = (uid_t)e, have_uid = 1;
        else if (sscanf(line, "SigCgt: %llx", &m) == 1)
            t->sigcgt = m, have_sig = 1;
    }
    t->start = rh_proc_start(pid);
    return have_uid && have_sig && t->start ? 0 : -1;
}

/* 1 when t catches sig (a handler is installed, per SigCgt). */
int rh_proc_catches(const struct rh_target *t, int sig)
{
    return sig >= 1 && sig <= 64 && ((t->sigcgt >> (sig - 1)) & 1);
}

/* Parses the marker at path for target t. Accepted only when it is a
 * regular file with one link belonging to t's effective user (as it is now:
 * t->euid is brought up to date) or root, and names t (pid and start time,
 * both always compared). Returns 0, or -1 with a reason in why (empty when
 * the file is simply missing). */
int rh_marker_read(const char *path, struct rh_target *t, struct rh_marker *m, char *why,
                   size_t whylen)
{
    char buf[PATH_MAX + 1024], err[PATH_MAX + 128];
    why[0] = '\0';
    struct rh_target now; /* a privilege drop hands the marker to the new user */
    if (rh_proc_target(t->pid, &now) == 0 && now.start == t->start)
        t->euid = now.euid;
    if (rh_safe_read_small(path, buf, sizeof buf, RH_SAFE_OWNER | RH_SAFE_ONE_LINK, t->euid, err,
                           sizeof err) <= 0) {
        if (errno != ENOENT)
            snprintf(why, whylen, "%s", err);
        return -1;
    }
    memset(m, 0, sizeof *m);
    if (strncmp(buf, "rheaper-control 1\n", 18) != 0) {
        snprintf(why, whylen, "%s: not a marker", path);
        return -1;
    }
    int have_start = 0;
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
            m->start = strtoull(v, NULL, 10), have_start = 1;
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
        else if (!strcmp(line, "failed"))
            m->failed = (unsigned)strtoul(v, NULL, 10);
    }
    if (m->pid != t->pid || !have_start || m->start != t->start) {
        snprintf(why, whylen, "%s: names pid %d started at %llu, not process %d started at %llu",
                 path, m->pid, m->start, t->pid, t->start);
        return -1;
    }
    return m->sig > 0 ? 0 : -1;
}

/* The signal names RHEAPER_SIGNAL takes, as the runtime's parser has them
 * (runtime/rh_config.c). */
static const struct {
    const char *name;
    int sig;
} rh_ctl_signames[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},     {"QUIT", SIGQUIT}, {"USR1", SIGUSR1},
    {"USR2", SIGUSR2}, {"PIPE", SIGPIPE},   {"ALRM", SIGALRM}, {"TERM", SIGTERM},
    {"CHLD", SIGCHLD}, {"CONT", SIGCONT},   {"TTIN", SIGTTIN}, {"TTOU", SIGTTOU},
    {"URG", SIGURG},   {"XCPU", SIGXCPU},   {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM},
    {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"POLL", SIGPOLL}, {"PWR", SIGPWR},
    {"SYS", SIGSYS},
};

/* 1 when the runtime accepts sig for RHEAPER_SIGNAL (never one that kills,
 * stops or belongs to a fault). */
int rh_ctl_signal_ok(int sig)
{
    return sig > 0 && sig <= SIGRTMAX && sig != SIGKILL && sig != SIGSTOP && sig != SIGSEGV &&
           sig != SIGBUS && sig != SIGILL && sig != SIGFPE && sig != SIGABRT && sig != SIGTRAP &&
           sig != SIGCHLD;
}

/* An unsigned decimal in [lo, hi] covering all of s; -1 otherwise. */
static long rh_proc_num(const char *s, long lo, long hi)
{
    if (*s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    return errno || *end || v < lo || v > hi ? -1 : v;
}

/* RHEAPER_SIGNAL's value as the runtime reads it: the signal, or the default
 * SIGRTMAX-5 for a value it ignores (it warns and keeps the default). */
int rh_ctl_parse_signal(const char *s)
{
    int v = -1;
    if (!strncmp(s, "SIG", 3))
        s += 3;
    long n = rh_proc_num(s, 1, SIGRTMAX);
    if (n > 0)
        v = (int)n;
    for (size_t i = 0; v < 0 && i < sizeof rh_ctl_signames / sizeof rh_ctl_signames[0]; i++)
        if (!strcmp(s, rh_ctl_signames[i].name))
            v = rh_ctl_signames[i].sig;
    if (v < 0 && (!strncmp(s, "RTMIN", 5) || !strncmp(s, "RTMAX", 5))) {
        int up = s[3] == 'I';
        const char *r = s + 5;
        if (!*r)
            v = up ? SIGRTMIN : SIGRTMAX;
        else if (*r == (up ? '+' : '-') && (n = rh_proc_num(r + 1, 0, SIGRTMAX - SIGRTMIN)) >= 0)
            v = up ? SIGRTMIN + (int)n : SIGRTMAX - (int)n;
    }
    return rh_ctl_signal_ok(v) ? v : SIGRTMAX - 5;
}

/* Reads the environment of pid into e. It is taken as intact when it holds
 * at least one entry and every entry looks like NAME=VALUE; a server that
 * wrote its title over it (nginx, PostgreSQL) leaves zeros or text, and then
 * it says nothing (RH_ENV_UNKNOWN). */
void rh_proc_environ(int pid, struct rh_env *e)
{
    static char env[1 << 20];
    char path[64];
    memset(e, 0, sizeof *e);
    snprintf(path, sizeof path, "/proc/%d/environ", pid);
    ssize_t n = rh_proc_slurp(path, env, sizeof env);
    if (n <= 0)
        return;
    size_t entries = 0;
    const char *enable = NULL, *sig = NULL, *dir = NULL;
    for (size_t i = 0; i < (size_t)n; i += strlen(env + i) + 1) {
        const char *x = env + i;
        if (!*x)
            continue;
        const char *eq = strchr(x, '=');
        if (!eq || eq == x)
            return; /* not an environment any more */
        for (const char *c = x; c < eq; c++)
            if (*c <= ' ' || *c > '~')
                return;
        entries++;
        size_t k = (size_t)(eq - x);
        if (k == 14 && !strncmp(x, "RHEAPER_ENABLE", k))
            enable = eq + 1;
        else if (k == 14 && !strncmp(x, "RHEAPER_SIGNAL", k))
            sig = eq + 1;
        else if (k == 19 && !strncmp(x, "RHEAPER_PROFILE_DIR", k))
            dir = eq + 1;
    }
    if (!entries)
        return;
    e->state = enable && !strcmp(enable, "signal") ? RH_ENV_ARMED : RH_ENV_OFF;
    e->sig = sig ? rh_ctl_parse_signal(sig) : SIGRTMAX - 5;
    if (dir)
        snprintf(e->dir, sizeof e->dir, "%s", dir);
}