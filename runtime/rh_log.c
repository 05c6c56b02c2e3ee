/* rh_log.c: one-line messages and assertion failures, without stdio, and
 * where they go (RHEAPER_LOG).
 *
 * The runtime runs inside malloc, before main and after exit, so it cannot use
 * printf: it may allocate, take stdio locks the interrupted code holds, or be the
 * very function being wrapped. This file formats a small printf subset into a
 * stack buffer and emits each message as one write(2), so lines from several
 * threads never interleave.
 *
 * A daemon's stderr is its log file (nginx points fd 2 at error.log), so by
 * default (RHEAPER_LOG unset) a notice such as "wrote rip-N" is written only
 * when fd 2 is a terminal, and a warning reaches fd 2 once per cause (its
 * text, digits aside: the same failure at another offset is the same cause)
 * and process. RHEAPER_LOG=stderr writes every line to fd 2
 * (warnings still once per cause), RHEAPER_LOG=off none, and any other value
 * is a file name template (%p pid, %t seconds since the epoch, %e the
 * executable's name, %% a '%') appended to, one open-write-close per line
 * (the runtime holds no fd), mode 0600; made absolute when read, so a daemon
 * that changes directory keeps writing there. The file is created with
 * O_EXCL; an existing one is appended to only when it is the one this process
 * created or a regular file of its own user with one link (rh_log_open), so a
 * FIFO there cannot block the program and a file or link another user put
 * there is never written. If that file cannot be opened, a warning goes to
 * fd 2 instead.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>
#include <unistd.h>

#include "rh_base.h"

/* Appends one character if there is room (keeps space for the NUL). */
static void rh_put(char *buf, size_t size, size_t *n, char c)
{
    if (*n + 1 < size)
        buf[*n] = c;
    (*n)++;
}

/* Appends v in base 10 or 16. */
static void rh_put_uint(char *buf, size_t size, size_t *n, unsigned long long v, unsigned base)
{
    char tmp[24];
    int k = 0;
    do {
        unsigned d = (unsigned)(v % base);
        tmp[k++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
        v /= base;
    } while (v);
    while (k)
        rh_put(buf, size, n, tmp[--k]);
}

size_t rh_vfmt(char *buf, size_t size, const char *fmt, va_list ap)
{
    size_t n = 0;
    if (!size)
        return 0;
    for (const char *f = fmt; *f; f++) {
        if (*f != '%') {
            rh_put(buf, size, &n, *f);
            continue;
        }
        f++;
        int lng = 0, sz = 0;
        while (*f == 'l') {
            lng++;
            f++;
        }
        if (*f == 'z') {
            sz = 1;
            f++;
        }
        switch (*f) {
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!s)
                s = "(null)";
            while (*s)
                rh_put(buf, size, &n, *s++);
            break;
        }
        case 'c':
            rh_put(buf, size, &n, (char)va_arg(ap, int));
            break;
        case 'd': {
            long long v = sz         ? (long long)va_arg(ap, ssize_t)
                          : lng >= 2 ? va_arg(ap, long long)
                          : lng      ? va_arg(ap, long)
                                     : va_arg(ap, int);
            unsigned long long u = (unsigned long long)v;
            if (v < 0) {
                rh_put(buf, size, &n, '-');
                u = 0 - u;
            }
            rh_put_uint(buf, size, &n, u, 10);
            break;
        }
        case 'u':
        case 'x': {
            unsigned long long v = sz         ? va_arg(ap, size_t)
                                   : lng >= 2 ? va_arg(ap, unsigned long long)
                                   : lng      ? va_arg(ap, unsigned long)
                                              : va_arg(ap, unsigned);
            rh_put_uint(buf, size, &n, v, *f == 'u' ? 10 : 16);
            break;
        }
        case 'p':
            rh_put(buf, size, &n, '0');
            rh_put(buf, size, &n, 'x');
            rh_put_uint(buf, size, &n, (uintptr_t)va_arg(ap, void *), 16);
            break;
        case '%':
            rh_put(buf, size, &n, '%');
            break;
        case '\0':
            f--;
            break;
        default:
            rh_put(buf, size, &n, '?');
            break;
        }
    }
    buf[n < size ? n : size - 1] = '\0';
    return n < size ? n : size - 1;
}

size_t rh_fmt(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t n = rh_vfmt(buf, size, fmt, ap);
    va_end(ap);
    return n;
}

/* Writes all of buf to fd, retrying on EINTR and short writes; gives up
 * silently on any other error (there is nowhere left to report it). */
