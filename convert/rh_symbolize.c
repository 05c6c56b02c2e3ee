/* rh_symbolize.c: turns recorded return addresses into file, line and function.
 *
 * The converter registers every module of every MODULES snapshot and then asks
 * for each distinct return address once. Per module, lazily on the first address
 * that falls into it, the ELF file is opened, its GNU build id is compared with
 * the one recorded at run time, and it is reported to a Dwfl session of its own
 * at the recorded load bias; separate debug files are found the standard way (by
 * build id under /usr/lib/debug/.build-id, and by .gnu_debuglink). An address
 * (minus 1, since it is a return address) is then resolved from DWARF: file and
 * line from the CU's line table, the chain of inlined functions from a per-CU
 * index of subprogram / inlined_subroutine DIEs built by one DIE walk on the
 * CU's first address (libdw's dwarf_getscopes + dwarf_getscopes_die walk the CU
 * again for every address, ~50 us each in libc; they remain the fallback and
 * the reference the tests compare with), names from DW_AT_linkage_name
 * demangled or DW_AT_name. CUs are found from their own DW_AT_ranges, because
 * clang emits no .debug_aranges, which libdw's lookup needs. Without DWARF
 * the name comes from a sorted table built once per module from .symtab or
 * .dynsym. dwfl_module_addrname is deliberately not used: it costs ~50 us a call.
 *
 * Results are cached per address and all strings are interned in one pool, so
 * the converter can ask again for free. Files are untrusted input: every libelf /
 * libdw return value is checked, the number of frames per address is bounded,
 * and a module that cannot be used (missing, not ELF, build id differs, corrupt)
 * gets one warning line on stderr and yields unresolved frames (module + address).
 *
 * Compressed debug sections: libdw 0.188 (Debian 12) reads zlib-compressed
 * sections (SHF_COMPRESSED and .zdebug, as gcc -gz writes them) but not zstd ones
 * (ELFCOMPRESS_ZSTD, supported from elfutils 0.189); such a module loses its
 * DWARF and falls back to symbol names.
 */
#include "rh_check.h"
#include "rh_symbolize.h"
#include "rh_modfind.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* From libstdc++ (the Itanium C++ ABI); declared here so this stays a C file. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

#define RH_SYM_MAX_CHAIN 64        /* frames kept per address (inline depth bound; past it the
                                      stack ends, marked truncated) */
#define RH_SYM_POOL_BLOCK 65536    /* bytes per string pool block */
#define RH_SYM_MAX_NAME (1u << 16) /* longer names are cut: hostile .debug_str */

enum rh_mod_state { RH_MOD_UNLOADED, RH_MOD_READY, RH_MOD_FAILED };

/* One sorted symbol table entry (function symbols only). */
struct rh_symtab_ent {
    uint64_t addr;
    uint64_t size;
    const char *name; /* points into the module's libelf data; lives with the Dwfl */
};

/* One address range of a compile unit, from its DW_AT_ranges / low_pc-high_pc. */
struct rh_cu_range {
    uint64_t lo, hi; /* DWARF addresses, hi exclusive */
    uint32_t unit;   /* index into the module's units */
};

/* A function DIE of a CU's index: a subprogram or an inlined_subroutine. */
struct rh_fnode {
    Dwarf_Off off;
    int32_t parent;         /* enclosing function node, -1 for none */
    uint32_t first, nrange; /* its ranges in the unit's by-node range array */
    uint8_t is_sub;         /* DW_TAG_subprogram: a real function, the chain ends */
    uint8_t named;          /* name and call site looked up (maybe to NULL) */
    uint8_t called;
    int call_line;
    const char *name;      /* pooled */
    const char *call_file; /* pooled */
};

struct rh_frange {
    uint64_t lo, hi; /* DWARF addresses, hi exclusive */
    uint32_t node;
    uint32_t depth; /* DIE nesting depth of the node */
};

/* A compile unit and, once an address in it was asked for, its function index. */
struct rh_unit {
    Dwarf_Off off; /* the CU DIE's offset in .debug_info */
    int state;     /* 0 not built, 1 built, -1 unusable: use dwarf_getscopes */
    struct rh_fnode *nodes;
    size_t nnodes;
    struct rh_frange *by_node; /* ranges grouped by node, in node order */
    struct rh_frange *sorted;  /* the same ranges by lo, outer before inner */
    size_t nranges;
};

/* One distinct module (same path, base, build id and ranges are one module). */
struct rh_symmod {
    uint64_t base;
    const char *path; /* interned */
    uint8_t *build_id;
    unsigned build_id_len;
    uint64_t *ranges;
    unsigned nranges;
    uint64_t order; /* registration order: where ranges overlap, the lowest wins */
    uint64_t hash;
    enum rh_mod_state state;
    const char *file; /* the file read (interned): the path, or found by build id or --search */
    Dwfl *dwfl;
    Dwfl_Module *mod;
    Dwarf *dwarf;         /* NULL when the module has no DWARF */
    Dwarf_Addr dwarf_bias; /* Dwfl address - bias = DWARF address */
    int cus_built;
    struct rh_unit *units;
    size_t nunits;
    struct rh_cu_range *cus; /* sorted by lo */
    uint64_t *cus_maxhi;     /* cus_maxhi[i] = max(cus[0..i].hi) */
    size_t ncus;
    int symtab_built;
    struct rh_symtab_ent *symtab;
    size_t nsymtab;
};

/* A piece of the address space owned by one module, after overlaps are settled. */
struct rh_segment {
    uint64_t start, end;
    unsigned mod;
};

/* An interned string; `alt` caches its demangled form (or itself). */
struct rh_pool_ent {
    uint64_t hash;
    const char *str;
    const char *alt;
};

struct rh_addr_ent {
    uint64_t addr;
    uint32_t first; /* index into frames */
    uint32_t count; /* 0 = empty slot */
};

struct rh_symbolizer {
    /* string pool: blocks of bytes plus an open-addressing set */
    char **blocks; /* every block, for rh_sym_free */
    size_t nblocks, capblocks;
    char *cur_block; /* the block small strings go to */
    size_t block_used;
    struct rh_pool_ent *pool;
    size_t pool_cap, pool_n;

    /* modules */
    struct rh_symmod *mods;
    size_t nmods, capmods;
    unsigned *mod_index; /* open addressing over mods, value = index + 1 */
    size_t mod_index_cap;
    uint64_t next_order;

    /* address space map, rebuilt when modules change */
    struct rh_segment *segs;
    size_t nsegs;
    int segs_dirty;

    /* where module files are looked for (rh_modfind.c) */
    struct rh_modfind_paths paths;

    /* per-address cache */
    struct rh_addr_ent *cache;
    size_t cache_cap, cache_n;
    struct rh_sym_frame *frames;
    size_t nframes, capframes;
};

/* libdwfl never opens a file by name: the main file comes as a descriptor,
 * separate debug files from rh_modfind_debuginfo (no FIFO can block it). */
