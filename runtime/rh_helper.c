/* rh_helper.c: the runtime's helper thread (session layer).
 *
 * Its first duty, in every recording to a file (RHEAPER_PREFAULT=0 turns it
 * off): the recording threads' next chunks. A thread that opens a chunk
 * (not its first) asks for the next one (rh_writer.c, "spare chunks"); the
 * helper, woken by the request's futex wake, maps it, writes its header and
 * the thread's name and supplies its pages with MADV_POPULATE_WRITE, so the
 * thread's chunk switch costs no system call and its writes no page fault.
 * It is started when a recording thread has asked for its first prepared
 * chunk (its second chunk's open), and then only at a safe point: on the way
 * out of a recorded call of the malloc family (rh_record.c's slow entries),
 * whose real function has returned, so the thread holds no allocator lock
 * while creating the thread allocates its TLS. A chunk is also opened from
 * an mmap's record, which an allocator makes under its own locks (jemalloc
 * linked in statically maps its first memory under its init lock, from its
 * constructor); the start waits for the next malloc-family call there. It
 * leaves when no recording asks for chunks and the process is not armed (the
 * next request starts it again); while a recording runs and nobody asks, it
 * sleeps in a futex wait (one wake-up a second to see the recording end). A
 * program that never fills its first chunk never sees it.
 *
 * Its second duty, armed mode (RHEAPER_ENABLE=signal, `rheaper record -p PID`) toggles
 * recording from a signal whose handler only counts the request and sets
 * RH_CTL in rh_state (rh_control.c). Without help the toggle happens at the
 * next hooked call of any thread, which never comes in a server that has
 * stopped allocating (memcached with a full cache reuses its slabs). The
 * helper is one thread per armed process that wakes every RH_HELPER_POLL_NS,
 * sees RH_CTL and runs the very control work a hooked call would
 * (rh_ctl_run, rh_api.c, handed over when the helper starts), under the same
 * locks: rh_ctl_lock (tried, never waited for), then rh_shared_lock and
 * rh_prof_lock. It writes into no other
 * thread's chunk: a start creates the file and bumps the epoch, which each
 * thread notices at its next event; a stop seals the shared writer (the
 * helper has no slot of its own) and writes the trailer, as a toggle from a
 * thread that never recorded does.
 *
 * The runtime's rules hold in it:
 *   - it never records: its guard is set for its whole life, so anything it
 *     reaches that is wrapped passes through unrecorded, and it takes no slot,
 *     so it is in no profile's thread list; the CPU sampler leaves it out;
 *     the chunks it makes are the recording threads' (their slot, tid, seq
 *     and name);
 *   - every system call of its own is a raw one (futex, nanosleep, prctl), so
 *     it has no cancellation point, and the program cannot cancel it anyway
 *     (it never learns its pthread_t);
 *   - it is created with every signal blocked (pthread_sigmask, which leaves
 *     glibc's internal set*id and cancel signals alone, so a setuid in any
 *     thread still changes the helper's credentials too): process signals go
 *     to the program's threads, the toggle signal included;
 *   - it holds no descriptor between operations (the control work opens and
 *     closes its files), and no runtime lock while it sleeps;
 *   - fork: the child has no helper; the first control work of the child
 *     (rh_ctl_fork_child requests some) starts the child's own, from a normal
 *     context, not from a fork handler (pthread_create is not
 *     async-signal-safe), and without waiting for it (a child about to exec
 *     pays only the clone). A vfork child never starts one, nor the runtime
 *     at all when its call is the process's first (rh_api.c checks the pid
 *     the memory belongs to).
 *   - exit, _exit, exec and daemon pause it before their exit work
 *     (rh_helper_pause), so a toggle arriving then cannot start a recording
 *     after the final trailer.
 * What the program can see: one more thread in /proc/self/task, named
 * "rheaper" (comm), while a recording runs or the process is armed, and
 * glibc no longer thinks the process single-threaded (so, for instance,
 * unshare(CLONE_NEWUSER) refuses it). An armed helper stops when the runtime
 * stands aside (the program took the signal) and no recording runs; while armed it
 * cannot stop when idle, because a signal handler cannot start a thread, so
 * it naps instead: ten wake-ups a second, a futex wait each.
 *
 * It is created with libc's own pthread_create (rh_sys_thread_create), never
 * the program's wrap of it, with the default stack size (glibc carves the
 * program's static TLS out of the stack), and no CPU listing runs until it
 * has stored its thread id (RH_TID_STARTING), so the sampler never gives it
 * a timer.
 *
 * What stays visible to the program, beyond the thread itself: a program
 * that changes credentials with raw syscall(SYS_setresuid) (or any raw
 * set*id) from one thread, or installs a seccomp filter without
 * SECCOMP_FILTER_FLAG_TSYNC, changes only its calling thread: the helper
 * keeps the old credentials or no filter, and the control work it runs
 * (the recording's file, the marker) is done with those. glibc's setuid and
 * friends change every thread, the helper included.
 *
 * When the thread cannot be created (RLIMIT_NPROC, a pids cgroup, a seccomp
 * filter), one line on stderr and toggles wait for the next allocation as
 * they always did; `rheaper record` cancels one that never takes effect.
 *
 * The loop is written so a later coarse time word can be ticked here too: a
 * tick would go where the nap returns, with the nap shortened while threads
 * record.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "rh_session.h"
#include "rh_helper.h"

/* How often an armed process's helper looks at RH_CTL: a toggle takes
 * effect within this. */
