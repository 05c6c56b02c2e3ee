/* rh_cpu.c: CPU sampling: per-thread CPU-time timers and the sampling
 * signal's handler.
 *
 * With cpu_hz > 0 (RHEAPER_CPU_HZ, struct rheaper_config) every thread of the
 * process has a POSIX timer on its own CPU-time clock that sends cpu_signal
 * (SIGPROF by default) to that thread (SIGEV_THREAD_ID) every 1/cpu_hz s of
 * the thread's CPU time, so each thread is sampled in proportion to its own
 * CPU use. The threads are found by listing /proc/self/task (rh_cpu_scan),
 * whoever made them and whenever they started:
 *   - when sampling starts (rh_cpu_start): every thread then running, those
 *     started before tracking was enabled included, from that moment;
 *   - when the program starts a thread through its pthread_create (the shim,
 *     wrap/shims_signal.c): the new thread, from the moment pthread_create
 *     returns, and any thread a library started with its own pthread_create
 *     since the last listing;
 *   - a thread's first hooked call (its first allocation) registers it if no
 *     listing has yet.
 * A thread a shared library starts on its own after sampling began, and that
 * never allocates, is sampled from the next of those events. Timers of
 * threads that have exited are deleted at the next listing, and by a pthread
 * key destructor for threads that registered themselves. The timers run only
 * while a recording is on: rh_cpu_start and rh_cpu_stop are called where
 * recording starts and stops (rh_api.c: the environment, the API, the toggle
 * signal of `rheaper record -p`), so they follow the heap recording. No
 * function of the runtime runs between a thread's start and the program's
 * start routine, so no frame of the runtime is in the thread's stacks.
 *
 * The registry of known threads is a fixed array under a spin lock that only
 * normal contexts take (with the guard set); the handler never takes it.
 *
 * The handler is the one place where the runtime works inside a signal
 * handler. It does only async-signal-safe work, and nothing that blocks on
 * its own thread:
 *   - when the guard is set, the thread is inside the runtime and may be in
 *     the middle of writing a record into the very chunk the sample would go
 *     to: the handler only adds the periods to the thread's carry, which the
 *     end of the hooked call writes as a sample of that call's stack
 *     (rh_cpu_carry_flush, a normal context) or the thread's next sample
 *     adds to its own. Periods still carried when the file closes count as
 *     dropped. Returning at once is also what makes the rest safe: the
 *     thread holds no runtime lock, no chunk is half-written;
 *   - the walk is the non-faulting one (rh_stack.c), from the interrupted
 *     registers; the CFI lookup uses _dl_find_object, which takes no lock;
 *   - a thread without a slot or chunk gets one as on its first event (spin
 *     locks held only by other threads, raw system calls, no allocation), but
 *     only when the file is open (creating it would take the loader's lock);
 *   - a thread whose stack bounds are unknown (computing them allocates) is
 *     walked within [sp, its thread descriptor): glibc keeps the descriptor
 *     (pthread_self()) at the top of the thread's stack block, above every
 *     frame, in the same mapping. The main thread's bounds cost nothing.
 * The sample is one EXT CPUSAMPLE record (FORMAT.md "CPU
 * samples"), after the STACK record of a new stack, in the thread's own chunk.
 *
 * The program wins the signal: if it already has a handler for cpu_signal
 * when sampling would start, or installs one later (sigaction or signal, seen
 * by the shim), rheaper warns once, deletes its timers and stands aside.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "rh_hot.h"

/* Threads the registry holds; threads beyond it are not sampled. */
#define RH_CPU_MAX_THREADS 4096

/* The clock id of thread tid's CPU time (the kernel's encoding, as glibc's
 * pthread_getcpuclockid builds it: CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED). */
#define RH_THREAD_CPUCLOCK(tid) ((clockid_t)((~(unsigned)(tid)) << 3) | 6)

struct rh_cpu_thr {
    int tid;       /* 0: free entry */
    int timer;     /* kernel timer id, -1 when none */
    unsigned seen; /* the listing (rh_cpu_gen) that last found the thread */
};

