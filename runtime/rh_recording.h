/* rh_recording.h: the runtime's recording core.
 *
 * Stacks and their walk, CFI unwinding, in-process symbols, writers and
 * slots, the profile's chunk space, records, sampling, the live map, pools
 * and regions, CPU and memory samples, reports and the stream to a
 * collector. Above the base (rh_base.h) and below the session layer
 * (rh_session.h): a core file calls the base, the system layer and other
 * core files, never up; what it needs from the session layer goes through
 * rh_session_call (docs/design.md, "Runtime"). The inline fast path is
 * rh_hot.h. Prototypes are grouped under the file that defines them;
 * everything is hidden.
 */
#ifndef RH_RECORDING_H
#define RH_RECORDING_H

#include "rh_base.h"

/* ---- rh_stack.c: the stack table and the out-of-line walks ------------- */

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
 * init (rh_config.c), read once per walk. */
extern RH_HIDDEN int rh_wc_on;
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

/* The walk of a CPU sample from the interrupted registers (ip is
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
/* Its size: a big program's walks visit thousands of return addresses
 * (PostgreSQL's backends about 1 500 in a pgbench run), and an address whose
 * slot another one holds sends the rest of its walk out of line (about 800
 * instructions instead of 17 a frame): with 4 096 slots one walk in five of a
 * backend went there; 32 768 leave a few per cent. 65 536 (512 KiB, touched
 * only where addresses fall) make the index on x86 the address's low 16
 * bits: one zero-extending move instead of a move and a mask. Slot 0 never
 * holds 0 (rh_stack_bounds_compute), so no slot matches a return address of
 * 4096 or less, which the inline walk tests only after a miss. */
#define RH_UW_FPSET_BITS 16
extern RH_HIDDEN uintptr_t rh_uw_fpset[1u << RH_UW_FPSET_BITS];
#if defined(__x86_64__) || defined(__i386__)
#define RH_UW_FPSLOT(ret) ((ret) & ((1u << RH_UW_FPSET_BITS) - 1u))
#else /* fixed-size instructions: a return address's low 2 bits are 0 */
#define RH_UW_FPSLOT(ret) (((ret) >> 2) & ((1u << RH_UW_FPSET_BITS) - 1u))
#endif

/* The hot-path test, made for every frame of every walk: 1 when the function
 * holding return address ret is known to keep a frame record (the
 * frame-pointer step is right); 0 when it does not, or is not known yet (then
 * the out-of-line walk asks rh_unwind_lookup). One mask (a zero-extending
 * move on x86), one load, one compare. */
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
/* Without CFI every frame is taken as a frame-pointer one; a return address
 * of 4096 or less still answers 0, which the inline walk's miss turns into
 * its cut (rh_stack_walk_body). */
