/* rh_cc_alloc.c: the user's allocator families (--rheaper-allocator=FILE).
 *
 * A project's own allocator (arena_alloc(arena, size), a mimalloc-style
 * my_malloc/my_free) is declared in a small text file, one function a line:
 *
 *     # ROLE          FUNCTION(ARGUMENTS)
 *     allocate        arena_alloc(arena, size)
 *     free            arena_free(arena, ptr)
 *     zero-allocate   my_calloc(count, size)
 *     reallocate      my_realloc(ptr, size)
 *
 * Roles: allocate, aligned-allocate, zero-allocate, reallocate, free,
 * sized-free, usable-size (accepted, not wrapped: it allocates nothing).
 * Arguments are named by what they are: `size` (bytes), `count` (elements,
 * multiplied by size), `ptr` (the block); any other name is passed along
 * unread. Arguments and results must be integers or pointers (no float, no
 * struct by value, no varargs): the shims pass them on as machine words.
 *
 * When rheaper-cc links an executable it reads the files named by
 * --rheaper-allocator=FILE (repeatable) and $RHEAPER_ALLOCATORS (a
 * colon-separated list), runs `nm` ($RHEAPER_NM) over the object files and
 * archives being linked, and for each function:
 *   - warns, naming the reason, when the linker cannot wrap it: `static` in
 *     an object (no symbol the linker can redirect), defined in the same
 *     object as all its callers (calls inside one object are resolved by the
 *     assembler), or found nowhere (inlined away, or never called);
 *   - otherwise generates a __wrap_ shim that records each call with the
 *     function's name as its kind (runtime/rh_pool.c, rh_fam_*), compiles it
 *     with the real compiler into a temporary object, and adds that object and
 *     -Wl,--wrap=NAME to the link.
 * The temporary directory is removed after the link (rheaper-cc then waits for
 * the compiler instead of exec'ing it).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rh_cc.h"

#define RH_AF_MAX_ARGS 12

enum rh_af_role {
    RH_AF_ALLOC,
    RH_AF_ZALLOC,
    RH_AF_REALLOC,
    RH_AF_FREE,
    RH_AF_USABLE,
    /* region allocators (runtime/rh_region.c) */
    RH_AF_R_CREATE,
    RH_AF_R_NAME,
    RH_AF_R_PARENT,
    RH_AF_R_ALLOC,
    RH_AF_R_REALLOC,
    RH_AF_R_FREE,
    RH_AF_R_RESET,
    RH_AF_R_DELETE,
};

struct rh_af_fn {
    char name[128];
    enum rh_af_role role;
    int nargs;
    int size_arg, count_arg, ptr_arg; /* -1 when absent */
    int region_arg, region_out_arg, parent_arg, name_arg; /* region roles; -1 when absent */
    int str_arg, len_arg; /* a copied string: size strnlen(str, len) + 1 */
    int ok_set;           /* ok=VALUE on region-free: freed only when it returns VALUE */
    long ok_value;
    char region_global[128];          /* region=GLOBAL: the region is that variable */
    int delete_children;              /* region-reset: 1 children=delete, 2 children=only */
    char where[300];                  /* FILE:LINE, for messages */
    /* what nm found */
    int defined_global, defined_local, referenced;
    char def_obj[512]; /* an object that defines it */
    int wrap;          /* 1: generate and wrap */
};

static struct rh_af_fn *rh_af;
static size_t rh_af_n, rh_af_cap;

static const struct {
    const char *name;
    enum rh_af_role role;
} rh_af_roles[] = {
    {"allocate", RH_AF_ALLOC},
    {"aligned-allocate", RH_AF_ALLOC},
    {"zero-allocate", RH_AF_ZALLOC},
    {"reallocate", RH_AF_REALLOC},
    {"free", RH_AF_FREE},
    {"sized-free", RH_AF_FREE},
    {"usable-size", RH_AF_USABLE},
    {"region-create", RH_AF_R_CREATE},
    {"region-name", RH_AF_R_NAME},
    {"region-parent", RH_AF_R_PARENT},
    {"region-allocate", RH_AF_R_ALLOC},
    {"region-zero-allocate", RH_AF_R_ALLOC},
    {"region-reallocate", RH_AF_R_REALLOC},
    {"region-free", RH_AF_R_FREE},
    {"region-reset", RH_AF_R_RESET},
    {"region-delete", RH_AF_R_DELETE},
};

