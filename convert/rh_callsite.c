/* rh_callsite.c: call sites past system code and allocator layers.
 *
 * A stack's call site is its first frame (from frame 0 outward) that is
 * neither system code nor an allocator wrapper (docs/call-sites.md).
 *
 * System code (rh_cs_system) is decided by where a frame's code comes from,
 * never by its name: source under /usr/include (the C++ standard library's
 * headers, /usr/include/c++/N, inlined into the program) or the compiler's
 * /usr/lib/gcc; the C and C++ runtime's shared modules (libc, libstdc++,
 * libgcc_s, libm, the loader); and code without a source line in a module
 * that has source lines elsewhere (libstdc++.a and libc.a linked into a
 * program built with debug info). A stack's system frames before its first
 * frame of the program's own code (its base) are never its call site; a
 * stack of system code only keeps the rule below over all its frames. Each
 * group passed over gets one skipped_functions row
 * ("/usr/include/c++/12 (system headers)", "libc.so.6 (system library)").
 *
 * From the base, the rule looks only at the shape of the distinct stacks:
 *
 *   A function F is a wrapper when, over every stack that passes through F
 *   (counting F's innermost frame in each):
 *     1. F has a name (a library frame without one is named by its module
 *        and address) and is not `main`, some frame calls it (it is never a
 *        stack's outermost frame) and it never calls itself (a recursive
 *        function is the work, not a wrapper);
 *     2. F allocates from one place per allocation function: all those
 *        stacks of one kind leave F at the same file and line. A layer
 *        function (below) of the upper level (never in frame 0's file) may
 *        instead branch to different functions (nginx's ngx_palloc: the
 *        small path or the large one); two calls of one function at two
 *        lines are two allocations, a call site;
 *     3. F is called from at least RH_WRAP_MIN_CALLERS (3) distinct
 *        functions, or only from functions that are themselves wrappers
 *        (a pool's refill under its pool_alloc; zmalloc's internal realloc
 *        under zrealloc and ztryrealloc). A caller without a name counts once
 *        per address;
 *     4. or F is an allocator layer's entry point: F is a layer function --
 *        in a layer file (one that holds a wrapper by rules 1-3, pass 1),
 *        and every frame below it in its own file or in frame 0's file,
 *        itself a layer file (two levels: a pool over its allocation file)
 *        -- that meets rules 1 and 2 and has no caller in its own file:
 *        Redis's zrealloc_usable, nginx's ngx_create_pool
 *        (called from ngx_event_accept and ngx_http_alloc_request, reaching
 *        posix_memalign through ngx_alloc.c), or xcalloc and xstrdup in
 *        xmalloc's file, each with one caller, whether they forward to
 *        xmalloc or call calloc and strdup themselves (git's wrapper.c: the
 *        file's functions are its layer's entry points). ngx_memalign
 *        under ngx_create_pool and the block refill is then a wrapper by
 *        rule 3: the pool is one layer.
 *   A stack's call site is its first frame from the base whose function is
 *   not a wrapper and that has a symbol: a library frame without one (a
 *   stripped library's static function) is passed over to the first named
 *   frame, usually the library's exported entry; skipped_functions gets one
 *   row per module for them, "MODULE (no symbol)". The walk never steps from
 *   the program's code into system code: when every frame of the program
 *   wraps (a thread's routine over its helpers), its outermost one is the
 *   site, not start_thread.
 *
 * So Lua's l_alloc (one realloc call, reached from luaM_malloc_, luaM_realloc_
 * and lua_newstate), the luaM_ functions and luaC_newobj above it are
 * skipped, an xmalloc called from many functions is skipped, and a function
 * that allocates at two lines (example.c's parse_line) or is called from one
 * or two functions of its own file stays a call site (a one-file program's
 * helpers never become a layer). An inlined copy of a function is the same
 * function (by name), so it is skipped with it. The result is stored as
 * stacks.callsite (a frame_no of backtraces), and the skipped functions in
 * skipped_functions, so SQL sees the same call sites as the rheaper command.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rh_db.h"
#include "rh_util.h"

#define RH_WRAP_MIN_CALLERS 3

struct rh_cs_frame {
    int32_t fn;    /* function index, -1: no name */
    int32_t place; /* interned "file:line" of this frame */
    int32_t file;  /* interned source file, -1: none (no debug info) */
    int32_t anon;  /* a library frame without a symbol (named module+address) */
    int32_t no;    /* its backtraces.frame_no */
    int32_t sys;   /* system code (rh_cs_system): its group in sysnames, -1: not */
    uint64_t addr; /* its address (an inline chain shares one) */
    int inlined;
};

