/* wrapapp.c: the callers of wrapper.c's x-allocators. xmalloc has three
 * callers, so wrapper.c is an allocator layer's file; xcalloc (calling calloc
 * itself) is called from make_table (1500 blocks at one line) and from
 * two_tables (at two lines), xstrdup (calling strdup itself) from copy_names.
 * Prints "SITE function count" per caller and "LINE function line count" per
 * calling line, for run.sh to compare with `rheaper top`. */
#include <stdio.h>
#include <stdlib.h>

#include "wrapper.h"

static void *volatile sink;

#define KEEP(p) (sink = (p), free(sink))
/* AT(call, l): call, with l set to the line it is written on */
#define AT(call, l) ((l) = __LINE__, (call))

__attribute__((noinline)) static void make_table(void)
{
    int l = 0;
    for (int i = 0; i < 1500; i++) {
        KEEP(AT(xcalloc(4, 16), l));
    }
    printf("SITE make_table 1500\nLINE make_table %d 1500\n", l);
}

__attribute__((noinline)) static void two_tables(void)
{
    int l1 = 0, l2 = 0;
    for (int i = 0; i < 70; i++) {
        KEEP(AT(xcalloc(2, 8), l1));
    }
    for (int i = 0; i < 30; i++) {
        KEEP(AT(xcalloc(3, 8), l2));
    }
    printf("SITE two_tables 100\nLINE two_tables %d 70\nLINE two_tables %d 30\n", l1, l2);
}

__attribute__((noinline)) static void copy_names(void)
{
    static const char *names[] = {"alpha", "beta", "gamma", "delta"};
    int l = 0;
    for (int i = 0; i < 200; i++) {
        KEEP(AT(xstrdup(names[i % 4]), l));
    }
    printf("SITE copy_names 200\nLINE copy_names %d 200\n", l);
}

__attribute__((noinline)) static void use_a(void)
{
    for (int i = 0; i < 11; i++)
        KEEP(xmalloc(24));
    printf("SITE use_a 11\n");
}

__attribute__((noinline)) static void use_b(void)
{
    for (int i = 0; i < 12; i++)
        KEEP(xmalloc(32));
    printf("SITE use_b 12\n");
}

__attribute__((noinline)) static void use_c(void)
{
    for (int i = 0; i < 13; i++)
        KEEP(xmalloc(40));
    printf("SITE use_c 13\n");
}

int main(void)
{
    static char obuf[4096]; /* stdout's buffer: no allocation of libc's in the counts */
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    make_table();
    two_tables();
    copy_names();
    use_a();
    use_b();
    use_c();
    return 0;
}
