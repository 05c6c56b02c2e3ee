/* rh_runtime.h: the runtime's internal header.
 *
 * The runtime is linked statically into every profiled program. It implements
 * rh_hooks.h (what the wrap shims call) and rheaper.h (the public API) and writes
 * rip files as runtime/FORMAT.md describes. Nothing here allocates through the
 * wrapped allocator or uses stdio: memory comes from mmap, text goes out with
 * write(2). Prototypes are grouped under the file that defines them; everything
 * is hidden.
 */
#ifndef RH_RUNTIME_H
#define RH_RUNTIME_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rh_arch.h"
#include "rh_hooks.h"
#include "rip_format.h"

struct rh_fid; /* rh_open.c */

#ifndef RH_DEBUG_LEVEL
#define RH_DEBUG_LEVEL 1
#endif

#define RH_COLD __attribute__((noinline, cold))
/* Hot-path helpers that must inline whatever gcc's size estimate says. */
#define RH_ALWAYS_INLINE static inline __attribute__((always_inline))

/* Busy-wait hint inside spin loops. */
static inline void rh_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#else
    rh_barrier();
#endif
}
#define RH_CACHE_LINE 64
#define RH_PATH_MAX 4096

/* ---- tiered assertions (rh_log.c) ---------------------------------------
 * rh_assert: cheap checks kept in release builds (level >= 1).
 * rh_assert_internal: invariants of the runtime's own data (level >= 2).
 * rh_assert_expensive: checks that cost a loop or a syscall (level >= 3).
 * A failure writes one line with write(2) and aborts; it never allocates. */
RH_HIDDEN void rh_assert_fail(const char *expr, const char *file, int line)
    __attribute__((noreturn, cold));

#define RH_ASSERT_IMPL_(e) ((e) ? (void)0 : rh_assert_fail(#e, __FILE__, __LINE__))
#if RH_DEBUG_LEVEL >= 1
#define rh_assert(e) RH_ASSERT_IMPL_(e)
#else
#define rh_assert(e) ((void)0)
#endif
#if RH_DEBUG_LEVEL >= 2
#define rh_assert_internal(e) RH_ASSERT_IMPL_(e)
#else
#define rh_assert_internal(e) ((void)0)
#endif
#if RH_DEBUG_LEVEL >= 3
#define rh_assert_expensive(e) RH_ASSERT_IMPL_(e)
#else
#define rh_assert_expensive(e) ((void)0)
#endif

/* ---- rh_log.c ----------------------------------------------------------- */

/* Formats fmt into buf (always NUL-terminated, truncated to size). Supports
 * %s %c %d %u %x %p and %%, with the l, ll and z length modifiers. Returns the
 * length written. Allocation-free and async-signal-safe. */
RH_HIDDEN size_t rh_vfmt(char *buf, size_t size, const char *fmt, va_list ap);
RH_HIDDEN size_t rh_fmt(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A warning or error: ONE line "rheaper: <message>\n" with a single write,
 * where RHEAPER_LOG says (fd 2 by default), once per cause (fmt) and process. */
RH_HIDDEN void rh_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2), cold));
/* A notice ("wrote ..."): every time, but by default only when fd 2 is a
 * terminal (a daemon's fd 2 is its log). */
RH_HIDDEN void rh_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2), cold));
/* Reads RHEAPER_LOG's value: stderr, off, or a file name template with %p %t
 * %e %%. Returns 0, or -1 when it is not one (the default stays). */
RH_HIDDEN int rh_log_configure(const char *value);
/* The log file of this process under RHEAPER_LOG=FILE, else "". */
RH_HIDDEN const char *rh_log_path(void);
/* The identity of the log file this process (or its parent) created; -1
 * when it created none. */
RH_HIDDEN int rh_log_fid_get(struct rh_fid *out);
/* Warnings left out because their cause was already written. */
RH_HIDDEN unsigned long long rh_log_repeated(void);
/* Expands a file name template into buf: %p pid, %t seconds since the epoch,
 * %e the executable's file name, %n seq, %% a '%'. Returns the length. */
RH_HIDDEN size_t rh_expand_template(char *buf, size_t size, const char *t, unsigned seq);

/* ---- rh_config.c -------------------------------------------------------- */

#define RH_DEFAULT_STACK_DEPTH 64u
#define RH_MAX_STACK_DEPTH 1024u
#define RH_DEFAULT_TRACKERS 1024u
#define RH_MAX_TRACKERS 65536u
#define RH_DEFAULT_BUFFER 32768u
#define RH_MIN_BUFFER 64u
#define RH_MAX_BUFFER (RIP_CHUNK_MAX_CAPACITY / 8u)

#define RH_ENABLE_SIGNAL 2 /* rh_config.enable: RHEAPER_ENABLE=signal */
#define RH_NAME_MAX 256     /* RHEAPER_PROFILE_NAME, bytes with the NUL */

struct rh_config {
    int enable;               /* RHEAPER_ENABLE=1, or RH_ENABLE_SIGNAL */
    int ctl_signal;           /* RHEAPER_SIGNAL: the toggle signal (armed mode) */
    uint64_t max_profile_size; /* RHEAPER_MAX_PROFILE_SIZE, bytes; 0: none */
    char profile_name[RH_NAME_MAX]; /* RHEAPER_PROFILE_NAME template; "": rip-%p */
    unsigned max_stack_depth; /* frames kept per stack, 1..1024 */
    unsigned max_trackers;    /* slots with their own chunk stream */
    unsigned buffer_size;     /* events per thread chunk (sets the largest chunk) */
    char profile_dir[RH_PATH_MAX];
    char stream[128];          /* RHEAPER_STREAM=HOST:PORT; "": local file */
    uint64_t stream_queue;     /* RHEAPER_STREAM_QUEUE: bytes of sealed chunks queued */
    unsigned stream_timeout;   /* RHEAPER_STREAM_TIMEOUT: seconds (send, exit drain) */
    unsigned cpu_hz;          /* RHEAPER_CPU_HZ: CPU samples per second of each thread's CPU
                                 time; 0: off (rh_cpu.c) */
    int cpu_signal;           /* RHEAPER_CPU_SIGNAL: the sampling signal, default SIGPROF */
    int heap;                 /* RHEAPER_HEAP: 1 (default) records the heap, 0 CPU only */
    /* Sampling (rh_sample.c): RH_SAMPLE_* mode, and its parameter */
    int sample_mode;
    uint64_t sample_threshold; /* rate mode: a block is taken when a uniform
                                  64-bit draw is below it (r * 2^64) */
    uint64_t sample_bytes;     /* bytes mode: the mean N */
    uint64_t sample_seed;      /* RHEAPER_SAMPLE_SEED, when sample_seeded */
    int sample_seeded;
    int populate;              /* RHEAPER_POPULATE=1: prefault chunks (default 0) */
    unsigned rss_ms;           /* RHEAPER_RSS_MS: memory sample interval, 0 off (rh_memsample.c) */
};
extern RH_HIDDEN struct rh_config rh_cfg;
#define RH_DEFAULT_STREAM_QUEUE (64ull << 20)
#define RH_MIN_STREAM_QUEUE (1ull << 20)
#define RH_DEFAULT_STREAM_TIMEOUT 10u
#define RH_MAX_CPU_HZ 10000u
#define RH_DEFAULT_RSS_MS 10u
#define RH_MAX_RSS_MS 3600000u

/* Reads RHEAPER_* with secure_getenv into rh_cfg. A bad value gets one warning
 * line and the default. Called once, from rh_init_lazy. */
RH_HIDDEN void rh_config_load_env(void);
/* Parses a decimal in [min, max]; returns 0 and stores it, or -1. */
RH_HIDDEN int rh_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out);
/* Largest chunk size in bytes (header included) for the current config. */
RH_HIDDEN uint32_t rh_config_max_chunk(void);
/* Parses a signal: a number, a name with or without SIG (USR2, SIGPROF), or
 * RTMIN+n / RTMAX-n. Returns it, or -1. */
RH_HIDDEN int rh_parse_signal(const char *s);
/* The default toggle signal: SIGRTMAX-5 (docs/record.md). */
RH_HIDDEN int rh_default_signal(void);

/* ---- rh_clock.c --------------------------------------------------------- */

/* Picks the tick source (TSC when the CPU has an invariant one, else
 * CLOCK_MONOTONIC ns) and sets rh_clock_tsc. Idempotent. */
RH_HIDDEN void rh_clock_init(void);
/* Event time = tick >> rh_clock_shift (4 for TSC, 0 for ns). Set with
 * rh_clock_tsc, before tracking turns on. */
extern RH_HIDDEN uint32_t rh_clock_shift;
RH_HIDDEN uint32_t rh_clock_kind(void); /* RIP_CLOCK_* */
RH_HIDDEN uint64_t rh_mono_ns(void);
RH_HIDDEN uint64_t rh_real_ns(void);
/* Ticks per second, measured once with a ~1 ms spin (no sleep); 0 if unknown. */
RH_HIDDEN uint64_t rh_ticks_per_sec(void);
/* A (tick, CLOCK_MONOTONIC ns) pair taken together. */
RH_HIDDEN void rh_calib_pair(uint64_t *tick, uint64_t *ns);

/* ---- rh_stack.c --------------------------------------------------------- */

/* Global stack table of one profile file: open addressing, lock-free inserts.
 * Entry hash 0 = empty; id 0 = being inserted (not yet published). */
struct rh_stack_entry {
    uint64_t hash;
    uint32_t id;
    uint32_t pad;
};
struct rh_stack_table {
    struct rh_stack_entry *entries;
    uint64_t mask;
    uint64_t limit;   /* 75% of the slots */
    uint64_t count;   /* inserted entries (atomic) */
    uint32_t next_id; /* atomic, from 1 */
    int warned;       /* full-table warning printed (atomic) */
    unsigned max_depth; /* the file's stack depth: set before the table is shared,
                           then read-only, so a re-enable with another depth never
                           races with threads still walking for the old file */
};

/* The result of one frame-pointer walk: hash plus what is needed to encode. */
struct rh_walk {
    uint64_t hash;
    uint32_t nframes;
    uint32_t cut;
};

/* Maps a fresh table (2^21 slots, 32 MiB of address space; less under a finite
 * RLIMIT_AS: at most 1/64 of it). Returns NULL when mmap fails. */
RH_HIDDEN struct rh_stack_table *rh_stack_table_new(void);
/* This thread's stack bounds, computed once per thread (pthread_getattr_np with
 * the guard set, or __libc_stack_end for the main thread). */
