/* cpu_cost.c: what one CPU sample costs the sampled thread (
 * bench/cpu_bench.sh, docs/benchmarks.md).
 *
 * The kernel delivers a thread's CPU-time timer at most once per tick (250 Hz
 * here), so at the rates users ask for a sample's cost is far below what an
 * end-to-end run on a noisy machine can resolve. This program makes it
 * visible: it sends the sampling signal to its own thread at a high rate from
 * a POSIX timer on CLOCK_MONOTONIC (a high-resolution timer, not limited by
 * the tick), so rheaper's handler (installed because the run asks for CPU
 * samples, RHEAPER_CPU_HZ=1) takes thousands of real samples per second: the
 * signal carries si_code SI_TIMER like rheaper's own timers' do. The program
 * never sets a disposition for that signal, so rheaper does not stand aside.
 *
 * The work is BLOCKS pairs of blocks of the same fixed work, one block of
 * each pair with the timer armed and one without, in the order off-on,
 * on-off, off-on... (so a drift of the machine's speed cancels), each block's
 * CPU time read from the thread's own CPU clock (user + system, the handler
 * and the kernel's signal delivery included). Pairing neighbouring blocks
 * inside one process is what removes the machine's noise: the same variant's
 * whole runs vary by tens of percent on a shared VM, two 20 ms blocks a few
 * milliseconds apart hardly do.
 *
 * The work walks down a call chain of DEPTH..DEPTH+7 frames, choosing one of
 * four functions at every level from a random stream, so nearly every sample
 * sees a stack never seen before (the handler's costliest path: a STACK
 * record besides the sample), and at the bottom does arithmetic and a memset
 * (libc's frames: no frame pointers, CFI to walk out); every 8th chain is
 * followed by a malloc + memset + free from one call site (with the heap
 * recorded, one stack for all).
 *
 * With --own SIG the program installs its own empty handler for signal SIG
 * and sends SIG instead: the cost of the signal alone, to set beside the cost
 * with rheaper's handler. It counts those signals itself.
 *
 * On a virtual machine the timer is not free: every expiry of a
 * high-resolution timer is a timer interrupt, and every interrupt and every
 * re-programming of the timer can be an exit to the hypervisor, all charged to
 * the interrupted thread. rheaper's own timers ride on the scheduler's tick,
 * which runs anyway. So --self N sends the signal without any timer instead:
 * the thread queues it to itself with rt_tgsigqueueinfo and si_code SI_TIMER
 * (allowed to a process for itself) every N-th walk down the chain, and the
 * handler runs on the return from that system call. The count is then exact
 * (printed as sent): rheaper must write one sample per signal, which the test
 * suite checks (tests/integration/cpu, case cost-count). The interrupted instruction is
 * then always the same one in libc's syscall(), so the rule lookup of frame
 * 0 is always cached: the timer mode is the one with fresh frames 0.
 *
 * usage: cpu_cost [--hz N | --self N] [--pairs N] [--work N] [--depth N]
 *                 [--own SIG]
 * prints: "pairs P work W hz H self N own_signals S sent Q on_wall_ns X
 *          on_cpu_ns A off_cpu_ns B median_delta_ns M"
 * (sums over the pairs; M is the median over pairs of on - off). The samples
 * rheaper took are in the profile (meta cpu_samples, cpu_samples_dropped).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static volatile uint64_t sink;
static volatile unsigned long own_count;
/* --self: the signal to send, every self_every-th chain, while self_on */
static int self_sig;
static long self_every, self_left;
static int self_on;
static unsigned long self_sent;
static pid_t self_pid, self_tid;

static inline uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Queues self_sig to the calling thread as a timer's signal (SI_TIMER). */
static __attribute__((noinline)) void send_self(void)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = self_sig;
    si.si_code = SI_TIMER;
    if (syscall(SYS_rt_tgsigqueueinfo, self_pid, self_tid, self_sig, &si) != 0) {
        perror("cpu_cost: rt_tgsigqueueinfo");
        exit(1);
    }
    self_sent++;
}

static char scratch[2048];

