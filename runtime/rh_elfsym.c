/* rh_elfsym.c: function names for the in-process reports, from the modules'
 * ELF symbol tables.
 *
 * rheaper_callsite_report (rh_report.c) names the frames of the stacks it
 * prints without libdw, without the wrapped allocator and without stdio:
 *   - /proc/self/maps, read with raw system calls into mmap'd memory, gives the
 *     file and file offset of an address (no loader lock is taken, so a report
 *     made inside dlopen cannot deadlock);
 *   - the file is mapped read-only (its fd closed at once); its program headers
 *     turn the file offset into a link-time address, and its .symtab (or
 *     .dynsym when stripped) gives the function whose [value, value + size)
 *     holds it: "name+0xoff".
 * A context caches the maps text and up to RH_SYM_MODS mapped files for one
 * report and unmaps everything at the end. Names are the symbol table's:
 * static functions are found when .symtab is there, inlined frames are not
 * split (the converter does that later from the raw addresses). The files
 * are of the running program's own ELF class (ElfW).
 */
#include <elf.h>
#include <link.h> /* ElfW: the running program's own ELF class */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rh_recording.h"

#define RH_SYM_MODS 64
#define RH_SYM_MAPS_MAX (8u << 20)

struct rh_sym_mod {
    char path[512];
    const uint8_t *img; /* the mapped file, NULL when unreadable */
    size_t size;
    int tried;
};

struct rh_sym_ctx {
    char *maps;
    size_t maps_len, maps_cap;
    struct rh_sym_mod mods[RH_SYM_MODS];
    int nmods;
};

static void *rh_sym_mmap(size_t n)
{
    void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

struct rh_sym_ctx *rh_sym_open(void)
{
    struct rh_sym_ctx *c = rh_sym_mmap(sizeof *c);
    if (!c)
        return NULL;
    c->maps_cap = 1u << 20;
    c->maps = rh_sym_mmap(c->maps_cap);
    int fd = rh_open_proc("/proc/self/maps", O_RDONLY);
    while (c->maps && fd >= 0) {
        if (c->maps_len + 4096 > c->maps_cap) {
            if (c->maps_cap >= RH_SYM_MAPS_MAX)
                break;
            char *n = rh_sym_mmap(c->maps_cap * 2);
            if (!n)
                break;
            memcpy(n, c->maps, c->maps_len);
            munmap(c->maps, c->maps_cap);
            c->maps = n;
            c->maps_cap *= 2;
        }
        ssize_t r = rh_sys_read(fd, c->maps + c->maps_len, c->maps_cap - c->maps_len - 1);
        if (r <= 0)
            break;
        c->maps_len += (size_t)r;
    }
    if (fd >= 0)
        rh_sys_close(fd);
    if (c->maps)
        c->maps[c->maps_len] = 0;
    return c;
}

void rh_sym_close(struct rh_sym_ctx *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->nmods; i++)
        if (c->mods[i].img)
            munmap((void *)c->mods[i].img, c->mods[i].size);
    if (c->maps)
        munmap(c->maps, c->maps_cap);
    munmap(c, sizeof *c);
}

static uint64_t rh_sym_hex(const char **p)
{
    uint64_t v = 0;
    for (;; (*p)++) {
        char ch = **p;
        if (ch >= '0' && ch <= '9')
            v = v * 16 + (uint64_t)(ch - '0');
        else if (ch >= 'a' && ch <= 'f')
            v = v * 16 + (uint64_t)(ch - 'a' + 10);
        else
            return v;
    }
}

/* The maps line holding addr: its file path (into path) and the file offset
 * of addr. Returns 0, or -1 when addr is in no file mapping. */
static int rh_sym_where(struct rh_sym_ctx *c, uintptr_t addr, char *path, size_t plen,
                        uint64_t *foff)
{
    const char *p = c->maps;
    while (p && *p) {
        const char *line = p;
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
        const char *q = line;
        uint64_t lo = rh_sym_hex(&q);
        if (*q++ != '-')
            continue;
        uint64_t hi = rh_sym_hex(&q);
        if (addr < lo || addr >= hi)
            continue;
        /* perms, offset, dev, inode, path */
        while (*q == ' ')
            q++;
        while (*q && *q != ' ')
            q++;
        while (*q == ' ')
            q++;
        uint64_t off = rh_sym_hex(&q);
        for (int f = 0; f < 2; f++) {
            while (*q == ' ')
                q++;
            while (*q && *q != ' ' && *q != '\n')
                q++;
        }
        while (*q == ' ')
            q++;
        if (*q != '/')
            return -1;
        size_t n = 0;
        while (q[n] && q[n] != '\n' && n + 1 < plen) {
            path[n] = q[n];
            n++;
        }
        path[n] = 0;
        *foff = addr - lo + off;
        return 0;
    }
    return -1;
}

