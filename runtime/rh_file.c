/* rh_file.c: the profile's chunk space: chunks mapped and written, module
 * snapshots, and the stop on a failure.
 *
 * Chunk space is handed out from the file's end offset under rh_prof_lock (a
 * cold path: once per chunk); each reservation first checks RLIMIT_FSIZE (so
 * the runtime never raises SIGXFSZ) and reserves the disk with fallocate (so a
 * full disk shows up here, not as SIGBUS on a store into the mapping). Any
 * failure prints one line, turns tracking off and leaves what was written
 * convertible. MODULES and TRAILER chunks are written whole with pwrite. The
 * file itself is created and closed by the session layer (rh_session.c).
 *
 * File descriptors: the runtime holds none between operations. The program may
 * close, dup2 over or reuse any fd number at any moment (daemons close every fd
 * at start-up and reopen their log on fd 3), so each operation that needs the
 * file (map a chunk, write a chunk) opens it by path (rh_open_safe: no link
 * followed, no FIFO waited on), checks that it is still the inode created,
 * does its work and closes it again: a MAP_SHARED mapping outlives its fd.
 * Every system call made here is a raw one (rh_sys_*), never a glibc
 * cancellation point, so a thread with a pending pthread_cancel cannot die
 * inside the runtime while holding rh_prof_lock. When the program has used up
 * its fd limit (EMFILE), the chunk is not mapped, the events that needed it
 * are counted lost (one warning) and the next chunk tries again: the
 * program's own open never fails because of the runtime.
 *
 * A size limit is one check of rh_prof.end against it in
 * rh_file_map_chunk_locked, the one place the file grows (then the session
 * layer's close at the next hooked call, not rh_file_fail_locked, so the
 * profile ends clean). Streaming (RHEAPER_STREAM): no file at all; chunks are
 * anonymous memory and every finished piece goes to rh_stream.c's queue,
 * whose sender keeps its socket in a descriptor table of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rh_recording.h"
#include "rheaper.h"

#define RH_MOD_SCRATCH (1u << 20)

int rh_file_check_fsize(uint64_t off, uint64_t len)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        off + len > (uint64_t)rl.rlim_cur)
        return EFBIG;
    return 0;
}

/* Reserves disk for [off, off+len): raw fallocate, ftruncate when the file
 * system cannot. Returns 0 or an errno value. */
static int rh_reserve_disk(int fd, uint64_t off, uint64_t len)
{
    int err = rh_file_check_fsize(off, len);
    if (err)
        return err;
    for (;;) {
        if (rh_arch_fallocate(fd, 0, (uint64_t)off, (uint64_t)len) == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno != EOPNOTSUPP)
            return errno;
        struct stat st;
        if (fstat(fd, &st) != 0)
            return errno;
        if ((uint64_t)st.st_size >= off + len)
            return 0;
        return rh_arch_ftruncate(fd, (uint64_t)(off + len)) == 0 ? 0 : errno;
    }
}

void rh_file_fail_locked(const char *what, int err)
{
    rh_warn("%s: %s; tracking stopped", what, rh_sys_strerror(err));
    rh_state_set(RH_OFF);
    __atomic_store_n(&rh_prof.open, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&rh_prof.pending, 0, __ATOMIC_RELAXED);
    rh_session_call(RH_SES_STOPPED); /* the marker says so when armed */
}

/* 1 when err means the process has no fd to spare (its own limit or the
 * system's): the program's business, so the runtime waits rather than stops. */
static int rh_fd_starved(int err)
{
    return err == EMFILE || err == ENFILE;
}

/* Opens the current profile for one operation: by path (rh_open_safe),
 * then checks it is the inode rh_file_create_locked made (a renamed or
 * replaced file is never written). Caller holds rh_prof_lock and closes the fd
 * with rh_sys_close before releasing it. Returns the fd, or -1 with *err set
 * (ESTALE for another inode). */
static int rh_file_open_locked(int *err)
{
    struct rh_fid want = {rh_prof.dev, rh_prof.ino};
    int fd = rh_open_safe(rh_prof.path, O_RDWR, 0, RH_OPEN_INODE, &want, NULL);
    if (fd < 0) {
        *err = errno == EINVAL ? ESTALE : errno; /* not a regular file: another one */
        return -1;
    }
    return fd;
}

