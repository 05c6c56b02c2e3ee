/* spinlib.c: a shared library built without rheaper that starts a thread of
 * its own (its pthread_create is libc's, not the program's wrapped one). The
 * thread computes in lib_spin until told to stop and never allocates. */
#define _GNU_SOURCE
#include <pthread.h>

static volatile int lib_stop;
static volatile unsigned long lib_sink;
static pthread_t lib_thread;

__attribute__((noinline)) static void lib_spin(void)
{
    unsigned long x = lib_sink;
    for (int i = 0; i < 20000; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    lib_sink = x;
}

static void *lib_main(void *v)
{
    (void)v;
    while (!lib_stop)
        lib_spin();
    return NULL;
}

int spinlib_start(void)
{
    if (pthread_create(&lib_thread, NULL, lib_main, NULL) != 0)
        return -1;
    pthread_setname_np(lib_thread, "libthread");
    return 0;
}

void spinlib_stop(void)
{
    lib_stop = 1;
    pthread_join(lib_thread, NULL);
}
