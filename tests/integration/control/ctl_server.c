/* ctl_server.c: a small server for tests/integration/control, built with rheaper-cc.
 *
 * N worker threads serve requests that the main thread reads from stdin (one
 * line each: "req", "quit") and hands over through a pipe per worker. Each
 * request allocates exactly REQ_ALLOCS blocks of REQ_SIZE bytes and frees them.
 *
 * A worker asks rheaper_is_enabled() before and after each request and counts
 * the requests it served entirely while recording was on, entirely off, or
 * across a toggle. At exit the server prints "served N on M off K mixed" on
 * stderr, so the test can compare the profile's exact counts with what the
 * server did inside the recording window.
 *
 * A "nop" request is served without any allocation (it touches memory the
 * server set aside at start, as a cache that reuses its slabs does); the
 * count of those is printed as "nops N" when there were any. With CTL_IDLE=1
 * and only nops, the server makes no allocation at all.
 *
 * CTL_VFORK=1: before anything else, a vfork child makes the process's first
 * allocation (malloc(10)) and execs /bin/true, as a program that spawns a
 * helper at start does; the server then runs as usual.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rheaper.h"

#define NWORKERS 3
#define REQ_ALLOCS 4
#define REQ_SIZE 777

static int pipes[NWORKERS][2];
static long on_count, off_count, mixed_count, nop_count;
static unsigned char (*slab)[4096]; /* set aside at start: nops touch it */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *volatile sink;

__attribute__((noinline)) static void handle_request(void)
{
    void *p[REQ_ALLOCS];
    for (int i = 0; i < REQ_ALLOCS; i++) {
        p[i] = malloc(REQ_SIZE);
        memset(p[i], i, REQ_SIZE);
        sink = p[i];
    }
    for (int i = 0; i < REQ_ALLOCS; i++)
        free(p[i]);
}

/* Serves one request, 'r' or 'n', as worker w. */
static void serve(long w, char c)
{
    if (c == 'n') { /* served from memory set aside at start: no allocation */
        memset(slab[w], (int)nop_count, sizeof slab[0]);
        __atomic_fetch_add(&nop_count, 1, __ATOMIC_RELAXED);
        return;
    }
    {
        int a = rheaper_is_enabled();
        handle_request();
        int b = rheaper_is_enabled();
        pthread_mutex_lock(&mu);
        if (a && b)
            on_count++;
        else if (!a && !b)
            off_count++;
        else
            mixed_count++;
        pthread_mutex_unlock(&mu);
    }
}

static void *worker(void *arg)
{
    int fd = pipes[(long)arg][0];
    char c;
    while (read(fd, &c, 1) == 1 && (c == 'r' || c == 'n'))
        serve((long)arg, c);
    return NULL;
}

/* Runs every 10 ms when idle, as servers' timers do: the toggle happens at the
 * next allocation of any thread, and this is one. */
__attribute__((noinline)) static void heartbeat(void)
{
    void *p = malloc(33);
    sink = p;
    free(p);
}

int main(void)
{
    pthread_t th[NWORKERS];
    setvbuf(stdout, NULL, _IONBF, 0);
    /* CTL_INLINE=1: no worker threads, the main thread serves (a process
     * that may not create threads) */
    int inl = getenv("CTL_INLINE") != NULL;
    if (getenv("CTL_VFORK")) {
        pid_t c = vfork();
        if (c == 0) {
            void *volatile q = malloc(10); /* the first hooked call: the child's */
            (void)q;
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        int st = 0;
        if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            return 1;
    }
    slab = malloc(NWORKERS * sizeof *slab); /* the server's first allocation */
    if (!slab)
        return 1;
    for (long i = 0; i < NWORKERS && !inl; i++) {
        if (pipe(pipes[i]) != 0)
            return 1;
        pthread_create(&th[i], NULL, worker, (void *)i);
    }
    /* CTL_IDLE=1: no heartbeat, a server that allocates only for requests */
    int idle = getenv("CTL_IDLE") != NULL;
    printf("ready %d\n", (int)getpid());
    char buf[4096];
    size_t len = 0;
    long n = 0;
    int quit = 0;
    while (!quit) {
        struct pollfd pfd = {0, POLLIN, 0};
        int r = poll(&pfd, 1, 10);
        if (r <= 0) {
            if (!idle)
                heartbeat();
            continue;
        }
        ssize_t got = read(0, buf + len, sizeof buf - 1 - len);
        if (got <= 0)
            break;
        len += (size_t)got;
        char *nl;
        while (!quit && (nl = memchr(buf, '\n', len))) {
            *nl = '\0';
            if (!strcmp(buf, "quit")) {
                quit = 1;
            } else if (!strcmp(buf, "req")) {
                if (inl)
                    n++, serve(0, 'r');
                else if (write(pipes[n++ % NWORKERS][1], "r", 1) != 1)
                    return 1;
            } else if (!strcmp(buf, "nop")) {
                static long k;
                if (inl)
                    serve(0, 'n');
                else if (write(pipes[k++ % NWORKERS][1], "n", 1) != 1)
                    return 1;
            } else if (!strcmp(buf, "sync")) {
                /* replies once every request sent so far is served */
                for (;;) {
                    pthread_mutex_lock(&mu);
                    long done = on_count + off_count + mixed_count;
                    pthread_mutex_unlock(&mu);
                    if (done == n)
                        break;
                    usleep(1000);
                }
                printf("synced %ld\n", n);
            }
            size_t used = (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, len - used);
            len -= used;
        }
    }
    for (int i = 0; i < NWORKERS && !inl; i++)
        close(pipes[i][1]);
    for (int i = 0; i < NWORKERS && !inl; i++)
        pthread_join(th[i], NULL);
    fprintf(stderr, "served %ld on %ld off %ld mixed\n", on_count, off_count, mixed_count);
    if (nop_count)
        fprintf(stderr, "nops %ld\n", nop_count);
    return 0;
}
