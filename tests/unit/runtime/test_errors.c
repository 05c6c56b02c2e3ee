/* test_errors.c: API errors and a file-size limit.
 *
 * rheaper_enable reports a missing directory and a path that is not a
 * directory as RHEAPER_ERR_DIR, and rheaper_disable while off as
 * RHEAPER_ERR_NOT_ENABLED; every code has its own message. Under a 64 KiB
 * RLIMIT_FSIZE the child keeps running (no SIGXFSZ), tracking stops by itself,
 * and everything written before the limit still reads cleanly.
 */
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "rt_test.h"

int main(void)
{
    char dir[256], p[512];
    tr_mkdtemp(dir, sizeof dir, "errors");

    snprintf(p, sizeof p, "%s/missing", dir);
    CHECK_EQ(tr_enable(p, 0, 0, 0), RHEAPER_ERR_DIR);
    CHECK_EQ(rheaper_is_enabled(), 0);
    snprintf(p, sizeof p, "%s/plainfile", dir);
    int fd = open(p, O_CREAT | O_WRONLY, 0755);
    close(fd);
    CHECK_EQ(tr_enable(p, 0, 0, 0), RHEAPER_ERR_DIR);
    unlink(p);
    CHECK_EQ(tr_count_files(dir), 0);
    CHECK_EQ(rheaper_disable(), RHEAPER_ERR_NOT_ENABLED);
    int codes[] = {RHEAPER_OK,       RHEAPER_ERR_ALREADY, RHEAPER_ERR_DIR,
                   RHEAPER_ERR_FILE, RHEAPER_ERR_NOMEM,   RHEAPER_ERR_NOT_ENABLED};
    for (int i = 0; i < 6; i++) {
        CHECK(rheaper_strerror(codes[i]) && rheaper_strerror(codes[i])[0]);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(rheaper_strerror(codes[i]), rheaper_strerror(codes[j])) != 0);
    }

    /* file-size limit */
    pid_t c = fork();
    if (c == 0) {
        struct rlimit rl = {64 * 1024, 64 * 1024};
        setrlimit(RLIMIT_FSIZE, &rl);
        signal(SIGXFSZ, SIG_DFL);
        if (tr_enable(dir, 0, 0, 0) != RHEAPER_OK)
            _exit(3);
        for (int i = 0; i < 100000; i++)
            tr_alloc(1, 0x10000000 + (uintptr_t)i * 16, 8);
        _exit(rheaper_is_enabled() ? 4 : 0);
    }
    int st;
    waitpid(c, &st, 0);
    CHECK(WIFEXITED(st));
    CHECK_EQ(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 0);
    snprintf(p, sizeof p, "%s/rip-%d", dir, (int)c);
    struct tr_file f;
    CHECK_EQ(tr_read(p, &f), 0);
    CHECK_EQ(f.err[0], 0);
    CHECK(f.size <= 64 * 1024);
    CHECK(f.nev > 1000 && f.nev < 100000);
    int bad = 0;
    for (int i = 0; i < f.nev; i++)
        if (f.ev[i].addr != 0x10000000 + (uintptr_t)i * 16)
            bad++;
    CHECK_EQ(bad, 0);
    CHECK_EQ(f.has_trailer, 0);
    tr_free_file(&f);
    tr_rmdir(dir);
    return rh_test_summary();
}
