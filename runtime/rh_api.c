/* rh_api.c: the public API (rheaper.h), lazy start, and exit handling.
 *
 * The runtime starts in RH_UNINIT. The first wrapped call of the process (which
 * in a -static program comes before any constructor) runs rh_init_lazy: it reads
 * the environment, picks the clock, registers the thread-exit key and the
 * fork handlers, and when RHEAPER_ENABLE=1 turns tracking on with the file still
 * pending: it is created by the first recorded event, so a fork child that only
 * execs leaves no file. rheaper_enable() creates its file at once so it can
 * report a bad directory. A destructor(101), which runs after every other exit
 * handler, writes the trailer; tracking goes on working after it. The exits
 * that run no exit handler (_exit, _Exit, daemon(3)'s parent, exec) do the
 * same work first through rh_exit_now (wrap/shims_exit.c). This file is the
 * session layer's top (docs/design.md, "Runtime"): it installs the hook the
 * recording core calls up through (rh_session_call) at the start.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rh_session.h"
#include "rh_helper.h"

#pragma GCC visibility push(default)
#include "rheaper.h"
#pragma GCC visibility pop

/* 0 not started, 1 in progress, 2 done. */
static int rh_init_state;
/* The process whose exit work ran (0: none yet): the exit handlers and an
 * _exit after them (a static libc's exit() ends in the wrapped _exit) do it
 * once. And the process this memory belongs to, by its own account: set at
 * start and by the fork handler, so a vfork child, which shares its parent's
 * memory and runs no fork handler, sees its parent's pid here. */
static int rh_exit_done_pid;
static int rh_proc_pid;
/* The configuration the environment gave (rheaper_enable overlays on it). */
static struct rh_config rh_cfg_env;
/* Set by our constructor: libc is fully initialised. */
static int rh_ctor_ran;
/* The pid the constructor ran in, kept by every fork child's handler (the
 * constructor's own, and rh_exit_fork_child once the runtime started): a
 * caller of another pid before the runtime started is a vfork child, which
 * shares this memory and runs no fork handler. */
static int rh_ctor_pid;

static void rh_ctl_run(void);
RH_HIDDEN int rh_ctl_marker_stale(void);
RH_HIDDEN int rh_ctl_marker_take_dirty(void);

/* What the recording core asks of this layer (rh_session_call, rh_state.c). */
static int rh_session_dispatch(int what)
{
    switch (what) {
    case RH_SES_START:
        return rh_init_lazy();
    case RH_SES_FILE:
        return rh_file_ensure();
    case RH_SES_STOPPED:
        if (rh_ctl_armed())
            rh_ctl_marker_update();
        return 0;
    case RH_SES_HELPER:
        /* a vfork child's call starts nothing (the memory is the parent's),
         * nor one before libc is ready (the constructor) */
        if (rh_ctor_ran && rh_sys_getpid() == __atomic_load_n(&rh_ctor_pid, __ATOMIC_RELAXED))
            rh_helper_ensure_chunks(rh_ctl_run); /* sets the guard itself */
        return 0;

    }
    return 0;
}