static const Dwfl_Callbacks rh_dwfl_callbacks = {
    .find_elf = rh_modfind_no_elf,
    .find_debuginfo = rh_modfind_debuginfo,
    .section_address = dwfl_offline_section_address,
};

/* ---- small helpers ----------------------------------------------------- */

static uint64_t rh_hash_bytes(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t rh_hash_u64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* Grows *p (an array of *cap elements of size sz) to hold at least need elements.
 * Returns 0, or -1 on out-of-memory or overflow (then *p is unchanged). */
static int rh_sym_grow(void *p, size_t *cap, size_t need, size_t sz)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > (SIZE_MAX / 2) / sz)
            return -1;
        n *= 2;
    }
    void *q = realloc(*(void **)p, n * sz);
    if (!q)
        return -1;
    *(void **)p = q;
    *cap = n;
    return 0;
}

/* One warning line on stderr for a module that cannot be used. */
static void rh_sym_warn(const char *path, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void rh_sym_warn(const char *path, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rheaper-convert: warning: %s: %s; its frames are left unresolved\n", path,
            msg);
}

/* ---- string pool ------------------------------------------------------- */

/* Copies n bytes plus a NUL into the pool. Returns the copy, or NULL on
 * out-of-memory. Pool memory lives until rh_sym_free(). */
static char *rh_pool_copy(struct rh_symbolizer *s, const char *str, size_t n)
{
    int big = n + 1 > RH_SYM_POOL_BLOCK / 4; /* big strings get a block of their own */
    if (big || !s->cur_block || s->block_used + n + 1 > RH_SYM_POOL_BLOCK) {
        if (rh_sym_grow(&s->blocks, &s->capblocks, s->nblocks + 1, sizeof *s->blocks))
            return NULL;
        char *b = malloc(big ? n + 1 : RH_SYM_POOL_BLOCK);
        if (!b)
            return NULL;
        s->blocks[s->nblocks++] = b;
        if (big) {
            memcpy(b, str, n);
            b[n] = 0;
            return b;
        }
        s->cur_block = b;
        s->block_used = 0;
    }
    char *d = s->cur_block + s->block_used;
    memcpy(d, str, n);
    d[n] = 0;
    s->block_used += n + 1;
    return d;
}

/* Returns the pool entry for the string str (n bytes, need not be terminated),
 * adding it if new, or NULL on out-of-memory. The entry's str lives until
 * rh_sym_free(); the entry pointer itself is valid only until the next intern. */
static struct rh_pool_ent *rh_intern_ent(struct rh_symbolizer *s, const char *str, size_t n)
{
    if (n > RH_SYM_MAX_NAME)
        n = RH_SYM_MAX_NAME;
    if ((s->pool_n + 1) * 4 > s->pool_cap * 3) {
        size_t ncap = s->pool_cap ? s->pool_cap * 2 : 1024;
        struct rh_pool_ent *np = calloc(ncap, sizeof *np);
        if (!np)
            return NULL;
        for (size_t i = 0; i < s->pool_cap; i++) {
            if (!s->pool[i].str)
                continue;
            size_t j = s->pool[i].hash & (ncap - 1);
            while (np[j].str)
                j = (j + 1) & (ncap - 1);
            np[j] = s->pool[i];
        }
        free(s->pool);
        s->pool = np;
        s->pool_cap = ncap;
    }
    uint64_t h = rh_hash_bytes(str, n, 0xcbf29ce484222325ull);
    size_t j = h & (s->pool_cap - 1);
    while (s->pool[j].str) {
        if (s->pool[j].hash == h && strncmp(s->pool[j].str, str, n) == 0 &&
            s->pool[j].str[n] == 0)
            return &s->pool[j];
        j = (j + 1) & (s->pool_cap - 1);
    }
    char *c = rh_pool_copy(s, str, n);
    if (!c)
        return NULL;
    s->pool[j].hash = h;
    s->pool[j].str = c;
    s->pool[j].alt = NULL;
    s->pool_n++;
    return &s->pool[j];
}

/* Interns a NUL-terminated string (NULL stays NULL). Returns the pooled copy, or
 * NULL on out-of-memory. */
static const char *rh_intern(struct rh_symbolizer *s, const char *str)
{
    if (!str)
        return NULL;
    struct rh_pool_ent *e = rh_intern_ent(s, str, strnlen(str, RH_SYM_MAX_NAME + 1));
    return e ? e->str : NULL;
}

/* Returns the pooled, demangled form of a linkage or symbol name. Names that are
 * not Itanium-mangled (plain C) come back as they are. Each distinct raw name is
 * demangled once; the result is remembered in its pool entry. */
static const char *rh_demangle(struct rh_symbolizer *s, const char *raw)
{
    if (!raw || !*raw)
        return NULL;
    struct rh_pool_ent *e = rh_intern_ent(s, raw, strnlen(raw, RH_SYM_MAX_NAME + 1));
    if (!e)
        return NULL;
    if (e->alt)
        return e->alt;
    const char *raw_copy = e->str;
    const char *res = raw_copy;
    if (raw_copy[0] == '_' && raw_copy[1] == 'Z') {
        int status = -1;
        char *d = __cxa_demangle(raw_copy, NULL, NULL, &status);
        if (d && status == 0) {
            const char *p = rh_intern(s, d);
            if (p)
                res = p;
        }
        free(d);
        /* rh_intern may have rehashed the pool: find the raw entry again */
        e = rh_intern_ent(s, raw_copy, strlen(raw_copy));
        if (!e)
            return res;
    }
    e->alt = res;
    return res;
}

/* ---- modules and the address map --------------------------------------- */

static uint64_t rh_mod_hash(const char *path, const struct rh_module *m)
{
    uint64_t h = rh_hash_u64((uint64_t)(uintptr_t)path ^ rh_hash_u64(m->base));
    if (m->build_id && m->build_id_len)
        h = rh_hash_bytes(m->build_id, m->build_id_len, h);
    if (m->ranges && m->nranges)
        h = rh_hash_bytes(m->ranges, (size_t)m->nranges * 2 * sizeof(uint64_t), h);
    return h;
}

static int rh_mod_same(const struct rh_symmod *a, const char *path, const struct rh_module *m)
{
    unsigned bl = m->build_id ? m->build_id_len : 0;
    unsigned nr = m->ranges ? m->nranges : 0;
    return a->path == path && a->base == m->base && a->build_id_len == bl &&
           a->nranges == nr && (!bl || memcmp(a->build_id, m->build_id, bl) == 0) &&
           (!nr || memcmp(a->ranges, m->ranges, (size_t)nr * 2 * sizeof(uint64_t)) == 0);
}

/* Rebuilds the module index (hash -> module) at capacity cap. Returns 0 or -1. */
static int rh_mod_reindex(struct rh_symbolizer *s, size_t cap)
{
    unsigned *ix = calloc(cap, sizeof *ix);
    if (!ix)
        return -1;
    for (size_t i = 0; i < s->nmods; i++) {
        size_t j = s->mods[i].hash & (cap - 1);
        while (ix[j])
            j = (j + 1) & (cap - 1);
        ix[j] = (unsigned)i + 1;
    }
    free(s->mod_index);
    s->mod_index = ix;
    s->mod_index_cap = cap;
    return 0;
}