RH_HIDDEN void rh_stack_bounds(uintptr_t *lo, uintptr_t *hi);
/* Walks from the shim frame fp, hashing kind and frames. max = max depth.
 * Out-of-line copy of rh_stack_walk_inline (below), for tests and cold code. */
RH_HIDDEN void rh_stack_walk(void *fp, unsigned kind, unsigned max, struct rh_walk *w);
/* Walks again and writes the frames as svarint deltas at p (which must hold
 * nframes * 10 bytes). Returns the end. */
RH_HIDDEN uint8_t *rh_stack_encode(void *fp, uint32_t nframes, uint8_t *p);
/* Looks hash up; when absent, inserts it and sets *is_new. Returns the id, or 0
 * when the table is full (a one-time warning; the caller counts the loss). */
RH_HIDDEN uint32_t rh_stack_lookup(struct rh_stack_table *t, uint64_t hash, int *is_new);

/* ---- rh_unwind.c -------------------------------------------------------- */

/* CFI steps for frames without a frame pointer (x86_64, AArch64, and every
 * frame on MIPS64: rh_arch.h's RH_ARCH_CFI; elsewhere the walk is
 * frame-pointer only and rh_unwind_prefix always returns 0). */
#if RH_ARCH_CFI && !defined(RH_NO_UNWIND_CFI)
#define RH_UNWIND_CFI 1
#else
#define RH_UNWIND_CFI 0
#endif
/* Most frames a CFI prefix walks before the frame-pointer walk takes over. */
#define RH_UNWIND_MAX_PREFIX 32u

/* How to find the caller of a frame, from the CFI row at its call. */
enum {
    RH_UW_FP = 1,      /* frame record at rbp (or no usable CFI): frame-pointer step */
    RH_UW_CFA_RSP = 2, /* CFA = rsp + cfa_off; return address at CFA + ra_off */
    RH_UW_CFA_RBP = 3, /* CFA = rbp + cfa_off, not the standard frame record */
    RH_UW_END = 4,     /* the return address is undefined: outermost frame */
    RH_UW_SIGNAL = 5,  /* a signal trampoline (CIE augmentation 'S'): the kernel's
                          signal frame holds the interrupted registers */
};
struct rh_unwind_rule {
    int kind;        /* RH_UW_* */
    int32_t cfa_off; /* CFA offset from rsp or rbp */
    int32_t rbp_off; /* rbp's save slot relative to the CFA; 0: rbp unchanged.
                        AArch64 RH_UW_FP: the frame record's (x29's slot) */
    int32_t ra_off;  /* the return address's slot relative to the CFA (-8 on
                        x86_64) */
};

/* The packed rule (the cache's info word, never 0). x86_64: bits 0-7 kind,
 * 8-39 CFA offset, 40-55 rbp slot (int16); the return address is at CFA - 8.
 * Elsewhere: bits 0-7 kind, 8-31 CFA offset (up to 16 MiB), 32-47 frame
 * pointer slot, 48-63 return-address slot (int16 each). Here "rsp" and "rbp"
 * name the architecture's stack and frame pointers (rh_arch.h). */
static inline struct rh_unwind_rule rh_uw_rule_of_info(uint64_t info)
{
#if RH_ARCH_CFI && RH_CFI_RA_AT_CFA
    struct rh_unwind_rule r = {(int)(info & 0xff), (int32_t)(uint32_t)(info >> 8),
                               (int16_t)(uint16_t)(info >> 40), -8};
#else
    struct rh_unwind_rule r = {(int)(info & 0xff), (int32_t)((info >> 8) & 0xffffffu),
                               (int16_t)(uint16_t)(info >> 32), (int16_t)(uint16_t)(info >> 48)};
#endif
    return r;
}
static inline uint64_t rh_uw_info_of_rule(const struct rh_unwind_rule *r)
{
#if RH_ARCH_CFI && RH_CFI_RA_AT_CFA
    return (uint64_t)(uint8_t)r->kind | ((uint64_t)(uint32_t)r->cfa_off << 8) |
           ((uint64_t)(uint16_t)(int16_t)r->rbp_off << 40);
#else
    return (uint64_t)(uint8_t)r->kind | ((uint64_t)((uint32_t)r->cfa_off & 0xffffffu) << 8) |
           ((uint64_t)(uint16_t)(int16_t)r->rbp_off << 32) |
           ((uint64_t)(uint16_t)(int16_t)r->ra_off << 48);
#endif
}
/* Largest CFA offset a packed rule holds. */
#if RH_ARCH_CFI && RH_CFI_RA_AT_CFA
#define RH_UW_CFA_MAX INT32_MAX
#else
#define RH_UW_CFA_MAX 0xffffff
#endif

#if RH_UNWIND_CFI
/* The rule cache (rh_unwind.c): direct-mapped by return address, lock-free. An
 * entry's check word is ret ^ RH_UW_MIXINFO(info), so a torn entry (two writers)
 * reads as a miss. info is the packed rule, 0 when empty. */
#define RH_UW_CACHE_BITS 12
#define RH_UW_CHECK_K 0x9e3779b97f4a7c15ull
#define RH_UW_MIXINFO(info) (((info)*RH_UW_CHECK_K) ^ (((info)*RH_UW_CHECK_K) >> 31))
struct rh_uw_slot {
    uint64_t check;
    uint64_t info;
};
extern RH_HIDDEN struct rh_uw_slot rh_uw_cache[1u << RH_UW_CACHE_BITS];

/* The set of return addresses known to lie in frame-pointer code: direct-mapped
 * by the address's low bits (return addresses are spread evenly over them, so
 * no multiply is needed for the index, which the walk computes for every
 * frame), one word per slot holding the address itself (a whole aligned word:
 * never torn). Filled by rh_unwind_lookup. */
extern RH_HIDDEN uintptr_t rh_uw_fpset[1u << RH_UW_CACHE_BITS];
#if defined(__x86_64__) || defined(__i386__)
#define RH_UW_FPSLOT(ret) ((ret) & ((1u << RH_UW_CACHE_BITS) - 1u))
#else /* fixed-size instructions: a return address's low 2 bits are 0 */
#define RH_UW_FPSLOT(ret) (((ret) >> 2) & ((1u << RH_UW_CACHE_BITS) - 1u))
#endif

/* The hot-path test, made for every frame of every walk: 1 when the function
 * holding return address ret is known to keep a frame record (the
 * frame-pointer step is right); 0 when it does not, or is not known yet (then
 * the out-of-line walk asks rh_unwind_lookup). One mask, one load, one
 * compare. */
static inline int rh_unwind_fp_frame(uintptr_t ret)
{
    return __atomic_load_n(&rh_uw_fpset[RH_UW_FPSLOT(ret)], __ATOMIC_RELAXED) == ret;
}

#if RH_CFI_RA_AT_CFA
/* Frames of the stack whose shim frame is fp while they lack a frame pointer.
 * Returns 0 (nothing written, one cache probe) when frame 0's function keeps a
 * frame record: the caller does its frame-pointer walk. Otherwise writes n >= 1
 * return addresses to pcs (frame 0 first; pcs holds RH_UNWIND_MAX_PREFIX),
 * sets *resume to the frame record where the frame-pointer walk continues (its
 * [1] is frame n), or 0 when the stack ends, and *cut when max stopped it.
 * Requires fp inside [lo, hi - 16]. Never faults, allocates or locks. */
RH_HIDDEN uint32_t rh_unwind_prefix(uintptr_t fp, uintptr_t lo, uintptr_t hi, uint32_t max,
                                    uintptr_t *pcs, uintptr_t *resume, uint32_t *cut);
#elif RH_CFI_RECORDS
/* The caller's stack pointer after a frame-pointer step through record rec of
 * the function holding return address pc: the function's CFA, from the
 * record's offset in its rule (rec + one record when its CFI does not say). */
RH_HIDDEN uintptr_t rh_unwind_fp_cfa(uintptr_t pc, uintptr_t rec);
/* The same for a record rec of a function on the calling thread's current
 * call chain (the shim that started the walk, or a frame-record function
 * the inline walk reached) whose return address the walk does not have:
 * found by following the frame records from the caller up to rec. */
RH_HIDDEN uintptr_t rh_unwind_start_sp(uintptr_t rec);
#else
/* Without frame records (MIPS64), from the shim's record rec (rh_arch.h's
 * RH_ARCH_FP): its caller's stack pointer at the call, and its caller's frame
 * pointer there (fp when the shim's CFI does not say). */
RH_HIDDEN uintptr_t rh_unwind_start_sp(uintptr_t rec);
RH_HIDDEN uintptr_t rh_unwind_start_fp(uintptr_t rec, uintptr_t fp);
#endif
/* The packed, cached rule of return address ret (computed on a miss). */
RH_HIDDEN uint64_t rh_unwind_lookup(uintptr_t ret);
/* The rule of return address ret, unpacked (tests). */
RH_HIDDEN void rh_unwind_rule_of(uintptr_t ret, struct rh_unwind_rule *r);
/* Looks ret up in the .eh_frame_hdr at hdr, reading only inside [lo, hi), and
 * runs its FDE up to the call. Returns 0 with *r set, or -1 (r says RH_UW_FP)
 * when the CFI is missing, malformed or beyond what this unwinder runs. */
RH_HIDDEN int rh_unwind_parse(const uint8_t *hdr, const uint8_t *lo, const uint8_t *hi,
                              uintptr_t ret, struct rh_unwind_rule *r);
#else
static inline int rh_unwind_fp_frame(uintptr_t ret)
{
    (void)ret;
    return 1;
}
static inline uint32_t rh_unwind_prefix(uintptr_t fp, uintptr_t lo, uintptr_t hi, uint32_t max,
                                        uintptr_t *pcs, uintptr_t *resume, uint32_t *cut)
{
    (void)fp, (void)lo, (void)hi, (void)max, (void)pcs, (void)resume, (void)cut;
    return 0;
}
#endif

/* The architecture's parts of a walk step (rh_stack.c's rh_ws_run), "rsp" and
 * "rbp" being its stack and frame pointers:
 *   RH_UW_START_SP(rec): the stack pointer, at its call, of the caller of the
 *     function whose frame record is rec (that function's CFA), rec being on
 *     the current call chain (the shim's record, where a walk starts);
 *   RH_UW_START_FP(rec, fp): the frame pointer there (fp: the record's saved
 *     one, except on MIPS64, whose shim record holds none);
 *   RH_UW_FP_SP(pc, rec): the same after a frame-pointer step from return
 *     address pc through record rec;
 *   RH_UW_FP_STEPS: 0 where the frame pointer points at no frame record (a
 *     frame without CFI then ends the walk);
 *   rh_uw_ret_at: the return address of a CFI frame whose CFA is cfa (already
 *     checked: aligned, above rsp, inside the stack), 0 when rule r puts its
 *     slot outside [rsp, cfa). */
