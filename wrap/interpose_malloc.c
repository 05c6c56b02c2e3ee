/* interpose_malloc.c: the malloc family defined by the executable itself.
 *
 * --wrap sees only the calls made by the objects rheaper-cc links. A dynamic
 * executable also runs code it did not build: shared libraries (SQLite, zlib,
 * libstdc++) and libc's own internals. The dynamic linker binds all of their
 * calls to the first definition in lookup order, and the executable comes first.
 * So this file, linked (librheaper_ip.a, dynamic executables only) into the
 * program, defines and exports malloc, free, calloc, realloc, reallocarray,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc, malloc_usable_size
 * and dlopen (glibc's manual, "Replacing malloc"). Each records through
 * runtime/rh_hooks.h as a shim does and forwards to the NEXT definition
 * (dlsym(RTLD_NEXT)), so a program linked with jemalloc or tcmalloc keeps its
 * allocator, and glibc's otherwise.
 *
 * Layers: a call the program makes goes __wrap_malloc (records, guard set) ->
 * __real_malloc, which --wrap binds to the malloc defined here -> sees the
 * guard and forwards. One row per allocation, with the exact kind the wrapper
 * saw (strdup, new[]); a call from a library makes one row of the kind defined
 * here. RHEAPER_SCOPE=program: every function here forwards without recording.
 *
 * Bootstrap: the first call resolves the next definitions with dlsym, which may
 * itself allocate (dlerror state). While this thread resolves, allocations come
 * from a small static arena: never freed (free of an arena block is a no-op),
 * never handed to the real allocator. Nothing is recorded before the
 * environment is readable (libc's early start-up, when ld.so allocates for
 * itself): tracking is decided by the first call after that.
 *
 * Nothing here allocates through rheaper, uses stdio or takes a lock; a failed
 * resolution writes one line and aborts (the program has no allocator).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rh_shims.h"

extern char **__environ;

/* This file's own malloc, free and realloc, by hidden aliases: the exported
 * names are weak (RH_IP), and a program that links an allocator statically
 * (libjemalloc.a, a dlmalloc of its own) replaces them with its strong ones.
 * Calls then reach that allocator directly, the runtime's __real_ functions
 * included, and the functions here that remain (reallocarray, dlopen) forward
 * to the next definition as before. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-attributes" /* glibc's leaf and nothrow need not hold */
#endif
extern __typeof__(malloc) rh_ip_own_malloc __attribute__((alias("malloc"), visibility("hidden")));
extern __typeof__(free) rh_ip_own_free __attribute__((alias("free"), visibility("hidden")));
extern __typeof__(realloc) rh_ip_own_realloc __attribute__((alias("realloc"), visibility("hidden")));

/* 1 when the program's malloc is this file's, 0 when a definition of the
 * program's own replaced it. The address is read at run time (through the
 * GOT or a relocated immediate), never folded. */
static int rh_ip_is_ours(void *used, void *own)
{
    __asm__("" : "+r"(used));
    return used == own;
}

/* Tells the libc shims (shims_libc.c) that libc's inner allocations reach this
 * file: they then record through it, with a kind hint (rh_hooks.h). Not when
 * the program's own malloc replaced this file's (libc's calls go there). */
RH_HIDDEN int rh_ip_linked(void)
{
    return rh_ip_is_ours((void *)&malloc, (void *)&rh_ip_own_malloc);
}

/* The kind and walk start of a call recorded here: its own, or a libc shim's
 * hint when one is set (the shim's frame is still on the stack: the call runs
 * inside it). */
#define RH_IP_HINT(kind, fp)                                                                       \
    do {                                                                                           \
        if (rh_unlikely(rh_tls_hint_fp != NULL)) {                                                 \
            kind = rh_tls_hint_kind;                                                               \
            fp = rh_tls_hint_fp;                                                                   \
        }                                                                                          \
    } while (0)

#define RH_IP RH_WRAP __attribute__((weak)) /* exported, kept, yields to the program's own */
#define RH_HOOKED static __attribute__((noinline))

/* The next definition of every function defined here. */
static struct {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void *(*reallocarray)(void *, size_t, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*malloc_usable_size)(void *);
    void *(*dlopen)(const char *, int);
} rh_next;

