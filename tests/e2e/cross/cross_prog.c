/* cross_prog.c: the program every cross target runs under qemu-user, with
 * counts it knows (tests/e2e/cross/check_cross.sh checks them in the converted
 * database):
 *   f_malloc   10 malloc(100), freed          kind malloc,  1000 bytes
 *   f_calloc    5 calloc(4, 50), freed        kind calloc,  1000 bytes
 *   f_realloc   malloc(16), realloc -> 32 -> 64 -> 128, freed: 1 malloc of 16
 *               bytes and 3 reallocs of 224
 *   f_strdup    3 strdup("hello world"), freed: kind strdup, 36 bytes
 *   f_thread    two threads, 7 malloc(64) each, freed: 896 bytes
 *   f_leak      1 malloc(777), never freed
 *   f_spin      burns about 0.3 s of CPU (for the CPU sampler)
 *   f_leafspin  the same in a leaf function with locals, called by
 *               f_leafloop (argument leafspin)
 * The C library's own allocations (a static program's start-up, each
 * thread's TLS block) come on top; their stacks hold none of these functions.
 * Every function is noinline and stores through a volatile pointer, so that
 * -O2 keeps each call where the source has it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NOINLINE __attribute__((noinline))
static void *volatile sink;

NOINLINE static void f_malloc(void)
{
    for (int i = 0; i < 10; i++) {
        sink = malloc(100);
        free(sink);
    }
}

NOINLINE static void f_calloc(void)
{
    for (int i = 0; i < 5; i++) {
        sink = calloc(4, 50);
        free(sink);
    }
}

NOINLINE static void f_realloc(void)
{
    void *p = malloc(16);
    sink = p;
    for (size_t n = 32; n <= 128; n *= 2) {
        p = realloc(p, n);
        sink = p;
    }
    free(p);
}

NOINLINE static void f_strdup(void)
{
    for (int i = 0; i < 3; i++) {
        sink = strdup("hello world");
        free(sink);
    }
}

NOINLINE static void *f_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 7; i++) {
        sink = malloc(64);
        free(sink);
    }
    return NULL;
}

NOINLINE static void f_leak(void)
{
    sink = malloc(777);
}

NOINLINE static void f_spin(void)
{
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    volatile unsigned long x = 0;
    do {
        for (int i = 0; i < 100000; i++)
            x += (unsigned long)i;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 300000000L);
}

/* A leaf function (it calls nothing) with a local array: on ARM it saves
 * only fp, and a CPU sample taken in it finds no whole record. */
NOINLINE static unsigned f_leafspin(unsigned n)
{
    volatile unsigned a[8];
    for (unsigned i = 0; i < n; i++)
        a[i & 7u] += i;
    return a[3];
}

NOINLINE static void f_leafloop(void)
{
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do {
        f_leafspin(1000000);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 300000000L);
}

int main(int argc, char **argv)
{
    f_malloc();
    f_calloc();
    f_realloc();
    f_strdup();
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, f_thread, NULL) != 0)
            return 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    f_leak();
    if (argc > 1 && strcmp(argv[1], "spin") == 0)
        f_spin();
    if (argc > 1 && strcmp(argv[1], "leafspin") == 0)
        f_leafloop();
    return 0;
}
