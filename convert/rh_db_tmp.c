/* rh_db_tmp.c: the converter's temp database, DB.tmp.XXXXXX, and what is
 * left of a killed one.
 *
 * rh_db.c builds a database in a temp file beside the requested path and
 * renames it into place. This file makes that temp file private and
 * provably its own: it is created O_EXCL with the mode of the profile it is
 * converted from (rh_db_set_mode: 0600 for a rip written by rheaper), never
 * wider than the umask allows, and an exclusive flock is held on it from
 * creation until it is renamed or removed. The lock is the proof of life:
 * SIGKILL releases it, so a DB.tmp.XXXXXX that carries SQLite's header with
 * rheaper's application id (the schema sets it first), is owned by this
 * user, has one link and can be locked is a dead conversion's, and
 * rh_dbtmp_sweep() removes it before the next conversion of DB starts (an
 * empty one is not touched: a live conversion creates its file empty and
 * locks it before SQLite writes a byte; a user's own database of that name
 * lacks the mark and is not touched either). The directory is opened once
 * and every name looked up in it by descriptor, so swapping the directory
 * for a link to another one during the sweep cannot send it elsewhere.
 * Catchable signals remove the temp file on the way out (rh_convert_file.c).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rh_db.h"
#include "rh_safefile.h"

static mode_t rh_db_mode = 0600;

void rh_db_set_mode(mode_t mode)
{
    rh_db_mode = mode & 0666;
}

/* rheaper's SQLite application id, 'rhpr' (the header's bytes 68-71, big
 * endian), set by rh_db.c's schema. */
#define RH_DB_APPLICATION_ID 0x72687072u

/* 1 when fd's file starts with SQLite's header and carries rheaper's
 * application id. */
static int rh_dbtmp_is_ours(int fd)
{
    unsigned char h[72];
    if (pread(fd, h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h, "SQLite format 3", 16))
        return 0;
    uint32_t id = (uint32_t)h[68] << 24 | (uint32_t)h[69] << 16 | (uint32_t)h[70] << 8 | h[71];
    return id == RH_DB_APPLICATION_ID;
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
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return 0;
    }
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, prefix, (size_t)pl) || strlen(e->d_name) != (size_t)pl + 6)
            continue;
        char full[PATH_MAX];
        if (snprintf(full, sizeof full, "%s/%s", dir, e->d_name) >= (int)sizeof full)
            continue;
        /* only this user's own regular file with one name, looked up in the
         * directory opened above: never another user's, never through a
         * symlink or FIFO */
        int fd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
            continue;
        if (rh_safe_check_fd(fd, full, RH_SAFE_OWNER | RH_SAFE_OWNER_ONLY | RH_SAFE_ONE_LINK,
                             geteuid(), NULL, 0) == 0 &&
            flock(fd, LOCK_EX | LOCK_NB) == 0 && rh_dbtmp_is_ours(fd)) {
            struct stat a, b;
            /* still the file we locked (not replaced meanwhile) */
            if (fstat(fd, &a) == 0 && fstatat(dfd, e->d_name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
                a.st_ino == b.st_ino && a.st_dev == b.st_dev &&
                unlinkat(dfd, e->d_name, 0) == 0) {
                removed++;
                fprintf(stderr, "%s: removed %s, left by a conversion that was killed\n", prog,
                        full);
            }
        }
        close(fd);
    }
    closedir(d); /* closes dfd */
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
