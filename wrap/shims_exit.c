/* shims_exit.c: the exits that run no exit handler.
 *
 * _exit and _Exit end the process without atexit handlers or destructors, so
 * the runtime's last destructor, which writes the profile's trailer, never
 * runs; exec replaces the image the same way; glibc's daemon(3) ends its
 * start-up process with an _exit inside libc, which --wrap reaches only in a
 * static link. Each shim first asks the runtime to do that exit work
 * (rh_exit_now, runtime/rh_api.c), then makes the real call with its
 * arguments unchanged (execl, execlp and execle go on as execv, execvp and
 * execve with the vector glibc itself would build); exec and daemon return
 * what the real call returns, with its errno, and a failed exec goes on recording after the trailer (its
 * later exit does the exit work again: rh_exit_undo).
 * An exec's trailer says so (end reason exec, RH_EXIT_EXEC): the pid goes on
 * as a new image, which `rheaper list` joins with this profile.
 *
 * These calls happen where little is allowed: _exit and execve are
 * async-signal-safe and may run in a signal handler or a vfork child. So
 * rh_exit_now does nothing in a vfork child (the profile is its parent's),
 * nothing when this thread is inside the runtime or a hooked call (a handler
 * that interrupted one: the locks may be this thread's), takes no allocator
 * lock from _exit or exec (no final memory sample there), allocates nothing
 * and uses no stdio. The runtime's entry point is a weak reference so the
 * shim tests' stand-in runtime needs no copy of it.
 */
#include <stdarg.h>

#include "rh_shims.h"

extern RH_HIDDEN void rh_exit_now(int mem_final) __attribute__((weak));
extern RH_HIDDEN void rh_exit_undo(void) __attribute__((weak));

static void rh_exiting(int mem_final)
{
    if (rh_exit_now)
        rh_exit_now(mem_final);
}

/* An exec or daemon that returned failed: the process goes on, so its later
 * exit must do the exit work again (rh_exit_undo). Returns rc, errno kept. */
static int rh_returned(int rc)
{
    if (rh_exit_undo)
        rh_exit_undo();
    return rc;
}

RH_WRAP void __wrap__exit(int status)
{
    rh_exiting(0);
    __real__exit(status);
    __builtin_unreachable();
}

RH_WRAP void __wrap__Exit(int status)
{
    rh_exiting(0);
    __real__Exit(status);
    __builtin_unreachable();
}

/* The start-up process's profile is closed before the fork; the child has a
 * file of its own (the fork handler). Not a signal context: the final memory
 * sample is taken. */
RH_WRAP int __wrap_daemon(int nochdir, int noclose)
{
    rh_exiting(1);
    return rh_returned(__real_daemon(nochdir, noclose));
}

RH_WRAP int __wrap_execve(const char *path, char *const *argv, char *const *envp)
{
    rh_exiting(RH_EXIT_EXEC);
    return rh_returned(__real_execve(path, argv, envp));
}

RH_WRAP int __wrap_execv(const char *path, char *const *argv)
{
    rh_exiting(RH_EXIT_EXEC);
    return rh_returned(__real_execv(path, argv));
}

RH_WRAP int __wrap_execvp(const char *file, char *const *argv)
{
    rh_exiting(RH_EXIT_EXEC);
    return rh_returned(__real_execvp(file, argv));
}

RH_WRAP int __wrap_execvpe(const char *file, char *const *argv, char *const *envp)
{
    rh_exiting(RH_EXIT_EXEC);
    return rh_returned(__real_execvpe(file, argv, envp));
}

RH_WRAP int __wrap_fexecve(int fd, char *const *argv, char *const *envp)
{
    rh_exiting(RH_EXIT_EXEC);
    return rh_returned(__real_fexecve(fd, argv, envp));
}

/* execl, execlp, execle: the list after arg, up to its NULL (for execle the
 * environment after it), as a vector on the stack, as glibc builds it; then
 * the vector form of the call. */
#define RH_EXEC_LIST(ARG, AP, ARGV)                                                                \
    size_t n_ = 1;                                                                                 \
    va_start(AP, ARG);                                                                             \
    while (va_arg(AP, const char *) != NULL)                                                       \
        n_++;                                                                                      \
    va_end(AP);                                                                                    \
    const char *ARGV[n_ + 1];                                                                      \
    ARGV[0] = ARG;                                                                                 \
    va_start(AP, ARG);                                                                             \
    for (size_t i_ = 1; i_ <= n_; i_++)                                                            \
        ARGV[i_] = va_arg(AP, const char *)

RH_WRAP int __wrap_execl(const char *path, const char *arg, ...)
{
    va_list ap;
    RH_EXEC_LIST(arg, ap, argv);
    va_end(ap);
    rh_exiting(RH_EXIT_EXEC);
    return rh_returned(__real_execv(path, (char *const *)argv));
}

RH_WRAP int __wrap_execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    RH_EXEC_LIST(arg, ap, argv);
    va_end(ap);
    rh_exiting(RH_EXIT_EXEC);
    return rh_returned(__real_execvp(file, (char *const *)argv));
}

RH_WRAP int __wrap_execle(const char *path, const char *arg, ...)
{
    va_list ap;
    RH_EXEC_LIST(arg, ap, argv);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    rh_exiting(RH_EXIT_EXEC);
    return rh_returned(__real_execve(path, (char *const *)argv, envp));
}
