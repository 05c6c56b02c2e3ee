/* shims_signal.c: sigaction and signal, for armed mode (RHEAPER_ENABLE=signal).
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
 * .so is not (README "Recording a running process").
 */
#include "rh_shims.h"

extern RH_HIDDEN void rh_ctl_program_sets(int sig) __attribute__((weak));

RH_WRAP int __wrap_sigaction(int sig, const void *act, void *old)
{
    if (act != NULL && rh_ctl_program_sets) {
        int e = errno;
        rh_ctl_program_sets(sig);
        errno = e;
    }
    return __real_sigaction(sig, act, old);
}

RH_WRAP void *__wrap_signal(int sig, void *handler)
{
    if (rh_ctl_program_sets) {
        int e = errno;
        rh_ctl_program_sets(sig);
        errno = e;
    }
    return __real_signal(sig, handler);
}