static struct rh_cpu_thr rh_cpu_thr[RH_CPU_MAX_THREADS];
static int rh_cpu_nthr;  /* entries in use at the front, some may be free (tid 0) */
static int rh_cpu_lock;  /* the registry; normal contexts only */
static int rh_cpu_on;    /* atomic: timers run, samples are taken */
static int rh_cpu_reg;   /* atomic: the registry is in use (threads are registered) */
static int rh_cpu_ready; /* atomic: our handler is installed */
static int rh_cpu_tried; /* the handler's installation was attempted */
static int rh_cpu_aside; /* atomic: the program owns the signal */
static int rh_cpu_full_warned;
static unsigned rh_cpu_gen; /* listings of /proc/self/task made; rh_cpu_scan_lock */
static int rh_cpu_scan_lock; /* one listing at a time; taken before rh_cpu_lock */
static uint64_t rh_cpu_samples, rh_cpu_dropped; /* atomic, per file */
/* Periods carried by threads (rh_tls_cpu_carry) and not yet written: lost if
 * the file closes first, so they count as dropped in its trailer. Atomic. */
static uint64_t rh_cpu_carried;
static pthread_key_t rh_cpu_key;
static int rh_cpu_key_ok;
/* Periods whose signal came while the thread was inside the runtime: the end
 * of the hooked call (rh_cpu_carry_flush) or the thread's next sample writes
 * them (the handler's own thread only). */
RH_HIDDEN __thread unsigned rh_tls_cpu_carry __attribute__((tls_model("local-exec")));
/* The file (rh_epoch) the carried periods belong to: a carry from an earlier
 * file was counted as dropped there and is not written into the next. */
static __thread uint32_t rh_tls_carry_epoch __attribute__((tls_model("local-exec")));
/* Set while the handler samples its own thread. */
static __thread int rh_tls_in_handler __attribute__((tls_model("local-exec")));
/* The calling thread's registry entry + 1; 0 when unknown. */
static __thread int rh_tls_cpu __attribute__((tls_model("local-exec")));


void rh_cpu_counts(uint64_t *samples, uint64_t *dropped)
{
    *samples = __atomic_load_n(&rh_cpu_samples, __ATOMIC_RELAXED);
    *dropped = __atomic_load_n(&rh_cpu_dropped, __ATOMIC_RELAXED) +
               __atomic_load_n(&rh_cpu_carried, __ATOMIC_RELAXED);
}

void rh_cpu_counts_reset(void)
{
    __atomic_store_n(&rh_cpu_samples, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&rh_cpu_dropped, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&rh_cpu_carried, 0, __ATOMIC_RELAXED);
}

/* Counts n periods that no sample holds. */
static inline void rh_cpu_drop_n(unsigned n)
{
    __atomic_fetch_add(&rh_cpu_dropped, n, __ATOMIC_RELAXED);
}

/* ---- the handler ---------------------------------------------------------- */

/* Bytes of one CPUSAMPLE record: byte 0, a time varint, subtype, length and
 * the stack id. */
#define RH_CPU_RECORD (1 + 10 + 1 + 1 + 10)
/* A STACK record's fixed part (as rh_record.c). */
#define RH_CPU_STACK_FIXED (1 + 3 * 10)
/* Frames the walk keeps on the handler's stack (1 KiB), so that a new stack
 * is encoded without walking it again; deeper stacks (RHEAPER_MAX_STACK_DEPTH
 * above the default 64) are walked twice. Frame 0 is the interrupted
 * instruction, so nearly every sample's stack is new. */
#define RH_CPU_KEEP_FRAMES 128

/* Writes one sample of the interrupted state (ip, sp, bp) into the calling
 * thread's chunk. The guard is set, the thread was outside the runtime. */
static int rh_cpu_sample_on(uintptr_t ip, uintptr_t sp, uintptr_t bp, unsigned overrun);

/* Writes one sample of the interrupted state (ip, sp, bp), worth 1 + overrun
 * periods (the kernel's overrun and the periods carried over from signals
 * that came inside the runtime), into the calling thread's chunk; the periods
 * of a sample that cannot be written count as dropped. The guard is set, the
 * thread was outside the runtime. */
