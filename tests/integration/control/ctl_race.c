/* ctl_race.c: rheaper_enable/rheaper_disable from one thread while the test
 * sends the toggle signal many times and two threads allocate all along. No
 * crash, no hang, and every profile written must convert clean (the test
 * checks). Prints "api N" (successful API enables) at the end. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "rheaper.h"

static volatile int stop;
static void *volatile sink;

static void *alloc_loop(void *arg)
{
    (void)arg;
    while (!stop) {
        void *p = malloc(64);
        sink = p;
        free(p);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, alloc_loop, NULL);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    int ok = 0;
    for (int i = 0; i < rounds; i++) {
        if (rheaper_enable(NULL) == RHEAPER_OK)
            ok++;
        usleep(500);
        rheaper_disable();
        usleep(500);
    }
    stop = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    printf("api %d\n", ok);
    return 0;
}
