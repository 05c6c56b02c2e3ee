/* rh_control.c: armed mode (RHEAPER_ENABLE=signal): the toggle signal and the
 * marker that `rheaper record -p PID` reads.
 *
 * Arming (once, from rh_init_lazy) installs a handler for RHEAPER_SIGNAL
 * (default SIGRTMAX-5) unless the program already has one, and writes the
 * marker. The handler only counts the request and or-s RH_CTL into rh_state
 * (rh_hooks.h): the next hooked call of any thread takes the cold path and
 * toggles there, outside the handler's frame, under rh_ctl_lock (rh_api.c),
 * the one lock that rheaper_enable and rheaper_disable also take; in a
 * process that makes no call, the runtime's helper thread (rh_helper.c) does
 * the same within 100 ms.
 *
 * The program's handler wins: when it installs one for the same signal
 * (sigaction or signal, seen by wrap/shims_signal.c; or one was there before
 * we armed), rheaper warns once, stops being armed, and says so in the marker.
 *
 * The marker is a small text file, DIR/rheaper-<pid>.ctl, mode 0600, rewritten
 * whole (a temporary file renamed over it) at each change:
 *
 *     rheaper-control 1
 *     pid 1234
 *     start 98765            process start time, /proc/PID/stat field 22
 *     signal 59
 *     state armed            armed | recording | aside
 *     seq 2                  recordings started so far (%n of the last one)
 *     end normal             why the last recording ended: normal | size-limit
 *     profile /abs/dir/rip-1234.1     the current or last profile ("" if none)
 *     failed 0               toggles that asked for a start the runtime could
 *                            not make (the directory refused the file: the
 *                            warning says why); such a toggle is spent, not
 *                            left pending
 *
 * DIR is RHEAPER_PROFILE_DIR made absolute when the process arms, so a daemon
 * that chdirs later still writes where the marker says. Only regular files the
 * runtime creates itself are written (rh_open_safe: an O_EXCL temporary name,
 * and in place only the inode it wrote last), so a FIFO, a directory or a
 * link another user puts at either name can neither block nor redirect it.
 * `rheaper record` trusts the marker only when it belongs to the process's
 * user or root and names its pid and start time. Nothing here allocates;
 * every system call is a raw one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rh_session.h"

/* Set while the runtime calls sigaction itself: wrap/shims_signal.c then does
 * not take the call for the program's. */

static int rh_ctl_is_armed;     /* atomic: our handler is in place */
static int rh_ctl_aside;        /* atomic: the program took the signal */
static unsigned rh_ctl_toggles; /* atomic: signals received, not yet acted on */
static int rh_ctl_marker_pid;   /* pid the marker path was made for */
static char rh_ctl_marker[RH_PATH_MAX];
static unsigned long long rh_ctl_start;
static int rh_ctl_gone_pid; /* the marker was removed at exit by this pid */
static struct rh_fid rh_ctl_fid; /* the marker's inode, as this process wrote it */
static unsigned rh_ctl_failed;   /* starts asked for by the signal that failed */

int rh_ctl_armed(void)
{
    return __atomic_load_n(&rh_ctl_is_armed, __ATOMIC_ACQUIRE) ||
           __atomic_load_n(&rh_ctl_aside, __ATOMIC_ACQUIRE);
}

int rh_ctl_signal_armed(void)
{
    return __atomic_load_n(&rh_ctl_is_armed, __ATOMIC_ACQUIRE);
}

unsigned rh_ctl_take_toggles(void)
{
    if (!__atomic_load_n(&rh_ctl_is_armed, __ATOMIC_ACQUIRE))
        return __atomic_exchange_n(&rh_ctl_toggles, 0, __ATOMIC_ACQ_REL), 0;
    return __atomic_exchange_n(&rh_ctl_toggles, 0, __ATOMIC_ACQ_REL);
}

/* Only counts and flags: async-signal-safe, keeps errno. */
static void rh_ctl_handler(int sig)
{
    (void)sig;
    __atomic_fetch_add(&rh_ctl_toggles, 1, __ATOMIC_RELEASE);
    rh_ctl_request();
}

/* Field 22 of /proc/self/stat (start time in clock ticks): with the pid it
 * names this process, not a later one that reuses the pid. */