/* 0 unresolved, 1 being resolved, 2 resolved (release store after rh_next). */
static int rh_ip_state;
static __thread int rh_ip_resolving __attribute__((tls_model("local-exec")));

/* The bootstrap arena: 16-byte header (the block's size) before each block. */
#define RH_BOOT_SIZE 65536
static unsigned char rh_boot[RH_BOOT_SIZE] __attribute__((aligned(64)));
static size_t rh_boot_used;

static inline int rh_boot_owns(const void *p)
{
    return (const unsigned char *)p >= rh_boot && (const unsigned char *)p < rh_boot + RH_BOOT_SIZE;
}

/* A zeroed block of n bytes aligned to align (a power of two <= 4096) from the
 * arena, or NULL (ENOMEM) when it is full. Only the resolving thread gets here. */
static void *rh_boot_alloc(size_t n, size_t align)
{
    if (align < 16)
        align = 16;
    size_t start = (rh_boot_used + 16 + align - 1) & ~(align - 1);
    if (align > 4096 || n > RH_BOOT_SIZE || start + n > RH_BOOT_SIZE) {
        errno = ENOMEM;
        return NULL;
    }
    rh_boot_used = start + n;
    memcpy(rh_boot + start - sizeof(size_t), &n, sizeof n);
    return rh_boot + start;
}

static size_t rh_boot_size(const void *p)
{
    size_t n;
    memcpy(&n, (const unsigned char *)p - sizeof n, sizeof n);
    return n;
}

static void rh_ip_die(const char *sym)
{
    static const char a[] = "rheaper: cannot find the next definition of ";
    ssize_t w = write(2, a, sizeof a - 1);
    w = write(2, sym, strlen(sym));
    w = write(2, "; abort\n", 8);
    (void)w;
    abort();
}

