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
        static const char msg[] = "rheaper: operator new failed and libstdc++ is not linked: abort\n";
        ssize_t w = write(2, msg, sizeof msg - 1);
        (void)w;
        abort();
    }
    return p;
}

/* Calls the real operator SYM(args), or the fallback when libstdc++ is absent. */
#define RH_REAL_NEW(SYM, ALIGN, NOTHROW, ...)                                                     \
    (rh_likely(__real_##SYM != NULL) ? __real_##SYM(__VA_ARGS__)                                   \
                                     : rh_cxx_new_fallback(n, ALIGN, NOTHROW))

/* Body of an operator new shim: n is the size parameter, the rest forwarded. */
#define RH_NEW_BODY(SYM, KIND, ALIGN, NOTHROW, ...)                                               \
    if (!rh_hook_begin())                                                                          \
        return RH_REAL_NEW(SYM, ALIGN, NOTHROW, __VA_ARGS__);                                      \
    struct rh_cxx_pending pend __attribute__((cleanup(rh_cxx_unwind))) = {KIND, n, RH_FP(), 1};   \
    void *p = RH_REAL_NEW(SYM, ALIGN, NOTHROW, __VA_ARGS__);                                       \
    pend.open = 0;                                                                                 \
    rh_shim_alloc_done(KIND, p, n, pend.fp);                                                       \
    return p

RH_WRAP void *__wrap__Znwm(size_t n)
{
    RH_NEW_BODY(_Znwm, RH_KIND_NEW, 0, 0, n);
}

RH_WRAP void *__wrap__Znam(size_t n)
{
    RH_NEW_BODY(_Znam, RH_KIND_NEW_ARRAY, 0, 0, n);
}

RH_WRAP void *__wrap__ZnwmRKSt9nothrow_t(size_t n, const void *nt)
{
    RH_NEW_BODY(_ZnwmRKSt9nothrow_t, RH_KIND_NEW, 0, 1, n, nt);
}

RH_WRAP void *__wrap__ZnamRKSt9nothrow_t(size_t n, const void *nt)
{
    RH_NEW_BODY(_ZnamRKSt9nothrow_t, RH_KIND_NEW_ARRAY, 0, 1, n, nt);
}

RH_WRAP void *__wrap__ZnwmSt11align_val_t(size_t n, size_t al)
{
    RH_NEW_BODY(_ZnwmSt11align_val_t, RH_KIND_NEW, al, 0, n, al);
}

RH_WRAP void *__wrap__ZnamSt11align_val_t(size_t n, size_t al)
{
    RH_NEW_BODY(_ZnamSt11align_val_t, RH_KIND_NEW_ARRAY, al, 0, n, al);
}

RH_WRAP void *__wrap__ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt)
{
    RH_NEW_BODY(_ZnwmSt11align_val_tRKSt9nothrow_t, RH_KIND_NEW, al, 1, n, al, nt);
}

RH_WRAP void *__wrap__ZnamSt11align_val_tRKSt9nothrow_t(size_t n, size_t al, const void *nt)
{
    RH_NEW_BODY(_ZnamSt11align_val_tRKSt9nothrow_t, RH_KIND_NEW_ARRAY, al, 1, n, al, nt);
}

/* Calls the real operator delete SYM(args), or free() without libstdc++. */
#define RH_REAL_DELETE(SYM, ...)                                                                   \
    do {                                                                                           \
        if (rh_likely(__real_##SYM != NULL))                                                       \
            __real_##SYM(__VA_ARGS__);                                                             \
        else                                                                                       \
            __real_free(p);                                                                        \
    } while (0)

/* Body of an operator delete shim: p is the pointer parameter. Deleting NULL
 * records nothing; otherwise the free is recorded before the real delete. */
#define RH_DELETE_BODY(SYM, ...)                                                                   \
    if (p == NULL || !rh_hook_begin()) {                                                           \
        RH_REAL_DELETE(SYM, __VA_ARGS__);                                                          \
        return;                                                                                    \
    }                                                                                              \
    int e = errno;                                                                                 \
    rh_record_free(p, rh_now());                                                                   \
    RH_REAL_DELETE(SYM, __VA_ARGS__);                                                              \
    rh_hook_end();                                                                                 \
    errno = e

RH_WRAP void __wrap__ZdlPv(void *p)
{
    RH_DELETE_BODY(_ZdlPv, p);
}

RH_WRAP void __wrap__ZdaPv(void *p)
{
    RH_DELETE_BODY(_ZdaPv, p);
}

RH_WRAP void __wrap__ZdlPvm(void *p, size_t n)
{
    RH_DELETE_BODY(_ZdlPvm, p, n);
}

RH_WRAP void __wrap__ZdaPvm(void *p, size_t n)
{
    RH_DELETE_BODY(_ZdaPvm, p, n);
}

RH_WRAP void __wrap__ZdlPvRKSt9nothrow_t(void *p, const void *nt)
{
    RH_DELETE_BODY(_ZdlPvRKSt9nothrow_t, p, nt);
}

RH_WRAP void __wrap__ZdaPvRKSt9nothrow_t(void *p, const void *nt)
{
    RH_DELETE_BODY(_ZdaPvRKSt9nothrow_t, p, nt);
}

RH_WRAP void __wrap__ZdlPvSt11align_val_t(void *p, size_t al)
{
    RH_DELETE_BODY(_ZdlPvSt11align_val_t, p, al);
}

RH_WRAP void __wrap__ZdaPvSt11align_val_t(void *p, size_t al)
{
    RH_DELETE_BODY(_ZdaPvSt11align_val_t, p, al);
}

RH_WRAP void __wrap__ZdlPvmSt11align_val_t(void *p, size_t n, size_t al)
{
    RH_DELETE_BODY(_ZdlPvmSt11align_val_t, p, n, al);
}

RH_WRAP void __wrap__ZdaPvmSt11align_val_t(void *p, size_t n, size_t al)
{
    RH_DELETE_BODY(_ZdaPvmSt11align_val_t, p, n, al);
}

RH_WRAP void __wrap__ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt)
{
    RH_DELETE_BODY(_ZdlPvSt11align_val_tRKSt9nothrow_t, p, al, nt);
}

RH_WRAP void __wrap__ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t al, const void *nt)
{
    RH_DELETE_BODY(_ZdaPvSt11align_val_tRKSt9nothrow_t, p, al, nt);
}