int rh_init_lazy(void)
{
    rh_session_install(rh_session_dispatch);
    /* A vfork child's first hooked call (the parent made none yet): the
     * memory is the parent's, so nothing is armed, set up or started here
     * (a thread would die at exec and leave the parent's libc believing in
     * it); the parent starts the runtime at its own first call. */
    if (rh_ctor_ran && __atomic_load_n(&rh_init_state, __ATOMIC_ACQUIRE) == 0 &&
        rh_sys_getpid() != __atomic_load_n(&rh_ctor_pid, __ATOMIC_RELAXED))
        return 0;
    int expected = 0;
    if (__atomic_compare_exchange_n(&rh_init_state, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        rh_config_load_env();
        rh_origin_init();
        rh_report_init();
        rh_sample_configure();
        rh_cfg_env = rh_cfg;
        rh_clock_init();
        rh_thread_init();
        rh_fork_init();
        rh_cpu_init();
        if (rh_cfg.enable == 1) {
            rh_prof.max_chunk = rh_config_max_chunk();
            __atomic_store_n(&rh_prof.pending, 1, __ATOMIC_RELAXED);
            rh_state_set(rh_on_state());
            if (rh_cfg.cpu_hz) {
                /* samples need the file: create it now rather than at the
                 * first event (a CPU-only recording has no events) */
                rh_file_ensure();
                rh_cpu_start();
            }
        } else {
            rh_state_set(RH_OFF);
            if (rh_cfg.enable == RH_ENABLE_SIGNAL) {
                rh_ctl_arm();
                rh_cfg_env = rh_cfg; /* the profile directory made absolute */
            }
        }
        rh_proc_pid = rh_sys_getpid();
        __atomic_store_n(&rh_init_state, 2, __ATOMIC_RELEASE);
        if (rh_ctor_ran) /* else the constructor starts it: libc is not ready */
            rh_helper_ensure(rh_ctl_run);
    } else {
        while (__atomic_load_n(&rh_init_state, __ATOMIC_ACQUIRE) != 2)
            sched_yield();
        if (__atomic_load_n(&rh_state, __ATOMIC_ACQUIRE) & RH_CTL)
            rh_ctl_run();
    }
    return RH_STATE(__atomic_load_n(&rh_state, __ATOMIC_ACQUIRE)) == RH_ON;
}

int rh_file_ensure(void)
{
    if (rh_likely(__atomic_load_n(&rh_prof.open, __ATOMIC_ACQUIRE)))
        return 1;
    if (!__atomic_load_n(&rh_prof.pending, __ATOMIC_RELAXED))
        return 0;
    int created = 0;
    rh_spin_lock(&rh_prof_lock);
    if (rh_prof.pending && rh_recording(__atomic_load_n(&rh_state, __ATOMIC_RELAXED))) {
        if (rh_file_create_locked() == RHEAPER_OK)
            created = 1;
        else
            rh_state_set(RH_OFF);
        __atomic_store_n(&rh_prof.pending, 0, __ATOMIC_RELAXED);
    }
    int open = rh_prof.open;
    rh_spin_unlock(&rh_prof_lock);
    if (created) {
        rh_prof.mod_early = !rh_ctor_ran;
        rh_modules_snapshot(1);
        if (rh_ctor_ran) /* else the constructor starts it: libc is not ready */
            rh_stream_start();
        /* not the chunks' helper: this may be an mmap's record inside an
         * allocator's locks (RH_SES_HELPER starts it at a safe point) */
    }
    return open;
}

int rh_file_create_for_fork_locked(void)
{
    if (!rh_prof.pending || rh_prof.open || rh_stream_on() ||
        !rh_recording(__atomic_load_n(&rh_state, __ATOMIC_RELAXED)))
        return 0;
    int created = rh_file_create_locked() == RHEAPER_OK;
    if (!created)
        rh_state_set(RH_OFF);
    __atomic_store_n(&rh_prof.pending, 0, __ATOMIC_RELAXED);
    return created;
}

void rh_file_created_after_fork(void)
{
    rh_prof.mod_early = !rh_ctor_ran;
    rh_modules_snapshot(1);
}

/* ---- `rheaper record -p PID --cpu-hz N`: the rate asked for ------------- */

/* The value of "KEY " on a line of text, parsed as a decimal number into
 * *out. Returns 0, or -1 when the line is missing or not a number. */
static int rh_req_field(const char *text, const char *key, unsigned long long *out)
{
    size_t k = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, k) || p[k] != ' ')
            continue;
        const char *q = p + k + 1;
        unsigned long long v = 0;
        if (*q < '0' || *q > '9')
            return -1;
        for (; *q >= '0' && *q <= '9'; q++) {
            if (v > (~0ull - 9) / 10)
                return -1;
            v = v * 10 + (unsigned)(*q - '0');
        }
        if (*q && *q != '\n')
            return -1;
        *out = v;
        return 0;
    }
    return -1;
}

