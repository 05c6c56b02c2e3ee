/* shims_cxx.c: the __wrap_ shims of every C++ operator new and delete.
 *
 * Written in C with the Itanium ABI names (_Znwm = operator new(size_t), ...):
 * std::align_val_t arrives as a size_t and std::nothrow_t as a pointer. Kinds:
 * new for the scalar forms, new[] for the array forms; every delete is a free.
 *
 * Two things make this file different from shims_malloc.c:
 *
 * - The real operators live in libstdc++, which a C program does not link. The
 *   runtime is linked whole into every program, so the __real_ operators are
 *   declared weak here (RH_REAL_CXX): in a C program they are NULL and nothing
 *   calls these shims, except a C++ shared library loaded later that binds to the
 *   exported __wrap_ symbols. For that case rh_cxx_new_fallback() and the free
 *   fallback allocate like libstdc++ does, from malloc (it cannot throw: a failed
 *   throwing new aborts with one line). C++ links add -Wl,-u,SYM (rheaper-c++) so
 *   a static libstdc++ still provides the real operators.
 * - A throwing operator new may leave by an exception (std::bad_alloc, or what a
 *   new_handler throws). This file is built with -fexceptions and a cleanup runs
 *   during unwinding: it records the failure and releases the reentrancy guard,
 *   which would otherwise stay set and silence the thread for good.
 *
 * Under sampling, new and delete first ask whether the call records anything
 * (rh_fast_unsampled_alloc / _free, rh_shims.h), as malloc and free do; most
 * do not and run the real operator under the guard, skipping the hooked half.
 */
#define RH_REAL_CXX __attribute__((weak))

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "rh_shims.h"

/* The state of a hooked operator new call while the real operator runs. */
struct rh_cxx_pending {
    unsigned kind;
    size_t size;
    void *fp;
    int open; /* 1 until the real operator returned */
};

/* Cleanup of a hooked operator new: when the scope is left by an exception the
 * call is still open, so it is recorded as a failure and the hook is ended. */
static void rh_cxx_unwind(struct rh_cxx_pending *c)
{
    if (rh_unlikely(c->open)) {
        c->open = 0;
        rh_record_fail(c->kind, c->size, c->fp);
        rh_hook_end();
    }
}

/* operator new when the program has no libstdc++ (see the top of the file):
 * `align` 0 for the unaligned forms. Returns the block, or NULL for a nothrow
 * form; a throwing form that cannot allocate writes one line and aborts. */
static void *__attribute__((noinline)) rh_cxx_new_fallback(size_t n, size_t align, int nothrow)
{
    void *p = NULL;
    if (n == 0)
        n = 1;
    if (align == 0) {
        p = __real_malloc(n);
    } else {
        if (align < sizeof(void *))
            align = sizeof(void *);
        if (__real_posix_memalign(&p, align, n) != 0)
            p = NULL;
    }
    if (p == NULL && !nothrow) {
        static const char msg[] =
            "rheaper: operator new failed and libstdc++ is not linked: abort\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        abort();
    }
    return p;
}

#define RH_HOOKED static __attribute__((noinline))
#define RH_UNPAREN(...) __VA_ARGS__

/* The unsampled fast paths, as the malloc family has them
 * (rh_fast_unsampled_alloc / _free, rh_shims.h): while a sampled recording is
 * on, a new whose bytes do not reach the thread's countdown, or a delete of a
 * block the live map's filter has never seen, records nothing and skips the
 * hooked half. Unlike malloc's, the real operator runs under the guard
 * (RH_GUARD_CALL): it allocates through malloc (a wrapped call in a static
 * libstdc++, the interposed one with a shared libstdc++), and that inner call
 * must neither draw on the countdown again nor be recorded as a malloc. The
 * cleanup releases the guard also when the real operator throws. */
