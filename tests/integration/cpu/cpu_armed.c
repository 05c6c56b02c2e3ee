/* cpu_armed.c: a long-running program for `rheaper record -p PID --cpu-hz N`
 * (tests/integration/cpu/run.sh). Started with RHEAPER_ENABLE=signal, it
 * prints "ready", then spins in busy_loop (allocating one block per round, so
 * the toggle signal is acted on) until the file named by its argument exists,
 * and prints "done". A second thread, created before any recording, spins in
 * thread_loop without ever allocating: CPU sampling must cover it too, since
 * pthread_create made it known to the runtime.
 *
 * usage: cpu_armed STOPFILE
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile unsigned long sink;
static volatile int stop;

__attribute__((noinline)) static void busy_round(void)
{
    for (int i = 0; i < 200000; i++)
        sink = sink * 6364136223846793005ul + (unsigned long)i;
}

__attribute__((noinline)) static void thread_round(void)
{
    for (int i = 0; i < 200000; i++)
        sink = sink * 2862933555777941757ul + (unsigned long)i;
}

static void *thread_loop(void *v)
{
    (void)v;
    while (!stop)
        thread_round();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    char *volatile p = malloc(16); /* arms the runtime */
    p[0] = 1;
    pthread_t t;
    if (pthread_create(&t, NULL, thread_loop, NULL) != 0)
        return 1;
    printf("ready\n");
    fflush(stdout);
    while (access(argv[1], F_OK) != 0) {
        char *volatile q = malloc(64);
        q[0] = 1;
        busy_round();
        free(q);
    }
    stop = 1;
    pthread_join(t, NULL);
    free(p);
    printf("done\n");
    return 0;
}