#if !RH_UNWIND_CFI || RH_CFI_RECORDS
#define RH_UW_START_FP(rec, fp) (fp)
#define RH_UW_FP_STEPS 1
#else
#define RH_UW_START_FP(rec, fp) rh_unwind_start_fp(rec, fp)
#define RH_UW_FP_STEPS 0
#endif
#if !RH_UNWIND_CFI || RH_CFI_RA_AT_CFA
#define RH_UW_START_SP(rec) ((rec) + RH_FRAME_REC)
#define RH_UW_FP_SP(pc, rec) ((void)(pc), (rec) + RH_FRAME_REC)
static inline uintptr_t rh_uw_ret_at(uintptr_t cfa, uintptr_t rsp, const struct rh_unwind_rule *r)
{
    (void)rsp, (void)r;
    return ((const uintptr_t *)cfa)[-1];
}
#else
#define RH_UW_START_SP(rec) rh_unwind_start_sp(rec)
#if RH_CFI_RECORDS
#define RH_UW_FP_SP(pc, rec) rh_unwind_fp_cfa(pc, rec)
#else
#define RH_UW_FP_SP(pc, rec) ((void)(pc), (rec) + RH_FRAME_REC) /* not reached */
#endif
static inline uintptr_t rh_uw_ret_at(uintptr_t cfa, uintptr_t rsp, const struct rh_unwind_rule *r)
{
    uintptr_t slot = cfa + (uintptr_t)(intptr_t)r->ra_off;
    if (slot < rsp || slot > cfa - RH_WORD || RH_WORD_MISALIGNED(slot))
        return 0;
    return rh_arch_ret(*(const uintptr_t *)slot);
}
#endif

/* ---- rh_stack.c: the walk, inline in the record fast path --------------
 * rh_stack_walk_inline is the frame-pointer part of the walk with its hash, so
 * that rh_record.c's fast path pays no call, no saved registers of its own and
 * no struct in memory for it while every frame keeps a frame record. The first
 * frame that does not (its function has no frame pointer: libc, libstdc++,
 * Debian's libraries), a walk that starts off the thread's stack (a signal
 * handler on sigaltstack, a coroutine) and a thread's first walk continue out
 * of line in rh_stack.c, which follows CFI and frame records in any order. */

/* The calling thread's own stack [lo, hi): hi == 0 until
 * rh_stack_bounds_compute (cold, keeps errno) has run on this thread. Computed
 * from the thread (never from where the first walk happens to run), so a
 * first allocation on a coroutine stack cannot spoil them. */
extern RH_HIDDEN __thread uintptr_t rh_tls_stack_lo __attribute__((tls_model("local-exec")));
extern RH_HIDDEN __thread uintptr_t rh_tls_stack_hi __attribute__((tls_model("local-exec")));
RH_HIDDEN void rh_stack_bounds_compute(void) RH_COLD;

/* The calling thread's tail memo (rh_stack.c says why it is sound): the
 * RH_TAIL_MAX or fewer frames between the state (pc, rsp) of a function
 * without frame pointer near the base of the stack and the stack's end. n == 0
 * when empty. The inline walk uses it as rh_ws_run does. */
#define RH_TAIL_MAX 4
struct rh_tail {
    uintptr_t pc, rsp;
    uint32_t n;
    uintptr_t f[RH_TAIL_MAX];
};
extern RH_HIDDEN __thread struct rh_tail rh_tls_tail __attribute__((tls_model("local-exec")));

/* What the out-of-line part of a walk returns. */
struct rh_walk_rest {
    uint64_t h;
    uint32_t n, cut;
};
/* The rest of a walk whose last frame, ret (already hashed into h, n frames so
 * far), belongs to a function whose rule is not a cached frame-pointer one.
 * rsp is the callee's frame record plus one record (on x86_64 the callee's
 * CFA: that function's stack pointer at its call; elsewhere RH_UW_START_SP
 * finds it), rbp its rbp; [lo, hi) the thread's stack. Keeps errno. */
RH_HIDDEN void rh_stack_walk_cont(uintptr_t ret, uintptr_t rsp, uintptr_t rbp, uintptr_t lo,
                                  uintptr_t hi, unsigned max, uint64_t h, uint32_t n,
                                  struct rh_walk_rest *o) RH_COLD;
/* The whole walk from the shim frame fp when fp is not inside the thread's
 * known stack (h holds the kind and frame 0). Keeps errno. */
RH_HIDDEN void rh_stack_walk_far(uintptr_t fp, unsigned max, uint64_t h,
                                 struct rh_walk_rest *o) RH_COLD;

/* The walk's hash: Horner's rule over the frames, innermost first, h = h * K
 * + ret (mod 2^64), so H = sum of ret_i * K^(n-1-i); then the kind, the frame
 * count and the cut flag, packed in one word, through one xor-multiply step,
 * and the high half folded into the low one. The outer frames' part of H does
 * not depend on the inner ones: H = (hash of frames 0..j-1) * K^(n-j) + (hash
 * of frames j..n-1), so a hit of the walk cache adds the cached hash of the
 * frames outer than the hit in one multiply and one add. Per frame: one
 * multiply and one add, off the chain of loads the walk follows. The final
 * step is a bijection of H for a given kind, count and cut, so two stacks
 * share a hash exactly as often as their sums do; the fold only spreads the
 * product's well-mixed high bits over the low ones, which pick the stack
 * table's entry. The hash never leaves the process (stack ids are the table's
 * insertion order), so it may change between versions. */
#define RH_WALK_K 0x9e3779b97f4a7c15ull
static inline uint64_t rh_walk_add(uint64_t h, uint64_t ret)
{
    return h * RH_WALK_K + ret;
}
/* The stack hash of a finished walk: frames hashed into h, n frames. */
static inline uint64_t rh_walk_final(uint64_t h, unsigned kind, uint32_t n, uint32_t cut)
{
    h = (h ^ (((uint64_t)kind << 32) | ((uint64_t)n << 1) | cut)) * RH_WALK_K;
    h ^= h >> 32;
    return h ? h : 1;
}

/* ---- the walk cache (rh_stack.c says why a hit is exact) -----------------
 * Per thread, the frame records of its last deep walk, outermost first: entry
 * i is the record at address fp[i] holding return address raw[i] (as read,
 * not stripped), t[i] the hash (as above) of every frame outer than it, the
 * tail beyond entry 0 included, and pw[i] K to the power of their count. The
 * saved frame pointer of each record is the address of the entry below it
 * (fp[i - 1]), term_next for entry 0. A walk that reaches a record equal to a
 * cached one (same address, same return address) checks every outer record
 * against memory (its saved frame pointer and return address); when all are
 * equal, the frames outer than the hit are those of the cached walk, and the
 * hash is h * pw[m] + t[m]. The records of the walk inner than the hit are
 * read again from its start (the walk checked them on the way) to rebuild the
 * cache on top of the hit. */
#define RH_WC_CAP 64
/* Fewest records a walk must have for the cache to keep it: on shorter
 * stacks, comparing the outer records and rebuilding the cache cost more
 * instructions than the steps they save (callgrind, bench/breakdown.sh). */
#define RH_WC_MIN 32
struct rh_wcache {
    uint32_t d;          /* valid entries [0, d) */
    uint32_t tail_n;     /* frames outer than entry 0 (the tail memo's), hashed in t[0] */
    uint32_t cut;        /* the cached walk's cut flag */
    uintptr_t term_next; /* the saved frame pointer of entry 0's record */
    /* entry i: its record's address, return address (raw) and outer hash;
     * fp[-1] would be term_next: the compare loop reads fp[i - 1] */
    uintptr_t fp[RH_WC_CAP], raw[RH_WC_CAP];
    uint64_t t[RH_WC_CAP], pw[RH_WC_CAP];
};
extern RH_HIDDEN __thread struct rh_wcache rh_tls_wc __attribute__((tls_model("local-exec")));
/* 0 under RHEAPER_WALK_CACHE=0 (every walk then goes to the end): set at
 * init, read once per walk. */
extern RH_HIDDEN int rh_wc_on;
/* Whether a walk that ended k records after its start is kept in the cache:
 * deep enough to be worth it, short enough to fit, and the cache on. */
static inline int rh_wc_keeps(uint32_t k)
{
    return k + 1 >= RH_WC_MIN && k < RH_WC_CAP && __atomic_load_n(&rh_wc_on, __ATOMIC_RELAXED);
}
struct rh_walk_rest;
/* A walk from record start at the record equal to cached entry m, k records
 * later, with nsofar frames (the one there included) hashed into h: checks the outer records against memory. Returns 1 with the whole
 * walk's sum, frame count and cut in *o (and the cache rebuilt on top of entry
 * m), or 0 when a record differs or the walk would pass max frames (the
 * caller then steps on). */
RH_HIDDEN int rh_wc_take(uintptr_t start, int m, uint32_t k, uint32_t nsofar, uint32_t max,
                         uint64_t h, struct rh_walk_rest *o);
/* Rebuilds the cache from a walk from record start that ended at the record
 * (cur, raw) k records later: the end is term_next (the saved frame pointer
 * that stopped it, with cut) or, when tail_n > 0, the tail memo's frames. */
RH_HIDDEN void rh_wc_fill(uintptr_t start, uint32_t k, uintptr_t cur, uintptr_t raw,
                          uintptr_t term_next, const uintptr_t *tail, uint32_t tail_n,
                          uint32_t cut);

/* On a function that inlines rh_stack_walk_inline: its frame loop starts on a
 * 32-byte boundary. Where it happens to fall decides much of the walk's speed
 * (workload 3, 50 frames: 0.17 s tracked with the loop at an 8-byte boundary
 * across two 32-byte blocks, 0.14-0.15 s aligned; same instructions). gcc
 * only; elsewhere the compiler's default. */
#if defined(__GNUC__) && !defined(__clang__)
#define RH_WALK_ALIGNED __attribute__((optimize("align-loops=32")))
#else
#define RH_WALK_ALIGNED
#endif

/* rh_stack_walk, inline. The frame rules are those of rh_stack.c's
 * rh_ws_run for a frame-pointer frame (which rh_stack_encode follows: change
 * both together): the next frame record must be 8-aligned, at least 16 bytes
 * above the current one and inside the stack, its return address above 4096.
 * A saved rbp of 0 is the outermost frame; any other failure ends the walk
 * with cut = 1 (truncated), as does the depth limit, a down-counter. Per
 * frame: the rule-cache probe, then the step. The cached form (rh_stack.c's
 * rh_stack_walk_cached, when the thread's cache holds a deep stack) also
 * looks for the first record equal to a cached one, and hands the rest to
 * rh_wc_take; a walk of RH_WC_MIN frames or more that ends in the thread's own
 * stack (or the tail memo) fills the cache. */