static inline void rh_cxx_pass_end(int *unused)
{
    (void)unused;
    rh_hook_end();
}
#define RH_CXX_PASS_BEGIN()                                                                        \
    rh_guard = RH_GUARD_CALL;                                                                      \
    rh_barrier();                                                                                  \
    int rh_pass_open __attribute__((cleanup(rh_cxx_pass_end), unused)) = 1

/* Calls the real operator SYM(args), or the fallback when libstdc++ is absent. */
#define RH_REAL_NEW(SYM, ALIGN, NOTHROW, ...)                                                      \
    (rh_likely(__real_##SYM != NULL) ? __real_##SYM(__VA_ARGS__)                                   \
                                     : rh_cxx_new_fallback(n, ALIGN, NOTHROW))

/* Defines the shim of operator new SYM with parameters PARAMS (the size is
 * always n) and the noinline recording half rh_hooked_SYM, which keeps the
 * shim's pass-through path free of saved registers. The recording half holds
 * the cleanup that records a failure if the real operator throws. */
#define RH_NEW_SHIM(SYM, KIND, ALIGN, NOTHROW, PARAMS, ARGS)                                       \
    RH_HOOKED RH_WALK_ALIGNED void *rh_hooked_##SYM(void *fp, RH_UNPAREN PARAMS)                   \
    {                                                                                              \
        struct rh_cxx_pending pend __attribute__((cleanup(rh_cxx_unwind))) = {KIND, n, fp, 1};     \
        void *p = RH_REAL_NEW(SYM, ALIGN, NOTHROW, RH_UNPAREN ARGS);                               \
        pend.open = 0;                                                                             \
        rh_alloc_done(KIND, p, n, fp); /* keeps errno */                                           \
        return p;                                                                                  \
    }                                                                                              \
    RH_HOOKED void *rh_pass_##SYM(RH_UNPAREN PARAMS)                                               \
    {                                                                                              \
        RH_CXX_PASS_BEGIN();                                                                       \
        return RH_REAL_NEW(SYM, ALIGN, NOTHROW, RH_UNPAREN ARGS);                                  \
    }                                                                                              \
    RH_WRAP void *__wrap_##SYM(RH_UNPAREN PARAMS)                                                  \
    {                                                                                              \
        int s = __atomic_load_n(&rh_state, __ATOMIC_RELAXED);                                      \
        if (rh_likely(s == RH_OFF))                                                                \
            return RH_REAL_NEW(SYM, ALIGN, NOTHROW, RH_UNPAREN ARGS);                              \
        if (rh_fast_unsampled_alloc(s, n))                                                         \
            return rh_pass_##SYM(RH_UNPAREN ARGS);                                                 \
        if (!rh_hook_begin())                                                                      \
            return RH_REAL_NEW(SYM, ALIGN, NOTHROW, RH_UNPAREN ARGS);                              \
        return rh_hooked_##SYM(RH_FP(), RH_UNPAREN ARGS);                                          \
    }

RH_NEW_SHIM(_Znwm, RH_KIND_NEW, 0, 0, (size_t n), (n))
RH_NEW_SHIM(_Znam, RH_KIND_NEW_ARRAY, 0, 0, (size_t n), (n))
RH_NEW_SHIM(_ZnwmRKSt9nothrow_t, RH_KIND_NEW, 0, 1, (size_t n, const void *nt), (n, nt))
RH_NEW_SHIM(_ZnamRKSt9nothrow_t, RH_KIND_NEW_ARRAY, 0, 1, (size_t n, const void *nt), (n, nt))
RH_NEW_SHIM(_ZnwmSt11align_val_t, RH_KIND_NEW, al, 0, (size_t n, size_t al), (n, al))
RH_NEW_SHIM(_ZnamSt11align_val_t, RH_KIND_NEW_ARRAY, al, 0, (size_t n, size_t al), (n, al))
RH_NEW_SHIM(_ZnwmSt11align_val_tRKSt9nothrow_t, RH_KIND_NEW, al, 1,
            (size_t n, size_t al, const void *nt), (n, al, nt))
RH_NEW_SHIM(_ZnamSt11align_val_tRKSt9nothrow_t, RH_KIND_NEW_ARRAY, al, 1,
            (size_t n, size_t al, const void *nt), (n, al, nt))

/* Calls the real operator delete SYM(args), or free() without libstdc++. */
#define RH_REAL_DELETE(SYM, ...)                                                                   \
    do {                                                                                           \
        if (rh_likely(__real_##SYM != NULL))                                                       \
            __real_##SYM(__VA_ARGS__);                                                             \
        else                                                                                       \
            __real_free(p);                                                                        \
    } while (0)

/* Defines the shim of operator delete SYM (the pointer is always p) and its
 * noinline recording half. Deleting NULL records nothing; otherwise the free is
 * recorded, with its time, before the real delete. */
#define RH_DELETE_SHIM(SYM, PARAMS, ARGS)                                                          \
    RH_HOOKED void rh_hooked_##SYM(RH_UNPAREN PARAMS)                                              \
    {                                                                                              \
        rh_record_free_now(p); /* keeps errno */                                      \
        RH_REAL_DELETE(SYM, RH_UNPAREN ARGS);                                                      \
        rh_hook_end();                                                                             \
    }                                                                                              \
    RH_HOOKED void rh_pass_##SYM(RH_UNPAREN PARAMS)                                                \
    {                                                                                              \
        RH_CXX_PASS_BEGIN();                                                                       \
        RH_REAL_DELETE(SYM, RH_UNPAREN ARGS);                                                      \
    }                                                                                              \
    RH_WRAP void __wrap_##SYM(RH_UNPAREN PARAMS)                                                   \
    {                                                                                              \
        int s = __atomic_load_n(&rh_state, __ATOMIC_RELAXED);                                      \
        if (rh_likely(s == RH_OFF)) {                                                              \
            RH_REAL_DELETE(SYM, RH_UNPAREN ARGS);                                                  \
            return;                                                                                \
        }                                                                                          \
        if (rh_fast_unsampled_free(s, p) && !rh_guard) {                                           \
            rh_pass_##SYM(RH_UNPAREN ARGS);                                                        \
            return;                                                                                \
        }                                                                                          \
        if (p == NULL || !rh_hook_begin()) {                                                       \
            RH_REAL_DELETE(SYM, RH_UNPAREN ARGS);                                                  \
            return;                                                                                \
        }                                                                                          \
        rh_hooked_##SYM(RH_UNPAREN ARGS);                                                          \
    }

RH_DELETE_SHIM(_ZdlPv, (void *p), (p))
RH_DELETE_SHIM(_ZdaPv, (void *p), (p))
RH_DELETE_SHIM(_ZdlPvm, (void *p, size_t n), (p, n))
RH_DELETE_SHIM(_ZdaPvm, (void *p, size_t n), (p, n))
RH_DELETE_SHIM(_ZdlPvRKSt9nothrow_t, (void *p, const void *nt), (p, nt))
RH_DELETE_SHIM(_ZdaPvRKSt9nothrow_t, (void *p, const void *nt), (p, nt))
RH_DELETE_SHIM(_ZdlPvSt11align_val_t, (void *p, size_t al), (p, al))
RH_DELETE_SHIM(_ZdaPvSt11align_val_t, (void *p, size_t al), (p, al))
RH_DELETE_SHIM(_ZdlPvmSt11align_val_t, (void *p, size_t n, size_t al), (p, n, al))
RH_DELETE_SHIM(_ZdaPvmSt11align_val_t, (void *p, size_t n, size_t al), (p, n, al))
RH_DELETE_SHIM(_ZdlPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t al, const void *nt),
               (p, al, nt))
RH_DELETE_SHIM(_ZdaPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t al, const void *nt),
               (p, al, nt))