#define RH_HELPER_POLL_NS 100000000L
/* How long the exit work waits for control work in progress (ms). */
#define RH_HELPER_PAUSE_MS 500

static int rh_helper_pid;        /* atomic: pid whose helper runs or starts (0: none) */
static int rh_helper_failed_pid; /* atomic: pid in which it could not be created */
static int rh_helper_paused_pid; /* atomic: pid whose exit work has begun */
static int rh_helper_busy;       /* atomic: the helper is inside the control work */
static uint32_t rh_helper_named;         /* futex word: 1 once it has its name */
static void (*rh_helper_work)(void);  /* the control work (rh_ctl_run) */

static int rh_helper_getpid(void)
{
    return rh_sys_getpid();
}

/* Whether the helper has work left in this process: armed mode's toggles, or
 * the chunks of an open recording. */
static int rh_helper_needed(void)
{
    return rh_ctl_signal_armed() || rh_spare_active();
}

/* The helper's life: make the recording threads' next chunks ready when they
 * ask (rh_spare_prepare), nap until the next request (or RH_HELPER_POLL_NS
 * while armed), and run the control work when RH_CTL asks for it, unless the
 * exit work has begun. Ends when the runtime stands aside and no recording
 * asks for chunks (started again with the next recording's file). */
static void *rh_helper_main(void *arg)
{
    int pid = (int)(intptr_t)arg;
    /* first: a CPU listing waits for this (RH_TID_STARTING) */
    __atomic_store_n(&rh_runtime_tid, rh_gettid(), __ATOMIC_RELEASE);
    rh_guard = RH_GUARD_CALL; /* for good: nothing it reaches is recorded */
    rh_barrier();
    rh_sys_set_thread_name("rheaper");
    __atomic_store_n(&rh_helper_named, 1, __ATOMIC_RELEASE);
    rh_sys_futex_wake(&rh_helper_named);
    for (;;) {
        uint32_t seen = rh_spare_seen();
        while (__atomic_load_n(&rh_helper_paused_pid, __ATOMIC_ACQUIRE) != pid &&
               rh_spare_prepare())
            ;
        int armed = rh_ctl_signal_armed();
        if (!armed && !rh_spare_active()) {
            /* idle: gone, and started again by the next chunk request
             * (rh_helper_ensure_chunks), unless one began just now */
            int cur = pid;
            __atomic_compare_exchange_n(&rh_helper_pid, &cur, 0, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED);
            if (!rh_helper_needed())
                break;
            cur = 0;
            if (!__atomic_compare_exchange_n(&rh_helper_pid, &cur, pid, 0, __ATOMIC_ACQ_REL,
                                             __ATOMIC_RELAXED))
                break; /* another one started meanwhile */
            continue;
        }
        rh_spare_wait(seen, armed ? (unsigned)(RH_HELPER_POLL_NS / 1000000L) : 1000u);
        if (!armed)
            continue;
        if (__atomic_load_n(&rh_helper_paused_pid, __ATOMIC_ACQUIRE) == pid)
            continue;
        if (!(__atomic_load_n(&rh_state, __ATOMIC_ACQUIRE) & RH_CTL))
            continue;
        /* busy, then the pause check: rh_helper_pause stores its pid, then
         * reads busy, so one of the two sees the other (both seq_cst) */
        __atomic_store_n(&rh_helper_busy, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&rh_helper_paused_pid, __ATOMIC_SEQ_CST) != pid)
            rh_helper_work();
        __atomic_store_n(&rh_helper_busy, 0, __ATOMIC_SEQ_CST);
    }
    /* only its own id: a helper started since has stored its own */
    uint32_t me = rh_gettid();
    __atomic_compare_exchange_n(&rh_runtime_tid, &me, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
    return NULL;
}

