/* rh_stack.c: frame-pointer stack walks and the global stack table.
 *
 * Every event names a stack id; each distinct (kind, frames) stack is defined
 * once per file by a STACK record. The walk follows the saved frame pointers
 * from the shim's frame and hashes as it goes, so a known stack costs one walk,
 * one hash and one table probe; only a new stack is walked a second time, to
 * encode its frames straight into the writer's chunk.
 *
 * Frames: frame records while the code keeps frame pointers (inline, in the
 * record fast path), CFI from .eh_frame where it does not (rh_unwind.c), in any
 * order and as often as the stack switches (rh_ws_run), and the kernel's signal
 * frame under a signal handler.
 *
 * Safety: the walk never faults. It reads a frame only when the address is
 * 8-aligned, inside the stack being walked (the thread's own [lo, hi), computed
 * from the thread rather than from the first walk; or the sigaltstack the walk
 * started on) with 16 bytes to spare, and above the previous one; a return
 * address <= 4096 ends it. A walk that cannot go on ends with cut = 1
 * (truncated), as does a walk that starts on a stack the runtime does not know
 * (a coroutine's), which keeps frame 0 only. Only the outermost frame (CFI
 * without a return address, or a saved rbp of 0) ends a walk as complete.
 *
 * Identity: two stacks with the same 64-bit hash are treated as the same stack.
 * With a good mix the chance of a collision among a million stacks is ~3e-8;
 * the cost of one is a wrong (but well-formed) stack for some events.
 *
 * The table is lock-free open addressing: a new hash is claimed with one CAS on
 * the entry's hash, then its id (from an atomic counter, from 1) is published
 * with a release store. A reader that finds the hash with id 0 spins briefly.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include "rh_hot.h"

#define RH_STACK_TABLE_BITS 21

RH_HIDDEN __thread uintptr_t rh_tls_stack_lo __attribute__((tls_model("local-exec")));
RH_HIDDEN __thread uintptr_t rh_tls_stack_hi __attribute__((tls_model("local-exec")));

/* The table's size in bits. Every mapping counts against RLIMIT_AS, even a
 * MAP_NORESERVE or PROT_NONE one, so under a finite limit the table takes at
 * most 1/64 of it (200 MiB: 2^17 slots, 2 MiB); a full table costs new stacks
 * (counted lost, one warning), never the program's own memory. */
static unsigned rh_stack_table_bits(void)
{
    unsigned bits = RH_STACK_TABLE_BITS;
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        uint64_t budget = (uint64_t)rl.rlim_cur / 64;
        while (bits > 12 && ((uint64_t)sizeof(struct rh_stack_entry) << bits) > budget)
            bits--;
    }
    return bits;
}

struct rh_stack_table *rh_stack_table_new(void)
{
    size_t n = (size_t)1 << rh_stack_table_bits();
    size_t bytes = sizeof(struct rh_stack_table) + n * sizeof(struct rh_stack_entry);
    bytes = (bytes + 4095) & ~(size_t)4095;
    void *m = rh_sys_mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct rh_stack_table *t = m;
    t->entries = (struct rh_stack_entry *)((char *)m + 64);
    t->mask = n - 1;
    t->limit = n / 4 * 3;
    t->count = 0;
    t->next_id = 1;
    t->warned = 0;
    return t;
}

/* Computes the calling thread's own stack bounds, whatever stack the call runs
 * on (a coroutine's, a signal handler's). The main thread (tid == pid) ends at
 * __libc_stack_end (no allocation) and may grow down to RLIMIT_STACK below it;
 * other threads ask pthread_getattr_np, which allocates: the caller has the
 * guard set, so those calls pass untracked. Unknown bounds are [1, 1): walks
 * then start out of line (rh_stack_walk_far). */