#define RH_RESOLVE(name, required)                                                                 \
    do {                                                                                           \
        void *f = dlsym(RTLD_NEXT, #name);                                                         \
        if (!f && (required))                                                                      \
            rh_ip_die(#name);                                                                      \
        memcpy(&rh_next.name, &f, sizeof f);                                                       \
    } while (0)

/* Resolves rh_next. Returns 1 when the caller may use it, 0 when this thread
 * is inside the resolution (dlsym allocating): use the arena. */
static void rh_ip_pass_free(void *p);
static void *rh_ip_pass_realloc(void *p, size_t n);

static __attribute__((noinline, cold)) int rh_ip_resolve(void)
{
    if (rh_ip_resolving)
        return 0;
    int expected = 0;
    if (__atomic_compare_exchange_n(&rh_ip_state, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        int e = errno;
        rh_ip_resolving = 1;
        RH_RESOLVE(malloc, 1);
        RH_RESOLVE(free, 1);
        RH_RESOLVE(calloc, 1);
        RH_RESOLVE(realloc, 1);
        RH_RESOLVE(reallocarray, 0);
        RH_RESOLVE(posix_memalign, 0);
        RH_RESOLVE(aligned_alloc, 0);
        RH_RESOLVE(memalign, 0);
        RH_RESOLVE(valloc, 0);
        RH_RESOLVE(pvalloc, 0);
        RH_RESOLVE(malloc_usable_size, 0);
        RH_RESOLVE(dlopen, 0);
        rh_ip_resolving = 0;
        rh_barrier();
        errno = e;
        __atomic_store_n(&rh_ip_state, 2, __ATOMIC_RELEASE);
        /* The shims' pass-through paths may now skip this layer (rh_shims.h).
         * Arena blocks exist only if this thread's dlsym calls (or a signal
         * handler running inside them) allocated; no more can appear now that
         * rh_ip_resolving is clear. Without any (glibc's dlsym allocates
         * nothing on success), free and realloc go straight to the next
         * allocator too: that spares the arena test, 7 and 19 instructions
         * per call on a tracking-off Lua run (bench/sample_bench.sh). */
        /* Each only where this file's function is the program's: a static
         * allocator's replacement stays the shims' __real_ target. */
        int boot = __atomic_load_n(&rh_boot_used, __ATOMIC_RELAXED) != 0;
        if (rh_ip_is_ours((void *)&malloc, (void *)&rh_ip_own_malloc))
            __atomic_store_n(&rh_pass_malloc, rh_next.malloc, __ATOMIC_RELAXED);
        if (rh_ip_is_ours((void *)&realloc, (void *)&rh_ip_own_realloc))
            __atomic_store_n(&rh_pass_realloc, boot ? rh_ip_pass_realloc : rh_next.realloc,
                             __ATOMIC_RELAXED);
        if (rh_ip_is_ours((void *)&free, (void *)&rh_ip_own_free))
            __atomic_store_n(&rh_pass_free, boot ? rh_ip_pass_free : rh_next.free,
                             __ATOMIC_RELAXED);
        return 1;
    }
    while (__atomic_load_n(&rh_ip_state, __ATOMIC_ACQUIRE) != 2)
        sched_yield();
    return 1;
}

/* 1 when rh_next is usable (resolving it first if needed). */
static inline int rh_ip_ready(void)
{
    if (rh_likely(__atomic_load_n(&rh_ip_state, __ATOMIC_ACQUIRE) == 2))
        return 1;
    return rh_ip_resolve();
}

/* The hot functions' pass-through (malloc, free, calloc, realloc), tested
 * first: resolved, and tracking off or this thread already inside a hooked
 * call (the wrap shims' __real_ calls land here with the guard set). Then
 * they jump straight to the next definition: gcc gets sibling calls back for
 * them (the file is built without), as for the hot shims. */
#if defined(__GNUC__) && !defined(__clang__)
#define RH_SIBCALLS __attribute__((optimize("optimize-sibling-calls")))
#else
#define RH_SIBCALLS
#endif
#define RH_IP_HOT RH_IP RH_SIBCALLS
static inline int rh_ip_pass(void)
{
    int s;
    return rh_likely(__atomic_load_n(&rh_ip_state, __ATOMIC_ACQUIRE) == 2) &&
           ((s = __atomic_load_n(&rh_state, __ATOMIC_RELAXED)) == RH_OFF || rh_guard ||
            s == RH_CPUONLY); /* a CPU-only recording records no heap event */
}

/* rh_hook_begin for the functions here: also 0 under RHEAPER_SCOPE=program and
 * before the environment exists (the first decision must see RHEAPER_ENABLE). */
static inline int rh_ip_begin(void)
{
    int s = __atomic_load_n(&rh_state, __ATOMIC_RELAXED);
    if (rh_likely(s == RH_OFF) || rh_guard)
        return 0;
    if (rh_unlikely(s == RH_UNINIT) && !__environ)
        return 0;
    if (!rh_hook_begin())
        return 0;
    if (rh_unlikely(!rh_scope_process)) {
        rh_hook_end();
        return 0;
    }
    return 1;
}

/* A function the next allocator does not define behaves as absent. */
#define RH_NEXT_OR_ENOSYS(name, fail)                                                              \
    do {                                                                                           \
        if (rh_unlikely(!rh_next.name)) {                                                          \
            errno = ENOSYS;                                                                        \
            return fail;                                                                           \
        }                                                                                          \
    } while (0)

RH_HOOKED RH_WALK_ALIGNED void *rh_ip_malloc_hooked(size_t n, void *fp)
{
    void *p = rh_next.malloc(n);
    unsigned kind = RH_KIND_MALLOC;
    RH_IP_HINT(kind, fp);
    rh_alloc_done(kind, p, n, fp);
    return p;
}

/* Everything but the pass-through; fp is malloc's frame. */
RH_HOOKED void *rh_ip_malloc_slow(size_t n, void *fp)
{
    if (rh_unlikely(!rh_ip_ready()))
        return rh_boot_alloc(n, 16);
    if (!rh_ip_begin())
        return rh_next.malloc(n);
    void *p = rh_ip_malloc_hooked(n, fp);
    rh_barrier();
    return p;
}

RH_IP_HOT void *malloc(size_t n)
{
    if (rh_likely(rh_ip_pass()))
        return rh_next.malloc(n);
    void *p = rh_ip_malloc_slow(n, RH_FP());
    rh_barrier();
    return p;
}

RH_HOOKED void rh_ip_free_hooked(void *p)
{
    rh_record_free_now(p);
    rh_next.free(p);
    rh_hook_end();
}

RH_IP_HOT void free(void *p)
{
    if (rh_likely(rh_ip_pass()) && !rh_boot_owns(p))
        return rh_next.free(p); /* free(NULL) included */
    if (p == NULL || rh_boot_owns(p))
        return;
    if (rh_unlikely(!rh_ip_ready()))
        return; /* unreachable: only arena blocks exist before resolution */
    if (!rh_ip_begin()) {
        rh_next.free(p);
        return;
    }
    rh_ip_free_hooked(p);
    rh_barrier();
}

RH_IP_HOT void *calloc(size_t n, size_t m)
{
    if (rh_likely(rh_ip_pass()))
        return rh_next.calloc(n, m);
    if (rh_unlikely(!rh_ip_ready()))
        return rh_boot_alloc(rh_mul_size(n, m), 16);
    if (!rh_ip_begin())
        return rh_next.calloc(n, m);
    void *p = rh_next.calloc(n, m);
    if (rh_unlikely(rh_memstream_probe))
        rh_memstream_probe = 2; /* open_memstream's buffer is recorded here */
    unsigned kind = RH_KIND_CALLOC;
    void *fp = RH_FP();
    RH_IP_HINT(kind, fp);
    rh_shim_alloc_done(kind, p, rh_mul_size(n, m), fp);
    return p;
}

/* realloc of an arena block: a new real block with its bytes (the arena block
 * stays where it is). Cold and out of line, so that rh_ip_pass_realloc saves no
 * register on its way to the next allocator. */
static __attribute__((noinline, cold)) void *rh_boot_move(void *p, size_t n)
{
    void *q = malloc(n);
    if (q) {
        size_t old = rh_boot_size(p);
        memcpy(q, p, old < n ? old : n);
    }
    return q;
}

/* The shims' pass-through free and realloc once resolved (rh_pass_free,
 * rh_pass_realloc in rh_shims.h) when the bootstrap arena holds blocks: the
 * next allocator's, except for a block of the arena, which the next allocator
 * never saw. */
static RH_SIBCALLS void rh_ip_pass_free(void *p)
{
    if (rh_likely(!rh_boot_owns(p)))
        return rh_next.free(p);
}

static RH_SIBCALLS void *rh_ip_pass_realloc(void *p, size_t n)
{
    if (rh_likely(!rh_boot_owns(p)))
        return rh_next.realloc(p, n);
    return rh_boot_move(p, n);
}

RH_HOOKED RH_WALK_ALIGNED void *rh_ip_realloc_hooked(void *p, size_t n, void *fp)
{
    unsigned kind = RH_KIND_REALLOC;
    RH_IP_HINT(kind, fp);
    if (p == NULL) {
        void *q = rh_next.realloc(NULL, n);
        rh_alloc_done(kind, q, n, fp);
        return q;
    }
    uint64_t t_before = rh_now();
    void *q = rh_next.realloc(p, n);
    uint64_t t_after = rh_now();
    if (rh_likely(q != NULL))
        rh_record_realloc_inline(kind, p, q, n, t_before, t_after, fp);
    else if (n == 0)
        rh_record_free(p, t_before);
    else
        rh_record_fail(kind, n, fp);
    rh_hook_end();
    return q;
}

RH_IP_HOT void *realloc(void *p, size_t n)
{
    if (rh_likely(rh_ip_pass()) && !rh_boot_owns(p))
        return rh_next.realloc(p, n);
    if (rh_unlikely(!rh_ip_ready()))
        return p ? NULL : rh_boot_alloc(n, 16); /* dlsym does not realloc */
    if (rh_unlikely(rh_boot_owns(p)))
        return rh_boot_move(p, n);
    if (!rh_ip_begin())
        return rh_next.realloc(p, n);
    void *q = rh_ip_realloc_hooked(p, n, RH_FP());
    rh_barrier();
    return q;
}

RH_IP void *reallocarray(void *p, size_t n, size_t m)
{
    if (rh_unlikely(!rh_ip_ready() || rh_boot_owns(p))) {
        size_t size = rh_mul_size(n, m);
        if (size == SIZE_MAX) {
            errno = ENOMEM;
            return NULL;
        }
        return realloc(p, size);
    }
    RH_NEXT_OR_ENOSYS(reallocarray, NULL);
    if (!rh_ip_begin())
        return rh_next.reallocarray(p, n, m);
    size_t size = rh_mul_size(n, m);
    unsigned kind = RH_KIND_REALLOCARRAY;
    void *fp = RH_FP();
    RH_IP_HINT(kind, fp);
    if (p == NULL) {
        void *q = rh_next.reallocarray(NULL, n, m);
        rh_shim_alloc_done(kind, q, size, fp);
        return q;
    }
    uint64_t t_before = rh_now();
    void *q = rh_next.reallocarray(p, n, m);
    rh_shim_realloc_done(kind, p, q, size, t_before, fp);
    return q;
}

RH_IP int posix_memalign(void **pp, size_t align, size_t n)
{
    if (rh_unlikely(!rh_ip_ready())) {
        void *p = rh_boot_alloc(n, align);
        if (!p)
            return ENOMEM;
        *pp = p;
        return 0;
    }
    if (!rh_next.posix_memalign)
        return ENOSYS;
    if (!rh_ip_begin())
        return rh_next.posix_memalign(pp, align, n);
    int rc = rh_next.posix_memalign(pp, align, n);
    unsigned kind = RH_KIND_POSIX_MEMALIGN;
    void *fp = RH_FP();
    RH_IP_HINT(kind, fp);
    if (rc == 0)
        rh_shim_alloc_done(kind, *pp, n, fp);
    else if (rc == ENOMEM)
        rh_shim_alloc_done(kind, NULL, n, fp);
    else
        rh_hook_end();
    return rc;
}

/* aligned_alloc, memalign, valloc and pvalloc: one pattern. */
#define RH_IP_ALIGNED(name, KIND, PARAMS, ARGS, BOOT_ALIGN, SIZE)                                  \
    RH_IP void *name PARAMS                                                                        \
    {                                                                                              \
        if (rh_unlikely(!rh_ip_ready()))                                                           \
            return rh_boot_alloc(SIZE, BOOT_ALIGN);                                                \
        RH_NEXT_OR_ENOSYS(name, NULL);                                                             \
        if (!rh_ip_begin())                                                                        \
            return rh_next.name ARGS;                                                              \
        void *p = rh_next.name ARGS;                                                               \
        unsigned kind = KIND;                                                                      \
        void *fp = RH_FP();                                                                        \
        RH_IP_HINT(kind, fp);                                                                      \
        rh_shim_alloc_done(kind, p, SIZE, fp);                                                     \
        return p;                                                                                  \
    }

RH_IP_ALIGNED(aligned_alloc, RH_KIND_ALIGNED_ALLOC, (size_t align, size_t n), (align, n), align, n)
RH_IP_ALIGNED(memalign, RH_KIND_MEMALIGN, (size_t align, size_t n), (align, n), align, n)
RH_IP_ALIGNED(valloc, RH_KIND_VALLOC, (size_t n), (n), 4096, n)
RH_IP_ALIGNED(pvalloc, RH_KIND_PVALLOC, (size_t n), (n), 4096, n)

RH_IP size_t malloc_usable_size(void *p)
{
    if (p == NULL)
        return 0;
    if (rh_boot_owns(p))
        return rh_boot_size(p);
    if (rh_unlikely(!rh_ip_ready()) || !rh_next.malloc_usable_size)
        return 0;
    return rh_next.malloc_usable_size(p);
}

/* dlopen from any library (the program's own calls come through __wrap_dlopen,
 * which also lands here): the module map is re-read afterwards, so frames in a
 * plugin loaded by uninstrumented code still symbolize. The real call runs
 * unguarded (its constructors allocate like any code). */
RH_IP void *dlopen(const char *file, int mode)
{
    if (rh_unlikely(!rh_ip_ready()) || !rh_next.dlopen)
        return NULL;
    void *h = rh_next.dlopen(file, mode);
    if (h != NULL && rh_hook_begin()) {
        rh_modules_changed();
        rh_hook_end();
    }
    return h;
}
