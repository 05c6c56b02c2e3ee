/* rel_exit.c: the exits that run no exit handler, each of which must leave a
 * whole profile (a trailer: `rheaper list` says complete, the converter says
 * nothing about a cut) with exactly the rows the program made.
 *
 *   rel_exit _exit          12 blocks of 3001 bytes, 4 freed, then _exit(0)
 *   rel_exit _Exit          the same with _Exit(0)
 *   rel_exit daemon PIDFILE 5 blocks of 3002, daemon(3); the daemon writes its
 *                           pid to PIDFILE, makes 6 blocks of 3003 (2 freed)
 *                           and returns from main
 *   rel_exit fork-_exit     3 blocks of 3004; a fork child makes 4 of 3005 and
 *                           calls _exit; the parent then makes 2 of 3006
 *   rel_exit vfork-_exit    3 blocks of 3007; a vfork child calls _exit at
 *                           once (it must not close its parent's profile);
 *                           the parent then makes 2 of 3008
 *   rel_exit signal-_exit   4 blocks of 3009; a signal handler calls _exit
 *   rel_exit exec           a fork child makes 5 blocks of 3010, then execv
 *                           /bin/true (no exit at all), another 2 of 3012,
 *                           then execlp true; the parent 1 of 3011
 *   rel_exit exec-fail      a fork child makes 3 blocks of 3013, its execv
 *                           fails, it makes 1 more and exits; the parent 1 of 3011
 *
 * Every fact is stated (EXPECT, "@rip-PID" for each process) before the exit
 * it is about. The blocks are written through a volatile sink so none is
 * optimised away.
 */
#include "rel.h"

#include <signal.h>
#include <sys/wait.h>

static void *volatile sink;

NOINLINE void *ex_alloc(size_t n)
{
    void *p = malloc(n);
    rel_fill(p, n, (unsigned)n);
    return p;
}

/* n blocks of size bytes, the first nfree of them freed. */
static void ex_blocks(int n, size_t size, int nfree)
{
    void *b[64];
    for (int i = 0; i < n; i++)
        b[i] = ex_alloc(size);
    for (int i = 0; i < n; i++) {
        if (i < nfree)
            free(b[i]);
        else
            sink = b[i];
    }
}

/* The facts of a process that made n blocks of size bytes and freed nfree. */
static void ex_expect(int pid, int n, size_t size, int nfree)
{
    EXPECT(n, "@rip-%d SELECT count(*) FROM allocations WHERE size = %zu AND " AT_SYM("ex_alloc"),
           pid, size);
    EXPECT(n - nfree, "@rip-%d SELECT count(*) FROM leaks WHERE size = %zu", pid, size);
    EXPECT(1, "@rip-%d SELECT value FROM meta WHERE key = 'clean'", pid);
}

static int wait_ok(pid_t c, const char *what)
{
    int st = 0;
    if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        rel_say("%s: child failed (status %d)", what, st);
        return 1;
    }
    return 0;
}

static void on_signal(int sig)
{
    (void)sig;
    _exit(0);
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    int me = (int)getpid();
    if (!strcmp(m, "_exit") || !strcmp(m, "_Exit")) {
        ex_blocks(12, 3001, 4);
        ex_expect(me, 12, 3001, 4);
        if (m[1] == 'e')
            _exit(0);
        _Exit(0);
    }
    if (!strcmp(m, "daemon") && argc > 2) {
        ex_blocks(5, 3002, 0);
        ex_expect(me, 5, 3002, 0);
        EXPECT(0, "@rip-%d SELECT count(*) FROM allocations WHERE size = 3003", me);
        if (daemon(1, 1) != 0) {
            rel_say("daemon: %s", strerror(errno));
            return 1;
        }
        int d = (int)getpid();
        char line[32];
        int n = snprintf(line, sizeof line, "%d\n", d);
        FILE *f = fopen(argv[2], "w"); /* the test waits for this process to end */
        if (!f || fwrite(line, 1, (size_t)n, f) != (size_t)n || fclose(f) != 0)
            return 1;
        ex_blocks(6, 3003, 2);
        ex_expect(d, 6, 3003, 2);
        return 0;
    }
    if (!strcmp(m, "fork-_exit")) {
        ex_blocks(3, 3004, 0);
        pid_t c = fork();
        if (c == 0) {
            int pid = (int)getpid();
            ex_blocks(4, 3005, 1);
            ex_expect(pid, 4, 3005, 1);
            _exit(0);
        }
        int bad = wait_ok(c, "fork + _exit");
        ex_blocks(2, 3006, 0);
        ex_expect(me, 3, 3004, 0);
        ex_expect(me, 2, 3006, 0);
        return bad;
    }
    if (!strcmp(m, "vfork-_exit")) {
        ex_blocks(3, 3007, 0);
        pid_t c = vfork();
        if (c == 0)
            _exit(0);
        int bad = wait_ok(c, "vfork + _exit");
        ex_blocks(2, 3008, 0);
        ex_expect(me, 3, 3007, 0);
        ex_expect(me, 2, 3008, 0);
        return bad;
    }
    if (!strcmp(m, "signal-_exit")) {
        ex_blocks(4, 3009, 0);
        ex_expect(me, 4, 3009, 0);
        signal(SIGUSR1, on_signal);
        raise(SIGUSR1);
        return 1; /* not reached */
    }
    if (!strcmp(m, "exec")) {
        pid_t c = fork();
        if (c == 0) {
            int pid = (int)getpid();
            ex_blocks(5, 3010, 0);
            ex_expect(pid, 5, 3010, 0);
            char *args[] = {"true", NULL};
            execv("/bin/true", args);
            _exit(127);
        }
        int bad = wait_ok(c, "fork + execv");
        c = fork();
        if (c == 0) {
            int pid = (int)getpid();
            ex_blocks(2, 3012, 1);
            ex_expect(pid, 2, 3012, 1);
            execlp("true", "true", (char *)NULL);
            _exit(127);
        }
        bad += wait_ok(c, "fork + execlp");
        ex_blocks(1, 3011, 0);
        ex_expect(me, 1, 3011, 0);
        EXPECT(0, "@rip-%d SELECT count(*) FROM allocations WHERE size = 3010", me);
        return bad;
    }
    if (!strcmp(m, "exec-fail")) {
        pid_t c = fork();
        if (c == 0) {
            int pid = (int)getpid();
            ex_blocks(3, 3013, 0);
            char *args[] = {"none", NULL};
            execv("/nonexistent/rel_exit", args); /* fails: the child goes on */
            ex_blocks(1, 3013, 0);
            ex_expect(pid, 4, 3013, 0);
            exit(0);
        }
        int bad = wait_ok(c, "fork + failed execv");
        ex_blocks(1, 3011, 0);
        ex_expect(me, 1, 3011, 0);
        return bad;
    }
    rel_say("usage: rel_exit _exit|_Exit|daemon PIDFILE|fork-_exit|vfork-_exit|signal-_exit|exec|"
            "exec-fail");
    return 2;
}