static void rh_cpu_sample(uintptr_t ip, uintptr_t sp, uintptr_t bp, unsigned overrun)
{
    if (!__atomic_load_n(&rh_prof.open, __ATOMIC_ACQUIRE)) {
        rh_cpu_drop_n(1 + overrun);
        return;
    }
    int borrowed = 0;
    if (rh_unlikely(!rh_tls_stack_hi)) {
        if (rh_gettid() == (uint32_t)getpid()) {
            rh_stack_bounds_compute(); /* the main thread's: no allocation */
        } else {
            /* pthread_getattr_np allocates: not in a handler. The frames lie
             * between sp and the thread's descriptor, at the top of its
             * stack block; the bounds hold for this walk only. */
            uintptr_t top = (uintptr_t)pthread_self();
            if (sp == 0 || top <= sp || top - sp > ((uintptr_t)1 << 30)) {
                rh_cpu_drop_n(1 + overrun);
                return;
            }
            rh_tls_stack_lo = sp;
            rh_tls_stack_hi = top;
            borrowed = 1;
        }
    }
    if (rh_cpu_sample_on(ip, sp, bp, overrun) != 0)
        rh_cpu_drop_n(1 + overrun);
    if (borrowed) {
        rh_tls_stack_lo = 0;
        rh_tls_stack_hi = 0;
    }
}

/* rh_cpu_sample with the thread's stack bounds known. Returns 0, or -1 when
 * nothing was written. */
static int rh_cpu_sample_on(uintptr_t ip, uintptr_t sp, uintptr_t bp, unsigned overrun)
{
    uint64_t t = rh_now() >> rh_clock_shift;
    struct rh_slot *s = rh_tls_slot;
    if (!s || !s->w.chunk || s->w.epoch != __atomic_load_n(&rh_epoch, __ATOMIC_ACQUIRE)) {
        int drop;
        s = rh_thread_prepare(t, &drop);
        if (!s)
            return -1;
    }
    struct rh_writer *w = &s->w;
    struct rh_walk wk;
    uintptr_t pcs[RH_CPU_KEEP_FRAMES];
    rh_stack_walk_regs(ip, sp, bp, RIP_KIND_CPU, w->stacks->max_depth, &wk, pcs,
                       RH_CPU_KEEP_FRAMES);
    uint32_t id = rh_stack_home_id(w->stacks, wk.hash);
    if (!id) {
        int is_new;
        id = rh_stack_lookup(w->stacks, wk.hash, &is_new);
        if (!id)
            return -1;
        if (is_new) {
            if (rh_writer_reserve(w, RH_CPU_STACK_FIXED + (size_t)wk.nframes * 10, t) != 0)
                return -1;
            uint8_t *q = w->pos;
            *q++ = RIP_OP_STACK;
            q = rip_put_varint(q, id);
            q = rip_put_varint(q, RIP_KIND_CPU);
            q = rip_put_varint(q, ((uint64_t)wk.nframes << 1) | wk.cut);
            if (wk.nframes <= RH_CPU_KEEP_FRAMES) /* nearly every sample's stack is new */
                q = rh_stack_encode_list(pcs, wk.nframes, q);
            else
                q = rh_stack_encode_regs(ip, sp, bp, wk.nframes, q);
            w->pos = q;
            rh_writer_commit(w);
        }
    }
    if (rh_writer_reserve(w, RH_CPU_RECORD, t) != 0)
        return -1;
    uint8_t body[10];
    uint8_t *e = rip_put_varint(body, id);
    if (overrun) /* periods the kernel delivered late (above its tick rate) */
        e = rip_put_varint(e, overrun > 0xffffff ? 0xffffff : overrun);
    uint8_t n = (uint8_t)(e - body);
    uint8_t *q = rh_put_head(w, w->pos, RIP_OP_EXT, 0, t);
    *q++ = RIP_EXT_CPUSAMPLE;
    *q++ = n;
    memcpy(q, body, n);
    rh_event_done(w, q + n);
    __atomic_fetch_add(&rh_cpu_samples, 1, __ATOMIC_RELAXED);
    return 0;
}

/* Writes the calling thread's carried periods (rh_hooks.h, rh_hook_end) as
 * one sample of the current stack, walked from the hooked call's frames: the
 * converter drops the runtime's frames, so the sample is charged to the
 * program's call of the allocation function, where the time was spent.
 * Called with the guard clear, after the call's record is complete; a signal
 * that comes meanwhile carries again. */
