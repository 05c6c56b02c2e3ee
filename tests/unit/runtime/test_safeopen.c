/* test_safeopen.c: rh_open_safe (runtime/rh_open.c), the runtime's one way
 * to open a path, against what another user can put at a name.
 *
 * In a fresh directory: a FIFO without a peer (read and write opens both
 * return at once and are refused, never block), a symlink (not followed), a
 * hard link (refused with RH_OPEN_ONE_LINK), a directory, another inode than
 * the one asked for (ESTALE), O_EXCL on an existing name, and the owner rule
 * (a file handed to another uid, when the test runs as root; root's files
 * with RH_OPEN_ROOT). A watchdog alarm turns a blocked open into a failure
 * instead of a hung test.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "rh_runtime.h"

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: an open blocked\n";
    if (write(2, msg, sizeof msg - 1) < 0)
        _exit(2);
    _exit(1);
}

/* A fresh directory under TMPDIR (or /tmp) into buf. */
static void make_dir(char *buf, size_t size)
{
    const char *t = getenv("TMPDIR");
    snprintf(buf, size, "%s/rh-safeopen-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(buf)) {
        perror("mkdtemp");
        exit(2);
    }
}

/* Removes dir and the names in it. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* The errno of a refused rh_open_safe, or 0 when it opened (closed again). */
static int refused(const char *path, int flags, unsigned rules, const struct rh_fid *want)
{
    errno = 0;
    int fd = rh_open_safe(path, flags, 0600, rules, want, NULL);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    return errno;
}

int main(void)
{
    char dir[256], p[512], q[512];
    signal(SIGALRM, on_alarm);
    alarm(20);
    make_dir(dir, sizeof dir);

    /* a new file: created once, O_EXCL refuses the name after */
    snprintf(p, sizeof p, "%s/file", dir);
    struct rh_fid made = {0, 0}, again = {0, 0};
    int fd = rh_open_safe(p, O_WRONLY | O_CREAT | O_EXCL, 0600, 0, NULL, &made);
    CHECK(fd >= 0);
    CHECK(made.ino != 0);
    struct stat st;
    CHECK(fd >= 0 && fstat(fd, &st) == 0 && (st.st_mode & 07777) == 0600);
    CHECK(fd >= 0 && (fcntl(fd, F_GETFD) & FD_CLOEXEC));
    if (fd >= 0)
        close(fd);
    CHECK_EQ(refused(p, O_WRONLY | O_CREAT | O_EXCL, 0, NULL), EEXIST);
    /* the same inode again, by identity */
    fd = rh_open_safe(p, O_RDONLY, 0, RH_OPEN_INODE | RH_OPEN_ONE_LINK | RH_OPEN_OWNER, &made,
                      &again);
    CHECK(fd >= 0);
    CHECK(again.ino == made.ino && again.dev == made.dev);
    if (fd >= 0)
        close(fd);

    /* another inode at the name: ESTALE; no identity known: ESTALE too */
    snprintf(q, sizeof q, "%s/other", dir);
    fd = rh_open_safe(q, O_WRONLY | O_CREAT | O_EXCL, 0600, 0, NULL, NULL);
    CHECK(fd >= 0);
    if (fd >= 0)
        close(fd);
    CHECK(rename(q, p) == 0);
    CHECK_EQ(refused(p, O_WRONLY, RH_OPEN_INODE, &made), ESTALE);
    struct rh_fid none = {0, 0};
    CHECK_EQ(refused(p, O_WRONLY, RH_OPEN_INODE, &none), ESTALE);

    /* a FIFO with no peer: neither a read nor a write open waits */
    snprintf(q, sizeof q, "%s/fifo", dir);
    CHECK(mkfifo(q, 0666) == 0);
    CHECK_EQ(refused(q, O_RDONLY, 0, NULL), EINVAL); /* opens at once, not a regular file */
    CHECK_EQ(refused(q, O_WRONLY | O_APPEND, 0, NULL), ENXIO);
    CHECK_EQ(refused(q, O_WRONLY | O_CREAT | O_EXCL, 0, NULL), EEXIST);

    /* a symlink to a regular file is not followed */
    snprintf(q, sizeof q, "%s/link", dir);
    CHECK(symlink(p, q) == 0);
    CHECK_EQ(refused(q, O_RDONLY, 0, NULL), ELOOP);

    /* a hard link: refused when one link is asked for */
    snprintf(q, sizeof q, "%s/hard", dir);
    CHECK(link(p, q) == 0);
    CHECK_EQ(refused(q, O_RDONLY, RH_OPEN_ONE_LINK, NULL), EMLINK);
    CHECK_EQ(refused(q, O_RDONLY, 0, NULL), 0);

    /* a directory is no file; RH_OPEN_DIR asks for one */
    CHECK_EQ(refused(dir, O_RDONLY, 0, NULL), EINVAL);
    CHECK_EQ(refused(dir, O_RDONLY | O_DIRECTORY, RH_OPEN_DIR, NULL), 0);

    /* the owner: a file of another uid is refused (root can hand one over) */
    if (geteuid() == 0) {
        snprintf(q, sizeof q, "%s/theirs", dir);
        fd = rh_open_safe(q, O_WRONLY | O_CREAT | O_EXCL, 0600, 0, NULL, NULL);
        CHECK(fd >= 0 && fchown(fd, 65534, 65534) == 0);
        if (fd >= 0)
            close(fd);
        CHECK_EQ(refused(q, O_RDONLY, RH_OPEN_OWNER, NULL), EPERM);
        CHECK_EQ(refused(q, O_RDONLY, RH_OPEN_OWNER | RH_OPEN_ROOT, NULL), EPERM);
        CHECK_EQ(refused(q, O_RDONLY, 0, NULL), 0);
    } else {
        printf("not root: the other-owner case is not run\n");
    }
    CHECK_EQ(refused(p, O_RDONLY, RH_OPEN_OWNER | RH_OPEN_ROOT, NULL), 0);

    /* /proc files of this process */
    int a = rh_open_proc("/proc/self/stat", O_RDONLY);
    int b = rh_open_proc("/proc/self/task", O_RDONLY | O_DIRECTORY);
    CHECK(a >= 0 && b >= 0);
    if (a >= 0)
        close(a);
    if (b >= 0)
        close(b);

    remove_dir(dir);
    return rh_test_summary();
}
