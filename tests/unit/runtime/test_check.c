/* test_check.c: a failed internal check in a release build (RHEAPER_DEBUG_LEVEL
 * 1) never ends the program.
 *
 * With tracking on and 100 blocks recorded, rh_assert(1 == 2) evaluates to 0,
 * writes exactly one line on fd 2 ("rheaper: internal check failed: 1 == 2
 * (FILE:LINE); tracking stopped") and turns tracking off: the 50 blocks
 * allocated after it are not recorded, the 100 before it still read back from
 * the profile, and a second failed check adds no second line. A check that
 * holds evaluates to 1 and writes nothing. Not part of the sanitizer build's
 * runs (tests/integration/reliability): that runtime is built at level 2,
 * where a failed check aborts on purpose.
 */
#include <sys/stat.h>

#include "rt_test.h"
#include "rh_base.h" /* rh_assert */

int main(void)
{
    char dir[256], errpath[512], rip[512];
    tr_mkdtemp(dir, sizeof dir, "check");
    snprintf(errpath, sizeof errpath, "%s/stderr", dir);
    fflush(stderr);
    int saved = dup(2);
    int efd = open(errpath, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    CHECK(efd >= 0);
    dup2(efd, 2);
    close(efd);

    CHECK_EQ(tr_enable(dir, 0, 0, 0), RHEAPER_OK);
    for (int i = 0; i < 100; i++)
        tr_alloc(1, 0x20000000 + (uintptr_t)i * 16, 32);
    CHECK_EQ(rh_assert(2 + 2 == 4), 1);
    CHECK_EQ(rheaper_is_enabled(), 1);
    volatile int one = 1;
    int r = rh_assert(one == 2);
    int r2 = rh_assert(one == 2);
    CHECK_EQ(r, 0);
    CHECK_EQ(r2, 0);
    CHECK_EQ(rheaper_is_enabled(), 0);
    for (int i = 0; i < 50; i++)
        tr_alloc(1, 0x30000000 + (uintptr_t)i * 16, 32);
    snprintf(rip, sizeof rip, "%s", rheaper_profile_path());

    dup2(saved, 2);
    close(saved);
    char buf[1024] = {0};
    int fd = open(errpath, O_RDONLY);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    CHECK(n > 0);
    int lines = 0;
    for (ssize_t i = 0; i < n; i++)
        lines += buf[i] == '\n';
    CHECK_EQ(lines, 1);
    CHECK(strstr(buf, "rheaper: internal check failed: one == 2 (") == buf);
    CHECK(strstr(buf, "test_check.c:") != NULL);
    CHECK(strstr(buf, "; tracking stopped\n") != NULL);

    struct tr_file f;
    CHECK_EQ(tr_read(rip, &f), 0);
    CHECK_EQ(f.err[0], 0);
    CHECK_EQ(f.nev, 100);
    int bad = 0;
    for (int i = 0; i < f.nev; i++)
        if (f.ev[i].addr != 0x20000000 + (uintptr_t)i * 16)
            bad++;
    CHECK_EQ(bad, 0);
    tr_free_file(&f);
    tr_rmdir(dir);
    return rh_test_summary();
}
