/* rh_shims.h: what the hand-written shims (wrap/shims_*.c) share.
 *
 * The shims are the __wrap_SYM definitions for every function of the wrap table.
 * Each one follows the pattern of runtime/rh_hooks.h: pass straight through when
 * rh_hook_begin() says no, otherwise call __real_SYM, take the time (after an
 * allocation, before a free), record with the shim's own frame address, and
 * rh_hook_end(). This header holds the few helpers that keep the three files
 * uniform. Nothing here allocates or touches stdio.
 */
#ifndef RH_SHIMS_H
#define RH_SHIMS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "rh_hooks.h"
#include "rh_runtime.h" /* rh_record_*_inline: the hot shims' recording */
#include "rh_wrap_gen.h"

/* The frame address a shim records: must be taken in the shim's own body (or
 * in the recording half a hot shim jumps to, shims_malloc.c), so that fp[1]
 * is the return address into the code that called the shim
 * (runtime/rh_arch.h: a record of the shim's own where frames have none). */
#define RH_FP() RH_ARCH_FP()

#define RH_INLINE static inline __attribute__((always_inline))

/* Records the outcome of an allocation that returned p for `size` bytes (NULL:
 * a failure) and ends the hook; errno stays as the real call left it
 * (rh_record_* keep it, runtime/rh_hooks.h). Must be called between a
 * successful rh_hook_begin() and nothing else. */
RH_INLINE void rh_shim_alloc_done(unsigned kind, void *p, size_t size, void *fp)
{
    uint64_t t = rh_now();
    if (rh_likely(p != NULL))
        rh_record_alloc(kind, p, size, t, fp);
    else
        rh_record_fail(kind, size, fp);
    rh_hook_end();
}

/* rh_shim_alloc_done for the hot shims (malloc, realloc, operator new), with
 * the record fast path inlined (rh_record_alloc_inline). */
RH_INLINE void rh_alloc_done(unsigned kind, void *p, size_t size, void *fp)
{
    if (rh_likely(p != NULL)) {
        /* sampling: an unsampled block costs no clock read */
        if (rh_likely(!rh_sample_mode) || rh_sample_alloc(p, size))
            rh_record_alloc_core(kind, p, size, rh_now(), fp);
    } else {
        rh_record_fail(kind, size, fp);
    }
    rh_hook_end();
}

/* rh_alloc_done for the plain full recording's halves of the hot shims (the
 * state word was exactly RH_ON: no sampler, no live map to ask). */
RH_INLINE void rh_alloc_done_plain(unsigned kind, void *p, size_t size, void *fp)
{
    if (rh_likely(p != NULL))
        rh_record_alloc_plain(kind, p, size, rh_now(), fp);
    else
        rh_record_fail(kind, size, fp);
    rh_hook_end();
}

/* Where the hot shims' pass-through paths (tracking off, unsampled) and
 * their recording halves' real calls go:
 * __real_SYM until the executable's interposed malloc family
 * (wrap/interpose_malloc.c, dynamic links) has resolved the next allocator,
 * then straight to it (free and realloc through a function there that keeps
 * its bootstrap arena's blocks away from the next allocator, only when that
 * arena holds any). So a call the program makes passes one layer, not two
 * (the interposed function would only see the guard and forward: about 14
 * instructions per event in callgrind, bench/breakdown.sh).
 * Relaxed atomic pointers: every value is always valid. */
extern RH_HIDDEN void *(*rh_pass_malloc)(size_t);
extern RH_HIDDEN void *(*rh_pass_realloc)(void *, size_t);
extern RH_HIDDEN void (*rh_pass_free)(void *);
#define RH_PASS(fn) __atomic_load_n(&rh_pass_##fn, __ATOMIC_RELAXED)

