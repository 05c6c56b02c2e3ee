/* shims_malloc.c: the __wrap_ shims of the C allocator.
 *
 * malloc, calloc, realloc, reallocarray, free, posix_memalign, aligned_alloc,
 * memalign, valloc and pvalloc. Each is a thin layer over __real_SYM that records
 * one event through runtime/rh_hooks.h, or passes straight through when tracking
 * is off or the thread is already inside a hooked call (a static libc's strdup
 * calling malloc, the runtime's own calls). Their real functions never call a
 * wrapped one, so they take the guard as RH_GUARD_LEAF (rh_hook_begin_leaf):
 * a call that arrives inside one of them is a signal handler's, and is
 * counted. Times: an allocation's after the real call, a free's before it, a
 * realloc's both. These functions never
 * allocate and never use stdio.
 *
 * The hot shims keep their pass-through path tiny: the recording half lives in
 * a separate noinline function (rh_*_hooked) with the shim's own signature,
 * which the shim reaches by a tail jump, so the shim itself has no frame and
 * saves no register. The recording half's own frame record then holds what
 * the shim's would: the return address into the code that called malloc and
 * that code's frame pointer, so the walk starts from it (RH_FP() in the
 * recording half). The tail jump is required, not hoped for: gcc is given
 * sibling calls for these functions, clang `musttail`. The
 * recording halves of malloc, realloc and free do not save errno: rh_record_*
 * keep it (their fast path makes no libc call; their cold paths save it), which
 * spares two calls to __errno_location per event. They record through the
 * inline fast path (rh_record_*_inline, runtime/rh_hot.h), so a recorded
 * event makes one call into the shim's recording half and none from there into
 * the runtime unless it takes a cold path. Under sampling, malloc, realloc and
 * free first ask whether the call records anything at all
 * (rh_fast_unsampled_alloc / _free, rh_shims.h): most do not, and pass
 * through before the guard, like tracking off, to the allocator itself
 * (rh_pass_*, skipping the interposed layer of a dynamic link). So does every
 * call of a CPU-only recording (RH_CPUONLY, RHEAPER_HEAP=0: no heap event is
 * recorded at all). That test comes after the fast paths, which give up at
 * once when the state is not RH_ON, so sampling's unsampled path pays nothing
 * for it. Through rh_hook_begin and the interposed layer a CPU-only recording
 * cost Lua's alloc.lua 11 % more instructions, more than the samples
 * themselves (bench/cpu_bench.sh --callgrind).
 */
#include <errno.h>
#include <stdlib.h>

#include "rh_shims.h"

/* Functions a replacement allocator may leave out (jemalloc has no pvalloc)
 * and libc.a defines in malloc.o beside its malloc: their real ones are asked
 * for weakly, so that a static link of such an allocator (-static -ljemalloc)
 * does not also take libc.a's malloc.o for them, and collide. A program that
 * calls one asks for it itself: rheaper-cc puts the weak fallbacks, whose
 * __real_ references are strong, behind the user's arguments
 * (cc-wrapper/rh_cc_main.c); and a static link whose malloc is libc's has
 * malloc.o, so them, anyway. (reallocarray is a member of its own, which
 * calls realloc: asked for as usual.) */
#pragma weak __real_pvalloc
#pragma weak __real_valloc
#pragma weak __real_memalign

#define RH_HOOKED static __attribute__((noinline))
/* A recording half that inlines the stack walk (see RH_WALK_ALIGNED). */
#define RH_HOOKED_WALK RH_HOOKED RH_WALK_ALIGNED

/* The hot shims are a few tests and a tail jump: to __real_SYM (the
 * pass-through, so a program that does not track pays a load, a compare and a
 * jump) or to their recording half, whose frame record must sit where the
 * shim's would (see above). gcc gets sibling calls back for these functions
 * (the file is built without them) and makes both jumps, as the two functions
 * have the same signature; clang is told with musttail, which fails the build
 * rather than make a call. */
#if defined(__clang__)
#if !__has_attribute(musttail)
#error "the hot shims need clang's musttail (clang 13 or later)"
#endif
#define RH_SIBCALLS
#define RH_TAILCALL __attribute__((musttail))
#elif defined(__GNUC__)
#define RH_SIBCALLS __attribute__((optimize("optimize-sibling-calls")))
#define RH_TAILCALL
#else
#error "the hot shims need gcc or clang (a guaranteed tail jump)"
#endif
#define RH_HOT_SHIM RH_WRAP RH_SIBCALLS

RH_HIDDEN void *(*rh_pass_malloc)(size_t) = __real_malloc;
RH_HIDDEN void *(*rh_pass_realloc)(void *, size_t) = __real_realloc;
RH_HIDDEN void (*rh_pass_free)(void *) = __real_free;

/* The recording half of __wrap_malloc, reached by its tail jump: sets the
 * guard (or passes a nested call through) and records from its own frame. */
RH_HOOKED_WALK void *rh_malloc_hooked(size_t n)
{
    if (!rh_hook_begin_hot(RH_GUARD_LEAF))
        return __real_malloc(n);
    void *p = RH_PASS(malloc)(n);
    rh_alloc_done(RH_KIND_MALLOC, p, n, RH_FP());
    return p;
}

