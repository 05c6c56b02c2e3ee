/* rel_life.c: the profiled program's lifecycle: threads, exit, fork, exec,
 * signals and dlclose, while it allocates.
 *
 *   rel_life threads10k     10 000 short-lived threads, 8 at a time
 *   rel_life exit-thread    a thread calls exit() while others allocate
 *   rel_life exit-late      events after the exit trailer open new chunks
 *   rel_life fork-threads   20 forks while 4 threads allocate
 *   rel_life fork100        100 children, each with its own profile
 *   rel_life exec SELF      execve after fork, vfork + execve, posix_spawn
 *   rel_life exec-child TAG the exec'd image: allocates its own blocks
 *   rel_life sigalloc       a SIGALRM handler that allocates (unsafe, done anyway)
 *   rel_life dlclose LIB    blocks of an instrumented library outlive dlclose
 *
 * Every mode states its profile's facts with EXPECT and exits 0 only when its
 * own work came out right. A watchdog alarm turns a hang into a failure.
 */
#include "rel.h"

#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <spawn.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "rheaper.h"

extern char **environ;

static void *volatile sink;

NOINLINE static void *life_alloc(size_t n)
{
    void *p = malloc(n);
    sink = p;
    return p;
}

/* ---- threads10k ----------------------------------------------------------- */

#define NTHREADS 10000

static void *short_thread(void *arg)
{
    (void)arg;
    free(life_alloc(61));
    sink = life_alloc(62);
    return NULL;
}

static int mode_threads10k(void)
{
    pthread_t th[8];
    for (int i = 0; i < NTHREADS; i += 8) {
        for (int k = 0; k < 8; k++)
            if (pthread_create(&th[k], NULL, short_thread, NULL) != 0)
                return 3;
        for (int k = 0; k < 8; k++)
            pthread_join(th[k], NULL);
    }
    EXPECT(NTHREADS,
           "SELECT count(*) FROM allocations WHERE size = 61 AND dealloc_after IS NOT NULL");
    EXPECT(NTHREADS, "SELECT count(*) FROM allocations WHERE size = 62 AND dealloc_after IS NULL");
    EXPECT(1, "SELECT count(DISTINCT alloc_thread) > 8 FROM allocations WHERE size = 62");
    EXPECT(1, "SELECT value FROM meta WHERE key = 'clean'");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'events_lost'");
    return 0;
}

/* ---- exit from a thread while others allocate ----------------------------- */

static void *churn(void *arg)
{
    unsigned n = (unsigned)(uintptr_t)arg;
    for (;;) {
        void *p = life_alloc(100 + (n++ % 100));
        free(p);
    }
    return NULL;
}

static void *exiter(void *arg)
{
    (void)arg;
    rel_sleep_ms(20);
    exit(0);
}

static int mode_exit_thread(void)
{
    for (int i = 0; i < 300; i++)
        sink = life_alloc(3333);
    EXPECT(300, "SELECT count(*) FROM allocations WHERE size = 3333 AND dealloc_after IS NULL");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'damaged'");
    EXPECT(1, "SELECT count(*) > 300 FROM allocations WHERE size BETWEEN 100 AND 199");
    pthread_t th;
    for (int i = 0; i < 4; i++)
        if (pthread_create(&th, NULL, churn, (void *)(uintptr_t)(i * 7)) != 0)
            return 3;
    if (pthread_create(&th, NULL, exiter, NULL) != 0)
        return 3;
    for (;;)
        free(life_alloc(150));
}

/* ---- events after the exit trailer ---------------------------------------- */

/* Threads go on running while the process exits, after the runtime's
 * destructor(101) wrote the trailer: a thread that had no open chunk then
 * (its first event, or between two chunks) opens a new one after the trailer,
 * still unsealed when the process ends. A destructor(100) runs after the
 * runtime's and makes that happen for sure: a waiting thread records its first
 * events, and the exiting thread records more after its chunk was sealed. */
static int late_on;
static sem_t late_go, late_done;

