// walkcache.cc: a program whose stacks change under the walk cache's feet
// (tests/integration/walkcache/run.sh). Every scenario runs below PAD frames of recursion
// (so that the walks are deep enough for the cache to hold them) and
// allocates at known depths:
//   twins    two callers with equal frames call the same callee chain, so
//            the callee's frame record sits at the same address with the
//            same return address under either caller;
//   longjmp  allocates deep, longjmps out of the frames, allocates again
//            through other functions at the same depths;
//   throw    a C++ exception unwinds through frames that allocated, then
//            allocations go through other frames at the same depths;
//   signal   a handler (raise, so at a known point) allocates, on the
//            thread's stack and on a sigaltstack;
//   ucontext coroutines (makecontext / swapcontext) on a stack inside the
//            thread's stack and on a heap stack, switching back and forth
//            with allocations on both sides;
//   deep     a thread with a 256 MiB stack recurses 10 000 deep and
//            allocates at the bottom and on the way back up.
// Each allocation is stored through a volatile pointer and freed later.
// Prints the number of allocations it made.
#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <pthread.h>
#include <ucontext.h>

#define PAD 40
#define NOI __attribute__((noinline))

static void *volatile g_keep[4096];
static volatile int g_tag; // a distinct store per function: no two are folded into one
static int g_n;

NOI static void note(size_t size)
{
    void *p = malloc(size);
    if (!p)
        abort();
    *(volatile char *)p = 1;
    g_keep[g_n++ % 4096] = p;
}

// ---- twins: same callee records under two callers with equal frames
NOI static void twin_leaf(int i) { note(100 + i); }
NOI static void twin_mid(int i) { twin_leaf(i); g_tag = 11; }
NOI static void twin_a(int i) { twin_mid(i); g_tag = 1; }
NOI static void twin_b(int i) { twin_mid(i); g_tag = 2; }

// ---- longjmp
static jmp_buf g_jb;
NOI static void lj_down(int d, int size)
{
    if (d == 0) {
        note(size);
        longjmp(g_jb, 1);
    }
    lj_down(d - 1, size);
    g_tag = 3;
}
NOI static void lj_other(int d, int size)
{
    if (d == 0) {
        note(size);
        return;
    }
    lj_other(d - 1, size);
    g_tag = 4;
}

// ---- C++ exceptions
NOI static void ex_down(int d, int size)
{
    note(size + d);
    if (d == 0)
        throw size;
    ex_down(d - 1, size);
    g_tag = 5;
}
NOI static void ex_other(int d, int size)
{
    if (d == 0) {
        note(size);
        return;
    }
    ex_other(d - 1, size);
    g_tag = 6;
}

// ---- signal handlers that allocate
NOI static void on_signal(int) { note(300); note(301); }
NOI static void sig_point(int d)
{
    if (d == 0) {
        note(310);
        raise(SIGUSR1);
        note(311);
        return;
    }
    sig_point(d - 1);
    g_tag = 7;
}

// ---- ucontext coroutines
static ucontext_t g_main_uc, g_co_uc;
NOI static void co_alloc(int d, int size)
{
    if (d == 0) {
        note(size);
        return;
    }
    co_alloc(d - 1, size);
    g_tag = 8;
}
NOI static void co_body()
{
    for (int i = 0; i < 4; i++) {
        co_alloc(i, 400 + i);
        swapcontext(&g_co_uc, &g_main_uc);
    }
}
NOI static void co_run(void *stack, size_t size)
{
    getcontext(&g_co_uc);
    g_co_uc.uc_stack.ss_sp = stack;
    g_co_uc.uc_stack.ss_size = size;
    g_co_uc.uc_link = &g_main_uc;
    makecontext(&g_co_uc, co_body, 0);
    for (int i = 0; i < 4; i++) {
        swapcontext(&g_main_uc, &g_co_uc);
        co_alloc(i, 410 + i);
    }
    swapcontext(&g_main_uc, &g_co_uc); // lets co_body return through uc_link
}
NOI static void co_local()
{
    static char unused;
    char stack[128 * 1024];
    (void)unused;
    co_run(stack, sizeof stack); // a coroutine stack inside the thread's stack
}

// ---- a thread 10 000 deep
NOI static void deep_rec(int d)
{
    if (d == 0) {
        note(500);
        return;
    }
    deep_rec(d - 1);
    if (d % 2500 == 0)
        note(500 + d / 2500);
    g_tag = 10;
}
static void *deep_thread(void *)
{
    deep_rec(10000);
    deep_rec(10000);
    return nullptr;
}

NOI static void scenarios()
{
    for (int i = 0; i < 3; i++) {
        twin_a(i);
        twin_b(i);
        twin_a(i);
    }
    for (int i = 0; i < 3; i++) {
        if (!setjmp(g_jb))
            lj_down(6, 200 + i);
        lj_other(6, 210 + i);
        lj_other(3, 220 + i);
    }
    for (int i = 0; i < 3; i++) {
        try {
            ex_down(5, 250);
        } catch (int) {
            note(260 + i);
        }
        ex_other(5, 270 + i);
        ex_other(2, 280 + i);
    }
    signal(SIGUSR1, on_signal);
    sig_point(3);
    sig_point(3);
    static char alt[64 * 1024];
    stack_t ss = {};
    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    sigaltstack(&ss, nullptr);
    struct sigaction sa = {};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGUSR1, &sa, nullptr);
    sig_point(3);
    sig_point(2);
    co_local();
    size_t hs = 128 * 1024;
    void *heap_stack = malloc(hs);
    co_run(heap_stack, hs); // a coroutine stack outside it
    free(heap_stack);
}

NOI static void pad(int d)
{
    if (d == 0) {
        scenarios();
        return;
    }
    pad(d - 1);
    g_tag = 9;
}

int main()
{
    pad(PAD);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256u << 20);
    pthread_t t;
    if (pthread_create(&t, &a, deep_thread, nullptr) != 0)
        return 1;
    pthread_join(t, nullptr);
    for (int i = 0; i < 4096 && i < g_n; i++)
        free(g_keep[i]);
    printf("%d\n", g_n);
    return 0;
}
