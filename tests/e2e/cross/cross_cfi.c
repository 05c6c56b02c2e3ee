/* cross_cfi.c: allocations whose stacks cross functions without a frame
 * record (cross_cfi_nofp.c, built like the C library), for the CFI walk.
 * check_cross_cfi.sh knows each allocation by its size and checks its whole
 * caller chain, function and line, in the converted database:
 *   40 bytes  main -> a_outer -> n_mid -> n_alloc        (frame 0 without a record)
 *   48 bytes  main -> b_outer -> n_apply -> b_cb         (a callback: a frame
 *             without a record in the middle of the stack)
 *   24 bytes  main -> q_outer -> qsort -> ... -> q_cmp   (the C library's own
 *             frames in the middle, once: the first comparison)
 *   56 bytes  a thread: t_start -> n_mid -> n_alloc      (to the thread's start)
 *   72 bytes  main -> s_outer -> raise -> (signal) -> s_handler (a signal
 *             frame: raise is synchronous, so the interrupted code is known)
 * Each line with a call the chain goes through carries a marker comment the
 * script finds the line by.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))
void *volatile cfi_sink;

void *n_alloc(size_t size);
void *n_mid(size_t size);
void *n_apply(void *(*fn)(size_t), size_t size);

NOINLINE static void a_outer(void)
{
    void *p = n_mid(40); /* @a_outer */
    free(p);
}

NOINLINE static void *b_cb(size_t size)
{
    void *p = malloc(size); /* @b_cb */
    cfi_sink = p;
    return p;
}

NOINLINE static void b_outer(void)
{
    void *p = n_apply(b_cb, 48); /* @b_outer */
    free(p);
}

static int q_first = 1;

NOINLINE static int q_cmp(const void *a, const void *b)
{
    if (q_first) {
        q_first = 0;
        cfi_sink = malloc(24); /* @q_cmp */
        free(cfi_sink);
    }
    return *(const int *)a - *(const int *)b;
}

NOINLINE static void q_outer(void)
{
    int v[64];
    for (int i = 0; i < 64; i++)
        v[i] = (i * 37) % 64;
    qsort(v, 64, sizeof v[0], q_cmp); /* @q_outer */
    cfi_sink = v;
}

NOINLINE static void *t_start(void *arg)
{
    (void)arg;
    void *p = n_mid(56); /* @t_start */
    free(p);
    return NULL;
}

NOINLINE static void s_handler(int sig)
{
    (void)sig;
    cfi_sink = malloc(72); /* @s_handler */
    free(cfi_sink);
}

NOINLINE static void s_outer(void)
{
    raise(SIGUSR1); /* @s_outer */
    cfi_sink = NULL;
}

int main(void)
{
    a_outer(); /* @main:a */
    b_outer(); /* @main:b */
    q_outer(); /* @main:q */
    pthread_t t;
    if (pthread_create(&t, NULL, t_start, NULL) != 0)
        return 1;
    pthread_join(t, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_handler;
    if (sigaction(SIGUSR1, &sa, NULL) != 0)
        return 1;
    s_outer(); /* @main:s */
    return 0;
}
