/* rh_hooks.h: what the runtime offers the wrap layer (wrap/shims_*.c).
 *
 * This is the one contract between wrap/ and runtime/. A shim is written as:
 *
 *     void *__wrap_malloc(size_t n)
 *     {
 *         if (!rh_hook_begin())               // off, or nested: pass through
 *             return __real_malloc(n);
 *         void *p = __real_malloc(n);
 *         uint64_t t = rh_now();              // allocation time: AFTER the real call
 *         if (p) rh_record_alloc(RH_KIND_MALLOC, p, n, t, __builtin_frame_address(0));
 *         else   rh_record_fail(RH_KIND_MALLOC, n, __builtin_frame_address(0));
 *         rh_hook_end();
 *         return p;
 *     }
 *
 * and a free takes its time BEFORE the real call and records before it too.
 * `fp` is the shim's own frame address: fp[1] is the return address into the
 * code that called the allocation function, which becomes frame 0 of the stack.
 * Shims must be compiled with frame pointers and without sibling calls; the
 * hot ones (malloc, realloc, free) instead jump to a recording half of their
 * own signature, whose frame record then holds what theirs would, and which
 * records with its own frame address (wrap/shims_malloc.c).
 *
 * Everything here is hidden, allocation-free and async-signal-safe in the sense
 * that a nested call (signal handler, or libc calling back into a wrapped
 * function) sees the guard and passes through untracked.
 */
#ifndef RH_HOOKS_H
#define RH_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#define RH_HIDDEN __attribute__((visibility("hidden")))
#define rh_likely(x) __builtin_expect(!!(x), 1)
#define rh_unlikely(x) __builtin_expect(!!(x), 0)
#define rh_barrier() __asm__ __volatile__("" ::: "memory")

/* Tracking state. RH_UNINIT until the first wrapped call reads the environment.
 * RH_CTL is a bit or-ed in by the control signal's handler (or by the size
 * limit): "control work pending". It makes the hot path's existing tests fail
 * (s != RH_OFF, s != RH_ON), so the next hooked call of any thread takes the
 * cold path, which does the work outside the handler's frame (rh_api.c): the
 * flag costs the hot path nothing. Read the state with RH_STATE(). */
/* RH_CPUONLY (RHEAPER_HEAP=0): a recording of CPU samples only; every
 * hooked call takes the cold path and passes through unrecorded. */
/* RH_LIVE is or-ed into RH_ON while the recording keeps the live map
 * (sampling, or in-process reports: rh_live_on): the state word alone then
 * tells the hot shims which path an event takes. Exactly RH_ON is the plain
 * full recording, whose path tests nothing else (no sampler, no live map); any
 * other value than RH_OFF and RH_ON takes the general path. Set with the state
 * (rh_state_set), from what the recording was configured with before it turned
 * on, so it never changes under a running recording. */
enum { RH_UNINIT = 0, RH_OFF = 1, RH_ON = 2, RH_CTL = 4, RH_CPUONLY = 8, RH_LIVE = 16 };
#define RH_STATE(s) ((s) & ~(RH_CTL | RH_LIVE))
extern RH_HIDDEN int rh_state;

/* RHEAPER_SCOPE: 1 (the default, "process") when the malloc family the
 * executable defines (wrap/interpose_*.c, dynamic links) records what shared
 * libraries and libc allocate; 0 ("program") when it only forwards and just the
 * program's own calls, through the __wrap_ shims, are recorded. Set at init. */
extern RH_HIDDEN int rh_scope_process;

/* The kind hint of a libc shim (wrap/shims_libc.c) whose real call runs
 * unguarded because the executable's interposed malloc family
 * (wrap/interpose_malloc.c, where rh_ip_linked says so) records libc's inner
 * allocations itself: each one is recorded with the shim's kind and from the
 * shim's frame (rh_tls_hint_fp, NULL when no hint is set), so strdup's block
 * is one row of kind strdup at the caller's stack, and a stdio buffer getline
 * allocates on the way is a row too. */
extern RH_HIDDEN __thread void *rh_tls_hint_fp __attribute__((tls_model("local-exec")));
extern RH_HIDDEN __thread unsigned rh_tls_hint_kind __attribute__((tls_model("local-exec")));
/* 1 when the interposed malloc family is linked and is the program's malloc
 * (NULL function when not linked: static links). */
extern RH_HIDDEN int rh_ip_linked(void) __attribute__((weak));