void rh_stack_bounds_compute(void)
{
    int e = errno; /* rh_record_* keep errno; getrlimit and pthread_* may not */
    /* Before any inline walk (it needs these bounds): slot 0 of the
     * frame-pointer set never matches a return address of 0, which the walk
     * only tests for when the set misses (rh_stack_walk_body). 4 belongs in
     * no slot 0 (RH_UW_FPSLOT), so no return address matches it there. */
#if RH_UNWIND_CFI
    uintptr_t empty = 0;
    __atomic_compare_exchange_n(&rh_uw_fpset[0], &empty, (uintptr_t)4, 0, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);
#endif
    uintptr_t main_top = rh_arch_main_stack_end();
    uintptr_t lim = 8u << 20;
    struct rlimit rl;
    if (getrlimit(RLIMIT_STACK, &rl) == 0)
        lim = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 30) ? (1u << 30)
                                                                       : (uintptr_t)rl.rlim_cur;
    uintptr_t lo = 1, hi = 1;
    if (main_top && rh_gettid() == (uint32_t)getpid()) {
        hi = main_top;
        lo = main_top > lim ? main_top - lim : 1;
    } else {
        /* its allocations (and pthread_attr_destroy's free) pass through as
         * the runtime's own, not as a re-entry (RH_GUARD_LEAF counts those) */
        int g = rh_guard;
        rh_guard = RH_GUARD_CALL;
        rh_barrier();
        pthread_attr_t a;
        if (pthread_getattr_np(pthread_self(), &a) == 0) {
            void *addr;
            size_t size;
            if (pthread_attr_getstack(&a, &addr, &size) == 0 && size) {
                lo = (uintptr_t)addr;
                hi = (uintptr_t)addr + size;
            }
            pthread_attr_destroy(&a);
        }
        rh_barrier();
        rh_guard = g;
    }
    rh_tls_stack_lo = lo;
    rh_tls_stack_hi = hi;
    errno = e;
}

void rh_stack_bounds(uintptr_t *lo, uintptr_t *hi)
{
    if (rh_unlikely(!rh_tls_stack_hi))
        rh_stack_bounds_compute();
    *lo = rh_tls_stack_lo;
    *hi = rh_tls_stack_hi;
}

/* ---- the general walk ----------------------------------------------------
 * One state per frame: pc (the frame's return address, already taken), rsp
 * (the function's stack pointer at that call: the callee's CFA) and rbp (its
 * rbp there). The rule of pc (rh_unwind.c, cached per return address) says how
 * to find the caller:
 *   frame pointer: the frame record at rbp (the checks of the inline walk);
 *   CFA from rsp or rbp: the return address at CFA - 8, rbp from its slot;
 *   signal trampoline: the registers the kernel saved in the signal frame, on
 *     whatever stack the interrupted code ran (the thread's, under a handler
 *     on sigaltstack);
 *   end (return address undefined: _start, clone): the walk is complete.
 * Every read is 8-aligned, inside the stack being walked and above the
 * previous one, so the walk never faults; when it cannot go on it stops with
 * cut = 1. Nothing here allocates or locks. */

struct rh_ws {
    uintptr_t lo, hi; /* the stack being walked */
    uint64_t h;       /* the frames' hash so far (rh_walk_add) */
    uint32_t n, max, cut;
    uint8_t *enc;  /* rh_stack_encode: frames go here as svarint deltas */
    uint64_t prev; /* the encoder's previous frame */
    uintptr_t *pcs; /* rh_stack_walk_regs: frames kept here too, while n < cap */
    uint32_t cap;
};

/* Takes frame pc: 0 when the depth limit stops the walk (cut set). */
static inline int rh_ws_emit(struct rh_ws *s, uintptr_t pc)
{
    if (s->n >= s->max) {
        s->cut = 1;
        return 0;
    }
    s->h = rh_walk_add(s->h, pc);
    if (s->pcs && s->n < s->cap)
        s->pcs[s->n] = pc;
    s->n++;
    if (s->enc) {
        s->enc = rip_put_varint(s->enc, rip_zigzag((int64_t)(pc - s->prev)));
        s->prev = pc;
    }
    return 1;
}

