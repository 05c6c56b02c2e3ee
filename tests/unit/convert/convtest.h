/* convtest.h: what the converter tests share.
 *
 * Running rheaper-convert as a child process with its stderr captured, reading
 * single values out of the resulting database, and the reference profile of
 * convert-basic (whose every row the tests know), so the hostile-input test can
 * mutate a realistic file. Header-only: each test is one program.
 */
#ifndef CONVTEST_H
#define CONVTEST_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ripwrite.h"

/* Result of one run of the converter. */
struct ct_run {
    int status;     /* raw wait status */
    char err[8192]; /* captured stderr */
    int err_lines;  /* newline count in err */
};

/* Runs exe with up to 6 arguments (NULL-terminated list). */
static inline int ct_exec(struct ct_run *r, const char *exe, const char *const *args)
{
    char tmpl[] = "/tmp/ct-stderr-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0)
        return -1;
    unlink(tmpl);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 2);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 1);
        const char *argv[10] = {exe};
        int n = 1;
        for (; args[n - 1] && n < 9; n++)
            argv[n] = args[n - 1];
        argv[n] = NULL;
        execv(exe, (char *const *)argv);
        _exit(127);
    }
    waitpid(pid, &r->status, 0);
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, r->err, sizeof r->err - 1);
    r->err[n > 0 ? n : 0] = 0;
    close(fd);
    r->err_lines = 0;
    for (char *p = r->err; *p; p++)
        r->err_lines += *p == '\n';
    return 0;
}

static inline int ct_exited(const struct ct_run *r, int code)
{
    return WIFEXITED(r->status) && WEXITSTATUS(r->status) == code;
}

/* One integer from a query (first column of the first row); -999999 when NULL
 * or no row, -888888 on an SQL error. */
static inline long long ct_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "SQL error: %s in %s\n", sqlite3_errmsg(db), sql);
        return -888888;
    }
    long long v = -999999;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* One text value (first column of the first row) into buf; "<null>" if none. */
static inline const char *ct_text(sqlite3 *db, const char *sql, char *buf, size_t len)
{
    sqlite3_stmt *st;
    snprintf(buf, len, "<error>");
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "SQL error: %s in %s\n", sqlite3_errmsg(db), sql);
        return buf;
    }
    snprintf(buf, len, "<null>");
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return buf;
}

static inline sqlite3 *ct_open_db(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

static inline int ct_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Number of entries in dir whose name starts with prefix. */
static inline int ct_count_prefix(const char *dir, const char *prefix)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -c '^%s' ", dir, prefix);
    FILE *p = popen(cmd, "r");
    int n = -1;
    if (p) {
        if (fscanf(p, "%d", &n) != 1)
            n = -1;
        pclose(p);
    }
    return n;
}

/* Makes a fresh scratch directory under the current directory. */
static inline void ct_scratch(char *out, size_t len, const char *name)
{
    snprintf(out, len, "%s.tmp", name);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", out, out);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot create %s\n", out);
}

/* ---- the reference profile ------------------------------------------------

   pid 1000. Threads: 1000 "main" (slot 0), 1001 "worker1" (slot 1), 1002 (slot
   2), 1003 "late" and 1004 through the SHARED chunk. Times in ns since enable.

   stacks: 1 malloc {0x401000, 0x401100}; 2 calloc {0x401200}; 3 realloc
   {0x401300}; 4 new {0x401400}; 5 strdup, cut, 3 frames; 6 new[] (defined in
   SHARED after its first use in slot 1); 9 used but never defined.

   rows (size: alloc -> dealloc, alloc thread -> dealloc thread, kind):
    16: 100 -> 400   main -> main      malloc
    32: 200 -> 500   main -> main      malloc   (realloc in place frees it)
    64: 510 -> 600   main -> main      realloc  (in-place result, then moved)
   128: 605 -> 1000  main -> main      realloc  (moved result, freed in chunk 2)
   100: 300 -> 450   main -> worker1   calloc   (cross-thread free)
    24: 150 -> 900   worker1 -> worker1 new     (freed at 900, reused at 900)
    12: 160 -> 170   worker1 -> worker1 new[]   (stack defined later)
     8: 900 -> NULL  1002              strdup   (address reuse at equal time)
    16: 950 -> NULL  1002              malloc   (closed: allocated over at 960)
    16: 960 -> NULL  1002              malloc
     7: 970 -> NULL  1002              unknown  (stack 9 never defined)
    48: 1100 -> 1250 main -> 1004      malloc   (freed through SHARED)
    40: 1200 -> 1300 1003 -> 1004      malloc
   plus: FAIL of 2^40 bytes at 700, a FREE of unknown 0x999990 at 800. */

