/* interpose_mmap.c: mmap, mmap64, munmap, mremap and mallopt defined by the
 * executable itself, beside the malloc family of
 * interpose_malloc.c and for the same reason: a dynamic executable's shared
 * libraries bind their calls to the first definition in lookup order, the
 * executable's, so their calls are recorded too (in librheaper_ip.a, dynamic
 * executables only).
 *
 * Each function records (rh_mmap_record and friends, wrap/shims_mmap.c) and
 * forwards. The mapping calls forward straight to the kernel (syscall(2)),
 * as glibc's own do on Linux, so no lookup of a next definition is needed and
 * nothing can recurse while one is resolved; mallopt forwards to glibc's
 * exported __libc_mallopt. A call the program made through the --wrap shims
 * arrives here with the guard set and only forwards, so it is one record.
 *
 * What cannot be seen: glibc calls its own internal mmap (malloc's large
 * blocks and heaps, stdio, dlopen's loader) without the exported symbol, and
 * ld.so maps the libraries before any of this exists. RHEAPER_SCOPE=program:
 * everything here forwards without recording.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rh_shims.h"

extern char **__environ;
extern int __libc_mallopt(int, int);

#define RH_IP RH_WRAP __attribute__((weak)) /* exported, kept, yields to the program's own */

/* rh_hook_begin for the functions here: 0 when tracking is off, inside a
 * hooked call, before the environment exists, under RHEAPER_SCOPE=program,
 * or when the thread has not recorded anything yet. That last one: a shared
 * library's mmap may run inside its allocator's locks (a shared jemalloc
 * mapping an extent from a call that did not pass through rheaper), and a
 * thread's first record allocates (its stack bounds); recording it could
 * re-enter that allocator. Such a call is not recorded (docs/commands.md). */
static inline int rh_im_begin(void)
{
    int s = __atomic_load_n(&rh_state, __ATOMIC_RELAXED);
    if (rh_likely(s == RH_OFF) || rh_guard)
        return 0;
    if (rh_unlikely(s == RH_UNINIT) && !__environ)
        return 0;
    if (!rh_hook_begin())
        return 0;
    if (rh_unlikely(!rh_scope_process || !rh_thread_recording())) {
        rh_hook_end();
        return 0;
    }
    return 1;
}

static void *rh_im_mmap(void *addr, size_t len, int prot, int flags, int fd, long long off)
{
    long r = rh_arch_mmap(addr, len, prot, flags, fd, (uint64_t)off);
    return r == -1 ? MAP_FAILED : (void *)r;
}

RH_IP void *mmap(void *addr, size_t len, int prot, int flags, int fd, long off)
{
    if (!rh_im_begin())
        return rh_im_mmap(addr, len, prot, flags, fd, off);
    void *r = rh_im_mmap(addr, len, prot, flags, fd, off);
    int e = errno;
    rh_mmap_record(RH_KIND_MMAP, addr, len, prot, flags, fd, off, r, e, RH_FP());
    rh_hook_end();
    errno = e;
    return r;
}

/* musl has no mmap64 of its own (a macro for mmap, or nothing) */
#if defined(__GLIBC__)
RH_IP void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
    if (!rh_im_begin())
        return rh_im_mmap(addr, len, prot, flags, fd, off);
    void *r = rh_im_mmap(addr, len, prot, flags, fd, off);
    int e = errno;
    rh_mmap_record(RH_KIND_MMAP, addr, len, prot, flags, fd, off, r, e, RH_FP());
    rh_hook_end();
    errno = e;
    return r;
}
#endif

RH_IP int munmap(void *addr, size_t len)
{
    if (!rh_im_begin())
        return (int)syscall(SYS_munmap, addr, len);
    int r = (int)syscall(SYS_munmap, addr, len);
    int e = errno;
    rh_munmap_record(addr, len, r, e, RH_FP());
    rh_hook_end();
    errno = e;
    return r;
}

RH_IP void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
    void *naddr = NULL;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        naddr = va_arg(ap, void *);
        va_end(ap);
    }
    int rec = rh_im_begin();
    long r = syscall(SYS_mremap, old, old_len, new_len, flags, naddr);
    void *p = r == -1 ? MAP_FAILED : (void *)r;
    if (rec) {
        int e = errno;
        rh_mremap_record(old, old_len, new_len, flags, p, e, RH_FP());
        rh_hook_end();
        errno = e;
    }
    return p;
}

#if defined(__GLIBC__) /* glibc only */
RH_IP int mallopt(int param, int value)
{
    if (!rh_im_begin())
        return __libc_mallopt(param, value);
    int r = __libc_mallopt(param, value);
    int e = errno;
    rh_mallopt_record(param, value, r, RH_FP());
    rh_hook_end();
    errno = e;
    return r;
}
#endif