/* The tail memo (struct rh_tail, rh_recording.h): the frames from a thread's
 * last non-frame-pointer state to the end of its stack, when that is at most
 * RH_TAIL_MAX frames. Near the base
 * of a stack (main -> __libc_start_call_main -> __libc_start_main -> _start,
 * or a thread's start_thread -> clone3) those frames are the same for the life
 * of the thread, at the same addresses: every walk of a frame-pointer program
 * reaches them, and the memo spares it their CFI steps. Keyed by (pc, rsp): the
 * same return address in the same stack slot, which near the base can only be
 * the same activation. Per thread, in TLS. */
RH_HIDDEN __thread struct rh_tail rh_tls_tail __attribute__((tls_model("local-exec")));

/* The walk cache (struct rh_wcache, rh_recording.h). Consecutive events of a
 * thread mostly come from the same outer frames: a Lua interpreter allocates
 * 20-odd frames deep with only the innermost few changing. The inline walk
 * looks for the first record that equals a cached one (same address, same
 * return address) and hands over here; this checks every outer record of the
 * cached walk against memory, and on success takes the rest of the walk (hash,
 * frame count, cut) from the cache instead of stepping through it.
 *
 * Exact, because what is compared is everything the walk reads. A
 * frame-pointer walk is a function of the chain of records it visits: each
 * record's saved frame pointer and return address, the thread's stack bounds
 * (fixed per thread) and the rule of each return address (a function of the
 * address). A hit compares, for the hit record and every record outer than it,
 * the two words the walk would read, at the addresses the walk would read
 * them: the chain is the cached one word for word, so an uncached walk would
 * visit the same records, take the same frames and end the same way (the
 * last record's saved frame pointer, compared too, decides its end; a walk
 * that ended in the tail memo ends in it again, with the memo's own argument:
 * the same return address in the same stack slot near the base). A record at
 * the same address with the same return address is not enough by itself
 * (two callers with equal frame sizes put the same callee record at the same
 * address), which is why the outer records are compared, not trusted. So
 * whatever changed the stack since the cached walk is seen:
 *   longjmp and C++ exceptions pop frames without returns the runtime sees;
 *     the frames pushed afterwards hold other words, or the same words for
 *     the same chain;
 *   ucontext coroutines (swapcontext) run on other stacks: a walk starting
 *     outside the thread's stack goes out of line and neither reads nor fills
 *     the cache; a coroutine stack inside the thread's bounds is a chain of
 *     records like any other, compared word for word;
 *   a signal handler that allocates walks through the kernel's signal frame:
 *     the trampoline's return address is never a frame-pointer frame, so no
 *     cached chain contains it and such walks end out of line (rh_ws_run),
 *     without filling the cache; a handler cannot interrupt a walk in
 *     progress and record (the reentrancy guard is set during a record), and
 *     the CPU sampler's walk does not use the cache;
 *   a walk that would pass the depth limit with the cached frames does not
 *     take the hit; walks cut by the limit, by a bad return address or by an
 *     out-of-line part do not fill the cache.
 * Every read of a hit stays inside mapped stack: the cached records lie above
 * the hit record (the walk that cached them saw them strictly increasing and
 * below the stack's top), so between the current frame and the top of the
 * thread's stack. Costs: about 8 instructions per compared record where a
 * step costs about 23, and no hash work for them. */
RH_HIDDEN __thread struct rh_wcache rh_tls_wc __attribute__((tls_model("local-exec")));

/* Rebuilds entries above entry base (its record and end already in place)
 * from the k records of the walk from start, read again (the walk checked
 * them: each saved frame pointer leads to the next). */
static inline void rh_wc_stack(struct rh_wcache *wc, int base, uintptr_t start, uint32_t k)
{
    uint64_t t = wc->t[base], pw = wc->pw[base];
    uintptr_t raw = wc->raw[base];
    uintptr_t r[RH_WC_CAP];
    r[0] = start;
    for (uint32_t j = 1; j < k; j++)
        r[j] = rh_arch_rec_next(r[j - 1]);
    for (uint32_t j = 1; j <= k; j++) {
        int i = base + (int)j;
        t += rh_arch_ret(raw) * pw; /* the frame of the entry below */
        pw *= RH_WALK_K;
        uintptr_t f = r[k - j];
        raw = ((const uintptr_t *)f)[1];
        wc->fp[i] = f;
        wc->raw[i] = raw;
        wc->t[i] = t;
        wc->pw[i] = pw;
    }
    wc->d = (uint32_t)(base + 1) + k;
}

