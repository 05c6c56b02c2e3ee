/* lv_grow.c: the program `rheaper live` watches in tests/e2e/live/run.sh.
 *
 * It reads commands from stdin, one per line, and answers each with
 * "ok N" (N counts the commands) on stdout once it is done:
 *   grow N SIZE     N blocks of SIZE bytes from grow_site, kept
 *   free N          frees the N oldest kept blocks
 *   thread N SIZE   a worker thread (named "lvworker") allocates N blocks of
 *                   SIZE bytes from worker_site; this thread frees them
 *   auto on|off     while on, grow_site adds one 8000-byte block every 20 ms
 *   spin on|off     while on, a thread ("lvspin") burns CPU in burn_site
 *                   and a third as much in burn_side (no allocation), for
 *                   the CPU view's samples
 *   quit            exits (kept blocks stay live)
 * End of input also exits. So every figure the live view shows is known.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAXKEPT 100000

static void *kept[MAXKEPT];
static int nkept, first;

__attribute__((noinline)) static void *grow_site(size_t size)
{
    void *p = malloc(size);
    memset(p, 1, size);
    return p;
}

__attribute__((noinline)) static void *worker_site(size_t size)
{
    void *p = malloc(size);
    memset(p, 2, size);
    return p;
}

static volatile int spinning;
static pthread_t spinner;

/* Pure CPU work: every CPU sample of the spinning thread lands here. */
__attribute__((noinline)) static unsigned long burn_site(unsigned long x)
{
    for (int i = 0; i < 1000000; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}

/* A third of burn_site's work, so the CPU view has a second row. */
__attribute__((noinline)) static unsigned long burn_side(unsigned long x)
{
    for (int i = 0; i < 1000000 / 3; i++)
        x = x * 2862933555777941757UL + 3037000493UL;
    return x;
}

static void *spin(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "lvspin");
    volatile unsigned long x = 1;
    while (spinning)
        x = burn_side(burn_site(x));
    return NULL;
}

struct work {
    int n;
    size_t size;
    void **out;
};

static void *worker(void *arg)
{
    struct work *w = arg;
    pthread_setname_np(pthread_self(), "lvworker");
    for (int i = 0; i < w->n; i++)
        w->out[i] = worker_site(w->size);
    return NULL;
}

static void keep(void *p)
{
    if (first == nkept)
        first = nkept = 0; /* all freed: start the array again */
    if (nkept < MAXKEPT)
        kept[nkept++] = p;
}

int main(void)
{
    char line[256];
    int cmds = 0, autogrow = 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    setvbuf(stdin, NULL, _IONBF, 0); /* poll() sees every line not yet read */
    printf("ready %d\n", (int)getpid());
    for (;;) {
        struct pollfd pf = {0, POLLIN, 0};
        int r = poll(&pf, 1, autogrow ? 20 : -1);
        if (r < 0)
            continue; /* EINTR: rheaper's toggle signal */
        if (r == 0) {
            keep(grow_site(8000));
            continue;
        }
        if (!fgets(line, sizeof line, stdin))
            break;
        int n = 0;
        unsigned long size = 0;
        char arg[32] = "";
        if (sscanf(line, "grow %d %lu", &n, &size) == 2) {
            for (int i = 0; i < n; i++)
                keep(grow_site(size));
        } else if (sscanf(line, "free %d", &n) == 1) {
            for (int i = 0; i < n && first < nkept; i++) {
                free(kept[first]);
                kept[first++] = NULL;
            }
        } else if (sscanf(line, "thread %d %lu", &n, &size) == 2) {
            void **out = calloc((size_t)n, sizeof *out);
            struct work w = {n, size, out};
            pthread_t t;
            pthread_create(&t, NULL, worker, &w);
            pthread_join(t, NULL);
            for (int i = 0; i < n; i++)
                free(out[i]);
            free(out);
        } else if (sscanf(line, "spin %31s", arg) == 1) {
            if (!strcmp(arg, "on") && !spinning) {
                spinning = 1;
                pthread_create(&spinner, NULL, spin, NULL);
            } else if (strcmp(arg, "on") && spinning) {
                spinning = 0;
                pthread_join(spinner, NULL);
            }
        } else if (sscanf(line, "auto %31s", arg) == 1) {
            autogrow = !strcmp(arg, "on");
        } else if (!strncmp(line, "quit", 4)) {
            break;
        }
        printf("ok %d\n", ++cmds);
    }
    return 0;
}
