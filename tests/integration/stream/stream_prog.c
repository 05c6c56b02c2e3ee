/* stream_prog.c: the program tests/integration/stream/run.sh profiles over RHEAPER_STREAM
 *. Every count it makes is fixed, so the collected profile can be
 * checked against a local recording and against these numbers.
 *
 *   stream_prog threads [fill] 4 threads x 20000 malloc/free pairs of 16+i
 *                              bytes and 10 leaked blocks of 100+i bytes; first
 *                              closes every fd from 3 up (as daemons do) and
 *                              checks that its next open gets fd 3: the
 *                              runtime's socket is not in the program's table;
 *                              with fill, then opens /dev/null until EMFILE and
 *                              keeps every descriptor its limit allows open
 *                              while the threads run
 *   stream_prog pause FLAG [N] phase 1 (1000 pairs of 48 bytes), prints
 *                              "phase1", waits until FLAG exists, phase 2
 *                              (N pairs of 64 bytes, 300000 unless given:
 *                              several chunks), prints "finished", exits 7
 *   stream_prog fork           parent: 5 leaked blocks of 111 bytes; fork;
 *                              child: 20 blocks of 222 bytes, 3 leaked, exit;
 *                              parent: waits, 7 leaked blocks of 333 bytes
 *   stream_prog idle|busy      one block of 77777 bytes from marker_alloc,
 *                              prints "allocated", then idle: sleeps (120 s);
 *                              busy: a malloc/free pair of 24 bytes every
 *                              10 ms (120 s: its chunk fills in no less than
 *                              10 s, so only what open chunks hold can reach
 *                              the collector sooner); the test kills it
 *                              before
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void *volatile sink;

static void *worker(void *arg)
{
    long id = (long)arg;
    for (int i = 0; i < 20000; i++) {
        void *p = malloc(16 + (size_t)id);
        sink = p;
        free(p);
    }
    for (int i = 0; i < 10; i++)
        sink = malloc(100 + (size_t)id);
    return NULL;
}

static int run_threads(int fill)
{
    sink = malloc(1); /* the first event: the runtime starts recording */
    free(sink);
    /* a daemon's start-up: close everything from 3 up, then open a log */
    syscall(SYS_close_range, 3u, ~0u, 0u);
    int fd = open("/dev/null", O_RDONLY);
    if (fd != 3) {
        printf("open after close_range gave fd %d, not 3\n", fd);
        return 1;
    }
    int last = fd;
    if (fill) {
        int n = 1;
        while ((last = open("/dev/null", O_RDONLY)) >= 0)
            n++;
        printf("filled %d descriptors from 3\n", n);
        last = 3 + n - 1;
    }
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    for (int k = fd; k <= last; k++)
        close(k);
    printf("threads done\n");
    return 0;
}

static void pairs(int n, size_t size)
{
    for (int i = 0; i < n; i++) {
        void *p = malloc(size);
        sink = p;
        free(p);
    }
}

static int run_pause(const char *flag, int n)
{
    pairs(1000, 48);
    printf("phase1\n");
    fflush(stdout);
    while (access(flag, F_OK) != 0)
        usleep(10000);
    pairs(n, 64);
    printf("finished\n");
    fflush(stdout); /* before exit: the runtime's exit handler may wait for the stream */
    return 7;
}

static int run_fork(void)
{
    for (int i = 0; i < 5; i++)
        sink = malloc(111);
    fflush(stdout);
    pid_t c = fork();
    if (c < 0)
        return 1;
    if (c == 0) {
        void *keep[20];
        for (int i = 0; i < 20; i++)
            keep[i] = malloc(222);
        for (int i = 3; i < 20; i++)
            free(keep[i]);
        sink = keep[0];
        printf("child %d\n", (int)getpid());
        exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    for (int i = 0; i < 7; i++)
        sink = malloc(333);
    printf("parent %d\n", (int)getpid());
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

__attribute__((noinline)) static void *marker_alloc(void)
{
    return malloc(77777);
}

/* stream_prog idle|busy: the block the collector must have within a second */
static int run_marker(int busy)
{
    static char obuf[256];
    setvbuf(stdout, obuf, _IOLBF, sizeof obuf); /* no allocation of stdio's */
    sink = marker_alloc();
    printf("allocated\n");
    if (!busy) {
        for (int i = 0; i < 120; i++)
            sleep(1);
        return 0;
    }
    for (int i = 0; i < 12000; i++) {
        void *p = malloc(24);
        sink = p;
        free(p);
        usleep(10000);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "idle") || !strcmp(argv[1], "busy")))
        return run_marker(!strcmp(argv[1], "busy"));
    if (argc >= 2 && !strcmp(argv[1], "threads"))
        return run_threads(argc >= 3 && !strcmp(argv[2], "fill"));
    if (argc >= 3 && !strcmp(argv[1], "pause"))
        return run_pause(argv[2], argc >= 4 ? atoi(argv[3]) : 300000);
    if (argc >= 2 && !strcmp(argv[1], "fork"))
        return run_fork();
    fprintf(stderr, "usage: stream_prog threads | pause FLAG | fork\n");
    return 2;
}