/* The unsampled fast paths (sampling's cost bar). While a sampled recording is
 * on, most calls record nothing, so the hot shims decide that first, before
 * the guard is set, the clock read or the runtime entered:
 *   - rh_fast_unsampled_alloc(n): bytes mode, the thread's countdown
 *     (rh_tls_sample_left, never negative, at most N) is larger than n: the
 *     block is below N and not taken, the countdown drops by n, and the shim
 *     tail-calls the real allocator. A block of N bytes or more never passes
 *     here (it is always recorded). The thread's countdown must belong to
 *     this recording (its key equals rh_sample_bkey), else the slow path
 *     redraws it. It is exactly the decision rh_sample_alloc makes for a block
 *     of n bytes, made before the real call instead of after it, so the same
 *     seed gives the same profile. One difference: an unsampled call whose
 *     real allocation fails is not counted as a failure (rh_record_fail).
 *     The guard is read last: a call nested in a hooked one (a static libc's
 *     strdup calling malloc, a signal handler) must not draw on the countdown,
 *     it passes through as before.
 *     Rate mode: one step of the thread's random stream, likewise (a take
 *     leaves the stream as it was, for the recording path to draw).
 *   - rh_fast_unsampled_free(p): the live map's filter says p was never
 *     recorded (rh_live_maybe): its free is not an event either, so the shim
 *     needs no guard (a nested free of an unrecorded block passes through
 *     unrecorded either way).
 * s is the tracking state the shim loaded: exactly RH_ON | RH_LIVE (a
 * sampled recording keeps the live map; no control work pending, which the
 * slow path must see). */
RH_INLINE int rh_fast_unsampled_alloc(int s, size_t n)
{
    if (s != (RH_ON | RH_LIVE))
        return 0;
    if (rh_likely(rh_sample_bkey == rh_tls_sample_key)) {
        uint64_t l = (uint64_t)rh_tls_sample_left;
        if (rh_likely(l > n) && rh_likely(!rh_guard)) {
            rh_tls_sample_left = (int64_t)(l - n);
            return 1;
        }
    } else if (rh_sample_rkey == rh_tls_sample_key && rh_likely(!rh_guard)) {
        /* one step of the thread's stream; a take steps back, so that the
         * recording path (rh_sample_alloc_slow) draws this same value */
        uint64_t x = rh_tls_rng + RH_SS_K;
        if (rh_likely(rh_mix64(x) >= rh_sample_threshold)) {
            rh_tls_rng = x;
            return 1;
        }
    }
    return 0;
}

/* No test of p itself: free(NULL) hashes to a filter slot like any address
 * and passes through (or takes the slow path, which tests it), and the
 * tagged (negative) addresses of pool requests never reach a shim. */
RH_INLINE int rh_fast_unsampled_free(int s, void *p)
{
    return s == (RH_ON | RH_LIVE) && rh_sample_mode != RH_SAMPLE_NONE && !rh_live_maybe(p);
}

/* shims_mmap.c: one record per mmap, munmap, mremap or mallopt
 * call, made between rh_hook_begin and rh_hook_end; r and err are the real
 * call's result and errno. */
RH_HIDDEN void rh_mmap_record(unsigned kind, void *addr, size_t len, int prot, int flags, int fd,
                              long off, void *r, int err, void *fp);
RH_HIDDEN void rh_munmap_record(void *addr, size_t len, int r, int err, void *fp);
RH_HIDDEN void rh_mremap_record(void *old, size_t old_len, size_t new_len, int flags, void *r,
                                int err, void *fp);
RH_HIDDEN void rh_mallopt_record(int param, int value, int r, void *fp);

/* a * b, or SIZE_MAX when it overflows (the size a failed calloc records). */
RH_INLINE size_t rh_mul_size(size_t a, size_t b)
{
    size_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return SIZE_MAX;
    return r;
}

/* Records the outcome of a realloc-like call on a non-NULL `old`: q is the
 * result, size the requested size, t_before taken before the real call.
 * Success: one REALLOC old -> q (even in place). NULL with size 0: the block was
 * freed. NULL otherwise: a failure, old stays live. Ends the hook. */
RH_INLINE void rh_shim_realloc_done(unsigned kind, void *old, void *q, size_t size,
                                    uint64_t t_before, void *fp)
{
    uint64_t t_after = rh_now();
    if (rh_likely(q != NULL))
        rh_record_realloc(kind, old, q, size, t_before, t_after, fp);
    else if (size == 0)
        rh_record_free(old, t_before);
    else
        rh_record_fail(kind, size, fp);
    rh_hook_end();
}

/* shims_libc.c: set by a calloc recorded while open_memstream runs (see there). */
extern RH_HIDDEN __thread int rh_memstream_probe __attribute__((tls_model("local-exec")));

#endif
