/* rh_session.c: a recording's file from creation to close, and fork.
 *
 * The session layer (docs/design.md, "Runtime") decides when a recording
 * starts and ends; this file does the file's part. rh_file_create_locked
 * creates dir/rip-<pid> (or the RHEAPER_PROFILE_NAME template's name) with
 * O_EXCL|O_NOFOLLOW and mode 0600, or rip-<pid>.N when that name is taken, so
 * nothing is ever overwritten; writes the 4096-byte header (times, clock,
 * configuration, the executable, the command line and fork origin); maps a
 * fresh slot array and stack table; and bumps rh_epoch, which sends every
 * writer of the old file to the slow path. Under RHEAPER_STREAM there is no
 * file: the header goes onto the sender's queue. rh_file_close_locked writes
 * the trailer (totals, end reason, stream, CPU and sampling fields, the
 * title) as a whole chunk and says "wrote ..."; the exit flush keeps the file
 * open so recording can go on after it.
 *
 * fork: the prepare handler takes rh_ctl_lock, rh_shared_lock and rh_prof_lock (and the
 * core's leaf locks), so the child sees no half-done chunk operation; a
 * pending profile (the lazy start) is created first so the child can name its
 * parent's. The child drops every inherited chunk mapping unsealed (they
 * belong to the parent's file), forgets the file without touching it (the
 * runtime holds no fd) and arms the lazy creation of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rh_session.h"
#include "rheaper.h"

/* Writes the directory part of the profile path into buf: the configured
 * directory, made absolute with the current directory when it is relative.
 * Returns its length. */
static size_t rh_dir_prefix(char *buf, size_t size)
{
    const char *dir = rh_cfg.profile_dir;
    size_t n = 0;
    if (dir[0] != '/' && getcwd(buf, size - 256)) {
        n = strlen(buf);
        if (!strcmp(dir, "."))
            return n;
        if (n && buf[n - 1] != '/')
            buf[n++] = '/';
    }
    size_t d = strlen(dir);
    if (n + d >= size - 64)
        d = size - 64 - n;
    memcpy(buf + n, dir, d);
    n += d;
    while (n > 1 && buf[n - 1] == '/')
        n--;
    buf[n] = '\0';
    return n;
}

/* Expands RHEAPER_PROFILE_NAME (rh_cfg.profile_name; "" means rip-%p) into buf
 * for recording number seq (rh_expand_template, rh_log.c). Returns the length. */
static size_t rh_expand_name(char *buf, size_t size, uint32_t seq)
{
    const char *t = rh_cfg.profile_name[0] ? rh_cfg.profile_name : "rip-%p";
    return rh_expand_template(buf, size, t, seq);
}

/* Fills the 4096-byte header: times, clock, config, exe and cmdline. */
static void rh_fill_header(uint8_t *hdr)
{
    struct rip_file_header *h = (struct rip_file_header *)hdr;
    memset(hdr, 0, RIP_HEADER_SIZE);
    memcpy(h->magic, RIP_MAGIC, 8);
    h->version = RIP_VERSION;
    h->header_size = RIP_HEADER_SIZE;
    h->pid = (uint32_t)getpid();
    h->ppid = (uint32_t)getppid();
    h->start_realtime_ns = rh_real_ns();
    rh_calib_pair(&h->start_tick, &h->start_mono_ns);
    h->clock_kind = rh_clock_kind();
    h->tick_shift = rh_clock_shift;
    h->max_stack_depth = rh_cfg.max_stack_depth;
    h->chunk_size = rh_prof.max_chunk;
    h->ticks_per_sec = rh_ticks_per_sec();
    h->flags |= RIP_HDR_F_MMAPS; /* this runtime records mmap and mallopt calls */
    if (rh_mem_enabled())
        h->flags |= RIP_HDR_F_MEMORY; /* memory samples (rh_memsample.c) */
    if (rh_cfg.cpu_hz) {              /* version 3: CPU sampling */
        uint32_t hz = rh_cfg.cpu_hz, sig = (uint32_t)rh_cfg.cpu_signal;
        h->flags |= RIP_HDR_F_CPU;
        memcpy(hdr + RIP_HDR_CPU_HZ_OFF, &hz, 4);
        memcpy(hdr + RIP_HDR_CPU_SIG_OFF, &sig, 4);
    }
    rh_sample_header(hdr); /* v3: sampling */

    char *exe = (char *)hdr + RIP_HDR_EXE_OFF;
    ssize_t n = readlink("/proc/self/exe", exe, RIP_HDR_EXE_MAX - 1);
    if (n < 0)
        n = 0;
    exe[n] = '\0';
    h->exe_len = (uint32_t)n;

    h->cmd_len = rh_origin_header(hdr, &h->flags); /* the start command line, the fork */
    h->crc = rip_crc32c(0, hdr, RIP_HEADER_SIZE);
}