void rh_cpu_carry_flush(void)
{
    rh_guard = RH_GUARD_CALL;
    rh_barrier();
    unsigned carry = rh_tls_cpu_carry;
    rh_tls_cpu_carry = 0;
    uint32_t ep = (uint32_t)__atomic_load_n(&rh_epoch, __ATOMIC_ACQUIRE);
    if (carry && rh_tls_carry_epoch == ep) {
        __atomic_fetch_sub(&rh_cpu_carried, carry, __ATOMIC_RELAXED);
        if (!__atomic_load_n(&rh_cpu_on, __ATOMIC_ACQUIRE) ||
            !__atomic_load_n(&rh_prof.open, __ATOMIC_ACQUIRE)) {
            rh_cpu_drop_n(carry);
        } else {
            if (!rh_tls_stack_hi)
                rh_stack_bounds_compute();
            uintptr_t rec = rh_arch_rec_of_fp((uintptr_t)__builtin_frame_address(0));
            uintptr_t ret = (uintptr_t)__builtin_return_address(0);
            if (rh_cpu_sample_on(ret - 1, rec + RH_FRAME_REC, rh_arch_rec_next(rec), carry - 1) != 0)
                rh_cpu_drop_n(carry);
        }
    }
    rh_barrier();
    rh_guard = 0;
}

static void rh_cpu_handler(int sig, siginfo_t *si, void *ucv)
{
    (void)sig;
    int e = errno;
    if (si->si_code != SI_TIMER || !__atomic_load_n(&rh_cpu_on, __ATOMIC_ACQUIRE))
        goto out;
    uint32_t ep = (uint32_t)__atomic_load_n(&rh_epoch, __ATOMIC_ACQUIRE);
    if (rh_tls_cpu_carry && rh_tls_carry_epoch != ep)
        rh_tls_cpu_carry = 0; /* an earlier file's, counted there */
    if (rh_guard) {
        /* inside the runtime: its chunk may be mid-record. The periods carry
         * over to the thread's next sample, so its CPU time stays whole. */
        unsigned k = 1u + (si->si_overrun > 0 ? (unsigned)si->si_overrun : 0u);
        rh_tls_cpu_carry += k;
        rh_tls_carry_epoch = ep;
        __atomic_fetch_add(&rh_cpu_carried, k, __ATOMIC_RELAXED);
        goto out;
    }
    rh_guard = RH_GUARD_CALL;
    rh_barrier();
    uintptr_t pc, sp, fp;
    if (rh_arch_uc_regs(ucv, &pc, &sp, &fp) == 0) {
        unsigned carry = rh_tls_cpu_carry;
        rh_tls_cpu_carry = 0;
        if (carry)
            __atomic_fetch_sub(&rh_cpu_carried, carry, __ATOMIC_RELAXED);
        rh_tls_in_handler = 1;
        rh_cpu_sample(pc, sp, fp, (si->si_overrun > 0 ? (unsigned)si->si_overrun : 0u) + carry);
        rh_tls_in_handler = 0;
    } else {
        rh_cpu_drop_n(1); /* a port whose ucontext registers rh_arch.h does not know */
    }
    rh_barrier();
    rh_guard = 0;
out:
    errno = e;
}

/* ---- timers --------------------------------------------------------------- */

/* Creates and arms the timer of entry e. Registry lock held. */
static void rh_cpu_timer_start(struct rh_cpu_thr *e)
{
    if (e->timer >= 0 || !e->tid)
        return;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = rh_cfg.cpu_signal;
    RH_SIGEV_TID(sev) = e->tid;
    int id = -1;
    if (rh_sys_timer_create(RH_THREAD_CPUCLOCK(e->tid), &sev, &id) != 0)
        return; /* the thread is gone, or no timers left: not sampled */
    unsigned hz = rh_cfg.cpu_hz ? rh_cfg.cpu_hz : 1;
    long ns = (long)(1000000000ull / hz);
    struct itimerspec its;
    its.it_interval.tv_sec = ns / 1000000000;
    its.it_interval.tv_nsec = ns % 1000000000;
    its.it_value = its.it_interval;
    if (rh_sys_timer_settime(id, &its) != 0) {
        rh_sys_timer_delete(id);
        return;
    }
    e->timer = id;
}

static void rh_cpu_timer_stop(struct rh_cpu_thr *e)
{
    if (e->timer >= 0) {
        rh_sys_timer_delete(e->timer);
        e->timer = -1;
    }
}

