/* shims_priv.c: the privilege changes (setuid and friends, setgroups,
 * initgroups) and chroot.
 *
 * Nothing is recorded. Before the real call, while the process still has its
 * old credentials, the runtime is told which file-system user and group the
 * process is about to have (runtime/rh_priv.c): it creates a pending profile
 * and hands the profile, the marker and the log file over, so a server that
 * starts as root and drops to `nobody` keeps recording. The real call always
 * runs, with its arguments and errno unchanged. The runtime's entry points are
 * weak references so the shim tests' stand-in runtime needs no copy of them.
 *
 * Which id matters: file access checks the file-system ids, which follow the
 * effective ids (setuid, seteuid, setreuid's and setresuid's effective
 * argument) unless setfsuid sets them; -1 leaves an id unchanged. setgroups and
 * initgroups change no id that a 0600 file's access depends on, but they come
 * first in a drop (nginx: setgid, initgroups, setuid), and the profile is
 * created then, before anything else changes.
 */
#define RH_REAL_DYN __attribute__((weak)) /* initgroups: dynamic links only */
#include "rh_shims.h"

extern RH_HIDDEN int rh_priv_change(unsigned uid, unsigned gid) __attribute__((weak));
extern RH_HIDDEN void rh_priv_chroot(const char *dir) __attribute__((weak));

#define RH_KEEP 0xffffffffu

/* Tells the runtime about the coming change. */
static void rh_priv(unsigned uid, unsigned gid)
{
    if (rh_priv_change)
        rh_priv_change(uid, gid);
}

RH_WRAP int __wrap_setuid(unsigned uid)
{
    rh_priv(uid, RH_KEEP);
    return __real_setuid(uid);
}

RH_WRAP int __wrap_seteuid(unsigned uid)
{
    rh_priv(uid, RH_KEEP);
    return __real_seteuid(uid);
}

RH_WRAP int __wrap_setreuid(unsigned ruid, unsigned euid)
{
    (void)ruid;
    rh_priv(euid, RH_KEEP);
    return __real_setreuid(ruid, euid);
}

RH_WRAP int __wrap_setresuid(unsigned ruid, unsigned euid, unsigned suid)
{
    rh_priv(euid, RH_KEEP);
    return __real_setresuid(ruid, euid, suid);
}

RH_WRAP int __wrap_setfsuid(unsigned uid)
{
    rh_priv(uid, RH_KEEP);
    return __real_setfsuid(uid);
}

RH_WRAP int __wrap_setgid(unsigned gid)
{
    rh_priv(RH_KEEP, gid);
    return __real_setgid(gid);
}

RH_WRAP int __wrap_setegid(unsigned gid)
{
    rh_priv(RH_KEEP, gid);
    return __real_setegid(gid);
}

RH_WRAP int __wrap_setregid(unsigned rgid, unsigned egid)
{
    rh_priv(RH_KEEP, egid);
    return __real_setregid(rgid, egid);
}

RH_WRAP int __wrap_setresgid(unsigned rgid, unsigned egid, unsigned sgid)
{
    rh_priv(RH_KEEP, egid);
    return __real_setresgid(rgid, egid, sgid);
}

RH_WRAP int __wrap_setfsgid(unsigned gid)
{
    rh_priv(RH_KEEP, gid);
    return __real_setfsgid(gid);
}

RH_WRAP int __wrap_setgroups(size_t n, const unsigned *groups)
{
    rh_priv(RH_KEEP, RH_KEEP);
    return __real_setgroups(n, groups);
}

/* Dynamic links only (the table's flag): __real_initgroups is weak. */
RH_WRAP int __wrap_initgroups(const char *user, unsigned gid)
{
    if (rh_unlikely(__real_initgroups == NULL))
        return -1;
    rh_priv(RH_KEEP, RH_KEEP);
    return __real_initgroups(user, gid);
}

RH_WRAP int __wrap_chroot(const char *dir)
{
    if (rh_priv_chroot)
        rh_priv_chroot(dir);
    return __real_chroot(dir);
}