static void *late_thread(void *arg)
{
    (void)arg;
    while (sem_wait(&late_go) != 0)
        ;
    for (int i = 0; i < 50; i++)
        sink = life_alloc(4321);
    sem_post(&late_done);
    for (;;)
        pause();
    return NULL;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wprio-ctor-dtor"
__attribute__((destructor(100))) static void late_dtor(void)
{
    if (!late_on)
        return;
    sem_post(&late_go);
    while (sem_wait(&late_done) != 0)
        ;
    for (int i = 0; i < 50; i++)
        sink = life_alloc(4322);
}
#pragma GCC diagnostic pop

static int mode_exit_late(void)
{
    for (int i = 0; i < 300; i++)
        sink = life_alloc(3333);
    sem_init(&late_go, 0, 0);
    sem_init(&late_done, 0, 0);
    pthread_t th;
    if (pthread_create(&th, NULL, late_thread, NULL) != 0)
        return 3;
    late_on = 1;
    EXPECT(300, "SELECT count(*) FROM allocations WHERE size = 3333 AND dealloc_after IS NULL");
    EXPECT(50, "SELECT count(*) FROM allocations WHERE size = 4321");
    EXPECT(50, "SELECT count(*) FROM allocations WHERE size = 4322");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'damaged'");
    EXPECT(1, "SELECT value FROM meta WHERE key = 'clean'");
    exit(0);
}

/* A fork child's own rows: not the ones inherited at the fork, which the
 * converter imports from the parent's profile as rows 1..inherited_rows. */
#define OWN_ROWS "id > coalesce((SELECT value FROM meta WHERE key = 'inherited_rows'), 0)"

/* ---- fork while threads allocate ------------------------------------------ */

static int mode_fork_threads(void)
{
    pthread_t th;
    for (int i = 0; i < 4; i++)
        if (pthread_create(&th, NULL, churn, (void *)(uintptr_t)(i * 13)) != 0)
            return 3;
    rel_sleep_ms(5);
    int bad = 0;
    for (int k = 0; k < 20; k++) {
        pid_t c = fork();
        if (c == 0) {
            alarm(20);
            for (int i = 0; i < 50; i++) {
                char *p = life_alloc((size_t)(4000 + k));
                rel_fill(p, (size_t)(4000 + k), (unsigned)i);
                if (!rel_intact(p, (size_t)(4000 + k), (unsigned)i))
                    _exit(1);
                if (i & 1)
                    free(p);
            }
            int me = (int)getpid();
            EXPECT(50, "@rip-%d SELECT count(*) FROM allocations WHERE size = %d", me, 4000 + k);
            EXPECT(25,
                   "@rip-%d SELECT count(*) FROM allocations WHERE size = %d AND dealloc_after IS "
                   "NULL",
                   me, 4000 + k);
            /* the parent's churn: only in the rows inherited at the fork */
            EXPECT(0, "@rip-%d SELECT count(*) FROM allocations WHERE size BETWEEN 100 AND 199"
                      " AND " OWN_ROWS,
                   me);
            EXPECT(1, "@rip-%d SELECT value FROM meta WHERE key = 'clean'", me);
            exit(0);
        }
        int st;
        if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            rel_say("rel_life: fork child %d failed (status %d)", k, st);
            bad++;
        }
    }
    int me = (int)getpid();
    EXPECT(0, "@rip-%d SELECT count(*) FROM allocations WHERE size BETWEEN 4000 AND 4019", me);
    EXPECT(0, "@rip-%d SELECT value FROM meta WHERE key = 'damaged'", me);
    return bad ? 1 : 0; /* exit() with the churners still running */
}

/* ---- 100 forks ------------------------------------------------------------- */