/* The bottom of a chain: arithmetic, then libc's memset (no frame pointer). */
static __attribute__((noinline)) uint64_t leaf(uint64_t x)
{
    for (int i = 0; i < 200; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull + (x >> 29);
    size_t n = 64 + (x & 1023);
    memset(scratch, (int)x, n);
    x += (uint64_t)scratch[n / 2];
    if (self_on && --self_left <= 0) {
        self_left = self_every;
        send_self();
    }
    return x;
}

static uint64_t down(int d, uint64_t x);


/* Four functions of one level: the stack's shape depends on the path. */
#define RH_LEVEL(name, k)                                                  \
    static __attribute__((noinline)) uint64_t name(int d, uint64_t x)    \
    {                                                                      \
        volatile uint64_t frame[2] = {x, (uint64_t)d};                     \
        uint64_t r = down(d - 1, x + k) ^ frame[0];                        \
        return r + frame[1];                                               \
    }
RH_LEVEL(lv0, 1)
RH_LEVEL(lv1, 3)
RH_LEVEL(lv2, 5)
RH_LEVEL(lv3, 7)

static __attribute__((noinline)) uint64_t down(int d, uint64_t x)
{
    if (d <= 0)
        return leaf(x);
    switch (next() & 3) {
    case 0: return lv0(d, x);
    case 1: return lv1(d, x);
    case 2: return lv2(d, x);
    default: return lv3(d, x);
    }
}

/* One block from malloc, used and freed, at one call site: with the heap
 * recorded, one stack for all of them (a block per chain, each with a new
 * stack, would fill the stack table and the profile). */
static __attribute__((noinline)) uint64_t churn(uint64_t x)
{
    size_t n = 64 + (x & 1023);
    char *p = malloc(n);
    if (p) {
        memset(p, (int)x, n);
        x += (uint64_t)p[n / 2];
        sink = (uint64_t)(uintptr_t)p;
        free(p);
    }
    return x;
}

/* One unit of work: a chain of DEPTH..DEPTH+7 levels, and every 8th unit a
 * malloc and free. */
static inline uint64_t unit(long w, long depth, uint64_t x)
{
    x += down((int)(depth + (next() & 7)), x);
    if ((w & 7) == 0)
        x = churn(x);
    return x;
}

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void own_handler(int sig)
{
    (void)sig;
    own_count++;
}

static void arm(timer_t t, long ns)
{
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    its.it_interval.tv_sec = ns / 1000000000;
    its.it_interval.tv_nsec = ns % 1000000000;
    its.it_value = its.it_interval;
    if (timer_settime(t, 0, &its, NULL) != 0) {
        perror("cpu_cost: timer_settime");
        exit(1);
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long hz = 10000, pairs = 100, work = 10000, depth = 24;
    int own = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        long v = atol(argv[i + 1]);
        if (!strcmp(argv[i], "--hz")) hz = v;
        else if (!strcmp(argv[i], "--pairs")) pairs = v;
        else if (!strcmp(argv[i], "--work")) work = v;
        else if (!strcmp(argv[i], "--depth")) depth = v;
        else if (!strcmp(argv[i], "--own")) own = (int)v;
        else if (!strcmp(argv[i], "--self")) self_every = v;
        else {
            fprintf(stderr, "usage: cpu_cost [--hz N | --self N] [--pairs N] [--work N] [--depth N] [--own SIG]\n");
            return 2;
        }
    }
    if (hz <= 0 || pairs <= 0 || work <= 0 || depth < 1 || self_every < 0) {
        fprintf(stderr, "cpu_cost: --hz, --pairs, --work, --depth and --self must be positive\n");
        return 2;
    }
    if (own) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = own_handler;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        if (sigaction(own, &sa, NULL) != 0) {
            perror("cpu_cost: sigaction");
            return 1;
        }
    }
    self_sig = own ? own : SIGPROF;
    self_pid = getpid();
    self_tid = (pid_t)syscall(SYS_gettid);
    self_left = self_every;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = own ? own : SIGPROF;
    sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    timer_t t;
    if (timer_create(CLOCK_MONOTONIC, &sev, &t) != 0) {
        perror("cpu_cost: timer_create");
        return 1;
    }
    long ns = 1000000000L / hz;
    int64_t *delta = malloc((size_t)pairs * sizeof *delta);
    if (!delta)
        return 1;
    uint64_t x = 1, on_cpu = 0, off_cpu = 0, on_wall = 0;
    /* one unmeasured block first: page faults, caches, the first stacks */
    for (long w = 0; w < work; w++)
        x = unit(w, depth, x);
    for (long p = 0; p < pairs; p++) {
        uint64_t c[2];
        for (int half = 0; half < 2; half++) {
            int on = (p & 1) ? half == 0 : half == 1;
            if (on && self_every)
                self_on = 1;
            else if (on)
                arm(t, ns);
            uint64_t w0 = wall_ns(), c0 = cpu_ns();
            for (long w = 0; w < work; w++)
                x = unit(w, depth, x);
            uint64_t c1 = cpu_ns(), w1 = wall_ns();
            if (on) {
                if (self_every)
                    self_on = 0;
                else
                    arm(t, 0);
                on_wall += w1 - w0;
            }
            c[on] = c1 - c0;
        }
        on_cpu += c[1];
        off_cpu += c[0];
        delta[p] = (int64_t)c[1] - (int64_t)c[0];
    }
    qsort(delta, (size_t)pairs, sizeof *delta, cmp_i64);
    int64_t med = pairs % 2 ? delta[pairs / 2] : (delta[pairs / 2 - 1] + delta[pairs / 2]) / 2;
    sink = x;
    printf("pairs %ld work %ld hz %ld self %ld own_signals %lu sent %lu on_wall_ns %llu "
           "on_cpu_ns %llu off_cpu_ns %llu median_delta_ns %lld\n",
           pairs, work, self_every ? 0 : hz, self_every, own_count, self_sent, (unsigned long long)on_wall, (unsigned long long)on_cpu,
           (unsigned long long)off_cpu, (long long)med);
    free(delta);
    timer_delete(t);
    return 0;
}
