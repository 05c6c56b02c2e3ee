/* ucontext.c: stacks through coroutines (the hostile programs' stack item).
 *
 * Two coroutines run on mmap'ed 16 KiB stacks and allocate there first: with
 * RHEAPER_SCOPE=program (tests/integration/whole/CMakeLists.txt runs both scopes) that is
 * the thread's first recorded allocation, whose walk used to fix the thread's
 * stack bounds on the coroutine stack. Then main -> f1 -> f2 -> f3 allocates
 * on the real stack: every one of those must have its whole stack, f3, f2, f1,
 * main in order, not truncated. A coroutine's own allocations lie on a stack
 * the runtime does not know: frame 0 only, marked truncated.
 */
#include <sys/mman.h>
#include <ucontext.h>

#include "expect.h"

#define CO_STACK 16384
#define CO_ALLOCS 3
#define MAIN_ALLOCS 50

static ucontext_t uc_main, uc_co[2];
static int co_line;
static int f3_line;

__attribute__((noinline)) void co_body(void)
{
    for (int i = 0; i < CO_ALLOCS; i++) {
        co_line = __LINE__ + 1;
        void *p = malloc(24);
        KEEP(p);
        free(p);
        swapcontext(&uc_co[0], &uc_main); /* each coroutine yields back to main */
    }
}

static void co_entry(void)
{
    co_body();
}

__attribute__((noinline)) void f3(int i)
{
    f3_line = __LINE__ + 1;
    void *p = malloc(40 + (size_t)i % 3);
    KEEP(p);
    free(p);
}

__attribute__((noinline)) void f2(int i)
{
    f3(i);
    __asm__ __volatile__("");
}

__attribute__((noinline)) void f1(int i)
{
    f2(i);
    __asm__ __volatile__("");
}

int main(void)
{
    void *st = mmap(NULL, CO_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (st == MAP_FAILED)
        return 1;
    getcontext(&uc_co[0]);
    uc_co[0].uc_stack.ss_sp = st;
    uc_co[0].uc_stack.ss_size = CO_STACK;
    uc_co[0].uc_link = &uc_main;
    makecontext(&uc_co[0], co_entry, 0);
    /* the coroutine runs first: its first malloc is the first one recorded */
    for (int i = 0; i < CO_ALLOCS; i++)
        swapcontext(&uc_main, &uc_co[0]);
    for (int i = 0; i < MAIN_ALLOCS; i++)
        f1(i);
    munmap(st, CO_STACK);

    EXPECT(MAIN_ALLOCS,
           "SELECT count(*) FROM allocations a JOIN stacks s ON s.id = a.bt WHERE s.truncated = 0 "
           "AND (SELECT group_concat(sym, ',') FROM (SELECT sym FROM backtraces WHERE id = a.bt "
           "AND frame_no < 4 ORDER BY frame_no)) = 'f3,f2,f1,main' AND "
           "(SELECT line FROM backtraces WHERE id = a.bt AND frame_no = 0) = %d",
           f3_line);
    EXPECT(CO_ALLOCS,
           "SELECT count(*) FROM allocations a JOIN stacks s ON s.id = a.bt WHERE s.truncated = 1 "
           "AND s.depth = 1 AND a.bt IN (SELECT id FROM backtraces WHERE frame_no = 0 "
           "AND sym = 'co_body' AND line = %d)",
           co_line);
    return 0;
}
