/* rh_open.c: the runtime's one way to open a path.
 *
 * The runtime writes into directories other users can write (a 1777 /tmp, a
 * directory a server's worker user owns), so every name it opens there may
 * have been replaced by a FIFO, a device, a socket, a symbolic link or a hard
 * link to someone else's file. rh_open_safe opens with
 * O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC|O_NOCTTY, so the open itself can neither
 * follow a link, block on a FIFO (a FIFO without a peer opens at once or fails
 * with ENXIO), leak into an exec'd child nor take a terminal; then it checks
 * the descriptor with fstat, never the path again, so the inode checked is the
 * inode used:
 *
 *   - a regular file (a directory only with RH_OPEN_DIR);
 *   - RH_OPEN_OWNER: owned by the effective user (root too with RH_OPEN_ROOT);
 *   - RH_OPEN_ONE_LINK: one link (not a hard link to another name);
 *   - RH_OPEN_INODE: the very inode a caller created earlier (its rh_fid).
 *
 * O_NONBLOCK is left on: it changes nothing for a regular file. Every other
 * runtime file calls this, never open(2) itself (tests/unit/rawopen keeps it
 * so). No allocation, no stdio, no cancellation point: raw system calls only,
 * and fstat, which glibc implements as one system call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rh_sys.h"

/* open(2) without glibc's cancellation point. */
static int rh_sys_open(const char *path, int flags, unsigned mode)
{
    int fd;
    do
        fd = (int)syscall(SYS_openat, AT_FDCWD, path, flags | RH_O_LARGEFILE, mode);
    while (fd < 0 && errno == EINTR);
    return fd;
}

int rh_fid_of(int fd, struct rh_fid *out)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -1;
    out->dev = (uint64_t)st.st_dev;
    out->ino = (uint64_t)st.st_ino;
    return 0;
}

int rh_open_safe(const char *path, int flags, unsigned mode, unsigned rules,
                 const struct rh_fid *want, struct rh_fid *got)
{
    if (!path || !path[0]) {
        errno = ENOENT;
        return -1;
    }
    int fd = rh_sys_open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, mode);
    if (fd < 0)
        return -1;
    struct stat st;
    int err = 0;
    if (fstat(fd, &st) != 0)
        err = errno;
    else if ((rules & RH_OPEN_DIR) ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
        err = EINVAL; /* a FIFO, device, socket or directory */
    else if ((rules & RH_OPEN_OWNER) && st.st_uid != (uid_t)syscall(SYS_geteuid) &&
             !((rules & RH_OPEN_ROOT) && st.st_uid == 0))
        err = EPERM;
    else if ((rules & RH_OPEN_ONE_LINK) && st.st_nlink != 1)
        err = EMLINK;
    else if ((rules & RH_OPEN_INODE) && (!want || !want->ino || want->dev != (uint64_t)st.st_dev ||
                                         want->ino != (uint64_t)st.st_ino))
        err = ESTALE; /* another file than the one created */
    if (err) {
        syscall(SYS_close, fd);
        errno = err;
        return -1;
    }
    if (got) {
        got->dev = (uint64_t)st.st_dev;
        got->ino = (uint64_t)st.st_ino;
    }
    return fd;
}

int rh_open_proc(const char *path, int flags)
{
    return rh_open_safe(path, flags, 0, (flags & O_DIRECTORY) ? RH_OPEN_DIR : 0, NULL, NULL);
}
