/* sigaltstack.c: stacks of allocations made in a signal handler running on
 * an alternate signal stack.
 *
 * main -> s1 -> s2 raises SIGUSR1 (synchronously, so the handler never
 * interrupts malloc); the handler runs on a sigaltstack and allocates from
 * h_alloc. The walk starts on the alternate stack, crosses the kernel's signal
 * frame (glibc's __restore_rt) onto the thread's stack and goes on through
 * libc's raise to s2, s1 and main: whole, not truncated. A handler on the
 * normal stack (SIGUSR2, no SA_ONSTACK) gives the same chain.
 */
#include <signal.h>
#include <sys/mman.h>

#include "expect.h"

#define RAISES 20
#define ALT_SIZE 65536

static int h_line;

__attribute__((noinline)) void h_alloc(void)
{
    h_line = __LINE__ + 1;
    void *p = malloc(72);
    KEEP(p);
    free(p);
}

void handler(int sig)
{
    (void)sig;
    h_alloc();
    __asm__ __volatile__("");
}

__attribute__((noinline)) void s2(int sig)
{
    raise(sig);
    __asm__ __volatile__("");
}

__attribute__((noinline)) void s1(int sig)
{
    s2(sig);
    __asm__ __volatile__("");
}

int main(void)
{
    stack_t ss;
    ss.ss_sp = mmap(NULL, ALT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ss.ss_sp == MAP_FAILED)
        return 1;
    ss.ss_size = ALT_SIZE;
    ss.ss_flags = 0;
    if (sigaltstack(&ss, NULL) != 0)
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, NULL) != 0)
        return 1;
    sa.sa_flags = 0;
    if (sigaction(SIGUSR2, &sa, NULL) != 0)
        return 1;
    for (int i = 0; i < RAISES; i++)
        s1(SIGUSR1);
    for (int i = 0; i < RAISES; i++)
        s1(SIGUSR2);

    /* h_alloc's allocations: h_alloc, handler, then (past the signal frame
     * and libc's raise) s2, s1, main, in this order, whole */
    EXPECT(2 * RAISES,
           "SELECT count(*) FROM allocations a JOIN stacks s ON s.id = a.bt WHERE s.truncated = 0 "
           "AND (SELECT group_concat(sym, ',') FROM (SELECT sym FROM backtraces WHERE id = a.bt "
           "AND sym IN ('h_alloc', 'handler', 's2', 's1', 'main') ORDER BY frame_no)) "
           "= 'h_alloc,handler,s2,s1,main' AND "
           "(SELECT line FROM backtraces WHERE id = a.bt AND frame_no = 0) = %d "
           "AND (SELECT sym FROM backtraces WHERE id = a.bt AND frame_no = 1) = 'handler'",
           h_line);
    return 0;
}
