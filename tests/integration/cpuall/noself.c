/* noself.c: a program whose stacks pass every place where rheaper's runtime
 * runs between the program's frames (tests/integration/cpuall/run.sh, case noself):
 * threads started through the wrapped pthread_create (whose thread setup
 * allocates inside libc), threads that allocate through malloc, calloc,
 * realloc and strdup while CPU samples land in and out of the runtime, and
 * a thread that only computes. No stack of its profile may hold a function
 * of the runtime. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void compute(int n)
{
    unsigned long x = sink;
    for (int i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink = x;
}

static void *churn(void *v)
{
    (void)v;
    for (int r = 0; r < 60000; r++) {
        char *a = malloc(32 + r % 200);
        char *b = calloc(4, 16);
        a = realloc(a, 300);
        char *c = strdup("a string to copy");
        a[0] = b[1] = c[2] = (char)r;
        sink += (unsigned long)(a[0] + b[1] + c[2]);
        compute(300);
        free(a), free(b), free(c);
    }
    return NULL;
}

static void *spin(void *v)
{
    (void)v;
    for (int r = 0; r < 3000; r++)
        compute(20000);
    return NULL;
}

static void *quick(void *v)
{
    return v;
}

int main(void)
{
    pthread_t t[3];
    pthread_create(&t[0], NULL, churn, NULL);
    pthread_create(&t[1], NULL, churn, NULL);
    pthread_create(&t[2], NULL, spin, NULL);
    for (int i = 0; i < 50; i++) { /* threads that start and end */
        pthread_t q;
        if (pthread_create(&q, NULL, quick, NULL) == 0)
            pthread_join(q, NULL);
    }
    churn(NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("%lu\n", sink);
    return 0;
}
