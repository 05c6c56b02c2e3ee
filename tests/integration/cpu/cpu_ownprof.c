/* cpu_ownprof.c: a program that uses SIGPROF itself, as gperftools'
 * ProfilerStart does (setitimer(ITIMER_PROF) and a SIGPROF handler), for the
 * CPU sampling test's signal conflict (tests/integration/cpu/run.sh).
 *
 * usage: cpu_ownprof before|after
 *   before: installs its handler before its first allocation (before the
 *           runtime starts: rheaper must find the handler and stand aside);
 *   after:  allocates first (rheaper, started with RHEAPER_CPU_HZ, already
 *           samples with its own timers), then installs its handler (rheaper
 *           must notice, stop its timers and stand aside).
 * Then it spins for 0.3 s of CPU time under its own ITIMER_PROF and prints
 * what its handler saw: "ticks N foreign M", where foreign counts SIGPROFs
 * that did not come from its itimer (si_code SI_TIMER: a POSIX timer, such as
 * rheaper's). It exits 0 when it got ticks and no foreign signal.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t ticks, foreign;
static volatile unsigned long sink;

static void on_prof(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    if (si->si_code == SI_TIMER)
        foreign++;
    else
        ticks++;
}

static void install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_prof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGPROF, &sa, NULL) != 0) {
        perror("sigaction");
        exit(2);
    }
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Spins for `sec` seconds of this thread's CPU time, allocating now and then. */
static void spin(double sec)
{
    double end = cpu_now() + sec;
    while (cpu_now() < end) {
        char *volatile p = malloc(32);
        p[0] = 1;
        for (int i = 0; i < 100000; i++)
            sink = sink * 6364136223846793005ul + (unsigned long)i;
        free(p);
    }
}

int main(int argc, char **argv)
{
    int before = argc > 1 && !strcmp(argv[1], "before");
    if (before)
        install();
    char *volatile first = malloc(100); /* the runtime starts here */
    first[0] = 1;
    if (!before) {
        spin(0.2); /* rheaper's own timers sample this */
        install();
    }
    struct itimerval it = {{0, 10000}, {0, 10000}};
    if (setitimer(ITIMER_PROF, &it, NULL) != 0) {
        perror("setitimer");
        return 2;
    }
    spin(0.3);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    free(first);
    printf("ticks %s foreign %d\n", ticks > 0 ? "some" : "none", (int)foreign);
    return ticks > 0 && !foreign ? 0 : 1;
}