int rh_wc_take(uintptr_t start, int m, uint32_t k, uint32_t nsofar, uint32_t max, uint64_t h,
               struct rh_walk_rest *o)
{
    struct rh_wcache *wc = &rh_tls_wc;
    uint32_t total = nsofar + (uint32_t)m + wc->tail_n;
    if (total > max)
        return 0;
    /* the hit record's saved frame pointer, then every outer record: its
     * return address and saved frame pointer */
    const uintptr_t *fp = wc->fp, *rw = wc->raw;
    uintptr_t f = fp[m];
    for (int i = m; i > 0; i--) {
        uintptr_t g = fp[i - 1];
        if (rh_arch_rec_next(f) != g || ((const uintptr_t *)g)[1] != rw[i - 1])
            return 0;
        f = g;
    }
    if (rh_arch_rec_next(f) != wc->term_next)
        return 0;
    o->h = h * wc->pw[m] + wc->t[m];
    o->n = total;
    o->cut = wc->cut;
    if (k && (uint32_t)m + 1 + k <= RH_WC_CAP)
        rh_wc_stack(wc, m, start, k);
    else if (k)
        wc->d = (uint32_t)m + 1; /* the new records do not fit: keep the compared part */
    return 1;
}

void rh_wc_fill(uintptr_t start, uint32_t k, uintptr_t cur, uintptr_t raw, uintptr_t term_next,
                const uintptr_t *tail, uint32_t tail_n, uint32_t cut)
{
    struct rh_wcache *wc = &rh_tls_wc;
    uint64_t t = 0, p = 1;
    for (uint32_t i = 0; i < tail_n; i++) {
        t = rh_walk_add(t, tail[i]);
        p *= RH_WALK_K;
    }
    wc->fp[0] = cur;
    wc->raw[0] = raw;
    wc->t[0] = t;
    wc->pw[0] = p;
    wc->term_next = term_next;
    wc->tail_n = tail_n;
    wc->cut = cut;
    rh_wc_stack(wc, 0, start, k);
}

/* Picks the bounds of the stack holding sp: the current one, the thread's, or
 * the sigaltstack we run on. 0 when sp is on none of them. */
static int rh_ws_stack_of(struct rh_ws *s, uintptr_t sp)
{
    if (sp >= s->lo && s->hi >= 16 && sp <= s->hi - 16)
        return 1;
    uintptr_t lo = rh_tls_stack_lo, hi = rh_tls_stack_hi;
    if (sp >= lo && hi >= 16 && sp <= hi - 16) {
        s->lo = lo, s->hi = hi;
        return 1;
    }
    stack_t ss;
    if (sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE) && ss.ss_size >= 32) {
        lo = (uintptr_t)ss.ss_sp, hi = lo + ss.ss_size;
        if (sp >= lo && sp <= hi - 16) {
            s->lo = lo, s->hi = hi;
            return 1;
        }
    }
    return 0;
}

