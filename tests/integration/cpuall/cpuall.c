/* cpuall.c: CPU samples of every thread (tests/integration/cpuall/run.sh). Four threads
 * compute and never allocate while recording:
 *   - "before", started before tracking is enabled (rheaper_enable, below);
 *   - "after", started after, through the program's pthread_create;
 *   - "libthread", started by libspinlib.so with libc's own pthread_create;
 *   - main, which computes in main_spin.
 * Tracking runs from rheaper_enable (cpu_hz 499) to rheaper_disable, until
 * the threads used 6 s of CPU together (at most SECONDS s). Around that window the program reads each thread's CPU time
 * (utime + stime) from /proc/self/task/TID/stat and prints
 * "SHARE name percent" of the window's CPU time, and "TID name tid".
 *
 * usage: cpuall MAX_SECONDS
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rheaper.h"

int spinlib_start(void);
void spinlib_stop(void);

/* CPU time the window lasts, in clock ticks of /proc stat (1/100 s) */
#define CPU_TICKS 600

static volatile int stop;
static volatile unsigned long sink;

#define SPIN(name)                                                                           \
    __attribute__((noinline)) static void name(void)                                        \
    {                                                                                        \
        unsigned long x = sink;                                                              \
        for (int i = 0; i < 20000; i++)                                                      \
            x = x * 2862933555777941757ul + 3037000493ul + (unsigned long)__LINE__;          \
        sink = x;                                                                            \
    }
SPIN(before_spin)
SPIN(after_spin)
SPIN(main_spin)

static void *before_main(void *v)
{
    (void)v;
    while (!stop)
        before_spin();
    return NULL;
}
static void *after_main(void *v)
{
    (void)v;
    while (!stop)
        after_spin();
    return NULL;
}

/* utime + stime of thread tid, in clock ticks; -1 if unreadable */
static long thread_ticks(int tid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the name may hold spaces */
    if (!p)
        return -1;
    long ut = 0, st = 0;
    /* fields after ")": 3 state ... 14 utime 15 stime */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %ld %ld", &ut, &st) != 2)
        return -1;
    return ut + st;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    pthread_t tb, ta;
    if (pthread_create(&tb, NULL, before_main, NULL) != 0)
        return 1;
    pthread_setname_np(tb, "before");
    usleep(100000); /* "before" runs untracked for a while */

    struct rheaper_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.cpu_hz = 499;
    if (rheaper_enable(&cfg) != RHEAPER_OK)
        return 2;
    if (spinlib_start() != 0)
        return 1;
    if (pthread_create(&ta, NULL, after_main, NULL) != 0)
        return 1;
    pthread_setname_np(ta, "after");
    usleep(50000); /* every thread is running */

    /* the window: tids by name from /proc/self/task/TID/comm */
    const char *names[4] = {"before", "after", "libthread", "cpuall"};
    int tids[4] = {-1, -1, -1, (int)getpid()};
    long t0[4], t1[4];
    {
        char path[64], comm[64];
        for (int tid = getpid(); tid < getpid() + 4096; tid++) {
            snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
            FILE *f = fopen(path, "r");
            if (!f)
                continue;
            if (fgets(comm, sizeof comm, f)) {
                comm[strcspn(comm, "\n")] = 0;
                for (int k = 0; k < 3; k++)
                    if (!strcmp(comm, names[k]))
                        tids[k] = tid;
            }
            fclose(f);
        }
    }
    for (int k = 0; k < 4; k++)
        if (tids[k] < 0)
            return 3;
    for (int k = 0; k < 4; k++)
        t0[k] = thread_ticks(tids[k]);
    /* until the four threads used CPU_TICKS ticks together (so that one
     * tick is a small part of each share, however loaded the machine), or
     * at most secs s */
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    long used = 0;
    do {
        for (int i = 0; i < 50; i++)
            main_spin();
        clock_gettime(CLOCK_MONOTONIC, &now);
        used = 0;
        for (int k = 0; k < 4; k++) {
            t1[k] = thread_ticks(tids[k]);
            used += t1[k] - t0[k];
        }
    } while (used < CPU_TICKS &&
             (double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < secs);
    rheaper_disable();
    stop = 1;
    spinlib_stop();
    pthread_join(tb, NULL);
    pthread_join(ta, NULL);
    long total = 0;
    for (int k = 0; k < 4; k++)
        total += t1[k] - t0[k];
    for (int k = 0; k < 4; k++) {
        printf("SHARE %s %.2f\n", names[k], total ? 100.0 * (double)(t1[k] - t0[k]) / (double)total : 0.0);
        printf("TID %s %d\n", names[k], tids[k]);
    }
    return 0;
}
