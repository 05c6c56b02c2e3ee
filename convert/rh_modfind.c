/* rh_modfind.c: where the converter looks for a module's files, and how it
 * opens them.
 *
 * A profile names each module by the absolute path it was loaded from and its
 * GNU build id. The converter may run in another directory, on another
 * machine, or after the module was rebuilt, so a module's ELF file is looked
 * for, in this order (rh_modfind_candidates):
 *   1. the recorded path;
 *   2. by build id, under each debug directory D (--debug-dir, then
 *      /usr/lib/debug): D/.build-id/xx/yyyy (the file itself, where a
 *      distribution links it there) and D/.build-id/xx/yyyy.debug (its
 *      separate debug file, which carries the symbol table and the DWARF);
 *   3. DIR/basename of the recorded path for each --search DIR.
 * The symbolizer takes the first candidate whose build id is the recorded one
 * (rh_symbolize.c checks each). A module's separate debug file, and a dwz
 * file its DWARF refers to, are found by rh_modfind_debuginfo, the Dwfl
 * find_debuginfo callback, by build id under the same directories and by
 * .gnu_debuglink beside the file; it checks the build id (or the debuglink's
 * CRC) itself.
 *
 * Every path comes from a profile or from a directory another user may write,
 * so nothing here opens a path with a plain open(): rh_modfind_open resolves
 * symbolic links by name (realpath, which opens nothing: libz.so.1 is a link
 * to libz.so.1.2.13) and opens the result with rh_safe_open, which never
 * blocks on a FIFO and accepts only a regular file; libdw gets the descriptor
 * (the callbacks never hand it a path to open).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>

#include "rh_modfind.h"
#include "rh_safefile.h"

static const char *const rh_default_debug_dirs[] = {"/usr/lib/debug", NULL};

/* Debug directory i of p: p's own (--debug-dir) first, then /usr/lib/debug;
 * NULL past the last. */
static const char *rh_modfind_dir(const struct rh_modfind_paths *p, size_t i)
{
    size_t n = 0;
    while (p && p->debug_dirs && p->debug_dirs[n])
        n++;
    if (i < n)
        return p->debug_dirs[i];
    return rh_default_debug_dirs[i - n];
}

int rh_modfind_open(const char *path, char *real, size_t reallen, char *why, size_t whylen)
{
    char buf[PATH_MAX];
    if (!realpath(path, buf)) {
        snprintf(why, whylen, "cannot open: %s", strerror(errno));
        return -1;
    }
    if (strlen(buf) >= reallen) {
        snprintf(why, whylen, "cannot open: %s", strerror(ENAMETOOLONG));
        return -1;
    }
    char err[PATH_MAX + 128];
    int fd = rh_safe_open(buf, O_RDONLY, 0, RH_SAFE_REGULAR, 0, err, sizeof err);
    if (fd < 0) {
        /* err names the resolved path; the caller names the recorded one */
        const char *colon = strstr(err, ": ");
        snprintf(why, whylen, "%s%s",
                 errno == EINVAL ? "" : "cannot open: ", colon ? colon + 2 : err);
        return -1;
    }
    memcpy(real, buf, strlen(buf) + 1);
    return fd;
}

/* Writes DIR/.build-id/xx/yyyy[suffix] for build id (id, len). Returns 0, or
 * -1 when it does not fit or the id is too short to name a file. */
static int rh_buildid_path(char *out, size_t size, const char *dir, const uint8_t *id, unsigned len,
                           const char *suffix)
{
    if (len < 2)
        return -1;
    int k = snprintf(out, size, "%s/.build-id/%02x/", dir, id[0]);
    for (unsigned i = 1; i < len && k > 0 && (size_t)k + 3 < size; i++)
        k += snprintf(out + k, size - (size_t)k, "%02x", id[i]);
    if (k <= 0 || (size_t)k + strlen(suffix) + 1 > size)
        return -1;
    memcpy(out + k, suffix, strlen(suffix) + 1);
    return 0;
}

