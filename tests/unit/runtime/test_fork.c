/* test_fork.c: fork children write their own files and never repeat the
 * parent's events.
 *
 * A child that records writes rip-<childpid> holding only its own events (the
 * parent's unwritten chunk is dropped, not copied); children that record nothing
 * (_exit, or exec) leave no file; and 30 forks while three threads record
 * without pause neither deadlock nor lose the children's events.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "rt_test.h"

static volatile int stop;

static void *hammer(void *arg)
{
    uintptr_t base = (uintptr_t)arg;
    for (uintptr_t i = 0; !stop; i++) {
        tr_alloc(1, base + (i % 4096) * 16, 24);
        tr_free(base + (i % 4096) * 16);
    }
    return NULL;
}

static int child_file(const char *dir, pid_t pid, struct tr_file *f)
{
    char p[512];
    snprintf(p, sizeof p, "%s/rip-%d", dir, (int)pid);
    if (access(p, F_OK) != 0)
        return -1;
    return tr_read(p, f);
}

int main(void)
{
    alarm(100); /* a deadlock fails the test instead of hanging ctest */
    char dir[256];
    tr_mkdtemp(dir, sizeof dir, "fork");
    CHECK_EQ(tr_enable(dir, 0, 0, 0), RHEAPER_OK);
    char parent_path[512];
    snprintf(parent_path, sizeof parent_path, "%s", rheaper_profile_path());
    for (int i = 0; i < 10; i++)
        tr_alloc(1, 0x100000 + (uintptr_t)i * 16, 100);

    /* 1. a child that records */
    pid_t c = fork();
    if (c == 0) {
        for (int i = 0; i < 7; i++)
            tr_alloc(1, 0x200000 + (uintptr_t)i * 16, 200);
        exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    struct tr_file f;
    CHECK_EQ(child_file(dir, c, &f), 0);
    CHECK_EQ(f.err[0], 0);
    CHECK_EQ(f.hdr.pid, c);
    CHECK_EQ(f.hdr.ppid, getpid());
    CHECK_EQ(f.nev, 7);
    CHECK(f.has_trailer);
    CHECK_EQ(f.tr_events, 7);
    for (int i = 0; i < f.nev; i++)
        CHECK(f.ev[i].addr == 0x200000 + (uintptr_t)i * 16 && f.ev[i].size == 200);
    tr_free_file(&f);

    /* 2. children that record nothing leave no file */
    pid_t c2 = fork();
    if (c2 == 0)
        _exit(0);
    waitpid(c2, &st, 0);
    pid_t c3 = fork();
    if (c3 == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    waitpid(c3, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_EQ(child_file(dir, c2, &f), -1);
    CHECK_EQ(child_file(dir, c3, &f), -1);

    /* 3. forks while other threads record */
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, hammer, (void *)((uintptr_t)(i + 1) << 36));
    pid_t kids[30];
    int ok = 0;
    for (int k = 0; k < 30; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            tr_alloc(1, 0x300000 + (uintptr_t)k * 16, 300);
            exit(0);
        }
    }
    for (int k = 0; k < 30; k++) {
        waitpid(kids[k], &st, 0);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && child_file(dir, kids[k], &f) == 0) {
            if (!f.err[0] && f.nev == 1 && f.ev[0].addr == 0x300000 + (uintptr_t)k * 16 &&
                f.has_trailer)
                ok++;
            tr_free_file(&f);
        }
    }
    CHECK_EQ(ok, 30);
    stop = 1;
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);

    for (int i = 0; i < 5; i++)
        tr_free(0x100000 + (uintptr_t)i * 16);
    CHECK_EQ(rheaper_disable(), RHEAPER_OK);
    CHECK_EQ(tr_read(parent_path, &f), 0);
    CHECK_EQ(f.err[0], 0);
    CHECK_EQ(f.hdr.pid, getpid());
    int mine = 0;
    for (int i = 0; i < f.nev; i++)
        if (f.ev[i].addr >= 0x100000 && f.ev[i].addr < 0x100000 + 160)
            mine++;
    CHECK_EQ(mine, 15);
    CHECK_EQ(tr_count(&f, RIP_OP_ALLOC, 0) - (f.nev - 15) / 2, 10);
    int childs = 0;
    for (int i = 0; i < f.nev; i++)
        if (f.ev[i].addr >= 0x200000 && f.ev[i].addr < 0x400000)
            childs++;
    CHECK_EQ(childs, 0);
    CHECK_EQ(f.tr_events, (uint64_t)f.nev);
    tr_free_file(&f);
    tr_rmdir(dir);
    return rh_test_summary();
}
