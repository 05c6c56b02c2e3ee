/* readers_prog.c: the multi-threaded program of the cross-reader test
 * (readers_test.sh), with a plan every reader's answer can be checked by:
 *   main      lib_cache     40 x 1024 bytes, never freed  (readers_lib.c)
 *   rd-alpha  temp_churn    2000 x 32 bytes, each freed at once
 *             leak_alpha    50 x 200 bytes, never freed
 *   rd-beta   lib_buffer    300 x 4096 bytes, freed about 20 ms later
 *                                                         (readers_lib.c)
 *             leak_beta     30 x 96 bytes, never freed
 *   main      mid_blocks    500 x 512 bytes, freed about 5 ms later
 *             deep_alloc    20 x 700 bytes at the bottom of 12 nested calls,
 *                           freed at the end
 * The phases are about 40 ms apart, so time windows select different sites.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void *lib_cache(size_t n);
void *lib_buffer(size_t n);

static void *volatile sink;

static void pause_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

__attribute__((noinline)) static void *temp_churn(size_t n)
{
    char *p = malloc(n);
    memset(p, 3, 8);
    return p;
}

__attribute__((noinline)) static void *leak_alpha(size_t n)
{
    char *p = malloc(n);
    memset(p, 4, 8);
    return p;
}

__attribute__((noinline)) static void *leak_beta(size_t n)
{
    char *p = malloc(n);
    memset(p, 5, 8);
    return p;
}

__attribute__((noinline)) static void *mid_blocks(size_t n)
{
    char *p = malloc(n);
    memset(p, 6, 8);
    return p;
}

__attribute__((noinline)) static void *deep_alloc(int depth)
{
    if (depth > 0) {
        void *p = deep_alloc(depth - 1);
        sink = &depth; /* no tail call */
        return p;
    }
    char *p = malloc(700);
    memset(p, 7, 8);
    return p;
}

static void *alpha(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "rd-alpha");
    for (int i = 0; i < 2000; i++)
        free(temp_churn(32));
    for (int i = 0; i < 50; i++)
        sink = leak_alpha(200);
    return NULL;
}

static void *beta(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "rd-beta");
    static void *held[300];
    for (int i = 0; i < 300; i++)
        held[i] = lib_buffer(4096);
    pause_ms(20);
    for (int i = 0; i < 300; i++)
        free(held[i]);
    for (int i = 0; i < 30; i++)
        sink = leak_beta(96);
    return NULL;
}

int main(void)
{
    for (int i = 0; i < 40; i++)
        sink = lib_cache(1024);
    pthread_t a, b;
    pthread_create(&a, NULL, alpha, NULL);
    pthread_join(a, NULL);
    pause_ms(40);
    pthread_create(&b, NULL, beta, NULL);
    pthread_join(b, NULL);
    pause_ms(40);
    static void *mid[500];
    for (int i = 0; i < 500; i++)
        mid[i] = mid_blocks(512);
    pause_ms(5);
    for (int i = 0; i < 500; i++)
        free(mid[i]);
    static void *deep[20];
    for (int i = 0; i < 20; i++)
        deep[i] = deep_alloc(12);
    pause_ms(40);
    for (int i = 0; i < 20; i++)
        free(deep[i]);
    /* lib_twin: 25 + 15 x 300 bytes, never freed, from two files named
     * readers_lib.c in two directories: one call site */
    void *twin_one(size_t n), *twin_two(size_t n);
    for (int i = 0; i < 25; i++)
        sink = twin_one(300);
    for (int i = 0; i < 15; i++)
        sink = twin_two(300);
    return 0;
}
