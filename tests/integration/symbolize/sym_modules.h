/* sym_modules.h: the symbolizer tests' own module map, as the runtime records it.
 *
 * A test program calls symt_collect() to list its loaded modules the way the
 * runtime's MODULES chunk describes them (FORMAT.md): load bias from
 * dl_iterate_phdr, the main program under its real path (readlink of
 * /proc/self/exe, since a test driver reads it from another process), the GNU
 * build id from the PT_NOTE segment in memory, and the executable PT_LOAD ranges
 * as absolute addresses. Header-only and static, shared by the test programs.
 */
#ifndef SYM_MODULES_H
#define SYM_MODULES_H

#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SYMT_MAX_MODS 64
#define SYMT_MAX_RANGES 8

struct symt_mod {
    uint64_t base;
    char path[1024];
    uint8_t build_id[64];
    unsigned build_id_len;
    uint64_t ranges[2 * SYMT_MAX_RANGES];
    unsigned nranges;
};

struct symt_list {
    struct symt_mod mods[SYMT_MAX_MODS];
    int n;
};

/* Reads the NT_GNU_BUILD_ID note of one PT_NOTE segment in memory into m. */
static void symt_note(struct symt_mod *m, const unsigned char *p, size_t len, size_t align)
{
    if (align < 4)
        align = 4;
    size_t off = 0;
    while (off + sizeof(Elf64_Nhdr) <= len) {
        const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(p + off);
        size_t name_off = off + sizeof *nh;
        size_t desc_off = name_off + ((nh->n_namesz + align - 1) & ~(align - 1));
        size_t next = desc_off + ((nh->n_descsz + align - 1) & ~(align - 1));
        if (desc_off + nh->n_descsz > len)
            return;
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
            memcmp(p + name_off, "GNU", 4) == 0 && nh->n_descsz <= sizeof m->build_id) {
            memcpy(m->build_id, p + desc_off, nh->n_descsz);
            m->build_id_len = nh->n_descsz;
            return;
        }
        off = next;
    }
}

static int symt_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct symt_list *l = arg;
    if (l->n >= SYMT_MAX_MODS)
        return 1;
    struct symt_mod *m = &l->mods[l->n];
    memset(m, 0, sizeof *m);
    if (!info->dlpi_name || !info->dlpi_name[0]) {
        ssize_t k = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
        if (k <= 0)
            return 0;
        m->path[k] = 0;
    } else if (info->dlpi_name[0] == '/') {
        snprintf(m->path, sizeof m->path, "%s", info->dlpi_name);
    } else {
        return 0; /* linux-vdso.so.1: no file */
    }
    m->base = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && m->nranges < SYMT_MAX_RANGES) {
            m->ranges[2 * m->nranges] = info->dlpi_addr + ph->p_vaddr;
            m->ranges[2 * m->nranges + 1] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
            m->nranges++;
        } else if (ph->p_type == PT_NOTE && !m->build_id_len) {
            symt_note(m, (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz,
                      ph->p_align);
        }
    }
    l->n++;
    return 0;
}

/* Fills l with the modules of this process. Returns the number found. */
static int symt_collect(struct symt_list *l)
{
    l->n = 0;
    dl_iterate_phdr(symt_cb, l);
    return l->n;
}

#endif
