/* wl_scale.c: the scale workload (bench/scale.sh,
 * docs/benchmarks.md).
 *
 *   wl_scale [ALLOCATIONS [THREADS]]        (defaults: 20000 allocations, 4 threads)
 *
 * A stand-in for an hour of a busy server, at a chosen number of allocations:
 *
 * - THREADS worker threads share ALLOCATIONS between them (the first takes the
 *   remainder), each drawing from its own xorshift generator, so a run is
 *   deterministic apart from addresses and times.
 * - Every ordinary allocation goes through 4 frames chosen from a table of 8
 *   step functions (step_0 .. step_7, made by one macro) by the digits of a
 *   12-bit path number, so there are 4096 distinct stacks; the last step calls
 *   the allocator wrapper xmalloc (checks for NULL, called from 9 places), so
 *   frame 0 of nearly every stack is xmalloc.
 * - Half the blocks are freed at once (temporary); the other half replace a
 *   random slot of the thread's ring of RING_SLOTS blocks, freeing the old one.
 *   The live set is therefore the rings, the same for 10 M and 100 M
 *   allocations. Sizes are 16 to 1024 bytes, 4 of them per path.
 * - The planted leak: remember_session (through xmalloc) leaks LEAK_SIZE bytes
 *   once every ALLOCATIONS / (THREADS * LEAKS_PER_THREAD) allocations of each
 *   thread, evenly over the whole run, never freed.
 * - The decoy: load_decoy_table mallocs DECOY_SIZE bytes once at start-up and
 *   never frees it; it is larger than the whole leak, so ranking leaks by bytes
 *   alone would put it first.
 *
 * Everything else is freed before exit. At the end the program states what its
 * profile must hold with expect.h's EXPECT lines (allocation count, leaked
 * blocks and bytes, the leak's and the decoy's functions, the distinct stacks
 * it used) and writes one "wl_scale:" line of the same facts to stderr, which
 * bench/scale.sh reads. Output uses write(2) only, so it adds no rows
 * in a dynamic link (the figures assume one: a -static build also records
 * libc's own allocations).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "../tests/e2e/programs/expect.h"

#define MAX_THREADS 64
#define DEPTH 4                    /* step frames per stack */
#define PATHS 4096                 /* 8^DEPTH distinct paths */
#define RING_SLOTS 2048            /* live blocks per thread */
#define LEAKS_PER_THREAD 256
#define LEAK_SIZE 256
#define DECOY_SIZE (1 << 20)       /* > THREADS * LEAKS_PER_THREAD * LEAK_SIZE for THREADS <= 16 */

static long g_per_thread[MAX_THREADS];
static long g_leaks[MAX_THREADS];          /* leaked blocks per thread */
static void *g_rings[MAX_THREADS][RING_SLOTS];
static _Atomic uint64_t g_paths_used[PATHS / 64];
static void *volatile g_sink;

/* xmalloc: the program's allocator wrapper, as in git or many servers. */
static __attribute__((noinline)) void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (!p) {
        static const char msg[] = "wl_scale: out of memory\n";
        if (write(2, msg, sizeof msg - 1) < 0)
            _exit(3);
        abort();
    }
    return p;
}

typedef void *(*step_fn)(unsigned depth, unsigned path, size_t size);
static void *step_0(unsigned, unsigned, size_t), *step_1(unsigned, unsigned, size_t),
    *step_2(unsigned, unsigned, size_t), *step_3(unsigned, unsigned, size_t),
    *step_4(unsigned, unsigned, size_t), *step_5(unsigned, unsigned, size_t),
    *step_6(unsigned, unsigned, size_t), *step_7(unsigned, unsigned, size_t);
static step_fn const g_steps[8] = {step_0, step_1, step_2, step_3,
                                   step_4, step_5, step_6, step_7};

/* Per-thread visit counters, one per step function: the increment after the
 * call keeps it from being a tail call, and the distinct index keeps gcc's
 * identical-code folding from merging the eight functions. */
static __thread volatile unsigned long t_visits[8];

/* step_K: one frame of the path; the innermost calls xmalloc. */
#define STEP(k)                                                                        \
    static __attribute__((noinline)) void *step_##k(unsigned depth, unsigned path,     \
                                                    size_t size)                       \
    {                                                                                  \
        void *p = depth == 0 ? xmalloc(size) : g_steps[path & 7](depth - 1, path >> 3, size); \
        t_visits[k]++;                                                                 \
        return p;                                                                      \
    }
STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7)

/* remember_session: the rare path that leaks (its block is never freed). */
static __attribute__((noinline)) void remember_session(uint64_t id)
{
    char *p = xmalloc(LEAK_SIZE);
    memset(p, (int)(id & 0xff), LEAK_SIZE);
    g_sink = p;
}

/* load_decoy_table: one large block at start-up, never freed. */
static __attribute__((noinline)) void load_decoy_table(void)
{
    char *p = malloc(DECOY_SIZE);
    if (!p)
        abort();
    memset(p, 1, DECOY_SIZE);
    g_sink = p;
}

/* One worker: g_per_thread[t] allocations, LEAKS of them planted leaks spread
 * evenly, the rest through the step table into the ring or freed at once. */