static void rh_write_all(int fd, const char *buf, size_t len)
{
    while (len) {
        /* raw: glibc's write is a cancellation point */
        ssize_t w = rh_sys_write(fd, buf, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        buf += w;
        len -= (size_t)w;
    }
}

enum { RH_LOG_AUTO = 0, RH_LOG_STDERR, RH_LOG_OFF, RH_LOG_FILE };
static int rh_log_mode;                   /* set once, before any thread */
static char rh_log_tmpl[RH_PATH_MAX];     /* RH_LOG_FILE: the absolute template */
static char rh_log_file[RH_PATH_MAX];     /* its expansion for rh_log_file_pid */
static int rh_log_file_pid;               /* atomic */
static int rh_log_file_lock;              /* guards the expansion */
#define RH_LOG_CAUSES 64
static uint64_t rh_log_seen[RH_LOG_CAUSES]; /* atomic: causes already written */
static int rh_log_seen_pid;                    /* atomic: the process they were for */
static unsigned long long rh_log_repeats;      /* atomic: lines left out as repeats */
static struct rh_fid rh_log_fid;               /* atomic: the log file this process created */

size_t rh_expand_template(char *buf, size_t size, const char *t, unsigned seq)
{
    size_t n = 0;
    for (const char *p = t; *p && n + 1 < size; p++) {
        if (*p != '%') {
            buf[n++] = *p;
            continue;
        }
        p++;
        switch (*p) {
        case 'p':
            n += rh_fmt(buf + n, size - n, "%d", rh_sys_getpid());
            break;
        case 't': {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts); /* vDSO: no cancellation point */
            n += rh_fmt(buf + n, size - n, "%llu", (unsigned long long)ts.tv_sec);
            break;
        }
        case 'n':
            n += rh_fmt(buf + n, size - n, "%u", seq);
            break;
        case 'e': {
            char exe[1024];
            ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
            exe[k > 0 ? k : 0] = '\0';
            const char *b = strrchr(exe, '/');
            b = b ? b + 1 : exe;
            n += rh_fmt(buf + n, size - n, "%s", *b ? b : "unknown");
            break;
        }
        case '%':
            buf[n++] = '%';
            break;
        default: /* the templates are checked when read; keep the rest */
            p--;
            break;
        }
    }
    buf[n < size ? n : size - 1] = '\0';
    return n < size ? n : size - 1;
}

int rh_log_configure(const char *v)
{
    if (!v || !*v)
        return 0;
    if (!strcmp(v, "stderr")) {
        rh_log_mode = RH_LOG_STDERR;
        return 0;
    }
    if (!strcmp(v, "off")) {
        rh_log_mode = RH_LOG_OFF;
        return 0;
    }
    for (const char *p = v; *p; p++)
        if (*p == '%' && (++p, *p != 'p' && *p != 't' && *p != 'e' && *p != '%'))
            return -1;
    size_t n = 0;
    if (v[0] != '/') {
        if (!getcwd(rh_log_tmpl, sizeof rh_log_tmpl - 256))
            return -1;
        n = strlen(rh_log_tmpl);
        if (n > 1)
            rh_log_tmpl[n++] = '/';
    }
    size_t k = strlen(v);
    if (n + k >= sizeof rh_log_tmpl - 64)
        return -1;
    memcpy(rh_log_tmpl + n, v, k + 1);
    rh_log_mode = RH_LOG_FILE;
    return 0;
}

const char *rh_log_path(void)
{
    if (rh_log_mode != RH_LOG_FILE)
        return "";
    int pid = rh_sys_getpid();
    if (__atomic_load_n(&rh_log_file_pid, __ATOMIC_ACQUIRE) != pid) {
        while (__atomic_exchange_n(&rh_log_file_lock, 1, __ATOMIC_ACQUIRE))
            ; /* a few system calls' worth; the log is the bottom layer: no rh_spin_lock */
        if (rh_log_file_pid != pid) {
            rh_expand_template(rh_log_file, sizeof rh_log_file, rh_log_tmpl, 0);
            __atomic_store_n(&rh_log_file_pid, pid, __ATOMIC_RELEASE);
        }
        __atomic_store_n(&rh_log_file_lock, 0, __ATOMIC_RELEASE);
    }
    return rh_log_file;
}

/* The cause of a message: a hash of its text without its digits, so the
 * same failure at another offset, pid or count is the same cause, and the
 * same format with another name (two bad variables) is another. Never 0. */
static uint64_t rh_log_cause(const char *msg)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = msg; *p; p++) {
        if (*p >= '0' && *p <= '9')
            continue;
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    }
    return h ? h : 1;
}

/* 1 when a line of this cause was already written by this process;
 * otherwise notes it and returns 0. A fork child starts with none noted. */