/* Runs the walk from state (pc, rsp, rbp), pc already taken. */
static void rh_ws_run(struct rh_ws *s, uintptr_t pc, uintptr_t rsp, uintptr_t rbp)
{
    /* the state that started the current run of non-frame-pointer frames, and
     * the frames taken since (for the tail memo) */
    uintptr_t t_pc = 0, t_rsp = 0, t_f[RH_TAIL_MAX];
    uint32_t t_n = 0;
    int prev_fp = 1;
    for (;;) {
#if RH_UNWIND_CFI
        /* frame-pointer code answers from the one-word set (as the inline
         * walk does) without the rule cache's probe and store */
        uint64_t info = rh_unwind_fp_frame(pc) ? (uint64_t)RH_UW_FP : rh_unwind_lookup(pc);
        int kind = (int)(info & 0xff);
        struct rh_unwind_rule r = rh_uw_rule_of_info(info);
#else
        int kind = RH_UW_FP;
        struct rh_unwind_rule r = {kind, 0, 0};
#endif
        if (kind != RH_UW_FP && prev_fp) {
            const struct rh_tail *m = &rh_tls_tail;
            if (m->n && m->pc == pc && m->rsp == rsp) {
                for (uint32_t i = 0; i < m->n; i++)
                    if (!rh_ws_emit(s, m->f[i]))
                        return;
                return;
            }
            t_pc = pc, t_rsp = rsp, t_n = 0;
        }
        prev_fp = kind == RH_UW_FP;
        uintptr_t ret;
        if (kind == RH_UW_END) {
            if (t_pc && t_n <= RH_TAIL_MAX) {
                struct rh_tail *m = &rh_tls_tail;
                m->n = 0; /* a signal handler's walk sees no half-written memo */
                rh_barrier();
                m->pc = t_pc, m->rsp = t_rsp;
                for (uint32_t i = 0; i < t_n; i++)
                    m->f[i] = t_f[i];
                rh_barrier();
                m->n = t_n;
            }
            return; /* the outermost frame: complete */
        }
        if (kind == RH_UW_FP) {
            if (!RH_UW_FP_STEPS)
                goto stuck; /* no CFI, and no frame record to read */
            if (rbp == 0)
                return; /* the outermost frame record */
            if (RH_WORD_MISALIGNED(rbp) || rbp < rsp || s->hi < RH_FRAME_REC ||
                rbp > s->hi - RH_FRAME_REC)
                goto stuck;
            ret = rh_arch_ret(((const uintptr_t *)rbp)[1]);
            if (ret <= 4096u || RH_ARCH_NOT_A_RECORD(ret, s->lo, s->hi))
                goto stuck;
            if (!rh_ws_emit(s, ret))
                return;
            rsp = RH_UW_FP_SP(pc, rbp);
            pc = ret;
            rbp = rh_arch_rec_next(rbp);
            continue;
        }
        if (kind == RH_UW_SIGNAL) {
            /* rsp is the handler's CFA: the ucontext the kernel pushed */
            uintptr_t g = rsp + RH_UC_GREGS;
            if ((rsp & 7u) || s->hi < 16 || g + 8 * (RH_REG_RIP + 1) > s->hi)
                goto stuck;
            const uintptr_t *gr = (const uintptr_t *)g;
            uintptr_t ip = gr[RH_REG_RIP], sp = gr[RH_REG_RSP];
            rbp = gr[RH_REG_RBP];
            if (ip <= 4096u || (sp & 7u) || !rh_ws_stack_of(s, sp))
                goto stuck;
            /* the interrupted instruction itself, not a return address: +1 so
             * that lookups and the converter (which subtract 1) land on it */
            ret = ip + 1;
            if (!rh_ws_emit(s, ret))
                return;
            t_pc = 0; /* no memo across a signal frame */
            pc = ret;
            rsp = sp; /* exact: the walk's reads above it stay in its stack */
            prev_fp = 1;
            continue;
        }
        uintptr_t cfa = (kind == RH_UW_CFA_RSP ? rsp : rbp) + (uintptr_t)(uint32_t)r.cfa_off;
        if ((cfa & 7u) || cfa <= rsp || cfa > s->hi || cfa - 8 < s->lo)
            goto stuck;
        ret = rh_uw_ret_at(cfa, rsp, &r);
        if (ret <= 4096u)
            goto stuck;
        if (r.rbp_off) {
            uintptr_t slot = cfa + (uintptr_t)(intptr_t)r.rbp_off;
            if (slot < rsp || slot + 8 > cfa)
                goto stuck;
            rbp = *(const uintptr_t *)slot;
        }
        if (!rh_ws_emit(s, ret))
            return;
        if (t_pc && t_n < RH_TAIL_MAX)
            t_f[t_n] = ret;
        t_n++;
        rsp = cfa;
        pc = ret;
    }
stuck:
    s->cut = 1;
}

