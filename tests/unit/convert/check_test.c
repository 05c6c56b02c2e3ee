/* check_test.c: the two tiers of the converter's RH_ALWAYS and RH_NEVER
 * (convert/rh_check.h).
 *
 * Built twice, with convert/rh_check.c compiled as a release build does
 * (convert-check-release) and with RH_CHECKED (convert-check-checked). A
 * holding check is silent and lets its caller go on; a broken one prints one
 * line naming this file, the line, the function, the condition and the detail.
 * Then the release tier gives the caller its failure path (RH_ALWAYS 0,
 * RH_NEVER 1) and the program goes on; the checked tier aborts, which the test
 * sees from a child process. stderr is redirected to a temp file to read the
 * line back.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "rh_check.h"

/* Runs fn with stderr going to a temp file; returns what it wrote (static). */
static const char *rh_capture(int (*fn)(int), int arg, int *ret)
{
    static char buf[1024];
    FILE *tmp = tmpfile();
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    *ret = fn(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(buf, 1, sizeof buf - 1, tmp);
    buf[n] = 0;
    fclose(tmp);
    return buf;
}

static int rh_line_always; /* the line of the RH_ALWAYS below */

/* A function with a clean failure path: -1 when its belief is broken. */
static int rh_lookup(int i)
{
    int table[4] = {10, 20, 30, 40};
    rh_line_always = __LINE__ + 1;
    if (!RH_ALWAYS(i >= 0 && i < 4, "index %d of %d", i, 4))
        return -1;
    return table[i];
}

static int rh_never(int v)
{
    if (RH_NEVER(v == 7, "value %d", v))
        return -1;
    return v * 2;
}

int main(void)
{
    int ret = 0;
    /* holding checks: silent, the caller goes on */
    const char *out = rh_capture(rh_lookup, 2, &ret);
    CHECK_EQ(ret, 30);
    CHECK_EQ(strlen(out), 0);
    out = rh_capture(rh_never, 3, &ret);
    CHECK_EQ(ret, 6);
    CHECK_EQ(strlen(out), 0);

    if (!rh_check_is_checked()) {
        /* release: one line, then the caller's failure path */
        out = rh_capture(rh_lookup, 9, &ret);
        CHECK_EQ(ret, -1);
        char want[256];
        snprintf(want, sizeof want,
                 "rheaper: internal error at check_test.c:%d (rh_lookup): i >= 0 && i < 4: "
                 "index 9 of 4\n",
                 rh_line_always);
        CHECK(strcmp(out, want) == 0);
        if (strcmp(out, want))
            fprintf(stderr, "got: %swant: %s", out, want);
        out = rh_capture(rh_never, 7, &ret);
        CHECK_EQ(ret, -1);
        CHECK(strstr(out, "(rh_never): never v == 7: value 7\n") != NULL);
        CHECK_EQ(strchr(out, '\n') - out + 1, (long)strlen(out)); /* one line */
    } else {
        /* checked: the broken belief stops the program (SIGABRT) */
        for (int which = 0; which < 2; which++) {
            pid_t pid = fork();
            if (pid == 0) {
                int fd = open("/dev/null", O_WRONLY);
                dup2(fd, 2);
                int r = which ? rh_never(7) : rh_lookup(9);
                _exit(r == -1 ? 3 : 4); /* not reached when it aborts */
            }
            int st = 0;
            CHECK(waitpid(pid, &st, 0) == pid);
            CHECK(WIFSIGNALED(st));
            CHECK_EQ(WIFSIGNALED(st) ? WTERMSIG(st) : 0, SIGABRT);
        }
    }
    return rh_test_summary();
}