struct rh_symbolizer *rh_sym_new(void)
{
    static int elf_ready;
    if (!elf_ready) {
        elf_version(EV_CURRENT);
        elf_ready = 1;
    }
    return calloc(1, sizeof(struct rh_symbolizer));
}

/* Empties the per-address cache (frames already handed out stay valid, since
 * their strings live in the pool). Called when the module map changes. */
static void rh_cache_clear(struct rh_symbolizer *s)
{
    if (s->cache_n) {
        memset(s->cache, 0, s->cache_cap * sizeof *s->cache);
        s->cache_n = 0;
        s->nframes = 0;
    }
}

void rh_sym_set_paths(struct rh_symbolizer *s, const struct rh_modfind_paths *p)
{
    if (s)
        s->paths = p ? *p : (struct rh_modfind_paths){NULL, NULL};
}

/* Contract in rh_symbolize.h. In addition: where the ranges of two modules overlap
 * (one unloaded and another loaded at its address), the module registered first
 * owns the overlap, so the caller registers the latest MODULES snapshot first.
 * Registering an identical module (same path, base, build id, ranges) again
 * changes nothing. A new module empties the per-address cache. */
int rh_sym_add_module(struct rh_symbolizer *s, const struct rh_module *m)
{
    if (!s || !m)
        return 0;
    const char *path = rh_intern(s, m->path ? m->path : "");
    if (!path)
        return -1;
    uint64_t h = rh_mod_hash(path, m);
    if (s->mod_index_cap) {
        size_t j = h & (s->mod_index_cap - 1);
        while (s->mod_index[j]) {
            struct rh_symmod *o = &s->mods[s->mod_index[j] - 1];
            if (o->hash == h && rh_mod_same(o, path, m)) {
                /* seen before: it keeps the precedence of its first registration */
                return 0;
            }
            j = (j + 1) & (s->mod_index_cap - 1);
        }
    }
    if (rh_sym_grow(&s->mods, &s->capmods, s->nmods + 1, sizeof *s->mods))
        return -1;
    struct rh_symmod *n = &s->mods[s->nmods];
    memset(n, 0, sizeof *n);
    n->base = m->base;
    n->path = path;
    n->hash = h;
    if (m->build_id && m->build_id_len) {
        n->build_id = malloc(m->build_id_len);
        if (!n->build_id)
            return -1;
        memcpy(n->build_id, m->build_id, m->build_id_len);
        n->build_id_len = m->build_id_len;
    }
    if (m->ranges && m->nranges) {
        n->ranges = malloc((size_t)m->nranges * 2 * sizeof(uint64_t));
        if (!n->ranges) {
            free(n->build_id);
            return -1;
        }
        memcpy(n->ranges, m->ranges, (size_t)m->nranges * 2 * sizeof(uint64_t));
        n->nranges = m->nranges;
    }
    n->order = s->next_order++;
    n->state = RH_MOD_UNLOADED;
    s->nmods++;
    if (s->nmods * 2 > s->mod_index_cap) {
        if (rh_mod_reindex(s, s->mod_index_cap ? s->mod_index_cap * 2 : 64)) {
            s->nmods--;
            free(n->build_id);
            free(n->ranges);
            return -1;
        }
    } else {
        size_t j = h & (s->mod_index_cap - 1);
        while (s->mod_index[j])
            j = (j + 1) & (s->mod_index_cap - 1);
        s->mod_index[j] = (unsigned)s->nmods;
    }
    s->segs_dirty = 1;
    rh_cache_clear(s);
    return 0;
}

struct rh_range_item {
    uint64_t start, end, order;
    unsigned mod;
};