static unsigned long long rh_ctl_read_start(void)
{
    char buf[1024];
    int fd = rh_open_proc("/proc/self/stat", O_RDONLY);
    if (fd < 0)
        return 0;
    ssize_t n = rh_sys_read(fd, buf, sizeof buf - 1);
    rh_sys_close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (!p)
        return 0;
    /* after ")": field 3 onwards; field 22 is the 20th of them */
    int field = 2;
    unsigned long long v = 0;
    for (p++; *p; p++) {
        if (*p == ' ') {
            field++;
            continue;
        }
        if (field == 22) {
            for (; *p >= '0' && *p <= '9'; p++)
                v = v * 10 + (unsigned)(*p - '0');
            return v;
        }
    }
    return 0;
}

/* Makes rh_cfg.profile_dir absolute (the current directory now), so that the
 * marker and every later profile agree however the program moves. */
static void rh_ctl_absolute_dir(void)
{
    if (rh_cfg.profile_dir[0] == '/')
        return;
    char cwd[RH_PATH_MAX];
    if (!getcwd(cwd, sizeof cwd - 256))
        return;
    size_t n = strlen(cwd), d = strlen(rh_cfg.profile_dir);
    if (!strcmp(rh_cfg.profile_dir, "."))
        d = 0;
    if (n + 1 + d + 64 >= sizeof rh_cfg.profile_dir)
        return;
    char out[RH_PATH_MAX];
    memcpy(out, cwd, n);
    if (d) {
        if (n > 1)
            out[n++] = '/';
        memcpy(out + n, rh_cfg.profile_dir, d);
        n += d;
    }
    out[n] = '\0';
    memcpy(rh_cfg.profile_dir, out, n + 1);
}

/* Rewrites the existing marker in place: after a privilege drop the process
 * may no longer create files in the directory (a root-owned 0755 one), but
 * it owns its marker (rh_priv.c handed it over). Only the inode this process
 * wrote last is rewritten: a name another
 * user swapped for a FIFO, a link or a file of theirs is left alone, and the
 * open cannot wait on a FIFO (rh_open_safe). A reader may see a torn marker
 * for a moment; `rheaper record` reads it again. */
static void rh_ctl_marker_in_place(const char *text, size_t n)
{
    int fd = rh_open_safe(rh_ctl_marker, O_WRONLY, 0, RH_OPEN_INODE | RH_OPEN_ONE_LINK, &rh_ctl_fid,
                          NULL);
    if (fd < 0)
        return;
    if ((ssize_t)rh_arch_pwrite(fd, text, n, 0) == (ssize_t)n)
        (void)rh_arch_ftruncate(fd, n);
    rh_sys_close(fd);
}

/* Creates a fresh temporary marker next to the marker, holding text, into
 * tmp (size bytes). Another user may have put anything at the usual name (a
 * directory, a FIFO): it is unlinked when it can be, and otherwise the next
 * names carry a suffix from the clock, which nobody can place in advance.
 * Returns 0 with *fid set, or -1. */
static int rh_ctl_marker_tmp(const char *text, size_t n, char *tmp, size_t size, struct rh_fid *fid)
{
    int pid = rh_ctl_marker_pid;
    for (unsigned k = 0; k < 4; k++) {
        if (!k)
            rh_fmt(tmp, size, "%s/.rheaper-%d.ctl.tmp", rh_cfg.profile_dir, pid);
        else
            rh_fmt(tmp, size, "%s/.rheaper-%d.ctl.tmp.%x", rh_cfg.profile_dir, pid,
                   (unsigned)(rh_real_ns() ^ (k * 0x9e3779b9u)));
        (void)rh_arch_unlink(tmp);
        int fd = rh_open_safe(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600, 0, NULL, fid);
        if (fd < 0) {
            if (errno == EEXIST)
                continue;
            return -1;
        }
        ssize_t w = rh_sys_write(fd, text, n);
        rh_sys_close(fd);
        if (w == (ssize_t)n)
            return 0;
        (void)rh_arch_unlink(tmp);
        return -1;
    }
    return -1;
}

