/* test_env.c: starting from the environment, lazily.
 *
 * The test re-executes itself with RHEAPER_* set. The child's first recorded
 * call initialises the runtime (state UNINIT until then) and creates the file;
 * exit writes the trailer and the one "rheaper: wrote" line. A bad
 * RHEAPER_MAX_STACK_DEPTH gets exactly one warning line and the default, a good
 * one is used. A child that records nothing leaves no file.
 */
#include <sys/wait.h>

#include "rt_test.h"

/* Runs this program as `mode` with the given depth; stderr goes to errpath. */
static pid_t run_child(const char *mode, const char *dir, const char *depth, const char *errpath)
{
    pid_t c = fork();
    if (c == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        setenv("RHEAPER_ENABLE", "1", 1);
        setenv("RHEAPER_LOG", "stderr", 1); /* the "wrote" notice on a file too */
        setenv("RHEAPER_PROFILE_DIR", dir, 1);
        setenv("RHEAPER_MAX_STACK_DEPTH", depth, 1);
        execl("/proc/self/exe", "unit-runtime-env", mode, (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(c, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return c;
}

static int count_lines(const char *path, const char *needle)
{
    FILE *fp = fopen(path, "r");
    char line[1024];
    int n = 0;
    while (fp && fgets(line, sizeof line, fp))
        if (strstr(line, needle))
            n++;
    if (fp)
        fclose(fp);
    return n;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "child-events")) {
        for (int i = 0; i < 10; i++)
            tr_alloc(1, 0x8000 + (uintptr_t)i * 16, 10);
        return rheaper_is_enabled() ? 0 : 5;
    }
    if (argc > 1 && !strcmp(argv[1], "child-none"))
        return 0;

    char dir[256], err[512], p[512];
    tr_mkdtemp(dir, sizeof dir, "env");
    snprintf(err, sizeof err, "%s.stderr", dir);

    pid_t c = run_child("child-events", dir, "bogus", err);
    snprintf(p, sizeof p, "%s/rip-%d", dir, (int)c);
    struct tr_file f;
    CHECK_EQ(tr_read(p, &f), 0);
    CHECK_EQ(f.err[0], 0);
    CHECK_EQ(f.hdr.max_stack_depth, 64);
    CHECK_EQ(f.nev, 10);
    CHECK(f.has_trailer);
    CHECK_EQ(f.tr_events, 10);
    tr_free_file(&f);
    CHECK_EQ(count_lines(err, "RHEAPER_MAX_STACK_DEPTH"), 1);
    CHECK_EQ(count_lines(err, "rheaper: wrote "), 1);
    CHECK_EQ(count_lines(err, "(10 events)"), 1);

    c = run_child("child-events", dir, "7", err);
    snprintf(p, sizeof p, "%s/rip-%d", dir, (int)c);
    CHECK_EQ(tr_read(p, &f), 0);
    CHECK_EQ(f.hdr.max_stack_depth, 7);
    CHECK_EQ(f.nev, 10);
    tr_free_file(&f);
    CHECK_EQ(count_lines(err, "rheaper: "), 1);

    c = run_child("child-none", dir, "7", err);
    snprintf(p, sizeof p, "%s/rip-%d", dir, (int)c);
    CHECK(access(p, F_OK) != 0);
    CHECK_EQ(count_lines(err, "rheaper: "), 0);
    CHECK_EQ(tr_count_files(dir), 2);
    unlink(err);
    tr_rmdir(dir);
    return rh_test_summary();
}