/* The fd could not be opened for want of a free descriptor: warns once per
 * file and counts nothing here (the caller's event is counted lost). */
static void rh_file_starved_locked(void)
{
    if (!rh_prof.starved_warned) {
        rh_prof.starved_warned = 1;
        rh_warn("no free file descriptor to grow profile %s (the program holds all it may "
                "open); events are counted as lost until one is free",
                rh_prof.path);
    }
}

#ifdef MADV_POPULATE_WRITE
#define RH_MADV_POPULATE_WRITE MADV_POPULATE_WRITE
#else
#define RH_MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

void *rh_file_map_chunk_locked(uint32_t size)
{
    rh_assert_internal(__atomic_load_n(&rh_prof_lock, __ATOMIC_RELAXED));
    if (!rh_prof.open)
        return NULL;
    /* a writer asks for its stream's next size, capped at the file's largest
     * chunk, which holds a header and at least one event */
    if (!rh_assert(size <= rh_prof.max_chunk && size >= RIP_CHUNK_HDR_SIZE + RIP_MAX_EVENT_BYTES))
        return NULL;
    uint64_t off = rh_prof.end;
    if (rh_unlikely(rh_cfg.max_profile_size) && off + size > rh_cfg.max_profile_size) {
        /* The size limit: tracking stops at once (this chunk's events are
         * counted lost); the trailer needs rh_shared_lock, which may not be
         * taken under rh_prof_lock, so the next hooked call closes the file
         * cleanly (rh_api.c, rh_ctl_run). */
        if (!__atomic_exchange_n(&rh_prof.limit_hit, 1, __ATOMIC_ACQ_REL)) {
            rh_prof.end_reason = RIP_END_SIZE_LIMIT;
            rh_warn("profile %s reached RHEAPER_MAX_PROFILE_SIZE (%llu bytes); recording "
                    "stopped, the profile is closed cleanly",
                    rh_prof.path, (unsigned long long)rh_cfg.max_profile_size);
            rh_state_set(RH_OFF);
            rh_ctl_request();
        }
        return NULL;
    }
    if (rh_stream_on()) {
        /* streaming: the chunk lives in memory until the sender has sent it */
        void *a = rh_sys_mmap(NULL, size, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (a == MAP_FAILED) {
            char what[RH_PATH_MAX + 96];
            rh_fmt(what, sizeof what, "cannot map a chunk of %u bytes for the %s", size,
                   rh_prof.path);
            rh_file_fail_locked(what, errno);
            return NULL;
        }
        __atomic_fetch_add(&rh_prof.end, size, __ATOMIC_RELAXED);
        return a;
    }
    int err = 0;
    int fd = rh_file_open_locked(&err);
    if (fd < 0) {
        if (rh_fd_starved(err)) {
            rh_file_starved_locked();
            return NULL;
        }
        char what[RH_PATH_MAX + 96];
        rh_fmt(what, sizeof what, "cannot reopen profile %s to grow it", rh_prof.path);
        rh_file_fail_locked(what, err);
        return NULL;
    }
    err = rh_reserve_disk(fd, off, size);
    if (err) {
        rh_sys_close(fd);
        char what[RH_PATH_MAX + 96];
        rh_fmt(what, sizeof what, "cannot grow profile %s at offset %llu by %u bytes", rh_prof.path,
               (unsigned long long)off, size);
        rh_file_fail_locked(what, err);
        return NULL;
    }
    void *m = rh_sys_mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
    err = m == MAP_FAILED ? errno : 0;
    rh_sys_close(fd); /* the mapping outlives its fd */
    if (m == MAP_FAILED) {
        char what[RH_PATH_MAX + 96];
        rh_fmt(what, sizeof what, "cannot map profile %s at offset %llu", rh_prof.path,
               (unsigned long long)off);
        rh_file_fail_locked(what, err);
        return NULL;
    }
    /* Each chunk comes from a fresh open, so from fresh readahead state: its
     * first fault would read around (page cache for up to 128 KiB of zeros,
     * ~200 us per 256 KiB chunk; bench/chunk_cost.c). The runtime only
     * writes the chunk, front to back: no readaround. */
    madvise(m, size, MADV_RANDOM);
    /* RHEAPER_POPULATE=1 (off by default: no gain measured yet,
     * docs/benchmarks.md): supply the chunk's pages in one system call
     * instead of one write fault per page (the tracked Lua run takes one fault
     * per 4 KiB of profile). The pages hold the zeros fallocate gave them, so
     * nothing changes for a reader or a SIGKILL; kernels before 5.14 answer
     * EINVAL and the pages fault in as before. */
    if (rh_cfg.populate)
        madvise(m, size, RH_MADV_POPULATE_WRITE);
    __atomic_fetch_add(&rh_prof.end, size, __ATOMIC_RELAXED);
    return m;
}

int rh_file_write_chunk_locked(unsigned type, const void *payload, uint32_t len)
{
    rh_assert_internal(__atomic_load_n(&rh_prof_lock, __ATOMIC_RELAXED));
    if (!rh_prof.open)
        return -1;
    uint64_t size =
        ((uint64_t)RIP_CHUNK_HDR_SIZE + len + RIP_ALIGN - 1) & ~(uint64_t)(RIP_ALIGN - 1);
    uint64_t off = rh_prof.end;
    struct rip_chunk_header h;
    memset(&h, 0, sizeof h);
    h.magic = RIP_CHUNK_MAGIC;
    h.type = (uint8_t)type;
    h.flags = RIP_CHUNK_F_SEALED;
    h.header_size = RIP_CHUNK_HDR_SIZE;
    h.capacity = (uint32_t)(size - RIP_CHUNK_HDR_SIZE);
    h.used = len;
    h.slot = RIP_SLOT_SHARED;
    h.tid = rh_gettid();
    rh_calib_pair(&h.calib_tick, &h.calib_ns);
    h.crc = rip_chunk_crc(&h, payload);
    if (rh_stream_on()) {
        void *a = rh_sys_mmap(NULL, size, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (a == MAP_FAILED) {
            char what[RH_PATH_MAX + 96];
            rh_fmt(what, sizeof what, "cannot map a chunk of %u bytes for the %s", (unsigned)size,
                   rh_prof.path);
            rh_file_fail_locked(what, errno);
            return -1;
        }
        memcpy(a, &h, sizeof h);
        memcpy((uint8_t *)a + RIP_CHUNK_HDR_SIZE, payload, len);
        rh_stream_push(a, (uint32_t)size, rh_epoch, 1);
        rh_prof.end = off + size;
        return 0;
    }
    int err = 0;
    int fd = rh_file_open_locked(&err);
    if (fd >= 0) {
        err = rh_reserve_disk(fd, off, size);
        if (!err)
            err = rh_sys_pwrite_all(fd, payload, len, off + RIP_CHUNK_HDR_SIZE);
        if (!err)
            err = rh_sys_pwrite_all(fd, &h, sizeof h, off);
        rh_sys_close(fd);
    } else if (rh_fd_starved(err)) {
        rh_file_starved_locked(); /* a MODULES snapshot is retried at the next change */
        return -1;
    }
    if (err) {
        char what[RH_PATH_MAX + 96];
        rh_fmt(what, sizeof what, "cannot write profile %s at offset %llu", rh_prof.path,
               (unsigned long long)off);
        rh_file_fail_locked(what, err);
        return -1;
    }
    rh_prof.end = off + size;
    return 0;
}

/* ---- modules ------------------------------------------------------------ */

struct rh_mod_buf {
    uint8_t *p, *end;
    uint32_t count;
    int overflow;
    uint64_t adds, subs;
    char *work; /* RH_MOD_WORK bytes after end: reading /proc/self/maps */
};

/* Scratch for resolving a relative module name: a read buffer for
 * /proc/self/maps and the absolute path. */
#define RH_MOD_MAPS_BUF 12288u
#define RH_MOD_WORK (RH_MOD_MAPS_BUF + RIP_MAX_PATH)

static int rh_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* One line of /proc/self/maps ("start-end perms offset dev inode   path"):
 * when addr lies in [start, end) and the mapping names an absolute path,
 * copies the path (without " (deleted)") to out and returns its length;
 * else 0. */
static size_t rh_maps_line(const char *l, const char *e, uint64_t addr, char *out, size_t outlen)
{
    uint64_t lo = 0, hi = 0;
    int d;
    while (l < e && (d = rh_hexval(*l)) >= 0)
        lo = lo << 4 | (uint64_t)d, l++;
    if (l >= e || *l++ != '-')
        return 0;
    while (l < e && (d = rh_hexval(*l)) >= 0)
        hi = hi << 4 | (uint64_t)d, l++;
    if (addr < lo || addr >= hi)
        return 0;
    for (int f = 0; f < 4; f++) { /* perms, offset, device, inode */
        while (l < e && *l == ' ')
            l++;
        while (l < e && *l != ' ')
            l++;
    }
    while (l < e && *l == ' ')
        l++;
    if (l >= e || *l != '/')
        return 0;
    size_t n = (size_t)(e - l);
    if (n > 10 && !memcmp(e - 10, " (deleted)", 10))
        n -= 10;
    if (n >= outlen)
        return 0;
    memcpy(out, l, n);
    out[n] = '\0';
    return n;
}

/* The absolute path of a module the loader names relatively ("./plugin.so"
 * after dlopen("./plugin.so")): the file mapped at its first PT_LOAD, from
 * /proc/self/maps, which the kernel resolved when the module was mapped, so a
 * later chdir does not change it; else the current directory joined with the
 * name. Raw system calls, no allocation (work is the snapshot's scratch), the
 * descriptor lives only inside this call. Returns the path in work +
 * RH_MOD_MAPS_BUF, or NULL. */
static const char *rh_mod_abs_path(const struct dl_phdr_info *info, const char *name, char *work)
{
    char *out = work + RH_MOD_MAPS_BUF;
    uint64_t addr = 0;
    int have = 0;
    for (int i = 0; i < info->dlpi_phnum && !have; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD) {
            addr = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            have = 1;
        }
    int fd = -1;
    if (have)
        do
            fd = rh_open_proc("/proc/self/maps", O_RDONLY);
        while (fd < 0 && errno == EINTR);
    if (fd >= 0) {
        size_t fill = 0, found = 0;
        for (;;) {
            ssize_t r = rh_sys_read(fd, work + fill, RH_MOD_MAPS_BUF - fill);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            fill += (size_t)r;
            char *l = work, *end = work + fill, *nl;
            while (!found && (nl = memchr(l, '\n', (size_t)(end - l)))) {
                found = rh_maps_line(l, nl, addr, out, RIP_MAX_PATH);
                l = nl + 1;
            }
            if (found)
                break;
            fill = (size_t)(end - l);
            if (fill == RH_MOD_MAPS_BUF) /* a line longer than the buffer */
                fill = 0;
            memmove(work, l, fill);
        }
        rh_sys_close(fd);
        if (found)
            return out;
    }
    long n = rh_sys_getcwd(out, RIP_MAX_PATH);
    if (n <= 1 || out[0] != '/')
        return NULL;
    size_t len = strnlen(out, RIP_MAX_PATH);
    while (name[0] == '.' && name[1] == '/')
        name += 2;
    size_t nl = strnlen(name, RIP_MAX_PATH);
    if (len + 1 + nl >= RIP_MAX_PATH)
        return NULL;
    out[len] = '/';
    memcpy(out + len + 1, name, nl + 1);
    return out;
}

/* Appends len bytes, or marks the buffer overflowed. */
static void rh_mod_put(struct rh_mod_buf *b, const void *src, size_t len)
{
    if (b->overflow || (size_t)(b->end - b->p) < len) {
        b->overflow = 1;
        return;
    }
    memcpy(b->p, src, len);
    b->p += len;
}

/* Finds the GNU build id in the module's PT_NOTE segments. */
static const uint8_t *rh_build_id(const struct dl_phdr_info *info, uint8_t *len)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        size_t align = ph->p_align == 8 ? 8 : 4;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (end - p >= 12) {
            uint32_t namesz, descsz, type;
            memcpy(&namesz, p, 4);
            memcpy(&descsz, p + 4, 4);
            memcpy(&type, p + 8, 4);
            const uint8_t *name = p + 12;
            size_t nal = (namesz + align - 1) & ~(align - 1);
            size_t dal = (descsz + align - 1) & ~(align - 1);
            if (nal > (size_t)(end - name) || dal > (size_t)(end - name) - nal)
                break;
            const uint8_t *desc = name + nal;
            if (type == 3 /* NT_GNU_BUILD_ID */ && namesz == 4 && !memcmp(name, "GNU", 4) &&
                descsz && descsz <= 255) {
                *len = (uint8_t)descsz;
                return desc;
            }
            p = desc + dal;
        }
    }
    *len = 0;
    return NULL;
}