/* Per-thread reentrancy guard. volatile plus barriers: gcc -O2 otherwise drops
 * the store around calls it believes are leaf (strdup) and recursion follows.
 * 0: outside; RH_GUARD_CALL: inside a hooked call whose real function may call
 * other wrapped functions (operator new calls malloc in a static link, so do
 * strdup, getline...) or inside the runtime's API; RH_GUARD_LEAF: inside a
 * malloc-family call (its real function never calls a wrapped one), including
 * the runtime's recording of it. A call that finds RH_GUARD_LEAF can only be a
 * signal handler's (or another re-entry into the runtime): it passes through
 * unrecorded and is counted (rh_prof.reentered, meta reentered_unrecorded). */
enum { RH_GUARD_CALL = 1, RH_GUARD_LEAF = 2 };
extern RH_HIDDEN __thread volatile int rh_guard __attribute__((tls_model("local-exec")));
/* Counts one call that passed through unrecorded because it re-entered a
 * malloc-family call. Async-signal-safe (one relaxed atomic add). */
RH_HIDDEN void rh_note_reentry(void) __attribute__((noinline, cold));

/* Cold: first wrapped call of the process. Reads RHEAPER_* and, when
 * RHEAPER_ENABLE=1, starts tracking. Later calls (state with RH_CTL) do the
 * pending control work: signal toggles, the size limit's clean close. Returns
 * 1 if tracking is now on. Never fails the caller: on error it prints one line
 * and leaves tracking off. */
RH_HIDDEN int rh_init_lazy(void) __attribute__((noinline, cold));
/* The same start for the hooked entry points of the runtime's recording core
 * (pools, regions, allocator families: rh_pool.c, rh_region.c), which call
 * nothing of the session layer that defines rh_init_lazy: the hook that layer
 * installs (rh_state.c). A file defines RH_CORE_ENTRY before its includes to
 * have rh_hook_begin start through it. */
RH_HIDDEN int rh_lazy_start(void) __attribute__((noinline, cold));
#ifdef RH_CORE_ENTRY
#define RH_LAZY_START rh_lazy_start
#else
#define RH_LAZY_START rh_init_lazy
#endif

/* Returns 1 when this call must be recorded; then the guard is set and the
 * caller must call rh_hook_end() after recording. Returns 0 (nothing set) when
 * tracking is off or this thread is already inside a hooked call. */
/* rh_hook_begin's first call of the process (state RH_UNINIT, guard clear):
 * runs rh_init_lazy under the guard and leaves the guard set when tracking is
 * now on. Out of line so that a shim keeps no register across it (the guard's
 * TLS address, the shim's arguments) on its hooked path. */
static __attribute__((noinline, cold, unused)) int rh_hook_begin_init(int value)
{
    rh_guard = RH_GUARD_CALL;
    rh_barrier();
    int on = RH_LAZY_START();
    rh_barrier();
    rh_guard = on ? value : 0;
    rh_barrier();
    return on;
}

/* rh_hook_begin with the guard value to set (RH_GUARD_CALL or RH_GUARD_LEAF). */
static inline __attribute__((always_inline)) int rh_hook_begin_as(int value)
{
    int s = __atomic_load_n(&rh_state, __ATOMIC_RELAXED);
    if (rh_likely(s == RH_OFF))
        return 0;
    int g = rh_guard;
    if (g) {
        if (rh_unlikely(g == RH_GUARD_LEAF))
            rh_note_reentry();
        return 0;
    }
    if (rh_unlikely((s & ~RH_LIVE) != RH_ON)) { /* RH_UNINIT, RH_CPUONLY, or RH_CTL set */
        if (s == RH_CPUONLY)
            return 0; /* CPU samples only: pass through, as cheaply as off */
        return rh_hook_begin_init(value);
    }
    rh_guard = value;
    rh_barrier();
    return 1;
}

/* rh_hook_begin_as out of line, for rh_hook_begin_hot's uncommon cases. */
static __attribute__((noinline, cold, unused)) int rh_hook_begin_other(int value)
{
    return rh_hook_begin_as(value);
}

/* rh_hook_begin_as for the recording halves of the hot shims
 * (wrap/shims_malloc.c), which a shim enters once it has seen a state other
 * than RH_OFF: the common case, recording and not nested, is two tests; every
 * other case goes out of line to the same decision. */
static inline __attribute__((always_inline)) int rh_hook_begin_hot(int value)
{
    int s = __atomic_load_n(&rh_state, __ATOMIC_RELAXED);
    if (rh_likely((s & ~RH_LIVE) == RH_ON) && rh_likely(!rh_guard)) {
        rh_guard = value;
        rh_barrier();
        return 1;
    }
    return rh_hook_begin_other(value);
}