unsigned rh_cpu_requested_hz(void)
{
    char path[RH_PATH_MAX + 64], buf[128];
    rh_fmt(path, sizeof path, "%s/rheaper-%d.cpu-hz", rh_cfg.profile_dir, (int)getpid());
    /* written by `rheaper record`, run by this process's user or root; the
     * name alone could have been put there by anyone who can write the
     * directory: a FIFO (the open must not wait for a writer), a link, or a
     * rate another user chose */
    int fd = rh_open_safe(path, O_RDONLY, 0, RH_OPEN_OWNER | RH_OPEN_ROOT | RH_OPEN_ONE_LINK, NULL,
                          NULL);
    if (fd < 0) {
        if (errno != ENOENT)
            rh_warn("ignoring the CPU rate request %s: %s", path,
                    errno == EINVAL   ? "not a regular file"
                    : errno == EPERM  ? "it belongs to another user"
                    : errno == EMLINK ? "it has more than one link"
                                      : rh_arch_strerror(errno));
        return 0;
    }
    ssize_t n = rh_sys_read(fd, buf, sizeof buf - 1);
    rh_sys_close(fd);
    (void)rh_arch_unlink(path); /* one request, one recording */
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* "HZ\npid PID\nstart START\n": for this process, not one that had its pid */
    unsigned long long rpid = 0, rstart = 0;
    if (rh_req_field(buf, "pid", &rpid) != 0 || rh_req_field(buf, "start", &rstart) != 0 ||
        rpid != (unsigned long long)getpid() || !rstart || rstart != rh_ctl_start_time()) {
        rh_warn("ignoring the CPU rate request %s: it does not name this process (pid %d and "
                "its start time)",
                path, (int)getpid());
        return 0;
    }
    buf[strcspn(buf, "\n")] = '\0';
    unsigned hz;
    if (rh_parse_uint(buf, 1, RH_MAX_CPU_HZ, &hz) != 0) {
        rh_warn("ignoring the CPU rate request %s: expected 1 to %u", path, RH_MAX_CPU_HZ);
        return 0;
    }
    return hz;
}

/* Checks that dir is a directory we may create files in. Returns 0 or errno. */
static int rh_check_dir(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return errno;
    if (!S_ISDIR(st.st_mode))
        return ENOTDIR;
    if (access(dir, W_OK | X_OK) != 0)
        return errno;
    return 0;
}

static void rh_close_cut_locked(void);

/* The exit work (exit's last destructor, _exit, exec, daemon) has begun in
 * this process: no recording may start after its final trailer. */
static int rh_exit_begun(void)
{
    return __atomic_load_n(&rh_exit_done_pid, __ATOMIC_SEQ_CST) == rh_sys_getpid();
}

