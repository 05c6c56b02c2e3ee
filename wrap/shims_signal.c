/* shims_signal.c: sigaction and signal, for armed mode (RHEAPER_ENABLE=signal)
 * and CPU sampling, and pthread_create for CPU sampling.
 *
 * Nothing is recorded. Before the program sets a disposition for the runtime's
 * toggle signal, the runtime is told (rh_ctl_program_sets in
 * runtime/rh_control.c): the program's handler wins, rheaper warns once and
 * stands aside. The call itself always goes through unchanged, with errno as
 * the real call leaves it. The runtime's own sigaction calls (rh_ctl_self set)
 * pass straight through. rh_ctl_program_sets is a weak reference so the shim
 * tests' stand-in runtime needs no copy of it.
 *
 * Only calls from objects linked with rheaper-cc are seen: in a dynamic link a
 * library that installs the handler from inside libc.so or another unwrapped
 * .so is not (docs/record.md).
 */
#include "rh_shims.h"

extern RH_HIDDEN void rh_ctl_program_sets(int sig) __attribute__((weak));
/* The CPU sampling signal (runtime/rh_cpu.c), same rule */
extern RH_HIDDEN void rh_cpu_program_sets(int sig) __attribute__((weak));
extern RH_HIDDEN int rh_cpu_pthread_create(int (*real)(void *, const void *, void *, void *),
                                           void *thr, const void *attr, void *fn, void *arg)
    __attribute__((weak));

/* Tells the runtime that the program sets a disposition for sig. */
static void rh_program_sets(int sig)
{
    int e = errno;
    if (rh_ctl_program_sets)
        rh_ctl_program_sets(sig);
    if (rh_cpu_program_sets)
        rh_cpu_program_sets(sig);
    errno = e;
}

RH_WRAP int __wrap_sigaction(int sig, const void *act, void *old)
{
    if (act != NULL)
        rh_program_sets(sig);
    return __real_sigaction(sig, act, old);
}

RH_WRAP void *__wrap_signal(int sig, void *handler)
{
    rh_program_sets(sig);
    return __real_signal(sig, handler);
}

/* libc's pthread_create for the runtime's own threads (rh_sys_thread_create,
 * runtime/rh_sys.c), which must not pass through the wrap below. */
RH_HIDDEN int rh_shim_real_pthread_create(void *thr, const void *attr, void *fn, void *arg)
{
    return __real_pthread_create(thr, attr, fn, arg);
}

/* A thread created here is known to the runtime from its start, so CPU
 * sampling covers it even if it never allocates. */
RH_WRAP int __wrap_pthread_create(void *thr, const void *attr, void *fn, void *arg)
{
    if (rh_cpu_pthread_create)
        return rh_cpu_pthread_create(__real_pthread_create, thr, attr, fn, arg);
    return __real_pthread_create(thr, attr, fn, arg);
}
