/* rel_faults.c: faults around a profiled program; the program must not notice.
 *
 *   rel_faults workload     200 blocks, half freed (also used by the file cases)
 *   rel_faults grow         50 000 blocks of sizes 1..50 000, each checked and
 *                           freed: fills a small disk or a file-size limit
 *   rel_faults fsize        grow under a 256 KiB RLIMIT_FSIZE, SIGXFSZ default
 *   rel_faults nofile       RLIMIT_NOFILE at the current fd count before the first
 *                           allocation, then the program's own fds still work
 *   rel_faults nofile-fork  the profile is open; the fd limit is then reached:
 *                           the program keeps its fds, lost events are counted
 *   rel_faults nullalloc    the real allocator returns NULL: huge sizes, calloc
 *                           overflow, realloc that fails, RLIMIT_AS
 *   rel_faults eintr        a 200 us SIGALRM without SA_RESTART while the runtime
 *                           opens chunks and writes module maps
 *
 * Each mode exits 0 only when the program's own work came out right, and
 * states its profile's facts with EXPECT.
 */
#include "rel.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>

static void *volatile sink;

NOINLINE static void *fault_alloc(size_t n)
{
    void *p = malloc(n);
    sink = p;
    return p;
}

/* 200 blocks of sizes 2000..2199 filled and checked; the even ones freed. */
static int mode_workload(void)
{
    void *keep[200];
    int bad = 0;
    for (int i = 0; i < 200; i++) {
        keep[i] = fault_alloc((size_t)(2000 + i));
        if (!keep[i])
            return 3;
        rel_fill(keep[i], (size_t)(2000 + i), (unsigned)i);
    }
    for (int i = 0; i < 200; i++) {
        bad += !rel_intact(keep[i], (size_t)(2000 + i), (unsigned)i);
        if (!(i & 1))
            free(keep[i]);
    }
    EXPECT(200, "SELECT count(*) FROM allocations WHERE size BETWEEN 2000 AND 2199 AND " AT_SYM(
                    "fault_alloc"));
    EXPECT(100, "SELECT count(*) FROM allocations WHERE size BETWEEN 2000 AND 2199 AND "
                "dealloc_after IS NULL");
    EXPECT(1, "SELECT value FROM meta WHERE key = 'clean'");
    if (bad)
        rel_say("rel_faults: %d blocks corrupted", bad);
    return bad ? 1 : 0;
}

#define GROW_N 50000

/* Blocks of sizes 1..GROW_N, each filled, checked and freed. The profile must
 * hold a prefix of them: sizes 1..k, every one, none beyond. */
static int mode_grow(void)
{
    int bad = 0;
    for (int i = 1; i <= GROW_N; i++) {
        unsigned char *p = fault_alloc((size_t)i);
        if (!p)
            return 3;
        rel_fill(p, (size_t)i, (unsigned)i);
        bad += !rel_intact(p, (size_t)i, (unsigned)i);
        free(p);
    }
    EXPECT(1, "SELECT count(*) = max(size) AND min(size) = 1 AND count(DISTINCT size) = count(*)"
              " FROM allocations WHERE " AT_SYM("fault_alloc"));
    EXPECT(1,
           "SELECT count(*) > 500 AND count(*) < %d FROM allocations WHERE " AT_SYM("fault_alloc"),
           GROW_N);
    EXPECT(0, "SELECT count(*) FROM allocations WHERE " AT_SYM(
                  "fault_alloc") " AND dealloc_after IS NULL"
                                 " AND size < (SELECT max(size) FROM allocations)");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'clean'");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'damaged'");
    if (bad)
        rel_say("rel_faults: %d blocks corrupted", bad);
    return bad ? 1 : 0;
}

static int mode_fsize(void)
{
    struct rlimit rl = {256 * 1024, 256 * 1024};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        return 3;
    signal(SIGXFSZ, SIG_DFL);
    int rc = mode_grow();
    /* the program's own file writes still obey the limit: EFBIG, then SIGXFSZ
     * would be the program's own doing, so it is ignored for this probe only */
    signal(SIGXFSZ, SIG_IGN);
    char path[] = "/tmp/rh-rel-fsize-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 4;
    unlink(path);
    if (pwrite(fd, "x", 1, 256 * 1024) != -1 || errno != EFBIG) {
        rel_say("rel_faults: a write past RLIMIT_FSIZE did not fail with EFBIG");
        rc = 5;
    }
    close(fd);
    return rc;
}

/* Highest open fd below 4096 plus one, without allocating. */
static int fd_count(void)
{
    int top = 0;
    for (int fd = 0; fd < 4096; fd++)
        if (fcntl(fd, F_GETFD) != -1)
            top = fd + 1;
    return top;
}

