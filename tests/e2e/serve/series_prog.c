/* series_prog.c: the program series_test.sh profiles, with a known plan over
 * time, for the converter's per-stack series (stack_series):
 *   phase 1  temp_a     3000 x 24 bytes, each freed at once (temporary)
 *   phase 2  keep_b     2000 blocks, 200 and 300 bytes in turn, kept
 *   phase 3  leak_c     7 x 4096 bytes, never freed
 *   phase 4  the 2000 blocks of keep_b freed
 * with pauses between the phases, so that every allocation of temp_a comes
 * before every one of keep_b in time. Each site is one stack.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *volatile sink;
static void *kept[2000];

static void pause_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

__attribute__((noinline)) static void temp_a(void)
{
    for (int i = 0; i < 3000; i++) {
        char *p = malloc(24);
        memset(p, 1, 8);
        sink = p;
        free(p);
    }
}

__attribute__((noinline)) static void keep_b(void)
{
    for (int i = 0; i < 2000; i++) {
        kept[i] = malloc(i % 2 ? 300 : 200);
        memset(kept[i], 2, 8);
    }
}

__attribute__((noinline)) static void leak_c(void)
{
    for (int i = 0; i < 7; i++) {
        char *p = malloc(4096);
        memset(p, 3, 8);
        sink = p;
    }
}

int main(void)
{
    temp_a();
    pause_ms(30);
    keep_b();
    pause_ms(30);
    leak_c();
    pause_ms(30);
    for (int i = 0; i < 2000; i++)
        free(kept[i]);
    pause_ms(10);
    return 0;
}