struct rh_cs_stack {
    int64_t id;
    size_t first; /* index into frames */
    uint32_t n;
    uint32_t base; /* its first frame that is not system code (0 when all are) */
    int32_t kind;  /* interned allocation function (stacks.kind) */
};

/* Per function: its one place per allocation kind (or -2 for several), its
 * caller places. */
struct rh_cs_fn {
    char *name;
    int32_t place;       /* -1: not seen yet, -2: several for one kind */
    int32_t file;        /* its source file: -1 none or not seen, -2 several */
    int frame0;          /* some stack's frame 0: it calls the allocation itself */
    int caller_same_file; /* some caller is in its own file */
    int anon;            /* a library frame without a symbol, named module+address */
    /* the kinds seen, and the one place of each and the function called
     * there (-1: the allocator); as many as the function serves (a pool's
     * annotation wrapper serves every pool's kind) */
    int32_t *kinds, *kplaces, *kcallee;
    size_t capkinds;
    int multi_same;      /* two places of one kind call the same function */
    int in_f0file;       /* some stack has it in frame 0's file (the lower level) */
    int below_nonlayer;  /* some frame below it is outside the layer files (pass 2) */
    int nkinds;
    int32_t caller_fn;   /* the function of the first caller place */
    int32_t caller[4];   /* distinct callers (interned function, or place if unnamed) */
    int32_t caller_fns[4]; /* the same callers' function indices (-1: unnamed) */
    int ncallers;        /* how many, counted up to 4 */
    int root;            /* the outermost frame of some stack */
    int recursive;       /* called by itself in some stack */
    int state;           /* 0 unknown, 1 wrapper, 2 not, 3 being decided */
    int forced;          /* matches the reader's --skip-function: a wrapper by declaration */
    int64_t nstacks;     /* stacks in which it was skipped */
};

/* A small string interner (open addressing). */
struct rh_cs_names {
    char **s;
    int32_t n, cap;
    int32_t *slot;
    uint32_t nslot;
};

static uint64_t rh_cs_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

/* Interns s. Returns its index, or -1 on out of memory. */
static int32_t rh_cs_intern(struct rh_cs_names *t, const char *s)
{
    if ((uint32_t)t->n * 2 >= t->nslot) {
        uint32_t ns = t->nslot ? t->nslot * 2 : 1024;
        int32_t *slot = malloc(ns * sizeof *slot);
        if (!slot)
            return -1;
        memset(slot, 0xff, ns * sizeof *slot);
        for (int32_t i = 0; i < t->n; i++) {
            uint32_t k = (uint32_t)rh_cs_hash(t->s[i]) & (ns - 1);
            while (slot[k] >= 0)
                k = (k + 1) & (ns - 1);
            slot[k] = i;
        }
        free(t->slot);
        t->slot = slot;
        t->nslot = ns;
    }
    uint32_t k = (uint32_t)rh_cs_hash(s) & (t->nslot - 1);
    while (t->slot[k] >= 0) {
        if (!strcmp(t->s[t->slot[k]], s))
            return t->slot[k];
        k = (k + 1) & (t->nslot - 1);
    }
    if (t->n == t->cap) {
        int32_t nc = t->cap ? t->cap * 2 : 256;
        char **ns = realloc(t->s, (size_t)nc * sizeof *ns);
        if (!ns)
            return -1;
        t->s = ns;
        t->cap = nc;
    }
    char *d = strdup(s);
    if (!d)
        return -1;
    t->s[t->n] = d;
    t->slot[k] = t->n;
    return t->n++;
}