/* Plugs every hole below the highest open fd with /dev/null, so that the
 * limit fd_count() gives leaves no fd to take. */
static void fd_plug_holes(void)
{
    int top = fd_count();
    for (int fd = 0; fd < top; fd++)
        if (fcntl(fd, F_GETFD) == -1 && open("/dev/null", O_RDONLY) < 0)
            return;
}

static int set_nofile(rlim_t n)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -1;
    rl.rlim_cur = n;
    return setrlimit(RLIMIT_NOFILE, &rl);
}

/* No fd left before the runtime's first allocation: it cannot create the
 * profile. The program's memory and its own fds behave as without it. */
static int mode_nofile(void)
{
    fd_plug_holes();
    int top = fd_count();
    if (set_nofile((rlim_t)top) != 0)
        return 3;
    int rc = mode_workload();
    if (open("/dev/null", O_RDONLY) != -1 || errno != EMFILE) {
        rel_say("rel_faults: open at the fd limit did not fail with EMFILE");
        rc = 4;
    }
    if (fd_count() != top) {
        rel_say("rel_faults: the fd count changed from %d to %d", top, fd_count());
        rc = 5;
    }
    if (set_nofile((rlim_t)top + 8) != 0)
        return 6;
    int fd = open("/dev/null", O_RDONLY);
    if (fd < 0) {
        rel_say("rel_faults: open after raising the fd limit failed");
        rc = 7;
    }
    close(fd);
    return rc;
}

/* The profile is open; then no fd is left. The runtime holds no fd of its own
 * (it opens the profile for each chunk and closes it), so the program keeps
 * every fd its limit allows; the parent's events that needed a new chunk while
 * no fd was free are counted lost, exactly, and recording resumes once the
 * limit is raised. A child at the limit cannot create its profile (one line)
 * and runs on unharmed. */
static int mode_nofile_fork(void)
{
    for (int i = 0; i < 50; i++)
        sink = fault_alloc(7000);
    fd_plug_holes();
    int top = fd_count();
    if (set_nofile((rlim_t)top) != 0)
        return 3;
    for (int i = 0; i < 20000; i++)
        free(fault_alloc(7001));
    pid_t c = fork();
    if (c == 0) {
        int bad = 0;
        for (int i = 0; i < 100; i++) {
            char *p = fault_alloc(7002);
            rel_fill(p, 7002, (unsigned)i);
            bad += !rel_intact(p, 7002, (unsigned)i);
            if (i & 1)
                free(p);
        }
        if (fd_count() != top)
            bad++;
        _exit(bad ? 1 : 0);
    }
    int st;
    if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        rel_say("rel_faults: the child failed");
        return 4;
    }
    if (open("/dev/null", O_RDONLY) != -1 || errno != EMFILE) {
        rel_say("rel_faults: open at the fd limit did not fail with EMFILE");
        return 5;
    }
    if (fd_count() != top) {
        rel_say("rel_faults: the fd count changed from %d to %d", top, fd_count());
        return 6;
    }
    set_nofile((rlim_t)top + 8); /* EXPECT needs an fd */
    for (int i = 0; i < 30; i++)
        free(fault_alloc(7003)); /* recorded again */
    int me = (int)getpid();
    char child[64];
    snprintf(child, sizeof child, "rip-%d", (int)c);
    EXPECT(50,
           "@rip-%d SELECT count(*) FROM allocations WHERE size = 7000 AND dealloc_after IS NULL",
           me);
    /* 40000 events: each recorded as a row (alloc) or a dealloc time (free),
     * or counted lost */
    EXPECT(40000,
           "@rip-%d SELECT (SELECT count(*) FROM allocations WHERE size = 7001) + (SELECT "
           "count(*) FROM allocations WHERE size = 7001 AND dealloc_after IS NOT NULL) + "
           "(SELECT value FROM meta WHERE key = 'events_lost')",
           me);
    EXPECT(1, "@rip-%d SELECT (SELECT value FROM meta WHERE key = 'events_lost') > 0", me);
    EXPECT(30,
           "@rip-%d SELECT count(*) FROM allocations WHERE size = 7003 AND dealloc_after IS NOT "
           "NULL",
           me);
    EXPECT(0, "@rip-%d SELECT count(*) FROM allocations WHERE size = 7002", me);
    EXPECT(1, "@rip-%d SELECT value FROM meta WHERE key = 'clean'", me);
    EXPECT(0, "SELECT %d /* the child at the fd limit wrote %s */", access(child, F_OK) == 0,
           child);
    return 0;
}