static int rh_cmp_range_start(const void *a, const void *b)
{
    const struct rh_range_item *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int rh_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Min-heap on order, for the sweep in rh_segs_build. */
static void rh_heap_push(struct rh_range_item **h, size_t *n, struct rh_range_item *it)
{
    size_t i = (*n)++;
    h[i] = it;
    while (i && h[(i - 1) / 2]->order > h[i]->order) {
        struct rh_range_item *t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static void rh_heap_pop(struct rh_range_item **h, size_t *n)
{
    h[0] = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && h[l]->order < h[m]->order)
            m = l;
        if (r < *n && h[r]->order < h[m]->order)
            m = r;
        if (m == i)
            break;
        struct rh_range_item *t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* Flattens all registered ranges into sorted, disjoint segments. Where ranges of
 * different modules overlap (a library unloaded and another loaded at its
 * address), the module registered first wins: rheaper-convert registers the
 * latest MODULES snapshot first, and FORMAT.md says the latest one that covers an
 * address counts.
 * O(n log n) in the number of ranges. Returns 0, or -1 on out-of-memory (the old
 * map is then kept). */
static int rh_segs_build(struct rh_symbolizer *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nmods; i++)
        n += s->mods[i].nranges;
    struct rh_range_item *items = malloc((n ? n : 1) * sizeof *items);
    uint64_t *pts = malloc((n ? 2 * n : 1) * sizeof *pts);
    struct rh_range_item **heap = malloc((n ? n : 1) * sizeof *heap);
    struct rh_segment *segs = malloc((n ? 2 * n : 1) * sizeof *segs);
    if (!items || !pts || !heap || !segs) {
        free(items);
        free(pts);
        free(heap);
        free(segs);
        return -1;
    }
    size_t ni = 0, np = 0;
    for (size_t i = 0; i < s->nmods; i++) {
        const struct rh_symmod *m = &s->mods[i];
        for (unsigned r = 0; r < m->nranges; r++) {
            uint64_t a = m->ranges[2 * r], b = m->ranges[2 * r + 1];
            if (a >= b)
                continue; /* empty or reversed: hostile or meaningless */
            items[ni++] = (struct rh_range_item){a, b, m->order, (unsigned)i};
            pts[np++] = a;
            pts[np++] = b;
        }
    }
    qsort(items, ni, sizeof *items, rh_cmp_range_start);
    qsort(pts, np, sizeof *pts, rh_cmp_u64);
    size_t nh = 0, next = 0, nseg = 0;
    for (size_t p = 0; p < np; p++) {
        if (p + 1 < np && pts[p + 1] == pts[p])
            continue; /* take each point once, at its last copy */
        uint64_t at = pts[p];
        while (next < ni && items[next].start <= at)
            rh_heap_push(heap, &nh, &items[next++]);
        while (nh && heap[0]->end <= at)
            rh_heap_pop(heap, &nh);
        if (!nh || p + 1 >= np)
            continue;
        uint64_t to = pts[p + 1];
        unsigned mod = heap[0]->mod;
        if (nseg && segs[nseg - 1].end == at && segs[nseg - 1].mod == mod)
            segs[nseg - 1].end = to;
        else
            segs[nseg++] = (struct rh_segment){at, to, mod};
    }
    free(items);
    free(pts);
    free(heap);
    free(s->segs);
    s->segs = segs;
    s->nsegs = nseg;
    s->segs_dirty = 0;
    return 0;
}

/* Returns the module owning addr, or NULL. */
static struct rh_symmod *rh_find_module(struct rh_symbolizer *s, uint64_t addr)
{
    if (s->segs_dirty && rh_segs_build(s))
        return NULL;
    size_t lo = 0, hi = s->nsegs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->segs[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || addr >= s->segs[lo - 1].end)
        return NULL;
    return &s->mods[s->segs[lo - 1].mod];
}

/* ---- opening a module -------------------------------------------------- */

/* For a module recorded without build id: checks that each recorded executable
 * range, made relative to the load bias, lies in an executable PT_LOAD of the
 * file. Catches a rebuilt or replaced file when no build id can. Returns 1 when
 * consistent (or when nothing was recorded to compare), 0 when not. */
static int rh_segments_match(Elf *e, const struct rh_symmod *m)
{
    size_t nph;
    if (elf_getphdrnum(e, &nph) != 0)
        return 0;
    GElf_Ehdr eh;
    if (!gelf_getehdr(e, &eh))
        return 0;
    uint64_t bias = eh.e_type == ET_EXEC ? 0 : m->base;
    for (unsigned r = 0; r < m->nranges; r++) {
        uint64_t a = m->ranges[2 * r], b = m->ranges[2 * r + 1];
        if (a >= b)
            continue;
        if (a < bias)
            return 0;
        uint64_t rel = a - bias;
        int found = 0;
        for (size_t i = 0; i < nph && !found; i++) {
            GElf_Phdr ph;
            if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
                continue;
            uint64_t lo = ph.p_vaddr & ~(uint64_t)4095;
            if (rel >= lo && rel <= ph.p_vaddr + ph.p_memsz)
                found = 1;
        }
        if (!found)
            return 0;
    }
    return 1;
}

/* Checks that every program header's and section's file bytes lie inside the
 * file (size bytes): a truncated copy or a corrupt header table fails here with
 * a reason in why, before libdw is asked to read past the end. Returns 1 if
 * sound, 0 if not. */
static int rh_elf_sound(Elf *e, uint64_t size, char *why, size_t whylen)
{
    GElf_Ehdr eh;
    size_t nph, nsh;
    if (!gelf_getehdr(e, &eh) || elf_getphdrnum(e, &nph) != 0 || elf_getshdrnum(e, &nsh) != 0) {
        snprintf(why, whylen, "corrupt ELF header: %s", elf_errmsg(-1));
        return 0;
    }
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph)) {
            snprintf(why, whylen, "cannot read program header %zu: %s", i, elf_errmsg(-1));
            return 0;
        }
        if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset) {
            snprintf(why, whylen, "truncated: segment %zu ends beyond the file's %llu bytes", i,
                     (unsigned long long)size);
            return 0;
        }
    }
    for (size_t i = 1; i < nsh; i++) {
        GElf_Shdr sh;
        Elf_Scn *scn = elf_getscn(e, i);
        if (!scn || !gelf_getshdr(scn, &sh)) {
            snprintf(why, whylen, "cannot read section header %zu: %s", i, elf_errmsg(-1));
            return 0;
        }
        if (sh.sh_type != SHT_NOBITS && (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)) {
            snprintf(why, whylen, "truncated: section %zu ends beyond the file's %llu bytes", i,
                     (unsigned long long)size);
            return 0;
        }
    }
    if (nph == 0) {
        snprintf(why, whylen, "no program headers");
        return 0;
    }
    return 1;
}

/* Opens one candidate file for m and checks it: a regular file (never
 * blocking: rh_modfind_open), sound ELF, the recorded build id (or, without
 * one, the recorded executable segments). Returns the descriptor, with the
 * file's resolved path in real, or -1 with the reason in why. */
static int rh_mod_try(const struct rh_symmod *m, const char *cand, char *real, size_t reallen,
                      char *why, size_t whylen)
{
    int fd = rh_modfind_open(cand, real, reallen, why, whylen);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(why, whylen, "cannot open: %s", strerror(errno));
        close(fd);
        return -1;
    }
    Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!e || elf_kind(e) != ELF_K_ELF) {
        snprintf(why, whylen, "not an ELF file (%s)", elf_errmsg(-1));
        if (e)
            elf_end(e);
        close(fd);
        return -1;
    }
    if (!rh_elf_sound(e, (uint64_t)st.st_size, why, whylen)) {
        elf_end(e);
        close(fd);
        return -1;
    }
    const void *bid = NULL;
    ssize_t bl = dwelf_elf_gnu_build_id(e, &bid);
    int ok = 1;
    if (bl > 0 && m->build_id_len) {
        if ((size_t)bl != m->build_id_len || memcmp(bid, m->build_id, (size_t)bl) != 0) {
            snprintf(why, whylen, "build id differs from the profiled program");
            ok = 0;
        }
    } else if (!m->build_id_len && !rh_segments_match(e, m)) {
        snprintf(why, whylen, "its executable segments differ from the profiled program");
        ok = 0;
    }
    elf_end(e);
    if (!ok) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Finds m's file (the recorded path, then by build id under the debug
 * directories, then --search: rh_modfind_candidates; the first that passes
 * rh_mod_try) and reports it to a Dwfl session of its own. On failure prints
 * one warning naming the recorded path and why the path itself could not be
 * used, and marks the module failed, so its frames stay unresolved; it is
 * never retried. The fd is owned by libdwfl on success. */
static void rh_mod_load(struct rh_symbolizer *s, struct rh_symmod *m)
{
    m->state = RH_MOD_FAILED;
    if (!m->path[0]) {
        rh_sym_warn("(unnamed module)", "no path was recorded");
        return;
    }
    static char cands[RH_MODFIND_MAX][RH_MODFIND_PATH];
    int n = rh_modfind_candidates(&s->paths, m->path, m->build_id, m->build_id_len, cands,
                                  RH_MODFIND_MAX);
    char real[RH_MODFIND_PATH], why[512] = "cannot open: no candidate file", other[512];
    int fd = -1;
    for (int i = 0; i < n && fd < 0; i++)
        fd = rh_mod_try(m, cands[i], real, sizeof real, i ? other : why,
                        i ? sizeof other : sizeof why);
    if (fd < 0) {
        rh_sym_warn(m->path, "%s", why);
        return;
    }
    struct rh_pool_ent *fe = rh_intern_ent(s, real, strlen(real));
    m->file = fe ? fe->str : NULL;
    if (!m->file) {
        close(fd);
        return;
    }

    Dwfl *d = dwfl_begin(&rh_dwfl_callbacks);
    if (!d) {
        rh_sym_warn(m->path, "libdwfl: %s", dwfl_errmsg(-1));
        close(fd);
        return;
    }
    dwfl_report_begin(d);
    /* The recorded base is dl_iterate_phdr's dlpi_addr, the load bias: with
     * add_p_vaddr = true libdwfl places an ET_DYN file at base + p_vaddr, which is
     * right for PIE, shared libraries and even prelinked ones (p_vaddr != 0). For
     * ET_EXEC libdwfl ignores base and uses the file's own addresses (bias 0). */
    Dwfl_Module *mod = dwfl_report_elf(d, m->path, m->file, fd, m->base, true);
    if (!mod) {
        rh_sym_warn(m->path, "cannot read: %s", dwfl_errmsg(-1));
        dwfl_report_end(d, NULL, NULL);
        dwfl_end(d);
        close(fd); /* not consumed on failure */
        return;
    }
    if (dwfl_report_end(d, NULL, NULL) != 0) {
        rh_sym_warn(m->path, "libdwfl: %s", dwfl_errmsg(-1));
        dwfl_end(d);
        return;
    }
    /* the debug file lookup reads the search places from the module's userdata */
    void **ud = NULL;
    dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
    if (ud)
        *ud = &s->paths;
    m->dwfl = d;
    m->mod = mod;
    /* Finds and loads the DWARF (maybe from a separate debug file). NULL is fine:
     * the module then resolves names through its symbol table only. */
    m->dwarf = dwfl_module_getdwarf(mod, &m->dwarf_bias);
    m->state = RH_MOD_READY;
}