/* rh_file_create_locked for RHEAPER_STREAM: no file; rh_prof.path names the
 * collector, and the header goes onto the stream's queue (rh_stream.c). */
static int rh_stream_create_locked(const uint8_t *hdr, struct stat *st)
{
    rh_fmt(rh_prof.path, sizeof rh_prof.path, "collector %s", rh_cfg.stream);
    memset(st, 0, sizeof *st);
    /* the epoch this recording will have (rh_file_create_locked bumps it) */
    if (rh_stream_begin_locked(hdr, rh_epoch + 1) != 0) {
        rh_warn("cannot map the stream's queue for %s: %s; tracking stays off", rh_cfg.stream,
                rh_sys_strerror(errno));
        return RHEAPER_ERR_NOMEM;
    }
    return RHEAPER_OK;
}

int rh_file_create_locked(void)
{
    rh_assert_internal(__atomic_load_n(&rh_prof_lock, __ATOMIC_RELAXED));
    /* The header first: it reads /proc/self/cmdline through a second fd, which
     * under a tight fd limit is only free while the profile is not open. */
    uint8_t hdr[RIP_HEADER_SIZE];
    rh_fill_header(hdr);
    struct stat st;
    uint32_t seq = rh_prof.seq + 1;
    if (rh_stream_on()) {
        int rc = rh_stream_create_locked(hdr, &st);
        if (rc != RHEAPER_OK)
            return rc;
        goto tables;
    }
    char path[RH_PATH_MAX];
    size_t n = rh_dir_prefix(path, sizeof path);
    path[n++] = '/';
    n += rh_expand_name(path + n, sizeof path - n - 16, seq);
    int fd = -1;
    for (unsigned k = 0; k < 100000; k++) {
        if (k)
            rh_fmt(path + n, sizeof path - n, ".%u", k);
        fd = rh_open_safe(path, O_RDWR | O_CREAT | O_EXCL, 0600, 0, NULL, NULL);
        if (fd >= 0 || (errno != EEXIST && errno != EINTR))
            break;
    }
    memcpy(rh_prof.path, path, sizeof path);
    if (fd < 0) {
        rh_warn("cannot create profile %s: %s; tracking stays off", path, rh_sys_strerror(errno));
        return RHEAPER_ERR_FILE;
    }

    int err = rh_file_check_fsize(0, RIP_HEADER_SIZE);
    if (!err)
        err = rh_sys_pwrite_all(fd, hdr, RIP_HEADER_SIZE, 0);
    if (!err && fstat(fd, &st) != 0)
        err = errno;
    rh_sys_close(fd); /* no fd is held between operations */
    if (err) {
        rh_warn("cannot write profile header %s at offset 0: %s; tracking stays off", path,
                rh_sys_strerror(err));
        unlink(path);
        return RHEAPER_ERR_FILE;
    }

tables:;
    size_t sbytes = (size_t)rh_cfg.max_trackers * sizeof(struct rh_slot);
    sbytes = (sbytes + 4095) & ~(size_t)4095;
    void *slots = rh_sys_mmap(NULL, sbytes, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    struct rh_stack_table *stacks = slots == MAP_FAILED ? NULL : rh_stack_table_new();
    if (stacks)
        stacks->max_depth = rh_cfg.max_stack_depth;
    if (!stacks) {
        int e = errno;
        if (slots != MAP_FAILED)
            rh_sys_munmap(slots, sbytes);
        rh_warn("cannot map the runtime's tables for %s: %s; tracking stays off", rh_prof.path,
                rh_sys_strerror(e));
        if (!rh_stream_on())
            unlink(rh_prof.path);
        return RHEAPER_ERR_NOMEM;
    }
    /* Old tables are leaked on purpose: a racing thread may still read them.
     * Their memory is not: the old stack table's entries past its first page
     * are given back (a late reader sees zeroes, i.e. empty entries), so a
     * server toggled many times keeps only address space, 32 MiB a recording
     * (docs/record.md). */
    if (rh_prof.stacks) {
        size_t ob = sizeof(struct rh_stack_table) +
                    (size_t)(rh_prof.stacks->mask + 1) * sizeof(struct rh_stack_entry);
        ob = (ob + 4095) & ~(size_t)4095;
        if (ob > 4096)
            madvise((char *)rh_prof.stacks + 4096, ob - 4096, MADV_DONTNEED);
    }
    rh_prof.slots = slots;
    rh_prof.nslots = rh_cfg.max_trackers;
    rh_report_file_start(stacks); /* in-process reports: counters of this recording */
    rh_prof.stacks = stacks;
    rh_prof.dev = (uint64_t)st.st_dev;
    rh_prof.ino = (uint64_t)st.st_ino;
    rh_prof.starved_warned = 0;
    rh_prof.end = RIP_HEADER_SIZE;
    __atomic_store_n(&rh_prof.pending, 0, __ATOMIC_RELAXED);
    rh_prof.exit_flushed = 0;
    rh_prof.events_released = 0;
    /* atomic: a thread still in flight from the last file may count a loss */
    __atomic_store_n(&rh_prof.lost, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&rh_prof.reentered, 0, __ATOMIC_RELAXED);
    rh_cpu_counts_reset(); /* the trailer counts this file's CPU samples */
    __atomic_store_n(&rh_prof.sample_dropped, 0, __ATOMIC_RELAXED);
    rh_prof.mod_adds = rh_prof.mod_subs = ~0ull;
    rh_prof.seq = seq;
    rh_prof.end_reason = RIP_END_NORMAL;
    __atomic_store_n(&rh_prof.limit_hit, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&rh_prof.open, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&rh_epoch, 1, __ATOMIC_RELEASE);
    rh_mem_start();
    /* the marker says "recording" once the state is on (rh_api.c) */
    return RHEAPER_OK;
}

/* ---- close -------------------------------------------------------------- */

void rh_file_close_locked(int close_fd)
{
    if (!rh_prof.open)
        return;
    rh_mem_stop();
    rh_thread_spares_drop_locked(); /* sealed empty: no open chunk nobody writes */
    rh_spare_kick(); /* the helper sees the end of the recording at once */
    uint64_t events = rh_prof.events_released;
    uint32_t open_chunks = 0;
    rh_thread_totals_locked(&events, &open_chunks);
    if (rh_shared.epoch == rh_epoch)
        events += rh_shared.total_events;
    uint8_t t[RIP_TRAILER_SIZE];
    memset(t, 0, sizeof t);
    uint64_t end_tick, end_ns;
    rh_calib_pair(&end_tick, &end_ns);
    uint64_t stacks = __atomic_load_n(&rh_prof.stacks->next_id, __ATOMIC_RELAXED) - 1;
    uint64_t lost = __atomic_load_n(&rh_prof.lost, __ATOMIC_RELAXED);
    uint32_t zero = 0;
    memcpy(t, &events, 8);
    memcpy(t + 8, &end_tick, 8);
    memcpy(t + 16, &end_ns, 8);
    memcpy(t + 24, &stacks, 8);
    memcpy(t + 32, &lost, 8);
    memcpy(t + 40, &open_chunks, 4);
    memcpy(t + 44, &zero, 4);
    uint64_t reentered = __atomic_load_n(&rh_prof.reentered, __ATOMIC_RELAXED);
    memcpy(t + 48, &reentered, 8);                                  /* format v2 */
    memcpy(t + RIP_TRAILER_END_REASON_OFF, &rh_prof.end_reason, 4); /* v2 */
    memcpy(t + 60, &zero, 4);
    if (rh_stream_on())
        rh_stream_trailer_fields(t); /* v3: streaming */
    uint64_t cpu_samples, cpu_dropped;
    rh_cpu_counts(&cpu_samples, &cpu_dropped);
    memcpy(t + RIP_TRAILER_CPU_OFF, &cpu_samples, 8); /* v3: CPU sampling */
    memcpy(t + RIP_TRAILER_CPU_OFF + 8, &cpu_dropped, 8);
    uint64_t dropped = __atomic_load_n(&rh_prof.sample_dropped, __ATOMIC_RELAXED);
    uint64_t peak = rh_live_peak();
    memcpy(t + RIP_TRAILER_SAMPLE_OFF, &dropped, 8); /* v3: sampling */
    memcpy(t + RIP_TRAILER_SAMPLE_OFF + 8, &peak, 8);
    uint32_t tlen = rh_origin_trailer(t); /* title and name at the end */
    if (rh_file_write_chunk_locked(RIP_CHUNK_TRAILER, t, tlen) != 0)
        return;
    if (rh_stream_on()) {
        rh_stream_end_locked(rh_epoch);
        rh_stream_closed_locked(events);
    } else {
        rh_notice("wrote %s (%llu events)", rh_prof.path, (unsigned long long)events);
    }
    if (close_fd) {
        __atomic_store_n(&rh_prof.open, 0, __ATOMIC_RELEASE);
    } else {
        rh_prof.exit_flushed = 1;
    }
    if (rh_ctl_armed())
        rh_ctl_marker_update();
}

void rh_file_forget_in_child(void)
{
    /* Nothing to close: the runtime holds no fd, so a number the child reuses
     * is never touched. */
    int was = rh_prof.open || rh_prof.pending;
    rh_prof.open = 0;
    rh_prof.exit_flushed = 0;
    rh_prof.slots = NULL;
    rh_prof.stacks = NULL;
    rh_prof.path[0] = '\0';
    __atomic_store_n(&rh_prof.pending,
                     was && rh_recording(__atomic_load_n(&rh_state, __ATOMIC_RELAXED)),
                     __ATOMIC_RELAXED);
    rh_epoch++;
    rh_ctl_fork_child();
}

/* ---- fork --------------------------------------------------------------- */

/* The forking thread's guard, set across fork so that a sampling signal
 * between prepare and parent/child (locks held) is dropped, not deadlocked. */
static __thread int rh_tls_fork_guard __attribute__((tls_model("local-exec")));
/* The prepare handler took rh_ctl_lock (not when the guard was set: the
 * forking thread may be inside the control work itself). */
static __thread int rh_tls_fork_ctl __attribute__((tls_model("local-exec")));
/* The prepare handler created the pending profile (rh_file_create_for_fork_locked). */
static __thread int rh_tls_fork_created __attribute__((tls_model("local-exec")));

static void rh_fork_prepare(void)
{
    rh_tls_fork_guard = rh_guard_enter();
    rh_tls_fork_ctl = !rh_tls_fork_guard;
    if (rh_tls_fork_ctl)
        rh_ctl_fork_lock(1);
    rh_spin_lock(&rh_shared_lock);
    rh_spin_lock(&rh_prof_lock);
    rh_origin_fork_prepare();
    rh_tls_fork_created = rh_file_create_for_fork_locked();
    rh_kinds_fork(0);
    rh_region_fork(0);
    rh_live_fork(0);
    rh_stream_fork(0);
    rh_cpu_fork(0); /* last: a close holds the two above when it stops the timers */
}

static void rh_fork_parent(void)
{
    rh_stream_fork(1);
    rh_cpu_fork(1);
    rh_live_fork(1);
    rh_kinds_fork(1);
    rh_region_fork(1);
    rh_spin_unlock(&rh_prof_lock);
    rh_spin_unlock(&rh_shared_lock);
    if (rh_tls_fork_ctl)
        rh_ctl_fork_lock(0);
    if (rh_tls_fork_created)
        rh_file_created_after_fork(); /* its module map, now that no lock is held */
    rh_guard_leave(rh_tls_fork_guard);
}

static void rh_fork_child(void)
{
    rh_thread_fork_child(); /* the parent's chunks dropped unsealed, no slot */
    rh_origin_fork_child(rh_prof.open && rh_recording(__atomic_load_n(&rh_state, __ATOMIC_RELAXED)));
    rh_file_forget_in_child();
    rh_exit_fork_child();
    rh_origin_fork_child_done();
    rh_prof_lock = 0;
    rh_shared_lock = 0;
    rh_kinds_fork(2);
    rh_region_fork(2);
    rh_stream_fork(2);
    rh_cpu_fork(2);
    rh_live_fork(2);
    rh_guard_leave(rh_tls_fork_guard);
}

void rh_fork_init(void)
{
    pthread_atfork(rh_fork_prepare, rh_fork_parent, rh_fork_child);
}