#define CT_ROWS 13
#define CT_ALLOCS 11
#define CT_FREES 8
#define CT_REALLOCS 2
#define CT_EVENTS 22

static inline void ct_reference(struct rw_file *f, int with_trailer)
{
    static const char cmd[] = "./prog\0--flag\0arg two";
    rw_new(f, 1000, "/opt/test/prog", cmd, sizeof cmd - 1);
    static const uint64_t s1[] = {0x401000, 0x401100}, s2[] = {0x401200}, s3[] = {0x401300},
                          s4[] = {0x401400}, s5[] = {0x401500, 0x401510, 0x401520},
                          s6[] = {0x401600};
    struct rw_chunk c;

    rw_begin(&c, f, RIP_CHUNK_EVENTS, 0, 1000, 0); /* slot 0, sealed */
    rw_threadname(&c, "main");
    rw_stack(&c, 1, 1, s1, 2, 0);
    rw_alloc(&c, 100, 1, 16, 0x10000);
    rw_alloc(&c, 200, 1, 32, 0x10020);
    rw_stack(&c, 2, 2, s2, 1, 0);
    rw_alloc(&c, 300, 2, 100, 0x10100);
    rw_free(&c, 400, 0x10000);
    rw_stack(&c, 3, 3, s3, 1, 0);
    rw_realloc(&c, 500, 10, 3, 64, 0x10020, 0x10020);
    rw_realloc(&c, 600, 5, 3, 128, 0x10020, 0x20008); /* raw address */
    rw_fail(&c, 700, 1, 1ull << 40);
    rw_free(&c, 800, 0x999990);
    rw_end(&c, 1, 800);

    rw_begin(&c, f, RIP_CHUNK_EVENTS, 1, 1001, 100); /* slot 1, sealed */
    rw_threadname(&c, "worker1");
    rw_stack(&c, 4, 10, s4, 1, 0);
    rw_alloc(&c, 150, 4, 24, 0x40000);
    rw_alloc(&c, 160, 6, 12, 0x41000);
    rw_free(&c, 170, 0x41000);
    rw_free(&c, 450, 0x10100);
    rw_free(&c, 900, 0x40000);
    rw_end(&c, 1, 900);

    rw_module(f, 0x400000, "/nonexistent/rheaper-test/prog", (const uint8_t *)"\x12\x34\xab\xcd", 4,
              0x401000, 0x402000);

    rw_begin(&c, f, RIP_CHUNK_EVENTS, 2, 1002, 900); /* slot 2, unsealed */
    rw_stack(&c, 5, 20, s5, 3, 1);
    rw_alloc(&c, 900, 5, 8, 0x40000);
    rw_alloc(&c, 950, 1, 16, 0x50000);
    rw_alloc(&c, 960, 1, 16, 0x50000);
    rw_alloc(&c, 970, 9, 7, 0x60000);
    rw_end(&c, 0, 970);

    rw_begin(&c, f, RIP_CHUNK_SHARED, RIP_SLOT_SHARED, 0, 1200); /* sealed */
    rw_setthread(&c, 1003);
    rw_threadname(&c, "late");
    rw_alloc(&c, 1200, 1, 40, 0x70000);
    rw_setthread(&c, 1004);
    rw_free(&c, 1250, 0x30000);
    rw_stack(&c, 6, 11, s6, 1, 0);
    rw_free(&c, 1300, 0x70000);
    rw_end(&c, 1, 1300);

    rw_begin(&c, f, RIP_CHUNK_EVENTS, 0, 1000, 1000); /* slot 0 again, unsealed */
    rw_free(&c, 1000, 0x20008);
    rw_alloc(&c, 1100, 1, 48, 0x30000);
    rw_end(&c, 0, 1100);

    if (with_trailer)
        rw_trailer(f, CT_EVENTS, 2000, 6, 0);
}

#endif