/* rheaper_enable's work; the caller holds rh_ctl_lock and the guard. */
static int rh_enable_ctl(const struct rheaper_config *cfg)
{
    rh_close_cut_locked();
    rh_spin_lock(&rh_prof_lock);
    int rc = RHEAPER_OK;
    /* Under rh_prof_lock, which the exit flush takes after marking its
     * start: either this start comes first and the flush writes its trailer,
     * or it sees the exit and creates nothing. */
    if (rh_exit_begun()) {
        rc = RHEAPER_ERR_FILE;
        goto out;
    }
    if (rh_recording(__atomic_load_n(&rh_state, __ATOMIC_RELAXED))) {
        rc = RHEAPER_ERR_ALREADY;
        goto out;
    }
    struct rh_config c = rh_cfg_env;
    if (cfg) {
        if (cfg->max_stack_depth)
            c.max_stack_depth = cfg->max_stack_depth > RH_MAX_STACK_DEPTH ? RH_MAX_STACK_DEPTH
                                                                          : cfg->max_stack_depth;
        if (cfg->max_trackers)
            c.max_trackers =
                cfg->max_trackers > RH_MAX_TRACKERS ? RH_MAX_TRACKERS : cfg->max_trackers;
        if (cfg->tracker_event_buffer_size) {
            unsigned b = cfg->tracker_event_buffer_size;
            c.buffer_size = b < RH_MIN_BUFFER   ? RH_MIN_BUFFER
                            : b > RH_MAX_BUFFER ? RH_MAX_BUFFER
                                                : b;
        }
        if (cfg->sample_rate != 0.0) {
            /* the seed's TrackerConfig.sample_rate: 0 < r < 1 samples, r >= 1
             * records everything, anything else is ignored */
            double r = cfg->sample_rate;
            if (r > 0.0 && r < 1.0) {
                c.sample_mode = RH_SAMPLE_RATE;
                c.sample_threshold = (uint64_t)(r * 18446744073709551616.0);
                if (!c.sample_threshold)
                    c.sample_threshold = 1;
            } else if (r >= 1.0) {
                c.sample_mode = RH_SAMPLE_NONE;
            } else {
                rh_warn("ignoring sample_rate: expected 0 < r <= 1");
            }
        }
        if (cfg->profile_dir) {
            size_t n = strlen(cfg->profile_dir);
            if (!n || n >= sizeof c.profile_dir - 64) {
                rh_warn("profile directory name empty or too long (%zu bytes)", n);
                rc = RHEAPER_ERR_DIR;
                goto out;
            }
            memcpy(c.profile_dir, cfg->profile_dir, n + 1);
        }
        if (cfg->cpu_hz)
            c.cpu_hz = cfg->cpu_hz > RH_MAX_CPU_HZ ? RH_MAX_CPU_HZ : cfg->cpu_hz;
    } else if (rh_ctl_armed()) {
        unsigned hz = rh_cpu_requested_hz(); /* rheaper record -p PID --cpu-hz N */
        if (hz)
            c.cpu_hz = hz;
    }
    int err = rh_check_dir(c.profile_dir);
    if (err) {
        rh_warn("cannot use profile directory %s: %s", c.profile_dir, rh_arch_strerror(err));
        rc = RHEAPER_ERR_DIR;
        goto out;
    }
    rh_cfg = c;
    rh_sample_configure();
    rh_live_clear(); /* the last recording's blocks are not this one's */
    rh_prof.max_chunk = rh_config_max_chunk();
    __atomic_store_n(&rh_prof.pending, 0, __ATOMIC_RELAXED);
    rc = rh_file_create_locked();
    if (rc == RHEAPER_OK) {
        rh_state_set(rh_on_state());
        if (rh_ctl_armed())
            rh_ctl_marker_update(); /* "recording" */
    }
out:
    rh_spin_unlock(&rh_prof_lock);
    if (rc == RHEAPER_OK) {
        rh_prof.mod_early = !rh_ctor_ran;
        rh_modules_snapshot(1);
        if (rh_ctor_ran)
            rh_stream_start(); /* the chunks' helper starts at a safe point (RH_SES_HELPER) */
        rh_cpu_init(); /* cpu_hz may come from cfg */
        rh_cpu_start();
    }
    return rc;
}

int rheaper_enable(const struct rheaper_config *cfg)
{
    int g = rh_guard_enter();
    if (__atomic_load_n(&rh_init_state, __ATOMIC_ACQUIRE) != 2)
        rh_init_lazy();
    rh_spin_lock(&rh_ctl_lock);
    int rc = rh_enable_ctl(cfg);
    rh_spin_unlock(&rh_ctl_lock);
    rh_guard_leave(g);
    return rc;
}

/* Seals the caller's and the shared chunk and writes the trailer. Caller holds
 * rh_shared_lock and rh_prof_lock. */
static void rh_flush_locked(int close_fd)
{
    if (close_fd)
        rh_cpu_stop(); /* no samples after the trailer */
    rh_thread_seal_self_locked();
    rh_thread_names_locked(); /* the names of the threads still running */
    if (rh_shared.chunk && rh_shared.epoch == rh_epoch)
        rh_writer_seal(&rh_shared, 1);
    rh_file_close_locked(close_fd);
}

