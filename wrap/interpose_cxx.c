/* interpose_cxx.c: C++ operators new and delete defined by the executable.
 *
 * The companion of interpose_malloc.c for programs linked with a shared
 * libstdc++ (librheaper_ipcxx.a; rheaper-c++ links it only then: with a static
 * libstdc++ the operators are the program's own and --wrap sees every call).
 * libstdc++.so's own uses of operator new (std::string, iostreams, containers
 * grown inside the library) bind to these definitions, which record kind new or
 * new[] and forward to the next definition (libstdc++'s, found with
 * dlsym(RTLD_NEXT) at the first call of each operator). Deletes record a free.
 * The program's own calls come through the __wrap_ shims first and pass through
 * here under the guard: one row each.
 *
 * A throwing operator new may leave by an exception: built with -fexceptions,
 * a cleanup records the failure and releases the guard during unwinding.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rh_shims.h"

#define RH_HOOKED static __attribute__((noinline))
#define RH_UNPAREN(...) __VA_ARGS__

/* The next definition of symbol `name`, cached in *slot; aborts with one line
 * when there is none (a C++ program without libstdc++ cannot call it). */
static __attribute__((noinline, cold)) void *rh_ipcxx_next(void **slot, const char *name)
{
    char link[64]; /* a 32-bit size_t is 'j', not 'm' (wrap/gen_wrap.py's size_t_mangle) */
    size_t len = strlen(name), at = 0;
    if (sizeof(size_t) == 4 && len < sizeof link) {
        memcpy(link, name, len + 1);
        if (strncmp(name, "_Znw", 4) == 0 || strncmp(name, "_Zna", 4) == 0)
            at = 4;
        else if (strncmp(name, "_ZdlPv", 6) == 0 || strncmp(name, "_ZdaPv", 6) == 0)
            at = 6;
        if (at && link[at] == 'm')
            link[at] = 'j';
        name = link;
    }
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        static const char a[] = "rheaper: no next definition of C++ operator ";
        ssize_t w = write(2, a, sizeof a - 1);
        w = write(2, name, strlen(name));
        w = write(2, "; abort\n", 8);
        (void)w;
        abort();
    }
    __atomic_store_n(slot, f, __ATOMIC_RELEASE);
    return f;
}

