/* rh_safefile.h: opening files in directories other users can write.
 *
 * Every tool that opens a path another user may have placed or replaced
 * (a profile directory, a marker, a rate file, a module path read from a
 * profile, an output next to its input) opens it through rh_safe_open(), so
 * that a FIFO, a device, a socket, a symlink or a hard link cannot block the
 * tool, redirect it, or be handed over to another owner. The runtime has its
 * own allocation-free counterpart (runtime/); this one is for the tools and
 * words its errors for a person.
 */
#ifndef RH_SAFEFILE_H
#define RH_SAFEFILE_H

#include <stddef.h>
#include <sys/types.h>

/* rules for rh_safe_open(); RH_SAFE_REGULAR is always applied */
#define RH_SAFE_REGULAR 0u     /* must be a regular file (always checked) */
#define RH_SAFE_OWNER 1u       /* owned by `owner` or by root */
#define RH_SAFE_ONE_LINK 2u    /* st_nlink == 1: not a hard link to another name */
#define RH_SAFE_OWNER_ONLY 4u  /* with RH_SAFE_OWNER: root does not count as owner */

/* Opens path with flags (O_RDONLY, O_RDWR, O_WRONLY, with O_CREAT|O_EXCL for a
 * new file, mode for it) plus O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC|O_NOCTTY, so the
 * open itself cannot block on a FIFO or follow a symlink; then checks with
 * fstat on the descriptor that it is a regular file and the rules, and clears
 * O_NONBLOCK. Returns the descriptor, or -1 with errno set and, when err is
 * not NULL, a one-line message naming the path and what is wrong ("is a FIFO,
 * not a regular file", "belongs to uid 65534, not 0", "has 2 links"). */
__attribute__((visibility("hidden"))) int rh_safe_open(const char *path, int flags, mode_t mode,
                                                       unsigned rules, uid_t owner, char *err,
                                                       size_t errlen);

/* rh_safe_check_fd(): the checks of rh_safe_open() on an open descriptor.
 * Returns 0, or -1 with errno set and the message in err. */
__attribute__((visibility("hidden"))) int rh_safe_check_fd(int fd, const char *path, unsigned rules,
                                                           uid_t owner, char *err, size_t errlen);

/* rh_safe_read_small(): reads a whole small file (a marker, a /proc file) into
 * buf, NUL-terminated, through rh_safe_open(path, O_RDONLY, rules, owner).
 * Returns its length (at most size - 1; more is cut), or -1 with errno set and
 * the message in err. */
__attribute__((visibility("hidden"))) ssize_t rh_safe_read_small(const char *path, char *buf,
                                                                 size_t size, unsigned rules,
                                                                 uid_t owner, char *err,
                                                                 size_t errlen);

#endif