/* The hash and frame count of a finished walk (as rh_stack_walk_inline). */
static void rh_ws_result(const struct rh_ws *s, struct rh_walk_rest *o)
{
    o->h = s->h;
    o->n = s->n;
    o->cut = s->cut;
}

void rh_stack_walk_cont(uintptr_t ret, uintptr_t rsp, uintptr_t rbp, uintptr_t lo, uintptr_t hi,
                        unsigned max, uint64_t h, uint32_t n, struct rh_walk_rest *o)
{
    int e = errno; /* a rule-cache miss may look at modules */
    struct rh_ws s = {lo, hi, h, n, max, 0, NULL, 0, NULL, 0};
    rh_ws_run(&s, ret, RH_UW_START_SP(rsp - RH_FRAME_REC), RH_UW_START_FP(rsp - RH_FRAME_REC, rbp));
    rh_ws_result(&s, o);
    errno = e;
}

/* The start of a walk from the shim frame fp on any stack: 0 when fp lies on
 * no stack we know (a coroutine's), then the walk is frame 0 and cut. */
static int rh_ws_start(struct rh_ws *s, uintptr_t fp)
{
    if (rh_unlikely(!rh_tls_stack_hi))
        rh_stack_bounds_compute();
    s->lo = rh_tls_stack_lo;
    s->hi = rh_tls_stack_hi;
    return rh_ws_stack_of(s, fp);
}

void rh_stack_walk_far(uintptr_t fp, unsigned max, uint64_t h, struct rh_walk_rest *o)
{
    int e = errno;
    const uintptr_t *f = (const uintptr_t *)fp;
    struct rh_ws s = {0, 0, h, 1, max, 0, NULL, 0, NULL, 0};
    if (rh_ws_start(&s, fp))
        rh_ws_run(&s, rh_arch_ret(f[1]), RH_UW_START_SP(fp), RH_UW_START_FP(fp, rh_arch_rec_next(fp)));
    else
        s.cut = 1;
    rh_ws_result(&s, o);
    errno = e;
}

RH_WALK_ALIGNED void rh_stack_walk_cached(void *fp, unsigned kind, unsigned max, struct rh_walk *w)
{
    rh_stack_walk_body(fp, kind, max, w, 1);
}

void rh_stack_walk(void *fp, unsigned kind, unsigned max, struct rh_walk *w)
{
    rh_stack_walk_inline(fp, kind, max, w);
}

uint8_t *rh_stack_encode(void *fp, uint32_t nframes, uint8_t *p)
{
    int e = errno;
    const uintptr_t *f = (const uintptr_t *)fp;
    struct rh_ws s = {0, 0, 0, 1, nframes, 0, p, 0, NULL, 0};
    uintptr_t ret0 = rh_arch_ret(f[1]);
    p = rip_put_varint(p, rip_zigzag((int64_t)ret0));
    s.enc = p;
    s.prev = ret0;
    if (nframes > 1 && rh_ws_start(&s, (uintptr_t)fp))
        rh_ws_run(&s, ret0, RH_UW_START_SP((uintptr_t)fp),
                  RH_UW_START_FP((uintptr_t)fp, rh_arch_rec_next((uintptr_t)fp)));
    errno = e;
    return s.enc;
}

