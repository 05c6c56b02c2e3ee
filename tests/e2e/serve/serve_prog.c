/* serve_prog.c: the program tests/e2e/serve profiles, with a known plan.
 *
 * Every call site allocates a known number of blocks of one size and frees a
 * known number of them, so the server's answers can be checked by name:
 *   big_block      3 blocks (300000, 200000, 100000 bytes), never freed
 *   group_hit      20 x 64 bytes, 8 freed     (12 leaked: 60 %)
 *   group_half     20 x 48 bytes, 10 freed    (10 leaked: 50 %)
 *   group_miss     20 x 32 bytes, 15 freed    (5 leaked: 25 %)
 *   few_leaks      5 x 128 bytes, never freed (10 with "leak")
 *   temp_churn     100 x 16 bytes, each freed at once
 *   worker thread  30 x 256 bytes, all freed
 * With the argument "leak" (the second run of the diff test) it also calls
 * extra_leak: 10 x 1000 bytes never freed, and few_leaks leaks 10 blocks.
 * With "many" it only runs many_blocks: 200000 blocks of 24 bytes, each freed
 * at once (a profile big enough to run out of a small time budget).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *volatile sink;

static void pause_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

__attribute__((noinline)) static void big_block(void)
{
    static const size_t sizes[3] = {300000, 200000, 100000};
    for (int i = 0; i < 3; i++) {
        char *p = malloc(sizes[i]);
        memset(p, 1, 16);
        sink = p;
    }
}

/* n blocks of `size` bytes; the first `freed` of them are freed at the end. */
__attribute__((noinline)) static void group(size_t size, int n, int freed, void **keep)
{
    for (int i = 0; i < n; i++) {
        keep[i] = malloc(size);
        sink = keep[i];
    }
    for (int i = 0; i < freed; i++)
        free(keep[i]);
}

__attribute__((noinline)) static void group_hit(void)
{
    void *k[20];
    group(64, 20, 8, k);
}

__attribute__((noinline)) static void group_half(void)
{
    void *k[20];
    group(48, 20, 10, k);
}

__attribute__((noinline)) static void group_miss(void)
{
    void *k[20];
    group(32, 20, 15, k);
}

__attribute__((noinline)) static void few_leaks(int n)
{
    for (int i = 0; i < n; i++)
        sink = malloc(128);
}

__attribute__((noinline)) static void temp_churn(void)
{
    for (int i = 0; i < 100; i++) {
        void *p = malloc(16);
        sink = p;
        free(p);
    }
}

__attribute__((noinline)) static void extra_leak(void)
{
    for (int i = 0; i < 10; i++)
        sink = malloc(1000);
}

static void *worker(void *arg)
{
    (void)arg;
    void *k[30];
    for (int i = 0; i < 30; i++)
        k[i] = malloc(256);
    for (int i = 0; i < 30; i++)
        free(k[i]);
    return NULL;
}

__attribute__((noinline)) static void many_blocks(void)
{
    for (int i = 0; i < 200000; i++) {
        void *p = malloc(24);
        sink = p;
        free(p);
    }
}

int main(int argc, char **argv)
{
    int leak = argc > 1 && !strcmp(argv[1], "leak");
    if (argc > 1 && !strcmp(argv[1], "many")) {
        many_blocks();
        return 0;
    }
    big_block();
    pause_ms(20);
    group_hit();
    group_half();
    pause_ms(20);
    group_miss();
    few_leaks(leak ? 10 : 5);
    pause_ms(20);
    temp_churn();
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    if (leak)
        extra_leak();
    pause_ms(20);
    return 0;
}