static int rh_is_ident(const char *s, size_t n)
{
    if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return 0;
    return 1;
}

/* Parses one non-comment line into a new entry. Returns 0, or -1 with a
 * message printed. */
static int rh_af_parse_line(const char *tool, const char *where, char *line)
{
    char *p = line;
    while (isspace((unsigned char)*p))
        p++;
    char *role = p;
    while (*p && !isspace((unsigned char)*p))
        p++;
    size_t rlen = (size_t)(p - role);
    while (isspace((unsigned char)*p))
        p++;
    int r = -1;
    for (size_t i = 0; i < sizeof rh_af_roles / sizeof rh_af_roles[0]; i++)
        if (strlen(rh_af_roles[i].name) == rlen && strncmp(role, rh_af_roles[i].name, rlen) == 0)
            r = (int)i;
    if (r < 0) {
        fprintf(stderr,
                "%s: %s: unknown role '%.*s' (allocate, aligned-allocate, zero-allocate, "
                "reallocate, free, sized-free, usable-size, region-create, region-name, "
                "region-parent, region-allocate, region-zero-allocate, region-reallocate, "
                "region-free, region-reset, region-delete)\n",
                tool, where, (int)rlen, role);
        return -1;
    }
    char *name = p;
    while (*p && *p != '(' && !isspace((unsigned char)*p))
        p++;
    size_t nlen = (size_t)(p - name);
    while (isspace((unsigned char)*p))
        p++;
    if (!rh_is_ident(name, nlen) || nlen >= sizeof rh_af->name || *p != '(') {
        fprintf(stderr, "%s: %s: expected FUNCTION(ARGUMENTS) after the role\n", tool, where);
        return -1;
    }
    if (rh_af_n == rh_af_cap) {
        size_t cap = rh_af_cap ? rh_af_cap * 2 : 16;
        struct rh_af_fn *v = realloc(rh_af, cap * sizeof *v);
        if (!v) {
            fprintf(stderr, "%s: out of memory\n", tool);
            return -1;
        }
        rh_af = v;
        rh_af_cap = cap;
    }
    struct rh_af_fn *f = &rh_af[rh_af_n];
    memset(f, 0, sizeof *f);
    memcpy(f->name, name, nlen);
    f->role = rh_af_roles[r].role;
    f->size_arg = f->count_arg = f->ptr_arg = -1;
    f->region_arg = f->region_out_arg = f->parent_arg = f->name_arg = -1;
    f->str_arg = f->len_arg = -1;
    snprintf(f->where, sizeof f->where, "%s", where);
    p++; /* '(' */
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (*p == ')' && f->nargs == 0)
            break;
        char *a = p;
        while (*p && *p != ',' && *p != ')' && !isspace((unsigned char)*p))
            p++;
        size_t alen = (size_t)(p - a);
        while (isspace((unsigned char)*p))
            p++;
        if (!rh_is_ident(a, alen) || (*p != ',' && *p != ')')) {
            fprintf(stderr, "%s: %s: bad argument list of %s\n", tool, where, f->name);
            return -1;
        }
        if (f->nargs == RH_AF_MAX_ARGS) {
            fprintf(stderr, "%s: %s: %s has more than %d arguments\n", tool, where, f->name,
                    RH_AF_MAX_ARGS);
            return -1;
        }
        if (alen == 4 && strncmp(a, "size", 4) == 0)
            f->size_arg = f->nargs;
        else if (alen == 5 && strncmp(a, "count", 5) == 0)
            f->count_arg = f->nargs;
        else if (alen == 3 && strncmp(a, "ptr", 3) == 0)
            f->ptr_arg = f->nargs;
        else if (alen == 6 && strncmp(a, "region", 6) == 0)
            f->region_arg = f->nargs;
        else if (alen == 10 && strncmp(a, "region_out", 10) == 0)
            f->region_out_arg = f->nargs;
        else if (alen == 6 && strncmp(a, "parent", 6) == 0)
            f->parent_arg = f->nargs;
        else if (alen == 4 && strncmp(a, "name", 4) == 0)
            f->name_arg = f->nargs;
        else if (alen == 3 && strncmp(a, "str", 3) == 0)
            f->str_arg = f->nargs;
        else if (alen == 3 && strncmp(a, "len", 3) == 0)
            f->len_arg = f->nargs;
        f->nargs++;
        if (*p == ')')
            break;
        p++; /* ',' */
    }
    p++;
    /* options: region=GLOBAL, children=delete (region roles) */
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        char *o = p;
        while (*p && !isspace((unsigned char)*p))
            p++;
        size_t olen = (size_t)(p - o);
        int region_role = f->role >= RH_AF_R_CREATE;
        if (region_role && olen > 7 && strncmp(o, "region=", 7) == 0 &&
            rh_is_ident(o + 7, olen - 7) && olen - 7 < sizeof f->region_global) {
            memcpy(f->region_global, o + 7, olen - 7);
            f->region_global[olen - 7] = 0;
        } else if (f->role == RH_AF_R_FREE && olen > 3 && strncmp(o, "ok=", 3) == 0) {
            char *end = NULL;
            f->ok_value = strtol(o + 3, &end, 0);
            if (end != p) {
                fprintf(stderr, "%s: %s: ok= takes a number\n", tool, where);
                return -1;
            }
            f->ok_set = 1;
        } else if (f->role == RH_AF_R_RESET && olen == 15 &&
                   strncmp(o, "children=delete", 15) == 0) {
            f->delete_children = 1;
        } else if (f->role == RH_AF_R_RESET && olen == 13 && strncmp(o, "children=keep", 13) == 0) {
            f->delete_children = 0;
        } else if (f->role == RH_AF_R_RESET && olen == 13 && strncmp(o, "children=only", 13) == 0) {
            f->delete_children = 2; /* the children go, the region's own chunks stay */
        } else {
            fprintf(stderr,
                    "%s: %s: unexpected text after ')': '%.*s' (region roles take region=GLOBAL; "
                    "region-reset takes children=delete, children=keep or children=only; region-free takes "
                    "ok=VALUE)\n",
                    tool, where, (int)olen, o);
            return -1;
        }
    }
    int has_region = f->region_arg >= 0 || f->region_global[0];
    const char *need = NULL;
    switch (f->role) {
    case RH_AF_ALLOC:
        need = f->size_arg < 0 ? "a 'size' argument" : NULL;
        break;
    case RH_AF_ZALLOC:
        need = f->size_arg < 0 || f->count_arg < 0 ? "'count' and 'size' arguments" : NULL;
        break;
    case RH_AF_REALLOC:
        need = f->size_arg < 0 || f->ptr_arg < 0 ? "'ptr' and 'size' arguments" : NULL;
        break;
    case RH_AF_FREE:
        need = f->ptr_arg < 0 ? "a 'ptr' argument" : NULL;
        break;
    case RH_AF_USABLE:
        break;
    case RH_AF_R_CREATE:
        need = f->region_arg >= 0 && f->region_out_arg >= 0 ? "one of 'region' and 'region_out'"
                                                            : NULL;
        break;
    case RH_AF_R_NAME:
        need = !has_region || f->name_arg < 0 ? "'region' (or region=GLOBAL) and 'name'" : NULL;
        break;
    case RH_AF_R_PARENT:
        need = !has_region || f->parent_arg < 0 ? "'region' (or region=GLOBAL) and 'parent'" : NULL;
        break;
    case RH_AF_R_ALLOC:
        need = (f->size_arg < 0 && f->str_arg < 0) || !has_region
                   ? "a 'size' (or 'str') and a 'region' argument (or region=GLOBAL)"
                   : NULL;
        break;
    case RH_AF_R_REALLOC:
        need = f->size_arg < 0 || f->ptr_arg < 0 ? "'ptr' and 'size' arguments" : NULL;
        break;
    case RH_AF_R_FREE:
        need = f->ptr_arg < 0 ? "a 'ptr' argument" : NULL;
        break;
    case RH_AF_R_RESET:
    case RH_AF_R_DELETE:
        need = !has_region ? "a 'region' argument (or region=GLOBAL)" : NULL;
        break;
    }
    if (need) {
        fprintf(stderr, "%s: %s: %s needs %s\n", tool, where, f->name, need);
        return -1;
    }
    for (size_t i = 0; i < rh_af_n; i++)
        if (strcmp(rh_af[i].name, f->name) == 0) {
            fprintf(stderr, "%s: %s: %s is already declared at %s\n", tool, where, f->name,
                    rh_af[i].where);
            return -1;
        }
    rh_af_n++;
    return 0;
}

