/* filters_prog.c: a seeded random plan of threads, allocations, frees and
 * realloc chains for the filter test (filters_test.sh), run through the real
 * runtime (built with rheaper-cc, RHEAPER_SCOPE=program).
 *
 *   filters_prog SEED
 *
 * The threads take turns holding one baton, so the plan is one sequence of
 * events whatever the scheduler does, and the same seed gives the same run.
 * The holder of the baton runs a burst of operations on a shared table of
 * blocks, then hands the baton to a thread picked at random (often the
 * newest, or one that has not had a turn yet: every worker gets one). What the plan is made of, on purpose:
 *   - threads created in every order: any thread (main or a worker) may
 *     create the next worker during its burst, so creator and created come
 *     in random order, and a worker may retire (return) after any turn;
 *   - blocks freed by threads that appear later: a worker's first turn
 *     starts with frees and reallocs of blocks others made, before its own
 *     first allocation (the class of reader bug this test guards);
 *   - address reuse across threads: a block freed by one thread is often
 *     followed by an allocation of the same size in that thread, which
 *     glibc serves from the freed chunk;
 *   - realloc chains: reallocs of a slot that was itself reallocated.
 * There are 18 to 48 threads, so that thread tables sized in powers of two
 * (16, 32) grow while a later thread frees an older block.
 * Every worker names itself fw-K (K = 1, 2, ... in creation order) before
 * its first allocation, and leaks a few blocks from leak_keep. Blocks still
 * in the table at the end are leaked too.
 *
 * The program counts what it did and prints one line at the end:
 *   plan alloc_blocks N alloc_bytes N freed_blocks N freed_bytes N
 *        leaked_blocks N leaked_bytes N temporary N threads N
 * where temporary is heaptrack's rule (sql.md) computed on the program's own
 * sequence: a free is temporary when the event just before it (all threads)
 * is an allocation of the same size from the same stack. A stack is one of
 * the op functions below called from main's loop or a worker's loop. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void *lib_alloc(size_t n);

#define NSLOT 96
#define MAXT 48

enum { S_SMALL, S_BIG, S_CALLOC, S_LIB, S_REALLOC, S_TEMP, S_LEAK, S_NSITES };

struct slot {
    char *p;
    size_t size;
    int site; /* the stack: op site * 2 + (made by main) */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn;            /* who holds the baton: 0 = main, K = worker K */
static int quit;            /* set by main at the end: workers return */
static int nthreads = 1;    /* threads created so far, main included */
static int want_threads;    /* workers to create, plus main */
static int alive[MAXT + 1]; /* 1 while thread K takes turns */
static int fresh[MAXT + 1]; /* 1 until worker K's first turn */
static pthread_t tids[MAXT + 1];
static uint64_t rng;
static struct slot tab[NSLOT];

/* the program's own tally */
static long long n_alloc, b_alloc, n_free, b_free, n_temp;
/* the last event of the run: 1 alloc (size, site), 2 free */
static int last_ev;
static size_t last_size;
static int last_site;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static unsigned pick(unsigned n)
{
    return (unsigned)(rnd() % n);
}

static void on_alloc(size_t size, int site)
{
    n_alloc++;
    b_alloc += (long long)size;
    last_ev = 1;
    last_size = size;
    last_site = site;
}

static void on_free(const struct slot *s)
{
    n_free++;
    b_free += (long long)s->size;
    if (last_ev == 1 && last_size == s->size && last_site == s->site)
        n_temp++;
    last_ev = 2;
}

__attribute__((noinline)) static void *site_small(size_t n)
{
    char *p = malloc(n);
    memset(p, 1, 8);
    return p;
}

__attribute__((noinline)) static void *site_big(size_t n)
{
    char *p = malloc(n);
    memset(p, 2, 8);
    return p;
}

__attribute__((noinline)) static void *site_calloc(size_t n)
{
    return calloc(n / 8, 8);
}

__attribute__((noinline)) static void *site_realloc(void *p, size_t n)
{
    char *q = realloc(p, n);
    memset(q, 3, 8);
    return q;
}

__attribute__((noinline)) static void site_temp(size_t n)
{
    char *volatile p = malloc(n);
    memset(p, 4, 8);
    free(p);
}

__attribute__((noinline)) static void *leak_keep(size_t n)
{
    char *p = malloc(n);
    memset(p, 5, 8);
    return p;
}

static int site_of(int op, int me)
{
    return op * 2 + (me == 0);
}

/* Fills an empty slot with a new block from one of the allocating sites. */
static void op_alloc(int me)
{
    int i = (int)pick(NSLOT);
    if (tab[i].p)
        return;
    int op = (int)pick(4);
    size_t n;
    char *p;
    switch (op) {
    case S_SMALL:
        n = 8 + pick(249);
        p = site_small(n);
        break;
    case S_BIG:
        n = 1000 + pick(4001);
        p = site_big(n);
        break;
    case S_CALLOC:
        n = 8 * (1 + pick(64));
        p = site_calloc(n);
        break;
    default:
        n = 64 + pick(1985);
        p = lib_alloc(n);
        break;
    }
    tab[i] = (struct slot){p, n, site_of(op, me)};
    on_alloc(n, tab[i].site);
}

/* Frees a block of the table, whoever made it; then, half the time,
 * allocates the same size at once (glibc hands back the freed chunk: the
 * address is reused by this thread). Returns 1 when it freed a block. */
