/* sigalloc.c: a signal handler that allocates while the interrupted code is
 * inside malloc or free.
 *
 * A 50 us interval timer interrupts a loop of malloc(32)/free pairs; the
 * handler makes one malloc(48)/free pair each time. A handler call that lands
 * inside the runtime's malloc or free passes through unrecorded (recording it
 * would re-enter the runtime); the runtime counts each such call, so every
 * handler call is either recorded (a row of 48 bytes) or counted twice (its
 * malloc and its free) in meta reentered_unrecorded. The main loop's calls are
 * all recorded. The two sizes sit in different tcache bins, so the handler's
 * malloc never touches what the interrupted glibc malloc is changing (glibc's
 * malloc is not async-signal-safe in general).
 */
#define _GNU_SOURCE
#include "expect.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define NOINLINE __attribute__((noinline))

static volatile sig_atomic_t handler_calls;

NOINLINE static void *handler_alloc(size_t n) { return KEEP(malloc(n)); }
NOINLINE static void *main_alloc(size_t n) { return KEEP(malloc(n)); }

static void on_alarm(int sig)
{
    (void)sig;
    free(handler_alloc(48));
    handler_calls++;
}

static void timer(long us)
{
    struct itimerval it = {{0, us}, {0, us}};
    setitimer(ITIMER_REAL, &it, NULL);
}

int main(void)
{
    /* warm both tcache bins and the runtime before the timer runs */
    free(handler_alloc(48));
    free(main_alloc(32));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    long loops = 0;
    timer(50);
    while (handler_calls < 500 || loops < 20000) {
        free(main_alloc(32));
        loops++;
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    sigprocmask(SIG_BLOCK, &set, NULL); /* no handler call after the counts are read */
    timer(0);
    long calls = handler_calls + 1;
    EXPECT(loops + 1, "SELECT count(*) FROM allocations WHERE size = 32 AND dealloc_after IS NOT NULL AND " AT_SYM("main_alloc"));
    EXPECT(calls, "SELECT (SELECT count(*) FROM allocations WHERE size = 48 AND dealloc_after IS NOT NULL AND " AT_SYM("handler_alloc") ") + (SELECT value FROM meta WHERE key = 'reentered_unrecorded') / 2");
    EXPECT(0, "SELECT (SELECT value FROM meta WHERE key = 'reentered_unrecorded') %% 2");
    EXPECT(1, "SELECT (SELECT value FROM meta WHERE key = 'reentered_unrecorded') > 0");
    printf("the handler allocated at least 500 times\n");
    return 0;
}