/* ---- what each module had --------------------------------------------- */

size_t rh_sym_nmodules(const struct rh_symbolizer *s)
{
    return s->nmods;
}

const char *rh_sym_module_debug(struct rh_symbolizer *s, size_t i, const char **path, char *buf,
                                size_t len)
{
    struct rh_symmod *m = &s->mods[i];
    *path = m->path;
    if (m->state == RH_MOD_UNLOADED)
        return "not read (no frame in it)";
    if (m->state != RH_MOD_READY)
        return "unreadable (see the warning)";
    if (m->dwarf) {
        const char *mainfile = NULL, *debugfile = NULL;
        dwfl_module_info(m->mod, NULL, NULL, NULL, NULL, NULL, &mainfile, &debugfile);
        if (debugfile && (!mainfile || strcmp(debugfile, mainfile) != 0)) {
            snprintf(buf, len, "debug info from %s", debugfile);
            return buf;
        }
        if (m->file && strcmp(m->file, m->path) != 0) {
            /* found by build id or --search: say which file */
            snprintf(buf, len, "debug info from %s", m->file);
            return buf;
        }
        return "debug info";
    }
    /* no DWARF: names come from the symbol table libdwfl picked */
    GElf_Addr bias;
    Elf *e = dwfl_module_getelf(m->mod, &bias);
    int symtab = 0, dynsym = 0;
    for (Elf_Scn *scn = e ? elf_nextscn(e, NULL) : NULL; scn; scn = elf_nextscn(e, scn)) {
        GElf_Shdr sh;
        if (gelf_getshdr(scn, &sh) == NULL)
            continue;
        symtab |= sh.sh_type == SHT_SYMTAB;
        dynsym |= sh.sh_type == SHT_DYNSYM;
    }
    if (symtab)
        return "no debug info: names from .symtab";
    if (dynsym)
        return "no debug info: exported names from .dynsym";
    return "no debug info, no symbols";
}

/* ---- symbol table fallback --------------------------------------------- */

static int rh_cmp_symtab(const void *a, const void *b)
{
    const struct rh_symtab_ent *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    /* at one address prefer a sized symbol, then the shorter name (no __ prefix) */
    if ((x->size != 0) != (y->size != 0))
        return x->size ? -1 : 1;
    size_t lx = strlen(x->name), ly = strlen(y->name);
    return lx < ly ? -1 : lx > ly;
}

/* Builds m's sorted table of function symbols from .symtab (or .dynsym, or the
 * debug file's table, whichever libdwfl picked). Done once per module; on failure
 * the table stays empty. */
static void rh_symtab_build(struct rh_symmod *m)
{
    m->symtab_built = 1;
    int n = dwfl_module_getsymtab(m->mod);
    if (n <= 1)
        return;
    struct rh_symtab_ent *t = malloc((size_t)n * sizeof *t);
    if (!t)
        return;
    size_t k = 0;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        const char *name = dwfl_module_getsym_info(m->mod, i, &sym, &addr, &shndx, NULL, NULL);
        if (!name || !name[0])
            continue;
        int type = GELF_ST_TYPE(sym.st_info);
        if (type != STT_FUNC && type != STT_GNU_IFUNC)
            continue;
        if (shndx == SHN_UNDEF || addr == 0)
            continue;
        t[k++] = (struct rh_symtab_ent){addr, sym.st_size, name};
    }
    if (k)
        qsort(t, k, sizeof *t, rh_cmp_symtab);
    size_t w = 0;
    for (size_t i = 0; i < k; i++)
        if (!w || t[w - 1].addr != t[i].addr)
            t[w++] = t[i];
    m->symtab = t;
    m->nsymtab = w;
}

/* Returns the raw symbol name covering a (an address in Dwfl space), or NULL. */
static const char *rh_symtab_lookup(struct rh_symmod *m, uint64_t a)
{
    if (!m->symtab_built)
        rh_symtab_build(m);
    size_t lo = 0, hi = m->nsymtab;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->symtab[mid].addr <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const struct rh_symtab_ent *e = &m->symtab[lo - 1];
    if (e->size && a - e->addr >= e->size)
        return NULL;
    return e->name;
}

/* ---- DWARF: compile units ----------------------------------------------- */