static void rh_cs_names_free(struct rh_cs_names *t)
{
    for (int32_t i = 0; i < t->n; i++)
        free(t->s[i]);
    free(t->s);
    free(t->slot);
}

struct rh_cs {
    struct rh_cs_names fnames, places, callers, kinds, files, sysnames, sysmods;
    int64_t *sysstacks;   /* per system group: stacks whose frames it held before the site */
    unsigned char *layer; /* per file: holds a wrapper by rules 1-3 (pass 2) */
    int pass;             /* 1: rules 1-3; 2: rule 4 as well */
    struct rh_cs_fn *fn; /* indexed like fnames */
    int32_t capfn;
    struct rh_cs_stack *st;
    size_t nst, capst;
    struct rh_cs_frame *fr;
    size_t nfr, capfr;
    /* the reader's --skip-function (rh_callsite_compute), or NULL */
    int (*skip)(void *arg, const char *sym);
    void *skip_arg;
};

/* Decides whether function f is a wrapper (rule 3 may ask about its caller). */
static int rh_cs_is_wrapper(struct rh_cs *c, int32_t f, int depth)
{
    struct rh_cs_fn *F = &c->fn[f];
    if (F->state == 1 || F->state == 2)
        return F->state == 1;
    if (F->forced) {
        F->state = 1;
        return 1;
    }
    if (F->state == 3 || depth > 64)
        return 0; /* recursion: not a wrapper */
    F->state = 3;
    /* a function of the allocator layer: in a layer file (one that holds a
     * wrapper by rules 1-3), and every frame below it in its own file or in
     * frame 0's, a layer file (pass 2). It may call the allocator itself: a
     * wrapper file's xcalloc that calls calloc is as much an entry point of
     * its layer as one that forwards to the file's many-caller xmalloc */
    int deep = c->pass == 2 && F->file >= 0 && c->layer[F->file] && !F->below_nonlayer;
    /* rule 2: one place per kind; a layer function of the upper level (a
     * file above frame 0's: ngx_palloc.c over ngx_alloc.c) may branch to
     * different functions (ngx_palloc: the small or the large path), but two
     * calls of one function stay two allocations, and in a one-file program
     * (a thread's routine over its helpers and xmalloc) nothing branches */
    int w = !F->root && !F->recursive && strcmp(F->name, "main") != 0 &&
            (F->place >= 0 ||
             (F->place == -2 && deep && !F->multi_same && !F->in_f0file));
    /* rule 4: an entry point of an allocator layer, reached from outside its
     * file (ngx_create_pool under ngx_event_accept; xcalloc over xmalloc in
     * their own file, with one caller) */
    int layer = w && deep && !F->caller_same_file;
    if (w && !layer && F->ncallers < RH_WRAP_MIN_CALLERS) {
        /* fewer callers: a wrapper only when every one of them is a wrapper */
        for (int k = 0; k < F->ncallers && w; k++)
            w = F->caller_fns[k] >= 0 && F->caller_fns[k] != f &&
                rh_cs_is_wrapper(c, F->caller_fns[k], depth + 1);
    }
    F->state = w ? 1 : 2;
    return w;
}

/* Looks s up without interning it. Returns its index or -1. */
static int32_t rh_cs_find(const struct rh_cs_names *t, const char *s)
{
    if (!t->nslot)
        return -1;
    uint32_t k = (uint32_t)rh_cs_hash(s) & (t->nslot - 1);
    while (t->slot[k] >= 0) {
        if (!strcmp(t->s[t->slot[k]], s))
            return t->slot[k];
        k = (k + 1) & (t->nslot - 1);
    }
    return -1;
}

static int rh_cs_prefix(const char *s, const char *p)
{
    return s && !strncmp(s, p, strlen(p));
}

