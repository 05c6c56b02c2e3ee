/* rh_priv.c: privilege changes and chroot, so that a server keeps its profile.
 *
 * Servers start as root and switch to an unprivileged user (nginx's workers,
 * PostgreSQL, Apache, memcached -u). The runtime holds no fd between
 * operations and reopens the profile by path for every chunk, so the file,
 * its marker and the runtime's log file must stay openable by the user the
 * process becomes. wrap/shims_priv.c calls rh_priv_change just before the
 * real setuid, setgid, setresuid, setresgid, setreuid, setregid, setfsuid,
 * setfsgid, setgroups and initgroups, while the process still has its old
 * credentials:
 *
 *   - a recording whose file is still pending (the lazy start: a fork child
 *     that has not allocated yet) creates its file now, with the old
 *     credentials, in a directory the new user may not be able to write;
 *   - when a directory above the profile cannot be searched by the new user,
 *     the recording is closed cleanly with one line (the file could not be
 *     reopened afterwards);
 *   - the profile, the marker and the log file are handed to the new
 *     effective (file-system) user and group with fchown on a descriptor of
 *     the inode the runtime created (opened by rh_open_safe and checked by
 *     identity), never by path: a name another user has since pointed at
 *     another file hands nothing over. Their mode stays
 *     0600: nothing becomes readable or writable by anyone else than the old
 *     user (root, or the owner it had) and the new one.
 *
 * When the file cannot be handed over (the process lacks CAP_CHOWN, e.g. it
 * dropped its capabilities before setuid), the recording is closed cleanly
 * before the change, with one line: it is complete up to that call. A change
 * back to root needs nothing (root opens any file).
 *
 * chroot: the profile is reached by an absolute path, which means nothing
 * inside the new root, so the recording is closed cleanly before the call,
 * with one line (docs/servers.md). An armed process stays armed but a
 * recording started inside the new root fails with one line, as a missing
 * directory does.
 *
 * Cost: none per event. These calls are made a handful of times in a
 * process's life; each costs a few system calls (open, fstat, fchown, close).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rh_session.h"

/* Hands the file at path to uid/gid (RH_ID_KEEP: that one unchanged) when it
 * is not theirs already, with fchown on a descriptor of the very inode the
 * runtime created (*want: the profile, the marker, the log), never by path: a
 * name another user replaced since (a hard link to a root-only file, a FIFO, a
 * symlink) is left alone and nothing else changes owner. The user change
 * must succeed; the group change is best effort (a non-root owner may not be
 * in the group). Returns 0 (done, nothing to do, or the name no longer names
 * the runtime's file) or an errno value. */
static int rh_priv_chown_fid(const char *path, const struct rh_fid *want, unsigned uid,
                             unsigned gid)
{
    if (!path[0] || !want->ino)
        return 0;
    int fd = rh_open_safe(path, O_RDONLY, 0, RH_OPEN_INODE, want, NULL);
    if (fd < 0) {
        int e = errno;
        /* gone or replaced: not ours to hand over; any other failure (no
         * descriptor left, say) is said and the recording closed cleanly */
        if (e == ENOENT || e == ESTALE || e == EINVAL || e == ELOOP || e == EMLINK || e == ENXIO)
            return 0;
        return e;
    }
    struct stat st;
    int err = 0;
    if (fstat(fd, &st) != 0) {
        err = errno;
    } else {
        if (uid != RH_ID_KEEP && uid != 0 && st.st_uid != uid &&
            rh_sys_fchown(fd, uid, (unsigned)-1) != 0)
            err = errno;
        if (!err && gid != RH_ID_KEEP && st.st_gid != gid)
            (void)rh_sys_fchown(fd, (unsigned)-1, gid);
    }
    rh_sys_close(fd);
    return err;
}

/* 1 when user uid (with the process's current group and supplementary
 * groups, or gid when it is about to become that) may search every directory
 * above path. A profile is reopened by path for each chunk: a 0700 directory
 * on the way shuts the new user out even from its own file. */