static int op_free(int me, int reuse)
{
    int i = (int)pick(NSLOT);
    if (!tab[i].p)
        return 0;
    size_t n = tab[i].size;
    on_free(&tab[i]);
    free(tab[i].p);
    tab[i].p = NULL;
    if (reuse && pick(2)) {
        tab[i] = (struct slot){site_small(n), n, site_of(S_SMALL, me)};
        on_alloc(n, tab[i].site);
    }
    return 1;
}

/* Reallocs a block of the table, whoever made it (a chain when the slot
 * was reallocated before). Returns 1 when it did. */
static int op_realloc(int me)
{
    int i = (int)pick(NSLOT);
    if (!tab[i].p)
        return 0;
    size_t n = 16 + pick(3000);
    on_free(&tab[i]);
    char *q = site_realloc(tab[i].p, n);
    tab[i] = (struct slot){q, n, site_of(S_REALLOC, me)};
    on_alloc(n, tab[i].site);
    return 1;
}

static void op_temp(int me)
{
    size_t n = 16 + pick(200);
    struct slot s = {NULL, n, site_of(S_TEMP, me)};
    on_alloc(n, s.site);
    site_temp(n);
    on_free(&s);
}

static void *worker(void *arg);

/* Creates the next worker (called by the baton's holder). */
static void op_spawn(void)
{
    if (nthreads >= want_threads)
        return;
    int k = nthreads++;
    alive[k] = 1;
    fresh[k] = 1;
    if (pthread_create(&tids[k], NULL, worker, (void *)(intptr_t)k)) {
        static const char m[] = "filters_prog: pthread_create failed\n";
        (void)!write(2, m, sizeof m - 1);
        _exit(2);
    }
}

/* One turn of thread `me`; the baton is held. */
__attribute__((noinline)) static void burst(int me)
{
    if (fresh[me]) {
        /* frees and reallocs of others' blocks before anything of its own:
         * the thread's first event is a free (its id in the profile, given
         * in order of appearance, comes with a free of an older block) */
        fresh[me] = 0;
        int done = 0;
        for (int k = 0; k < 400 && !done; k++)
            done = op_free(me, 0);
        for (int k = 0; k < 400 && done < 6; k++)
            done += pick(2) ? op_free(me, 0) : op_realloc(me);
        for (int k = 0; k < 3; k++) {
            size_t n = 40 + 8 * (size_t)me;
            leak_keep(n);
            on_alloc(n, site_of(S_LEAK, me));
        }
    }
    int len = 1 + (int)pick(10);
    for (int k = 0; k < len; k++) {
        unsigned r = pick(100);
        if (r < 35)
            op_alloc(me);
        else if (r < 60)
            op_free(me, 1);
        else if (r < 78)
            op_realloc(me);
        else if (r < 94)
            op_temp(me);
        else
            op_spawn();
    }
}

/* The oldest worker that has not had a turn yet, or 0. */
static int first_fresh(void)
{
    for (int k = 1; k < nthreads; k++)
        if (fresh[k])
            return k;
    return 0;
}

/* Hands the baton on: to the newest thread half the time, else to a worker
 * that has not had its turn yet, else to any live one. Called with mu held. */
static void pass_baton(void)
{
    int next = 0;
    if (pick(2) && alive[nthreads - 1])
        next = nthreads - 1;
    else if (first_fresh())
        next = first_fresh();
    else {
        int live[MAXT + 1], n = 0;
        for (int k = 0; k < nthreads; k++)
            if (alive[k])
                live[n++] = k;
        next = live[pick((unsigned)n)];
    }
    turn = next;
    pthread_cond_broadcast(&cv);
}

static void pause_us(long us)
{
    struct timespec ts = {0, us * 1000L};
    nanosleep(&ts, NULL);
}

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg;
    char name[16];
    snprintf(name, sizeof name, "fw-%d", me);
    pthread_setname_np(pthread_self(), name);
    pthread_mutex_lock(&mu);
    for (;;) {
        while (turn != me && !quit)
            pthread_cond_wait(&cv, &mu);
        if (quit)
            break;
        burst(me);
        int retire = pick(8) == 0;
        if (retire)
            alive[me] = 0;
        pass_baton();
        if (retire)
            break;
        pthread_mutex_unlock(&mu);
        pause_us(30);
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(int argc, char **argv)
{
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
    rng = seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
    if (!rng)
        rng = 1;
    for (int k = 0; k < 5; k++)
        rnd();
    /* 17 to MAXT - 1 workers, plus main: past 16 and often 32 threads, where
     * a reader's thread table grows */
    want_threads = 18 + (int)pick(MAXT - 17);
    int turns = 150 + (int)pick(100);
    alive[0] = 1;
    pthread_mutex_lock(&mu);
    for (int t = 0; t < turns || nthreads < want_threads || first_fresh(); t++) {
        while (turn != 0)
            pthread_cond_wait(&cv, &mu);
        burst(0);
        if (t == 0)
            op_spawn(); /* at least one worker early */
        pass_baton();
        pthread_mutex_unlock(&mu);
        pause_us(30);
        pthread_mutex_lock(&mu);
    }
    while (turn != 0)
        pthread_cond_wait(&cv, &mu);
    quit = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int k = 1; k < nthreads; k++)
        pthread_join(tids[k], NULL);
    long long n_leak = n_alloc - n_free, b_leak = b_alloc - b_free;
    char line[320];
    int len = snprintf(line, sizeof line,
                       "plan alloc_blocks %lld alloc_bytes %lld freed_blocks %lld freed_bytes %lld"
                       " leaked_blocks %lld leaked_bytes %lld temporary %lld threads %d\n",
                       n_alloc, b_alloc, n_free, b_free, n_leak, b_leak, n_temp, nthreads);
    (void)!write(1, line, (size_t)len);
    return 0;
}