/* System code: a frame of the C and C++ runtime rather than of the program,
 * decided by where the frame's code comes from, never by its name:
 *   - source in the system's include directories (/usr/include, with the C++
 *     standard library's headers under /usr/include/c++/N, and the compiler's
 *     own headers under /usr/lib/gcc): templates and inline functions of the
 *     standard library compiled into the program;
 *   - the C and C++ runtime's shared modules: libc, libstdc++, libgcc_s, libm
 *     and the loader;
 *   - no source line in a module that has source lines elsewhere: code linked
 *     in from a static archive without debug info (libstdc++.a's
 *     basic_string::_M_create, libc.a's stdio) into a program built with them.
 * Returns the frame's group (interned in c->sysnames, the name that
 * skipped_functions shows), -1 for the program's own code, -2 on out of
 * memory. */
static int32_t rh_cs_system(struct rh_cs *c, const char *file, const char *module)
{
    char g[400];
    const char *base = module ? strrchr(module, '/') : NULL;
    base = base ? base + 1 : module;
    if (rh_cs_prefix(file, "/usr/include/") || rh_cs_prefix(file, "/usr/lib/gcc/")) {
        size_t n = 12; /* "/usr/include", "/usr/lib/gcc" */
        if (rh_cs_prefix(file, "/usr/include/c++/")) {
            const char *e = strchr(file + 17, '/');
            n = e ? (size_t)(e - file) : strlen(file);
        }
        snprintf(g, sizeof g, "%.*s (system headers)", (int)n, file);
    } else if (rh_cs_prefix(base, "libc.so.") || rh_cs_prefix(base, "libstdc++.so.") ||
               rh_cs_prefix(base, "libgcc_s.so.") || rh_cs_prefix(base, "libm.so.") ||
               rh_cs_prefix(base, "ld-linux")) {
        snprintf(g, sizeof g, "%s (system library)", base);
    } else if (!file && module && rh_cs_find(&c->sysmods, module) >= 0) {
        snprintf(g, sizeof g, "%s (code without debug info)", base);
    } else {
        return -1;
    }
    int32_t i = rh_cs_intern(&c->sysnames, g);
    return i < 0 ? -2 : i;
}

