/* rh_sys.h: the runtime's system layer (rh_sys.c, rh_open.c, rh_arch.h).
 *
 * The bottom of the runtime's layering (docs/design.md, "Runtime"): raw
 * system calls that are never cancellation points, the spin lock, the one
 * way to open a path, and what differs between architectures. Nothing here
 * calls anything else of the runtime, allocates or uses stdio. Every
 * function sets errno on failure as the system call does.
 */
#ifndef RH_SYS_H
#define RH_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rh_arch.h"

#ifndef RH_HIDDEN
#define RH_HIDDEN __attribute__((visibility("hidden")))
#endif
#ifndef rh_likely
#define rh_likely(x) __builtin_expect(!!(x), 1)
#define rh_unlikely(x) __builtin_expect(!!(x), 0)
#endif
#ifndef rh_barrier
#define rh_barrier() __asm__ __volatile__("" ::: "memory")
#endif

#define RH_COLD __attribute__((noinline, cold))
/* Hot-path helpers that must inline whatever gcc's size estimate says. */
#define RH_ALWAYS_INLINE static inline __attribute__((always_inline))
#define RH_CACHE_LINE 64
#define RH_PATH_MAX 4096

/* Busy-wait hint inside spin loops. */
static inline void rh_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    rh_barrier();
#endif
}

/* ---- rh_sys.c: the spin lock ----------------------------------------------- */

/* A test-and-test-and-set lock on *l (0 free, 1 held); yields after 200
 * spins. Never a cancellation point, never a system call while uncontended. */
RH_HIDDEN void rh_spin_lock(int *l);
RH_HIDDEN void rh_spin_unlock(int *l);

/* ---- rh_sys.c: raw system calls ---------------------------------------------
 * One syscall(SYS_...) each, returning what it returns, errno set on -1. */

/* strerror without translation or allocation. */
RH_HIDDEN const char *rh_sys_strerror(int err);
RH_HIDDEN void rh_sys_close(int fd); /* keeps errno */
RH_HIDDEN ssize_t rh_sys_read(int fd, void *buf, size_t len);
RH_HIDDEN ssize_t rh_sys_write(int fd, const void *buf, size_t len);
/* pwrite all of buf at off, retrying EINTR and short writes. Returns 0 or an
 * errno value. */
RH_HIDDEN int rh_sys_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
RH_HIDDEN long rh_sys_getdents64(int fd, void *buf, size_t len);
RH_HIDDEN long rh_sys_getcwd(char *buf, size_t size);
/* fchown; (unsigned)-1 leaves an id unchanged. */
RH_HIDDEN long rh_sys_fchown(int fd, unsigned uid, unsigned gid);
/* 1 when fd is a terminal (TCGETS succeeds). */
RH_HIDDEN int rh_sys_tcgets(int fd);
/* The runtime's own mappings: raw system calls, never `mmap`/`munmap`, which
 * --wrap and the executable's definitions would record as the
 * program's. Return MAP_FAILED / -1 with errno set, like libc's. */
RH_HIDDEN void *rh_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
RH_HIDDEN int rh_sys_munmap(void *addr, size_t len);
/* Cached kernel tid of the calling thread; a fork child forgets the cache. */
RH_HIDDEN uint32_t rh_gettid(void);
RH_HIDDEN void rh_gettid_forget(void);
RH_HIDDEN int rh_sys_getpid(void);
RH_HIDDEN unsigned rh_sys_getegid(void);
RH_HIDDEN long rh_sys_getgroups(int n, unsigned *groups);
/* unshare(CLONE_FILES): a descriptor table of the calling thread's own. */
RH_HIDDEN long rh_sys_unshare_files(void);
RH_HIDDEN long rh_sys_close_range(unsigned lo, unsigned hi, unsigned flags);
/* Private futex: wakes every waiter of *w; waits while *w == seen, at most
 * ms milliseconds. */
