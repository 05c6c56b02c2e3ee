/* rh_db_tmp.c: the converter's temp database, DB.tmp.XXXXXX, and what is
 * left of a killed one.
 *
 * rh_db.c builds a database in a temp file beside the requested path and
 * renames it into place. This file makes that temp file private and
 * provably its own: it is created O_EXCL with the mode of the profile it is
 * converted from (rh_db_set_mode: 0600 for a rip written by rheaper), never
 * wider than the umask allows, and an exclusive flock is held on it from
 * creation until it is renamed or removed. The lock is the proof of life:
 * SIGKILL releases it, so a DB.tmp.XXXXXX that carries SQLite's header, is
 * owned by this user, has one link and can be locked is a dead conversion's,
 * and rh_dbtmp_sweep() removes it before the next conversion of DB starts
 * (an empty one is not touched: a live conversion creates its file empty and
 * locks it before SQLite writes a byte). Catchable signals remove the temp
 * file on the way out (rh_convert_file.c).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rh_convert.h"
#include "rh_safefile.h"

static mode_t rh_db_mode = 0600;

void rh_db_set_mode(mode_t mode)
{
    rh_db_mode = mode & 0666;
}

/* 1 when fd's file starts with SQLite's header. */
static int rh_dbtmp_is_sqlite(int fd)
{
    char h[16];
    return pread(fd, h, sizeof h, 0) == (ssize_t)sizeof h && !memcmp(h, "SQLite format 3", 16);
}

int rh_dbtmp_sweep(const char *path, const char *prog)
{
    char dbuf[PATH_MAX], bbuf[PATH_MAX];
    if (strlen(path) >= sizeof dbuf)
        return 0;
    strcpy(dbuf, path);
    strcpy(bbuf, path);
    const char *dir = dirname(dbuf), *base = basename(bbuf);
    char prefix[NAME_MAX + 8];
    int pl = snprintf(prefix, sizeof prefix, "%s.tmp.", base);
    if (pl < 0 || (size_t)pl >= sizeof prefix)
        return 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, (size_t)pl) || strlen(e->d_name) != (size_t)pl + 6)
            continue;
        char full[PATH_MAX];
        if (snprintf(full, sizeof full, "%s/%s", dir, e->d_name) >= (int)sizeof full)
            continue;
        /* only this user's own regular file with one name: never another
         * user's, never through a symlink or FIFO */
        int fd =
            rh_safe_open(full, O_RDONLY, 0, RH_SAFE_OWNER | RH_SAFE_OWNER_ONLY | RH_SAFE_ONE_LINK,
                         geteuid(), NULL, 0);
        if (fd < 0)
            continue;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && rh_dbtmp_is_sqlite(fd)) {
            struct stat a, b;
            /* still the file we locked (not replaced meanwhile) */
            if (fstat(fd, &a) == 0 && lstat(full, &b) == 0 && a.st_ino == b.st_ino &&
                a.st_dev == b.st_dev && unlink(full) == 0) {
                removed++;
                fprintf(stderr, "%s: removed %s, left by a conversion that was killed\n", prog,
                        full);
            }
        }
        close(fd);
    }
    closedir(d);
    return removed;
}

int rh_dbtmp_create(char *tmpl)
{
    int fd = mkostemp(tmpl, O_CLOEXEC);
    if (fd < 0)
        return -1;
    /* a new file: nobody else can hold its lock */
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        unlink(tmpl);
        close(fd);
        errno = e;
        return -1;
    }
    mode_t um = umask(0);
    umask(um);
    if (fchmod(fd, rh_db_mode & ~um & 0666) != 0) {
        /* keep mkstemp's 0600: safe */
    }
    return fd;
}

int rh_dbtmp_same(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && lstat(path, &b) == 0 && S_ISREG(b.st_mode) &&
           a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}