#define RH_NEXT_FN(SYM, RET, PARAMS)                                                               \
    typedef RET(*rh_fn_##SYM) PARAMS;                                                              \
    static void *rh_next_##SYM;                                                                    \
    static inline rh_fn_##SYM rh_get_##SYM(void)                                                   \
    {                                                                                              \
        void *f = __atomic_load_n(&rh_next_##SYM, __ATOMIC_ACQUIRE);                               \
        if (rh_unlikely(!f))                                                                       \
            f = rh_ipcxx_next(&rh_next_##SYM, #SYM);                                               \
        rh_fn_##SYM t;                                                                             \
        memcpy(&t, &f, sizeof t);                                                                  \
        return t;                                                                                  \
    }

/* rh_hook_begin, and nothing under RHEAPER_SCOPE=program. */
static inline int rh_ipcxx_begin(void)
{
    if (!rh_hook_begin())
        return 0;
    if (rh_unlikely(!rh_scope_process)) {
        rh_hook_end();
        return 0;
    }
    return 1;
}

struct rh_ipcxx_pending {
    unsigned kind;
    size_t size;
    void *fp;
    int open;
};

static void rh_ipcxx_unwind(struct rh_ipcxx_pending *c)
{
    if (rh_unlikely(c->open)) {
        c->open = 0;
        rh_record_fail(c->kind, c->size, c->fp);
        rh_hook_end();
    }
}

/* Exported and kept, and weak: a program that links an allocator's operators
 * statically (libtcmalloc.a) or defines its own keeps those. */
#define RH_IPCXX RH_WRAP __attribute__((weak))

#define RH_IP_NEW(SYM, KIND, PARAMS, ARGS)                                                         \
    RH_NEXT_FN(SYM, void *, PARAMS)                                                               \
    RH_HOOKED void *rh_ipcxx_hooked_##SYM(void *fp, RH_UNPAREN PARAMS)                             \
    {                                                                                              \
        struct rh_ipcxx_pending pend __attribute__((cleanup(rh_ipcxx_unwind))) = {KIND, n, fp, 1}; \
        void *p = rh_get_##SYM() ARGS;                                                             \
        pend.open = 0;                                                                             \
        rh_alloc_done(KIND, p, n, fp);                                                             \
        return p;                                                                                  \
    }                                                                                              \
    RH_IPCXX void *SYM PARAMS                                                                      \
    {                                                                                              \
        if (!rh_ipcxx_begin())                                                                     \
            return rh_get_##SYM() ARGS;                                                            \
        void *p = rh_ipcxx_hooked_##SYM(RH_FP(), RH_UNPAREN ARGS);                                 \
        rh_barrier();                                                                              \
        return p;                                                                                  \
    }

RH_IP_NEW(_Znwm, RH_KIND_NEW, (size_t n), (n))
RH_IP_NEW(_Znam, RH_KIND_NEW_ARRAY, (size_t n), (n))
RH_IP_NEW(_ZnwmRKSt9nothrow_t, RH_KIND_NEW, (size_t n, const void *nt), (n, nt))
RH_IP_NEW(_ZnamRKSt9nothrow_t, RH_KIND_NEW_ARRAY, (size_t n, const void *nt), (n, nt))
RH_IP_NEW(_ZnwmSt11align_val_t, RH_KIND_NEW, (size_t n, size_t al), (n, al))
RH_IP_NEW(_ZnamSt11align_val_t, RH_KIND_NEW_ARRAY, (size_t n, size_t al), (n, al))
RH_IP_NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, RH_KIND_NEW, (size_t n, size_t al, const void *nt),
          (n, al, nt))
RH_IP_NEW(_ZnamSt11align_val_tRKSt9nothrow_t, RH_KIND_NEW_ARRAY,
          (size_t n, size_t al, const void *nt), (n, al, nt))

#define RH_IP_DELETE(SYM, PARAMS, ARGS)                                                            \
    RH_NEXT_FN(SYM, void, PARAMS)                                                                \
    RH_HOOKED void rh_ipcxx_hooked_##SYM(RH_UNPAREN PARAMS)                                        \
    {                                                                                              \
        rh_record_free_now(p);                                                        \
        rh_get_##SYM() ARGS;                                                                       \
        rh_hook_end();                                                                             \
    }                                                                                              \
    RH_IPCXX void SYM PARAMS                                                                       \
    {                                                                                              \
        if (p == NULL || !rh_ipcxx_begin()) {                                                      \
            rh_get_##SYM() ARGS;                                                                   \
            return;                                                                                \
        }                                                                                          \
        rh_ipcxx_hooked_##SYM(RH_UNPAREN ARGS);                                                    \
        rh_barrier();                                                                              \
    }

RH_IP_DELETE(_ZdlPv, (void *p), (p))
RH_IP_DELETE(_ZdaPv, (void *p), (p))
RH_IP_DELETE(_ZdlPvm, (void *p, size_t n), (p, n))
RH_IP_DELETE(_ZdaPvm, (void *p, size_t n), (p, n))
RH_IP_DELETE(_ZdlPvRKSt9nothrow_t, (void *p, const void *nt), (p, nt))
RH_IP_DELETE(_ZdaPvRKSt9nothrow_t, (void *p, const void *nt), (p, nt))
RH_IP_DELETE(_ZdlPvSt11align_val_t, (void *p, size_t al), (p, al))
RH_IP_DELETE(_ZdaPvSt11align_val_t, (void *p, size_t al), (p, al))
RH_IP_DELETE(_ZdlPvmSt11align_val_t, (void *p, size_t n, size_t al), (p, n, al))
RH_IP_DELETE(_ZdaPvmSt11align_val_t, (void *p, size_t n, size_t al), (p, n, al))
RH_IP_DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t al, const void *nt),
             (p, al, nt))
RH_IP_DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t al, const void *nt),
             (p, al, nt))
