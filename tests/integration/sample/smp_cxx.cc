/* smp_cxx.cc: the C++ counterpart of smp_known.c for the sampling tests
 * (tests/integration/sample/run.sh, cases cxx-static and cxx-shared): operator new and
 * delete at call sites of their own, whose heap is known exactly:
 *   new_small:  200000 objects of 48 bytes (new), all deleted but 20000
 *   new_array:  4000 arrays of 4096 bytes (new[]), all deleted with delete[]
 *   new_big:    24 arrays of 1 MiB (new[]), all live at the end
 * It prints "TRUE site count bytes live_count live_bytes" lines. The real
 * operators allocate through malloc (a static libstdc++ calls the wrapped
 * malloc, a shared one the executable's interposed malloc): a sampled profile
 * must still show one row of kind new or new[] per sampled block, none of kind
 * malloc, and the bytes counted once.
 */
#include <cstdio>
#include <cstring>
#include <new>

#define NSMALL 200000
#define KEEP_SMALL 20000
#define NARR 4000
#define NBIG 24

struct obj {
    char b[48];
};

static obj *keep[KEEP_SMALL];
static char *big[NBIG];
static void *volatile sink;

static __attribute__((noinline)) obj *new_small()
{
    obj *o = new obj;
    std::memset(o->b, 1, sizeof o->b);
    return o;
}

static __attribute__((noinline)) char *new_array()
{
    char *a = new char[4096];
    std::memset(a, 2, 64);
    return a;
}

static __attribute__((noinline)) char *new_big()
{
    char *a = new char[1 << 20];
    std::memset(a, 3, 64);
    return a;
}

int main()
{
    /* a call into libstdc++, so that -shared-libstdc++ really links it */
    std::set_new_handler(nullptr);
    for (int i = 0; i < NSMALL; i++) {
        obj *o = new_small();
        sink = o;
        if (i % 10 == 0)
            keep[i / 10] = o;
        else
            delete o;
    }
    for (int i = 0; i < NARR; i++) {
        char *a = new_array();
        sink = a;
        delete[] a;
    }
    for (int i = 0; i < NBIG; i++)
        big[i] = new_big();
    sink = big[NBIG - 1];
    std::printf("TRUE new_small %d %d %d %d\n", NSMALL, NSMALL * 48, KEEP_SMALL, KEEP_SMALL * 48);
    std::printf("TRUE new_array %d %d 0 0\n", NARR, NARR * 4096);
    std::printf("TRUE new_big %d %d %d %d\n", NBIG, NBIG << 20, NBIG, NBIG << 20);
    return 0;
}
