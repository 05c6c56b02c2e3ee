/* failwrite.c: an LD_PRELOAD shim that makes fwrite() fail with ENOSPC, as a
 * full disk does, on the files whose path contains $RH_FAILWRITE, and only
 * on those (tlspill_test.sh). Each failed write appends the file's path, as
 * /proc/self/fd names it, to $RH_FAILWRITE_LOG: where the program made it,
 * and whether it is already unlinked (" (deleted)").
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t fwrite(const void *p, size_t size, size_t n, FILE *f)
{
    static size_t (*real)(const void *, size_t, size_t, FILE *);
    if (!real)
        real = (size_t(*)(const void *, size_t, size_t, FILE *))dlsym(RTLD_NEXT, "fwrite");
    const char *match = getenv("RH_FAILWRITE");
    if (match && *match) {
        char link[64], path[4096];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fileno(f));
        ssize_t k = readlink(link, path, sizeof path - 1);
        if (k > 0) {
            path[k] = 0;
            if (strstr(path, match)) {
                const char *log = getenv("RH_FAILWRITE_LOG");
                int fd = log ? open(log, O_WRONLY | O_APPEND | O_CREAT, 0644) : -1;
                if (fd >= 0) {
                    path[k] = '\n';
                    (void)!write(fd, path, (size_t)k + 1);
                    close(fd);
                }
                errno = ENOSPC;
                return 0;
            }
        }
    }
    return real(p, size, n, f);
}