static int rh_cmp_cu_range(const void *a, const void *b)
{
    const struct rh_cu_range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Builds m's table of compile units and their address ranges, once, from each
 * CU DIE's ranges. libdw finds CUs through .debug_aranges, which clang does not
 * emit, so this table is what makes clang-built modules resolve; it costs one
 * pass over the unit headers, not over the DIE trees. Type units are skipped;
 * split DWARF (.dwo) is not followed. On out-of-memory the table stays partial. */
static void rh_cu_build(struct rh_symmod *m)
{
    m->cus_built = 1;
    size_t cap = 0, ucap = 0;
    Dwarf_CU *unit = NULL, *next;
    Dwarf_Half version;
    uint8_t unit_type;
    Dwarf_Die cudie;
    while (dwarf_get_units(m->dwarf, unit, &next, &version, &unit_type, &cudie, NULL) == 0) {
        unit = next;
        if (unit_type == DW_UT_type || unit_type == DW_UT_split_type)
            continue;
        if (m->nunits >= UINT32_MAX ||
            rh_sym_grow(&m->units, &ucap, m->nunits + 1, sizeof *m->units))
            break;
        uint32_t ui = (uint32_t)m->nunits++;
        memset(&m->units[ui], 0, sizeof m->units[ui]);
        m->units[ui].off = dwarf_dieoffset(&cudie);
        Dwarf_Addr base, lo, hi;
        ptrdiff_t it = 0;
        while ((it = dwarf_ranges(&cudie, it, &base, &lo, &hi)) > 0) {
            if (lo >= hi)
                continue;
            if (rh_sym_grow(&m->cus, &cap, m->ncus + 1, sizeof *m->cus))
                goto done;
            m->cus[m->ncus++] = (struct rh_cu_range){lo, hi, ui};
        }
    }
done:
    if (m->ncus)
        qsort(m->cus, m->ncus, sizeof *m->cus, rh_cmp_cu_range);
    m->cus_maxhi = malloc((m->ncus ? m->ncus : 1) * sizeof *m->cus_maxhi);
    if (!m->cus_maxhi) {
        m->ncus = 0;
        return;
    }
    uint64_t mx = 0;
    for (size_t i = 0; i < m->ncus; i++) {
        if (m->cus[i].hi > mx)
            mx = m->cus[i].hi;
        m->cus_maxhi[i] = mx;
    }
}

/* Finds the CU DIE covering a (a Dwfl address) into *mem: first from the table
 * of CU ranges, then through libdw's .debug_aranges. Sets *unit to its index in
 * m->units, or -1 when only libdw knew it. Returns mem, or NULL. */
static Dwarf_Die *rh_cu_find(struct rh_symmod *m, uint64_t a, Dwarf_Die *mem, long *unit)
{
    *unit = -1;
    if (!m->dwarf)
        return NULL;
    if (!m->cus_built)
        rh_cu_build(m);
    uint64_t da = a - m->dwarf_bias;
    size_t lo = 0, hi = m->ncus;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->cus[mid].lo <= da)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* ranges of different CUs may overlap (they should not): look back a little */
    for (size_t i = lo, k = 0; i > 0 && k < 64 && m->cus_maxhi[i - 1] > da; i--, k++) {
        const struct rh_cu_range *r = &m->cus[i - 1];
        if (da < r->hi && dwarf_offdie(m->dwarf, m->units[r->unit].off, mem)) {
            *unit = r->unit;
            return mem;
        }
    }
    Dwarf_Addr bias;
    Dwarf_Die *d = dwfl_module_addrdie(m->mod, a, &bias);
    if (!d || bias != m->dwarf_bias)
        return NULL;
    *mem = *d;
    return mem;
}

/* ---- DWARF: the function index of one CU -------------------------------- */

#define RH_SYM_MAX_DEPTH 256 /* DIE nesting followed when indexing */

static int rh_cmp_frange(const void *a, const void *b)
{
    const struct rh_frange *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    if (x->hi != y->hi) /* the outer (longer) range first, so inner ones sort later */
        return x->hi > y->hi ? -1 : 1;
    if (x->depth != y->depth) /* the same code: the deeper (inlined) one later */
        return x->depth < y->depth ? -1 : 1;
    /* the same code at the same depth, aliases: the first in DIE order sorts
     * last and so is found, as dwarf_getscopes finds it */
    return x->node > y->node ? -1 : x->node < y->node;
}

/* Whether indexing descends into a DIE of this tag: places where a function with
 * code, or an inlined call, can be found. Types are skipped, which keeps the
 * walk short (libdw 0.188 takes an rwlock per abbreviation lookup, ~40 ns). */
static int rh_descend_tag(int tag)
{
    switch (tag) {
    case DW_TAG_compile_unit:
    case DW_TAG_partial_unit:
    case DW_TAG_skeleton_unit:
    case DW_TAG_namespace:
    case DW_TAG_module:
    case DW_TAG_subprogram:
    case DW_TAG_inlined_subroutine:
    case DW_TAG_lexical_block:
    case DW_TAG_try_block:
    case DW_TAG_catch_block:
    case DW_TAG_entry_point:
        return 1;
    default:
        return 0;
    }
}

/* Cuts from [*lo, *hi) the part that starts inside a range of node pv, the
 * previous function at the same level. Such siblings are aliases (gas describes
 * each symbol of an assembler function, e.g. memcpy inside memmove), and
 * dwarf_getscopes names an address after the first sibling containing it. */
static void rh_clip_sibling(const struct rh_unit *u, int32_t pv, uint64_t *lo, uint64_t hi)
{
    if (pv < 0)
        return;
    const struct rh_fnode *p = &u->nodes[pv];
    for (uint32_t i = 0; i < p->nrange; i++) {
        const struct rh_frange *r = &u->by_node[p->first + i];
        if (*lo >= r->lo && *lo < r->hi)
            *lo = r->hi < hi ? r->hi : hi;
    }
}

/* Walks one CU's DIE tree once and records every subprogram and
 * inlined_subroutine that has code, with its ranges and its enclosing function.
 * One walk per CU replaces a dwarf_getscopes walk per address: in libc that is
 * the difference between ~50 us and a few us per address. The walk is iterative
 * and bounded in depth. Returns 0, or -1 (then the unit is marked unusable and
 * addresses in it go through dwarf_getscopes). */
static int rh_unit_build(struct rh_unit *u, Dwarf_Die *cu)
{
    Dwarf_Die stack[RH_SYM_MAX_DEPTH];
    int32_t owner[RH_SYM_MAX_DEPTH]; /* innermost function node at each level */
    int32_t prev[RH_SYM_MAX_DEPTH];  /* last function node recorded at each level */
    size_t ncap = 0, rcap = 0;
    int depth = 0;
    if (dwarf_child(cu, &stack[0]) != 0)
        goto sort; /* no children: an empty index */
    owner[0] = -1;
    prev[0] = -1;
    for (;;) {
        Dwarf_Die *d = &stack[depth];
        int tag = dwarf_tag(d);
        int32_t fn = owner[depth];
        int descend = rh_descend_tag(tag);
        if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
            Dwarf_Addr base, lo, hi;
            ptrdiff_t it = 0;
            uint32_t first = (uint32_t)u->nranges, nr = 0;
            if (u->nnodes >= INT32_MAX)
                return -1;
            uint32_t node = (uint32_t)u->nnodes;
            while ((it = dwarf_ranges(d, it, &base, &lo, &hi)) > 0) {
                rh_clip_sibling(u, prev[depth], &lo, hi);
                if (lo >= hi)
                    continue;
                if (u->nranges >= UINT32_MAX ||
                    rh_sym_grow(&u->by_node, &rcap, u->nranges + 1, sizeof *u->by_node))
                    return -1;
                u->by_node[u->nranges++] = (struct rh_frange){lo, hi, node, (uint32_t)depth};
                nr++;
            }
            if (nr) {
                if (rh_sym_grow(&u->nodes, &ncap, u->nnodes + 1, sizeof *u->nodes))
                    return -1;
                struct rh_fnode *f = &u->nodes[u->nnodes++];
                memset(f, 0, sizeof *f);
                f->off = dwarf_dieoffset(d);
                f->parent = fn;
                f->first = first;
                f->nrange = nr;
                f->is_sub = tag == DW_TAG_subprogram;
                fn = (int32_t)node;
                prev[depth] = fn;
            } else {
                descend = 0; /* a declaration or abstract instance: no code inside */
            }
        }
        /* next DIE in pre-order: the first child, else the next sibling of this
         * or of the nearest ancestor that has one */
        if (descend && depth + 1 < RH_SYM_MAX_DEPTH && dwarf_haschildren(d) > 0 &&
            dwarf_child(d, &stack[depth + 1]) == 0) {
            owner[depth + 1] = fn;
            prev[depth + 1] = -1;
            depth++;
            continue;
        }
        for (;;) {
            int r = dwarf_siblingof(&stack[depth], &stack[depth]);
            if (r == 0)
                break; /* owner[depth] is unchanged for a sibling */
            if (r < 0 || depth == 0)
                goto sort; /* error or end of the CU: keep what was found */
            depth--;
        }
    }