int rh_cc_alloc_read(const char *tool, const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "%s: cannot read allocator file %s: %s\n", tool, path, strerror(errno));
        return -1;
    }
    char line[1024];
    int no = 0, rc = 0;
    while (fgets(line, sizeof line, fp)) {
        no++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = line;
        while (isspace((unsigned char)*s))
            s++;
        if (!*s)
            continue;
        size_t n = strlen(s);
        while (n && isspace((unsigned char)s[n - 1]))
            s[--n] = '\0';
        char where[300];
        snprintf(where, sizeof where, "%s:%d", path, no);
        if (rh_af_parse_line(tool, where, s) != 0)
            rc = -1;
    }
    fclose(fp);
    return rc;
}

size_t rh_cc_alloc_count(void)
{
    return rh_af_n;
}

/* The entry named name[0, len), or NULL. */
static struct rh_af_fn *rh_af_find(const char *name, size_t len)
{
    for (size_t i = 0; i < rh_af_n; i++)
        if (strlen(rh_af[i].name) == len && memcmp(rh_af[i].name, name, len) == 0)
            return &rh_af[i];
    return NULL;
}

/* Runs nm -A -P over the object files and archives and notes, per declared
 * function, where it is defined (global or local) and whether any object
 * references it. Returns 0, or -1 when nm could not be run (message printed). */
