/* ctl_ownsig.c: a program that owns rheaper's toggle signal itself.
 *
 *   ctl_ownsig after   first allocates (the runtime arms), then installs its
 *                      handler with sigaction: rheaper must step aside.
 *   ctl_ownsig before  installs its handler (with signal()) before its first
 *                      allocation: rheaper finds it when arming.
 *   ctl_ownsig hold    like after, then waits on stdin ("quit") so that a
 *                      test can run `rheaper record -p` against it.
 *
 * Either way the program's handler must get every signal it raises, and the
 * program runs unchanged. Prints "handled N" on stdout.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t handled;
static void *volatile sink;

static void on_sig(int sig)
{
    (void)sig;
    handled++;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "after";
    int sig = SIGRTMAX - 5; /* rheaper's default toggle signal */
    if (getenv("CTL_SIG"))
        sig = atoi(getenv("CTL_SIG"));
    if (!strcmp(mode, "before")) {
        signal(sig, on_sig);
        sink = malloc(10);
    } else {
        sink = malloc(10);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sig;
        sigaction(sig, &sa, NULL);
    }
    for (int i = 0; i < 3; i++) {
        raise(sig);
        sink = malloc(100); /* where rheaper would toggle */
        free(sink);
    }
    if (!strcmp(mode, "hold")) {
        printf("ready %d\n", (int)getpid());
        fflush(stdout);
        char line[64];
        while (fgets(line, sizeof line, stdin) && strncmp(line, "quit", 4))
            ;
    }
    printf("handled %d\n", (int)handled);
    return handled == 3 ? 0 : 1;
}