/* The entry of thread tid, added when it has none. Returns its index, or -1
 * when the registry is full. Registry lock held. */
static int rh_cpu_add(int tid)
{
    int k = -1;
    for (int i = 0; i < rh_cpu_nthr; i++) {
        if (rh_cpu_thr[i].tid == tid)
            return i;
        if (k < 0 && !rh_cpu_thr[i].tid)
            k = i;
    }
    if (k < 0 && rh_cpu_nthr < RH_CPU_MAX_THREADS)
        k = rh_cpu_nthr++;
    if (k >= 0) {
        rh_cpu_thr[k].tid = tid;
        rh_cpu_thr[k].timer = -1;
        rh_cpu_thr[k].seen = 0;
    }
    return k;
}

struct rh_dirent64 {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

/* Registers the threads tids[0, n) of the listing gen: each gets an entry
 * (and its timer when sampling is on); a timer the kernel disarmed (its
 * thread exited and the id came back for a new one) is made again. Registry
 * lock held. */
static void rh_cpu_apply(const int *tids, int n, unsigned gen, int *full)
{
    int on = __atomic_load_n(&rh_cpu_on, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        int k = rh_cpu_add(tids[i]);
        if (k < 0) {
            *full = 1;
            continue;
        }
        struct rh_cpu_thr *e = &rh_cpu_thr[k];
        e->seen = gen;
        if (on && e->timer >= 0) {
            struct itimerspec cur;
            if (rh_sys_timer_gettime(e->timer, &cur) != 0 ||
                (cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0))
                rh_cpu_timer_stop(e);
        }
        if (on)
            rh_cpu_timer_start(e);
    }
}

/* Lists /proc/self/task: every thread of the process gets an entry (and its
 * timer when sampling is on), and entries of threads that are gone are freed
 * with their timers. The directory is read outside the registry lock (which
 * a new thread's first hooked call takes), in batches applied under it; one
 * listing at a time (rh_cpu_scan_lock). Raw system calls only, no
 * allocation; about 3 KiB of stack. Guard set, no lock held. Returns 0, or -1
 * when the listing could not be read (entries of gone threads stay then). */
#define RH_CPU_SCAN_BATCH 256
static int rh_cpu_scan(void)
{
    rh_spin_lock(&rh_cpu_scan_lock);
    /* the helper is starting: its first act is to store its id (bounded: a
     * thread that never gets scheduled is taken for a program thread) */
    for (int i = 0; i < 2000 && __atomic_load_n(&rh_runtime_tid, __ATOMIC_ACQUIRE) ==
                                    RH_TID_STARTING; i++)
        rh_sys_nanosleep(50000L);
    int fd = rh_open_proc("/proc/self/task", O_RDONLY | O_DIRECTORY);
    if (fd < 0) {
        rh_spin_unlock(&rh_cpu_scan_lock);
        return -1;
    }
    unsigned gen = ++rh_cpu_gen;
    int full = 0, ok = 1, tids[RH_CPU_SCAN_BATCH], nt = 0;
    char buf[1024] __attribute__((aligned(8)));
    for (;;) {
        long n = rh_sys_getdents64(fd, buf, sizeof buf);
        if (n <= 0) {
            ok = n == 0;
            break;
        }
        for (long off = 0; off < n;) {
            const struct rh_dirent64 *d = (const struct rh_dirent64 *)(buf + off);
            off += d->reclen;
            unsigned tid = 0;
            if (rh_parse_uint(d->name, 1, 0x3fffffff, &tid) != 0)
                continue; /* "." and ".." */
            if (tid == __atomic_load_n(&rh_runtime_tid, __ATOMIC_ACQUIRE))
                continue; /* the runtime's helper thread is not the program's */
            tids[nt++] = (int)tid;
            if (nt == RH_CPU_SCAN_BATCH) {
                rh_spin_lock(&rh_cpu_lock);
                rh_cpu_apply(tids, nt, gen, &full);
                rh_spin_unlock(&rh_cpu_lock);
                nt = 0;
            }
        }
    }
    rh_sys_close(fd);
    rh_spin_lock(&rh_cpu_lock);
    rh_cpu_apply(tids, nt, gen, &full);
    for (int i = 0; ok && i < rh_cpu_nthr; i++)
        if (rh_cpu_thr[i].tid && rh_cpu_thr[i].seen != gen) {
            rh_cpu_timer_stop(&rh_cpu_thr[i]);
            rh_cpu_thr[i].tid = 0;
        }
    rh_spin_unlock(&rh_cpu_lock);
    rh_spin_unlock(&rh_cpu_scan_lock);
    if (full && !__atomic_exchange_n(&rh_cpu_full_warned, 1, __ATOMIC_RELAXED))
        rh_warn("CPU sampling: more than %d threads; later ones are not sampled",
                RH_CPU_MAX_THREADS);
    return ok ? 0 : -1;
}

/* The thread exits (its key destructor): delete its timer, free its entry. */
static void rh_cpu_thread_gone(void *v)
{
    (void)v;
    int k = rh_tls_cpu;
    if (!k)
        return;
    int g = rh_guard_enter();
    rh_spin_lock(&rh_cpu_lock);
    struct rh_cpu_thr *e = &rh_cpu_thr[k - 1];
    rh_cpu_timer_stop(e);
    e->tid = 0;
    rh_tls_cpu = 0;
    rh_spin_unlock(&rh_cpu_lock);
    rh_guard_leave(g);
}

void rh_cpu_thread_known(void)
{
    /* not from the handler (a listed thread's first slot is taken there):
     * registering takes the registry lock and arms a key */
    if (rh_tls_cpu || rh_tls_in_handler || !__atomic_load_n(&rh_cpu_reg, __ATOMIC_ACQUIRE))
        return;
    int g = rh_guard_enter();
    int tid = (int)rh_gettid();
    /* bounds now, in a normal context: the handler cannot compute them */
    if (!rh_tls_stack_hi)
        rh_stack_bounds_compute();
    rh_spin_lock(&rh_cpu_lock);
    int k = rh_cpu_add(tid); /* a listing may have found it already */
    if (k >= 0) {
        rh_tls_cpu = k + 1;
        if (__atomic_load_n(&rh_cpu_on, __ATOMIC_ACQUIRE))
            rh_cpu_timer_start(&rh_cpu_thr[k]);
    }
    rh_spin_unlock(&rh_cpu_lock);
    if (k < 0 && !__atomic_exchange_n(&rh_cpu_full_warned, 1, __ATOMIC_RELAXED))
        rh_warn("CPU sampling: more than %d threads; later ones are not sampled",
                RH_CPU_MAX_THREADS);
    if (k >= 0 && rh_cpu_key_ok)
        pthread_setspecific(rh_cpu_key, (void *)1);
    rh_guard_leave(g);
}

static void rh_cpu_install(void);

void rh_cpu_start(void)
{
    if (!rh_cfg.cpu_hz || !__atomic_load_n(&rh_cpu_reg, __ATOMIC_ACQUIRE))
        return;
    if (!rh_cpu_tried)
        rh_cpu_install();
    if (!rh_cpu_ready || __atomic_load_n(&rh_cpu_aside, __ATOMIC_ACQUIRE))
        return;
    int g = rh_guard_enter();
    rh_spin_lock(&rh_cpu_lock);
    __atomic_store_n(&rh_cpu_on, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < rh_cpu_nthr; i++)
        rh_cpu_timer_start(&rh_cpu_thr[i]);
    rh_spin_unlock(&rh_cpu_lock);
    rh_cpu_scan(); /* every thread running now, whoever started it and when */
    rh_guard_leave(g);
}

void rh_cpu_stop(void)
{
    if (!rh_cpu_ready)
        return;
    rh_spin_lock(&rh_cpu_lock);
    __atomic_store_n(&rh_cpu_on, 0, __ATOMIC_RELEASE);
    for (int i = 0; i < rh_cpu_nthr; i++)
        rh_cpu_timer_stop(&rh_cpu_thr[i]);
    rh_spin_unlock(&rh_cpu_lock);
}

/* ---- the signal ----------------------------------------------------------- */

void rh_cpu_init(void)
{
    if ((!rh_cfg.cpu_hz && rh_cfg.enable != RH_ENABLE_SIGNAL) ||
        __atomic_load_n(&rh_cpu_reg, __ATOMIC_ACQUIRE))
        return;
    if (pthread_key_create(&rh_cpu_key, rh_cpu_thread_gone) == 0)
        rh_cpu_key_ok = 1;
    __atomic_store_n(&rh_cpu_reg, 1, __ATOMIC_RELEASE);
    rh_cpu_thread_known();
}

/* Installs the handler, the first time a recording wants samples: a program
 * that never samples keeps its signal's disposition untouched. */
static void rh_cpu_install(void)
{
    rh_cpu_tried = 1;
    int sig = rh_cfg.cpu_signal;
    struct sigaction old, sa;
    memset(&old, 0, sizeof old);
    rh_ctl_self = 1;
    int rc = sigaction(sig, NULL, &old);
    if (rc == 0 && ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)) {
        rh_ctl_self = 0;
        __atomic_store_n(&rh_cpu_aside, 1, __ATOMIC_RELEASE);
        rh_warn("signal %d already has a handler in this program: rheaper stands aside and "
                "takes no CPU samples (choose another with RHEAPER_CPU_SIGNAL)",
                sig);
        return;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = rh_cpu_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    if (rc == 0)
        rc = sigaction(sig, &sa, NULL);
    rh_ctl_self = 0;
    if (rc != 0) {
        rh_warn("cannot install the handler of signal %d: %s; no CPU samples", sig,
                rh_arch_strerror(errno));
        return;
    }
    __atomic_store_n(&rh_cpu_ready, 1, __ATOMIC_RELEASE);
}

/* Called by wrap/shims_signal.c before the program sets a disposition for
 * sig: when it is the sampling signal, the program wins (one warning, the
 * timers deleted, no more samples). */
RH_HIDDEN void rh_cpu_program_sets(int sig)
{
    if (rh_ctl_self || sig <= 0 || sig != rh_cfg.cpu_signal)
        return;
    if (!__atomic_load_n(&rh_cpu_ready, __ATOMIC_ACQUIRE))
        return;
    if (__atomic_exchange_n(&rh_cpu_aside, 1, __ATOMIC_ACQ_REL))
        return;
    int g = rh_guard_enter();
    rh_cpu_stop();
    rh_warn("the program installs its own handler for signal %d: rheaper stands aside and "
            "takes no more CPU samples (choose another with RHEAPER_CPU_SIGNAL)",
            sig);
    rh_guard_leave(g);
}

void rh_cpu_fork(int phase)
{
    if (!__atomic_load_n(&rh_cpu_reg, __ATOMIC_ACQUIRE))
        return;
    if (phase == 0) {
        rh_spin_lock(&rh_cpu_scan_lock);
        rh_spin_lock(&rh_cpu_lock);
    } else if (phase == 1) {
        rh_spin_unlock(&rh_cpu_lock);
        rh_spin_unlock(&rh_cpu_scan_lock);
    } else {
        /* POSIX timers are not inherited: the child has none, and only the
         * forking thread. Its timer is made again if the child records. */
        int k = rh_tls_cpu;
        for (int i = 0; i < rh_cpu_nthr; i++)
            rh_cpu_thr[i].tid = 0, rh_cpu_thr[i].timer = -1;
        rh_cpu_nthr = 0;
        rh_tls_cpu = 0;
        __atomic_store_n(&rh_cpu_on, 0, __ATOMIC_RELEASE);
        rh_cpu_lock = 0;
        rh_cpu_scan_lock = 0;
        (void)k;
    }
}

void rh_cpu_scan_hold(int hold)
{
    if (hold)
        rh_spin_lock(&rh_cpu_scan_lock);
    else
        rh_spin_unlock(&rh_cpu_scan_lock);
}

/* ---- the pthread_create shim's side --------------------------------------- */

/* pthread_create for wrap/shims_signal.c: real is __real_pthread_create. The
 * thread starts the program's routine directly; once it exists, a listing of
 * /proc/self/task gives it (and any thread a library started on its own
 * since) its timer, from the moment pthread_create returns. */
RH_HIDDEN int rh_cpu_pthread_create(int (*real)(void *, const void *, void *, void *), void *thr,
                                    const void *attr, void *fn, void *arg)
{
    int rc = real(thr, attr, fn, arg);
    if (rc != 0 || !__atomic_load_n(&rh_cpu_on, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&rh_cpu_aside, __ATOMIC_ACQUIRE))
        return rc;
    int e = errno;
    int g = rh_guard_enter();
    rh_cpu_scan();
    rh_guard_leave(g);
    errno = e;
    return rc;
}
