/* rh_live_list.c: `rheaper list [DIR...]`, the profiles in a directory.
 *
 * Every regular file whose first bytes are the rip magic is a profile. Each
 * gets one row: pid, parent pid, executable, start time, duration, events,
 * size, state, and the role (the process title: the trailer's, the running
 * process's, else the command line at start), read from the file header, the
 * chunk headers and the trailer by rh_rip_scan (rh_rip.c, the one decoder of
 * the format) without decoding any record, so listing is quick however large
 * the files are:
 *   recording   no trailer yet, and the process that writes it is running
 *               (its marker says it records this file, or it maps it);
 *   complete    a trailer with the normal end reason, and no damage seen;
 *   cut at the size limit   a trailer whose end reason is the size limit;
 *   damaged     no trailer and no process writing it (killed), or a chunk
 *               header that is not one, or a chunk past the end of the file;
 *   exec'd      the process went on as a new image (execve): its trailer says
 *               so, or a later profile has the same pid and parent (the new
 *               image's, rip-PID.1) while this one is not recording. The two
 *               are listed together, the new image right after the old.
 * Checksums are not verified here; rheaper-convert verifies them. Without
 * DIR, the current directory and RHEAPER_PROFILE_DIR are listed.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rh_query.h"
#include "rh_core.h"
#include "rh_util.h"
#include "rh_live.h"
#include "rh_safefile.h"

struct rh_prof_row {
    char path[PATH_MAX];
    char exe[256];
    char role[256]; /* the process title: at the end, while running, or at start */
    uint32_t pid, ppid;
    uint64_t start_real;
    int64_t duration_ns;
    uint64_t events;
    uint64_t size;
    const char *state;
    int writing, damaged, end_exec;
    uint64_t group; /* sort key: the start of the first image of the pid */
    int exec_into;  /* the row of the new image (-1: none) */
};

/* 1 when process pid is alive and maps the file with inode ino. */
static int rh_list_writing(uint32_t pid, ino_t ino, const char *dir)
{
    if (!pid || (kill((pid_t)pid, 0) != 0 && errno != EPERM))
        return 0;
    char path[PATH_MAX + 64], line[PATH_MAX + 256];
    /* the marker of an armed process says which file it records (a marker
     * only counts when it is the process's own: rh_marker_read) */
    struct rh_target t;
    if (rh_proc_target((int)pid, &t) != 0)
        return 0;
    snprintf(path, sizeof path, "%s/rheaper-%u.ctl", dir, pid);
    struct rh_marker mk;
    char why[PATH_MAX + 256];
    if (rh_marker_read(path, &t, &mk, why, sizeof why) == 0 && !strcmp(mk.state, "recording") &&
        mk.profile[0]) {
        struct stat sb;
        if (stat(mk.profile, &sb) == 0 && sb.st_ino == ino)
            return 1;
    }
    snprintf(path, sizeof path, "/proc/%u/maps", pid);
    int fd = rh_safe_open(path, O_RDONLY, 0, 0, 0, NULL, 0);
    FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    int yes = 0;
    while (!yes && fgets(line, sizeof line, f)) {
        unsigned long long inode = 0;
        if (sscanf(line, "%*s %*s %*s %*s %llu", &inode) == 1 && inode == (unsigned long long)ino)
            yes = 1;
    }
    fclose(f);
    return yes;
}

/* Sets row->role from a NUL-separated title of n bytes (padding dropped). */
static void rh_list_role(struct rh_prof_row *row, const uint8_t *t, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < sizeof row->role; i++)
        row->role[k++] = t[i] == 0 ? ' ' : (t[i] < 32 || t[i] == 127) ? '?' : (char)t[i];
    while (k && row->role[k - 1] == ' ')
        k--;
    row->role[k] = 0;
}

/* The running process's title (/proc/PID/cmdline) into row->role, when it
 * is the process that wrote the profile. */
