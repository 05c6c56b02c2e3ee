/* rh_origin.c: who the process is: its command line at start, the fork it
 * came from, and its title and name at the end of a recording.
 *
 * Servers rename themselves: nginx's ngx_setproctitle and PostgreSQL's
 * ps_status write the title ("nginx: worker process") over argv and the
 * environment, so /proc/self/cmdline read when a worker's profile is created
 * is already the title, and a prefork worker's heap starts as its master's.
 * This file keeps what a reader needs to tell processes apart and to join a
 * child's profile to its parent's (FORMAT.md "Servers"):
 *
 *   - the command line at start: read once, at the runtime's first call,
 *     into static memory, and written into every profile's header (a fork
 *     child inherits it: the argv its program was started with);
 *   - the origin: in a fork child of a recording process, the parent's pid,
 *     the parent's profile path and the fork's time (CLOCK_MONOTONIC and the
 *     event clock), written into the child's first profile's header (flag
 *     RIP_HDR_F_ORIGIN) so the converter can import the blocks the child
 *     inherited;
 *   - the title and the name: /proc/self/cmdline and /proc/self/comm read
 *     when the trailer is written, and whether the credentials changed.
 *
 * Cost: nothing per event. One read of /proc/self/cmdline at start, a copy
 * of a path and a clock read per fork, two small reads per trailer. Nothing
 * here allocates; every system call is a raw one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rh_session.h"

static uint8_t rh_start_cmd[RIP_HDR_CMD_MAX];
static uint32_t rh_start_len;   /* bytes in rh_start_cmd, separators kept */
static int rh_start_truncated;  /* the command line was longer */
static int rh_start_read;       /* rh_start_cmd holds the start command line */

static struct {
    int valid;       /* the next profile created is this fork child's first */
    uint32_t ppid;
    uint64_t mono_ns, tick;
    uint32_t path_len;
    char path[RIP_HDR_ORIGIN_PATH_MAX];
} rh_origin;
static uint32_t rh_fork_ppid;   /* the forking process, saved in prepare */
static int rh_cred_changed;     /* atomic: set*id was called */

/* Reads up to size bytes of a /proc/self file into buf; *more is set when the
 * file holds more. Returns the bytes read. */
static size_t rh_read_self(const char *path, uint8_t *buf, size_t size, int *more)
{
    size_t got = 0;
    *more = 0;
    int fd = rh_open_proc(path, O_RDONLY);
    if (fd < 0)
        return 0;
    for (;;) {
        ssize_t r = rh_sys_read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
        if (got == size) {
            char extra;
            *more = rh_sys_read(fd, &extra, 1) == 1;
            break;
        }
    }
    rh_sys_close(fd);
    return got;
}

void rh_origin_init(void)
{
    if (rh_start_read)
        return;
    int more;
    size_t got = rh_read_self("/proc/self/cmdline", rh_start_cmd, sizeof rh_start_cmd, &more);
    rh_start_len = (uint32_t)got;
    rh_start_truncated = more;
    rh_start_read = got > 0;
}

void rh_origin_fork_prepare(void)
{
    rh_fork_ppid = (uint32_t)rh_sys_getpid();
}

void rh_origin_fork_child(int parent_recorded)
{
    rh_origin.valid = 0;
    if (!parent_recorded || !rh_prof.path[0] || rh_stream_on())
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO */
    rh_origin.mono_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    rh_origin.tick = rh_now();
    rh_origin.ppid = rh_fork_ppid;
    size_t n = strnlen(rh_prof.path, sizeof rh_prof.path);
    const char *p = rh_prof.path;
    if (n >= sizeof rh_origin.path) { /* keep the file name: the converter looks next door */
        const char *b = strrchr(p, '/');
        p = b ? b + 1 : p;
        n = strnlen(p, sizeof rh_origin.path - 1);
    }
    memcpy(rh_origin.path, p, n);
    rh_origin.path_len = (uint32_t)n;
    rh_origin.valid = 1;
}

void rh_origin_fork_child_done(void)
{
    if (!__atomic_load_n(&rh_prof.pending, __ATOMIC_RELAXED))
        rh_origin.valid = 0; /* the child records nothing from its start */
}

void rh_origin_credentials(void)
{
    __atomic_store_n(&rh_cred_changed, 1, __ATOMIC_RELAXED);
}

uint32_t rh_origin_header(uint8_t *hdr, uint32_t *flags)
{
    uint32_t max = RIP_HDR_CMD_MAX;
    if (rh_origin.valid) {
        uint8_t *o = hdr + RIP_HDR_ORIGIN_OFF;
        memcpy(o, &rh_origin.ppid, 4);
        memcpy(o + 4, &rh_origin.path_len, 4);
        memcpy(o + 8, &rh_origin.mono_ns, 8);
        memcpy(o + 16, &rh_origin.tick, 8);
        memcpy(o + 24, rh_origin.path, rh_origin.path_len);
        *flags |= RIP_HDR_F_ORIGIN;
        max = RIP_HDR_CMD_MAX_ORIGIN;
        rh_origin.valid = 0; /* only the first profile starts at the fork */
    }
    uint8_t *cmd = hdr + RIP_HDR_CMD_OFF;
    uint32_t got;
    int more;
    if (rh_start_read) {
        got = rh_start_len < max ? rh_start_len : max;
        memcpy(cmd, rh_start_cmd, got);
        more = rh_start_truncated || rh_start_len > max;
    } else {
        got = (uint32_t)rh_read_self("/proc/self/cmdline", cmd, max, &more);
    }
    if (more)
        *flags |= RIP_HDR_F_CMD_TRUNCATED;
    else if (got && cmd[got - 1] == '\0')
        got--; /* arguments are separated, not terminated, by NUL */
    return got;
}

uint32_t rh_origin_trailer(uint8_t *t)
{
    uint8_t *b = t + RIP_TRAILER_TITLE_OFF;
    int more;
    size_t tl = rh_read_self("/proc/self/cmdline", b + 24, RIP_TRAILER_TITLE_MAX, &more);
    while (tl && b[24 + tl - 1] == '\0')
        tl--; /* a title written over argv ends in padding NULs */
    size_t cl = rh_read_self("/proc/self/comm", b + 8, 16, &more);
    if (cl && b[8 + cl - 1] == '\n')
        cl--;
    memset(b + 8 + cl, 0, 16 - cl);
    uint32_t len = (uint32_t)tl;
    uint32_t fl = __atomic_load_n(&rh_cred_changed, __ATOMIC_RELAXED) ? RIP_TR_F_CREDENTIALS : 0;
    memcpy(b, &len, 4);
    memcpy(b + 4, &fl, 4);
    return RIP_TRAILER_TITLE_OFF + 24 + len;
}
