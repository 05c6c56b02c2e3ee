/* floor.c: the least any full recorder can cost per event on this machine
 * (bench/breakdown.sh's floor-clock and floor-walk rows).
 *
 * rheaper's full recording pays, per event, a clock read, a record write and,
 * per allocation, a stack walk, plus its guard, state checks, stack table and
 * chunk handling. This file is a recorder reduced to the first three and
 * nothing else: linked into a plain program with
 * -Wl,--wrap=malloc,--wrap=free,--wrap=realloc,--wrap=calloc, its wrappers
 *
 *   FLOOR_MODE=0  pass the call through (what --wrap itself costs);
 *   FLOOR_MODE=1  read the time-stamp counter and store a 24-byte event
 *                 {time, address, size} into a per-thread buffer, written
 *                 sequentially (no stack, no guard, no dedup, no file);
 *   FLOOR_MODE=2  as 1, and walk the frame pointers of every allocation
 *                 (the loop rheaper's walk reduces to: two dependent loads,
 *                 an order check and one multiply-add per frame, up to 64
 *                 frames), storing the stack's hash in the event.
 *
 * So a ratio to plain measured with mode 1 is a floor for any recorder that
 * keeps each event's nanosecond time, and mode 2 one for any recorder that
 * also walks each allocation's whole stack. The buffer is 1 MiB of address
 * space per thread (mmap, not the heap), reused from its start when full, so
 * its pages stay few and warm as a real recorder's current chunk does.
 * The mode is read once, at the first wrapped call; bench/inproc.c, which
 * compiles this file with its wrappers renamed into its own process, sets it
 * between rounds with floor_set_mode (one thread, no call in flight).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void *__real_malloc(size_t);
void __real_free(void *);
void *__real_realloc(void *, size_t);
void *__real_calloc(size_t, size_t);

#define BUF_BYTES (1u << 20)
#define MAX_FRAMES 64

struct ev {
    uint64_t t;
    uintptr_t p;
    uint64_t size_or_hash;
};

static int g_mode = -1;
static __thread struct ev *t_buf, *t_cur, *t_end;

static int mode(void)
{
    if (__builtin_expect(g_mode < 0, 0)) {
        const char *m = getenv("FLOOR_MODE");
        g_mode = m ? atoi(m) : 0;
    }
    return g_mode;
}

/* Sets the mode for the calls that follow (0, 1 or 2, as FLOOR_MODE). */
void floor_set_mode(int m)
{
    g_mode = m;
}

static inline uint64_t tsc(void)
{
#if defined(__x86_64__)
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

static __attribute__((noinline)) void grow(void)
{
    if (!t_buf) {
        void *b = mmap(NULL, BUF_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (b == MAP_FAILED)
            abort();
        t_buf = b;
        t_end = t_buf + BUF_BYTES / sizeof(struct ev);
    }
    t_cur = t_buf;
}

static inline void put(uint64_t t, const void *p, uint64_t v)
{
    if (__builtin_expect(t_cur == t_end || !t_cur, 0))
        grow();
    struct ev *e = t_cur++;
    e->t = t;
    e->p = (uintptr_t)p;
    e->size_or_hash = v;
}

/* The stack's hash from the caller's frame record: two loads per frame, a
 * check that the next record is above this one and within 1 MiB, a
 * multiply-add. */
static inline uint64_t walk(const uintptr_t *fp)
{
    uint64_t h = 0;
    for (int n = MAX_FRAMES; n > 0 && fp; n--) {
        const uintptr_t *next = (const uintptr_t *)fp[0];
        h = h * 0x9e3779b97f4a7c15ull + fp[1];
        if ((uintptr_t)next <= (uintptr_t)fp || (uintptr_t)next - (uintptr_t)fp > (1u << 20))
            break;
        fp = next;
    }
    return h;
}

static inline void on_alloc(const void *p, size_t size, const uintptr_t *fp)
{
    int m = mode();
    if (m == 0)
        return;
    uint64_t t = tsc();
    put(t, p, m == 2 ? walk(fp) ^ size : size);
}

__attribute__((noinline)) void *__wrap_malloc(size_t n)
{
    void *p = __real_malloc(n);
    on_alloc(p, n, __builtin_frame_address(0));
    return p;
}

__attribute__((noinline)) void *__wrap_calloc(size_t n, size_t k)
{
    void *p = __real_calloc(n, k);
    on_alloc(p, n * k, __builtin_frame_address(0));
    return p;
}

__attribute__((noinline)) void *__wrap_realloc(void *old, size_t n)
{
    void *p = __real_realloc(old, n);
    on_alloc(p, n, __builtin_frame_address(0));
    return p;
}

__attribute__((noinline)) void __wrap_free(void *p)
{
    if (mode() != 0 && p)
        put(tsc(), p, 0);
    __real_free(p);
}