RH_ALWAYS_INLINE void rh_stack_walk_body(void *fp, unsigned kind, unsigned max, struct rh_walk *w,
                                         const int cached)
{
    uintptr_t cur = (uintptr_t)fp;
    uintptr_t lo = rh_tls_stack_lo, hi = rh_tls_stack_hi;
    uintptr_t raw = ((const uintptr_t *)cur)[1];
    uintptr_t ret = rh_arch_ret(raw);
    uint64_t h = ret;
    uint32_t n = 1, cut = 0;
    struct rh_walk_rest o;
    if (rh_unlikely(cur < lo || hi < RH_FRAME_REC || cur > hi - RH_FRAME_REC)) {
        rh_stack_walk_far(cur, max, h, &o);
        h = o.h, n = o.n, cut = o.cut;
        goto done;
    }
    uintptr_t top = hi - RH_FRAME_REC;
    uint32_t left = max > 1 ? max - 1 : 0; /* frames still allowed */
    /* records before the current one: max - left - 1 */
    struct rh_wcache *wc = &rh_tls_wc;
    int m = cached ? (int)wc->d - 1 : -1;
    for (;;) {
        while (cached && m >= 0 && wc->fp[m] <= cur) {
            if (wc->fp[m] == cur && wc->raw[m] == raw &&
                rh_likely(rh_wc_take((uintptr_t)fp, m, max - left - 1, max - left, max, h, &o))) {
                h = o.h, n = o.n, cut = o.cut;
                goto done;
            }
            m--;
        }
        if (rh_unlikely(!rh_unwind_fp_frame(ret))) {
            /* the base of the stack (libc's start code, start_thread): its
             * frames from the tail memo, as rh_ws_run would take them */
            const struct rh_tail *tm = &rh_tls_tail;
            uint32_t mn = tm->n;
            if (rh_likely(mn && mn <= left && tm->pc == ret && tm->rsp == cur + RH_FRAME_REC)) {
                uint32_t k = max - left - 1;
                for (uint32_t i = 0; i < mn; i++)
                    h = rh_walk_add(h, tm->f[i]);
                left -= mn;
                if (rh_wc_keeps(k))
                    rh_wc_fill((uintptr_t)fp, k, cur, raw, rh_arch_rec_next(cur), tm->f,
                               mn, 0);
                break;
            }
            rh_stack_walk_cont(ret, cur + RH_FRAME_REC, rh_arch_rec_next(cur), lo, hi, max, h,
                               max - left, &o);
            h = o.h, n = o.n, cut = o.cut;
            goto done;
        }
        uintptr_t next = rh_arch_rec_next(cur);
        if (RH_WORD_MISALIGNED(next) || next < cur + RH_FRAME_REC || next > top) {
            uint32_t k = max - left - 1;
            cut = next != 0;
            if (rh_wc_keeps(k))
                rh_wc_fill((uintptr_t)fp, k, cur, raw, next, NULL, 0, cut);
            break;
        }
        uintptr_t nraw = ((const uintptr_t *)next)[1];
        ret = rh_arch_ret(nraw);
        if (ret <= 4096u) {
            cut = 1;
            break;
        }
        /* the depth limit (max is far below 2^31): one decrement and its sign */
        if (rh_unlikely((int32_t)--left < 0)) {
            left = 0;
            cut = 1;
            break;
        }
        h = rh_walk_add(h, ret);
        cur = next;
        raw = nraw;
    }
    n = max - left;
done:
    w->hash = rh_walk_final(h, kind, n, cut);
    w->nframes = n;
    w->cut = cut;
}

/* The walk with the cache's search (rh_stack.c): out of line, so that the
 * inline walk of a stack the cache does not hold keeps its registers. */
RH_HIDDEN void rh_stack_walk_cached(void *fp, unsigned kind, unsigned max, struct rh_walk *w);

RH_ALWAYS_INLINE void rh_stack_walk_inline(void *fp, unsigned kind, unsigned max, struct rh_walk *w)
{
    if (rh_unlikely(rh_tls_wc.d >= RH_WC_MIN) && __atomic_load_n(&rh_wc_on, __ATOMIC_RELAXED))
        rh_stack_walk_cached(fp, kind, max, w);
    else
        rh_stack_walk_body(fp, kind, max, w, 0);
}

/* ---- rh_file.c ---------------------------------------------------------- */

struct rh_slot;

/* The open profile file. Fields are protected by rh_prof_lock unless noted. */
struct rh_profile {
    uint64_t dev, ino;             /* identity of the file: checked at each reopen */
    int starved_warned;            /* the EMFILE warning was printed for this file */
    int open;                      /* a file is open and accepts chunks */
    int pending;                   /* create on the first event (lazy start) */
    int exit_flushed;              /* the exit flush already wrote a trailer */
    uint64_t end;                  /* file end offset: next chunk goes here */
    char path[RH_PATH_MAX];        /* full path of the current / last file */
    struct rh_stack_table *stacks; /* stack table of this file */
    struct rh_slot *slots;         /* slot array of this file */
    unsigned nslots;
    uint32_t max_chunk;          /* largest chunk size (bytes, header included) */
    uint64_t events_released;    /* events of chunks whose slot was released */
    uint64_t lost;               /* atomic: events not recorded */
    uint64_t reentered;          /* atomic: calls passed through by re-entry (rh_hooks.h) */
    int mod_early;               /* a module snapshot was taken before main */
    uint64_t mod_adds, mod_subs; /* dl_iterate_phdr counters at the last snapshot */
    uint32_t seq;                /* recordings started by this process (%n) */
    uint32_t end_reason;         /* RIP_END_*: written into the trailer */
    int limit_hit;               /* atomic: the size limit stopped tracking; the
                                    clean close is pending (RH_CTL) */
    uint64_t sample_dropped;     /* atomic: sampled blocks not recorded (map full) */
};
extern RH_HIDDEN struct rh_profile rh_prof;
/* Bumped each time a new file is created; a writer whose chunk belongs to an
 * older epoch starts over (hot-path check, relaxed loads). */
extern RH_HIDDEN uint32_t rh_epoch;
/* Protects rh_prof, chunk reservation, mmap/munmap of chunks and slot release.
 * Lock order: rh_shared_lock before rh_prof_lock. */
extern RH_HIDDEN int rh_prof_lock;

RH_HIDDEN void rh_spin_lock(int *l);
RH_HIDDEN void rh_spin_unlock(int *l);

/* ---- rh_open.c: the one way the runtime opens a path ---------------------- */

/* A file's identity (st_dev, st_ino); ino 0 means none yet. */
struct rh_fid {
    uint64_t dev, ino;
};
#define RH_OPEN_DIR 1u      /* a directory instead of a regular file */
#define RH_OPEN_OWNER 2u    /* owned by the effective user */
#define RH_OPEN_ROOT 4u     /* with RH_OPEN_OWNER: root's files too */
#define RH_OPEN_ONE_LINK 8u /* st_nlink == 1 */
#define RH_OPEN_INODE 16u   /* the inode *want names (ESTALE otherwise) */
/* Opens path with flags (O_CREAT|O_EXCL and mode for a new file) plus
 * O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC|O_NOCTTY, then checks on the descriptor that
 * it is a regular file (a directory with RH_OPEN_DIR) and the rules; *got (when
 * not NULL) receives its identity. Returns the fd, or -1 with errno: the
 * open's, EINVAL (not a regular file), EPERM (owner), EMLINK (links), ESTALE
 * (another inode). Raw system calls only: no allocation, no cancellation
 * point. The caller closes the fd with rh_sys_close. */
RH_HIDDEN int rh_open_safe(const char *path, int flags, unsigned mode, unsigned rules,
                           const struct rh_fid *want, struct rh_fid *got);
/* rh_open_safe for a /proc file of this process (a directory with O_DIRECTORY). */
RH_HIDDEN int rh_open_proc(const char *path, int flags);
/* The identity of an open fd into *out. Returns 0 or -1. */
RH_HIDDEN int rh_fid_of(int fd, struct rh_fid *out);

/* Raw system calls (never cancellation points); errno set on -1. */
RH_HIDDEN void rh_sys_close(int fd); /* keeps errno */
RH_HIDDEN ssize_t rh_sys_read(int fd, void *buf, size_t len);
/* The runtime's own mappings: raw system calls, never `mmap`/`munmap`, which
 * --wrap and the executable's definitions would record as the
 * program's. Return MAP_FAILED / -1 with errno set, like libc's. */
RH_HIDDEN void *rh_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
RH_HIDDEN int rh_sys_munmap(void *addr, size_t len);

/* Creates dir/rip-<pid>[.N], writes the header, maps a fresh slot array and
 * stack table, bumps rh_epoch. Caller holds rh_prof_lock. Returns RHEAPER_OK or
 * RHEAPER_ERR_FILE / RHEAPER_ERR_NOMEM (one warning line already printed). */
RH_HIDDEN int rh_file_create_locked(void);
/* Reserves disk for a chunk of `size` bytes and maps it (opening the file by
 * path for the operation only). Caller holds rh_prof_lock and the file is open.
 * Returns the mapping (header zeroed), or NULL on failure; then tracking has
 * been turned off with one warning line, unless the process had no fd to spare
 * (EMFILE, ENFILE): then tracking goes on and the next chunk retries. */
RH_HIDDEN void *rh_file_map_chunk_locked(uint32_t size);
/* Writes a whole sealed chunk of `type` with payload[0, len) via pwrite. Caller
 * holds rh_prof_lock. Returns 0 or -1 (tracking off, one warning). */
RH_HIDDEN int rh_file_write_chunk_locked(unsigned type, const void *payload, uint32_t len);
/* Turns tracking off after an internal failure: one line "<what>: strerror(err);
 * tracking stopped" (what names the path and offset), then state OFF and the
 * file closed. Caller holds rh_prof_lock. */
RH_HIDDEN void rh_file_fail_locked(const char *what, int err);
/* Takes a module snapshot (skipped when force == 0 and the dl_iterate_phdr
 * counters did not change). Takes rh_prof_lock itself; the caller holds no lock
 * and has the guard set. */
RH_HIDDEN void rh_modules_snapshot(int force);
/* Writes the trailer, prints "rheaper: wrote ...". close_fd: disable (close the
 * file) rather than the exit flush (keep it open for later events). Caller holds
 * rh_shared_lock and rh_prof_lock, and has already sealed its own chunks. */
