/* rh_safefile.c: opening files in directories other users can write.
 *
 * The tools' one way to open a path that another user may have placed: no
 * open can block (O_NONBLOCK, so a FIFO opens or fails at once), follow a
 * symlink (O_NOFOLLOW), leak into a child (O_CLOEXEC) or take a terminal
 * (O_NOCTTY); what was opened is then checked on the descriptor, never by
 * path, so the inode checked is the inode used. See rh_safefile.h.
 */
#include "rh_safefile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a non-regular file is, for the message. */
static const char *rh_safe_kind(mode_t m)
{
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISSOCK(m))
        return "a socket";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISLNK(m))
        return "a symbolic link";
    return "not a regular file";
}

int rh_safe_check_fd(int fd, const char *path, unsigned rules, uid_t owner, char *err, size_t errlen)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        if (err)
            snprintf(err, errlen, "%s: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        if (err)
            snprintf(err, errlen, "%s: is %s, not a regular file", path, rh_safe_kind(st.st_mode));
        errno = EINVAL;
        return -1;
    }
    if ((rules & RH_SAFE_OWNER) && st.st_uid != owner &&
        ((rules & RH_SAFE_OWNER_ONLY) || st.st_uid != 0)) {
        if (err)
            snprintf(err, errlen, "%s: belongs to uid %ld, not %ld", path, (long)st.st_uid,
                     (long)owner);
        errno = EPERM;
        return -1;
    }
    if ((rules & RH_SAFE_ONE_LINK) && st.st_nlink != 1) {
        if (err)
            snprintf(err, errlen, "%s: has %ld links (a hard link to another file?)", path,
                     (long)st.st_nlink);
        errno = EPERM;
        return -1;
    }
    return 0;
}

int rh_safe_open(const char *path, int flags, mode_t mode, unsigned rules, uid_t owner, char *err,
                 size_t errlen)
{
    int fd = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, mode);
    if (fd < 0) {
        int e = errno;
        if (err) {
            if (e == ELOOP)
                snprintf(err, errlen, "%s: is a symbolic link; not followed", path);
            else
                snprintf(err, errlen, "%s: %s", path, strerror(e));
        }
        errno = e;
        return -1;
    }
    if (rh_safe_check_fd(fd, path, rules, owner, err, errlen) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0 && (fl & O_NONBLOCK))
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

ssize_t rh_safe_read_small(const char *path, char *buf, size_t size, unsigned rules, uid_t owner,
                           char *err, size_t errlen)
{
    if (!size) {
        errno = EINVAL;
        return -1;
    }
    int fd = rh_safe_open(path, O_RDONLY, 0, rules, owner, err, errlen);
    if (fd < 0)
        return -1;
    size_t n = 0;
    while (n + 1 < size) {
        ssize_t r = read(fd, buf + n, size - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            if (err)
                snprintf(err, errlen, "%s: %s", path, strerror(e));
            close(fd);
            buf[n] = '\0';
            errno = e;
            return -1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    return (ssize_t)n;
}