/* rheaper_disable's work; the caller holds rh_ctl_lock and the guard. */
static int rh_disable_ctl(void)
{
    rh_close_cut_locked();
    rh_mem_final(); /* before the locks: mallinfo2 takes the allocator's */
    rh_spin_lock(&rh_shared_lock);
    rh_spin_lock(&rh_prof_lock);
    int rc = RHEAPER_OK;
    if (!rh_recording(__atomic_load_n(&rh_state, __ATOMIC_RELAXED))) {
        rc = RHEAPER_ERR_NOT_ENABLED;
    } else {
        rh_state_set(RH_OFF);
        if (rh_prof.pending && !rh_prof.open)
            rh_file_create_locked(); /* enabled from the environment, nothing recorded yet */
        __atomic_store_n(&rh_prof.pending, 0, __ATOMIC_RELAXED);
        rh_flush_locked(1);
    }
    rh_spin_unlock(&rh_prof_lock);
    rh_spin_unlock(&rh_shared_lock);
    return rc;
}

void rh_stop_clean(uint32_t reason)
{
    rh_spin_lock(&rh_ctl_lock);
    if (rh_recording(RH_STATE(__atomic_load_n(&rh_state, __ATOMIC_ACQUIRE)))) {
        rh_spin_lock(&rh_prof_lock);
        if (rh_prof.pending && !rh_prof.open && rh_file_create_locked() != RHEAPER_OK)
            __atomic_store_n(&rh_prof.pending, 0, __ATOMIC_RELAXED);
        rh_prof.end_reason = reason;
        rh_spin_unlock(&rh_prof_lock);
        rh_disable_ctl();
    }
    rh_spin_unlock(&rh_ctl_lock);
}

int rheaper_disable(void)
{
    int g = rh_guard_enter();
    if (__atomic_load_n(&rh_init_state, __ATOMIC_ACQUIRE) != 2)
        rh_init_lazy();
    rh_spin_lock(&rh_ctl_lock);
    int rc = rh_disable_ctl();
    rh_spin_unlock(&rh_ctl_lock);
    rh_guard_leave(g);
    return rc;
}

/* The size limit stopped tracking (rh_file_map_chunk_locked): write the
 * trailer (end reason RIP_END_SIZE_LIMIT) and close the file. Caller holds
 * rh_ctl_lock. */
static void rh_close_cut_locked(void)
{
    if (!__atomic_load_n(&rh_prof.limit_hit, __ATOMIC_ACQUIRE))
        return;
    rh_spin_lock(&rh_shared_lock);
    rh_spin_lock(&rh_prof_lock);
    if (__atomic_exchange_n(&rh_prof.limit_hit, 0, __ATOMIC_ACQ_REL) && rh_prof.open) {
        rh_state_set(RH_OFF);
        rh_flush_locked(1);
    }
    rh_spin_unlock(&rh_prof_lock);
    rh_spin_unlock(&rh_shared_lock);
}

/* The control work behind RH_CTL, run by the first hooked call that sees it
 * (with the guard set, outside any signal handler's frame): the size limit's
 * clean close, then each toggle the signal asked for, in order. */
static void rh_ctl_run(void)
{
    if (rh_sys_getpid() == rh_proc_pid) /* not a vfork child's */
        rh_helper_ensure(rh_ctl_run); /* a fork child's own helper */
    /* Never wait here: the holder may be taking a module snapshot
     * (dl_iterate_phdr, the loader's lock) while this thread allocates inside
     * dlopen with that lock held. RH_CTL stays set, so a later call retries. */
    if (__atomic_exchange_n(&rh_ctl_lock, 1, __ATOMIC_ACQUIRE))
        return;
    /* The exit work has begun (its pause of the helper is bounded, so the
     * helper may get here later): nothing more, RH_CTL left for a failed
     * exec's process to take up. */
    if (rh_exit_begun()) {
        rh_spin_unlock(&rh_ctl_lock);
        return;
    }
    __atomic_fetch_and(&rh_state, ~RH_CTL, __ATOMIC_ACQ_REL);
    /* the stream sender's warning, printed from a program thread; the
     * recording it stopped is said in the marker */
    if (rh_stream_ctl() && rh_ctl_armed())
        rh_ctl_marker_update();
    rh_report_ctl(); /* RHEAPER_REPORT_SIGNAL */
    rh_close_cut_locked();
    if (rh_ctl_marker_stale() | rh_ctl_marker_take_dirty())
        rh_ctl_marker_update(); /* a fork child's own marker, or one left to do */
    /* Toggles that arrived together pair off: a second signal cancels a first
     * that has not taken effect (rheaper record gives up on an idle process),
     * so it leaves no recording behind. */
    if (rh_ctl_take_toggles() & 1u) {
        if (rh_recording(__atomic_load_n(&rh_state, __ATOMIC_ACQUIRE)))
            rh_disable_ctl();
        else if (rh_enable_ctl(NULL) != RHEAPER_OK && !rh_exit_begun())
            rh_ctl_start_failed();
    }
    rh_spin_unlock(&rh_ctl_lock);
}

