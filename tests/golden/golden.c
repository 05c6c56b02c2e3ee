/* golden.c: the program behind the committed golden profile.
 *
 * tests/golden/golden.rip was recorded from this program (built by
 * `sh tests/golden/golden.sh --regenerate`); the test converts that fixed file
 * with the committed binary and compares a sorted dump of the database with
 * golden.expected, so any change in what the converter makes of the same bytes
 * shows as a diff.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void *volatile sink;

__attribute__((noinline)) static void *node(size_t n) { return malloc(n); }

static inline __attribute__((always_inline)) char *label(const char *s) { return strdup(s); }

static void *worker(void *arg)
{
    void **blocks = arg;
    for (int i = 0; i < 4; i++)
        free(blocks[i]); /* freed by another thread than the one that made them */
    sink = node(300);    /* leaked by the worker */
    return NULL;
}

int main(void)
{
    void *blocks[4];
    for (int i = 0; i < 4; i++)
        blocks[i] = node(16 * (size_t)(i + 1));
    char *l = label("golden");
    sink = l;
    void *r = NULL;
    for (int i = 1; i <= 3; i++)
        r = realloc(r, 100 * (size_t)i);
    sink = r;
    pthread_t t;
    pthread_create(&t, NULL, worker, blocks);
    pthread_join(t, NULL);
    free(l);
    sink = calloc(5, 20); /* leaked */
    return 0;
}