int rh_modfind_candidates(const struct rh_modfind_paths *p, const char *path, const uint8_t *id,
                          unsigned idlen, char (*out)[RH_MODFIND_PATH], int max)
{
    int n = 0;
    if (path && path[0] && n < max)
        snprintf(out[n++], RH_MODFIND_PATH, "%s", path);
    for (size_t i = 0; id && idlen >= 2 && rh_modfind_dir(p, i); i++) {
        const char *dir = rh_modfind_dir(p, i);
        if (n < max && !rh_buildid_path(out[n], RH_MODFIND_PATH, dir, id, idlen, ""))
            n++;
        if (n < max && !rh_buildid_path(out[n], RH_MODFIND_PATH, dir, id, idlen, ".debug"))
            n++;
    }
    const char *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : path;
    for (size_t i = 0; base && base[0] && p && p->search && p->search[i]; i++)
        if (n < max &&
            snprintf(out[n], RH_MODFIND_PATH, "%s/%s", p->search[i], base) < RH_MODFIND_PATH)
            n++;
    return n;
}

/* The GNU build id of the ELF file open at fd, into id (up to 64 bytes).
 * Returns its length, 0 when it has none or is not ELF. */
static int rh_fd_build_id(int fd, uint8_t *id)
{
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    int n = 0;
    if (e && elf_kind(e) == ELF_K_ELF) {
        const void *b = NULL;
        ssize_t bl = dwelf_elf_gnu_build_id(e, &b);
        if (bl > 0 && bl <= 64) {
            memcpy(id, b, (size_t)bl);
            n = (int)bl;
        }
    }
    if (e)
        elf_end(e);
    return n;
}

/* The CRC-32 of the whole file open at fd, as .gnu_debuglink stores it
 * (zlib's crc32). Returns 0 and *crc, or -1 when it cannot be read. */
