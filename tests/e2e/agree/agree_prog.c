/* agree_prog.c: a fixed allocation sequence whose temporary allocations the
 * program counts itself, for comparing rheaper with heaptrack (agree_test.sh).
 *
 *   agree_prog seq     one thread runs the script `seq`: interleaved
 *                      allocations and frees (alloc A, alloc B, free B, free A
 *                      and the like), a realloc, a free(NULL)
 *   agree_prog turns   two threads run the script `turns` in strict turns: each
 *                      operation names the thread that performs it, and a
 *                      thread waits for its turn on a mutex and a condition
 *                      variable (neither allocates). The global order of the
 *                      events is then the script's, in every run and under
 *                      every tool.
 *   agree_prog wait    runs `seq`, prints READY and waits for the end of its
 *                      standard input, so that its profile can be converted
 *                      while it is still being written.
 *
 * Every allocation comes from one of a few noinline "site" functions called
 * from one place each, so a site is one stack. The program prints
 * "EXPECT temporary N": the number of frees that heaptrack's rule calls
 * temporary (docs/sql.md), computed over the script: a
 * free is temporary when the event just before it, among all threads, is an
 * allocation of the same size from the same site. A realloc is a free then an
 * allocation; free(NULL) is no event. The sequence is fixed: the script
 * itself, not a clock or a scheduler, decides every number.
 * Build: rheaper-cc -O1 -g -pthread, or plain cc the same way for heaptrack.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { A_ALLOC = 'a', A_FREE = 'f', A_REALLOC = 'r', A_FREE_NULL = 'n' };

struct op {
    int thread; /* 0 or 1; always 0 in `seq` */
    char what;  /* enum above */
    int slot;   /* block slot */
    int site;   /* allocation site 0..2 for 'a'; 3 is the realloc site */
    size_t size;
};

#define NSLOTS 8

/* alloc A, alloc B, free B, free A, and the variations heaptrack's rule tells
 * apart: equal (size, site) of another block, another size, another site, a
 * realloc's two halves, a free(NULL) in between. */
static const struct op seq[] = {
    {0, 'a', 0, 0, 32}, {0, 'a', 1, 0, 32}, {0, 'f', 1, 0, 0},   {0, 'f', 0, 0, 0},
    {0, 'a', 0, 0, 32}, {0, 'a', 1, 0, 32}, {0, 'f', 0, 0, 0},   {0, 'f', 1, 0, 0},
    {0, 'a', 0, 1, 64}, {0, 'a', 1, 0, 32}, {0, 'f', 0, 0, 0},   {0, 'f', 1, 0, 0},
    {0, 'a', 0, 1, 64}, {0, 'f', 0, 0, 0},  {0, 'a', 0, 1, 64},  {0, 'a', 1, 1, 48},
    {0, 'f', 0, 0, 0},  {0, 'f', 1, 0, 0},  {0, 'a', 2, 2, 100}, {0, 'n', 0, 0, 0},
    {0, 'f', 2, 0, 0},  {0, 'a', 3, 0, 32}, {0, 'r', 3, 3, 200}, {0, 'f', 3, 0, 0},
    {0, 'a', 0, 0, 32}, {0, 'a', 1, 0, 32}, {0, 'a', 2, 0, 32},  {0, 'f', 2, 0, 0},
    {0, 'f', 1, 0, 0},  {0, 'f', 0, 0, 0},  {0, 'a', 4, 2, 24},  {0, 'a', 5, 1, 24},
    {0, 'f', 4, 0, 0},  {0, 'a', 6, 2, 24}, {0, 'f', 5, 0, 0},   {0, 'f', 6, 0, 0},
    {0, 'a', 7, 1, 16}, {0, 'f', 7, 0, 0},  {0, 'a', 7, 1, 16},  {0, 'f', 7, 0, 0},
    {0, 'a', 7, 1, 16}, {0, 'f', 7, 0, 0},  {0, 'a', 3, 2, 8},   {0, 'r', 3, 3, 16},
    {0, 'r', 3, 3, 16}, {0, 'f', 3, 0, 0},
};

/* Two threads, strict turns. Where a per-thread rule and the global one differ
 * (thread 0 allocates, thread 1 allocates, thread 0 frees its block), the
 * global order decides, as in heaptrack; a block freed by the other thread
 * counts like any other. Both threads run the same code, so a site is the same
 * stack in both. */