/* Starts this process's helper, running work when RH_CTL asks, unless one
 * runs or starts in this pid, it could not be created here, or the exit work
 * has begun. The callers' contracts: rh_helper_ensure, rh_helper_ensure_chunks. */
static __attribute__((noinline)) void rh_helper_start(void (*work)(void))
{
    int pid = rh_helper_getpid();
    int cur = __atomic_load_n(&rh_helper_pid, __ATOMIC_ACQUIRE);
    if (cur == pid || __atomic_load_n(&rh_helper_failed_pid, __ATOMIC_RELAXED) == pid ||
        __atomic_load_n(&rh_helper_paused_pid, __ATOMIC_ACQUIRE) == pid)
        return;
    /* one thread starts it; in a fork child cur is the parent's pid */
    if (!__atomic_compare_exchange_n(&rh_helper_pid, &cur, pid, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
        return;
    int fork_child = cur != 0; /* a parent's helper ran: a fork child's */
    rh_helper_work = work;
    __atomic_store_n(&rh_helper_busy, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&rh_helper_named, 0, __ATOMIC_RELEASE);
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc == 0) {
        /* The default stack size: glibc carves the program's static TLS out
         * of it, so a small one may leave the thread almost nothing. */
        (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old); /* the new thread inherits it */
        pthread_t th;
        /* No CPU listing runs between the thread's birth and its id's
         * store: a listing waits for it (rh_cpu_scan), so the sampler never
         * gives it a timer. */
        rh_cpu_scan_hold(1);
        __atomic_store_n(&rh_runtime_tid, RH_TID_STARTING, __ATOMIC_RELEASE);
        rc = rh_sys_thread_create(&th, &attr, rh_helper_main, (void *)(intptr_t)pid);
        if (rc != 0)
            __atomic_store_n(&rh_runtime_tid, 0, __ATOMIC_RELEASE);
        rh_cpu_scan_hold(0);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        (void)pthread_attr_destroy(&attr);
    }
    if (rc == 0 && !fork_child) {
        /* Until it has its name it looks like a program thread in
         * /proc/self/task: the process's first helper is waited for, a
         * futex wait of at most 100 ms (microseconds in practice). Not in a
         * fork child, which may be about to exec. */
        for (int i = 0; i < 10 && !__atomic_load_n(&rh_helper_named, __ATOMIC_ACQUIRE); i++)
            rh_sys_futex_wait(&rh_helper_named, 0, 10);
    }
    if (rc != 0) {
        __atomic_store_n(&rh_helper_failed_pid, pid, __ATOMIC_RELAXED);
        rh_warn("cannot start the helper thread (%s): a toggle takes effect at the process's "
                "next allocation",
                rh_arch_strerror(rc));
    }
}

void rh_helper_ensure(void (*work)(void))
{
    if (work && rh_ctl_signal_armed())
        rh_helper_start(work);
}

void rh_helper_ensure_chunks(void (*work)(void))
{
    if (!work || !rh_spare_active())
        return;
    /* Inside the program's malloc call: every signal blocked first, then the
     * guard a call (pthread_create allocates), so a handler's allocation
     * waits until the guard is the malloc family's again and is counted as
     * the re-entry it is, instead of passing the creation or the wait for the
     * name unseen. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int g = rh_guard_enter();
    rh_helper_start(work);
    rh_guard_leave(g);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void rh_helper_pause(void)
{
    int pid = rh_helper_getpid();
    __atomic_store_n(&rh_helper_paused_pid, pid, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&rh_helper_pid, __ATOMIC_ACQUIRE) != pid)
        return;
    /* Bounded: the helper may wait on something this thread holds (an
     * allocator lock when _exit runs in a signal handler); its locks are
     * only taken for short sections, and the exit work takes them after.
     * Past the bound the pause still holds: the control work gives up once
     * the exit work has begun (rh_ctl_run, and rh_enable_ctl under
     * rh_prof_lock, which the exit flush takes). */
    for (int i = 0; i < RH_HELPER_PAUSE_MS && __atomic_load_n(&rh_helper_busy, __ATOMIC_SEQ_CST);
         i++)
        rh_sys_nanosleep(1000000L);
}

void rh_helper_resume(void)
{
    int pid = rh_helper_getpid();
    __atomic_compare_exchange_n(&rh_helper_paused_pid, &pid, 0, 0, __ATOMIC_ACQ_REL,
                                __ATOMIC_RELAXED);
}
