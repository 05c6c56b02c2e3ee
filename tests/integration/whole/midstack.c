/* midstack.c: a frame without frame pointer in the middle of the stack.
 *
 * main -> sorter -> qsort (libc, no frame pointer; msort uses rbp as data) ->
 * cmp -> note -> malloc. The walk crosses libc's frames by CFI and comes back
 * to the frame records of sorter and main: note, cmp, sorter, main appear in
 * this order, whole. (The frame-pointer walk lost everything above qsort.)
 */
#include "expect.h"

#define N 64

static int note_line;
static long calls;

__attribute__((noinline)) void note(int a)
{
    note_line = __LINE__ + 1;
    void *p = malloc(16 + (size_t)(a & 7));
    KEEP(p);
    free(p);
    calls++;
}

int cmp(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    note(a);
    return (a > b) - (a < b);
}

__attribute__((noinline)) void sorter(int *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp);
    __asm__ __volatile__("");
}

int main(void)
{
    int v[N];
    for (int i = 0; i < N; i++)
        v[i] = (i * 37) % N;
    sorter(v, N);
    for (int i = 1; i < N; i++)
        if (v[i - 1] > v[i])
            return 1;
    EXPECT(calls,
           "SELECT count(*) FROM allocations a JOIN stacks s ON s.id = a.bt WHERE s.truncated = 0 "
           "AND (SELECT group_concat(sym, ',') FROM (SELECT sym FROM backtraces WHERE id = a.bt "
           "AND sym IN ('note', 'cmp', 'sorter', 'main') ORDER BY frame_no)) "
           "= 'note,cmp,sorter,main' "
           "AND (SELECT line FROM backtraces WHERE id = a.bt AND frame_no = 0) = %d",
           note_line);
    return 0;
}