RH_HIDDEN void rh_file_close_locked(int close_fd);
/* Fork child: forget the parent's file without touching it. */
RH_HIDDEN void rh_file_forget_in_child(void);

/* ---- rh_thread.c -------------------------------------------------------- */

/* The writer of one chunk stream: a slot's (owner-only) or the shared one
 * (under rh_shared_lock). */
struct rh_writer {
    struct rip_chunk_header *chunk; /* current chunk mapping, NULL when none */
    uint8_t *pos, *end;             /* write position and end of the payload */
    uint64_t prev_time;             /* delta state: previous event time */
    uint64_t prev_addr;             /* delta state: previous address */
    uint64_t last_time;             /* the stream's last time (survives chunks) */
    struct rh_stack_table *stacks;  /* the stack table of chunk's file */
    uint64_t total_events;          /* events written by this stream's current owner */
    uint32_t chunk_size;            /* mapping size of chunk */
    uint32_t next_size;             /* size of the next chunk */
    uint32_t epoch;                 /* rh_epoch the chunk belongs to */
    uint32_t calib_left;            /* events until the calibration pair is refreshed */
    uint32_t slot_id;               /* RIP_SLOT_SHARED for the shared stream */
    uint32_t tid;                   /* owner tid (EVENTS) / current tid (SHARED) */
    uint32_t seq;                   /* next chunk's seq */
    uint8_t type;                   /* RIP_CHUNK_EVENTS or RIP_CHUNK_SHARED */
};

struct rh_slot {
    struct rh_writer w;
    int in_use; /* atomic: 0 free, 1 held */
} __attribute__((aligned(RH_CACHE_LINE)));

/* The calling thread's slot, NULL when it has none. */
extern RH_HIDDEN __thread struct rh_slot *rh_tls_slot __attribute__((tls_model("local-exec")));
extern RH_HIDDEN int rh_shared_lock;
extern RH_HIDDEN struct rh_writer rh_shared;

/* Cached kernel tid of the calling thread. */
RH_HIDDEN uint32_t rh_gettid(void);
/* The thread id of the runtime's own thread in this process (rh_helper.c
 * stores it), 0 when none: never a program thread, so it takes no place in
 * a profile's thread list nor a CPU timer. */
extern RH_HIDDEN uint32_t rh_runtime_tid;
/* Cold path of every record: makes sure the calling thread has a writable
 * chunk of the current epoch (creating the file, taking a slot, opening a chunk
 * as needed). Returns the slot, or NULL when the event must go through the
 * shared path (no slot available, slot released) or be dropped (*drop set). */
RH_HIDDEN struct rh_slot *rh_thread_prepare(uint64_t t, int *drop) RH_COLD;
/* Maps a new chunk for w (after sealing its old one) with base time >= t.
 * Caller holds the lock that owns w (none for a slot, rh_shared_lock for the
 * shared writer). Returns 0, or -1 when no chunk could be opened. */
RH_HIDDEN int rh_writer_open(struct rh_writer *w, uint64_t t) RH_COLD;
/* Seals w's chunk (crc, flags), releases its unused tail and unmaps it. Takes
 * rh_prof_lock unless locked. */
RH_HIDDEN void rh_writer_seal(struct rh_writer *w, int locked);
/* Writes an EXT THREADNAME record with the calling thread's name. */
RH_HIDDEN void rh_writer_threadname(struct rh_writer *w);
/* Writes EXT SETTHREAD (and THREADNAME) for the calling thread into the
 * shared writer w and makes it w's current thread. Caller holds rh_shared_lock. */
RH_HIDDEN void rh_writer_setthread(struct rh_writer *w);
/* Registers the thread-exit key and the fork handlers. Called once at init. */
RH_HIDDEN void rh_thread_init(void);
/* Seals the calling thread's chunk (exit flush / disable). Caller holds
 * rh_prof_lock. */
RH_HIDDEN void rh_thread_seal_self_locked(void);
/* Counts events and open chunks over the slot array. Caller holds rh_prof_lock. */
RH_HIDDEN void rh_thread_totals_locked(uint64_t *events, uint32_t *open_chunks);
/* Restates, in the shared stream, the name of every other thread that holds a
 * slot of the current recording, read from /proc/self/task/TID/comm: names
 * set by another thread (pthread_setname_np from main after pthread_create)
 * or after the thread's last seal reach the profile of a thread still running
 * at the close. Caller holds rh_shared_lock and rh_prof_lock, before the
 * shared chunk is sealed. */
RH_HIDDEN void rh_thread_names_locked(void);

/* ---- rh_record.c -------------------------------------------------------- */

/* Makes room for `need` bytes in w's chunk, opening a new chunk when full.
 * Returns 0, or -1 (the event is lost). */
RH_HIDDEN int rh_writer_reserve(struct rh_writer *w, size_t need, uint64_t t);
/* Stores `used` after a complete record (release store into the mapping). */
RH_HIDDEN void rh_writer_commit(struct rh_writer *w);

/* ---- rh_sample.c: sampled recording ----------------------------
 * While rh_sample_mode is not RH_SAMPLE_NONE, the record fast path asks
 * rh_sample_alloc whether a new block is recorded; a realloc goes to
 * rh_sample_realloc_rec. Whether a freed block was recorded is the live map's
 * answer (rh_live_note_free, rh_report.c). */
enum { RH_SAMPLE_NONE = 0, RH_SAMPLE_RATE = 1, RH_SAMPLE_BYTES = 2 };
/* The mode of the current recording (set from rh_cfg before tracking turns
 * on; read on every event). */
extern RH_HIDDEN _Atomic int rh_sample_mode;
/* Rate mode: the calling thread's splitmix64 state (one step: add RH_SS_K,
 * then rh_mix64), valid when rh_tls_sample_key == rh_sample_rkey; a block is
 * taken when the step's value is below rh_sample_threshold. */
extern RH_HIDDEN __thread uint64_t rh_tls_rng __attribute__((tls_model("local-exec")));
extern RH_HIDDEN _Atomic uint64_t rh_sample_threshold;
/* Generations (rh_sample.c): the recording's generation in bytes mode
 * (rh_sample_bkey) or rate mode (rh_sample_rkey), RH_SAMPLE_NOKEY in the
 * others; the generation the calling thread's stream and countdown were drawn
 * for (rh_tls_sample_key, 0: never). A fast path may use them only when its
 * mode's key equals the thread's; else the slow path redraws them. */
#define RH_SAMPLE_NOKEY UINT64_MAX
extern RH_HIDDEN _Atomic uint64_t rh_sample_bkey, rh_sample_rkey;
/* The thread's countdown and key side by side, so that the fast paths reach
 * both from one TLS address (one instruction fewer per call than two
 * variables: the key's compare takes the TLS slot as its operand). */
struct rh_tls_sampler {
    int64_t left;
    uint64_t key;
};
extern RH_HIDDEN __thread struct rh_tls_sampler rh_tls_samp __attribute__((tls_model("local-exec")));
#define rh_tls_sample_key (rh_tls_samp.key)
#define RH_SS_K 0x9e3779b97f4a7c15ull
RH_ALWAYS_INLINE uint64_t rh_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* Bytes mode: bytes left until the calling thread's next sample, at most N
 * (the rest is kept aside in rh_sample.c): a block with size < this is below
 * N too, so it is not taken and the countdown drops by size. */
#define rh_tls_sample_left (rh_tls_samp.left)
/* Copies rh_cfg's sampling settings into the sampler and sets rh_live_on,
 * and starts a new generation (every thread redraws its state). Before RH_ON
 * only. */
RH_HIDDEN void rh_sample_configure(void);
/* Writes the sampling fields and flag into a file header being filled. */
RH_HIDDEN void rh_sample_header(uint8_t *hdr);
/* 1 when the new block p of size bytes is to be recorded. */
RH_HIDDEN int rh_sample_alloc_slow(void *p, size_t size);
/* A realloc old -> p under sampling, once rh_record_realloc_inline knows
 * whether old was recorded (was) and p is (now; one of them set): records a
 * REALLOC, a FREE or an ALLOC. A zero time is read here. */
RH_HIDDEN void rh_sample_realloc_rec(unsigned kind, void *old, void *p, size_t size, int was,
                                     int now, uint64_t t_before, uint64_t t_after, void *fp) RH_COLD;

/* The sampler's decision for a new block; bytes mode's common case (the
 * countdown not crossed, so the block is below N) inline: one TLS
 * subtraction. */
RH_ALWAYS_INLINE int rh_sample_alloc(void *p, size_t size)
{
    int64_t left = (int64_t)((uint64_t)rh_tls_sample_left - (uint64_t)size);
    if (rh_likely(rh_sample_bkey == rh_tls_sample_key && left > 0 && (intptr_t)p > 0 &&
                  (uint64_t)size >> 62 == 0)) {
        rh_tls_sample_left = left;
        return 0;
    }
    return rh_sample_alloc_slow(p, size);
}

/* ---- rh_live.c: the map of live recorded blocks ---------------- */

/* Adds block a (size bytes, stack id, report thread index). Returns 1, or 0
 * when the map is full (one warning line). Takes a per-stripe spin lock. */
RH_HIDDEN int rh_live_add(uintptr_t a, uint64_t size, uint32_t stack, uint32_t thread);
/* Removes a; returns 1 with its values when it was there. Lock-free when absent. */
RH_HIDDEN int rh_live_take(uintptr_t a, uint64_t *size, uint32_t *stack, uint32_t *thread);
/* 1 once an insert failed: the map cannot grow. */
RH_HIDDEN int rh_live_full(void);
/* Empties the map (a new recording). */
RH_HIDDEN void rh_live_clear(void);
/* Most entries at once since the last clear. */
RH_HIDDEN uint64_t rh_live_peak(void);
/* fork handlers' part: 0 prepare, 1 parent, 2 child. */
RH_HIDDEN void rh_live_fork(int phase);
/* A counting filter over the map's addresses: 0 means "certainly not in the
 * map", so the free of an unsampled block costs one load (rh_live.c). */
#define RH_LV_FILTER_BITS 16
extern RH_HIDDEN uint8_t rh_lv_filter[1u << RH_LV_FILTER_BITS];
RH_ALWAYS_INLINE int rh_live_maybe(const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
    return __atomic_load_n(&rh_lv_filter[h >> (64 - RH_LV_FILTER_BITS)], __ATOMIC_RELAXED) != 0;
}

/* ---- rh_report.c: in-process counters and reports --------------- */

/* 1 while the live map is kept (sampling or reports): the record path then
 * calls rh_live_note_alloc / rh_live_note_free. */