static struct rh_sym_mod *rh_sym_mod(struct rh_sym_ctx *c, const char *path)
{
    for (int i = 0; i < c->nmods; i++)
        if (!strcmp(c->mods[i].path, path))
            return &c->mods[i];
    if (c->nmods == RH_SYM_MODS)
        return NULL;
    struct rh_sym_mod *m = &c->mods[c->nmods++];
    size_t n = strlen(path);
    if (n >= sizeof m->path)
        n = sizeof m->path - 1;
    memcpy(m->path, path, n);
    m->path[n] = 0;
    int fd = rh_open_safe(path, O_RDONLY, 0, 0, NULL, NULL) /* a module: regular file */;
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(ElfW(Ehdr))) {
        void *img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (img != MAP_FAILED) {
            m->img = img;
            m->size = (size_t)st.st_size;
        }
    }
    if (fd >= 0)
        rh_sys_close(fd);
    return m;
}

/* A section header of image m, bounds-checked. */
static const ElfW(Shdr) *rh_sym_shdr(const struct rh_sym_mod *m, const ElfW(Ehdr) *eh, unsigned i)
{
    uint64_t off = eh->e_shoff + (uint64_t)i * eh->e_shentsize;
    if (i >= eh->e_shnum || eh->e_shentsize < sizeof(ElfW(Shdr)) || off + sizeof(ElfW(Shdr)) > m->size)
        return NULL;
    return (const ElfW(Shdr) *)(m->img + off);
}

/* Looks link-time address v up in the symbol table of type `type`. Writes
 * "name+0xoff" and returns 1 when found. */
static int rh_sym_lookup(const struct rh_sym_mod *m, const ElfW(Ehdr) *eh, uint32_t type,
                         uint64_t v, char *out, size_t len)
{
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        const ElfW(Shdr) *sh = rh_sym_shdr(m, eh, i);
        if (!sh || sh->sh_type != type || sh->sh_entsize < sizeof(ElfW(Sym)))
            continue;
        const ElfW(Shdr) *strs = rh_sym_shdr(m, eh, sh->sh_link);
        if (!strs || sh->sh_offset + sh->sh_size > m->size ||
            strs->sh_offset + strs->sh_size > m->size)
            continue;
        uint64_t n = sh->sh_size / sh->sh_entsize;
        for (uint64_t k = 0; k < n; k++) {
            const ElfW(Sym) *s = (const ElfW(Sym) *)(m->img + sh->sh_offset + k * sh->sh_entsize);
            unsigned t = ELF64_ST_TYPE(s->st_info);
            if ((t != STT_FUNC && t != STT_GNU_IFUNC) || s->st_shndx == SHN_UNDEF || !s->st_size)
                continue;
            if (v < s->st_value || v - s->st_value >= s->st_size)
                continue;
            if (s->st_name >= strs->sh_size)
                return 0;
            const char *name = (const char *)m->img + strs->sh_offset + s->st_name;
            size_t maxn = strs->sh_size - s->st_name;
            size_t nl = strnlen(name, maxn);
            char tmp[64];
            size_t tl = rh_fmt(tmp, sizeof tmp, "+0x%llx", (unsigned long long)(v - s->st_value));
            if (nl + tl + 1 > len)
                nl = len > tl + 1 ? len - tl - 1 : 0;
            memcpy(out, name, nl);
            memcpy(out + nl, tmp, tl + 1);
            return 1;
        }
    }
    return 0;
}

int rh_sym_name(struct rh_sym_ctx *c, uintptr_t addr, char *out, size_t len, const char **module)
{
    char path[512];
    uint64_t foff;
    *module = "?";
    if (len)
        out[0] = 0;
    if (!c || !c->maps || rh_sym_where(c, addr, path, sizeof path, &foff) != 0)
        return 0;
    struct rh_sym_mod *m = rh_sym_mod(c, path);
    if (!m)
        return 0;
    *module = m->path;
    if (!m->img || memcmp(m->img, ELFMAG, SELFMAG) != 0 || m->img[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32))
        return 0;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)m->img;
    /* file offset -> link-time address through the PT_LOAD holding it */
    uint64_t v = 0;
    int found = 0;
    for (unsigned i = 0; i < eh->e_phnum && !found; i++) {
        uint64_t off = eh->e_phoff + (uint64_t)i * eh->e_phentsize;
        if (eh->e_phentsize < sizeof(ElfW(Phdr)) || off + sizeof(ElfW(Phdr)) > m->size)
            break;
        const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(m->img + off);
        if (ph->p_type == PT_LOAD && foff >= ph->p_offset && foff - ph->p_offset < ph->p_filesz) {
            v = foff - ph->p_offset + ph->p_vaddr;
            found = 1;
        }
    }
    if (!found)
        return 0;
    return rh_sym_lookup(m, eh, SHT_SYMTAB, v, out, len) ||
           rh_sym_lookup(m, eh, SHT_DYNSYM, v, out, len);
}