/* The plain full recording's half (the shim's one load of the state found
 * exactly RH_ON): the guard, the real call and the record, with no test of
 * the sampler or the live map. */
RH_HOOKED_WALK void *rh_malloc_plain(size_t n)
{
    if (!rh_hook_begin_plain(RH_GUARD_LEAF))
        return __real_malloc(n);
    void *p = RH_PASS(malloc)(n);
    rh_alloc_done_plain(RH_KIND_MALLOC, p, n, RH_FP());
    return p;
}

RH_HOT_SHIM void *__wrap_malloc(size_t n)
{
    int s = __atomic_load_n(&rh_state, __ATOMIC_RELAXED);
    if (rh_likely(s == RH_OFF))
        return RH_PASS(malloc)(n);
    if (rh_likely(s == RH_ON))
        RH_TAILCALL return rh_malloc_plain(n);
    if (rh_fast_unsampled_alloc(s, n) || s == RH_CPUONLY)
        return RH_PASS(malloc)(n);
    RH_TAILCALL return rh_malloc_hooked(n);
}

/* calloc: records n * m bytes (SIZE_MAX when that overflows and calloc fails).
 * While open_memstream is being set up it also tells that shim, through
 * rh_memstream_probe, that libc's own allocations are visible (a static link). */
RH_HOOKED void *rh_calloc_hooked(size_t n, size_t m, void *fp)
{
    void *p = __real_calloc(n, m);
    if (rh_unlikely(rh_memstream_probe))
        rh_memstream_probe = 2;
    rh_shim_alloc_done(RH_KIND_CALLOC, p, rh_mul_size(n, m), fp);
    return p;
}

RH_WRAP void *__wrap_calloc(size_t n, size_t m)
{
    if (!rh_hook_begin_leaf())
        return __real_calloc(n, m);
    return rh_calloc_hooked(n, m, RH_FP());
}

/* realloc: realloc(NULL, n) is an allocation of kind realloc; a success is one
 * REALLOC event old -> new with times before and after the real call; a
 * realloc(p, 0) that returns NULL freed p; any other NULL is a failure and p
 * stays live. */
/* The recording halves of __wrap_realloc, reached by its tail jump (their
 * frame stands for the shim's, as rh_malloc_hooked's): realloc(NULL, n) apart
 * from the rest, so that it saves as few registers as rh_malloc_hooked does
 * (allocators like Lua's allocate this way). */
RH_HOOKED_WALK void *rh_realloc0_hooked(void *p, size_t n)
{
    if (!rh_hook_begin_hot(RH_GUARD_LEAF))
        return __real_realloc(p, n);
    void *q = RH_PASS(realloc)(NULL, n);
    rh_alloc_done(RH_KIND_REALLOC, q, n, RH_FP());
    return q;
}

RH_HOOKED_WALK void *rh_realloc1_hooked(void *p, size_t n)
{
    if (!rh_hook_begin_hot(RH_GUARD_LEAF))
        return __real_realloc(p, n);
    /* sampling: no clock read when the old block cannot have been
     * recorded (the live map's filter); the runtime reads it if p is sampled */
    int lazy = rh_unlikely(rh_sample_mode) && !rh_live_maybe(p);
    uint64_t t_before = lazy ? 0 : rh_now();
    void *q = RH_PASS(realloc)(p, n);
    uint64_t t_after = lazy ? 0 : rh_now();
    if (rh_likely(q != NULL))
        rh_record_realloc_inline(RH_KIND_REALLOC, p, q, n, t_before, t_after, RH_FP());
    else if (n == 0)
        rh_record_free(p, t_before);
    else
        rh_record_fail(RH_KIND_REALLOC, n, RH_FP());
    rh_hook_end();
    return q;
}

/* The plain full recording's halves of realloc (as rh_malloc_plain). */
RH_HOOKED_WALK void *rh_realloc0_plain(void *p, size_t n)
{
    if (!rh_hook_begin_plain(RH_GUARD_LEAF))
        return __real_realloc(p, n);
    void *q = RH_PASS(realloc)(NULL, n);
    rh_alloc_done_plain(RH_KIND_REALLOC, q, n, RH_FP());
    return q;
}

RH_HOOKED_WALK void *rh_realloc1_plain(void *p, size_t n)
{
    if (!rh_hook_begin_plain(RH_GUARD_LEAF))
        return __real_realloc(p, n);
    uint64_t t_before = rh_now();
    void *q = RH_PASS(realloc)(p, n);
    uint64_t t_after = rh_now();
    if (rh_likely(q != NULL))
        rh_record_realloc_plain(RH_KIND_REALLOC, p, q, n, t_before, t_after, RH_FP());
    else if (n == 0)
        rh_record_free(p, t_before);
    else
        rh_record_fail(RH_KIND_REALLOC, n, RH_FP());
    rh_hook_end();
    return q;
}