static inline int rh_unwind_fp_frame(uintptr_t ret)
{
    return ret > 4096u;
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

/* ---- rh_writer.c: a chunk stream's writer ------------------------------- */

/* The first chunk of a stream, in bytes; each next one doubles, up to the
 * file's largest. */
#define RH_FIRST_CHUNK 16384u
/* Bytes kept free at the end of every EVENTS chunk for the THREADNAME record
 * written at seal: op, subtype, length and 16 bytes of name. */
#define RH_NAME_RESERVE (3 + 16)
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
/* rh_writer_open for a caller that holds rh_prof_lock already. */
RH_HIDDEN int rh_writer_open_locked(struct rh_writer *w, uint64_t t) RH_COLD;
/* Fork child: forgets w, unmapping its chunk unsealed (it is the parent's). */
RH_HIDDEN void rh_writer_drop(struct rh_writer *w);
/* rh_writer_reserve's cold half (rh_hot.h): opens a new chunk for w. Keeps
 * errno. Returns 0, or -1 (the event is lost). */
RH_HIDDEN int rh_writer_reserve_slow(struct rh_writer *w, size_t need, uint64_t t) RH_COLD;
/* Stores `used` after a complete record (release store into the mapping). */
RH_HIDDEN void rh_writer_commit(struct rh_writer *w);

/* Spare chunks, made ready by the helper thread (rh_writer.c, struct
 * rh_spare). rh_spare_prepare: the helper's work, one request answered
 * (returns 1) or none pending (0); takes rh_prof_lock, guard set, never on a
 * program thread. rh_spare_wait: the helper's nap, up to ms, cut short by a
 * request or rh_spare_kick made since rh_spare_seen returned `seen` (read it
 * before the rh_spare_prepare calls, so that none is slept through). rh_spare_active: 1 while a file is open whose
 * writers ask for spares. rh_spare_drop_locked: seals and unmaps slot s's
 * spare (caller holds rh_prof_lock: thread exit, the file's close).
 * rh_spare_forget: a fork child's unmapping of the parent's spare. */
RH_HIDDEN int rh_spare_prepare(void);
RH_HIDDEN uint32_t rh_spare_seen(void);
RH_HIDDEN void rh_spare_wait(uint32_t seen, unsigned ms);
RH_HIDDEN int rh_spare_active(void);
RH_HIDDEN void rh_spare_kick(void);
RH_HIDDEN void rh_spare_drop_locked(struct rh_slot *s);
RH_HIDDEN void rh_spare_forget(struct rh_slot *s);
/* The file's close (caller holds rh_prof_lock): every slot's spare sealed. */
RH_HIDDEN void rh_thread_spares_drop_locked(void);
/* 1 when a spare was asked for since the last safe point: the helper may not
 * run yet in this process (rh_writer.c sets it, rh_spare_start_safe clears
 * it). Read on the slow entries' way out (rh_record.c). */
extern RH_HIDDEN int rh_spare_want_helper;
/* The safe point for the helper's start (rh_record.c's slow entries, after
 * the event of a malloc-family call: its real function has returned, or not
 * begun, and the thread holds no runtime lock): asks rh_session_call
 * (RH_SES_HELPER) to start the helper if none runs in this process. Never from
 * an mmap's record (an allocator may call it under its own locks, and the
 * thread's creation allocates through that allocator). Keeps errno. */
RH_HIDDEN void rh_spare_start_safe(void) RH_COLD;

/* Refreshes the chunk's calibration pair (rh_writer_due counts down to it). */
RH_HIDDEN void rh_writer_recalibrate(struct rh_writer *w) RH_COLD;
/* Sets w's fast limit (lim) RH_DUE_BYTES past pos, or at end. */
RH_HIDDEN void rh_writer_set_lim(struct rh_writer *w);
/* The writer's periodic work, done where the record fast path reached the
 * fast limit (lim) with room left before end: the calibration refresh's
 * countdown (rh_writer_recalibrate, every RH_CALIB_DUES limits) and a new
 * limit. The caller writes its event next, then checks the memory samples'
 * deadline (RH_MEM_CHECK). Keeps errno. */
RH_HIDDEN void rh_writer_due(struct rh_writer *w) RH_COLD;

/* ---- rh_thread.c: slots, a thread's first event, thread exit ----------- */

/* The calling thread's slot, NULL when it has none. */
extern RH_HIDDEN __thread struct rh_slot *rh_tls_slot __attribute__((tls_model("local-exec")));
extern RH_HIDDEN int rh_shared_lock;
extern RH_HIDDEN struct rh_writer rh_shared;

/* Cold path of every record: makes sure the calling thread has a writable
 * chunk of the current epoch (creating the file, taking a slot, opening a chunk
 * as needed). Returns the slot, or NULL when the event must go through the
 * shared path (no slot available, slot released) or be dropped (*drop set). */
RH_HIDDEN struct rh_slot *rh_thread_prepare(uint64_t t, int *drop) RH_COLD;
/* Registers the thread-exit key. Called once at init. */
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
/* Fork child: drops every chunk mapping inherited from the parent unsealed
 * (they are the parent's), frees every slot and forgets the calling thread's
 * slot and tid. */
RH_HIDDEN void rh_thread_fork_child(void);

/* ---- rh_file.c: the profile's chunk space and module snapshots --------- */

/* 0 when [off, off+len) stays under RLIMIT_FSIZE (the runtime never raises
 * SIGXFSZ), else EFBIG. */
RH_HIDDEN int rh_file_check_fsize(uint64_t off, uint64_t len);
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
 * file closed; the session layer updates the marker (RH_SES_STOPPED). Caller
 * holds rh_prof_lock. */
RH_HIDDEN void rh_file_fail_locked(const char *what, int err);
/* Takes a module snapshot (skipped when force == 0 and the dl_iterate_phdr
 * counters did not change). Takes rh_prof_lock itself; the caller holds no lock
 * and has the guard set. */
RH_HIDDEN void rh_modules_snapshot(int force);
/* ---- rh_record.c: records out of line ----------------------------------- */

/* The timed POOLRESET record of pool `id`, and a region's REGION record. */
RH_HIDDEN void rh_record_pool_reset(uint32_t id, uint64_t t_before);
RH_HIDDEN void rh_record_region(uint32_t id, uint32_t parent, unsigned kind, unsigned flags,
                                unsigned creator, uint64_t t_before);
/* A realloc old -> p under sampling, once rh_record_realloc_inline knows
 * whether old was recorded (was) and p is (now; one of them set): records a
 * REALLOC, a FREE or an ALLOC. A zero time is read here. */
RH_HIDDEN void rh_sample_realloc_rec(unsigned kind, void *old, void *p, size_t size, int was,
                                     int now, uint64_t t_before, uint64_t t_after, void *fp) RH_COLD;
/* A timed EXT record without a stack, body[0, len), into w at
 * event time t (lost and counted when no room can be made), and the same
 * through the calling thread's slot or the shared stream (t: raw ticks). */
RH_HIDDEN void rh_emit_ext_raw(struct rh_writer *w, unsigned sub, const uint8_t *body, size_t len,
                               uint64_t t);
RH_HIDDEN void rh_record_ext_raw(unsigned sub, const uint8_t *body, size_t len, uint64_t t_after);

/* ---- rh_sample.c: sampled recording ----------------------------
 * While rh_sample_mode is not RH_SAMPLE_NONE, the record fast path asks
 * rh_sample_alloc whether a new block is recorded; a realloc goes to
 * rh_sample_realloc_rec. Whether a freed block was recorded is the live map's
 * answer (rh_live_note_free, rh_report.c). */
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
/* 1 while the live map is kept (sampling or reports): the record path then
 * calls rh_live_note_alloc / rh_live_note_free (rh_report.c). */
extern RH_HIDDEN int rh_live_on;

/* ---- rh_report.c: in-process counters and reports --------------- */

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

/* ---- rh_elfsym.c: names from ELF symbol tables, in-process --------------- */
struct rh_sym_ctx;
/* Reads /proc/self/maps; NULL on failure (names are then "?"). */
RH_HIDDEN struct rh_sym_ctx *rh_sym_open(void);
RH_HIDDEN void rh_sym_close(struct rh_sym_ctx *c);
/* "function+0xoff" of addr into out (1), or "" (0); *module: its file. */
RH_HIDDEN int rh_sym_name(struct rh_sym_ctx *c, uintptr_t addr, char *out, size_t len,
                          const char **module);

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
/* One compare, at the slow entries of the record path (rh_record.c); the
 * sample itself is cold. */
#define RH_MEM_CHECK(w, t)                                                                         \
    do {                                                                                           \
        if (rh_unlikely((t) >= __atomic_load_n(&rh_mem_next, __ATOMIC_RELAXED)))                   \
            rh_mem_due((w), (t));                                                                  \
    } while (0)

/* ---- rh_stream.c: RHEAPER_STREAM, the profile sent to a collector */

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
/* Control work (RH_CTL): prints the sender's pending warning. Returns 1 when
 * it printed one (the recording stopped: the caller updates the marker). */
RH_HIDDEN int rh_stream_ctl(void);
/* At exit: waits (RHEAPER_STREAM_TIMEOUT at most) until the sender has sent
 * the last closed recording and the collector confirmed it, then prints the
 * one result line (or the pending warning). Returns 1 when it printed the
 * warning (the caller updates the marker, as after rh_stream_ctl). */
RH_HIDDEN int rh_stream_exit(void);
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
/* Samples written and dropped since the current file was created (trailer). */
RH_HIDDEN void rh_cpu_counts(uint64_t *samples, uint64_t *dropped);
RH_HIDDEN void rh_cpu_counts_reset(void);
/* Fork: 0 prepare, 1 parent, 2 child (the child has no timers; it keeps the
 * forking thread). */
RH_HIDDEN void rh_cpu_fork(int phase);
/* hold 1: no listing of /proc/self/task runs until rh_cpu_scan_hold(0) (the
 * helper's creation: rh_runtime_tid is set to RH_TID_STARTING under it, and a
 * listing that starts after waits for the thread's own id). */
RH_HIDDEN void rh_cpu_scan_hold(int hold);

/* ---- rh_kinds.c: named kinds -------------------------------------------- */

/* The kind number of `name` (>= RIP_DYN_KIND_BASE), the same for equal names;
 * `name` must stay valid for the life of the process. Returns 0 when the
 * table of RIP_DYN_KIND_MAX names is full. Takes a spin lock; no allocation. */
RH_HIDDEN uint32_t rh_kind_intern(const char *name) RH_COLD;
/* rh_kind_intern of a copy of name (a region's name given at run time), so
 * the kind outlives the program's string; "region" when the copies are full. */
RH_HIDDEN uint32_t rh_kind_intern_copy(const char *name);
/* Writes the KINDNAME record of dynamic kind `kind` into w unless this file
 * already has it. Called before the STACK record that first uses the kind. */
RH_HIDDEN void rh_kind_announce(struct rh_writer *w, unsigned kind, uint64_t t) RH_COLD;
/* fork handlers' part: 0 prepare (locks the kind table), 1 parent (unlocks),
 * 2 child (resets the lock). */
RH_HIDDEN void rh_kinds_fork(int phase);

/* ---- rh_pool.c: client requests, user allocator families ----------------- */

/* A fresh pool id (pools and regions share the numbers). */
RH_HIDDEN uint32_t rh_pool_new_id(void);

/* ---- rh_region.c: region allocators -------------------------------------- */

/* The region table's fork phases (0 prepare, 1 parent, 2 child). */
RH_HIDDEN void rh_region_fork(int phase);

#endif
