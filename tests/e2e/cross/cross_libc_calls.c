/* cross_libc_calls.c: allocations the C library makes for the program, for
 * the targets whose C library keeps no frame records the program's walk can
 * follow (ARM: Debian's glibc is Thumb-2 code). tests/e2e/cross/check_cross.sh
 * builds it -static and checks where each stack stops:
 *   f_sort     qsort with a comparator, cmp, that mallocs 10 bytes and
 *              frees them on each call; prints "cmp N" (its calls)
 *   f_open     fopen and fclose: glibc's __fopen_internal mallocs the FILE
 * Every function is noinline and stores through a volatile pointer.
 */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
static void *volatile sink;
static int calls;

NOINLINE static int cmp(const void *a, const void *b)
{
    calls++;
    sink = malloc(10);
    free(sink);
    return *(const int *)a - *(const int *)b;
}

NOINLINE static void f_sort(void)
{
    int v[40];
    for (int i = 0; i < 40; i++)
        v[i] = (i * 7919) % 41;
    qsort(v, 40, sizeof v[0], cmp);
    sink = v;
}

NOINLINE static void f_open(void)
{
    FILE *f = fopen("/proc/self/stat", "r");
    if (f)
        fclose(f);
    sink = f;
}

int main(void)
{
    f_sort();
    f_open();
    printf("cmp %d\n", calls);
    return 0;
}