static int rh_fd_crc32(int fd, uint32_t *crc)
{
    unsigned char buf[65536];
    uLong c = crc32(0L, Z_NULL, 0);
    off_t off = 0;
    for (;;) {
        ssize_t r = pread(fd, buf, sizeof buf, off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        c = crc32(c, buf, (uInt)r);
        off += r;
    }
    *crc = (uint32_t)c;
    return 0;
}

/* When `file` (a module's main or debug file) has a .gnu_debugaltlink naming
 * `name`, copies that link's build id (the dwz file's) into id and returns its
 * length; else 0. */
static int rh_altlink_id(const char *file, const char *name, uint8_t *id)
{
    char real[PATH_MAX], why[64];
    int fd = rh_modfind_open(file, real, sizeof real, why, sizeof why);
    if (fd < 0)
        return 0;
    int n = 0;
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    size_t shstr;
    if (e && elf_kind(e) == ELF_K_ELF && elf_getshdrstrndx(e, &shstr) == 0) {
        for (Elf_Scn *scn = elf_nextscn(e, NULL); scn && !n; scn = elf_nextscn(e, scn)) {
            GElf_Shdr sh;
            const char *sn;
            if (!gelf_getshdr(scn, &sh) || !(sn = elf_strptr(e, shstr, sh.sh_name)) ||
                strcmp(sn, ".gnu_debugaltlink") != 0)
                continue;
            Elf_Data *d = elf_getdata(scn, NULL);
            const char *buf = d ? d->d_buf : NULL;
            const char *nul = buf ? memchr(buf, 0, d->d_size) : NULL;
            if (!nul || strcmp(buf, name) != 0)
                break;
            size_t len = d->d_size - (size_t)(nul + 1 - buf);
            if (len > 0 && len <= 64) {
                memcpy(id, nul + 1, len);
                n = (int)len;
            }
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    return n;
}

/* Opens cand and keeps it when its build id is want (wantlen > 0), else when
 * its CRC-32 is crc (crc != 0), else as it is. Never the file `self`. Returns
 * the descriptor, or -1. */
static int rh_debug_try(const char *cand, const char *self, const uint8_t *want, int wantlen,
                        uint32_t crc, char **name)
{
    char real[PATH_MAX], why[PATH_MAX + 64];
    int fd = rh_modfind_open(cand, real, sizeof real, why, sizeof why);
    if (fd < 0)
        return -1;
    if (self && !strcmp(real, self)) {
        close(fd);
        return -1;
    }
    int ok;
    if (wantlen > 0) {
        uint8_t id[64];
        int n = rh_fd_build_id(fd, id);
        ok = n == wantlen && !memcmp(id, want, (size_t)n);
    } else if (crc) {
        uint32_t c;
        ok = rh_fd_crc32(fd, &c) == 0 && c == crc;
    } else {
        ok = 1;
    }
    if (!ok || !(*name = strdup(real))) {
        close(fd);
        return -1;
    }
    return fd;
}

int rh_modfind_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                         const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                         char **debuginfo_file_name)
{
    (void)modname;
    (void)base;
    const struct rh_modfind_paths *p = userdata ? *userdata : NULL;
    *debuginfo_file_name = NULL;
    /* what to look for: the dwz file of an alt link (called with the link's
     * name and no CRC), else the module's own debug file */
    uint8_t want[64];
    int wantlen = 0;
    if (debuglink_file && !debuglink_crc && file_name)
        wantlen = rh_altlink_id(file_name, debuglink_file, want);
    if (!wantlen) {
        const unsigned char *bid = NULL;
        GElf_Addr vaddr;
        int bl = dwfl_module_build_id(mod, &bid, &vaddr);
        if (bl > 0 && bl <= 64) {
            memcpy(want, bid, (size_t)bl);
            wantlen = bl;
        }
    }
    char self[PATH_MAX] = "";
    if (file_name && !realpath(file_name, self))
        self[0] = '\0';
    char cand[RH_MODFIND_PATH];
    int fd;
    for (size_t i = 0; wantlen >= 2 && rh_modfind_dir(p, i); i++)
        if (!rh_buildid_path(cand, sizeof cand, rh_modfind_dir(p, i), want, (unsigned)wantlen,
                             ".debug") &&
            (fd = rh_debug_try(cand, self, want, wantlen, 0, debuginfo_file_name)) >= 0)
            return fd;
    if (!debuglink_file || !debuglink_file[0])
        return -1;
    if (debuglink_file[0] == '/')
        return rh_debug_try(debuglink_file, self, want, wantlen, debuglink_crc,
                            debuginfo_file_name);
    /* beside the file, in its .debug directory, and under each debug
     * directory by the file's own directory (gdb's places) */
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", self[0] ? self : file_name ? file_name : "");
    char *slash = strrchr(dir, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    if (snprintf(cand, sizeof cand, "%s/%s", dir, debuglink_file) < (int)sizeof cand &&
        (fd = rh_debug_try(cand, self, want, wantlen, debuglink_crc, debuginfo_file_name)) >= 0)
        return fd;
    if (snprintf(cand, sizeof cand, "%s/.debug/%s", dir, debuglink_file) < (int)sizeof cand &&
        (fd = rh_debug_try(cand, self, want, wantlen, debuglink_crc, debuginfo_file_name)) >= 0)
        return fd;
    for (size_t i = 0; rh_modfind_dir(p, i); i++)
        if (snprintf(cand, sizeof cand, "%s%s/%s", rh_modfind_dir(p, i), dir, debuglink_file) <
                (int)sizeof cand &&
            (fd = rh_debug_try(cand, self, want, wantlen, debuglink_crc, debuginfo_file_name)) >= 0)
            return fd;
    return -1;
}

int rh_modfind_no_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                      char **file_name, Elf **elfp)
{
    (void)mod;
    (void)userdata;
    (void)modname;
    (void)base;
    (void)file_name;
    *elfp = NULL;
    return -1; /* every module is reported with a descriptor rh_modfind_open made */
}