extern RH_HIDDEN int rh_live_on;
/* 1 when RHEAPER_REPORTS=1 or RHEAPER_REPORT_SIGNAL is set (from init on). */
extern RH_HIDDEN int rh_reports_on;
/* A block was recorded with stack id: into the map, and the counters. */
RH_HIDDEN void rh_live_note_alloc(void *p, size_t size, uint32_t id);
/* A block is being freed: out of the map, into the counters. Returns 1 when
 * its free must be recorded (it was recorded, or nothing is sampled). */
RH_HIDDEN int rh_live_note_free(void *p);
/* A new stack's frames (its STACK record's svarint deltas in [enc, end)). */
RH_HIDDEN void rh_report_stack(uint32_t id, const uint8_t *enc, const uint8_t *end,
                               uint32_t nframes);
/* Reads RHEAPER_REPORTS / RHEAPER_REPORT_SIGNAL; maps the counters and
 * installs the signal's handler. Once, at init. */
RH_HIDDEN void rh_report_init(void);
/* A new profile file with stack table stacks: fresh per-stack counters and
 * frames, thread counters zeroed. Caller holds rh_prof_lock. */
RH_HIDDEN void rh_report_file_start(struct rh_stack_table *stacks);
/* The control work: writes the reports the signal asked for. */
RH_HIDDEN void rh_report_ctl(void);
/* Set while the runtime calls sigaction itself (rh_control.c). */
extern RH_HIDDEN volatile int rh_ctl_self;

/* ---- rh_elfsym.c: names from ELF symbol tables, in-process --------------- */
struct rh_sym_ctx;
/* Reads /proc/self/maps; NULL on failure (names are then "?"). */
RH_HIDDEN struct rh_sym_ctx *rh_sym_open(void);
RH_HIDDEN void rh_sym_close(struct rh_sym_ctx *c);
/* "function+0xoff" of addr into out (1), or "" (0); *module: its file. */
RH_HIDDEN int rh_sym_name(struct rh_sym_ctx *c, uintptr_t addr, char *out, size_t len,
                          const char **module);

/* ---- rh_record.c: the record fast path, inline in the hot shims ---------
 * The malloc, realloc, free and operator new/delete shims record through the
 * rh_record_*_inline below, so that the recording half of a shim and the fast
 * path are one function: no call, no second set of saved registers and no
 * argument moves between them (rh_record_* in rh_record.c are the same code,
 * out of line, for everything else). Whatever is not needed on every event
 * stays out of line and cold in rh_record.c: the slow entry points (a thread's
 * first event, a full chunk, another epoch, threads without a slot), a new or
 * colliding stack, the calibration refresh. The slow entry points take exactly
 * the arguments of rh_record_* (raw ticks), so a stand-in runtime (the shim
 * tests' mock) that never hands out a slot (rh_tls_slot NULL) sees through
 * them every event the hot shims record. Records follow FORMAT.md "Event
 * records" exactly; errno is kept (only the cold parts can change it, and they
 * restore it). */

/* Cold parts of the fast path (rh_record.c). */
RH_HIDDEN void rh_record_alloc_slow(unsigned kind, void *p, size_t size, uint64_t t_after,
                                    void *fp) RH_COLD;
RH_HIDDEN void rh_record_free_slow(void *p, uint64_t t_before) RH_COLD;
RH_HIDDEN void rh_record_realloc_slow(unsigned kind, void *old, void *p, size_t size,
                                      uint64_t t_before, uint64_t t_after, void *fp) RH_COLD;
/* Refreshes the chunk's calibration pair every 4096 events. */
RH_HIDDEN void rh_writer_recalibrate(struct rh_writer *w) RH_COLD;
/* The stack id when the home entry of the table did not hold the walked stack
 * (a collision, a new stack: its STACK record is written here, or a full
 * table). The fast path's chunk had room for one event before; this reserves
 * again after a STACK record. Returns RH_ID_LOST (nothing written, the loss
 * counted) when no room could be made. */
#define RH_ID_LOST UINT32_MAX
RH_HIDDEN uint32_t rh_stack_id_slow_fast(struct rh_writer *w, unsigned kind, void *fp,
                                         uint64_t hash, uint32_t nframes, uint32_t cut,
                                         uint64_t t) RH_COLD;

/* ---- rh_memsample.c: memory samples beside the heap -------------------- */

/* The next memory sample's deadline in event-time units (UINT64_MAX: not
 * sampling). The fast path compares each recorded event's time with it. */
extern RH_HIDDEN uint64_t rh_mem_next;
/* Takes the sample that is due at t, on the calling thread, into w (a slot's
 * writer whose last record is complete). Holds no lock of the runtime and
 * must be called where the thread holds no allocator lock. Keeps errno. */
RH_HIDDEN void rh_mem_due(struct rh_writer *w, uint64_t t) RH_COLD;
/* A new file: sampling starts (the first recorded event samples), or stays
 * off under RHEAPER_RSS_MS=0. Called with rh_prof_lock held; no system call. */
RH_HIDDEN void rh_mem_start(void);
/* No more samples for this file. */
RH_HIDDEN void rh_mem_stop(void);
/* The last sample of a recording, flagged final, into the calling thread's
 * stream when it has one for the current file (else none: the last periodic
 * sample is the end). Stops the samples. Called before the closing path
 * takes the runtime's locks, guard set. */
RH_HIDDEN void rh_mem_final(void);
RH_HIDDEN int rh_mem_enabled(void);
/* One compare per recorded event; the sample itself is cold. */
#define RH_MEM_CHECK(w, t)                                                                         \
    do {                                                                                           \
        if (rh_unlikely((t) >= __atomic_load_n(&rh_mem_next, __ATOMIC_RELAXED)))                   \
            rh_mem_due((w), (t));                                                                  \
    } while (0)

/* rh_record.c: a timed EXT record without a stack, body[0, len), into w at
 * event time t (lost and counted when no room can be made), and the same
 * through the calling thread's slot or the shared stream (t: raw ticks). */
RH_HIDDEN void rh_emit_ext_raw(struct rh_writer *w, unsigned sub, const uint8_t *body, size_t len,
                               uint64_t t);
RH_HIDDEN void rh_record_ext_raw(unsigned sub, const uint8_t *body, size_t len, uint64_t t_after);

/* The fast path's writer: the calling thread's slot, of the current epoch,
 * with room for one event in its chunk (a slot without a chunk has pos == end
 * == NULL, so the room test covers it). NULL sends the event to a slow entry
 * point. */
RH_ALWAYS_INLINE struct rh_writer *rh_fast_writer(void)
{
    struct rh_slot *s = rh_tls_slot;
    if (rh_likely(s && s->w.epoch == __atomic_load_n(&rh_epoch, __ATOMIC_RELAXED) &&
                  (size_t)(s->w.end - s->w.pos) >= RIP_MAX_EVENT_BYTES))
        return &s->w;
    return NULL;
}

/* Ends an event record at q: the chunk's event count, then `used` (a release
 * store into the mapping, as rh_writer_commit). */
RH_ALWAYS_INLINE void rh_event_done(struct rh_writer *w, uint8_t *q)
{
    w->pos = q;
    struct rip_chunk_header *h = w->chunk;
    h->events++;
    /* read by rh_thread_totals_locked from another thread at close: a relaxed
     * atomic store keeps that read defined. On x86_64 one add to memory
     * (only this thread writes the count; an aligned 8-byte store is never
     * torn) instead of a load, an add and a store. */
#if defined(__x86_64__)
    __asm__("addq $1, %0" : "+m"(w->total_events));
#else
    __atomic_store_n(&w->total_events, w->total_events + 1, __ATOMIC_RELAXED);
#endif
    __atomic_store_n(&h->used, (uint32_t)(q - ((uint8_t *)h + RIP_CHUNK_HDR_SIZE)),
                     __ATOMIC_RELEASE);
    if (rh_unlikely(--w->calib_left == 0))
        rh_writer_recalibrate(w);
}

/* Writes byte 0 and the optional time varint for time t (event units, clamped so
 * the stream never goes back). Returns the position after them. */
RH_ALWAYS_INLINE uint8_t *rh_put_head(struct rh_writer *w, uint8_t *q, unsigned op, unsigned raw,
                                      uint64_t t)
{
    uint64_t dt = t > w->prev_time ? t - w->prev_time : 0;
    w->prev_time += dt;
    if (dt < RIP_B0_DT_VARINT) {
        *q++ = (uint8_t)(op | raw | (dt << RIP_B0_DT_SHIFT));
        return q;
    }
    *q++ = (uint8_t)(op | raw | (RIP_B0_DT_VARINT << RIP_B0_DT_SHIFT));
    return rip_put_varint(q, dt);
}

/* Address delta as an svarint, in 16-byte units unless raw. Not raw means d
 * is a multiple of 16, so the arithmetic shift is the exact quotient. */
RH_ALWAYS_INLINE uint8_t *rh_put_addr(uint8_t *q, int64_t d, unsigned raw)
{
    return rip_put_varint(q, rip_zigzag(raw ? d : d >> 4));
}

/* The rh_put_* write one event record at w->pos, which has room for
 * RIP_MAX_EVENT_BYTES, and end it. */
RH_ALWAYS_INLINE void rh_put_alloc(struct rh_writer *w, uint32_t id, void *p, size_t size,
                                   uint64_t t)
{
    int64_t d = (int64_t)((uint64_t)(uintptr_t)p - w->prev_addr);
    unsigned raw = (d & 15) ? RIP_B0_RAWADDR : 0;
    uint8_t *q = rh_put_head(w, w->pos, RIP_OP_ALLOC, raw, t);
    q = rip_put_varint(q, id);
    q = rip_put_varint(q, size);
    q = rh_put_addr(q, d, raw);
    w->prev_addr = (uintptr_t)p;
    rh_event_done(w, q);
    if (rh_unlikely(__atomic_load_n(&rh_live_on, __ATOMIC_RELAXED)))
        rh_live_note_alloc(p, size, id);
}

RH_ALWAYS_INLINE void rh_put_free(struct rh_writer *w, void *p, uint64_t t)
{
    int64_t d = (int64_t)((uint64_t)(uintptr_t)p - w->prev_addr);
    unsigned raw = (d & 15) ? RIP_B0_RAWADDR : 0;
    uint8_t *q = rh_put_head(w, w->pos, RIP_OP_FREE, raw, t);
    q = rh_put_addr(q, d, raw);
    w->prev_addr = (uintptr_t)p;
    rh_event_done(w, q);
}