sort:
    if (u->nranges) {
        u->sorted = malloc(u->nranges * sizeof *u->sorted);
        if (!u->sorted)
            return -1;
        memcpy(u->sorted, u->by_node, u->nranges * sizeof *u->sorted);
        qsort(u->sorted, u->nranges, sizeof *u->sorted, rh_cmp_frange);
    }
    return 0;
}

/* Returns the innermost function node of u whose ranges contain da (a DWARF
 * address), or -1. With properly nested ranges the innermost one is the last
 * range starting at or before da, or one of its enclosing functions. */
static int32_t rh_unit_lookup(const struct rh_unit *u, uint64_t da)
{
    size_t lo = 0, hi = u->nranges;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (u->sorted[mid].lo <= da)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return -1;
    int32_t node = (int32_t)u->sorted[lo - 1].node;
    /* parents have smaller indices than children, so this walk ends */
    while (node >= 0 && (size_t)node < u->nnodes) {
        const struct rh_fnode *f = &u->nodes[node];
        for (uint32_t i = 0; i < f->nrange; i++) {
            const struct rh_frange *r = &u->by_node[f->first + i];
            if (da >= r->lo && da < r->hi)
                return node;
        }
        if (RH_NEVER(f->parent >= node, "DWARF node %d has parent %d: parents come first",
                     node, f->parent))
            return -1;
        node = f->parent;
    }
    return -1;
}

/* ---- DWARF: names and frames --------------------------------------------- */

/* Returns the pooled function name of a subprogram or inlined_subroutine DIE:
 * the demangled linkage name when there is one, else DW_AT_name, both looked up
 * through DW_AT_abstract_origin and DW_AT_specification. NULL if it has none. */
static const char *rh_die_name(struct rh_symbolizer *s, Dwarf_Die *die)
{
    Dwarf_Attribute at;
    const char *n = NULL;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &at) ||
        dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &at))
        n = dwarf_formstring(&at);
    if (n && n[0])
        return rh_demangle(s, n);
    if (dwarf_attr_integrate(die, DW_AT_name, &at))
        n = dwarf_formstring(&at);
    return n && n[0] ? rh_intern(s, n) : NULL;
}

/* Reads DW_AT_call_file / DW_AT_call_line of an inlined_subroutine DIE: the place
 * in its caller where it was inlined. *file is pooled or NULL, *line 0 if unknown. */
static void rh_call_site(struct rh_symbolizer *s, Dwarf_Die *die, const char **file, int *line)
{
    Dwarf_Attribute at;
    Dwarf_Word w;
    *file = NULL;
    *line = 0;
    if (dwarf_attr(die, DW_AT_call_line, &at) && dwarf_formudata(&at, &w) == 0 && w <= INT32_MAX)
        *line = (int)w;
    if (dwarf_attr(die, DW_AT_call_file, &at) && dwarf_formudata(&at, &w) == 0) {
        Dwarf_Die cu;
        Dwarf_Files *files;
        size_t nfiles;
        if (dwarf_diecu(die, &cu, NULL, NULL) && dwarf_getsrcfiles(&cu, &files, &nfiles) == 0 &&
            w < nfiles)
            *file = rh_intern(s, dwarf_filesrc(files, w, NULL, NULL));
    }
}

static int rh_is_func(Dwarf_Die *d)
{
    int t = dwarf_tag(d);
    return t == DW_TAG_subprogram || t == DW_TAG_inlined_subroutine;
}

/* Fills the frames of the inline chain starting at node (innermost) from the
 * unit's index; name and call site of each node are looked up once and kept.
 * Frame 0 gets file/line from the line table. Returns the number of frames. */
static int rh_chain_index(struct rh_symbolizer *s, struct rh_symmod *m, struct rh_unit *u,
                          int32_t node, const char *file, int line, struct rh_sym_frame *out,
                          int max)
{
    int n = 0;
    while (node >= 0 && (size_t)node < u->nnodes && n < max) {
        struct rh_fnode *f = &u->nodes[node];
        if (!f->named || (!f->is_sub && !f->called)) {
            Dwarf_Die d;
            if (dwarf_offdie(m->dwarf, f->off, &d)) {
                if (!f->named)
                    f->name = rh_die_name(s, &d);
                if (!f->is_sub && !f->called)
                    rh_call_site(s, &d, &f->call_file, &f->call_line);
            }
            f->named = f->called = 1;
        }
        out[n].file = file;
        out[n].line = line;
        out[n].sym = f->name;
        out[n].inlined = 1;
        out[n].chain_cut = 0;
        n++;
        if (f->is_sub || f->parent >= node)
            return n; /* the real function: the chain ends here */
        if (n == max) {
            out[n - 1].chain_cut = 1; /* the cap: the callers are not shown */
            return n;
        }
        file = f->call_file;
        line = f->call_line;
        node = f->parent;
    }
    return n;
}

/* The chain the way eu-addr2line finds it: dwarf_getscopes for the innermost
 * function scope at da, then dwarf_getscopes_die on it for its callers. Walks
 * the CU's DIE tree on every call, so it is only the fallback for a CU that has
 * no index (found through .debug_aranges only, or indexing failed). */
static int rh_chain_scopes(struct rh_symbolizer *s, Dwarf_Die *cu, uint64_t da, const char *file,
                           int line, struct rh_sym_frame *out, int max)
{
    int n = 0;
    Dwarf_Die *scopes = NULL;
    int ns = dwarf_getscopes(cu, da, &scopes);
    Dwarf_Die inner;
    int have_inner = 0;
    for (int i = 0; i < ns; i++) {
        if (rh_is_func(&scopes[i])) {
            inner = scopes[i];
            have_inner = 1;
            break;
        }
    }
    free(scopes);
    if (!have_inner)
        return 0;
    Dwarf_Die *chain = NULL;
    int nc = dwarf_getscopes_die(&inner, &chain);
    Dwarf_Die *funcs = chain;
    if (nc <= 0) { /* cannot walk outwards: report the innermost alone */
        free(chain);
        chain = NULL;
        funcs = &inner;
        nc = 1;
    }
    for (int i = 0; i < nc && n < max; i++) {
        Dwarf_Die *d = &funcs[i];
        if (!rh_is_func(d))
            continue;
        out[n].file = file;
        out[n].line = line;
        out[n].sym = rh_die_name(s, d);
        out[n].inlined = 1;
        out[n].chain_cut = 0;
        n++;
        if (dwarf_tag(d) == DW_TAG_subprogram)
            break; /* the real function: the chain ends here */
        if (n == max) {
            out[n - 1].chain_cut = 1; /* the cap: the callers are not shown */
            break;
        }
        rh_call_site(s, d, &file, &line);
    }
    free(chain);
    return n;
}