/* Every way the real allocator says no; each NULL the program sees must be
 * counted in meta.failed_allocs and leave no row. */
static int mode_nullalloc(void)
{
    int failed = 0, rc = 0;
    const size_t huge = SIZE_MAX / 4;
    if (!fault_alloc(huge))
        failed++;
    volatile size_t count = SIZE_MAX / 8;
    if (!calloc(count, 64)) /* n * size overflows */
        failed++;
    void *q = fault_alloc(4242);
    rel_fill(q, 4242, 42);
    void *r = realloc(q, huge);
    if (!r) {
        failed++;
        if (!rel_intact(q, 4242, 42))
            rc = 3; /* a failed realloc must leave the block alone */
        free(q);
    }
    void *a = NULL;
    if (posix_memalign(&a, 64, huge) != 0)
        failed++;
    if (!aligned_alloc(4096, huge))
        failed++;
    /* an address-space limit: an ordinary-looking request fails */
    struct rlimit old, rl;
    getrlimit(RLIMIT_AS, &old);
    rl = old;
    rl.rlim_cur = 1ull << 30;
    if (setrlimit(RLIMIT_AS, &rl) == 0) {
        for (int i = 0; i < 5; i++)
            if (!fault_alloc((size_t)3 << 30))
                failed++;
        setrlimit(RLIMIT_AS, &old);
    }
    /* the program and the profiler carry on */
    for (int i = 0; i < 10; i++)
        sink = fault_alloc(4343);
    EXPECT(failed, "SELECT value FROM meta WHERE key = 'failed_allocs'");
    EXPECT(0, "SELECT count(*) FROM allocations WHERE size >= %llu", 1ull << 30);
    EXPECT(1, "SELECT count(*) FROM allocations WHERE size = 4242 AND dealloc_after IS NOT NULL");
    EXPECT(10, "SELECT count(*) FROM allocations WHERE size = 4343 AND dealloc_after IS NULL");
    EXPECT(1, "SELECT value FROM meta WHERE key = 'clean'");
    if (failed != 10) {
        rel_say("rel_faults: expected 10 failed allocations, saw %d", failed);
        rc = 4;
    }
    return rc;
}

static volatile sig_atomic_t ticks;
static void on_alarm(int sig)
{
    (void)sig;
    ticks++;
}

#define EINTR_N 20000

/* Periodic signals without SA_RESTART while the runtime opens chunks (a small
 * RHEAPER_BUFFER_SIZE makes many) and writes module maps (dlopen/dlclose). */
static int mode_eintr(const char *lib)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART */
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 200}, {0, 200}};
    setitimer(ITIMER_REAL, &it, NULL);
    int bad = 0, opened = 0;
    for (int i = 0; i < EINTR_N; i++) {
        unsigned char *p = fault_alloc((size_t)(i % 1000) + 1);
        p[0] = (unsigned char)i;
        bad += p[0] != (unsigned char)i;
        if (i % 2)
            free(p);
        if (lib && i % 400 == 0) {
            void *h = dlopen(lib, RTLD_NOW);
            if (h) {
                opened++;
                dlclose(h);
            }
        }
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    EXPECT(EINTR_N, "SELECT count(*) FROM allocations WHERE " AT_SYM("fault_alloc"));
    EXPECT(EINTR_N / 2, "SELECT count(*) FROM allocations WHERE " AT_SYM(
                            "fault_alloc") " AND dealloc_after IS NULL");
    EXPECT(1, "SELECT value FROM meta WHERE key = 'clean'");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'damaged'");
    EXPECT(0, "SELECT value FROM meta WHERE key = 'events_lost'");
    if (lib && opened != EINTR_N / 400) {
        rel_say("rel_faults: dlopen worked %d times", opened);
        bad++;
    }
    if (ticks < 10) {
        rel_say("rel_faults: only %d signals arrived", (int)ticks);
        bad++;
    }
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *m = argc > 1 ? argv[1] : "";
    if (!strcmp(m, "workload"))
        return mode_workload();
    if (!strcmp(m, "grow"))
        return mode_grow();
    if (!strcmp(m, "fsize"))
        return mode_fsize();
    if (!strcmp(m, "nofile"))
        return mode_nofile();
    if (!strcmp(m, "nofile-fork"))
        return mode_nofile_fork();
    if (!strcmp(m, "nullalloc"))
        return mode_nullalloc();
    if (!strcmp(m, "eintr"))
        return mode_eintr(argc > 2 ? argv[2] : NULL);
    rel_say("usage: rel_faults workload|grow|fsize|nofile|nofile-fork|nullalloc|eintr [LIB]");
    return 2;
}