void rh_ctl_marker_update(void)
{
    int pid = (int)getpid();
    if (pid == rh_ctl_gone_pid)
        return;
    if (pid != rh_ctl_marker_pid) {
        rh_ctl_marker_pid = pid;
        rh_ctl_start = rh_ctl_read_start();
        rh_ctl_fid.dev = rh_ctl_fid.ino = 0; /* a fork child: the parent's is not ours */
        rh_fmt(rh_ctl_marker, sizeof rh_ctl_marker, "%s/rheaper-%d.ctl", rh_cfg.profile_dir, pid);
    }
    const char *state = __atomic_load_n(&rh_ctl_aside, __ATOMIC_ACQUIRE) ? "aside"
                        : (rh_recording(__atomic_load_n(&rh_state, __ATOMIC_ACQUIRE)) &&
                           __atomic_load_n(&rh_prof.open, __ATOMIC_ACQUIRE))
                            ? "recording"
                            : "armed";
    char text[RH_PATH_MAX + 512];
    size_t n = rh_fmt(text, sizeof text,
                      "rheaper-control 1\npid %d\nstart %llu\nsignal %d\nstate %s\nseq %u\n"
                      "end %s\nprofile %s\nfailed %u\n",
                      pid, rh_ctl_start, rh_cfg.ctl_signal, state, rh_prof.seq,
                      rh_prof.end_reason == RIP_END_SIZE_LIMIT ? "size-limit" : "normal",
                      rh_prof.seq ? rh_prof.path : "", rh_ctl_failed);
    char tmp[RH_PATH_MAX + 32];
    struct rh_fid fid;
    if (rh_ctl_marker_tmp(text, n, tmp, sizeof tmp, &fid) != 0) {
        rh_ctl_marker_in_place(text, n);
        return;
    }
    if (rh_arch_rename(tmp, rh_ctl_marker) != 0) {
        (void)rh_arch_unlink(tmp);
        rh_ctl_marker_in_place(text, n);
        return;
    }
    rh_ctl_fid = fid;
}

unsigned long long rh_ctl_start_time(void)
{
    if (rh_ctl_marker_pid != (int)getpid() || !rh_ctl_start)
        return rh_ctl_read_start();
    return rh_ctl_start;
}

int rh_ctl_marker_fid(struct rh_fid *out)
{
    if (rh_ctl_marker_pid != (int)getpid() || !rh_ctl_fid.ino)
        return -1;
    *out = rh_ctl_fid;
    return 0;
}

const char *rh_ctl_marker_path(void)
{
    return rh_ctl_marker_pid == (int)getpid() ? rh_ctl_marker : "";
}

void rh_ctl_marker_remove(void)
{
    if (rh_ctl_marker_pid == (int)getpid() && rh_ctl_marker[0]) {
        rh_ctl_gone_pid = rh_ctl_marker_pid;
        /* only the marker this process wrote: a file another user put at
         * the name (in a directory they own) is theirs to keep */
        int fd = rh_open_safe(rh_ctl_marker, O_RDONLY, 0, RH_OPEN_INODE, &rh_ctl_fid, NULL);
        if (fd < 0)
            return;
        rh_sys_close(fd);
        if (rh_arch_unlink(rh_ctl_marker) != 0) {
            /* a directory the process may no longer write: say it is gone */
            static const char gone[] = "rheaper-control 1\npid 0\nstate exited\n";
            rh_ctl_marker_in_place(gone, sizeof gone - 1);
        }
    }
}

void rh_ctl_arm(void)
{
    int sig = rh_cfg.ctl_signal;
    struct sigaction old, sa;
    memset(&old, 0, sizeof old);
    rh_ctl_absolute_dir();
    rh_ctl_self = 1;
    if (sigaction(sig, NULL, &old) != 0) {
        rh_ctl_self = 0;
        rh_warn("cannot read the handler of signal %d: %s; RHEAPER_ENABLE=signal has no effect",
                sig, rh_arch_strerror(errno));
        return;
    }
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) {
        rh_ctl_self = 0;
        __atomic_store_n(&rh_ctl_aside, 1, __ATOMIC_RELEASE);
        rh_warn("signal %d already has a handler in this program: rheaper stands aside and "
                "RHEAPER_ENABLE=signal has no effect (choose another with RHEAPER_SIGNAL)",
                sig);
        rh_ctl_marker_update();
        return;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = rh_ctl_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_ONSTACK;
    int rc = sigaction(sig, &sa, NULL);
    rh_ctl_self = 0;
    if (rc != 0) {
        rh_warn("cannot install the handler of signal %d: %s; RHEAPER_ENABLE=signal has no "
                "effect",
                sig, rh_arch_strerror(errno));
        return;
    }
    __atomic_store_n(&rh_ctl_is_armed, 1, __ATOMIC_RELEASE);
    rh_ctl_marker_update();
}