/* Reads every stack's frames from backtraces. Returns 0 or -1. */
static int rh_cs_load(struct rh_cs *c, sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    /* the modules that have source lines (rh_cs_system) */
    if (sqlite3_prepare_v2(db, "SELECT DISTINCT module FROM backtraces WHERE file IS NOT NULL"
                               " AND module IS NOT NULL",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW)
        if (rh_cs_intern(&c->sysmods, (const char *)sqlite3_column_text(st, 0)) < 0) {
            sqlite3_finalize(st);
            return -1;
        }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT id, sym, coalesce(file, module, '?') || ':' ||"
                           " coalesce(line, address, 0), file IS NULL AND module IS NOT NULL, module, address,"
                           " (SELECT coalesce(s.kind, '?') FROM stacks s WHERE s.id = b.id), file, inlined, frame_no"
                           /* mmap/mallopt stacks and CPU samples'
                            * stacks are not allocations: their call
                            * site is frame 0 */
                           " FROM backtraces b WHERE coalesce((SELECT s.kind FROM stacks s"
                           " WHERE s.id = b.id), '') NOT IN ('mmap', 'munmap', 'mremap', 'mallopt', 'cpu')"
                           " ORDER BY id, frame_no",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        const char *sym = (const char *)sqlite3_column_text(st, 1);
        const char *place = (const char *)sqlite3_column_text(st, 2);
        /* A library frame without a symbol (a static function of a stripped
         * library: SQLite's sqlite3MemMalloc) is a function of its own, named
         * by its place, so the rule can see through it like a named one. */
        char anon[256];
        int is_anon = 0;
        if (!sym && sqlite3_column_int(st, 3)) {
            is_anon = 1;
            const char *mod = (const char *)sqlite3_column_text(st, 4);
            const char *base = mod ? strrchr(mod, '/') : NULL;
            snprintf(anon, sizeof anon, "%s+0x%llx", base ? base + 1 : mod ? mod : "?",
                     (unsigned long long)sqlite3_column_int64(st, 5));
            sym = anon;
        }
        if (!c->nst || c->st[c->nst - 1].id != id) {
            if (rh_grow(&c->st, &c->capst, c->nst + 1, sizeof *c->st))
                goto oom;
            const char *kind = (const char *)sqlite3_column_text(st, 6);
            int32_t ki = rh_cs_intern(&c->kinds, kind ? kind : "?");
            if (ki < 0)
                goto oom;
            c->st[c->nst++] = (struct rh_cs_stack){id, c->nfr, 0, 0, ki};
        }
        if (rh_grow(&c->fr, &c->capfr, c->nfr + 1, sizeof *c->fr))
            goto oom;
        /* gcc can inline a copy of a function into itself (SQLite's
         * sqlite3Malloc): an inlined frame followed by a frame of the same
         * function at the same address is one frame, the inner one */
        if (sym && c->nfr && c->st[c->nst - 1].n) {
            const struct rh_cs_frame *pv = &c->fr[c->nfr - 1];
            if (pv->inlined && pv->fn >= 0 && pv->addr == (uint64_t)sqlite3_column_int64(st, 5) &&
                !strcmp(c->fnames.s[pv->fn], sym))
                continue;
        }
        int32_t fi = -1, pi = rh_cs_intern(&c->places, place ? place : "?");
        if (pi < 0)
            goto oom;
        const char *file = (const char *)sqlite3_column_text(st, 7);
        int32_t fli = file ? rh_cs_intern(&c->files, file) : -1;
        if (file && fli < 0)
            goto oom;
        int32_t sys = rh_cs_system(c, file, (const char *)sqlite3_column_text(st, 4));
        if (sys == -2)
            goto oom;
        if (sym) {
            fi = rh_cs_intern(&c->fnames, sym);
            if (fi < 0)
                goto oom;
            if (fi >= c->capfn) {
                int32_t nc = c->capfn ? c->capfn * 2 : 256;
                while (nc <= fi)
                    nc *= 2;
                struct rh_cs_fn *nf = realloc(c->fn, (size_t)nc * sizeof *nf);
                if (!nf)
                    goto oom;
                memset(nf + c->capfn, 0, (size_t)(nc - c->capfn) * sizeof *nf);
                c->fn = nf;
                c->capfn = nc;
            }
            if (!c->fn[fi].name) {
                c->fn[fi].name = c->fnames.s[fi];
                c->fn[fi].place = -1;
                c->fn[fi].file = fli;
                c->fn[fi].caller_fn = -1;
                c->fn[fi].anon = is_anon;
                c->fn[fi].forced = c->skip && c->skip(c->skip_arg, sym) == 1;
            } else if (c->fn[fi].file != fli) {
                c->fn[fi].file = -2;
            }
        }
        c->fr[c->nfr++] = (struct rh_cs_frame){fi,
                                               pi,
                                               fli,
                                               is_anon,
                                               sqlite3_column_int(st, 9),
                                               sys,
                                               (uint64_t)sqlite3_column_int64(st, 5),
                                               sqlite3_column_int(st, 8)};
        c->st[c->nst - 1].n++;
    }
    sqlite3_finalize(st);
    /* each stack's first frame of the program's own code: the system frames
     * before it are never its call site; a stack of system code only keeps
     * them all. Frames the reader skips (--skip-function) before that frame
     * are the allocator too: the rule then sees the stack as starting above
     * them, so the wrappers over them are recomputed (palloc over a skipped
     * AllocSetAlloc) */
    for (size_t s = 0; s < c->nst; s++) {
        const struct rh_cs_frame *fr = c->fr + c->st[s].first;
        uint32_t b = 0;
        while (b < c->st[s].n && (fr[b].sys >= 0 || (fr[b].fn >= 0 && c->fn[fr[b].fn].forced)))
            b++;
        c->st[s].base = b < c->st[s].n ? b : 0;
    }
    return rc == SQLITE_DONE ? 0 : -1;
oom:
    sqlite3_finalize(st);
    return -1;
}