static int rh_mod_counts_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct rh_mod_buf *b = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        b->adds = info->dlpi_adds;
        b->subs = info->dlpi_subs;
    }
    return 1;
}

static int rh_mod_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct rh_mod_buf *b = arg;
    char exe[RIP_HDR_EXE_MAX];
    const char *path = info->dlpi_name ? info->dlpi_name : "";
    /* the first object is the program: glibc names it "", musl argv[0]
     * (dynamic) or "/proc/self/exe" (static); the link names the file */
    if (b->count == 0) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        path = exe;
    } else if (path[0] && path[0] != '/' && strchr(path, '/')) {
        /* dlopen("./plugin.so") or "lib/x.so": the profile names it absolutely
         * (a name without a slash is the vDSO's, which has no file) */
        const char *abs = rh_mod_abs_path(info, path, b->work);
        if (abs)
            path = abs;
    }
    uint64_t base = info->dlpi_addr;
    size_t plen = strnlen(path, RIP_MAX_PATH);
    uint16_t plen16 = (uint16_t)plen;
    uint8_t idlen;
    const uint8_t *id = rh_build_id(info, &idlen);
    uint16_t nranges = 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X))
            nranges++;
    rh_mod_put(b, &base, 8);
    rh_mod_put(b, &plen16, 2);
    rh_mod_put(b, path, plen);
    rh_mod_put(b, &idlen, 1);
    rh_mod_put(b, id, idlen);
    rh_mod_put(b, &nranges, 2);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uint64_t r[2] = {info->dlpi_addr + ph->p_vaddr,
                         info->dlpi_addr + ph->p_vaddr + ph->p_memsz};
        rh_mod_put(b, r, sizeof r);
    }
    if (b->overflow)
        return 1;
    b->count++;
    return 0;
}