static int mode_fork100(void)
{
    for (int i = 0; i < 100; i++)
        sink = life_alloc(8999);
    int bad = 0;
    for (int k = 0; k < 100; k++) {
        pid_t c = fork();
        if (c == 0) {
            alarm(20);
            for (int i = 0; i <= k % 5; i++)
                sink = life_alloc((size_t)(9000 + k));
            int me = (int)getpid();
            EXPECT(k % 5 + 1, "@rip-%d SELECT count(*) FROM allocations WHERE size = %d", me,
                   9000 + k);
            EXPECT(0, "@rip-%d SELECT count(*) FROM allocations WHERE size <> %d AND " OWN_ROWS,
                   me, 9000 + k);
            /* the parent's 100 blocks live at the fork, imported from its profile */
            EXPECT(100, "@rip-%d SELECT count(*) FROM allocations WHERE size = 8999 AND NOT "
                        OWN_ROWS, me);
            exit(0);
        }
        int st;
        if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            bad++;
    }
    int me = (int)getpid();
    EXPECT(100, "@rip-%d SELECT count(*) FROM allocations WHERE size = 8999", me);
    EXPECT(0, "@rip-%d SELECT count(*) FROM allocations WHERE size BETWEEN 9000 AND 9099", me);
    if (bad)
        rel_say("rel_life: %d children failed", bad);
    return bad ? 1 : 0;
}

/* ---- exec, vfork, posix_spawn ---------------------------------------------- */

/* The exec'd image: 20 blocks of a size given by its tag. */
static int mode_exec_child(const char *tag)
{
    size_t size = 6000 + (size_t)(tag[0] - 'A') * 10;
    for (int i = 0; i < 20; i++)
        sink = life_alloc(size);
    const char *path = rheaper_profile_path();
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    EXPECT(20, "@%s SELECT count(*) FROM allocations WHERE size = %zu", base, size);
    EXPECT(0, "@%s SELECT count(*) FROM allocations WHERE size <> %zu AND " AT_SYM("life_alloc"),
           base, size);
    return 0;
}

static int wait_ok(pid_t c, const char *what)
{
    int st;
    if (c <= 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        rel_say("rel_life: %s failed", what);
        return 1;
    }
    return 0;
}

static int mode_exec(const char *self)
{
    for (int i = 0; i < 10; i++)
        sink = life_alloc(6001);
    int bad = 0;
    char *argB[] = {(char *)self, "exec-child", "B", NULL};
    char *argC[] = {(char *)self, "exec-child", "C", NULL};
    char *argD[] = {(char *)self, "exec-child", "D", NULL};
    char *argT[] = {"true", NULL};

    /* fork, allocate, execve: the pre-exec image's profile is closed first */
    pid_t c = fork();
    if (c == 0) {
        for (int i = 0; i < 5; i++)
            sink = life_alloc(6003);
        execve(self, argD, environ);
        _exit(127);
    }
    bad += wait_ok(c, "fork + execve");
    EXPECT(5, "@rip-%d SELECT count(*) FROM allocations WHERE size = 6003", (int)c);
    EXPECT(1, "@rip-%d SELECT value FROM meta WHERE key = 'clean'", (int)c);

    /* vfork + execve: nothing may run in the child but execve */
    c = vfork();
    if (c == 0) {
        execve(self, argC, environ);
        _exit(127);
    }
    bad += wait_ok(c, "vfork + execve");

    /* posix_spawn of an instrumented and of a plain program */
    pid_t s;
    if (posix_spawn(&s, self, NULL, NULL, argB, environ) != 0)
        s = -1;
    bad += wait_ok(s, "posix_spawn self");
    if (posix_spawn(&s, "/bin/true", NULL, NULL, argT, environ) != 0)
        s = -1;
    bad += wait_ok(s, "posix_spawn /bin/true");

    for (int i = 0; i < 10; i++)
        sink = life_alloc(6002);
    int me = (int)getpid();
    EXPECT(10, "@rip-%d SELECT count(*) FROM allocations WHERE size = 6001", me);
    EXPECT(10, "@rip-%d SELECT count(*) FROM allocations WHERE size = 6002", me);
    EXPECT(0, "@rip-%d SELECT count(*) FROM allocations WHERE size IN (6003, 6010, 6020, 6030)",
           me);
    EXPECT(1, "@rip-%d SELECT value FROM meta WHERE key = 'clean'", me);
    return bad ? 1 : 0;
}

/* ---- a signal handler that allocates --------------------------------------- */

static volatile sig_atomic_t handled;

static void on_alarm(int sig)
{
    (void)sig;
    /* 24 bytes come from glibc's tcache without a lock, so glibc itself does
     * not deadlock; the profiler must not either, whatever it was doing. */
    void *p = life_alloc(24);
    free(p);
    handled++;
}