/* Collects places and callers of each function over all stacks, from each
 * stack's first frame of the program's own code (its base). */
static int rh_cs_observe(struct rh_cs *c)
{
    char buf[64];
    for (size_t s = 0; s < c->nst; s++) {
        uint32_t base = c->st[s].base;
        const struct rh_cs_frame *fr = c->fr + c->st[s].first + base;
        uint32_t n = c->st[s].n - base;
        for (uint32_t p = 0; p < n; p++) {
            int32_t f = fr[p].fn;
            if (f < 0)
                continue;
            int seen = 0; /* only a function's innermost frame in a stack counts */
            for (uint32_t q = 0; q < p && !seen; q++)
                seen = fr[q].fn == f;
            if (seen)
                continue;
            struct rh_cs_fn *F = &c->fn[f];
            if (!p)
                F->frame0 = 1;
            if (fr[p].file >= 0 && fr[p].file == fr[0].file)
                F->in_f0file = 1;
            if (p + 1 < n && fr[p].file >= 0 && fr[p + 1].file == fr[p].file)
                F->caller_same_file = 1;
            /* one place per kind: a realloc wrapper's malloc for NULL and its
             * realloc are two kinds, each from one place */
            int32_t callee = p ? fr[p - 1].fn : -1;
            int k = 0;
            while (k < F->nkinds && F->kinds[k] != c->st[s].kind)
                k++;
            if (k == F->nkinds) {
                size_t cap = F->capkinds;
                if (rh_grow(&F->kinds, &cap, (size_t)k + 1, sizeof *F->kinds) ||
                    (cap = F->capkinds,
                     rh_grow(&F->kplaces, &cap, (size_t)k + 1, sizeof *F->kplaces)) ||
                    (cap = F->capkinds,
                     rh_grow(&F->kcallee, &cap, (size_t)k + 1, sizeof *F->kcallee)))
                    return -1;
                F->capkinds = cap;
                F->kinds[k] = c->st[s].kind;
                F->kplaces[k] = fr[p].place;
                F->kcallee[k] = callee;
                F->nkinds++;
                if (F->place != -2)
                    F->place = fr[p].place;
            } else if (F->kplaces[k] != fr[p].place) {
                F->place = -2;
                if (F->kcallee[k] == callee)
                    F->multi_same = 1;
            }
            if (p + 1 == n) {
                F->root = 1;
                continue;
            }
            for (uint32_t q = p + 1; q < n && !F->recursive; q++)
                F->recursive = fr[q].fn == f;
            if (fr[p + 1].fn >= 0)
                snprintf(buf, sizeof buf, "f%d", fr[p + 1].fn);
            else
                snprintf(buf, sizeof buf, "p%d", fr[p + 1].place);
            int32_t cp = rh_cs_intern(&c->callers, buf);
            if (cp < 0)
                return -1;
            int known = 0;
            for (int k = 0; k < F->ncallers && !known; k++)
                known = F->caller[k] == cp;
            if (!known && F->ncallers < 4) {
                if (!F->ncallers)
                    F->caller_fn = fr[p + 1].fn;
                F->caller_fns[F->ncallers] = fr[p + 1].fn;
                F->caller[F->ncallers++] = cp;
            }
        }
    }
    return 0;
}

/* Marks the functions that are not layer functions by their frames below
 * (pass 2: c->layer is known). A layer has two levels at most: frame 0's file
 * (the functions that call the allocator: nginx's ngx_alloc.c, the file of
 * xmalloc) and the file of the functions above it (ngx_palloc.c). Below a
 * layer function, every frame is in its own file or in frame 0's file, and
 * frame 0's file is a layer file. Lua's luaH_resize (ltable.c, over lmem.c
 * over lauxlib.c's l_alloc) is three levels of the interpreter, not a pool. */
