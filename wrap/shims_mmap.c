/* shims_mmap.c: the __wrap_ shims of mmap, mmap64, munmap, mremap and mallopt
 *.
 *
 * None of them allocates a heap block: each call, success or failure, is one
 * timed EXT record with the caller's stack (rh_record_ext; FORMAT.md "Version
 * 3: mmap and mallopt"), which rheaper-convert writes as a row of
 * the mmaps or mallopts table. The real call runs first (its result is part of
 * the record) and errno stays as it left it. A call made while the thread is
 * inside another hooked call (the runtime's own work, a libc shim) passes
 * through unrecorded; the runtime maps its own memory with raw system calls
 * (rh_sys_mmap), never through these.
 *
 * What is seen: calls from code rheaper-cc linked (these shims), and in a
 * dynamic executable calls from shared libraries as well (the executable's own
 * definitions, wrap/interpose_mmap.c). What is not: glibc's internal mappings
 * (malloc's large blocks and arenas, stdio, the loader's) call the kernel
 * without passing through the public symbols.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <sys/mman.h>

#include "rh_shims.h"

/* the format's mmap family starts at the wrap table's mmap kind: the
 * runtime tells allocating calls from it by that number (rh_record.c) */
_Static_assert(RH_KIND_MMAP == RIP_KIND_MMAP_FIRST, "wrap_table.txt and rip_format.h disagree");

/* A static allocator (-static -ljemalloc) defines no mallopt: asked for weakly,
 * libc.a's malloc.o is not taken for it alone (it would collide with the
 * allocator's malloc). A program that calls mallopt asks for it itself
 * (rheaper-cc's weak fallbacks, cc-wrapper/rh_cc_main.c). */
#pragma weak __real_mallopt

/* The records of one call each (rh_shims.h; wrap/interpose_mmap.c uses them
 * too): the fields as FORMAT.md lists them, a failure's errno, fp the frame
 * of the function the program called. */
RH_HIDDEN void rh_mmap_record(unsigned kind, void *addr, size_t len, int prot, int flags, int fd,
                              long off, void *r, int err, void *fp)
{
    uint64_t v[8] = {(uintptr_t)addr,
                     len,
                     (uint32_t)prot,
                     (uint32_t)flags,
                     rip_zigzag(fd),
                     (uint64_t)off,
                     r == MAP_FAILED ? 0 : (uintptr_t)r,
                     r == MAP_FAILED ? (uint32_t)err : 0};
    rh_record_ext(kind, RIP_EXT_MMAP, v, 8, rh_now(), fp);
}

RH_HIDDEN void rh_munmap_record(void *addr, size_t len, int r, int err, void *fp)
{
    uint64_t v[3] = {(uintptr_t)addr, len, r ? (uint32_t)err : 0};
    rh_record_ext(RH_KIND_MUNMAP, RIP_EXT_MUNMAP, v, 3, rh_now(), fp);
}

RH_HIDDEN void rh_mremap_record(void *old, size_t old_len, size_t new_len, int flags, void *r,
                                int err, void *fp)
{
    uint64_t v[6] = {(uintptr_t)old,
                     old_len,
                     new_len,
                     (uint32_t)flags,
                     r == MAP_FAILED ? 0 : (uintptr_t)r,
                     r == MAP_FAILED ? (uint32_t)err : 0};
    rh_record_ext(RH_KIND_MREMAP, RIP_EXT_MREMAP, v, 6, rh_now(), fp);
}

RH_HIDDEN void rh_mallopt_record(int param, int value, int r, void *fp)
{
    uint64_t v[3] = {rip_zigzag(param), rip_zigzag(value), rip_zigzag(r)};
    rh_record_ext(RH_KIND_MALLOPT, RIP_EXT_MALLOPT, v, 3, rh_now(), fp);
}

/* rh_hook_begin, but a call nested in any hooked call (an allocator built
 * with rheaper-cc mapping memory inside its wrapped malloc) passes through
 * uncounted: it is the allocator's own work, not a signal handler's re-entry. */
RH_INLINE int rh_mm_begin(void)
{
    if (rh_guard)
        return 0;
    return rh_hook_begin();
}

RH_WRAP void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, long off)
{
    if (!rh_mm_begin())
        return __real_mmap(addr, len, prot, flags, fd, off);
    void *r = __real_mmap(addr, len, prot, flags, fd, off);
    int e = errno;
    rh_mmap_record(RH_KIND_MMAP, addr, len, prot, flags, fd, off, r, e, RH_FP());
    rh_hook_end();
    errno = e;
    return r;
}

/* musl has no mmap64 of its own (a macro for mmap, or nothing) */
#if defined(__GLIBC__)
RH_WRAP void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, long long off)
{
    if (!rh_mm_begin())
        return __real_mmap64(addr, len, prot, flags, fd, off);
    void *r = __real_mmap64(addr, len, prot, flags, fd, off);
    int e = errno;
    rh_mmap_record(RH_KIND_MMAP, addr, len, prot, flags, fd, off, r, e, RH_FP());
    rh_hook_end();
    errno = e;
    return r;
}
#endif

RH_WRAP int __wrap_munmap(void *addr, size_t len)
{
    if (!rh_mm_begin())
        return __real_munmap(addr, len);
    int r = __real_munmap(addr, len);
    int e = errno;
    rh_munmap_record(addr, len, r, e, RH_FP());
    rh_hook_end();
    errno = e;
    return r;
}

/* The fifth argument exists only under MREMAP_FIXED (wrap_table.txt). */
RH_WRAP void *__wrap_mremap(void *old, size_t old_len, size_t new_len, int flags, void *naddr)
{
    if (!(flags & MREMAP_FIXED))
        naddr = NULL;
    if (!rh_mm_begin())
        return __real_mremap(old, old_len, new_len, flags, naddr);
    void *r = __real_mremap(old, old_len, new_len, flags, naddr);
    int e = errno;
    rh_mremap_record(old, old_len, new_len, flags, r, e, RH_FP());
    rh_hook_end();
    errno = e;
    return r;
}

#if defined(__GLIBC__) /* glibc only */
RH_WRAP int __wrap_mallopt(int param, int value)
{
    if (!rh_mm_begin())
        return __real_mallopt(param, value);
    int r = __real_mallopt(param, value);
    int e = errno;
    rh_mallopt_record(param, value, r, RH_FP());
    rh_hook_end();
    errno = e;
    return r;
}
#endif