static int rh_priv_can_reach(const char *path, unsigned uid, unsigned gid)
{
    if (uid == RH_ID_KEEP || uid == 0)
        return 1;
    unsigned groups[64];
    long ng = rh_sys_getgroups(64, groups);
    if (ng < 0)
        ng = 0;
    unsigned egid = gid != RH_ID_KEEP ? gid : rh_sys_getegid();
    char dir[RH_PATH_MAX];
    size_t n = strlen(path);
    if (n >= sizeof dir || path[0] != '/')
        return 1; /* not ours to judge */
    memcpy(dir, path, n + 1);
    for (size_t i = n; i > 0; i--) {
        if (dir[i] != '/')
            continue;
        dir[i] = '\0';
        struct stat st;
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
            return 1;
        unsigned bit = S_IXOTH;
        if (st.st_uid == uid) {
            bit = S_IXUSR;
        } else {
            int member = st.st_gid == egid;
            for (long k = 0; k < ng && !member; k++)
                member = st.st_gid == groups[k];
            if (member)
                bit = S_IXGRP;
        }
        if (!(st.st_mode & bit))
            return 0;
    }
    return 1;
}

int rh_priv_change(unsigned uid, unsigned gid)
{
    int e = errno;
    int g = rh_guard_enter();
    if (uid != RH_ID_KEEP || gid != RH_ID_KEEP)
        rh_origin_credentials();
    if (RH_STATE(__atomic_load_n(&rh_state, __ATOMIC_ACQUIRE)) == RH_UNINIT)
        rh_init_lazy(); /* a program that changes user before its first allocation */
    if (rh_recording(RH_STATE(__atomic_load_n(&rh_state, __ATOMIC_ACQUIRE))))
        rh_file_ensure(); /* created now, while the directory still lets us */
    int err = 0;
    char path[RH_PATH_MAX];
    path[0] = '\0';
    rh_spin_lock(&rh_prof_lock);
    if (rh_prof.open && !rh_stream_on()) {
        struct rh_fid prof = {rh_prof.dev, rh_prof.ino};
        memcpy(path, rh_prof.path, sizeof path);
        err = rh_priv_chown_fid(path, &prof, uid, gid);
    }
    rh_spin_unlock(&rh_prof_lock);
    if (!err && path[0] && !rh_priv_can_reach(path, uid, gid)) {
        rh_warn("user %u cannot reach profile %s (a directory on its path is not searchable by "
                "that user); the recording is closed here, complete up to this call",
                uid, path);
        rh_stop_clean(RIP_END_CREDENTIALS);
        err = EACCES;
    } else if (err) {
        rh_warn("cannot hand profile %s to user %u before the program changes its "
                "credentials: %s; the recording is closed here, complete up to this call",
                path, uid, rh_arch_strerror(err));
        rh_stop_clean(RIP_END_CREDENTIALS);
    }
    struct rh_fid fid;
    if (rh_ctl_armed() && rh_ctl_marker_fid(&fid) == 0)
        (void)rh_priv_chown_fid(rh_ctl_marker_path(), &fid, uid, gid);
    if (rh_log_fid_get(&fid) == 0)
        (void)rh_priv_chown_fid(rh_log_path(), &fid, uid, gid);
    rh_guard_leave(g);
    errno = e;
    return err ? -1 : 0;
}

void rh_priv_chroot(const char *dir)
{
    int e = errno;
    int g = rh_guard_enter();
    int s = RH_STATE(__atomic_load_n(&rh_state, __ATOMIC_ACQUIRE));
    if (rh_recording(s) &&
        (__atomic_load_n(&rh_prof.open, __ATOMIC_ACQUIRE) ||
         __atomic_load_n(&rh_prof.pending, __ATOMIC_ACQUIRE))) {
        rh_warn("the program calls chroot(%s): the profile cannot be reached from inside it, "
                "so the recording is closed here, complete up to this call",
                dir ? dir : "(null)");
        rh_stop_clean(RIP_END_CHROOT);
    }
    rh_guard_leave(g);
    errno = e;
}