static void rh_cs_layer_depth(struct rh_cs *c)
{
    for (size_t s = 0; s < c->nst; s++) {
        uint32_t base = c->st[s].base;
        const struct rh_cs_frame *fr = c->fr + c->st[s].first + base;
        uint32_t n = c->st[s].n - base, a = 0, b;
        int32_t f0 = fr[0].file;
        if (f0 >= 0 && c->layer[f0]) {
            while (a < n && fr[a].file == f0)
                a++;
            b = a;
            while (b < n && fr[a].file >= 0 && fr[b].file == fr[a].file)
                b++;
        } else {
            b = 0;
        }
        /* frames 0..b-1 are the two runs; a function above them has a frame
         * of a third file below it */
        for (uint32_t p = b; p < n; p++)
            if (fr[p].fn >= 0)
                c->fn[fr[p].fn].below_nonlayer = 1;
    }
}

/* The rule over every stack of db: calls site(arg, stack id, frame_no) for
 * each allocation stack (with every_stack, also for those whose site is
 * frame 0) and passed(arg, name, callers, stacks) once per function or
 * system group passed over. skip, when not NULL, names functions that are
 * wrappers by the reader's declaration (--skip-function). Returns 0, or -1
 * (out of memory, SQLite error, or a callback's -1). */
static int rh_cs_run(sqlite3 *db, int (*skip)(void *, const char *), void *skip_arg,
                     int every_stack, int (*site)(void *, int64_t, int64_t),
                     int (*passed)(void *, const char *, int64_t, int64_t), void *arg)
{
    struct rh_cs c;
    memset(&c, 0, sizeof c);
    c.skip = skip;
    c.skip_arg = skip_arg;
    int rc = -1;
    if (rh_cs_load(&c, db) || rh_cs_observe(&c))
        goto out;
    /* pass 1: rules 1-3; the files of their wrappers are allocator layers
     * (a function skipped by declaration makes no layer: it is the reader's
     * word, not the program's shape) */
    c.pass = 1;
    c.layer = calloc((size_t)c.files.n + 1, 1);
    if (!c.layer)
        goto out;
    for (int32_t f = 0; f < c.fnames.n; f++)
        if (rh_cs_is_wrapper(&c, f, 0) && c.fn[f].file >= 0 && !c.fn[f].forced)
            c.layer[c.fn[f].file] = 1;
    /* pass 2: rule 4 too, and rule 3 again over callers that rule 4 made
     * wrappers; pass 1's wrappers stay */
    c.pass = 2;
    rh_cs_layer_depth(&c);
    for (int32_t f = 0; f < c.fnames.n; f++)
        if (c.fn[f].state != 1)
            c.fn[f].state = 0;
    c.sysstacks = calloc((size_t)c.sysnames.n + 1, sizeof *c.sysstacks);
    if (!c.sysstacks)
        goto out;
    for (size_t s = 0; s < c.nst; s++) {
        const struct rh_cs_frame *fr = c.fr + c.st[s].first;
        uint32_t p = c.st[s].base;
        /* the system groups passed over, each once per stack, and the
         * functions skipped by declaration below the base */
        for (uint32_t q = 0; q < p; q++) {
            if (fr[q].sys < 0) {
                if (fr[q].fn >= 0)
                    c.fn[fr[q].fn].nstacks++;
                continue;
            }
            int dup = 0;
            for (uint32_t r = 0; r < q && !dup; r++)
                dup = fr[r].sys == fr[q].sys;
            if (!dup)
                c.sysstacks[fr[q].sys]++;
        }
        /* a library frame without a symbol is never the call site: the walk
         * goes on to the first named frame (a stripped library's exported
         * entry, sqlite3_step) */
        /* ... and never steps from the program's code into system code: a
         * thread's routine that only wraps stays above start_thread */
        while (p + 1 < c.st[s].n && fr[p].fn >= 0 && fr[p + 1].sys < 0 &&
               (fr[p].anon || rh_cs_is_wrapper(&c, fr[p].fn, 0))) {
            c.fn[fr[p].fn].nstacks++;
            p++;
        }
        if (!fr[p].no && !every_stack)
            continue;
        if (site(arg, c.st[s].id, fr[p].no))
            goto out;
    }
    for (int32_t f = 0; f < c.fnames.n; f++) {
        if (!c.fn[f].nstacks)
            continue;
        /* the frames without a symbol of one module make one row:
         * "libsqlite3.so.0 (no symbol)" */
        char mod[300];
        const char *name = c.fn[f].name;
        if (c.fn[f].anon) {
            const char *plus = strrchr(name, '+');
            snprintf(mod, sizeof mod, "%.*s (no symbol)", plus ? (int)(plus - name) : 200, name);
            name = mod;
        }
        if (passed(arg, name, c.fn[f].ncallers, c.fn[f].nstacks))
            goto out;
    }
    /* system code: one row per group ("/usr/include/c++/12 (system headers)") */
    for (int32_t g = 0; g < c.sysnames.n; g++)
        if (c.sysstacks[g] && passed(arg, c.sysnames.s[g], 0, c.sysstacks[g]))
            goto out;
    rc = 0;
out:
    rh_cs_names_free(&c.fnames);
    rh_cs_names_free(&c.places);
    rh_cs_names_free(&c.kinds);
    rh_cs_names_free(&c.callers);
    rh_cs_names_free(&c.files);
    rh_cs_names_free(&c.sysnames);
    rh_cs_names_free(&c.sysmods);
    free(c.sysstacks);
    free(c.layer);
    for (int32_t f = 0; c.fn && f < c.fnames.n; f++) {
        free(c.fn[f].kinds);
        free(c.fn[f].kplaces);
        free(c.fn[f].kcallee);
    }
    free(c.fn);
    free(c.st);
    free(c.fr);
    return rc;
}