RH_HOT_SHIM void *__wrap_realloc(void *p, size_t n)
{
    int s = __atomic_load_n(&rh_state, __ATOMIC_RELAXED);
    if (rh_likely(s == RH_OFF))
        return RH_PASS(realloc)(p, n);
    if (rh_likely(s == RH_ON)) {
        if (p == NULL)
            RH_TAILCALL return rh_realloc0_plain(p, n);
        RH_TAILCALL return rh_realloc1_plain(p, n);
    }
    if (((p == NULL || rh_fast_unsampled_free(s, p)) && rh_fast_unsampled_alloc(s, n)) ||
        s == RH_CPUONLY)
        return RH_PASS(realloc)(p, n);
    if (p == NULL)
        RH_TAILCALL return rh_realloc0_hooked(p, n);
    RH_TAILCALL return rh_realloc1_hooked(p, n);
}

/* reallocarray: as realloc for n * m bytes. An overflowing product fails with
 * ENOMEM and leaves p alive: recorded as a failure of SIZE_MAX bytes. */
RH_WRAP void *__wrap_reallocarray(void *p, size_t n, size_t m)
{
    if (!rh_hook_begin_leaf())
        return __real_reallocarray(p, n, m);
    size_t size = rh_mul_size(n, m);
    if (p == NULL) {
        void *q = __real_reallocarray(NULL, n, m);
        rh_shim_alloc_done(RH_KIND_REALLOCARRAY, q, size, RH_FP());
        return q;
    }
    uint64_t t_before = rh_now();
    void *q = __real_reallocarray(p, n, m);
    rh_shim_realloc_done(RH_KIND_REALLOCARRAY, p, q, size, t_before, RH_FP());
    return q;
}

/* free: free(NULL) records nothing. Otherwise the free is recorded, with its
 * time, before the real free, so the address cannot be handed out again (in
 * another thread) before its free is in the profile. The recording half needs
 * no frame of the shim's (a free has no stack): the shim jumps to it. */
RH_HOOKED void rh_free_hooked(void *p)
{
    if (p == NULL || !rh_hook_begin_hot(RH_GUARD_LEAF)) {
        __real_free(p);
        return;
    }
    rh_record_free_now(p);
    RH_PASS(free)(p);
    rh_hook_end();
}

/* The plain full recording's half of free (as rh_malloc_plain). */
RH_HOOKED void rh_free_plain(void *p)
{
    if (p == NULL || !rh_hook_begin_plain(RH_GUARD_LEAF)) {
        __real_free(p);
        return;
    }
    rh_record_free_plain(p);
    RH_PASS(free)(p);
    rh_hook_end();
}

RH_HOT_SHIM void __wrap_free(void *p)
{
    int s = __atomic_load_n(&rh_state, __ATOMIC_RELAXED);
    if (rh_likely(s == RH_OFF)) {
        RH_PASS(free)(p);
        return;
    }
    if (rh_likely(s == RH_ON)) {
        rh_free_plain(p);
        return;
    }
    if (rh_fast_unsampled_free(s, p) || s == RH_CPUONLY) {
        RH_PASS(free)(p);
        return;
    }
    rh_free_hooked(p);
}

/* posix_memalign: an allocation only when it returns 0. ENOMEM is a failure;
 * EINVAL (a bad alignment) is a usage error and records nothing. */
RH_WRAP int __wrap_posix_memalign(void **pp, size_t align, size_t n)
{
    if (!rh_hook_begin_leaf())
        return __real_posix_memalign(pp, align, n);
    int rc = __real_posix_memalign(pp, align, n);
    if (rc == 0)
        rh_shim_alloc_done(RH_KIND_POSIX_MEMALIGN, *pp, n, RH_FP());
    else if (rc == ENOMEM)
        rh_shim_alloc_done(RH_KIND_POSIX_MEMALIGN, NULL, n, RH_FP());
    else
        rh_hook_end();
    return rc;
}

RH_WRAP void *__wrap_aligned_alloc(size_t align, size_t n)
{
    if (!rh_hook_begin_leaf())
        return __real_aligned_alloc(align, n);
    void *p = __real_aligned_alloc(align, n);
    rh_shim_alloc_done(RH_KIND_ALIGNED_ALLOC, p, n, RH_FP());
    return p;
}

RH_WRAP void *__wrap_memalign(size_t align, size_t n)
{
    if (!rh_hook_begin_leaf())
        return __real_memalign(align, n);
    void *p = __real_memalign(align, n);
    rh_shim_alloc_done(RH_KIND_MEMALIGN, p, n, RH_FP());
    return p;
}

RH_WRAP void *__wrap_valloc(size_t n)
{
    if (!rh_hook_begin_leaf())
        return __real_valloc(n);
    void *p = __real_valloc(n);
    rh_shim_alloc_done(RH_KIND_VALLOC, p, n, RH_FP());
    return p;
}

#if defined(__GLIBC__) /* musl has no pvalloc */
/* pvalloc: records the requested size; glibc rounds the block up to a page. */
RH_WRAP void *__wrap_pvalloc(size_t n)
{
    if (!rh_hook_begin_leaf())
        return __real_pvalloc(n);
    void *p = __real_pvalloc(n);
    rh_shim_alloc_done(RH_KIND_PVALLOC, p, n, RH_FP());
    return p;
}
#endif
