/* cancel.c: a thread with a pending pthread_cancel makes the process's first
 * malloc, or calls dlopen.
 *
 *   cancel malloc|dlopen
 *
 * The victim thread spins (no cancellation point) until main has cancelled
 * it, then allocates (malloc mode: the first allocation of the process in a
 * dynamic link) or calls dlopen and then allocates, and only then reaches
 * pthread_testcancel. Nothing inside malloc or dlopen may act on the pending
 * cancel: the thread must die at pthread_testcancel, and main must go on
 * allocating (a thread killed inside the runtime would leave its lock held
 * and main spinning). Exit status 0 when the victim died at the right place.
 */
#define _GNU_SOURCE
#include "expect.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static int go, reached;
static const char *mode;

NOINLINE static void *victim_alloc(size_t n)
{
    void *p = malloc(n);
    KEEP(p);
    return p;
}

NOINLINE static void *main_alloc(size_t n)
{
    void *p = malloc(n);
    KEEP(p);
    return p;
}

static void *victim(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&go, __ATOMIC_ACQUIRE))
        ;
    if (!strcmp(mode, "dlopen")) {
        void *h = dlopen("libm.so.6", RTLD_NOW);
        if (h)
            dlclose(h);
    }
    free(victim_alloc(100));
    __atomic_store_n(&reached, 1, __ATOMIC_RELEASE);
    pthread_testcancel();
    __atomic_store_n(&reached, 2, __ATOMIC_RELEASE);
    return NULL;
}

int main(int argc, char **argv)
{
    mode = argc > 1 ? argv[1] : "malloc";
    pthread_t t;
    if (pthread_create(&t, NULL, victim, NULL))
        return 10;
    if (pthread_cancel(t))
        return 11;
    __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
    void *ret = NULL;
    if (pthread_join(t, &ret))
        return 12;
    int ok = ret == PTHREAD_CANCELED && __atomic_load_n(&reached, __ATOMIC_ACQUIRE) == 1;
    for (int i = 0; i < 1000; i++)
        free(main_alloc(64));
    EXPECT(1, "SELECT count(*) FROM allocations WHERE size = 100 AND dealloc_after IS NOT NULL AND " AT_SYM("victim_alloc"));
    EXPECT(1000, "SELECT count(*) FROM allocations WHERE size = 64 AND dealloc_after IS NOT NULL AND " AT_SYM("main_alloc"));
    printf("victim %s\n", ok ? "cancelled at pthread_testcancel" : "died elsewhere");
    return ok ? 0 : 1;
}