/* The converter's side: stacks.callsite and skipped_functions. */
struct rh_cs_writer {
    sqlite3_stmt *up, *sk;
};

static int rh_cs_write_site(void *arg, int64_t stack, int64_t frame)
{
    struct rh_cs_writer *w = arg;
    sqlite3_bind_int64(w->up, 1, stack);
    sqlite3_bind_int64(w->up, 2, frame);
    int r = sqlite3_step(w->up);
    sqlite3_reset(w->up);
    return r == SQLITE_DONE ? 0 : -1;
}

static int rh_cs_write_passed(void *arg, const char *name, int64_t callers, int64_t stacks)
{
    struct rh_cs_writer *w = arg;
    sqlite3_bind_text(w->sk, 1, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(w->sk, 2, callers);
    sqlite3_bind_int64(w->sk, 3, stacks);
    int r = sqlite3_step(w->sk);
    sqlite3_reset(w->sk);
    return r == SQLITE_DONE ? 0 : -1;
}

int rh_callsite_write(sqlite3 *db, char *err, size_t errlen)
{
    struct rh_cs_writer w = {NULL, NULL};
    int rc = -1;
    if (sqlite3_prepare_v2(db, "UPDATE stacks SET callsite = ?2 WHERE id = ?1", -1, &w.up, NULL) ==
            SQLITE_OK &&
        sqlite3_prepare_v2(db, "INSERT INTO skipped_functions VALUES(?,?,?) ON CONFLICT(sym) DO UPDATE"
                           " SET callers = callers + excluded.callers, stacks = stacks + excluded.stacks", -1, &w.sk, NULL) ==
            SQLITE_OK)
        rc = rh_cs_run(db, NULL, NULL, 0, rh_cs_write_site, rh_cs_write_passed, &w);
    if (rc)
        snprintf(err, errlen, "call sites: SQLite error (%s)", sqlite3_errmsg(db));
    sqlite3_finalize(w.up);
    sqlite3_finalize(w.sk);
    return rc;
}

int rh_callsite_compute(sqlite3 *db, int (*skip)(void *arg, const char *sym), void *skip_arg,
                        int (*site)(void *arg, int64_t stack, int64_t frame_no),
                        int (*passed)(void *arg, const char *name, int64_t callers,
                                      int64_t stacks),
                        void *arg)
{
    return rh_cs_run(db, skip, skip_arg, 1, site, passed, arg);
}