/* Resolves a (Dwfl address, already minus 1) in a ready module into frames,
 * innermost first, filling out[0..max) with module/rel_addr preset by the caller.
 * Returns the number of frames (>= 1). */
static int rh_resolve_in_module(struct rh_symbolizer *s, struct rh_symmod *m, uint64_t a,
                                struct rh_sym_frame *out, int max)
{
    const char *file = NULL;
    int line = 0;
    int n = 0;
    Dwarf_Die cu_mem;
    long ui;
    Dwarf_Die *cu = rh_cu_find(m, a, &cu_mem, &ui);
    if (cu) {
        uint64_t da = a - m->dwarf_bias;
        Dwarf_Line *ln = dwarf_getsrc_die(cu, da);
        int lineno = 0;
        if (ln && dwarf_lineno(ln, &lineno) == 0 && lineno > 0) {
            file = rh_intern(s, dwarf_linesrc(ln, NULL, NULL));
            line = lineno;
        }
        struct rh_unit *u = ui >= 0 ? &m->units[ui] : NULL;
#ifdef RH_SYM_FORCE_SCOPES /* tests compare the index with libdw's own walk */
        u = NULL;
#endif
        if (u && u->state == 0)
            u->state = rh_unit_build(u, cu) == 0 ? 1 : -1;
        if (u && u->state == 1) {
            int32_t node = rh_unit_lookup(u, da);
            if (node >= 0)
                n = rh_chain_index(s, m, u, node, file, line, out, max);
        } else {
            n = rh_chain_scopes(s, cu, da, file, line, out, max);
        }
        /* The outermost frame is the real function, unless the chain was cut
         * at the cap: then it stays an inlined frame, never a real call. */
        if (n > 0 && !out[n - 1].chain_cut) {
            out[n - 1].inlined = 0;
            /* an outermost function without a DWARF name (rare) */
            if (!out[n - 1].sym) {
                const char *raw = rh_symtab_lookup(m, a);
                out[n - 1].sym = raw ? rh_demangle(s, raw) : NULL;
            }
        }
    }
    if (n == 0) {
        const char *raw = rh_symtab_lookup(m, a);
        out[0].file = file;
        out[0].line = line;
        out[0].sym = raw ? rh_demangle(s, raw) : NULL;
        out[0].inlined = 0;
        n = 1;
    }
    return n;
}

/* ---- the per-address cache and the public entry points ------------------ */

/* Stores frames for addr in the cache. Returns 0, or -1 on out-of-memory (the
 * result is then simply not cached). */
static int rh_cache_put(struct rh_symbolizer *s, uint64_t addr, const struct rh_sym_frame *f,
                        int n)
{
    if (s->nframes + (size_t)n > UINT32_MAX)
        return -1;
    if ((s->cache_n + 1) * 4 > s->cache_cap * 3) {
        size_t ncap = s->cache_cap ? s->cache_cap * 2 : 4096;
        struct rh_addr_ent *nc = calloc(ncap, sizeof *nc);
        if (!nc)
            return -1;
        for (size_t i = 0; i < s->cache_cap; i++) {
            if (!s->cache[i].count)
                continue;
            size_t j = rh_hash_u64(s->cache[i].addr) & (ncap - 1);
            while (nc[j].count)
                j = (j + 1) & (ncap - 1);
            nc[j] = s->cache[i];
        }
        free(s->cache);
        s->cache = nc;
        s->cache_cap = ncap;
    }
    if (rh_sym_grow(&s->frames, &s->capframes, s->nframes + (size_t)n, sizeof *s->frames))
        return -1;
    memcpy(s->frames + s->nframes, f, (size_t)n * sizeof *f);
    size_t j = rh_hash_u64(addr) & (s->cache_cap - 1);
    while (s->cache[j].count)
        j = (j + 1) & (s->cache_cap - 1);
    s->cache[j] = (struct rh_addr_ent){addr, (uint32_t)s->nframes, (uint32_t)n};
    s->nframes += (size_t)n;
    s->cache_n++;
    return 0;
}

int rh_sym_resolve(struct rh_symbolizer *s, uint64_t addr, struct rh_sym_frame *out, int max)
{
    if (max < 1 || !out)
        return 0;
    if (!s) {
        out[0] = (struct rh_sym_frame){NULL, addr, NULL, 0, NULL, 0, 0};
        return 1;
    }
    if (s->cache_cap) {
        size_t j = rh_hash_u64(addr) & (s->cache_cap - 1);
        while (s->cache[j].count) {
            if (s->cache[j].addr == addr) {
                int n = (int)s->cache[j].count < max ? (int)s->cache[j].count : max;
                memcpy(out, s->frames + s->cache[j].first, (size_t)n * sizeof *out);
                return n;
            }
            j = (j + 1) & (s->cache_cap - 1);
        }
    }

    struct rh_sym_frame fr[RH_SYM_MAX_CHAIN];
    int n = 1;
    struct rh_symmod *m = rh_find_module(s, addr);
    fr[0] = (struct rh_sym_frame){NULL, addr, NULL, 0, NULL, 0, 0};
    if (m) {
        if (m->state == RH_MOD_UNLOADED)
            rh_mod_load(s, m);
        fr[0].module = m->path;
        fr[0].rel_addr = addr - m->base;
        if (m->state == RH_MOD_READY && addr > 0) {
            n = rh_resolve_in_module(s, m, addr - 1, fr, RH_SYM_MAX_CHAIN);
            for (int i = 1; i < n; i++) {
                fr[i].module = fr[0].module;
                fr[i].rel_addr = fr[0].rel_addr;
            }
        }
    }
    rh_cache_put(s, addr, fr, n);
    if (n > max)
        n = max;
    memcpy(out, fr, (size_t)n * sizeof *out);
    return n;
}

void rh_sym_free(struct rh_symbolizer *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nmods; i++) {
        struct rh_symmod *m = &s->mods[i];
        if (m->dwfl)
            dwfl_end(m->dwfl);
        free(m->symtab);
        for (size_t u = 0; u < m->nunits; u++) {
            free(m->units[u].nodes);
            free(m->units[u].by_node);
            free(m->units[u].sorted);
        }
        free(m->units);
        free(m->cus);
        free(m->cus_maxhi);
        free(m->build_id);
        free(m->ranges);
    }
    free(s->mods);
    free(s->mod_index);
    free(s->segs);
    free(s->cache);
    free(s->frames);
    for (size_t i = 0; i < s->nblocks; i++)
        free(s->blocks[i]);
    free(s->blocks);
    free(s->pool);
    free(s);
}