int rheaper_is_enabled(void)
{
    return rh_recording(__atomic_load_n(&rh_state, __ATOMIC_ACQUIRE));
}

const char *rheaper_profile_path(void)
{
    return rh_prof.path;
}

const char *rheaper_strerror(int rc)
{
    switch (rc) {
    case RHEAPER_OK:
        return "success";
    case RHEAPER_ERR_ALREADY:
        return "tracking is already enabled";
    case RHEAPER_ERR_DIR:
        return "the profile directory is missing or not writable";
    case RHEAPER_ERR_FILE:
        return "the profile file could not be created";
    case RHEAPER_ERR_NOMEM:
        return "the runtime could not map its memory";
    case RHEAPER_ERR_NOT_ENABLED:
        return "tracking is not enabled";
    case RHEAPER_ERR_NO_REPORTS:
        return "reports are off (set RHEAPER_REPORTS=1 before the program starts)";
    default:
        return "unknown rheaper error";
    }
}

void rh_modules_changed(void)
{
    if (!rh_recording(__atomic_load_n(&rh_state, __ATOMIC_RELAXED)) ||
        !__atomic_load_n(&rh_prof.open, __ATOMIC_ACQUIRE))
        return;
    int g = rh_guard_enter();
    rh_modules_snapshot(0);
    rh_guard_leave(g);
}

/* A fork child's own pid is the constructor's from now on (registered by
 * the constructor, so also for a fork before the runtime started). */
static void rh_ctor_fork_child(void)
{
    __atomic_store_n(&rh_ctor_pid, rh_sys_getpid(), __ATOMIC_RELAXED);
}

/* Runs first among constructors: libc is ready, so a module snapshot taken
 * before main (static programs allocate that early) is retaken here. */
__attribute__((constructor(101))) static void rh_runtime_ctor(void)
{
    rh_session_install(rh_session_dispatch);
    __atomic_store_n(&rh_ctor_pid, rh_sys_getpid(), __ATOMIC_RELAXED);
    {
        int g = rh_guard_enter(); /* pthread_atfork may allocate */
        (void)pthread_atfork(NULL, NULL, rh_ctor_fork_child);
        rh_guard_leave(g);
    }
    rh_ctor_ran = 1;
    if (__atomic_load_n(&rh_init_state, __ATOMIC_ACQUIRE) == 2) {
        int g = rh_guard_enter();
        rh_helper_ensure(rh_ctl_run); /* armed before libc was ready */
        rh_guard_leave(g);
    }
    if (rh_prof.mod_early && __atomic_load_n(&rh_prof.open, __ATOMIC_ACQUIRE)) {
        int g = rh_guard_enter();
        rh_prof.mod_early = 0;
        rh_modules_snapshot(1);
        rh_stream_start(); /* a recording started before main */
        rh_guard_leave(g);
    }
}

/* Runs last at exit: trailer, the caller's chunk sealed, one line on stderr.
 * The file stays open, so events after this land in new chunks; a second call
 * (or a later rheaper_disable) finds the work done. */
static void rh_runtime_dtor_flush(int mem_final);
static void rh_exit_work(int mem_final);
/* The exit work in progress is an exec's (rh_exit_now, RH_EXIT_EXEC). */
static int rh_exit_exec;

__attribute__((destructor(101))) static void rh_runtime_dtor(void)
{
    __atomic_store_n(&rh_exit_done_pid, rh_sys_getpid(), __ATOMIC_SEQ_CST);
    rh_exit_work(1);
}

/* This thread did the exit work rh_exit_now began (undone only then: a
 * failed exec of a thread whose rh_exit_now found the work done, or did
 * nothing, resumes nothing). */