static int rh_af_scan(const char *tool, const char *const *objs, size_t nobjs)
{
    if (nobjs == 0)
        return 0;
    const char *nm = getenv("RHEAPER_NM");
    if (!nm || !*nm)
        nm = "nm";
    int pfd[2];
    if (pipe(pfd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        const char **v = calloc(nobjs + 4, sizeof *v);
        if (!v)
            _exit(127);
        v[0] = nm;
        v[1] = "-A";
        v[2] = "-P";
        for (size_t i = 0; i < nobjs; i++)
            v[3 + i] = objs[i];
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, 2);
        execvp(nm, (char *const *)v);
        _exit(127);
    }
    close(pfd[1]);
    FILE *in = fdopen(pfd[0], "r");
    char line[4096];
    while (in && fgets(line, sizeof line, in)) {
        /* "OBJECT: NAME TYPE [VALUE SIZE]"; OBJECT may be "lib.a[member.o]" */
        char *sep = strstr(line, ": ");
        if (!sep)
            continue;
        *sep = '\0';
        char *name = sep + 2;
        char *sp = strchr(name, ' ');
        if (!sp || !sp[1])
            continue;
        struct rh_af_fn *f = rh_af_find(name, (size_t)(sp - name));
        if (!f)
            continue;
        char type = sp[1];
        if (type == 'U') {
            f->referenced = 1;
        } else if (type == 'T' || type == 'W' || type == 'i') {
            f->defined_global = 1;
            snprintf(f->def_obj, sizeof f->def_obj, "%.500s", line);
        } else if (type == 't') {
            f->defined_local = 1;
            if (!f->def_obj[0])
                snprintf(f->def_obj, sizeof f->def_obj, "%.500s", line);
        }
    }
    if (in)
        fclose(in);
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) == 127) {
        fprintf(stderr, "%s: warning: cannot run '%s' to check the allocator file's functions\n",
                tool, nm);
        return -1;
    }
    return 0;
}