RH_ALWAYS_INLINE void rh_put_realloc(struct rh_writer *w, uint32_t id, void *old, void *p,
                                     size_t size, uint64_t t1, uint64_t t2)
{
    int64_t d1 = (int64_t)((uint64_t)(uintptr_t)old - w->prev_addr);
    int64_t d2 = (int64_t)((uint64_t)(uintptr_t)p - (uint64_t)(uintptr_t)old);
    unsigned raw = ((d1 | d2) & 15) ? RIP_B0_RAWADDR : 0;
    uint8_t *q = rh_put_head(w, w->pos, RIP_OP_REALLOC, raw, t1);
    uint64_t t = w->prev_time;
    q = rip_put_varint(q, t2 > t ? t2 - t : 0);
    q = rip_put_varint(q, id);
    q = rip_put_varint(q, size);
    q = rh_put_addr(q, d1, raw);
    q = rh_put_addr(q, d2, raw);
    w->prev_addr = (uintptr_t)p;
    rh_event_done(w, q);
    if (rh_unlikely(__atomic_load_n(&rh_live_on, __ATOMIC_RELAXED)))
        rh_live_note_alloc(p, size, id);
}

/* The id in the home entry of hash in tb, or 0 when the stack is not there (a
 * collision, a new stack, an insertion not yet published). A known stack
 * usually sits in its home entry, so this probe answers most calls. */
RH_ALWAYS_INLINE uint32_t rh_stack_home_id(const struct rh_stack_table *tb, uint64_t hash)
{
    const struct rh_stack_entry *home = &tb->entries[hash & tb->mask];
    if (rh_likely(__atomic_load_n(&home->hash, __ATOMIC_ACQUIRE) == hash))
        return __atomic_load_n(&home->id, __ATOMIC_ACQUIRE);
    return 0;
}

/* The stack id of this call: the inline walk, then an inline probe of the
 * stack's home entry in the table (a known stack usually sits there). */
RH_ALWAYS_INLINE uint32_t rh_stack_id_fast(struct rh_writer *w, unsigned kind, void *fp, uint64_t t)
{
    struct rh_walk wk;
    struct rh_stack_table *tb = w->stacks;
    rh_stack_walk_inline(fp, kind, tb->max_depth, &wk);
    uint32_t hid = rh_stack_home_id(tb, wk.hash);
    if (rh_likely(hid))
        return hid;
    /* The walk's results go by value, so that wk never lives in memory. */
    return rh_stack_id_slow_fast(w, kind, fp, wk.hash, wk.nframes, wk.cut, t);
}

/* rh_record_alloc / free / realloc of rh_hooks.h, inline (same contract).
 * rh_record_free_inline requires p != NULL (the shims test it first). */
/* rh_record_alloc_inline without the sampler's decision: for a shim that
 * asked rh_sample_alloc itself (before reading the clock). */
RH_ALWAYS_INLINE void rh_record_alloc_core(unsigned kind, void *p, size_t size, uint64_t t_after,
                                           void *fp)
{
    struct rh_writer *w = rh_fast_writer();
    if (rh_unlikely(!w)) {
        rh_record_alloc_slow(kind, p, size, t_after, fp);
        return;
    }
    uint64_t t = t_after >> rh_clock_shift;
    uint32_t id = rh_stack_id_fast(w, kind, fp, t);
    if (rh_likely(id != RH_ID_LOST)) {
        rh_put_alloc(w, id, p, size, t);
        RH_MEM_CHECK(w, t);
    }
}

RH_ALWAYS_INLINE void rh_record_alloc_inline(unsigned kind, void *p, size_t size, uint64_t t_after,
                                             void *fp)
{
    if (rh_unlikely(rh_sample_mode) && !rh_sample_alloc(p, size))
        return;
    rh_record_alloc_core(kind, p, size, t_after, fp);
}

/* Whether the free of p is recorded while the live map is kept: the filter
 * answers most unsampled frees with one load. */
RH_ALWAYS_INLINE int rh_live_free_recorded(void *p)
{
    if (rh_live_maybe(p) || (intptr_t)p < 0)
        return rh_live_note_free(p);
    return !rh_sample_mode;
}

RH_ALWAYS_INLINE void rh_record_free_core(void *p, uint64_t t_before)
{
    struct rh_writer *w = rh_fast_writer();
    if (rh_likely(w)) {
        uint64_t t = t_before >> rh_clock_shift;
        rh_put_free(w, p, t);
        RH_MEM_CHECK(w, t);
    } else {
        rh_record_free_slow(p, t_before);
    }
}

RH_ALWAYS_INLINE void rh_record_free_inline(void *p, uint64_t t_before)
{
    if (rh_unlikely(__atomic_load_n(&rh_live_on, __ATOMIC_RELAXED)) && !rh_live_free_recorded(p))
        return;
    rh_record_free_core(p, t_before);
}

/* rh_record_free_inline(p, rh_now()), reading the clock only when the free is
 * recorded (an unsampled free costs no clock read). */
RH_ALWAYS_INLINE void rh_record_free_now(void *p)
{
    if (rh_unlikely(__atomic_load_n(&rh_live_on, __ATOMIC_RELAXED)) && !rh_live_free_recorded(p))
        return;
    rh_record_free_core(p, rh_now());
}

RH_ALWAYS_INLINE void rh_record_realloc_inline(unsigned kind, void *old, void *p, size_t size,
                                               uint64_t t_before, uint64_t t_after, void *fp)
{
    if (rh_unlikely(__atomic_load_n(&rh_live_on, __ATOMIC_RELAXED))) {
        if (rh_sample_mode) {
            int was = rh_live_free_recorded(old), now = rh_sample_alloc(p, size);
            if (rh_unlikely(was | now))
                rh_sample_realloc_rec(kind, old, p, size, was, now, t_before, t_after, fp);
            return;
        }
        rh_live_note_free(old);
    }
    struct rh_writer *w = rh_fast_writer();
    if (rh_unlikely(!w)) {
        rh_record_realloc_slow(kind, old, p, size, t_before, t_after, fp);
        return;
    }
    uint64_t t1 = t_before >> rh_clock_shift, t2 = t_after >> rh_clock_shift;
    uint32_t id = rh_stack_id_fast(w, kind, fp, t1);
    if (rh_likely(id != RH_ID_LOST)) {
        rh_put_realloc(w, id, old, p, size, t1, t2);
        RH_MEM_CHECK(w, t2);
    }
}

/* ---- rh_api.c ----------------------------------------------------------- */

/* 1 when state s is a recording: the heap's (RH_ON) or CPU samples only. */
static inline int rh_recording(int s)
{
    s = RH_STATE(s);
    return s == RH_ON || s == RH_CPUONLY;
}
/* The state a recording starts in: RH_ON, or RH_CPUONLY under RHEAPER_HEAP=0. */
static inline int rh_on_state(void)
{
    return rh_cfg.heap ? RH_ON : RH_CPUONLY;
}

/* Sets the state's RH_OFF/RH_ON part, keeping a pending RH_CTL bit. */
RH_HIDDEN void rh_state_set(int v);
/* Asks the next hooked call of any thread to run the control work (sets
 * RH_CTL). Async-signal-safe. */
RH_HIDDEN void rh_ctl_request(void);

/* ---- rh_control.c: armed mode (RHEAPER_ENABLE=signal) --------------------- */

/* Installs the toggle signal's handler (unless the program already owns the
 * signal) and writes the marker. Called once from rh_init_lazy. */
RH_HIDDEN void rh_ctl_arm(void);
/* 1 when armed (the handler is ours and the program has not taken it over). */
RH_HIDDEN int rh_ctl_armed(void);
/* 1 while the toggle handler is ours, not merely standing aside. */
RH_HIDDEN int rh_ctl_signal_armed(void);
/* Toggles requested by the signal and not yet done; takes them (returns the
 * count, sets it to 0). */
RH_HIDDEN unsigned rh_ctl_take_toggles(void);
/* Rewrites the marker file (state, current profile). Cold; no lock needed
 * beyond the caller's. */
RH_HIDDEN void rh_ctl_marker_update(void);
/* Removes the marker this process wrote (exit); a file another user put at
 * its name is left alone. */
RH_HIDDEN void rh_ctl_marker_remove(void);
/* Fork child: the child is armed too but has no marker until its next hooked
 * call writes one. */
RH_HIDDEN void rh_ctl_fork_child(void);
/* A start the toggle signal asked for failed (rh_enable_ctl's warning says
 * why): counted in the marker ("failed N"), so `rheaper record` reports it
 * instead of waiting; the toggle is spent. Caller holds rh_ctl_lock. */
RH_HIDDEN void rh_ctl_start_failed(void);

/* The marker's path ("" before the process armed or wrote one). */
RH_HIDDEN const char *rh_ctl_marker_path(void);
/* The identity of the marker this process wrote last; -1 when none. */
RH_HIDDEN int rh_ctl_marker_fid(struct rh_fid *out);
/* This process's start time (/proc/self/stat field 22), as the marker says. */
RH_HIDDEN unsigned long long rh_ctl_start_time(void);

/* ---- rh_origin.c: the start command line, the fork origin, the title ------ */

/* Reads the command line at start (once; from rh_init_lazy). */
RH_HIDDEN void rh_origin_init(void);
/* Fork handlers (rh_thread.c): prepare saves the forking pid; the child,
 * before its profile state is reset, notes the parent's profile and the
 * fork's time when parent_recorded; _done drops it if the child will not
 * record from its start. */
RH_HIDDEN void rh_origin_fork_prepare(void);
RH_HIDDEN void rh_origin_fork_child(int parent_recorded);
RH_HIDDEN void rh_origin_fork_child_done(void);
/* The process changed its credentials (rh_priv.c): said in the trailer. */
RH_HIDDEN void rh_origin_credentials(void);
/* Writes the command line at start and, for a fork child's first profile,
 * the origin block into the 4096-byte header; ors RIP_HDR_F_* into *flags.
 * Returns the command line's length. */
RH_HIDDEN uint32_t rh_origin_header(uint8_t *hdr, uint32_t *flags);
/* Writes the title block (trailer bytes 112..) into t, which has
 * RIP_TRAILER_SIZE bytes. Returns the trailer's length. */
RH_HIDDEN uint32_t rh_origin_trailer(uint8_t *t);

/* ---- rh_priv.c: privilege changes and chroot (docs/servers.md) ----------- */

/* "Leave this id unchanged" for rh_priv_change (the set*id functions' -1). */
#define RH_ID_KEEP 0xffffffffu
/* Before the program changes its credentials to file-system user uid and
 * group gid (RH_ID_KEEP: unchanged): creates a pending profile now and hands
 * the profile, the marker and the log file to the new ids. If the profile
 * cannot be handed over, closes the recording cleanly with one line. Takes
 * the runtime's locks itself; keeps errno. Returns 0, or -1 when the
 * recording was closed. */
