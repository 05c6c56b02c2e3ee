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
 * program runs unchanged. Prints "handled N" on stdout, then "helpers N":
 * the runtime's helper threads (named rheaper) still running once it has
 * waited up to 5 s for them to go (there is nothing left for one to do);
 * "after" and "hold" first print "armed helpers N", N the count once armed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t handled;
static void *volatile sink;

/* Threads of this process named "rheaper". */
static int helpers(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char path[300], name[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
        if (f && fgets(name, sizeof name, f) && !strcmp(name, "rheaper\n"))
            n++;
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

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
        /* the runtime armed: one, named within microseconds (up to 5 s
         * on a loaded machine) */
        int ah = helpers();
        for (int i = 0; i < 500 && !ah; i++) {
            usleep(10000);
            ah = helpers();
        }
        printf("armed helpers %d\n", ah);
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
    int h = helpers();
    for (int i = 0; i < 500 && h; i++) { /* up to 5 s: a loaded machine */
        usleep(10000);
        h = helpers();
    }
    printf("helpers %d\n", h);
    return handled == 3 ? 0 : 1;
}