/* Writes the body of a region function's shim (after its opening brace). The
 * real function runs with the runtime's guard clear, so the allocator's own
 * malloc calls are recorded; the region events are recorded before the real
 * call when they end chunks (free, reset, delete) and after it otherwise.
 * The shim leaves the region call (rh_region_leave) after the real call,
 * except for a chunk's allocation or reallocation, whose recording call
 * leaves it first (one call less on the common event). */
static void rh_af_write_region(FILE *out, const struct rh_af_fn *f, size_t i, const char *args)
{
    char region[160];
    if (f->region_arg >= 0)
        snprintf(region, sizeof region, "(void *)a%d", f->region_arg);
    else if (f->region_global[0])
        snprintf(region, sizeof region, "(void *)%s", f->region_global);
    else
        snprintf(region, sizeof region, "(void *)0");
    char size[96] = "0";
    if (f->str_arg >= 0 && f->len_arg >= 0)
        snprintf(size, sizeof size, "(strnlen((const char *)a%d, a%d) + 1)", f->str_arg,
                 f->len_arg);
    else if (f->str_arg >= 0)
        snprintf(size, sizeof size, "(strlen((const char *)a%d) + 1)", f->str_arg);
    else if (f->count_arg >= 0)
        snprintf(size, sizeof size, "rh_mul(a%d, a%d)", f->count_arg, f->size_arg);
    else if (f->size_arg >= 0)
        snprintf(size, sizeof size, "a%d", f->size_arg);
    fprintf(out, "    if (RH_OFF_NOW() || !rh_region_enter())\n        return __real_%s(%s);\n",
            f->name, args);
    switch (f->role) {
    case RH_AF_R_CREATE: {
        char made[64];
        if (f->region_arg >= 0)
            snprintf(made, sizeof made, "(void *)a%d", f->region_arg);
        else if (f->region_out_arg >= 0)
            snprintf(made, sizeof made, "(a%d ? *(void **)a%d : (void *)0)", f->region_out_arg,
                     f->region_out_arg);
        else
            snprintf(made, sizeof made, "(void *)r");
        fprintf(out, "    W r = __real_%s(%s);\n", f->name, args);
        fprintf(out, "    rh_region_leave();\n");
        fprintf(out, "    rh_region_create(&rh_k%zu, %s, ", i, made);
        if (f->parent_arg >= 0)
            fprintf(out, "(void *)a%d, ", f->parent_arg);
        else
            fprintf(out, "(void *)0, ");
        if (f->name_arg >= 0)
            fprintf(out, "(const char *)a%d);\n", f->name_arg);
        else
            fprintf(out, "(const char *)0);\n");
        break;
    }
    case RH_AF_R_NAME:
        fprintf(out, "    W r = __real_%s(%s);\n    rh_region_leave();\n", f->name, args);
        fprintf(out, "    rh_region_name(%s, (const char *)a%d);\n", region, f->name_arg);
        break;
    case RH_AF_R_PARENT:
        fprintf(out, "    W r = __real_%s(%s);\n    rh_region_leave();\n", f->name, args);
        fprintf(out, "    rh_region_set_parent(%s, (void *)a%d);\n", region, f->parent_arg);
        break;
    case RH_AF_R_ALLOC: /* rh_region_alloc leaves the region call itself */
        fprintf(out, "    void *reg = %s;\n", region);
        fprintf(out, "    W r = __real_%s(%s);\n", f->name, args);
        fprintf(out,
                "    rh_region_alloc(&rh_k%zu, reg, (void *)r, %s, __builtin_frame_address(0));\n",
                i, size);
        break;
    case RH_AF_R_REALLOC: /* so does rh_region_realloc */
        fprintf(out, "    W t0 = rh_fam_now();\n");
        fprintf(out, "    W r = __real_%s(%s);\n", f->name, args);
        fprintf(out,
                "    rh_region_realloc(&rh_k%zu, (void *)a%d, (void *)r, %s, t0, "
                "__builtin_frame_address(0));\n",
                i, f->ptr_arg, size);
        break;
    case RH_AF_R_FREE:
        if (f->ok_set) { /* freed only when the call says so (nginx's ngx_pfree) */
            fprintf(out, "    W r = __real_%s(%s);\n    rh_region_leave();\n", f->name, args);
            fprintf(out, "    if ((long)r == %ldL)\n        rh_region_free((void *)a%d);\n",
                    f->ok_value, f->ptr_arg);
            break;
        }
        fprintf(out, "    rh_region_free((void *)a%d);\n", f->ptr_arg);
        fprintf(out, "    W r = __real_%s(%s);\n    rh_region_leave();\n", f->name, args);
        break;
    case RH_AF_R_RESET:
        fprintf(out, "    rh_region_reset(%s, %d);\n", region, f->delete_children);
        fprintf(out, "    W r = __real_%s(%s);\n    rh_region_leave();\n", f->name, args);
        break;
    case RH_AF_R_DELETE:
        fprintf(out, "    rh_region_delete(%s);\n", region);
        fprintf(out, "    W r = __real_%s(%s);\n    rh_region_leave();\n", f->name, args);
        break;
    default:
        break;
    }
    fprintf(out, "    return r;\n");
}

