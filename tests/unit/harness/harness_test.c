/* harness_test.c: the contract of tests/harness.h, checked on itself.
 *
 * Each case runs in a child process that makes a known number of passing
 * and failing checks and returns rh_test_summary(); the parent compares the
 * child's exit status with the contract: the failure count, capped at
 * RH_TEST_FAIL_MAX (so 300 failures do not wrap to a passing status, and no
 * count reads as 77, a skipped test), and 1 when no check ran. The children's
 * output goes to /dev/null.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* The exit status of a program that makes `pass` passing and `fail` failing
 * checks (CHECK and CHECK_EQ alternately), or -1 when it did not exit. */
static int rh_child_status(int pass, int fail)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(fd, 2);
        rh_test_pass = rh_test_fail = 0;
        for (int i = 0; i < pass; i++)
            CHECK_EQ(i, i);
        for (int i = 0; i < fail; i++) {
            if (i & 1)
                CHECK(i < 0);
            else
                CHECK_EQ(i, i + 1);
        }
        fflush(stdout);
        _exit(rh_test_summary());
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

int main(void)
{
    static const struct {
        int pass, fail, status;
    } cases[] = {
        {5, 0, 0},   {0, 0, 1},   {5, 1, 1},    {2, 3, 3},    {0, 75, 75},
        {0, 76, 76}, {0, 77, 76}, {1, 256, 76}, {0, 300, 76},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int got = rh_child_status(cases[i].pass, cases[i].fail);
        CHECK_EQ(got, cases[i].status);
        if (got != cases[i].status)
            fprintf(stderr, "case %zu: %d passing, %d failing checks: status %d, want %d\n", i,
                    cases[i].pass, cases[i].fail, got, cases[i].status);
    }
    CHECK_EQ(RH_TEST_FAIL_MAX, 76);
    return rh_test_summary();
}