uint32_t rh_stack_lookup(struct rh_stack_table *t, uint64_t hash, int *is_new)
{
    uint64_t i = hash & t->mask;
    *is_new = 0;
    for (;;) {
        struct rh_stack_entry *e = &t->entries[i];
        uint64_t h = __atomic_load_n(&e->hash, __ATOMIC_ACQUIRE);
        if (h == hash) {
            /* Wait for the inserter to publish the id. The entry can also be
             * emptied under us: a recording's table whose pages were given
             * back (rh_file_create_locked) reads as zeroes to a thread still
             * in flight from that recording. Then its hash is gone too, and
             * the probe starts over here rather than waiting for an id that
             * will never come. */
            uint32_t id;
            unsigned spins = 0;
            while (!(id = __atomic_load_n(&e->id, __ATOMIC_ACQUIRE))) {
                if (__atomic_load_n(&e->hash, __ATOMIC_ACQUIRE) != hash)
                    break;
                if (++spins > 100)
                    sched_yield();
                else
                    rh_cpu_relax();
            }
            if (id)
                return id;
            continue;
        }
        if (h == 0) {
            if (__atomic_load_n(&t->count, __ATOMIC_RELAXED) >= t->limit) {
                if (!__atomic_exchange_n(&t->warned, 1, __ATOMIC_RELAXED))
                    rh_warn("stack table full (%llu stacks); new stacks are recorded as id 0",
                            (unsigned long long)t->limit);
                return 0;
            }
            uint64_t expected = 0;
            if (__atomic_compare_exchange_n(&e->hash, &expected, hash, 0, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE)) {
                __atomic_fetch_add(&t->count, 1, __ATOMIC_RELAXED);
                uint32_t id = __atomic_fetch_add(&t->next_id, 1, __ATOMIC_RELAXED);
                __atomic_store_n(&e->id, id, __ATOMIC_RELEASE);
                *is_new = 1;
                return id;
            }
            if (expected == hash)
                continue; /* someone inserted our hash here: read its id */
        }
        i = (i + 1) & t->mask;
    }
}

/* ---- CPU samples ----------------------------------------------
 * The walk of a sample starts from the registers the kernel saved when the
 * timer's signal interrupted the thread: frame 0 is the interrupted
 * instruction, taken as ip + 1 (so that the rule lookup and the converter,
 * which subtract 1 from return addresses, land on it), rsp is exact and the
 * CFI rule at ip tells how to reach the caller, prologues and frameless leaf
 * functions included. The bounds are the thread's stack (or the sigaltstack
 * the interrupted code ran on); rh_cpu.c makes sure they are known before it
 * walks, since computing them may allocate. */

/* Runs the walk of a sample into s (frame 0 already taken). */
static void rh_ws_regs(struct rh_ws *s, uintptr_t ip, uintptr_t sp, uintptr_t bp)
{
    s->lo = rh_tls_stack_lo;
    s->hi = rh_tls_stack_hi;
    if ((sp & 7u) || !rh_ws_stack_of(s, sp)) {
        s->cut = 1;
        return;
    }
    rh_ws_run(s, ip + 1, sp, bp);
}

void rh_stack_walk_regs(uintptr_t ip, uintptr_t sp, uintptr_t bp, unsigned kind, unsigned max,
                        struct rh_walk *w, uintptr_t *pcs, uint32_t cap)
{
    int e = errno;
    uint64_t h = ip + 1;
    struct rh_ws s = {0, 0, h, 1, max ? max : 1, 0, NULL, 0, pcs, cap};
    if (pcs && cap)
        pcs[0] = ip + 1;
    if (max > 1)
        rh_ws_regs(&s, ip, sp, bp);
    w->hash = rh_walk_final(s.h, kind, s.n, s.cut);
    w->nframes = s.n;
    w->cut = s.cut;
    errno = e;
}

uint8_t *rh_stack_encode_regs(uintptr_t ip, uintptr_t sp, uintptr_t bp, uint32_t nframes,
                              uint8_t *p)
{
    int e = errno;
    struct rh_ws s = {0, 0, 0, 1, nframes, 0, NULL, 0, NULL, 0};
    p = rip_put_varint(p, rip_zigzag((int64_t)(ip + 1)));
    s.enc = p;
    s.prev = ip + 1;
    if (nframes > 1)
        rh_ws_regs(&s, ip, sp, bp);
    errno = e;
    return s.enc;
}

uint8_t *rh_stack_encode_list(const uintptr_t *pcs, uint32_t n, uint8_t *p)
{
    uint64_t prev = 0;
    for (uint32_t i = 0; i < n; i++) {
        p = rip_put_varint(p, rip_zigzag((int64_t)(pcs[i] - prev)));
        prev = pcs[i];
    }
    return p;
}