/* Writes the C source of the shims of every entry with wrap set. */
static int rh_af_write_source(FILE *out)
{
    fprintf(
        out,
        "/* generated by rheaper-cc from the user's allocator file */\n"
        "struct rh_fam_kind { const char *name; unsigned kind; };\n"
        "#define RH_H __attribute__((visibility(\"hidden\")))\n"
        "RH_H int rh_fam_begin(void);\n"
        "RH_H unsigned long rh_fam_now(void);\n"
        "RH_H void rh_fam_alloc(struct rh_fam_kind *, void *, unsigned long, void *);\n"
        "RH_H void rh_fam_realloc(struct rh_fam_kind *, void *, void *, unsigned long,"
        " unsigned long, void *);\n"
        "RH_H void rh_fam_free(void *);\n"
        "RH_H void rh_fam_end(void);\n"
        "RH_H int rh_region_enter(void);\n"
        "RH_H void rh_region_leave(void);\n"
        "RH_H void rh_region_create(struct rh_fam_kind *, void *, void *, const char *);\n"
        "RH_H void rh_region_name(void *, const char *);\n"
        "RH_H void rh_region_set_parent(void *, void *);\n"
        "RH_H void rh_region_alloc(struct rh_fam_kind *, void *, void *, unsigned long, void *);\n"
        "RH_H void rh_region_realloc(struct rh_fam_kind *, void *, void *, unsigned long,"
        " unsigned long, void *);\n"
        "RH_H void rh_region_free(void *);\n"
        "RH_H void rh_region_reset(void *, int);\n"
        "RH_H void rh_region_delete(void *);\n"
        "/* the runtime's state under its public name (rheaper.h): 1 is off, the\n"
        " * common case, tested here so that an untracked call makes no call */\n"
        "extern int rheaper_tracking_;\n"
        "#define RH_OFF_NOW() __builtin_expect(__atomic_load_n(&rheaper_tracking_, 0) == 1, 1)\n"
        "typedef unsigned long W;\n"
        "unsigned long strlen(const char *);\n"
        "unsigned long strnlen(const char *, unsigned long);\n"
        "static W rh_mul(W a, W b) { W r; return __builtin_mul_overflow(a, b, &r) ? ~0ul : r; "
        "}\n\n");
    for (size_t i = 0; i < rh_af_n; i++) {
        const struct rh_af_fn *f = &rh_af[i];
        if (!f->wrap)
            continue;
        char params[RH_AF_MAX_ARGS * 8 + 8] = "", args[RH_AF_MAX_ARGS * 6 + 8] = "",
             types[RH_AF_MAX_ARGS * 4 + 8] = "";
        for (int k = 0; k < f->nargs; k++) {
            char b[16];
            snprintf(b, sizeof b, "%sW a%d", k ? ", " : "", k);
            strcat(params, b);
            snprintf(b, sizeof b, "%sa%d", k ? ", " : "", k);
            strcat(args, b);
            strcat(types, k ? ", W" : "W");
        }
        if (!f->nargs) {
            strcpy(params, "void");
            strcpy(types, "void");
        }
        /* weak only when nm did not see a definition or a reference: then the
         * function may live in a source file of this very command */
        fprintf(out, "extern W __real_%s(%s)%s;\n", f->name, types,
                f->defined_global || f->referenced ? "" : " __attribute__((weak))");
        fprintf(out, "static struct rh_fam_kind rh_k%zu = {\"%s\", 0};\n", i, f->name);
        if (f->region_global[0])
            fprintf(out, "extern W %s;\n", f->region_global);
        fprintf(out, "__attribute__((used, visibility(\"default\"), noinline)) W __wrap_%s(%s)\n{\n",
                f->name, params);
        if (f->role >= RH_AF_R_CREATE) {
            rh_af_write_region(out, f, i, args);
            fprintf(out, "}\n\n");
            continue;
        }
        fprintf(out, "    if (RH_OFF_NOW() || !rh_fam_begin())\n        return __real_%s(%s);\n",
                f->name, args);
        switch (f->role) {
        case RH_AF_ALLOC:
        case RH_AF_ZALLOC: {
            char size[64];
            if (f->count_arg >= 0)
                snprintf(size, sizeof size, "rh_mul(a%d, a%d)", f->count_arg, f->size_arg);
            else
                snprintf(size, sizeof size, "a%d", f->size_arg);
            fprintf(out, "    W r = __real_%s(%s);\n", f->name, args);
            fprintf(out, "    rh_fam_alloc(&rh_k%zu, (void *)r, %s, __builtin_frame_address(0));\n",
                    i, size);
            fprintf(out, "    return r;\n");
            break;
        }
        case RH_AF_REALLOC: {
            char size[64];
            if (f->count_arg >= 0)
                snprintf(size, sizeof size, "rh_mul(a%d, a%d)", f->count_arg, f->size_arg);
            else
                snprintf(size, sizeof size, "a%d", f->size_arg);
            fprintf(out, "    if (a%d == 0) {\n", f->ptr_arg);
            fprintf(out, "        W r = __real_%s(%s);\n", f->name, args);
            fprintf(out, "        rh_fam_alloc(&rh_k%zu, (void *)r, %s, __builtin_frame_address(0));\n",
                    i, size);
            fprintf(out, "        return r;\n    }\n");
            fprintf(out, "    W t0 = rh_fam_now();\n");
            fprintf(out, "    W r = __real_%s(%s);\n", f->name, args);
            fprintf(out, "    rh_fam_realloc(&rh_k%zu, (void *)a%d, (void *)r, %s, t0, "
                         "__builtin_frame_address(0));\n", i, f->ptr_arg, size);
            fprintf(out, "    return r;\n");
            break;
        }
        case RH_AF_FREE:
            fprintf(out, "    rh_fam_free((void *)a%d);\n", f->ptr_arg);
            fprintf(out, "    W r = __real_%s(%s);\n", f->name, args);
            fprintf(out, "    rh_fam_end();\n    return r;\n");
            break;
        default: /* usable-size; region roles are written above */
            break;
        }
        fprintf(out, "}\n\n");
    }
    return ferror(out) ? -1 : 0;
}