static void *worker(void *arg)
{
    long t = (long)(intptr_t)arg, n = g_per_thread[t];
    long leaks = n < LEAKS_PER_THREAD ? n : LEAKS_PER_THREAD;
    long every = leaks ? n / leaks : 0;
    uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)(t + 1) * 0xbf58476d1ce4e5b9ull;
    void **ring = g_rings[t];
    uint64_t used[PATHS / 64] = {0};
    for (long i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if (every && (i + 1) % every == 0 && g_leaks[t] < leaks) {
            remember_session(x);
            g_leaks[t]++;
            continue;
        }
        unsigned path = (unsigned)(x & (PATHS - 1));
        /* 4 of the 64 sizes (16 .. 1024 bytes) per path: 16 384 distinct
         * (size, stack) pairs. heaptrack 1.4's heaptrack_interpret aborts
         * with std::bad_alloc once a run has about 73 600 of them (seen with
         * all 64 sizes on every path), and heaptrack_print is the baseline. */
        size_t size = 16 + ((path + ((x >> 12) & 3) * 16) & 63) * 16;
        used[path / 64] |= 1ull << (path % 64);
        char *p = g_steps[path & 7](DEPTH - 1, path >> 3, size);
        *(volatile char *)p = (char)i;
        if ((x >> 20) & 1) {
            free(p);
        } else {
            unsigned slot = (unsigned)((x >> 21) % RING_SLOTS);
            free(ring[slot]);
            ring[slot] = p;
        }
    }
    for (int s = 0; s < RING_SLOTS; s++) {
        free(ring[s]);
        ring[s] = NULL;
    }
    for (int w = 0; w < PATHS / 64; w++)
        atomic_fetch_or(&g_paths_used[w], used[w]);
    return NULL;
}

/* say: one line on stderr without stdio (printf would allocate). */
static void say(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0 && write(2, line, (size_t)n) < 0)
        _exit(3);
}

int main(int argc, char **argv)
{
    long total = argc > 1 ? atol(argv[1]) : 20000;
    int threads = argc > 2 ? atoi(argv[2]) : 4;
    if (argc > 3 || total < 1 || threads < 1 || threads > MAX_THREADS || total < threads) {
        say("usage: wl_scale [ALLOCATIONS [THREADS]]  (THREADS 1..%d, ALLOCATIONS >= THREADS)\n",
            MAX_THREADS);
        return 2;
    }
    load_decoy_table();
    for (int t = 0; t < threads; t++)
        g_per_thread[t] = total / threads + (t == 0 ? total % threads : 0);
    pthread_t tid[MAX_THREADS];
    for (int t = 0; t < threads; t++)
        if (pthread_create(&tid[t], NULL, worker, (void *)(intptr_t)t) != 0) {
            say("wl_scale: pthread_create failed\n");
            return 1;
        }
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);

    long leak_blocks = 0, paths = 0;
    for (int t = 0; t < threads; t++)
        leak_blocks += g_leaks[t];
    for (int w = 0; w < PATHS / 64; w++)
        paths += __builtin_popcountll(atomic_load(&g_paths_used[w]));
    long long leak_bytes = (long long)leak_blocks * LEAK_SIZE;

    /* Facts for bench/scale.sh, then for the ctest (expect.h). */
    say("wl_scale: allocations=%ld threads=%d leaked_blocks=%ld leaked_bytes=%lld "
        "planted_blocks=%ld planted_bytes=%lld leak_function=remember_session "
        "decoy_function=load_decoy_table decoy_bytes=%d wrapper=xmalloc paths=%ld\n",
        total + 1, threads, leak_blocks + 1, leak_bytes + DECOY_SIZE, leak_blocks, leak_bytes,
        DECOY_SIZE, paths);
#define HAS_FRAME(f) "bt IN (SELECT id FROM backtraces WHERE sym = '" f "')"
    EXPECT(total + 1, "SELECT count(*) FROM allocations");
    EXPECT(leak_blocks + 1, "SELECT count(*) FROM allocations WHERE dealloc_after IS NULL");
    EXPECT(leak_bytes + DECOY_SIZE,
           "SELECT sum(size) FROM allocations WHERE dealloc_after IS NULL");
    EXPECT(leak_blocks, "SELECT count(*) FROM leaks WHERE " HAS_FRAME("remember_session"));
    EXPECT(leak_bytes, "SELECT sum(size) FROM leaks WHERE " HAS_FRAME("remember_session"));
    EXPECT(leak_blocks, "SELECT count(*) FROM leaks WHERE " AT_SYM("xmalloc")
                        " AND " HAS_FRAME("remember_session"));
    EXPECT(1, "SELECT count(*) FROM allocations WHERE " AT_SYM("load_decoy_table"));
    EXPECT(DECOY_SIZE, "SELECT sum(size) FROM leaks WHERE " AT_SYM("load_decoy_table"));
    EXPECT(total - leak_blocks, "SELECT count(*) FROM allocations WHERE " AT_SYM("xmalloc")
                                " AND dealloc_after IS NOT NULL");
    EXPECT(paths, "SELECT count(DISTINCT bt) FROM allocations WHERE " HAS_FRAME("step_0")
                  " OR " HAS_FRAME("step_1") " OR " HAS_FRAME("step_2") " OR " HAS_FRAME("step_3")
                  " OR " HAS_FRAME("step_4") " OR " HAS_FRAME("step_5") " OR " HAS_FRAME("step_6")
                  " OR " HAS_FRAME("step_7"));
    EXPECT(threads, "SELECT count(DISTINCT alloc_thread) FROM allocations WHERE " AT_SYM("xmalloc"));
    return 0;
}