static void rh_list_live_role(struct rh_prof_row *row)
{
    char path[64];
    uint8_t buf[256];
    snprintf(path, sizeof path, "/proc/%u/cmdline", row->pid);
    ssize_t n = rh_safe_read_small(path, (char *)buf, sizeof buf, 0, 0, NULL, 0);
    if (n > 0)
        rh_list_role(row, buf, (size_t)n);
}

/* Reads one profile's row (rh_rip_scan: the format is decoded there).
 * Returns 1 for a rip file, 0 for anything else. */
static int rh_list_one(const char *dir, const char *path, struct rh_prof_row *row)
{
    int fd = rh_safe_open(path, O_RDONLY, 0, 0, 0, NULL, 0); /* a FIFO is no profile */
    if (fd < 0)
        return 0;
    struct stat sb;
    struct rh_rip_scan sc;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
        rh_rip_scan(fd, (uint64_t)sb.st_size, &sc) != 0) {
        close(fd);
        return 0;
    }
    close(fd);
    memset(row, 0, sizeof *row);
    snprintf(row->path, sizeof row->path, "%s", path);
    const char *b = strrchr(sc.exe, '/');
    snprintf(row->exe, sizeof row->exe, "%s", b ? b + 1 : sc.exe[0] ? sc.exe : "?");
    row->pid = sc.hdr.pid;
    row->ppid = sc.hdr.ppid;
    rh_list_role(row, sc.title, sc.title_len);
    row->start_real = sc.hdr.start_realtime_ns;
    row->size = (uint64_t)sb.st_size;
    uint64_t last_ns = sc.last_calib_ns;
    int writing = !sc.trailer && rh_list_writing(sc.hdr.pid, sb.st_ino, dir);
    if (writing) {
        rh_list_live_role(row);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        last_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
    if (sc.trailer && sc.tr_end_ns > last_ns)
        last_ns = sc.tr_end_ns;
    row->duration_ns =
        last_ns > sc.hdr.start_mono_ns ? (int64_t)(last_ns - sc.hdr.start_mono_ns) : 0;
    row->events = sc.trailer ? sc.tr_events : sc.chunk_events;
    row->writing = writing;
    row->damaged = sc.damaged;
    row->end_exec = sc.trailer && sc.end_reason == RIP_END_EXEC;
    row->group = row->start_real;
    row->exec_into = -1;
    if (writing)
        row->state = sc.damaged ? "recording (damaged)" : "recording";
    else if (row->end_exec)
        row->state = "exec'd";
    else if (sc.damaged || !sc.trailer)
        row->state = "damaged";
    else if (sc.end_reason == RIP_END_SIZE_LIMIT)
        row->state = "cut at the size limit";
    else
        row->state = "complete";
    return 1;
}

static int rh_row_cmp(const void *a, const void *b)
{
    const struct rh_prof_row *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    if (x->start_real != y->start_real)
        return x->start_real < y->start_real ? -1 : 1;
    return strcmp(x->path, y->path);
}

/* Appends the profiles of dir to *rows. Returns 0, or -1 when dir cannot be
 * read (printed). */
static int rh_list_dir(const char *dir, struct rh_prof_row **rows, size_t *n, size_t *cap)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "rheaper: list: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", strcmp(dir, ".") ? dir : ".", e->d_name);
        if (rh_grow(rows, cap, *n + 1, sizeof **rows)) {
            closedir(d);
            fprintf(stderr, "rheaper: list: out of memory\n");
            return -1;
        }
        if (rh_list_one(dir, path, &(*rows)[*n]))
            (*n)++;
    }
    closedir(d);
    return 0;
}

/* The directories `list` reads without DIR: the current one and
 * RHEAPER_PROFILE_DIR (when it is another). Returns their count (1 or 2). */
static int rh_list_default_dirs(const char *dirs[2])
{
    int nd = 0;
    dirs[nd++] = ".";
    const char *env = getenv("RHEAPER_PROFILE_DIR");
    char a[PATH_MAX], b[PATH_MAX];
    if (env && *env && !(realpath(env, a) && realpath(".", b) && !strcmp(a, b)))
        dirs[nd++] = env;
    return nd;
}