#define SIG_N 200000

static int mode_sigalloc(void)
{
    free(life_alloc(24)); /* prime the tcache bin */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 100}, {0, 100}};
    setitimer(ITIMER_REAL, &it, NULL);
    int bad = 0;
    for (int i = 0; i < SIG_N; i++) {
        unsigned char *p = life_alloc(200 + (size_t)(i % 50));
        p[0] = (unsigned char)i;
        bad += p[0] != (unsigned char)i;
        free(p);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    signal(SIGALRM, SIG_DFL);
    EXPECT(SIG_N, "SELECT count(*) FROM allocations WHERE size BETWEEN 200 AND 249 AND "
                  "dealloc_after IS NOT NULL");
    /* a handler's pair is recorded whole or not at all (the guard) */
    EXPECT(1, "SELECT count(*) BETWEEN 1 AND %d FROM allocations WHERE size = 24",
           (int)handled + 1);
    EXPECT(0, "SELECT count(*) FROM allocations WHERE size = 24 AND dealloc_after IS NULL");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'damaged'");
    EXPECT(1, "SELECT value FROM meta WHERE key = 'clean'");
    if (handled < 10) {
        rel_say("rel_life: only %d signals were handled", (int)handled);
        bad++;
    }
    return bad ? 1 : 0;
}

/* ---- dlclose with live blocks ----------------------------------------------- */

static int mode_dlclose(const char *lib)
{
    void *h = dlopen(lib, RTLD_NOW);
    if (!h) {
        rel_say("rel_life: dlopen %s: %s", lib, dlerror());
        return 3;
    }
    void (*fn)(void **, int, size_t) = (void (*)(void **, int, size_t))dlsym(h, "rel_lib_alloc");
    if (!fn)
        return 3;
    void *blocks[40];
    fn(blocks, 40, 4747);
    for (int i = 0; i < 40; i++)
        rel_fill(blocks[i], 4747, (unsigned)i);
    if (dlclose(h) != 0)
        return 4;
    int bad = 0;
    for (int i = 0; i < 40; i++) {
        bad += !rel_intact(blocks[i], 4747, (unsigned)i);
        if (i < 10)
            free(blocks[i]);
    }
    for (int i = 0; i < 5; i++)
        sink = life_alloc(4848); /* after the unload */
    EXPECT(40, "SELECT count(*) FROM allocations WHERE size = 4747");
    EXPECT(30, "SELECT count(*) FROM allocations WHERE size = 4747 AND dealloc_after IS NULL");
    EXPECT(40,
           "SELECT count(*) FROM allocations a JOIN backtraces b ON b.id = a.bt AND b.frame_no = 0"
           " WHERE a.size = 4747 AND b.sym = 'rel_lib_alloc' AND b.module LIKE '%%rel_lib.so'");
    EXPECT(5, "SELECT count(*) FROM allocations WHERE size = 4848 AND " AT_SYM("life_alloc"));
    EXPECT(1, "SELECT value FROM meta WHERE key = 'clean'");
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    alarm(100);
    if (!strcmp(m, "threads10k"))
        return mode_threads10k();
    if (!strcmp(m, "exit-thread"))
        return mode_exit_thread();
    if (!strcmp(m, "exit-late"))
        return mode_exit_late();
    if (!strcmp(m, "fork-threads"))
        return mode_fork_threads();
    if (!strcmp(m, "fork100"))
        return mode_fork100();
    if (!strcmp(m, "exec") && argc > 2)
        return mode_exec(argv[2]);
    if (!strcmp(m, "exec-child") && argc > 2 && argv[2][0] >= 'A' && argv[2][0] <= 'Z')
        return mode_exec_child(argv[2]);
    if (!strcmp(m, "sigalloc"))
        return mode_sigalloc();
    if (!strcmp(m, "dlclose") && argc > 2)
        return mode_dlclose(argv[2]);
    rel_say("usage: rel_life threads10k|exit-thread|exit-late|fork-threads|fork100|exec "
            "SELF|sigalloc|dlclose LIB");
    return 2;
}