/* Runs argv and waits. Returns its exit status, or -1 when it could not run. */
static int rh_run(const char *const *argv)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

int rh_cc_alloc_prepare(const char *tool, const char *compiler, const char *const *objs,
                        size_t nobjs, int sources, char *tmpdir, size_t tmpcap,
                        const char **obj_out, char ***wrap_flags, size_t *nwrap)
{
    *obj_out = NULL;
    *wrap_flags = NULL;
    *nwrap = 0;
    tmpdir[0] = '\0';
    int scanned = rh_af_scan(tool, objs, nobjs) == 0;
    size_t n = 0;
    for (size_t i = 0; i < rh_af_n; i++) {
        struct rh_af_fn *f = &rh_af[i];
        if (f->role == RH_AF_USABLE)
            continue; /* allocates nothing: nothing to record */
        if (scanned && f->defined_local && !f->defined_global) {
            fprintf(stderr,
                    "%s: warning: %s (%s): cannot be wrapped: it is static in %s, so the "
                    "linker never sees its calls\n",
                    tool, f->name, f->where, f->def_obj);
            continue;
        }
        if (scanned && f->defined_global && !f->referenced && !sources) {
            fprintf(stderr,
                    "%s: warning: %s (%s): cannot be wrapped: it is defined in %s together with "
                    "all its callers (calls inside one object file never reach the linker; "
                    "move the callers or the allocator to another file)\n",
                    tool, f->name, f->where, f->def_obj);
            continue;
        }
        if (scanned && !f->defined_global && !f->referenced && !sources) {
            fprintf(stderr,
                    "%s: warning: %s (%s): cannot be wrapped: no object being linked defines "
                    "or calls it (inlined away, or never called)\n",
                    tool, f->name, f->where);
            continue;
        }
        f->wrap = 1;
        n++;
    }
    if (n == 0)
        return 0;

    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, tmpcap, "%s/rheaper-cc.XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        fprintf(stderr, "%s: cannot create a temporary directory %s: %s\n", tool, tmpdir,
                strerror(errno));
        tmpdir[0] = '\0';
        return -1;
    }
    static char src[4200], obj[4200];
    snprintf(src, sizeof src, "%s/rh_alloc_shims.c", tmpdir);
    snprintf(obj, sizeof obj, "%s/rh_alloc_shims.o", tmpdir);
    FILE *out = fopen(src, "w");
    if (!out || rh_af_write_source(out) != 0 || fclose(out) != 0) {
        fprintf(stderr, "%s: cannot write %s: %s\n", tool, src, strerror(errno));
        return -1;
    }
    const char *cc[] = {compiler, "-c", "-O2", "-fPIC", "-fno-omit-frame-pointer",
                        "-fno-optimize-sibling-calls", "-fno-lto", "-w", "-x", "c", src, "-o",
                        obj, NULL};
    if (rh_run(cc) != 0) {
        fprintf(stderr, "%s: compiling the allocator shims (%s) failed\n", tool, src);
        return -1;
    }
    char **flags = calloc(n, sizeof *flags);
    if (!flags)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < rh_af_n; i++) {
        if (!rh_af[i].wrap)
            continue;
        size_t len = strlen(rh_af[i].name) + 16;
        flags[k] = malloc(len);
        if (!flags[k])
            return -1;
        snprintf(flags[k], len, "-Wl,--wrap=%s", rh_af[i].name);
        k++;
    }
    *obj_out = obj;
    *wrap_flags = flags;
    *nwrap = k;
    return 0;
}

void rh_cc_alloc_cleanup(const char *tmpdir)
{
    if (!tmpdir || !tmpdir[0])
        return;
    char p[4200];
    snprintf(p, sizeof p, "%s/rh_alloc_shims.c", tmpdir);
    unlink(p);
    snprintf(p, sizeof p, "%s/rh_alloc_shims.o", tmpdir);
    unlink(p);
    rmdir(tmpdir);
}