/* Called by wrap/shims_signal.c before the program's sigaction/signal call
 * that sets a disposition for sig. The program wins: one warning, then the
 * runtime is no longer armed (a recording in progress goes on until the
 * program calls rheaper_disable or exits). */
/* Serialises every start and stop: rheaper_enable, rheaper_disable, the toggle
 * signal's work and the size limit's close (rh_ctl_run, rh_api.c), and the
 * marker's writes. Taken before rh_shared_lock and rh_prof_lock. */
RH_HIDDEN int rh_ctl_lock;

int rh_ctl_lock_try(void)
{
    return !__atomic_exchange_n(&rh_ctl_lock, 1, __ATOMIC_ACQUIRE);
}

void rh_ctl_lock_release(void)
{
    rh_spin_unlock(&rh_ctl_lock);
}

void rh_ctl_fork_lock(int take)
{
    if (take)
        rh_spin_lock(&rh_ctl_lock);
    else
        rh_spin_unlock(&rh_ctl_lock);
}

/* The marker is to be rewritten by the next control work (rh_ctl_run):
 * rh_ctl_program_sets could not take rh_ctl_lock. */
static int rh_ctl_marker_dirty;

RH_HIDDEN int rh_ctl_marker_take_dirty(void)
{
    return __atomic_exchange_n(&rh_ctl_marker_dirty, 0, __ATOMIC_ACQ_REL);
}

RH_HIDDEN void rh_ctl_program_sets(int sig)
{
    if (rh_ctl_self || sig != rh_cfg.ctl_signal || sig <= 0)
        return;
    if (!__atomic_load_n(&rh_ctl_is_armed, __ATOMIC_ACQUIRE))
        return;
    if (__atomic_exchange_n(&rh_ctl_aside, 1, __ATOMIC_ACQ_REL))
        return;
    int g = rh_guard_enter();
    __atomic_store_n(&rh_ctl_is_armed, 0, __ATOMIC_RELEASE);
    rh_warn("the program installs its own handler for signal %d: rheaper stands aside "
            "(that signal no longer toggles recording; choose another with RHEAPER_SIGNAL)",
            sig);
    /* The marker under rh_ctl_lock (the helper may be writing the same
     * temporary file): a bounded wait, as the holder may wait for something
     * this thread holds; else the next control work writes it. */
    int locked = 0;
    for (int i = 0; i < 200 && !(locked = rh_ctl_lock_try()); i++)
        rh_sys_nanosleep(1000000L);
    if (locked) {
        rh_ctl_marker_update();
        rh_ctl_lock_release();
    } else {
        __atomic_store_n(&rh_ctl_marker_dirty, 1, __ATOMIC_RELEASE);
        rh_ctl_request();
    }
    rh_guard_leave(g);
}

void rh_ctl_start_failed(void)
{
    rh_ctl_failed++;
    rh_ctl_marker_update();
}

void rh_ctl_fork_child(void)
{
    __atomic_store_n(&rh_runtime_tid, 0, __ATOMIC_RELAXED); /* the parent's helper is not here */
    if (!__atomic_load_n(&rh_ctl_is_armed, __ATOMIC_RELAXED))
        return;
    /* The child is armed (it inherits the handler) but records nothing until
     * toggled; its marker is written by its next hooked call, so a child that
     * only execs writes no file. */
    __atomic_store_n(&rh_prof.pending, 0, __ATOMIC_RELAXED);
    rh_prof.seq = 0;
    rh_ctl_failed = 0;
    __atomic_store_n(&rh_ctl_toggles, 0, __ATOMIC_RELAXED);
    rh_state_set(RH_OFF);
    rh_ctl_request();
}

/* The marker belongs to another pid (a fork child's first control work). */
RH_HIDDEN int rh_ctl_marker_stale(void)
{
    return __atomic_load_n(&rh_ctl_is_armed, __ATOMIC_RELAXED) &&
           rh_ctl_marker_pid != (int)getpid();
}
