/* rh_state.c: the runtime's state word, the reentrancy guard, the profile's
 * shared state, and the hook the session layer installs.
 *
 * The base of the runtime (docs/design.md, "Runtime"): everything above reads
 * rh_state (RH_UNINIT, RH_OFF, RH_ON, RH_CPUONLY, with the RH_CTL bit for
 * pending control work; rh_hooks.h), the calling thread's guard, and rh_prof,
 * the description of the current profile file that rh_prof_lock protects.
 * Their definitions live here so that the recording core and the session
 * layer share them without calling each other.
 *
 * The recording core calls nothing of the session layer (create and close,
 * lazy start, fork, control) directly. What it needs from there goes through
 * rh_session_call: the lazy start of the process (a pool's or a region's
 * first hooked call), the creation of a pending profile at the first event,
 * and the marker update after the core stopped tracking on a failure. The
 * session layer installs its function with rh_session_install at its start
 * (rh_init_lazy, which every wrap shim calls first, and its constructor);
 * before that nothing was started, so nothing is pending: the answer is 0.
 */
#define _GNU_SOURCE
#include <errno.h>

#include "rh_base.h"

#pragma GCC visibility push(default)
#include "rheaper.h"
#pragma GCC visibility pop

RH_HIDDEN int rh_state;
/* rh_state under a public name: rheaper.h's inline client requests (pools,
 * rh_pool.c) test it before calling into the runtime. */
extern int rheaper_tracking_ __attribute__((alias("rh_state"), visibility("default")));
RH_HIDDEN __thread volatile int rh_guard __attribute__((tls_model("local-exec")));
RH_HIDDEN struct rh_profile rh_prof;
RH_HIDDEN uint32_t rh_epoch;
RH_HIDDEN int rh_state_live;
RH_HIDDEN int rh_prof_lock;
/* The runtime's own thread (rh_helper.c), declared in rh_recording.h: kept
 * in the base so the core's readers (writer, CPU sampler) and its top layer's
 * writer of it call no file of each other's. */
RH_HIDDEN uint32_t rh_runtime_tid;
/* Set while the runtime calls sigaction itself (rh_control.c, rh_cpu.c,
 * rh_report.c), so the program's own sigaction shim tells our calls apart. */
RH_HIDDEN volatile int rh_ctl_self;

/* The session layer's entry for the core (rh_session_call), NULL until it
 * starts. */
static int (*rh_session_fn)(int what);

void rh_state_set(int v)
{
    int old = __atomic_load_n(&rh_state, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(&rh_state, &old, v | (old & RH_CTL), 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED))
        ;
}

void rh_ctl_request(void)
{
    int e = errno;
    __atomic_fetch_or(&rh_state, RH_CTL, __ATOMIC_ACQ_REL);
    errno = e;
}

void rh_note_reentry(void)
{
    __atomic_fetch_add(&rh_prof.reentered, 1, __ATOMIC_RELAXED);
}

int rh_guard_enter(void)
{
    int saved = rh_guard;
    rh_guard = RH_GUARD_CALL;
    rh_barrier();
    return saved;
}

void rh_guard_leave(int saved)
{
    rh_barrier();
    rh_guard = saved;
}

void rh_session_install(int (*fn)(int what))
{
    __atomic_store_n(&rh_session_fn, fn, __ATOMIC_RELEASE);
}

int rh_session_call(int what)
{
    int (*fn)(int) = __atomic_load_n(&rh_session_fn, __ATOMIC_ACQUIRE);
    return fn ? fn(what) : 0;
}

int rh_lazy_start(void)
{
    return rh_session_call(RH_SES_START);
}
