/* cli_prog.c: the workload the cli tests profile with `rheaper run`.
 *
 * Its allocations are planned in cli_prog.h: a large block at startup that is
 * never freed, a slow leak of one small block every STEADY_SLEEP_US for the
 * whole loop, short-lived churn, a burst in the middle that makes the peak, and
 * a worker thread whose blocks are partly freed by the main thread. It prints
 * nothing and calls no stdio, so no hidden allocation adds a row.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_prog.h"

static void *volatile sink;
#define NOINLINE __attribute__((noinline))

static NOINLINE void *startup_block(void)
{
    void *p = malloc(STARTUP_SIZE);
    memset(p, 1, 64);
    return p;
}

static NOINLINE void *held_block(void)
{
    return malloc(HELD_SIZE);
}

static NOINLINE void leak_steady(void)
{
    sink = malloc(STEADY_SIZE);
}

static NOINLINE void temp_churn(void)
{
    for (int k = 0; k < 2; k++) {
        char *p = malloc(TEMP_SIZE);
        sink = p;
        free(p);
    }
}

static NOINLINE void peak_burst(void)
{
    void *b[BURST_N];
    for (int k = 0; k < BURST_N; k++) {
        b[k] = malloc(BURST_SIZE);
        sink = b[k];
    }
    for (int k = BURST_N; k-- > 0;)
        free(b[k]);
}

static void *handoff[HANDOFF_N];

static NOINLINE void worker_handoff(int k)
{
    handoff[k] = malloc(HANDOFF_SIZE);
}

static NOINLINE void worker_tmp(void)
{
    void *p = malloc(WTMP_SIZE);
    sink = p;
    free(p);
}

static NOINLINE void worker_leak(void)
{
    sink = malloc(WLEAK_SIZE);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int k = 0; k < HANDOFF_N; k++)
        worker_handoff(k);
    worker_tmp();
    worker_leak();
    return NULL;
}

int main(void)
{
    void *startup = startup_block();
    void *held = held_block();
    sink = startup;
    usleep(PAUSE_US);
    for (int i = 0; i < STEADY_N; i++) {
        if (i == STEADY_N / 2)
            peak_burst();
        leak_steady();
        temp_churn();
        usleep(STEADY_SLEEP_US);
    }
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 1;
    for (int k = 0; k < HANDOFF_N; k++)
        free(handoff[k]);
    free(held);
    return 7; /* rheaper run must report it */
}
