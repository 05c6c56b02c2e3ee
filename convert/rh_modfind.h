/* rh_modfind.h: where the converter looks for a module's files and how it
 * opens them (rh_modfind.c): the recorded path, then the build id under the
 * debug directories, then --search; separate debug files for libdwfl. */
#ifndef RH_MODFIND_H
#define RH_MODFIND_H

#include <elfutils/libdwfl.h>
#include <stddef.h>
#include <stdint.h>

#include "rh_symbolize.h"

#define RH_MODFIND_PATH 4096
#define RH_MODFIND_MAX 40 /* candidates per module: path, 2 per debug dir, 1 per --search */

/* Resolves symbolic links in path by name and opens the file it names with
 * rh_safe_open (read-only, never blocking, regular files only). Returns the
 * descriptor and the resolved path in real, or -1 with why ("cannot open: No
 * such file or directory", "is a FIFO, not a regular file"). */
__attribute__((visibility("hidden"))) int rh_modfind_open(const char *path, char *real,
                                                          size_t reallen, char *why, size_t whylen);

/* Writes the files to try for a module recorded at path with build id
 * (id, idlen), in order: path, by build id under each debug directory
 * (D/.build-id/xx/yyyy, then its .debug), DIR/basename(path) for each search
 * directory. Returns how many (at most max). */
__attribute__((visibility("hidden"))) int
rh_modfind_candidates(const struct rh_modfind_paths *p, const char *path, const uint8_t *id,
                      unsigned idlen, char (*out)[RH_MODFIND_PATH], int max);

/* Dwfl_Callbacks.find_debuginfo: the module's separate debug file (or the dwz
 * file of its alt link) by build id under the debug directories, then by
 * .gnu_debuglink beside the file, in its .debug directory and under each
 * debug directory; checked by build id, else by the debuglink's CRC. The
 * module's userdata is its struct rh_modfind_paths. Returns a descriptor
 * libdwfl owns, with *debuginfo_file_name malloc'd, or -1. */
__attribute__((visibility("hidden"))) int
rh_modfind_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                     const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                     char **debuginfo_file_name);

/* Dwfl_Callbacks.find_elf: finds nothing. Every module is reported with the
 * descriptor rh_modfind_open made, so libdwfl never opens a main file by
 * name. */
__attribute__((visibility("hidden"))) int rh_modfind_no_elf(Dwfl_Module *mod, void **userdata,
                                                            const char *modname, Dwarf_Addr base,
                                                            char **file_name, Elf **elfp);

#endif