/* 1 when path is an SQLite database with rheaper's meta table. */
static int rh_is_profile_db(const char *path)
{
    char magic[16];
    int fd = rh_safe_open(path, O_RDONLY, 0, 0, 0, NULL, 0);
    if (fd < 0)
        return 0;
    ssize_t k = pread(fd, magic, sizeof magic, 0);
    close(fd);
    if (k != (ssize_t)sizeof magic || memcmp(magic, "SQLite format 3", 16))
        return 0;
    sqlite3 *db = NULL;
    int yes = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
              rh_table_exists(db, "meta") && rh_table_exists(db, "allocations");
    sqlite3_close(db);
    return yes;
}

int rh_list_newest(char *out, size_t n)
{
    const char *dirs[2];
    int nd = rh_list_default_dirs(dirs);
    char best[PATH_MAX] = "";
    struct timespec bt = {0, 0};
    for (int i = 0; i < nd; i++) {
        DIR *d = opendir(dirs[i]);
        if (!d)
            continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char path[PATH_MAX];
            struct stat sb;
            snprintf(path, sizeof path, "%s/%s", dirs[i], e->d_name);
            if (lstat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
                continue;
            if (sb.st_mtim.tv_sec < bt.tv_sec ||
                (sb.st_mtim.tv_sec == bt.tv_sec && sb.st_mtim.tv_nsec < bt.tv_nsec) ||
                (sb.st_mtim.tv_sec == bt.tv_sec && sb.st_mtim.tv_nsec == bt.tv_nsec && best[0] &&
                 strcmp(path, best) > 0))
                continue; /* not newer (ties: the first name) */
            struct rh_prof_row row;
            int ok = 0;
            if (rh_list_one(dirs[i], path, &row))
                ok = strncmp(row.state, "recording", 9) != 0;
            else
                ok = rh_is_profile_db(path);
            if (ok) {
                snprintf(best, sizeof best, "%s", path);
                bt = sb.st_mtim;
            }
        }
        closedir(d);
    }
    if (!best[0]) {
        fprintf(stderr,
                "rheaper: view: no profile in %s%s%s (a profile database or a rip file not being"
                " recorded); name one: rheaper view PROFILE\n",
                dirs[0], nd > 1 ? " or " : "", nd > 1 ? dirs[1] : "");
        return -1;
    }
    snprintf(out, n, "%s", best);
    return 0;
}

/* An exec keeps the pid and the parent: a profile that is not being written
 * and has a later one of the same pid and parent ended in an exec (a pid
 * reused by an unrelated process would have to have the same parent). A
 * profile whose trailer says it ended in an exec is joined with the next
 * profile of its pid that started within RH_EXEC_JOIN_NS of that end, the
 * same parent or not (the parent may have exited in between, and the new
 * image then has another). Marks it exec'd (unless the trailer says
 * otherwise: a size limit), and groups the images of one pid in start order.
 * rows are in any order. */