static __thread int rh_tls_exit_did __attribute__((tls_model("initial-exec")));

void rh_exit_undo(void)
{
    if (!rh_tls_exit_did)
        return;
    rh_tls_exit_did = 0;
    int e = errno;
    int pid = rh_sys_getpid(), done = pid;
    __atomic_compare_exchange_n(&rh_exit_done_pid, &done, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
    rh_helper_resume();
    if (pid == rh_proc_pid && rh_prof.end_reason == RIP_END_EXEC) {
        /* The exec failed and the process goes on: its exit writes a second
         * trailer, which readers take over the first (the last one wins). */
        int g = rh_guard_enter();
        rh_spin_lock(&rh_prof_lock);
        rh_prof.end_reason = RIP_END_NORMAL;
        rh_prof.exit_flushed = 0;
        rh_spin_unlock(&rh_prof_lock);
        rh_guard_leave(g);
    }
    errno = e;
}

void rh_exit_fork_child(void)
{
    rh_proc_pid = rh_sys_getpid();
    __atomic_store_n(&rh_ctor_pid, rh_proc_pid, __ATOMIC_RELAXED);
    rh_ctl_lock = 0; /* held by a parent's thread (the helper) that the child has not */
}

void rh_exit_now(int mem_final)
{
    /* Inside the runtime or a hooked call (a signal handler's _exit there):
     * this thread may hold the locks the close needs. */
    if (rh_guard || __atomic_load_n(&rh_init_state, __ATOMIC_ACQUIRE) != 2)
        return;
    int pid = rh_sys_getpid();
    if (pid != rh_proc_pid)
        return; /* a vfork child (posix_spawn's too): the profile is its parent's */
    if (__atomic_exchange_n(&rh_exit_done_pid, pid, __ATOMIC_ACQ_REL) == pid)
        return;
    int e = errno;
    rh_tls_exit_did = 1;
    rh_exit_exec = mem_final == RH_EXIT_EXEC;
    rh_exit_work(mem_final == 1);
    rh_exit_exec = 0;
    errno = e;
}

/* The exit work: the cut close of a size limit, the trailer, the stream's
 * drain, the marker. mem_final 0: no final memory sample (it asks the
 * allocator, whose lock an interrupted thread may hold). */
static void rh_exit_work(int mem_final)
{
    rh_helper_pause(); /* no toggle after the final trailer */
    if (__atomic_load_n(&rh_prof.limit_hit, __ATOMIC_ACQUIRE)) {
        int g = rh_guard_enter();
        rh_spin_lock(&rh_ctl_lock);
        rh_close_cut_locked();
        rh_spin_unlock(&rh_ctl_lock);
        rh_guard_leave(g);
    }
    rh_runtime_dtor_flush(mem_final);
    if (rh_stream_on()) { /* the queue drained and confirmed, or one warning */
        int g = rh_guard_enter();
        if (rh_stream_exit() && rh_ctl_armed())
            rh_ctl_marker_update(); /* the sender's warning stopped the recording */
        rh_guard_leave(g);
    }
    /* Last: the process is going, `rheaper record` stops waiting for it. */
    if (rh_ctl_armed())
        rh_ctl_marker_remove();
}

static void rh_runtime_dtor_flush(int mem_final)
{
    if (!rh_recording(__atomic_load_n(&rh_state, __ATOMIC_ACQUIRE)))
        return;
    int g = rh_guard_enter();
    if (mem_final && rh_prof.open && !rh_prof.exit_flushed)
        rh_mem_final(); /* before the locks: mallinfo2 takes the allocator's */
    rh_spin_lock(&rh_shared_lock);
    rh_spin_lock(&rh_prof_lock);
    if (rh_prof.open && !rh_prof.exit_flushed) {
        if (rh_exit_exec && rh_prof.end_reason == RIP_END_NORMAL)
            rh_prof.end_reason = RIP_END_EXEC; /* list joins it with the new image */
        rh_flush_locked(0);
    }
    rh_spin_unlock(&rh_prof_lock);
    rh_spin_unlock(&rh_shared_lock);
    rh_guard_leave(g);
}