void rh_modules_snapshot(int force)
{
    struct rh_mod_buf b = {0};
    b.adds = b.subs = ~0ull;
    dl_iterate_phdr(rh_mod_counts_cb, &b);
    if (!force && b.adds != ~0ull && b.adds == rh_prof.mod_adds && b.subs == rh_prof.mod_subs)
        return;
    uint8_t *scratch = rh_sys_mmap(NULL, RH_MOD_SCRATCH, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (scratch == MAP_FAILED)
        return;
    uint64_t tick = rh_now();
    memcpy(scratch, &tick, 8);
    b.p = scratch + 12;
    b.end = scratch + RH_MOD_SCRATCH - RH_MOD_WORK;
    b.work = (char *)b.end;
    dl_iterate_phdr(rh_mod_cb, &b);
    memcpy(scratch + 8, &b.count, 4);
    if (b.overflow)
        rh_warn("module map larger than %u bytes: only the first %u modules recorded",
                RH_MOD_SCRATCH, b.count);
    rh_spin_lock(&rh_prof_lock);
    if (rh_prof.open &&
        rh_file_write_chunk_locked(RIP_CHUNK_MODULES, scratch, (uint32_t)(b.p - scratch)) == 0) {
        rh_prof.mod_adds = b.adds;
        rh_prof.mod_subs = b.subs;
    }
    rh_spin_unlock(&rh_prof_lock);
    rh_sys_munmap(scratch, RH_MOD_SCRATCH);
}