static int rh_log_repeat(uint64_t cause)
{
    int pid = rh_sys_getpid();
    int old = __atomic_load_n(&rh_log_seen_pid, __ATOMIC_ACQUIRE);
    if (old != pid && __atomic_compare_exchange_n(&rh_log_seen_pid, &old, pid, 0,
                                                  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        for (unsigned i = 0; i < RH_LOG_CAUSES; i++)
            __atomic_store_n(&rh_log_seen[i], 0, __ATOMIC_RELEASE);
    }
    for (unsigned i = 0; i < RH_LOG_CAUSES; i++) {
        uint64_t cur = __atomic_load_n(&rh_log_seen[i], __ATOMIC_ACQUIRE);
        if (!cur && __atomic_compare_exchange_n(&rh_log_seen[i], &cur, cause, 0,
                                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return 0;
        if (cur == cause) {
            __atomic_fetch_add(&rh_log_repeats, 1, __ATOMIC_RELAXED);
            return 1;
        }
    }
    return 0; /* more causes than slots: written every time */
}

unsigned long long rh_log_repeated(void)
{
    return __atomic_load_n(&rh_log_repeats, __ATOMIC_RELAXED);
}

/* Opens the log file for one line, appending. The file is created with
 * O_EXCL when it does not exist (its identity is kept: the inode this process,
 * or the parent it was forked from, created); an existing one is appended to
 * only when it is that inode, or a regular file of the process's effective
 * user with one link (an earlier run of the same user). A FIFO, a link, or a
 * file another user placed there is never opened for writing nor waited on.
 * Returns the fd or -1. */
static int rh_log_open(void)
{
    const char *path = rh_log_path();
    struct rh_fid fid, want;
    int fd = rh_open_safe(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL, 0600, 0, NULL, &fid);
    if (fd >= 0) {
        __atomic_store_n(&rh_log_fid.dev, fid.dev, __ATOMIC_RELAXED);
        __atomic_store_n(&rh_log_fid.ino, fid.ino, __ATOMIC_RELEASE);
        return fd;
    }
    if (errno != EEXIST)
        return -1;
    want.ino = __atomic_load_n(&rh_log_fid.ino, __ATOMIC_ACQUIRE);
    want.dev = __atomic_load_n(&rh_log_fid.dev, __ATOMIC_RELAXED);
    if (want.ino) {
        fd = rh_open_safe(path, O_WRONLY | O_APPEND, 0, RH_OPEN_INODE | RH_OPEN_ONE_LINK, &want,
                          NULL);
        if (fd >= 0)
            return fd;
    }
    return rh_open_safe(path, O_WRONLY | O_APPEND, 0, RH_OPEN_OWNER | RH_OPEN_ONE_LINK, NULL, NULL);
}

int rh_log_fid_get(struct rh_fid *out)
{
    out->ino = __atomic_load_n(&rh_log_fid.ino, __ATOMIC_ACQUIRE);
    out->dev = __atomic_load_n(&rh_log_fid.dev, __ATOMIC_RELAXED);
    return out->ino ? 0 : -1;
}

/* 1 when fd 2 is a terminal (TCGETS succeeds). */
static int rh_stderr_is_tty(void)
{
    return rh_sys_tcgets(2);
}

/* Formats one line and sends it where RHEAPER_LOG says. notice: a notice
 * (never deduplicated; by default only on a terminal), else a warning. */
static void rh_log_emit(int notice, const char *fmt, va_list ap)
{
    int mode = rh_log_mode;
    if (mode == RH_LOG_OFF)
        return;
    if (mode == RH_LOG_AUTO && notice && !rh_stderr_is_tty())
        return;
    char buf[1024];
    static const char prefix[] = "rheaper: ";
    memcpy(buf, prefix, sizeof prefix - 1);
    size_t n = sizeof prefix - 1;
    n += rh_vfmt(buf + n, sizeof buf - n - 1, fmt, ap);
    if (!notice && rh_log_repeat(rh_log_cause(buf)))
        return;
    buf[n++] = '\n';
    if (mode == RH_LOG_FILE) {
        int fd = rh_log_open();
        if (fd >= 0) {
            rh_write_all(fd, buf, n);
            rh_sys_close(fd);
            return;
        }
        if (notice)
            return;
    }
    rh_write_all(2, buf, n);
}

void rh_warn(const char *fmt, ...)
{
    int saved_errno = errno;
    va_list ap;
    va_start(ap, fmt);
    rh_log_emit(0, fmt, ap);
    va_end(ap);
    errno = saved_errno;
}

void rh_notice(const char *fmt, ...)
{
    int saved_errno = errno;
    va_list ap;
    va_start(ap, fmt);
    rh_log_emit(1, fmt, ap);
    va_end(ap);
    errno = saved_errno;
}

void rh_assert_fail(const char *expr, const char *file, int line)
{
#if RH_DEBUG_LEVEL >= 2
    /* a debug build: stop where the invariant broke */
    char buf[512];
    size_t n = rh_fmt(buf, sizeof buf - 1, "rheaper: internal check failed: %s (%s:%d)", expr,
                      file, line);
    buf[n++] = '\n';
    rh_write_all(2, buf, n);
    abort();
#else
    /* a release build never ends the program: one line, then no more
     * recording (the profile so far stays convertible, as after any other
     * failure) */
    int e = errno;
    rh_warn("internal check failed: %s (%s:%d); tracking stopped", expr, file, line);
    rh_state_set(RH_OFF);
    __atomic_store_n(&rh_prof.pending, 0, __ATOMIC_RELAXED);
    rh_session_call(RH_SES_STOPPED);
    errno = e;
#endif
}
