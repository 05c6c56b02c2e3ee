/* rh_live_proc.c: finding a process by name (`rheaper record -P NAME`,
 * `rheaper live -P NAME`).
 *
 * A process matches when its /proc/PID/comm (the kernel's 15-character name)
 * or the base name of its executable (/proc/PID/exe, readable for one's own
 * processes) equals NAME, or when its title (/proc/PID/cmdline, arguments
 * joined by spaces: what ps shows, which servers such as nginx rewrite to
 * "nginx: worker process") starts with NAME; this rheaper process never
 * matches. One match is
 * the answer; none, or several (listed with their command lines), is a
 * one-line error and the command stops, so nothing is ever sent to a process
 * the user did not single out.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rh_live.h"
#include "rh_safefile.h"

/* Reads up to n-1 bytes of path into buf, NUL-terminated; -1 when unreadable. */
static ssize_t rh_proc_read(const char *path, char *buf, size_t n)
{
    return rh_safe_read_small(path, buf, n, 0, 0, NULL, 0);
}

static int rh_proc_matches(int pid, const char *name)
{
    char path[64], buf[PATH_MAX];
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    if (rh_proc_read(path, buf, sizeof buf) > 0) {
        buf[strcspn(buf, "\n")] = 0;
        if (!strcmp(buf, name))
            return 1;
    }
    snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
    ssize_t t = rh_proc_read(path, buf, sizeof buf);
    for (ssize_t j = 0; j < t; j++)
        if (!buf[j])
            buf[j] = ' ';
    if (t > 0 && !strncmp(buf, name, strlen(name)))
        return 1;
    snprintf(path, sizeof path, "/proc/%d/exe", pid);
    ssize_t k = readlink(path, buf, sizeof buf - 1);
    if (k > 0) {
        buf[k] = 0;
        char *del = strstr(buf, " (deleted)");
        if (del && !del[10])
            *del = 0;
        const char *b = strrchr(buf, '/');
        if (!strcmp(b ? b + 1 : buf, name))
            return 1;
    }
    return 0;
}

int rh_proc_by_name(const char *cmd, const char *name)
{
    DIR *d = opendir("/proc");
    if (!d) {
        fprintf(stderr, "rheaper: %s: cannot read /proc\n", cmd);
        return 0;
    }
    int self = (int)getpid(), found[64], n = 0, total = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        int pid = atoi(e->d_name);
        if (pid <= 0 || pid == self || !rh_proc_matches(pid, name))
            continue;
        if (n < 64)
            found[n++] = pid;
        total++;
    }
    closedir(d);
    if (total == 1)
        return found[0];
    if (!total) {
        fprintf(stderr, "rheaper: %s: no running process is named %s\n", cmd, name);
        return 0;
    }
    fprintf(stderr, "rheaper: %s: %d processes are named %s (or their title starts so); give "
                    "one PID instead:\n",
            cmd, total, name);
    for (int i = 0; i < n; i++) {
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/cmdline", found[i]);
        ssize_t k = rh_proc_read(path, buf, sizeof buf);
        for (ssize_t j = 0; j < k; j++)
            if (!buf[j])
                buf[j] = ' ';
        fprintf(stderr, "  %7d  %s\n", found[i], k > 0 ? buf : "?");
    }
    return 0;
}