#define RH_EXEC_JOIN_NS 10000000000ll
static void rh_list_join_execs(struct rh_prof_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct rh_prof_row *r = &rows[i];
        if (r->writing || !r->pid || !strcmp(r->state, "cut at the size limit"))
            continue;
        size_t best = n;
        uint64_t end = r->start_real + (uint64_t)(r->duration_ns > 0 ? r->duration_ns : 0);
        for (size_t j = 0; j < n; j++) {
            if (j == i || rows[j].pid != r->pid || rows[j].start_real <= r->start_real)
                continue;
            int parent = rows[j].ppid == r->ppid;
            int soon = r->end_exec && rows[j].start_real + 1000000000ull >= end &&
                       rows[j].start_real < end + (uint64_t)RH_EXEC_JOIN_NS;
            if ((parent || soon) && (best == n || rows[j].start_real < rows[best].start_real))
                best = j;
        }
        if (best == n)
            continue;
        if (!r->end_exec && r->damaged)
            continue; /* a broken chunk is damage, exec or not */
        r->state = "exec'd";
        r->exec_into = (int)best;
    }
    /* each image takes the group of the first image of its chain */
    for (size_t i = 0; i < n; i++) {
        if (rows[i].exec_into < 0)
            continue;
        int first = 1;
        for (size_t j = 0; j < n; j++)
            if (rows[j].exec_into == (int)i)
                first = 0;
        if (!first)
            continue;
        uint64_t g = rows[i].start_real;
        for (int k = rows[i].exec_into, hops = 0; k >= 0 && hops < (int)n; hops++) {
            rows[k].group = g;
            k = rows[k].exec_into;
        }
    }
}

int rh_cmd_list(int argc, char **argv)
{
    const char *dirs[64];
    int nd = 0;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: rheaper list [--json] [DIR...]\n");
            return 2;
        } else if (nd < 64)
            dirs[nd++] = argv[i];
    }
    if (!nd)
        nd = rh_list_default_dirs(dirs);
    struct rh_prof_row *rows = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    for (int i = 0; i < nd; i++)
        if (rh_list_dir(dirs[i], &rows, &n, &cap))
            rc = 1;
    rh_list_join_execs(rows, n);
    if (n > 1)
        qsort(rows, n, sizeof *rows, rh_row_cmp);
    if (json)
        printf("[");
    else if (n)
        printf("%8s  %8s  %-16s  %-19s  %10s  %12s  %10s  %-21s  %s  %s\n", "PID", "PARENT",
               "EXECUTABLE", "STARTED", "DURATION", "EVENTS", "SIZE", "STATE", "FILE", "ROLE");
    for (size_t i = 0; i < n; i++) {
        const struct rh_prof_row *r = &rows[i];
        char when[32] = "?", size[32];
        time_t t = (time_t)(r->start_real / 1000000000ull);
        struct tm tm;
        if (localtime_r(&t, &tm))
            strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
        if (json) {
            printf("%s\n {\"pid\": %u, \"executable\": \"", i ? "," : "", r->pid);
            for (const char *p = r->exe; *p; p++)
                printf(*p == '"' || *p == '\\' ? "\\%c" : (unsigned char)*p < 32 ? "?" : "%c", *p);
            printf("\", \"ppid\": %u, \"role\": \"", r->ppid);
            for (const char *p = r->role; *p; p++)
                printf(*p == '"' || *p == '\\' ? "\\%c" : (unsigned char)*p < 32 ? "?" : "%c", *p);
            printf("\", \"start_time_ns\": %llu, \"duration_ns\": %lld, \"events\": %llu,"
                   " \"size\": %llu, \"state\": \"%s\", \"file\": \"",
                   (unsigned long long)r->start_real, (long long)r->duration_ns,
                   (unsigned long long)r->events, (unsigned long long)r->size, r->state);
            for (const char *p = r->path; *p; p++)
                printf(*p == '"' || *p == '\\' ? "\\%c" : (unsigned char)*p < 32 ? "?" : "%c", *p);
            printf("\"}");
        } else {
            printf("%8u  %8u  %-16s  %-19s  %9.1fs  %12llu  %10s  %-21s  %s  %s\n", r->pid,
                   r->ppid, r->exe, when, (double)r->duration_ns / 1e9,
                   (unsigned long long)r->events,
                   rh_human_bytes((int64_t)r->size, size, sizeof size), r->state, r->path,
                   r->role);
        }
    }
    if (json)
        printf("%s]\n", n ? "\n" : "");
    else if (!n)
        printf("no profiles in %s%s%s\n", dirs[0], nd > 1 ? " or " : "", nd > 1 ? dirs[1] : "");
    free(rows);
    if (fflush(stdout) != 0)
        rc = 1;
    return rc;
}
