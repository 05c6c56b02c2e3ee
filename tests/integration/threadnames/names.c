/* names.c: threads named the ways programs name them. Four workers are named
 * by main with pthread_setname_np right after they started and allocated (as
 * memcached names its mc-workers), one worker renames itself after it has
 * allocated, and one worker named by main exits before the program does. The
 * first five are still running when the program exits. Prints
 * "THREAD tid name" for each thread, main included, for run.sh to compare
 * with the profile's threads table. */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NWORK 4

static void *volatile sink[64];
static sem_t ready, never;
static sem_t go[NWORK + 2]; /* one per worker: each waits for its own name */
static pid_t tids[NWORK + 2];

static void use(int i, size_t n)
{
    sink[i] = malloc(n);
}

/* allocates, lets main name it, allocates again, then waits for the exit */
static void *worker(void *arg)
{
    int i = (int)(long)arg;
    tids[i] = (pid_t)syscall(SYS_gettid);
    use(i, 100 + i);
    sem_post(&ready);
    sem_wait(&go[i]);
    use(NWORK + 8 + i, 200 + i);
    if (i < NWORK)
        sem_wait(&never); /* still running at exit */
    return NULL;
}

/* allocates under the process's name, renames itself, allocates again */
static void *self_namer(void *arg)
{
    int i = (int)(long)arg;
    tids[i] = (pid_t)syscall(SYS_gettid);
    use(i, 300);
    pthread_setname_np(pthread_self(), "late-self");
    use(NWORK + 8 + i, 301);
    sem_post(&ready);
    sem_wait(&never);
    return NULL;
}

int main(void)
{
    static char obuf[4096];
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    sem_init(&ready, 0, 0);
    for (int i = 0; i < NWORK + 2; i++)
        sem_init(&go[i], 0, 0);
    sem_init(&never, 0, 0);
    use(60, 10);
    pthread_t t[NWORK + 2];
    char name[16];
    for (int i = 0; i < NWORK; i++) {
        pthread_create(&t[i], NULL, worker, (void *)(long)i);
        sem_wait(&ready); /* it has allocated: its first chunk is open */
        snprintf(name, sizeof name, "mc-worker-%d", i);
        pthread_setname_np(t[i], name);
        sem_post(&go[i]);
    }
    pthread_create(&t[NWORK], NULL, self_namer, (void *)(long)NWORK);
    sem_wait(&ready);
    /* one more named by main that exits before the program does */
    pthread_create(&t[NWORK + 1], NULL, worker, (void *)(long)(NWORK + 1));
    sem_wait(&ready);
    pthread_setname_np(t[NWORK + 1], "gone-worker");
    sem_post(&go[NWORK + 1]);
    pthread_join(t[NWORK + 1], NULL);
    /* every worker has made its second allocation once it waits */
    usleep(100000);
    printf("THREAD %d names\n", (int)getpid());
    for (int i = 0; i < NWORK; i++)
        printf("THREAD %d mc-worker-%d\n", (int)tids[i], i);
    printf("THREAD %d late-self\n", (int)tids[NWORK]);
    printf("THREAD %d gone-worker\n", (int)tids[NWORK + 1]);
    fflush(stdout);
    exit(0); /* five threads still running */
}
