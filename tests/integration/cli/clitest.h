/* clitest.h: what the cli tests share: running a command with its output
 * captured, and reading values out of JSON text through SQLite's JSON
 * functions (so the tests parse exactly what a user's tool would).
 */
#ifndef CLITEST_H
#define CLITEST_H

#define _GNU_SOURCE
#include <fcntl.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

struct cl_run {
    int code; /* exit status, 128 + signal, or -1 */
    char *out, *err;
    int err_lines;
};

static char *cl_slurp(int fd)
{
    off_t n = lseek(fd, 0, SEEK_END);
    char *s = malloc((size_t)(n > 0 ? n : 0) + 1);
    lseek(fd, 0, SEEK_SET);
    ssize_t got = n > 0 ? read(fd, s, (size_t)n) : 0;
    s[got > 0 ? got : 0] = 0;
    return s;
}

/* Runs argv (NULL-terminated) with stdout and stderr captured. */
static void cl_exec(struct cl_run *r, char *const argv[])
{
    char t1[] = "/tmp/cli-out-XXXXXX", t2[] = "/tmp/cli-err-XXXXXX";
    int fo = mkstemp(t1), fe = mkstemp(t2);
    unlink(t1);
    unlink(t2);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fo, 1);
        dup2(fe, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    r->code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
    r->out = cl_slurp(fo);
    r->err = cl_slurp(fe);
    close(fo);
    close(fe);
    r->err_lines = 0;
    for (char *p = r->err; *p; p++)
        r->err_lines += *p == '\n';
}

static void cl_free(struct cl_run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* `rheaper ARGS...` (NULL-terminated), output in r (freed first). */
static const char *cl_rheaper;
static void cl_rh(struct cl_run *r, ...)
{
    char *argv[64];
    int n = 0;
    argv[n++] = (char *)cl_rheaper;
    va_list ap;
    va_start(ap, r);
    const char *a;
    while ((a = va_arg(ap, const char *)) && n < 63)
        argv[n++] = (char *)a;
    va_end(ap);
    argv[n] = NULL;
    cl_exec(r, argv);
}

static sqlite3 *cl_mem;

/* json_extract(json, path) as an integer (-999999 when absent or invalid). */
static long long cl_jint(const char *json, const char *path)
{
    sqlite3_stmt *st;
    long long v = -999999;
    if (!cl_mem)
        sqlite3_open(":memory:", &cl_mem);
    if (sqlite3_prepare_v2(cl_mem, "SELECT json_extract(?1, ?2)", -1, &st, NULL) != SQLITE_OK)
        return v;
    sqlite3_bind_text(st, 1, json, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static double cl_jdbl(const char *json, const char *path)
{
    sqlite3_stmt *st;
    double v = -1;
    if (!cl_mem)
        sqlite3_open(":memory:", &cl_mem);
    if (sqlite3_prepare_v2(cl_mem, "SELECT json_extract(?1, ?2)", -1, &st, NULL) != SQLITE_OK)
        return v;
    sqlite3_bind_text(st, 1, json, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* json_extract(json, path) as text in buf ("" when absent). */
static const char *cl_jstr(const char *json, const char *path, char *buf, size_t len)
{
    sqlite3_stmt *st;
    buf[0] = 0;
    if (!cl_mem)
        sqlite3_open(":memory:", &cl_mem);
    if (sqlite3_prepare_v2(cl_mem, "SELECT json_extract(?1, ?2)", -1, &st, NULL) != SQLITE_OK)
        return buf;
    sqlite3_bind_text(st, 1, json, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return buf;
}

/* 1 when s is valid JSON for SQLite's json_valid(). */
static int cl_json_valid(const char *s)
{
    sqlite3_stmt *st;
    int v = 0;
    if (!cl_mem)
        sqlite3_open(":memory:", &cl_mem);
    if (sqlite3_prepare_v2(cl_mem, "SELECT json_valid(?1)", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, s, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

static int cl_exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* Builds cli_prog.c with rheaper-cc into work/prog and runs it under
 * `rheaper run -o work/DBNAME`. Returns the run's exit status. */
static int cl_profile(const char *bin, const char *src, const char *work, const char *dbname,
                      struct cl_run *r)
{
    char cc[512], inc[512], csrc[512], prog[512], db[512];
    snprintf(cc, sizeof cc, "%s/rheaper-cc", bin);
    snprintf(inc, sizeof inc, "-I%s", src);
    snprintf(csrc, sizeof csrc, "%s/cli_prog.c", src);
    snprintf(prog, sizeof prog, "%s/prog", work);
    snprintf(db, sizeof db, "%s/%s", work, dbname);
    char *ccargv[] = {cc, "-O2", "-g", "-pthread", inc, csrc, "-o", prog, NULL};
    cl_exec(r, ccargv);
    if (r->code != 0) {
        fprintf(stderr, "cannot build the workload: %s\n", r->err);
        return -1;
    }
    cl_free(r);
    cl_rh(r, "run", "-o", db, "--", prog, NULL);
    return r->code;
}

#endif
