/* rh_sys.c: the system layer: every raw system call of the runtime, and its
 * spin lock.
 *
 * The runtime runs inside someone else's malloc, so it never calls the glibc
 * functions that are cancellation points (open, read, write, pwrite, close,
 * connect, recv, ppoll and the rest): a thread with a pending pthread_cancel
 * would die inside them holding a runtime lock. Each function here is one
 * syscall(SYS_...) with errno set on failure, nothing more; the layers above
 * call these and never syscall() themselves (the layers test checks it). The
 * few calls that differ between ports (mmap2, pwrite64, fallocate, the *at
 * forms) are rh_arch.h's. This file calls nothing of the runtime: it is the
 * bottom of the layering (docs/design.md, "Runtime").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rh_sys.h"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* ---- the spin lock ---------------------------------------------------------- */

void rh_spin_lock(int *l)
{
    unsigned spins = 0;
    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
            if (++spins > 200)
                sched_yield();
            else
                rh_cpu_relax();
        }
    }
}

void rh_spin_unlock(int *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

const char *rh_sys_strerror(int err)
{
    const char *s = rh_arch_strerror(err);
    return s ? s : "unknown error";
}

/* ---- files -------------------------------------------------------------------- */

void rh_sys_close(int fd)
{
    int e = errno;
    syscall(SYS_close, fd); /* never retried: the fd is gone even on EINTR */
    errno = e;
}

ssize_t rh_sys_read(int fd, void *buf, size_t len)
{
    return (ssize_t)syscall(SYS_read, fd, buf, len);
}

ssize_t rh_sys_write(int fd, const void *buf, size_t len)
{
    return (ssize_t)syscall(SYS_write, fd, buf, len);
}

int rh_sys_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
    const char *p = buf;
    while (len) {
        ssize_t w = (ssize_t)rh_arch_pwrite(fd, p, len, (uint64_t)off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (w == 0)
            return EIO;
        p += w;
        len -= (size_t)w;
        off += (uint64_t)w;
    }
    return 0;
}

long rh_sys_getdents64(int fd, void *buf, size_t len)
{
    return syscall(SYS_getdents64, fd, buf, len);
}

long rh_sys_getcwd(char *buf, size_t size)
{
    return syscall(SYS_getcwd, buf, size);
}

long rh_sys_fchown(int fd, unsigned uid, unsigned gid)
{
    return syscall(SYS_fchown, fd, uid, gid);
}

int rh_sys_tcgets(int fd)
{
    char t[256]; /* larger than the kernel's struct termios */
    return syscall(SYS_ioctl, fd, 0x5401 /* TCGETS */, t) == 0;
}

/* ---- memory ------------------------------------------------------------------- */

void *rh_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    long r = rh_arch_mmap(addr, len, prot, flags, fd, (uint64_t)off);
    return r == -1 ? MAP_FAILED : (void *)r;
}

int rh_sys_munmap(void *addr, size_t len)
{
    return (int)syscall(SYS_munmap, addr, len);
}

/* ---- the process and its threads ------------------------------------------------ */

/* The calling thread's kernel tid, 0 until asked (a fork child forgets it). */
static __thread uint32_t rh_tls_tid __attribute__((tls_model("local-exec")));

uint32_t rh_gettid(void)
{
    if (rh_unlikely(!rh_tls_tid))
        rh_tls_tid = (uint32_t)syscall(SYS_gettid);
    return rh_tls_tid;
}

void rh_gettid_forget(void)
{
    rh_tls_tid = 0;
}

int rh_sys_getpid(void)
{
    return (int)syscall(SYS_getpid);
}

unsigned rh_sys_getegid(void)
{
    return (unsigned)syscall(SYS_getegid);
}

long rh_sys_getgroups(int n, unsigned *groups)
{
    return syscall(SYS_getgroups, n, groups);
}

long rh_sys_unshare_files(void)
{
    return syscall(SYS_unshare, CLONE_FILES);
}

long rh_sys_close_range(unsigned lo, unsigned hi, unsigned flags)
{
    return syscall(SYS_close_range, lo, hi, flags);
}

void rh_sys_futex_wake(uint32_t *w)
{
    syscall(SYS_futex, w, RH_FUTEX_WAKE | RH_FUTEX_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

void rh_sys_futex_wait(uint32_t *w, uint32_t seen, unsigned ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    syscall(SYS_futex, w, RH_FUTEX_WAIT | RH_FUTEX_PRIVATE, seen, &ts, NULL, 0);
}

void rh_sys_nanosleep(long ns)
{
    struct timespec ts = {0, ns};
    syscall(SYS_nanosleep, &ts, NULL);
}

void rh_sys_set_thread_name(const char *name)
{
    syscall(SYS_prctl, 15 /* PR_SET_NAME */, (unsigned long)name, 0ul, 0ul, 0ul);
}

/* ---- CPU-time timers -------------------------------------------------------------- */

long rh_sys_timer_create(int clock, void *sigevent, int *id)
{
    return syscall(SYS_timer_create, clock, sigevent, id);
}

long rh_sys_timer_settime(int id, const void *its)
{
    return syscall(SYS_timer_settime, id, 0, its, NULL);
}

long rh_sys_timer_gettime(int id, void *its)
{
    return syscall(SYS_timer_gettime, id, its);
}

long rh_sys_timer_delete(int id)
{
    return syscall(SYS_timer_delete, id);
}

/* ---- sockets ------------------------------------------------------------------------ */

long rh_sys_socket(int domain, int type, int protocol)
{
    return syscall(SYS_socket, domain, type, protocol);
}

long rh_sys_setsockopt(int fd, int level, int name, const void *value, unsigned len)
{
    return syscall(SYS_setsockopt, fd, level, name, value, len);
}

long rh_sys_connect(int fd, const void *addr, unsigned len)
{
    return syscall(SYS_connect, fd, addr, len);
}

ssize_t rh_sys_send(int fd, const void *buf, size_t len, int flags)
{
    return (ssize_t)syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
}

ssize_t rh_sys_recv(int fd, void *buf, size_t len, int flags)
{
    return (ssize_t)syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
}

long rh_sys_shutdown(int fd, int how)
{
    return syscall(SYS_shutdown, fd, how);
}

long rh_sys_ppoll(void *fds, unsigned n, const void *timeout)
{
    return syscall(SYS_ppoll, fds, n, timeout, NULL, 0);
}

/* ---- the runtime's own threads ------------------------------------------ */

/* libc's pthread_create, from the wrap layer (wrap/shims_signal.c) when the
 * program is linked with --wrap=pthread_create: then this object's own
 * reference below is the wrap's, and that reference pulls the shim in, so
 * the pointer is set. Without the wrap (a program linked with no wrap flags)
 * the shim is absent and the plain name is libc's. Weak: a reference only. */
extern RH_HIDDEN int rh_shim_real_pthread_create(void *thr, const void *attr, void *fn, void *arg)
    __attribute__((weak));

int rh_sys_thread_create(void *thr, const void *attr, void *(*fn)(void *), void *arg)
{
    if (rh_shim_real_pthread_create)
        return rh_shim_real_pthread_create(thr, attr, (void *)fn, arg);
    return pthread_create((pthread_t *)thr, (const pthread_attr_t *)attr, fn, arg);
}