static const struct op turns[] = {
    {0, 'a', 0, 0, 32}, {1, 'a', 1, 0, 32}, {0, 'f', 0, 0, 0},   {1, 'f', 1, 0, 0},
    {0, 'a', 0, 1, 64}, {1, 'a', 1, 0, 32}, {0, 'f', 0, 0, 0},   {1, 'f', 1, 0, 0},
    {0, 'a', 2, 1, 64}, {1, 'f', 2, 0, 0},  {1, 'a', 3, 2, 100}, {0, 'a', 4, 2, 100},
    {1, 'f', 3, 0, 0},  {0, 'f', 4, 0, 0},  {0, 'a', 5, 1, 64},  {1, 'a', 6, 1, 64},
    {1, 'f', 6, 0, 0},  {0, 'f', 5, 0, 0},  {1, 'a', 7, 0, 32},  {0, 'r', 7, 3, 80},
    {1, 'f', 7, 0, 0},  {0, 'a', 0, 0, 40}, {1, 'n', 0, 0, 0},   {0, 'f', 0, 0, 0},
};

/* ---- the sites: one call instruction each ------------------------------- */

static void *volatile sink;

__attribute__((noinline)) static void *site0(size_t n)
{
    void *p = malloc(n);
    sink = p;
    return p;
}
__attribute__((noinline)) static void *site1(size_t n)
{
    void *p = malloc(n);
    sink = p;
    return p;
}
__attribute__((noinline)) static void *site2(size_t n)
{
    void *p = calloc(1, n);
    sink = p;
    return p;
}
__attribute__((noinline)) static void *
site3_reallocates_a_block_under_a_name_longer_than_its_frame(void *old, size_t n)
{
    void *p = realloc(old, n);
    sink = p;
    return p;
}

static void *slots[NSLOTS];

/* Performs one operation. noinline: every thread calls the sites from here. */
__attribute__((noinline)) static void perform(const struct op *o)
{
    switch (o->what) {
    case A_ALLOC:
        slots[o->slot] = o->site == 0   ? site0(o->size)
                         : o->site == 1 ? site1(o->size)
                                        : site2(o->size);
        if (!slots[o->slot])
            abort();
        memset(slots[o->slot], 1, o->size);
        break;
    case A_REALLOC:
        slots[o->slot] =
            site3_reallocates_a_block_under_a_name_longer_than_its_frame(slots[o->slot], o->size);
        if (!slots[o->slot])
            abort();
        break;
    case A_FREE:
        free(slots[o->slot]);
        slots[o->slot] = NULL;
        break;
    case A_FREE_NULL:
        free(sink == (void *)1 ? sink : NULL); /* free(NULL) the compiler cannot drop */
        break;
    }
}

/* heaptrack's rule over the script: the (size, site) of the last event when
 * it was an allocation, cleared by every free. */
static unsigned expected(const struct op *s, size_t n)
{
    size_t slot_size[NSLOTS] = {0};
    int slot_site[NSLOTS] = {0};
    int last = 0, last_site = -1;
    size_t last_size = 0;
    unsigned tmp = 0;
    for (size_t i = 0; i < n; i++) {
        const struct op *o = &s[i];
        if (o->what == A_FREE || o->what == A_REALLOC) {
            tmp += last && last_size == slot_size[o->slot] && last_site == slot_site[o->slot];
            last = 0;
        }
        if (o->what == A_ALLOC || o->what == A_REALLOC) {
            slot_size[o->slot] = o->size;
            slot_site[o->slot] = o->site;
            last = 1;
            last_size = o->size;
            last_site = o->site;
        }
    }
    return tmp;
}

/* ---- strict turns --------------------------------------------------------- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static size_t pc; /* next operation of `turns` */
static int go;    /* set once both threads exist */

static void *turn_thread(void *arg)
{
    int me = (int)(long)arg;
    const size_t n = sizeof turns / sizeof turns[0];
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!go || (pc < n && turns[pc].thread != me))
            pthread_cond_wait(&cv, &mu);
        if (pc >= n)
            break;
        pthread_mutex_unlock(&mu);
        perform(&turns[pc]); /* only the thread whose turn it is gets here */
        pthread_mutex_lock(&mu);
        pc++;
        pthread_cond_broadcast(&cv);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "seq")) { /* further arguments: ignored */
        for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++)
            perform(&seq[i]);
        printf("EXPECT temporary %u\n", expected(seq, sizeof seq / sizeof seq[0]));
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "turns")) {
        pthread_t t[2];
        for (long i = 0; i < 2; i++)
            if (pthread_create(&t[i], NULL, turn_thread, (void *)i) != 0)
                abort();
        pthread_mutex_lock(&mu);
        go = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        printf("EXPECT temporary %u\n", expected(turns, sizeof turns / sizeof turns[0]));
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "wait")) {
        for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++)
            perform(&seq[i]);
        printf("READY\n");
        fflush(stdout);
        while (getchar() != EOF) /* until stdin closes: a profile still being written */
            ;
        return 0;
    }
    fprintf(stderr, "usage: agree_prog seq|turns|wait\n");
    return 2;
}