/* The guard for the plain full recording's halves of the hot shims
 * (wrap/shims_malloc.c), which the shim enters after its one load of the
 * state found exactly RH_ON: only the guard is left to test. A state that
 * changed since (a disable, control work) is seen at the thread's next call;
 * the record itself goes to the slow path when the recording it belongs to
 * ended (the writer's epoch). Returns 1 with the guard set. */
static inline __attribute__((always_inline)) int rh_hook_begin_plain(int value)
{
    if (rh_likely(!rh_guard)) {
        rh_guard = value;
        rh_barrier();
        return 1;
    }
    if (rh_unlikely(rh_guard == RH_GUARD_LEAF))
        rh_note_reentry();
    return 0;
}

/* For shims whose real function may call other wrapped functions. */
static inline int rh_hook_begin(void)
{
    return rh_hook_begin_as(RH_GUARD_CALL);
}

/* For the malloc family (wrap/shims_malloc.c): the real function never calls a
 * wrapped one, so any call nested inside is a re-entry and is counted. */
static inline int rh_hook_begin_leaf(void)
{
    return rh_hook_begin_as(RH_GUARD_LEAF);
}

/* CPU sampling: periods whose signal came while this thread was inside the
 * runtime, not yet written (rh_cpu.c); rh_hook_end writes them as a sample of
 * the hooked call's stack once the call's record is complete. */
extern RH_HIDDEN __thread unsigned rh_tls_cpu_carry __attribute__((tls_model("local-exec")));
RH_HIDDEN void rh_cpu_carry_flush(void) __attribute__((noinline, cold));

static inline void rh_hook_end(void)
{
    rh_barrier();
    rh_guard = 0;
    if (rh_unlikely(rh_tls_cpu_carry))
        rh_cpu_carry_flush();
}

/* Event time in raw ticks (runtime/rh_clock.c decides the source; see
 * FORMAT.md "Time"). Cheap: no syscall on x86_64 with an invariant TSC.
 * rh_clock_tsc is set once at init, before tracking turns on; without an
 * invariant TSC (or elsewhere) ticks are CLOCK_MONOTONIC ns. */
extern RH_HIDDEN int rh_clock_tsc;
RH_HIDDEN uint64_t rh_now_slow(void);
static inline uint64_t rh_now(void)
{
#if defined(__x86_64__)
    if (rh_likely(rh_clock_tsc)) {
        uint32_t lo, hi;
        __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
        return ((uint64_t)hi << 32) | lo;
    }
#endif
    return rh_now_slow();
}

/* Recording, called between rh_hook_begin() and rh_hook_end() only.
 * kind: RH_KIND_* from the generated wrap table. t: from rh_now().
 * errno: every rh_record_* (and rh_now) leaves errno as it found it, so a shim
 * never saves it around them; it only reads errno when the real call's failure
 * (ENOMEM) matters (tests/unit/runtime/test_errno.c holds the runtime to it). */
RH_HIDDEN void rh_record_alloc(unsigned kind, void *p, size_t size, uint64_t t_after, void *fp);
RH_HIDDEN void rh_record_free(void *p, uint64_t t_before);
/* A realloc-like call that ended block `old` and produced `p` of `size` bytes.
 * old == NULL is an allocation, p == NULL with size 0 a free: the shim decides
 * and calls rh_record_alloc / rh_record_free for those instead. */
RH_HIDDEN void rh_record_realloc(unsigned kind, void *old, void *p, size_t size, uint64_t t_before,
                                 uint64_t t_after, void *fp);
/* The real allocator returned NULL for `size` bytes: counted, not a block. */
RH_HIDDEN void rh_record_fail(unsigned kind, size_t size, void *fp);
/* A call that is not an allocation, recorded with its stack as one timed EXT
 * record (mmap, munmap, mremap, mallopt; FORMAT.md "mmap
 * and mallopt"): subtype `sub` (RIP_EXT_MMAP..), a stack of `kind`
 * (RH_KIND_MMAP..), then the n <= 8 values v as varints (signed ones
 * zigzagged by the caller). t: rh_now() after the real call. Keeps errno. */
RH_HIDDEN void rh_record_ext(unsigned kind, unsigned sub, const uint64_t *v, unsigned n,
                             uint64_t t, void *fp);
/* 1 when the calling thread records into a slot of the current file already:
 * its next record takes no cold path that could call into libc (a thread's
 * first record finds its stack bounds with pthread_getattr_np, which
 * allocates). For callers that may run inside another allocator's locks. */
RH_HIDDEN int rh_thread_recording(void);
/* A module may have been loaded or unloaded (after dlopen/dlclose). */
RH_HIDDEN void rh_modules_changed(void);

#endif