RH_HIDDEN int rh_priv_change(unsigned uid, unsigned gid);
/* Before chroot(dir): closes a recording cleanly with one line (the profile
 * path means nothing inside the new root). Keeps errno. */
RH_HIDDEN void rh_priv_chroot(const char *dir);
/* Closes the current recording as rheaper_disable does, with end reason
 * `reason` (RIP_END_*) in its trailer. Caller has the guard set and holds no
 * runtime lock. (rh_api.c) */
RH_HIDDEN void rh_stop_clean(uint32_t reason);
/* The exit work of the last exit handler (trailer, stream drain, marker), for
 * an exit that runs none (_exit, _Exit, daemon(3)'s parent, exec): once per
 * process, and not at all in a vfork child (whose memory is its parent's) or
 * when this thread is inside the runtime or a hooked call (a signal handler
 * that interrupted one: the locks may be this thread's). mem_final 0 skips
 * the final memory sample, which asks the allocator (async-signal contexts).
 * Keeps errno. mem_final RH_EXIT_EXEC: an exec (no final sample, and the
 * trailer's end reason says exec: the pid goes on as a new image). */
#define RH_EXIT_EXEC 2
RH_HIDDEN void rh_exit_now(int mem_final);
/* After an exec or daemon that failed and returned: the exit work rh_exit_now
 * did is done again at the process's real exit. Keeps errno. */
RH_HIDDEN void rh_exit_undo(void);
/* The fork child's side of rh_exit_now: this memory is now the child's. */
RH_HIDDEN void rh_exit_fork_child(void);

/* The calling thread's guard, saved and set around API work. */
RH_HIDDEN int rh_guard_enter(void);
RH_HIDDEN void rh_guard_leave(int saved);
/* Fork prepare (rh_thread.c): a recording whose file is still pending (the
 * lazy start: a daemon's master that has not allocated since its own fork)
 * creates it now, so the child can name its parent's profile. Caller holds
 * rh_prof_lock. Returns 1 when it created one; then the parent calls
 * rh_file_created_after_fork with no lock held. */
RH_HIDDEN int rh_file_create_for_fork_locked(void);
RH_HIDDEN void rh_file_created_after_fork(void);
/* Creates the file if it is pending (lazy start). Takes rh_prof_lock. Returns 1
 * when a file is open. */
RH_HIDDEN int rh_file_ensure(void) RH_COLD;

/* ---- rh_stream.c: RHEAPER_STREAM, the profile sent to a collector */

/* Parses HOST:PORT (numeric IPv4, [IPv6] or localhost) for the sender.
 * Returns 0, or -1 when it is not one. Called from rh_config_load_env. */
RH_HIDDEN int rh_stream_parse_addr(const char *spec);
/* 1 when the profile goes to a collector instead of a file. */
RH_HIDDEN int rh_stream_on(void);
/* RHEAPER_STREAM was accepted (rh_config_load_env): rh_stream_on() is 1. */
RH_HIDDEN void rh_stream_mark_on(void);
/* Starts recording `epoch`'s stream: queues a copy of the 4096-byte file header
 * (the sender connects when it reaches it) and drops what an older recording
 * left. Caller holds rh_prof_lock. Returns 0, or -1 when no memory. */
RH_HIDDEN int rh_stream_begin_locked(const uint8_t *hdr, uint32_t epoch);
/* Takes ownership of a finished chunk mapping (a private anonymous one of
 * map_size bytes whose rip chunk header says type, used and events) and queues
 * it for recording `epoch`. exempt: header-like pieces (MODULES, TRAILER) the
 * queue limit never refuses. An EVENTS/SHARED chunk that does not fit stops
 * the recording (one warning; closed cleanly at the next hooked call) and its
 * events are counted lost, as are those of a chunk of another or a failed
 * recording. Any lock or none may be held (rh_sq's lock is a leaf). */
RH_HIDDEN void rh_stream_push(void *map, uint32_t map_size, uint32_t epoch, int exempt);
/* A chunk mapping of recording `epoch` was opened for a writer (EVENTS or
 * SHARED; its header filled): the sender sends what it holds while it is
 * open (partial chunks, FORMAT.md "Streaming"), until rh_stream_push takes
 * it. Any lock or none may be held. */
RH_HIDDEN void rh_stream_chunk_opened(void *map, uint32_t epoch);
/* Queues the end of recording `epoch`'s connection (after its trailer). */
RH_HIDDEN void rh_stream_end_locked(uint32_t epoch);
/* Writes the trailer's stream fields (FORMAT.md, version 3 streaming) and adds
 * to its open count (bytes 40..43, written before) the chunks the collector
 * holds open because the queue refused their sealed form after parts of them
 * were sent. */
RH_HIDDEN void rh_stream_trailer_fields(uint8_t *trailer);
/* Notes the recording just closed (its trailer counted `events`): the exit
 * handler waits for it and reports it. Caller holds rh_prof_lock. */
RH_HIDDEN void rh_stream_closed_locked(uint64_t events);
/* Starts the sender thread unless it runs. Caller holds no runtime lock, has
 * the guard set, and the constructors have run. Returns 0 or -1 (one warning
 * pending, tracking stopped). */
RH_HIDDEN int rh_stream_start(void);
/* Control work (RH_CTL): prints the sender's pending warning. */
RH_HIDDEN void rh_stream_ctl(void);
/* At exit: waits (RHEAPER_STREAM_TIMEOUT at most) until the sender has sent
 * the last closed recording and the collector confirmed it, then prints the
 * one result line (or the pending warning). */
RH_HIDDEN void rh_stream_exit(void);
/* fork handlers' part: 0 prepare (locks the queue), 1 parent, 2 child (empties
 * the queue: the parent sends it; the child has no sender until it records). */
RH_HIDDEN void rh_stream_fork(int phase);

/* ---- rh_cpu.c: CPU sampling ----------------------------------
 * Per-thread CPU-time timers deliver cpu_signal to their own thread; the
 * handler writes one EXT CPUSAMPLE into the thread's own chunk. Everything but
 * the handler runs in a normal context with the guard set. */

/* Starts registering threads when CPU samples may be asked for (cpu_hz > 0,
 * or armed mode, where `rheaper record -p --cpu-hz` can ask later) and
 * registers the calling thread. The handler is installed by the first
 * rh_cpu_start (unless the program owns the signal: one warning, stand
 * aside). Called from rh_init_lazy and rheaper_enable. */
RH_HIDDEN void rh_cpu_init(void);
/* The calling thread is known to the runtime (its first hooked call):
 * registers it unless a listing of /proc/self/task did, and starts its timer
 * when sampling is on. Idempotent; cold. */
RH_HIDDEN void rh_cpu_thread_known(void) RH_COLD;
/* Starts the timers of every thread of the process, listed from
 * /proc/self/task (a recording begins, cpu_hz > 0), or stops and deletes them
 * all (it ends). Take the registry lock, which comes
 * after rh_shared_lock and rh_prof_lock in the lock order (a close stops the
 * timers holding both); the caller holds rh_ctl_lock or is initialising. */
RH_HIDDEN void rh_cpu_start(void);
RH_HIDDEN void rh_cpu_stop(void);
/* The rate `rheaper record -p PID --cpu-hz N` asked for in
 * DIR/rheaper-PID.cpu-hz (removed once read), or 0. Taken only from a regular
 * file with one link of the effective user or root that names this pid and
 * start time; 1 to RH_MAX_CPU_HZ. Armed mode, at a toggle. */
RH_HIDDEN unsigned rh_cpu_requested_hz(void);
/* Samples written and dropped since the current file was created (trailer). */
RH_HIDDEN void rh_cpu_counts(uint64_t *samples, uint64_t *dropped);
RH_HIDDEN void rh_cpu_counts_reset(void);
/* Fork: 0 prepare, 1 parent, 2 child (the child has no timers; it keeps the
 * forking thread). */
RH_HIDDEN void rh_cpu_fork(int phase);

/* rh_stack.c: the walk of a CPU sample from the interrupted registers (ip is
 * frame 0, recorded as ip + 1 like a return address). Same contract as
 * rh_stack_walk / rh_stack_encode; async-signal-safe. The walk also keeps
 * its first cap frames in pcs (may be NULL): when they are all of them
 * (nframes <= cap), rh_stack_encode_list encodes a new stack from pcs, with
 * no second walk. */
RH_HIDDEN void rh_stack_walk_regs(uintptr_t ip, uintptr_t sp, uintptr_t bp, unsigned kind,
                                  unsigned max, struct rh_walk *w, uintptr_t *pcs, uint32_t cap);
RH_HIDDEN uint8_t *rh_stack_encode_regs(uintptr_t ip, uintptr_t sp, uintptr_t bp,
                                        uint32_t nframes, uint8_t *p);
/* The n frames pcs as a STACK record's frame list (what rh_stack_encode_regs
 * writes for the same frames). */
RH_HIDDEN uint8_t *rh_stack_encode_list(const uintptr_t *pcs, uint32_t n, uint8_t *p);

/* ---- rh_pool.c: named kinds, client requests, user allocator families ---- */

/* The kind number of `name` (>= RIP_DYN_KIND_BASE), the same for equal names;
 * `name` must stay valid for the life of the process. Returns 0 when the
 * table of RIP_DYN_KIND_MAX names is full. Takes a spin lock; no allocation. */
RH_HIDDEN uint32_t rh_kind_intern(const char *name) RH_COLD;
/* Writes the KINDNAME record of dynamic kind `kind` into w unless this file
 * already has it. Called before the STACK record that first uses the kind. */
RH_HIDDEN void rh_kind_announce(struct rh_writer *w, unsigned kind, uint64_t t) RH_COLD;
/* fork handlers' part: 0 prepare (locks the kind table), 1 parent (unlocks),
 * 2 child (resets the lock). */
RH_HIDDEN void rh_kinds_fork(int phase);
/* rh_record.c: the timed POOLRESET record of pool `id`. */
RH_HIDDEN void rh_record_pool_reset(uint32_t id, uint64_t t_before);
RH_HIDDEN void rh_record_region(uint32_t id, uint32_t parent, unsigned kind, unsigned flags,
                                unsigned creator, uint64_t t_before);
/* Region allocators (rh_region.c): a fresh pool id (rh_pool.c), the region
 * table's fork phases (0 prepare, 1 parent, 2 child), and a copy of a name
 * as a dynamic kind. */
RH_HIDDEN uint32_t rh_pool_new_id(void);
RH_HIDDEN void rh_region_fork(int phase);
RH_HIDDEN uint32_t rh_kind_intern_copy(const char *name);

#endif
