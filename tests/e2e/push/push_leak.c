/* push_leak.c: the program of the push tests, a service with a planted leak.
 *
 *     push_leak ROUNDS [extra]
 *
 * Each round allocates at four call sites whose sizes and counts the test
 * knows: remember_session() keeps a 640-byte block (the planted leak: never
 * freed, the most leaked bytes), cache_name() keeps a 24-byte strdup every
 * fourth round, scratch() takes a 4096-byte buffer and frees it (temporary),
 * and build_reply() grows a buffer by realloc and frees it. With "extra",
 * audit_trail() also keeps 100 bytes per round: a leak on that host only.
 * Every allocation is made from one thread, in the same order on every run.
 */
#include <stdlib.h>
#include <string.h>

static void *volatile sink;
static void **kept;
static size_t nkept;

static void keep(void *p)
{
    kept[nkept++] = p;
}

__attribute__((noinline)) static void remember_session(int i)
{
    char *s = malloc(640);
    memset(s, i & 0xff, 640);
    keep(s);
}

__attribute__((noinline)) static void cache_name(int i)
{
    char name[24];
    memset(name, 'a' + i % 26, sizeof name - 1);
    name[sizeof name - 1] = 0;
    keep(strdup(name)); /* 24 bytes */
}

__attribute__((noinline)) static void scratch(void)
{
    char *b = malloc(4096);
    memset(b, 0, 4096);
    sink = b;
    free(b);
}

__attribute__((noinline)) static void build_reply(int i)
{
    char *r = malloc(64);
    r = realloc(r, 256 + (size_t)(i % 4) * 64);
    sink = r;
    free(r);
}

__attribute__((noinline)) static void audit_trail(int i)
{
    char *a = malloc(100);
    memset(a, i & 0xff, 100);
    keep(a);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 100;
    int extra = argc > 2 && !strcmp(argv[2], "extra");
    kept = calloc((size_t)rounds * 3 + 1, sizeof *kept);
    for (int i = 0; i < rounds; i++) {
        remember_session(i);
        if (i % 4 == 0)
            cache_name(i);
        scratch();
        build_reply(i);
        if (extra)
            audit_trail(i);
    }
    /* the leaks stay reachable through kept, which is itself never freed */
    return 0;
}
