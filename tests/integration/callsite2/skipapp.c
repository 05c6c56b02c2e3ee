/* skipapp.c: the `skip` case's program: four functions allocate through
 * my_palloc and my_pstrdup; each prints how many of ctx_alloc's mallocs its
 * requests caused ("SITE FUNCTION COUNT"), the rows --skip-function
 * '^ctx_alloc$' must charge to it. */
#include <stdio.h>
#include <string.h>

#include "skipctx.h"

static volatile char sink;

__attribute__((noinline)) static long parse_query(int n)
{
    long before = ctx_mallocs;
    for (int i = 0; i < n; i++) {
        char *p = my_palloc(300); /* large: a malloc each */
        p[0] = 1;
        sink = p[0];
    }
    return ctx_mallocs - before;
}

__attribute__((noinline)) static long plan_query(int n)
{
    long before = ctx_mallocs;
    for (int i = 0; i < n; i++) {
        char *p = my_palloc(64);
        p[0] = 2;
        sink = p[0];
    }
    return ctx_mallocs - before;
}

__attribute__((noinline)) static long run_query(int n)
{
    long before = ctx_mallocs;
    for (int i = 0; i < n; i++) {
        char *p = my_palloc(200);
        p[0] = 3;
        sink = p[0];
    }
    return ctx_mallocs - before;
}

__attribute__((noinline)) static long name_table(int n)
{
    long before = ctx_mallocs;
    char name[400];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = 0;
    for (int i = 0; i < n; i++)
        sink = my_pstrdup(name)[0]; /* 400 bytes: a malloc each */
    return ctx_mallocs - before;
}

int main(void)
{
    long a = parse_query(30), b = plan_query(500), c = run_query(300), d = name_table(12);
    printf("SITE parse_query %ld\nSITE plan_query %ld\nSITE run_query %ld\nSITE name_table %ld\n",
           a, b, c, d);
    return 0;
}