RH_HIDDEN void rh_sys_futex_wake(uint32_t *w);
RH_HIDDEN void rh_sys_futex_wait(uint32_t *w, uint32_t seen, unsigned ms);
/* Sleeps ns nanoseconds (under one second); a signal cuts it short. */
RH_HIDDEN void rh_sys_nanosleep(long ns);
/* Starts a thread of the runtime with libc's own pthread_create (arguments
 * as pthread_create's: pthread_t *, const pthread_attr_t *, the routine, its
 * argument), never through the program's wrap of it: --wrap=pthread_create
 * rewrites this archive's references too, and the wrap would hand the new
 * thread to the CPU sampler. Returns pthread_create's result. */
RH_HIDDEN int rh_sys_thread_create(void *thr, const void *attr, void *(*fn)(void *), void *arg);
/* Names the calling thread (prctl PR_SET_NAME, 15 bytes kept). */
RH_HIDDEN void rh_sys_set_thread_name(const char *name);
/* POSIX timers (clock: a thread's CPU clock; sigevent: struct sigevent;
 * its: struct itimerspec, set relative). */
RH_HIDDEN long rh_sys_timer_create(int clock, void *sigevent, int *id);
RH_HIDDEN long rh_sys_timer_settime(int id, const void *its);
RH_HIDDEN long rh_sys_timer_gettime(int id, void *its);
RH_HIDDEN long rh_sys_timer_delete(int id);
/* Sockets: send and recv are sendto and recvfrom without an address. ppoll
 * takes struct pollfd and struct timespec, no signal mask. */
RH_HIDDEN long rh_sys_socket(int domain, int type, int protocol);
RH_HIDDEN long rh_sys_setsockopt(int fd, int level, int name, const void *value, unsigned len);
RH_HIDDEN long rh_sys_connect(int fd, const void *addr, unsigned len);
RH_HIDDEN ssize_t rh_sys_send(int fd, const void *buf, size_t len, int flags);
RH_HIDDEN ssize_t rh_sys_recv(int fd, void *buf, size_t len, int flags);
RH_HIDDEN long rh_sys_shutdown(int fd, int how);
RH_HIDDEN long rh_sys_ppoll(void *fds, unsigned n, const void *timeout);

/* ---- rh_open.c: the one way the runtime opens a path ---------------------- */

/* A file's identity (st_dev, st_ino); ino 0 means none yet. */
struct rh_fid {
    uint64_t dev, ino;
};
#define RH_OPEN_DIR 1u      /* a directory instead of a regular file */
#define RH_OPEN_OWNER 2u    /* owned by the effective user */
#define RH_OPEN_ROOT 4u     /* with RH_OPEN_OWNER: root's files too */
#define RH_OPEN_ONE_LINK 8u /* st_nlink == 1 */
#define RH_OPEN_INODE 16u   /* the inode *want names (ESTALE otherwise) */
/* Opens path with flags (O_CREAT|O_EXCL and mode for a new file) plus
 * O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC|O_NOCTTY, then checks on the descriptor that
 * it is a regular file (a directory with RH_OPEN_DIR) and the rules; *got (when
 * not NULL) receives its identity. Returns the fd, or -1 with errno: the
 * open's, EINVAL (not a regular file), EPERM (owner), EMLINK (links), ESTALE
 * (another inode). Raw system calls only: no allocation, no cancellation
 * point. The caller closes the fd with rh_sys_close. */
RH_HIDDEN int rh_open_safe(const char *path, int flags, unsigned mode, unsigned rules,
                           const struct rh_fid *want, struct rh_fid *got);
/* rh_open_safe for a /proc file of this process (a directory with O_DIRECTORY). */
RH_HIDDEN int rh_open_proc(const char *path, int flags);
/* The identity of an open fd into *out. Returns 0 or -1. */
RH_HIDDEN int rh_fid_of(int fd, struct rh_fid *out);

#endif
